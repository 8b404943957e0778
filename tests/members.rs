//! Member clusters end to end: `karmada-rs member serve` (simulated members), `karmada-rs
//! join` / `unjoin` against `karmada-rs serve`, and the cluster / cluster-status controllers,
//! all as real processes on loopback, driven with the real kubectl.

mod support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use support::{Backend, DEADLINE, Server, kubectl_cmd, run, wait_for};

/// Flags that make the control plane notice member changes quickly.
const FAST_STATUS: &[&str] = &[
    "--cluster-status-update-frequency",
    "300ms",
    "--cluster-success-threshold",
    "1s",
    "--cluster-failure-threshold",
    "1s",
];

/// A running `karmada-rs member serve` process.
struct Member {
    name: String,
    dir: tempfile::TempDir,
    url: String,
    kubeconfig: PathBuf,
    cache_dir: PathBuf,
    extra: Vec<String>,
    child: Option<Child>,
}

impl Member {
    fn start(name: &str, extra: &[&str]) -> Member {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut m = Member {
            name: name.to_owned(),
            kubeconfig: dir.path().join("kubeconfig"),
            cache_dir: dir.path().join("kubectl-cache"),
            dir,
            url: String::new(),
            extra: extra.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        m.spawn();
        m
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
        cmd.args(["member", "serve", "--name", &self.name, "--data-dir"])
            .arg(self.dir.path())
            .args(&self.extra)
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn member");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("karmada-rs member serving at ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(DEADLINE)
            .expect("the member did not report its URL");
        // A restart reuses the port of its kubeconfig, so joined clusters find it again.
        if !self.url.is_empty() {
            assert_eq!(url, self.url, "a restarted member keeps its URL");
        }
        self.url = url;
        self.child = Some(child);
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        run(kubectl_cmd(&self.kubeconfig, &self.cache_dir).args(args))
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {} on {} failed: {}",
            args.join(" "),
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn get_json(&self, args: &[&str]) -> Value {
        let mut a = vec!["get"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-o", "json"]);
        serde_json::from_str(&self.kubectl_ok(&a)).expect("json")
    }

    /// Whether `kubectl get` finds the object.
    fn exists(&self, args: &[&str]) -> bool {
        let mut a = vec!["get"];
        a.extend_from_slice(args);
        self.kubectl(&a).status.success()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Runs the binary with arguments.
fn karmada_rs(args: &[&str]) -> Output {
    run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(args)
        .env("RUST_BACKTRACE", "0")
        .env("KARMADA_RS_LOG", "warn"))
}

fn join(cp: &Server, name: &str, kubeconfig: &Path) -> Output {
    karmada_rs(&[
        "join",
        name,
        "--cluster-kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--kubeconfig",
        cp.kubeconfig.to_str().unwrap(),
    ])
}

fn join_ok(cp: &Server, name: &str, member: &Member) {
    let out = join(cp, name, &member.kubeconfig);
    assert!(
        out.status.success(),
        "join {name} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("joined successfully"));
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn cluster(cp: &Server, name: &str) -> Option<Value> {
    let out = cp.kubectl(&["get", "cluster", name, "-o", "json"]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("json"))
}

fn ready(c: &Value) -> Option<&Value> {
    c["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

fn taint_keys(c: &Value) -> Vec<String> {
    c["spec"]["taints"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["key"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Waits until the cluster's Ready condition has `status` and returns the cluster.
fn wait_ready(cp: &Server, name: &str, status: &str) -> Value {
    wait_for(&format!("cluster {name} Ready={status}"), DEADLINE, || {
        cluster(cp, name).filter(|c| ready(c).is_some_and(|r| r["status"] == status))
    })
}

/// Objects in karmada-cluster of the control plane.
fn control_plane_secrets(cp: &Server) -> Vec<String> {
    let list = cp.get_json(&["secrets", "-n", "karmada-cluster"]);
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn cluster_names(cp: &Server) -> Vec<String> {
    cp.get_json(&["clusters"])["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn b64(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

#[test]
fn member_serves_nodes_and_rolls_out_workloads() {
    let m = Member::start(
        "sim",
        &[
            "--nodes",
            "2",
            "--node-cpu",
            "4",
            "--node-memory",
            "16Gi",
            "--ready-delay",
            "200ms",
        ],
    );
    assert!(m.kubeconfig.exists(), "member serve writes DIR/kubeconfig");

    let nodes = m.get_json(&["nodes"]);
    let items = nodes["items"].as_array().unwrap();
    let names: Vec<&str> = items
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sim-node-1", "sim-node-2"]);
    for n in items {
        assert_eq!(n["status"]["allocatable"]["cpu"], "4");
        assert_eq!(n["status"]["allocatable"]["memory"], "16Gi");
        assert_eq!(n["status"]["allocatable"]["pods"], "110");
    }
    let table = m.kubectl_ok(&["get", "nodes"]);
    assert_eq!(table.matches(" Ready ").count(), 2, "{table}");

    m.kubectl_ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=3",
    ]);
    let dep = wait_for("the deployment to be ready", DEADLINE, || {
        let d = m.get_json(&["deployment", "web"]);
        (d["status"]["readyReplicas"] == 3).then_some(d)
    });
    assert_eq!(
        dep["status"]["observedGeneration"],
        dep["metadata"]["generation"]
    );
    assert_eq!(dep["status"]["availableReplicas"], 3);
    assert_eq!(dep["status"]["updatedReplicas"], 3);
    assert_eq!(dep["status"]["replicas"], 3);

    m.kubectl_ok(&["scale", "deployment", "web", "--replicas=5"]);
    wait_for("the scaled deployment to be ready", DEADLINE, || {
        let d = m.get_json(&["deployment", "web"]);
        (d["status"]["readyReplicas"] == 5
            && d["status"]["observedGeneration"] == d["metadata"]["generation"])
            .then_some(())
    });
    let rollout = m.kubectl_ok(&["rollout", "status", "deployment/web", "--timeout=30s"]);
    assert!(rollout.contains("successfully rolled out"), "{rollout}");

    m.kubectl_ok(&[
        "create",
        "job",
        "pi",
        "--image=perl",
        "--",
        "perl",
        "-e",
        "1",
    ]);
    let job = wait_for("the job to complete", DEADLINE, || {
        let j = m.get_json(&["job", "pi"]);
        (j["status"]["succeeded"] == 1).then_some(j)
    });
    let complete = job["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "Complete" && c["status"] == "True");
    assert!(complete, "{job}");

    let sts = r#"{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},
        "spec":{"replicas":2,"serviceName":"db","selector":{"matchLabels":{"app":"db"}},
        "template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"postgres"}]}}}}"#;
    let ds = r#"{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},
        "spec":{"selector":{"matchLabels":{"app":"agent"}},
        "template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"a","image":"busybox"}]}}}}"#;
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"solo"},
        "spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"}}}]}}"#;
    for manifest in [sts, ds, pod] {
        let out = run_stdin_ok(&m, &["create", "--validate=false", "-f", "-"], manifest);
        assert!(out.contains("created"), "{out}");
    }
    wait_for("the statefulset to be ready", DEADLINE, || {
        let s = m.get_json(&["statefulset", "db"]);
        (s["status"]["readyReplicas"] == 2 && s["status"]["currentRevision"].is_string())
            .then_some(())
    });
    wait_for("the daemonset to run on both nodes", DEADLINE, || {
        let d = m.get_json(&["daemonset", "agent"]);
        (d["status"]["numberReady"] == 2 && d["status"]["desiredNumberScheduled"] == 2)
            .then_some(())
    });
    let p = wait_for("the pod to run", DEADLINE, || {
        let p = m.get_json(&["pod", "solo"]);
        (p["status"]["phase"] == "Running").then_some(p)
    });
    let node = p["spec"]["nodeName"].as_str().unwrap_or("");
    assert!(
        node.starts_with("sim-node-"),
        "the pod is bound to a node: {p}"
    );
    assert!(p["status"]["podIP"].is_string());
}

/// DeleteOptions.gracePeriodSeconds on a member, where pods run: a scheduled pod is marked
/// with its grace period (the request's, else its terminationGracePeriodSeconds) and its
/// simulated kubelet then removes it; grace 0 removes it at once.
#[test]
fn member_pods_are_deleted_gracefully() {
    let m = Member::start("sim", &["--nodes", "1", "--ready-delay", "300ms"]);
    let pod = |name: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{name}"}},
            "spec":{{"terminationGracePeriodSeconds":45,"containers":[{{"name":"c","image":"nginx"}}]}}}}"#
        )
    };
    for name in ["p1", "p2", "p3"] {
        run_stdin_ok(&m, &["create", "-f", "-"], &pod(name));
    }
    for name in ["p1", "p2", "p3"] {
        wait_for("the pod to run", DEADLINE, || {
            let p = m.get_json(&["pod", name]);
            (p["status"]["phase"] == "Running").then_some(())
        });
    }
    let deleted_at = k8s_openapi::jiff::Timestamp::now();
    // Its own grace period: the answer is the pod, marked for deletion 45 s ahead.
    let out = m.kubectl_ok(&["delete", "--raw", "/api/v1/namespaces/default/pods/p1"]);
    let p1: Value = serde_json::from_str(&out).expect("pod JSON");
    assert_eq!(p1["kind"], "Pod", "{p1}");
    assert_eq!(p1["metadata"]["deletionGracePeriodSeconds"], 45, "{p1}");
    let at: k8s_openapi::jiff::Timestamp = p1["metadata"]["deletionTimestamp"]
        .as_str()
        .unwrap_or_default()
        .parse()
        .expect("deletionTimestamp");
    let ahead = at.duration_since(deleted_at).as_secs();
    assert!((43..=46).contains(&ahead), "{ahead}s ahead: {p1}");
    // The request's grace period wins.
    let out = m.kubectl_ok(&[
        "delete",
        "--raw",
        "/api/v1/namespaces/default/pods/p2?gracePeriodSeconds=7",
    ]);
    let p2: Value = serde_json::from_str(&out).expect("pod JSON");
    assert_eq!(p2["metadata"]["deletionGracePeriodSeconds"], 7, "{p2}");
    // The simulated kubelet finishes both well before their grace periods end.
    for name in ["p1", "p2"] {
        wait_for(
            "the kubelet to remove the pod",
            Duration::from_secs(30),
            || (!m.exists(&["pod", name])).then_some(()),
        );
    }
    // Grace 0 (kubectl delete --now is 1 s, --force 0): gone at once.
    m.kubectl_ok(&["delete", "pod", "p3", "--grace-period=0", "--force"]);
    assert!(!m.exists(&["pod", "p3"]));
}

fn run_stdin_ok(m: &Member, args: &[&str], stdin: &str) -> String {
    let out = support::run_stdin(kubectl_cmd(&m.kubeconfig, &m.cache_dir).args(args), stdin);
    assert!(
        out.status.success(),
        "kubectl {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn join_registers_members_and_collects_their_status() {
    let cp = Server::start_with(Backend::Embedded, FAST_STATUS);
    let members: Vec<Member> = ["member1", "member2", "member3"]
        .iter()
        .map(|n| Member::start(n, &["--ready-delay", "0"]))
        .collect();
    for m in &members {
        join_ok(&cp, &m.name, m);
    }

    for m in &members {
        let name = m.name.as_str();
        let c = wait_ready(&cp, name, "True");
        let r = ready(&c).unwrap();
        assert_eq!(r["reason"], "ClusterReady");
        assert_eq!(
            r["message"],
            "cluster is healthy and ready to accept workloads"
        );

        // The Cluster as karmadactl join writes it.
        assert_eq!(c["spec"]["syncMode"], "Push");
        assert_eq!(c["spec"]["apiEndpoint"], m.url.as_str());
        assert_eq!(c["spec"]["secretRef"]["namespace"], "karmada-cluster");
        assert_eq!(c["spec"]["secretRef"]["name"], name);
        assert_eq!(
            c["spec"]["impersonatorSecretRef"]["name"],
            format!("{name}-impersonator")
        );
        let kube_system = m.get_json(&["namespace", "kube-system"]);
        assert_eq!(c["spec"]["id"], kube_system["metadata"]["uid"]);
        assert!(
            c["metadata"]["finalizers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "karmada.io/cluster-controller")
        );
        assert!(
            taint_keys(&c).is_empty(),
            "a ready cluster has no scheduling taints: {c}"
        );

        // The collected status.
        let status = &c["status"];
        assert!(
            status["kubernetesVersion"]
                .as_str()
                .unwrap()
                .starts_with('v')
        );
        let apps = status["apiEnablements"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["groupVersion"] == "apps/v1")
            .expect("apps/v1 enabled");
        assert!(
            apps["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "deployments" && r["kind"] == "Deployment")
        );
        assert!(
            !status["apiEnablements"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["groupVersion"].as_str().unwrap().contains("karmada.io")),
            "a member serves no Karmada groups"
        );
        assert_eq!(status["nodeSummary"]["totalNum"], 3);
        assert_eq!(status["nodeSummary"]["readyNum"], 3);
        assert_eq!(status["resourceSummary"]["allocatable"]["cpu"], "24");
        assert_eq!(status["resourceSummary"]["allocatable"]["memory"], "96Gi");
        assert_eq!(status["resourceSummary"]["allocatable"]["pods"], "330");
        let complete = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "CompleteAPIEnablements" && c["status"] == "True");
        assert!(complete, "{status}");

        // The execution space.
        let es = cp.get_json(&["namespace", &format!("karmada-es-{name}")]);
        assert_eq!(es["metadata"]["labels"]["karmada.io/system"], "true");

        // Credentials in the control plane: the member's CA and a token.
        let secret = cp.get_json(&["secret", "-n", "karmada-cluster", name]);
        let ca = b64(secret["data"]["caBundle"].as_str().unwrap());
        let member_kubeconfig = std::fs::read_to_string(&m.kubeconfig).unwrap();
        let ca_data = member_kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix("certificate-authority-data:"))
            .unwrap()
            .trim()
            .trim_matches('"');
        assert_eq!(ca, b64(ca_data), "caBundle is the member's serving CA");
        assert!(!secret["data"]["token"].as_str().unwrap().is_empty());
        assert_eq!(
            secret["metadata"]["ownerReferences"][0]["kind"], "Cluster",
            "{secret}"
        );
        let imp = cp.get_json(&[
            "secret",
            "-n",
            "karmada-cluster",
            &format!("{name}-impersonator"),
        ]);
        assert!(!imp["data"]["token"].as_str().unwrap().is_empty());

        // Credentials in the member.
        let ns = m.get_json(&["namespace", "karmada-cluster"]);
        assert_eq!(ns["metadata"]["labels"]["karmada.io/system"], "true");
        for sa in [format!("karmada-{name}"), "karmada-impersonator".to_owned()] {
            assert!(
                m.exists(&["serviceaccount", "-n", "karmada-cluster", &sa]),
                "{sa}"
            );
        }
        let role_name = format!("karmada-controller-manager:karmada-{name}");
        let role = m.get_json(&["clusterrole", &role_name]);
        assert_eq!(
            role["rules"],
            serde_json::json!([
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                {"nonResourceURLs": ["*"], "verbs": ["get"]}
            ])
        );
        let binding = m.get_json(&["clusterrolebinding", &role_name]);
        assert_eq!(binding["roleRef"]["name"], role_name.as_str());
        assert_eq!(binding["subjects"][0]["name"], format!("karmada-{name}"));
        assert_eq!(binding["subjects"][0]["namespace"], "karmada-cluster");
    }

    // kubectl prints Karmada's columns.
    let table = cp.kubectl_ok(&["get", "clusters"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "VERSION", "MODE", "READY", "AGE"]);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), 3, "{table}");
    for row in rows {
        assert!(row[0].starts_with("member"));
        assert!(row[1].starts_with('v'), "{table}");
        assert_eq!(row[2], "Push");
        assert_eq!(row[3], "True");
    }

    // Pods in a member show up in its allocated resources.
    let m1 = &members[0];
    m1.kubectl_ok(&[
        "run",
        "p",
        "--image=nginx",
        r#"--overrides={"spec":{"containers":[{"name":"p","image":"nginx","resources":{"requests":{"cpu":"250m","memory":"64Mi"}}}]}}"#,
    ]);
    wait_for("member1's allocated resources", DEADLINE, || {
        let c = cluster(&cp, "member1")?;
        let allocated = &c["status"]["resourceSummary"]["allocated"];
        (allocated["cpu"] == "250m" && allocated["memory"] == "64Mi" && allocated["pods"] == "1")
            .then_some(())
    });
}

#[test]
fn failed_joins_leave_nothing_behind() {
    let cp = Server::start_with(Backend::Embedded, FAST_STATUS);
    let a = Member::start("a", &[]);
    let b = Member::start("b", &[]);

    // An unreadable kubeconfig.
    let missing = a.dir.path().join("missing.kubeconfig");
    let out = join(&cp, "ghost", &missing);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("missing.kubeconfig"),
        "{}",
        stderr(&out)
    );
    let garbage = a.dir.path().join("garbage.kubeconfig");
    std::fs::write(&garbage, "clusters: [this is not: a kubeconfig").unwrap();
    let out = join(&cp, "ghost", &garbage);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("garbage.kubeconfig"),
        "{}",
        stderr(&out)
    );

    // An unreachable member: its kubeconfig pointing at a port nobody listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("https://{}", closed.local_addr().unwrap());
    drop(closed);
    let text = std::fs::read_to_string(&a.kubeconfig).unwrap();
    let unreachable = a.dir.path().join("unreachable.kubeconfig");
    std::fs::write(&unreachable, text.replace(&a.url, &dead_url)).unwrap();
    let out = join(&cp, "ghost", &unreachable);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot reach the member cluster"),
        "{}",
        stderr(&out)
    );

