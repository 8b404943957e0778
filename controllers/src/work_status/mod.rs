//! The work-status controller (pkg/controllers/status/work_status_controller.go): watches the
//! member objects of Works — one watch per kind per member, started when a Work needs it and
//! stopped when none does — reflects their status and health into `manifestStatuses`, puts back
//! what was changed in the member (drift), and recreates what was deleted there.
//!
//! Member objects are not cached: each watch event is queued with the object it carries and
//! dropped once handled, so memory does not grow with the number of propagated objects.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::StreamExt;
use karmada_api::names;
use karmada_api::well_known::{annotations, labels};
use karmada_api::work::v1alpha1::{ResourceHealth, WORK_APPLIED, Work};
use kube::Api;

use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::execution::objectwatcher::{CreateError, ObjectWatcher};
use crate::execution::{manifest_status, manifest_target, work_target};
use crate::runtime::events::Recorder;
use crate::runtime::precedence::Class;
use crate::runtime::reconcile_metrics;
use crate::runtime::write::merge_patch_status;
use crate::runtime::{
    CachedWork, Change, Context, Key, ObjectKey, RawObject, Requeue, Result, WorkQueue,
    is_not_found, set_condition,
};

/// Events of this controller come from this component.
pub const COMPONENT: &str = "work-status-controller";

/// Member changes within this window make one pass, so a member object's status is reflected
/// at most once a second: a rolling workload's status changes several times in quick
/// succession (new generation observed, then each replica ready), each reflection is a Work
/// status write and usually a binding and a template status write after it, and at 200 ms
/// these writes were what saturated the control plane under steady template changes. An
/// object deleted out of band, and one that has just become healthy, are not delayed (see
/// `observe`).
const COALESCE: Duration = Duration::from_millis(1000);

/// What the last watch event said of a member object.
enum Observed {
    Present(Arc<RawObject>),
    Gone,
}

type ItemKey = (String, ObjectKey);
type WatchKey = (String, String, String);

struct WatchEntry {
    refs: usize,
    task: JoinHandle<()>,
}

struct Controller {
    ctx: Arc<Context>,
    watcher: Arc<ObjectWatcher>,
    recorder: Recorder,
    queue: WorkQueue<ItemKey>,
    pending: Mutex<HashMap<ItemKey, Observed>>,
    watches: Mutex<HashMap<WatchKey, WatchEntry>>,
    /// The (cluster, apiVersion, kind) each Work's manifests need watched.
    work_kinds: Mutex<HashMap<Key, Vec<WatchKey>>>,
    me: Weak<Controller>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Karmada's controller-runtime name of its per-Work status controller.
const WORK_STATUS_CONTROLLER: &str = "work-status-controller";

/// Starts the work-status controller.
pub fn start(ctx: Arc<Context>, watcher: Arc<ObjectWatcher>) -> Vec<JoinHandle<()>> {
    let c = Arc::new_cyclic(|me| Controller {
        recorder: ctx.events.recorder(COMPONENT),
        queue: ctx.queue("work-status", Class::Status),
        pending: Mutex::new(HashMap::new()),
        watches: Mutex::new(HashMap::new()),
        work_kinds: Mutex::new(HashMap::new()),
        watcher,
        ctx: ctx.clone(),
        me: me.clone(),
    });
    let c1 = c.clone();
    reconcile_metrics::init(WORK_STATUS_CONTROLLER);
    ctx.works.on_change(move |ch| match ch {
        Change::Add(w) | Change::Update(_, w) => {
            // Karmada's work-status-controller reconciles each Work by starting the informers
            // of its manifests' kinds in the member: what tracking a Work does here.
            let started = std::time::Instant::now();
            c1.track(w);
            reconcile_metrics::observe(
                WORK_STATUS_CONTROLLER,
                started.elapsed(),
                reconcile_metrics::Outcome::Success,
            );
        }
        Change::Delete(w) => c1.untrack(&w.key()),
    });
    let c2 = c.clone();
    ctx.clusters.on_change(move |ch| {
        if let Change::Delete(cl) = ch {
            let name = cl.metadata.name.clone().unwrap_or_default();
            c2.stop_cluster(&name);
        }
    });
    let c3 = c.clone();
    vec![tokio::spawn(async move {
        c3.ctx.wait_synced().await;
        let c4 = c3.clone();
        let handles = c3.queue.run(c3.ctx.settings.concurrency.work, move |k| {
            let c = c4.clone();
            async move { c.reconcile(k).await }
        });
        let _guard = AbortAll(&c3);
        for h in handles {
            let _ = h.await;
        }
    })]
}

struct AbortAll<'a>(&'a Controller);

