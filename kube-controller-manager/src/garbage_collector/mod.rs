//! The garbage collector (kube-controller-manager's pkg/controller/garbagecollector): deletes
//! objects whose owners are gone, finishes foreground deletions once the blocking dependents
//! are gone, and releases dependents of owners deleted with `propagationPolicy: Orphan`.
//!
//! One task keeps the owner graph of every stored resource from the watch caches (through
//! [`informer`](super::informer)) and works a queue of uids: it decides from the graph, then
//! carries out a batch of decisions concurrently (kube runs 20 workers). Before acting on an
//! owner believed absent it confirms with a consistent read, so a cache that lags another
//! cannot make it delete a dependent whose owner exists.

pub mod graph;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::meta::{self as object, FOREGROUND_FINALIZER, ORPHAN_FINALIZER};
use futures::future::join_all;
use serde_json::Value;

use self::graph::{Graph, Item, Node, OwnerRef, Verdict};
use super::informer::{self, Change};
use super::work_queue::{self, WorkQueue};
use crate::api_server::{ApiError, ApiServer, Propagation, Resource, Subresource};

/// Why one work item failed (it is retried with back-off).
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// An API operation failed.
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// Work items carried out together.
const BATCH: usize = 16;

/// How an item ended.
enum Outcome {
    Done,
    RetryLater,
}

/// An object an action writes: its resource and identity at decision time.
#[derive(Clone, Debug)]
struct Target {
    def: Arc<dyn Resource>,
    namespace: String,
    name: String,
    uid: String,
}

/// What the collector does for one item, with everything it needs (no borrow of the graph).
#[derive(Debug)]
enum Action {
    None,
    RemoveFinalizer(Target, &'static str),
    RemoveOwnerRefs {
        target: Target,
        uids: Vec<String>,
        verify: Vec<OwnerRef>,
    },
    Delete {
        target: Target,
        propagation: Propagation,
        unblock: bool,
        verify: Vec<OwnerRef>,
    },
    Orphan {
        owner: Target,
        dependents: Vec<Target>,
    },
}

/// The collector's state, owned by its task.
pub struct GarbageCollector {
    state: Arc<dyn ApiServer>,
    graph: Graph,
    defs: HashMap<String, Arc<dyn Resource>>,
    queue: WorkQueue<Item>,
    synced: bool,
}

impl GarbageCollector {
    /// A collector over the server's state.
    pub fn new(state: Arc<dyn ApiServer>) -> GarbageCollector {
        GarbageCollector {
            state,
            graph: Graph::default(),
            defs: HashMap::new(),
            queue: WorkQueue::new(Duration::from_millis(50), Duration::from_secs(30)),
            synced: false,
        }
    }

    /// Runs until the task is aborted.
    pub async fn run(mut self) {
        let mut changes = informer::spawn(self.state.clone(), 1024);
        loop {
            while let Ok(change) = changes.try_recv() {
                self.apply(change);
            }
            if self.synced {
                let mut batch = Vec::new();
                while batch.len() < BATCH
                    && let Some(item) = self.queue.pop()
                {
                    let action = self.plan(&item);
                    batch.push((item, action));
                }
                if !batch.is_empty() {
                    self.execute(batch).await;
                    continue;
                }
            }
            tokio::select! {
                change = changes.recv() => match change {
                    Some(change) => self.apply(change),
                    None => {
                        tracing::error!("garbage collector lost its informer; restarting it");
                        changes = informer::spawn(self.state.clone(), 1024);
                    }
                },
                _ = work_queue::sleep_until(self.queue.next_due()) => {}
            }
        }
    }

    fn node(&self, def: &Arc<dyn Resource>, json: &[u8]) -> Option<Node> {
        graph::node_from_json(def.prefix(), def.group(), def.kind(), json)
    }

    /// Applies one change to the graph and queues what it calls for.
    fn apply(&mut self, change: Change) {
        let items = match change {
            Change::Resync { def, objects } => {
                let prefix = def.prefix().to_string();
                let nodes = objects
                    .iter()
                    .filter_map(|o| self.node(&def, &o.raw_json()))
                    .collect();
                self.defs.insert(prefix.clone(), def);
                self.graph.resync(&prefix, nodes)
            }
            Change::Event { event, .. } if event.deleted => {
                self.graph.forget(&event.object.raw_json())
            }
            Change::Event { def, event } => self.graph.observe(
                def.prefix(),
                def.group(),
                def.kind(),
                &event.object.raw_json(),
            ),
            Change::Gone { def } => {
                let prefix = def.prefix().to_string();
                self.defs.remove(&prefix);
                self.graph.remove_resource(&prefix)
            }
            Change::Synced => {
                if !self.synced {
                    tracing::info!(objects = self.graph.len(), "garbage collector synced");
                }
                self.synced = true;
                // Kinds that were not served may be now: look at everything again.
                self.graph.full_pass()
            }
        };
        for item in items {
            self.queue.add(item);
        }
    }

