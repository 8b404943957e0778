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
