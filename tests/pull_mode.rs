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
        Agent::start_with(karmada_kubeconfig, cluster, member_kubeconfig, &[])
    }

    fn start_with(
        karmada_kubeconfig: &Path,
        cluster: &str,
        member_kubeconfig: &Path,
        extra: &[&str],
    ) -> Agent {
        let mut args = vec![
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
        args.extend(extra.iter().map(|s| s.to_string()));
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

/// Runs a `karmada-rs` command to completion.
fn karmada_rs(args: &[&str]) -> std::process::Output {
    support::run(
        Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(args)
            .env("RUST_BACKTRACE", "0")
            .env("KARMADA_RS_LOG", "error"),
    )
}

/// `token create` on the control plane: the printed register command's address, token and
/// CA hash.
fn create_token(cp: &Server, extra: &[&str]) -> (String, String, String) {
    let kc = cp.kubeconfig.display().to_string();
    let mut args = vec!["token", "create", "--kubeconfig", kc.as_str()];
    args.extend_from_slice(extra);
    let out = karmada_rs(&args);
    let line = support::stdout_of_success(&args, out);
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(&words[..2], ["karmada-rs", "register"], "{line}");
    let after = |flag: &str| {
        let i = words.iter().position(|w| *w == flag).expect(flag);
        words[i + 1].to_owned()
    };
    (
        words[2].to_owned(),
        after("--token"),
        after("--discovery-token-ca-cert-hash"),
    )
}

fn register(
    addr: &str,
    token: &str,
    hash: &str,
    cluster: &str,
    member: &MemberServer,
    out: &Path,
) -> std::process::Output {
    register_with(addr, token, hash, cluster, member, Some(out), &[])
}

/// `register` into `member`, writing the agent's kubeconfig to `out` too when given.
fn register_with(
    addr: &str,
    token: &str,
    hash: &str,
    cluster: &str,
    member: &MemberServer,
    out: Option<&Path>,
    extra: &[&str],
) -> std::process::Output {
    let member_kc = member.kubeconfig.display().to_string();
    let out_kc = out.map(|o| o.display().to_string());
    let mut args = vec![
        "register",
        addr,
        "--token",
        token,
        "--discovery-token-ca-cert-hash",
        hash,
        "--cluster-name",
        cluster,
        "--kubeconfig",
        &member_kc,
        "--timeout",
        "30s",
    ];
    if let Some(o) = &out_kc {
        args.extend(["--agent-kubeconfig", o.as_str()]);
    }
    args.extend_from_slice(extra);
    karmada_rs(&args)
}

fn refused(out: &std::process::Output, what: &str, expect: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{what} should be refused");
    assert!(err.contains(expect), "{what}: {err}");
}

#[test]
fn registration_by_token_with_forged_expired_deleted_and_reused_tokens_refused() {
    let cp = Server::start();
    let member = MemberServer::start("pull1");
    let dir = tempfile::tempdir().expect("temp dir");
    let agent_kc = dir.path().join("agent.kubeconfig");

    let (addr, token, hash) = create_token(&cp, &[]);
    let list = karmada_rs(&[
        "token",
        "list",
        "--kubeconfig",
        &cp.kubeconfig.display().to_string(),
    ]);
    let list = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        list.contains(&token) && list.contains("authentication,signing"),
        "{list}"
    );
    // Stored as Kubernetes stores bootstrap tokens.
    let id = token.split('.').next().expect("id");
    let secret = cp.get_json(&[
        "secret",
        &format!("bootstrap-token-{id}"),
        "-n",
        "kube-system",
    ]);
    assert_eq!(secret["type"], "bootstrap.kubernetes.io/token");
    for key in [
        "token-id",
        "token-secret",
        "expiration",
        "usage-bootstrap-authentication",
        "usage-bootstrap-signing",
        "auth-extra-groups",
    ] {
        assert!(secret["data"][key].is_string(), "{key}: {secret}");
    }

    // A forged secret part fails discovery's signature check; a wrong pin fails the CA check.
    let forged = format!("{id}.{}", "0".repeat(16));
    refused(
        &register(&addr, &forged, &hash, "pull1", &member, &agent_kc),
        "forged token",
        "failed to verify JWS signature",
    );
    let wrong_hash = format!("sha256:{}", "0".repeat(64));
    refused(
        &register(&addr, &token, &wrong_hash, "pull1", &member, &agent_kc),
        "wrong CA hash",
        "none of the public keys",
    );
    // The forged token does not authenticate either.
    let as_forged = cp.token_kubeconfig("forged", &forged);
    let out = cp.kubectl_as(&as_forged, &["get", "csr"]);
    refused(&out, "forged token on the API", "must be logged in");

    // Registration: the CSR is approved and signed automatically; the agent is installed
    // into the member and registers the Cluster when it runs.
    let out = register(&addr, &token, &hash, "pull1", &member, &agent_kc);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csrs = cp.kubectl_ok(&["get", "csr"]);
    assert!(
        csrs.contains("Approved,Issued") && csrs.contains(&format!("system:bootstrap:{id}")),
        "{csrs}"
    );
    // The same token cannot register a second agent.
    let other = MemberServer::start("pull2");
    refused(
        &register(
            &addr,
            &token,
            &hash,
            "pull2",
            &other,
            &dir.path().join("other.kubeconfig"),
        ),
        "reused token",
        "was already used to register an agent",
    );

    // A deleted token is refused.
    let (_, deleted, _) = create_token(&cp, &[]);
    let deleted_id = deleted.split('.').next().expect("id").to_owned();
    let out = karmada_rs(&[
        "token",
        "delete",
        &deleted_id,
        "--kubeconfig",
        &cp.kubeconfig.display().to_string(),
    ]);
    assert!(out.status.success());
    wait_for("deleted token out of cluster-info", DEADLINE, || {
        let cm = cp.get_json(&["cm", "cluster-info", "-n", "kube-public"]);
        cm["data"][format!("jws-kubeconfig-{deleted_id}")]
            .is_null()
            .then_some(())
    });
    refused(
        &register(
            &addr,
            &deleted,
            &hash,
            "pull2",
            &other,
            &dir.path().join("other.kubeconfig"),
        ),
        "deleted token",
        "is invalid for this cluster or it has expired",
    );
    let as_deleted = cp.token_kubeconfig("deleted", &deleted);
    refused(
        &cp.kubectl_as(&as_deleted, &["get", "csr"]),
        "deleted token on the API",
        "must be logged in",
    );

    // An expired token is refused (and its Secret cleaned up).
    let (_, expiring, _) = create_token(&cp, &["--ttl", "1s"]);
    let expiring_id = expiring.split('.').next().expect("id").to_owned();
    wait_for("expired token cleaned up", DEADLINE, || {
        let out = cp.kubectl(&[
            "get",
            "secret",
            &format!("bootstrap-token-{expiring_id}"),
            "-n",
            "kube-system",
        ]);
        (!out.status.success()).then_some(())
    });
    refused(
        &register(
            &addr,
            &expiring,
            &hash,
            "pull2",
            &other,
            &dir.path().join("other.kubeconfig"),
        ),
        "expired token",
        "expired",
    );

    // The agent runs with the issued certificate: it registers the Cluster, which becomes
    // Ready, and Works apply.
    let _agent = Agent::start(&agent_kc, "pull1", &member.kubeconfig);
    wait_for("pull1 Ready", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("True")).then_some(())
    });
    let c = cp.get_json(&["cluster", "pull1"]);
    assert_eq!(c["spec"]["syncMode"], "Pull");
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &format!("{DEPLOY}---\n{POLICY}"));
    wait_for("web in the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
    });
    // The agent's certificate is limited to its cluster.
    refused(
        &cp.kubectl_as(&agent_kc, &["get", "works", "-n", "karmada-es-pull2"]),
        "other space",
        "Forbidden",
    );

    // unregister removes the Cluster (its agent removes the member objects) and the RBAC.
    let out = karmada_rs(&[
        "unregister",
        "pull1",
        "--kubeconfig",
        &cp.kubeconfig.display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!cp.kubectl(&["get", "cluster", "pull1"]).status.success());
    assert!(
        !cp.kubectl(&["get", "clusterrole", "system:karmada:pull1:agent"])
            .status
            .success()
    );
    wait_for("web gone from the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
            .is_none()
            .then_some(())
    });
}

