//! The cluster controller and the cluster-status controller (Karmada's
//! pkg/controllers/cluster and pkg/controllers/status/cluster_status_controller.go).
//!
//! One informer watches Clusters (plus the execution-space namespaces and the member
//! secrets that affect them) and runs one worker task per Cluster for each controller. A
//! worker reconciles its cluster whenever the cluster changes and again after the delay its
//! last reconcile asked for, so the cluster-status worker is also the periodic prober.

mod controller;
pub mod health;
pub mod probe;
pub mod resources;
mod status;
pub mod summary;
pub mod taints;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::names;
use karmada_api::well_known::finalizers;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::member_clients::{MemberClients, MemberError};

/// Why a cluster reconcile failed (it is retried with back-off).
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A control-plane request failed.
    #[error("{step}: {}", crate::member_clients::brief(error))]
    Kube {
        /// What was being done.
        step: String,
        /// The cause.
        error: kube::Error,
    },
    /// No client for the member.
    #[error(transparent)]
    Member(#[from] MemberError),
    /// The member's node and pod caches did not fill in time.
    #[error("the node and pod caches of cluster {0} did not sync in time")]
    CacheSync(String),
    /// The member stopped answering while its status was being collected.
    #[error("collecting the status of cluster {0} timed out")]
    Timeout(String),
}

/// Builds the `map_err` closure of a control-plane step.
pub(crate) fn kube_err(step: impl Into<String>) -> impl FnOnce(kube::Error) -> ClusterError {
    let step = step.into();
    move |error| ClusterError::Kube { step, error }
}

/// Timings of the cluster controllers; the default is Karmada's.
#[derive(Clone, Debug, PartialEq)]
pub struct ClusterSettings {
    /// How often a member is probed and its status collected
    /// (`--cluster-status-update-frequency`, 10 s).
    pub cluster_status_interval: Duration,
    /// How long a recovered cluster must stay healthy before it is Ready again
    /// (`--cluster-success-threshold`, 30 s).
    pub cluster_success_threshold: Duration,
    /// How long a failing cluster must stay unhealthy before it is not Ready
    /// (`--cluster-failure-threshold`, 30 s).
    pub cluster_failure_threshold: Duration,
    /// Timeout of one health probe.
    pub probe_timeout: Duration,
    /// How long to wait for a member's node and pod caches (`--cluster-cache-sync-timeout`,
    /// 2 min).
    pub cache_sync_timeout: Duration,
    /// Interval between checks while a deleted cluster's execution space drains (Karmada
    /// polls every 10 s; namespace deletions wake the controller sooner here).
    pub cleanup_check_interval: Duration,
    /// Whether to collect resource summaries from nodes and pods
    /// (`--enable-cluster-resource-modeling`, true).
    pub enable_resource_modeling: bool,
    /// The cluster health monitor's timings.
    pub monitor: health::MonitorSettings,
    /// How many clusters the cluster and cluster-status controllers reconcile at once
    /// (`--concurrent-cluster-syncs`, 5).
    pub concurrent_syncs: usize,
}

impl Default for ClusterSettings {
    fn default() -> ClusterSettings {
        ClusterSettings {
            cluster_status_interval: Duration::from_secs(10),
            cluster_success_threshold: Duration::from_secs(30),
            cluster_failure_threshold: Duration::from_secs(30),
            probe_timeout: Duration::from_secs(10),
            cache_sync_timeout: Duration::from_secs(120),
            cleanup_check_interval: Duration::from_secs(1),
            enable_resource_modeling: true,
            monitor: health::MonitorSettings::default(),
            concurrent_syncs: 5,
        }
    }
}

/// What the cluster controllers need.
#[derive(Clone)]
pub struct ClusterControllers {
    /// The control-plane client.
    pub client: kube::Client,
    /// Member clients, shared with the other push-mode controllers (cached clients are
    /// dropped here when a Cluster's access fields or secrets change).
    pub members: MemberClients,
    /// Timings.
    pub settings: ClusterSettings,
    /// Which clusters' status this process collects (Push ones, or an agent's own).
    pub scope: crate::Scope,
    /// Whether the cluster controller proper runs (Karmada's `cluster`: execution spaces,
    /// condition taints, health monitoring).
    pub run_cluster: bool,
    /// Whether the cluster-status controller runs (Karmada's `clusterStatus`).
    pub run_status: bool,
}

