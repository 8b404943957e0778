//! `karmada-rs agent`: karmada-agent for a Pull cluster. It runs next to (or inside) its
//! member, connects out to the control plane only, and serves its cluster there
//! ([`controllers::agent`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use controllers::agent::{self, AgentConfig, lease::LeaseSettings};
use k8s_openapi::api::core::v1::Namespace;
use karmada_api::cluster::v1alpha1::{Cluster, ClusterSyncMode};
use kube::Api;
use kube::api::PostParams;

use super::{ClusterDefaults, ClusterFlags, KARMADA_DEFAULTS, parse_duration};

/// Options of `agent`.
#[derive(Args, Clone, Debug)]
pub struct AgentArgs {
    /// Kubeconfig of the Karmada control plane, with the agent's own credentials (as
    /// `register` writes it).
    #[arg(long, env = "KARMADA_RS_KARMADA_KUBECONFIG")]
    pub karmada_kubeconfig: PathBuf,
    /// Context in the control-plane kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_KARMADA_CONTEXT")]
    pub karmada_context: Option<String>,
    /// Name of the member cluster this agent serves.
    #[arg(long, env = "KARMADA_RS_CLUSTER_NAME")]
    pub cluster_name: String,
    /// Kubeconfig of the member cluster; $KUBECONFIG or ~/.kube/config by default.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_CONTEXT")]
    pub context: Option<String>,
    /// API endpoint of the member recorded on a Cluster the agent creates (Karmada's
    /// `--cluster-api-endpoint`); empty by default, since the control plane reaches a Pull
    /// cluster only through its agent.
    #[arg(long, env = "KARMADA_RS_CLUSTER_API_ENDPOINT", default_value = "")]
    pub cluster_api_endpoint: String,
    /// Duration of the cluster Lease.
    #[arg(long, env = "KARMADA_RS_CLUSTER_LEASE_DURATION", value_parser = parse_duration, default_value = "40s")]
    pub cluster_lease_duration: Duration,
    /// Fraction of the Lease duration after which it is renewed.
    #[arg(
        long,
        env = "KARMADA_RS_CLUSTER_LEASE_RENEW_INTERVAL_FRACTION",
        default_value_t = 0.25
    )]
    pub cluster_lease_renew_interval_fraction: f64,
    /// How often the agent checks whether its client certificate needs renewal.
    #[arg(long, env = "KARMADA_RS_CERT_ROTATION_CHECKING_INTERVAL", value_parser = parse_duration, default_value = "5m")]
    pub cert_rotation_checking_interval: Duration,
    /// Renew the client certificate once less than this fraction of its lifetime is left.
    #[arg(
        long,
        env = "KARMADA_RS_CERT_ROTATION_REMAINING_TIME_THRESHOLD",
        default_value_t = 0.2
    )]
    pub cert_rotation_remaining_time_threshold: f64,
    #[command(flatten)]
    pub cluster: ClusterFlags,
    #[command(flatten)]
    pub rate_limiter: super::RateLimiterFlags,
    /// Print nothing when serving (for `up`).
    #[arg(skip)]
    pub quiet: bool,
}

impl AgentArgs {
    /// An agent's options with Karmada's defaults.
    pub fn new(
        karmada_kubeconfig: PathBuf,
        cluster_name: String,
        kubeconfig: Option<PathBuf>,
    ) -> AgentArgs {
        AgentArgs {
            karmada_kubeconfig,
            karmada_context: None,
            cluster_name,
            kubeconfig,
            context: None,
            cluster_api_endpoint: String::new(),
            cluster_lease_duration: Duration::from_secs(40),
            cluster_lease_renew_interval_fraction: 0.25,
            cert_rotation_checking_interval: Duration::from_secs(300),
            cert_rotation_remaining_time_threshold: 0.2,
            cluster: ClusterFlags {
                cluster_status_update_frequency: None,
                cluster_success_threshold: None,
                cluster_failure_threshold: None,
                cluster_cache_sync_timeout: None,
                enable_cluster_resource_modeling: true,
                cluster_monitor_period: Duration::from_secs(5),
                cluster_monitor_grace_period: Duration::from_secs(40),
                cluster_startup_grace_period: Duration::from_secs(60),
            },
            rate_limiter: super::RateLimiterFlags::default(),
            quiet: false,
        }
    }
}