fn client_certificate(kubeconfig: &Path) -> String {
    let text = std::fs::read_to_string(kubeconfig).expect("read kubeconfig");
    let v: serde_yaml::Value = serde_yaml::from_str(&text).expect("kubeconfig yaml");
    v["users"][0]["user"]["client-certificate-data"]
        .as_str()
        .expect("client-certificate-data")
        .to_owned()
}

#[test]
fn the_agent_renews_its_certificate_before_it_expires() {
    let cp = Server::start();
    let member = MemberServer::start("pull1");
    let dir = tempfile::tempdir().expect("temp dir");
    let agent_kc = dir.path().join("agent.kubeconfig");
    let (addr, token, hash) = create_token(&cp, &[]);
    // A 10-minute certificate (15 with the signer's 5-minute backdating): two thirds of its
    // lifetime are left, under the 0.7 threshold, so the first check renews it.
    let out = register_with(
        &addr,
        &token,
        &hash,
        "pull1",
        &member,
        Some(&agent_kc),
        &["--cert-expiration", "10m"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = client_certificate(&agent_kc);
    let _agent = Agent::start_with(
        &agent_kc,
        "pull1",
        &member.kubeconfig,
        &[
            "--controllers=*,certRotation",
            "--cert-rotation-checking-interval=2s",
            "--cert-rotation-remaining-time-threshold=0.7",
        ],
    );
    // The renewal is the agent's own request, approved as such, and lands in its kubeconfig.
    wait_for("a renewal approved and issued", DEADLINE, || {
        let csrs = cp.kubectl_ok(&["get", "csr"]);
        csrs.lines()
            .any(|l| l.contains("system:karmada:agent:pull1") && l.contains("Approved,Issued"))
            .then_some(())
    });
    wait_for(
        "the renewed certificate in the kubeconfig",
        DEADLINE,
        || (client_certificate(&agent_kc) != first).then_some(()),
    );
    // The agent carries on with the new certificate.
    wait_for("pull1 Ready", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("True")).then_some(())
    });
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &format!("{DEPLOY}---\n{POLICY}"));
    wait_for("web in the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
    });
}

/// The control plane's cluster health monitor marks a Pull cluster whose agent stopped
/// posting status and renewing its Lease Ready=Unknown; a restarted agent makes it Ready.
#[test]
fn a_stopped_agent_makes_its_cluster_unknown_and_a_restarted_one_ready() {
    // A short grace period keeps the test quick; the defaults (40 s) are Karmada's.
    let cp = Server::start_with(
        support::Backend::Embedded,
        &[
            "--cluster-monitor-period",
            "1s",
            "--cluster-monitor-grace-period",
            "8s",
        ],
    );
    let member = MemberServer::start("pull1");
    let identity = agent_identity(&cp, "pull1");
    let mut agent = Agent::start(&identity, "pull1", &member.kubeconfig);
    wait_for("pull1 Ready", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("True")).then_some(())
    });
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &format!("{DEPLOY}---\n{POLICY}"));
    wait_for("web in the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
    });
    agent.stop();
    wait_for("pull1 Unknown", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("Unknown")).then_some(())
    });
    agent.spawn();
    wait_for("pull1 Ready again", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("True")).then_some(())
    });
    let d = member_json(&member, &["deploy", "web", "-n", "default"]).expect("web kept");
    assert_eq!(d["spec"]["replicas"], 2);
}

/// The cluster proxy path of a Pull cluster.
fn pull_proxy(cluster: &str, path: &str) -> String {
    format!("/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy{path}")
}

