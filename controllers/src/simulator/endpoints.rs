//! kube-controller-manager's endpointslice and endpoints controllers
//! (pkg/controller/endpointslice, pkg/controller/endpoint) for a simulated member: every
//! Service with a selector gets EndpointSlices (`<service>-<suffix>`, at most 100 endpoints
//! each, one per set of resolved ports, labelled `kubernetes.io/service-name` and managed by
//! `endpointslice-controller.k8s.io`, owned by the Service) and an Endpoints object of its
//! name, listing the pods its selector matches.
//!
//! The pods are the Pods users create (with the address the simulator gave them) and the
//! virtual pods of simulated Deployments, StatefulSets, ReplicaSets (not owned by a
//! Deployment) and DaemonSets, which have no Pod objects: `spec.replicas` of them (a
//! DaemonSet's `desiredNumberScheduled`), named `<workload>-<i>`, spread over the ready
//! nodes, the first `readyReplicas` (`numberReady`) ready, each with an address of the
//! member's pod CIDR that it keeps while it exists. Named target ports resolve against the
//! pod template's container ports, as kube's `podutil.FindPort` does.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Endpoints, Node, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{ApiResource, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::reflector::Store;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::pod_network::{Allocator, PodCidr};

/// `endpointslice.kubernetes.io/managed-by` of the slices kube's controller writes.
pub const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
/// The label naming a slice's Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
/// The label naming a slice's manager.
pub const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
/// kube's `maxEndpointsPerSlice` default.
const MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// Changes within this window make one pass (kube batches with `--endpoint-updates-batch-period`,
/// off by default; a short window here keeps a scaling workload from rewriting every step).
const BATCH: Duration = Duration::from_millis(20);
/// Writes in flight per pass.
const WRITES: usize = 16;
/// How soon failed writes are made again.
const RETRY: Duration = Duration::from_secs(1);
/// The field manager of the writes.
const FIELD_MANAGER: &str = "endpointslice-controller";

type Key = (String, String);

/// A Service port, with its target as written.
#[derive(Clone, Debug, PartialEq)]
struct ServicePort {
    name: String,
    protocol: String,
    app_protocol: Option<String>,
    target: Target,
}

#[derive(Clone, Debug, PartialEq)]
enum Target {
    Number(i32),
    Name(String),
}

/// What the controllers read of a Service.
#[derive(Clone, Debug)]
struct Svc {
    uid: String,
    selector: BTreeMap<String, String>,
    ports: Vec<ServicePort>,
    labels: BTreeMap<String, String>,
}

/// A pod, real or virtual.
#[derive(Clone, Debug, PartialEq)]
struct PodAddr {
    name: String,
    uid: Option<String>,
    ip: String,
    node: String,
    ready: bool,
    terminating: bool,
}

/// Pods with the same labels and container ports: one Pod, or a workload's virtual pods.
#[derive(Clone, Debug, Default)]
struct Backend {
    labels: BTreeMap<String, String>,
    /// Container ports: (name, port, protocol).
    ports: Vec<(String, i32, String)>,
    pods: Vec<PodAddr>,
}

/// A resolved endpoint port.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Port {
    name: String,
    port: i32,
    protocol: String,
    app_protocol: Option<String>,
}

struct State {
    cidr: PodCidr,
    alloc: Allocator,
    services: HashMap<Key, Svc>,
    /// Backends by namespace, then by (kind, name).
    backends: HashMap<String, HashMap<Key, Backend>>,
    /// The virtual pods' allocation keys per workload, to release them.
    virtual_pods: HashMap<(String, String, String), Vec<String>>,
    /// The slices and Endpoints written per Service, with a digest of their content.
    written: HashMap<Key, (Vec<String>, u64)>,
    /// Slices seen in the member per Service (from an earlier run, or written by a pass).
    seen_slices: HashMap<Key, HashSet<String>>,
    dirty: HashSet<String>,
    due: Option<Instant>,
}

/// Starts the controllers.
pub fn start(client: kube::Client, cidr: PodCidr, nodes: Store<Node>) -> JoinHandle<()> {
    tokio::spawn(run(client, cidr, nodes))
}

fn labels_of(v: Option<&BTreeMap<String, String>>) -> BTreeMap<String, String> {
    v.cloned().unwrap_or_default()
}

