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
    #[arg(long, env = "KARMADA_RS_MEMBER_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_MEMBER_CONTEXT")]
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
    #[command(flatten)]
    pub cluster: ClusterFlags,
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
            cluster: ClusterFlags {
                enable_cluster_resource_modeling: true,
                ..ClusterFlags::default()
            },
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
    Ok(controllers::member_clients::kube_client(config, proxy)?)
}

/// Runs the agent until Ctrl-C.
pub async fn agent(args: AgentArgs) -> anyhow::Result<()> {
    let control_plane = client(
        kube_config(
            Some(&args.karmada_kubeconfig),
            args.karmada_context.as_deref(),
        )
        .await?,
        agent::USER_AGENT,
    )?;
    let member = client(
        kube_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?,
        agent::USER_AGENT,
    )?;
    ensure_cluster(
        &control_plane,
        &member,
        &args.cluster_name,
        &args.cluster_api_endpoint,
    )
    .await?;
    let fraction = args.cluster_lease_renew_interval_fraction;
    if !(fraction > 0.0 && fraction < 1.0) {
        anyhow::bail!(
            "--cluster-lease-renew-interval-fraction must be between 0 and 1, got {fraction}"
        );
    }
    let mut config = AgentConfig::new(&args.cluster_name);
    config.cluster_settings = args.cluster.settings(AGENT_DEFAULTS);
    config.lease = LeaseSettings {
        duration: args.cluster_lease_duration,
        renew_interval: args.cluster_lease_duration.mul_f64(fraction),
    };
    let running = agent::start(config, control_plane, member);
    println!("karmada-rs agent serving cluster {}", args.cluster_name);
    tokio::signal::ctrl_c()
        .await
        .context("waiting for Ctrl-C")?;
    running.shutdown();
    Ok(())
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