impl ClusterControllers {
    /// The controllers with Karmada's timings.
    pub fn new(client: kube::Client, members: MemberClients) -> ClusterControllers {
        ClusterControllers {
            client,
            members,
            settings: ClusterSettings::default(),
            scope: crate::Scope::ControlPlane,
            run_cluster: true,
            run_status: true,
        }
    }
}

/// Starts the cluster and cluster-status controllers. Aborting the returned task stops
/// every worker and member cache it started.
pub fn start(ctx: ClusterControllers) -> Vec<JoinHandle<()>> {
    vec![tokio::spawn(run(ctx))]
}

/// Starts an agent's cluster-status controller: only its own Cluster is watched (its
/// identity may read no other), and the cluster controller proper stays the control plane's.
pub fn start_agent(ctx: ClusterControllers, cluster: &str) -> Vec<JoinHandle<()>> {
    vec![tokio::spawn(run_agent(ctx, cluster.to_owned()))]
}

async fn run_agent(ctx: ClusterControllers, name: String) {
    let (store, writer) = reflector::store::<Cluster>();
    let clusters = reflector::reflector(
        writer,
        watcher(
            Api::<Cluster>::all(ctx.client.clone()),
            watcher::Config::default().fields(&format!("metadata.name={name}")),
        ),
    )
    .default_backoff();
    let mut clusters = std::pin::pin!(clusters);
    let shared = Arc::new(ctx);
    let s = shared.clone();
    let concurrency = shared.settings.concurrent_syncs;
    let mut workers = Workers::new("cluster-status", store.clone(), concurrency, move |n| {
        Box::new(status::StatusReconciler::new(&s, n))
    });
    let mut trigger = None;
    while let Some(ev) = clusters.next().await {
        match ev {
            Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) => {
                let t = status_trigger(&c);
                if trigger != Some(t) {
                    trigger = Some(t);
                    workers.touch(&name);
                }
            }
            Ok(watcher::Event::Delete(_)) => {
                trigger = None;
                workers.remove(&name);
            }
            Ok(watcher::Event::InitDone) if store.get(&ObjectRef::new(&name)).is_none() => {
                trigger = None;
                workers.remove(&name);
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(cluster = %name, error = %e, "cluster watch failed"),
        }
    }
}

/// A per-cluster reconciler: `Ok(Some(d))` asks to run again after `d` (or sooner if the
/// cluster changes), `Ok(None)` waits for a change.
pub(crate) trait Reconciler: Send + 'static {
    fn reconcile(
        &mut self,
        cluster: Arc<Cluster>,
    ) -> impl Future<Output = Result<Option<Duration>, ClusterError>> + Send;
}

/// Builds the reconciler of a newly seen cluster.
type MakeReconciler = Box<dyn Fn(&str) -> Box<dyn ReconcilerBox> + Send>;

/// One worker task per cluster name.
struct Workers {
    kind: &'static str,
    store: Store<Cluster>,
    permits: Arc<tokio::sync::Semaphore>,
    tasks: HashMap<String, (Arc<Notify>, JoinHandle<()>)>,
    make: MakeReconciler,
    /// Off when the controller is disabled (`--controllers`): no worker is started.
    enabled: bool,
}

/// Object-safe wrapper to build reconcilers of different types behind one factory.
trait ReconcilerBox: Send {
    fn spawn(self: Box<Self>, name: String, shared: WorkerShared) -> JoinHandle<()>;
}

impl<R: Reconciler> ReconcilerBox for R {
    fn spawn(self: Box<Self>, name: String, shared: WorkerShared) -> JoinHandle<()> {
        tokio::spawn(work(*self, name, shared))
    }
}

/// What a cluster's worker shares with the others of its controller.
#[derive(Clone)]
struct WorkerShared {
    store: Store<Cluster>,
    notify: Arc<Notify>,
    kind: &'static str,
    /// One permit per reconcile in progress (`--concurrent-cluster-syncs`).
    permits: Arc<tokio::sync::Semaphore>,
}

impl Workers {
    fn new(
        kind: &'static str,
        store: Store<Cluster>,
        concurrency: usize,
        make: impl Fn(&str) -> Box<dyn ReconcilerBox> + Send + 'static,
    ) -> Workers {
        Workers {
            kind,
            store,
            permits: Arc::new(tokio::sync::Semaphore::new(concurrency.max(1))),
            tasks: HashMap::new(),
            make: Box::new(make),
            enabled: true,
        }
    }

