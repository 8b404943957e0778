//! The endpointslice controller (pkg/controllers/mcs/endpointslice_controller.go): each
//! collected EndpointSlice Work (labelled with its Service by the service export controller)
//! becomes an EndpointSlice on the control plane, `imported-<cluster>-<slice>` in the Service's
//! namespace, labelled `kubernetes.io/service-name: derived-<service>`, managed by
//! `endpointslice-controller.karmada.io` and with the Work's permanent id, so the
//! ServiceImport's dependencies carry it to the importing clusters. When the Work goes, or
//! stops naming a Service, its EndpointSlices go and the Work's finalizer is removed.
//!
//! Clusters exporting one Service with different ports (names, protocols) are reported with
//! a Warning Event on the ServiceExport template (`ExportPortConflict`), as the Multi-Cluster
//! Services API asks implementations to surface such conflicts.
//!
//! Beyond Karmada: a cluster whose `remedyActions` include TrafficControl has its imported
//! EndpointSlices removed (the importing clusters lose its endpoints) until the action is
//! lifted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::names;
use karmada_api::well_known::{annotations, labels};
use karmada_api::work::v1alpha1::Work;
use kube::api::{DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::Value;
use tokio::task::JoinHandle;

use super::{
    ENDPOINTSLICE_CONTROLLER_FINALIZER, ENDPOINTSLICE_CONTROLLER_VALUE, LABEL_MANAGED_BY,
    LABEL_SERVICE_NAME, MCS_API_VERSION, MCS_NAME_LABEL, SERVICE_EXPORT_KIND, SERVICE_NAME_LABEL,
    SERVICE_NAMESPACE_LABEL, imported_slice_name, mcs_resource, out_of_traffic,
};
use crate::runtime::context::BY_NAMESPACE;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::precedence::Class;
use crate::runtime::{
    CachedWork, Change, Context, Error, Key, Requeue, Result, WorkQueue, is_already_exists,
    is_conflict, is_not_found,
};

/// Karmada's controller name.
pub const NAME: &str = "endpointslice-controller";
/// The reason of the Event reporting a Service exported with different ports.
pub const REASON_PORT_CONFLICT: &str = "ExportPortConflict";

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let queue: WorkQueue<Key> = ctx.queue("endpointslice", Class::Status);
    let q = queue.clone();
    ctx.works.on_change(move |ch| {
        // The controller's predicate: Works naming a Service, and updates of Works a
        // MultiClusterService manages.
        let named = |w: &CachedWork| w.labels.get(SERVICE_NAME_LABEL).is_some();
        let wanted = match ch {
            Change::Add(w) | Change::Delete(w) => named(w),
            Change::Update(_, w) => named(w) || w.labels.get(MCS_NAME_LABEL).is_some(),
        };
        if wanted {
            q.add(ch.object().key());
        }
    });
    // A cluster going out of traffic, or back: its collected Works again.
    let (q, c) = (queue.clone(), ctx.clone());
    ctx.clusters.on_change(move |ch| {
        let cl = ch.object();
        if let Change::Update(old, new) = ch
            && out_of_traffic(old) == out_of_traffic(new)
        {
            return;
        }
        let es = names::execution_space_name(cl.metadata.name.as_deref().unwrap_or_default());
        q.add_all(
            c.works
                .by_index(BY_NAMESPACE, &es)
                .iter()
                .filter(|w| w.labels.get(SERVICE_NAME_LABEL).is_some())
                .map(|w| w.key()),
        );
    });
    let (c, workers) = (ctx.clone(), ctx.settings.concurrency.work);
    let recorder = ctx.events.recorder(NAME);
    vec![crate::runtime::run_after_sync(
        ctx,
        queue,
        workers,
        move |key| {
            let (ctx, recorder) = (c.clone(), recorder.clone());
            async move { reconcile(&ctx, &recorder, key).await }
        },
    )]
}

