//! Encryption at rest benchmark (issue 22 target: Secret creates/s with encryption on at most
//! 15 % below encryption off). Starts the real `karmada-rs serve` on the embedded store with
//! and without `--encryption-provider-config` (aesgcm, one 32-byte key, for secrets) and
//! creates 1 KiB Secrets with 64 concurrent kube-rs clients at full speed. The two servers
//! run one after the other, alternating, `BENCH_REPS` times (default 3); the median run of
//! each is reported with every run's rate. Run: `cargo bench --bench encryption`.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;
use support::{client, ms, percentile};

const CONFIG: &str = "apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys:
      - name: key1
        secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
";

const WORKERS: usize = 64;

fn secret(name: &str) -> Secret {
    let mut data = BTreeMap::new();
    data.insert("payload".to_string(), ByteString(vec![b'x'; 1024]));
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// Creates `total` Secrets with [`WORKERS`] clients; creates/s and sorted latencies.
async fn creates(api: &Api<Secret>, total: usize) -> (f64, Vec<Duration>) {
    support::create_concurrently(api, total, WORKERS, None, |i| secret(&format!("s-{i}"))).await
}

/// One run on a fresh server: (creates/s, p50, p99).
async fn run(encrypted: bool, total: usize) -> (f64, Duration, Duration) {
    let cfg_dir = tempfile::tempdir().expect("tempdir");
    let cfg = cfg_dir.path().join("encryption.yaml");
    std::fs::write(&cfg, CONFIG).expect("write config");
    let cfg = cfg.to_str().expect("path").to_string();
    let mut args = vec!["serve", "--bind", "127.0.0.1:0"];
    if encrypted {
        args.extend(["--encryption-provider-config", cfg.as_str()]);
    }
    let server = support::spawn(
        &args,
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let c = client(&server.kubeconfig).await;
    let api: Api<Secret> = Api::namespaced(c, "default");
    // Warm up connections and the server's caches; the measured Secrets go to another
    // namespace so their names are fresh.
    let _ = creates(&api, 256).await;
    let api: Api<Secret> = Api::namespaced(client(&server.kubeconfig).await, "kube-public");
    let (rate, lat) = creates(&api, total).await;
    (rate, percentile(&lat, 0.5), percentile(&lat, 0.99))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let reps: usize = std::env::var("BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let total: usize = std::env::var("BENCH_SECRETS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let mut off = vec![];
    let mut on = vec![];
    for _ in 0..reps {
        off.push(run(false, total).await);
        on.push(run(true, total).await);
    }
    let median = |runs: &mut Vec<(f64, Duration, Duration)>| {
        runs.sort_by(|a, b| a.0.total_cmp(&b.0));
        let all: Vec<String> = runs.iter().map(|r| format!("{:.0}", r.0)).collect();
        (runs[runs.len() / 2], all.join(", "))
    };
    let (m_off, all_off) = median(&mut off);
    let (m_on, all_on) = median(&mut on);
    println!(
        "| encryption | Secret creates/s (median of {reps}) | p50 | p99 | creates/s of all runs |"
    );
    println!("|---|---|---|---|---|");
    println!(
        "| off | {:.0} | {} | {} | {all_off} |",
        m_off.0,
        ms(m_off.1),
        ms(m_off.2)
    );
    println!(
        "| aesgcm (32-byte key) | {:.0} | {} | {} | {all_on} |",
        m_on.0,
        ms(m_on.1),
        ms(m_on.2)
    );
    println!(
        "\nencryption on: {:+.1} % creates/s against off (target: no more than 15 % lower)",
        (m_on.0 / m_off.0 - 1.0) * 100.0
    );
}
