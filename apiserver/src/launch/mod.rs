//! Assembles and starts an API server: storage, PKI, kubeconfig, catalog, caches,
//! bootstrap objects and the HTTPS listener.

pub mod aggregated;
pub mod startup;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use serde_json::json;
use storage::Store;

use crate::auth::UserInfo;
use crate::registry::{Registry, WriteContext};
use crate::resources::{Catalog, built_in};
use crate::server::{Serving, TlsFiles};
use crate::state::{ApiConfig, ApiState, Flavor, Lifecycle};

/// Which storage backend to use.
#[derive(Clone, Debug)]
// Built once per server: the size difference between variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum StoreChoice {
    /// The embedded store in `DATA_DIR/store`.
    Embedded,
    /// An etcd cluster.
    Etcd(Box<storage::etcd::EtcdOptions>),
}

/// How to start a server.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Data directory (store, PKI, kubeconfig).
    pub data_dir: PathBuf,
    /// Listen address (port 0: any free port).
    pub bind: SocketAddr,
    /// Storage backend.
    pub store: StoreChoice,
    /// Extra serving-certificate SANs.
    pub tls_sans: Vec<String>,
    /// Control plane or simulated member.
    pub flavor: Flavor,
    /// Name of the kubeconfig written into the data directory.
    pub kubeconfig_name: String,
    /// Context/cluster name inside the kubeconfig.
    pub context_name: String,
    /// The kube-controller-manager controllers run inside the server.
    pub kcm: crate::controller::kcm::KcmOptions,
    /// The embedded store acknowledges writes without waiting for stable storage
    /// (`EmbeddedOptions::unsafe_no_fsync`); for simulated members.
    pub unsafe_no_fsync: bool,
    /// kube-apiserver's request limits: in-flight requests and the request timeout.
    pub limits: RequestLimits,
    /// What every key starts with in the store (kube-apiserver's `--etcd-prefix`).
    pub etcd_prefix: String,
    /// An APIService for Karmada's Cluster API routes it to its backend instead of this
    /// server serving it (`ApiConfig::registered_groups_from_apiservices`).
    pub cluster_api_from_apiservice: bool,
    /// Dynamic admission plugins not to run (`--disable-admission-plugins`, kube's names:
    /// [`ADMISSION_PLUGINS`]).
    pub disable_admission_plugins: Vec<String>,
}

/// The dynamic admission plugins the server runs unless disabled, in kube's names.
pub const ADMISSION_PLUGINS: [&str; 2] = ["MutatingAdmissionWebhook", "ValidatingAdmissionWebhook"];

/// kube-apiserver's `--max-requests-inflight`, `--max-mutating-requests-inflight` and
/// `--request-timeout`, with its defaults.
#[derive(Clone, Copy, Debug)]
pub struct RequestLimits {
    /// Concurrent non-mutating requests beyond which requests get 429 (0: no limit).
    pub max_requests_inflight: i64,
    /// Concurrent mutating requests beyond which requests get 429 (0: no limit).
    pub max_mutating_requests_inflight: i64,
    /// How long a request that is not long-running may take before it gets a 504.
    pub request_timeout: Duration,
    /// API Priority and Fairness instead of the plain in-flight limits.
    pub priority_and_fairness: bool,
}

impl Default for RequestLimits {
    fn default() -> RequestLimits {
        let api = ApiConfig::default();
        RequestLimits {
            max_requests_inflight: api.max_requests_inflight,
            max_mutating_requests_inflight: api.max_mutating_requests_inflight,
            request_timeout: api.request_timeout,
            priority_and_fairness: api.priority_and_fairness,
        }
    }
}

impl Default for ServeOptions {
    /// A control plane on the embedded store, on a free loopback port; set `data_dir`.
    fn default() -> ServeOptions {
        ServeOptions {
            data_dir: PathBuf::new(),
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            store: StoreChoice::Embedded,
            tls_sans: vec![],
            flavor: Flavor::ControlPlane,
            kubeconfig_name: "karmada.kubeconfig".into(),
            context_name: "karmada".into(),
            kcm: Default::default(),
            unsafe_no_fsync: false,
            limits: RequestLimits::default(),
            etcd_prefix: DEFAULT_ETCD_PREFIX.into(),
            cluster_api_from_apiservice: false,
            disable_admission_plugins: Vec::new(),
        }
    }
}

/// kube-apiserver's default `--etcd-prefix`.
pub const DEFAULT_ETCD_PREFIX: &str = "/registry";