impl Drop for AbortAll<'_> {
    fn drop(&mut self) {
        for (_, e) in lock(&self.0.watches).drain() {
            e.task.abort();
        }
    }
}

impl Controller {
    /// Keeps a watch running for each kind the Work's manifests have in its cluster.
    fn track(&self, w: &CachedWork) {
        let Some(cluster) = w.cluster() else {
            return;
        };
        if !self.serves(cluster) {
            return;
        }
        let mut kinds: Vec<WatchKey> = w
            .spec
            .workload
            .manifests
            .iter()
            .map(|m| {
                (
                    cluster.to_owned(),
                    m.api_version().to_owned(),
                    m.kind().to_owned(),
                )
            })
            .collect();
        kinds.sort();
        kinds.dedup();
        let key = w.key();
        let old = lock(&self.work_kinds)
            .insert(key, kinds.clone())
            .unwrap_or_default();
        if old == kinds {
            return;
        }
        for k in &kinds {
            if !old.contains(k) {
                self.acquire(k);
            }
        }
        for k in &old {
            if !kinds.contains(k) {
                self.release(k);
            }
        }
    }

    /// Whether this process reflects the status of `cluster`'s objects (a Pull cluster's
    /// are its agent's); a cluster not yet in the cache counts as served.
    fn serves(&self, cluster: &str) -> bool {
        self.ctx
            .clusters
            .get(&Key::cluster(cluster))
            .is_none_or(|c| self.ctx.settings.scope.serves(&c))
    }

    fn untrack(&self, key: &Key) {
        let old = lock(&self.work_kinds).remove(key).unwrap_or_default();
        for k in &old {
            self.release(k);
        }
    }

    fn acquire(&self, k: &WatchKey) {
        let mut watches = lock(&self.watches);
        if let Some(e) = watches.get_mut(k) {
            e.refs += 1;
            return;
        }
        let me = self.me.clone();
        let key = k.clone();
        let task = tokio::spawn(async move { watch_loop(me, key).await });
        watches.insert(k.clone(), WatchEntry { refs: 1, task });
    }

    fn release(&self, k: &WatchKey) {
        let mut watches = lock(&self.watches);
        if let Some(e) = watches.get_mut(k) {
            e.refs = e.refs.saturating_sub(1);
            if e.refs == 0
                && let Some(e) = watches.remove(k)
            {
                e.task.abort();
            }
        }
    }

    fn stop_cluster(&self, cluster: &str) {
        lock(&self.watches).retain(|(c, _, _), e| {
            if c == cluster {
                e.task.abort();
                false
            } else {
                true
            }
        });
        lock(&self.work_kinds).retain(|_, v| v.iter().all(|(c, _, _)| c != cluster));
        self.watcher.forget_cluster(cluster);
    }

    fn observe(&self, cluster: &str, key: ObjectKey, o: Observed) {
        let now = match &o {
            // A deleted object comes back at once.
            Observed::Gone => true,
            Observed::Present(obj) => self.turns_healthy(obj),
        };
        let k = (cluster.to_owned(), key);
        lock(&self.pending).insert(k.clone(), o);
        if now {
            self.queue.add(k);
        } else {
            self.queue.add_after(k, COALESCE);
        }
    }

    /// The Work a member object was applied from, by the annotations Karmada marks it with.
    fn work_of(&self, obj: &RawObject) -> Option<Arc<CachedWork>> {
        let wns = obj.annotation(annotations::WORK_NAMESPACE)?;
        let wname = obj.annotation(annotations::WORK_NAME)?;
        self.ctx.works.get(&Key::new(wns, wname))
    }

