//! A KWOK-like simulator that makes a bare API server look like a working cluster: it
//! registers fake Nodes with allocatable cpu/memory/pods, gives Deployments, StatefulSets,
//! ReplicaSets, DaemonSets, Jobs and Pods the status their controllers and kubelets would
//! write once everything is running (after a configurable delay), and binds unscheduled
//! Pods to its nodes as kube-scheduler would, and finishes their graceful deletion as their
//! kubelet would. Namespace deletion and garbage collection come from the API server's own
//! kube-controller-manager controllers.
//!
//! It creates no Pods of its own: workloads report ready replicas without pod objects, which
//! keeps a member with thousands of workloads cheap. Pods that users create are run.
//! ResourceQuotas get the status kube's quota controller would write, counting both real
//! Pods and the virtual pods of simulated workloads ([`quota`]).

pub mod endpoints;
mod nodes;
pub mod pod_network;
mod quota;
pub mod workloads;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio::time::Instant;

pub use nodes::node_name;

/// How many status writes the simulator has in flight per kind.
const WRITE_CONCURRENCY: usize = 16;

/// Why the simulator could not start.
#[derive(Debug, thiserror::Error)]
pub enum SimulatorError {
    /// Registering the nodes failed.
    #[error("registering simulated node {node}: {source}")]
    Node {
        /// The node.
        node: String,
        /// The cause.
        source: kube::Error,
    },
}

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimulatorConfig {
    /// Prefix of node names (`<prefix>-node-<i>`), usually the cluster name.
    pub node_prefix: String,
    /// Number of nodes.
    pub nodes: u32,
    /// Allocatable (and capacity) cpu per node.
    pub node_cpu: String,
    /// Allocatable (and capacity) memory per node.
    pub node_memory: String,
    /// Allocatable (and capacity) pods per node.
    pub node_pods: String,
    /// How long a workload takes to become ready after it is created or changed.
    pub ready_delay: Duration,
    /// The member's pod addresses.
    pub pod_cidr: pod_network::PodCidr,
}

impl Default for SimulatorConfig {
    fn default() -> SimulatorConfig {
        SimulatorConfig {
            node_prefix: "member".into(),
            nodes: 3,
            node_cpu: "8".into(),
            node_memory: "32Gi".into(),
            node_pods: "110".into(),
            ready_delay: Duration::from_millis(500),
            pod_cidr: pod_network::PodCidr::default(),
        }
    }
}

/// A running simulator; dropping it stops it.
#[derive(Debug)]
pub struct Simulator {
    tasks: Vec<JoinHandle<()>>,
}

impl Simulator {
    /// Stops every simulator task.
    pub fn stop(self) {}
}

impl Drop for Simulator {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Registers the nodes, then starts the workload and namespace loops.
pub async fn start(
    client: kube::Client,
    config: SimulatorConfig,
) -> Result<Simulator, SimulatorError> {
    nodes::ensure(&client, &config).await?;
    let (node_store, writer) = reflector::store::<Node>();
    let node_stream = reflector::reflector(
        writer,
        watcher(Api::<Node>::all(client.clone()), watcher::Config::default()).default_backoff(),
    );
    let mut tasks = vec![tokio::spawn(async move {
        let mut s = std::pin::pin!(node_stream);
        while s.next().await.is_some() {}
    })];
    for (group, version, kind) in workloads::KINDS {
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let plural = format!("{}s", kind.to_lowercase());
        let ar = ApiResource::from_gvk_with_plural(&gvk, &plural);
        tasks.push(tokio::spawn(run_kind(
            client.clone(),
            ar,
            kind,
            config.ready_delay,
            node_store.clone(),
            config.pod_cidr,
        )));
    }
    tasks.push(endpoints::start(
        client.clone(),
        config.pod_cidr,
        node_store,
    ));
    tasks.extend(quota::start(client));
    Ok(Simulator { tasks })
}

type Key = (String, String);

fn key(o: &DynamicObject) -> Key {
    (o.namespace().unwrap_or_default(), o.name_any())
}

/// What a status write depends on: the generation (workloads) or uid (pods).
fn revision(o: &DynamicObject) -> String {
    match o.metadata.generation {
        Some(g) => g.to_string(),
        None => o.metadata.uid.clone().unwrap_or_default(),
    }
}

fn world(nodes: &Store<Node>, pod_cidr: pod_network::PodCidr) -> workloads::World {
    let mut ready: Vec<(String, String)> = nodes
        .state()
        .iter()
        .filter(|n| crate::cluster::summary::node_ready(n))
        .map(|n| {
            let ip = n
                .status
                .as_ref()
                .and_then(|s| s.addresses.as_ref())
                .and_then(|a| a.iter().find(|a| a.type_ == "InternalIP"))
                .map(|a| a.address.clone())
                .unwrap_or_default();
            (n.name_any(), ip)
        })
        .collect();
    ready.sort();
    workloads::World {
        nodes: ready,
        pod_cidr,
        now: k8s_openapi::jiff::Timestamp::now()
            .round(k8s_openapi::jiff::Unit::Second)
            .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now())
            .to_string(),
    }
}

