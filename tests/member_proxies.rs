//! Members behind a proxy, end to end: a simulated member known by a name only a forward
//! proxy in this test process can resolve (`<name>.invalid`), joined with a kubeconfig whose
//! `proxy-url` names the proxy, then managed through the Cluster's `proxyURL` and
//! `proxyHeader` (controllers, cluster-status probes, the cluster proxy), and unjoined through
//! the kubeconfig again, with the Cluster's `proxyHeader`. One test per proxy
//! kind: HTTP CONNECT, HTTPS CONNECT (the proxy's certificate signed by the member's CA, as
//! the member's TLS settings apply to the proxy) and SOCKS5 with user/password.

mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use netproxy::testing::ForwardProxy;
use serde_json::{Value, json};
use support::{DEADLINE, Server, kubectl_cmd, run, wait_for};

/// A running `karmada-rs member serve`, reachable as `<name>.invalid` through the proxies.
struct Member {
    name: String,
    dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Member {
    fn start(name: &str) -> Member {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["member", "serve", "--name", name, "--ready-delay", "0"])
            .arg(format!("--tls-san={name}.invalid"))
            .arg("--data-dir")
            .arg(dir.path())
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn member");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("karmada-rs member serving at ") {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx.recv_timeout(DEADLINE).expect("the member did not start");
        let port = url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port in the member URL");
        Member {
            name: name.to_string(),
            dir,
            port,
            child,
        }
    }