    /// Wakes the worker of a cluster, starting it if needed.
    fn touch(&mut self, name: &str) {
        if !self.enabled {
            return;
        }
        if let Some((notify, handle)) = self.tasks.get(name)
            && !handle.is_finished()
        {
            notify.notify_one();
            return;
        }
        let notify = Arc::new(Notify::new());
        let handle = (self.make)(name).spawn(
            name.to_owned(),
            WorkerShared {
                store: self.store.clone(),
                notify: notify.clone(),
                kind: self.kind,
                permits: self.permits.clone(),
            },
        );
        self.tasks.insert(name.to_owned(), (notify, handle));
    }

    /// Stops the worker of a cluster.
    fn remove(&mut self, name: &str) {
        if let Some((_, handle)) = self.tasks.remove(name) {
            handle.abort();
        }
    }

    /// Stops the workers of clusters not in `names`.
    fn retain(&mut self, names: &HashSet<String>) {
        let gone: Vec<String> = self
            .tasks
            .keys()
            .filter(|n| !names.contains(*n))
            .cloned()
            .collect();
        for n in gone {
            self.remove(&n);
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for (_, handle) in self.tasks.values() {
            handle.abort();
        }
    }
}

/// The worker loop of one cluster.
async fn work<R: Reconciler>(mut reconciler: R, name: String, shared: WorkerShared) {
    let WorkerShared {
        store,
        notify,
        kind,
        permits,
    } = shared;
    let mut failures: u32 = 0;
    loop {
        let Some(cluster) = store.get(&ObjectRef::new(&name)) else {
            // Not in the cache yet (initial list) or deleted: the informer wakes or stops us.
            notify.notified().await;
            continue;
        };
        let Ok(permit) = permits.acquire().await else {
            return;
        };
        let next = match reconciler.reconcile(cluster).await {
            Ok(next) => {
                failures = 0;
                next
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let delay = backoff(failures);
                tracing::warn!(controller = kind, cluster = %name, error = %e, retry_in = ?delay, "reconcile failed");
                Some(delay)
            }
        };
        drop(permit);
        match next {
            Some(delay) => {
                tokio::select! {
                    _ = notify.notified() => {}
                    _ = tokio::time::sleep(delay) => {}
                }
            }
            None => notify.notified().await,
        }
    }
}

/// Per-item exponential back-off: 5 ms doubling to at most 30 s.
fn backoff(failures: u32) -> Duration {
    let ms = 5u64.saturating_mul(1u64 << failures.saturating_sub(1).min(20));
    Duration::from_millis(ms.min(30_000))
}

/// What of a Cluster the cluster-status controller reacts to (GenerationChangedPredicate,
/// plus the finalizer it waits for and deletion).
fn status_trigger(c: &Cluster) -> (Option<i64>, bool, bool) {
    (
        c.metadata.generation,
        c.finalizers()
            .iter()
            .any(|f| f == finalizers::CLUSTER_CONTROLLER),
        c.metadata.deletion_timestamp.is_some(),
    )
}

/// What a member client is built from (ClusterAccessCredentialChanged, plus the secrets).
fn access_fields(c: &Cluster) -> String {
    let s = &c.spec;
    format!(
        "{}|{}|{}|{:?}|{:?}|{:?}",
        s.api_endpoint,
        s.insecure_skip_tls_verification,
        s.proxy_url,
        s.proxy_header,
        s.secret_ref,
        s.impersonator_secret_ref
    )
}

async fn run(ctx: ClusterControllers) {
    let (store, writer) = reflector::store::<Cluster>();
    let clusters = reflector::reflector(
        writer,
        watcher(
            Api::<Cluster>::all(ctx.client.clone()),
            watcher::Config::default(),
        ),
    )
    .default_backoff();
    let namespaces = watcher(
        Api::<Namespace>::all(ctx.client.clone()),
        watcher::Config::default(),
    )
    .default_backoff();
    let secrets = watcher(
        Api::<Secret>::namespaced(ctx.client.clone(), names::NAMESPACE_KARMADA_CLUSTER),
        watcher::Config::default(),
    )
    .default_backoff();
    let mut clusters = std::pin::pin!(clusters);
    let mut namespaces = std::pin::pin!(namespaces);
    let mut secrets = std::pin::pin!(secrets);

    let _monitor = ctx.run_cluster.then(|| {
        crate::runtime::AbortOnDrop(tokio::spawn(health::run(
            ctx.client.clone(),
            store.clone(),
            ctx.settings.monitor,
        )))
    });
    let shared = Arc::new(ctx);
    let concurrency = shared.settings.concurrent_syncs;
    let c = shared.clone();
    let mut cluster_workers = Workers::new("cluster", store.clone(), concurrency, move |_| {
        Box::new(controller::ClusterReconciler::new(&c))
    });
    let s = shared.clone();
    let mut status_workers =
        Workers::new("cluster-status", store.clone(), concurrency, move |name| {
            Box::new(status::StatusReconciler::new(&s, name))
        });
    cluster_workers.enabled = shared.run_cluster;
    status_workers.enabled = shared.run_status;
    let mut triggers: HashMap<String, (Option<i64>, bool, bool)> = HashMap::new();
    let mut access: HashMap<String, String> = HashMap::new();

    loop {
        tokio::select! {
            ev = clusters.next() => {
                let Some(ev) = ev else { return };
                match ev {
                    Ok(watcher::Event::Apply(c) | watcher::Event::InitApply(c)) => {
                        let name = c.name_any();
                        let fields = access_fields(&c);
                        if access.get(&name).is_some_and(|old| *old != fields) {
                            shared.members.invalidate(&name);
                        }
                        access.insert(name.clone(), fields);
                        cluster_workers.touch(&name);
                        let trigger = status_trigger(&c);
                        if triggers.get(&name) != Some(&trigger) {
                            triggers.insert(name.clone(), trigger);
                            status_workers.touch(&name);
                        }
                    }
                    Ok(watcher::Event::Delete(c)) => {
                        let name = c.name_any();
                        cluster_workers.remove(&name);
                        status_workers.remove(&name);
                        triggers.remove(&name);
                        access.remove(&name);
                        shared.members.invalidate(&name);
                    }
                    Ok(watcher::Event::InitDone) => {
                        let names: HashSet<String> = store.state().iter().map(|c| c.name_any()).collect();
                        cluster_workers.retain(&names);
                        status_workers.retain(&names);
                        triggers.retain(|n, _| names.contains(n));
                        for gone in access.keys().filter(|n| !names.contains(*n)) {
                            shared.members.invalidate(gone);
                        }
                        access.retain(|n, _| names.contains(n));
                        for n in &names {
                            cluster_workers.touch(n);
                            status_workers.touch(n);
                        }
                    }
                    Ok(watcher::Event::Init) => {}
                    Err(e) => tracing::warn!(error = %e, "cluster watch failed"),
                }
            }
            ev = namespaces.next() => {
                // An execution space appearing or going away matters to its cluster's
                // controller (recreate it, or finish removing the cluster).
                let Some(ev) = ev else { return };
                if let Ok(watcher::Event::Apply(ns) | watcher::Event::Delete(ns)) = ev
                    && let Ok(cluster) = names::cluster_name_from_execution_space(&ns.name_any())
                    && store.get(&ObjectRef::new(cluster)).is_some()
                {
                    cluster_workers.touch(cluster);
                }
            }
            ev = secrets.next() => {
                let Some(ev) = ev else { return };
                if let Ok(watcher::Event::Apply(secret) | watcher::Event::Delete(secret)) = ev {
                    let secret_name = secret.name_any();
                    let namespace = secret.namespace().unwrap_or_default();
                    for c in store.state() {
                        let refs = [c.spec.secret_ref.as_ref(), c.spec.impersonator_secret_ref.as_ref()];
                        if refs.into_iter().flatten().any(|r| r.name == secret_name && r.namespace == namespace) {
                            let name = c.name_any();
                            shared.members.invalidate(&name);
                            status_workers.touch(&name);
                        }
                    }
                }
            }
        }
    }
}

/// Labels marking Karmada's own objects.
pub(crate) fn system_labels() -> BTreeMap<String, String> {
    BTreeMap::from([(
        karmada_api::well_known::labels::KARMADA_SYSTEM.to_owned(),
        "true".to_owned(),
    )])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_caps() {
        assert_eq!(backoff(1), Duration::from_millis(5));
        assert_eq!(backoff(2), Duration::from_millis(10));
        assert_eq!(backoff(5), Duration::from_millis(80));
        assert_eq!(backoff(40), Duration::from_secs(30));
    }
}
