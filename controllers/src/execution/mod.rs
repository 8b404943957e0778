//! The execution controller (pkg/controllers/execution): applies each Work's manifests to its
//! member cluster, marks the Work `Applied` (and `Dispatching`), deletes the member objects
//! when the Work goes (its finalizer) unless they are to be preserved, and retries with
//! back-off while the member cannot be reached.

pub mod objectwatcher;

use std::sync::Arc;

use karmada_api::names;
use karmada_api::well_known::{annotations, conditions, finalizers, labels};
use karmada_api::work::v1alpha1::{
    ManifestStatus, ResourceHealth, ResourceIdentifier, WORK_APPLIED, WORK_DISPATCHING, Work,
};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::interpreter;
use crate::metrics;
use crate::runtime::context::BY_NAMESPACE;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::precedence::Class;
use crate::runtime::write::merge_patch_status;
use crate::runtime::{
    CachedManifest, CachedWork, Change, Context, Error, Key, ObjectKey, RawObject, Requeue, Result,
    WorkQueue, cluster_ready, is_not_found, set_condition, split_api_version,
};
pub use objectwatcher::ObjectWatcher;
use objectwatcher::{CreateError, Outcome};

/// Events of this controller come from this component.
pub const COMPONENT: &str = "execution-controller";

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    watcher: Arc<ObjectWatcher>,
    recorder: Recorder,
}

/// Starts the execution controller.
pub fn start(ctx: Arc<Context>, watcher: Arc<ObjectWatcher>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder(COMPONENT),
        queue: ctx
            .queue("execution", Class::Placement)
            .reconciled_as(&["execution-controller"], |_| "execution-controller"),
        watcher,
        ctx: ctx.clone(),
    });
    let c1 = c.clone();
    ctx.works.on_change(move |ch| match ch {
        Change::Add(w) => c1.queue.add(w.key()),
        Change::Update(old, new) => {
            if old.metadata.generation != new.metadata.generation
                || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
            {
                c1.queue.add(new.key());
            }
        }
        Change::Delete(_) => {}
    });
    // A cluster that becomes ready gets the Works that were waiting for it.
    let c2 = c.clone();
    ctx.clusters.on_change(move |ch| {
        if let Change::Update(old, new) = ch
            && !cluster_ready(old)
            && cluster_ready(new)
        {
            let ns = names::execution_space_name(new.metadata.name.as_deref().unwrap_or(""));
            for w in c2.ctx.works.by_index(BY_NAMESPACE, &ns) {
                c2.queue.add(w.key());
            }
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
        for h in handles {
            let _ = h.await;
        }
    })]
}

/// The event target of a manifest's resource template (GenEventRef: the uid comes from the
/// template-uid annotation).
pub fn manifest_target(m: &CachedManifest) -> EventTarget {
    EventTarget {
        api_version: m.api_version().to_owned(),
        kind: m.kind().to_owned(),
        namespace: m.namespace().to_owned(),
        name: m.name().to_owned(),
        uid: m.template_uid().to_owned(),
    }
}

/// The event target of a Work.
pub fn work_target(w: &CachedWork) -> EventTarget {
    EventTarget {
        api_version: "work.karmada.io/v1alpha1".into(),
        kind: "Work".into(),
        namespace: w.metadata.namespace.clone().unwrap_or_default(),
        name: w.metadata.name.clone().unwrap_or_default(),
        uid: w.metadata.uid.clone().unwrap_or_default(),
    }
}

/// The status entry of a member object (reflectStatus, interpretHealth, buildStatusIdentifier).
/// A health that cannot be interpreted is Unknown; the error comes back beside the entry.
pub async fn manifest_status(
    interpreter: &interpreter::ResourceInterpreter,
    ordinal: i64,
    observed: &Value,
) -> std::result::Result<
    (ManifestStatus, Option<interpreter::InterpreterError>),
    interpreter::InterpreterError,
