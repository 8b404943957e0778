//! The `karmada-rs` binary: command-line wiring only.

mod aggregated;
mod cmd;

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, CommandFactory, Parser, Subcommand};

// The API server's write path allocates heavily (JSON trees per request); mimalloc is
// markedly faster than glibc malloc there and returns memory more readily. The
// `system-allocator` feature builds with glibc malloc so heap profilers that interpose
// malloc (heaptrack) see every allocation.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "karmada-rs",
    version,
    about = "The Karmada multi-cluster control plane in one binary"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the control plane: API server and controllers.
    Serve(Box<ServeArgs>),
    /// Simulated member clusters.
    #[command(subcommand)]
    Member(cmd::member::MemberCommand),
    /// Register a member cluster in push mode (as `karmadactl join`).
    Join(cmd::join::JoinArgs),
    /// Remove a member cluster (as `karmadactl unjoin`).
    Unjoin(cmd::join::UnjoinArgs),
    /// Quick start: a control plane and simulated members, joined, in one process.
    Up(Box<cmd::up::UpArgs>),
    /// Run karmada-agent for a Pull member cluster (outbound connections only).
    Agent(Box<cmd::agent::AgentArgs>),
    /// Bootstrap tokens for pull-mode registration (as `karmadactl token`).
    #[command(subcommand)]
    Token(cmd::token::TokenCommand),
    /// Register a member cluster in Pull mode with a bootstrap token (as `karmadactl register`).
    Register(Box<cmd::register::RegisterArgs>),
    /// Remove a Pull mode member cluster and its agent's RBAC (as `karmadactl unregister`).
    Unregister(cmd::register::UnregisterArgs),
    /// Validate and test interpreter customizations locally (as `karmadactl interpret`).
    Interpret(cmd::interpret::InterpretArgs),
    /// Storage maintenance: rewrite a resource's objects after an encryption key change.
    #[command(subcommand)]
    Storage(cmd::storage::StorageCommand),
    /// Taking over the etcd of a Karmada control plane: what would be served, read-only.
    #[command(subcommand)]
    Migrate(cmd::migrate::MigrateCommand),
    /// Mark a member cluster unschedulable (as `karmadactl cordon`).
    Cordon(cmd::taint::CordonArgs),
    /// Mark a member cluster schedulable again (as `karmadactl uncordon`).
    Uncordon(cmd::taint::CordonArgs),
    /// Update the taints of member clusters (as `karmadactl taint`):
    /// `taint clusters NAME... KEY[=VALUE]:EFFECT[-]...`.
    Taint(cmd::taint::TaintArgs),
    /// Create the CAs and the service-account key that `serve` replicas share
    /// (`serve --shared-pki-dir`).
    Certs(cmd::pki::CertsArgs),
    /// Display resources of the control plane and member clusters (as `karmadactl get`).
    Get(Box<cmd::get::GetArgs>),
    /// Print the supported API resources on the server (as `karmadactl api-resources`).
    ApiResources(Box<cmd::api_resources::ApiResourcesArgs>),
    /// Print the supported API versions on the server (as `karmadactl api-versions`).
    ApiVersions(cmd::api_resources::ApiVersionsArgs),
    /// Output shell completion code for the specified shell (bash, zsh, fish).
    Completion(cmd::completion::CompletionArgs),
    /// Promote an object running in a member cluster to a resource template with a policy
    /// (as `karmadactl promote`).
    Promote(Box<cmd::promote::PromoteArgs>),
    /// Apply a configuration by file name or stdin, and propagate it to member clusters
    /// with --all-clusters or -C (as `karmadactl apply`).
    Apply(Box<cmd::apply::ApplyArgs>),
    /// Show details of resources of the control plane or a member cluster, with where
    /// Karmada placed a template (as `karmadactl describe`).
    Describe(Box<cmd::describe::DescribeArgs>),
}

