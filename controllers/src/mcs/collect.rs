//! Collecting members' EndpointSlices into the control plane, as two of Karmada's controllers
//! do:
//!
//! - the service export controller (pkg/controllers/mcs/service_export_controller.go): once a
//!   ServiceExport has been applied to a member (its Work is Applied), the member's
//!   ServiceExports and EndpointSlices are watched, and every EndpointSlice of an exported
//!   Service is reported, labelled `endpointslice.karmada.io/namespace`, `/name` and
//!   `/managed-by: ServiceExport`, held by the endpointslice controller's finalizer;
//! - the EndpointSlice collect controller
//!   (pkg/controllers/multiclusterservice/endpointslice_collect_controller.go): a member that
//!   is a provider of a MultiClusterService (it has the MultiClusterService's suspended Work)
//!   has the EndpointSlices of the Service of that name reported, labelled
//!   `multiclusterservice.karmada.io/namespace`, `/name` and `endpointslice.karmada.io/managed-by:
//!   MultiClusterService`, held by the dispatch controller's finalizer.
//!
//! A reported slice is a suspended Work `karmada-es-<cluster>/<work name of the slice>`; both
//! controllers share it when both report the slice (`managed-by` lists them, joined with `.`).
//! A slice that goes, or stops being reported, has its Work released by that controller
//! (deleted when no other one manages it). Slices written by Karmada are never reported.
//!
//! Member objects are kept only for candidates (slices with a Service label); a cluster is
//! watched from its first trigger until it leaves.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::names;
use karmada_api::work::v1alpha1::Work;
use kube::api::{ApiResource, DeleteParams, DynamicObject};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::{
    ENDPOINTSLICE_CONTROLLER_FINALIZER, LABEL_MANAGED_BY, LABEL_SERVICE_NAME, MCS_API_VERSION,
    MCS_DISPATCH_FINALIZER, MCS_NAME_LABEL, MCS_NAMESPACE_LABEL, MULTI_CLUSTER_SERVICE_KIND,
    NETWORKING_API_VERSION, SERVICE_EXPORT_KIND, SERVICE_NAME_LABEL, SERVICE_NAMESPACE_LABEL,
    WORK_MANAGED_BY_LABEL, managed_by_karmada, managers, mcs_resource,
};
use crate::binding::work::{create_or_update, prepare_manifest};
use crate::runtime::context::BY_NAMESPACE;
use crate::runtime::precedence::Class;
use crate::runtime::{CachedWork, Change, Context, Key, Requeue, Result, WorkQueue, is_not_found};

/// Which of the two controllers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// The service export controller.
    ServiceExport,
    /// The EndpointSlice collect controller.
    MultiClusterService,
}

impl Flavor {
    /// Karmada's controller name.
    pub fn name(self) -> &'static str {
        match self {
            Flavor::ServiceExport => "service-export-controller",
            Flavor::MultiClusterService => "endpointslice-collect-controller",
        }
    }

    fn queue(self) -> &'static str {
        match self {
            Flavor::ServiceExport => "service-export",
            Flavor::MultiClusterService => "endpointslice-collect",
        }
    }

    /// The kind whose Work in an execution space starts the collection there.
    fn trigger(self) -> (&'static str, &'static str) {
        match self {
            Flavor::ServiceExport => (MCS_API_VERSION, SERVICE_EXPORT_KIND),
            Flavor::MultiClusterService => (NETWORKING_API_VERSION, MULTI_CLUSTER_SERVICE_KIND),
        }
    }

    /// The labels naming the Service on a collected Work.
    fn labels(self) -> (&'static str, &'static str) {
        match self {
            Flavor::ServiceExport => (SERVICE_NAMESPACE_LABEL, SERVICE_NAME_LABEL),
            Flavor::MultiClusterService => (MCS_NAMESPACE_LABEL, MCS_NAME_LABEL),
        }
    }

    /// The controller's entry in `managed-by`.
    fn manager(self) -> &'static str {
        match self {
            Flavor::ServiceExport => SERVICE_EXPORT_KIND,
            Flavor::MultiClusterService => MULTI_CLUSTER_SERVICE_KIND,
        }
    }

    fn finalizer(self) -> &'static str {
        match self {
            Flavor::ServiceExport => ENDPOINTSLICE_CONTROLLER_FINALIZER,
            Flavor::MultiClusterService => MCS_DISPATCH_FINALIZER,
        }
    }

    /// Whether a trigger Work starts the collection: an applied ServiceExport; a
    /// MultiClusterService Work (suspended, never applied).
    fn triggered_by(self, w: &CachedWork) -> bool {
        let (api_version, kind) = self.trigger();
        !w.deleting()
            && (self == Flavor::MultiClusterService || w.applied())
            && w.spec
                .workload
                .manifests
                .iter()
                .any(|m| m.api_version() == api_version && m.kind() == kind)
    }

    /// A collected Work this controller manages, and its Service.
    fn collected(self, w: &CachedWork) -> Option<(&str, &str)> {
        let by = w.labels.get(WORK_MANAGED_BY_LABEL)?;
        if !managers(by).contains(self.manager()) {
            return None;
        }
        let (ns, name) = self.labels();
        Some((w.labels.get(ns)?, w.labels.get(name)?))
    }
}

