//! End-to-end: kubectl against `karmada-rs serve` — create, get, list, watch, delete.

mod support;

use serde_json::{Value, json};
use support::{Backend, DEADLINE, Server, wait_for};

fn crud_roundtrip(s: &Server) {
    s.kubectl_ok(&["create", "configmap", "c1", "--from-literal=a=1"]);
    let cm = s.get_json(&["configmap", "c1"]);
    assert_eq!(cm["data"]["a"], "1");
    assert!(
        cm["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    let rv: i64 = cm["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("numeric resourceVersion");
    assert!(rv > 0);

    let table = s.kubectl_ok(&["get", "configmaps"]);
    assert!(table.contains("DATA"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("c1 ")), "{table}");

    let err = s.kubectl_err(&["create", "configmap", "c1", "--from-literal=a=2"]);
    assert!(err.contains("configmaps \"c1\" already exists"), "{err}");

    s.kubectl_ok(&["delete", "configmap", "c1"]);
    let err = s.kubectl_err(&["get", "configmap", "c1"]);
    assert!(
        err.contains("NotFound") && err.contains("\"c1\" not found"),
        "{err}"
    );
}

#[test]
fn crud_embedded() {
    let s = Server::start();
    crud_roundtrip(&s);
}

#[test]
fn crud_etcd() {
    let s = Server::start_with(Backend::Etcd, &[]);
    crud_roundtrip(&s);
}

/// Over an etcd started with its defaults (no progress notification for 10 minutes, and
/// Debian's 3.4 answers no progress request in order), reads of a quiet resource after the
/// store moved on elsewhere are answered at once, not after a wait for an event that never
/// comes: a consistent list, a list and a get not older than a revision the resource's cache
/// has not seen, and a watch from the list's resourceVersion, which then gets the next change.
#[test]
fn quiet_resources_over_an_etcd_with_its_defaults() {
    use futures::StreamExt;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{Api, ListParams, PostParams, VersionMatch, WatchEvent, WatchParams};

    let s = Server::start_with(Backend::Etcd, &[]);
    s.kubectl_ok(&["create", "namespace", "quiet"]);
    s.kubectl_ok(&["-n", "quiet", "create", "configmap", "a"]);
    // The store's revision moves on, away from ConfigMaps.
    for i in 0..5 {
        s.kubectl_ok(&["create", "secret", "generic", &format!("s{i}")]);
    }
    s.block_on(async {
        let client = s.client().await;
        let cms: Api<ConfigMap> = Api::namespaced(client, "quiet");
        let list = cms
            .list(&ListParams::default())
            .await
            .expect("consistent list");
        assert_eq!(list.items.len(), 1);
        let rv = list
            .metadata
            .resource_version
            .expect("list resourceVersion");
        let not_older = ListParams::default()
            .at(&rv)
            .matching(VersionMatch::NotOlderThan);
        let again = cms
            .list(&not_older)
            .await
            .expect("list not older than the list's");
        assert_eq!(again.items.len(), 1);
        let got = s.kubectl_ok(&[
            "get",
            "--raw",
            &format!("/api/v1/namespaces/quiet/configmaps/a?resourceVersion={rv}"),
        ]);
        assert!(got.contains("\"name\":\"a\""), "{got}");

        let mut events = cms
            .watch(&WatchParams::default().timeout(60), &rv)
            .await
            .expect("watch from the list's resourceVersion")
            .boxed();
        cms.create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "metadata": {"name": "b"}
            }))
            .expect("ConfigMap"),
        )
        .await
        .expect("create b");
        let added = tokio::time::timeout(DEADLINE, events.next())
            .await
            .expect("no event for b")
            .expect("watch open")
            .expect("event");
        match added {
            WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("b")),
            other => panic!("expected ADDED b, got {other:?}"),
        }
    });
}

#[test]
fn data_survives_restart() {
    let mut s = Server::start();
    s.kubectl_ok(&["create", "namespace", "keep"]);
    s.kubectl_ok(&[
        "-n",
        "keep",
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=k=v",
    ]);
    s.restart();
    let sec = s.get_json(&["-n", "keep", "secret", "s1"]);
    assert_eq!(sec["data"]["k"], "dg==");
    wait_for("namespace listed after restart", DEADLINE, || {
        s.kubectl_ok(&["get", "ns"]).contains("keep").then_some(())
    });
}

const WEB: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: "nginx:1.25"}]}
"#;

