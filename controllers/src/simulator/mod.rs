//! A KWOK-like simulator that makes a bare API server look like a working cluster: it
//! registers fake Nodes with allocatable cpu/memory/pods, gives Deployments, StatefulSets,
//! ReplicaSets, DaemonSets, Jobs and Pods the status their controllers and kubelets would
//! write once everything is running (after a configurable delay), and finalizes deleted
//! namespaces as kube-controller-manager's namespace controller does.
//!
//! It creates no Pods of its own: workloads report ready replicas without pod objects, which
//! keeps a member with thousands of workloads cheap. Pods that users create are run.

mod namespaces;
mod nodes;
pub mod workloads;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
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
        )));
    }
    tasks.push(tokio::spawn(namespaces::run(client.clone())));
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

fn world(nodes: &Store<Node>) -> workloads::World {
    let ready = nodes
        .state()
        .iter()
        .filter(|n| crate::cluster::summary::node_ready(n))
        .count();
    workloads::World {
        ready_nodes: i64::try_from(ready).unwrap_or(i64::MAX),
        now: k8s_openapi::jiff::Timestamp::now()
            .round(k8s_openapi::jiff::Unit::Second)
            .unwrap_or_else(|_| k8s_openapi::jiff::Timestamp::now())
            .to_string(),
        node_ip: nodes::NODE_IP.to_owned(),
    }
}

/// The desired status of an object if it differs from its current one.
fn wanted(kind: &str, o: &DynamicObject, nodes: &Store<Node>) -> Option<serde_json::Value> {
    // The pure functions read metadata (name, generation) as well as spec and status.
    let full = serde_json::to_value(o).ok()?;
    let desired = workloads::ready_status(kind, &full, &world(nodes))?;
    (!workloads::already(o.data.get("status"), &desired)).then_some(desired)
}

/// Watches one kind and writes the ready status of each object `delay` after it first
/// needed one.
async fn run_kind(
    client: kube::Client,
    ar: ApiResource,
    kind: &'static str,
    delay: Duration,
    nodes: Store<Node>,
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
                        if wanted(kind, &o, &nodes).is_some() {
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
                    let Some(desired) = wanted(kind, o, &nodes) else { continue };
                    let patch = workloads::status_patch(o.data.get("status"), &desired);
                    let api = match &k.0 {
                        ns if ns.is_empty() => Api::<DynamicObject>::all_with(client.clone(), &ar),
                        ns => Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar),
                    };
                    let permit = writes.clone().acquire_owned().await;
                    tokio::spawn(async move {
                        let _permit = permit;
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
