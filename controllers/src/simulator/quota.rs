//! ResourceQuota status for a simulated member, as kube-controller-manager's resource quota
//! controller writes it (pkg/controller/resourcequota, with the evaluators of
//! pkg/quota/v1/evaluator/core): `hard` is the spec's, `used` the namespace's usage of each
//! limited resource the simulator tracks.
//!
//! Usage counts real Pods and the virtual pods of simulated workloads alike: the simulator
//! creates no Pods for Deployments, StatefulSets, ReplicaSets, DaemonSets and Jobs, so each
//! such workload counts as its replicas (a Job its active pods, a DaemonSet its desired pods)
//! times its pod template's usage. A pod's usage is kube's PodUsageFunc: `pods` and
//! `count/pods`, `cpu`/`requests.cpu`, `memory`/`requests.memory`, `ephemeral-storage`
//! and their `limits.`, hugepages and `requests.<extended resource>`, from the pod's requests
//! (its containers summed, an init container's taking over when larger) and limits; pods
//! that have finished count only towards `count/pods`. The objects counted are those
//! watched: `count/<workload kinds>`, `count/pods` and `resourcequotas`; other object
//! counts are left out of `used`.
//!
//! It is event-driven: each watched object's charge is kept, and only the namespaces an event
//! touched are summed again, shortly after the event (bursts make one write per quota). A
//! member without ResourceQuotas watches nothing but them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, Pod, PodSpec, ResourceQuota};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::federated_resource_quota::usage::Usage;

/// How long after an event the touched namespaces' quotas are written.
const SETTLE: Duration = Duration::from_millis(100);

/// Object counts the simulator tracks (`count/<resource>.<group>`).
const COUNTED: &[&str] = &[
    "count/pods",
    "count/deployments.apps",
    "count/statefulsets.apps",
    "count/replicasets.apps",
    "count/daemonsets.apps",
    "count/jobs.batch",
    "count/resourcequotas",
    "resourcequotas",
];

/// Whether `used` reports a resource: the compute resources of pods, hugepages, extended
/// resources and the counted objects.
fn tracked(name: &str) -> bool {
    COUNTED.contains(&name)
        || matches!(name, "pods" | "cpu" | "memory" | "ephemeral-storage")
        || name.starts_with("requests.")
        || name.starts_with("limits.")
        || name.starts_with("hugepages-")
}

