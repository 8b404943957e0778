//! The garbage collector (kube-controller-manager's pkg/controller/garbagecollector): deletes
//! objects whose owners are gone, finishes foreground deletions once the blocking dependents
//! are gone, and releases dependents of owners deleted with `propagationPolicy: Orphan`.
//!
//! One task keeps the owner graph of every stored resource from the watch caches (through
//! [`informer`](super::informer)) and works a queue of uids. Decisions come from the graph;
//! before acting on an owner believed absent it confirms with a consistent read, so a cache
//! that lags another cannot make it delete a dependent whose owner exists.

pub mod graph;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use self::graph::{Graph, Item, Node, OwnerRef, Verdict};
use super::informer::{self, Change};
use super::work_queue::{self, WorkQueue};
use crate::error::ApiError;
use crate::object;
use crate::options::{DeleteOptions, Propagation};
use crate::registry::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Registry, Subresource};
use crate::resources::ResourceDef;
use crate::state::ApiState;

/// Why one work item failed (it is retried with back-off).
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    /// An API operation failed.
    #[error(transparent)]
    Api(#[from] ApiError),
}

/// How an item ended.
enum Outcome {
    Done,
    RetryLater,
}

/// The collector's state, owned by its task.
pub struct GarbageCollector {
    state: Arc<ApiState>,
    graph: Graph,
    defs: HashMap<String, Arc<ResourceDef>>,
    queue: WorkQueue<Item>,
    synced: bool,
}