    fn target(&self, uid: &str) -> Option<Target> {
        let node = self.graph.node(uid)?;
        Some(Target {
            def: self.defs.get(&*node.resource)?.clone(),
            namespace: node.namespace.to_string(),
            name: node.name.clone(),
            uid: node.uid.to_string(),
        })
    }

    /// Decides what an item calls for (kube's attemptToDeleteItem and orphanDependents).
    fn plan(&mut self, item: &Item) -> Action {
        match item {
            Item::AttemptToDelete(uid) => {
                let state = &self.state;
                let scopes = |group: &str, kind: &str| {
                    state.resource_for_kind(group, kind).map(|d| d.namespaced())
                };
                let verdict = self.graph.decide(uid, &scopes);
                let Some(target) = self.target(uid) else {
                    return Action::None;
                };
                match verdict {
                    Verdict::Nothing | Verdict::Unresolvable => Action::None,
                    Verdict::AwaitDependents(deps) => {
                        // The owner is examined again when one of them goes away.
                        for d in deps {
                            self.queue.add(Item::AttemptToDelete(d));
                        }
                        Action::None
                    }
                    Verdict::RemoveForegroundFinalizer => {
                        Action::RemoveFinalizer(target, FOREGROUND_FINALIZER)
                    }
                    Verdict::RemoveOwnerRefs { uids, verify } => Action::RemoveOwnerRefs {
                        target,
                        uids,
                        verify,
                    },
                    Verdict::Delete {
                        propagation,
                        unblock,
                        verify,
                    } => Action::Delete {
                        target,
                        propagation,
                        unblock,
                        verify,
                    },
                }
            }
            Item::AttemptToOrphan(uid) => {
                let (Some(dependents), Some(owner)) =
                    (self.graph.orphan_targets(uid), self.target(uid))
                else {
                    return Action::None;
                };
                Action::Orphan {
                    owner,
                    dependents: dependents.iter().filter_map(|d| self.target(d)).collect(),
                }
            }
        }
    }

