//! Karmada's own performance scenario (`cargo bench --bench karmada_perf`), the load its
//! repository runs with ClusterLoader2 (hack/performance) so the figures compare with Karmada's
//! line by line:
//! - 10 simulated members of 10 nodes each (Karmada: kwok clusters whose nodes have 32 CPUs,
//!   256Gi and 110 pods), each `karmada-rs member serve` its own process, joined as `karmada-rs
//!   join` does;
//! - 10 namespaces, and in each one ConfigMap `test-configmap-0`, 100 Deployments
//!   `test-deployment-N` of 10 replicas mounting it, and 100 PropagationPolicies of the same
//!   names selecting one Deployment each with `propagateDeps` and Divided/Weighted replicas (no
//!   weight list: every member weighs the same). ClusterLoader2 runs a step's three phases
//!   (ConfigMaps, Deployments, policies) side by side, each paced at 5 creates/s in namespace
//!   order, and so does this bench;
//! - completion: every ResourceBinding Scheduled and FullyApplied (each of its Works Applied in
//!   its member) and every Deployment showing its members' 10 ready replicas, timed from the last
//!   create;
//! - then the control plane's `/metrics`, with p50/p90/p99 of the histograms Karmada's
//!   hack/performance/collect-metrics.sh reads, computed as Prometheus' `histogram_quantile`
//!   does (linear within a bucket) over the series the script selects, summed by bucket as its
//!   `sum(...) by (le)`. The script takes `rate(...[2m])` at its end; the whole run's counts
//!   stand in for it here, since nothing else ran on the control plane.
//!
//! Environment: KARMADA_PERF_MEMBERS (10), KARMADA_PERF_NODES (10), KARMADA_PERF_NAMESPACES
//! (10), KARMADA_PERF_DEPLOYMENTS (per namespace, 100), KARMADA_PERF_REPLICAS (10),
//! KARMADA_PERF_QPS (each phase's creates/s, 5), KARMADA_PERF_LIMIT (s to wait for completion
//! after the last create, 600), BENCH_DEBUG (set: print the completion counts as they move).

mod support;

use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use support::{
    Conditions, Lite, Process, ReadyReplicas, client, cpu_seconds, create_concurrently_in, env_or,
    first_time_count_reaches, join_ready, metrics_text, peak_rss_kib, rss_kib, spawn,
    spawn_members_with,
};

fn policy_resource() -> ApiResource {
    ApiResource {
        group: "policy.karmada.io".into(),
        version: "v1alpha1".into(),
        api_version: "policy.karmada.io/v1alpha1".into(),
        kind: "PropagationPolicy".into(),
        plural: "propagationpolicies".into(),
    }
}

fn binding_resource() -> ApiResource {
    ApiResource {
        group: "work.karmada.io".into(),
        version: "v1alpha2".into(),
        api_version: "work.karmada.io/v1alpha2".into(),
        kind: "ResourceBinding".into(),
        plural: "resourcebindings".into(),
    }
}

/// Of a binding's spec, whether it has a placement.
#[derive(Clone, Debug, Default, serde::Deserialize)]
struct PlacementOnly {
    #[serde(default)]
    placement: Option<serde_json::Value>,
}

/// A ResourceBinding decoded only as far as the completion check reads it.
type BindingLite = kube::core::Object<PlacementOnly, Conditions>;

/// hack/performance/clusterloader2-configmap.yaml.
fn configmap(namespace: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "test-configmap-0", "namespace": namespace},
        "data": {"fake-config.yaml": "fake-config: \"fake-config-value\"\n"}
    }))
    .expect("configmap")
}

/// hack/performance/clusterloader2-deployment.yaml.
fn deployment(namespace: &str, name: &str, replicas: usize) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": {"group": "test-deployment"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "fake-pod"}},
            "template": {
                "metadata": {"labels": {"app": "fake-pod"}},
                "spec": {
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "type", "operator": "In", "values": ["kwok"]}
                        ]}]
                    }}},
                    "tolerations": [{"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{
                        "name": "fake-container", "image": "fake-image",
                        "volumeMounts": [{"name": "configmap", "mountPath": "/configmap"}]
                    }],
                    "volumes": [{"name": "configmap", "configMap": {"name": "test-configmap-0"}}]
                }
            }
        }
    }))
    .expect("deployment")
}

/// hack/performance/clusterloader2-policy.yaml.
fn policy(namespace: &str, name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "propagateDeps": true,
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
            "placement": {"replicaScheduling": {
                "replicaDivisionPreference": "Weighted",
                "replicaSchedulingType": "Divided"
            }}
        }
    }))
    .expect("policy")
}