fn service_info(s: &Service) -> Option<Svc> {
    let spec = s.spec.as_ref()?;
    let selector = spec.selector.clone().unwrap_or_default();
    let ports = spec
        .ports
        .iter()
        .flatten()
        .map(|p| ServicePort {
            name: p.name.clone().unwrap_or_default(),
            protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
            app_protocol: p.app_protocol.clone(),
            target: match &p.target_port {
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(n)) => {
                    Target::Number(*n)
                }
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s)) => {
                    match s.parse::<i32>() {
                        Ok(n) => Target::Number(n),
                        Err(_) => Target::Name(s.clone()),
                    }
                }
                None => Target::Number(p.port),
            },
        })
        .collect();
    Some(Svc {
        uid: s.metadata.uid.clone().unwrap_or_default(),
        selector,
        ports,
        labels: labels_of(s.metadata.labels.as_ref()),
    })
}

/// Container ports of a pod spec.
fn container_ports(spec: Option<&Value>) -> Vec<(String, i32, String)> {
    let mut out = Vec::new();
    for c in spec
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for p in c
            .get("ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(port) = p.get("containerPort").and_then(Value::as_i64) else {
                continue;
            };
            out.push((
                p.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                i32::try_from(port).unwrap_or(0),
                p.get("protocol")
                    .and_then(Value::as_str)
                    .unwrap_or("TCP")
                    .to_owned(),
            ));
        }
    }
    out
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn ready_nodes(nodes: &Store<Node>) -> Vec<String> {
    let mut names: Vec<String> = nodes
        .state()
        .iter()
        .filter(|n| crate::cluster::summary::node_ready(n))
        .map(|n| n.name_any())
        .collect();
    names.sort();
    names
}

impl State {
    fn new(cidr: PodCidr) -> State {
        State {
            cidr,
            alloc: Allocator::new(cidr),
            services: HashMap::new(),
            backends: HashMap::new(),
            virtual_pods: HashMap::new(),
            written: HashMap::new(),
            seen_slices: HashMap::new(),
            dirty: HashSet::new(),
            due: None,
        }
    }

    fn touch(&mut self, namespace: &str) {
        self.dirty.insert(namespace.to_owned());
        if self.due.is_none() {
            self.due = Some(Instant::now() + BATCH);
        }
    }

    fn set_backend(&mut self, namespace: &str, key: Key, backend: Option<Backend>) {
        let ns = self.backends.entry(namespace.to_owned()).or_default();
        let changed = match &backend {
            Some(b) => ns.get(&key).is_none_or(|old| {
                old.labels != b.labels || old.ports != b.ports || old.pods != b.pods
            }),
            None => ns.contains_key(&key),
        };
        match backend {
            Some(b) => {
                ns.insert(key, b);
            }
            None => {
                ns.remove(&key);
            }
        }
        if changed {
            self.touch(namespace);
        }
    }