#[derive(Args)]
struct ServeArgs {
    /// Directory for the store, certificates and the admin kubeconfig.
    #[arg(long, env = "KARMADA_RS_DATA_DIR")]
    data_dir: PathBuf,
    #[command(flatten)]
    etcd: cmd::EtcdFlags,
    /// Address to listen on.
    #[arg(long, env = "KARMADA_RS_BIND", default_value = "127.0.0.1:6443")]
    bind: SocketAddr,
    /// Let an APIService for cluster.karmada.io route Clusters to its backend
    /// (karmada-aggregated-apiserver, or `serve --aggregated`) instead of serving them here.
    /// Off: this server serves Karmada's groups itself and leaves such an APIService (a Karmada
    /// control plane's, after a takeover) as it is.
    #[arg(long, env = "KARMADA_RS_CLUSTER_API_FROM_APISERVICE")]
    cluster_api_from_apiservice: bool,
    /// The CAs and service-account key several replicas share (from `karmada-rs certs`, e.g.
    /// a mounted Secret): copied into DATA_DIR/pki at start; each replica issues its own
    /// serving and admin certificates from them.
    #[arg(long, env = "KARMADA_RS_SHARED_PKI_DIR")]
    shared_pki_dir: Option<PathBuf>,
    /// Extra subject alternative names for the serving certificate.
    #[arg(long = "tls-san", env = "KARMADA_RS_TLS_SAN", value_delimiter = ',')]
    tls_sans: Vec<String>,
    #[command(flatten)]
    cluster: cmd::ClusterFlags,
    #[command(flatten)]
    failover: cmd::FailoverFlags,
    #[command(flatten)]
    rate_limiter: cmd::RateLimiterFlags,
    #[command(flatten)]
    controller_manager: cmd::controller_manager::ControllerManagerFlags,
    #[command(flatten)]
    scheduler: cmd::scheduler::SchedulerFlags,
    #[command(flatten)]
    leader_election: cmd::leader_election::LeaderElectionFlags,
    /// After SIGTERM or Ctrl-C, keep serving this long with /readyz failing, so that load
    /// balancers stop sending requests here before the listener closes (kube-apiserver's
    /// flag; Go duration).
    #[arg(long, env = "KARMADA_RS_SHUTDOWN_DELAY_DURATION", value_parser = cmd::parse_duration, default_value = "0s")]
    shutdown_delay_duration: std::time::Duration,
    /// How long Events are kept after they were last recorded (Go duration, e.g. 1h0m0s).
    #[arg(long, env = "KARMADA_RS_EVENT_TTL", default_value = "1h0m0s", value_parser = apimachinery::duration::parse_duration)]
    event_ttl: std::time::Duration,
    #[command(flatten)]
    aggregated: aggregated::AggregatedArgs,
    /// Static bearer tokens: a CSV file of `token,user,uid[,"group1,group2"]` lines.
    #[arg(long, env = "KARMADA_RS_TOKEN_AUTH_FILE")]
    token_auth_file: Option<PathBuf>,
    /// Issuer (`iss`) of service-account tokens.
    #[arg(long, env = "KARMADA_RS_SERVICE_ACCOUNT_ISSUER")]
    service_account_issuer: Option<String>,
    /// Serving certificate chain (PEM) to use instead of the generated one.
    #[arg(
        long,
        env = "KARMADA_RS_TLS_CERT_FILE",
        requires = "tls_private_key_file"
    )]
    tls_cert_file: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert-file.
    #[arg(
        long,
        env = "KARMADA_RS_TLS_PRIVATE_KEY_FILE",
        requires = "tls_cert_file"
    )]
    tls_private_key_file: Option<PathBuf>,
    /// CA bundle (PEM) whose client certificates authenticate users, besides the server's own CA.
    #[arg(long, env = "KARMADA_RS_CLIENT_CA_FILE")]
    client_ca_file: Option<PathBuf>,
    /// Serve requests without credentials as system:anonymous, which RBAC then authorizes
    /// (kube's flag). Unset: only /healthz, /livez, /readyz and /version are served to them
    /// (what system:public-info-viewer grants) and every other path answers 401; true: all
    /// paths, RBAC answers 403; false: none, even the probes answer 401.
    #[arg(
        long,
        env = "KARMADA_RS_ANONYMOUS_AUTH",
        num_args = 0..=1,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    anonymous_auth: Option<bool>,
    /// Write an audit log (audit.k8s.io/v1 events, one JSON line per request that is not a
    /// read) to this file; `-` is standard output.
    #[arg(long, env = "KARMADA_RS_AUDIT_LOG_PATH")]
    audit_log_path: Option<PathBuf>,
    /// What the audit log records: kube-apiserver's audit.k8s.io/v1 Policy file (levels None,
    /// Metadata, Request, RequestResponse per rule; omitStages). Without it, every request that
    /// is not a read, at the Metadata level.
    #[arg(long, env = "KARMADA_RS_AUDIT_POLICY_FILE")]
    audit_policy_file: Option<PathBuf>,
    /// Rotate the audit log when it reaches this many megabytes (0: 100).
    #[arg(long, env = "KARMADA_RS_AUDIT_LOG_MAXSIZE", default_value_t = 0)]
    audit_log_maxsize: u64,
    /// Rotated audit logs to keep (0: all).
    #[arg(long, env = "KARMADA_RS_AUDIT_LOG_MAXBACKUP", default_value_t = 0)]
    audit_log_maxbackup: usize,
    /// Acknowledge writes to the embedded store without waiting for stable storage, as
    /// etcd's --unsafe-no-fsync: a crashed process loses nothing, a crashed machine may lose
    /// the latest writes. For disposable servers only.
    #[arg(long, env = "KARMADA_RS_UNSAFE_NO_FSYNC")]
    unsafe_no_fsync: bool,
    /// Non-mutating requests served at once; more get 429 with Retry-After (watches and other
    /// long-running requests are not counted; 0: no limit).
    #[arg(long, env = "KARMADA_RS_MAX_REQUESTS_INFLIGHT", default_value_t = 400, value_parser = clap::value_parser!(i64).range(0..))]
    max_requests_inflight: i64,
    /// Mutating requests served at once; more get 429 with Retry-After (0: no limit).
    #[arg(long, env = "KARMADA_RS_MAX_MUTATING_REQUESTS_INFLIGHT", default_value_t = 200, value_parser = clap::value_parser!(i64).range(0..))]
    max_mutating_requests_inflight: i64,
    /// API Priority and Fairness (kube's default): requests are admitted per priority level
    /// (exempt for system:masters, system for the control plane's components, workload-high
    /// for users, workload-low for service accounts, catch-all) sharing the two in-flight
    /// limits' seats, each user queued fairly within its level. false: the two plain limits.
    #[arg(long, env = "KARMADA_RS_ENABLE_PRIORITY_AND_FAIRNESS", default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1, default_missing_value = "true")]
    enable_priority_and_fairness: bool,
    /// How long a request that is not long-running may take before it is answered with a 504
    /// Timeout (Go duration); a request's `timeout` parameter can only shorten it.
    #[arg(long, env = "KARMADA_RS_REQUEST_TIMEOUT", default_value = "1m0s", value_parser = parse_request_timeout)]
    request_timeout: std::time::Duration,
    /// Dynamic admission plugins not to run, comma-separated (kube-apiserver's flag):
    /// MutatingAdmissionWebhook, ValidatingAdmissionWebhook.
    #[arg(long, env = "KARMADA_RS_DISABLE_ADMISSION_PLUGINS", value_delimiter = ',', value_parser = parse_admission_plugin)]
    disable_admission_plugins: Vec<String>,
    /// Encrypt resources at rest as this EncryptionConfiguration file says
    /// (apiserver.config.k8s.io/v1, kube-apiserver's file: aesgcm, aescbc, secretbox, identity).
    #[arg(long, env = "KARMADA_RS_ENCRYPTION_PROVIDER_CONFIG")]
    encryption_provider_config: Option<PathBuf>,
}