/// Whether a pod still has to be bound to a node.
fn unscheduled(kind: &str, full: &serde_json::Value) -> bool {
    kind == "Pod"
        && full
            .pointer("/spec/nodeName")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
            .is_empty()
}

/// How long a pod in graceful deletion (deletionTimestamp set, grace period above 0) has left:
/// its kubelet stops the containers and then removes it with a grace period of 0. Simulated
/// containers stop at once, so the simulator removes it after its usual delay (never later
/// than the grace period).
fn terminating_pod(kind: &str, o: &DynamicObject) -> Option<Duration> {
    if kind != "Pod" || o.metadata.deletion_timestamp.is_none() {
        return None;
    }
    let grace = o.metadata.deletion_grace_period_seconds?;
    (grace > 0).then(|| Duration::from_secs(grace.unsigned_abs()))
}

/// Removes a terminating pod as its kubelet's status manager does: grace period 0, on
/// condition that it is still the same pod.
async fn remove_pod(api: Api<DynamicObject>, name: &str, uid: Option<String>) {
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid,
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(name, &params).await {
        Ok(_) => {}
        // Gone already, or replaced by a new pod of the same name.
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => {}
        Err(e) => tracing::warn!(pod = %name, error = %e, "simulated pod removal failed"),
    }
}

/// The object as the pure status functions read it: its body plus the only metadata they use
/// (name, generation and the ready switch). Serializing the whole metadata, managedFields and Karmada's
/// annotations included, for every watch event was most of the simulator's cost.
fn status_view(o: &DynamicObject) -> serde_json::Value {
    let mut full = o.data.clone();
    if let Some(fields) = full.as_object_mut() {
        fields.insert(
            "metadata".into(),
            // The name, the generation, and the switch that keeps a workload unready.
            serde_json::json!({
                "name": o.metadata.name,
                "generation": o.metadata.generation,
                "annotations": o.metadata.annotations.as_ref().and_then(|a| a
                    .get(workloads::READY_ANNOTATION)
                    .map(|v| serde_json::json!({workloads::READY_ANNOTATION: v}))),
            }),
        );
    }
    full
}

/// The desired status of an object if it differs from its current one, and the node an
/// unscheduled pod is bound to on the way (as kube-scheduler would).
fn wanted(
    kind: &str,
    o: &DynamicObject,
    nodes: &Store<Node>,
    pod_cidr: pod_network::PodCidr,
) -> Option<(serde_json::Value, Option<String>)> {
    let mut full = status_view(o);
    let world = world(nodes, pod_cidr);
    let mut bind = None;
    if unscheduled(kind, &full) {
        let node = world.pick_node(&o.name_any())?.to_owned();
        if let Some(spec) = full
            .get_mut("spec")
            .and_then(serde_json::Value::as_object_mut)
        {
            spec.insert("nodeName".into(), serde_json::Value::String(node.clone()));
        }
        bind = Some(node);
    }
    let desired = workloads::ready_status(kind, &full, &world)?;
    (bind.is_some() || !workloads::already(o.data.get("status"), &desired))
        .then_some((desired, bind))
}

/// Binds a pod to a node: the `binding` subresource as kube-scheduler does, or setting
/// `spec.nodeName` where that subresource is not served.
async fn bind(
    client: &kube::Client,
    namespace: &str,
    pod: &str,
    node: &str,
) -> Result<(), kube::Error> {
    let pods = Api::<k8s_openapi::api::core::v1::Pod>::namespaced(client.clone(), namespace);
    let binding = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    });
    let body = serde_json::to_vec(&binding).map_err(kube::Error::SerdeError)?;
    let url = format!("/api/v1/namespaces/{namespace}/pods/{pod}/binding");
    let req = http::Request::post(url)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(kube::Error::HttpError)?;
    match client.request_text(req).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 405 => {
            let patch = serde_json::json!({"spec": {"nodeName": node}});
            pods.patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map(|_| ())
        }
        Err(e) => Err(e),
    }
}

