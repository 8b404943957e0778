//! What the end-to-end benchmarks share: the real binary started as a child process in its own
//! data directory, and its memory read from /proc.

// Each bench target compiles this module on its own and uses only part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `karmada-rs` process; killed when dropped, its data directory removed.
pub struct Process {
    pub child: Child,
    pub kubeconfig: PathBuf,
    /// What the ready line says after its prefix (the address served).
    pub url: String,
    dir: tempfile::TempDir,
}

impl Process {
    /// The data directory (certificates under `pki/`, kubeconfigs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `karmada-rs ARGS --data-dir TEMP` and waits for the line starting with
/// `ready_prefix` it prints once it serves; `kubeconfig` is the file it writes in its data
/// directory. `wrapper` runs it under another command (a profiler such as `heaptrack -o F`).
pub fn spawn(
    args: &[&str],
    ready_prefix: &str,
    kubeconfig: &str,
    wrapper: Option<&str>,
) -> Process {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut command = match wrapper.map(str::split_whitespace) {
        Some(mut w) => {
            let mut c = Command::new(w.next().expect("a wrapper command"));
            c.args(w).arg(env!("CARGO_BIN_EXE_karmada-rs"));
            c
        }
        None => Command::new(env!("CARGO_BIN_EXE_karmada-rs")),
    };
    let mut child = command
        .args(args)
        .arg("--data-dir")
        .arg(dir.path())
        // Quiet unless the caller asks for more (KARMADA_RS_LOG=warn shows slow disk syncs).
        .env(
            "KARMADA_RS_LOG",
            std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "error".into()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn karmada-rs");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let url = loop {
        match lines.next() {
            Some(Ok(l)) if l.starts_with(ready_prefix) => {
                break l[ready_prefix.len()..].trim().to_string();
            }
            Some(_) => continue,
            None => panic!("karmada-rs exited before it was ready"),
        }
    };
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Process {
        child,
        kubeconfig: dir.path().join(kubeconfig),
        url,
        dir,
    }
}

fn vm_rss_kib(pid: u32) -> Option<u64> {
    proc_status_kib(pid, "VmRSS:")
}

fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
}

/// The largest resident set a process has had, in KiB (the kernel's VmHWM; 0 when it is gone).
pub fn peak_rss_kib(pid: u32) -> u64 {
    proc_status_kib(pid, "VmHWM:").unwrap_or(0)
}

/// A number from the environment variable `name`, or `default` when unset or unreadable.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// User plus system CPU time of a process, from /proc.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesized command name; utime and stime are the 14th and 15th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// Resident set of a process in KiB (0 when it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    vm_rss_kib(pid).unwrap_or(0)
}

/// Resident set of a process in MiB (NaN when it is gone).
pub fn rss_mib(pid: u32) -> f64 {
    vm_rss_kib(pid).map_or(f64::NAN, |kb| kb as f64 / 1024.0)
}

/// The `p` quantile (0..=1) of ascending samples, nearest rank; zero when there are none.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// A client from a kubeconfig file.
pub async fn client(kubeconfig: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(kubeconfig).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(cfg).expect("client")
}

/// The server's Prometheus text (`GET /metrics`).
pub async fn metrics_text(client: &kube::Client) -> String {
    client
        .request_text(
            http::Request::get("/metrics")
                .body(Vec::new())
                .expect("metrics request"),
        )
        .await
        .expect("GET /metrics")
}

/// Starts simulated members as `up` runs them.
pub fn spawn_members(names: &[String]) -> Vec<Process> {
    spawn_members_with(names, &[])
}

/// Starts simulated members as `up` runs them, with more `member serve` flags (`--nodes 10`).
pub fn spawn_members_with(names: &[String], flags: &[&str]) -> Vec<Process> {
    names
        .iter()
        .map(|name| {
            let mut args = vec!["member", "serve", "--name", name, "--unsafe-no-fsync"];
            args.extend_from_slice(flags);
            spawn(&args, "karmada-rs member serving at", "kubeconfig", None)
        })
        .collect()
}

/// Joins each member to the control plane and waits for its Cluster to be Ready (60 s each).
pub async fn join_ready(cp: &kube::Client, names: &[String], members: &[Process]) {
    use controllers::join::{self, JoinOptions, MemberAccess};
    use karmada_api::cluster::v1alpha1::Cluster;
    use kube::runtime::wait::await_condition;

    let clusters: kube::Api<Cluster> = kube::Api::all(cp.clone());
    for (name, m) in names.iter().zip(members) {
        let access = MemberAccess::from_kubeconfig(&m.kubeconfig, None)
            .await
            .expect("member kubeconfig");
        join::join(cp, &access, &JoinOptions::new(name))
            .await
            .expect("join");
        tokio::time::timeout(
            Duration::from_secs(60),
            await_condition(clusters.clone(), name, |c: Option<&Cluster>| {
                c.and_then(Cluster::ready_status) == Some("True")
            }),
        )
        .await
        .expect("cluster Ready within 60 s")
        .expect("watch");
    }
}

/// A duration in milliseconds with three decimals, as the tables print them.
pub fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

/// An HTTP client presenting a server's admin certificate from its `pki/` directory.
pub fn admin_client(pki: &Path) -> apiserver::proxy::transport::HttpClient {
    use apiserver::proxy::transport::{self, Dialer, TlsSettings};
    let read = |f: &str| std::fs::read_to_string(pki.join(f)).expect("pki file");
    let tls = transport::client_config(&TlsSettings {
        ca_bundle: read("ca.crt").into_bytes(),
        insecure: false,
        client_cert: Some((read("admin.crt"), read("admin.key"))),
        tls13_only: false,
    })
    .expect("tls");
    transport::http_client(Dialer::new(tls, None, netproxy::ProxySource::Direct))
}

