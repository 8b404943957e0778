//! Agent certificate approval and signing: Karmada's agentcsrapproving controller
//! (pkg/controllers/certificate/approver) and kube's `kubernetes.io/kube-apiserver-client`
//! signer (pkg/controller/certificates/signer).
//!
//! An agent CSR asks for `CN=system:karmada:agent:<cluster>, O=system:karmada:agents` with
//! client-auth usages. When its requester is that same identity (a renewal) the requester
//! must be allowed to create `certificatesigningrequests/selfclusteragent`, otherwise (a token
//! holder registering) `certificatesigningrequests/clusteragent`; a SubjectAccessReview asks.
//! A bootstrap token registers one agent: a second agent CSR from the same token is denied.
//! Other CSRs are left to people (`kubectl certificate approve`).

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::ByteString;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestCondition,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::PostParams;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::task::JoinHandle;

use super::RegistrationConfig;
use crate::agent::rbac::{AGENT_USER_PREFIX, AGENTS_GROUP};

/// The signer agents' CSRs name.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";

/// Starts the approver and signer.
pub fn start(client: kube::Client, config: RegistrationConfig) -> JoinHandle<()> {
    tokio::spawn(async move {
        let api = Api::<CertificateSigningRequest>::all(client.clone());
        let mut stream = watcher(api.clone(), watcher::Config::default())
            .default_backoff()
            .applied_objects()
            .boxed();
        while let Some(ev) = stream.next().await {
            let csr = match ev {
                Ok(csr) => csr,
                Err(e) => {
                    tracing::warn!(error = %e, "watching certificate signing requests failed");
                    continue;
                }
            };
            handle(&client, &api, &config, csr).await;
        }
    })
}

/// Reconciles one request, retrying failures with back-off (a Role just created may not be
/// in the authorizer's index yet when its binding is checked for escalation). Requests are
/// few, so retrying inline keeps their order.
async fn handle(
    client: &kube::Client,
    api: &Api<CertificateSigningRequest>,
    config: &RegistrationConfig,
    csr: CertificateSigningRequest,
) {
    let name = csr.name_any();
    let mut delay = Duration::from_millis(50);
    let mut current = Some(csr);
    for attempt in 1..=8 {
        let Some(csr) = current.take() else { return };
        match reconcile(client, api, config, csr).await {
            Ok(()) => return,
            Err(e) if attempt == 8 => {
                tracing::warn!(csr = %name, error = %e, "handling a certificate signing request failed");
                return;
            }
            Err(e) => {
                tracing::debug!(csr = %name, error = %e, "retrying a certificate signing request")
            }
        }
        tokio::time::sleep(delay).await;
        delay *= 2;
        current = match api.get_opt(&name).await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(csr = %name, error = %e, "reading a certificate signing request failed");
                return;
            }
        };
    }
}

fn condition<'a>(
    csr: &'a CertificateSigningRequest,
    ty: &str,
) -> Option<&'a CertificateSigningRequestCondition> {
    csr.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == ty)
}

fn new_condition(ty: &str, reason: &str, message: String) -> CertificateSigningRequestCondition {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    CertificateSigningRequestCondition {
        type_: ty.to_owned(),
        status: "True".to_owned(),
        reason: Some(reason.to_owned()),
        message: Some(message),
        last_update_time: Some(now.clone()),
        last_transition_time: Some(now),
    }
}

/// The cluster an agent CSR is for, when it is one (isAgentCSR / ValidateAgentCSR).
pub fn agent_cluster(csr: &CertificateSigningRequest) -> Option<String> {
    if csr.spec.signer_name != KUBE_APISERVER_CLIENT {
        return None;
    }
    let pem = String::from_utf8(csr.spec.request.0.clone()).ok()?;
    let (cn, orgs) = certs::request_subject(&pem).ok()?;
    if orgs != [AGENTS_GROUP] {
        return None;
    }
    let cluster = cn.strip_prefix(AGENT_USER_PREFIX)?;
    let mut usages: Vec<&str> = csr
        .spec
        .usages
        .as_deref()
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
        .collect();
    usages.sort_unstable();
    let ok = usages == ["client auth", "digital signature"]
        || usages == ["client auth", "digital signature", "key encipherment"];
    (ok && !cluster.is_empty()).then(|| cluster.to_owned())
}