/// Lines of a long-running command's stdout, as they come.
fn stream_lines(mut cmd: Command) -> (Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// The cluster proxy reaches a Pull cluster, registered by token, through its agent's
/// reverse tunnel (the member's address recorded by the agent is never used): get, list, a
/// watch whose events arrive through the tunnel; a stopped agent makes the proxy answer 503,
/// a restarted one brings the tunnel back; another cluster's agent cannot open this tunnel.
#[test]
fn the_proxy_reaches_a_pull_cluster_through_the_agents_tunnel() {
    let cp = Server::start();
    let member = MemberServer::start("pull1");
    let dir = tempfile::tempdir().expect("temp dir");
    let agent_kc = dir.path().join("agent.kubeconfig");
    let (addr, token, hash) = create_token(&cp, &[]);
    let out = register(&addr, &token, &hash, "pull1", &member, &agent_kc);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The agent records the member's address, as register's Deployment tells it to; the
    // control plane still reaches the member only through the tunnel.
    let endpoint = format!("--cluster-api-endpoint={}", member.url);
    let mut agent = Agent::start_with(&agent_kc, "pull1", &member.kubeconfig, &[&endpoint]);
    let ns_path = pull_proxy("pull1", "/api/v1/namespaces/kube-system");
    // get: the member's kube-system namespace, whose UID is the cluster's ID.
    let got: Value = wait_for("the proxy through the tunnel", DEADLINE, || {
        let out = cp.kubectl(&["get", "--raw", &ns_path]);
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).expect("namespace JSON"))
    });
    let c = cp.get_json(&["cluster", "pull1"]);
    assert_eq!(c["spec"]["apiEndpoint"], member.url.as_str(), "{c}");
    assert_eq!(got["metadata"]["uid"], c["spec"]["id"], "{got}");
    // A write with a body lands in the member.
    let out = support::run_stdin(
        cp.kubectl_cmd().args([
            "create",
            "--raw",
            &pull_proxy("pull1", "/api/v1/namespaces/default/configmaps"),
            "-f",
            "-",
        ]),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"data":{"k":"v"}}"#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c1 = member_json(&member, &["configmap", "c1", "-n", "default"]).expect("c1 in the member");
    assert_eq!(c1["data"]["k"], "v");
    let list: Value = serde_json::from_str(&cp.kubectl_ok(&[
        "get",
        "--raw",
        &pull_proxy("pull1", "/api/v1/namespaces/default/configmaps"),
    ]))
    .expect("list JSON");
    assert_eq!(list["kind"], "ConfigMapList");
    assert!(
        list["items"]
            .as_array()
            .is_some_and(|i| i.iter().any(|c| c["metadata"]["name"] == "c1")),
        "{list}"
    );
    // An unknown object is the member's 404, not the control plane's.
    let err = cp.kubectl_err(&[
        "get",
        "--raw",
        &pull_proxy("pull1", "/api/v1/namespaces/default/configmaps/nope"),
    ]);
    assert!(err.contains("configmaps \"nope\" not found"), "{err}");
    // `clusters/*/proxy` takes the Pull cluster in through the tunnel: its objects are in the
    // merged list, and a named one is found there.
    let all: Value = serde_json::from_str(&cp.kubectl_ok(&[
        "get",
        "--raw",
        &pull_proxy("*", "/api/v1/namespaces/default/configmaps"),
    ]))
    .expect("all-clusters list JSON");
    assert!(
        all["items"]
            .as_array()
            .is_some_and(|i| i.iter().any(|c| c["metadata"]["name"] == "c1")),
        "{all}"
    );
    let one: Value = serde_json::from_str(&cp.kubectl_ok(&[
        "get",
        "--raw",
        &pull_proxy("*", "/api/v1/namespaces/default/configmaps/c1"),
    ]))
    .expect("named object JSON");
    assert_eq!(one["data"]["k"], "v", "{one}");

    // A watch streams through the tunnel: an event made in the member arrives.
    let watch_path = pull_proxy(
        "pull1",
        "/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%3Dw1",
    );
    let mut cmd = cp.kubectl_cmd();
    cmd.args(["get", "--raw", &watch_path]);
    let (mut watch, lines) = stream_lines(cmd);
    member_kubectl_ok(&member, &["create", "configmap", "w1", "-n", "default"]);
    let event = lines
        .recv_timeout(DEADLINE)
        .expect("a watch event through the tunnel");
    let event: Value = serde_json::from_str(&event).expect("event JSON");
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(event["object"]["metadata"]["name"], "w1", "{event}");
    member_kubectl_ok(
        &member,
        &["label", "configmap", "w1", "-n", "default", "x=y"],
    );
    let event: Value = serde_json::from_str(
        &lines
            .recv_timeout(DEADLINE)
            .expect("a second watch event through the tunnel"),
    )
    .expect("event JSON");
    assert_eq!(event["type"], "MODIFIED", "{event}");
    let _ = watch.kill();
    let _ = watch.wait();

    // Another cluster's agent cannot open pull1's tunnel; pull1's own identity may (it is
    // told how: an Upgrade request).
    let other = agent_identity(&cp, "other");
    let tunnel = "/apis/cluster.karmada.io/v1alpha1/clusters/pull1/tunnel";
    let out = support::run_stdin(
        cp.kubectl_as_cmd(&other)
            .args(["create", "--raw", tunnel, "-f", "-"]),
        "{}",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cannot create resource \"clusters/tunnel\""),
        "{err}"
    );
    let out = support::run_stdin(
        cp.kubectl_as_cmd(&agent_kc)
            .args(["create", "--raw", tunnel, "-f", "-"]),
        "{}",
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Upgrade: karmada-tunnel"), "{err}");

    // The agent stopped: 503 with the reason; restarted: the tunnel is back.
    agent.stop();
    wait_for("503 without the agent", DEADLINE, || {
        let out = cp.kubectl(&["get", "--raw", &ns_path]);
        let err = String::from_utf8_lossy(&out.stderr);
        (!out.status.success() && err.contains("the agent of cluster pull1 is not connected"))
            .then_some(())
    });
    agent.spawn();
    wait_for("the tunnel back", DEADLINE, || {
        cp.kubectl(&["get", "--raw", &ns_path])
            .status
            .success()
            .then_some(())
    });
}

/// A CertificateSigningRequest for `user` with `signer`, as YAML.
fn csr_yaml(name: &str, user: &str, signer: &str) -> String {
    use base64::Engine;
    let req = certs::client_request(user, "people").expect("CSR");
    let request = base64::engine::general_purpose::STANDARD.encode(req.cert_pem);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}}}\nspec: {{request: {request}, signerName: {signer}, usages: [client auth]}}\n"
    )
}