/// The time one GET takes, body read; None when it fails or is not a success.
pub async fn timed_get(
    client: &apiserver::proxy::transport::HttpClient,
    url: &str,
) -> Option<Duration> {
    use http_body_util::BodyExt;
    let started = std::time::Instant::now();
    let req = http::Request::get(url)
        .header("accept", "application/json")
        .body(apiserver::proxy::transport::Body::empty())
        .expect("request");
    let resp = client.request(req).await.ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.into_body().collect().await.ok()?;
    Some(started.elapsed())
}

/// Resolves, at the moment it happens, once `n` objects of the watched stream satisfy `done`.
pub async fn first_time_count_reaches<K, S>(
    events: S,
    n: usize,
    done: impl Fn(&K) -> bool,
) -> std::time::Instant
where
    K: kube::Resource,
    S: futures::Stream<
            Item = Result<kube::runtime::watcher::Event<K>, kube::runtime::watcher::Error>,
        >,
{
    let mut satisfied = std::collections::HashSet::new();
    let mut events = std::pin::pin!(events);
    let mut last = std::time::Instant::now();
    while let Some(e) = futures::StreamExt::next(&mut events).await {
        if std::env::var("BENCH_DEBUG").is_ok() && last.elapsed() > Duration::from_secs(2) {
            last = std::time::Instant::now();
            eprintln!("{} {} of {n}", std::any::type_name::<K>(), satisfied.len());
        }
        let mut apply = |o: &K| {
            let key = (o.meta().namespace.clone(), o.meta().name.clone());
            if done(o) {
                satisfied.insert(key);
            } else {
                satisfied.remove(&key);
            }
        };
        match e {
            Ok(
                kube::runtime::watcher::Event::Apply(o)
                | kube::runtime::watcher::Event::InitApply(o),
            ) => apply(&o),
            Ok(kube::runtime::watcher::Event::Delete(o)) => {
                satisfied.remove(&(o.meta().namespace.clone(), o.meta().name.clone()));
            }
            Ok(_) => {}
            Err(e) => eprintln!("watch error (retrying): {e}"),
        }
        if satisfied.len() >= n {
            return std::time::Instant::now();
        }
    }
    std::time::Instant::now()
}

/// The server's `apiserver_request_total`, keyed by `verb resource[/subresource] code`: the
/// requests of every client, the in-process controllers' included (they go through the same
/// handler chain).
pub async fn request_counts(cp: &kube::Client) -> std::collections::HashMap<String, f64> {
    let text = metrics_text(cp).await;
    let mut counts = std::collections::HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let label = |name: &str| {
            labels
                .split(',')
                .find_map(|kv| {
                    kv.strip_prefix(name)?
                        .strip_prefix("=\"")?
                        .strip_suffix('"')
                })
                .unwrap_or("")
                .to_string()
        };
        let sub = label("subresource");
        let key = format!(
            "{} {}{}{} {}",
            label("verb"),
            label("resource"),
            if sub.is_empty() { "" } else { "/" },
            sub,
            label("code")
        );
        *counts.entry(key).or_insert(0.0) += value.trim().parse::<f64>().unwrap_or(0.0);
    }
    counts
}

/// An object of which only the metadata and the parts of the status a bench checks are
/// decoded (a whole Work carries its manifest; the client shares the machine it measures).
pub type Lite<S> = kube::core::Object<kube::core::NotUsed, S>;

/// A status's conditions, type and status only.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct Conditions {
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

/// One condition: its type and status.
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
}

/// A workload status's ready replicas.
#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadyReplicas {
    pub ready_replicas: Option<i32>,
}

/// Creates `total` objects made by `make(i)` through `workers` concurrent clients, at full
/// speed or, with `pace`, the i-th no earlier than i / pace seconds after the start; creates/s
/// and the sorted latencies.
pub async fn create_concurrently<K, F>(
    api: &kube::Api<K>,
    total: usize,
    workers: usize,
    pace: Option<f64>,
    make: F,
) -> (f64, Vec<Duration>)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    K: Send + Sync + 'static,
    F: Fn(usize) -> K + Send + Sync + 'static,
{
    let api = api.clone();
    create_concurrently_in(total, workers, pace, move |i| (api.clone(), make(i))).await
}

/// As [`create_concurrently`], `make(i)` also naming the API (a namespace) each object goes to.
pub async fn create_concurrently_in<K, F>(
    total: usize,
    workers: usize,
    pace: Option<f64>,
    make: F,
) -> (f64, Vec<Duration>)
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
    K: Send + Sync + 'static,
    F: Fn(usize) -> (kube::Api<K>, K) + Send + Sync + 'static,
{
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = Arc::new(AtomicUsize::new(0));
    let make = Arc::new(make);
    let start = std::time::Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let (next, make) = (next.clone(), make.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                if let Some(rate) = pace {
                    let due = start + Duration::from_secs_f64(i as f64 / rate);
                    tokio::time::sleep_until(due.into()).await;
                }
                let (api, object) = make(i);
                let t = std::time::Instant::now();
                api.create(&kube::api::PostParams::default(), &object)
                    .await
                    .expect("create");
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("task"));
    }
    let rate = total as f64 / start.elapsed().as_secs_f64();
    lat.sort();
    (rate, lat)
}
