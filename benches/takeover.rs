//! Takeover benchmark (`cargo bench --bench takeover`): a `karmada-rs serve` over a real etcd
//! (started with etcd's defaults) propagates N templates, half Deployments and half ConfigMaps,
//! Duplicated to two simulated members (2N Works). Once every Work is Applied and every
//! Deployment shows its members' ready replicas, the control plane is killed (SIGKILL, as a
//! blue/green switch drops the old side) and a fresh `karmada-rs serve` with a data directory of
//! its own starts on the same etcd, as a takeover of a stopped Karmada's etcd does. Measured:
//! - start to serving (target ≤ 10 s): until the new process prints that it serves;
//! - start to the controllers in sync (target ≤ 30 s): until every work queue is empty with
//!   nothing in progress, twice in a row 250 ms apart, after the queues took at least 2N keys
//!   (the adopted Works went through them);
//! - writes to the members for the unchanged objects (target 0): member Deployments and
//!   ConfigMaps whose resourceVersion changed, and the create/update/patch/delete requests the
//!   members served for those kinds, between before the kill and the controllers in sync.
//!
//! Environment: TAKEOVER_BENCH_N (templates, default 10000), TAKEOVER_BENCH_LIMIT (s to wait for
//! the first control plane to propagate everything, 1800), BENCH_DEBUG (set: print the
//! completion counts as they move).

mod support;

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ListParams, PostParams};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::json;
use support::{
    Conditions, Lite, ReadyReplicas, client, env_or, first_time_count_reaches, join_ready,
    metrics_text, request_counts, rss_mib, spawn, spawn_members,
};

const NS: &str = "bench";
const MEMBERS: [&str; 2] = ["member1", "member2"];
const SERVING: &str = "karmada-rs control plane serving at";

fn serve_args(endpoints: &str) -> [&str; 5] {
    [
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--etcd-servers",
        endpoints,
    ]
}

fn works_api(cp: &Client) -> Api<Lite<Conditions>> {
    Api::all_with(
        cp.clone(),
        &kube::api::ApiResource {
            group: "work.karmada.io".into(),
            version: "v1alpha1".into(),
            api_version: "work.karmada.io/v1alpha1".into(),
            kind: "Work".into(),
            plural: "works".into(),
        },
    )
}

