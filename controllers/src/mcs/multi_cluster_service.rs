//! The MultiClusterService controller (pkg/controllers/multiclusterservice/mcs_controller.go):
//! for a MultiClusterService with `types: [CrossCluster]`, each Ready provider cluster gets a
//! suspended Work holding the MultiClusterService (which starts the EndpointSlice collection
//! there), and the Service of the same name is claimed (`resourcetemplate.karmada.io/claimed-by:
//! MultiClusterService`, so no policy propagates it) and propagated by a ResourceBinding of its
//! own to every provider and consumer cluster. `status.conditions` gets `ServiceApplied`. When
//! the MultiClusterService goes, or stops being CrossCluster, its Works go and the Service is
//! released to the policies.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use karmada_api::names;
use karmada_api::networking::v1alpha1::{
    MultiClusterService, NAME_ANNOTATION, NAMESPACE_ANNOTATION, PERMANENT_ID_LABEL,
    SERVICE_APPLIED_CONDITION,
};
use karmada_api::policy::v1alpha1::{ClusterAffinity, ConflictResolution, Placement};
use karmada_api::well_known::{annotations, finalizers, labels};
use karmada_api::work::v1alpha1::Work;
use karmada_api::work::v1alpha2::{ObjectReference, ResourceBinding, ResourceBindingSpec};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use super::{
    MCS_CONTROLLER_FINALIZER, MCS_NAME_LABEL, MCS_NAMESPACE_LABEL, MULTI_CLUSTER_SERVICE_KIND,
    NETWORKING_API_VERSION,
};
use crate::binding::work::{create_or_update, prepare_manifest};
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::precedence::Class;
use crate::runtime::{
    Context, Error, Key, Requeue, Result, WorkQueue, is_already_exists, is_conflict, is_not_found,
};

/// Karmada's controller name.
pub const NAME: &str = "multiclusterservice-controller";

/// The MultiClusterServices, as last seen.
pub(crate) type Cache = Arc<Mutex<HashMap<Key, Arc<MultiClusterService>>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Watches MultiClusterServices into `cache`, calling `changed` with each key that changes.
pub(crate) fn watch(
    ctx: &Arc<Context>,
    cache: Cache,
    changed: impl Fn(&Key) + Send + 'static,
) -> JoinHandle<()> {
    let api: Api<MultiClusterService> = Api::all(ctx.client.clone());
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        let mut listed: Vec<Key> = Vec::new();
        while let Some(ev) = futures::StreamExt::next(&mut stream).await {
            let key =
                |m: &MultiClusterService| Key::new(m.namespace().unwrap_or_default(), m.name_any());
            match ev {
                Ok(watcher::Event::Init) => listed.clear(),
                Ok(watcher::Event::InitApply(m)) => {
                    let k = key(&m);
                    listed.push(k.clone());
                    lock(&cache).insert(k.clone(), Arc::new(m));
                    changed(&k);
                }
                Ok(watcher::Event::InitDone) => {
                    let gone: Vec<Key> = {
                        let mut c = lock(&cache);
                        let gone = c.keys().filter(|k| !listed.contains(k)).cloned().collect();
                        c.retain(|k, _| listed.contains(k));
                        gone
                    };
                    for k in gone {
                        changed(&k);
                    }
                }
                Ok(watcher::Event::Apply(m)) => {
                    let k = key(&m);
                    lock(&cache).insert(k.clone(), Arc::new(m));
                    changed(&k);
                }
                Ok(watcher::Event::Delete(m)) => {
                    let k = key(&m);
                    lock(&cache).remove(&k);
                    changed(&k);
                }
                Err(e) => tracing::debug!(error = %e, "MultiClusterService watch failed"),
            }
        }
    })
}

/// The provider clusters: those named, or every cluster (`GetProviderClusters`).
pub(crate) fn providers(ctx: &Context, mcs: &MultiClusterService) -> BTreeSet<String> {
    named_or_all(ctx, &mcs.spec.provider_clusters)
}

/// The consumer clusters: those named, or every cluster (`GetConsumerClusters`).
pub(crate) fn consumers(ctx: &Context, mcs: &MultiClusterService) -> BTreeSet<String> {
    named_or_all(ctx, &mcs.spec.consumer_clusters)
}

