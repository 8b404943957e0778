//! End-to-end leader election: two `serve` replicas over one etcd share the controllers
//! through the `karmada-controller-manager` Lease — one leads (its metric says 1), either
//! serves the API, the other takes over when the leader is killed (after the lease expires)
//! or terminated (at once: the lease is released).

mod propagation_env;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use karmada_api::work::v1alpha1::Work;
use propagation_env::Env;
use serde_json::Value;
use support::{Backend, DEADLINE, Server, kubectl_cmd, run, run_stdin, spawn_serving, wait_for};

/// The cluster flags `Env` gives its control plane, so that both replicas agree.
const CLUSTER_FLAGS: [&str; 3] = [
    "--cluster-status-update-frequency=1s",
    "--cluster-success-threshold=1s",
    "--cluster-failure-threshold=2s",
];

/// A second `serve` replica over the first one's etcd, with a copy of its PKI (as replicas
/// share one: the same CA, serving and admin certificates).
struct Replica {
    _dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cache_dir: PathBuf,
    child: Option<Child>,
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("dir entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

impl Replica {
    /// A replica over `first`'s etcd.
    fn start(first: &Server) -> Replica {
        let endpoints = first.etcd_endpoints().expect("an etcd server").join(",");
        Replica::start_on(first, &endpoints, &[])
    }

    /// A replica over the etcd members `endpoints` (comma-separated), with `extra` flags.
    fn start_on(first: &Server, endpoints: &str, extra: &[&str]) -> Replica {
        let dir = tempfile::tempdir().expect("temp dir");
        copy_dir(&first.dir.path().join("pki"), &dir.path().join("pki"));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
        cmd.arg("serve")
            .arg("--data-dir")
            .arg(dir.path())
            .args(["--bind", "127.0.0.1:0", "--etcd-servers", endpoints])
            .args(CLUSTER_FLAGS)
            .args(extra)
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let (child, _url) = spawn_serving(&mut cmd, "karmada-rs control plane serving at ");
        let r = Replica {
            kubeconfig: dir.path().join("karmada.kubeconfig"),
            cache_dir: dir.path().join("kubectl-cache"),
            _dir: dir,
            child: Some(child),
        };
        wait_for("the second replica to be ready", DEADLINE, || {
            r.kubectl(&["get", "--raw", "/readyz"])
                .status
                .success()
                .then_some(())
        });
        r
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        run(kubectl_cmd(&self.kubeconfig, &self.cache_dir).args(args))
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        support::stdout_of_success(args, self.kubectl(args))
    }

    fn apply(&self, yaml: &str) {
        let args = ["apply", "-f", "-"];
        support::stdout_of_success(
            &args,
            run_stdin(
                kubectl_cmd(&self.kubeconfig, &self.cache_dir).args(args),
                yaml,
            ),
        );
    }

    /// Sends SIGTERM and waits for the process to exit.
    fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        sigterm(child.id());
        wait_for("the replica to exit after SIGTERM", DEADLINE, || {
            child.try_wait().expect("wait")
        })
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn sigterm(pid: u32) {
    let out = run(Command::new("kill").args(["-TERM", &pid.to_string()]));
    assert!(out.status.success(), "kill -TERM {pid} failed");
}

/// `leader_election_master_status{name="karmada-controller-manager"}` in a /metrics text.
fn master_status(metrics: &str) -> u8 {
    metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("leader_election_master_status{name=\"karmada-controller-manager\"} ")
        })
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no leader_election_master_status in /metrics"))
}

/// Waits until `b` sees another holder than `old` in the Lease; the new holder and the time
/// since `killed`.
fn takeover(b: &Replica, old: &str, killed: Instant) -> (String, Duration) {
    let lease_args = [&LEASE[..], &["-o", "json"]].concat();
    let holder = wait_for("the second replica to take the Lease", DEADLINE, || {
        let (h, _) = lease(&b.kubectl_ok(&lease_args));
        (!h.is_empty() && h != old).then_some(h)
    });
    (holder, killed.elapsed())
}

fn lease(json: &str) -> (String, i64) {
    let v: Value = serde_json::from_str(json).expect("lease JSON");
    (
        v["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
        v["spec"]["leaseTransitions"].as_i64().unwrap_or(-1),
    )
}

const LEASE: [&str; 5] = [
    "get",
    "lease",
    "karmada-controller-manager",
    "-n",
    "karmada-system",
];

fn workload(name: &str) -> String {
    propagation_env::deployment_with_policy(name, 1, &["member1"])
}

#[test]
fn two_replicas_share_the_controllers_through_the_lease() {
    let mut env = Env::start_with(Backend::Etcd, 1);
    let mut b = Replica::start(&env.cp);
    let lease_args = [&LEASE[..], &["-o", "json"]].concat();

    // The first replica leads: it alone reports 1; the Lease names it and records it.
    let (holder_a, transitions) = lease(&env.cp.kubectl_ok(&lease_args));
    assert!(holder_a.contains('_'), "hostname_uuid: {holder_a}");
    assert_eq!(
        master_status(&env.cp.kubectl_ok(&["get", "--raw", "/metrics"])),
        1
    );
    assert_eq!(
        master_status(&b.kubectl_ok(&["get", "--raw", "/metrics"])),
        0
    );
    assert_eq!(
        lease(&b.kubectl_ok(&lease_args)).0,
        holder_a,
        "both see one Lease"
    );
    let events = b.kubectl_ok(&[
        "get",
        "events",
        "-n",
        "karmada-system",
        "--field-selector",
        "reason=LeaderElection,involvedObject.kind=Lease",
        "-o",
        "jsonpath={.items[*].message}",
    ]);
    assert!(
        events.contains(&format!("{holder_a} became leader")),
        "{events}"
    );

    // Either replica serves the API: a workload applied through the follower propagates.
    b.apply(&workload("through-b"));
    env.wait_member_object("member1", &["deploy", "through-b", "-n", "default"]);

    // SIGKILL the leader: the follower takes over once the lease has expired on its clock.
    // It watches the Lease, so its clock starts at the last renewal and it wakes at expiry:
    // leaseDuration (15 s) after the last renewal, within the 20 s of the kill (with
    // client-go's polling alone it could be 15 s + 2 × 4.4 s).
    env.cp.stop();
    let (holder_b, failover) = takeover(&b, &holder_a, Instant::now());
    eprintln!("failover after SIGKILL: {failover:?}");
    assert!(failover <= Duration::from_secs(20), "took {failover:?}");
    assert!(
        failover >= Duration::from_secs(10),
        "taken over in {failover:?}, before the lease could expire"
    );
    assert_eq!(
        master_status(&b.kubectl_ok(&["get", "--raw", "/metrics"])),
        1
    );
    assert_eq!(lease(&b.kubectl_ok(&lease_args)).1, transitions + 1);
    b.apply(&workload("after-kill"));
    env.wait_member_object("member1", &["deploy", "after-kill", "-n", "default"]);

    // The killed replica comes back as a follower.
    env.cp.restart();
    assert_eq!(
        master_status(&env.cp.kubectl_ok(&["get", "--raw", "/metrics"])),
        0
    );
    assert_eq!(lease(&env.cp.kubectl_ok(&lease_args)).0, holder_b);

    // SIGTERM the leader: it releases the Lease and exits 0; the other takes it within a
    // couple of retry periods, far sooner than the lease would have expired.
    let status = b.terminate();
    let terminated = Instant::now();
    assert!(status.success(), "SIGTERM exit: {status}");
    let holder_a2 = wait_for("the restarted replica to take the Lease", DEADLINE, || {
        let (h, _) = lease(&env.cp.kubectl_ok(&lease_args));
        (!h.is_empty() && h != holder_b).then_some(h)
    });
    let takeover = terminated.elapsed();
    eprintln!("takeover after SIGTERM: {takeover:?}");
    assert!(takeover < Duration::from_secs(8), "took {takeover:?}");
    assert_ne!(
        holder_a2, holder_a,
        "a restarted process has a new identity"
    );
    assert_eq!(
        master_status(&env.cp.kubectl_ok(&["get", "--raw", "/metrics"])),
        1
    );
    assert_eq!(lease(&env.cp.kubectl_ok(&lease_args)).1, transitions + 2);
    env.apply(&workload("after-term"));
    env.wait_member_object("member1", &["deploy", "after-term", "-n", "default"]);
}

#[test]
fn bad_election_flags_stop_the_start_with_client_gos_words() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["--leader-elect-renew-deadline=15s"],
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            &[
                "--leader-elect-lease-duration=5s",
                "--leader-elect-renew-deadline=8s",
            ],
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            &["--leader-elect-retry-period=9s"],
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        (
            &["--leader-elect-retry-period=0s"],
            "retryPeriod must be greater than zero",
        ),
    ];
    for (flags, message) in cases {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .arg("serve")
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--bind", "127.0.0.1:0"])
            .args(flags)
            .env("RUST_BACKTRACE", "0"));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{flags:?} started");
        assert!(
            stderr.contains(&format!("invalid leader election flags: {message}")),
            "{flags:?}: {stderr}"
        );
        assert!(
            !dir.path().join("data").exists(),
            "{flags:?}: nothing is created before the flags are checked"
        );
    }
    // Off, the same flags are not looked at, and no Lease is taken: the controllers run
    // at once.
    let dir = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
    cmd.arg("serve")
        .arg("--data-dir")
        .arg(dir.path())
        .args(["--bind", "127.0.0.1:0", "--leader-elect=false"])
        .args(["--leader-elect-renew-deadline=15s"])
        .env("KARMADA_RS_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let (mut child, _url) = spawn_serving(&mut cmd, "karmada-rs control plane serving at ");
    let kubectl = |args: &[&str]| {
        run(kubectl_cmd(
            &dir.path().join("karmada.kubeconfig"),
            &dir.path().join("cache"),
        )
        .args(args))
    };
    wait_for("the server to be ready", DEADLINE, || {
        kubectl(&["get", "--raw", "/readyz"])
            .status
            .success()
            .then_some(())
    });
    let metrics = support::stdout_of_success(&[], kubectl(&["get", "--raw", "/metrics"]));
    assert!(!metrics.contains("leader_election_master_status"));
    let out = kubectl(&LEASE);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("NotFound"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    sigterm(child.id());
    let status = wait_for("the server to exit", DEADLINE, || {
        child.try_wait().expect("wait")
    });
    assert!(status.success(), "{status}");
}

/// `execution-space/deployment` of every Work that carries one of namespace `ha`'s
/// Deployments.
fn ha_works(rt: &tokio::runtime::Runtime, works: &kube::Api<Work>) -> Vec<String> {
    rt.block_on(works.list(&Default::default()))
        .expect("list works")
        .items
        .into_iter()
        .filter_map(|w| {
            let m = &w.spec.workload.manifests.first()?.0;
            (m["metadata"]["namespace"] == "ha" && m["kind"] == "Deployment").then(|| {
                format!(
                    "{}/{}",
                    w.metadata.namespace.clone().unwrap_or_default(),
                    m["metadata"]["name"].as_str().unwrap_or("")
                )
            })
        })
        .collect()
}

fn ha_deployment(i: usize) -> k8s_openapi::api::apps::v1::Deployment {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("d{i}"), "namespace": "ha", "labels": {"app": "ha"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "ha", "i": format!("d{i}")}},
            "template": {
                "metadata": {"labels": {"app": "ha", "i": format!("d{i}")}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}
            }
        }
    }))
    .expect("deployment")
}

