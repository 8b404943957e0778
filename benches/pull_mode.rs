//! Pull mode benchmark (issue 21 targets): a `karmada-rs serve` control plane, two `karmada-rs
//! member serve` members — `push`, joined in push mode, and `pull`, registered by token and
//! served by a `karmada-rs agent` process through its reverse tunnel — then:
//!
//! 1. GETs of one small object through `clusters/push/proxy` and `clusters/pull/proxy`,
//!    interleaved, with their p50/p99: what the tunnel adds over the push-mode proxy;
//! 2. Works (one ConfigMap each) created in `karmada-es-pull` at a steady rate, each timed from
//!    its create to the agent's `Applied=True` seen on a watch: p50/p99/max;
//! 3. the agent's RSS once all those Works are applied.
//!
//! Run: `cargo bench --bench pull_mode` (prints a Markdown table). Environment:
//! `PULL_BENCH_WORKS` (1000), `PULL_BENCH_RATE` (Works/s, 100), `PULL_BENCH_GETS` (2000).

mod support;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use apiserver::proxy::transport::Body;
use futures::StreamExt;
use support::{admin_client, metrics_text, ms, percentile, rss_mib, timed_get as get};

const DEADLINE: Duration = Duration::from_secs(300);

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn karmada_rs(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(args)
        .output()
        .expect("karmada-rs");
    assert!(
        out.status.success(),
        "karmada-rs {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The agent process, killed when dropped.
struct Agent(Child);

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Registers `member` as the Pull cluster `pull` and starts its agent.
fn register_pull(cp: &support::Process, member: &support::Process, work: &Path) -> Agent {
    let cp_kc = cp.kubeconfig.display().to_string();
    let line = karmada_rs(&["token", "create", "--kubeconfig", &cp_kc]);
    let words: Vec<&str> = line.split_whitespace().collect();
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag).expect(flag);
        words[i + 1].to_owned()
    };
    let agent_kc = work.join("agent.kubeconfig").display().to_string();
    let member_kc = member.kubeconfig.display().to_string();
    karmada_rs(&[
        "register",
        words[2],
        "--token",
        &after("--token"),
        "--discovery-token-ca-cert-hash",
        &after("--discovery-token-ca-cert-hash"),
        "--cluster-name",
        "pull",
        "--kubeconfig",
        &member_kc,
        "--agent-kubeconfig",
        &agent_kc,
        "--timeout",
        "60s",
    ]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["agent", "--karmada-kubeconfig", &agent_kc])
        .args(["--cluster-name", "pull", "--kubeconfig", &member_kc])
        .env("KARMADA_RS_LOG", "error")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("agent");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    loop {
        match lines.next() {
            Some(Ok(l)) if l.starts_with("karmada-rs agent serving cluster ") => break,
            Some(_) => continue,
            None => panic!("the agent exited before it was ready"),
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Agent(child)
}

fn work(name: &str) -> serde_json::Value {
    serde_json::json!({
        "apiVersion": "work.karmada.io/v1alpha1",
        "kind": "Work",
        "metadata": {"name": name, "namespace": "karmada-es-pull"},
        "spec": {"workload": {"manifests": [{
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"k": "v"}
        }]}}
    })
}

fn applied(w: &serde_json::Value) -> bool {
    w["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Applied" && c["status"] == "True")
    })
}