    /// Carries out a batch concurrently and requeues what failed.
    async fn execute(&mut self, batch: Vec<(Item, Action)>) {
        let state = &self.state;
        let results = join_all(
            batch
                .into_iter()
                .map(|(item, action)| async move { (item, run_action(state, action).await) }),
        )
        .await;
        for (item, result) in results {
            match result {
                Ok(Outcome::Done) => self.queue.forget(&item),
                Ok(Outcome::RetryLater) => self.queue.retry(item),
                Err(e) => {
                    tracing::warn!(?item, error = %e, "garbage collector will retry");
                    self.queue.retry(item);
                }
            }
        }
    }
}

async fn run_action(state: &Arc<dyn ApiServer>, action: Action) -> Result<Outcome, GcError> {
    match action {
        Action::None => Ok(Outcome::Done),
        Action::RemoveFinalizer(target, finalizer) => {
            tracing::debug!(resource = %target.def.qualified(), namespace = %target.namespace, name = %target.name, finalizer, "removing the collector's finalizer");
            remove_finalizer(state, &target, finalizer).await
        }
        Action::RemoveOwnerRefs {
            target,
            uids,
            verify,
        } => {
            if !confirm_absent(state, &target, &verify).await? {
                return Ok(Outcome::RetryLater);
            }
            tracing::debug!(resource = %target.def.qualified(), namespace = %target.namespace, name = %target.name, ?uids, "removing references to owners that are gone");
            edit_owner_refs(state, &target, |refs| {
                refs.retain(|r| !uids.iter().any(|u| ref_uid(r) == u));
            })
            .await
        }
        Action::Delete {
            target,
            propagation,
            unblock,
            verify,
        } => {
            if !confirm_absent(state, &target, &verify).await? {
                return Ok(Outcome::RetryLater);
            }
            if unblock {
                edit_owner_refs(state, &target, |refs| {
                    for r in refs.iter_mut() {
                        if let Some(m) = r.as_object_mut()
                            && m.get("blockOwnerDeletion") == Some(&Value::Bool(true))
                        {
                            m.insert("blockOwnerDeletion".into(), Value::Bool(false));
                        }
                    }
                })
                .await?;
            }
            tracing::debug!(resource = %target.def.qualified(), namespace = %target.namespace, name = %target.name, ?propagation, "deleting an object whose owners are gone");
            delete(state, &target, propagation).await
        }
        Action::Orphan { owner, dependents } => {
            let edits = join_all(dependents.iter().map(|dep| {
                edit_owner_refs(state, dep, |refs| refs.retain(|r| ref_uid(r) != owner.uid))
            }))
            .await;
            for e in edits {
                e?;
            }
            tracing::debug!(resource = %owner.def.qualified(), namespace = %owner.namespace, name = %owner.name, "dependents orphaned");
            remove_finalizer(state, &owner, ORPHAN_FINALIZER).await
        }
    }
}

/// Confirms with consistent reads that the referenced owners do not exist (kube looks each
/// owner up live before acting). False when one does: the graph is behind.
async fn confirm_absent(
    state: &Arc<dyn ApiServer>,
    dep: &Target,
    refs: &[OwnerRef],
) -> Result<bool, GcError> {
    for r in refs {
        // Owners of groups served through an APIService live in its backend.
        if let Some(exists) = state
            .remote_object_exists(r.group(), &r.kind, &dep.namespace, &r.name, &r.uid)
            .await
        {
            if exists? {
                return Ok(false);
            }
            continue;
        }
        let Some(def) = state.resource_for_kind(r.group(), &r.kind) else {
            return Ok(false);
        };
        let ns = if def.namespaced() {
            dep.namespace.as_str()
        } else {
            ""
        };
        match state.get(&def, ns, &r.name).await {
            Ok(owner) if object::uid(&owner) == r.uid => {
                tracing::debug!(owner = %r.name, "owner exists in storage; the graph is behind");
                return Ok(false);
            }
            Ok(_) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(true)
}

async fn delete(
    state: &Arc<dyn ApiServer>,
    target: &Target,
    propagation: Propagation,
) -> Result<Outcome, GcError> {
    match state
        .delete(
            &target.def,
            &target.namespace,
            &target.name,
            &target.uid,
            propagation,
        )
        .await
    {
        Ok(_) => Ok(Outcome::Done),
        // Gone already, or replaced by another object of the same name.
        Err(e) if e.code == 404 || e.code == 409 => Ok(Outcome::Done),
        Err(e) => Err(e.into()),
    }
}

/// Removes one finalizer from the target (if it is still that object).
async fn remove_finalizer(
    state: &Arc<dyn ApiServer>,
    target: &Target,
    finalizer: &str,
) -> Result<Outcome, GcError> {
    update(state, target, |obj| {
        let mut f = object::finalizers(obj);
        let before = f.len();
        f.retain(|x| x != finalizer);
        if f.len() == before {
            return false;
        }
        object::set_finalizers(obj, &f);
        true
    })
    .await
}

/// Edits the target's `metadata.ownerReferences`.
async fn edit_owner_refs(
    state: &Arc<dyn ApiServer>,
    target: &Target,
    edit: impl Fn(&mut Vec<Value>) + Send + Sync,
) -> Result<Outcome, GcError> {
    update(state, target, |obj| {
        let refs = object::meta(obj)
            .and_then(|m| m.get("ownerReferences"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut next = refs.clone();
        edit(&mut next);
        if next == refs {
            return false;
        }
        let m = object::meta_mut(obj);
        if next.is_empty() {
            m.remove("ownerReferences");
        } else {
            m.insert("ownerReferences".into(), Value::Array(next));
        }
        true
    })
    .await
}

/// A guaranteed update of the target, skipped when `edit` changes nothing or the object was
/// replaced.
async fn update(
    state: &Arc<dyn ApiServer>,
    target: &Target,
    edit: impl Fn(&mut Value) -> bool + Send + Sync,
) -> Result<Outcome, GcError> {
    let current = match state
        .get(&target.def, &target.namespace, &target.name)
        .await
    {
        Ok(v) => v,
        Err(e) if e.code == 404 => return Ok(Outcome::Done),
        Err(e) => return Err(e.into()),
    };
    let mut probe = current.clone();
    if object::uid(&current) != target.uid || !edit(&mut probe) {
        return Ok(Outcome::Done);
    }
    let next = |cur: &Value| {
        // Not the object the decision was about: it was replaced (a conflict).
        if object::uid(cur) != target.uid {
            return None;
        }
        let mut next = cur.clone();
        edit(&mut next);
        Some(next)
    };
    let result = state
        .guaranteed_update(
            &target.def,
            &target.namespace,
            &target.name,
            Subresource::Main,
            &next,
        )
        .await;
    match result {
        Ok(_) => Ok(Outcome::Done),
        Err(e) if e.code == 404 || e.code == 409 => Ok(Outcome::Done),
        Err(e) => Err(e.into()),
    }
}

fn ref_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or("")
}