fn csr_condition(cp: &Server, name: &str) -> Option<String> {
    let csr = cp.get_json(&["csr", name]);
    csr["status"]["conditions"][0]["type"]
        .as_str()
        .map(str::to_owned)
}

/// `kubectl certificate approve/deny` update the `approval` subresource; that needs the
/// `approve` verb on `signers` named by the request's signerName or its `<domain>/*`
/// (kube's CertificateApproval admission).
#[test]
fn approving_a_csr_needs_approve_on_its_signer() {
    let cp = Server::start();
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!(
            "{}---\n{}",
            csr_yaml("alice", "alice", "kubernetes.io/kube-apiserver-client"),
            csr_yaml("bob", "bob", "example.com/custom")
        ),
    );
    let approver = cp.cert_kubeconfig("approver", None);
    let grant = |name: &str, signers: &str| {
        cp.kubectl_stdin_ok(
            &["apply", "-f", "-"],
            &format!(
                "apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: {name}}}
rules:
- {{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests], verbs: [get, list]}}
- {{apiGroups: [certificates.k8s.io], resources: [certificatesigningrequests/approval], verbs: [update]}}
- {{apiGroups: [certificates.k8s.io], resources: [signers], verbs: [approve], resourceNames: [{signers}]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: {name}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: {name}}}
subjects: [{{apiGroup: rbac.authorization.k8s.io, kind: User, name: approver}}]
"
            ),
        );
    };
    // Allowed to update approval, but for another signer only.
    grant("approve-other", "\"other.example/signer\"");
    let out = cp.kubectl_as(&approver, &["certificate", "approve", "alice"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "approved without the approve verb");
    assert!(
        err.contains("certificatesigningrequests.certificates.k8s.io \"alice\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\""),
        "{err}"
    );
    assert_eq!(csr_condition(&cp, "alice"), None);

    // By name.
    grant("approve-client", "\"kubernetes.io/kube-apiserver-client\"");
    cp.kubectl_as_ok(&approver, &["certificate", "approve", "alice"]);
    assert_eq!(csr_condition(&cp, "alice").as_deref(), Some("Approved"));
    let out = cp.kubectl_as(&approver, &["certificate", "deny", "bob"]);
    assert!(!out.status.success(), "denied without the approve verb");
    assert_eq!(csr_condition(&cp, "bob"), None);

    // By the signer's domain wildcard.
    grant("approve-example", "\"example.com/*\"");
    cp.kubectl_as_ok(&approver, &["certificate", "deny", "bob"]);
    assert_eq!(csr_condition(&cp, "bob").as_deref(), Some("Denied"));
}

/// What the exec member saw of one upgrade request: method, path and query, headers.
type SeenUpgrades = std::sync::Arc<std::sync::Mutex<Vec<(String, String, http::HeaderMap)>>>;

/// The member's bearer token in the agent's member kubeconfig.
const MEMBER_TOKEN: &str = "member-token-0123456789";

/// A member API server standing in for exec, over HTTPS with its own CA, serving requests
/// that carry the agent's member token only: the exec path of pod `web` switches protocols
/// (naming SPDY/3.1 in its own spelling) and echoes bytes; that of pod `secret` is refused
/// with a 403 Status; that of pod `plain` answers 200 without switching; that of pod `gone`
/// drops the connection unanswered. Everything else (the agent's other controllers) is 404.
/// Runs on `cp`'s runtime; returns its address and CA.
fn exec_member(cp: &Server, seen: SeenUpgrades) -> (std::net::SocketAddr, String) {
    let ca = certs::Ca::generate().expect("ca");
    let cert = ca
        .issue_serving("exec-member", &["127.0.0.1".to_owned()])
        .expect("serving cert");
    let acceptor = support::https_acceptor(&cert);
    let listener = cp
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    cp.block_on(async move {
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let (acceptor, seen) = (acceptor.clone(), seen.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let seen = seen.clone();
                        async move { exec_answer(&seen, req) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .with_upgrades()
                        .await;
                });
            }
        });
    });
    (addr, ca.cert_pem().to_owned())
}

