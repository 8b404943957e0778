//! The API server's shared state: storage, the resource catalog and the watch caches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use storage::Store;
use tokio::task::JoinHandle;

use crate::error::ApiError;
use crate::resources::{Catalog, ResourceDef};
use crate::watch_cache::{CacheOptions, WatchCache};

/// Which API surface the server presents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// The Karmada control plane: built-ins plus Karmada's groups.
    ControlPlane,
    /// A simulated member cluster: built-ins only.
    Member,
    /// `serve --aggregated`: only `cluster.karmada.io`, behind a host's aggregator.
    Aggregated,
}

/// Tunables of the API layer.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// Which groups are served.
    pub flavor: Flavor,
    /// Largest accepted request body (kube's `--max-request-bytes`, 3 MiB).
    pub max_request_bytes: usize,
    /// Largest object a write may store (etcd's default `--max-request-bytes`, 1.5 MiB):
    /// kube-apiserver leaves this to etcd and so answers 500 "request is too large" on etcd
    /// and accepts anything on other stores; we refuse it before storage, the same on every
    /// backend, as an invalid object.
    pub max_stored_object_bytes: usize,
    /// Interval between watch bookmarks.
    pub bookmark_interval: Duration,
    /// How long a consistent read waits for the cache before reading storage directly.
    pub cache_freshness_wait: Duration,
    /// Watch cache tunables.
    pub cache: CacheOptions,
    /// Default watch duration when the client gives no timeoutSeconds (kube: 30-60 min).
    pub default_watch_timeout: Duration,
    /// The address clients reach the server at (for discovery's serverAddressByClientCIDRs).
    pub external_address: String,
    /// Concurrent read requests before 429 (kube's `--max-requests-inflight`; 0: no limit).
    pub max_requests_inflight: i64,
    /// Concurrent mutating requests before 429 (`--max-mutating-requests-inflight`).
    pub max_mutating_requests_inflight: i64,
    /// Deadline of requests that are not long-running (`--request-timeout`, 60 s).
    pub request_timeout: Duration,
    /// API Priority and Fairness (`--enable-priority-and-fairness`, on as kube's): the two
    /// in-flight limits together are the seats its priority levels share; off, they are
    /// kube's older max-in-flight filter.
    pub priority_and_fairness: bool,
    /// An APIService for a group of registered kinds this server serves (for Karmada's
    /// `v1alpha1.cluster.karmada.io`) routes it to its backend, as kube-aggregator would;
    /// by default such an APIService is left alone and the group served here.
    pub registered_groups_from_apiservices: bool,
}

impl Default for ApiConfig {
    fn default() -> ApiConfig {
        ApiConfig {
            flavor: Flavor::ControlPlane,
            max_request_bytes: 3 * 1024 * 1024,
            max_stored_object_bytes: 1536 * 1024,
            bookmark_interval: Duration::from_secs(60),
            cache_freshness_wait: Duration::from_secs(3),
            cache: CacheOptions::default(),
            default_watch_timeout: Duration::from_secs(1800),
            external_address: String::new(),
            max_requests_inflight: 400,
            max_mutating_requests_inflight: 200,
            request_timeout: Duration::from_secs(60),
            priority_and_fairness: true,
            registered_groups_from_apiservices: false,
        }
    }
}

/// Whether a cache built for `a` serves `b` too: versions of one kind share a storage
/// prefix and a cache; only what the cache extracts (scope, selectable fields) matters.
fn same_cache_shape(a: &ResourceDef, b: &ResourceDef) -> bool {
    let selectable = |d: &ResourceDef| match &d.source {
        crate::resources::Source::Custom(c) => c.selectable_fields.clone(),
        _ => Vec::new(),
    };
    a.group == b.group
        && a.kind == b.kind
        && a.namespaced == b.namespaced
        && selectable(a) == selectable(b)
}

/// Where the server is in its termination (kube-apiserver's lifecycle signals).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Lifecycle {
    /// Serving.
    #[default]
    Running,
    /// Termination began (SIGTERM): `/readyz` fails so that load balancers stop sending
    /// requests here; everything is still served.
    ShutdownInitiated,
    /// The listener is closed: watches end, so that clients resume on another replica.
    NotAcceptingNewRequests,
}

/// A watch cache and the task feeding it.
type RunningCache = (Arc<WatchCache>, JoinHandle<()>);

