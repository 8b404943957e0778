//! `karmada-rs register` and `karmada-rs unregister`: pull-mode registration as
//! `karmadactl register` does it. Token discovery reads `kube-public/cluster-info`
//! anonymously, trusts it only if its JWS verifies with the token and its CA matches the
//! pinned hash, then submits the agent's CertificateSigningRequest with the token; the control
//! plane approves and signs it. The agent's kubeconfig is written with that certificate, the
//! Cluster is created in Pull mode, and the agent is started (or its command printed).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use base64::Engine;
use certs::bootstrap_token::{self as bt, BootstrapToken};
use clap::Args;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use super::agent::{AgentArgs, ensure_cluster};
use super::parse_duration;

/// How long discovery waits for cluster-info to carry the token's signature.
const SIGNATURE_WAIT: Duration = Duration::from_secs(5);

/// Options of `register`.
#[derive(Args, Clone, Debug)]
pub struct RegisterArgs {
    /// Address of the control plane (`host:port`).
    pub addr: String,
    /// The bootstrap token (`karmada-rs token create` on the control plane).
    #[arg(long, env = "KARMADA_RS_TOKEN")]
    pub token: String,
    /// The control plane's CA pin, `sha256:<hex>` (printed by `token create`); repeatable.
    #[arg(
        long = "discovery-token-ca-cert-hash",
        env = "KARMADA_RS_DISCOVERY_TOKEN_CA_CERT_HASH"
    )]
    pub ca_cert_hashes: Vec<String>,
    /// Trust the CA found by discovery without a pin (unsafe: anyone answering at ADDR with
    /// the token's signature could pose as the control plane).
    #[arg(long, env = "KARMADA_RS_DISCOVERY_TOKEN_UNSAFE_SKIP_CA_VERIFICATION")]
    pub discovery_token_unsafe_skip_ca_verification: bool,
    /// Name of the member cluster.
    #[arg(long, env = "KARMADA_RS_CLUSTER_NAME")]
    pub cluster_name: String,
    /// Kubeconfig of the member cluster; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig.
    #[arg(long, env = "KARMADA_RS_CONTEXT")]
    pub context: Option<String>,
    /// Where to write the agent's control-plane kubeconfig [default:
    /// ./karmada-agent-<cluster>.kubeconfig].
    #[arg(long, env = "KARMADA_RS_AGENT_KUBECONFIG")]
    pub agent_kubeconfig: Option<PathBuf>,
    /// Lifetime asked for the agent's certificate.
    #[arg(long, env = "KARMADA_RS_CERT_EXPIRATION", value_parser = parse_duration, default_value = "8760h")]
    pub cert_expiration: Duration,
    /// How long to wait for discovery and for the certificate.
    #[arg(long, env = "KARMADA_RS_TIMEOUT", value_parser = parse_duration, default_value = "5m")]
    pub timeout: Duration,
    /// Run the agent in this process once registered (until Ctrl-C) instead of printing its
    /// command.
    #[arg(long, env = "KARMADA_RS_START_AGENT")]
    pub start_agent: bool,
    /// Print nothing on success (for `up`).
    #[arg(skip)]
    pub quiet: bool,
}

/// Options of `unregister`.
#[derive(Args, Clone, Debug)]
pub struct UnregisterArgs {
    /// Name of the member cluster.
    pub name: String,
    /// Kubeconfig of the Karmada control plane (an administrator's); $KUBECONFIG or
    /// ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the control-plane kubeconfig.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT")]
    pub karmada_context: Option<String>,
    /// The agent's kubeconfig written by `register`, removed too when given.
    #[arg(long, env = "KARMADA_RS_AGENT_KUBECONFIG")]
    pub agent_kubeconfig: Option<PathBuf>,
    /// Finish even if cleanup cannot complete (e.g. the agent is gone): after --wait, remove
    /// the finalizers of the cluster's Works, execution space and Cluster.
    #[arg(long, env = "KARMADA_RS_FORCE")]
    pub force: bool,
    /// How long to wait for the Cluster to be removed.
    #[arg(long, env = "KARMADA_RS_WAIT", value_parser = parse_duration, default_value = "60s")]
    pub wait: Duration,
}