/// Creates the namespace, a policy taking Deployments and ConfigMaps to both members, and `n`
/// templates (half of each kind) from 16 concurrent clients.
async fn create_templates(cp: &Client, n: usize) {
    let ns: Api<Namespace> = Api::all(cp.clone());
    ns.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": NS}})).expect("namespace"),
    )
    .await
    .expect("create the namespace");
    let policies: Api<kube::api::DynamicObject> = Api::namespaced_with(
        cp.clone(),
        NS,
        &kube::api::ApiResource {
            group: "policy.karmada.io".into(),
            version: "v1alpha1".into(),
            api_version: "policy.karmada.io/v1alpha1".into(),
            kind: "PropagationPolicy".into(),
            plural: "propagationpolicies".into(),
        },
    );
    let policy = serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "all", "namespace": NS},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"},
                {"apiVersion": "v1", "kind": "ConfigMap"}],
            "placement": {"clusterAffinity": {"clusterNames": MEMBERS},
                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}
    }))
    .expect("policy");
    policies
        .create(&PostParams::default(), &policy)
        .await
        .expect("create the policy");
    let deploys: Api<Deployment> = Api::namespaced(cp.clone(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(cp.clone(), NS);
    stream::iter(0..n)
        .map(|i| {
            let (d, c) = (deploys.clone(), cms.clone());
            async move {
                let name = format!("t{i}");
                if i % 2 == 0 {
                    let object = serde_json::from_value(json!({
                        "metadata": {"name": name, "labels": {"app": name}},
                        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                            "template": {"metadata": {"labels": {"app": name}},
                                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
                    }))
                    .expect("deployment");
                    d.create(&PostParams::default(), &object)
                        .await
                        .expect("create a deployment");
                } else {
                    let object = serde_json::from_value(json!({
                        "metadata": {"name": name}, "data": {"k": "v".repeat(64)}
                    }))
                    .expect("configmap");
                    c.create(&PostParams::default(), &object)
                        .await
                        .expect("create a configmap");
                }
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
}

/// Waits until every Work is Applied and every Deployment shows both members' ready replicas.
async fn propagated(cp: &Client, n: usize, limit: Duration) {
    let applied = first_time_count_reaches(
        watcher(works_api(cp), watcher::Config::default()),
        n * MEMBERS.len(),
        |w: &Lite<Conditions>| {
            w.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Applied" && c.status == "True")
            })
        },
    );
    let want_ready = i32::try_from(MEMBERS.len()).unwrap_or(i32::MAX);
    let aggregated = first_time_count_reaches(
        watcher(
            Api::<Lite<ReadyReplicas>>::namespaced_with(
                cp.clone(),
                NS,
                &kube::api::ApiResource::erase::<Deployment>(&()),
            ),
            watcher::Config::default(),
        ),
        n.div_ceil(2),
        move |d: &Lite<ReadyReplicas>| {
            d.status.as_ref().and_then(|s| s.ready_replicas) == Some(want_ready)
        },
    );
    tokio::time::timeout(limit, Box::pin(async { tokio::join!(applied, aggregated) }))
        .await
        .expect("the first control plane propagated everything within TAKEOVER_BENCH_LIMIT");
}

/// A member's Deployments and ConfigMaps in the bench namespace: kind/name → resourceVersion.
async fn member_versions(member: &Client) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let lp = ListParams::default();
    let deploys: Api<Deployment> = Api::namespaced(member.clone(), NS);
    for d in deploys.list_metadata(&lp).await.expect("list deployments") {
        out.insert(
            format!("deployment/{}", d.metadata.name.unwrap_or_default()),
            d.metadata.resource_version.unwrap_or_default(),
        );
    }
    let cms: Api<ConfigMap> = Api::namespaced(member.clone(), NS);
    for c in cms.list_metadata(&lp).await.expect("list configmaps") {
        out.insert(
            format!("configmap/{}", c.metadata.name.unwrap_or_default()),
            c.metadata.resource_version.unwrap_or_default(),
        );
    }
    out
}

/// The write requests a member served on Deployments and ConfigMaps (not their status).
async fn member_writes(member: &Client) -> f64 {
    request_counts(member)
        .await
        .into_iter()
        .filter(|(key, _)| {
            let mut parts = key.split(' ');
            let (verb, resource) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
            matches!(verb, "CREATE" | "UPDATE" | "PATCH" | "APPLY" | "DELETE")
                && matches!(resource, "deployments" | "configmaps")
        })
        .map(|(_, count)| count)
        .sum()
}

/// Sums of the control plane's work queue series: (depth, keys in progress, adds).
async fn queue_totals(cp: &Client) -> (f64, usize, f64) {
    let text = metrics_text(cp).await;
    let (mut depth, mut busy, mut adds) = (0.0, 0, 0.0);
    for line in text.lines() {
        let value = |prefix: &str| -> Option<f64> {
            let rest = line.strip_prefix(prefix)?;
            rest.rsplit_once(' ')?.1.trim().parse().ok()
        };
        if let Some(v) = value("workqueue_depth{") {
            depth += v;
        } else if let Some(v) = value("workqueue_unfinished_work_seconds{") {
            busy += usize::from(v > 0.0);
        } else if let Some(v) = value("workqueue_adds_total{") {
            adds += v;
        }
    }
    (depth, busy, adds)
}

/// Resolves once the controllers have drained what the takeover gave them (see the module doc).
async fn controllers_in_sync(cp: &Client, min_adds: f64) -> Instant {
    let mut quiet_since: Option<Instant> = None;
    loop {
        let (depth, busy, adds) = queue_totals(cp).await;
        let quiet = depth == 0.0 && busy == 0 && adds >= min_adds;
        if std::env::var("BENCH_DEBUG").is_ok() {
            eprintln!("queues: depth {depth}, in progress {busy}, adds {adds}");
        }
        match (quiet, quiet_since) {
            (true, Some(t)) => return t,
            (true, None) => quiet_since = Some(Instant::now()),
            (false, _) => quiet_since = None,
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::main]
async fn main() {
    let n = env_or("TAKEOVER_BENCH_N", 10_000);
    let limit = Duration::from_secs(env_or("TAKEOVER_BENCH_LIMIT", 1800) as u64);
    let etcd = storage::testing::EtcdProcess::start()
        .await
        .expect("start etcd (Debian's etcd-server on PATH)");
    let endpoints = etcd.endpoints().join(",");
    let names: Vec<String> = MEMBERS.iter().map(|m| m.to_string()).collect();
    let members = spawn_members(&names);
    let mut member_clients = Vec::new();
    for m in &members {
        member_clients.push(client(&m.kubeconfig).await);
    }

    let first = spawn(&serve_args(&endpoints), SERVING, "karmada.kubeconfig", None);
    let cp = client(&first.kubeconfig).await;
    join_ready(&cp, &names, &members).await;
    let bulk_start = Instant::now();
    create_templates(&cp, n).await;
    Box::pin(propagated(&cp, n, limit)).await;
    let bulk = bulk_start.elapsed();
    let first_rss = rss_mib(first.child.id());

    let mut versions_before = Vec::new();
    let mut writes_before = Vec::new();
    for m in &member_clients {
        versions_before.push(member_versions(m).await);
        writes_before.push(member_writes(m).await);
    }
    drop(cp);
    drop(first);

    let start = Instant::now();
    let second = spawn(&serve_args(&endpoints), SERVING, "karmada.kubeconfig", None);
    let serving = start.elapsed();
    let cp = client(&second.kubeconfig).await;
    let in_sync = controllers_in_sync(&cp, (2 * n) as f64).await - start;
    let second_rss = rss_mib(second.child.id());

    let mut rewritten = 0;
    let mut writes = 0.0;
    for (i, m) in member_clients.iter().enumerate() {
        let after = member_versions(m).await;
        assert_eq!(
            after.len(),
            versions_before[i].len(),
            "objects appeared or went in {}",
            MEMBERS[i]
        );
        rewritten += after
            .iter()
            .filter(|(k, rv)| versions_before[i].get(*k) != Some(*rv))
            .count();
        writes += member_writes(m).await - writes_before[i];
    }
    let per_member: HashMap<&str, usize> = MEMBERS
        .iter()
        .zip(&versions_before)
        .map(|(m, v)| (*m, v.len()))
        .collect();

    println!(
        "takeover benchmark: {n} templates ({} Deployments, {} ConfigMaps) Duplicated to {} members, {} Works, etcd with its defaults",
        n.div_ceil(2),
        n / 2,
        MEMBERS.len(),
        n * MEMBERS.len()
    );
    println!(
        "  first control plane: everything propagated {bulk:.1?} after the first create, RSS {first_rss:.0} MiB"
    );
    println!("  member objects: {per_member:?}");
    println!("| measurement | current | target |");
    println!("|---|---|---|");
    println!(
        "| start to serving | {:.2} s | ≤ 10 s |",
        serving.as_secs_f64()
    );
    println!(
        "| start to controllers in sync | {:.2} s | ≤ 30 s |",
        in_sync.as_secs_f64()
    );
    println!("| member objects rewritten | {rewritten} | 0 |");
    println!("| member write requests (Deployments, ConfigMaps) | {writes} | 0 |");
    println!("| control-plane RSS after the takeover | {second_rss:.0} MiB | — |");
}
