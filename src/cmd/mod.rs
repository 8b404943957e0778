//! Subcommands of the binary that live outside `main.rs`.

pub mod agent;
pub mod api_resources;
pub mod apply;
pub mod completion;
pub mod controller_manager;
pub mod describe;
pub mod fleet;
pub mod get;
pub mod interpret;
pub mod join;
pub mod jsonpath;
pub mod leader_election;
pub mod member;
pub mod migrate;
pub mod pki;
pub mod printer;
pub mod promote;
pub mod register;
pub mod scheduler;
pub mod storage;
pub mod taint;
pub mod token;
pub mod up;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use clap::Args;
use controllers::cluster::ClusterSettings;

/// The identity the in-process controllers act as: `system:karmada:controller-manager`,
/// authorized by its bootstrap ClusterRole (not a bypass).
pub fn controller_user() -> apiserver::auth::UserInfo {
    apiserver::auth::controller_manager_user()
}

/// Pull-mode registration on a control plane: cluster-info names `running`'s URL and CA, and
/// approved agent certificates are signed with its CA (for at most a year, kube's
/// `--cluster-signing-duration`).
/// Serves the controllers' and work queues' series (Karmada's and client-go's names, kept in
/// the process's registry) on the control plane's `/metrics`, beside the API server's own.
pub fn serve_controller_metrics(running: &apiserver::launch::Running) {
    running
        .state
        .metrics
        .add_collector(Box::new(|| component_base::metrics::global().render()));
}

pub fn registration(
    running: &apiserver::launch::Running,
) -> controllers::registration::RegistrationConfig {
    let pki = running.pki.clone();
    controllers::registration::RegistrationConfig {
        server: running.url.clone(),
        ca_pem: running.pki.ca.cert_pem().to_owned(),
        signer: std::sync::Arc::new(move |pem, valid_for, key_encipherment| {
            pki.ca
                .sign_client_request(pem, valid_for, key_encipherment)
                .map_err(|e| e.to_string())
        }),
        max_duration: Duration::from_secs(365 * 24 * 3600),
    }
}

/// Resolves on Ctrl-C (SIGINT) or SIGTERM, which a container runtime sends to stop it.
pub async fn shutdown_signal() {
    let mut term = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "cannot handle SIGTERM; only Ctrl-C stops it");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: shutting down"),
        _ = term.recv() => tracing::info!("terminated: shutting down"),
    }
}

/// Parses a duration flag as Go's time.ParseDuration reads them (`500ms`, `10s`, `1m30s`,
/// and a bare `0`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    apimachinery::duration::parse_duration(s)
}

/// Where the store is: kube-apiserver's etcd flags.
#[derive(Args, Clone, Debug)]
pub struct EtcdFlags {
    /// etcd endpoints (comma-separated); the embedded store is used when absent.
    #[arg(long, env = "KARMADA_RS_ETCD_SERVERS", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// CA bundle (PEM) that verifies the etcd servers' certificates (`https://` endpoints);
    /// the system's roots when absent.
    #[arg(long, env = "KARMADA_RS_ETCD_CAFILE", requires = "etcd_servers")]
    pub etcd_cafile: Option<std::path::PathBuf>,
    /// Client certificate (PEM) presented to etcd, for an etcd started with
    /// --client-cert-auth.
    #[arg(
        long,
        env = "KARMADA_RS_ETCD_CERTFILE",
        requires_all = ["etcd_servers", "etcd_keyfile"]
    )]
    pub etcd_certfile: Option<std::path::PathBuf>,
    /// Private key (PEM) of --etcd-certfile.
    #[arg(
        long,
        env = "KARMADA_RS_ETCD_KEYFILE",
        requires_all = ["etcd_servers", "etcd_certfile"]
    )]
    pub etcd_keyfile: Option<std::path::PathBuf>,
    /// What every key starts with in the store (kube-apiserver's flag): a Karmada control
    /// plane's keys are under its kube-apiserver's --etcd-prefix.
    #[arg(long, env = "KARMADA_RS_ETCD_PREFIX", default_value = apiserver::launch::DEFAULT_ETCD_PREFIX)]
    pub etcd_prefix: String,
    /// How built-in kinds are stored (kube-apiserver's flag): application/vnd.kubernetes.protobuf
    /// or application/json; custom resources and Karmada's kinds are JSON either way. Values
    /// written the other way stay readable and are rewritten by their next update.
    #[arg(
        long,
        env = "KARMADA_RS_STORAGE_MEDIA_TYPE",
        default_value = "application/vnd.kubernetes.protobuf"
    )]
    pub storage_media_type: apiserver::storage_codec::StorageMediaType,
}