/// What one object adds to its namespace's usage.
enum Event {
    Charge(&'static str, String, String, Usage),
    Quota(String, String, Box<ResourceQuota>),
    Gone(&'static str, String, String),
    /// A relist of one kind ended: these objects are all there is.
    Listed(&'static str, HashSet<(String, String)>),
}

/// The requests (or limits) of a pod: its containers and restartable init containers summed,
/// each other init container's (with the sidecars started before it) taking over when
/// larger, plus the pod's overhead (PodRequests / PodLimits).
fn pod_amounts(
    spec: &PodSpec,
    pick: fn(&Container) -> Option<&BTreeMap<String, Quantity>>,
) -> Usage {
    let mut sum = Usage::default();
    for c in &spec.containers {
        if let Some(l) = pick(c) {
            sum.add_list(l, 1);
        }
    }
    let mut sidecars = Usage::default();
    let mut init_max = Usage::default();
    for c in spec.init_containers.iter().flatten() {
        let sidecar = c.restart_policy.as_deref() == Some("Always");
        let mut this = Usage::default();
        if let Some(l) = pick(c) {
            this.add_list(l, 1);
        }
        if sidecar {
            sum.add_usage(&this);
            sidecars.add_usage(&this);
        } else {
            this.add_usage(&sidecars);
            init_max = init_max.max(&this);
        }
    }
    let mut out = sum.max(&init_max);
    if let Some(o) = &spec.overhead {
        out.add_list(o, 1);
    }
    out
}

/// podComputeUsageHelper: the quota resources one running pod uses.
fn pod_usage(spec: &PodSpec) -> Usage {
    let requests = pod_amounts(spec, |c| c.resources.as_ref()?.requests.as_ref());
    let limits = pod_amounts(spec, |c| c.resources.as_ref()?.limits.as_ref());
    let mut u = Usage::default();
    u.add("pods", 1_000_000_000, false);
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some((nanos, binary)) = requests.get(r) {
            u.add(r, nanos, binary);
            u.add(&format!("requests.{r}"), nanos, binary);
        }
        if let Some((nanos, binary)) = limits.get(r) {
            u.add(&format!("limits.{r}"), nanos, binary);
        }
    }
    for (r, nanos, binary) in requests.entries() {
        if r.starts_with("hugepages-") {
            u.add(r, nanos, binary);
            u.add(&format!("requests.{r}"), nanos, binary);
        } else if r.contains('/') && !r.contains("kubernetes.io/") && !r.starts_with("requests.") {
            u.add(&format!("requests.{r}"), nanos, binary);
        }
    }
    u
}

/// QuotaV1Pod: whether a pod still holds its compute resources (not finished, and not past
/// its graceful deletion).
fn pod_running(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    match (
        &pod.metadata.deletion_timestamp,
        pod.metadata.deletion_grace_period_seconds,
    ) {
        (Some(at), Some(grace)) => {
            let end =
                at.0.checked_add(k8s_openapi::jiff::SignedDuration::from_secs(grace));
            end.is_ok_and(|end| k8s_openapi::jiff::Timestamp::now() <= end)
        }
        _ => true,
    }
}

/// A real Pod's charge (PodUsageFunc).
fn pod_charge(pod: &Pod) -> Usage {
    let mut u = Usage::default();
    if pod_running(pod)
        && let Some(spec) = &pod.spec
    {
        u = pod_usage(spec);
    }
    u.add("count/pods", 1_000_000_000, false);
    u
}

/// A workload's charge: itself counted, and `replicas` virtual pods of its template.
fn workload_charge(count: &str, replicas: i32, template: Option<&PodSpec>) -> Usage {
    let mut u = Usage::default();
    u.add(count, 1_000_000_000, false);
    if replicas > 0
        && let Some(spec) = template
    {
        let mut pod = pod_usage(spec);
        pod.add("count/pods", 1_000_000_000, false);
        u.add_usage(&pod.times(i64::from(replicas)));
    }
    u
}

fn has_controller(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.controller == Some(true))
}

/// The active pods of a Job: its parallelism, at most the completions still missing, none
/// once it finished.
fn job_pods(job: &Job) -> i32 {
    let spec = job.spec.as_ref();
    let status = job.status.as_ref();
    if status.is_some_and(|s| s.completion_time.is_some())
        || status.and_then(|s| s.conditions.as_ref()).is_some_and(|c| {
            c.iter()
                .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        })
    {
        return 0;
    }
    let parallelism = spec.and_then(|s| s.parallelism).unwrap_or(1);
    match spec.and_then(|s| s.completions) {
        Some(n) => parallelism.min((n - status.and_then(|s| s.succeeded).unwrap_or(0)).max(0)),
        None => parallelism,
    }
}

fn charge_of_deployment(d: &Deployment) -> Usage {
    let spec = d.spec.as_ref();
    workload_charge(
        "count/deployments.apps",
        spec.and_then(|s| s.replicas).unwrap_or(1),
        spec.and_then(|s| s.template.spec.as_ref()),
    )
}

fn charge_of_statefulset(s: &StatefulSet) -> Usage {
    let spec = s.spec.as_ref();
    workload_charge(
        "count/statefulsets.apps",
        spec.and_then(|s| s.replicas).unwrap_or(1),
        spec.and_then(|s| s.template.spec.as_ref()),
    )
}

fn charge_of_replicaset(r: &ReplicaSet) -> Usage {
    let spec = r.spec.as_ref();
    // A ReplicaSet a Deployment owns would be counted twice; the simulator makes none, but a
    // member may hold some.
    let replicas = if has_controller(&r.metadata) {
        0
    } else {
        spec.and_then(|s| s.replicas).unwrap_or(1)
    };
    workload_charge(
        "count/replicasets.apps",
        replicas,
        spec.and_then(|s| s.template.as_ref()?.spec.as_ref()),
    )
}

fn charge_of_daemonset(d: &DaemonSet) -> Usage {
    workload_charge(
        "count/daemonsets.apps",
        d.status.as_ref().map_or(0, |s| s.desired_number_scheduled),
        d.spec.as_ref().and_then(|s| s.template.spec.as_ref()),
    )
}

fn charge_of_job(j: &Job) -> Usage {
    workload_charge(
        "count/jobs.batch",
        job_pods(j),
        j.spec.as_ref().and_then(|s| s.template.spec.as_ref()),
    )
}

/// Feeds one kind's watch into the channel; `applied` makes the event of an object seen.
fn watch<K>(
    client: &kube::Client,
    kind: &'static str,
    applied: impl Fn(String, String, K) -> Event + Send + 'static,
    tx: mpsc::UnboundedSender<Event>,
) -> JoinHandle<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + 'static,
{
    let api = Api::<K>::all(client.clone());
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
        let mut listed = HashSet::new();
        while let Some(ev) = stream.next().await {
            let sent = match ev {
                Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                    let (ns, name) = (o.namespace().unwrap_or_default(), o.name_any());
                    listed.insert((ns.clone(), name.clone()));
                    tx.send(applied(ns, name, o))
                }
                Ok(watcher::Event::Delete(o)) => tx.send(Event::Gone(
                    kind,
                    o.namespace().unwrap_or_default(),
                    o.name_any(),
                )),
                Ok(watcher::Event::Init) => {
                    listed.clear();
                    Ok(())
                }
                Ok(watcher::Event::InitDone) => {
                    tx.send(Event::Listed(kind, std::mem::take(&mut listed)))
                }
                Err(e) => {
                    tracing::debug!(kind, error = %e, "simulated quota watch failed");
                    Ok(())
                }
            };
            if sent.is_err() {
                return;
            }
        }
    })
}

