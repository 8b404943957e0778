//! The service import controller (pkg/controllers/mcs/service_import_controller.go): a
//! ServiceImport of type ClusterSetIP gets a `derived-<name>` Service of type ClusterIP beside it
//! on the control plane, with the import's ports and, as load-balancer ingress, its `ips`; the
//! Service goes when the ServiceImport goes. The derived Service keeps the cluster IP it was
//! given.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Service;
use karmada_api::names;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::{MCS_API_VERSION, mcs_resource};
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::precedence::Class;
use crate::runtime::{
    Context, Error, Key, Requeue, Result, WorkQueue, is_already_exists, is_conflict, is_not_found,
};

/// Karmada's controller name.
pub const NAME: &str = "service-import-controller";
/// Event reason of a derived Service written.
pub const REASON_SUCCEED: &str = "SyncDerivedServiceSucceed";
/// Event reason of a derived Service that could not be written.
pub const REASON_FAILED: &str = "SyncDerivedServiceFailed";

type Imports = Arc<Mutex<HashMap<Key, Arc<DynamicObject>>>>;

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let resource = mcs_resource("ServiceImport", "serviceimports");
    let imports: Imports = Arc::default();
    let queue: WorkQueue<Key> = ctx.queue("service-import", Class::Placement);
    let recorder = ctx.events.recorder(NAME);
    let api: Api<DynamicObject> = Api::all_with(ctx.client.clone(), &resource);
    let (q, seen) = (queue.clone(), imports.clone());
    let watch = tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default()).default_backoff();
        let mut stream = std::pin::pin!(stream);
        let mut listed: HashSet<Key> = HashSet::new();
        let key = |o: &DynamicObject| Key::new(o.namespace().unwrap_or_default(), o.name_any());
        while let Some(ev) = futures::StreamExt::next(&mut stream).await {
            let mut imports = seen.lock().unwrap_or_else(|p| p.into_inner());
            match ev {
                Ok(watcher::Event::Init) => listed.clear(),
                Ok(watcher::Event::InitApply(o)) => {
                    listed.insert(key(&o));
                    q.add(key(&o));
                    imports.insert(key(&o), Arc::new(o));
                }
                Ok(watcher::Event::InitDone) => {
                    for gone in imports.keys().filter(|k| !listed.contains(*k)) {
                        q.add(gone.clone());
                    }
                    imports.retain(|k, _| listed.contains(k));
                }
                Ok(watcher::Event::Apply(o)) => {
                    q.add(key(&o));
                    imports.insert(key(&o), Arc::new(o));
                }
                Ok(watcher::Event::Delete(o)) => {
                    imports.remove(&key(&o));
                    q.add(key(&o));
                }
                Err(e) => tracing::debug!(error = %e, "service import watch failed"),
            }
        }
    });
    let (c, workers) = (ctx.clone(), ctx.settings.concurrency.work);
    let run = crate::runtime::run_after_sync(ctx, queue, workers, move |key| {
        let (ctx, imports, recorder) = (c.clone(), imports.clone(), recorder.clone());
        async move { reconcile(&ctx, &imports, &recorder, key).await }
    });
    vec![watch, run]
}

async fn reconcile(
    ctx: &Context,
    imports: &Imports,
    recorder: &Recorder,
    key: Key,
) -> Result<Requeue> {
    let import = imports
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&key)
        .cloned();
    let Some(import) = import else {
        delete_derived(ctx, &key).await?;
        return Ok(Requeue::No);
    };
    if import.metadata.deletion_timestamp.is_some()
        || import.data.pointer("/spec/type").and_then(Value::as_str) != Some("ClusterSetIP")
    {
        return Ok(Requeue::No);
    }
    let target = EventTarget {
        api_version: MCS_API_VERSION.into(),
        kind: "ServiceImport".into(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
        uid: import.metadata.uid.clone().unwrap_or_default(),
    };
    match derive(ctx, &key, &import).await {
        Ok(()) => {
            recorder.normal(
                &target,
                REASON_SUCCEED,
                format!(
                    "Sync derived service for serviceImport({}) succeed.",
                    key.name
                ),
            );
            Ok(Requeue::No)
        }
        Err(e) => {
            recorder.warning(&target, REASON_FAILED, e.to_string());
            Err(e)
        }
    }
}

