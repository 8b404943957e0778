//! `karmada-rs agent`: karmada-agent for a Pull cluster (cmd/agent). It runs next to (or
//! inside) its member, connects out to the control plane only, and serves its cluster there
//! ([`controllers::agent`]). Every replica registers the Cluster; then, as karmada-agent's
//! controller-runtime manager does, the replicas elect a leader on the Lease
//! `karmada-agent-<cluster>` in the control plane's `--leader-elect-resource-namespace`, and
//! only the leader runs the controllers (execution, work status, cluster status and Lease,
//! the tunnel, certificate rotation); the others wait and take over when its Lease expires.

mod probes;
mod rotation;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use controllers::agent::selection;
use controllers::agent::{self, AgentConfig, lease::LeaseSettings};
use controllers::runtime::AbortOnDrop;
use k8s_openapi::api::core::v1::Namespace;
use karmada_api::cluster::v1alpha1::{Cluster, ClusterSyncMode};
use kube::Api;
use kube::api::PostParams;
use leaderelection::{LeaderElectionConfig, LeaderElector, Leading};
use tokio::sync::watch;

use super::leader_election::LeaderElectionFlags;
use super::{ClusterDefaults, ClusterFlags, KARMADA_DEFAULTS, parse_duration};
use probes::{BindAddress, StatusSlot, parse_bind_address};
use rotation::Credentials;

/// What the agent records on its Cluster besides its address (karmada-agent's and
/// `karmadactl register`'s flags).
#[derive(Args, Clone, Debug, Default)]
pub struct ClusterProperties {
    /// Proxy to reach the member through, recorded as the Cluster's `proxyURL` (a `proxy-url`
    /// in the member kubeconfig takes precedence, as in Karmada).
    #[arg(long, env = "KARMADA_RS_PROXY_SERVER_ADDRESS", default_value = "")]
    pub proxy_server_address: String,
    /// Provider of the cluster, recorded on the Cluster (spread constraints can use it).
    #[arg(long, env = "KARMADA_RS_CLUSTER_PROVIDER", default_value = "")]
    pub cluster_provider: String,
    /// Region of the cluster, recorded on the Cluster.
    #[arg(long, env = "KARMADA_RS_CLUSTER_REGION", default_value = "")]
    pub cluster_region: String,
    /// Zones of the cluster (comma-separated), recorded on the Cluster.
    #[arg(long, env = "KARMADA_RS_CLUSTER_ZONES", value_delimiter = ',')]
    pub cluster_zones: Vec<String>,
}

