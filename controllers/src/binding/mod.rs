//! The binding controller (pkg/controllers/binding): turns each ResourceBinding and
//! ClusterResourceBinding into one Work per target cluster in `karmada-es-<cluster>`, with
//! replicas revised to the cluster's share, OverridePolicies and ClusterOverridePolicies
//! applied, and Karmada's labels and annotations; Works of clusters that left the result are
//! deleted, and a deleted binding takes its Works with it.

pub mod work;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::names;
use karmada_api::policy::v1alpha1::{
    ClusterOverridePolicy, OverridePolicy, ReplicaSchedulingType, ResourceSelector,
};
use karmada_api::well_known::{annotations, finalizers};
use karmada_api::work::v1alpha1::Work;
use karmada_api::work::v1alpha2::{ClusterResourceBinding, ResourceBinding, TargetCluster};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::detector::policy::{TemplateView, matches_any};
use crate::graceful_eviction::state_preservation::labels_to_inject;
use crate::interpreter;
use crate::overrides;
use crate::runtime::bindings::{Binding, existing_clusters, target_clusters};
use crate::runtime::context::BY_ID;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::precedence::Class;
use crate::runtime::{
    Change, Context, Error, Key, ObjectKey, RawObject, Requeue, Result, WorkQueue, is_not_found,
};

/// Events of this controller come from this component.
pub const COMPONENT: &str = "binding-controller";

/// Karmada's controller-runtime names of its ResourceBinding and ClusterResourceBinding
/// controllers, which this one controller serves.
const BINDING_CONTROLLER: &str = "binding-controller";
const CLUSTER_BINDING_CONTROLLER: &str = "cluster-resource-binding-controller";

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
}

/// Starts the binding controller for both binding kinds.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder(COMPONENT),
        queue: ctx.queue("binding", Class::Placement).reconciled_as(
            &[BINDING_CONTROLLER, CLUSTER_BINDING_CONTROLLER],
            |k: &Key| {
                if k.namespace.is_empty() {
                    CLUSTER_BINDING_CONTROLLER
                } else {
                    BINDING_CONTROLLER
                }
            },
        ),
        ctx: ctx.clone(),
    });
    c.register::<ResourceBinding>();
    c.register::<ClusterResourceBinding>();
    let c1 = c.clone();
    ctx.ops.on_change(move |ch| {
        let mut sel: Vec<&OverridePolicy> = vec![ch.object()];
        if let Change::Update(old, _) = ch {
            sel.push(old);
        }
        for op in sel {
            c1.enqueue_selected(
                op.metadata.namespace.as_deref(),
                &op.spec.resource_selectors,
            );
        }
    });
    let c2 = c.clone();
    ctx.cops.on_change(move |ch| {
        let mut sel: Vec<&ClusterOverridePolicy> = vec![ch.object()];
        if let Change::Update(old, _) = ch {
            sel.push(old);
        }
        for cop in sel {
            c2.enqueue_selected(None, &cop.spec.resource_selectors);
        }
    });
    // A Work deleted behind the binding's back is written again.
    let c3 = c.clone();
    ctx.works.on_change(move |ch| {
        if let Change::Delete(w) = ch
            && let Some(k) = w.binding()
        {
            c3.queue.add(k);
        }
    });
    let c4 = c.clone();
    vec![tokio::spawn(async move {
        c4.ctx.wait_synced().await;
        let c5 = c4.clone();
        let handles = c4
            .queue
            .run(c4.ctx.settings.concurrency.bindings(), move |k| {
                let c = c5.clone();
                async move {
                    if k.namespace.is_empty() {
                        c.reconcile::<ClusterResourceBinding>(k).await
                    } else {
                        c.reconcile::<ResourceBinding>(k).await
                    }
                }
            });
        for h in handles {
            let _ = h.await;
        }
    })]
}

/// The template a binding points at.
pub fn template_key(spec: &karmada_api::work::v1alpha2::ResourceBindingSpec) -> ObjectKey {
    let r = &spec.resource;
    ObjectKey::new(
        r.api_version.clone(),
        r.kind.clone(),
        r.namespace.clone(),
        r.name.clone(),
    )
}