impl EtcdFlags {
    /// The etcd client's options; `None` without `--etcd-servers`.
    pub fn options(&self) -> anyhow::Result<Option<::storage::etcd::EtcdOptions>> {
        use anyhow::Context;
        if self.etcd_servers.is_empty() {
            return Ok(None);
        }
        let mut etcd = ::storage::etcd::EtcdOptions::new(self.etcd_servers.clone());
        if self.etcd_cafile.is_some() || self.etcd_certfile.is_some() {
            // kube-apiserver's --etcd-cafile, --etcd-certfile and --etcd-keyfile.
            etcd.tls = Some(
                ::storage::etcd::EtcdTls::from_files(
                    self.etcd_cafile.as_deref(),
                    self.etcd_certfile.as_deref(),
                    self.etcd_keyfile.as_deref(),
                )
                .context("reading the etcd TLS files")?,
            );
        }
        Ok(Some(etcd))
    }
}

/// Flags of the cluster and cluster-status controllers (Karmada's names); unset ones take
/// the command's defaults.
#[derive(Args, Clone, Debug)]
pub struct ClusterFlags {
    /// How often member clusters are probed and their status collected [default: 10s; up: 2s].
    #[arg(long, value_parser = parse_duration, env = "KARMADA_RS_CLUSTER_STATUS_UPDATE_FREQUENCY")]
    pub cluster_status_update_frequency: Option<Duration>,
    /// How long a recovered cluster must stay healthy before it is Ready again [default: 30s;
    /// up: 2s].
    #[arg(long, value_parser = parse_duration, env = "KARMADA_RS_CLUSTER_SUCCESS_THRESHOLD")]
    pub cluster_success_threshold: Option<Duration>,
    /// How long a failing cluster must stay unhealthy before it is not Ready [default: 30s;
    /// up: 2s].
    #[arg(long, value_parser = parse_duration, env = "KARMADA_RS_CLUSTER_FAILURE_THRESHOLD")]
    pub cluster_failure_threshold: Option<Duration>,
    /// How long to wait for a member's node and pod caches to fill [default: 2m].
    #[arg(long, env = "KARMADA_RS_CLUSTER_CACHE_SYNC_TIMEOUT", value_parser = parse_duration)]
    pub cluster_cache_sync_timeout: Option<Duration>,
    /// Collect node and pod resource summaries of members.
    #[arg(long, env = "KARMADA_RS_ENABLE_CLUSTER_RESOURCE_MODELING", action = clap::ArgAction::Set, default_value_t = true)]
    pub enable_cluster_resource_modeling: bool,
    /// How often the cluster health monitor looks at every cluster's status and Lease.
    #[arg(long, env = "KARMADA_RS_CLUSTER_MONITOR_PERIOD", value_parser = parse_duration, default_value = "5s")]
    pub cluster_monitor_period: Duration,
    /// How long a Pull cluster may go without posting status or renewing its Lease before
    /// it is marked Ready=Unknown.
    #[arg(long, env = "KARMADA_RS_CLUSTER_MONITOR_GRACE_PERIOD", value_parser = parse_duration, default_value = "40s")]
    pub cluster_monitor_grace_period: Duration,
    /// How long a newly created Pull cluster may go without posting status before it is
    /// marked Ready=Unknown.
    #[arg(long, env = "KARMADA_RS_CLUSTER_STARTUP_GRACE_PERIOD", value_parser = parse_duration, default_value = "60s")]
    pub cluster_startup_grace_period: Duration,
}