/// Watches a workload kind (or Pods), each object charged by `charge`.
fn watch_charges<K>(
    client: &kube::Client,
    kind: &'static str,
    charge: fn(&K) -> Usage,
    tx: mpsc::UnboundedSender<Event>,
) -> JoinHandle<()>
where
    K: Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + DeserializeOwned
        + Send
        + 'static,
{
    watch(
        client,
        kind,
        move |ns, name, o: K| Event::Charge(kind, ns, name, charge(&o)),
        tx,
    )
}

/// The status a quota should have given its namespace's usage.
pub(crate) fn quota_status(hard: &BTreeMap<String, Quantity>, used: &Usage) -> serde_json::Value {
    let used: BTreeMap<String, Quantity> = hard
        .keys()
        .filter(|k| tracked(k))
        .map(|k| {
            let amount = used.get(k).map_or(0, |(n, _)| n);
            let binary = used.get(k).is_some_and(|(_, b)| b);
            (
                k.clone(),
                Quantity(crate::cluster::resources::format_nanos(amount, binary)),
            )
        })
        .collect();
    serde_json::json!({"hard": hard, "used": used})
}

/// Usage per namespace: each object's charge, by kind and name.
#[derive(Default)]
struct Namespaces {
    charges: HashMap<String, HashMap<(&'static str, String), Usage>>,
    quotas: HashMap<String, HashMap<String, ResourceQuota>>,
}

impl Namespaces {
    fn used(&self, ns: &str) -> Usage {
        let mut u = Usage::default();
        for c in self.charges.get(ns).into_iter().flat_map(HashMap::values) {
            u.add_usage(c);
        }
        let quotas = self.quotas.get(ns).map_or(0, HashMap::len) as i128;
        u.add("resourcequotas", quotas * 1_000_000_000, false);
        u.add("count/resourcequotas", quotas * 1_000_000_000, false);
        u
    }

