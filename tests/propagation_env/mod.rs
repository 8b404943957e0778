//! A control plane with simulated members for the propagation tests: the real binary
//! (`serve`, `member serve`, `join`), members on free loopback ports, and the real kubectl.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;

use crate::support::{Backend, DEADLINE, Server, kubectl_cmd, run, run_stdin, wait_for};

/// A running `karmada-rs member serve`.
pub struct Member {
    pub name: String,
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    cache_dir: PathBuf,
    bind: String,
    child: Option<Child>,
}

impl Member {
    /// Starts a simulated member.
    pub fn start(name: &str) -> Member {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut m = Member {
            name: name.to_owned(),
            kubeconfig: dir.path().join("kubeconfig"),
            cache_dir: dir.path().join("kubectl-cache"),
            dir,
            bind: "127.0.0.1:0".into(),
            child: None,
        };
        m.spawn();
        m
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
        // As `up` runs its simulated members: without fsync, which a killed process (see
        // `stop`) must survive all the same.
        cmd.args([
            "member",
            "serve",
            "--name",
            &self.name,
            "--bind",
            &self.bind,
            "--unsafe-no-fsync",
        ])
        .arg("--data-dir")
        .arg(self.dir.path())
        .env(
            "KARMADA_RS_LOG",
            std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        let mut child = cmd.spawn().expect("spawn karmada-rs member serve");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.split(" serving at ").nth(1) {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(DEADLINE)
            .expect("the member did not report its URL");
        self.bind = url.trim_start_matches("https://").to_string();
        self.child = Some(child);
        wait_for("the member to be ready", DEADLINE, || {
            self.kubectl(&["get", "--raw", "/readyz"])
                .status
                .success()
                .then_some(())
        });
    }

    /// Stops the member (SIGKILL).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the member again on the same port and data.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// Runs kubectl against the member.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        run(kubectl_cmd(&self.kubeconfig, &self.cache_dir).args(args))
    }

    /// Runs kubectl against the member, failing the test on error.
    pub fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "member {} kubectl {} failed: {}",
            self.name,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl with stdin against the member.
    pub fn kubectl_stdin_ok(&self, args: &[&str], stdin: &str) -> String {
        let out = run_stdin(
            kubectl_cmd(&self.kubeconfig, &self.cache_dir).args(args),
            stdin,
        );
        assert!(
            out.status.success(),
            "member {} kubectl {} failed: {}",
            self.name,
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl get ... -o json` on the member, or None when it fails (not found).
    pub fn get_json(&self, args: &[&str]) -> Option<serde_json::Value> {
        let mut a = vec!["get"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["-o", "json"]);
        let out = self.kubectl(&a);
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A Deployment template of `replicas` nginx Pods in `default`, and a PropagationPolicy that
/// places it on `clusters`.
pub fn deployment_with_policy(name: &str, replicas: u32, clusters: &[&str]) -> String {
    let clusters = clusters.join(", ");
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default, labels: {{app: {name}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: web, image: nginx:1.25}}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: default}}
spec:
  resourceSelectors:
    - {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  placement:
    clusterAffinity: {{clusterNames: [{clusters}]}}
"
    )
}

/// A control plane with joined members.
pub struct Env {
    pub cp: Server,
    pub members: Vec<Member>,
    barriers: std::sync::atomic::AtomicUsize,
}

impl Env {
    /// A control plane on the embedded store with `n` members (member1..n), all Ready.
    pub fn start(n: usize) -> Env {
        Env::start_with(Backend::Embedded, n)
    }

    /// A control plane on `backend` with `n` members, all Ready.
    pub fn start_with(backend: Backend, n: usize) -> Env {
        Env::start_with_flags(backend, n, &[])
    }

    /// A control plane on `backend` started with `extra` flags, with `n` members, all Ready.
    pub fn start_with_flags(backend: Backend, n: usize, extra: &[&str]) -> Env {
        let mut flags = vec![
            "--cluster-status-update-frequency=1s",
            "--cluster-success-threshold=1s",
            "--cluster-failure-threshold=2s",
        ];
        flags.extend_from_slice(extra);
        let cp = Server::start_with(backend, &flags);
        let members: Vec<Member> = (1..=n)
            .map(|i| Member::start(&format!("member{i}")))
            .collect();
        let env = Env {
            cp,
            members,
            barriers: Default::default(),
        };
        for m in &env.members {
            env.join(m);
        }
        for m in &env.members {
            env.wait_ready(&m.name, "True");
        }
        env
    }

    /// `karmada-rs join` for a member.
    pub fn join(&self, m: &Member) {
        let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .arg("join")
            .arg(&m.name)
            .arg("--cluster-kubeconfig")
            .arg(&m.kubeconfig)
            .arg("--kubeconfig")
            .arg(&self.cp.kubeconfig));
        assert!(
            out.status.success(),
            "join {} failed: {}",
            m.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// `karmada-rs unjoin` for a member.
    pub fn unjoin(&self, m: &Member) {
        let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .arg("unjoin")
            .arg(&m.name)
            .arg("--cluster-kubeconfig")
            .arg(&m.kubeconfig)
            .arg("--kubeconfig")
            .arg(&self.cp.kubeconfig));
        assert!(
            out.status.success(),
            "unjoin {} failed: {}",
            m.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Waits until the cluster's Ready condition has `status`.
    pub fn wait_ready(&self, cluster: &str, status: &str) {
        wait_for(
            &format!("cluster {cluster} Ready={status}"),
            DEADLINE,
            || {
                let out = self.cp.kubectl(&[
                    "get",
                    "cluster",
                    cluster,
                    "-o",
                    "jsonpath={.status.conditions[?(@.type==\"Ready\")].status}",
                ]);
                (String::from_utf8_lossy(&out.stdout).trim() == status).then_some(())
            },
        );
    }

    /// The member with this name.
    pub fn member(&self, name: &str) -> &Member {
        self.members
            .iter()
            .find(|m| m.name == name)
            .expect("no such member")
    }

    /// Applies YAML to the control plane.
    pub fn apply(&self, yaml: &str) {
        self.cp.kubectl_stdin_ok(&["apply", "-f", "-"], yaml);
    }

    /// Applies a file from `samples/`.
    pub fn apply_sample(&self, name: &str) {
        let path = format!("{}/samples/{name}", env!("CARGO_MANIFEST_DIR"));
        self.cp.kubectl_ok(&["apply", "-f", &path]);
    }

    /// Waits until `f` holds, polling.
    pub fn wait<T>(&self, what: &str, f: impl FnMut() -> Option<T>) -> T {
        wait_for(what, DEADLINE, f)
    }

    /// Waits until an object exists in a member and returns it.
    pub fn wait_member_object(&self, member: &str, args: &[&str]) -> serde_json::Value {
        let m = self.member(member);
        self.wait(&format!("{} in {member}", args.join(" ")), || {
            m.get_json(args)
        })
    }

    /// A barrier for negative checks: propagates a fresh ConfigMap to `member` and waits until
    /// it arrives. Controllers handle events in order, so by then every change made before the
    /// call has been processed for that member — what has not happened by now will not.
    pub fn barrier(&self, member: &str) {
        let n = self
            .barriers
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let name = format!("barrier-{n}");
        self.apply(&format!(
            "apiVersion: v1
kind: ConfigMap
metadata: {{name: {name}, namespace: default}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: default}}
spec:
  resourceSelectors: [{{apiVersion: v1, kind: ConfigMap, name: {name}}}]
  placement: {{clusterAffinity: {{clusterNames: [{member}]}}}}
"
        ));
        self.wait_member_object(member, &["configmap", &name, "-n", "default"]);
    }

    /// Waits until an object is absent from a member.
    pub fn wait_member_absent(&self, member: &str, args: &[&str]) {
        let m = self.member(member);
        self.wait(&format!("{} gone from {member}", args.join(" ")), || {
            m.get_json(args).is_none().then_some(())
        });
    }
}
