//! `karmada-rs serve --aggregated` behind a `karmada-rs serve` host, end to end with two real
//! processes: the host is the aggregator (APIService, front proxy) and answers the aggregated
//! server's TokenReviews and SubjectAccessReviews; kubectl talks to the host only.

mod support;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;

use https::direct;
use serde_json::Value;
use support::{Backend, DEADLINE, Server, kubectl_cmd, run, wait_for};

const SVC: &str = "karmada-aggregated-apiserver";

/// A running `karmada-rs serve --aggregated`.
struct Aggregated {
    dir: tempfile::TempDir,
    url: String,
    child: Child,
}

impl Aggregated {
    fn start(host: &Server, extra: &[&str]) -> Aggregated {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args([
                "serve",
                "--aggregated",
                "--bind",
                "127.0.0.1:0",
                "--data-dir",
            ])
            .arg(dir.path())
            .arg("--kubeconfig")
            .arg(&host.kubeconfig)
            .arg(format!("--tls-san={SVC}.karmada-system.svc"))
            .args(extra)
            .env(
                "KARMADA_RS_LOG",
                std::env::var("KARMADA_RS_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn aggregated server");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("karmada-rs aggregated apiserver serving at ")
                {
                    let _ = tx.send(url.trim().to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(DEADLINE)
            .expect("the aggregated server did not start");
        Aggregated { dir, url, child }
    }

    fn ca_pem(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("pki/ca.crt")).expect("serving CA")
    }

    fn port(&self) -> u16 {
        self.url
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }
}

impl Drop for Aggregated {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Registers the aggregated server with the host and waits for `Available=True`.
fn register(host: &Server, agg: &Aggregated) {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(agg.ca_pem());
    host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &format!(
            r#"
apiVersion: v1
kind: Service
metadata: {{name: {SVC}, namespace: karmada-system}}
spec: {{type: ExternalName, externalName: localhost}}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {{name: v1alpha1.cluster.karmada.io}}
spec:
  group: cluster.karmada.io
  version: v1alpha1
  service: {{namespace: karmada-system, name: {SVC}, port: {port}}}
  caBundle: {ca}
  groupPriorityMinimum: 2000
  versionPriority: 10
"#,
            port = agg.port()
        ),
    );
    wait_for("the APIService to become available", DEADLINE, || {
        let a = host.get_json(&["apiservice", "v1alpha1.cluster.karmada.io"]);
        a["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True")
            .then_some(())
    });
}

/// A simulated member joined through the host.
struct Member {
    dir: tempfile::TempDir,
    child: Child,
}

impl Member {
    fn kubeconfig(&self) -> PathBuf {
        self.dir.path().join("kubeconfig")
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        let out = run(kubectl_cmd(&self.kubeconfig(), &self.dir.path().join("cache")).args(args));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn member_joined(host: &Server, name: &str) -> Member {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["member", "serve", "--name", name, "--data-dir"])
        .arg(dir.path())
        .env("KARMADA_RS_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn member");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.starts_with("karmada-rs member serving at ") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(DEADLINE).expect("member did not start");
    let m = Member { dir, child };
    let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["join", name, "--cluster-kubeconfig"])
        .arg(m.kubeconfig())
        .arg("--kubeconfig")
        .arg(&host.kubeconfig));
    assert!(
        out.status.success(),
        "join: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    m
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Raw HTTPS requests straight to the aggregated server, with a chosen client certificate
/// and headers.
mod https {
    use apiserver::proxy::transport::{self, Body, Dialer, TlsSettings};
    use http_body_util::BodyExt;

    pub fn direct(
        url: &str,
        ca_pem: &str,
        cert: Option<(String, String)>,
        headers: &[(&str, &str)],
    ) -> Result<(u16, String), String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let tls = transport::client_config(&TlsSettings {
                ca_bundle: ca_pem.as_bytes().to_vec(),
                insecure: false,
                client_cert: cert,
                tls13_only: false,
            })
            .map_err(|e| e.to_string())?;
            let client =
                transport::http_client(Dialer::new(tls, None, netproxy::ProxySource::Direct));
            let mut req = http::Request::get(url);
            for (k, v) in headers {
                req = req.header(*k, *v);
            }
            let req = req.body(Body::empty()).map_err(|e| e.to_string())?;
            let resp = client.request(req).await.map_err(|e| format!("{e:?}"))?;
            let status = resp.status().as_u16();
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok((status, String::from_utf8_lossy(&body).into_owned()))
        })
    }
}