/// One histogram family's cumulative buckets, summed over the series whose labels include every
/// `name="value"` of `selector`: PromQL's `sum(NAME_bucket{SELECTOR}) by (le)`.
fn buckets(text: &str, name: &str, selector: &[(&str, &str)]) -> Vec<(f64, f64)> {
    let prefix = format!("{name}_bucket{{");
    let mut sums: Vec<(f64, f64)> = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(&prefix) else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let pairs: Vec<(&str, &str)> = labels
            .split(',')
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=')?;
                Some((k, v.trim_matches('"')))
            })
            .collect();
        if !selector.iter().all(|s| pairs.contains(s)) {
            continue;
        }
        let Some(le) = pairs.iter().find(|(k, _)| *k == "le").map(|(_, v)| *v) else {
            continue;
        };
        let le = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().unwrap_or(f64::NAN)
        };
        let v: f64 = value.trim().parse().unwrap_or(0.0);
        match sums.iter_mut().find(|(b, _)| *b == le) {
            Some(entry) => entry.1 += v,
            None => sums.push((le, v)),
        }
    }
    sums.sort_by(|a, b| a.0.total_cmp(&b.0));
    sums
}

/// Prometheus' `histogram_quantile(q, buckets)` (promql/quantile.go): the rank's bucket found,
/// the value interpolated linearly inside it (from 0 in the lowest bucket), the highest finite
/// bound when the rank falls in +Inf. None without observations.
fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> Option<f64> {
    if buckets.len() < 2 || buckets.last().map(|b| b.0) != Some(f64::INFINITY) {
        return None;
    }
    // Counts made monotonic, as Prometheus does for series scraped at slightly different times.
    let mut counts: Vec<f64> = buckets.iter().map(|b| b.1).collect();
    for i in 1..counts.len() {
        counts[i] = counts[i].max(counts[i - 1]);
    }
    let total = *counts.last()?;
    if total == 0.0 {
        return None;
    }
    let mut rank = q * total;
    let b = counts.iter().position(|c| *c >= rank)?;
    if b == buckets.len() - 1 {
        return Some(buckets[buckets.len() - 2].0);
    }
    if b == 0 && buckets[0].0 <= 0.0 {
        return Some(buckets[0].0);
    }
    let (start, end) = (if b == 0 { 0.0 } else { buckets[b - 1].0 }, buckets[b].0);
    let mut count = counts[b];
    if b > 0 {
        count -= counts[b - 1];
        rank -= counts[b - 1];
    }
    Some(start + (end - start) * (rank / count))
}

/// One row of the metrics table: a name, the family and the series the script selects.
struct Row {
    what: String,
    family: &'static str,
    selector: Vec<(&'static str, &'static str)>,
}

fn seconds(v: Option<f64>) -> String {
    match v {
        None => "no observations".into(),
        Some(s) if s < 0.01 => format!("{:.3} ms", s * 1000.0),
        Some(s) if s < 1.0 => format!("{:.1} ms", s * 1000.0),
        Some(s) => format!("{s:.2} s"),
    }
}

/// The mean of the selected series (`_sum` over `_count`), which the buckets' resolution does
/// not limit.
fn mean(text: &str, family: &str, selector: &[(&str, &str)]) -> Option<f64> {
    let total = |suffix: &str| -> f64 {
        let prefix = format!("{family}_{suffix}");
        text.lines()
            .filter_map(|l| {
                let rest = l.strip_prefix(&prefix)?;
                let (labels, value) = match rest.strip_prefix('{') {
                    Some(r) => r.rsplit_once("} ")?,
                    None => ("", rest.strip_prefix(' ')?),
                };
                selector
                    .iter()
                    .all(|(k, v)| labels.split(',').any(|kv| kv == format!("{k}=\"{v}\"")))
                    .then(|| value.trim().parse::<f64>().ok())?
            })
            .sum()
    };
    let count = total("count");
    (count > 0.0).then(|| total("sum") / count)
}