impl ClusterProperties {
    /// The zones given, without empty entries (`--cluster-zones=` names none).
    pub fn zones(&self) -> Vec<String> {
        self.cluster_zones
            .iter()
            .map(|z| z.trim().to_owned())
            .filter(|z| !z.is_empty())
            .collect()
    }
}

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
    /// Kubeconfig of the member cluster; else $KUBECONFIG, else the pod's service account
    /// (in a cluster), else ~/.kube/config.
    #[arg(long, env = "KARMADA_RS_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,
    /// Context in the member kubeconfig; its current context by default.
    #[arg(long, env = "KARMADA_RS_CONTEXT")]
    pub context: Option<String>,
    /// API endpoint of the member recorded on the agent's Cluster (Karmada's
    /// `--cluster-api-endpoint`; `register` passes the member's address). Informational: the
    /// control plane reaches a Pull cluster through its agent.
    #[arg(long, env = "KARMADA_RS_CLUSTER_API_ENDPOINT", default_value = "")]
    pub cluster_api_endpoint: String,
    #[command(flatten)]
    pub properties: ClusterProperties,
    /// Controllers to run: `*` runs the ones on by default (clusterStatus, execution,
    /// workStatus, serviceExport), `foo` runs foo, `-foo` does not (certRotation is off by
    /// default).
    #[arg(
        long,
        env = "KARMADA_RS_CONTROLLERS",
        value_delimiter = ',',
        default_value = "*"
    )]
    pub controllers: Vec<String>,
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
    /// How often the certRotation controller checks the client certificate (and every
    /// replica looks for a newer one in its kubeconfig).
    #[arg(long, env = "KARMADA_RS_CERT_ROTATION_CHECKING_INTERVAL", value_parser = parse_duration, default_value = "5m")]
    pub cert_rotation_checking_interval: Duration,
    /// Renew the client certificate once less than this fraction of its lifetime is left.
    #[arg(
        long,
        env = "KARMADA_RS_CERT_ROTATION_REMAINING_TIME_THRESHOLD",
        default_value_t = 0.2
    )]
    pub cert_rotation_remaining_time_threshold: f64,
    /// Namespace of the member Secret `karmada-kubeconfig` (the agent's kubeconfig, as
    /// `register` installs it) that a renewed certificate is written to.
    #[arg(
        long,
        env = "KARMADA_RS_KARMADA_KUBECONFIG_NAMESPACE",
        default_value = "karmada-system"
    )]
    pub karmada_kubeconfig_namespace: String,
    /// Where to serve `/metrics` over HTTP (`:8080`, `127.0.0.1:8080`); 0 serves none.
    #[arg(long, env = "KARMADA_RS_METRICS_BIND_ADDRESS", value_parser = parse_bind_address, default_value = "0")]
    pub metrics_bind_address: BindAddress,
    /// Where to serve the `/healthz` and `/readyz` probes over HTTP; 0 serves none.
    #[arg(long, env = "KARMADA_RS_HEALTH_PROBE_BIND_ADDRESS", value_parser = parse_bind_address, default_value = "0")]
    pub health_probe_bind_address: BindAddress,
    #[command(flatten)]
    pub leader_election: LeaderElectionFlags,
    #[command(flatten)]
    pub cluster: ClusterFlags,
    #[command(flatten)]
    pub rate_limiter: super::RateLimiterFlags,
    /// The number of Clusters that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_CLUSTER_SYNCS", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrent_cluster_syncs: u32,
    /// The number of Works that are allowed to sync concurrently.
    #[arg(long, env = "KARMADA_RS_CONCURRENT_WORK_SYNCS", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub concurrent_work_syncs: u32,
    /// Print nothing when serving (for `up`).
    #[arg(skip)]
    pub quiet: bool,
}

impl AgentArgs {
    /// An agent's options with the flags' defaults.
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
            properties: ClusterProperties::default(),
            controllers: vec!["*".into()],
            cluster_lease_duration: Duration::from_secs(40),
            cluster_lease_renew_interval_fraction: 0.25,
            cert_rotation_checking_interval: Duration::from_secs(300),
            cert_rotation_remaining_time_threshold: 0.2,
            karmada_kubeconfig_namespace: karmada_api::names::NAMESPACE_KARMADA_SYSTEM.into(),
            metrics_bind_address: BindAddress(None),
            health_probe_bind_address: BindAddress(None),
            leader_election: LeaderElectionFlags::default(),
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
            concurrent_cluster_syncs: 5,
            concurrent_work_syncs: 5,
            quiet: false,
        }
    }
}

/// The agent's timings: Karmada's.
const AGENT_DEFAULTS: ClusterDefaults = KARMADA_DEFAULTS;

/// Reads a kubeconfig into a client configuration.
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