/// The exec member's answer to one request (see [`exec_member`]).
fn exec_answer(
    seen: &SeenUpgrades,
    mut req: http::Request<hyper::body::Incoming>,
) -> Result<http::Response<String>, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let status = |code: u16, reason: &str, message: &str| {
        let body = serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code,
        });
        http::Response::builder()
            .status(code)
            .header("content-type", "application/json")
            .body(body.to_string())
            .expect("answer")
    };
    let bearer = format!("Bearer {MEMBER_TOKEN}");
    if req.headers().get("authorization").map(|v| v.as_bytes()) != Some(bearer.as_bytes()) {
        return Ok(status(401, "Unauthorized", "Unauthorized"));
    }
    let path = req.uri().path().to_owned();
    let pod = path
        .strip_prefix("/api/v1/namespaces/default/pods/")
        .and_then(|p| p.strip_suffix("/exec"));
    let Some(pod) = pod else {
        return Ok(status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ));
    };
    seen.lock().expect("seen").push((
        req.method().to_string(),
        req.uri()
            .path_and_query()
            .map(|p| p.to_string())
            .unwrap_or_default(),
        req.headers().clone(),
    ));
    Ok(match pod {
        "web" => {
            let on = hyper::upgrade::on(&mut req);
            tokio::spawn(async move {
                let Ok(up) = on.await else { return };
                let mut io = hyper_util::rt::TokioIo::new(up);
                let mut buf = [0u8; 256];
                while let Ok(n) = io.read(&mut buf).await {
                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            let answer = http::Response::builder()
                .status(101)
                .header("connection", "Upgrade");
            let answer = if upgrade_is(req.headers(), "websocket") {
                // RFC 6455's example key and its accept value.
                let key = req.headers().get("sec-websocket-key");
                let accept = if key.is_some_and(|k| k == "dGhlIHNhbXBsZSBub25jZQ==") {
                    "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
                } else {
                    "wrong key"
                };
                answer
                    .header("upgrade", "websocket")
                    .header("sec-websocket-accept", accept)
                    .header("sec-websocket-protocol", "v5.channel.k8s.io")
            } else {
                answer
                    .header("upgrade", "SPDY/3.1")
                    .header("x-stream-protocol-version", "v4.channel.k8s.io")
            };
            answer.body(String::new()).expect("answer")
        }
        "gone" => return Err("dropped".to_owned()),
        "secret" => status(
            403,
            "Forbidden",
            "pods \"secret\" is forbidden: User \"alice\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\"",
        ),
        _ => http::Response::builder()
            .header("content-type", "text/plain")
            .body("no upgrade here\n".to_owned())
            .expect("answer"),
    })
}

/// True when `headers` ask for (or name) the upgrade `protocol`.
fn upgrade_is(headers: &http::HeaderMap, protocol: &str) -> bool {
    headers
        .get("upgrade")
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(protocol.as_bytes()))
}

/// An exec upgrade request through the cluster proxy of `cluster` as `alice` (in
/// `system:masters`), as kubectl makes it: over SPDY a POST, over WebSocket a GET with a key
/// and subprotocol. Its answer, with the caller's pending upgrade.
fn upgrade_request(
    cp: &Server,
    client: &apiserver::proxy::transport::HttpClient,
    cluster: &str,
    pod: &str,
    protocol: &str,
) -> http::Response<hyper::body::Incoming> {
    use apiserver::proxy::transport::Body;
    let url = format!(
        "{}{}",
        cp.url,
        pull_proxy(
            cluster,
            &format!(
                "/api/v1/namespaces/default/pods/{pod}/exec?command=sh&stdin=true&stdout=true"
            )
        )
    );
    let req = if protocol == "websocket" {
        http::Request::get(url)
            .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
            .header("sec-websocket-version", "13")
            .header("sec-websocket-protocol", "v5.channel.k8s.io")
    } else {
        http::Request::post(url).header("x-stream-protocol-version", "v4.channel.k8s.io")
    };
    let req = req
        .header("connection", "Upgrade")
        .header("upgrade", protocol)
        .body(Body::empty())
        .expect("request");
    cp.block_on(async {
        tokio::time::timeout(DEADLINE, client.request(req))
            .await
            .expect("answer in time")
            .expect("answer")
    })
}

/// Bytes written to an upgraded connection come back.
fn echoes(cp: &Server, mut resp: http::Response<hyper::body::Incoming>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    cp.block_on(async {
        let up = tokio::time::timeout(DEADLINE, hyper::upgrade::on(&mut resp))
            .await
            .expect("upgraded in time")
            .expect("upgraded");
        let mut io = hyper_util::rt::TokioIo::new(up);
        for msg in [&b"ping"[..], b"exec stdin\n", &[0u8, 1, 2, 255][..]] {
            io.write_all(msg).await.expect("write");
            let mut buf = vec![0u8; msg.len()];
            tokio::time::timeout(DEADLINE, io.read_exact(&mut buf))
                .await
                .expect("echo in time")
                .expect("echo");
            assert_eq!(buf, msg);
        }
    });
}

/// Upgrade requests (exec, attach, port-forward) reach a Pull cluster through its agent's
/// tunnel as in push mode: the caller gets the member's `101` and headers and bytes flow
/// both ways; the member saw the caller's method, path, query and headers with the agent's
/// member token and the caller's impersonation. A member refusing the upgrade (403, or a
/// 200 that does not switch) has its answer reach the caller unchanged.
#[test]
fn upgrades_reach_a_pull_cluster_through_the_agents_tunnel() {
    use apiserver::proxy::transport::{self, Dialer, TlsSettings};
    use http_body_util::BodyExt;
    let cp = Server::start();
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: pull1}\nspec: {syncMode: Pull}\n",
    );
    let seen = SeenUpgrades::default();
    let (addr, member_ca) = exec_member(&cp, seen.clone());
    let dir = tempfile::tempdir().expect("temp dir");
    let member_kc = dir.path().join("member.kubeconfig");
    certs::write_kubeconfig(
        &member_kc,
        &certs::Kubeconfig {
            name: "pull1".into(),
            server: format!("https://{addr}"),
            ca_pem: member_ca,
            credentials: certs::KubeconfigCredentials::Token(MEMBER_TOKEN.into()),
            namespace: None,
        },
    )
    .expect("member kubeconfig");
    let alice = cp
        .ca()
        .issue_client("alice", &["system:masters"])
        .expect("alice's certificate");
    let tls = transport::client_config(&TlsSettings {
        ca_bundle: cp.ca_pem().into_bytes(),
        insecure: false,
        client_cert: Some((alice.cert_pem, alice.key_pem)),
        tls13_only: false,
    })
    .expect("tls");
    let client = transport::http_client(Dialer::new(tls, None, netproxy::ProxySource::Direct));

    // No agent yet: the proxy says so, as for any other request.
    let resp = upgrade_request(&cp, &client, "pull1", "web", "spdy/3.1");
    assert_eq!(resp.status(), http::StatusCode::SERVICE_UNAVAILABLE);
    let body = cp
        .block_on(resp.into_body().collect())
        .expect("body")
        .to_bytes();
    let status: Value = serde_json::from_slice(&body).expect("Status");
    assert_eq!(
        status["message"],
        "the agent of cluster pull1 is not connected: a Pull cluster is reached through its agent's tunnel, which is down",
        "{status}"
    );

    let _agent = Agent::start(&agent_identity(&cp, "pull1"), "pull1", &member_kc);
    let resp = wait_for("an upgrade through the tunnel", DEADLINE, || {
        let resp = upgrade_request(&cp, &client, "pull1", "web", "spdy/3.1");
        (resp.status() == http::StatusCode::SWITCHING_PROTOCOLS).then_some(resp)
    });
    let h = resp.headers();
    assert_eq!(h["upgrade"], "SPDY/3.1", "{h:?}");
    assert_eq!(h["connection"], "Upgrade", "{h:?}");
    assert_eq!(h["x-stream-protocol-version"], "v4.channel.k8s.io", "{h:?}");
    assert!(
        h.keys()
            .all(|k| !k.as_str().starts_with("x-karmada-tunnel")),
        "{h:?}"
    );
    echoes(&cp, resp);
    {
        let seen = seen.lock().expect("seen");
        let (method, pq, headers) = seen.last().expect("the member saw the upgrade");
        assert_eq!(method, "POST");
        assert_eq!(
            pq,
            "/api/v1/namespaces/default/pods/web/exec?command=sh&stdin=true&stdout=true"
        );
        assert_eq!(headers["upgrade"], "spdy/3.1");
        assert_eq!(headers["x-stream-protocol-version"], "v4.channel.k8s.io");
        assert_eq!(headers["impersonate-user"], "alice");
        let groups: Vec<_> = headers.get_all("impersonate-group").iter().collect();
        assert_eq!(groups, vec!["system:masters"]);
        assert!(
            headers
                .keys()
                .all(|k| !k.as_str().starts_with("x-karmada-tunnel")),
            "{headers:?}"
        );
    }

    // Over WebSocket (kubectl's default since 1.30): a GET, the key and subprotocol through,
    // the member's accept back.
    let resp = upgrade_request(&cp, &client, "pull1", "web", "websocket");
    assert_eq!(resp.status(), http::StatusCode::SWITCHING_PROTOCOLS);
    let h = resp.headers();
    assert_eq!(h["upgrade"], "websocket", "{h:?}");
    assert_eq!(
        h["sec-websocket-accept"], "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=",
        "{h:?}"
    );
    assert_eq!(h["sec-websocket-protocol"], "v5.channel.k8s.io", "{h:?}");
    echoes(&cp, resp);
    {
        let seen = seen.lock().expect("seen");
        let (method, _, headers) = seen.last().expect("the member saw the upgrade");
        assert_eq!(method, "GET");
        assert_eq!(headers["sec-websocket-version"], "13");
        assert_eq!(headers["impersonate-user"], "alice");
    }

    // Refused by the member: its Status, as it sent it.
    let resp = upgrade_request(&cp, &client, "pull1", "secret", "spdy/3.1");
    assert_eq!(resp.status(), http::StatusCode::FORBIDDEN);
    assert_eq!(resp.headers()["content-type"], "application/json");
    let body = cp
        .block_on(resp.into_body().collect())
        .expect("body")
        .to_bytes();
    let status: Value = serde_json::from_slice(&body).expect("Status");
    assert_eq!(status["reason"], "Forbidden", "{status}");
    assert_eq!(
        status["message"],
        "pods \"secret\" is forbidden: User \"alice\" cannot create resource \"pods/exec\" in API group \"\" in the namespace \"default\""
    );
    // Answered 200 without switching: the 200 and its body, not an upgrade.
    let resp = upgrade_request(&cp, &client, "pull1", "plain", "spdy/3.1");
    assert_eq!(resp.status(), http::StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "text/plain");
    assert!(
        resp.headers()
            .keys()
            .all(|k| !k.as_str().starts_with("x-karmada-tunnel")),
        "{:?}",
        resp.headers()
    );
    let body = cp
        .block_on(resp.into_body().collect())
        .expect("body")
        .to_bytes();
    assert_eq!(body, "no upgrade here\n");
    // The member unreachable: the agent's 502, as for any other request.
    let resp = upgrade_request(&cp, &client, "pull1", "gone", "spdy/3.1");
    assert_eq!(resp.status(), http::StatusCode::BAD_GATEWAY);
    let body = cp
        .block_on(resp.into_body().collect())
        .expect("body")
        .to_bytes();
    let status: Value = serde_json::from_slice(&body).expect("Status");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("error trying to reach cluster pull1 from its agent: "),
        "{status}"
    );
}