#[test]
fn clusters_and_proxy_through_the_host() {
    let host = Server::start_with(Backend::Embedded, &["--cluster-api-from-apiservice"]);
    let agg = Aggregated::start(&host, &[]);
    register(&host, &agg);

    // Clusters now live in the aggregated server; the join goes through the host.
    let m1 = member_joined(&host, "member1");
    wait_for(
        "member1 Ready through the aggregated server",
        DEADLINE,
        || {
            let c = host.get_json(&["clusters", "member1"]);
            c["status"]["conditions"]
                .as_array()?
                .iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
                .then_some(())
        },
    );
    let table = host.kubectl_ok(&["get", "clusters"]);
    assert!(
        table.contains("member1") && table.contains("MODE") && table.contains("Push"),
        "{table}"
    );
    // Stored by the aggregated server, not the host.
    let (status, body) = direct(
        &format!(
            "{}/apis/cluster.karmada.io/v1alpha1/clusters/member1",
            agg.url
        ),
        &agg.ca_pem(),
        Some(admin_cert(&host)),
        &[],
    )
    .expect("direct get");
    assert_eq!(status, 200, "{body}");

    // The proxy through host → aggregated server → member: the host binds the admin
    // `cluster-proxy-admin` at bootstrap, and unifiedAuth then lets the member's impersonator
    // act as the admin.
    let nodes = wait_for("the proxy through both servers", DEADLINE, || {
        let out = host.kubectl(&[
            "get",
            "--raw",
            "/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy/api/v1/nodes",
        ]);
        out.status
            .success()
            .then(|| serde_json::from_slice::<Value>(&out.stdout).expect("nodes"))
    });
    let member_nodes: Value =
        serde_json::from_str(&m1.kubectl_ok(&["get", "nodes", "-o", "json"])).expect("nodes");
    assert_eq!(
        nodes["items"].as_array().map(Vec::len),
        member_nodes["items"].as_array().map(Vec::len)
    );
    // Discovery of the host lists the group from the aggregated server.
    let resources = host.kubectl_ok(&["api-resources", "--api-group=cluster.karmada.io"]);
    assert!(resources.contains("clusters"), "{resources}");
    let explain = host.kubectl(&["get", "--raw", "/apis/cluster.karmada.io/v1alpha1"]);
    assert!(explain.status.success(), "{}", stderr(&explain));
}

fn admin_cert(host: &Server) -> (String, String) {
    let pki = host.dir.path().join("pki");
    (
        std::fs::read_to_string(pki.join("admin.crt")).expect("admin.crt"),
        std::fs::read_to_string(pki.join("admin.key")).expect("admin.key"),
    )
}

fn front_proxy_ca(host: &Server) -> certs::Ca {
    let pki = host.dir.path().join("pki");
    certs::Ca::from_pem(
        &std::fs::read_to_string(pki.join("front-proxy-ca.crt")).expect("front-proxy CA"),
        &std::fs::read_to_string(pki.join("front-proxy-ca.key")).expect("front-proxy CA key"),
    )
    .expect("CA")
}

