//! The bootstrap signer and token cleaner (pkg/controller/bootstrap): cluster-info's
//! `kubeconfig` names the control plane and its CA; each bootstrap token usable for signing
//! and not expired adds `jws-kubeconfig-<id>`, the detached JWS of that kubeconfig, so a
//! joining member holding the token can trust what it read anonymously. Expired token
//! Secrets are deleted.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine;
use certs::bootstrap_token::{self as bt, BootstrapToken};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DeleteParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use super::RegistrationConfig;

/// How often expiry is checked when nothing else happens.
const RESYNC: Duration = Duration::from_secs(5);

/// Starts the signer and cleaner.
pub fn start(client: kube::Client, config: RegistrationConfig) -> JoinHandle<()> {
    tokio::spawn(async move {
        let secrets = Api::<Secret>::namespaced(client.clone(), bt::SECRET_NAMESPACE);
        let stream = watcher(secrets.clone(), watcher::Config::default())
            .default_backoff()
            .boxed();
        let mut stream = stream;
        let kubeconfig = kubeconfig(&config);
        loop {
            if let Err(e) = sync(&client, &secrets, &kubeconfig).await {
                tracing::warn!(error = %e, "signing cluster-info failed");
            }
            // Any token change (or the resync, for expiry) signs again.
            tokio::select! {
                ev = stream.next() => if ev.is_none() { return },
                _ = tokio::time::sleep(RESYNC) => {}
            }
        }
    })
}

/// cluster-info's kubeconfig: one cluster with the server and CA, nothing else.
pub fn kubeconfig(config: &RegistrationConfig) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(&config.ca_pem);
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "", "cluster": {"certificate-authority-data": ca, "server": config.server}}],
        "contexts": null,
        "current-context": "",
        "preferences": {},
        "users": null,
    });
    serde_yaml::to_string(&doc).unwrap_or_default()
}

fn value(s: &Secret, key: &str) -> Option<String> {
    if let Some(v) = s.data.as_ref().and_then(|d| d.get(key)) {
        return String::from_utf8(v.0.clone()).ok();
    }
    s.string_data.as_ref().and_then(|d| d.get(key)).cloned()
}

/// The valid signing tokens among the Secrets; expired ones are deleted on the way.
async fn signing_tokens(secrets: &Api<Secret>) -> Result<Vec<BootstrapToken>, kube::Error> {
    let now = jiff::Timestamp::now();
    let mut tokens = Vec::new();
    for s in secrets.list(&Default::default()).await?.items {
        if s.type_.as_deref() != Some(bt::SECRET_TYPE) || s.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let expiration = value(&s, bt::KEY_EXPIRATION);
        let expired = expiration
            .as_deref()
            .is_some_and(|e| e.parse::<jiff::Timestamp>().map_or(true, |t| t <= now));
        if expired {
            // tokencleaner: an expired token's Secret goes.
            let name = s.name_any();
            tracing::info!(secret = %name, "deleting expired bootstrap token");
            match secrets.delete(&name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
            continue;
        }
        if value(&s, bt::KEY_USAGE_SIGNING).as_deref() != Some("true") {
            continue;
        }
        let (Some(id), Some(secret)) = (value(&s, bt::KEY_ID), value(&s, bt::KEY_SECRET)) else {
            continue;
        };
        if s.name_any() != format!("{}{id}", bt::SECRET_PREFIX) {
            continue;
        }
        if let Ok(t) = BootstrapToken::parse(&format!("{id}.{secret}")) {
            tokens.push(t);
        }
    }
    Ok(tokens)
}

async fn sync(
    client: &kube::Client,
    secrets: &Api<Secret>,
    kubeconfig: &str,
) -> Result<(), kube::Error> {
    let tokens = signing_tokens(secrets).await?;
    let mut data = BTreeMap::from([(
        bt::CLUSTER_INFO_KUBECONFIG.to_owned(),
        kubeconfig.to_owned(),
    )]);
    for t in &tokens {
        data.insert(
            format!("{}{}", bt::JWS_KEY_PREFIX, t.id),
            bt::detached_jws(kubeconfig, t),
        );
    }
    let maps = Api::<ConfigMap>::namespaced(client.clone(), bt::CLUSTER_INFO_NAMESPACE);
    match maps.get_opt(bt::CLUSTER_INFO_NAME).await? {
        Some(mut cm) if cm.data.as_ref() != Some(&data) => {
            cm.data = Some(data);
            maps.replace(bt::CLUSTER_INFO_NAME, &PostParams::default(), &cm)
                .await?;
        }
        Some(_) => {}
        None => {
            let cm = ConfigMap {
                metadata: kube::api::ObjectMeta {
                    name: Some(bt::CLUSTER_INFO_NAME.to_owned()),
                    namespace: Some(bt::CLUSTER_INFO_NAMESPACE.to_owned()),
                    ..Default::default()
                },
                data: Some(data),
                ..Default::default()
            };
            maps.create(&PostParams::default(), &cm).await?;
        }
    }
    Ok(())
}