/// A port nothing listens on at the moment (for an agent's metrics and probe addresses).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A plain HTTP GET on 127.0.0.1 (an agent's endpoints): the body of a 200, else `None`.
fn http_get(port: u16, path: &str) -> Option<String> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut answer = String::new();
    s.read_to_string(&mut answer).ok()?;
    let (head, body) = answer.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200").then(|| body.to_owned())
}

/// One replica of the agent's Deployment, run as its container would run: the Deployment's
/// command, with the image's binary, the mounted kubeconfig Secret and the listen addresses
/// mapped to this machine, and the member reached through its kubeconfig where a pod uses its
/// service account.
struct Replica {
    child: Child,
    metrics: u16,
    health: u16,
}

impl Replica {
    fn start(command: &[String], karmada_kubeconfig: &Path, member: &MemberServer) -> Replica {
        assert_eq!(command[0], "/usr/local/bin/karmada-rs", "{command:?}");
        let (metrics, health) = (free_port(), free_port());
        let args: Vec<String> = command[1..]
            .iter()
            .map(|a| {
                if let Some(p) = a.strip_prefix("--karmada-kubeconfig=") {
                    assert_eq!(p, "/etc/kubeconfig/karmada-kubeconfig");
                    format!("--karmada-kubeconfig={}", karmada_kubeconfig.display())
                } else if a.starts_with("--metrics-bind-address=") {
                    format!("--metrics-bind-address=127.0.0.1:{metrics}")
                } else if a.starts_with("--health-probe-bind-address=") {
                    format!("--health-probe-bind-address=127.0.0.1:{health}")
                } else {
                    a.clone()
                }
            })
            .collect();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
        cmd.args(&args)
            .env("KUBECONFIG", &member.kubeconfig)
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let (child, _) = spawn_serving(&mut cmd, "karmada-rs agent serving cluster ");
        Replica {
            child,
            metrics,
            health,
        }
    }

    /// Whether it leads, from its `leader_election_master_status` gauge.
    fn leads(&self) -> Option<bool> {
        let text = http_get(self.metrics, "/metrics")?;
        let v = support::metric(
            &text,
            "leader_election_master_status{name=\"karmada-agent-pull1\"}",
        )?;
        Some(v == 1.0)
    }

    /// Whether it runs controllers: their work queues show in its metrics.
    fn runs_controllers(&self) -> bool {
        http_get(self.metrics, "/metrics")
            .is_some_and(|t| t.lines().any(|l| l.starts_with("workqueue_adds_total{")))
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.kill();
    }
}

fn applied(work: &Value) -> bool {
    work["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Applied" && c["status"] == "True")
    })
}