    /// True when a member object is healthy and its Work does not say so yet. That is the
    /// state users (and the template's aggregated status) wait for, so it is reflected at once;
    /// the changes before it, and those of an object already recorded healthy, are coalesced.
    fn turns_healthy(&self, obj: &RawObject) -> bool {
        let Some(work) = self.work_of(obj) else {
            return false;
        };
        // Until the Work says Applied, the execution controller's own status write (which
        // carries the manifest statuses of what it just applied) is on its way.
        if !work.applied() {
            return false;
        }
        let recorded = work.status.manifest_statuses.iter().find(|ms| {
            ms.identifier
                .names(&obj.api_version, &obj.kind, obj.namespace(), obj.name())
        });
        if recorded.and_then(|ms| ms.health) == Some(ResourceHealth::Healthy) {
            return false;
        }
        obj.to_value().is_ok_and(|v| {
            self.ctx.interpreter.interpret_health_now(&v) == Some(ResourceHealth::Healthy)
        })
    }

    async fn reconcile(&self, key: ItemKey) -> Result<Requeue> {
        let Some(observed) = lock(&self.pending).remove(&key) else {
            return Ok(Requeue::No);
        };
        let (cluster, okey) = &key;
        let res = match &observed {
            Observed::Present(o) => self.sync_present(cluster, o).await,
            Observed::Gone => self.sync_gone(cluster, okey).await,
        };
        if res.is_err() {
            // Keep the observation for the retry unless a newer one arrived meanwhile.
            lock(&self.pending).entry(key).or_insert(observed);
        }
        res
    }

    /// syncWorkStatus for an existing member object.
    async fn sync_present(&self, cluster: &str, obj: &RawObject) -> Result<Requeue> {
        let Some(work) = self.work_of(obj) else {
            return Ok(Requeue::No);
        };
        if work.deleting() || work.cluster() != Some(cluster) {
            return Ok(Requeue::No);
        }
        let okey = obj.object_key();
        let Some((ordinal, manifest)) = work
            .spec
            .workload
            .manifests
            .iter()
            .enumerate()
            .find(|(_, m)| m.is(&okey))
        else {
            return Ok(Requeue::No);
        };
        let mut current = obj.clone();
        if !work.suspended() {
            let desired = manifest.to_value()?;
            if self.watcher.needs_update(cluster, &desired, obj) {
                let (_, now) = self.watcher.update(cluster, &desired, obj).await?;
                current = now;
            }
        }
        let wt = work_target(&work);
        let what = format!("{}/{}/{}", obj.kind, obj.namespace(), obj.name());
        let ms = match manifest_status(&self.ctx.interpreter, ordinal as i64, &current.to_value()?)
            .await
        {
            Ok((ms, health_error)) => {
                if let Some(e) = health_error {
                    self.recorder.warning(
                        &wt,
                        "InterpretHealthFailed",
                        format!("Interpret health of object({what}) failed, err: {e}."),
                    );
                }
                ms
            }
            Err(e) => {
                self.recorder.warning(
                    &wt,
                    "ReflectStatusFailed",
                    format!("Reflect status for object({what}) failed, err: {e}."),
                );
                return Err(crate::runtime::Error::msg(e.to_string()));
            }
        };
        if work.status.manifest_statuses.len() == 1 && work.status.manifest_statuses[0].same_as(&ms)
        {
            return Ok(Requeue::No);
        }
        let health = ms.health.map(|h| h.as_str()).unwrap_or("Unknown");
        let patch = json!({"status": {"manifestStatuses": [ms]}});
        let key = work.key();
        let api = Api::<Work>::namespaced(self.ctx.client.clone(), &key.namespace);
        match merge_patch_status(api, &key.name, &patch).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => return Ok(Requeue::No),
            Err(e) => return Err(e.into()),
        }
        self.recorder.normal(
            &wt,
            "ReflectStatusSucceed",
            format!("Reflect status for object({what}) succeed."),
        );
        if health == "Unknown" {
            return Ok(Requeue::No);
        }
        self.recorder.normal(
            &wt,
            "InterpretHealthSucceed",
            format!(
                "Interpret health of object({what}) as {}.",
                health.to_lowercase()
            ),
        );
        Ok(Requeue::No)
    }

    /// handleDeleteEvent: a member object deleted out of band comes back.
    async fn sync_gone(&self, cluster: &str, key: &ObjectKey) -> Result<Requeue> {
        let wkey = Key::new(
            names::execution_space_name(cluster),
            names::work_name(&key.kind, &key.name, &key.namespace),
        );
        let Some(work) = self.ctx.works.get(&wkey) else {
            return Ok(Requeue::No);
        };
        if work.deleting() || work.suspended() {
            return Ok(Requeue::No);
        }
        let Some(manifest) = work.spec.workload.manifests.iter().find(|m| m.is(key)) else {
            return Ok(Requeue::No);
        };
        let target = manifest_target(manifest);
        let res = match self.watcher.create(cluster, &manifest.json()).await {
            Ok(_) | Err(CreateError::Exists) => Ok(()),
            Err(CreateError::Other(e)) => Err(e),
        };
        let mut status = work.status.clone();
        match &res {
            Ok(()) => {
                tracing::info!(%cluster, object = %key, "recreated a member object deleted out of band");
                self.recorder.normal(
                    &target,
                    "SyncSucceed",
                    format!(
                        "Successfully applied resource({}/{}) to cluster {cluster}",
                        key.namespace, key.name
                    ),
                );
                set_condition(
                    &mut status.conditions,
                    WORK_APPLIED,
                    "True",
                    "ReCreateSuccessful",
                    "Manifest has been successfully applied",
                    None,
                );
            }
            Err(e) => {
                self.recorder.warning(&target, "SyncFailed", format!("Failed to create or update resource({}/{}) in member cluster({cluster}): {e}", key.namespace, key.name));
                set_condition(
                    &mut status.conditions,
                    WORK_APPLIED,
                    "False",
                    "ReCreateFailed",
                    &e.to_string(),
                    None,
                );
            }
        }
        if status.conditions != work.status.conditions {
            let patch = json!({"status": {"conditions": status.conditions}});
            let api = Api::<Work>::namespaced(self.ctx.client.clone(), &wkey.namespace);
            let _ = merge_patch_status(api, &wkey.name, &patch).await;
        }
        res.map(|_| Requeue::No)
    }
}