/// Security settings of a server: kube-apiserver's authentication and TLS flags. The default
/// is the safe one: anonymous access only to health and version, generated certificates.
#[derive(Clone, Debug, Default)]
pub struct SecurityOptions {
    /// Which requests without credentials are `system:anonymous` (`--anonymous-auth`).
    pub anonymous_auth: crate::auth::Anonymous,
    /// Static bearer tokens (`--token-auth-file`, kube's CSV format).
    pub token_auth_file: Option<PathBuf>,
    /// Issuer of service-account tokens (`--service-account-issuer`).
    pub service_account_issuer: Option<String>,
    /// A serving certificate chain to use instead of the generated one (`--tls-cert-file`).
    pub tls_cert_file: Option<PathBuf>,
    /// The key of `tls_cert_file` (`--tls-private-key-file`).
    pub tls_private_key_file: Option<PathBuf>,
    /// Extra CAs for client certificates (`--client-ca-file`); the server's own CA, which
    /// signs the admin kubeconfig, stays trusted.
    pub client_ca_file: Option<PathBuf>,
    /// The audit log (`--audit-log-path`, `--audit-log-maxsize`, `--audit-log-maxbackup`).
    pub audit: Option<crate::audit::AuditOptions>,
    /// Encryption at rest (`--encryption-provider-config`, an EncryptionConfiguration file).
    pub encryption_provider_config: Option<PathBuf>,
}

