//! Storage encoding benchmark (issue 35 target: creates/s over etcd with built-in kinds
//! stored as protobuf at least as high as with JSON). Starts the real `karmada-rs serve` over
//! a fresh etcd started with its defaults, once with `--storage-media-type` at its default
//! (`application/vnd.kubernetes.protobuf`, as kube-apiserver) and once with
//! `application/json`, alternating, `BENCH_REPS` times (default 3); each run creates
//! `BENCH_CREATES` (default 10,000) ConfigMaps of about 1 KiB with 64 concurrent kube-rs clients
//! at full speed after 256 warm-up creates. The median run of each is reported with every
//! run's rate. Run: `cargo bench --bench storage_encoding`.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use support::{client, env_or, ms, percentile};

const WORKERS: usize = 64;

fn config_map(name: &str) -> ConfigMap {
    let data: BTreeMap<String, String> = (0..8)
        .map(|k| (format!("key-{k}"), format!("{name}-{k}-").repeat(8)))
        .collect();
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            labels: Some([("app".to_string(), "bench".to_string())].into()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// One run on a fresh etcd and server: (creates/s, p50, p99).
async fn run(media_type: &str, total: usize) -> (f64, Duration, Duration) {
    let etcd = storage::testing::EtcdProcess::start()
        .await
        .expect("start etcd (Debian's etcd-server on PATH)");
    let endpoints = etcd.endpoints().join(",");
    let server = support::spawn(
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--etcd-servers",
            &endpoints,
            "--storage-media-type",
            media_type,
        ],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let c = client(&server.kubeconfig).await;
    let warm: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let _ = support::create_concurrently(&warm, 256, WORKERS, None, |i| {
        config_map(&format!("warm-{i}"))
    })
    .await;
    let api: Api<ConfigMap> = Api::namespaced(c, "kube-public");
    let (rate, lat) = support::create_concurrently(&api, total, WORKERS, None, |i| {
        config_map(&format!("c-{i}"))
    })
    .await;
    drop(server);
    drop(etcd);
    (rate, percentile(&lat, 0.5), percentile(&lat, 0.99))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let reps = env_or("BENCH_REPS", 3);
    let total = env_or("BENCH_CREATES", 10_000);
    const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
    const JSON: &str = "application/json";
    let (mut pb, mut js) = (vec![], vec![]);
    for _ in 0..reps {
        pb.push(run(PROTOBUF, total).await);
        js.push(run(JSON, total).await);
    }
    let median = |runs: &mut Vec<(f64, Duration, Duration)>| {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let all: Vec<String> = runs.iter().map(|r| format!("{:.0}", r.0)).collect();
        (runs[runs.len() / 2], all.join(", "))
    };
    let (m_pb, all_pb) = median(&mut pb);
    let (m_js, all_js) = median(&mut js);
    println!(
        "| --storage-media-type | ConfigMap creates/s over etcd (median of {reps}) | p50 | p99 | creates/s of all runs |"
    );
    println!("|---|---|---|---|---|");
    for (name, m, all) in [(PROTOBUF, m_pb, all_pb), (JSON, m_js, all_js)] {
        println!(
            "| {name} | {:.0} | {} | {} | {all} |",
            m.0,
            ms(m.1),
            ms(m.2)
        );
    }
    println!(
        "\nprotobuf against JSON: {:.2}x creates/s (target: at least 1.0x)",
        m_pb.0 / m_js.0
    );
}
