//! `karmada-rs register` and `karmada-rs unregister`: pull-mode registration as
//! `karmadactl register` does it (pkg/karmadactl/register, pkg/karmadactl/unregister). Token
//! discovery reads `kube-public/cluster-info` anonymously, trusts it only if its JWS verifies
//! with the token and its CA matches the pinned hash, then submits the agent's
//! CertificateSigningRequest with the token; the control plane approves and signs it. The
//! agent is then installed into the member with a kubeconfig holding that certificate
//! ([`controllers::agent::install`]) and registers its Cluster when it starts — or, with
//! `--start-agent`, runs in this process.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;
use base64::Engine;
use certs::bootstrap_token::{self as bt, BootstrapToken};
use clap::Args;
use controllers::agent::install::{self, AgentDeployment, KUBECONFIG_SECRET};
use controllers::agent::selection;
use k8s_openapi::ByteString;
use k8s_openapi::api::certificates::v1::{
    CertificateSigningRequest, CertificateSigningRequestSpec,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use karmada_api::cluster::v1alpha1::Cluster;
use kube::Api;
use kube::api::{ObjectMeta, PostParams};

use super::agent::{AgentArgs, ClusterProperties};
use super::parse_duration;

/// How long discovery waits for cluster-info to carry the token's signature.
const SIGNATURE_WAIT: Duration = Duration::from_secs(5);

/// The agent's image by default: karmada-rs's image of this version (karmadactl defaults to
/// karmada-agent's image of its own release; karmada-rs's image holds the agent too).
pub const DEFAULT_AGENT_IMAGE: &str =
    concat!("ghcr.io/karmada-rs/karmada-rs:", env!("CARGO_PKG_VERSION"));

/// Token discovery and the agent's certificate: what every registration does.
#[derive(Args, Clone, Debug)]
pub struct BootstrapArgs {
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
    /// Lifetime asked for the agent's certificate.
    #[arg(long, env = "KARMADA_RS_CERT_EXPIRATION", value_parser = parse_duration, default_value = "8760h")]
    pub cert_expiration: Duration,
    /// How long to wait for discovery, for the certificate and for the agent's Deployment to
    /// roll out.
    #[arg(long, env = "KARMADA_RS_TIMEOUT", value_parser = parse_duration, default_value = "5m")]
    pub timeout: Duration,
    /// Print nothing on success (for `up`).
    #[arg(skip)]
    pub quiet: bool,
}

/// Options of `register`.
#[derive(Args, Clone, Debug)]
pub struct RegisterArgs {
    #[command(flatten)]
    pub bootstrap: BootstrapArgs,
    /// Kubeconfig of the member cluster; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig.
    #[arg(long, env = "KARMADA_RS_CONTEXT")]
    pub context: Option<String>,
    /// Namespace of the agent in the member (its Deployment, ServiceAccount and kubeconfig
    /// Secret), and of its leader election Lease in the control plane.
    #[arg(
        short = 'n',
        long,
        env = "KARMADA_RS_NAMESPACE",
        default_value = "karmada-system"
    )]
    pub namespace: String,
    /// What the agent records on the Cluster.
    #[command(flatten)]
    pub properties: ClusterProperties,
    /// Have the agent renew its certificate before it expires (its certRotation
    /// controller).
    #[arg(long, env = "KARMADA_RS_ENABLE_CERT_ROTATION")]
    pub enable_cert_rotation: bool,
    /// Image of the agent's Deployment (karmada-rs's image; it runs the `agent` subcommand).
    #[arg(long, env = "KARMADA_RS_KARMADA_AGENT_IMAGE", default_value = DEFAULT_AGENT_IMAGE)]
    pub karmada_agent_image: String,
    /// Replicas of the agent's Deployment; they elect one to act (leader election on the
    /// Lease karmada-agent-<cluster>).
    #[arg(long, env = "KARMADA_RS_KARMADA_AGENT_REPLICAS", default_value_t = 1, value_parser = clap::value_parser!(i32).range(0..))]
    pub karmada_agent_replicas: i32,
    /// Check the member and the token and print the objects that would be installed,
    /// creating nothing.
    #[arg(long, env = "KARMADA_RS_DRY_RUN", conflicts_with = "start_agent")]
    pub dry_run: bool,
    /// Where to write the agent's control-plane kubeconfig too (installed agents read it from
    /// the member Secret) [default with --start-agent: ./karmada-agent-<cluster>.kubeconfig].
    #[arg(long, env = "KARMADA_RS_AGENT_KUBECONFIG")]
    pub agent_kubeconfig: Option<PathBuf>,
    /// Run the agent in this process once registered (until Ctrl-C) instead of installing it
    /// into the member.
    #[arg(long, env = "KARMADA_RS_START_AGENT")]
    pub start_agent: bool,
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
    /// Kubeconfig of the member cluster: the agent `register` installed there is removed
    /// too (its Deployment, ServiceAccount, RBAC and kubeconfig Secret).
    #[arg(long, env = "KARMADA_RS_CLUSTER_KUBECONFIG")]
    pub cluster_kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig.
    #[arg(
        long,
        env = "KARMADA_RS_CLUSTER_CONTEXT",
        requires = "cluster_kubeconfig"
    )]
    pub cluster_context: Option<String>,
    /// Namespace of the installed agent (`register -n`).
    #[arg(
        short = 'n',
        long,
        env = "KARMADA_RS_NAMESPACE",
        default_value = "karmada-system"
    )]
    pub namespace: String,
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
    args: &BootstrapArgs,
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