/// `register` installs karmada-agent into the member as karmadactl does (namespace,
/// ServiceAccount, RBAC, kubeconfig Secret, Deployment with the image, replicas and flags it
/// was given); the Deployment's command run as two replicas finishes the registration, and
/// exactly one of them leads and acts; killing it makes the other take over; `unregister`
/// removes what register installed.
#[test]
fn register_installs_the_agent_whose_replicas_elect_one_to_act() {
    use base64::Engine;
    let cp = Server::start();
    let member = MemberServer::start("pull1");
    let (addr, token, hash) = create_token(&cp, &[]);
    let out = register_with(
        &addr,
        &token,
        &hash,
        "pull1",
        &member,
        None,
        &[
            "--karmada-agent-replicas=2",
            "--karmada-agent-image=registry.example/karmada-rs:test",
            "--cluster-provider=aws",
            "--cluster-region=eu-west-1",
            "--cluster-zones=eu-west-1a,eu-west-1b",
            "--enable-cert-rotation",
        ],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("cluster(pull1) is joined successfully"),
        "{stdout}"
    );

    // The objects karmadactl installs for karmada-agent.
    let get = |args: &[&str]| member_json(&member, args).unwrap_or_else(|| panic!("{args:?}"));
    let ns = get(&["namespace", "karmada-system"]);
    assert_eq!(ns["metadata"]["labels"]["karmada.io/system"], "true");
    get(&["serviceaccount", "karmada-agent-sa", "-n", "karmada-system"]);
    let role = get(&["clusterrole", "karmada-agent"]);
    assert_eq!(
        role["rules"][0]["verbs"],
        serde_json::json!(["*"]),
        "{role}"
    );
    let binding = get(&["clusterrolebinding", "karmada-agent"]);
    assert_eq!(binding["roleRef"]["name"], "karmada-agent");
    let subject = &binding["subjects"][0];
    assert_eq!(
        (&subject["kind"], &subject["name"], &subject["namespace"]),
        (
            &serde_json::json!("ServiceAccount"),
            &serde_json::json!("karmada-agent-sa"),
            &serde_json::json!("karmada-system")
        ),
        "{binding}"
    );
    let secret = get(&["secret", "karmada-kubeconfig", "-n", "karmada-system"]);
    let agent_kubeconfig = base64::engine::general_purpose::STANDARD
        .decode(
            secret["data"]["karmada-kubeconfig"]
                .as_str()
                .expect("the kubeconfig in the Secret"),
        )
        .expect("base64");
    let d = get(&["deployment", "karmada-agent", "-n", "karmada-system"]);
    assert_eq!(d["spec"]["replicas"], 2);
    assert_eq!(d["metadata"]["labels"]["app"], "karmada-agent");
    let pod = &d["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "karmada-agent-sa");
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"],
        "karmada-kubeconfig"
    );
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "registry.example/karmada-rs:test");
    assert_eq!(container["volumeMounts"][0]["mountPath"], "/etc/kubeconfig");
    let command: Vec<String> =
        serde_json::from_value(container["command"].clone()).expect("the container's command");
    for flag in [
        "agent",
        "--karmada-kubeconfig=/etc/kubeconfig/karmada-kubeconfig",
        "--cluster-name=pull1",
        &format!("--cluster-api-endpoint={}", member.url),
        "--cluster-provider=aws",
        "--cluster-region=eu-west-1",
        "--cluster-zones=eu-west-1a,eu-west-1b",
        "--controllers=*,certRotation",
        "--proxy-server-address=",
        "--leader-elect-resource-namespace=karmada-system",
        "--karmada-kubeconfig-namespace=karmada-system",
    ] {
        assert!(command.iter().any(|c| c == flag), "{flag}: {command:?}");
    }
    // Rolled out (the simulated member runs no containers but reports the replicas up); the
    // Cluster is the agent's to register.
    assert_eq!(d["status"]["availableReplicas"], 2, "{d}");
    assert!(!cp.kubectl(&["get", "cluster", "pull1"]).status.success());

    // Another registration finds the agent installed, even as a dry run.
    let (_, again, _) = create_token(&cp, &[]);
    refused(
        &register_with(&addr, &again, &hash, "pull1", &member, None, &["--dry-run"]),
        "a second registration",
        "karmada-system/karmada-agent Deployment already exists",
    );

    // Two replicas, run as the Deployment's pods.
    let dir = tempfile::tempdir().expect("temp dir");
    let mounted = dir.path().join("karmada-kubeconfig");
    std::fs::write(&mounted, &agent_kubeconfig).expect("write the mounted kubeconfig");
    let a = Replica::start(&command, &mounted, &member);
    let b = Replica::start(&command, &mounted, &member);
    let a_leads = wait_for("exactly one replica to lead", DEADLINE, || {
        match (a.leads()?, b.leads()?) {
            (true, false) => Some(true),
            (false, true) => Some(false),
            _ => None,
        }
    });
    let (mut leader, follower) = if a_leads { (a, b) } else { (b, a) };
    for r in [&leader, &follower] {
        assert_eq!(http_get(r.health, "/healthz").as_deref(), Some("ok"));
    }

    // The leader acts: the Cluster is registered with what register was told, becomes Ready,
    // and Works apply.
    wait_for("pull1 Ready", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("True")).then_some(())
    });
    let c = cp.get_json(&["cluster", "pull1"]);
    assert_eq!(c["spec"]["syncMode"], "Pull");
    assert_eq!(c["spec"]["provider"], "aws");
    assert_eq!(c["spec"]["region"], "eu-west-1");
    assert_eq!(
        c["spec"]["zones"],
        serde_json::json!(["eu-west-1a", "eu-west-1b"])
    );
    assert_eq!(c["spec"]["apiEndpoint"], member.url.as_str());
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &format!("{DEPLOY}---\n{POLICY}"));
    wait_for("web in the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
    });
    wait_for("the Work applied", DEADLINE, || {
        let works = cp.get_json(&["works", "-n", "karmada-es-pull1"]);
        works["items"]
            .as_array()
            .is_some_and(|ws| !ws.is_empty() && ws.iter().all(applied))
            .then_some(())
    });
    // Only the leader runs controllers.
    assert!(leader.runs_controllers());
    assert!(!follower.runs_controllers());
    let holder = |cp: &Server| {
        cp.get_json(&["lease", "karmada-agent-pull1", "-n", "karmada-system"])["spec"]
            ["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let first = holder(&cp);
    assert!(!first.is_empty());

    // The leader is lost: once its Lease expires, the other takes over and acts.
    leader.kill();
    wait_for("the other replica to lead", DEADLINE, || {
        (follower.leads()? && follower.runs_controllers()).then_some(())
    });
    let second = holder(&cp);
    assert!(!second.is_empty() && second != first, "{first} -> {second}");
    cp.kubectl_ok(&["scale", "deployment", "web", "--replicas=3"]);
    wait_for("web scaled in the member", DEADLINE, || {
        let d = member_json(&member, &["deploy", "web", "-n", "default"])?;
        (d["spec"]["replicas"] == 3).then_some(())
    });

    // unregister removes the Cluster (the agent removes its objects from the member), the
    // agent's RBAC and Lease, and what register installed in the member.
    let out = karmada_rs(&[
        "unregister",
        "pull1",
        "--kubeconfig",
        &cp.kubeconfig.display().to_string(),
        "--cluster-kubeconfig",
        &member.kubeconfig.display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for("web gone from the member", DEADLINE, || {
        member_json(&member, &["deploy", "web", "-n", "default"])
            .is_none()
            .then_some(())
    });
    for args in [
        &["deployment", "karmada-agent", "-n", "karmada-system"][..],
        &["serviceaccount", "karmada-agent-sa", "-n", "karmada-system"],
        &["secret", "karmada-kubeconfig", "-n", "karmada-system"],
        &["clusterrole", "karmada-agent"],
        &["clusterrolebinding", "karmada-agent"],
    ] {
        assert!(member_json(&member, args).is_none(), "{args:?} left");
    }
    for args in [
        &["cluster", "pull1"][..],
        &["clusterrole", "system:karmada:pull1:agent"],
        &["lease", "karmada-agent-pull1", "-n", "karmada-system"],
    ] {
        assert!(!cp.kubectl(args).status.success(), "{args:?} left");
    }
}

/// `register --dry-run` checks the member and the token and prints what it would install,
/// creating nothing; bad values are refused.
#[test]
fn register_dry_run_creates_nothing() {
    let cp = Server::start();
    let member = MemberServer::start("pull1");
    let (addr, token, hash) = create_token(&cp, &[]);
    let out = register_with(
        &addr,
        &token,
        &hash,
        "pull1",
        &member,
        None,
        &["--dry-run", "-n", "agents", "--karmada-agent-replicas=3"],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let image = format!(
        "image: ghcr.io/karmada-rs/karmada-rs:{}",
        env!("CARGO_PKG_VERSION")
    );
    for shown in [
        "[preflight] All pre-flight checks were passed",
        "[dry-run]",
        "kind: Deployment",
        "replicas: 3",
        image.as_str(),
        "namespace: agents",
        "--leader-elect-resource-namespace=agents",
        "kind: ClusterRoleBinding",
    ] {
        assert!(stdout.contains(shown), "{shown}: {stdout}");
    }
    assert!(member_json(&member, &["namespace", "agents"]).is_none());
    assert!(member_json(&member, &["clusterrole", "karmada-agent"]).is_none());
    let csrs = cp.get_json(&["csr"]);
    assert_eq!(csrs["items"], serde_json::json!([]), "{csrs}");
    assert!(!cp.kubectl(&["get", "cluster", "pull1"]).status.success());

    // The dry run checks the token too.
    let wrong_hash = format!("sha256:{}", "0".repeat(64));
    refused(
        &register_with(
            &addr,
            &token,
            &wrong_hash,
            "pull1",
            &member,
            None,
            &["--dry-run"],
        ),
        "dry run with a wrong CA hash",
        "none of the public keys",
    );
    refused(
        &register_with(
            &addr,
            &token,
            &hash,
            "pull1",
            &member,
            None,
            &["--karmada-agent-replicas=-1"],
        ),
        "negative replicas",
        "--karmada-agent-replicas",
    );
    refused(
        &register_with(
            &addr,
            &token,
            &hash,
            "pull1",
            &member,
            None,
            &["--dry-run", "--start-agent"],
        ),
        "dry run and start agent",
        "cannot be used with",
    );
}

/// `register --start-agent` runs the agent in its own process instead of installing it: the
/// Cluster is registered and served, and nothing is installed in the member.
#[test]
fn register_start_agent_runs_the_agent_here_installing_nothing() {
    let cp = Server::start();
    let member = MemberServer::start("pull1");
    let dir = tempfile::tempdir().expect("temp dir");
    let agent_kc = dir.path().join("agent.kubeconfig");
    let (addr, token, hash) = create_token(&cp, &[]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-rs"));
    cmd.args(["register", &addr, "--token", &token])
        .args(["--discovery-token-ca-cert-hash", &hash])
        .args(["--cluster-name", "pull1", "--start-agent"])
        .arg("--kubeconfig")
        .arg(&member.kubeconfig)
        .arg("--agent-kubeconfig")
        .arg(&agent_kc)
        .args(["--cluster-region", "eu-west-1"])
        .env("KARMADA_RS_CLUSTER_STATUS_UPDATE_FREQUENCY", "1s")
        .env("KARMADA_RS_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let (child, _) = spawn_serving(&mut cmd, "karmada-rs agent serving cluster ");
    let _agent = Agent {
        child: Some(child),
        args: Vec::new(),
    };
    wait_for("pull1 Ready", DEADLINE, || {
        (ready(&cp, "pull1").as_deref() == Some("True")).then_some(())
    });
    let c = cp.get_json(&["cluster", "pull1"]);
    assert_eq!(c["spec"]["region"], "eu-west-1");
    assert!(agent_kc.exists());
    assert!(
        member_json(
            &member,
            &["deployment", "karmada-agent", "-n", "karmada-system"]
        )
        .is_none()
    );
    assert!(
        member_json(
            &member,
            &["secret", "karmada-kubeconfig", "-n", "karmada-system"]
        )
        .is_none()
    );
}