/// The agent's timings: Karmada's.
const AGENT_DEFAULTS: ClusterDefaults = KARMADA_DEFAULTS;

/// Reads a kubeconfig into a client configuration (no request timeout: the agent's watches
/// are long-lived).
pub async fn kube_config(
    path: Option<&Path>,
    context: Option<&str>,
) -> anyhow::Result<kube::Config> {
    let shown = path.map_or_else(|| "$KUBECONFIG".to_owned(), |p| p.display().to_string());
    let kubeconfig = match path {
        Some(p) => kube::config::Kubeconfig::read_from(p),
        None => kube::config::Kubeconfig::read(),
    }
    .with_context(|| format!("reading kubeconfig {shown}"))?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .with_context(|| format!("loading kubeconfig {shown}"))
}

/// A client for a configuration, honouring its `proxy-url` as member clients do.
pub fn client(mut config: kube::Config, user_agent: &str) -> anyhow::Result<kube::Client> {
    config.connect_timeout = Some(Duration::from_secs(10));
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_str(user_agent).context("user agent")?,
    ));
    let proxy = controllers::member_clients::take_proxy(&mut config)?;
    Ok(controllers::member_clients::kube_client(
        config,
        proxy.into(),
    )?)
}

/// Runs the agent until Ctrl-C. When its client certificate is renewed the controllers are
/// restarted with a client for the new certificate.
pub async fn agent(args: AgentArgs) -> anyhow::Result<()> {
    let fraction = args.cluster_lease_renew_interval_fraction;
    if !(fraction > 0.0 && fraction < 1.0) {
        anyhow::bail!(
            "--cluster-lease-renew-interval-fraction must be between 0 and 1, got {fraction}"
        );
    }
    let threshold = args.cert_rotation_remaining_time_threshold;
    if !(threshold > 0.0 && threshold < 1.0) {
        anyhow::bail!(
            "--cert-rotation-remaining-time-threshold must be between 0 and 1, got {threshold}"
        );
    }
    let member = client(
        kube_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?,
        agent::USER_AGENT,
    )?;
    let mut config = AgentConfig::new(&args.cluster_name);
    config.cluster_settings = args.cluster.settings(AGENT_DEFAULTS);
    config.rate_limiter = args.rate_limiter.options();
    config.lease = LeaseSettings {
        duration: args.cluster_lease_duration,
        renew_interval: args.cluster_lease_duration.mul_f64(fraction),
    };
    let mut first = true;
    loop {
        let control_plane = client(
            kube_config(
                Some(&args.karmada_kubeconfig),
                args.karmada_context.as_deref(),
            )
            .await?,
            agent::USER_AGENT,
        )?;
        if first {
            ensure_cluster(
                &control_plane,
                &member,
                &args.cluster_name,
                &args.cluster_api_endpoint,
            )
            .await?;
        }
        let running = agent::start(config.clone(), control_plane.clone(), member.clone());
        if first && !args.quiet {
            println!("karmada-rs agent serving cluster {}", args.cluster_name);
            first = false;
        }
        tokio::select! {
            r = tokio::signal::ctrl_c() => {
                r.context("waiting for Ctrl-C")?;
                running.shutdown();
                return Ok(());
            }
            () = rotate_when_due(&args, &control_plane) => {
                tracing::info!(cluster = %args.cluster_name, "client certificate renewed; reconnecting");
                running.shutdown();
            }
        }
    }
}