async fn reconcile(
    client: &kube::Client,
    api: &Api<CertificateSigningRequest>,
    config: &RegistrationConfig,
    csr: CertificateSigningRequest,
) -> Result<(), kube::Error> {
    let issued = csr
        .status
        .as_ref()
        .and_then(|s| s.certificate.as_ref())
        .is_some_and(|c| !c.0.is_empty());
    if issued || condition(&csr, "Denied").is_some() || condition(&csr, "Failed").is_some() {
        return Ok(());
    }
    if condition(&csr, "Approved").is_some() {
        return sign(api, config, csr).await;
    }
    let Some(cluster) = agent_cluster(&csr) else {
        return Ok(());
    };
    let requester = csr.spec.username.clone().unwrap_or_default();
    let renewal = requester == format!("{AGENT_USER_PREFIX}{cluster}");
    let subresource = if renewal {
        "selfclusteragent"
    } else {
        "clusteragent"
    };
    if !authorized(client, &csr, subresource).await? {
        // As Karmada: not ours to approve; a person may still do it.
        return Ok(());
    }
    if !renewal
        && let Some(token_id) = requester.strip_prefix(certs::bootstrap_token::USER_PREFIX)
        && let Some(previous) = earlier_registration(api, &csr, &requester).await?
    {
        let message = format!(
            "bootstrap token {token_id} was already used to register an agent (certificate signing request {previous}); create a new token with `karmada-rs token create` on the control plane"
        );
        return set_condition(
            api,
            csr,
            new_condition("Denied", "BootstrapTokenReused", message),
        )
        .await;
    }
    if !renewal {
        crate::agent::rbac::ensure(client, &cluster).await?;
    }
    let message = if renewal {
        "Auto approving self karmada agent certificate after SubjectAccessReview."
    } else {
        "Auto approving karmada agent certificate after SubjectAccessReview."
    };
    set_condition(
        api,
        csr,
        new_condition("Approved", "AutoApproved", message.to_owned()),
    )
    .await
}

/// Another agent CSR from the same bootstrap identity, already approved.
async fn earlier_registration(
    api: &Api<CertificateSigningRequest>,
    csr: &CertificateSigningRequest,
    requester: &str,
) -> Result<Option<String>, kube::Error> {
    Ok(api
        .list(&Default::default())
        .await?
        .items
        .into_iter()
        .find(|other| {
            other.metadata.uid != csr.metadata.uid
                && other.spec.username.as_deref() == Some(requester)
                && condition(other, "Approved").is_some()
                && agent_cluster(other).is_some()
        })
        .map(|o| o.name_any()))
}

/// The approver's SubjectAccessReview for the requester.
async fn authorized(
    client: &kube::Client,
    csr: &CertificateSigningRequest,
    subresource: &str,
) -> Result<bool, kube::Error> {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: csr.spec.username.clone(),
            uid: csr.spec.uid.clone(),
            groups: csr.spec.groups.clone(),
            extra: csr.spec.extra.clone(),
            resource_attributes: Some(ResourceAttributes {
                group: Some("certificates.k8s.io".into()),
                resource: Some("certificatesigningrequests".into()),
                verb: Some("create".into()),
                subresource: Some(subresource.into()),
                version: Some("*".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = Api::<SubjectAccessReview>::all(client.clone())
        .create(&PostParams::default(), &review)
        .await?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// Adds a condition through the `approval` subresource.
async fn set_condition(
    api: &Api<CertificateSigningRequest>,
    mut csr: CertificateSigningRequest,
    c: CertificateSigningRequestCondition,
) -> Result<(), kube::Error> {
    let name = csr.name_any();
    tracing::info!(csr = %name, condition = %c.type_, "certificate signing request {}", c.reason.as_deref().unwrap_or(""));
    let status = csr.status.get_or_insert_with(Default::default);
    status.conditions.get_or_insert_with(Vec::new).push(c);
    api.replace_subresource("approval", &name, &PostParams::default(), &csr)
        .await?;
    Ok(())
}

/// The kube-apiserver-client signer: issues the certificate of an approved request from the
/// CA, for the requested duration capped at the signer's; an unusable request fails.
async fn sign(
    api: &Api<CertificateSigningRequest>,
    config: &RegistrationConfig,
    mut csr: CertificateSigningRequest,
) -> Result<(), kube::Error> {
    if csr.spec.signer_name != KUBE_APISERVER_CLIENT {
        return Ok(());
    }
    let name = csr.name_any();
    let usages = csr.spec.usages.clone().unwrap_or_default();
    let requested = csr
        .spec
        .expiration_seconds
        .and_then(|s| u64::try_from(s).ok())
        .map(Duration::from_secs)
        .unwrap_or(config.max_duration);
    let valid_for = requested.min(config.max_duration);
    let pem = String::from_utf8(csr.spec.request.0.clone()).unwrap_or_default();
    let outcome = if !usages.iter().any(|u| u == "client auth")
        || usages.iter().any(|u| u == "server auth")
    {
        Err("kubernetes.io/kube-apiserver-client signs client certificates only: the usages must include \"client auth\" and not \"server auth\"".to_owned())
    } else {
        (config.signer)(
            &pem,
            valid_for,
            usages.iter().any(|u| u == "key encipherment"),
        )
    };
    let status = csr.status.get_or_insert_with(Default::default);
    match outcome {
        Ok(cert) => {
            tracing::info!(csr = %name, "signed certificate signing request");
            status.certificate = Some(ByteString(cert.into_bytes()));
        }
        Err(e) => {
            status
                .conditions
                .get_or_insert_with(Vec::new)
                .push(new_condition("Failed", "SignerValidationFailure", e));
        }
    }
    api.replace_status(&name, &PostParams::default(), &csr)
        .await?;
    Ok(())
}