#[test]
fn front_proxy_trust_and_delegated_authorization() {
    let host = Server::start_with(Backend::Embedded, &["--cluster-api-from-apiservice"]);
    let agg = Aggregated::start(&host, &[]);
    let clusters = format!("{}/apis/cluster.karmada.io/v1alpha1/clusters", agg.url);
    let ca = agg.ca_pem();
    let as_alice = [("X-Remote-User", "alice"), ("X-Remote-Group", "dev")];

    // Allowed front-proxy name: the identity in the headers is authorized by the host.
    let fp = front_proxy_ca(&host);
    let good = fp.issue_client("front-proxy-client", &[]).expect("issue");
    let good = (good.cert_pem, good.key_pem);
    let (status, body) = direct(&clusters, &ca, Some(good.clone()), &as_alice).expect("request");
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains(r#"User \"alice\" cannot list resource \"clusters\" in API group \"cluster.karmada.io\" at the cluster scope"#),
        "{body}"
    );
    host.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: cluster-reader}
rules:
- apiGroups: [cluster.karmada.io]
  resources: [clusters]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: dev-cluster-reader}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-reader}
subjects:
- {kind: Group, name: dev, apiGroup: rbac.authorization.k8s.io}
"#,
    );
    // Allowed through the group from the headers (denials are cached for 10 s).
    let body = wait_for("the host to allow group dev", DEADLINE, || {
        let (status, body) = direct(&clusters, &ca, Some(good.clone()), &as_alice).ok()?;
        (status == 200).then_some(body)
    });
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("list")["kind"],
        "ClusterList"
    );
    let (status, _) = direct(
        &clusters,
        &ca,
        Some(good.clone()),
        &[("X-Remote-User", "bob")],
    )
    .expect("request");
    assert_eq!(status, 403, "bob is not in dev");

    // Refused: other names from the front-proxy CA, other CAs, no credentials at all.
    let wrong_cn = fp.issue_client("somebody-else", &[]).expect("issue");
    let (status, _) = direct(
        &clusters,
        &ca,
        Some((wrong_cn.cert_pem, wrong_cn.key_pem)),
        &as_alice,
    )
    .expect("request");
    assert_eq!(status, 401);
    let other = certs::Ca::generate().expect("CA");
    let foreign = other
        .issue_client("front-proxy-client", &[])
        .expect("issue");
    if let Ok((status, _)) = direct(
        &clusters,
        &ca,
        Some((foreign.cert_pem, foreign.key_pem)),
        &as_alice,
    ) {
        assert_eq!(status, 401);
    }
    let (status, _) = direct(&clusters, &ca, None, &as_alice).expect("request");
    assert_eq!(status, 401);
    let (status, _) = direct(&clusters, &ca, None, &[]).expect("request");
    assert_eq!(status, 401);
    // Probes need no credentials.
    let (status, body) = direct(&format!("{}/readyz", agg.url), &ca, None, &[]).expect("readyz");
    assert_eq!((status, body.as_str()), (200, "ok"));

    // Bearer tokens are reviewed by the host.
    host.kubectl_ok(&["create", "serviceaccount", "robot", "-n", "default"]);
    host.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "robot-reader",
        "--clusterrole=cluster-reader",
        "--serviceaccount=default:robot",
    ]);
    let token = host.kubectl_ok(&["create", "token", "robot", "-n", "default"]);
    let auth = format!("Bearer {}", token.trim());
    let body = wait_for("the robot's token to be accepted", DEADLINE, || {
        let (status, body) =
            direct(&clusters, &ca, None, &[("Authorization", auth.as_str())]).ok()?;
        (status == 200).then_some(body)
    });
    assert!(body.contains("ClusterList"));
    let (status, _) = direct(
        &clusters,
        &ca,
        None,
        &[("Authorization", "Bearer not-a-token")],
    )
    .expect("request");
    assert_eq!(status, 401);

    // Through the host, the caller's identity reaches the aggregated server's authorization.
    register(&host, &agg);
    host.kubectl_ok(&["get", "clusters", "--as=alice", "--as-group=dev"]);
    let out = host.kubectl(&["get", "clusters", "--as=carol"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(r#"User "carol" cannot list resource "clusters""#),
        "{}",
        stderr(&out)
    );
}
