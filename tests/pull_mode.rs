//! Pull mode end to end: `karmada-rs agent` next to a simulated member whose address the
//! control plane is never given, with the agent's identity limited by RBAC to its cluster.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;
use support::{DEADLINE, MemberServer, Server, spawn_serving, wait_for};

/// A running `karmada-rs agent`.
struct Agent {
    child: Option<Child>,
    args: Vec<String>,
}

impl Agent {
    fn start(karmada_kubeconfig: &Path, cluster: &str, member_kubeconfig: &Path) -> Agent {
        let args = vec![
            "agent".to_owned(),
            "--karmada-kubeconfig".to_owned(),
            karmada_kubeconfig.display().to_string(),
            "--cluster-name".to_owned(),
            cluster.to_owned(),
            "--kubeconfig".to_owned(),
            member_kubeconfig.display().to_string(),
            "--cluster-status-update-frequency=1s".to_owned(),
            "--cluster-success-threshold=1s".to_owned(),
            "--cluster-failure-threshold=1s".to_owned(),
        ];
        let mut a = Agent { child: None, args };
        a.spawn();
        a
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
        cmd.args(&self.args)
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let (child, _) = spawn_serving(&mut cmd, "karmada-rs agent serving cluster ");
        self.child = Some(child);
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop();
    }
}

const DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.25}]
";

const POLICY: &str = "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement:
    clusterAffinity: {clusterNames: [pull1]}
";

fn member_json(m: &MemberServer, args: &[&str]) -> Option<Value> {
    let mut full = vec!["get"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["-o", "json"]);
    let out = m.kubectl(&full);
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

fn ready(cp: &Server, cluster: &str) -> Option<String> {
    let out = cp.kubectl(&["get", "cluster", cluster, "-o", "json"]);
    let c: Value = serde_json::from_slice(&out.stdout).ok()?;
    c["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
        .and_then(|c| c["status"].as_str())
        .map(str::to_owned)
}

/// The agent's identity, as `register` obtains it (a client certificate for
/// `system:karmada:agent:<cluster>` in `system:karmada:agents`), with its RBAC.
fn agent_identity(cp: &Server, cluster: &str) -> PathBuf {
    cp.block_on(async {
        let admin = cp.client().await;
        controllers::agent::rbac::ensure(&admin, cluster)
            .await
            .expect("agent RBAC");
    });
    cp.cert_kubeconfig(
        &controllers::agent::rbac::agent_user(cluster),
        Some(controllers::agent::rbac::AGENTS_GROUP),
    )
}

#[test]
fn agent_serves_its_pull_cluster_without_the_control_plane_knowing_its_address() {
    let cp = Server::start();
    let member = MemberServer::start("pull1");
    let identity = agent_identity(&cp, "pull1");
    let mut agent = Agent::start(&identity, "pull1", &member.kubeconfig);

    // The agent registers its cluster in Pull mode with no endpoint, and reports it Ready
    // with the member's version and nodes.
    wait_for("pull1 Ready", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("True")).then_some(())
    });
    let c = cp.get_json(&["cluster", "pull1"]);
    assert_eq!(c["spec"]["syncMode"], "Pull", "{c}");
    assert!(c["spec"].get("apiEndpoint").is_none(), "{c}");
    assert!(
        c["spec"]["id"].as_str().is_some_and(|s| !s.is_empty()),
        "{c}"
    );
    assert!(c["status"]["kubernetesVersion"].is_string(), "{c}");
    assert!(
        c["status"]["nodeSummary"]["totalNum"].as_i64() > Some(0),
        "{c}"
    );
    let table = cp.kubectl_ok(&["get", "clusters"]);
    assert!(table.contains("pull1") && table.contains("Pull"), "{table}");

    // The Lease is held by the cluster, 40 s long, owned by the Cluster.
    let lease = cp.get_json(&["lease", "pull1", "-n", "karmada-cluster"]);
    assert_eq!(lease["spec"]["holderIdentity"], "pull1", "{lease}");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 40, "{lease}");
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Cluster");
    assert_eq!(
        lease["metadata"]["ownerReferences"][0]["uid"],
        c["metadata"]["uid"]
    );

    // Works are applied through the agent and their status comes back.
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &format!("{DEPLOY}---\n{POLICY}"));
    let d = wait_for("web in the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
    });
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["labels"]["karmada.io/managed"], "true");
    wait_for("template status from the member", DEADLINE, || {
        let t = cp.get_json(&["deploy", "web"]);
        (t["status"]["readyReplicas"] == 2).then_some(())
    });
    let work = cp.kubectl_ok(&["get", "work", "-n", "karmada-es-pull1"]);
    assert!(work.contains("True"), "{work}");

    // Drift in the member is put back by the agent.
    member_kubectl_ok(
        &member,
        &["scale", "deploy", "web", "-n", "default", "--replicas=5"],
    );
    wait_for("drift corrected", DEADLINE, || {
        let d = member_json(&member, &["deploy", "web", "-n", "default"])?;
        (d["spec"]["replicas"] == 2).then_some(())
    });

    // Agent stopped: nothing applies; changes made meanwhile arrive after its restart.
    agent.stop();
    let renewed =
        cp.get_json(&["lease", "pull1", "-n", "karmada-cluster"])["spec"]["renewTime"].clone();
    cp.kubectl_ok(&["scale", "deploy", "web", "--replicas=3"]);
    agent.spawn();
    wait_for("replicas after restart", DEADLINE, || {
        let d = member_json(&member, &["deploy", "web", "-n", "default"])?;
        (d["spec"]["replicas"] == 3).then_some(())
    });
    wait_for("lease renewed after restart", DEADLINE, || {
        let l = cp.get_json(&["lease", "pull1", "-n", "karmada-cluster"]);
        (l["spec"]["renewTime"] != renewed).then_some(())
    });
    assert_eq!(ready(&cp, "pull1").as_deref(), Some("True"));

    // Template deletion removes the member object through the agent.
    cp.kubectl_ok(&["delete", "deploy", "web"]);
    wait_for("web gone from the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
            .is_none()
            .then_some(())
    });
}