/// Failover flags of the controllers and the webhook (Karmada's names and defaults).
#[derive(Args, Clone, Debug)]
pub struct FailoverFlags {
    /// Evict workloads from clusters with NoExecute taints they do not tolerate (the taint
    /// manager).
    #[arg(long, env = "KARMADA_RS_ENABLE_NO_EXECUTE_TAINT_EVICTION", action = clap::ArgAction::Set, default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub enable_no_execute_taint_eviction: bool,
    /// How NoExecute evictions remove the old copy when the policy sets no
    /// `failover.cluster.purgeMode`: Directly or Gracefully.
    #[arg(long, env = "KARMADA_RS_NO_EXECUTE_TAINT_EVICTION_PURGE_MODE", default_value = "Gracefully", value_parser = ["Directly", "Gracefully"])]
    pub no_execute_taint_eviction_purge_mode: String,
    /// How long an eviction task keeps the old copy at most, unless the task sets its own
    /// grace period.
    #[arg(long, env = "KARMADA_RS_GRACEFUL_EVICTION_TIMEOUT", value_parser = parse_duration, default_value = "10m")]
    pub graceful_eviction_timeout: Duration,
    /// Let ClusterTaintPolicies add NoExecute taints (karmada-webhook refuses them otherwise).
    #[arg(long, env = "KARMADA_RS_ALLOW_NO_EXECUTE_TAINT_POLICY", action = clap::ArgAction::Set, default_value_t = false, num_args = 0..=1, default_missing_value = "true")]
    pub allow_no_execute_taint_policy: bool,
    /// This is the number of resources to be evicted per second in a cluster failover
    /// scenario: each of the taint manager's 3 workers per queue waits 1/rate seconds after
    /// every binding it looks at (0: 30 minutes after each, Karmada's maxEvictionDelay).
    #[arg(long, env = "KARMADA_RS_RESOURCE_EVICTION_RATE", default_value_t = 0.5, value_parser = parse_eviction_rate, allow_negative_numbers = true)]
    pub resource_eviction_rate: f32,
}

/// `--resource-eviction-rate`, refused when negative with Karmada's validation message.
fn parse_eviction_rate(s: &str) -> Result<f32, String> {
    let rate: f32 = s
        .trim()
        .parse()
        .map_err(|e| format!("strconv.ParseFloat: parsing {s:?}: {e}"))?;
    if rate.is_nan() || rate < 0.0 {
        return Err(format!(
            "ClusterFailoverOptions.ResourceEvictionRate: Invalid value: {rate}: must be non-negative"
        ));
    }
    Ok(rate)
}

/// Karmada's `--rate-limiter-*` flags (pkg/sharedcli/ratelimiterflag): how every controller
/// queue delays a failing key, and the eviction queues their items. A zero value takes the
/// default, as in Karmada.
#[derive(Args, Clone, Copy, Debug)]
pub struct RateLimiterFlags {
    /// The base delay for rate limiter.
    #[arg(long, env = "KARMADA_RS_RATE_LIMITER_BASE_DELAY", value_parser = parse_duration, default_value = "5ms")]
    pub rate_limiter_base_delay: Duration,
    /// The max delay for rate limiter.
    #[arg(long, env = "KARMADA_RS_RATE_LIMITER_MAX_DELAY", value_parser = parse_duration, default_value = "1000s")]
    pub rate_limiter_max_delay: Duration,
    /// The QPS for rate limier.
    #[arg(long, env = "KARMADA_RS_RATE_LIMITER_QPS", default_value_t = 10)]
    pub rate_limiter_qps: u32,
    /// The bucket size for rate limier.
    #[arg(
        long,
        env = "KARMADA_RS_RATE_LIMITER_BUCKET_SIZE",
        default_value_t = 100
    )]
    pub rate_limiter_bucket_size: u32,
}

impl RateLimiterFlags {
    /// The controllers' rate-limiter options (zeros take their defaults in `RateLimiter::new`).
    pub fn options(&self) -> controllers::runtime::RateLimiterOptions {
        controllers::runtime::RateLimiterOptions {
            base_delay: self.rate_limiter_base_delay,
            max_delay: self.rate_limiter_max_delay,
            qps: self.rate_limiter_qps,
            bucket_size: self.rate_limiter_bucket_size,
        }
    }
}