    assert!(cluster_names(&cp).is_empty());
    assert!(control_plane_secrets(&cp).is_empty());
    assert!(!a.exists(&["namespace", "karmada-cluster"]));

    // A duplicate name: b cannot take a's name, and b is left untouched.
    join_ok(&cp, "alpha", &a);
    let out = join(&cp, "alpha", &b.kubeconfig);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("has been registered"),
        "{}",
        stderr(&out)
    );
    assert!(!b.exists(&["namespace", "karmada-cluster"]));
    // The same member under a second name: its cluster ID is taken.
    let out = join(&cp, "alpha-again", &a.kubeconfig);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("has been registered"),
        "{}",
        stderr(&out)
    );
    assert!(!a.exists(&[
        "serviceaccount",
        "-n",
        "karmada-cluster",
        "karmada-alpha-again"
    ]));

    // An invalid name.
    let out = join(&cp, "Not_A_Name", &b.kubeconfig);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("invalid cluster name"),
        "{}",
        stderr(&out)
    );

    assert_eq!(cluster_names(&cp), ["alpha"]);
    let mut secrets = control_plane_secrets(&cp);
    secrets.sort();
    assert_eq!(secrets, ["alpha", "alpha-impersonator"]);
    assert!(!b.exists(&["namespace", "karmada-cluster"]));
    wait_ready(&cp, "alpha", "True");
}