/// A kubeconfig text for `server` with `ca_pem` and, optionally, a bearer token.
fn kubeconfig_text(server: &str, ca_pem: Option<&str>, token: Option<&str>) -> String {
    let mut cluster = serde_json::json!({"server": server});
    match ca_pem {
        Some(ca) => {
            cluster["certificate-authority-data"] =
                base64::engine::general_purpose::STANDARD.encode(ca).into()
        }
        None => cluster["insecure-skip-tls-verify"] = true.into(),
    }
    let user = match token {
        Some(t) => serde_json::json!({"token": t}),
        None => serde_json::json!({}),
    };
    serde_json::json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "karmada", "cluster": cluster}],
        "users": [{"name": "bootstrap", "user": user}],
        "contexts": [{"name": "karmada", "context": {"cluster": "karmada", "user": "bootstrap"}}],
        "current-context": "karmada",
    })
    .to_string()
}

async fn client_for(text: &str) -> anyhow::Result<kube::Client> {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(text)?;
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    config.connect_timeout = Some(Duration::from_secs(10));
    config.read_timeout = Some(Duration::from_secs(30));
    Ok(kube::Client::try_from(config)?)
}

/// Token discovery: the control plane's CA, trusted through the token's JWS and the pin.
async fn discover(
    args: &RegisterArgs,
    token: &BootstrapToken,
    server: &str,
) -> anyhow::Result<String> {
    if args.ca_cert_hashes.is_empty() && !args.discovery_token_unsafe_skip_ca_verification {
        anyhow::bail!(
            "--discovery-token-ca-cert-hash is required unless --discovery-token-unsafe-skip-ca-verification is set (`karmada-rs token create` prints it)"
        );
    }
    for h in &args.ca_cert_hashes {
        let hex = h.strip_prefix("sha256:").unwrap_or("");
        if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            anyhow::bail!(
                "invalid --discovery-token-ca-cert-hash {h:?}: expected \"sha256:\" and 64 hexadecimal digits"
            );
        }
    }
    let anonymous = client_for(&kubeconfig_text(server, None, None)).await?;
    let deadline = Instant::now() + args.timeout;
    // A token created a moment ago is signed into cluster-info within milliseconds; waiting
    // this long for its signature covers that without making a bad token wait for --timeout.
    let signed_by = Instant::now() + SIGNATURE_WAIT.min(args.timeout);
    let jws_key = format!("{}{}", bt::JWS_KEY_PREFIX, token.id);
    let cm = loop {
        match Api::<ConfigMap>::namespaced(anonymous.clone(), bt::CLUSTER_INFO_NAMESPACE)
            .get(bt::CLUSTER_INFO_NAME)
            .await
        {
            Ok(cm)
                if Instant::now() < signed_by
                    && !cm.data.as_ref().is_some_and(|d| d.contains_key(&jws_key)) =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            Ok(cm) => break cm,
            Err(e) if Instant::now() < deadline => {
                tracing::warn!(error = %e, "reading cluster-info failed; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "reading {}/{} from {server}",
                        bt::CLUSTER_INFO_NAMESPACE,
                        bt::CLUSTER_INFO_NAME
                    )
                });
            }
        }
    };
    let data = cm.data.unwrap_or_default();
    let content = data
        .get(bt::CLUSTER_INFO_KUBECONFIG)
        .context("the cluster-info ConfigMap holds no kubeconfig")?;
    let jws = data.get(&jws_key).with_context(|| {
        format!(
            "there is no JWS signed token in the cluster-info ConfigMap. This token id {:?} is invalid for this cluster or it has expired (or was deleted). Use \"karmada-rs token create\" on the control plane to create a new valid token",
            token.id
        )
    })?;
    if !bt::verify_detached_jws(jws, content, token) {
        anyhow::bail!(
            "failed to verify JWS signature of received cluster info object, can't trust this API Server: the token's secret does not match token id {:?}",
            token.id
        );
    }
    let info = kube::config::Kubeconfig::from_yaml(content)
        .context("parsing cluster-info's kubeconfig")?;
    let ca_b64 = info
        .clusters
        .first()
        .and_then(|c| c.cluster.as_ref())
        .and_then(|c| c.certificate_authority_data.clone())
        .context("cluster-info's kubeconfig has no certificate authority")?;
    let ca_pem =
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(ca_b64.trim())?)?;
    if !args.ca_cert_hashes.is_empty() {
        let found: Vec<String> = bt::pem_certificates(&ca_pem)
            .iter()
            .filter_map(|der| bt::ca_cert_hash(der).ok())
            .collect();
        if !found.iter().any(|h| {
            args.ca_cert_hashes
                .iter()
                .any(|p| p.eq_ignore_ascii_case(h))
        }) {
            anyhow::bail!(
                "cluster CA found in cluster-info ConfigMap is invalid: none of the public keys {:?} are pinned",
                found
            );
        }
    }
    Ok(ca_pem)
}

