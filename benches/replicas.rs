//! Replicas over one etcd (issue 22 target: a write through replica A is visible to a watch
//! on replica B within 100 ms at p99). Starts a real etcd and two real `karmada-rs serve`
//! replicas on it; a kube-rs client watches ConfigMaps on B while another creates them through
//! A, one at a time, each timed from just before the create is sent to the ADDED event on B.
//! `BENCH_WRITES` writes (default 300) after 20 warm-up ones. Run:
//! `cargo bench --bench replicas`.

mod support;

use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use support::{client, percentile};

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
}