    /// The member's own kubeconfig (direct, for checking what reached it).
    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    /// The member's kubeconfig naming it `<name>.invalid`, through `proxy_url`.
    fn proxied_kubeconfig(&self, proxy_url: &str) -> PathBuf {
        let direct = std::fs::read_to_string(self.kubeconfig()).expect("kubeconfig");
        let server = format!("server: https://127.0.0.1:{}", self.port);
        assert!(direct.contains(&server), "{direct}");
        let proxied = direct.replace(
            &server,
            &format!(
                "server: https://{}.invalid:{}\n    proxy-url: {proxy_url}",
                self.name, self.port
            ),
        );
        let path = self.dir.path().join("proxied.kubeconfig");
        std::fs::write(&path, proxied).expect("write kubeconfig");
        path
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = run(kubectl_cmd(&self.kubeconfig(), &self.dir.path().join("cache")).args(args));
        assert!(
            out.status.success(),
            "kubectl {} on {}: {}",
            args.join(" "),
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The member's CA, to sign an HTTPS proxy's certificate.
    fn ca(&self) -> certs::Ca {
        let pki = self.dir.path().join("pki");
        certs::Ca::from_pem(
            &std::fs::read_to_string(pki.join("ca.crt")).expect("ca.crt"),
            &std::fs::read_to_string(pki.join("ca.key")).expect("ca.key"),
        )
        .expect("member CA")
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `karmada-rs join` or `unjoin` (`verb`) of member `name` through `kubeconfig`.
fn membership(cp: &Server, verb: &str, name: &str, kubeconfig: &Path) {
    let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args([verb, name, "--cluster-kubeconfig"])
        .arg(kubeconfig)
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .env("KARMADA_RS_LOG", "warn"));
    assert!(
        out.status.success(),
        "{verb} {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn ready(cp: &Server, name: &str) -> bool {
    cp.get_json(&["clusters.cluster.karmada.io", name])["status"]["conditions"]
        .as_array()
        .is_some_and(|c| {
            c.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

const WORKLOAD: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [CLUSTER]}}
"#;

/// Joins `member` through `proxy` (whose URL, with credentials, is `proxy_url`), sets the
/// Cluster's proxyHeader when `header` is set, and checks that every way the control plane
/// reaches the member goes through the proxy (and, with a header, that the proxy saw it).
fn joined_and_managed_through(
    cp: &Server,
    member: &Member,
    proxy: &ForwardProxy,
    proxy_url: &str,
    header: bool,
) {
    let name = &member.name;
    let endpoint = format!("https://{name}.invalid:{}", member.port);

    // Join: the member's kubeconfig names a host only the proxy resolves.
    membership(cp, "join", name, &member.proxied_kubeconfig(proxy_url));
    let joined = proxy.log();
    assert!(
        joined.relayed > 0,
        "join went through the proxy: {joined:?}"
    );
    let cluster = cp.get_json(&["clusters.cluster.karmada.io", name]);
    assert_eq!(cluster["spec"]["apiEndpoint"], endpoint.as_str());
    assert_eq!(cluster["spec"]["proxyURL"], proxy_url);

    if header {
        cp.kubectl_ok(&[
            "patch",
            "clusters.cluster.karmada.io",
            name,
            "--type=merge",
            "-p",
            r#"{"spec":{"proxyHeader":{"X-Karmada-Tenant":"blue,green"}}}"#,
        ]);
    }
    let before = proxy.log().heads.len();

    // Cluster status: probes and discovery through the proxy.
    wait_for(&format!("{name} Ready"), DEADLINE, || {
        ready(cp, name).then_some(())
    });
    let cluster = cp.get_json(&["clusters.cluster.karmada.io", name]);
    assert!(
        cluster["status"]["kubernetesVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("v1.")),
        "{cluster}"
    );

    // Controllers: a workload propagated to the member.
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &WORKLOAD.replace("CLUSTER", name));
    wait_for("the Deployment in the member", DEADLINE, || {
        let out = member.kubectl_ok(&["get", "deployments", "-o", "name"]);
        out.contains("deployment.apps/web").then_some(())
    });
    wait_for("the member's status aggregated", DEADLINE, || {
        let d = cp.get_json(&["deployment", "web"]);
        (d["status"]["readyReplicas"] == 2).then_some(())
    });

    // The cluster proxy (the admin is bound to cluster-proxy-admin at bootstrap).
    let path = format!(
        "/apis/cluster.karmada.io/v1alpha1/clusters/{name}/proxy/apis/apps/v1/namespaces/default/deployments/web"
    );
    let proxied: Value = wait_for("the admin's cluster proxy", DEADLINE, || {
        let out = cp.kubectl(&["get", "--raw", &path]);
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).expect("JSON"))
    });
    assert_eq!(proxied["metadata"]["name"], "web");

    // Only through the proxy: every target it was asked for is the member, which nothing
    // else can resolve; with a proxyHeader, every CONNECT since carried it.
    let log = proxy.log();
    let target = format!("{name}.invalid:{}", member.port);
    assert!(log.targets.iter().all(|t| *t == target), "{log:?}");
    assert_eq!(log.relayed, log.targets.len(), "{log:?}");
    if header {
        all_carry_the_header(&log.heads[before..]);
    }
}

/// Every CONNECT in `heads` carried the Cluster's proxyHeader (set by
/// [`joined_and_managed_through`]).
fn all_carry_the_header(heads: &[String]) {
    assert!(!heads.is_empty());
    for head in heads {
        assert!(
            head.contains("x-karmada-tenant: blue\r\n")
                && head.contains("x-karmada-tenant: green\r\n"),
            "{head}"
        );
    }
}

/// Unjoins `member` through its kubeconfig naming `proxy_url`: the member-side cleanup goes
/// through the proxy with the Cluster's proxyHeader, which stays with the member's client
/// once the Cluster is deleted.
fn unjoined_through(cp: &Server, member: &Member, proxy: &ForwardProxy, proxy_url: &str) {
    let before = proxy.log().heads.len();
    membership(
        cp,
        "unjoin",
        &member.name,
        &member.proxied_kubeconfig(proxy_url),
    );
    let role = format!(
        "clusterrole.rbac.authorization.k8s.io/karmada-controller-manager:karmada-{}",
        member.name
    );
    let roles = member.kubectl_ok(&["get", "clusterroles", "-o", "name"]);
    assert!(!roles.lines().any(|r| r == role), "{roles}");
    all_carry_the_header(&proxy.log().heads[before..]);
}

/// The proxies' host table: the member's `.invalid` name is 127.0.0.1.
fn hosts(member: &Member) -> BTreeMap<String, IpAddr> {
    BTreeMap::from([(
        format!("{}.invalid", member.name),
        IpAddr::from([127, 0, 0, 1]),
    )])
}

#[test]
fn member_behind_an_http_proxy() {
    let cp = Server::start();
    let member = Member::start("via-http");
    let proxy = cp
        .block_on(ForwardProxy::http(hosts(&member)))
        .expect("proxy");
    let url = format!("http://{}", proxy.addr());
    joined_and_managed_through(&cp, &member, &proxy, &url, true);
    unjoined_through(&cp, &member, &proxy, &url);
}

#[test]
fn member_behind_an_https_proxy() {
    let cp = Server::start();
    let member = Member::start("via-https");
    let cert = member
        .ca()
        .issue_serving("proxy", &["127.0.0.1".to_string()])
        .expect("proxy certificate");
    let proxy = cp
        .block_on(ForwardProxy::https(
            hosts(&member),
            &cert.cert_pem,
            &cert.key_pem,
        ))
        .expect("proxy");
    let url = format!("https://{}", proxy.addr());
    joined_and_managed_through(&cp, &member, &proxy, &url, true);
    unjoined_through(&cp, &member, &proxy, &url);
}

#[test]
fn member_behind_a_socks5_proxy() {
    let cp = Server::start();
    let member = Member::start("via-socks");
    let proxy = cp
        .block_on(ForwardProxy::socks5(
            hosts(&member),
            Some(("karmada".into(), "p@ss".into())),
        ))
        .expect("proxy");
    let url = format!("socks5://karmada:p%40ss@{}", proxy.addr());
    joined_and_managed_through(&cp, &member, &proxy, &url, false);
    // SOCKS5 has no headers: a proxyHeader is accepted with a warning that it does nothing.
    let out = cp.kubectl(&[
        "patch",
        "clusters.cluster.karmada.io",
        "via-socks",
        "--type=merge",
        "-p",
        &json!({"spec": {"proxyHeader": {"X-Ignored": "1"}}}).to_string(),
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Warning: spec.proxyHeader") && stderr.contains("socks5"),
        "{stderr}"
    );
}

#[test]
fn an_unreachable_proxy_is_reported_by_join() {
    let cp = Server::start();
    let member = Member::start("no-proxy");
    // Nothing listens there: join fails naming the proxy, and leaves nothing behind.
    let kubeconfig = member.proxied_kubeconfig("http://127.0.0.1:1");
    let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["join", "no-proxy", "--cluster-kubeconfig"])
        .arg(&kubeconfig)
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig)
        .env("KARMADA_RS_LOG", "warn"));
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("dial proxy 127.0.0.1:1"), "{stderr}");
    assert!(
        !cp.kubectl(&["get", "clusters.cluster.karmada.io", "no-proxy"])
            .status
            .success()
    );
}