    /// The virtual pods of a simulated workload.
    fn workload(&mut self, kind: &str, o: &DynamicObject, nodes: &[String], deleted: bool) {
        let ns = o.namespace().unwrap_or_default();
        let name = o.name_any();
        let wkey = (ns.clone(), kind.to_owned(), name.clone());
        let owned_by_deployment = o
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|r| r.kind == "Deployment");
        let (total, ready) =
            if deleted || owned_by_deployment || o.metadata.deletion_timestamp.is_some() {
                (0, 0)
            } else if kind == "DaemonSet" {
                let n = o
                    .data
                    .pointer("/status/desiredNumberScheduled")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                let r = o
                    .data
                    .pointer("/status/numberReady")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                (n, r)
            } else {
                let n = o
                    .data
                    .pointer("/spec/replicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(1);
                let r = o
                    .data
                    .pointer("/status/readyReplicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0);
                (n, r)
            };
        let total = usize::try_from(total.max(0)).unwrap_or(0);
        let ready = usize::try_from(ready.max(0)).unwrap_or(0);
        let mut keys = Vec::with_capacity(total);
        let mut pods = Vec::with_capacity(total);
        let spread = karmada_api::names::fnv32a(name.as_bytes()) as usize;
        for i in 0..total {
            let pod_name = format!("{name}-{i}");
            let alloc_key = format!("{ns}/{kind}/{pod_name}");
            let Some(ip) = self.alloc.ip(&alloc_key) else {
                tracing::warn!(namespace = %ns, workload = %name, cidr = %self.cidr, "the simulated pod CIDR is exhausted");
                break;
            };
            let node = if kind == "DaemonSet" {
                nodes.get(i).cloned().unwrap_or_default()
            } else if nodes.is_empty() {
                String::new()
            } else {
                nodes[(spread + i) % nodes.len()].clone()
            };
            keys.push(alloc_key);
            pods.push(PodAddr {
                name: pod_name,
                uid: None,
                ip: ip.to_string(),
                node,
                ready: i < ready,
                terminating: false,
            });
        }
        for old in self.virtual_pods.remove(&wkey).unwrap_or_default() {
            if !keys.contains(&old) {
                self.alloc.release(&old);
            }
        }
        let backend_key = (kind.to_owned(), name);
        if pods.is_empty() {
            self.set_backend(&ns, backend_key, None);
            return;
        }
        self.virtual_pods.insert(wkey, keys);
        let template = o.data.pointer("/spec/template");
        let backend = Backend {
            labels: string_map(template.and_then(|t| t.pointer("/metadata/labels"))),
            ports: container_ports(template.and_then(|t| t.get("spec"))),
            pods,
        };
        self.set_backend(&ns, backend_key, Some(backend));
    }

    /// A Pod a user created, once it has an address.
    fn pod(&mut self, p: &Pod, deleted: bool) {
        let ns = p.namespace().unwrap_or_default();
        let key = ("Pod".to_owned(), p.name_any());
        let status = p.status.as_ref();
        let ip = status.and_then(|s| s.pod_ip.clone()).unwrap_or_default();
        if deleted || ip.is_empty() {
            self.set_backend(&ns, key, None);
            return;
        }
        let ready = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .any(|c| c.type_ == "Ready" && c.status == "True");
        let terminating = p.metadata.deletion_timestamp.is_some();
        let spec = serde_json::to_value(p.spec.as_ref()).ok();
        let backend = Backend {
            labels: labels_of(p.metadata.labels.as_ref()),
            ports: container_ports(spec.as_ref()),
            pods: vec![PodAddr {
                name: p.name_any(),
                uid: p.metadata.uid.clone(),
                ip,
                node: p
                    .spec
                    .as_ref()
                    .and_then(|s| s.node_name.clone())
                    .unwrap_or_default(),
                ready: ready && !terminating,
                terminating,
            }],
        };
        self.set_backend(&ns, key, Some(backend));
    }
}

/// The port a Service port reaches on a backend, if it resolves.
fn resolve(sp: &ServicePort, b: &Backend) -> Option<Port> {
    let port = match &sp.target {
        Target::Number(n) => *n,
        Target::Name(name) => {
            b.ports
                .iter()
                .find(|(n, _, proto)| n == name && *proto == sp.protocol)?
                .1
        }
    };
    Some(Port {
        name: sp.name.clone(),
        port,
        protocol: sp.protocol.clone(),
        app_protocol: sp.app_protocol.clone(),
    })
}

/// The objects one Service should have.
struct Desired {
    /// (name, body) of each slice.
    slices: Vec<(String, Value)>,
    endpoints: Value,
}

fn selected<'a>(svc: &'a Svc, backends: &'a HashMap<Key, Backend>) -> Vec<&'a Backend> {
    let mut out: Vec<(&Key, &Backend)> = backends
        .iter()
        .filter(|(_, b)| svc.selector.iter().all(|(k, v)| b.labels.get(k) == Some(v)))
        .collect();
    out.sort_by(|a, b| a.0.cmp(b.0));
    out.into_iter().map(|(_, b)| b).collect()
}

/// A suffix of kube's generated-name form, stable for one Service and slice index.
fn suffix(uid: &str, group: usize, chunk: usize) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h = karmada_api::names::fnv32a(format!("{uid}/{group}/{chunk}").as_bytes());
    let mut s = String::with_capacity(5);
    for _ in 0..5 {
        s.push(ALPHABET[(h % ALPHABET.len() as u32) as usize] as char);
        h /= ALPHABET.len() as u32;
    }
    s
}

