//! Storage benchmark: `cargo bench -p storage --bench storage`.
//!
//! Measures, for the embedded store and for a real etcd started here (same machine, same
//! run, fsync on for both):
//! - create throughput and p50/p99 latency with 1, 16 and 64 concurrent writers (1 KiB values);
//! - watch delivery: one watcher while 64 writers write at full speed;
//! - embedded only: RSS holding 100,000 keys of 1 KiB, and the time to reopen them.
//!
//! The 100,000-key figures are measured in fresh child processes (this binary re-run with
//! `--child`), so that nothing else the benchmark allocated is counted.
//! `BENCH_SECONDS` sets the length of each timed phase (default 4), `BENCH_REPS` the runs
//! per write configuration (default 3, the median is reported); `BENCH_PHASES`
//! (comma-separated: `writes`, `watch`, `100k`) and `BENCH_BACKENDS` (`embedded`, `etcd`)
//! select parts, `BENCH_WRITERS` (`1`, `16`, `64`) the writer counts (default: everything).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use storage::embedded::{EmbeddedOptions, EmbeddedStore};
use storage::testing::EtcdProcess;
use storage::{Error, Store, WatchItem};

const VALUE_BYTES: usize = 1024;
const KEYS_100K: usize = 100_000;

fn value() -> Bytes {
    // JSON-ish filler, like a small object.
    let mut v = b"{\"kind\":\"ConfigMap\",\"data\":\"".to_vec();
    while v.len() < VALUE_BYTES - 2 {
        v.push(b'a' + (v.len() % 26) as u8);
    }
    v.extend_from_slice(b"\"}");
    Bytes::from(v)
}

/// (VmRSS, VmHWM) of this process in MiB.
fn rss_mib() -> (f64, f64) {
    rss_of("self")
}

/// (VmRSS, VmHWM) in MiB of process `pid` ("self" for this one).
fn rss_of(pid: &str) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| -> f64 {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Whether `item` is selected by the comma-separated list in environment variable `var`.
fn selected(var: &str, item: &str) -> bool {
    std::env::var(var).map_or(true, |v| v.split(',').any(|x| x.trim() == item))
}

/// CPU time (user + system) this process used so far, from /proc/self/stat.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let rest = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // Linux reports these in clock ticks of 1/100 s.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

fn secs() -> Duration {
    let s = std::env::var("BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4.0);
    Duration::from_secs_f64(s)
}

struct WriteResult {
    writers: usize,
    ops: usize,
    elapsed: Duration,
    p50: Duration,
    p99: Duration,
    max: Duration,
}

/// `writers` tasks create distinct keys as fast as they can for `dur`.
/// With `update_keys` > 0, each writer instead updates its own `update_keys` keys in turn
/// (so the key space stays fixed and memory growth shows history and buffers only).
async fn write_load(
    store: Arc<dyn Store>,
    key_prefix: &str,
    writers: usize,
    dur: Duration,
    update_keys: usize,
) -> WriteResult {
    let v = value();
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..writers {
        let store = store.clone();
        let v = v.clone();
        let stop = stop.clone();
        let key_prefix = key_prefix.to_string();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(100_000);
            let mut revs = Vec::new();
            for k in 0..update_keys {
                let kv = store
                    .create(&format!("{key_prefix}{w}/{k}"), v.clone())
                    .await;
                revs.push(kv.expect("create").mod_revision);
            }
            let mut i = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                if update_keys > 0 {
                    let k = i % update_keys;
                    let key = format!("{key_prefix}{w}/{k}");
                    let kv = store
                        .update(&key, v.clone(), revs[k])
                        .await
                        .expect("update");
                    revs[k] = kv.mod_revision;
                } else {
                    let key = format!("{key_prefix}{w}/{i}");
                    store.create(&key, v.clone()).await.expect("create");
                }
                lat.push(t.elapsed());
                i += 1;
            }
            lat
        }));
    }
    tokio::time::sleep(dur).await;
    stop.store(true, Ordering::Relaxed);
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("writer task"));
    }
    let elapsed = start.elapsed();
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    WriteResult {
        writers,
        ops: lat.len(),
        elapsed,
        p50: pct(0.50),
        p99: pct(0.99),
        max: *lat.last().unwrap_or(&Duration::ZERO),
    }
}

struct WatchResult {
    written: u64,
    delivered: u64,
    write_rate: f64,
    delivery_rate: f64,
    max_lag: u64,
    drain: Duration,
    outcome: String,
    rss_before: f64,
    rss_max: f64,
    rss_after: f64,
    /// The same for the etcd server, when there is one.
    server_rss: Option<(f64, f64, f64)>,
}

