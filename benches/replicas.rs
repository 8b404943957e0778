//! Replicas over one etcd (issue 22 target: a write through replica A is visible to a watch
//! on replica B within 100 ms at p99). Starts a real etcd and two real `karmada-rs serve`
//! replicas on it; a kube-rs client watches ConfigMaps on B while another creates them through
//! A, one at a time, each timed from just before the create is sent to the ADDED event on B.
//! `BENCH_WRITES` writes (default 300) after 20 warm-up ones.
//!
//! Then the other target (API creates/s of two replicas at least 1.5× one replica's over the
//! same etcd): 64 kube-rs clients create 1 KiB ConfigMaps at full speed, `BENCH_CREATES`
//! (default 10,000; 0 skips this part) per run, once through one replica alone and once spread
//! over two (the clients alternate between them), each on freshly started replicas and in a
//! fresh namespace, alternating `BENCH_REPS` times (default 3); the median run of each is
//! reported with every run's rate. Run: `cargo bench --bench replicas`.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use support::{client, env_or, percentile};

/// Concurrent clients of the creates/s runs.
const WORKERS: usize = 64;

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Creates `n` ConfigMaps named `{prefix}-{i}` through `a`, each awaited on `b_watch`;
/// the sorted latencies.
async fn writes<S>(a: &Api<ConfigMap>, b_watch: &mut S, prefix: &str, n: usize) -> Vec<Duration>
where
    S: futures::Stream<Item = kube::Result<WatchEvent<ConfigMap>>> + Unpin,
{
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let name = format!("{prefix}-{i}");
        let t = Instant::now();
        a.create(&PostParams::default(), &config_map(&name))
            .await
            .expect("create through A");
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(30), b_watch.next())
                .await
                .expect("B's watch saw the write within 30 s")
                .expect("B's watch is open")
                .expect("a watch event");
            if let WatchEvent::Added(cm) = ev
                && cm.metadata.name.as_deref() == Some(name.as_str())
            {
                break;
            }
        }
        lat.push(t.elapsed());
    }
    lat.sort();
    lat
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Creates `total` 1 KiB ConfigMaps in `namespace` with [`WORKERS`] clients, worker `i`
/// going through `clients[i % len]`; creates/s.
async fn creates(clients: &[kube::Client], namespace: &str, total: usize) -> f64 {
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..WORKERS {
        let api: Api<ConfigMap> = Api::namespaced(clients[w % clients.len()].clone(), namespace);
        let next = next.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let mut cm = config_map(&format!("cm-{i}"));
                cm.data = Some(BTreeMap::from([("payload".to_string(), "x".repeat(1024))]));
                api.create(&PostParams::default(), &cm)
                    .await
                    .expect("create");
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
    total as f64 / start.elapsed().as_secs_f64()
}

/// One creates/s run through `replicas` freshly started replicas over `endpoints`.
async fn throughput(endpoints: &str, replicas: usize, namespace: &str, total: usize) -> f64 {
    let args = [
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--etcd-servers",
        endpoints,
    ];
    let processes: Vec<support::Process> = (0..replicas)
        .map(|_| {
            support::spawn(
                &args,
                "karmada-rs control plane serving at",
                "karmada.kubeconfig",
                None,
            )
        })
        .collect();
    let mut clients = Vec::new();
    for p in &processes {
        clients.push(client(&p.kubeconfig).await);
    }
    let ns: Api<Namespace> = Api::all(clients[0].clone());
    let mut object = Namespace::default();
    object.metadata.name = Some(namespace.to_string());
    ns.create(&PostParams::default(), &object)
        .await
        .expect("create the run's namespace");
    // Warm up every client's connections and every replica's caches.
    let _ = creates(&clients, namespace, 256).await;
    let measured = format!("{namespace}-measured");
    object.metadata.name = Some(measured.clone());
    ns.create(&PostParams::default(), &object)
        .await
        .expect("create the measured namespace");
    // The namespace must be in every replica's cache before its creates are admitted there.
    for c in &clients {
        let api: Api<Namespace> = Api::all(c.clone());
        let deadline = Instant::now() + Duration::from_secs(30);
        while api.get_opt(&measured).await.ok().flatten().is_none() {
            assert!(
                Instant::now() < deadline,
                "namespace never reached a replica"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    creates(&clients, &measured, total).await
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::var("BENCH_WRITES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let etcd = storage::testing::EtcdProcess::start()
        .await
        .expect("start etcd");
    let endpoints = etcd.endpoints().join(",");
    let args = [
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--etcd-servers",
        &endpoints,
    ];
    let prefix = "karmada-rs control plane serving at";
    let a = support::spawn(&args, prefix, "karmada.kubeconfig", None);
    let b = support::spawn(&args, prefix, "karmada.kubeconfig", None);
    let a_api: Api<ConfigMap> = Api::namespaced(client(&a.kubeconfig).await, "default");
    let b_api: Api<ConfigMap> = Api::namespaced(client(&b.kubeconfig).await, "default");
    // From B's current state on: only the writes below arrive.
    let rv = b_api
        .list_metadata(&Default::default())
        .await
        .expect("list on B")
        .metadata
        .resource_version
        .unwrap_or_default();
    let mut watch = b_api
        .watch(&WatchParams::default().timeout(290), &rv)
        .await
        .expect("watch on B")
        .boxed();
    let _ = writes(&a_api, &mut watch, "warmup", 20).await;
    let lat = writes(&a_api, &mut watch, "cm", n).await;
    println!("| writes | p50 | p90 | p99 | max |");
    println!("|---|---|---|---|---|");
    println!(
        "| {n} | {} | {} | {} | {} |",
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.9)),
        ms(percentile(&lat, 0.99)),
        ms(lat[lat.len() - 1])
    );
    println!(
        "\nwrite through A seen by a watch on B: p99 {} (target: at most 100 ms)",
        ms(percentile(&lat, 0.99))
    );
    drop(watch);
    drop((a, b));

    let total = env_or("BENCH_CREATES", 10_000);
    if total == 0 {
        return;
    }
    let reps = env_or("BENCH_REPS", 3).max(1);
    let (mut one, mut two) = (Vec::new(), Vec::new());
    for r in 0..reps {
        one.push(throughput(&endpoints, 1, &format!("one-{r}"), total).await);
        two.push(throughput(&endpoints, 2, &format!("two-{r}"), total).await);
    }
    let median = |runs: &mut Vec<f64>| {
        runs.sort_by(f64::total_cmp);
        let all: Vec<String> = runs.iter().map(|r| format!("{r:.0}")).collect();
        (runs[runs.len() / 2], all.join(", "))
    };
    let (m_one, all_one) = median(&mut one);
    let (m_two, all_two) = median(&mut two);
    println!("\n| replicas | ConfigMap creates/s (median of {reps}) | creates/s of all runs |");
    println!("|---|---|---|");
    println!("| 1 | {m_one:.0} | {all_one} |");
    println!("| 2 | {m_two:.0} | {all_two} |");
    println!(
        "\ntwo replicas: {:.2}x the creates/s of one (target: at least 1.5x)",
        m_two / m_one
    );
}