/// The member's client configuration where karmada-agent looks for it (controller-runtime's
/// `GetConfig`): `--kubeconfig`, else $KUBECONFIG, else the service account of the pod it runs
/// in, else ~/.kube/config.
async fn member_config(path: Option<&Path>, context: Option<&str>) -> anyhow::Result<kube::Config> {
    if path.is_none()
        && context.is_none()
        && std::env::var_os("KUBECONFIG").is_none()
        && std::env::var_os("KUBERNETES_SERVICE_HOST").is_some()
    {
        return kube::Config::incluster()
            .context("loading the member's in-cluster configuration (the pod's service account)");
    }
    kube_config(path, context).await
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

/// What the agent records on its Cluster (karmada-agent's `generateClusterInControllerPlane`).
#[derive(Clone, Debug, Default)]
pub struct ClusterRegistration {
    /// `spec.apiEndpoint`.
    pub api_endpoint: String,
    /// `spec.proxyURL`.
    pub proxy_url: String,
    /// `spec.provider`, kept when empty.
    pub provider: String,
    /// `spec.region`, kept when empty.
    pub region: String,
    /// `spec.zones`, kept when empty.
    pub zones: Vec<String>,
    /// `spec.insecureSkipTLSVerification`: the member kubeconfig's.
    pub insecure: bool,
}

impl ClusterRegistration {
    fn of(args: &AgentArgs, member: &kube::Config) -> ClusterRegistration {
        ClusterRegistration {
            api_endpoint: args.cluster_api_endpoint.clone(),
            proxy_url: member.proxy_url.as_ref().map_or_else(
                || args.properties.proxy_server_address.clone(),
                ToString::to_string,
            ),
            provider: args.properties.cluster_provider.clone(),
            region: args.properties.cluster_region.clone(),
            zones: args.properties.zones(),
            insecure: member.accept_invalid_certs,
        }
    }

    /// Sets what it records on `spec`; true when that changed it.
    fn apply(&self, spec: &mut karmada_api::cluster::v1alpha1::ClusterSpec) -> bool {
        let before = serde_json::to_value(&*spec).ok();
        spec.api_endpoint = self.api_endpoint.clone();
        spec.proxy_url = self.proxy_url.clone();
        if !self.provider.is_empty() {
            spec.provider = self.provider.clone();
        }
        if !self.region.is_empty() {
            spec.region = self.region.clone();
        }
        if !self.zones.is_empty() {
            spec.zones = self.zones.clone();
        }
        spec.insecure_skip_tls_verification = self.insecure;
        serde_json::to_value(&*spec).ok() != before
    }
}

/// A control plane's client from the agent's credentials.
async fn control_plane_client(
    creds: &Credentials,
    context: Option<&str>,
    user_agent: &str,
) -> anyhow::Result<kube::Client> {
    client(creds.config(context).await?, user_agent)
}

/// Runs the agent until Ctrl-C or SIGTERM.
pub async fn agent(args: AgentArgs) -> anyhow::Result<()> {
    let (stop_tx, stop) = watch::channel(false);
    tokio::spawn(async move {
        super::shutdown_signal().await;
        stop_tx.send_replace(true);
    });
    serve(args, stop).await
}

/// Runs the agent until `stop` turns true (or its sender is dropped).
pub async fn serve(args: AgentArgs, stop: watch::Receiver<bool>) -> anyhow::Result<()> {
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
    let problems = karmada_api::validation::names::validate_cluster_name(&args.cluster_name);
    if !problems.is_empty() {
        anyhow::bail!(
            "invalid --cluster-name {:?}: {}",
            args.cluster_name,
            problems.join("; ")
        );
    }
    let controllers = selection::parse(&args.controllers)?;
    let lease = agent::leader_election_id(&args.cluster_name);
    let election = args.leader_election.config(&lease)?;
    let member_cfg = member_config(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let registration = ClusterRegistration::of(&args, &member_cfg);
    let member = client(member_cfg, agent::USER_AGENT)?;
    let mut config = AgentConfig::new(&args.cluster_name);
    config.cluster_settings = args.cluster.settings(AGENT_DEFAULTS);
    config.cluster_settings.concurrent_syncs = args.concurrent_cluster_syncs as usize;
    config.concurrency.cluster = args.concurrent_cluster_syncs as usize;
    config.concurrency.work = args.concurrent_work_syncs as usize;
    config.rate_limiter = args.rate_limiter.options();
    config.lease = LeaseSettings {
        duration: args.cluster_lease_duration,
        renew_interval: args.cluster_lease_duration.mul_f64(fraction),
    };
    config.controllers = controllers;
    let status = StatusSlot::default();
    let _probes = probes::serve(
        args.metrics_bind_address,
        args.health_probe_bind_address,
        status.clone(),
    )
    .await?;

    let context = args.karmada_context.as_deref();
    let mut creds = Credentials::read(&args.karmada_kubeconfig, context)?;
    // Every replica registers the Cluster before the election, as karmada-agent does before
    // its manager starts.
    let control_plane = control_plane_client(&creds, context, agent::USER_AGENT).await?;
    ensure_cluster(&control_plane, &member, &args.cluster_name, &registration).await?;
    if !args.quiet {
        println!("karmada-rs agent serving cluster {}", args.cluster_name);
    }

    let run = Run {
        args: Arc::new(args),
        config,
        member,
        election,
        identity: leaderelection::resourcelock::default_identity(),
        status,
        stop,
    };
    loop {
        match run.generation(&creds).await? {
            Some(renewed) => {
                tracing::info!(cluster = %run.args.cluster_name, "client certificate renewed; reconnecting");
                creds = renewed;
            }
            None => return Ok(()),
        }
    }
}

/// What every generation of the agent's clients shares.
struct Run {
    args: Arc<AgentArgs>,
    config: AgentConfig,
    member: kube::Client,
    election: Option<LeaderElectionConfig>,
    /// This replica's identity in the election, kept across generations so that a leader
    /// that renewed its certificate holds on to its Lease.
    identity: String,
    status: StatusSlot,
    stop: watch::Receiver<bool>,
}

impl Run {
    /// Runs the agent with the clients of one certificate until the process is stopped
    /// (`None`) or a newer certificate is to be used.
    async fn generation(&self, creds: &Credentials) -> anyhow::Result<Option<Credentials>> {
        let args = &self.args;
        let context = args.karmada_context.as_deref();
        let control_plane = control_plane_client(creds, context, agent::USER_AGENT).await?;
        let (renewed, mut renewed_rx) = watch::channel::<Option<Credentials>>(None);
        // Every replica picks up a newer certificate in its kubeconfig (the leader renewed it).
        let _file = {
            let (path, context, current, renewed) = (
                args.karmada_kubeconfig.clone(),
                args.karmada_context.clone(),
                creds.clone(),
                renewed.clone(),
            );
            let every = args.cert_rotation_checking_interval;
            AbortOnDrop(tokio::spawn(async move {
                let newer =
                    rotation::newer_in_file(&path, context.as_deref(), &current, every).await;
                renewed.send_replace(Some(newer));
            }))
        };
        let start = {
            let (args, config, cp, member, creds, renewed) = (
                args.clone(),
                self.config.clone(),
                control_plane,
                self.member.clone(),
                creds.clone(),
                renewed.clone(),
            );
            move || -> Leading {
                let running = agent::start(config.clone(), cp.clone(), member.clone());
                let rotating = config
                    .controllers
                    .enabled(selection::CERT_ROTATION)
                    .then(|| {
                        AbortOnDrop(tokio::spawn(rotation::rotate_when_due(
                            (*args).clone(),
                            cp.clone(),
                            member.clone(),
                            creds.clone(),
                            renewed.clone(),
                        )))
                    });
                Box::new((running, rotating))
            }
        };
        // The generation ends on a stop or a newer certificate.
        let (end_tx, mut end) = watch::channel(false);
        let mut stop = self.stop.clone();
        let _ends = AbortOnDrop(tokio::spawn(async move {
            tokio::select! {
                _ = stop.wait_for(|s| *s) => {}
                _ = renewed_rx.changed() => {}
            }
            end_tx.send_replace(true);
        }));
        match &self.election {
            Some(election) => self.campaign(creds, election, start, &mut end).await?,
            None => {
                let _leading = start();
                let _ = end.wait_for(|e| *e).await;
            }
        }
        if *self.stop.borrow() {
            return Ok(None);
        }
        Ok(renewed.borrow().clone())
    }

    /// Leads (or waits to) until `end`; on a stop the Lease is released so that another
    /// replica takes over at once, while a leader changing certificates keeps it.
    async fn campaign(
        &self,
        creds: &Credentials,
        election: &LeaderElectionConfig,
        start: impl FnMut() -> Leading + Send + 'static,
        end: &mut watch::Receiver<bool>,
    ) -> anyhow::Result<()> {
        let args = &self.args;
        let user_agent = format!("{}/leader-election", agent::USER_AGENT);
        let client =
            control_plane_client(creds, args.karmada_context.as_deref(), &user_agent).await?;
        let lock = leaderelection::LeaseLock::new(
            client,
            &args.leader_election.leader_elect_resource_namespace,
            &agent::leader_election_id(&args.cluster_name),
            &self.identity,
        );
        let config = LeaderElectionConfig {
            release_on_cancel: false,
            ..election.clone()
        };
        let mut elector = LeaderElector::new(config, lock)?;
        if let Ok(mut slot) = self.status.lock() {
            *slot = Some(elector.master_status());
        }
        super::leader_election::campaign(&mut elector, start, end).await;
        if *self.stop.borrow() {
            elector.release().await;
        }
        Ok(())
    }
}

/// registerClusterInControlPlane: the agent creates its Cluster in Pull mode, or records
/// what it was told on the existing one; a Push cluster of that name is not the agent's to
/// serve.
pub async fn ensure_cluster(
    client: &kube::Client,
    member: &kube::Client,
    name: &str,
    registration: &ClusterRegistration,
) -> anyhow::Result<()> {
    let clusters = Api::<Cluster>::all(client.clone());
    for _ in 0..5 {
        let existing = clusters
            .get_opt(name)
            .await
            .with_context(|| format!("reading cluster {name} from the control plane"))?;
        let result = match existing {
            Some(c) if c.spec.sync_mode != ClusterSyncMode::Pull => anyhow::bail!(
                "cluster {name} is registered in {:?} mode; an agent serves Pull clusters only",
                c.spec.sync_mode
            ),
            Some(mut c) => {
                if !registration.apply(&mut c.spec) {
                    return Ok(());
                }
                clusters.replace(name, &PostParams::default(), &c).await
            }
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
                registration.apply(&mut c.spec);
                clusters.create(&PostParams::default(), &c).await
            }
        };
        match result {
            Ok(_) => return Ok(()),
            // Another replica wrote it meanwhile: look again.
            Err(kube::Error::Api(s)) if s.code == 409 => continue,
            Err(e) => return Err(e).with_context(|| format!("registering cluster {name}")),
        }
    }
    anyhow::bail!("registering cluster {name}: it kept changing under the agent's writes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        agent: AgentArgs,
    }

    #[test]
    fn new_has_the_flags_defaults() {
        let parsed = Cli::parse_from(["agent", "--karmada-kubeconfig=k", "--cluster-name=c"]).agent;
        let made = AgentArgs::new("k".into(), "c".into(), None);
        assert_eq!(format!("{parsed:?}"), format!("{made:?}"));
    }

    #[test]
    fn registration_records_what_the_agent_was_told() {
        let parsed = Cli::parse_from([
            "agent",
            "--karmada-kubeconfig=k",
            "--cluster-name=c",
            "--cluster-api-endpoint=https://10.0.0.2:6443",
            "--cluster-provider=",
            "--cluster-region=eu",
            "--cluster-zones=",
            "--proxy-server-address=http://proxy:3128",
        ])
        .agent;
        let member = kube::Config::new("https://10.0.0.2:6443".parse().unwrap());
        let reg = ClusterRegistration::of(&parsed, &member);
        assert!(reg.zones.is_empty(), "{reg:?}");
        let mut spec = karmada_api::cluster::v1alpha1::ClusterSpec {
            provider: "aws".into(),
            zones: vec!["a".into()],
            ..Default::default()
        };
        assert!(reg.apply(&mut spec));
        assert_eq!(spec.api_endpoint, "https://10.0.0.2:6443");
        assert_eq!(spec.proxy_url, "http://proxy:3128");
        assert_eq!(spec.region, "eu");
        assert_eq!(spec.provider, "aws", "an empty flag keeps the value");
        assert_eq!(spec.zones, ["a"]);
        assert!(!reg.apply(&mut spec), "applying twice changes nothing");
    }
}