/// Submits an agent CSR for `cluster` with `client` (the bootstrap token's, or the agent's
/// own when renewing) and waits for its certificate; returns the certificate and its key.
pub async fn request_certificate(
    client: &kube::Client,
    cluster: &str,
    expiration: Duration,
    timeout: Duration,
) -> anyhow::Result<(String, String)> {
    let user = controllers::agent::rbac::agent_user(cluster);
    let request = certs::client_request(&user, controllers::agent::rbac::AGENTS_GROUP)?;
    let suffix: String = BootstrapToken::generate()?.secret.chars().take(5).collect();
    let name = format!("{cluster}-{suffix}");
    let csr = CertificateSigningRequest {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            labels: Some([("karmada.io/system".to_owned(), "true".to_owned())].into()),
            ..Default::default()
        },
        spec: CertificateSigningRequestSpec {
            request: ByteString(request.cert_pem.into_bytes()),
            signer_name: controllers::registration::csr::KUBE_APISERVER_CLIENT.to_owned(),
            expiration_seconds: Some(i32::try_from(expiration.as_secs()).unwrap_or(i32::MAX)),
            usages: Some(vec![
                "digital signature".into(),
                "key encipherment".into(),
                "client auth".into(),
            ]),
            ..Default::default()
        },
        status: None,
    };
    let api = Api::<CertificateSigningRequest>::all(client.clone());
    api.create(&PostParams::default(), &csr).await.map_err(|e| match e {
        kube::Error::Api(s) if s.code == 401 => anyhow::anyhow!(
            "the control plane refused the bootstrap token: it has expired or was deleted; create a new one with `karmada-rs token create`"
        ),
        other => anyhow::Error::new(other).context(format!("creating certificate signing request {name}")),
    })?;
    let deadline = Instant::now() + timeout;
    loop {
        let got = api
            .get(&name)
            .await
            .with_context(|| format!("reading certificate signing request {name}"))?;
        let status = got.status.unwrap_or_default();
        for c in status.conditions.iter().flatten() {
            if c.type_ == "Denied" || c.type_ == "Failed" {
                anyhow::bail!(
                    "certificate signing request {name} was {}: {}",
                    c.type_.to_lowercase(),
                    c.message.as_deref().unwrap_or("")
                );
            }
        }
        if let Some(cert) = status.certificate.filter(|c| !c.0.is_empty()) {
            return Ok((String::from_utf8(cert.0)?, request.key_pem));
        }
        if Instant::now() >= deadline {
            anyhow::bail!(
                "timed out after {timeout:?} waiting for certificate signing request {name} to be approved; approve it with `kubectl certificate approve {name}` on the control plane"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs `register`.
pub async fn register(args: RegisterArgs) -> anyhow::Result<()> {
    let token = BootstrapToken::parse(&args.token)?;
    let addr = args
        .addr
        .trim_start_matches("https://")
        .trim_end_matches('/');
    let server = format!("https://{addr}");
    if !args.quiet {
        println!("[discovery] reading cluster-info from {server}");
    }
    let ca_pem = discover(&args, &token, &server).await?;
    if !args.quiet {
        println!("[discovery] the control plane's CA is trusted");
    }

    let bootstrap = client_for(&kubeconfig_text(
        &server,
        Some(&ca_pem),
        Some(&token.to_string()),
    ))
    .await?;
    let user = controllers::agent::rbac::agent_user(&args.cluster_name);
    if !args.quiet {
        println!("[certificate] requesting a client certificate for {user}");
    }
    let (cert_pem, key_pem) = request_certificate(
        &bootstrap,
        &args.cluster_name,
        args.cert_expiration,
        args.timeout,
    )
    .await?;

    let path = args.agent_kubeconfig.clone().unwrap_or_else(|| {
        PathBuf::from(format!("karmada-agent-{}.kubeconfig", args.cluster_name))
    });
    certs::write_kubeconfig(
        &path,
        &certs::Kubeconfig {
            name: "karmada".into(),
            server: server.clone(),
            ca_pem: ca_pem.clone(),
            credentials: certs::KubeconfigCredentials::ClientCert { cert_pem, key_pem },
            namespace: None,
        },
    )
    .with_context(|| format!("writing {}", path.display()))?;
    if !args.quiet {
        println!("[certificate] the agent's kubeconfig is {}", path.display());
    }

    // The Cluster, created with the agent's own identity (as karmada-agent does).
    let agent_client = super::agent::client(
        super::agent::kube_config(Some(&path), None).await?,
        controllers::agent::USER_AGENT,
    )?;
    let member = super::agent::client(
        super::agent::kube_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?,
        controllers::agent::USER_AGENT,
    )?;
    ensure_cluster(&agent_client, &member, &args.cluster_name, "").await?;
    if !args.quiet {
        println!(
            "cluster({}) is registered successfully in Pull mode",
            args.cluster_name
        );
    }

    let agent_args = AgentArgs::new(
        path.clone(),
        args.cluster_name.clone(),
        args.kubeconfig.clone(),
    );
    if args.start_agent {
        return super::agent::agent(agent_args).await;
    }
    let member_flag = args
        .kubeconfig
        .as_ref()
        .map(|k| format!(" --kubeconfig {}", k.display()))
        .unwrap_or_default();
    if !args.quiet {
        println!(
            "Start its agent next to the member:\n  karmada-rs agent --karmada-kubeconfig {} --cluster-name {}{member_flag}",
            path.display(),
            args.cluster_name
        );
    }
    Ok(())
}

/// Runs `unregister`.
pub async fn unregister(args: UnregisterArgs) -> anyhow::Result<()> {
    let control_plane = controllers::join::client_from_kubeconfig(
        args.kubeconfig.as_deref(),
        args.karmada_context.as_deref(),
    )
    .await?;
    let opts = controllers::join::UnjoinOptions {
        name: args.name.clone(),
        force: args.force,
        wait: args.wait,
    };
    let report = controllers::join::unregister(&control_plane, &opts)
        .await
        .with_context(|| format!("unregistering cluster {}", args.name))?;
    if report.forced {
        eprintln!(
            "warning: cluster {} did not finish cleaning up; its finalizers were removed and objects may remain in the member",
            args.name
        );
    }
    controllers::agent::rbac::remove(&control_plane, &args.name)
        .await
        .with_context(|| format!("removing the agent RBAC of cluster {}", args.name))?;
    if let Some(p) = &args.agent_kubeconfig {
        match std::fs::remove_file(p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", p.display())),
        }
    }
    println!("cluster({}) is unregistered successfully", args.name);
    Ok(())
}