/// An audit policy that records every write of a Work or its status (and nothing else) once,
/// when answered.
const WORK_WRITES_AUDIT_POLICY: &str = "apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    verbs: [create, update, patch, delete, deletecollection]
    resources: [{group: work.karmada.io, resources: [works, works/status]}]
  - level: None
";

/// The Work writes a replica's audit log holds: (received, answered) timestamps, in kube's
/// fixed-width MicroTime format (so they order as strings).
fn work_writes(log: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["objectRef"]["resource"] == "works" && e["stage"] == "ResponseComplete")
        .map(|e| {
            let at = |f: &str| e[f].as_str().unwrap_or_default().to_owned();
            (at("requestReceivedTimestamp"), at("stageTimestamp"))
        })
        .collect()
}

/// The production shape end to end: two replicas over a 3-member etcd cluster. The leader is
/// SIGKILLed in the middle of a propagation of `HA_DEPLOYMENTS` Deployments to two members,
/// created through the other replica; that replica takes the Lease and finishes the work:
/// every Deployment is in both members and each has exactly one Work per member (1,000
/// Deployments: about 90 s in a debug build on an idle 2-core machine). Both replicas audit
/// every Work write: the new leader's first one comes after the old leader's last one, so no
/// Work was written by two leaders at once.
#[test]
fn a_replica_takes_over_a_propagation_when_the_leader_dies_over_an_etcd_cluster() {
    let n: usize = std::env::var("HA_DEPLOYMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let etcd = rt
        .block_on(storage::testing::EtcdCluster::start(3))
        .expect("etcd cluster");
    let endpoints = etcd.endpoints().join(",");
    let audit = tempfile::tempdir().expect("temp dir");
    let policy = audit.path().join("policy.yaml");
    std::fs::write(&policy, WORK_WRITES_AUDIT_POLICY).expect("audit policy");
    let policy = policy.to_str().expect("utf-8 path");
    let (log_a, log_b) = (audit.path().join("a.log"), audit.path().join("b.log"));
    let audit_flags = |log: &Path| {
        let log = log.to_str().expect("utf-8 path").to_owned();
        [
            format!("--audit-policy-file={policy}"),
            format!("--audit-log-path={log}"),
        ]
    };
    let (flags_a, flags_b) = (audit_flags(&log_a), audit_flags(&log_b));
    let mut env = Env::start_with_flags(
        Backend::Embedded,
        2,
        &["--etcd-servers", &endpoints, &flags_a[0], &flags_a[1]],
    );
    let b = Replica::start_on(&env.cp, &endpoints, &[&flags_b[0], &flags_b[1]]);
    let lease_args = [&LEASE[..], &["-o", "json"]].concat();
    let (holder_a, _) = lease(&env.cp.kubectl_ok(&lease_args));

    env.cp.kubectl_ok(&["create", "namespace", "ha"]);
    env.apply(
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: ha, namespace: ha}
spec:
  resourceSelectors:
    - {apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {app: ha}}}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
",
    );
    // Templates go in through the follower (it survives), 16 at a time, while the leader's
    // controllers propagate them.
    let client = rt.block_on(support::kube_client(&b.kubeconfig));
    let deployments: kube::Api<k8s_openapi::api::apps::v1::Deployment> =
        kube::Api::namespaced(client.clone(), "ha");
    let works: kube::Api<Work> = kube::Api::all(client);
    let creating = rt.spawn(async move {
        use futures::StreamExt;
        futures::stream::iter(0..n)
            .map(|i| {
                let (api, d) = (deployments.clone(), ha_deployment(i));
                async move { api.create(&Default::default(), &d).await.expect("create") }
            })
            .buffer_unordered(16)
            .collect::<Vec<_>>()
            .await
    });

    // Kill the leader in the middle of the propagation, once some Works exist.
    let made = wait_for("the propagation to be under way", DEADLINE, || {
        let made = ha_works(&rt, &works).len();
        (made >= n / 10).then_some(made)
    });
    env.cp.stop();
    let killed = Instant::now();
    eprintln!("leader killed with {made} of {} Works made", 2 * n);
    let (holder_b, takeover) = takeover(&b, &holder_a, killed);
    eprintln!("takeover by {holder_b} after SIGKILL: {takeover:?}");
    assert!(takeover <= Duration::from_secs(20), "took {takeover:?}");
    rt.block_on(creating)
        .expect("every template created through the follower");

    // The new leader finishes: every Deployment in both members.
    for m in ["member1", "member2"] {
        wait_for(
            &format!("{n} Deployments in {m}"),
            Duration::from_secs(600),
            || {
                let out = env
                    .member(m)
                    .kubectl(&["get", "deploy", "-n", "ha", "-o", "name"]);
                let count = String::from_utf8_lossy(&out.stdout).lines().count();
                (count == n).then_some(())
            },
        );
    }
    eprintln!(
        "all {n} Deployments in both members {:?} after the kill",
        killed.elapsed()
    );
    let all = ha_works(&rt, &works);
    let unique: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(unique.len(), 2 * n, "one Work per Deployment and member");
    assert_eq!(
        all.len(),
        2 * n,
        "no Deployment has two Works in one member"
    );

    // The fencing check: the two leaders' Work writes do not overlap in time.
    let (writes_a, writes_b) = (work_writes(&log_a), work_writes(&log_b));
    let last_a = writes_a.iter().map(|(_, done)| done).max();
    let first_b = writes_b.iter().map(|(received, _)| received).min();
    eprintln!(
        "Work writes audited: {} by the first leader (last answered {last_a:?}), {} by the second (first received {first_b:?})",
        writes_a.len(),
        writes_b.len()
    );
    let (Some(last_a), Some(first_b)) = (last_a, first_b) else {
        panic!(
            "each leader audited Work writes: {} and {}",
            writes_a.len(),
            writes_b.len()
        );
    };
    assert!(
        last_a < first_b,
        "the second leader wrote a Work at {first_b}, before the first leader's last Work write ended at {last_a}"
    );
}
