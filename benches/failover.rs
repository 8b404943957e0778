//! Failover benchmark (`cargo bench --bench failover`): the control plane (`karmada-rs serve`
//! with `--enable-no-execute-taint-eviction`) and three simulated members, each its own
//! process, joined as `karmada-rs join` does, and a ClusterTaintPolicy adding a NoExecute
//! taint to clusters whose Ready condition is not True. Then
//! - recovery: PATIENT Deployments (6 replicas, Divided over the three members) whose
//!   policies tolerate the taint for 300 s; member2 is frozen (SIGSTOP) until it is tainted,
//!   then resumed: Works deleted from its execution space meanwhile (target: zero);
//! - failover: N Deployments (6 replicas, Divided), each with its own policy tolerating the
//!   taint for 0 s; member3 is killed: time from the kill until every one of them has its full
//!   replica count Ready on member1 and member2, the control plane's CPU during the move, and
//!   the requests it served meanwhile (by verb, resource and code, per moved Deployment).
//!
//! The control plane runs with the settings of the Karmada v1.18.2 measurement that issue 19
//! compares with: 1 s status updates and success and failure thresholds, a 5 s
//! --cluster-monitor-grace-period; the target is that grace period + 5 s.
//!
//! Environment: FAILOVER_BENCH_N (1000), FAILOVER_BENCH_PATIENT (200),
//! FAILOVER_BENCH_FAILURE_THRESHOLD (the control plane's --cluster-failure-threshold, 1s; 5s
//! puts the whole grace period before the taint, a stricter reading of the target),
//! FAILOVER_BENCH_LIMIT (s to wait for each phase, 600), FAILOVER_BENCH_EVICTION_RATE (the
//! control plane's --resource-eviction-rate, and its --rate-limiter-qps and
//! --rate-limiter-bucket-size, 10000: this measures how fast karmada-rs can move the
//! workloads; Karmada's defaults, 0.5 and 10/100, pace 1,000 evictions over about 11 minutes),
//! FAILOVER_BENCH_EXTRA_FLAGS (more control-plane flags, space-separated).

mod support;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Namespace;
use karmada_api::cluster::v1alpha1::Cluster;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::json;
use support::{
    Process, client, cpu_seconds, env_or, join_ready, request_counts, spawn, spawn_members,
};

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct SpecReplicas {
    replicas: Option<i32>,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReadyReplicas {
    ready_replicas: Option<i32>,
}

/// A Deployment of which only the replica counts are decoded.
type LiteDeployment = kube::core::Object<SpecReplicas, ReadyReplicas>;

const TAINT: &str = "failover.karmada-rs.io/down";

fn dynamic(
    client: &Client,
    group: &str,
    kind: &str,
    plural: &str,
    ns: Option<&str>,
) -> Api<DynamicObject> {
    let ar = kube::api::ApiResource {
        group: group.into(),
        version: "v1alpha1".into(),
        api_version: format!("{group}/v1alpha1"),
        kind: kind.into(),
        plural: plural.into(),
    };
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    }
}