/// A template from the cache, or from the API server when its informer has not seen it.
pub async fn fetch_template(ctx: &Context, key: &ObjectKey) -> Result<Option<Arc<RawObject>>> {
    if let Some(t) = ctx.template(key) {
        return Ok(Some(t));
    }
    let Some(r) = ctx.served_resource(&key.api_version, &key.kind) else {
        return Err(Error::msg(format!(
            "resource {} {} is not served",
            key.api_version, key.kind
        )));
    };
    let api: Api<RawObject> = if r.namespaced {
        Api::namespaced_with(ctx.client.clone(), &key.namespace, &r.api_resource())
    } else {
        Api::all_with(ctx.client.clone(), &r.api_resource())
    };
    Ok(api.get_opt(&key.name).await?.map(Arc::new))
}

impl Controller {
    fn register<B: Binding>(self: &Arc<Self>) {
        let c = self.clone();
        B::informer(&self.ctx).on_change(move |ch| match ch {
            Change::Add(b) => c.queue.add(b.key()),
            Change::Update(old, new) => {
                if old.meta().generation != new.meta().generation
                    || old.meta().deletion_timestamp != new.meta().deletion_timestamp
                {
                    c.queue.add(new.key());
                }
            }
            Change::Delete(_) => {}
        });
    }

    /// Enqueues the bindings whose templates an override policy selects (all of them, or all
    /// of its namespace, when it has no selectors).
    fn enqueue_selected(&self, namespace: Option<&str>, selectors: &[ResourceSelector]) {
        for b in self.ctx.rbs.list() {
            if namespace.is_some_and(|ns| b.metadata.namespace.as_deref() != Some(ns)) {
                continue;
            }
            if self.selected(&b.spec, selectors) {
                self.queue.add(b.key());
            }
        }
        if namespace.is_none() {
            for b in self.ctx.crbs.list() {
                if self.selected(&b.spec, selectors) {
                    self.queue.add(b.key());
                }
            }
        }
    }

    fn selected(
        &self,
        spec: &karmada_api::work::v1alpha2::ResourceBindingSpec,
        selectors: &[ResourceSelector],
    ) -> bool {
        if selectors.is_empty() {
            return true;
        }
        let Some(t) = self.ctx.template(&template_key(spec)) else {
            return false;
        };
        matches_any(
            &TemplateView {
                api_version: &t.api_version,
                kind: &t.kind,
                namespace: t.namespace(),
                name: t.name(),
                labels: t.metadata.labels.as_ref(),
            },
            selectors,
        )
    }

    async fn reconcile<B: Binding>(&self, key: Key) -> Result<Requeue> {
        let Some(b) = B::informer(&self.ctx).get(&key) else {
            return Ok(Requeue::No);
        };
        if b.meta().deletion_timestamp.is_some() {
            self.delete_works(b.id(), None).await?;
            self.remove_finalizer::<B>(&key, b.meta()).await?;
            return Ok(Requeue::No);
        }
        let targets = target_clusters(b.spec());
        let keep: HashSet<String> = existing_clusters(b.spec())
            .iter()
            .map(|c| names::execution_space_name(c))
            .collect();
        let removed = self.delete_works(b.id(), Some(&keep)).await?;
        let tkey = template_key(b.spec());
        let Some(template) = fetch_template(&self.ctx, &tkey).await? else {
            // The template is gone; its binding goes with it.
            return Ok(Requeue::No);
        };
        let rb_target = EventTarget::of(b.as_ref());
        let t_target = crate::detector::template_target(&template);
        let started = std::time::Instant::now();
        let ensured = self
            .ensure_works(b.as_ref(), &key, &template, &targets)
            .await;
        crate::metrics::registry().observe_duration(
            &crate::metrics::BINDING_SYNC_WORK_DURATION,
            &[crate::metrics::result(&ensured)],
            started.elapsed(),
        );
        match ensured {
            Ok(written) => {
                if written || removed {
                    let msg = format!("Sync work of {}({key}) successful.", B::KIND);
                    self.recorder
                        .normal(&rb_target, "SyncWorkSucceed", msg.clone());
                    self.recorder.normal(&t_target, "SyncWorkSucceed", msg);
                }
                Ok(Requeue::No)
            }
            Err(e) => {
                self.recorder
                    .warning(&rb_target, "SyncWorkFailed", e.to_string());
                self.recorder
                    .warning(&t_target, "SyncWorkFailed", e.to_string());
                Err(e)
            }
        }
    }