/// Watches one kind and writes the ready status of each object `delay` after it first
/// needed one.
async fn run_kind(
    client: kube::Client,
    ar: ApiResource,
    kind: &'static str,
    delay: Duration,
    nodes: Store<Node>,
    pod_cidr: pod_network::PodCidr,
) {
    let api = Api::<DynamicObject>::all_with(client.clone(), &ar);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut latest: HashMap<Key, DynamicObject> = HashMap::new();
    let mut pending: HashMap<Key, (String, Instant)> = HashMap::new();
    let mut listed: HashSet<Key> = HashSet::new();
    let writes = Arc::new(Semaphore::new(WRITE_CONCURRENCY));

    loop {
        let next_due = pending.values().map(|(_, due)| *due).min();
        tokio::select! {
            ev = stream.next() => {
                let Some(ev) = ev else { return };
                match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                        let k = key(&o);
                        listed.insert(k.clone());
                        if let Some(grace) = terminating_pod(kind, &o) {
                            let rev = format!("terminating:{}", revision(&o));
                            if pending.get(&k).is_none_or(|(r, _)| *r != rev) {
                                pending.insert(k.clone(), (rev, Instant::now() + delay.min(grace)));
                            }
                        } else if wanted(kind, &o, &nodes, pod_cidr).is_some() {
                            let rev = revision(&o);
                            if pending.get(&k).is_none_or(|(r, _)| *r != rev) {
                                pending.insert(k.clone(), (rev, Instant::now() + delay));
                            }
                        } else {
                            pending.remove(&k);
                        }
                        latest.insert(k, o);
                    }
                    Ok(watcher::Event::Delete(o)) => {
                        let k = key(&o);
                        latest.remove(&k);
                        pending.remove(&k);
                    }
                    Ok(watcher::Event::Init) => listed.clear(),
                    Ok(watcher::Event::InitDone) => {
                        latest.retain(|k, _| listed.contains(k));
                        pending.retain(|k, _| listed.contains(k));
                    }
                    Err(e) => tracing::debug!(kind, error = %e, "simulator watch failed"),
                }
            }
            _ = tokio::time::sleep_until(next_due.unwrap_or_else(Instant::now)), if next_due.is_some() => {
                let now = Instant::now();
                let due: Vec<Key> = pending
                    .iter()
                    .filter(|(_, (_, at))| *at <= now)
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in due {
                    pending.remove(&k);
                    let Some(o) = latest.get(&k) else { continue };
                    let api = match &k.0 {
                        ns if ns.is_empty() => Api::<DynamicObject>::all_with(client.clone(), &ar),
                        ns => Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar),
                    };
                    if terminating_pod(kind, o).is_some() {
                        let permit = writes.clone().acquire_owned().await;
                        let uid = o.metadata.uid.clone();
                        tokio::spawn(async move {
                            let _permit = permit;
                            remove_pod(api, &k.1, uid).await;
                        });
                        continue;
                    }
                    let Some((desired, node)) = wanted(kind, o, &nodes, pod_cidr) else { continue };
                    let patch = workloads::status_patch(o.data.get("status"), &desired);
                    let permit = writes.clone().acquire_owned().await;
                    let client = client.clone();
                    tokio::spawn(async move {
                        let _permit = permit;
                        if let Some(node) = node
                            && let Err(e) = bind(&client, &k.0, &k.1, &node).await
                        {
                            tracing::warn!(namespace = %k.0, pod = %k.1, %node, error = %e, "simulated scheduling failed");
                            return;
                        }
                        match api.patch_status(&k.1, &PatchParams::default(), &Patch::Merge(&patch)).await {
                            Ok(_) => {}
                            Err(kube::Error::Api(s)) if s.is_not_found() => {}
                            Err(e) => tracing::warn!(kind, namespace = %k.0, name = %k.1, error = %e, "simulated status write failed"),
                        }
                    });
                }
            }
        }
    }
}