fn desired(ns: &str, name: &str, svc: &Svc, backends: &HashMap<Key, Backend>) -> Desired {
    // Endpoints grouped by the ports they resolve to, as kube's reconciler groups them.
    let mut groups: BTreeMap<Vec<Port>, Vec<&PodAddr>> = BTreeMap::new();
    for b in selected(svc, backends) {
        let ports: Vec<Port> = svc.ports.iter().filter_map(|sp| resolve(sp, b)).collect();
        groups.entry(ports).or_default().extend(b.pods.iter());
    }
    let owner = json!([{
        "apiVersion": "v1", "kind": "Service", "name": name, "uid": svc.uid,
        "controller": true, "blockOwnerDeletion": true,
    }]);
    let mut slice_labels: serde_json::Map<String, Value> = svc
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    slice_labels.insert(SERVICE_NAME_LABEL.into(), json!(name));
    slice_labels.insert(MANAGED_BY_LABEL.into(), json!(MANAGED_BY));
    let mut slices = Vec::new();
    let mut subsets = Vec::new();
    let ports_json = |ports: &[Port], slice: bool| -> Vec<Value> {
        ports
            .iter()
            .map(|p| {
                let mut v = json!({"name": p.name, "port": p.port, "protocol": p.protocol});
                if let Some(a) = &p.app_protocol {
                    v["appProtocol"] = json!(a);
                }
                if !slice && p.name.is_empty() {
                    v.as_object_mut().map(|m| m.remove("name"));
                }
                v
            })
            .collect()
    };
    let target = |p: &PodAddr| {
        let mut t = json!({"kind": "Pod", "namespace": ns, "name": p.name});
        if let Some(uid) = &p.uid {
            t["uid"] = json!(uid);
        }
        t
    };
    for (g, (ports, pods)) in groups.iter().enumerate() {
        let mut pods = pods.clone();
        pods.sort_by(|a, b| a.ip.cmp(&b.ip));
        for (c, chunk) in pods.chunks(MAX_ENDPOINTS_PER_SLICE).enumerate() {
            let slice_name = format!("{}-{}", truncate_prefix(name), suffix(&svc.uid, g, c));
            let endpoints: Vec<Value> = chunk
                .iter()
                .map(|p| {
                    let mut e = json!({
                        "addresses": [p.ip],
                        "conditions": {"ready": p.ready, "serving": p.ready || p.terminating, "terminating": p.terminating},
                        "targetRef": target(p),
                    });
                    if !p.node.is_empty() {
                        e["nodeName"] = json!(p.node);
                    }
                    e
                })
                .collect();
            slices.push((
                slice_name.clone(),
                json!({
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {"name": slice_name, "namespace": ns, "labels": slice_labels, "ownerReferences": owner},
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                    "ports": ports_json(ports, true),
                }),
            ));
        }
        if ports.is_empty() {
            // The Endpoints API cannot list an address without ports.
            continue;
        }
        let address = |p: &&PodAddr| {
            let mut a = json!({"ip": p.ip, "targetRef": target(p)});
            if !p.node.is_empty() {
                a["nodeName"] = json!(p.node);
            }
            a
        };
        let ready: Vec<Value> = pods.iter().filter(|p| p.ready).map(address).collect();
        let unready: Vec<Value> = pods.iter().filter(|p| !p.ready).map(address).collect();
        let mut subset = json!({"ports": ports_json(ports, false)});
        if !ready.is_empty() {
            subset["addresses"] = json!(ready);
        }
        if !unready.is_empty() {
            subset["notReadyAddresses"] = json!(unready);
        }
        subsets.push(subset);
    }
    let mut ep_labels: serde_json::Map<String, Value> = svc
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    ep_labels.insert(
        "endpointslice.kubernetes.io/skip-mirror".into(),
        json!("true"),
    );
    let endpoints = json!({
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name, "namespace": ns, "labels": ep_labels},
        "subsets": subsets,
    });
    Desired { slices, endpoints }
}

/// kube's `getEndpointSlicePrefix`: the Service name and a dash, the name cut so the generated
/// name fits in 63 characters.
fn truncate_prefix(name: &str) -> &str {
    const MAX: usize = 63 - 6;
    if name.len() > MAX { &name[..MAX] } else { name }
}