/// One name of `--disable-admission-plugins`.
fn parse_admission_plugin(s: &str) -> Result<String, String> {
    let known = apiserver::launch::ADMISSION_PLUGINS;
    if known.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "unknown admission plugin {s:?}; this server's are {}",
            known.join(", ")
        ))
    }
}

/// `--request-timeout`: a Go duration above zero (kube-apiserver refuses 0 and less).
fn parse_request_timeout(s: &str) -> Result<std::time::Duration, String> {
    let d = apimachinery::duration::parse_duration(s)?;
    if d.is_zero() {
        return Err("--request-timeout must be greater than 0".into());
    }
    Ok(d)
}

/// Logs to stderr, filtered by `KARMADA_RS_LOG` or else at `default`.
fn init_tracing(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KARMADA_RS_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    // Bad election settings stop the start before anything listens.
    let election = args
        .leader_election
        .config(cmd::leader_election::LEASE_NAME)?;
    let shutdown_delay = args.shutdown_delay_duration;
    // Before the API server admits anything: the webhook's NoExecute switch.
    let failover = args.failover.apply();
    if let Some(shared) = &args.shared_pki_dir {
        cmd::pki::seed(shared, &args.data_dir.join("pki"))?;
    }
    let etcd_prefix = args.etcd.etcd_prefix.clone();
    apiserver::storage_codec::set_media_type(args.etcd.storage_media_type);
    let store = match args.etcd.options()? {
        None => apiserver::launch::StoreChoice::Embedded,
        Some(etcd) => apiserver::launch::StoreChoice::Etcd(Box::new(etcd)),
    };
    if args.aggregated.aggregated {
        if args.encryption_provider_config.is_some() {
            anyhow::bail!(
                "--encryption-provider-config is not supported with --aggregated: the aggregated API server stores no Secrets"
            );
        }
        return aggregated::serve(
            args.aggregated,
            aggregated::Common {
                data_dir: args.data_dir,
                bind: args.bind,
                store,
                etcd_prefix: etcd_prefix.clone(),
                tls_sans: args.tls_sans,
                client_ca_file: args.client_ca_file,
                tls_cert_file: args.tls_cert_file,
                tls_private_key_file: args.tls_private_key_file,
            },
        )
        .await;
    }
    let security = apiserver::launch::SecurityOptions {
        anonymous_auth: apiserver::auth::Anonymous::from_flag(args.anonymous_auth),
        token_auth_file: args.token_auth_file,
        service_account_issuer: args.service_account_issuer,
        tls_cert_file: args.tls_cert_file,
        tls_private_key_file: args.tls_private_key_file,
        client_ca_file: args.client_ca_file,
        audit: match (args.audit_log_path, args.audit_policy_file) {
            (Some(path), policy) => Some(apiserver::audit::AuditOptions {
                path,
                max_size_mb: args.audit_log_maxsize,
                max_backups: args.audit_log_maxbackup,
                policy: policy
                    .map(|f| apiserver::audit_policy::Policy::load(&f))
                    .transpose()
                    .map_err(anyhow::Error::msg)?,
            }),
            (None, Some(_)) => anyhow::bail!(
                "--audit-policy-file needs --audit-log-path: the audit log is the only audit backend"
            ),
            (None, None) => None,
        },
        encryption_provider_config: args.encryption_provider_config,
    };
    let running = apiserver::launch::start_with(
        apiserver::launch::ServeOptions {
            data_dir: args.data_dir,
            bind: args.bind,
            store,
            tls_sans: args.tls_sans,
            flavor: apiserver::state::Flavor::ControlPlane,
            kubeconfig_name: "karmada.kubeconfig".into(),
            context_name: "karmada".into(),
            // Started below with the Karmada controllers, on the leader only.
            kcm: apiserver::controller::kcm::KcmOptions {
                controllers: false,
                event_ttl: std::time::Duration::ZERO,
            },
            unsafe_no_fsync: args.unsafe_no_fsync,
            limits: apiserver::launch::RequestLimits {
                max_requests_inflight: args.max_requests_inflight,
                max_mutating_requests_inflight: args.max_mutating_requests_inflight,
                request_timeout: args.request_timeout,
                priority_and_fairness: args.enable_priority_and_fairness,
            },
            etcd_prefix,
            cluster_api_from_apiservice: args.cluster_api_from_apiservice,
            disable_admission_plugins: args.disable_admission_plugins,
        },
        security,
    )
    .await
    .context("starting the API server")?;
    cmd::serve_controller_metrics(&running);
    // Termination as kube-apiserver orders it: readiness fails at once, the controllers stop
    // and the Lease is released, the API is still served for --shutdown-delay-duration, then
    // the listener closes, watches end, requests in flight finish and the store is flushed.
    let (stop, mut stopping) = tokio::sync::watch::channel(false);
    let state = running.state.clone();
    tokio::spawn(async move {
        cmd::shutdown_signal().await;
        state
            .lifecycle
            .send_replace(apiserver::state::Lifecycle::ShutdownInitiated);
        let _ = stop.send(true);
    });
    // The kube-controller-manager controllers and Karmada's: the controllers act through the
    // in-process client under their own identity, which RBAC authorizes like any other caller
    // (a bootstrap ClusterRole, not system:masters).
    let (settings, cluster) = cmd::controller_manager::controller_settings(
        failover,
        &args.rate_limiter,
        &args.controller_manager,
        &args.scheduler,
        args.cluster.settings(cmd::KARMADA_DEFAULTS),
    );
    let config = controllers::ControllersConfig {
        settings,
        cluster,
        registration: Some(cmd::registration(&running)),
        controllers: args.controller_manager.controllers(),
    };
    let client = running.client_with_agent(cmd::controller_user(), controllers::USER_AGENT);
    let (chain, kcm) = (
        running.chain.clone(),
        apiserver::controller::kcm::KcmOptions {
            event_ttl: args.event_ttl,
            ..Default::default()
        },
    );
    let start_controllers = move || -> leaderelection::Leading {
        Box::new((
            apiserver::controller::kcm::start(&chain, &kcm),
            controllers::start(config.clone(), client.clone()),
        ))
    };
    println!(
        "karmada-rs control plane serving at {}\nkubeconfig: {}",
        running.url,
        running.kubeconfig.display()
    );
    match election {
        Some(election) => {
            cmd::leader_election::run(
                election,
                &args.leader_election.leader_elect_resource_namespace,
                &running,
                start_controllers,
                &mut stopping,
            )
            .await
        }
        None => {
            let controllers = start_controllers();
            let _ = stopping.wait_for(|s| *s).await;
            drop(controllers);
        }
    }
    tokio::time::sleep(shutdown_delay).await;
    // In-flight requests get kube-apiserver's default request timeout to finish.
    running
        .shutdown_within(std::time::Duration::from_secs(60))
        .await;
    tracing::info!("shut down");
    Ok(())
}