impl GarbageCollector {
    /// A collector over the server's state.
    pub fn new(state: Arc<ApiState>) -> GarbageCollector {
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
            if self.synced
                && let Some(item) = self.queue.pop()
            {
                self.process(item).await;
                continue;
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

    fn node(&self, def: &ResourceDef, json: &[u8]) -> Option<Node> {
        graph::node_from_json(def.prefix()?, &def.group, &def.kind, json)
    }

    /// Applies one change to the graph and queues what it calls for.
    fn apply(&mut self, change: Change) {
        let items = match change {
            Change::Resync { def, objects } => {
                let prefix = def.prefix().unwrap_or_default().to_string();
                let nodes = objects
                    .iter()
                    .filter_map(|o| self.node(&def, &o.json))
                    .collect();
                self.defs.insert(prefix.clone(), def);
                self.graph.resync(&prefix, nodes)
            }
            Change::Event { def, event } => match event.kind {
                crate::watch_cache::EventType::Deleted => {
                    match self.node(&def, &event.object.json) {
                        Some(n) => self.graph.remove(&n.uid),
                        None => Vec::new(),
                    }
                }
                _ => match self.node(&def, &event.object.json) {
                    Some(n) => self.graph.upsert(n),
                    None => Vec::new(),
                },
            },
            Change::Gone { def } => {
                let prefix = def.prefix().unwrap_or_default().to_string();
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

    async fn process(&mut self, item: Item) {
        let result = match &item {
            Item::AttemptToDelete(uid) => self.attempt_to_delete(uid).await,
            Item::AttemptToOrphan(uid) => self.attempt_to_orphan(uid).await,
        };
        match result {
            Ok(Outcome::Done) => self.queue.forget(&item),
            Ok(Outcome::RetryLater) => self.queue.retry(item),
            Err(e) => {
                tracing::warn!(?item, error = %e, "garbage collector will retry");
                self.queue.retry(item);
            }
        }
    }

    fn scopes(&self) -> impl Fn(&str, &str) -> Option<bool> + use<> {
        let snapshot = self.state.catalog.snapshot();
        move |group: &str, kind: &str| {
            snapshot
                .by_kind(group, kind)
                .filter(|d| d.prefix().is_some())
                .map(|d| d.namespaced)
        }
    }

    /// The registry of a node's resource.
    fn registry(&self, node: &Node) -> Option<Registry<'_>> {
        let def = self.defs.get(&node.resource)?;
        Some(Registry::new(&self.state, def.clone()))
    }

    async fn attempt_to_delete(&mut self, uid: &str) -> Result<Outcome, GcError> {
        let verdict = self.graph.decide(uid, &self.scopes());
        let Some(node) = self.graph.node(uid).cloned() else {
            return Ok(Outcome::Done);
        };
        match verdict {
            Verdict::Nothing | Verdict::Unresolvable => Ok(Outcome::Done),
            Verdict::AwaitDependents(deps) => {
                // The owner is examined again when one of them goes away.
                for d in deps {
                    self.queue.add(Item::AttemptToDelete(d));
                }
                Ok(Outcome::Done)
            }
            Verdict::RemoveForegroundFinalizer => {
                tracing::debug!(kind = %node.kind, namespace = %node.namespace, name = %node.name, "foreground deletion complete");
                self.remove_finalizer(&node, FOREGROUND_FINALIZER).await
            }
            Verdict::RemoveOwnerRefs { uids, verify } => {
                if !self.confirm_absent(&node, &verify).await? {
                    return Ok(Outcome::RetryLater);
                }
                tracing::debug!(kind = %node.kind, namespace = %node.namespace, name = %node.name, ?uids, "removing references to owners that are gone");
                self.edit_owner_refs(&node, |refs| {
                    refs.retain(|r| !uids.iter().any(|u| ref_uid(r) == u));
                })
                .await
            }
            Verdict::Delete {
                propagation,
                unblock,
                verify,
            } => {
                if !self.confirm_absent(&node, &verify).await? {
                    return Ok(Outcome::RetryLater);
                }
                if unblock {
                    self.edit_owner_refs(&node, |refs| {
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
                tracing::debug!(kind = %node.kind, namespace = %node.namespace, name = %node.name, ?propagation, "deleting an object whose owners are gone");
                self.delete(&node, propagation).await
            }
        }
    }

    async fn attempt_to_orphan(&mut self, uid: &str) -> Result<Outcome, GcError> {
        let Some(targets) = self.graph.orphan_targets(uid) else {
            return Ok(Outcome::Done);
        };
        let Some(owner) = self.graph.node(uid).cloned() else {
            return Ok(Outcome::Done);
        };
        for dep in targets {
            let Some(node) = self.graph.node(&dep).cloned() else {
                continue;
            };
            self.edit_owner_refs(&node, |refs| refs.retain(|r| ref_uid(r) != uid))
                .await?;
        }
        tracing::debug!(kind = %owner.kind, namespace = %owner.namespace, name = %owner.name, "dependents orphaned");
        self.remove_finalizer(&owner, ORPHAN_FINALIZER).await
    }

    /// Confirms with consistent reads that the referenced owners do not exist (kube looks each
    /// owner up live before acting). False when one does: the graph is behind.
    async fn confirm_absent(&self, dep: &Node, refs: &[OwnerRef]) -> Result<bool, GcError> {
        let snapshot = self.state.catalog.snapshot();
        for r in refs {
            let Some(def) = snapshot
                .by_kind(r.group(), &r.kind)
                .filter(|d| d.prefix().is_some())
            else {
                return Ok(false);
            };
            let ns = if def.namespaced {
                dep.namespace.as_str()
            } else {
                ""
            };
            match Registry::new(&self.state, def.clone())
                .get(ns, &r.name)
                .await
            {
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

    async fn delete(&self, node: &Node, propagation: Propagation) -> Result<Outcome, GcError> {
        let Some(reg) = self.registry(node) else {
            return Ok(Outcome::Done);
        };
        let opts = DeleteOptions {
            precondition_uid: Some(node.uid.clone()),
            propagation: Some(propagation),
            ..Default::default()
        };
        match reg.delete(&node.namespace, &node.name, &opts).await {
            Ok(_) => Ok(Outcome::Done),
            // Gone already, or replaced by another object of the same name.
            Err(e) if e.code == 404 || e.code == 409 => Ok(Outcome::Done),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes one finalizer from the object `node` names (if it is still that object).
    async fn remove_finalizer(&self, node: &Node, finalizer: &str) -> Result<Outcome, GcError> {
        self.update(node, |obj| {
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

    /// Edits `metadata.ownerReferences` of the object `node` names.
    async fn edit_owner_refs(
        &self,
        node: &Node,
        edit: impl Fn(&mut Vec<Value>),
    ) -> Result<Outcome, GcError> {
        self.update(node, |obj| {
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

    /// A guaranteed update of the object `node` names, skipped when `edit` changes nothing or
    /// the object was replaced.
    async fn update(
        &self,
        node: &Node,
        edit: impl Fn(&mut Value) -> bool,
    ) -> Result<Outcome, GcError> {
        let Some(reg) = self.registry(node) else {
            return Ok(Outcome::Done);
        };
        let current = match reg.get(&node.namespace, &node.name).await {
            Ok(v) => v,
            Err(e) if e.code == 404 => return Ok(Outcome::Done),
            Err(e) => return Err(e.into()),
        };
        let mut probe = current.clone();
        if object::uid(&current) != node.uid || !edit(&mut probe) {
            return Ok(Outcome::Done);
        }
        let ctx = super::write_context();
        let result = reg
            .guaranteed_update(
                &node.namespace,
                &node.name,
                Subresource::Main,
                &ctx,
                |cur| {
                    if object::uid(cur) != node.uid {
                        return Err(ApiError::conflict(
                            "",
                            &node.resource,
                            &node.name,
                            "the object was replaced",
                        ));
                    }
                    let mut next = cur.clone();
                    edit(&mut next);
                    Ok(next)
                },
            )
            .await;
        match result {
            Ok(_) => Ok(Outcome::Done),
            Err(e) if e.code == 404 || e.code == 409 => Ok(Outcome::Done),
            Err(e) => Err(e.into()),
        }
    }
}

fn ref_uid(r: &Value) -> &str {
    r.get("uid").and_then(Value::as_str).unwrap_or("")
}
