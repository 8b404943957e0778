//! Multi-cluster services benchmark (`cargo bench --bench mcs`): the control plane (`karmada-rs
//! serve`) and three simulated members, each its own process, joined as `karmada-rs join`
//! does. The MCS CRDs are propagated to the members; N Services (and 1-replica Deployments)
//! are exported from member1 and member2 and imported into member3, as Karmada's tutorial
//! does it. Then, for each Service, a Pod is created directly in member1 with the Service's
//! labels: the time from member1's EndpointSlice listing the Pod's address to member3's
//! EndpointSlice of the derived Service listing it is the propagation latency of an endpoint
//! change (target: p99 within 1 s).
//!
//! Environment: MCS_BENCH_N (100 Services), MCS_BENCH_RATE (Pods created per second, 20),
//! MCS_BENCH_LIMIT (s to wait for each phase, 300).

mod support;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{DynamicObject, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, ResourceExt};
use serde_json::{Value, json};
use support::{Process, client, cpu_seconds, env_or, join_ready, ms, percentile, rss_mib, spawn};

const NS: &str = "bench";

/// When each address first appeared in a slice of each Service, by Service name.
type Seen = Arc<Mutex<HashMap<(String, String), Instant>>>;

/// Records, for every EndpointSlice change of `client`, when each of its addresses was first
/// listed under its Service.
fn watch_addresses(client: Client, seen: Seen) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<EndpointSlice> = Api::namespaced(client, NS);
        let stream = watcher(
            api,
            watcher::Config::default().labels("kubernetes.io/service-name"),
        )
        .default_backoff()
        .applied_objects();
        let mut stream = std::pin::pin!(stream);
        while let Some(Ok(s)) = stream.next().await {
            let now = Instant::now();
            let Some(svc) = s.labels().get("kubernetes.io/service-name").cloned() else {
                continue;
            };
            let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            for e in &s.endpoints {
                for a in &e.addresses {
                    seen.entry((svc.clone(), a.clone())).or_insert(now);
                }
            }
        }
    })
}

async fn create(client: &Client, obj: Value) {
    let (group, version) = obj["apiVersion"]
        .as_str()
        .and_then(|v| v.rsplit_once('/'))
        .map_or(
            ("", obj["apiVersion"].as_str().unwrap_or("v1")),
            |(g, v)| (g, v),
        );
    let kind = obj["kind"].as_str().unwrap_or_default().to_owned();
    let plural = match kind.as_str() {
        "ClusterPropagationPolicy" => "clusterpropagationpolicies".to_owned(),
        "PropagationPolicy" => "propagationpolicies".to_owned(),
        k => format!("{}s", k.to_lowercase()),
    };
    let gvk = kube::api::GroupVersionKind::gvk(group, version, &kind);
    let ar = kube::api::ApiResource::from_gvk_with_plural(&gvk, &plural);
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let o: DynamicObject = serde_json::from_value(obj).expect("object");
    match api.create(&PostParams::default(), &o).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create {kind} {}: {e}", o.name_any()),
    }
}

/// Waits until `f` holds, checking every 100 ms, at most `limit`.
async fn until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "{what}: not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    start.elapsed()
}