/// Watches one kind in one member for as long as the task lives, queueing every change.
async fn watch_loop(me: Weak<Controller>, (cluster, api_version, kind): WatchKey) {
    let mut delay = Duration::from_millis(200);
    loop {
        let Some(c) = me.upgrade() else {
            return;
        };
        let resource = c.ctx.served_resource(&api_version, &kind);
        let client = match resource {
            _ if !c.serves(&cluster) => Err(format!("cluster {cluster} is not served here")),
            Some(_) => c.ctx.members.get(&cluster).await.map_err(|e| e.to_string()),
            None => Err(format!("{api_version} {kind} is not served")),
        };
        let (Some(resource), Ok(client)) = (resource, client) else {
            drop(c);
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
            continue;
        };
        drop(c);
        let api: Api<RawObject> = Api::all_with(client, &resource.api_resource());
        let cfg = watcher::Config::default().labels(&format!(
            "{}={}",
            labels::MANAGED_BY_KARMADA,
            labels::MANAGED_BY_KARMADA_VALUE
        ));
        let mut stream = watcher(api, cfg).default_backoff().boxed();
        let mut known: HashSet<ObjectKey> = HashSet::new();
        let mut listing: Option<HashSet<ObjectKey>> = None;
        while let Some(ev) = stream.next().await {
            let Some(c) = me.upgrade() else {
                return;
            };
            match ev {
                Ok(watcher::Event::Init) => listing = Some(HashSet::new()),
                Ok(watcher::Event::InitApply(o)) => {
                    let k = o.object_key();
                    listing.get_or_insert_with(HashSet::new).insert(k.clone());
                    c.observe(&cluster, k, Observed::Present(Arc::new(o)));
                }
                Ok(watcher::Event::InitDone) => {
                    let listed = listing.take().unwrap_or_default();
                    for gone in known.difference(&listed) {
                        c.observe(&cluster, gone.clone(), Observed::Gone);
                    }
                    known = listed;
                }
                Ok(watcher::Event::Apply(o)) => {
                    let k = o.object_key();
                    known.insert(k.clone());
                    c.observe(&cluster, k, Observed::Present(Arc::new(o)));
                }
                Ok(watcher::Event::Delete(o)) => {
                    let k = o.object_key();
                    known.remove(&k);
                    c.observe(&cluster, k, Observed::Gone);
                }
                Err(e) => {
                    tracing::debug!(%cluster, %kind, error = %e, "member watch failed; retrying")
                }
            }
        }
    }
}
