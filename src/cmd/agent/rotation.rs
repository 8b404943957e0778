//! The agent's control-plane credentials: read from its kubeconfig, renewed by the
//! certRotation controller (Karmada's pkg/controllers/certificate: once less than the
//! threshold of its lifetime is left, a new CertificateSigningRequest for the same identity),
//! written back where the agent's kubeconfig comes from — the member Secret its pods mount
//! (`--karmada-kubeconfig-namespace`/`karmada-kubeconfig`, as Karmada) and the kubeconfig file
//! when it is writable — and picked up by every replica once a newer certificate shows up in
//! its kubeconfig (the kubelet updates a mounted Secret's files).

use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use controllers::agent::install::KUBECONFIG_SECRET;
use k8s_openapi::api::core::v1::Secret;
use kube::Api;
use kube::api::{Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::watch;

use super::AgentArgs;

/// A control-plane kubeconfig and the validity of its client certificate.
#[derive(Clone, Debug)]
pub struct Credentials {
    kubeconfig: Kubeconfig,
    /// The certificate's `notBefore` (Unix seconds), when it is inline.
    not_before: Option<i64>,
}

/// What a kubeconfig's chosen context uses: server, CA and client certificate (PEM).
struct Identity {
    server: String,
    ca_pem: String,
    cert_pem: String,
}

impl Credentials {
    /// Reads the kubeconfig at `path` (relative file references resolved against it).
    pub fn read(path: &Path, context: Option<&str>) -> anyhow::Result<Credentials> {
        let kubeconfig = Kubeconfig::read_from(path)
            .with_context(|| format!("reading kubeconfig {}", path.display()))?;
        Ok(Credentials::of(kubeconfig, context))
    }

    fn of(kubeconfig: Kubeconfig, context: Option<&str>) -> Credentials {
        let not_before = identity(&kubeconfig, context)
            .ok()
            .and_then(|i| certs::validity_window(&i.cert_pem).ok())
            .map(|(nb, _)| nb);
        Credentials {
            kubeconfig,
            not_before,
        }
    }

    /// Whether this certificate was issued after `other`'s.
    pub fn newer_than(&self, other: &Credentials) -> bool {
        match (self.not_before, other.not_before) {
            (Some(mine), Some(theirs)) => mine > theirs,
            _ => false,
        }
    }

    /// A client configuration for `context` (the current one by default).
    pub async fn config(&self, context: Option<&str>) -> anyhow::Result<kube::Config> {
        let options = KubeConfigOptions {
            context: context.map(str::to_owned),
            ..Default::default()
        };
        kube::Config::from_custom_kubeconfig(self.kubeconfig.clone(), &options)
            .await
            .context("loading the control plane's kubeconfig")
    }
}

/// The server, CA and inline client certificate of the context `context` names (or the
/// current one).
fn identity(kc: &Kubeconfig, context: Option<&str>) -> anyhow::Result<Identity> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let name = context
        .map(str::to_owned)
        .or_else(|| kc.current_context.clone())
        .context("the kubeconfig has no current context")?;
    let ctx = kc
        .contexts
        .iter()
        .find(|c| c.name == name)
        .and_then(|c| c.context.clone())
        .with_context(|| format!("the kubeconfig has no context {name:?}"))?;
    let user = kc
        .auth_infos
        .iter()
        .find(|a| Some(&a.name) == ctx.user.as_ref())
        .and_then(|a| a.auth_info.clone())
        .with_context(|| format!("the kubeconfig has no user for context {name:?}"))?;
    let cluster = kc
        .clusters
        .iter()
        .find(|c| c.name == ctx.cluster)
        .and_then(|c| c.cluster.clone())
        .with_context(|| format!("the kubeconfig has no cluster for context {name:?}"))?;
    let cert = user
        .client_certificate_data
        .context("the kubeconfig has no client-certificate-data")?;
    let ca = cluster
        .certificate_authority_data
        .context("the kubeconfig has no certificate-authority-data")?;
    Ok(Identity {
        server: cluster.server.unwrap_or_default(),
        ca_pem: String::from_utf8(b64.decode(ca.trim())?)?,
        cert_pem: String::from_utf8(b64.decode(cert.trim())?)?,
    })
}