    /// Applies an event; returns the namespaces it touched.
    fn apply(&mut self, ev: Event) -> Vec<String> {
        match ev {
            Event::Charge(kind, ns, name, u) => {
                self.charges
                    .entry(ns.clone())
                    .or_default()
                    .insert((kind, name), u);
                vec![ns]
            }
            Event::Quota(ns, name, q) => {
                self.quotas.entry(ns.clone()).or_default().insert(name, *q);
                vec![ns]
            }
            Event::Gone("ResourceQuota", ns, name) => {
                if let Some(m) = self.quotas.get_mut(&ns) {
                    m.remove(&name);
                }
                vec![ns]
            }
            Event::Gone(kind, ns, name) => {
                if let Some(m) = self.charges.get_mut(&ns) {
                    m.remove(&(kind, name));
                }
                vec![ns]
            }
            Event::Listed("ResourceQuota", keep) => {
                let mut touched = Vec::new();
                for (ns, m) in &mut self.quotas {
                    let before = m.len();
                    m.retain(|name, _| keep.contains(&(ns.clone(), name.clone())));
                    if m.len() != before {
                        touched.push(ns.clone());
                    }
                }
                touched
            }
            Event::Listed(kind, keep) => {
                let mut touched = Vec::new();
                for (ns, m) in &mut self.charges {
                    let before = m.len();
                    m.retain(|(k, name), _| {
                        *k != kind || keep.contains(&(ns.clone(), name.clone()))
                    });
                    if m.len() != before {
                        touched.push(ns.clone());
                    }
                }
                touched
            }
        }
    }
}

/// Starts the quota loop.
/// Tasks aborted with their owner.
struct AbortOnDrop(Vec<JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

/// Starts the watches of what quotas count.
fn watch_usage(client: &kube::Client, tx: &mpsc::UnboundedSender<Event>) -> AbortOnDrop {
    AbortOnDrop(vec![
        watch_charges::<Pod>(client, "Pod", pod_charge, tx.clone()),
        watch_charges::<Deployment>(client, "Deployment", charge_of_deployment, tx.clone()),
        watch_charges::<StatefulSet>(client, "StatefulSet", charge_of_statefulset, tx.clone()),
        watch_charges::<ReplicaSet>(client, "ReplicaSet", charge_of_replicaset, tx.clone()),
        watch_charges::<DaemonSet>(client, "DaemonSet", charge_of_daemonset, tx.clone()),
        watch_charges::<Job>(client, "Job", charge_of_job, tx.clone()),
    ])
}

/// Starts the quota loop. Until a member has a ResourceQuota only the quotas are watched;
/// the first one starts the watches of what they count.
pub(super) fn start(client: kube::Client) -> Vec<JoinHandle<()>> {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut tasks = vec![watch(
        &client,
        "ResourceQuota",
        |ns, name, q: ResourceQuota| Event::Quota(ns, name, Box::new(q)),
        tx.clone(),
    )];
    tasks.push(tokio::spawn(async move {
        let mut state = Namespaces::default();
        let mut dirty: HashSet<String> = HashSet::new();
        let mut due: Option<Instant> = None;
        let mut usage_watches: Option<AbortOnDrop> = None;
        loop {
            tokio::select! {
                ev = rx.recv() => {
                    let Some(ev) = ev else { return };
                    if usage_watches.is_none() && matches!(ev, Event::Quota(..)) {
                        usage_watches = Some(watch_usage(&client, &tx));
                    }
                    for ns in state.apply(ev) {
                        // Only namespaces with quotas are written.
                        if state.quotas.get(&ns).is_some_and(|m| !m.is_empty()) {
                            dirty.insert(ns);
                        }
                    }
                    if !dirty.is_empty() && due.is_none() {
                        due = Some(Instant::now() + SETTLE);
                    }
                }
                _ = tokio::time::sleep_until(due.unwrap_or_else(Instant::now)), if due.is_some() => {
                    due = None;
                    for ns in dirty.drain() {
                        let used = state.used(&ns);
                        for (name, q) in state.quotas.get(&ns).into_iter().flatten() {
                            let hard = q.spec.as_ref().and_then(|s| s.hard.clone()).unwrap_or_default();
                            let desired = quota_status(&hard, &used);
                            let current = serde_json::to_value(&q.status).unwrap_or_default();
                            if current == desired {
                                continue;
                            }
                            let patch = serde_json::json!({
                                "status": crate::runtime::patch::merge_diff(&current, &desired),
                            });
                            let api = Api::<ResourceQuota>::namespaced(client.clone(), &ns);
                            let name = name.clone();
                            tokio::spawn(async move {
                                match api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch)).await {
                                    Ok(_) => {}
                                    Err(kube::Error::Api(s)) if s.is_not_found() => {}
                                    Err(e) => tracing::warn!(quota = %name, error = %e, "simulated quota status write failed"),
                                }
                            });
                        }
                    }
                }
            }
        }
    }));
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ResourceRequirements;
    use serde_json::json;

