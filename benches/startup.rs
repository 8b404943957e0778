//! The production start over etcd, against an etcd started with its defaults (no
//! `--experimental-watch-progress-notify-interval`, as users and the Helm chart run it):
//!
//! 1. `serve --etcd-servers` on a fresh etcd: from spawning the process to `/readyz` answering
//!    200 with the admin's credentials, and again on the same etcd with its data in place (a
//!    restart). `BENCH_REPS` runs of each (default 5), each on a fresh etcd.
//! 2. Two replicas sharing one PKI over one such etcd, leader election on (the default): the
//!    leader is killed with SIGKILL; the time until the other replica's
//!    `leader_election_master_status{name="karmada-controller-manager"}` says 1, which it sets
//!    once its controllers run. `BENCH_TAKEOVERS` runs (default 3).
//!
//! Run: `cargo bench --bench startup`.

mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use support::{client, env_or, metrics_text, ms};

/// Spawns `serve` on `endpoints` with `extra` flags and measures until its `/readyz` passes.
async fn start(endpoints: &str, extra: &[&str]) -> (support::Process, Duration) {
    let started = Instant::now();
    let mut args = vec![
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--etcd-servers",
        endpoints,
    ];
    args.extend_from_slice(extra);
    let p = support::spawn(
        &args,
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let c = client(&p.kubeconfig).await;
    loop {
        let req = http::Request::get("/readyz")
            .body(Vec::new())
            .expect("request");
        if c.request_text(req).await.is_ok_and(|t| t == "ok") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "not ready within 2 minutes"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    (p, started.elapsed())
}

/// Whether the replica's controllers run (its leader gauge is 1).
async fn leads(c: &kube::Client) -> bool {
    metrics_text(c).await.lines().any(|l| {
        l.strip_prefix("leader_election_master_status{name=\"karmada-controller-manager\"} ")
            .is_some_and(|v| v.trim() == "1")
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn list(v: &[Duration]) -> String {
    v.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(", ")
}

/// One takeover: two replicas over a fresh default etcd, the leader killed.
async fn takeover(pki: &Path) -> Duration {
    let etcd = storage::testing::EtcdProcess::start()
        .await
        .expect("start etcd");
    let endpoints = etcd.endpoints().join(",");
    let shared = pki.to_str().expect("UTF-8 path");
    let flags = ["--shared-pki-dir", shared];
    let (a, _) = start(&endpoints, &flags).await;
    let (b, _) = start(&endpoints, &flags).await;
    let (ca, cb) = (client(&a.kubeconfig).await, client(&b.kubeconfig).await);
    let deadline = Instant::now() + Duration::from_secs(60);
    let (mut leader, follower) = loop {
        if leads(&ca).await {
            break (a, cb);
        }
        if leads(&cb).await {
            break (b, ca);
        }
        assert!(Instant::now() < deadline, "no leader within 60 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    leader.child.kill().expect("SIGKILL the leader");
    let killed = Instant::now();
    let _ = leader.child.wait();
    while !leads(&follower).await {
        assert!(
            killed.elapsed() < Duration::from_secs(120),
            "no takeover within 2 minutes"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    killed.elapsed()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let reps = env_or("BENCH_REPS", 5);
    let (mut fresh, mut again) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let etcd = storage::testing::EtcdProcess::start()
            .await
            .expect("start etcd");
        let endpoints = etcd.endpoints().join(",");
        let (first, took) = start(&endpoints, &[]).await;
        fresh.push(took);
        drop(first);
        let (_second, took) = start(&endpoints, &[]).await;
        again.push(took);
    }
    println!("| serve over a default etcd 3.4 | median | runs |");
    println!("|---|---|---|");
    println!(
        "| start to ready, empty etcd | {} | {} |",
        ms(median(fresh.clone())),
        list(&fresh)
    );
    println!(
        "| start to ready, etcd with a control plane's data | {} | {} |",
        ms(median(again.clone())),
        list(&again)
    );

    let takeovers = env_or("BENCH_TAKEOVERS", 3);
    if takeovers == 0 {
        return;
    }
    let pki = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["certs", "--dir"])
        .arg(pki.path())
        .output()
        .expect("karmada-rs certs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut times = Vec::new();
    for _ in 0..takeovers {
        times.push(takeover(pki.path()).await);
    }
    println!();
    println!("| two replicas over a default etcd 3.4 | median | runs |");
    println!("|---|---|---|");
    println!(
        "| SIGKILL of the leader to the other's controllers running | {} | {} |",
        ms(median(times.clone())),
        list(&times)
    );
}