/// How soon an item whose cluster is not watched yet is tried again.
const NOT_SYNCED_RETRY: Duration = Duration::from_millis(200);

/// What changed: a ServiceExport or an EndpointSlice of a member.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Item {
    Export {
        cluster: String,
        namespace: String,
        name: String,
    },
    Slice {
        cluster: String,
        namespace: String,
        name: String,
    },
}

/// What is known of one member.
#[derive(Default)]
struct Member {
    exports: HashSet<(String, String)>,
    /// Candidate EndpointSlices by namespace/name.
    slices: HashMap<(String, String), Arc<DynamicObject>>,
    exports_synced: bool,
    slices_synced: bool,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Member {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

struct Controller {
    flavor: Flavor,
    ctx: Arc<Context>,
    queue: WorkQueue<Item>,
    members: Mutex<HashMap<String, Member>>,
    me: Weak<Controller>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts the controller.
pub fn start(ctx: Arc<Context>, flavor: Flavor) -> Vec<JoinHandle<()>> {
    let c = Arc::new_cyclic(|me| Controller {
        flavor,
        queue: ctx.queue(flavor.queue(), Class::Status),
        members: Mutex::new(HashMap::new()),
        ctx: ctx.clone(),
        me: me.clone(),
    });
    let c1 = c.clone();
    ctx.works.on_change(move |ch| {
        let w = ch.object();
        let Some(cluster) = w.cluster() else {
            return;
        };
        if flavor.triggered_by(w) && !matches!(ch, Change::Delete(_)) {
            c1.watch(cluster);
        }
        // A MultiClusterService Work names the Service it collects: its coming and going is
        // what a ServiceExport's is to the service export controller.
        if flavor == Flavor::MultiClusterService {
            let (api_version, kind) = flavor.trigger();
            for m in &w.spec.workload.manifests {
                if m.api_version() == api_version && m.kind() == kind {
                    c1.queue.add(Item::Export {
                        cluster: cluster.to_owned(),
                        namespace: m.namespace().to_owned(),
                        name: m.name().to_owned(),
                    });
                }
            }
        }
    });
    let c2 = c.clone();
    ctx.clusters.on_change(move |ch| {
        if let Change::Delete(cl) = ch {
            lock(&c2.members).remove(&cl.name_any());
        }
    });
    let c3 = c.clone();
    vec![tokio::spawn(async move {
        c3.ctx.wait_synced().await;
        // Collected Works whose export went away while nothing watched
        // (enqueueReportedEpsServiceExport).
        for w in c3.ctx.works.list() {
            if let (Some(cluster), Some((ns, svc))) = (w.cluster(), flavor.collected(&w)) {
                c3.queue.add(Item::Export {
                    cluster: cluster.to_owned(),
                    namespace: ns.to_owned(),
                    name: svc.to_owned(),
                });
            }
        }
        let c4 = c3.clone();
        let handles = c3.queue.run(c3.ctx.settings.concurrency.work, move |item| {
            let c = c4.clone();
            async move { c.reconcile(item).await }
        });
        futures::future::join_all(handles).await;
    })]
}

impl Controller {
    /// Whether a Service of a member is collected: it is exported (ServiceExport), or the
    /// member provides the MultiClusterService of its name.
    fn exported(&self, m: &Member, cluster: &str, namespace: &str, service: &str) -> bool {
        match self.flavor {
            Flavor::ServiceExport => m
                .exports
                .contains(&(namespace.to_owned(), service.to_owned())),
            Flavor::MultiClusterService => {
                let key = Key::new(
                    names::execution_space_name(cluster),
                    names::work_name(MULTI_CLUSTER_SERVICE_KIND, service, namespace),
                );
                self.ctx
                    .works
                    .get(&key)
                    .is_some_and(|w| self.flavor.triggered_by(&w))
            }
        }
    }

    /// Whether this process serves the cluster's members objects (a Pull cluster's are its
    /// agent's).
    fn serves(&self, cluster: &str) -> bool {
        self.ctx
            .clusters
            .get(&Key::cluster(cluster))
            .is_some_and(|c| self.ctx.settings.scope.serves(&c))
    }

    /// Starts watching a member's ServiceExports and EndpointSlices.
    fn watch(&self, cluster: &str) {
        if !self.serves(cluster) {
            return;
        }
        let mut members = lock(&self.members);
        if members.contains_key(cluster) {
            return;
        }
        let slice = ApiResource::erase::<k8s_openapi::api::discovery::v1::EndpointSlice>(&());
        let mut tasks = vec![tokio::spawn(watch_loop(
            self.me.clone(),
            cluster.to_owned(),
            slice,
            false,
        ))];
        let mut member = Member::default();
        if self.flavor == Flavor::ServiceExport {
            let export = mcs_resource(SERVICE_EXPORT_KIND, "serviceexports");
            tasks.push(tokio::spawn(watch_loop(
                self.me.clone(),
                cluster.to_owned(),
                export,
                true,
            )));
        } else {
            // Which Services are collected comes from the control plane's Works.
            member.exports_synced = true;
        }
        member.tasks = tasks;
        members.insert(cluster.to_owned(), member);
    }

    fn item(cluster: &str, export: bool, o: &DynamicObject) -> Item {
        let (namespace, name) = (o.namespace().unwrap_or_default(), o.name_any());
        let cluster = cluster.to_owned();
        if export {
            Item::Export {
                cluster,
                namespace,
                name,
            }
        } else {
            Item::Slice {
                cluster,
                namespace,
                name,
            }
        }
    }

    /// Records a watch event and queues what it affects.
    fn observe(&self, cluster: &str, export: bool, o: Option<DynamicObject>, gone: &DynamicObject) {
        let item = Self::item(cluster, export, gone);
        {
            let mut members = lock(&self.members);
            let Some(m) = members.get_mut(cluster) else {
                return;
            };
            let key = (gone.namespace().unwrap_or_default(), gone.name_any());
            match (export, o) {
                (true, Some(_)) => {
                    m.exports.insert(key);
                }
                (true, None) => {
                    m.exports.remove(&key);
                }
                (false, Some(o)) => {
                    if let Some(old) = m.slices.get(&key)
                        && old.labels() == o.labels()
                        && old.data == o.data
                    {
                        // A resync or a metadata-only change: nothing to report.
                        return;
                    }
                    m.slices.insert(key, Arc::new(o));
                }
                (false, None) => {
                    m.slices.remove(&key);
                }
            }
        }
        self.queue.add(item);
    }

    /// The end of a (re)list: objects not listed are gone.
    fn relisted(&self, cluster: &str, export: bool, listed: HashSet<(String, String)>) {
        let mut gone = Vec::new();
        {
            let mut members = lock(&self.members);
            let Some(m) = members.get_mut(cluster) else {
                return;
            };
            if export {
                gone.extend(m.exports.difference(&listed).cloned());
                m.exports.retain(|k| listed.contains(k));
                m.exports_synced = true;
            } else {
                gone.extend(m.slices.keys().filter(|k| !listed.contains(*k)).cloned());
                m.slices.retain(|k, _| listed.contains(k));
                m.slices_synced = true;
            }
        }
        for (namespace, name) in gone {
            let cluster = cluster.to_owned();
            self.queue.add(if export {
                Item::Export {
                    cluster,
                    namespace,
                    name,
                }
            } else {
                Item::Slice {
                    cluster,
                    namespace,
                    name,
                }
            });
        }
    }

    async fn reconcile(self: Arc<Self>, item: Item) -> Result<Requeue> {
        match item {
            Item::Export {
                cluster,
                namespace,
                name,
            } => self.sync_export(&cluster, &namespace, &name).await,
            Item::Slice {
                cluster,
                namespace,
                name,
            } => self.sync_slice(&cluster, &namespace, &name).await,
        }
    }

    /// handleServiceExportEvent: report every slice of an exported Service and remove the
    /// Works of the ones that went; clean up after an export that went.
    async fn sync_export(&self, cluster: &str, namespace: &str, name: &str) -> Result<Requeue> {
        if self.ctx.clusters.get(&Key::cluster(cluster)).is_none() {
            // A cluster that left takes its execution space, and these Works, with it.
            return Ok(Requeue::No);
        }
        let state = {
            let members = lock(&self.members);
            members.get(cluster).map(|m| {
                let synced = m.exports_synced && m.slices_synced;
                let exported = self.exported(m, cluster, namespace, name);
                let slices: Vec<Arc<DynamicObject>> = m
                    .slices
                    .iter()
                    .filter(|((ns, _), s)| {
                        ns == namespace
                            && s.labels().get(LABEL_SERVICE_NAME).map(String::as_str) == Some(name)
                    })
                    .map(|(_, s)| s.clone())
                    .collect();
                (synced, exported, slices)
            })
        };
        let Some((synced, exported, slices)) = state else {
            self.watch(cluster);
            return Ok(if self.serves(cluster) {
                Requeue::After(NOT_SYNCED_RETRY)
            } else {
                Requeue::No
            });
        };
        if !synced {
            return Ok(Requeue::After(NOT_SYNCED_RETRY));
        }
        if !exported {
            self.cleanup_service(cluster, namespace, name).await?;
            return Ok(Requeue::No);
        }
        let wanted: HashSet<String> = slices
            .iter()
            .map(|s| names::work_name("EndpointSlice", &s.name_any(), namespace))
            .collect();
        for w in self.collected(cluster, namespace, name) {
            if !wanted.contains(w.metadata.name.as_deref().unwrap_or_default()) {
                self.release(&w).await?;
            }
        }
        for s in slices {
            if !managed_by_karmada(s.labels().get(LABEL_MANAGED_BY).map(String::as_str)) {
                self.report(cluster, &s).await?;
            }
        }
        Ok(Requeue::No)
    }

    /// handleEndpointSliceEvent: report a slice of an exported Service, or remove the Work of
    /// one that went.
    async fn sync_slice(&self, cluster: &str, namespace: &str, name: &str) -> Result<Requeue> {
        let state = {
            let members = lock(&self.members);
            members.get(cluster).map(|m| {
                let slice = m
                    .slices
                    .get(&(namespace.to_owned(), name.to_owned()))
                    .cloned();
                let exported = slice.as_ref().and_then(|s| {
                    let svc = s.labels().get(LABEL_SERVICE_NAME)?;
                    Some(self.exported(m, cluster, namespace, svc))
                });
                (m.exports_synced, slice, exported)
            })
        };
        let Some((exports_synced, slice, exported)) = state else {
            return Ok(Requeue::No);
        };
        let Some(slice) = slice else {
            let work = Key::new(
                names::execution_space_name(cluster),
                names::work_name("EndpointSlice", name, namespace),
            );
            if let Some(w) = self.ctx.works.get(&work)
                && self.flavor.collected(&w).is_some()
            {
                self.release(&w).await?;
            }
            return Ok(Requeue::No);
        };
        if managed_by_karmada(slice.labels().get(LABEL_MANAGED_BY).map(String::as_str)) {
            return Ok(Requeue::No);
        }
        if !exports_synced {
            return Ok(Requeue::After(NOT_SYNCED_RETRY));
        }
        if exported == Some(true) {
            self.report(cluster, &slice).await?;
        }
        Ok(Requeue::No)
    }

    /// The collected Works of a Service in a cluster's execution space.
    fn collected(&self, cluster: &str, namespace: &str, name: &str) -> Vec<Arc<CachedWork>> {
        self.ctx
            .works
            .by_index(BY_NAMESPACE, &names::execution_space_name(cluster))
            .into_iter()
            .filter(|w| self.flavor.collected(w) == Some((namespace, name)))
            .filter(|w| {
                w.spec
                    .workload
                    .manifests
                    .iter()
                    .any(|m| m.kind() == "EndpointSlice")
            })
            .collect()
    }

    async fn cleanup_service(&self, cluster: &str, namespace: &str, name: &str) -> Result<()> {
        for w in self.collected(cluster, namespace, name) {
            self.release(&w).await?;
        }
        Ok(())
    }

    /// reportEndpointSlice: the slice as a suspended Work in the cluster's execution space.
    async fn report(&self, cluster: &str, slice: &DynamicObject) -> Result<()> {
        let namespace = slice.namespace().unwrap_or_default();
        let work_name = names::work_name("EndpointSlice", &slice.name_any(), &namespace);
        let es = names::execution_space_name(cluster);
        let existing = self.ctx.works.get(&Key::new(&es, &work_name));
        let mut labels: BTreeMap<String, String> = existing
            .as_ref()
            .and_then(|w| w.labels.to_map())
            .unwrap_or_default();
        let mut by = labels
            .get(WORK_MANAGED_BY_LABEL)
            .map(|v| managers(v))
            .unwrap_or_default();
        by.insert(self.flavor.manager().to_owned());
        let (ns_label, name_label) = self.flavor.labels();
        labels.insert(ns_label.into(), namespace.clone());
        labels.insert(
            name_label.into(),
            slice
                .labels()
                .get(LABEL_SERVICE_NAME)
                .cloned()
                .unwrap_or_default(),
        );
        labels.insert(
            WORK_MANAGED_BY_LABEL.into(),
            by.into_iter().collect::<Vec<_>>().join("."),
        );
        let meta = ObjectMeta {
            name: Some(work_name),
            namespace: Some(es),
            labels: Some(labels),
            finalizers: Some(vec![self.flavor.finalizer().into()]),
            ..ObjectMeta::default()
        };
        let mut body = serde_json::to_value(slice)?;
        if let Some(o) = body.as_object_mut() {
            o.insert(
                "apiVersion".into(),
                Value::String("discovery.k8s.io/v1".into()),
            );
            o.insert("kind".into(), Value::String("EndpointSlice".into()));
        }
        let manifest = prepare_manifest(body, &meta);
        create_or_update(&self.ctx, &meta, &manifest, Some(true), None).await?;
        Ok(())
    }

    /// cleanEndpointSliceWork: the Work loses the service export controller; it is deleted
    /// unless another controller still manages it.
    async fn release(&self, w: &CachedWork) -> Result<()> {
        let key = w.key();
        let api: Api<Work> = Api::namespaced(self.ctx.client.clone(), &key.namespace);
        let mut by = w
            .labels
            .get(WORK_MANAGED_BY_LABEL)
            .map(managers)
            .unwrap_or_default();
        by.remove(self.flavor.manager());
        if by.is_empty() {
            return match api.delete(&key.name, &DeleteParams::default()).await {
                Err(e) if is_not_found(&e) => Ok(()),
                other => other.map(|_| ()).map_err(Into::into),
            };
        }
        let (ns_label, name_label) = self.flavor.labels();
        let patch = serde_json::json!({"metadata": {"labels": {
            name_label: null,
            ns_label: null,
            WORK_MANAGED_BY_LABEL: by.into_iter().collect::<Vec<_>>().join("."),
        }}});
        match api
            .patch(
                &key.name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(&patch),
            )
            .await
        {
            Err(e) if is_not_found(&e) => Ok(()),
            other => other.map(|_| ()).map_err(Into::into),
        }
    }
}

/// Watches one kind in one member for as long as the member is watched.
async fn watch_loop(me: Weak<Controller>, cluster: String, resource: ApiResource, export: bool) {
    let mut delay = Duration::from_millis(200);
    loop {
        let Some(c) = me.upgrade() else {
            return;
        };
        let client = c.ctx.members.get(&cluster).await;
        drop(c);
        let client = match client {
            Ok(client) => client,
            Err(e) => {
                tracing::debug!(%cluster, error = %e, "service export: no member client yet");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(10));
                continue;
            }
        };
        let api: Api<DynamicObject> = Api::all_with(client, &resource);
        // Only slices that belong to a Service can be exported.
        let cfg = if export {
            watcher::Config::default()
        } else {
            watcher::Config::default().labels(LABEL_SERVICE_NAME)
        };
        let mut stream = watcher(api, cfg).default_backoff().boxed();
        let mut listing: Option<HashSet<(String, String)>> = None;
        while let Some(ev) = stream.next().await {
            let Some(c) = me.upgrade() else {
                return;
            };
            match ev {
                Ok(watcher::Event::Init) => listing = Some(HashSet::new()),
                Ok(watcher::Event::InitApply(o)) => {
                    listing
                        .get_or_insert_with(HashSet::new)
                        .insert((o.namespace().unwrap_or_default(), o.name_any()));
                    c.observe(&cluster, export, Some(o.clone()), &o);
                }
                Ok(watcher::Event::InitDone) => {
                    c.relisted(&cluster, export, listing.take().unwrap_or_default());
                }
                Ok(watcher::Event::Apply(o)) => c.observe(&cluster, export, Some(o.clone()), &o),
                Ok(watcher::Event::Delete(o)) => c.observe(&cluster, export, None, &o),
                Err(e) => {
                    tracing::debug!(%cluster, kind = %resource.kind, error = %e, "service export: member watch failed")
                }
            }
        }
    }
}
