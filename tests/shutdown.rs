//! End-to-end start and termination of `serve`, in kube-apiserver's order. Starting, the
//! listener answers at once: `/livez` passes while `/readyz` names what is missing (an etcd
//! that is not there yet) and the API answers 503 until the server is ready. On SIGTERM,
//! `/readyz` fails at once while the API is still served for `--shutdown-delay-duration`,
//! then watches end cleanly, the process exits 0, and every acknowledged write is there after
//! a restart.

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use support::{DEADLINE, kubectl_cmd, raw_request, run, spawn_serving, wait_for};

/// The server process, killed if the test fails before it exits.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(dir: &Path, extra: &[&str]) -> Process {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
    cmd.arg("serve")
        .arg("--data-dir")
        .arg(dir)
        .args(["--bind", "127.0.0.1:0"])
        .args(extra)
        .env(
            "KARMADA_RS_LOG",
            std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let (child, _url) = spawn_serving(&mut cmd, "karmada-rs control plane serving at ");
    wait_for("the server to be ready", DEADLINE, || {
        kubectl(dir, &["get", "--raw", "/readyz"])
            .status
            .success()
            .then_some(())
    });
    Process(child)
}

fn kubectl(dir: &Path, args: &[&str]) -> std::process::Output {
    run(kubectl_cmd(&dir.join("karmada.kubeconfig"), &dir.join("kubectl-cache")).args(args))
}