fn digest(d: &Desired) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (n, v) in &d.slices {
        n.hash(&mut h);
        v.to_string().hash(&mut h);
    }
    d.endpoints.to_string().hash(&mut h);
    h.finish()
}

/// One write, for the Service it is made for.
struct Write {
    service: Key,
    op: Op,
}

enum Op {
    Apply {
        api: ApiResource,
        namespace: String,
        name: String,
        body: Value,
    },
    Delete {
        api: ApiResource,
        namespace: String,
        name: String,
    },
}

fn slice_resource() -> ApiResource {
    ApiResource::erase::<EndpointSlice>(&())
}

fn endpoints_resource() -> ApiResource {
    ApiResource::erase::<Endpoints>(&())
}

impl State {
    /// The writes that bring the dirty namespaces' Services' objects up to date.
    fn pass(&mut self) -> Vec<Write> {
        self.due = None;
        let dirty: Vec<String> = self.dirty.drain().collect();
        let mut writes = Vec::new();
        let empty = HashMap::new();
        for ns in dirty {
            let mut names: Vec<Key> = self
                .services
                .keys()
                .filter(|(n, _)| *n == ns)
                .cloned()
                .collect();
            names.sort();
            for key in names {
                let Some(svc) = self.services.get(&key) else {
                    continue;
                };
                if svc.selector.is_empty() {
                    // kube manages no endpoints for a Service without a selector.
                    continue;
                }
                let d = desired(&ns, &key.1, svc, self.backends.get(&ns).unwrap_or(&empty));
                let sum = digest(&d);
                if self.written.get(&key).is_some_and(|(_, s)| *s == sum) {
                    continue;
                }
                let names: Vec<String> = d.slices.iter().map(|(n, _)| n.clone()).collect();
                let seen = self.seen_slices.entry(key.clone()).or_default();
                let write = |op| Write {
                    service: key.clone(),
                    op,
                };
                for stale in seen.iter().filter(|s| !names.contains(s)) {
                    writes.push(write(Op::Delete {
                        api: slice_resource(),
                        namespace: ns.clone(),
                        name: stale.clone(),
                    }));
                }
                *seen = names.iter().cloned().collect();
                for (name, body) in d.slices {
                    writes.push(write(Op::Apply {
                        api: slice_resource(),
                        namespace: ns.clone(),
                        name,
                        body,
                    }));
                }
                writes.push(write(Op::Apply {
                    api: endpoints_resource(),
                    namespace: ns.clone(),
                    name: key.1.clone(),
                    body: d.endpoints,
                }));
                self.written.insert(key, (names, sum));
            }
        }
        writes
    }

    fn service_gone(&mut self, key: &Key) -> Vec<Write> {
        self.services.remove(key);
        self.written.remove(key);
        self.seen_slices.remove(key);
        // The slices go with their owner (garbage collection); kube's endpoints controller
        // deletes the Endpoints itself.
        vec![Write {
            service: key.clone(),
            op: Op::Delete {
                api: endpoints_resource(),
                namespace: key.0.clone(),
                name: key.1.clone(),
            },
        }]
    }
}

/// Makes the writes; returns the Services some write failed for.
async fn execute(client: &kube::Client, writes: Vec<Write>) -> HashSet<Key> {
    let failed = &std::sync::Mutex::new(HashSet::new());
    futures::stream::iter(writes)
        .for_each_concurrent(WRITES, |w| async move {
            let result = match &w.op {
                Op::Apply {
                    api,
                    namespace,
                    name,
                    body,
                } => Api::<DynamicObject>::namespaced_with(client.clone(), namespace, api)
                    .patch(
                        name,
                        &PatchParams::apply(FIELD_MANAGER).force(),
                        &Patch::Apply(body),
                    )
                    .await
                    .map(|_| ()),
                Op::Delete {
                    api,
                    namespace,
                    name,
                } => match Api::<DynamicObject>::namespaced_with(client.clone(), namespace, api)
                    .delete(name, &DeleteParams::default())
                    .await
                {
                    Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
                    other => other.map(|_| ()),
                },
            };
            if let Err(e) = result {
                tracing::warn!(namespace = %w.service.0, service = %w.service.1, error = %e, "simulated endpoints write failed");
                failed
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(w.service);
            }
        })
        .await;
    std::mem::take(&mut *failed.lock().unwrap_or_else(|p| p.into_inner()))
}