#[tokio::main]
async fn main() {
    let members = env_or("KARMADA_PERF_MEMBERS", 10);
    let nodes = env_or("KARMADA_PERF_NODES", 10).to_string();
    let namespaces = env_or("KARMADA_PERF_NAMESPACES", 10);
    let per_namespace = env_or("KARMADA_PERF_DEPLOYMENTS", 100);
    let replicas = env_or("KARMADA_PERF_REPLICAS", 10);
    let qps = env_or("KARMADA_PERF_QPS", 5) as f64;
    let limit = Duration::from_secs(env_or("KARMADA_PERF_LIMIT", 600) as u64);

    let cp_process = spawn(
        &["serve", "--bind", "127.0.0.1:0"],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let names: Vec<String> = (1..=members).map(|i| format!("member{i}")).collect();
    // Karmada's kwok nodes (hack/performance/kwok-node.yaml).
    let member_processes: Vec<Process> = spawn_members_with(
        &names,
        &[
            "--nodes",
            &nodes,
            "--node-cpu",
            "32",
            "--node-memory",
            "256Gi",
            "--node-pods",
            "110",
        ],
    );
    let pid = cp_process.child.id();
    let cp = client(&cp_process.kubeconfig).await;
    join_ready(&cp, &names, &member_processes).await;
    let idle_cpu = cpu_seconds(pid);
    let idle_rss = rss_kib(pid);

    let ns_api: Api<Namespace> = Api::all(cp.clone());
    let ns_names: Vec<String> = (1..=namespaces).map(|i| format!("test-perf-{i}")).collect();
    for ns in &ns_names {
        ns_api
            .create(
                &PostParams::default(),
                &serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace"),
            )
            .await
            .expect("create namespace");
    }

    // Completion is followed with watches started before the first create (a repeated list
    // would load the server being measured); they decode only what they check.
    let total = namespaces * per_namespace;
    let bindings: Api<BindingLite> = Api::all_with(cp.clone(), &binding_resource());
    // One binding per Deployment and one per ConfigMap (its dependents' attached binding).
    let want_bindings = total + namespaces;
    let all_applied = tokio::spawn(first_time_count_reaches(
        watcher(bindings, watcher::Config::default()),
        want_bindings,
        |b: &BindingLite| {
            let holds = |t: &str| {
                b.status.as_ref().is_some_and(|s| {
                    s.conditions
                        .iter()
                        .any(|c| c.type_ == t && c.status == "True")
                })
            };
            // An attached binding has no placement: it follows the bindings that require it,
            // unscheduled.
            (b.spec.placement.is_none() || holds("Scheduled")) && holds("FullyApplied")
        },
    ));
    let want_ready = i32::try_from(replicas).unwrap_or(i32::MAX);
    let all_aggregated = tokio::spawn(first_time_count_reaches(
        watcher(
            Api::<Lite<ReadyReplicas>>::all_with(
                cp.clone(),
                &ApiResource::erase::<Deployment>(&()),
            ),
            watcher::Config::default(),
        ),
        total,
        move |d: &Lite<ReadyReplicas>| {
            d.status.as_ref().and_then(|s| s.ready_replicas) == Some(want_ready)
        },
    ));

    // The three phases of ClusterLoader2's step, side by side, each paced on its own.
    let workers = 8;
    let started = Instant::now();
    let (cm_ns, cm_client) = (ns_names.clone(), cp.clone());
    let configmaps = create_concurrently_in(namespaces, workers, Some(qps), move |i| {
        let ns = &cm_ns[i];
        (Api::namespaced(cm_client.clone(), ns), configmap(ns))
    });
    let (d_ns, d_client) = (ns_names.clone(), cp.clone());
    let deployments = create_concurrently_in(total, workers, Some(qps), move |i| {
        let ns = &d_ns[i / per_namespace];
        let name = format!("test-deployment-{}", i % per_namespace);
        (
            Api::namespaced(d_client.clone(), ns),
            deployment(ns, &name, replicas),
        )
    });
    let (p_ns, p_client) = (ns_names.clone(), cp.clone());
    let policies = create_concurrently_in(total, workers, Some(qps), move |i| {
        let ns = &p_ns[i / per_namespace];
        let name = format!("test-deployment-{}", i % per_namespace);
        (
            Api::namespaced_with(p_client.clone(), ns, &policy_resource()),
            policy(ns, &name),
        )
    });
    let ((_, cm_lat), (_, d_lat), (_, p_lat)) = tokio::join!(configmaps, deployments, policies);
    let last_create = Instant::now();
    let creates = namespaces + 2 * total;
    let create_rate = creates as f64 / (last_create - started).as_secs_f64();
    let mut create_lat: Vec<Duration> = cm_lat.into_iter().chain(d_lat).chain(p_lat).collect();
    create_lat.sort();

    let waited = |h: tokio::task::JoinHandle<Instant>| async move {
        tokio::time::timeout(limit, h)
            .await
            .ok()
            .and_then(Result::ok)
            .map(|t| t.saturating_duration_since(last_create))
    };
    let (applied, aggregated) = tokio::join!(waited(all_applied), waited(all_aggregated));
    let cpu = cpu_seconds(pid);
    let text = metrics_text(&cp).await;
    let cp_peak = peak_rss_kib(pid);
    let cp_rss = rss_kib(pid);
    let member_peak: u64 = member_processes
        .iter()
        .map(|m| peak_rss_kib(m.child.id()))
        .sum();
    let member_rss: u64 = member_processes.iter().map(|m| rss_kib(m.child.id())).sum();

    let mut rows = vec![
        Row {
            what: "policy match (`resource_match_policy_duration_seconds`)".into(),
            family: "resource_match_policy_duration_seconds",
            selector: vec![],
        },
        Row {
            what: "policy apply, success (`resource_apply_policy_duration_seconds`)".into(),
            family: "resource_apply_policy_duration_seconds",
            selector: vec![("result", "success")],
        },
        Row {
            what: "binding to Works, success (`binding_sync_work_duration_seconds`)".into(),
            family: "binding_sync_work_duration_seconds",
            selector: vec![("result", "success")],
        },
        Row {
            what: "Work to member, success (`work_sync_workload_duration_seconds`)".into(),
            family: "work_sync_workload_duration_seconds",
            selector: vec![("result", "success")],
        },
        Row {
            what: "cluster status (`cluster_sync_status_duration_seconds`)".into(),
            family: "cluster_sync_status_duration_seconds",
            selector: vec![],
        },
        Row {
            what: "end-to-end scheduling, scheduled (`karmada_scheduler_e2e_scheduling_duration_seconds`)".into(),
            family: "karmada_scheduler_e2e_scheduling_duration_seconds",
            selector: vec![("result", "scheduled")],
        },
    ];
    // The controllers collect-metrics.sh lists for controller-runtime's reconcile time.
    for controller in [
        "dependencies-distributor",
        "binding-controller",
        "resource-binding-status-controller",
        "execution-controller",
        "work-status-controller",
    ] {
        rows.push(Row {
            what: format!(
                "reconcile of {controller} (`controller_runtime_reconcile_time_seconds`)"
            ),
            family: "controller_runtime_reconcile_time_seconds",
            selector: vec![("controller", controller)],
        });
    }

    let pct = |p: f64| support::percentile(&create_lat, p);
    let after = |d: Option<Duration>| {
        d.map(|d| format!("{:.2} s", d.as_secs_f64()))
            .unwrap_or_else(|| format!("not reached within {} s", limit.as_secs()))
    };
    println!(
        "Karmada's performance scenario: {members} members of {nodes} nodes; {namespaces} namespaces \
         of 1 ConfigMap, {per_namespace} Deployments of {replicas} replicas and {per_namespace} \
         PropagationPolicies (propagateDeps, Divided/Weighted), each phase at {qps} creates/s\n"
    );
    println!("| measurement | value |");
    println!("|---|---|");
    println!(
        "| creates ({creates}), all phases together | {create_rate:.2} creates/s; latency p50 {:.1} ms, p99 {:.1} ms |",
        pct(0.5).as_secs_f64() * 1000.0,
        pct(0.99).as_secs_f64() * 1000.0
    );
    println!(
        "| last create to every binding ({want_bindings}) Scheduled and FullyApplied | {} |",
        after(applied)
    );
    println!(
        "| last create to every Deployment ({total}) aggregated ({replicas} ready replicas) | {} |",
        after(aggregated)
    );
    for row in &rows {
        let b = buckets(&text, row.family, &row.selector);
        let q = |p: f64| seconds(histogram_quantile(p, &b));
        let count = b.last().map_or(0.0, |l| l.1);
        println!(
            "| {} | p50 {}, p90 {}, p99 {} (mean {}, {count} observations) |",
            row.what,
            q(0.5),
            q(0.9),
            q(0.99),
            seconds(mean(&text, row.family, &row.selector)),
        );
    }
    println!(
        "| control-plane CPU | {:.1} s in the scenario ({:.1} s from start) |",
        cpu - idle_cpu,
        cpu
    );
    println!(
        "| control-plane RSS | peak {} MiB (idle {} MiB, at the end {} MiB) |",
        cp_peak / 1024,
        idle_rss / 1024,
        cp_rss / 1024
    );
    println!(
        "| simulated members' RSS, sum of {members} processes | peaks {} MiB, at the end {} MiB |",
        member_peak / 1024,
        member_rss / 1024
    );
    // The control plane goes first so it does not log the members going away.
    drop(cp_process);
    drop(member_processes);
}