    fn container(requests: &[(&str, &str)], limits: &[(&str, &str)], sidecar: bool) -> Container {
        let list = |items: &[(&str, &str)]| {
            (!items.is_empty()).then(|| {
                items
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                    .collect()
            })
        };
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: list(requests),
                limits: list(limits),
                ..Default::default()
            }),
            restart_policy: sidecar.then(|| "Always".to_owned()),
            ..Default::default()
        }
    }

    fn list(u: &Usage) -> serde_json::Value {
        json!(u.to_list())
    }

    #[test]
    fn pod_usage_as_kube_counts_it() {
        let spec = PodSpec {
            containers: vec![
                container(
                    &[("cpu", "100m"), ("memory", "64Mi")],
                    &[("cpu", "200m")],
                    false,
                ),
                container(&[("cpu", "150m"), ("nvidia.com/gpu", "1")], &[], false),
            ],
            init_containers: Some(vec![
                container(&[("cpu", "1")], &[], false),
                container(&[("memory", "16Mi")], &[], true),
            ]),
            ..Default::default()
        };
        // Containers: 250m cpu, 64Mi memory; the sidecar adds 16Mi; the first init container
        // alone needs 1 cpu, which takes over.
        assert_eq!(
            list(&pod_usage(&spec)),
            json!({
                "cpu": "1", "requests.cpu": "1", "limits.cpu": "200m",
                "memory": "80Mi", "requests.memory": "80Mi",
                "pods": "1", "requests.nvidia.com/gpu": "1",
            })
        );
    }

    #[test]
    fn workloads_count_their_virtual_pods() {
        let spec = PodSpec {
            containers: vec![container(
                &[("cpu", "250m"), ("memory", "1Gi")],
                &[("memory", "1Gi")],
                false,
            )],
            ..Default::default()
        };
        assert_eq!(
            list(&workload_charge("count/deployments.apps", 3, Some(&spec))),
            json!({
                "count/deployments.apps": "1", "count/pods": "3", "pods": "3",
                "cpu": "750m", "requests.cpu": "750m",
                "memory": "3Gi", "requests.memory": "3Gi", "limits.memory": "3Gi",
            })
        );
        assert_eq!(
            list(&workload_charge("count/deployments.apps", 0, Some(&spec))),
            json!({"count/deployments.apps": "1"})
        );
    }

    #[test]
    fn finished_pods_count_only_as_objects() {
        let mut pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Succeeded"},
        }))
        .unwrap();
        assert_eq!(list(&pod_charge(&pod)), json!({"count/pods": "1"}));
        pod.status = None;
        assert_eq!(
            list(&pod_charge(&pod)),
            json!({"count/pods": "1", "pods": "1", "cpu": "1", "requests.cpu": "1"})
        );
    }

    #[test]
    fn status_reports_what_is_limited_and_tracked() {
        let hard: BTreeMap<String, Quantity> = [
            ("pods", "10"),
            ("requests.cpu", "2"),
            ("configmaps", "5"),
            ("limits.memory", "1Gi"),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
        .collect();
        let mut used = Usage::default();
        used.add("pods", 3_000_000_000, false);
        used.add("requests.cpu", 300_000_000, false);
        assert_eq!(
            quota_status(&hard, &used),
            json!({
                "hard": {"configmaps": "5", "limits.memory": "1Gi", "pods": "10", "requests.cpu": "2"},
                "used": {"limits.memory": "0", "pods": "3", "requests.cpu": "300m"},
            })
        );
    }

    #[test]
    fn jobs_run_their_parallelism_until_done() {
        let job = |v: serde_json::Value| -> Job { serde_json::from_value(v).unwrap() };
        assert_eq!(job_pods(&job(json!({"spec": {"template": {}}}))), 1);
        assert_eq!(
            job_pods(&job(
                json!({"spec": {"parallelism": 4, "completions": 6, "template": {}}, "status": {"succeeded": 4}})
            )),
            2
        );
        assert_eq!(
            job_pods(&job(
                json!({"spec": {"parallelism": 4, "template": {}}, "status": {"completionTime": "2024-01-01T00:00:00Z"}})
            )),
            0
        );
    }
}
