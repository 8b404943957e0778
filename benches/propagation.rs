//! Propagation benchmark (`cargo bench --bench propagation`): `karmada-rs up` with three
//! simulated members, then
//! - bulk: N Deployments + N ConfigMaps created at once; time until every Work is Applied and
//!   every Deployment template shows its members' ready replicas;
//! - steady: template changes at a fixed rate; latency from each change to the member object
//!   carrying it (p50/p99);
//! - memory: resident set of the `up` process (control plane and the simulated members).
//!
//! Environment: PROPAGATION_BENCH_N (default 1000), PROPAGATION_BENCH_MEMBERS (3),
//! PROPAGATION_BENCH_RATE (changes/s, 100), PROPAGATION_BENCH_SECONDS (steady phase, 20).

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt, stream};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Config};
use serde_json::json;

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn client(kubeconfig: &std::path::Path) -> Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let cfg = Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    Client::try_from(cfg).expect("client")
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0)
}

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
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["up", "--members", &members.to_string(), "--data-dir"])
        .arg(dir.path())
        .env("KARMADA_RS_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn karmada-rs up");
    let pid = child.id();
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // `up` prints its usage once the members are joined.
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(120) {
        if let Ok(l) = rx.recv_timeout(Duration::from_secs(1))
            && (l.contains("kubectl") || l.contains("kubeconfig"))
            && dir.path().join("karmada.kubeconfig").exists()
        {
            break;
        }
    }
    let cp = client(&dir.path().join("karmada.kubeconfig")).await;
    let names: Vec<String> = (1..=members).map(|i| format!("member{i}")).collect();
    let m1 = client(&dir.path().join("members").join("member1.kubeconfig")).await;
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
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}, {"apiVersion": "v1", "kind": "ConfigMap"}],
            "placement": {"clusterAffinity": {"clusterNames": names}, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}
    }))
    .expect("policy");
    pp.create(&PostParams::default(), &policy)
        .await
        .expect("create policy");
    tokio::time::sleep(Duration::from_secs(1)).await;

    let deploys: Api<Deployment> = Api::namespaced(cp.clone(), "bench");
    let cms: Api<ConfigMap> = Api::namespaced(cp.clone(), "bench");
    let bulk_start = Instant::now();
    stream::iter(0..n)
        .map(|i| {
            let (d, c) = (deploys.clone(), cms.clone());
            async move {
                let name = format!("d{i}");
                d.create(&PostParams::default(), &deployment(&name))
                    .await
                    .expect("create deployment");
                c.create(&PostParams::default(), &configmap(&name))
                    .await
                    .expect("create configmap");
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let created = bulk_start.elapsed();
    let works: Api<kube::api::DynamicObject> = Api::all_with(
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
    let mut all_applied = None;
    let mut all_ready = None;
    while bulk_start.elapsed() < Duration::from_secs(600)
        && (all_applied.is_none() || all_ready.is_none())
    {
        if all_applied.is_none() {
            let list = works.list(&Default::default()).await.expect("list works");
            let applied = list
                .items
                .iter()
                .filter(|w| {
                    w.data["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Applied" && c["status"] == "True")
                    })
                })
                .count();
            if applied >= want_works {
                all_applied = Some(bulk_start.elapsed());
            }
        }
        if all_ready.is_none() {
            let list = deploys
                .list(&Default::default())
                .await
                .expect("list deployments");
            let ready = list
                .items
                .iter()
                .filter(|d| d.status.as_ref().and_then(|s| s.ready_replicas) == Some(want_ready))
                .count();
            if ready >= n {
                all_ready = Some(bulk_start.elapsed());
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let bulk_rss = rss_kib(pid);

    // Steady: change the image of a Deployment; measure until member1's copy has it.
    let seen: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    let latencies: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::new()));
    let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::new(Mutex::new(HashMap::new()));
    {
        let (sent, latencies, seen) = (sent.clone(), latencies.clone(), seen.clone());
        let member_deploys: Api<Deployment> = Api::namespaced(m1.clone(), "bench");
        tokio::spawn(async move {
            let mut s = watcher(member_deploys, watcher::Config::default())
                .applied_objects()
                .boxed();
            while let Ok(Some(d)) = s.try_next().await {
                let image = d
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.spec.as_ref())
                    .and_then(|p| p.containers.first())
                    .and_then(|c| c.image.clone())
                    .unwrap_or_default();
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
        let d = deploys.clone();
        tokio::spawn(async move {
            let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}});
            let _ = d
                .patch(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                .await;
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

    println!("propagation benchmark: {n} Deployments + {n} ConfigMaps to {members} members");
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
        "  RSS of the up process: idle {} MiB, after bulk {} MiB, after steady {} MiB",
        idle_rss / 1024,
        bulk_rss / 1024,
        steady_rss / 1024
    );
    let _ = child.kill();
    let _ = child.wait();
}
