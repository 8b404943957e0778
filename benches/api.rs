//! API server benchmark (issue 3 targets): starts the real `karmada-rs serve` binary on the
//! embedded store, drives it over HTTPS with kube-rs clients, and reads the server's RSS
//! from /proc. Run: `cargo bench --bench api` (prints a Markdown table).
//!
//! Measured:
//! - start to ready; idle RSS;
//! - creates of 1 KiB ConfigMaps with 64 concurrent clients (max rate, and paced 1,000/s);
//! - RSS with 10,000 stored objects;
//! - list of 10,000 ConfigMaps (whole, and pages of 500);
//! - 1,000 watchers of one resource while 200 changes/s are written: completeness, delivery
//!   latency, server RSS.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use support::{client, percentile, rss_mib};

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn start_server() -> (support::Process, Duration) {
    let started = Instant::now();
    let server = support::spawn(
        &["serve", "--bind", "127.0.0.1:0"],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    (server, started.elapsed())
}

fn configmap(name: &str, size: usize) -> ConfigMap {
    let mut data = BTreeMap::new();
    data.insert("payload".to_string(), "x".repeat(size));
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

async fn creates(
    api: &Api<ConfigMap>,
    prefix: &str,
    total: usize,
    workers: usize,
    pace: Option<f64>,
) -> (f64, Vec<Duration>) {
    let prefix = prefix.to_string();
    support::create_concurrently(api, total, workers, pace, move |i| {
        configmap(&format!("{prefix}-{i}"), 1024)
    })
    .await
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut rows: Vec<(String, String, String)> = Vec::new();
    let (server, ready) = start_server();
    let pid = server.child.id();
    // Ready = the admin kubeconfig answers /readyz.
    let c = client(&server.kubeconfig).await;
    let t = Instant::now();
    loop {
        let req = http::Request::get("/readyz")
            .body(Vec::new())
            .expect("request");
        if c.request_text(req).await.is_ok() {
            break;
        }
        if t.elapsed() > Duration::from_secs(10) {
            panic!("not ready");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    rows.push((
        "start to ready".into(),
        ms(ready + t.elapsed()),
        "≤ 1 s".into(),
    ));
    tokio::time::sleep(Duration::from_secs(2)).await;
    rows.push((
        "idle RSS".into(),
        format!("{:.1} MiB", rss_mib(pid)),
        "≤ 30 MiB".into(),
    ));

    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    // Warm up connections.
    let _ = creates(&api, "warm", 256, 64, None).await;
    let (rate, lat) = creates(&api, "max", 10_000, 64, None).await;
    rows.push((
        "create 1 KiB ConfigMap, 64 clients, max rate".into(),
        format!(
            "{rate:.0}/s (p50 {}, p99 {})",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        ),
        "≥ 5,000/s".into(),
    ));
    // Memory with about 10,000 objects stored (the 10,000 just created, the warm-up ones and
    // the namespaces and RBAC objects of the bootstrap).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let n = api
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .len();
    rows.push((
        format!("RSS with {n} stored ConfigMaps"),
        format!("{:.1} MiB", rss_mib(pid)),
        "≤ 150 MiB at 10,000".into(),
    ));
    let (_, lat) = creates(&api, "paced", 5_000, 64, Some(1000.0)).await;
    rows.push((
        "create at 1,000/s, 64 clients".into(),
        format!(
            "p50 {}, p99 {}",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        ),
        "p99 ≤ 20 ms".into(),
    ));

    // Lists: the ~15k ConfigMaps above; report the 10,000-item list by limiting.
    let mut full = Vec::new();
    for _ in 0..20 {
        let t = Instant::now();
        let l = api
            .list(&ListParams::default().limit(10_000))
            .await
            .expect("list");
        assert_eq!(l.items.len(), 10_000);
        full.push(t.elapsed());
    }
    full.sort();
    rows.push((
        "list 10,000 ConfigMaps (~10 MiB)".into(),
        format!("median {}", ms(percentile(&full, 0.5))),
        "≤ 100 ms".into(),
    ));
    let mut pages = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(500);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let t = Instant::now();
        let l = api.list(&lp).await.expect("page");
        pages.push(t.elapsed());
        token = l.metadata.continue_.filter(|c| !c.is_empty());
        if token.is_none() {
            break;
        }
    }
    pages.sort();
    rows.push((
        format!("list pages of 500 ({} pages)", pages.len()),
        format!(
            "median {}, max {}",
            ms(percentile(&pages, 0.5)),
            ms(*pages.last().unwrap_or(&Duration::ZERO))
        ),
        "each ≤ 10 ms".into(),
    ));

    // 1,000 watchers of ConfigMaps in namespace "watch", 200 changes/s for 10 s.
    let ns_api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
    let _ = ns_api
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "watch"}}))
                .expect("ns"),
        )
        .await;
    let wapi: Api<ConfigMap> = Api::namespaced(c.clone(), "watch");
    wapi.create(&PostParams::default(), &configmap("ticker", 16))
        .await
        .expect("ticker");
    let rv = wapi
        .get("ticker")
        .await
        .expect("get")
        .metadata
        .resource_version
        .unwrap_or_default();
    let watchers = 1000;
    let changes = 2000usize;
    let latencies = Arc::new(std::sync::Mutex::new(Vec::with_capacity(
        watchers * changes,
    )));
    let counts: Arc<Vec<AtomicU64>> = Arc::new((0..watchers).map(|_| AtomicU64::new(0)).collect());
    let mut tasks = Vec::new();
    for w in 0..watchers {
        let c = c.clone();
        let rv = rv.clone();
        let latencies = latencies.clone();
        let counts = counts.clone();
        tasks.push(tokio::spawn(async move {
            let req = http::Request::get(format!(
                "/api/v1/namespaces/watch/configmaps?watch=1&resourceVersion={rv}&timeoutSeconds=120"
            ))
            .body(Vec::new())
            .expect("request");
            let body = c.request_stream(req).await.expect("watch");
            let mut lines = body.lines();
            let mut local = Vec::new();
            while let Some(Ok(line)) = lines.next().await {
                // The writer stamps each change with its send time; read it without a full parse.
                if let Some(i) = line.find("\"ts\":\"") {
                    let rest = &line[i + 6..];
                    if let Some(end) = rest.find('"')
                        && let Ok(sent) = rest[..end].parse::<u128>()
                    {
                        local.push(Duration::from_nanos(now_nanos().saturating_sub(sent) as u64));
                        if counts[w].fetch_add(1, Ordering::Relaxed) + 1 == changes as u64 {
                            break;
                        }
                    }
                }
            }
            latencies.lock().expect("lock").extend(local);
        }));
    }
    // Let the watches open.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut peak_rss = rss_mib(pid);
    let start = Instant::now();
    for i in 0..changes {
        let due = start + Duration::from_secs_f64(i as f64 / 200.0);
        tokio::time::sleep_until(due.into()).await;
        let patch =
            serde_json::json!({"data": {"ts": now_nanos().to_string(), "i": i.to_string()}});
        wapi.patch(
            "ticker",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
        .expect("patch");
        if i % 200 == 0 {
            peak_rss = peak_rss.max(rss_mib(pid));
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while counts
        .iter()
        .any(|c| c.load(Ordering::Relaxed) < changes as u64)
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
        peak_rss = peak_rss.max(rss_mib(pid));
    }
    let complete = counts
        .iter()
        .filter(|c| c.load(Ordering::Relaxed) == changes as u64)
        .count();
    for t in tasks {
        t.abort();
    }
    let mut lat = latencies.lock().expect("lock").clone();
    lat.sort();
    rows.push((
        "1,000 watchers, 200 changes/s for 10 s".into(),
        format!(
            "{complete}/{watchers} watchers got all {changes} events; delivery p50 {}, p99 {}; server RSS peak {peak_rss:.1} MiB",
            ms(percentile(&lat, 0.5)),
            ms(percentile(&lat, 0.99))
        ),
        "all events, p99 ≤ 100 ms, RSS ≤ 300 MiB".into(),
    ));

    println!("| measurement | result | target |\n|---|---|---|");
    for (m, r, t) in rows {
        println!("| {m} | {r} | {t} |");
    }
    drop(server);
}