/// What `build.rs` recorded about this build, served at `/version`.
fn build_info() -> apiserver::version::BuildInfo {
    apiserver::version::BuildInfo {
        version: env!("CARGO_PKG_VERSION").into(),
        git_commit: env!("KARMADA_RS_GIT_COMMIT").into(),
        git_tree_state: env!("KARMADA_RS_GIT_TREE_STATE").into(),
        build_date: env!("KARMADA_RS_BUILD_DATE").into(),
        compiler_version: env!("KARMADA_RS_RUSTC_VERSION").into(),
    }
}

/// The name the binary was run as: `kubectl-karmada` when kubectl runs it as a plugin.
fn bin_name() -> String {
    std::env::args_os()
        .next()
        .as_deref()
        .and_then(|p| std::path::Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "karmada-rs".into())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    apiserver::version::set_build(build_info());
    let cli = Cli::parse();
    // The quick start and the one-shot commands talk to a person on the terminal: only
    // problems are logged unless asked for more.
    init_tracing(match cli.command {
        Command::Serve(_) | Command::Member(_) | Command::Agent(_) => "info",
        Command::Join(_)
        | Command::Unjoin(_)
        | Command::Up(_)
        | Command::Interpret(_)
        | Command::Storage(_)
        | Command::Migrate(_)
        | Command::Certs(_)
        | Command::Token(_)
        | Command::Register(_)
        | Command::Unregister(_)
        | Command::Cordon(_)
        | Command::Uncordon(_)
        | Command::Taint(_)
        | Command::Get(_)
        | Command::ApiResources(_)
        | Command::ApiVersions(_)
        | Command::Completion(_)
        | Command::Promote(_)
        | Command::Apply(_)
        | Command::Describe(_) => "warn",
    });
    match cli.command {
        Command::Serve(a) => serve(*a).await,
        Command::Member(cmd::member::MemberCommand::Serve(a)) => cmd::member::serve(a).await,
        Command::Join(a) => cmd::join::join(a).await,
        Command::Unjoin(a) => cmd::join::unjoin(a).await,
        Command::Up(a) => cmd::up::up(*a).await,
        Command::Storage(c) => cmd::storage::run(c).await,
        Command::Migrate(c) => match cmd::migrate::run(c).await {
            Ok(true) => Ok(()),
            // Something cannot be served: the report says what; the exit status says so.
            Ok(false) => std::process::exit(1),
            // As `kubectl diff`: above 1 when the check itself failed, so a script tells
            // "not ready" from "not checked".
            Err(e) => {
                eprintln!("Error: {e:?}");
                std::process::exit(2)
            }
        },
        Command::Certs(a) => cmd::pki::certs(&a),
        Command::Interpret(a) => match cmd::interpret::interpret(a).await {
            0 => Ok(()),
            code => std::process::exit(code),
        },
        Command::Agent(a) => cmd::agent::agent(*a).await,
        Command::Token(c) => cmd::token::run(c).await,
        Command::Register(a) => cmd::register::register(*a).await,
        Command::Unregister(a) => cmd::register::unregister(a).await,
        Command::Cordon(a) => cmd::taint::cordon(a, true).await,
        Command::Uncordon(a) => cmd::taint::cordon(a, false).await,
        Command::Taint(a) => cmd::taint::taint(a).await,
        Command::Get(a) => cmd::get::run(*a).await,
        Command::ApiResources(a) => cmd::api_resources::run_resources(*a).await,
        Command::ApiVersions(a) => cmd::api_resources::run_versions(a).await,
        Command::Promote(a) => cmd::promote::run(*a).await,
        Command::Apply(a) => cmd::apply::run(*a).await,
        Command::Describe(a) => cmd::describe::run(*a).await,
        Command::Completion(a) => cmd::completion::completion(&a, Cli::command(), &bin_name()),
    }
}