/// A check every write of the registry passes that needs something above it: kube's
/// policy-based RBAC storage is built with the authorizer, and here the authorizer's
/// escalation check is handed to the state at launch the same way.
pub trait WriteCheck: Send + Sync {
    /// Refuses the write of `obj` (over `old` on update) when the request may not make it.
    fn check(
        &self,
        def: &ResourceDef,
        obj: &serde_json::Value,
        old: Option<&serde_json::Value>,
    ) -> Result<(), ApiError>;
}

/// What the registry, admission and the watch caches share.
pub struct ApiState {
    /// The store.
    pub store: Arc<dyn Store>,
    /// Served resources.
    pub catalog: Arc<Catalog>,
    /// Tunables.
    pub config: ApiConfig,
    /// Request metrics.
    pub metrics: crate::metrics::Metrics,
    /// The termination phase; handlers and watches subscribe to it.
    pub lifecycle: tokio::sync::watch::Sender<Lifecycle>,
    caches: Mutex<HashMap<String, RunningCache>>,
    /// API Priority and Fairness, when on.
    pub flow_control: Option<flowcontrol::FlowControl>,
    /// RBAC's escalation check, once the security stack is set up.
    escalation_check: OnceLock<Arc<dyn WriteCheck>>,
    /// `/healthz`, `/livez` and `/readyz`.
    pub health: Arc<crate::healthz::Health>,
    /// The dynamic admission plugins (webhooks, policies), once set at launch.
    admission_plugins: OnceLock<crate::admission_plugin::AdmissionPlugins>,
}

impl std::fmt::Debug for ApiState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiState").finish_non_exhaustive()
    }
}

impl Drop for ApiState {
    fn drop(&mut self) {
        self.stop_caches();
    }
}

impl ApiState {
    /// Creates the state; caches start as resources are first used (or by [`ApiState::warm`]).
    pub fn new(store: Arc<dyn Store>, catalog: Arc<Catalog>, config: ApiConfig) -> Arc<ApiState> {
        ApiState::with_health(store, catalog, config, Arc::default())
    }

    /// [`ApiState::new`] with the health checks a starting server already answers with: the
    /// state adds (or replaces) `etcd`, `watch-cache` and `shutdown`.
    pub fn with_health(
        store: Arc<dyn Store>,
        catalog: Arc<Catalog>,
        config: ApiConfig,
        health: Arc<crate::healthz::Health>,
    ) -> Arc<ApiState> {
        let flow_control = config.priority_and_fairness.then(|| {
            flowcontrol::FlowControl::new(flowcontrol::Config {
                server_concurrency_limit: usize::try_from(
                    config.max_requests_inflight + config.max_mutating_requests_inflight,
                )
                .unwrap_or(0)
                .max(1),
                // kube: a quarter of the request timeout.
                max_wait: config.request_timeout / 4,
            })
        });
        let state = Arc::new(ApiState {
            store,
            catalog,
            config,
            flow_control,
            metrics: Default::default(),
            lifecycle: tokio::sync::watch::Sender::new(Lifecycle::Running),
            caches: Mutex::new(HashMap::new()),
            escalation_check: OnceLock::new(),
            health,
            admission_plugins: OnceLock::new(),
        });
        state.add_health_checks();
        state
    }

    /// kube-apiserver's `etcd` check (`--etcd-healthcheck-timeout`, 2 s), readiness's
    /// `shutdown`, and `watch-cache`: every started cache has listed.
    fn add_health_checks(self: &Arc<Self>) {
        use crate::healthz::{HEALTH_AND_READY, Probe, check};
        let store = self.store.clone();
        self.health.add(
            "etcd",
            HEALTH_AND_READY,
            Arc::new(move || {
                let store = store.clone();
                Box::pin(async move {
                    match tokio::time::timeout(Duration::from_secs(2), store.health()).await {
                        Ok(r) => r.map_err(|e| e.to_string()),
                        Err(_) => Err("the storage did not answer within 2s".into()),
                    }
                })
            }),
        );
        let weak = Arc::downgrade(self);
        self.health.add(
            "watch-cache",
            &[Probe::Readyz],
            check(move || match weak.upgrade() {
                Some(s) if s.caches_ready() => Ok(()),
                Some(_) => Err("not synced".into()),
                None => Err("the server is gone".into()),
            }),
        );
        let lifecycle = self.lifecycle.subscribe();
        self.health.add(
            "shutdown",
            &[Probe::Readyz],
            check(move || {
                if *lifecycle.borrow() >= Lifecycle::ShutdownInitiated {
                    Err("process is shutting down".into())
                } else {
                    Ok(())
                }
            }),
        );
    }

    /// Sets RBAC's escalation check (once).
    pub fn set_escalation_check(&self, check: Arc<dyn WriteCheck>) {
        let _ = self.escalation_check.set(check);
    }

