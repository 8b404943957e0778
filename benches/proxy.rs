//! Cluster proxy benchmark (issue 6 targets): a real `karmada-rs serve` control plane and a
//! `karmada-rs member serve` member, joined; GETs of one small object straight from the
//! member and through `clusters/member/proxy`, interleaved, with their p50/p99; then 1,000
//! concurrent proxied watches, the control plane's RSS growth while they are held, and one
//! event delivered to all of them. Run: `cargo bench --bench proxy` (prints a Markdown table).

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use apiserver::proxy::transport::{Body, HttpClient};
use http_body_util::BodyExt;
use support::{admin_client, ms, percentile, rss_mib};

const GETS: usize = 3_000;
const WARMUP: usize = 300;
const WATCHES: usize = 1_000;
const DEADLINE: Duration = Duration::from_secs(120);

async fn post(client: &HttpClient, url: &str, body: String) {
    let req = http::Request::post(url)
        .header("content-type", "application/json")
        .body(Body::from(body))
        .expect("request");
    let resp = client.request(req).await.expect("POST");
    assert!(resp.status().is_success(), "{url}: {}", resp.status());
}

fn main() {
    let cp = support::spawn(
        &["serve", "--bind", "127.0.0.1:0"],
        "karmada-rs control plane serving at ",
        "karmada.kubeconfig",
        None,
    );
    let member = support::spawn(
        &["member", "serve", "--name", "member", "--nodes", "1"],
        "karmada-rs member serving at ",
        "kubeconfig",
        None,
    );
    let (cp_url, member_url) = (cp.url.clone(), member.url.clone());
    let joined = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["join", "member", "--cluster-kubeconfig"])
        .arg(&member.kubeconfig)
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .output()
        .expect("join");
    assert!(
        joined.status.success(),
        "{}",
        String::from_utf8_lossy(&joined.stderr)
    );
    // The admin may use the proxy from the start (the control plane binds it
    // `cluster-proxy-admin`, as Karmada's installers do); unifiedAuth then lets the member's
    // impersonator act as the admin.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let direct = admin_client(&member.dir().join("pki"));
    let proxied = admin_client(&cp.dir().join("pki"));
    let proxy = format!("{cp_url}/apis/cluster.karmada.io/v1alpha1/clusters/member/proxy");
    let object = "/api/v1/namespaces/default/configmaps/bench";
    let mut rows: Vec<(String, String)> = Vec::new();

    rt.block_on(async {
        post(
            &direct,
            &format!("{member_url}/api/v1/namespaces/default/configmaps"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench"},"data":{"k":"v"}}"#
                .into(),
        )
        .await;
        // The proxy answers once the Cluster and its secrets reached the caches.
        let start = Instant::now();
        loop {
            let req = http::Request::get(format!("{proxy}{object}"))
                .body(Body::empty())
                .expect("request");
            if let Ok(r) = proxied.request(req).await
                && r.status().is_success()
            {
                break;
            }
            assert!(start.elapsed() < DEADLINE, "the proxy never reached the member");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }

        // Latency: interleaved so that both see the same machine load.
        let (mut d, mut p) = (Vec::with_capacity(GETS), Vec::with_capacity(GETS));
        for i in 0..WARMUP + GETS {
            let a = support::timed_get(&direct, &format!("{member_url}{object}"))
                .await
                .expect("GET direct");
            let b = support::timed_get(&proxied, &format!("{proxy}{object}"))
                .await
                .expect("GET through the proxy");
            if i >= WARMUP {
                d.push(a);
                p.push(b);
            }
        }
        d.sort();
        p.sort();
        let (d50, d99, p50, p99) = (
            percentile(&d, 0.50),
            percentile(&d, 0.99),
            percentile(&p, 0.50),
            percentile(&p, 0.99),
        );
        rows.push(("GET direct p50 / p99".into(), format!("{} / {}", ms(d50), ms(d99))));
        rows.push(("GET through the proxy p50 / p99".into(), format!("{} / {}", ms(p50), ms(p99))));
        rows.push((
            "proxy overhead p50 / p99 (target ≤ 1 ms / ≤ 3 ms)".into(),
            format!(
                "{} / {}",
                ms(p50.saturating_sub(d50)),
                ms(p99.saturating_sub(d99))
            ),
        ));

        // 1,000 proxied watches.
        let pid = cp.child.id();
        let before = rss_mib(pid);
        let watch_url = format!(
            "{proxy}/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=900&allowWatchBookmarks=false"
        );
        let opened = Instant::now();
        let mut bodies = Vec::with_capacity(WATCHES);
        for chunk in (0..WATCHES).collect::<Vec<_>>().chunks(100) {
            let futs = chunk.iter().map(|_| {
                let req = http::Request::get(&watch_url)
                    .body(Body::empty())
                    .expect("request");
                proxied.request(req)
            });
            for r in futures::future::join_all(futs).await {
                let r = r.expect("watch");
                assert!(r.status().is_success());
                bodies.push(r.into_body());
            }
        }
        let open_time = opened.elapsed();
        // Initial ADDED events of the existing object arrive first; drain them.
        for b in bodies.iter_mut() {
            let f = tokio::time::timeout(DEADLINE, b.frame()).await.expect("initial event");
            assert!(f.is_some());
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let held = rss_mib(pid);
        // One change reaches every watcher.
        let sent = Instant::now();
        post(
            &direct,
            &format!("{member_url}/api/v1/namespaces/default/configmaps"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench-event"}}"#.into(),
        )
        .await;
        let deliveries = futures::future::join_all(bodies.iter_mut().map(|b| async move {
            loop {
                match tokio::time::timeout(DEADLINE, b.frame()).await {
                    Ok(Some(Ok(f))) => {
                        if f.data_ref()
                            .is_some_and(|d| String::from_utf8_lossy(d).contains("bench-event"))
                        {
                            return Some(sent.elapsed());
                        }
                    }
                    _ => return None,
                }
            }
        }))
        .await;
        let delivered: Vec<Duration> = deliveries.into_iter().flatten().collect();
        let mut sorted = delivered.clone();
        sorted.sort();
        rows.push((
            format!("{WATCHES} proxied watches: time to open"),
            format!("{:.2} s", open_time.as_secs_f64()),
        ));
        rows.push((
            "control-plane RSS before / holding them (growth; target ≤ 100 MiB)".into(),
            format!("{before:.1} / {held:.1} MiB ({:.1} MiB)", held - before),
        ));
        rows.push((
            "one event delivered to watchers (p50 / p99 / max)".into(),
            format!(
                "{}/{WATCHES} ({} / {} / {})",
                delivered.len(),
                ms(percentile(&sorted, 0.5)),
                ms(percentile(&sorted, 0.99)),
                ms(sorted.last().copied().unwrap_or_default())
            ),
        ));
        drop(bodies);
    });

    println!("| measurement | value |");
    println!("|---|---|");
    for (k, v) in rows {
        println!("| {k} | {v} |");
    }
    drop(member);
    drop(cp);
}
