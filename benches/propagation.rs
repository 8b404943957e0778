//! Propagation benchmark (`cargo bench --bench propagation`): the control plane
//! (`karmada-rs serve`) and three simulated members (`karmada-rs member serve`), each its own
//! process as in production so the control plane's memory and CPU are measured alone, the
//! members joined as `karmada-rs join` does, then
//! - bulk: N Deployments + N ConfigMaps created at once; time until every Work is Applied and
//!   every Deployment template shows its members' ready replicas;
//! - steady: template changes at a fixed rate; latency from each change to the member object
//!   carrying it (p50/p99);
//! - memory and CPU: resident set and CPU time of the control-plane process (and the members').
//!
//! With PROPAGATION_BENCH_KIND=custom the N Deployments are N custom resources of a CRD
//! (installed on the control plane and every member) with a ResourceInterpreterCustomization
//! scripting every operation; a template counts as aggregated once its status, written by the
//! AggregateStatus script, counts every member's reflected status.
//!
//! Environment: PROPAGATION_BENCH_N (default 1000), PROPAGATION_BENCH_MEMBERS (3),
//! PROPAGATION_BENCH_RATE (changes/s, 100), PROPAGATION_BENCH_SECONDS (steady phase, 20),
//! PROPAGATION_BENCH_LIMIT (s to wait for the bulk phase, 600), BENCH_DEBUG (set:
//! print the completion counts as they move).

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_scheduler::{ApiEnablement, api_enabled};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client};
use serde_json::json;
use support::{
    Conditions, Lite, Process, ReadyReplicas, client, cpu_seconds, env_or,
    first_time_count_reaches, join_ready, rss_kib, spawn, spawn_members,
};

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": name}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
    }))
    .expect("deployment")
}

/// The custom kind of PROPAGATION_BENCH_KIND=custom.
fn workload_resource() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "apps.example.io".into(),
        version: "v1".into(),
        api_version: "apps.example.io/v1".into(),
        kind: "Workload".into(),
        plural: "workloads".into(),
    }
}

fn workload(name: &str) -> kube::api::DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apps.example.io/v1", "kind": "Workload",
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": name}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}
    }))
    .expect("workload")
}

/// The CRD of the custom kind and a customization scripting every operation of it.
async fn install_custom_kind(cp: &Client, members: &[Client], names: &[String]) {
    let crd: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "workloads.apps.example.io"},
        "spec": {"group": "apps.example.io", "scope": "Namespaced",
            "names": {"plural": "workloads", "singular": "workload", "kind": "Workload", "listKind": "WorkloadList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}
    }))
    .expect("crd");
    let crd_resource = kube::api::ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        api_version: "apiextensions.k8s.io/v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
    };
    for c in std::iter::once(cp).chain(members) {
        let api: Api<kube::api::DynamicObject> = Api::all_with(c.clone(), &crd_resource);
        api.create(&PostParams::default(), &crd)
            .await
            .expect("create CRD");
        let workloads: Api<kube::api::DynamicObject> =
            Api::all_with(c.clone(), &workload_resource());
        let deadline = Instant::now() + Duration::from_secs(60);
        while workloads.list(&Default::default()).await.is_err() {
            assert!(Instant::now() < deadline, "the CRD is not served");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // The scheduler places a template only on clusters whose status lists its API (Karmada's
    // APIEnablement filter), and the members' status is collected periodically: wait until
    // every Cluster lists the new kind, so the timed phase measures the propagation, not the
    // wait for the next status collection (about 5 s of idle control plane without this).
    let clusters: Api<Cluster> = Api::all(cp.clone());
    let kind = workload_resource();
    for name in names {
        tokio::time::timeout(
            Duration::from_secs(60),
            await_condition(clusters.clone(), name, |c: Option<&Cluster>| {
                c.is_some_and(|c| {
                    api_enabled(c, &kind.api_version, &kind.kind) == ApiEnablement::Enabled
                })
            }),
        )
        .await
        .expect("the cluster's status lists the CRD's API within 60 s")
        .expect("watch");
    }
    let script = |s: &str| json!({"luaScript": s});
    let ric: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": "workloads"},
        "spec": {"target": {"apiVersion": "apps.example.io/v1", "kind": "Workload"},
            "customizations": {
                "replicaResource": script("local kube = require(\"kube\")\nfunction GetReplicas(obj)\n  return obj.spec.replicas, kube.accuratePodRequirements(obj.spec.template)\nend"),
                "replicaRevision": script("function ReviseReplica(obj, n)\n  obj.spec.replicas = n\n  return obj\nend"),
                "retention": script("function Retain(desired, observed)\n  return desired\nend"),
                "statusReflection": script("function ReflectStatus(obj)\n  return {generation = obj.metadata.generation}\nend"),
                "statusAggregation": script("function AggregateStatus(obj, items)\n  local n = 0\n  for i = 1, #items do\n    if items[i].status ~= nil and items[i].status.generation ~= nil then n = n + 1 end\n  end\n  obj.status = {members = n}\n  return obj\nend"),
                "healthInterpretation": script("function InterpretHealth(obj)\n  return obj.metadata.generation ~= nil\nend"),
                "dependencyInterpretation": script("local kube = require(\"kube\")\nfunction GetDependencies(obj)\n  return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)\nend"),
            }}
    }))
    .expect("customization");
    let rics: Api<kube::api::DynamicObject> = Api::all_with(
        cp.clone(),
        &kube::api::ApiResource {
            group: "config.karmada.io".into(),
            version: "v1alpha1".into(),
            api_version: "config.karmada.io/v1alpha1".into(),
            kind: "ResourceInterpreterCustomization".into(),
            plural: "resourceinterpretercustomizations".into(),
        },
    );
    rics.create(&PostParams::default(), &ric)
        .await
        .expect("create customization");
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct Members {
    members: Option<usize>,
}