async fn client(dir: &Path) -> kube::Client {
    let kc =
        kube::config::Kubeconfig::read_from(dir.join("karmada.kubeconfig")).expect("kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(cfg).expect("client")
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("configmap")
}

/// `serve` whose etcd is not running yet: the listener answers from the start, alive and not
/// ready, with etcd named; the API asks clients to come back; once etcd runs, the same
/// process becomes ready and serves, without a restart.
#[test]
fn serve_answers_while_its_etcd_is_away_and_becomes_ready_when_it_comes() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mut etcd = rt
        .block_on(storage::testing::EtcdProcess::start())
        .expect("etcd");
    let endpoint = etcd.endpoint();
    etcd.kill();
    let dir = tempfile::tempdir().expect("temp dir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let url = format!("https://127.0.0.1:{port}");
    let mut child = Process(
        Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--etcd-servers", &endpoint])
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .env("KARMADA_RS_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn karmada-rs"),
    );
    let get = |path: &str| {
        let ca = std::fs::read_to_string(dir.path().join("pki/ca.crt")).ok()?;
        rt.block_on(raw_request(&url, &ca, None, ("GET", path, None, b"")))
            .ok()
    };
    let live = wait_for("the listener to answer /livez", DEADLINE, || get("/livez"));
    assert_eq!((live.status, live.body.as_str()), (200, "ok"));
    let ready = get("/readyz?verbose").expect("/readyz answers");
    assert_eq!(ready.status, 500, "{ready:?}");
    assert!(
        ready.body.contains("[+]ping ok\n")
            && ready.body.contains("[-]etcd failed: reason withheld\n")
            && ready.body.ends_with("readyz check failed\n"),
        "{}",
        ready.body
    );
    let api = get("/api/v1/namespaces").expect("the API answers");
    assert_eq!(api.status, 503, "{api:?}");
    assert_eq!(api.retry_after.as_deref(), Some("1"));
    assert!(
        api.body.contains("\"reason\":\"ServiceUnavailable\""),
        "{}",
        api.body
    );
    assert!(api.body.contains("etcd"), "{}", api.body);
    assert!(
        child.0.try_wait().expect("wait").is_none(),
        "serve gave up on its etcd"
    );

    rt.block_on(etcd.start_again()).expect("etcd again");
    let ready = wait_for("the server to become ready", DEADLINE, || {
        get("/readyz").filter(|r| r.status == 200)
    });
    assert_eq!(ready.body, "ok");
    let kubeconfig = dir.path().join("karmada.kubeconfig");
    wait_for("the admin kubeconfig", DEADLINE, || {
        kubeconfig.exists().then_some(())
    });
    let out =
        run(kubectl_cmd(&kubeconfig, &dir.path().join("cache")).args(["get", "ns", "default"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn sigterm_fails_readiness_serves_through_the_delay_ends_watches_and_exits_0() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let mut child = spawn(dir.path(), &["--shutdown-delay-duration=3s"]);
    let cms: Api<ConfigMap> =
        rt.block_on(async { Api::namespaced(client(dir.path()).await, "default") });
    rt.block_on(cms.create(&PostParams::default(), &config_map("before")))
        .expect("create before");
    // A watch from the beginning: its first event is the ConfigMap above.
    let mut watch = rt
        .block_on(cms.watch(&WatchParams::default().timeout(290), "0"))
        .expect("watch")
        .boxed();
    let first = rt
        .block_on(async { tokio::time::timeout(DEADLINE, watch.next()).await })
        .expect("an event")
        .expect("the stream is open")
        .expect("an event, not an error");
    assert!(
        matches!(first, WatchEvent::Added(ref cm) if cm.metadata.name.as_deref() == Some("before"))
    );

    let out = run(Command::new("kill").args(["-TERM", &child.0.id().to_string()]));
    assert!(out.status.success());
    let terminated = Instant::now();

    // Readiness fails at once, liveness does not, and the API still answers during the delay.
    let readyz = wait_for("/readyz to fail", DEADLINE, || {
        let out = kubectl(dir.path(), &["get", "--raw", "/readyz?verbose"]);
        (!out.status.success()).then_some(out)
    });
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&readyz.stdout),
        String::from_utf8_lossy(&readyz.stderr)
    );
    // kube's health handler: 500, every check listed, the reason withheld.
    assert!(
        said.contains("[-]shutdown failed: reason withheld") && said.contains("[+]etcd ok"),
        "{said}"
    );
    assert!(
        terminated.elapsed() < Duration::from_secs(3),
        "readyz failed only after the delay"
    );
    assert!(
        kubectl(dir.path(), &["get", "--raw", "/livez"])
            .status
            .success()
    );
    rt.block_on(cms.create(&PostParams::default(), &config_map("during")))
        .expect("served during the delay");
    assert!(
        terminated.elapsed() < Duration::from_secs(3),
        "the write was served after the delay"
    );

    // The watch saw that write, then ends cleanly (no error) once the delay is over.
    let mut events = Vec::new();
    let ended = rt.block_on(async {
        tokio::time::timeout(DEADLINE, async {
            while let Some(item) = watch.next().await {
                events.push(item.map_err(|e| e.to_string()));
            }
        })
        .await
    });
    assert!(ended.is_ok(), "the watch did not end");
    let ended_after = terminated.elapsed();
    assert!(
        ended_after >= Duration::from_millis(2_900),
        "ended after {ended_after:?}, before the delay was over"
    );
    assert!(
        events.iter().all(Result::is_ok),
        "the watch ended with an error: {events:?}"
    );
    assert!(events.iter().any(|e| matches!(e, Ok(WatchEvent::Added(cm)) if cm.metadata.name.as_deref() == Some("during"))), "{events:?}");

    let status = wait_for("the server to exit", DEADLINE, || {
        child.0.try_wait().expect("wait")
    });
    assert!(status.success(), "exit status {status}");

    // Both acknowledged writes were stored.
    let _restarted = spawn(dir.path(), &[]);
    let names =
        String::from_utf8_lossy(&kubectl(dir.path(), &["get", "configmaps", "-o", "name"]).stdout)
            .into_owned();
    assert!(
        names.contains("configmap/before") && names.contains("configmap/during"),
        "{names}"
    );
}

/// SIGTERM while clients write as fast as they can: every write the server acknowledged is
/// stored (the store is flushed before the process exits 0), and the writes it did not take are
/// refused cleanly — a closed connection or a 503/429, never a 500 and never a hang.
#[test]
fn sigterm_during_writes_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().expect("temp dir");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut child = spawn(dir.path(), &[]);
    let cms: Api<ConfigMap> =
        rt.block_on(async { Api::namespaced(client(dir.path()).await, "default") });
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (cms, acknowledged) = (cms.clone(), acknowledged.clone());
            rt.spawn(async move {
                for i in 0.. {
                    let name = format!("w{w}-{i}");
                    let res = tokio::time::timeout(
                        DEADLINE,
                        cms.create(&PostParams::default(), &config_map(&name)),
                    )
                    .await
                    .unwrap_or_else(|_| panic!("{name} hung"));
                    match res {
                        Ok(_) => acknowledged.lock().expect("names").push(name),
                        Err(kube::Error::Api(s)) => {
                            assert!(
                                s.code == 503 || s.code == 429,
                                "{name} refused with {} {}",
                                s.code,
                                s.message
                            );
                            return;
                        }
                        // The listener closed: the write was never taken.
                        Err(_) => return,
                    }
                }
            })
        })
        .collect();
    wait_for("writes to flow", DEADLINE, || {
        (acknowledged.lock().expect("names").len() >= 200).then_some(())
    });
    let out = run(Command::new("kill").args(["-TERM", &child.0.id().to_string()]));
    assert!(out.status.success());
    for w in writers {
        rt.block_on(w).expect("writer");
    }
    let status = wait_for("the server to exit", DEADLINE, || {
        child.0.try_wait().expect("wait")
    });
    assert!(status.success(), "exit status {status}");

    let _restarted = spawn(dir.path(), &[]);
    let stored =
        String::from_utf8_lossy(&kubectl(dir.path(), &["get", "configmaps", "-o", "name"]).stdout)
            .into_owned();
    let acknowledged = acknowledged.lock().expect("names").clone();
    for n in &acknowledged {
        assert!(
            stored.contains(&format!("configmap/{n}\n")),
            "{n} was acknowledged before SIGTERM and is gone"
        );
    }
    assert!(acknowledged.len() >= 200);
}