#[tokio::main]
async fn main() {
    let n = env_or("MCS_BENCH_N", 100);
    let rate = env_or("MCS_BENCH_RATE", 20) as f64;
    let limit = Duration::from_secs(env_or("MCS_BENCH_LIMIT", 300) as u64);
    let cp_process = spawn(
        &["serve", "--bind", "127.0.0.1:0"],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let names: Vec<String> = (1..=3).map(|i| format!("member{i}")).collect();
    let members: Vec<Process> = support::spawn_members(&names);
    let cp = client(&cp_process.kubeconfig).await;
    join_ready(&cp, &names, &members).await;
    let member_clients: Vec<Client> =
        futures::future::join_all(members.iter().map(|m| client(&m.kubeconfig))).await;
    let ns: Api<Namespace> = Api::all(cp.clone());
    let _ = ns
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}})).expect("ns"),
        )
        .await;
    create(
        &cp,
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
               "metadata": {"name": "mcs-crds"},
               "spec": {"resourceSelectors": [
                   {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": "serviceexports.multicluster.x-k8s.io"},
                   {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "name": "serviceimports.multicluster.x-k8s.io"}],
                   "placement": {"clusterAffinity": {"clusterNames": names}}}}),
    )
    .await;
    let exporters = json!({"clusterNames": ["member1", "member2"]});
    for (kind, name, api_version, placement) in [
        ("Deployment", "export", "apps/v1", exporters.clone()),
        ("Service", "export-svc", "v1", exporters.clone()),
        (
            "ServiceExport",
            "export-svcex",
            "multicluster.x-k8s.io/v1alpha1",
            exporters.clone(),
        ),
        (
            "ServiceImport",
            "import",
            "multicluster.x-k8s.io/v1alpha1",
            json!({"clusterNames": ["member3"]}),
        ),
    ] {
        create(
            &cp,
            json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                   "metadata": {"name": name, "namespace": NS},
                   "spec": {"resourceSelectors": [{"apiVersion": api_version, "kind": kind}],
                            "placement": {"clusterAffinity": placement,
                                          "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}}),
        )
        .await;
    }
    // Imports and exports need the CRDs in the members.
    for m in &member_clients {
        let crds: Api<DynamicObject> = Api::all_with(
            m.clone(),
            &kube::api::ApiResource::erase::<
                k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
            >(&()),
        );
        let start = Instant::now();
        while crds
            .get_opt("serviceexports.multicluster.x-k8s.io")
            .await
            .ok()
            .flatten()
            .is_none()
            || crds
                .get_opt("serviceimports.multicluster.x-k8s.io")
                .await
                .ok()
                .flatten()
                .is_none()
        {
            assert!(start.elapsed() < limit, "MCS CRDs not propagated");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    let seen1: Seen = Arc::default();
    let seen3: Seen = Arc::default();
    let _w1 = watch_addresses(member_clients[0].clone(), seen1.clone());
    let _w3 = watch_addresses(member_clients[2].clone(), seen3.clone());

    let setup = Instant::now();
    let objects = futures::stream::iter(0..n).map(|i| {
        let cp = cp.clone();
        async move {
            let app = format!("svc-{i}");
            create(&cp, json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": app, "namespace": NS},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": app}},
                         "template": {"metadata": {"labels": {"app": app}},
                                      "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]}}}})).await;
            create(&cp, json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"name": app, "namespace": NS},
                "spec": {"selector": {"app": app}, "ports": [{"port": 80}]}})).await;
            create(&cp, json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceExport",
                "metadata": {"name": app, "namespace": NS}})).await;
            create(&cp, json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport",
                "metadata": {"name": app, "namespace": NS},
                "spec": {"type": "ClusterSetIP", "ports": [{"port": 80, "protocol": "TCP"}]}})).await;
        }
    });
    objects.buffer_unordered(8).collect::<Vec<()>>().await;
    // Every import lists its two exporters' endpoints.
    let imported = until("every import has both exporters' endpoints", limit, || {
        let seen = seen3.lock().unwrap_or_else(|p| p.into_inner());
        let mut per: HashMap<&str, usize> = HashMap::new();
        for (svc, _) in seen.keys() {
            *per.entry(svc.as_str()).or_default() += 1;
        }
        (0..n).all(|i| {
            per.get(format!("derived-svc-{i}").as_str())
                .copied()
                .unwrap_or(0)
                >= 2
        })
    })
    .await;
    let setup_time = setup.elapsed();
    let cpu_before = cpu_seconds(cp_process.child.id());

    // The endpoint changes: a Pod per Service in member1.
    let known1: BTreeSet<(String, String)> = seen1
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .keys()
        .cloned()
        .collect();
    let pods: Api<DynamicObject> = Api::namespaced_with(
        member_clients[0].clone(),
        NS,
        &kube::api::ApiResource::erase::<k8s_openapi::api::core::v1::Pod>(&()),
    );
    let start = Instant::now();
    for i in 0..n {
        let due = start + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
        let app = format!("svc-{i}");
        let pod: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("extra-{i}"), "namespace": NS, "labels": {"app": app}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80}]}]},
        }))
        .expect("pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("pod");
    }
    // The new address of each Service in member1, and when member3 listed it.
    let mut latencies = Vec::new();
    let deadline = Instant::now() + limit;
    loop {
        latencies.clear();
        let s1 = seen1.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let s3 = seen3.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let mut missing = 0;
        for i in 0..n {
            let svc = format!("svc-{i}");
            let new: Vec<(&(String, String), &Instant)> = s1
                .iter()
                .filter(|(k, _)| k.0 == svc && !known1.contains(*k))
                .collect();
            let Some(((_, addr), t1)) = new.first() else {
                missing += 1;
                continue;
            };
            match s3.get(&(format!("derived-{svc}"), addr.clone())) {
                Some(t3) => latencies.push(t3.saturating_duration_since(**t1)),
                None => missing += 1,
            }
        }
        if missing == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} endpoint changes never reached member3"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    latencies.sort();
    let cpu = cpu_seconds(cp_process.child.id()) - cpu_before;
    println!("| metric | value |");
    println!("|---|---|");
    println!("| Services exported from 2 members, imported into 1 | {n} |");
    println!(
        "| setup: every import lists both exporters (from first create) | {:.1} s (waited {:.1} s after the creates) |",
        setup_time.as_secs_f64(),
        imported.as_secs_f64()
    );
    println!(
        "| endpoint change, member1 slice to member3 slice, p50 | {} |",
        ms(percentile(&latencies, 0.50))
    );
    println!(
        "| endpoint change, p90 | {} |",
        ms(percentile(&latencies, 0.90))
    );
    println!(
        "| endpoint change, p99 (target 1 s) | {} |",
        ms(percentile(&latencies, 0.99))
    );
    println!(
        "| endpoint change, max | {} |",
        ms(*latencies.last().unwrap_or(&Duration::ZERO))
    );
    println!("| control plane CPU during the changes | {cpu:.2} s |");
    println!(
        "| control plane RSS | {:.0} MiB |",
        rss_mib(cp_process.child.id())
    );
}