    /// Runs RBAC's escalation check on a write; without a security stack there is no request
    /// identity to check against, so nothing is refused.
    pub fn check_escalation(
        &self,
        def: &ResourceDef,
        obj: &serde_json::Value,
        old: Option<&serde_json::Value>,
    ) -> Result<(), ApiError> {
        match self.escalation_check.get() {
            Some(c) => c.check(def, obj, old),
            None => Ok(()),
        }
    }

    /// Sets the dynamic admission plugins (once).
    pub fn set_admission_plugins(&self, plugins: crate::admission_plugin::AdmissionPlugins) {
        let _ = self.admission_plugins.set(plugins);
    }

    /// The dynamic admission plugins, when the server runs any.
    pub fn admission_plugins(&self) -> Option<&crate::admission_plugin::AdmissionPlugins> {
        self.admission_plugins.get()
    }

    /// The cache of a stored resource, started on first use. Must run inside a runtime.
    pub fn cache(&self, def: &Arc<ResourceDef>) -> Result<Arc<WatchCache>, ApiError> {
        let prefix = def
            .prefix()
            .ok_or_else(|| ApiError::method_not_allowed("list", &def.kind))?;
        // The served versions of a CRD (or a converted Karmada kind) share a prefix, but each
        // reads its objects its own way.
        let prefix = if def.is_custom() || crate::conversion::converts(def) {
            format!("{prefix}@{}", def.version)
        } else {
            prefix.to_string()
        };
        let mut caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((c, h)) = caches.get(&prefix)
            && !h.is_finished()
            && same_cache_shape(c.def(), def)
        {
            return Ok(c.clone());
        }
        if let Some((_, h)) = caches.remove(&prefix) {
            h.abort();
        }
        let cache = WatchCache::new(def.clone(), self.config.cache.clone());
        let handle = tokio::spawn(cache.clone().run(self.store.clone()));
        caches.insert(prefix, (cache.clone(), handle));
        Ok(cache)
    }

    /// Stops the cache of a resource that is no longer served (a deleted CRD).
    pub fn drop_cache(&self, prefix: &str) {
        let mut caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
        let versioned = format!("{prefix}@");
        caches.retain(|k, (_, h)| {
            let drop = k == prefix || k.starts_with(&versioned);
            if drop {
                h.abort();
            }
            !drop
        });
    }

    /// Starts the caches of every stored resource and waits until they have listed.
    pub async fn warm(&self, timeout: Duration) -> Result<(), ApiError> {
        let snapshot = self.catalog.snapshot();
        let mut caches = Vec::new();
        for def in &snapshot.resources {
            // An older version served by conversion keeps a second, converted copy of every
            // object: it is started by its first reader, not for every server.
            if def.prefix().is_some() && !crate::conversion::converts(def) {
                caches.push(self.cache(def)?);
            }
        }
        for c in caches {
            if let Err(e) = c.wait_for(0, timeout).await {
                // A resource whose stored values cannot be decrypted does not stop the
                // server: its requests answer the error (kube-apiserver starts as well).
                match c.unreadable() {
                    Some(why) => {
                        tracing::error!(error = %why, "a watch cache cannot read its resource")
                    }
                    None => {
                        tracing::debug!(?e, "watch cache not ready");
                        return Err(ApiError::unavailable("watch cache did not become ready"));
                    }
                }
            }
        }
        Ok(())
    }

    /// Stops feeding the watch caches (at shutdown, before the store closes).
    pub fn stop_caches(&self) {
        if let Ok(caches) = self.caches.lock() {
            for (_, h) in caches.values() {
                h.abort();
            }
        }
    }

    /// True when every started cache has listed.
    pub fn caches_ready(&self) -> bool {
        let caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
        // A cache whose resource cannot be decrypted answers errors, not a stale view: it
        // does not make the server unready (kube's readyz has no such check either).
        caches
            .values()
            .all(|(c, _)| c.is_ready() || c.unreadable().is_some())
    }

    /// Each watch cache's counters (for `apiserver_storage_objects` and the watch cache
    /// metrics).
    pub fn cache_stats(&self) -> Vec<crate::metrics::CacheStats> {
        let caches = self.caches.lock().unwrap_or_else(|p| p.into_inner());
        caches
            .values()
            .map(|(c, _)| crate::metrics::CacheStats {
                resource: c.def().qualified(),
                objects: c.len(),
                initializations: c.initializations(),
                terminated_watchers: c.terminated_watchers(),
            })
            .collect()
    }
}