impl Default for RateLimiterFlags {
    fn default() -> Self {
        let d = controllers::runtime::RateLimiterOptions::default();
        RateLimiterFlags {
            rate_limiter_base_delay: d.base_delay,
            rate_limiter_max_delay: d.max_delay,
            rate_limiter_qps: d.qps,
            rate_limiter_bucket_size: d.bucket_size,
        }
    }
}

impl FailoverFlags {
    /// The controllers' failover settings; also sets the webhook's NoExecute switch.
    pub fn apply(&self) -> controllers::FailoverSettings {
        karmada_api::admission::set_allow_no_execute_taint_policy(
            self.allow_no_execute_taint_policy,
        );
        controllers::FailoverSettings {
            enable_no_execute_taint_eviction: self.enable_no_execute_taint_eviction,
            no_execute_taint_eviction_purge_mode: if self.no_execute_taint_eviction_purge_mode
                == "Directly"
            {
                karmada_api::policy::v1alpha1::PurgeMode::Directly
            } else {
                karmada_api::policy::v1alpha1::PurgeMode::Gracefully
            },
            graceful_eviction_timeout: self.graceful_eviction_timeout,
            resource_eviction_rate: self.resource_eviction_rate,
        }
    }
}

/// Default timings of a command.
#[derive(Clone, Copy, Debug)]
pub struct ClusterDefaults {
    /// Probe interval.
    pub status_update_frequency: Duration,
    /// Success threshold.
    pub success_threshold: Duration,
    /// Failure threshold.
    pub failure_threshold: Duration,
}

/// Karmada's defaults, used by `serve`.
pub const KARMADA_DEFAULTS: ClusterDefaults = ClusterDefaults {
    status_update_frequency: Duration::from_secs(10),
    success_threshold: Duration::from_secs(30),
    failure_threshold: Duration::from_secs(30),
};

impl ClusterFlags {
    /// The controllers' timings from these flags over `defaults`.
    pub fn settings(&self, defaults: ClusterDefaults) -> ClusterSettings {
        let mut s = ClusterSettings {
            cluster_status_interval: self
                .cluster_status_update_frequency
                .unwrap_or(defaults.status_update_frequency),
            cluster_success_threshold: self
                .cluster_success_threshold
                .unwrap_or(defaults.success_threshold),
            cluster_failure_threshold: self
                .cluster_failure_threshold
                .unwrap_or(defaults.failure_threshold),
            enable_resource_modeling: self.enable_cluster_resource_modeling,
            monitor: controllers::cluster::health::MonitorSettings {
                // A zero period would spin; Go's wait.Until treats it as "as fast as possible"
                // too, so the smallest useful tick stands in for it.
                period: self.cluster_monitor_period.max(Duration::from_millis(10)),
                grace_period: self.cluster_monitor_grace_period,
                startup_grace_period: self.cluster_startup_grace_period,
            },
            ..ClusterSettings::default()
        };
        if let Some(t) = self.cluster_cache_sync_timeout {
            s.cache_sync_timeout = t;
        }
        s
    }
}

/// The address to listen on: `bind` if its port is set; otherwise the port of the server in
/// an existing kubeconfig (a restart keeps its URL) when that port is free; otherwise any
/// free port.
pub fn reuse_port(bind: SocketAddr, kubeconfig: &Path) -> SocketAddr {
    if bind.port() != 0 {
        return bind;
    }
    let previous = kube::config::Kubeconfig::read_from(kubeconfig)
        .ok()
        .and_then(|k| k.clusters.into_iter().next())
        .and_then(|c| c.cluster)
        .and_then(|c| c.server)
        .and_then(|s| s.parse::<http::Uri>().ok())
        .and_then(|u| u.port_u16());
    if let Some(port) = previous {
        let candidate = SocketAddr::new(bind.ip(), port);
        if std::net::TcpListener::bind(candidate).is_ok() {
            return candidate;
        }
    }
    bind
}