/// One watcher on the prefix 64 writers write to at full speed.
async fn watch_load(
    store: Arc<dyn Store>,
    tag: &str,
    dur: Duration,
    server_pid: Option<u32>,
) -> WatchResult {
    let server = server_pid.map(|p| p.to_string());
    let server_rss = |s: &Option<String>| s.as_deref().map_or(0.0, |p| rss_of(p).0);
    let server_before = server_rss(&server);
    let prefix = format!("/registry/watch/{tag}/");
    let start_rev = store
        .create(&format!("/registry/mark/{tag}"), value())
        .await
        .expect("mark")
        .mod_revision;
    let mut w = store.watch(&prefix, start_rev).await.expect("watch");
    let delivered = Arc::new(AtomicU64::new(0));
    let last_seen = Arc::new(AtomicU64::new(start_rev as u64));
    let reader = {
        let delivered = delivered.clone();
        let last_seen = last_seen.clone();
        tokio::spawn(async move {
            while let Some(item) = w.next().await {
                match item {
                    Ok(WatchItem::Events(evs)) => {
                        delivered.fetch_add(evs.len() as u64, Ordering::Relaxed);
                        if let Some(e) = evs.last() {
                            last_seen.store(e.kv.mod_revision as u64, Ordering::Relaxed);
                        }
                    }
                    Ok(WatchItem::Progress(_)) => {}
                    Err(e) => return format!("ended: {e}"),
                }
            }
            "ended".to_string()
        })
    };
    let (rss_before, _) = rss_mib();
    let sampler_stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = sampler_stop.clone();
        let store = store.clone();
        let last_seen = last_seen.clone();
        let server = server.clone();
        tokio::spawn(async move {
            let mut max_rss: f64 = 0.0;
            let mut max_server: f64 = 0.0;
            let mut max_lag = 0u64;
            while !stop.load(Ordering::Relaxed) {
                max_rss = max_rss.max(rss_mib().0);
                max_server = max_server.max(server_rss(&server));
                if let Ok(cur) = store.current_revision().await {
                    max_lag =
                        max_lag.max((cur as u64).saturating_sub(last_seen.load(Ordering::Relaxed)));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            (max_rss, max_server, max_lag)
        })
    };
    let t0 = Instant::now();
    let writes = write_load(store.clone(), &prefix, 64, dur, 16).await;
    let write_time = t0.elapsed();
    let end_rev = store.current_revision().await.expect("revision") as u64;
    let drain_start = Instant::now();
    while last_seen.load(Ordering::Relaxed) < end_rev && !reader.is_finished() {
        if drain_start.elapsed() > Duration::from_secs(60) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let drain = drain_start.elapsed();
    let total = t0.elapsed();
    sampler_stop.store(true, Ordering::Relaxed);
    let (rss_max, server_max, max_lag) = sampler.await.expect("sampler");
    let outcome = if reader.is_finished() {
        reader.await.unwrap_or_else(|e| e.to_string())
    } else {
        reader.abort();
        if last_seen.load(Ordering::Relaxed) >= end_rev {
            "kept up".to_string()
        } else {
            "did not catch up within 60 s".to_string()
        }
    };
    let n = delivered.load(Ordering::Relaxed);
    WatchResult {
        // Every revision after the start is a write under the watched prefix.
        written: end_rev - start_rev as u64,
        delivered: n,
        write_rate: writes.ops as f64 / write_time.as_secs_f64(),
        delivery_rate: n as f64 / total.as_secs_f64(),
        max_lag,
        drain,
        outcome,
        rss_before,
        rss_max,
        rss_after: rss_mib().0,
        server_rss: server
            .is_some()
            .then(|| (server_before, server_max, server_rss(&server))),
    }
}

/// Prints the median run (by throughput) and every run's throughput.
fn print_writes(name: &str, mut results: Vec<WriteResult>) {
    let rate = |r: &WriteResult| r.ops as f64 / r.elapsed.as_secs_f64();
    let all: Vec<String> = results.iter().map(|r| format!("{:.0}", rate(r))).collect();
    results.sort_by(|a, b| rate(a).total_cmp(&rate(b)));
    let Some(r) = results.get(results.len() / 2) else {
        return;
    };
    println!(
        "| {name} | {} | {:.0} | {:.2} | {:.2} | {:.2} | {} |",
        r.writers,
        rate(r),
        r.p50.as_secs_f64() * 1e3,
        r.p99.as_secs_f64() * 1e3,
        r.max.as_secs_f64() * 1e3,
        all.join(", "),
    );
}

fn reps() -> usize {
    std::env::var("BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

/// p50 / p99 in ms of fdatasync after a 1 KiB write into a file allocated ahead (what both
/// stores' logs do), the floor of any durable write on this disk at this moment.
fn disk_sync_latency() -> String {
    use std::os::unix::fs::FileExt;
    let probe = || -> std::io::Result<String> {
        let dir = tempfile::tempdir()?;
        let f = std::fs::File::create(dir.path().join("probe"))?;
        f.set_len(1 << 20)?;
        f.sync_all()?;
        let mut lat = Vec::new();
        for i in 0..200u64 {
            f.write_all_at(&[7u8; 1024], i * 1024)?;
            let t = Instant::now();
            f.sync_data()?;
            lat.push(t.elapsed());
        }
        lat.sort();
        Ok(format!(
            "p50 {:.2} ms, p99 {:.2} ms",
            lat[100].as_secs_f64() * 1e3,
            lat[198].as_secs_f64() * 1e3
        ))
    };
    probe().unwrap_or_else(|e| format!("probe failed: {e}"))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn watch_row(name: &str, r: &WatchResult) -> String {
    let server = r.server_rss.map_or("-".to_string(), |(a, b, c)| {
        format!("{a:.0} / {b:.0} / {c:.0}")
    });
    format!(
        "| {name} | {:.0} | {:.0} | {} / {} | {} | {} ms | {} | {:.0} / {:.0} / {:.0} | {server} |",
        r.write_rate,
        r.delivery_rate,
        r.delivered,
        r.written,
        r.max_lag,
        r.drain.as_millis(),
        r.outcome,
        r.rss_before,
        r.rss_max,
        r.rss_after,
    )
}

/// Child mode: `--child load DIR` writes 100,000 keys of 1 KiB and reports RSS;
/// `--child reopen DIR` opens them and reports the time and RSS; `--child watch BACKEND`
/// runs the watch phase against a fresh `embedded` or `etcd` store.
fn child(mode: &str, dir: &str) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let path = std::path::Path::new(dir);
        match mode {
            "watch" => {
                let dur = secs();
                let row = if dir == "etcd" {
                    let etcd = EtcdProcess::start().await.expect("etcd");
                    let store: Arc<dyn Store> = etcd.store().await.expect("connect");
                    watch_row("etcd 3.4.23", &watch_load(store, "w", dur, etcd.pid()).await)
                } else {
                    let tmp = tempfile::tempdir().expect("tempdir");
                    let store = EmbeddedStore::open(tmp.path(), EmbeddedOptions::default())
                        .expect("open");
                    let r = watch_load(store.clone(), "w", dur, None).await;
                    store.close().await.expect("close");
                    watch_row("embedded", &r)
                };
                println!("RESULT {row}");
            }
            "load" => {
                let store = EmbeddedStore::open(path, EmbeddedOptions::default()).expect("open");
                let v = value();
                // Writes every key once (`update` false: create) with 64 writers.
                let pass = |update: bool| {
                    let mut tasks = Vec::new();
                    for w in 0..64 {
                        let store = store.clone();
                        let v = v.clone();
                        tasks.push(tokio::spawn(async move {
                            for i in (w..KEYS_100K).step_by(64) {
                                let key = format!("/registry/configmaps/ns{}/cm-{i:06}", i % 100);
                                if update {
                                    let cur = store.get(&key).await.expect("get").0.expect("key");
                                    store.update(&key, v.clone(), cur.mod_revision).await.expect("update");
                                } else {
                                    store.create(&key, v.clone()).await.expect("create");
                                }
                            }
                        }));
                    }
                    tasks
                };
                let report = |what: &str| {
                    let stats = store.stats();
                    let (rss, hwm) = rss_mib();
                    format!(
                        "{what}: keys={} rss_mib={rss:.1} peak_mib={hwm:.1} history_revisions={} history_mib={:.1}",
                        stats.keys,
                        stats.history_revisions,
                        stats.history_bytes as f64 / (1 << 20) as f64
                    )
                };
                for t in pass(false) {
                    t.await.expect("task");
                }
                let created = report("after creating them");
                for t in pass(true) {
                    t.await.expect("task");
                }
                let updated = report("after updating each once (history at its default bound)");
                println!("RESULT {created}; {updated}");
                store.close().await.expect("close");
            }
            "reopen" => {
                let t = Instant::now();
                let cpu = cpu_time();
                let store = EmbeddedStore::open(path, EmbeddedOptions::default()).expect("open");
                let open = t.elapsed();
                let open_cpu = cpu_time().saturating_sub(cpu);
                let stats = store.stats();
                let (_, rev) = store.get("/registry/configmaps/ns0/cm-000000").await.expect("get");
                let (rss, hwm) = rss_mib();
                println!(
                    "RESULT keys={} open_ms={:.0} open_cpu_ms={} rss_mib={rss:.1} peak_mib={hwm:.1} revision={rev}",
                    stats.keys,
                    open.as_secs_f64() * 1e3,
                    open_cpu.as_millis()
                );
                store.close().await.expect("close");
            }
            other => panic!("unknown child mode {other}"),
        }
    });
}

fn run_child(mode: &str, dir: &std::path::Path) -> String {
    let exe = std::env::current_exe().expect("current exe");
    let out = std::process::Command::new(exe)
        .args(["--child", mode])
        .arg(dir)
        .output()
        .expect("child");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "child {mode} failed: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or("no result")
        .to_string()
}

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--child") {
        child(&args[i + 1], &args[i + 2]);
        return Ok(());
    }
    // `cargo bench` passes `--bench`. Run as a test (`cargo test --all-targets`, or
    // nextest listing tests with `--list`) it has no tests: report none and stop.
    if !args.iter().any(|a| a == "--bench") {
        return Ok(());
    }
    let dur = secs();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    println!(
        "# storage benchmark ({} s per phase, {} CPUs, load average at start {}, disk check at start (200 x 1 KiB write + fdatasync in one preallocated file): {})",
        dur.as_secs_f64(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        loadavg(),
        disk_sync_latency()
    );
    rt.block_on(async {
        let dir = tempfile::tempdir()?;
        let mut opts = EmbeddedOptions::default();
        if std::env::var_os("BENCH_NO_SNAPSHOT").is_some() {
            opts.snapshot_log_bytes = u64::MAX;
        }
        let embedded_store = EmbeddedStore::open(dir.path(), opts)?;
        let embedded: Arc<dyn Store> = embedded_store.clone();
        let mut backends = Vec::new();
        if selected("BENCH_BACKENDS", "embedded") {
            backends.push(("embedded", embedded.clone(), None));
        }
        if selected("BENCH_BACKENDS", "etcd") {
            let etcd = EtcdProcess::start().await?;
            let store: Arc<dyn Store> = etcd.store().await?;
            backends.push(("etcd 3.4.23", store, Some(etcd)));
        }

        if selected("BENCH_PHASES", "writes") {
            let reps = reps();
            println!("\n## writes (create, 1 KiB values, fsync on; median of {reps} runs by writes/s, backends interleaved)\n");
            println!("| backend | writers | writes/s | p50 ms | p99 ms | max ms | writes/s of all runs |");
            println!("|---|---|---|---|---|---|---|");
            for writers in [1, 16, 64] {
                if !selected("BENCH_WRITERS", &writers.to_string()) {
                    continue;
                }
                let mut runs: Vec<Vec<WriteResult>> = backends.iter().map(|_| Vec::new()).collect();
                for rep in 0..reps {
                    for (i, (_, store, _)) in backends.iter().enumerate() {
                        let prefix = format!("/registry/bench/w{writers}/r{rep}/");
                        runs[i].push(write_load(store.clone(), &prefix, writers, dur, 0).await);
                    }
                }
                for ((name, _, _), results) in backends.iter().zip(runs) {
                    print_writes(name, results);
                }
            }
        }

        drop(backends);
        embedded_store.close().await?;
        Ok::<(), Error>(())
    })?;

    if selected("BENCH_PHASES", "watch") {
        println!(
            "\n## one watcher, 64 writers updating 1,024 keys at full speed (fresh process and store per backend)\n"
        );
        println!(
            "| backend | writes/s | events/s delivered | delivered / written | max lag (revisions) | drain after writes stop | outcome | bench process RSS MiB before / max / after | etcd server RSS MiB before / max / after |"
        );
        println!("|---|---|---|---|---|---|---|---|---|");
        for backend in ["embedded", "etcd"] {
            if selected("BENCH_BACKENDS", backend) {
                println!("{}", run_child("watch", std::path::Path::new(backend)));
            }
        }
    }
    if !selected("BENCH_PHASES", "100k") {
        println!(
            "\nload average at end: {}, disk check at end: {}",
            loadavg(),
            disk_sync_latency()
        );
        return Ok(());
    }
    println!("\n## embedded: 100,000 keys of 1 KiB\n");
    let dir = tempfile::tempdir()?;
    let load = run_child("load", dir.path());
    println!("- load (fresh process, 64 writers): {load}");
    for i in 0..3 {
        let reopen = run_child("reopen", dir.path());
        println!("- reopen #{}: {reopen}", i + 1);
    }
    println!(
        "\nload average at end: {}, disk check at end: {}",
        loadavg(),
        disk_sync_latency()
    );
    Ok(())
}