#[test]
fn unjoin_removes_everything() {
    let cp = Server::start_with(Backend::Embedded, FAST_STATUS);
    let m = Member::start("gone", &[]);
    join_ok(&cp, "gone", &m);
    wait_ready(&cp, "gone", "True");

    let out = karmada_rs(&[
        "unjoin",
        "gone",
        "--cluster-kubeconfig",
        m.kubeconfig.to_str().unwrap(),
        "--kubeconfig",
        cp.kubeconfig.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "unjoin failed: {}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("unjoined successfully"));

    assert!(cluster(&cp, "gone").is_none());
    assert!(control_plane_secrets(&cp).is_empty());
    wait_for("the execution space to go", DEADLINE, || {
        (!cp.kubectl(&["get", "namespace", "karmada-es-gone"])
            .status
            .success())
        .then_some(())
    });
    let role = "karmada-controller-manager:karmada-gone";
    assert!(!m.exists(&["clusterrole", role]));
    assert!(!m.exists(&["clusterrolebinding", role]));
    wait_for(
        "the member's karmada-cluster namespace to go",
        DEADLINE,
        || (!m.exists(&["namespace", "karmada-cluster"])).then_some(()),
    );

    // Unjoining again: a clear error.
    let out = karmada_rs(&[
        "unjoin",
        "gone",
        "--kubeconfig",
        cp.kubeconfig.to_str().unwrap(),
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no cluster object gone found"),
        "{}",
        stderr(&out)
    );

    // And the member can join again.
    join_ok(&cp, "gone", &m);
    wait_ready(&cp, "gone", "True");
}

#[test]
fn forced_unjoin_finishes_with_the_member_stopped() {
    let cp = Server::start_with(Backend::Embedded, FAST_STATUS);
    let mut m = Member::start("lost", &[]);
    join_ok(&cp, "lost", &m);
    wait_ready(&cp, "lost", "True");

    // A Work whose member object can never be cleaned up while the member is away.
    let work = r#"{"apiVersion":"work.karmada.io/v1alpha1","kind":"Work",
        "metadata":{"name":"stuck","namespace":"karmada-es-lost","finalizers":["karmada.io/execution-controller"]},
        "spec":{"workload":{"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"default"}}]}}}"#;
    cp.kubectl_stdin_ok(&["create", "--validate=false", "-f", "-"], work);
    m.stop();
    wait_ready(&cp, "lost", "False");

    let base = [
        "unjoin",
        "lost",
        "--cluster-kubeconfig",
        m.kubeconfig.to_str().unwrap(),
        "--kubeconfig",
        cp.kubeconfig.to_str().unwrap(),
        "--wait",
        "2s",
    ];
    let out = karmada_rs(&base);
    assert!(
        !out.status.success(),
        "without --force unjoin waits and fails"
    );
    assert!(stderr(&out).contains("--force"), "{}", stderr(&out));

    let mut forced = base.to_vec();
    forced.push("--force");
    let out = karmada_rs(&forced);
    assert!(
        out.status.success(),
        "forced unjoin failed: {}",
        stderr(&out)
    );
    assert!(cluster(&cp, "lost").is_none());
    assert!(control_plane_secrets(&cp).is_empty());
    wait_for("the execution space to go", DEADLINE, || {
        (!cp.kubectl(&["get", "namespace", "karmada-es-lost"])
            .status
            .success())
        .then_some(())
    });
}

#[test]
fn a_stopped_member_goes_not_ready_and_comes_back() {
    let cp = Server::start_with(Backend::Embedded, FAST_STATUS);
    let mut m = Member::start("flaky", &[]);
    join_ok(&cp, "flaky", &m);
    wait_ready(&cp, "flaky", "True");

    m.stop();
    let c = wait_ready(&cp, "flaky", "False");
    let r = ready(&c).unwrap();
    assert_eq!(r["reason"], "ClusterNotReachable");
    assert_eq!(r["message"], "cluster is not reachable");
    wait_for("the not-ready taint", DEADLINE, || {
        let c = cluster(&cp, "flaky")?;
        let taints = c["spec"]["taints"].as_array()?.clone();
        taints
            .iter()
            .any(|t| t["key"] == "cluster.karmada.io/not-ready" && t["effect"] == "NoSchedule")
            .then_some(())
    });

    m.spawn();
    wait_ready(&cp, "flaky", "True");
    wait_for("the taint to go", DEADLINE, || {
        let c = cluster(&cp, "flaky")?;
        taint_keys(&c).is_empty().then_some(())
    });
}