async fn reconcile(ctx: &Context, recorder: &Recorder, key: Key) -> Result<Requeue> {
    let Some(work) = ctx.works.get(&key) else {
        return Ok(Requeue::No);
    };
    let id = work
        .labels
        .get(labels::WORK_PERMANENT_ID)
        .unwrap_or_default()
        .to_owned();
    if work.deleting() || work.labels.get(SERVICE_NAME_LABEL).is_none() {
        if !work
            .metadata
            .finalizers
            .iter()
            .flatten()
            .any(|f| f == ENDPOINTSLICE_CONTROLLER_FINALIZER)
        {
            return Ok(Requeue::No);
        }
        delete_slices(ctx, &id).await?;
        remove_finalizer(ctx, &work).await?;
        return Ok(Requeue::No);
    }
    // Beyond Karmada: a cluster out of traffic has its endpoints withdrawn until the remedy
    // is lifted.
    if work
        .cluster()
        .and_then(|c| ctx.clusters.get(&Key::cluster(c)))
        .is_some_and(|c| out_of_traffic(&c))
    {
        delete_slices(ctx, &id).await?;
        return Ok(Requeue::No);
    }
    collect(ctx, &work, &id).await?;
    report_conflicts(ctx, recorder, &work).await?;
    Ok(Requeue::No)
}

/// The ports (name/protocol) each cluster exports a Service with, from its collected Works.
fn exported_ports(
    ctx: &Context,
    namespace: &str,
    service: &str,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for w in ctx.works.list() {
        if w.labels.get(SERVICE_NAME_LABEL) != Some(service)
            || w.labels.get(SERVICE_NAMESPACE_LABEL) != Some(namespace)
            || w.deleting()
        {
            continue;
        }
        let Some(cluster) = w.cluster() else {
            continue;
        };
        let ports = out.entry(cluster.to_owned()).or_default();
        for m in &w.spec.workload.manifests {
            let Ok(v) = m.to_value() else {
                continue;
            };
            for p in v
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                ports.insert(format!(
                    "{}/{}",
                    p.get("name").and_then(Value::as_str).unwrap_or(""),
                    p.get("protocol").and_then(Value::as_str).unwrap_or("TCP")
                ));
            }
        }
    }
    out
}