fn named_or_all(
    ctx: &Context,
    list: &[karmada_api::networking::v1alpha1::ClusterSelector],
) -> BTreeSet<String> {
    if list.is_empty() {
        ctx.clusters.list().iter().map(|c| c.name_any()).collect()
    } else {
        list.iter().map(|c| c.name.clone()).collect()
    }
}

/// The event target of a MultiClusterService.
pub(crate) fn target(mcs: &MultiClusterService) -> EventTarget {
    EventTarget {
        api_version: NETWORKING_API_VERSION.into(),
        kind: MULTI_CLUSTER_SERVICE_KIND.into(),
        namespace: mcs.namespace().unwrap_or_default(),
        name: mcs.name_any(),
        uid: mcs.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Sets one condition of a MultiClusterService's status (`meta.SetStatusCondition`: the
/// transition time changes only with the status).
pub(crate) async fn set_condition(
    ctx: &Context,
    mcs: &MultiClusterService,
    kind: &str,
    status: &str,
    reason: &str,
    message: &str,
) -> Result<()> {
    let mut conditions = mcs.status.conditions.clone().unwrap_or_default();
    let changed =
        crate::runtime::set_condition(&mut conditions, kind, status, reason, message, None);
    if !changed {
        return Ok(());
    }
    let api: Api<MultiClusterService> =
        Api::namespaced(ctx.client.clone(), &mcs.namespace().unwrap_or_default());
    let patch = json!({"status": {"conditions": conditions}});
    match api
        .patch_status(
            &mcs.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Err(e) if is_not_found(&e) => Ok(()),
        other => other.map(|_| ()).map_err(Into::into),
    }
}

struct Controller {
    ctx: Arc<Context>,
    cache: Cache,
    recorder: Recorder,
}

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let queue: WorkQueue<Key> = ctx.queue("multiclusterservice", Class::Placement);
    let cache: Cache = Arc::default();
    let q = queue.clone();
    let mut tasks = vec![watch(&ctx, cache.clone(), move |k| q.add(k.clone()))];
    // A cluster joining, leaving or changing readiness changes the provider and consumer sets.
    let (q, c) = (queue.clone(), cache.clone());
    ctx.clusters.on_change(move |ch| {
        if super::traffic_changed(ch) {
            q.add_all(lock(&c).keys().cloned());
        }
    });
    // The Service coming after its MultiClusterService, or changing.
    let (q, c, client) = (queue.clone(), cache.clone(), ctx.client.clone());
    tasks.push(tokio::spawn(async move {
        let stream =
            watcher(Api::<Service>::all(client), watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = futures::StreamExt::next(&mut stream).await {
            if let Ok(watcher::Event::Apply(s) | watcher::Event::InitApply(s)) = ev {
                let k = Key::new(s.namespace().unwrap_or_default(), s.name_any());
                if lock(&c).contains_key(&k) {
                    q.add(k);
                }
            }
        }
    }));
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
        let Some(mcs) = lock(&self.cache).get(&key).cloned() else {
            return Ok(Requeue::No);
        };
        let has_finalizer = mcs
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == MCS_CONTROLLER_FINALIZER);
        if mcs.metadata.deletion_timestamp.is_some() || !mcs.cross_cluster() {
            if mcs.metadata.deletion_timestamp.is_some() || has_finalizer {
                if let Err(e) = self.release(&mcs, &BTreeSet::new()).await {
                    self.recorder.warning(
                        &target(&mcs),
                        "SyncServiceFailed",
                        format!("failed to delete service work :{e}"),
                    );
                    return Err(e);
                }
                self.set_finalizer(&mcs, false).await?;
            }
            return Ok(Requeue::No);
        }
        match self.propagate(&mcs, has_finalizer).await {
            Ok(()) => {
                set_condition(
                    &self.ctx,
                    &mcs,
                    SERVICE_APPLIED_CONDITION,
                    "True",
                    "ServiceAppliedSucceed",
                    "Service is propagated to target clusters.",
                )
                .await?;
                self.recorder.normal(
                    &target(&mcs),
                    "SyncServiceSucceed",
                    "Service is propagated to target clusters.",
                );
                Ok(Requeue::No)
            }
            Err(e) => {
                set_condition(
                    &self.ctx,
                    &mcs,
                    SERVICE_APPLIED_CONDITION,
                    "False",
                    "ServiceAppliedFailed",
                    &e.to_string(),
                )
                .await?;
                self.recorder
                    .warning(&target(&mcs), "SyncServiceFailed", e.to_string());
                Err(e)
            }
        }
    }

    async fn set_finalizer(&self, mcs: &MultiClusterService, on: bool) -> Result<()> {
        let mut list: Vec<String> = mcs.metadata.finalizers.clone().unwrap_or_default();
        let has = list.iter().any(|f| f == MCS_CONTROLLER_FINALIZER);
        if has == on {
            return Ok(());
        }
        if on {
            list.push(MCS_CONTROLLER_FINALIZER.into());
        } else {
            list.retain(|f| f != MCS_CONTROLLER_FINALIZER);
        }
        let api: Api<MultiClusterService> = Api::namespaced(
            self.ctx.client.clone(),
            &mcs.namespace().unwrap_or_default(),
        );
        let patch = json!({"metadata": {
            "finalizers": list,
            "resourceVersion": mcs.metadata.resource_version,
        }});
        match api
            .patch(
                &mcs.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
        {
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) if is_conflict(&e) => Err(Error::msg(format!(
                "multiclusterservice {} changed; retrying",
                mcs.name_any()
            ))),
            other => other.map(|_| ()).map_err(Into::into),
        }
    }

    /// handleMultiClusterServiceCreateOrUpdate for CrossCluster.
    async fn propagate(&self, mcs: &MultiClusterService, has_finalizer: bool) -> Result<()> {
        if !has_finalizer {
            self.set_finalizer(mcs, true).await?;
        }
        let providers = providers(&self.ctx, mcs);
        let consumers = consumers(&self.ctx, mcs);
        self.propagate_mcs(mcs, &providers).await?;
        self.remove_works(mcs, &providers).await?;
        let namespace = mcs.namespace().unwrap_or_default();
        let services: Api<Service> = Api::namespaced(self.ctx.client.clone(), &namespace);
        let svc = services.get(&mcs.name_any()).await?;
        self.claim_service(&services, &svc, mcs).await?;
        self.bind_service(&svc, mcs, providers.union(&consumers).cloned().collect())
            .await
    }

    /// propagateMultiClusterService: the suspended Work in each Ready provider cluster.
    async fn propagate_mcs(
        &self,
        mcs: &MultiClusterService,
        providers: &BTreeSet<String>,
    ) -> Result<()> {
        let namespace = mcs.namespace().unwrap_or_default();
        for cluster in providers {
            let Some(c) = self.ctx.clusters.get(&Key::cluster(cluster)) else {
                self.recorder.warning(
                    &target(mcs),
                    "ClusterNotFound",
                    format!("Provider cluster {cluster} is not found"),
                );
                continue;
            };
            if !crate::runtime::cluster_ready(&c) {
                self.recorder.warning(
                    &target(mcs),
                    "SyncServiceFailed",
                    format!(
                        "Provider cluster {cluster} is not ready, skip to propagate MultiClusterService"
                    ),
                );
                continue;
            }
            let meta = ObjectMeta {
                name: Some(names::work_name(
                    MULTI_CLUSTER_SERVICE_KIND,
                    &mcs.name_any(),
                    &namespace,
                )),
                namespace: Some(names::execution_space_name(cluster)),
                labels: Some(BTreeMap::from([
                    (PERMANENT_ID_LABEL.to_owned(), permanent_id(mcs).to_owned()),
                    (MCS_NAMESPACE_LABEL.to_owned(), namespace.clone()),
                    (MCS_NAME_LABEL.to_owned(), mcs.name_any()),
                ])),
                ..ObjectMeta::default()
            };
            let manifest = prepare_manifest(serde_json::to_value(mcs)?, &meta);
            create_or_update(&self.ctx, &meta, &manifest, Some(true), None).await?;
        }
        Ok(())
    }

    /// retrieveMultiClusterService: the Works of clusters no longer providers.
    async fn remove_works(&self, mcs: &MultiClusterService, keep: &BTreeSet<String>) -> Result<()> {
        let id = permanent_id(mcs);
        let name = names::work_name(
            MULTI_CLUSTER_SERVICE_KIND,
            &mcs.name_any(),
            &mcs.namespace().unwrap_or_default(),
        );
        for c in self.ctx.clusters.list() {
            let cluster = c.name_any();
            if keep.contains(&cluster) {
                continue;
            }
            let es = names::execution_space_name(&cluster);
            let Some(w) = self.ctx.works.get(&Key::new(&es, &name)) else {
                continue;
            };
            if w.labels.get(PERMANENT_ID_LABEL) != Some(id) {
                continue;
            }
            let api: Api<Work> = Api::namespaced(self.ctx.client.clone(), &es);
            match api.delete(&name, &DeleteParams::default()).await {
                Err(e) if !is_not_found(&e) => return Err(e.into()),
                _ => {}
            }
        }
        // Works in execution spaces of clusters that already left go with their namespace.
        Ok(())
    }

    /// The Service back to the policies, and its binding no longer the MultiClusterService's
    /// (`retrieveService` and `retrieveMultiClusterService` with no provider).
    async fn release(&self, mcs: &MultiClusterService, keep: &BTreeSet<String>) -> Result<()> {
        let namespace = mcs.namespace().unwrap_or_default();
        let services: Api<Service> = Api::namespaced(self.ctx.client.clone(), &namespace);
        if let Some(svc) = services.get_opt(&mcs.name_any()).await? {
            let claimed = svc
                .labels()
                .get(labels::RESOURCE_TEMPLATE_CLAIMED_BY)
                .is_some()
                || svc.labels().get(PERMANENT_ID_LABEL).is_some();
            if claimed {
                let patch = json!({"metadata": {"labels": {
                    labels::RESOURCE_TEMPLATE_CLAIMED_BY: null,
                    PERMANENT_ID_LABEL: null,
                }}});
                services
                    .patch(
                        &svc.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await?;
            }
            let rbs: Api<ResourceBinding> = Api::namespaced(self.ctx.client.clone(), &namespace);
            let rb_name = names::binding_name("Service", &svc.name_any());
            if rbs.get_opt(&rb_name).await?.is_some() {
                let patch = json!({"metadata": {
                    "annotations": {NAME_ANNOTATION: null, NAMESPACE_ANNOTATION: null},
                    "labels": {labels::BINDING_MANAGED_BY: null, PERMANENT_ID_LABEL: null},
                }});
                match rbs
                    .patch(&rb_name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Err(e) if !is_not_found(&e) => return Err(e.into()),
                    _ => {}
                }
            }
        }
        self.remove_works(mcs, keep).await
    }

    /// claimMultiClusterServiceForService.
    async fn claim_service(
        &self,
        services: &Api<Service>,
        svc: &Service,
        mcs: &MultiClusterService,
    ) -> Result<()> {
        let id = permanent_id(mcs);
        let labels_now = svc.labels();
        let annotations_now = svc.annotations();
        if labels_now
            .get(labels::RESOURCE_TEMPLATE_CLAIMED_BY)
            .map(String::as_str)
            == Some(MULTI_CLUSTER_SERVICE_KIND)
            && labels_now.get(PERMANENT_ID_LABEL).map(String::as_str) == Some(id)
            && annotations_now.get(NAME_ANNOTATION) == Some(&mcs.name_any())
            && !labels_now.contains_key(labels::PROPAGATION_POLICY_PERMANENT_ID)
            && !labels_now.contains_key(labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID)
        {
            return Ok(());
        }
        let patch = json!({"metadata": {
            "labels": {
                labels::PROPAGATION_POLICY_PERMANENT_ID: null,
                labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID: null,
                labels::RESOURCE_TEMPLATE_CLAIMED_BY: MULTI_CLUSTER_SERVICE_KIND,
                PERMANENT_ID_LABEL: id,
            },
            "annotations": {
                annotations::PROPAGATION_POLICY_NAME: null,
                annotations::PROPAGATION_POLICY_NAMESPACE: null,
                annotations::CLUSTER_PROPAGATION_POLICY_NAME: null,
                NAME_ANNOTATION: mcs.name_any(),
                NAMESPACE_ANNOTATION: mcs.namespace().unwrap_or_default(),
            },
        }});
        services
            .patch(
                &svc.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await?;
        Ok(())
    }

    /// propagateService / buildResourceBinding: the Service's own binding to every provider
    /// and consumer cluster.
    async fn bind_service(
        &self,
        svc: &Service,
        mcs: &MultiClusterService,
        clusters: Vec<String>,
    ) -> Result<()> {
        let namespace = svc.namespace().unwrap_or_default();
        let rbs: Api<ResourceBinding> = Api::namespaced(self.ctx.client.clone(), &namespace);
        let name = names::binding_name("Service", &svc.name_any());
        let uid = svc.metadata.uid.clone().unwrap_or_default();
        let placement = Placement {
            cluster_affinity: Some(ClusterAffinity {
                cluster_names: clusters,
                ..Default::default()
            }),
            ..Default::default()
        };
        let resource = ObjectReference {
            api_version: "v1".into(),
            kind: "Service".into(),
            namespace: namespace.clone(),
            name: svc.name_any(),
            uid: uid.clone(),
            resource_version: svc.metadata.resource_version.clone().unwrap_or_default(),
        };
        let wanted_annotations = BTreeMap::from([
            (NAME_ANNOTATION.to_owned(), mcs.name_any()),
            (NAMESPACE_ANNOTATION.to_owned(), namespace.clone()),
        ]);
        let wanted_labels = BTreeMap::from([
            (
                labels::BINDING_MANAGED_BY.to_owned(),
                MULTI_CLUSTER_SERVICE_KIND.to_owned(),
            ),
            (PERMANENT_ID_LABEL.to_owned(), permanent_id(mcs).to_owned()),
        ]);
        let owner = OwnerReference {
            api_version: "v1".into(),
            kind: "Service".into(),
            name: svc.name_any(),
            uid: uid.clone(),
            ..Default::default()
        };
        for _ in 0..5 {
            match rbs.get_opt(&name).await? {
                None => {
                    let rb = ResourceBinding {
                        metadata: ObjectMeta {
                            name: Some(name.clone()),
                            namespace: Some(namespace.clone()),
                            owner_references: Some(vec![owner.clone()]),
                            annotations: Some(wanted_annotations.clone()),
                            labels: Some(wanted_labels.clone()),
                            finalizers: Some(vec![finalizers::BINDING_CONTROLLER.into()]),
                            ..Default::default()
                        },
                        spec: ResourceBindingSpec {
                            resource: resource.clone(),
                            placement: Some(placement.clone()),
                            conflict_resolution: Some(ConflictResolution::Overwrite),
                            ..Default::default()
                        },
                        status: Default::default(),
                    };
                    match rbs.create(&PostParams::default(), &rb).await {
                        Err(e) if is_already_exists(&e) => continue,
                        other => return other.map(|_| ()).map_err(Into::into),
                    }
                }
                Some(mut rb) => {
                    if let Some(controller) = rb
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .find(|o| o.controller == Some(true))
                        && controller.uid != uid
                    {
                        return Err(Error::msg(
                            "failed to update binding due to different owner reference UID, will try again later after binding is garbage collected, see https://github.com/karmada-io/karmada/issues/2090",
                        ));
                    }
                    let mut a = rb.metadata.annotations.clone().unwrap_or_default();
                    a.extend(wanted_annotations.clone());
                    let mut l = rb.metadata.labels.clone().unwrap_or_default();
                    l.extend(wanted_labels.clone());
                    let unchanged = rb.metadata.annotations.as_ref() == Some(&a)
                        && rb.metadata.labels.as_ref() == Some(&l)
                        && rb.spec.placement.as_ref() == Some(&placement)
                        && rb.spec.resource == resource
                        && rb.spec.conflict_resolution == Some(ConflictResolution::Overwrite);
                    if unchanged {
                        return Ok(());
                    }
                    rb.metadata.annotations = Some(a);
                    rb.metadata.labels = Some(l);
                    rb.metadata.owner_references = Some(vec![owner.clone()]);
                    rb.metadata.finalizers = Some(vec![finalizers::BINDING_CONTROLLER.into()]);
                    rb.spec.placement = Some(placement.clone());
                    rb.spec.resource = resource.clone();
                    rb.spec.conflict_resolution = Some(ConflictResolution::Overwrite);
                    match rbs.replace(&name, &PostParams::default(), &rb).await {
                        Err(e) if is_conflict(&e) => continue,
                        other => return other.map(|_| ()).map_err(Into::into),
                    }
                }
            }
        }
        Err(Error::msg(format!(
            "resourcebinding {namespace}/{name}: too many conflicts"
        )))
    }
}

fn permanent_id(mcs: &MultiClusterService) -> &str {
    mcs.labels()
        .get(PERMANENT_ID_LABEL)
        .map(String::as_str)
        .unwrap_or_default()
}