const WORK: &str = r#"
apiVersion: work.karmada.io/v1alpha1
kind: Work
metadata: {name: w1, namespace: default}
spec:
  workload:
    manifests:
    - apiVersion: v1
      kind: ConfigMap
      metadata: {name: c, namespace: default}
      data: {k: v, n: "2.50"}
"#;

fn rv(obj: &Value) -> i64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .expect("numeric resourceVersion")
}

fn managers(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Writes through the status subresource change the status (and its managedFields entry) and
/// nothing else, whatever else the patch names; every answer carries the whole object.
fn status_writes_change_only_status(s: &Server) {
    s.kubectl_stdin_ok(&["apply", "-f", "-"], WEB);
    let get = |what: &[&str]| {
        let mut args = what.to_vec();
        args.push("--show-managed-fields");
        s.get_json(&args)
    };
    let patch = |what: &[&str], kind: &str, body: &str, extra: &[&str]| -> Value {
        let mut args = vec!["patch"];
        args.extend_from_slice(what);
        args.extend_from_slice(&[
            "--subresource=status",
            "--type",
            kind,
            "-p",
            body,
            "-o",
            "json",
            "--show-managed-fields",
        ]);
        args.extend_from_slice(extra);
        serde_json::from_str(&s.kubectl_ok(&args)).expect("patched object as JSON")
    };
    let web = ["deployment", "web"];
    let before = get(&web);

    // A merge patch that also names spec: only status changes.
    let patched = patch(
        &web,
        "merge",
        r#"{"spec":{"replicas":9},"status":{"replicas":2,"readyReplicas":1}}"#,
        &[],
    );
    assert_eq!(patched["spec"], before["spec"]);
    assert_eq!(patched["status"]["readyReplicas"], 1);
    assert!(rv(&patched) > rv(&before));
    assert_eq!(get(&web), patched, "the answer is what is stored");
    let entries = managers(&patched);
    let creator = managers(&before)
        .into_iter()
        .find(|m| m["operation"] == "Update" && m.get("subresource").is_none())
        .expect("creator's entry");
    assert!(entries.contains(&creator), "{entries:#?}");
    assert!(
        entries.iter().any(|m| m["manager"] == "kubectl-patch"
            && m["subresource"] == "status"
            && m["fieldsV1"]["f:status"]["f:readyReplicas"] == json!({})),
        "{entries:#?}"
    );

    // Strategic merge of a list in status.
    let patched = patch(
        &web,
        "strategic",
        r#"{"status":{"conditions":[{"type":"Available","status":"True","reason":"MinimumReplicasAvailable","message":"ok"}]}}"#,
        &[],
    );
    assert_eq!(patched["status"]["conditions"][0]["type"], "Available");
    assert_eq!(patched["status"]["readyReplicas"], 1);
    assert_eq!(patched["spec"], before["spec"]);

    // A dry run answers with the whole would-be object and stores nothing.
    let stored = get(&web);
    let dry = patch(
        &web,
        "merge",
        r#"{"status":{"readyReplicas":2}}"#,
        &["--dry-run=server"],
    );
    assert_eq!(dry["spec"], before["spec"]);
    assert_eq!(dry["status"]["readyReplicas"], 2);
    assert_eq!(get(&web), stored);

    // A patch that changes nothing keeps the resourceVersion and answers with the object.
    let same = patch(&web, "merge", r#"{"status":{"readyReplicas":1}}"#, &[]);
    assert_eq!(same, stored);

    // A JSON patch may test any member.
    let patched = patch(
        &web,
        "json",
        r#"[{"op":"test","path":"/spec/replicas","value":2},{"op":"replace","path":"/status/readyReplicas","value":2}]"#,
        &[],
    );
    assert_eq!(patched["status"]["readyReplicas"], 2);
    assert_eq!(patched["spec"], before["spec"]);

    // A Karmada kind whose schema requires spec.
    s.kubectl_stdin_ok(&["apply", "-f", "-"], WORK);
    let work = ["work", "w1"];
    let before = get(&work);
    let patched = patch(
        &work,
        "merge",
        r#"{"status":{"conditions":[{"type":"Applied","status":"True","reason":"AppliedSuccessful","message":"applied","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
        &[],
    );
    assert_eq!(patched["spec"], before["spec"]);
    assert_eq!(
        patched["status"]["conditions"][0]["reason"],
        "AppliedSuccessful"
    );
    assert_eq!(get(&work), patched);
    // The status is still validated against the kind's schema.
    let err = s.kubectl_err(&[
        "patch",
        "work",
        "w1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Applied"}]}}"#,
    ]);
    assert!(
        err.contains("is invalid") && err.contains("status.conditions[0]"),
        "{err}"
    );
    assert_eq!(get(&work), patched);

    // An answer in another form than the stored JSON (metadata only) is built from the
    // whole stored object.
    let (code, body) = s.block_on(async {
        let kc = kube::config::Kubeconfig::read_from(&s.kubeconfig).expect("kubeconfig");
        let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
            .await
            .expect("config");
        let c = kube::Client::try_from(cfg).expect("client");
        let req = http::Request::builder()
            .method("PATCH")
            .uri("/apis/apps/v1/namespaces/default/deployments/web/status")
            .header("content-type", "application/merge-patch+json")
            .header(
                "accept",
                "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
            )
            .body(br#"{"status":{"readyReplicas":0}}"#.to_vec().into())
            .expect("request");
        let resp = c.send(req).await.expect("send");
        let code = resp.status().as_u16();
        let body = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .expect("body")
            .to_bytes();
        (code, body)
    });
    assert_eq!(code, 200, "{}", String::from_utf8_lossy(&body));
    let meta: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(meta["kind"], "PartialObjectMetadata");
    assert_eq!(meta["metadata"]["name"], "web");
    assert_eq!(
        meta["metadata"]["resourceVersion"],
        get(&web)["metadata"]["resourceVersion"]
    );
}

