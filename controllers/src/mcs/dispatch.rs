//! The EndpointSlice dispatch controller
//! (pkg/controllers/multiclusterservice/endpointslice_dispatch_controller.go): every
//! EndpointSlice collected from a provider of a MultiClusterService is sent, through a Work of
//! the same name in each consumer's execution space, to every Ready consumer cluster other
//! than the provider, as `<provider>-<slice>` labelled `kubernetes.io/service-name: <service>`
//! and managed by `endpointslice-dispatch-controller.karmada.io`, annotated with its provision
//! cluster. Consumers that stop being consumers lose what was dispatched to them; a collected
//! slice that goes takes its dispatched copies with it. `status.conditions` of the
//! MultiClusterService gets `EndpointSliceDispatched`.
//!
//! Beyond Karmada: a provider whose Cluster lists TrafficControl in `remedyActions` is out of
//! traffic, and its endpoints are withdrawn from the consumers until the action is lifted.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::names;
use karmada_api::networking::v1alpha1::{ENDPOINT_SLICE_DISPATCHED_CONDITION, MultiClusterService};
use karmada_api::well_known::finalizers;
use karmada_api::work::v1alpha1::Work;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::multi_cluster_service::{self, Cache, consumers, set_condition, target};
use super::{
    ENDPOINTSLICE_DISPATCH_CONTROLLER_VALUE, LABEL_MANAGED_BY, LABEL_SERVICE_NAME,
    MCS_DISPATCH_FINALIZER, MCS_NAME_LABEL, MCS_NAMESPACE_LABEL, PROVISION_CLUSTER_ANNOTATION,
    SERVICE_NAME_LABEL, out_of_traffic,
};
use crate::binding::work::{create_or_update, prepare_manifest};
use crate::runtime::events::Recorder;
use crate::runtime::precedence::Class;
use crate::runtime::{
    CachedWork, Change, Context, Error, Key, Requeue, Result, WorkQueue, is_conflict, is_not_found,
};

/// Karmada's controller name.
pub const NAME: &str = "endpointslice-dispatch-controller";

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A Work collected from a provider (not one dispatched to a consumer).
fn collected(w: &CachedWork) -> bool {
    w.annotations.get(PROVISION_CLUSTER_ANNOTATION).is_none()
}

fn holds_slice(w: &CachedWork) -> bool {
    w.spec
        .workload
        .manifests
        .iter()
        .any(|m| m.kind() == "EndpointSlice")
}

/// The collected Works of a MultiClusterService.
fn collected_works(ctx: &Context, namespace: &str, name: &str) -> Vec<Arc<CachedWork>> {
    ctx.works
        .list()
        .into_iter()
        .filter(|w| {
            w.labels.get(MCS_NAME_LABEL) == Some(name)
                && w.labels.get(MCS_NAMESPACE_LABEL) == Some(namespace)
        })
        .collect()
}

struct Controller {
    ctx: Arc<Context>,
    cache: Cache,
    recorder: Recorder,
}

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let queue: WorkQueue<Key> = ctx.queue("endpointslice-dispatch", Class::Status);
    let cache: Cache = Arc::default();
    let q = queue.clone();
    ctx.works.on_change(move |ch| {
        let w = ch.object();
        let wanted = match ch {
            Change::Add(_) | Change::Delete(_) => w.labels.get(MCS_NAME_LABEL).is_some(),
            Change::Update(_, _) => {
                w.labels.get(MCS_NAME_LABEL).is_some() || w.labels.get(SERVICE_NAME_LABEL).is_some()
            }
        };
        if wanted && collected(w) {
            q.add(w.key());
        }
    });
    let (q, c) = (queue.clone(), ctx.clone());
    let mut tasks = vec![multi_cluster_service::watch(
        &ctx,
        cache.clone(),
        move |k| {
            q.add_all(
                collected_works(&c, &k.namespace, &k.name)
                    .iter()
                    .filter(|w| collected(w))
                    .map(|w| w.key()),
            );
        },
    )];
    // A consumer joining, recovering or leaving; a provider going out of traffic or back.
    let (q, c, mcs) = (queue.clone(), ctx.clone(), cache.clone());
    ctx.clusters.on_change(move |ch| {
        if !super::traffic_changed(ch) {
            return;
        }
        let keys: Vec<Key> = lock(&mcs).keys().cloned().collect();
        for k in keys {
            q.add_all(
                collected_works(&c, &k.namespace, &k.name)
                    .iter()
                    .filter(|w| collected(w))
                    .map(|w| w.key()),
            );
        }
    });
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder(NAME),
        cache,
        ctx: ctx.clone(),
    });
    let workers = ctx.settings.concurrency.work;
    tasks.push(crate::runtime::run_after_sync(
        ctx,
        queue,
        workers,
        move |key| {
            let c = c.clone();
            async move { c.reconcile(key).await }
        },
    ));
    tasks
}