/// The Multi-Cluster Services API's port conflict: clusters exporting one Service with
/// different ports (names and protocols; the port numbers behind them may differ per cluster).
/// Every cluster's endpoints are still imported, and importers reach each port by its name
/// where it is exported; the conflict is reported on the Service's ServiceExport template with
/// a Warning Event naming each cluster's ports, so that it can be mended.
async fn report_conflicts(ctx: &Context, recorder: &Recorder, work: &CachedWork) -> Result<()> {
    let (Some(service), Some(namespace)) = (
        work.labels.get(SERVICE_NAME_LABEL),
        work.labels.get(SERVICE_NAMESPACE_LABEL),
    ) else {
        return Ok(());
    };
    let ports = exported_ports(ctx, namespace, service);
    let distinct: BTreeSet<&BTreeSet<String>> = ports.values().collect();
    if distinct.len() < 2 {
        return Ok(());
    }
    let api: Api<DynamicObject> = Api::namespaced_with(
        ctx.client.clone(),
        namespace,
        &mcs_resource(SERVICE_EXPORT_KIND, "serviceexports"),
    );
    let Some(export) = api.get_opt(service).await? else {
        return Ok(());
    };
    let listed: Vec<String> = ports
        .iter()
        .map(|(cluster, p)| {
            format!(
                "{cluster}: [{}]",
                p.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect();
    recorder.warning(
        &EventTarget {
            api_version: MCS_API_VERSION.into(),
            kind: SERVICE_EXPORT_KIND.into(),
            namespace: namespace.to_owned(),
            name: service.to_owned(),
            uid: export.metadata.uid.clone().unwrap_or_default(),
        },
        REASON_PORT_CONFLICT,
        format!(
            "Service {namespace}/{service} is exported with conflicting ports (name/protocol): {}",
            listed.join("; ")
        ),
    );
    Ok(())
}

/// DeleteEndpointSlice: every control-plane EndpointSlice of the Work.
async fn delete_slices(ctx: &Context, work_id: &str) -> Result<()> {
    if work_id.is_empty() {
        return Ok(());
    }
    let api: Api<EndpointSlice> = Api::all(ctx.client.clone());
    let lp = ListParams::default().labels(&format!("{}={work_id}", labels::WORK_PERMANENT_ID));
    for s in api.list(&lp).await? {
        let ns: Api<EndpointSlice> =
            Api::namespaced(ctx.client.clone(), &s.namespace().unwrap_or_default());
        match ns.delete(&s.name_any(), &DeleteParams::default()).await {
            Err(e) if !is_not_found(&e) => return Err(e.into()),
            _ => {}
        }
    }
    Ok(())
}

async fn remove_finalizer(ctx: &Context, work: &CachedWork) -> Result<()> {
    let key = work.key();
    let api: Api<Work> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let kept: Vec<&String> = work
        .metadata
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != ENDPOINTSLICE_CONTROLLER_FINALIZER)
        .collect();
    let patch = serde_json::json!({"metadata": {
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

/// collectEndpointSliceFromWork: each manifest as the derived Service's EndpointSlice.
async fn collect(ctx: &Context, work: &CachedWork, work_id: &str) -> Result<()> {
    let cluster = work
        .cluster()
        .ok_or_else(|| Error::msg(format!("work {} is not in an execution space", work.key())))?
        .to_owned();
    let service = work
        .labels
        .get(SERVICE_NAME_LABEL)
        .unwrap_or_default()
        .to_owned();
    let key = work.key();
    for m in &work.spec.workload.manifests {
        let original: EndpointSlice = serde_json::from_value(m.to_value()?)?;
        let namespace = original.namespace().unwrap_or_default();
        let name = imported_slice_name(&original.name_any(), &cluster);
        let labels = BTreeMap::from([
            (labels::WORK_PERMANENT_ID.to_owned(), work_id.to_owned()),
            (
                LABEL_SERVICE_NAME.to_owned(),
                names::derived_service_name(&service),
            ),
            (
                LABEL_MANAGED_BY.to_owned(),
                ENDPOINTSLICE_CONTROLLER_VALUE.to_owned(),
            ),
        ]);
        let desired = EndpointSlice {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(namespace.clone()),
                labels: Some(labels),
                annotations: Some(BTreeMap::from([
                    (
                        annotations::WORK_NAMESPACE.to_owned(),
                        key.namespace.clone(),
                    ),
                    (annotations::WORK_NAME.to_owned(), key.name.clone()),
                ])),
                ..Default::default()
            },
            address_type: original.address_type,
            endpoints: original.endpoints,
            ports: original.ports,
        };
        create_or_update(ctx, &namespace, desired).await?;
    }
    Ok(())
}

/// CreateOrUpdateEndpointSlice: an existing slice takes the address type, endpoints, labels
/// and ports.
pub(crate) async fn create_or_update(
    ctx: &Context,
    namespace: &str,
    desired: EndpointSlice,
) -> Result<()> {
    let api: Api<EndpointSlice> = Api::namespaced(ctx.client.clone(), namespace);
    let name = desired.name_any();
    for _ in 0..5 {
        match api.get_opt(&name).await? {
            None => match api.create(&PostParams::default(), &desired).await {
                Err(e) if is_already_exists(&e) => continue,
                other => return other.map(|_| ()).map_err(Into::into),
            },
            Some(mut current) => {
                if current.address_type == desired.address_type
                    && current.endpoints == desired.endpoints
                    && current.metadata.labels == desired.metadata.labels
                    && current.ports == desired.ports
                {
                    return Ok(());
                }
                current.address_type = desired.address_type.clone();
                current.endpoints = desired.endpoints.clone();
                current.metadata.labels = desired.metadata.labels.clone();
                current.ports = desired.ports.clone();
                match api.replace(&name, &PostParams::default(), &current).await {
                    Err(e) if is_conflict(&e) || is_not_found(&e) => continue,
                    other => return other.map(|_| ()).map_err(Into::into),
                }
            }
        }
    }
    Err(Error::msg(format!(
        "endpointslice {namespace}/{name}: too many conflicts"
    )))
}