/// The slices an earlier run left, so a pass removes the ones no longer wanted.
async fn seed(client: &kube::Client, state: &mut State) {
    let api = Api::<EndpointSlice>::all(client.clone());
    let lp = ListParams::default().labels(&format!("{MANAGED_BY_LABEL}={MANAGED_BY}"));
    match api.list(&lp).await {
        Ok(list) => {
            for s in list.items {
                let Some(svc) = s.labels().get(SERVICE_NAME_LABEL).cloned() else {
                    continue;
                };
                state
                    .seen_slices
                    .entry((s.namespace().unwrap_or_default(), svc))
                    .or_default()
                    .insert(s.name_any());
            }
        }
        Err(e) => tracing::debug!(error = %e, "listing simulated EndpointSlices failed"),
    }
}

fn workload_resource(kind: &str) -> ApiResource {
    let gvk = kube::api::GroupVersionKind::gvk("apps", "v1", kind);
    ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", kind.to_lowercase()))
}

/// The workload kinds whose virtual pods back Services.
const WORKLOADS: [&str; 4] = ["Deployment", "StatefulSet", "ReplicaSet", "DaemonSet"];

async fn run(client: kube::Client, cidr: PodCidr, nodes: Store<Node>) {
    let mut state = State::new(cidr);
    seed(&client, &mut state).await;
    let services = watcher(
        Api::<Service>::all(client.clone()),
        watcher::Config::default(),
    )
    .default_backoff();
    let pods =
        watcher(Api::<Pod>::all(client.clone()), watcher::Config::default()).default_backoff();
    let workloads = futures::stream::select_all(WORKLOADS.iter().map(|kind| {
        let api = Api::<DynamicObject>::all_with(client.clone(), &workload_resource(kind));
        watcher(api, watcher::Config::default())
            .default_backoff()
            .map(move |ev| (*kind, ev))
            .boxed()
    }));
    let mut services = std::pin::pin!(services);
    let mut pods = std::pin::pin!(pods);
    let mut workloads = std::pin::pin!(workloads);
    let client = Arc::new(client);
    loop {
        tokio::select! {
            ev = services.next() => {
                let Some(ev) = ev else { return };
                match ev {
                    Ok(watcher::Event::Apply(s) | watcher::Event::InitApply(s)) => {
                        let key = (s.namespace().unwrap_or_default(), s.name_any());
                        if let Some(info) = service_info(&s) {
                            state.services.insert(key.clone(), info);
                            state.written.remove(&key);
                            state.touch(&key.0);
                        }
                    }
                    Ok(watcher::Event::Delete(s)) => {
                        let key = (s.namespace().unwrap_or_default(), s.name_any());
                        let writes = state.service_gone(&key);
                        execute(&client, writes).await;
                    }
                    Ok(_) => {}
                    Err(e) => tracing::debug!(error = %e, "simulated endpoints: service watch failed"),
                }
            }
            ev = pods.next() => {
                let Some(ev) = ev else { return };
                match ev {
                    Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => state.pod(&p, false),
                    Ok(watcher::Event::Delete(p)) => state.pod(&p, true),
                    Ok(_) => {}
                    Err(e) => tracing::debug!(error = %e, "simulated endpoints: pod watch failed"),
                }
            }
            ev = workloads.next() => {
                let Some((kind, ev)) = ev else { return };
                let nodes = ready_nodes(&nodes);
                match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => state.workload(kind, &o, &nodes, false),
                    Ok(watcher::Event::Delete(o)) => state.workload(kind, &o, &nodes, true),
                    Ok(_) => {}
                    Err(e) => tracing::debug!(kind, error = %e, "simulated endpoints: workload watch failed"),
                }
            }
            _ = tokio::time::sleep_until(state.due.unwrap_or_else(Instant::now)), if state.due.is_some() => {
                let writes = state.pass();
                for key in execute(&client, writes).await {
                    // Written again on a later pass.
                    state.written.remove(&key);
                    state.dirty.insert(key.0);
                    state.due = Some(Instant::now() + RETRY);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