fn configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "bench"},
        "data": {"k": "v".repeat(64)}
    }))
    .expect("configmap")
}

#[tokio::main]
async fn main() {
    let n = env_or("PROPAGATION_BENCH_N", 1000);
    let members = env_or("PROPAGATION_BENCH_MEMBERS", 3);
    let rate = env_or("PROPAGATION_BENCH_RATE", 100);
    let seconds = env_or("PROPAGATION_BENCH_SECONDS", 20);
    let custom = std::env::var("PROPAGATION_BENCH_KIND").as_deref() == Ok("custom");
    // PROPAGATION_BENCH_WRAP runs the control plane under a profiler, e.g. `heaptrack -o F`
    // (with a `--features system-allocator` build).
    let wrap = std::env::var("PROPAGATION_BENCH_WRAP").ok();
    let cp_process = spawn(
        &["serve", "--bind", "127.0.0.1:0"],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        wrap.as_deref(),
    );
    let names: Vec<String> = (1..=members).map(|i| format!("member{i}")).collect();
    let member_processes: Vec<Process> = spawn_members(&names);
    let pid = cp_process.child.id();
    let cp = client(&cp_process.kubeconfig).await;
    join_ready(&cp, &names, &member_processes).await;
    let m1 = client(&member_processes[0].kubeconfig).await;
    if custom {
        let mut member_clients = Vec::new();
        for m in &member_processes {
            member_clients.push(client(&m.kubeconfig).await);
        }
        install_custom_kind(&cp, &member_clients, &names).await;
    }
    let (kind_api_version, kind) = if custom {
        ("apps.example.io/v1", "Workload")
    } else {
        ("apps/v1", "Deployment")
    };
    let member_rss = || -> u64 { member_processes.iter().map(|m| rss_kib(m.child.id())).sum() };
    let idle_rss = rss_kib(pid);

    // Bulk.
    let ns: Api<Namespace> = Api::all(cp.clone());
    let _ = ns
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "bench"}})).expect("ns"),
        )
        .await;
    let pp: Api<kube::api::DynamicObject> = Api::namespaced_with(
        cp.clone(),
        "bench",
        &kube::api::ApiResource {
            group: "policy.karmada.io".into(),
            version: "v1alpha1".into(),
            api_version: "policy.karmada.io/v1alpha1".into(),
            kind: "PropagationPolicy".into(),
            plural: "propagationpolicies".into(),
        },
    );
    let policy: kube::api::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "all", "namespace": "bench"},
        "spec": {"resourceSelectors": [{"apiVersion": kind_api_version, "kind": kind}, {"apiVersion": "v1", "kind": "ConfigMap"}],
            "placement": {"clusterAffinity": {"clusterNames": names}, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}
    }))
    .expect("policy");
    pp.create(&PostParams::default(), &policy)
        .await
        .expect("create policy");
    tokio::time::sleep(Duration::from_secs(1)).await;

    let deploys: Api<Deployment> = Api::namespaced(cp.clone(), "bench");
    let workloads: Api<kube::api::DynamicObject> =
        Api::namespaced_with(cp.clone(), "bench", &workload_resource());
    let cms: Api<ConfigMap> = Api::namespaced(cp.clone(), "bench");
    let bulk_start = Instant::now();
    stream::iter(0..n)
        .map(|i| {
            let (d, w, c) = (deploys.clone(), workloads.clone(), cms.clone());
            async move {
                let name = format!("d{i}");
                if custom {
                    w.create(&PostParams::default(), &workload(&name))
                        .await
                        .expect("create workload");
                } else {
                    d.create(&PostParams::default(), &deployment(&name))
                        .await
                        .expect("create deployment");
                }
                c.create(&PostParams::default(), &configmap(&name))
                    .await
                    .expect("create configmap");
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let created = bulk_start.elapsed();
    // The client shares the machine with the servers it measures, so its watches decode only
    // the conditions they check (a whole Work carries its manifest).
    let works: Api<Lite<Conditions>> = Api::all_with(
        cp.clone(),
        &kube::api::ApiResource {
            group: "work.karmada.io".into(),
            version: "v1alpha1".into(),
            api_version: "work.karmada.io/v1alpha1".into(),
            kind: "Work".into(),
            plural: "works".into(),
        },
    );
    let want_works = 2 * n * members;
    let want_ready = i32::try_from(2 * members).unwrap_or(i32::MAX);
    // Completion is followed with watches (a repeated list of every Work would load the
    // server being measured).
    let all_applied = first_time_count_reaches(
        watcher(works, watcher::Config::default()),
        want_works,
        |w: &Lite<Conditions>| {
            w.status.as_ref().is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|c| c.type_ == "Applied" && c.status == "True")
            })
        },
    );
    let all_ready = async {
        if custom {
            first_time_count_reaches(
                watcher(
                    Api::<Lite<Members>>::namespaced_with(
                        cp.clone(),
                        "bench",
                        &workload_resource(),
                    ),
                    watcher::Config::default(),
                ),
                n,
                move |w: &Lite<Members>| w.status.as_ref().and_then(|s| s.members) == Some(members),
            )
            .await
        } else {
            first_time_count_reaches(
                watcher(
                    Api::<Lite<ReadyReplicas>>::namespaced_with(
                        cp.clone(),
                        "bench",
                        &kube::api::ApiResource::erase::<Deployment>(&()),
                    ),
                    watcher::Config::default(),
                ),
                n,
                move |d: &Lite<ReadyReplicas>| {
                    d.status.as_ref().and_then(|s| s.ready_replicas) == Some(want_ready)
                },
            )
            .await
        }
    };
    let limit = Duration::from_secs(env_or("PROPAGATION_BENCH_LIMIT", 600) as u64);
    let (all_applied, all_ready) = tokio::join!(
        tokio::time::timeout(limit, all_applied),
        tokio::time::timeout(limit, all_ready)
    );
    let all_applied = all_applied.ok().map(|t| t - bulk_start);
    let all_ready = all_ready.ok().map(|t| t - bulk_start);
    let bulk_cpu = cpu_seconds(pid);
    let bulk_member_cpu: f64 = member_processes
        .iter()
        .map(|m| cpu_seconds(m.child.id()))
        .sum();
    let bulk_own_cpu = cpu_seconds(std::process::id());
    let bulk_rss = rss_kib(pid);
    let bulk_watch = watch_cache_counters(&cp).await;

    // Steady: change the image of a Deployment; measure until member1's copy has it.
    let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::new()));
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    {
        let (sent, latencies, seen) = (sent.clone(), latencies.clone(), seen.clone());
        // Both kinds keep the image at spec.template.spec.containers[0].image.
        let member_objects: Api<kube::api::DynamicObject> = Api::namespaced_with(
            m1.clone(),
            "bench",
            &if custom {
                workload_resource()
            } else {
                kube::api::ApiResource::erase::<Deployment>(&())
            },
        );
        tokio::spawn(async move {
            let mut s = watcher(member_objects, watcher::Config::default())
                .applied_objects()
                .boxed();
            while let Ok(Some(d)) = s.try_next().await {
                let image = d.data["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned();
                if let Some(t) = sent.lock().expect("lock").remove(&image) {
                    latencies.lock().expect("lock").push(t.elapsed());
                    seen.lock().expect("lock").insert(image, Instant::now());
                }
            }
        });
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    let total = rate * seconds;
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let steady_start = Instant::now();
    for k in 0..total {
        let due = steady_start + interval * k as u32;
        tokio::time::sleep_until(due.into()).await;
        let name = format!("d{}", k % n);
        let image = format!("nginx:bench-{k}");
        sent.lock()
            .expect("lock")
            .insert(image.clone(), Instant::now());
        let (d, w) = (deploys.clone(), workloads.clone());
        tokio::spawn(async move {
            let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
            if custom {
                // Custom resources take merge patches (the list is replaced whole).
                let _ = w
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await;
            } else {
                let _ = d
                    .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                    .await;
            }
        });
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline && !sent.lock().expect("lock").is_empty() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut lat = latencies.lock().expect("lock").clone();
    lat.sort();
    let pct = |p: f64| -> Duration {
        if lat.is_empty() {
            return Duration::ZERO;
        }
        lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1]
    };
    let lost = sent.lock().expect("lock").len();
    let steady_rss = rss_kib(pid);
    let steady_watch = watch_cache_counters(&cp).await;

    println!(
        "propagation benchmark: {n} {} + {n} ConfigMaps to {members} members",
        if custom {
            "custom resources (a customization for every operation)"
        } else {
            "Deployments"
        }
    );
    println!(
        "  bulk create (16 concurrent clients): {:.2} s",
        created.as_secs_f64()
    );
    println!(
        "  all {want_works} Works Applied:        {}",
        all_applied
            .map(|d| format!("{:.2} s", d.as_secs_f64()))
            .unwrap_or("not reached".into())
    );
    println!(
        "  all {n} templates aggregated:    {}",
        all_ready
            .map(|d| format!("{:.2} s", d.as_secs_f64()))
            .unwrap_or("not reached".into())
    );
    println!(
        "  steady {rate} changes/s for {seconds} s: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms, {} of {total} not seen",
        pct(0.5).as_secs_f64() * 1000.0,
        pct(0.99).as_secs_f64() * 1000.0,
        pct(1.0).as_secs_f64() * 1000.0,
        lost
    );
    println!(
        "  control-plane RSS: idle {} MiB, after bulk {} MiB, after steady {} MiB",
        idle_rss / 1024,
        bulk_rss / 1024,
        steady_rss / 1024
    );
    // A watcher further behind than its watch cache's window is cut off and must resume or
    // relist; a watch cache that falls behind the store's history relists it.
    println!(
        "  watchers cut off for lagging: {} after bulk, {} in all; watch cache relists: {} after bulk, {} in all",
        bulk_watch.0, steady_watch.0, bulk_watch.1, steady_watch.1
    );
    println!(
        "  control-plane CPU: {:.1} s for the bulk phase (from start), {:.1} s in all",
        bulk_cpu,
        cpu_seconds(pid)
    );
    println!(
        "  members' RSS (sum of {members} processes): {} MiB",
        member_rss() / 1024
    );
    // The machine is shared: what the members and this client spend is not the control plane's.
    println!(
        "  bulk phase CPU elsewhere: members {bulk_member_cpu:.1} s, benchmark client {bulk_own_cpu:.1} s"
    );
    // The control plane goes first so it does not log the members going away.
    drop(cp_process);
    drop(member_processes);
}

/// The control plane's `apiserver_terminated_watchers_total` and its watch caches'
/// initializations beyond the first, summed over resources.
async fn watch_cache_counters(cp: &Client) -> (u64, u64) {
    let req = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = cp.request_text(req).await.expect("metrics");
    let (mut cut, mut relists) = (0, 0);
    for line in text.lines() {
        let value = |l: &str| -> u64 {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        if line.starts_with("apiserver_terminated_watchers_total{") {
            cut += value(line);
        } else if line.starts_with("apiserver_watch_cache_initializations_total{") {
            relists += value(line).saturating_sub(1);
        }
    }
    (cut, relists)
}