    /// Deletes the binding's Works, except those in `keep` (execution namespaces). Returns
    /// whether any was deleted.
    async fn delete_works(&self, id: &str, keep: Option<&HashSet<String>>) -> Result<bool> {
        if id.is_empty() {
            return Ok(false);
        }
        let mut any = false;
        for w in self.ctx.works.by_index(BY_ID, id) {
            let ns = w.metadata.namespace.clone().unwrap_or_default();
            if keep.is_some_and(|k| k.contains(&ns)) || w.deleting() {
                continue;
            }
            let name = w.metadata.name.clone().unwrap_or_default();
            match Api::<Work>::namespaced(self.ctx.client.clone(), &ns)
                .delete(&name, &DeleteParams::default())
                .await
            {
                Ok(_) => any = true,
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(any)
    }

    async fn remove_finalizer<B: Binding>(&self, key: &Key, meta: &ObjectMeta) -> Result<()> {
        let fins = meta.finalizers.clone().unwrap_or_default();
        if !fins.iter().any(|f| f == B::FINALIZER) {
            return Ok(());
        }
        let rest: Vec<String> = fins.into_iter().filter(|f| f != B::FINALIZER).collect();
        let patch =
            json!({"metadata": {"finalizers": rest, "resourceVersion": meta.resource_version}});
        match B::api(self.ctx.client.clone(), key)
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// ensureWork: writes one Work per target cluster. Returns whether any was written.
    async fn ensure_works<B: Binding>(
        &self,
        b: &B,
        key: &Key,
        template: &RawObject,
        targets: &[TargetCluster],
    ) -> Result<bool> {
        let spec = b.spec();
        let workload = template.to_value()?;
        let is_workload =
            spec.replicas > 0 || spec.replica_requirements.is_some() || !spec.components.is_empty();
        let completions = job_completions(&workload, spec, targets)?;
        let ns = template.namespace();
        let ops: Vec<OverridePolicy> = if ns.is_empty() {
            Vec::new()
        } else {
            self.ctx
                .ops
                .list()
                .iter()
                .filter(|o| o.metadata.namespace.as_deref() == Some(ns))
                .map(|o| (**o).clone())
                .collect()
        };
        let cops: Vec<ClusterOverridePolicy> =
            self.ctx.cops.list().iter().map(|o| (**o).clone()).collect();
        let mut errors = Vec::new();
        let mut written = false;
        for target in targets {
            match self
                .ensure_work(
                    b,
                    key,
                    template,
                    &workload,
                    target,
                    is_workload,
                    completions.as_deref(),
                    labels_to_inject(spec, target, targets.len()),
                    &ops,
                    &cops,
                )
                .await
            {
                Ok(w) => written |= w,
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.is_empty() {
            Ok(written)
        } else {
            Err(Error::msg(errors.join("; ")))
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn ensure_work<B: Binding>(
        &self,
        b: &B,
        key: &Key,
        template: &RawObject,
        workload: &Value,
        target: &TargetCluster,
        is_workload: bool,
        completions: Option<&[TargetCluster]>,
        preserved_labels: Option<&BTreeMap<String, String>>,
        ops: &[OverridePolicy],
        cops: &[ClusterOverridePolicy],
    ) -> Result<bool> {
        let spec = b.spec();
        let mut obj = workload.clone();
        if is_workload
            && self.ctx.interpreter.hook_enabled(
                &template.api_version,
                &template.kind,
                lua::Operation::ReviseReplica,
            )
        {
            obj = self
                .ctx
                .interpreter
                .revise_replica(&obj, i64::from(target.replicas))
                .await
                .map_err(|e| {
                    Error::msg(format!(
                        "failed to revise replicas for cluster {}: {e}",
                        target.name
                    ))
                })?;
        }
        if let Some(completions) = completions {
            let Some(c) = completions.iter().find(|c| c.name == target.name) else {
                return Err(Error::msg(format!(
                    "no completions found for cluster {}",
                    target.name
                )));
            };
            obj = interpreter::revise_job_completions(&obj, i64::from(c.replicas))
                .map_err(|e| Error::msg(e.to_string()))?;
        }
        let cluster = self
            .ctx
            .clusters
            .get(&Key::cluster(target.name.clone()))
            .ok_or_else(|| Error::msg(format!("cluster {} not found", target.name)))?;
        let applied = overrides::apply_overrides(&obj, &cluster, cops, ops).map_err(|e| {
            Error::msg(format!(
                "failed to apply overrides for cluster {}: {e}",
                target.name
            ))
        })?;
        let mut obj = applied.object;
        // StatefulFailoverInjection: the state kept from the cluster the workload left.
        for (k, v) in preserved_labels.into_iter().flatten() {
            work::set_label(&mut obj, k, v);
        }

        // mergeLabel / mergeAnnotations: the workload and the Work both point at the binding.
        let id = b.id().to_owned();
        work::set_label(&mut obj, B::ID_LABEL, &id);
        let mut work_labels = BTreeMap::new();
        work_labels.insert(B::ID_LABEL.to_owned(), id);
        if template.generation() > 0 {
            work::set_annotation(
                &mut obj,
                annotations::RESOURCE_TEMPLATE_GENERATION,
                &template.generation().to_string(),
            );
        }
        let mut work_annotations = BTreeMap::new();
        for (k, v) in B::work_annotations(key) {
            work::set_annotation(&mut obj, k, &v);
            work_annotations.insert(k.to_owned(), v);
        }
        // mergeConflictResolution: the template's annotation wins over the binding's field.
        let cr = match template.annotation(annotations::CONFLICT_RESOLUTION) {
            Some(
                v @ (annotations::CONFLICT_RESOLUTION_OVERWRITE
                | annotations::CONFLICT_RESOLUTION_ABORT),
            ) => v,
            _ => {
                if spec.conflict_resolution
                    == Some(karmada_api::policy::v1alpha1::ConflictResolution::Overwrite)
                {
                    annotations::CONFLICT_RESOLUTION_OVERWRITE
                } else {
                    annotations::CONFLICT_RESOLUTION_ABORT
                }
            }
        };
        work_annotations.insert(annotations::CONFLICT_RESOLUTION.to_owned(), cr.to_owned());
        if let Some(a) = applied.applied_cluster_overrides {
            work_annotations.insert(annotations::APPLIED_CLUSTER_OVERRIDES.to_owned(), a);
        }
        if let Some(a) = applied.applied_overrides {
            work_annotations.insert(annotations::APPLIED_OVERRIDES.to_owned(), a);
        }
        let meta = ObjectMeta {
            name: Some(names::work_name(
                &template.kind,
                template.name(),
                template.namespace(),
            )),
            namespace: Some(names::execution_space_name(&target.name)),
            finalizers: Some(vec![finalizers::EXECUTION_CONTROLLER.to_owned()]),
            labels: Some(work_labels),
            annotations: Some(work_annotations),
            ..Default::default()
        };
        let manifest = work::prepare_manifest(obj, &meta);
        let suspend = suspend_dispatching(spec, &target.name);
        let preserve = spec.preserve_resources_on_deletion.unwrap_or(false);
        work::create_or_update(&self.ctx, &meta, &manifest, Some(suspend), Some(preserve)).await
    }
}

/// shouldSuspendDispatching.
fn suspend_dispatching(
    spec: &karmada_api::work::v1alpha2::ResourceBindingSpec,
    cluster: &str,
) -> bool {
    let Some(s) = &spec.suspension else {
        return false;
    };
    if s.policy.dispatching == Some(true) {
        return true;
    }
    s.policy
        .dispatching_on_clusters
        .as_ref()
        .is_some_and(|c| c.cluster_names.iter().any(|n| n == cluster))
}

/// For a Divided Job with `spec.completions`, the completions each cluster runs
/// (needReviseJobCompletions, divideReplicasByJobCompletions).
fn job_completions(
    workload: &Value,
    spec: &karmada_api::work::v1alpha2::ResourceBindingSpec,
    targets: &[TargetCluster],
) -> Result<Option<Vec<TargetCluster>>> {
    if workload["kind"] != "Job" || spec.replicas <= 0 {
        return Ok(None);
    }
    let divided = spec
        .placement
        .as_ref()
        .is_some_and(|p| p.replica_scheduling_type() == ReplicaSchedulingType::Divided);
    if !divided {
        return Ok(None);
    }
    interpreter::divide_job_completions(workload, targets).map_err(|e| Error::msg(e.to_string()))
}