fn member_kubectl_ok(m: &MemberServer, args: &[&str]) -> String {
    support::stdout_of_success(args, m.kubectl(args))
}

#[test]
fn the_agent_identity_is_limited_to_its_own_cluster() {
    let cp = Server::start();
    // Another cluster and its execution space exist.
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: other}\nspec: {syncMode: Pull}\n",
    );
    wait_for("other's execution space", DEADLINE, || {
        cp.kubectl(&["get", "ns", "karmada-es-other"])
            .status
            .success()
            .then_some(())
    });
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: mine}\nspec: {syncMode: Pull}\n",
    );
    let me = agent_identity(&cp, "mine");
    let ok = |args: &[&str]| cp.kubectl_as_ok(&me, args);
    let forbidden = |args: &[&str]| {
        let out = cp.kubectl_as(&me, args);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success(), "{args:?} should be refused");
        assert!(
            err.contains("Forbidden") || err.contains("forbidden"),
            "{args:?}: {err}"
        );
    };
    ok(&["get", "cluster", "mine"]);
    ok(&["get", "works", "-n", "karmada-es-mine"]);
    ok(&["get", "cluster", "--field-selector", "metadata.name=mine"]);
    forbidden(&["get", "cluster", "other"]);
    forbidden(&["get", "clusters"]);
    forbidden(&["get", "works", "-n", "karmada-es-other"]);
    forbidden(&["label", "cluster", "other", "x=y"]);
    forbidden(&["delete", "cluster", "other"]);
    forbidden(&["get", "secrets", "-n", "karmada-cluster"]);
    forbidden(&["get", "lease", "other", "-n", "karmada-cluster"]);
    forbidden(&["get", "rb", "-A"]);
}