/// The agent's certificate in its kubeconfig, with the server and CA it names.
fn current_certificate(path: &Path) -> anyhow::Result<(String, String, String)> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let kc = kube::config::Kubeconfig::read_from(path)
        .with_context(|| format!("reading {}", path.display()))?;
    let cert = kc
        .auth_infos
        .first()
        .and_then(|a| a.auth_info.as_ref())
        .and_then(|a| a.client_certificate_data.clone())
        .context("the kubeconfig has no client-certificate-data")?;
    let cluster = kc
        .clusters
        .first()
        .and_then(|c| c.cluster.clone())
        .context("the kubeconfig has no cluster")?;
    let ca = cluster
        .certificate_authority_data
        .context("the kubeconfig has no certificate-authority-data")?;
    Ok((
        String::from_utf8(b64.decode(cert.trim())?)?,
        cluster.server.unwrap_or_default(),
        String::from_utf8(b64.decode(ca.trim())?)?,
    ))
}

/// Karmada's cert-rotation controller: checks the agent's certificate every interval and,
/// once less than the threshold of its lifetime is left, asks for a new one for the same
/// identity (approved automatically as a renewal), writes it to the kubeconfig and returns.
async fn rotate_when_due(args: &AgentArgs, control_plane: &kube::Client) {
    loop {
        tokio::time::sleep(args.cert_rotation_checking_interval).await;
        match rotate_if_due(args, control_plane).await {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "renewing the agent's client certificate failed"),
        }
    }
}

async fn rotate_if_due(args: &AgentArgs, control_plane: &kube::Client) -> anyhow::Result<bool> {
    let (cert, server, ca_pem) = current_certificate(&args.karmada_kubeconfig)?;
    let (not_before, not_after) = certs::validity_window(&cert)?;
    let now = jiff::Timestamp::now().as_second();
    let total = (not_after - not_before).max(1);
    let left = not_after - now;
    if left as f64 > args.cert_rotation_remaining_time_threshold * total as f64 {
        return Ok(false);
    }
    tracing::info!(cluster = %args.cluster_name, left_seconds = left, "renewing the agent's client certificate");
    // The same lifetime as the current certificate (the signer backdates by 5 minutes).
    let lifetime = Duration::from_secs(u64::try_from(total - 300).unwrap_or(0).max(600));
    let (cert_pem, key_pem) = super::register::request_certificate(
        control_plane,
        &args.cluster_name,
        lifetime,
        Duration::from_secs(300),
    )
    .await?;
    certs::write_kubeconfig(
        &args.karmada_kubeconfig,
        &certs::Kubeconfig {
            name: "karmada".into(),
            server,
            ca_pem,
            credentials: certs::KubeconfigCredentials::ClientCert { cert_pem, key_pem },
            namespace: None,
        },
    )
    .with_context(|| format!("writing {}", args.karmada_kubeconfig.display()))?;
    Ok(true)
}

/// registerClusterInControlPlane: the agent creates its Cluster, in Pull mode, when it does
/// not exist yet; a Push cluster of that name is not the agent's to serve.
pub async fn ensure_cluster(
    client: &kube::Client,
    member: &kube::Client,
    name: &str,
    endpoint: &str,
) -> anyhow::Result<()> {
    let clusters = Api::<Cluster>::all(client.clone());
    let existing = clusters
        .get_opt(name)
        .await
        .with_context(|| format!("reading cluster {name} from the control plane"))?;
    match existing {
        Some(c) if c.spec.sync_mode != ClusterSyncMode::Pull => anyhow::bail!(
            "cluster {name} is registered in {:?} mode; an agent serves Pull clusters only",
            c.spec.sync_mode
        ),
        Some(_) => Ok(()),
        None => {
            // ObtainClusterID: the member's kube-system namespace UID.
            let kube_system = Api::<Namespace>::all(member.clone())
                .get("kube-system")
                .await
                .context("reading the member's kube-system namespace (its cluster ID)")?;
            let mut c = Cluster::default();
            c.metadata.name = Some(name.to_owned());
            c.spec.id = kube_system.metadata.uid.unwrap_or_default();
            c.spec.sync_mode = ClusterSyncMode::Pull;
            c.spec.api_endpoint = endpoint.to_owned();
            match clusters.create(&PostParams::default(), &c).await {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
                Err(e) => Err(e).with_context(|| format!("creating cluster {name}")),
            }
        }
    }
}