> {
    let (group, version) = split_api_version(observed["apiVersion"].as_str().unwrap_or(""));
    let status = interpreter.reflect_status(observed).await?;
    let (health, health_error) = match interpreter.interpret_health(observed).await {
        Ok(h) => (h, None),
        Err(e) => (ResourceHealth::Unknown, Some(e)),
    };
    Ok((
        ManifestStatus {
            identifier: ResourceIdentifier {
                ordinal,
                group: group.to_owned(),
                version: version.to_owned(),
                kind: observed["kind"].as_str().unwrap_or("").to_owned(),
                resource: String::new(),
                namespace: observed["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
                name: observed["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned(),
            },
            status,
            health: Some(health),
        },
        health_error,
    ))
}

impl Controller {
    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let Some(work) = self.ctx.works.get(&key) else {
            return Ok(Requeue::No);
        };
        let Ok(cluster_name) = names::cluster_name_from_execution_space(&key.namespace) else {
            return Err(Error::msg(format!(
                "work {key} is not in an execution space"
            )));
        };
        let cluster = self.ctx.clusters.get(&Key::cluster(cluster_name));
        // A Pull cluster's Works are its agent's; an agent touches only its own cluster's.
        if let Some(c) = &cluster
            && !self.ctx.settings.scope.serves(c)
        {
            return Ok(Requeue::No);
        }
        if work.deleting() {
            // Nothing is left to clean up in a cluster that no longer exists.
            if let Some(c) = &cluster {
                self.handle_delete(
                    &work,
                    cluster_name,
                    cluster_ready(c),
                    c.metadata.deletion_timestamp.is_some(),
                )
                .await?
            }
            self.remove_finalizer(&work).await?;
            return Ok(Requeue::No);
        }
        let Some(cluster) = cluster else {
            return Err(Error::msg(format!("cluster {cluster_name} not found")));
        };
        let mut status = work.status.to_api();
        let dispatch_changed = if work.suspended() {
            set_condition(
                &mut status.conditions,
                WORK_DISPATCHING,
                "False",
                conditions::REASON_SUSPEND_DISPATCHING,
                conditions::MESSAGE_SUSPEND_DISPATCHING,
                None,
            )
        } else {
            set_condition(
                &mut status.conditions,
                WORK_DISPATCHING,
                "True",
                conditions::REASON_DISPATCHING,
                conditions::MESSAGE_DISPATCHING,
                None,
            )
        };
        if dispatch_changed {
            let msg = if work.suspended() {
                conditions::MESSAGE_SUSPEND_DISPATCHING
            } else {
                conditions::MESSAGE_DISPATCHING
            };
            self.recorder
                .normal(&work_target(&work), "WorkDispatching", msg);
        }
        if work.suspended() {
            if dispatch_changed {
                self.write_status(&work, &status, false).await?;
            }
            return Ok(Requeue::No);
        }
        if !cluster_ready(&cluster) {
            if dispatch_changed {
                self.write_status(&work, &status, false).await?;
            }
            return Err(Error::msg(format!("cluster({cluster_name}) not ready")));
        }
        let started = std::time::Instant::now();
        let synced = self.sync(&work, cluster_name, status).await;
        crate::metrics::registry().observe_duration(
            &crate::metrics::WORK_SYNC_WORKLOAD_DURATION,
            &[crate::metrics::result(&synced)],
            started.elapsed(),
        );
        synced
    }

    /// syncToClusters: applies every manifest, then records the outcome in `Applied`.
    async fn sync(
        &self,
        work: &CachedWork,
        cluster: &str,
        mut status: karmada_api::work::v1alpha1::WorkStatus,
    ) -> Result<Requeue> {
        let total = work.spec.workload.manifests.len();
        let mut errors = Vec::new();
        let mut statuses = Vec::new();
        for (i, m) in work.spec.workload.manifests.iter().enumerate() {
            let target = manifest_target(m);
            match self.apply(work, cluster, m).await {
                Ok(observed) => {
                    if let Ok((ms, _)) =
                        manifest_status(&self.ctx.interpreter, i as i64, &observed).await
                    {
                        statuses.push(ms);
                    }
                    self.recorder.normal(
                        &target,
                        "SyncSucceed",
                        format!(
                            "Successfully applied resource({}/{}) to cluster {cluster}",
                            m.namespace(),
                            m.name()
                        ),
                    );
                }
                Err(e) => {
                    self.recorder.warning(
                        &target,
                        "SyncFailed",
                        format!("Failed to create or update resource({}/{}) in member cluster({cluster}): {e}", m.namespace(), m.name()),
                    );
                    errors.push(e.to_string());
                }
            }
        }
        let wt = work_target(work);
        if errors.is_empty() {
            set_condition(
                &mut status.conditions,
                WORK_APPLIED,
                "True",
                conditions::REASON_APPLIED_SUCCESSFUL,
                conditions::MESSAGE_APPLIED_SUCCESSFUL,
                None,
            );
            // The statuses the work-status controller would report next, written now with the
            // condition (it writes again only when they change).
            if status.manifest_statuses.is_empty() {
                status.manifest_statuses = statuses;
            }
            self.write_status(work, &status, true).await?;
            self.recorder.normal(
                &wt,
                "SyncSucceed",
                format!(
                    "Sync work({}/{}) to cluster({cluster}) successful.",
                    work.metadata.namespace.as_deref().unwrap_or(""),
                    work.metadata.name.as_deref().unwrap_or("")
                ),
            );
            Ok(Requeue::No)
        } else {
            let message = format!(
                "Failed to apply all manifests ({}/{total}): {}",
                total - errors.len(),
                errors.join(", ")
            );
            set_condition(
                &mut status.conditions,
                WORK_APPLIED,
                "False",
                conditions::REASON_APPLIED_FAILED,
                &message,
                None,
            );
            self.write_status(work, &status, true).await?;
            let msg = format!(
                "Failed to sync work({}/{}) to cluster({cluster}), err: {}",
                work.metadata.namespace.as_deref().unwrap_or(""),
                work.metadata.name.as_deref().unwrap_or(""),
                errors.join(", ")
            );
            self.recorder.warning(&wt, "SyncFailed", msg.clone());
            Err(Error::msg(msg))
        }
    }

    /// tryCreateOrUpdateWorkload: returns the member object as it now is.
    async fn apply(
        &self,
        work: &CachedWork,
        cluster: &str,
        manifest: &CachedManifest,
    ) -> Result<Value> {
        let key = manifest.object_key();
        // A manifest Karmada has not applied yet is usually absent: try creating it first.
        let known = work.applied() || self.watcher.has_record(cluster, &key);
        let observed = if known {
            self.watcher.get(cluster, &key).await?
        } else {
            None
        };
        let observed = match observed {
            Some(o) => o,
            // The manifest's text goes out as it is: the create needs no parsed copy.
            None => match self.count_create(cluster, &key, manifest).await {
                Ok(created) => return Ok(created.to_value()?),
                Err(CreateError::Exists) => self
                    .watcher
                    .get(cluster, &key)
                    .await?
                    .ok_or_else(|| Error::msg(format!("{key} vanished in cluster {cluster}")))?,
                Err(CreateError::Other(e)) => return Err(e),
            },
        };
        let desired = manifest.to_value()?;
        let updated = self.watcher.update(cluster, &desired, &observed).await;
        count_update(&key, cluster, &updated);
        let (outcome, now) = updated?;
        if outcome == Outcome::Updated {
            tracing::debug!(%cluster, object = %key, "member object updated");
        }
        Ok(now.to_value()?)
    }

    /// Creates a member object and counts the attempt as Karmada does. One that is already
    /// there is not counted: Karmada would have found it in its member cache and updated it,
    /// and the update that follows is counted.
    async fn count_create(
        &self,
        cluster: &str,
        key: &ObjectKey,
        manifest: &CachedManifest,
    ) -> std::result::Result<RawObject, CreateError> {
        let created = self.watcher.create(cluster, &manifest.json()).await;
        if !matches!(created, Err(CreateError::Exists)) {
            metrics::count_create_resource_to_cluster(
                created.is_ok(),
                &key.api_version,
                &key.kind,
                cluster,
            );
        }
        created
    }

    /// handleWorkDelete: removes (or, when preserved, releases) the member objects.
    async fn handle_delete(
        &self,
        work: &CachedWork,
        cluster: &str,
        ready: bool,
        cluster_deleting: bool,
    ) -> Result<()> {
        if work.preserve() {
            return self.release(work, cluster).await;
        }
        if ready {
            for m in &work.spec.workload.manifests {
                let deleted = self.watcher.delete(cluster, &m.to_value()?).await;
                let key = m.object_key();
                metrics::count_delete_resource_from_cluster(
                    deleted.is_ok(),
                    &key.api_version,
                    &key.kind,
                    cluster,
                );
                deleted?;
            }
            Ok(())
        } else if !cluster_deleting {
            Err(Error::msg(format!("cluster({cluster}) not ready")))
        } else {
            // Unjoining an unreachable cluster must not hang on its objects.
            Ok(())
        }
    }

    /// cleanupPolicyClaimMetadata: the preserved member object loses Karmada's marks.
    async fn release(&self, work: &CachedWork, cluster: &str) -> Result<()> {
        for m in &work.spec.workload.manifests {
            let Some(observed) = self.watcher.get(cluster, &m.object_key()).await? else {
                continue;
            };
            let mut desired = m.to_value()?;
            if let Some(meta) = desired.get_mut("metadata").and_then(Value::as_object_mut) {
                for field in ["labels", "annotations"] {
                    if let Some(map) = meta.get_mut(field).and_then(Value::as_object_mut) {
                        let strip: &[&str] = if field == "labels" {
                            &[
                                labels::PROPAGATION_POLICY_PERMANENT_ID,
                                labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
                                labels::RESOURCE_BINDING_PERMANENT_ID,
                                labels::WORK_PERMANENT_ID,
                                labels::MANAGED_BY_KARMADA,
                            ]
                        } else {
                            &[
                                annotations::PROPAGATION_POLICY_NAMESPACE,
                                annotations::PROPAGATION_POLICY_NAME,
                                annotations::CLUSTER_PROPAGATION_POLICY_NAME,
                                annotations::MANAGED_ANNOTATIONS,
                                annotations::MANAGED_LABELS,
                                annotations::RESOURCE_BINDING_NAMESPACE,
                                annotations::RESOURCE_BINDING_NAME,
                                annotations::RESOURCE_TEMPLATE_UID,
                                annotations::RESOURCE_TEMPLATE_GENERATION,
                                annotations::WORK_NAME,
                                annotations::WORK_NAMESPACE,
                            ]
                        };
                        for k in strip {
                            map.remove(*k);
                        }
                    }
                }
            }
            let key = m.object_key();
            let updated = self.watcher.update(cluster, &desired, &observed).await;
            count_update(&key, cluster, &updated);
            updated?;
            self.watcher.forget(cluster, &key);
        }
        Ok(())
    }

    async fn remove_finalizer(&self, work: &CachedWork) -> Result<()> {
        let fins = work.metadata.finalizers.clone().unwrap_or_default();
        if !fins.iter().any(|f| f == finalizers::EXECUTION_CONTROLLER) {
            return Ok(());
        }
        let rest: Vec<String> = fins
            .into_iter()
            .filter(|f| f != finalizers::EXECUTION_CONTROLLER)
            .collect();
        let patch = json!({"metadata": {"finalizers": rest, "resourceVersion": work.metadata.resource_version}});
        let key = work.key();
        match Api::<Work>::namespaced(self.ctx.client.clone(), &key.namespace)
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Writes the Work's conditions (and, when `with_manifests`, its manifest statuses).
    async fn write_status(
        &self,
        work: &CachedWork,
        status: &karmada_api::work::v1alpha1::WorkStatus,
        with_manifests: bool,
    ) -> Result<()> {
        if work.status.same_as(status) {
            return Ok(());
        }
        let mut s = json!({"conditions": status.conditions});
        if with_manifests && !work.status.manifests_same_as(&status.manifest_statuses) {
            s["manifestStatuses"] = json!(status.manifest_statuses);
        }
        let key = work.key();
        let api = Api::<Work>::namespaced(self.ctx.client.clone(), &key.namespace);
        match merge_patch_status(api, &key.name, &json!({"status": s})).await {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// The object key of a manifest, for other controllers.
pub fn manifest_key(m: &RawObject) -> ObjectKey {
    m.object_key()
}

/// Counts an update sent (or not) to a member cluster, with Karmada's OperationResult (`none`
/// when it failed).
fn count_update<T>(key: &ObjectKey, cluster: &str, updated: &Result<(Outcome, T)>) {
    metrics::count_update_resource_to_cluster(
        updated.is_ok(),
        &key.api_version,
        &key.kind,
        cluster,
        updated
            .as_ref()
            .map_or(Outcome::Skipped.as_str(), |(o, _)| o.as_str()),
    );
}