#[test]
fn status_writes_embedded() {
    let s = Server::start();
    status_writes_change_only_status(&s);
}

#[test]
fn status_writes_etcd() {
    let s = Server::start_with(Backend::Etcd, &[]);
    status_writes_change_only_status(&s);
}

/// `/version` keeps kubectl's 1.32 and reports the real build: this checkout's commit, a build
/// date that has passed, the Rust compiler and the target platform in Go's words.
#[test]
fn version_reports_the_real_build() {
    let s = Server::start();
    let out = s.kubectl_ok(&["version", "-o", "json"]);
    let doc: Value = serde_json::from_str(&out).expect("kubectl version JSON");
    let v = &doc["serverVersion"];
    assert_eq!(
        (v["major"].as_str(), v["minor"].as_str()),
        (Some("1"), Some("32")),
        "{v}"
    );
    let git_version = v["gitVersion"].as_str().expect("gitVersion");
    let release = concat!("v1.32.0+karmada-rs-", env!("CARGO_PKG_VERSION"));
    assert!(git_version.starts_with(release), "{git_version}");
    assert_eq!(v["compiler"], "rustc");
    assert!(
        v["goVersion"]
            .as_str()
            .is_some_and(|c| c.starts_with("rustc 1.")),
        "{v}"
    );
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    assert_eq!(v["platform"], format!("{os}/{arch}"));

    // The build date: kube's form, not in the future, not the epoch.
    let date = v["buildDate"].as_str().expect("buildDate");
    let shape: String = date
        .chars()
        .map(|c| if c.is_ascii_digit() { '9' } else { c })
        .collect();
    assert_eq!(shape, "9999-99-99T99:99:99Z", "{date}");
    let now = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .expect("date");
    let now = String::from_utf8_lossy(&now.stdout).trim().to_string();
    assert!(
        date <= now.as_str() && date >= "2025-01-01",
        "{date} vs now {now}"
    );

    // The commit is this checkout's, when it is one (a tarball has none).
    let head = std::process::Command::new("git")
        .arg("-C")
        .arg(env!("CARGO_MANIFEST_DIR"))
        .args(["rev-parse", "--verify", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match head {
        Some(head) => {
            assert_eq!(v["gitCommit"], head.as_str());
            assert!(
                git_version.starts_with(&format!("{release}-g{}", &head[..12])),
                "{git_version}"
            );
            let state = v["gitTreeState"].as_str().expect("gitTreeState");
            assert!(state == "clean" || state == "dirty", "{state}");
            assert_eq!(git_version.ends_with("-dirty"), state == "dirty");
        }
        None => assert_eq!(v["gitCommit"], ""),
    }
}

/// An etcd that requires TLS client certificates, reached with kube-apiserver's flags
/// (`--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`): objects land in that etcd; without
/// the certificate the server refuses to start, with a clear error.
#[test]
fn etcd_with_client_certificates() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let tls = support::TlsEtcd::start(&rt);
    let (etcd, endpoint) = (&tls.etcd, tls.endpoint());
    assert!(endpoint.starts_with("https://"), "{endpoint}");
    let (ca_file, cert_file, key_file) = (&tls.ca_file, &tls.cert_file, &tls.key_file);

    let s = Server::start_with(
        Backend::Embedded,
        &[
            "--etcd-servers",
            &endpoint,
            "--etcd-cafile",
            ca_file,
            "--etcd-certfile",
            cert_file,
            "--etcd-keyfile",
            key_file,
        ],
    );
    crud_roundtrip(&s);
    s.kubectl_ok(&["create", "configmap", "over-tls", "--from-literal=k=v"]);
    let store = rt
        .block_on(etcd.store())
        .expect("a client of the test's own");
    let (kv, _) = rt
        .block_on(storage::Store::get(
            &*store,
            "/registry/configmaps/default/over-tls",
        ))
        .expect("read etcd");
    assert!(kv.is_some(), "the ConfigMap is stored in the TLS etcd");
    assert!(
        !s.dir.path().join("store").exists(),
        "no embedded store was opened"
    );

    let serve = |extra: &[&str]| {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .args(["--etcd-servers", &endpoint])
            .args(extra)
            .env("KARMADA_RS_LOG", "error")
            .output()
            .expect("run karmada-rs serve");
        assert!(!out.status.success(), "{extra:?} started");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // etcd refuses a client without a certificate.
    let err = serve(&["--etcd-cafile", ca_file]);
    assert!(err.contains("etcd"), "{err}");
    // A certificate without its key, or a file that cannot be read, is refused up front.
    let err = serve(&["--etcd-cafile", ca_file, "--etcd-certfile", cert_file]);
    assert!(err.contains("--etcd-keyfile"), "{err}");
    let missing = tls.files.path().join("missing.crt").display().to_string();
    let err = serve(&["--etcd-cafile", &missing]);
    assert!(
        err.contains("reading the etcd TLS files") && err.contains(&missing),
        "{err}"
    );
}

/// `apiserver_storage_size_bytes{storage_cluster_id="etcd-0"}` as this server reports it.
fn storage_size(s: &Server) -> u64 {
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    metrics
        .lines()
        .find_map(|l| {
            l.strip_prefix("apiserver_storage_size_bytes{storage_cluster_id=\"etcd-0\"} ")
        })
        .unwrap_or_else(|| panic!("no apiserver_storage_size_bytes sample in /metrics"))
        .parse()
        .expect("a byte count")
}

/// The bytes of every file under `dir`.
fn files_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let e = e.expect("entry");
            let meta = e.metadata().expect("metadata");
            if meta.is_dir() {
                files_size(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// etcd's own `etcd_mvcc_db_total_size_in_bytes`, from its /metrics on the client URL.
fn etcd_db_size(endpoint: &str) -> u64 {
    use std::io::{Read, Write};
    let addr = endpoint.trim_start_matches("http://");
    let mut conn = std::net::TcpStream::connect(addr).expect("connect to etcd");
    write!(conn, "GET /metrics HTTP/1.0\r\nHost: {addr}\r\n\r\n").expect("request");
    let mut body = String::new();
    conn.read_to_string(&mut body).expect("response");
    body.lines()
        .find_map(|l| l.strip_prefix("etcd_mvcc_db_total_size_in_bytes "))
        .expect("etcd_mvcc_db_total_size_in_bytes")
        .trim()
        .parse::<f64>()
        .expect("a number") as u64
}

#[test]
fn the_storage_size_is_etcds_db_size_or_the_embedded_files() {
    // etcd: the dbSize etcd reports for itself (read between two scrapes, as the Leases the
    // controllers renew keep writing).
    let s = Server::start_with(Backend::Etcd, &[]);
    let endpoint = s.etcd_endpoints().expect("etcd")[0].clone();
    wait_for("our size to match etcd's", DEADLINE, || {
        let before = storage_size(&s);
        let etcd = etcd_db_size(&endpoint);
        let after = storage_size(&s);
        (before > 0 && before <= etcd && etcd <= after).then_some(())
    });

    // Embedded: the bytes of the store's files (its log segments are allocated ahead, so the
    // figure moves in steps of a segment, not with each write).
    let s = Server::start();
    let store = s.data_path("store");
    wait_for("our size to match the store's files", DEADLINE, || {
        let before = storage_size(&s);
        let files = files_size(&store);
        let after = storage_size(&s);
        (before > 0 && before <= files && files <= after).then_some(())
    });
}