impl Controller {
    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let Some(work) = self.ctx.works.get(&key) else {
            return Ok(Requeue::No);
        };
        if !holds_slice(&work) || !collected(&work) {
            return Ok(Requeue::No);
        }
        let Some(source) = work.cluster().map(str::to_owned) else {
            return Ok(Requeue::No);
        };
        let mcs_name = work.labels.get(MCS_NAME_LABEL).map(str::to_owned);
        let Some(mcs_name) = mcs_name.filter(|_| !work.deleting()) else {
            self.withdraw(&work, &source, None).await?;
            self.remove_finalizer(&work).await?;
            return Ok(Requeue::No);
        };
        let mcs_ns = work
            .labels
            .get(MCS_NAMESPACE_LABEL)
            .unwrap_or_default()
            .to_owned();
        let Some(mcs) = lock(&self.cache)
            .get(&Key::new(&mcs_ns, &mcs_name))
            .cloned()
        else {
            return Ok(Requeue::No);
        };
        match self.dispatch(&work, &source, &mcs).await {
            Ok(()) => {
                set_condition(
                    &self.ctx,
                    &mcs,
                    ENDPOINT_SLICE_DISPATCHED_CONDITION,
                    "True",
                    "EndpointSliceDispatchedSucceed",
                    "EndpointSlice are dispatched successfully",
                )
                .await?;
                self.recorder.normal(
                    &target(&mcs),
                    "DispatchEndpointSliceSucceed",
                    "EndpointSlice are dispatched successfully",
                );
                Ok(Requeue::No)
            }
            Err(e) => {
                set_condition(
                    &self.ctx,
                    &mcs,
                    ENDPOINT_SLICE_DISPATCHED_CONDITION,
                    "False",
                    "EndpointSliceDispatchedFailed",
                    &e.to_string(),
                )
                .await?;
                self.recorder
                    .warning(&target(&mcs), "DispatchEndpointSliceFailed", e.to_string());
                Err(e)
            }
        }
    }

    /// cleanOrphanDispatchedEndpointSlice and dispatchEndpointSlice.
    async fn dispatch(
        &self,
        work: &CachedWork,
        source: &str,
        mcs: &MultiClusterService,
    ) -> Result<()> {
        let consumers = consumers(&self.ctx, mcs);
        let source_cluster = self.ctx.clusters.get(&Key::cluster(source));
        if source_cluster.as_deref().is_some_and(out_of_traffic) {
            // Every consumer loses this provider's endpoints.
            return self.withdraw(work, source, None).await;
        }
        // Dispatched copies in clusters that are no longer consumers.
        self.withdraw(work, source, Some(&consumers)).await?;
        let Some(manifest) = work.spec.workload.manifests.first() else {
            return Ok(());
        };
        let mut slice = manifest.to_value()?;
        let slice_name = slice
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if let Some(meta) = slice.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("name".into(), json!(format!("{source}-{slice_name}")));
            meta.insert(
                "labels".into(),
                json!({
                    LABEL_SERVICE_NAME: mcs.metadata.name,
                    LABEL_MANAGED_BY: ENDPOINTSLICE_DISPATCH_CONTROLLER_VALUE,
                }),
            );
            meta.insert(
                "annotations".into(),
                json!({PROVISION_CLUSTER_ANNOTATION: source}),
            );
        }
        let work_name = work.metadata.name.clone().unwrap_or_default();
        for consumer in &consumers {
            if consumer == source {
                continue;
            }
            let Some(c) = self.ctx.clusters.get(&Key::cluster(consumer)) else {
                self.recorder.warning(
                    &target(mcs),
                    "ClusterNotFound",
                    format!("Consumer cluster {consumer} is not found"),
                );
                continue;
            };
            if !crate::runtime::cluster_ready(&c) {
                self.recorder.warning(
                    &target(mcs),
                    "SyncServiceFailed",
                    format!(
                        "Consumer cluster {consumer} is not ready, skip to propagate EndpointSlice"
                    ),
                );
                continue;
            }
            let meta = ObjectMeta {
                name: Some(work_name.clone()),
                namespace: Some(names::execution_space_name(consumer)),
                finalizers: Some(vec![finalizers::EXECUTION_CONTROLLER.into()]),
                annotations: Some(BTreeMap::from([(
                    PROVISION_CLUSTER_ANNOTATION.to_owned(),
                    source.to_owned(),
                )])),
                labels: Some(BTreeMap::from([
                    (
                        MCS_NAME_LABEL.to_owned(),
                        mcs.metadata.name.clone().unwrap_or_default(),
                    ),
                    (
                        MCS_NAMESPACE_LABEL.to_owned(),
                        mcs.metadata.namespace.clone().unwrap_or_default(),
                    ),
                ])),
                ..ObjectMeta::default()
            };
            let manifest = prepare_manifest(slice.clone(), &meta);
            create_or_update(&self.ctx, &meta, &manifest, None, None).await?;
        }
        Ok(())
    }

    /// The Works dispatched from this collected Work, in every consumer (`keep: None`, as
    /// cleanupEndpointSliceFromConsumerClusters) or in clusters not in `keep`.
    async fn withdraw(
        &self,
        work: &CachedWork,
        source: &str,
        keep: Option<&std::collections::BTreeSet<String>>,
    ) -> Result<()> {
        let name = work.metadata.name.clone().unwrap_or_default();
        for c in self.ctx.clusters.list() {
            let cluster = c.metadata.name.clone().unwrap_or_default();
            if keep.is_some_and(|k| k.contains(&cluster)) {
                continue;
            }
            let es = names::execution_space_name(&cluster);
            let Some(d) = self.ctx.works.get(&Key::new(&es, &name)) else {
                continue;
            };
            if d.annotations.get(PROVISION_CLUSTER_ANNOTATION) != Some(source) {
                continue;
            }
            let api: Api<Work> = Api::namespaced(self.ctx.client.clone(), &es);
            match api.delete(&name, &DeleteParams::default()).await {
                Err(e) if !is_not_found(&e) => return Err(e.into()),
                _ => {}
            }
        }
        Ok(())
    }

    async fn remove_finalizer(&self, work: &CachedWork) -> Result<()> {
        let list: Vec<&String> = work.metadata.finalizers.iter().flatten().collect();
        if !list.iter().any(|f| *f == MCS_DISPATCH_FINALIZER) {
            return Ok(());
        }
        let kept: Vec<&String> = list
            .into_iter()
            .filter(|f| *f != MCS_DISPATCH_FINALIZER)
            .collect();
        let key = work.key();
        let api: Api<Work> = Api::namespaced(self.ctx.client.clone(), &key.namespace);
        let patch = json!({"metadata": {
            "finalizers": kept,
            "resourceVersion": work.metadata.resource_version,
        }});
        match api
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) if is_conflict(&e) => Err(Error::msg(format!("work {key} changed; retrying"))),
            other => other.map(|_| ()).map_err(Into::into),
        }
    }
}