async fn delete_derived(ctx: &Context, key: &Key) -> Result<()> {
    let api: Api<Service> = Api::namespaced(ctx.client.clone(), &key.namespace);
    match api
        .delete(
            &names::derived_service_name(&key.name),
            &DeleteParams::default(),
        )
        .await
    {
        Err(e) if !is_not_found(&e) => Err(e.into()),
        _ => Ok(()),
    }
}

/// `servicePorts`: the import's ports as Service ports.
fn service_ports(import: &DynamicObject) -> Vec<Value> {
    import
        .data
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| {
            let mut port = json!({"port": p.get("port").cloned().unwrap_or(Value::Null)});
            for field in ["name", "protocol", "appProtocol"] {
                if let Some(v) = p.get(field).filter(|v| !v.is_null()) {
                    port[field] = v.clone();
                }
            }
            port
        })
        .collect()
}

/// deriveServiceFromServiceImport and updateServiceStatus.
async fn derive(ctx: &Context, key: &Key, import: &DynamicObject) -> Result<()> {
    let api: Api<Service> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let name = names::derived_service_name(&key.name);
    let ports = service_ports(import);
    let ingress: Vec<Value> = import
        .data
        .pointer("/spec/ips")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|ip| json!({"ip": ip}))
        .collect();
    let mut written = None;
    for _ in 0..5 {
        match api.get_opt(&name).await? {
            None => {
                let svc: Service = serde_json::from_value(json!({
                    "metadata": {"name": name, "namespace": key.namespace},
                    "spec": {"type": "ClusterIP", "ports": ports},
                }))?;
                match api.create(&PostParams::default(), &svc).await {
                    Ok(s) => {
                        written = Some(s);
                        break;
                    }
                    Err(e) if is_already_exists(&e) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            Some(current) => {
                // The ports as the server defaulted them, to compare like with like.
                let mut wanted: Service = serde_json::from_value(json!({
                    "metadata": {"name": name, "namespace": key.namespace,
                                 "resourceVersion": current.metadata.resource_version},
                    "spec": {"type": "ClusterIP", "ports": ports,
                             "clusterIP": current.spec.as_ref().and_then(|s| s.cluster_ip.clone())},
                }))?;
                let same_ports = current.spec.as_ref().map(|s| {
                    s.ports
                        .iter()
                        .flatten()
                        .map(|p| (&p.name, &p.protocol, p.port, &p.app_protocol))
                        .collect::<Vec<_>>()
                }) == wanted.spec.as_ref().map(|s| {
                    s.ports
                        .iter()
                        .flatten()
                        .map(|p| (&p.name, &p.protocol, p.port, &p.app_protocol))
                        .collect::<Vec<_>>()
                });
                let same_type =
                    current.spec.as_ref().and_then(|s| s.type_.as_deref()) == Some("ClusterIP");
                if same_ports && same_type {
                    written = Some(current);
                    break;
                }
                wanted.metadata.labels = current.metadata.labels.clone();
                wanted.metadata.annotations = current.metadata.annotations.clone();
                match api.replace(&name, &PostParams::default(), &wanted).await {
                    Ok(s) => {
                        written = Some(s);
                        break;
                    }
                    Err(e) if is_conflict(&e) || is_not_found(&e) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    let Some(svc) = written else {
        return Err(Error::msg(format!(
            "service {}/{name}: too many conflicts",
            key.namespace
        )));
    };
    let current_ingress = svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .map(|i| i.iter().filter_map(|x| x.ip.clone()).collect::<Vec<_>>())
        .unwrap_or_default();
    let wanted_ingress: Vec<String> = ingress
        .iter()
        .filter_map(|i| i["ip"].as_str().map(str::to_owned))
        .collect();
    if current_ingress != wanted_ingress {
        let patch = json!({"status": {"loadBalancer": {"ingress": ingress}}});
        api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(())
}
