//! The cluster proxy end to end: the real binary (`serve`, `member serve`, `join`), real
//! kubectl, simulated members.

mod support;

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;

use serde_json::Value;
use support::{DEADLINE, Server, kubectl_cmd, run, run_stdin, wait_for};

/// A running `karmada-rs member serve`.
struct Member {
    name: String,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    child: Child,
}

impl Member {
    fn start(name: &str) -> Member {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args([
                "member",
                "serve",
                "--name",
                name,
                "--ready-delay",
                "0",
                "--data-dir",
            ])
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
                if line.starts_with("karmada-rs member serving at ") {
                    let _ = tx.send(());
                }
            }
        });
        rx.recv_timeout(DEADLINE).expect("the member did not start");
        Member {
            name: name.to_string(),
            kubeconfig: dir.path().join("kubeconfig"),
            dir,
            child,
        }
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        run(kubectl_cmd(&self.kubeconfig, &self.dir.path().join("cache")).args(args))
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        ok(self.kubectl(args), args)
    }

    fn kubectl_stdin_ok(&self, args: &[&str], stdin: &str) -> String {
        ok(
            run_stdin(
                kubectl_cmd(&self.kubeconfig, &self.dir.path().join("cache")).args(args),
                stdin,
            ),
            args,
        )
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn ok(out: Output, args: &[&str]) -> String {
    assert!(
        out.status.success(),
        "kubectl {} failed: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Joins a member and waits for it to be Ready.
fn join(cp: &Server, m: &Member) {
    let out = run(Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(["join", &m.name, "--cluster-kubeconfig"])
        .arg(&m.kubeconfig)
        .arg("--kubeconfig")
        .arg(&cp.kubeconfig));
    assert!(
        out.status.success(),
        "join {}: {}",
        m.name,
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(&format!("{} Ready", m.name), DEADLINE, || {
        let c = cp.get_json(&["clusters.cluster.karmada.io", &m.name]);
        c["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
            .then_some(())
    });
}

/// Waits until the admin (`karmada-admin`, bound `cluster-proxy-admin` at bootstrap as
/// Karmada's installers bind their admin) can use the proxy of `members`: unifiedAuth's
/// impersonation rules must first reach each member.
fn wait_admin_proxy(cp: &Server, members: &[&Member]) {
    for m in members {
        let path = format!(
            "/apis/cluster.karmada.io/v1alpha1/clusters/{}/proxy/api/v1/namespaces",
            m.name
        );
        wait_for(
            &format!("the admin's proxy to {}", m.name),
            DEADLINE,
            || {
                cp.kubectl(&["get", "--raw", &path])
                    .status
                    .success()
                    .then_some(())
            },
        );
    }
}

/// A kubeconfig for the control plane's CA and server `server`, as `user`: the admin
/// certificate, or a client certificate for (user, groups) signed by the control plane's CA.
struct Kubeconfig {
    path: PathBuf,
    cache: PathBuf,
    _dir: tempfile::TempDir,
}

impl Kubeconfig {
    fn new(cp: &Server, server: &str, user: Option<(&str, &[&str])>) -> Kubeconfig {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("kubeconfig");
        std::fs::copy(&cp.kubeconfig, &path).expect("copy kubeconfig");
        let kc = |args: &[&str]| {
            ok(
                run(Command::new("kubectl")
                    .env("KUBECONFIG", &path)
                    .args(["config"])
                    .args(args)),
                args,
            )
        };
        let cluster = kc(&["view", "-o", "jsonpath={.clusters[0].name}"]);
        kc(&["set-cluster", &cluster, &format!("--server={server}")]);
        if let Some((name, groups)) = user {
            let pki = cp.dir.path().join("pki");
            let ca = certs::Ca::from_pem(
                &std::fs::read_to_string(pki.join("ca.crt")).expect("ca.crt"),
                &std::fs::read_to_string(pki.join("ca.key")).expect("ca.key"),
            )
            .expect("CA");
            let cert = ca.issue_client(name, groups).expect("issue");
            let (crt, key) = (dir.path().join("u.crt"), dir.path().join("u.key"));
            std::fs::write(&crt, cert.cert_pem).expect("write");
            std::fs::write(&key, cert.key_pem).expect("write");
            kc(&[
                "set-credentials",
                name,
                &format!("--client-certificate={}", crt.display()),
                &format!("--client-key={}", key.display()),
                "--embed-certs",
            ]);
            let ctx = kc(&["current-context"]);
            kc(&["set-context", ctx.trim(), &format!("--user={name}")]);
        }
        Kubeconfig {
            cache: dir.path().join("cache"),
            path,
            _dir: dir,
        }
    }

    fn cmd(&self) -> Command {
        kubectl_cmd(&self.path, &self.cache)
    }

    fn kubectl(&self, args: &[&str]) -> Output {
        run(self.cmd().args(args))
    }

    fn kubectl_ok(&self, args: &[&str]) -> String {
        ok(self.kubectl(args), args)
    }

    fn kubectl_err(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            !out.status.success(),
            "kubectl {} unexpectedly succeeded: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

fn proxy_url(cp: &Server, cluster: &str) -> String {
    format!(
        "{}/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy",
        cp.url
    )
}

fn names(list: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(list).expect("JSON list");
    let mut n: Vec<String> = v["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().expect("name").to_string())
        .collect();
    n.sort();
    n
}

/// Plain kubectl through `.../clusters/member1/proxy`: get, list, create, delete and watch on
/// the member.
#[test]
fn kubectl_through_the_proxy_kubeconfig() {
    let cp = Server::start();
    let m1 = Member::start("member1");
    join(&cp, &m1);
    wait_admin_proxy(&cp, &[&m1]);
    let proxied = Kubeconfig::new(&cp, &proxy_url(&cp, "member1"), None);

    // Reads see the member, not the control plane.
    let nodes = names(&proxied.kubectl_ok(&["get", "nodes", "-o", "json"]));
    assert_eq!(
        nodes,
        names(&m1.kubectl_ok(&["get", "nodes", "-o", "json"]))
    );
    assert!(!nodes.is_empty());
    let out = proxied.kubectl_ok(&["get", "nodes"]);
    assert!(out.contains("NAME") && out.contains(&nodes[0]), "{out}");
    let version = proxied.kubectl_ok(&["version", "-o", "json"]);
    assert!(version.contains("serverVersion"), "{version}");

    // Writes land on the member.
    proxied.kubectl_ok(&["create", "namespace", "proxied"]);
    proxied.kubectl_ok(&[
        "-n",
        "proxied",
        "create",
        "configmap",
        "c1",
        "--from-literal=k=v",
    ]);
    let got = m1.kubectl_ok(&[
        "-n",
        "proxied",
        "get",
        "configmap",
        "c1",
        "-o",
        "jsonpath={.data.k}",
    ]);
    assert_eq!(got, "v");
    assert!(
        !cp.kubectl(&["-n", "proxied", "get", "configmap", "c1"])
            .status
            .success(),
        "the control plane has no such object"
    );
    proxied.kubectl_stdin_ok_apply(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c2, namespace: proxied}\ndata: {a: b}\n",
    );
    assert_eq!(
        names(&proxied.kubectl_ok(&["-n", "proxied", "get", "configmaps", "-o", "json"]))
            .into_iter()
            .filter(|n| n.starts_with('c'))
            .collect::<Vec<_>>(),
        vec!["c1", "c2"]
    );
    proxied.kubectl_ok(&["-n", "proxied", "delete", "configmap", "c1"]);
    assert!(
        !m1.kubectl(&["-n", "proxied", "get", "configmap", "c1"])
            .status
            .success()
    );

    // A watch through the proxy keeps streaming events.
    let mut watch = proxied
        .cmd()
        .args([
            "-n",
            "proxied",
            "get",
            "configmaps",
            "--watch",
            "-o",
            "name",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl watch");
    let stdout = watch.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut seen = Vec::new();
    let expect = |name: &str, seen: &mut Vec<String>| {
        let want = format!("configmap/{name}");
        let start = std::time::Instant::now();
        while !seen.contains(&want) {
            let left = DEADLINE.saturating_sub(start.elapsed());
            match rx.recv_timeout(left) {
                Ok(l) => seen.push(l),
                Err(_) => panic!("the watch never showed {want}: {seen:?}"),
            }
        }
    };
    expect("c2", &mut seen);
    for name in ["w1", "w2", "w3"] {
        m1.kubectl_ok(&["-n", "proxied", "create", "configmap", name]);
        expect(name, &mut seen);
    }
    let _ = watch.kill();
    let _ = watch.wait();
}

impl Kubeconfig {
    fn kubectl_stdin_ok_apply(&self, yaml: &str) -> String {
        let args = ["apply", "-f", "-"];
        ok(run_stdin(self.cmd().args(args), yaml), &args)
    }
}

/// Who may use the proxy: the control plane authorizes `clusters/proxy` (with resourceNames),
/// the member authorizes the impersonated caller with its own RBAC; unifiedAuth lets the
/// member's impersonator act for newly granted users.
#[test]
fn control_plane_and_member_rbac() {
    let cp = Server::start();
    let (m1, m2) = (Member::start("member1"), Member::start("member2"));
    join(&cp, &m1);
    join(&cp, &m2);
    let alice1 = Kubeconfig::new(&cp, &proxy_url(&cp, "member1"), Some(("alice", &[])));
    // Raw requests show the control plane's own Status messages (kubectl reports a
    // forbidden discovery only as "unknown").
    let alice = Kubeconfig::new(&cp, &cp.url, Some(("alice", &[])));
    let pods = |cluster: &str| {
        format!(
            "/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy/api/v1/namespaces/default/pods"
        )
    };

    // No clusters/proxy: the control plane says no.
    let err = alice.kubectl_err(&["get", "--raw", &pods("member1")]);
    assert!(
        err.contains(r#"clusters.cluster.karmada.io "member1" is forbidden: User "alice" cannot get resource "clusters/proxy" in API group "cluster.karmada.io" at the cluster scope"#),
        "{err}"
    );

    // clusters/proxy on member1 only.
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: proxy-member1}
rules:
- apiGroups: [cluster.karmada.io]
  resources: [clusters/proxy]
  resourceNames: [member1]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: alice-proxy-member1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: proxy-member1}
subjects:
- {kind: User, name: alice}
"#,
    );
    // The member now answers, with its own 403: alice has no RBAC there.
    let err = wait_for("the member's own 403", DEADLINE, || {
        let out = alice1.kubectl(&["get", "pods", "-n", "default"]);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        err.contains(r#"pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default""#)
            .then_some(err)
    });
    assert!(!err.contains("clusters/proxy"), "{err}");
    // member2 is not in alice's resourceNames.
    let err = alice.kubectl_err(&["get", "--raw", &pods("member2")]);
    assert!(
        err.contains(r#"clusters.cluster.karmada.io "member2" is forbidden"#),
        "{err}"
    );

    // Member RBAC for alice: the proxy now works, with exactly her rights.
    m1.kubectl_ok(&[
        "create",
        "rolebinding",
        "alice-view",
        "--clusterrole=view",
        "--user=alice",
        "-n",
        "default",
    ]);
    m1.kubectl_ok(&["-n", "default", "create", "configmap", "visible"]);
    let list = wait_for("alice's view on member1", DEADLINE, || {
        let out = alice1.kubectl(&["get", "configmaps", "-n", "default", "-o", "json"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    });
    assert!(names(&list).contains(&"visible".to_string()));
    let err = alice1.kubectl_err(&["-n", "default", "create", "configmap", "nope"]);
    assert!(
        err.contains(r#"User "alice" cannot create resource "configmaps""#),
        "{err}"
    );
    let err = alice1.kubectl_err(&["get", "configmaps", "-n", "kube-system"]);
    assert!(err.contains("forbidden"), "{err}");
}

/// `clusters/*/proxy`: lists merged from every cluster, a named object found in its one
/// cluster, conflicts reported as Karmada reports them.
#[test]
fn all_clusters_proxy() {
    let cp = Server::start();
    let (m1, m2) = (Member::start("member1"), Member::start("member2"));
    join(&cp, &m1);
    join(&cp, &m2);
    wait_admin_proxy(&cp, &[&m1, &m2]);
    for (m, only) in [(&m1, "only-in-1"), (&m2, "only-in-2")] {
        m.kubectl_ok(&["-n", "default", "create", "configmap", only]);
        m.kubectl_ok(&["-n", "default", "create", "configmap", "everywhere"]);
    }
    let all = Kubeconfig::new(&cp, &proxy_url(&cp, "*"), None);
    let list = all.kubectl_ok(&["get", "configmaps", "-n", "default", "-o", "json"]);
    let n: Vec<String> = names(&list)
        .into_iter()
        .filter(|n| n.contains("in-") || n == "everywhere")
        .collect();
    assert_eq!(
        n,
        vec!["everywhere", "everywhere", "only-in-1", "only-in-2"]
    );
    let table = all.kubectl_ok(&["get", "configmaps", "-n", "default"]);
    assert!(
        table.contains("only-in-1") && table.contains("only-in-2") && table.contains("DATA"),
        "{table}"
    );
    let one = all.kubectl_ok(&[
        "get",
        "configmap",
        "only-in-2",
        "-n",
        "default",
        "-o",
        "name",
    ]);
    assert_eq!(one.trim(), "configmap/only-in-2");
    // kubectl shows Karmada's plain-text errors by their status only; the bodies say why.
    let err = all.kubectl_err(&["get", "configmap", "everywhere", "-n", "default"]);
    assert!(err.contains("(Conflict)"), "{err}");
    let err = all.kubectl_err(&["get", "configmap", "nowhere", "-n", "default"]);
    assert!(err.contains("(NotFound)"), "{err}");
    let base = format!(
        "{}/api/v1/namespaces/default/configmaps",
        proxy_url(&cp, "%2A")
    );
    let (status, body) = https_get(&cp, &format!("{base}/everywhere"));
    assert_eq!(status, 409);
    assert_eq!(
        body,
        "conflict resource, exist in more than one cluster: member1,member2\n"
    );
    let (status, body) = https_get(&cp, &format!("{base}/nowhere"));
    assert_eq!(status, 404);
    assert_eq!(
        body,
        "resource not found or don't have permission to get it\n"
    );
}

/// A GET with the control plane's admin certificate, returning status and body as sent.
fn https_get(cp: &Server, url: &str) -> (u16, String) {
    use apiserver::proxy::transport::{self, Body, Dialer, TlsSettings};
    use http_body_util::BodyExt;
    let pki = cp.dir.path().join("pki");
    let read = |f: &str| std::fs::read_to_string(pki.join(f)).expect("pki file");
    let tls = transport::client_config(&TlsSettings {
        ca_bundle: read("ca.crt").into_bytes(),
        insecure: false,
        client_cert: Some((read("admin.crt"), read("admin.key"))),
        tls13_only: false,
    })
    .expect("tls");
    let client = transport::http_client(Dialer::new(tls, None, netproxy::ProxySource::Direct));
    cp.block_on(async {
        let req = http::Request::get(url)
            .body(Body::empty())
            .expect("request");
        let resp = client.request(req).await.expect("request");
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    })
}

fn vm_hwm_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmHWM")
}

/// A 50 MiB list streams through the control plane: its peak memory grows far less than the
/// response.
#[test]
fn large_responses_stream() {
    let cp = Server::start();
    let m1 = Member::start("member1");
    join(&cp, &m1);
    wait_admin_proxy(&cp, &[&m1]);
    m1.kubectl_ok(&["create", "namespace", "big"]);
    let value = "x".repeat(1024 * 1024 - 512);
    for i in 0..50 {
        let yaml = format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: big-{i}, namespace: big}}\ndata: {{v: {value}}}\n"
        );
        m1.kubectl_stdin_ok(&["create", "-f", "-"], &yaml);
    }
    let pid = cp.pid().expect("control plane pid");
    let path =
        "/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy/api/v1/namespaces/big/configmaps";
    // Warm up (connections, caches), then measure the peak of one proxied list.
    let _ = cp.kubectl_ok(&["get", "--raw", "/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy/api/v1/namespaces/big/configmaps?limit=1"]);
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("reset VmHWM");
    let before = vm_hwm_kib(pid);
    let mut child = cp
        .kubectl_cmd()
        .args(["get", "--raw", path])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("kubectl");
    let mut total = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    let mut out = child.stdout.take().expect("stdout");
    loop {
        let n = out.read(&mut buf).expect("read");
        if n == 0 {
            break;
        }
        total += n;
    }
    assert!(child.wait().expect("wait").success());
    let growth_mib = (vm_hwm_kib(pid).saturating_sub(before)) / 1024;
    assert!(total > 50 * 1000 * 1000, "the list was {total} bytes");
    assert!(
        growth_mib < 20,
        "the control plane's peak memory grew by {growth_mib} MiB for a {} MiB response",
        total >> 20
    );
}

fn work(server: &Server, cluster: &str, kind: &str) -> Option<Value> {
    let name = karmada_api::names::work_name(kind, "karmada-impersonator", "");
    let out = server.kubectl(&[
        "get",
        "works.work.karmada.io",
        "-n",
        &format!("karmada-es-{cluster}"),
        &name,
        "-o",
        "json",
    ]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("work JSON"))
}

fn impersonated(work: &Value, resource: &str) -> Vec<String> {
    work["spec"]["workload"]["manifests"][0]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["resources"][0] == resource)
        .flat_map(|r| r["resourceNames"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

/// unifiedAuth: subjects granted `clusters/proxy` become impersonation rules pushed to the
/// member through Works in its execution space.
#[test]
fn unified_auth_pushes_impersonation_rbac() {
    let server = Server::start();
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: karmada-es-m1}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1}
spec:
  syncMode: Push
  apiEndpoint: https://127.0.0.1:1
  secretRef: {namespace: karmada-cluster, name: m1}
  impersonatorSecretRef: {namespace: karmada-cluster, name: m1-impersonator}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: proxy-m1}
rules:
- apiGroups: [cluster.karmada.io]
  resources: [clusters/proxy]
  resourceNames: [m1]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: proxy-m1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: proxy-m1}
subjects:
- {kind: User, name: alice}
- {kind: Group, name: ops}
"#,
    );
    let role_work = wait_for("the impersonator ClusterRole work", DEADLINE, || {
        work(&server, "m1", "ClusterRole").filter(|w| {
            impersonated(w, "users").contains(&"alice".to_string())
                && impersonated(w, "groups").contains(&"ops".to_string())
        })
    });
    let manifest = &role_work["spec"]["workload"]["manifests"][0];
    assert_eq!(manifest["kind"], "ClusterRole");
    assert_eq!(manifest["metadata"]["name"], "karmada-impersonator");
    assert_eq!(manifest["metadata"]["labels"]["karmada.io/managed"], "true");
    assert_eq!(
        role_work["metadata"]["finalizers"][0],
        "karmada.io/execution-controller"
    );
    let cluster = server.get_json(&["clusters.cluster.karmada.io", "m1"]);
    let owner = &role_work["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Cluster");
    assert_eq!(owner["uid"], cluster["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);

    let binding_work = wait_for("the impersonator ClusterRoleBinding work", DEADLINE, || {
        work(&server, "m1", "ClusterRoleBinding")
    });
    let b = &binding_work["spec"]["workload"]["manifests"][0];
    assert_eq!(b["roleRef"]["name"], "karmada-impersonator");
    assert_eq!(b["subjects"][0]["kind"], "ServiceAccount");
    assert_eq!(b["subjects"][0]["name"], "karmada-impersonator");
    assert_eq!(b["subjects"][0]["namespace"], "karmada-cluster");

    // A newly granted user is added; a grant for another cluster changes nothing here.
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "proxy-m1-bob",
        "--clusterrole=proxy-m1",
        "--user=bob",
        "--serviceaccount=default:robot",
    ]);
    let w = wait_for("bob in the impersonation rules", DEADLINE, || {
        work(&server, "m1", "ClusterRole")
            .filter(|w| impersonated(w, "users").contains(&"bob".to_string()))
    });
    assert!(impersonated(&w, "serviceaccounts").contains(&"robot".to_string()));
    assert!(impersonated(&w, "users").contains(&"alice".to_string()));
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: proxy-m2}
rules:
- apiGroups: [cluster.karmada.io]
  resources: [clusters/proxy]
  resourceNames: [m2]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: proxy-m2}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: proxy-m2}
subjects:
- {kind: User, name: carol}
"#,
    );
    // Revoking alice's binding removes her; carol's grant for m2 never reaches m1.
    server.kubectl_ok(&["delete", "clusterrolebinding", "proxy-m1"]);
    let w = wait_for("alice removed", DEADLINE, || {
        work(&server, "m1", "ClusterRole")
            .filter(|w| !impersonated(w, "users").contains(&"alice".to_string()))
    });
    assert!(impersonated(&w, "users").contains(&"bob".to_string()));
    assert!(!impersonated(&w, "users").contains(&"carol".to_string()));
    assert!(!impersonated(&w, "groups").contains(&"ops".to_string()));
}