/// The certRotation controller: checks the certificate every interval and, once it is due,
/// renews it, saves it and announces it on `renewed`.
pub async fn rotate_when_due(
    args: AgentArgs,
    control_plane: kube::Client,
    member: kube::Client,
    current: Credentials,
    renewed: watch::Sender<Option<Credentials>>,
) {
    loop {
        tokio::time::sleep(args.cert_rotation_checking_interval).await;
        match rotate_if_due(&args, &control_plane, &member, &current).await {
            Ok(Some(new)) => {
                renewed.send_replace(Some(new));
                return;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "renewing the agent's client certificate failed")
            }
        }
    }
}

async fn rotate_if_due(
    args: &AgentArgs,
    control_plane: &kube::Client,
    member: &kube::Client,
    current: &Credentials,
) -> anyhow::Result<Option<Credentials>> {
    let id = identity(&current.kubeconfig, args.karmada_context.as_deref())?;
    let (not_before, not_after) = certs::validity_window(&id.cert_pem)?;
    let now = jiff::Timestamp::now().as_second();
    let total = (not_after - not_before).max(1);
    let left = not_after - now;
    if left as f64 > args.cert_rotation_remaining_time_threshold * total as f64 {
        return Ok(None);
    }
    tracing::info!(cluster = %args.cluster_name, left_seconds = left, "renewing the agent's client certificate");
    // The same lifetime as the current certificate (the signer backdates by 5 minutes).
    let lifetime = Duration::from_secs(u64::try_from(total - 300).unwrap_or(0).max(600));
    let (cert_pem, key_pem) = crate::cmd::register::request_certificate(
        control_plane,
        &args.cluster_name,
        lifetime,
        Duration::from_secs(300),
    )
    .await?;
    let renewed = certs::Kubeconfig {
        name: "karmada".into(),
        server: id.server,
        ca_pem: id.ca_pem,
        credentials: certs::KubeconfigCredentials::ClientCert { cert_pem, key_pem },
        namespace: None,
    };
    let text = renewed.to_yaml()?;
    save(args, member, &renewed, &text).await;
    let kubeconfig = Kubeconfig::from_yaml(&text).context("reading the renewed kubeconfig")?;
    // The renewed kubeconfig has one context, its current one.
    Ok(Some(Credentials::of(kubeconfig, None)))
}

/// Writes the renewed kubeconfig to the member Secret the agent's pods mount (when it exists)
/// and to the kubeconfig file (unless it is read-only, as a mounted Secret is). The renewed
/// certificate is used from now on either way; one that could be saved nowhere is lost when
/// the agent restarts, which then runs with the old one until it is renewed again.
async fn save(args: &AgentArgs, member: &kube::Client, renewed: &certs::Kubeconfig, text: &str) {
    let ns = &args.karmada_kubeconfig_namespace;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let patch = serde_json::json!({"data": {KUBECONFIG_SECRET: encoded}});
    let in_secret = match Api::<Secret>::namespaced(member.clone(), ns)
        .patch(
            KUBECONFIG_SECRET,
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => true,
        Err(kube::Error::Api(s)) if s.is_not_found() => false,
        Err(e) => {
            tracing::warn!(secret = %format!("{ns}/{KUBECONFIG_SECRET}"), error = %e, "could not save the renewed certificate in the member");
            false
        }
    };
    let path = &args.karmada_kubeconfig;
    let in_file = match certs::write_kubeconfig(path, renewed) {
        Ok(()) => true,
        Err(e) => {
            if !in_secret {
                tracing::warn!(path = %path.display(), error = %e, "could not write the renewed certificate to the kubeconfig");
            }
            false
        }
    };
    if !in_secret && !in_file {
        tracing::error!(
            cluster = %args.cluster_name,
            "the renewed certificate could not be saved: it is used until the agent restarts"
        );
    }
}

/// Resolves with the credentials of the kubeconfig file once it holds a certificate newer
/// than `current`'s (checked every `every`).
pub async fn newer_in_file(
    path: &Path,
    context: Option<&str>,
    current: &Credentials,
    every: Duration,
) -> Credentials {
    loop {
        tokio::time::sleep(every).await;
        match Credentials::read(path, context) {
            Ok(c) if c.newer_than(current) => return c,
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(error = %format!("{e:#}"), "reading the agent's kubeconfig")
            }
        }
    }
}