fn read_file(path: &std::path::Path) -> Result<String, LaunchError> {
    std::fs::read_to_string(path).map_err(|source| LaunchError::File {
        path: path.display().to_string(),
        source,
    })
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Storage failed to open.
    #[error("storage: {0}")]
    Storage(#[from] storage::Error),
    /// Certificates failed.
    #[error("certificates: {0}")]
    Certs(#[from] certs::Error),
    /// TLS failed.
    #[error("tls: {0}")]
    Tls(#[from] crate::server::TlsError),
    /// Binding failed.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The aggregation layer failed to start.
    #[error("aggregator: {0}")]
    Aggregator(#[from] crate::aggregator::AggregatorError),
    /// A configured file could not be read.
    #[error("{path}: {source}")]
    File {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The audit log could not be opened.
    #[error("audit log: {0}")]
    Audit(std::io::Error),
    /// The security configuration is unusable.
    #[error("{0}")]
    Auth(#[from] crate::auth::AuthError),
    /// Options contradict each other.
    #[error("{0}")]
    Config(String),
    /// Bootstrapping objects failed.
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] crate::error::ApiError),
}

/// A running server.
pub struct Running {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The HTTPS URL.
    pub url: String,
    /// Shared state.
    pub state: Arc<ApiState>,
    /// The handler chain over it (security stack, aggregator, cluster proxy).
    pub chain: Arc<crate::handler::Chain>,
    /// The router (for in-process clients).
    pub router: Router,
    /// The admin kubeconfig written for users.
    pub kubeconfig: PathBuf,
    /// The PKI.
    pub pki: Arc<certs::Pki>,
    serving: Serving,
    _kcm: crate::controller::kcm::Controllers,
    _aggregator: Option<crate::aggregator::available::Controller>,
    crd_controller: tokio::task::JoinHandle<()>,
    policy_status: tokio::task::JoinHandle<()>,
}

impl Running {
    /// An in-process `kube::Client` acting as `user` (user agent `karmada-rs/VERSION`).
    pub fn client(&self, user: UserInfo) -> kube::Client {
        self.client_with_agent(user, concat!("karmada-rs/", env!("CARGO_PKG_VERSION")))
    }

    /// An in-process `kube::Client` acting as `user` with its own user agent.
    pub fn client_with_agent(&self, user: UserInfo, user_agent: &str) -> kube::Client {
        crate::client::in_process_client(self.router.clone(), user, user_agent)
    }

    /// Stops serving, giving requests in flight five seconds (see [`Running::shutdown_within`]).
    pub async fn shutdown(self) {
        self.shutdown_within(Duration::from_secs(5)).await;
    }

    /// Stops serving: no new connections, watches end (their clients see a clean end),
    /// requests in flight get up to `grace`, then pending writes reach the store.
    pub async fn shutdown_within(self, grace: Duration) {
        self.state
            .lifecycle
            .send_replace(Lifecycle::NotAcceptingNewRequests);
        self.crd_controller.abort();
        self.policy_status.abort();
        self.serving.shutdown(grace).await;
        self.state.stop_caches();
        if let Err(e) = self.state.store.close().await {
            tracing::warn!(error = %e, "closing the store");
        }
    }
}

/// Opens the chosen store.
pub async fn open_store(opts: &ServeOptions) -> Result<Arc<dyn Store>, LaunchError> {
    Ok(match &opts.store {
        StoreChoice::Embedded => {
            let dir = opts.data_dir.join("store");
            let store = storage::embedded::EmbeddedStore::open(
                &dir,
                storage::embedded::EmbeddedOptions {
                    // Consistent reads ask the caches' watches for progress when they need
                    // it; the periodic reports only keep idle watchers' bookmarks recent.
                    unsafe_no_fsync: opts.unsafe_no_fsync,
                    ..Default::default()
                },
            )?;
            store as Arc<dyn Store>
        }
        StoreChoice::Etcd(e) => {
            storage::etcd::EtcdStore::connect((**e).clone()).await? as Arc<dyn Store>
        }
    })
}

/// Starts a server with the default security settings.
pub async fn start(opts: ServeOptions) -> Result<Running, LaunchError> {
    start_with(opts, SecurityOptions::default()).await
}

/// The object type of a storage key as kube's metrics name it (`deployments.apps`,
/// `configmaps`).
fn storage_type(etcd_prefix: &str) -> storage::metrics::TypeOf {
    let keys = crate::resources::StorageKeys::with_etcd_prefix(etcd_prefix);
    Arc::new(move |key: &str| match keys.group_resource(key) {
        Some(("", resource)) => resource.to_string(),
        Some((group, "")) => group.to_string(),
        Some((group, resource)) => format!("{resource}.{group}"),
        None => String::new(),
    })
}

/// Starts a server. The listener answers from the start ([`startup`]): while storage is away
/// or a start-up step is still running, `/readyz` says which and other requests get a 503;
/// steps that need storage are retried until they succeed. Returns once the full handler
/// chain serves.
pub async fn start_with(
    opts: ServeOptions,
    security: SecurityOptions,
) -> Result<Running, LaunchError> {
    crate::karmada::install();
    std::fs::create_dir_all(&opts.data_dir).map_err(storage::Error::Io)?;
    // Configuration errors stop the start before anything is served.
    let encryption = security
        .encryption_provider_config
        .as_ref()
        .map(|path| encryption::Encryption::load(path).map_err(LaunchError::Config))
        .transpose()?;
    let pki = Arc::new(certs::Pki::ensure(
        &opts.data_dir.join("pki"),
        &certs::PkiOptions {
            extra_sans: opts.tls_sans.clone(),
        },
    )?);
    let mut client_ca_pems = vec![pki.ca.cert_pem().to_string()];
    if let Some(f) = &security.client_ca_file {
        client_ca_pems.push(read_file(f)?);
    }
    let (serving_cert_pem, serving_key_pem) =
        match (&security.tls_cert_file, &security.tls_private_key_file) {
            (Some(c), Some(k)) => (read_file(c)?, read_file(k)?),
            (None, None) => (pki.serving.cert_pem.clone(), pki.serving.key_pem.clone()),
            _ => {
                return Err(LaunchError::Config(
                    "--tls-cert-file and --tls-private-key-file go together".into(),
                ));
            }
        };
    // With a user-supplied serving certificate, its chain is trusted too (a self-signed
    // certificate is its own anchor).
    let cluster_ca_pem = if security.tls_cert_file.is_some() {
        format!("{}{serving_cert_pem}", pki.ca.cert_pem())
    } else {
        pki.ca.cert_pem().to_string()
    };
    let audit = security
        .audit
        .as_ref()
        .map(|a| crate::audit::AuditLog::start(a).map_err(LaunchError::Audit))
        .transpose()?;
    let tls = crate::server::server_config(&TlsFiles {
        cert_pem: serving_cert_pem.clone(),
        key_pem: serving_key_pem,
        client_ca_pems: client_ca_pems.clone(),
    })?;
    let listener = tokio::net::TcpListener::bind(opts.bind)
        .await
        .map_err(|source| LaunchError::Bind {
            addr: opts.bind,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| LaunchError::Bind {
        addr: opts.bind,
        source,
    })?;
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        addr.ip().to_string()
    };
    let url = format!("https://{host}:{}", addr.port());

    // From here on the listener answers; kube-apiserver's post-start hooks name what is left.
    let startup = startup::Startup::new();
    let health = startup.health().clone();
    let caches_synced = health.hook("generic-apiserver-start-informers");
    let namespaces_made = health.hook("start-system-namespaces-controller");
    let roles_made = health.hook("rbac/bootstrap-roles");
    let crds_served = health.hook("crd-informer-synced");
    let aggregator_started = (opts.flavor == Flavor::ControlPlane)
        .then(|| health.hook("start-kube-aggregator-informers"));
    let serving = crate::server::serve(listener, tls, startup.router()).map_err(|source| {
        LaunchError::Bind {
            addr: opts.bind,
            source,
        }
    })?;

    let store = connect_store(&opts, &startup).await?;
    // The control plane's storage requests are measured as kube-apiserver's (simulated members
    // running in the same process stay out of its registry).
    let store = if opts.flavor == Flavor::ControlPlane {
        storage::metrics::MeteredStore::new(
            store,
            component_base::metrics::global(),
            storage_type(&opts.etcd_prefix),
        )
    } else {
        store
    };
    let store = match encryption {
        Some(e) => e.wrap(store, &opts.etcd_prefix),
        None => store,
    };
    // The server keys everything under /registry; the store puts it under the prefix.
    let store =
        storage::prefixed::PrefixedStore::wrap(store, crate::resources::ROOT, &opts.etcd_prefix);

    // Objects earlier versions stored under their own keys move to kube-apiserver's before
    // anything reads them.
    let built_in_defs = built_in();
    startup::retrying("storage layout", || {
        crate::storage_layout::move_legacy_keys(store.as_ref(), &built_in_defs)
    })
    .await;
    let mut resources = built_in();
    if opts.flavor == Flavor::ControlPlane {
        resources.extend(crate::karmada::resources());
    }
    let catalog = Arc::new(Catalog::new(resources));
    let state = ApiState::with_health(
        store,
        catalog,
        ApiConfig {
            flavor: opts.flavor,
            external_address: format!("{host}:{}", addr.port()),
            max_requests_inflight: opts.limits.max_requests_inflight,
            max_mutating_requests_inflight: opts.limits.max_mutating_requests_inflight,
            request_timeout: opts.limits.request_timeout,
            priority_and_fairness: opts.limits.priority_and_fairness,
            registered_groups_from_apiservices: opts.cluster_api_from_apiservice,
            ..Default::default()
        },
        health,
    );
    let chain = crate::handler::Chain::new(state.clone());
    if let Some(a) = audit {
        chain.set_audit(a);
    }
    let auth = Arc::new(crate::auth::Auth::new(&crate::auth::AuthOptions {
        anonymous: security.anonymous_auth,
        token_auth_file: security.token_auth_file.clone(),
        client_ca_pems: client_ca_pems.clone(),
        service_account_key_pem: pki.service_account_key_pem.clone(),
        service_account_issuer: security.service_account_issuer.clone().unwrap_or_default(),
        api_audiences: vec![],
        root_ca_pem: cluster_ca_pem.clone(),
    })?);
    chain.set_auth(auth.clone());
    state.set_escalation_check(Arc::new(crate::auth::rbac::escalation::EscalationCheck(
        auth.authorizer.clone(),
    )));
    // Dynamic admission: the webhooks of Mutating- and ValidatingWebhookConfigurations.
    let mut plugins = admission_webhook::plugins(
        &state,
        || crate::auth::current_user().and_then(|u| serde_json::to_value(&*u).ok()),
        auth.authorizer.clone(),
    );
    let disabled = |name: &str| opts.disable_admission_plugins.iter().any(|d| d == name);
    plugins.mutating.retain(|p| !disabled(p.name()));
    plugins.validating.retain(|p| !disabled(p.name()));
    state.set_admission_plugins(plugins);
    // The proxy's route to this server itself; weak, as the chain owns the proxy.
    let weak = Arc::downgrade(&chain);
    chain
        .cluster_proxy
        .set_control_plane(crate::proxy::ControlPlane::Local(Arc::new(move || {
            weak.upgrade().map(crate::handler::router)
        })));
    startup::retrying("watch caches", || state.warm(Duration::from_secs(30))).await;
    caches_synced.done();
    startup::retrying("system namespaces", || bootstrap(&state, opts.flavor)).await;
    namespaces_made.done();
    // The bootstrap RBAC policy, aggregated and indexed before the first request is served.
    startup::retrying("bootstrap RBAC policy", || async {
        let written = crate::controller::rbac_bootstrap::ensure(&state).await?;
        crate::controller::rbac::settle(&state, &auth.authorizer, written).await
    })
    .await;
    crate::controller::rbac::spawn(Arc::downgrade(&state), auth.authorizer.clone());
    roles_made.done();
    // API Priority and Fairness's configuration objects, ensured before the first request
    // is served and followed from then on.
    if state.flow_control.is_some() {
        startup::retrying("priority and fairness configuration", || {
            crate::controller::apf::ensure(&state)
        })
        .await;
        crate::controller::apf::spawn(Arc::downgrade(&state));
        crate::controller::apf::spawn_borrowing(Arc::downgrade(&state));
    }
    // The kube-controller-manager controllers, the service-account token controller among
    // them, unless the caller runs them under leader election.
    let kcm = crate::controller::kcm::start(&chain, &opts.kcm);
    let aggregator = match aggregator_started {
        Some(hook) => {
            let pki_dir = opts.data_dir.join("pki");
            let client_cas = client_ca_pems.concat();
            let started = startup::retrying("aggregation layer", || {
                crate::aggregator::start(&state, &chain.aggregator, &pki_dir, &client_cas)
            })
            .await;
            hook.done();
            Some(started)
        }
        None => None,
    };
    // Serves the stored CRDs before the first request and follows their changes.
    let crd_controller = crate::controller::crd::start(&state).await;
    crds_served.done();
    // ValidatingAdmissionPolicies' type checking, against every served kind's schema.
    let policy_status = admission_webhook::policy_status::start(&state);

    let router = crate::handler::router(chain.clone());
    startup.serve(router.clone());

    let kubeconfig = opts.data_dir.join(&opts.kubeconfig_name);
    certs::write_kubeconfig(
        &kubeconfig,
        &certs::Kubeconfig {
            name: opts.context_name.clone(),
            server: url.clone(),
            ca_pem: cluster_ca_pem,
            credentials: certs::KubeconfigCredentials::ClientCert {
                cert_pem: pki.admin.cert_pem.clone(),
                key_pem: pki.admin.key_pem.clone(),
            },
            namespace: None,
        },
    )?;
    tracing::info!(%url, kubeconfig = %kubeconfig.display(), "API server ready");
    Ok(Running {
        addr,
        url,
        state,
        chain,
        router,
        kubeconfig,
        pki,
        serving,
        _kcm: kcm,
        _aggregator: aggregator,
        crd_controller,
        policy_status,
    })
}

/// Opens the chosen store; an etcd that does not answer is tried again with back-off (and
/// reported by `/readyz`) for as long as it takes, as kube-apiserver waits for its etcd.
async fn connect_store(
    opts: &ServeOptions,
    startup: &startup::Startup,
) -> Result<Arc<dyn Store>, LaunchError> {
    if let StoreChoice::Etcd(e) = &opts.store {
        let endpoints = e.endpoints.join(",");
        let store = startup::retrying("etcd", || async {
            match storage::etcd::EtcdStore::connect((**e).clone()).await {
                Ok(s) => Ok(Ok(s)),
                Err(err @ storage::Error::Unavailable(_)) => {
                    startup.storage_failing(Some(err.to_string()));
                    Err(format!("etcd at {endpoints}: {err}"))
                }
                // Settings etcd refuses (a bad certificate, an unknown user) will not heal.
                Err(other) => Ok(Err(other)),
            }
        })
        .await?;
        startup.storage_failing(None);
        return Ok(store as Arc<dyn Store>);
    }
    let store = open_store(opts).await?;
    startup.storage_failing(None);
    Ok(store)
}

/// Creates the namespaces kube-apiserver (and Karmada) create at start.
async fn bootstrap(state: &Arc<ApiState>, flavor: Flavor) -> Result<(), crate::error::ApiError> {
    let snapshot = state.catalog.snapshot();
    let Some(ns_def) = snapshot.get("", "v1", "namespaces").cloned() else {
        return Ok(());
    };
    let mut names = vec!["default", "kube-system", "kube-public", "kube-node-lease"];
    if flavor == Flavor::ControlPlane {
        names.extend(["karmada-system", "karmada-cluster"]);
    }
    let reg = Registry::new(state, ns_def);
    let ctx = WriteContext {
        manager: "kube-apiserver".into(),
        dry_run: false,
        apply: false,
    };
    for n in names {
        let obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}});
        match reg.create("", obj, &ctx).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    // The CRDs Karmada's installer adds; a user's own copy (or a changed one) is left alone.
    if flavor == Flavor::ControlPlane
        && let Some(crd_def) = snapshot
            .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .cloned()
    {
        let reg = Registry::new(state, crd_def);
        let ctx = WriteContext {
            manager: "karmada-rs".into(),
            dry_run: false,
            apply: false,
        };
        for crd in crate::karmada::installed_crds() {
            match reg.create("", crd, &ctx).await {
                Ok(_) => {}
                Err(e) if e.code == 409 => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}