/// Creates `count` Deployments named `{prefix}{i}` with a policy each tolerating the taint for
/// `toleration` seconds.
async fn create_workloads(cp: &Client, prefix: &str, count: usize, toleration: u32) {
    let deploys: Api<Deployment> = Api::namespaced(cp.clone(), "bench");
    let pps = dynamic(
        cp,
        "policy.karmada.io",
        "PropagationPolicy",
        "propagationpolicies",
        Some("bench"),
    );
    stream::iter(0..count)
        .map(|i| {
            let (d, p) = (deploys.clone(), pps.clone());
            let name = format!("{prefix}{i}");
            async move {
                let policy: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                    "metadata": {"name": name, "namespace": "bench"},
                    "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": name}],
                        "placement": {
                            "clusterAffinity": {"clusterNames": ["member1", "member2", "member3"]},
                            "clusterTolerations": [{"key": TAINT, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": toleration}],
                            "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}}
                }))
                .expect("policy");
                p.create(&PostParams::default(), &policy).await.expect("create policy");
                let dep: Deployment = serde_json::from_value(json!({
                    "apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": name, "namespace": "bench", "labels": {"app": name}},
                    "spec": {"replicas": 6, "selector": {"matchLabels": {"app": name}},
                        "template": {"metadata": {"labels": {"app": name}},
                            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
                }))
                .expect("deployment");
                d.create(&PostParams::default(), &dep).await.expect("create deployment");
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
}

/// Waits until every Deployment `{prefix}*` has 6 replicas Ready summed over `members`
/// (each member's copy counted when all its replicas are ready); returns when.
async fn all_ready_on(
    members: &[Client],
    prefix: &str,
    count: usize,
    limit: Duration,
) -> Option<Instant> {
    let streams = members.iter().enumerate().map(|(i, m)| {
        watcher(
            Api::<LiteDeployment>::namespaced_with(
                m.clone(),
                "bench",
                &kube::api::ApiResource::erase::<Deployment>(&()),
            ),
            watcher::Config::default(),
        )
        .default_backoff()
        .map(move |ev| (i, ev))
    });
    let mut merged = stream::select_all(streams.map(Box::pin));
    let mut ready: HashMap<(usize, String), i32> = HashMap::new();
    let mut totals: HashMap<String, i32> = HashMap::new();
    let mut done = 0usize;
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        let next = tokio::time::timeout_at(deadline, merged.next())
            .await
            .ok()??;
        let (i, ev) = next;
        let mut apply = |d: &LiteDeployment, gone: bool| {
            let name = d.metadata.name.clone().unwrap_or_default();
            if !name.starts_with(prefix) {
                return;
            }
            let want = d.spec.replicas.unwrap_or(1);
            let r = d
                .status
                .as_ref()
                .and_then(|s| s.ready_replicas)
                .unwrap_or(0);
            let now = if !gone && r == want { want } else { 0 };
            let before = ready.insert((i, name.clone()), now).unwrap_or(0);
            let total = totals.entry(name).or_insert(0);
            let was = *total == 6;
            *total += now - before;
            match (was, *total == 6) {
                (false, true) => done += 1,
                (true, false) => done -= 1,
                _ => {}
            }
        };
        match ev {
            Ok(watcher::Event::Apply(d) | watcher::Event::InitApply(d)) => apply(&d, false),
            Ok(watcher::Event::Delete(d)) => apply(&d, true),
            _ => {}
        }
        if done >= count {
            return Some(Instant::now());
        }
    }
}

/// Prints the requests made between two `request_counts`, most frequent first, with their
/// number per moved Deployment: where the control plane's work during the move goes.
fn print_request_diff(before: &HashMap<String, f64>, after: &HashMap<String, f64>, n: usize) {
    let mut rows: Vec<(&String, f64)> = after
        .iter()
        .map(|(k, v)| (k, v - before.get(k).copied().unwrap_or(0.0)))
        // A watch is counted once, when it starts; it says nothing about the work done.
        .filter(|(k, d)| *d > 0.0 && !k.starts_with("WATCH "))
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = rows.iter().map(|r| r.1).sum();
    println!(
        "requests to the control plane during the move, watches excluded: {total:.0} ({:.1} per Deployment)",
        total / n.max(1) as f64
    );
    for (key, d) in rows.iter().take(25) {
        println!("  {d:>8.0} {:>6.2}/Deployment  {key}", d / n.max(1) as f64);
    }
}

#[tokio::main]
async fn main() {
    let n = env_or("FAILOVER_BENCH_N", 1000);
    let patient = env_or("FAILOVER_BENCH_PATIENT", 200);
    let threshold =
        std::env::var("FAILOVER_BENCH_FAILURE_THRESHOLD").unwrap_or_else(|_| "1s".into());
    let limit = Duration::from_secs(env_or("FAILOVER_BENCH_LIMIT", 600) as u64);
    let rate = env_or("FAILOVER_BENCH_EVICTION_RATE", 10_000);
    let extra = std::env::var("FAILOVER_BENCH_EXTRA_FLAGS").unwrap_or_default();
    let flags = [
        format!("--cluster-failure-threshold={threshold}"),
        format!("--resource-eviction-rate={rate}"),
        format!("--rate-limiter-qps={rate}"),
        format!("--rate-limiter-bucket-size={rate}"),
    ];
    let mut args = vec![
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--cluster-status-update-frequency=1s",
        "--cluster-success-threshold=1s",
        "--cluster-monitor-grace-period=5s",
        "--enable-no-execute-taint-eviction",
        "--allow-no-execute-taint-policy",
    ];
    args.extend(flags.iter().map(String::as_str));
    args.extend(extra.split_whitespace());
    let cp_process = spawn(
        &args,
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let names: Vec<String> = (1..=3).map(|i| format!("member{i}")).collect();
    let mut members: Vec<Process> = spawn_members(&names);
    let pid = cp_process.child.id();
    let cp = client(&cp_process.kubeconfig).await;
    let clusters: Api<Cluster> = Api::all(cp.clone());
    join_ready(&cp, &names, &members).await;
    let member_clients: Vec<Client> =
        futures::future::join_all(members.iter().map(|m| client(&m.kubeconfig))).await;
    let ns: Api<Namespace> = Api::all(cp.clone());
    let _ = ns
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "bench"}})).expect("ns"),
        )
        .await;
    let ctp: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
        "metadata": {"name": "down"},
        "spec": {"addOnConditions": [{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}],
            "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
            "taints": [{"key": TAINT, "effect": "NoExecute"}]}
    }))
    .expect("ctp");
    dynamic(
        &cp,
        "policy.karmada.io",
        "ClusterTaintPolicy",
        "clustertaintpolicies",
        None,
    )
    .create(&PostParams::default(), &ctp)
    .await
    .expect("create ClusterTaintPolicy");
    let tainted = |name: &'static str, want: bool| {
        let clusters = clusters.clone();
        async move {
            match tokio::time::timeout(
                Duration::from_secs(120),
                await_condition(clusters.clone(), name, move |c: Option<&Cluster>| {
                    c.is_some_and(|c| c.spec.taints.iter().any(|t| t.key == TAINT)) == want
                }),
            )
            .await
            {
                Ok(r) => {
                    r.expect("watch");
                }
                Err(_) => {
                    let c = clusters.get(name).await.expect("cluster");
                    panic!(
                        "{name}: taint {} within 120 s; conditions {:?}, taints {:?}",
                        if want { "added" } else { "removed" },
                        c.status.conditions,
                        c.spec.taints
                    );
                }
            }
        }
    };

    // Recovery inside the toleration.
    let works = dynamic(
        &cp,
        "work.karmada.io",
        "Work",
        "works",
        Some("karmada-es-member2"),
    );
    if patient > 0 {
        create_workloads(&cp, "p", patient, 300).await;
        all_ready_on(&member_clients, "p", patient, limit)
            .await
            .expect("patient workloads ready");
        let before = works
            .list(&Default::default())
            .await
            .expect("works")
            .items
            .len();
        let mut deleted = 0usize;
        let watch = watcher(works.clone(), watcher::Config::default()).default_backoff();
        let mut watch = std::pin::pin!(watch);
        // Skip the initial listing.
        while let Some(ev) = watch.next().await {
            if matches!(ev, Ok(watcher::Event::InitDone)) {
                break;
            }
        }
        let m2 = members[1].child.id().to_string();
        let frozen = Instant::now();
        let _ = std::process::Command::new("kill")
            .args(["-STOP", &m2])
            .status();
        let t = tainted("member2", true);
        let mut t = std::pin::pin!(t);
        loop {
            tokio::select! {
                _ = &mut t => break,
                ev = watch.next() => {
                    if let Some(Ok(watcher::Event::Delete(_))) = ev { deleted += 1; }
                    if let Some(Ok(watcher::Event::Apply(w))) = ev && w.metadata.deletion_timestamp.is_some() { deleted += 1; }
                }
            }
        }
        let tainted_after = frozen.elapsed();
        let _ = std::process::Command::new("kill")
            .args(["-CONT", &m2])
            .status();
        let back = tainted("member2", false);
        let mut back = std::pin::pin!(back);
        loop {
            tokio::select! {
                _ = &mut back => break,
                ev = watch.next() => {
                    if let Some(Ok(watcher::Event::Delete(_))) = ev { deleted += 1; }
                    if let Some(Ok(watcher::Event::Apply(w))) = ev && w.metadata.deletion_timestamp.is_some() { deleted += 1; }
                }
            }
        }
        let after = works
            .list(&Default::default())
            .await
            .expect("works")
            .items
            .len();
        println!(
            "recovery inside the toleration: member2 frozen, tainted NoExecute after {:.1} s, resumed, untainted after {:.1} s; Works in karmada-es-member2 {before} before, {after} after, {deleted} deleted meanwhile",
            tainted_after.as_secs_f64(),
            frozen.elapsed().as_secs_f64()
        );
    }

    // Failover.
    let created = Instant::now();
    create_workloads(&cp, "d", n, 0).await;
    all_ready_on(&member_clients, "d", n, limit)
        .await
        .expect("workloads ready on three members");
    println!(
        "{n} Deployments (6 replicas, Divided 2/2/2, own policy each) ready on three members in {:.1} s",
        created.elapsed().as_secs_f64()
    );
    let requests_before = request_counts(&cp).await;
    let cpu_before = cpu_seconds(pid);
    let killed = Instant::now();
    members[2].child.kill().expect("kill member3");
    let _ = members[2].child.wait();
    let t = async {
        tainted("member3", true).await;
        killed.elapsed()
    };
    let survivors = member_clients[..2].to_vec();
    let (taint_at, done) = tokio::join!(t, all_ready_on(&survivors, "d", n, limit));
    let cpu = cpu_seconds(pid) - cpu_before;
    print_request_diff(&requests_before, &request_counts(&cp).await, n);
    match done {
        Some(at) => {
            let took = at - killed;
            println!(
                "failover: member3 killed; every Deployment's 6 replicas Ready on member1 + member2 after {:.1} s (NoExecute taint seen by {:.1} s); control-plane CPU during the move {:.1} s ({:.0}% of one core)",
                took.as_secs_f64(),
                taint_at.as_secs_f64(),
                cpu,
                100.0 * cpu / took.as_secs_f64()
            );
        }
        None => println!("failover: not complete within {} s", limit.as_secs()),
    }
}