/// The control plane as token discovery found it.
pub struct Discovered {
    server: String,
    ca_pem: String,
    token: BootstrapToken,
}

/// Token discovery: reads cluster-info from ADDR and trusts it through the token's signature
/// and the CA pin (nothing is created).
pub async fn discover_control_plane(args: &BootstrapArgs) -> anyhow::Result<Discovered> {
    let token = BootstrapToken::parse(&args.token)?;
    let addr = args
        .addr
        .trim_start_matches("https://")
        .trim_end_matches('/');
    let server = format!("https://{addr}");
    if !args.quiet {
        println!("[discovery] reading cluster-info from {server}");
    }
    let ca_pem = discover(args, &token, &server).await?;
    if !args.quiet {
        println!("[discovery] the control plane's CA is trusted");
    }
    Ok(Discovered {
        server,
        ca_pem,
        token,
    })
}

/// The TLS bootstrap: the agent's certificate, requested with the bootstrap token and
/// approved by the control plane, in a kubeconfig for the discovered control plane.
pub async fn agent_kubeconfig(
    args: &BootstrapArgs,
    found: &Discovered,
) -> anyhow::Result<certs::Kubeconfig> {
    let bootstrap = client_for(&kubeconfig_text(
        &found.server,
        Some(&found.ca_pem),
        Some(&found.token.to_string()),
    ))
    .await?;
    if !args.quiet {
        println!(
            "[certificate] requesting a client certificate for {}",
            controllers::agent::rbac::agent_user(&args.cluster_name)
        );
    }
    let (cert_pem, key_pem) = request_certificate(
        &bootstrap,
        &args.cluster_name,
        args.cert_expiration,
        args.timeout,
    )
    .await?;
    Ok(certs::Kubeconfig {
        name: "karmada".into(),
        server: found.server.clone(),
        ca_pem: found.ca_pem.clone(),
        credentials: certs::KubeconfigCredentials::ClientCert { cert_pem, key_pem },
        namespace: None,
    })
}

fn write_agent_kubeconfig(
    path: &Path,
    kubeconfig: &certs::Kubeconfig,
    quiet: bool,
) -> anyhow::Result<()> {
    certs::write_kubeconfig(path, kubeconfig)
        .with_context(|| format!("writing {}", path.display()))?;
    if !quiet {
        println!("[certificate] the agent's kubeconfig is {}", path.display());
    }
    Ok(())
}