/// Of the store's create and update requests in a /metrics text: how many took longer than
/// the bucket `le`, how many there were, and the smallest bucket bound holding them all.
fn slow_writes(metrics: &str, le: &str) -> (u64, u64, String) {
    let write = |l: &str| l.contains("operation=\"create\"") || l.contains("operation=\"update\"");
    let value = |l: &str| {
        l.rsplit(' ')
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let mut within = 0;
    let mut total = 0;
    // Per series: its count, and its buckets in order.
    let mut series: HashMap<String, (u64, Vec<(String, u64)>)> = HashMap::new();
    for l in metrics.lines().filter(|l| write(l)) {
        if let Some(rest) = l.strip_prefix("etcd_request_duration_seconds_bucket{") {
            let (labels, bound) = rest.split_once(",le=\"").unwrap_or((rest, ""));
            let bound = bound.split('"').next().unwrap_or("").to_string();
            if bound == le {
                within += value(l);
            }
            series
                .entry(labels.to_string())
                .or_default()
                .1
                .push((bound, value(l)));
        } else if let Some(rest) = l.strip_prefix("etcd_request_duration_seconds_count{") {
            total += value(l);
            series
                .entry(
                    rest.trim_end_matches(|c| c != '}')
                        .trim_end_matches('}')
                        .to_string(),
                )
                .or_default()
                .0 = value(l);
        }
    }
    let slowest = series
        .values()
        .filter_map(|(count, buckets)| {
            buckets
                .iter()
                .find(|(_, n)| n == count)
                .map(|(b, _)| b.clone())
        })
        .max_by(|a, b| {
            let f = |s: &str| s.parse::<f64>().unwrap_or(f64::INFINITY);
            f(a).total_cmp(&f(b))
        })
        .unwrap_or_default();
    (total - within.min(total), total, slowest)
}

fn main() {
    let works = env_usize("PULL_BENCH_WORKS", 1_000);
    let rate = env_usize("PULL_BENCH_RATE", 100).max(1);
    let gets = env_usize("PULL_BENCH_GETS", 2_000);
    let cp = support::spawn(
        &["serve", "--bind", "127.0.0.1:0"],
        "karmada-rs control plane serving at ",
        "karmada.kubeconfig",
        None,
    );
    let members = support::spawn_members(&["push".to_string(), "pull".to_string()]);
    let work_dir = tempfile::tempdir().expect("tempdir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let client = rt.block_on(support::client(&cp.kubeconfig));
    rt.block_on(support::join_ready(
        &client,
        &["push".to_string()],
        &members[..1],
    ));
    let agent = register_pull(&cp, &members[1], work_dir.path());
    let agent_pid = agent.0.id();
    let proxied = admin_client(&cp.dir().join("pki"));
    let member_admin = |m: &support::Process| admin_client(&m.dir().join("pki"));
    let cp_url = cp.url.clone();
    let mut rows: Vec<(String, String)> = Vec::new();

    rt.block_on(async {
        // The same object on both members.
        for m in &members {
            let req = http::Request::post(format!("{}/api/v1/namespaces/default/configmaps", m.url))
                .header("content-type", "application/json")
                .body(Body::from(
                    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bench"},"data":{"k":"v"}}"#,
                ))
                .expect("request");
            let r = member_admin(m).request(req).await.expect("POST");
            assert!(r.status().is_success(), "{}", r.status());
        }
        let base = |c: &str| {
            format!("{cp_url}/apis/cluster.karmada.io/v1alpha1/clusters/{c}/proxy/api/v1/namespaces/default/configmaps/bench")
        };
        let (push, pull) = (base("push"), base("pull"));
        // Both proxies answer once the clusters and the tunnel are up.
        let start = Instant::now();
        while get(&proxied, &push).await.is_none() || get(&proxied, &pull).await.is_none() {
            assert!(start.elapsed() < DEADLINE, "the proxies never answered");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // Interleaved, so that both see the same machine load.
        let (mut a, mut b) = (Vec::with_capacity(gets), Vec::with_capacity(gets));
        for i in 0..gets + gets / 10 {
            let x = get(&proxied, &push).await.expect("push proxy GET");
            let y = get(&proxied, &pull).await.expect("pull proxy GET");
            if i >= gets / 10 {
                a.push(x);
                b.push(y);
            }
        }
        a.sort();
        b.sort();
        let (a50, a99, b50, b99) = (
            percentile(&a, 0.5),
            percentile(&a, 0.99),
            percentile(&b, 0.5),
            percentile(&b, 0.99),
        );
        rows.push(("GET through the push-mode proxy p50 / p99".into(), format!("{} / {}", ms(a50), ms(a99))));
        rows.push(("GET through the tunnel (pull) p50 / p99".into(), format!("{} / {}", ms(b50), ms(b99))));
        rows.push((
            "tunnel overhead at p50 (target ≤ 2 ms)".into(),
            ms(b50.saturating_sub(a50)),
        ));

        // Works at a steady rate, each timed from its create to Applied=True on a watch.
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::namespaced_with(
            client.clone(),
            "karmada-es-pull",
            &kube::api::ApiResource {
                group: "work.karmada.io".into(),
                version: "v1alpha1".into(),
                api_version: "work.karmada.io/v1alpha1".into(),
                kind: "Work".into(),
                plural: "works".into(),
            },
        );
        let sent: Arc<Mutex<HashMap<String, Instant>>> = Arc::default();
        let latencies: Arc<Mutex<Vec<Duration>>> = Arc::default();
        let watcher = {
            let (sent, latencies, api) = (sent.clone(), latencies.clone(), api.clone());
            tokio::spawn(async move {
                let mut stream = kube::runtime::watcher(api, Default::default()).boxed();
                let mut done = std::collections::HashSet::new();
                while let Some(ev) = stream.next().await {
                    let objs = match ev {
                        Ok(kube::runtime::watcher::Event::Apply(o))
                        | Ok(kube::runtime::watcher::Event::InitApply(o)) => vec![o],
                        _ => continue,
                    };
                    for o in objs {
                        let name = o.metadata.name.clone().unwrap_or_default();
                        if done.contains(&name) {
                            continue;
                        }
                        let v = serde_json::to_value(&o).unwrap_or_default();
                        if applied(&v) {
                            let at = sent.lock().expect("sent").get(&name).copied();
                            if let Some(at) = at {
                                latencies.lock().expect("latencies").push(at.elapsed());
                                done.insert(name);
                            }
                        }
                    }
                }
            })
        };
        let cpu_before = support::cpu_seconds(agent_pid);
        let began = Instant::now();
        let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / rate as f64));
        let mut creates = Vec::with_capacity(works);
        for i in 0..works {
            ticker.tick().await;
            let (api, sent) = (api.clone(), sent.clone());
            creates.push(tokio::spawn(async move {
                let name = format!("bench-{i}");
                let obj: kube::api::DynamicObject =
                    serde_json::from_value(work(&name)).expect("work");
                sent.lock().expect("sent").insert(name, Instant::now());
                api.create(&Default::default(), &obj).await.expect("create Work");
            }));
        }
        let offered = began.elapsed();
        for c in creates {
            c.await.expect("create task");
        }
        let start = Instant::now();
        while latencies.lock().expect("latencies").len() < works {
            assert!(start.elapsed() < DEADLINE, "not every Work was applied");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        watcher.abort();
        let mut l = latencies.lock().expect("latencies").clone();
        l.sort();
        rows.push((
            format!("{works} Works at {rate}/s (offered in {:.1} s): created → Applied p50 / p99 / max (target p99 ≤ 200 ms)", offered.as_secs_f64()),
            format!(
                "{} / {} / {}",
                ms(percentile(&l, 0.5)),
                ms(percentile(&l, 0.99)),
                ms(l.last().copied().unwrap_or_default())
            ),
        ));
        // The control plane's store writes during the whole run, from its
        // etcd_request_duration_seconds histogram: a write held by the disk (each is synced
        // before it is acknowledged) delays every Work behind it.
        let metrics = metrics_text(&client).await;
        let (slow, total, slowest) = slow_writes(&metrics, "0.2");
        rows.push((
            "control-plane store writes over 0.2 s / all (slowest bucket)".into(),
            format!("{slow} / {total} (≤ {slowest} s)"),
        ));
        rows.push((
            "agent CPU while applying them".into(),
            format!("{:.1} s", support::cpu_seconds(agent_pid) - cpu_before),
        ));
        tokio::time::sleep(Duration::from_secs(2)).await;
        rows.push((
            format!("agent RSS holding {works} applied Works (target ≤ 40 MiB)"),
            format!("{:.1} MiB", rss_mib(agent_pid)),
        ));
    });

    println!("| measurement | value |");
    println!("|---|---|");
    for (k, v) in rows {
        println!("| {k} | {v} |");
    }
    drop(agent);
    drop(members);
    drop(cp);
}