/// Runs `register`: as `karmadactl register`, checks the member (preflight), discovers the
/// control plane, obtains the agent's certificate and installs the agent into the member
/// (its Deployment registers the Cluster when it starts); with `--start-agent` the agent
/// runs in this process instead, installing nothing.
pub async fn register(args: RegisterArgs) -> anyhow::Result<()> {
    let b = &args.bootstrap;
    let problems = karmada_api::validation::names::validate_cluster_name(&b.cluster_name);
    if !problems.is_empty() {
        anyhow::bail!(
            "invalid cluster name({}): {}",
            b.cluster_name,
            problems.join(";")
        );
    }
    BootstrapToken::parse(&b.token)?;
    let member_config =
        super::agent::kube_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let member_endpoint = member_config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_owned();
    let member = super::agent::client(member_config, controllers::agent::USER_AGENT)?;
    let deployment = AgentDeployment {
        namespace: args.namespace.clone(),
        cluster: b.cluster_name.clone(),
        image: args.karmada_agent_image.clone(),
        replicas: args.karmada_agent_replicas,
        member_endpoint: member_endpoint.clone(),
        provider: args.properties.cluster_provider.clone(),
        region: args.properties.cluster_region.clone(),
        zones: args.properties.zones(),
        cert_rotation: args.enable_cert_rotation,
        proxy_server_address: args.properties.proxy_server_address.clone(),
    };
    if !args.start_agent {
        println!("[preflight] Running pre-flight checks");
        let problems = install::preflight(&member, &args.namespace).await;
        if !problems.is_empty() {
            let list: Vec<String> = problems.iter().map(|p| format!("\t[ERROR]: {p}")).collect();
            anyhow::bail!(
                "[preflight] Some fatal errors occurred:\n{}\n[preflight] an agent is installed in namespace {} of the member already; remove it with `karmada-rs unregister {} --cluster-kubeconfig ...` or pick another --namespace",
                list.join("\n"),
                args.namespace,
                b.cluster_name
            );
        }
        println!("[preflight] All pre-flight checks were passed");
    }
    let found = discover_control_plane(b).await?;
    if args.dry_run {
        print_dry_run(&deployment)?;
        return Ok(());
    }

    let kubeconfig = agent_kubeconfig(b, &found).await?;
    // As karmadactl: a cluster of that name is registered already (checked with the agent's
    // own identity, which may read its Cluster).
    let agent_client = client_for(&kubeconfig.to_yaml()?).await?;
    if Api::<Cluster>::all(agent_client)
        .get_opt(&b.cluster_name)
        .await
        .with_context(|| format!("checking whether cluster {} exists", b.cluster_name))?
        .is_some()
    {
        anyhow::bail!(
            "failed to register as cluster with name {} already exists",
            b.cluster_name
        );
    }

    if args.start_agent {
        let path = args.agent_kubeconfig.clone().unwrap_or_else(|| {
            PathBuf::from(format!("karmada-agent-{}.kubeconfig", b.cluster_name))
        });
        write_agent_kubeconfig(&path, &kubeconfig, b.quiet)?;
        let mut agent = AgentArgs::new(path, b.cluster_name.clone(), args.kubeconfig.clone());
        agent.context = args.context.clone();
        agent.cluster_api_endpoint = member_endpoint;
        agent.properties = args.properties.clone();
        agent.leader_election.leader_elect_resource_namespace = args.namespace.clone();
        if args.enable_cert_rotation {
            agent.controllers.push(selection::CERT_ROTATION.into());
        }
        return super::agent::agent(agent).await;
    }

    if let Some(path) = &args.agent_kubeconfig {
        write_agent_kubeconfig(path, &kubeconfig, b.quiet)?;
    }
    let ns = &args.namespace;
    println!("[karmada-agent-start] Installing the agent into namespace {ns} of the member");
    install::install(&member, &deployment, &kubeconfig.to_yaml()?)
        .await
        .context("installing the agent into the member")?;
    println!("[karmada-agent-start] Waiting for the karmada-agent Deployment to roll out");
    install::wait_for_rollout(&member, ns, b.timeout)
        .await
        .map_err(anyhow::Error::msg)?;
    println!(
        "\ncluster({}) is joined successfully: its agent ({} replicas of {}) registers the Cluster when it starts",
        b.cluster_name, args.karmada_agent_replicas, args.karmada_agent_image
    );
    Ok(())
}

/// `--dry-run`: what would be installed (the kubeconfig Secret without its data, which only
/// exists once the certificate is issued).
fn print_dry_run(deployment: &AgentDeployment) -> anyhow::Result<()> {
    println!(
        "[dry-run] the token and the member are valid; nothing was created. The agent would be installed as:"
    );
    for object in deployment.objects() {
        println!("---");
        if object["kind"] == "Secret" {
            println!(
                "# data.{KUBECONFIG_SECRET}: the agent's kubeconfig, with the certificate issued at registration"
            );
        }
        print!("{}", serde_yaml::to_string(&object)?);
    }
    Ok(())
}

/// Runs `unregister`: as `karmadactl unregister`, removes the Cluster (waiting for its Works
/// to go), the agent's RBAC, and — given the member's kubeconfig — the agent `register`
/// installed there; then the agent's leader election Lease.
pub async fn unregister(args: UnregisterArgs) -> anyhow::Result<()> {
    let control_plane = controllers::join::client_from_kubeconfig(
        args.kubeconfig.as_deref(),
        args.karmada_context.as_deref(),
    )
    .await?;
    let member = match &args.cluster_kubeconfig {
        Some(path) => {
            let member = super::agent::client(
                super::agent::kube_config(Some(path), args.cluster_context.as_deref()).await?,
                controllers::agent::USER_AGENT,
            )?;
            // Before removing anything, so that an unreachable member leaves nothing half
            // done (unless forced).
            if !args.force {
                member.apiserver_version().await.with_context(|| {
                    format!(
                        "the member cluster ({}) cannot be reached to remove its agent; fix --cluster-kubeconfig or pass --force",
                        path.display()
                    )
                })?;
            }
            Some(member)
        }
        None => None,
    };
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
    if let Some(member) = &member {
        match install::remove(member, &args.namespace).await {
            Ok(removed) => {
                for what in removed {
                    println!("deleted {what} from the member");
                }
            }
            Err(e) if args.force => {
                eprintln!("warning: the agent installed in the member was not removed: {e}");
            }
            Err(e) => return Err(e).context("removing the agent from the member"),
        }
    }
    // The agent's RBAC is gone, so a replica still stopping cannot write its Lease again.
    let lease = controllers::agent::leader_election_id(&args.name);
    match Api::<Lease>::namespaced(control_plane.clone(), &args.namespace)
        .delete(&lease, &Default::default())
        .await
    {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_not_found() => {}
        Err(e) => {
            return Err(e).with_context(|| {
                format!(
                    "deleting the agent's leader election Lease {}/{lease}",
                    args.namespace
                )
            });
        }
    }
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
