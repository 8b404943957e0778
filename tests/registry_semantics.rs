//! Registry semantics kube-apiserver clients rely on (issue 18): dry runs that answer what a
//! real write would store, the resourceVersion and type-meta rules of custom resources,
//! bookmarks before a watch times out, 405s for methods a path does not serve, and the
//! wording of selector and precondition errors. Real kubectl and raw HTTPS against
//! `karmada-rs serve`.

mod support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{DEADLINE, Server, wait_for};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

/// Sends one request; returns the status code and the body as JSON (`null` when not JSON).
fn raw(s: &Server, method: &str, path: &str, content_type: &str, body: &str) -> (u16, Value) {
    s.block_on(async {
        let c = s.client().await;
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", content_type)
            .body(body.as_bytes().to_vec().into())
            .expect("request");
        let resp = c.send(req).await.expect("send");
        let code = resp.status().as_u16();
        let bytes = http_body_util::BodyExt::collect(resp.into_body())
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
    })
}

/// The whole body of a request whose answer ends by itself (a watch with timeoutSeconds),
/// and how long it took.
fn raw_text(s: &Server, path: &str) -> (String, Duration) {
    s.block_on(async {
        let c = s.client().await;
        let started = Instant::now();
        let req = http::Request::get(path).body(Vec::new()).expect("request");
        let text = tokio::time::timeout(DEADLINE, c.request_text(req))
            .await
            .expect("the watch ends")
            .expect("watch");
        (text, started.elapsed())
    })
}

fn json_body(v: &Value) -> String {
    v.to_string()
}

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn with_widgets(s: &Server) {
    s.kubectl_stdin_ok(&["apply", "-f", "-"], WIDGET_CRD);
    s.kubectl_ok(&[
        "wait",
        "--for=condition=Established",
        "crd/widgets.example.com",
        "--timeout=60s",
    ]);
    wait_for("widgets to be served", DEADLINE, || {
        let (code, _) = raw(s, "GET", WIDGETS, "application/json", "");
        (code == 200).then_some(())
    });
}

fn assert_status(got: &(u16, Value), code: u16, reason: &str, message: &str) {
    let (c, body) = got;
    assert_eq!(*c, code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["code"], code, "{body}");
    assert_eq!(body["reason"], reason, "{body}");
    assert_eq!(body["message"], message, "{body}");
}

/// Item 2: a dry run answers what the write would store, and `kubectl diff` of an unchanged
/// object is empty (exit 0), whether kubectl created or applied it.
#[test]
fn dry_runs_answer_what_a_write_would_store() {
    let s = Server::start();
    with_widgets(&s);
    s.kubectl_ok(&["create", "configmap", "created", "--from-literal=a=1"]);
    let applied = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
data:
  a: "1"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: nginx
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: pp
spec:
  resourceSelectors:
  - apiVersion: apps/v1
    kind: Deployment
    name: web
  placement:
    clusterAffinity:
      clusterNames: [member1]
---
apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 1
"#;
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("applied.yaml");
    std::fs::write(&file, applied).expect("write manifest");
    let file = file.to_str().expect("path");
    s.kubectl_ok(&["apply", "-f", file]);
    let created_file = dir.path().join("created.yaml");
    std::fs::write(
        &created_file,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: created\ndata:\n  a: \"1\"\n",
    )
    .expect("write manifest");
    let created_file = created_file.to_str().expect("path");

    // Unchanged objects: nothing to show.
    for f in [file, created_file] {
        let out = s.kubectl(&["diff", "-f", f]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "kubectl diff -f {f}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A change shows only the change.
    let changed = dir.path().join("changed.yaml");
    std::fs::write(
        &changed,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: created\ndata:\n  a: \"2\"\n",
    )
    .expect("write manifest");
    let out = s.kubectl(&["diff", "-f", changed.to_str().expect("path")]);
    let diff = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{diff}");
    assert!(diff.contains("+  a: \"2\""), "{diff}");
    for unwanted in ["resourceVersion", "annotations: {}", "generation"] {
        assert!(!diff.contains(unwanted), "{unwanted} in\n{diff}");
    }

    // A dry-run create of an existing object fails as the create would.
    let err = s.kubectl_err(&["create", "--dry-run=server", "-f", created_file]);
    assert!(
        err.contains("AlreadyExists") && err.contains("configmaps \"created\" already exists"),
        "{err}"
    );
    let cm = s.get_json(&["configmap", "created"]);
    let cm_rv = rv(&cm);

    // Dry-run update, patch and apply: the stored result, based on the current version.
    let mut replaced = cm.clone();
    replaced["data"]["a"] = json!("3");
    let put = raw(
        &s,
        "PUT",
        &format!("{CMS}/created?dryRun=All"),
        "application/json",
        &json_body(&replaced),
    );
    assert_eq!(put.0, 200, "{}", put.1);
    assert_eq!(rv(&put.1), cm_rv, "{}", put.1);
    assert_eq!(put.1["data"]["a"], "3");
    let patched = raw(
        &s,
        "PATCH",
        &format!("{CMS}/created?dryRun=All"),
        "application/merge-patch+json",
        r#"{"data":{"b":"x"},"metadata":{"annotations":{}}}"#,
    );
    assert_eq!(patched.0, 200, "{}", patched.1);
    assert_eq!(rv(&patched.1), cm_rv, "{}", patched.1);
    assert!(
        patched.1["metadata"].get("annotations").is_none(),
        "no empty map is stored: {}",
        patched.1
    );
    let applied_cm = raw(
        &s,
        "PATCH",
        &format!("{CMS}/created?dryRun=All&fieldManager=test&force=true"),
        "application/apply-patch+yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: created\ndata:\n  c: \"y\"\n",
    );
    assert_eq!(applied_cm.0, 200, "{}", applied_cm.1);
    assert_eq!(rv(&applied_cm.1), cm_rv, "{}", applied_cm.1);
    assert_eq!(applied_cm.1["data"]["c"], "y");
    // A dry-run create of a new object: no resourceVersion (nothing was stored), as kube.
    let new = raw(
        &s,
        "POST",
        &format!("{CMS}?dryRun=All"),
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fresh","annotations":{}}}"#,
    );
    assert_eq!(new.0, 201, "{}", new.1);
    assert!(
        new.1["metadata"].get("resourceVersion").is_none(),
        "{}",
        new.1
    );
    assert!(new.1["metadata"].get("annotations").is_none(), "{}", new.1);
    assert!(new.1["metadata"]["uid"].is_string(), "{}", new.1);

    // None of it was stored.
    let after = s.get_json(&["configmap", "created"]);
    assert_eq!(rv(&after), cm_rv);
    assert_eq!(after["data"], json!({"a": "1"}));
    assert!(!s.kubectl(&["get", "configmap", "fresh"]).status.success());
}

/// Item 7: an update of a custom resource must name the resourceVersion it replaces (422
/// otherwise), while built-in kinds that allow it update unconditionally.
#[test]
fn custom_resource_updates_need_a_resource_version() {
    let s = Server::start();
    with_widgets(&s);
    let (code, w) = raw(
        &s,
        "POST",
        WIDGETS,
        "application/json",
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":1}}"#,
    );
    assert_eq!(code, 201, "{w}");
    let unconditional = r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":2}}"#;
    let got = raw(
        &s,
        "PUT",
        &format!("{WIDGETS}/w1"),
        "application/json",
        unconditional,
    );
    assert_status(
        &got,
        422,
        "Invalid",
        "widgets.example.com \"w1\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update",
    );
    assert_eq!(got.1["details"]["kind"], "widgets");
    assert_eq!(
        got.1["details"]["causes"][0]["field"],
        "metadata.resourceVersion"
    );
    // The same through the status subresource and through a patch that drops it.
    let got = raw(
        &s,
        "PATCH",
        &format!("{WIDGETS}/w1"),
        "application/json-patch+json",
        r#"[{"op":"remove","path":"/metadata/resourceVersion"}]"#,
    );
    assert_eq!(got.0, 422, "{}", got.1);
    // Nothing changed; with the resourceVersion the update goes through.
    let current: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "widget", "w1", "-o", "json"])).expect("json");
    assert_eq!(current["spec"]["size"], 1);
    let mut conditional = current.clone();
    conditional["spec"]["size"] = json!(3);
    let got = raw(
        &s,
        "PUT",
        &format!("{WIDGETS}/w1"),
        "application/json",
        &json_body(&conditional),
    );
    assert_eq!(got.0, 200, "{}", got.1);
    assert_eq!(got.1["spec"]["size"], 3);
    // A ConfigMap allows unconditional updates.
    s.kubectl_ok(&["create", "configmap", "c1", "--from-literal=a=1"]);
    let got = raw(
        &s,
        "PUT",
        &format!("{CMS}/c1"),
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"},"data":{"a":"2"}}"#,
    );
    assert_eq!(got.0, 200, "{}", got.1);
    assert_eq!(got.1["data"]["a"], "2");
}

/// Item 8: kinds served from CRDs are decoded unstructured: a body without `kind` or
/// `apiVersion` is a 400, while a built-in kind takes both from the URL.
#[test]
fn custom_resource_bodies_need_kind_and_api_version() {
    let s = Server::start();
    with_widgets(&s);
    let no_kind = r#"{"apiVersion":"example.com/v1","metadata":{"name":"w1"}}"#;
    assert_status(
        &raw(&s, "POST", WIDGETS, "application/json", no_kind),
        400,
        "BadRequest",
        &format!(
            "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{no_kind}' ({{\"apiVersion\":\"example.com/v1\" ...)"
        ),
    );
    assert_status(
        &raw(
            &s,
            "POST",
            WIDGETS,
            "application/json",
            r#"{"kind":"Widget","metadata":{"name":"w1"}}"#,
        ),
        400,
        "BadRequest",
        "Widget in version \"\" cannot be handled as a Widget: /, Kind=Widget is unstructured and is not suitable for converting to \"example.com/v1\"",
    );
    // Karmada's kinds are CRDs in Karmada: the same rule.
    let got = raw(
        &s,
        "POST",
        "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies",
        "application/json",
        r#"{"apiVersion":"policy.karmada.io/v1alpha1","metadata":{"name":"pp"},"spec":{"resourceSelectors":[{"apiVersion":"v1","kind":"ConfigMap"}]}}"#,
    );
    assert_eq!(got.0, 400, "{}", got.1);
    assert!(
        got.1["message"]
            .as_str()
            .is_some_and(|m| m.contains("Object 'Kind' is missing")),
        "{}",
        got.1
    );
    // An update (PUT) decodes the same way.
    let (code, _) = raw(
        &s,
        "POST",
        WIDGETS,
        "application/json",
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"}}"#,
    );
    assert_eq!(code, 201);
    let got = raw(
        &s,
        "PUT",
        &format!("{WIDGETS}/w1"),
        "application/json",
        r#"{"apiVersion":"example.com/v1","metadata":{"name":"w1"}}"#,
    );
    assert_eq!(got.0, 400, "{}", got.1);
    // A built-in kind is typed: kind and apiVersion come from the URL.
    let got = raw(
        &s,
        "POST",
        CMS,
        "application/json",
        r#"{"metadata":{"name":"typed"},"data":{"a":"1"}}"#,
    );
    assert_eq!(got.0, 201, "{}", got.1);
    assert_eq!(got.1["kind"], "ConfigMap");
    assert_eq!(got.1["apiVersion"], "v1");
    assert!(!s.kubectl(&["get", "widget", "w2"]).status.success());
}

/// Parses a watch body into its events.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("event JSON"))
        .collect()
}

/// Item 9: a watch that allows bookmarks gets one, with the current resourceVersion, shortly
/// before the server ends it at `timeoutSeconds`; built-in kinds and custom resources alike.
#[test]
fn watches_get_a_bookmark_before_they_time_out() {
    let s = Server::start();
    with_widgets(&s);
    s.kubectl_ok(&["create", "configmap", "c1", "--from-literal=a=1"]);
    let (code, _) = raw(
        &s,
        "POST",
        WIDGETS,
        "application/json",
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w1"}}"#,
    );
    assert_eq!(code, 201);
    for (collection, kind, api_version) in [
        (CMS, "ConfigMap", "v1"),
        (WIDGETS, "Widget", "example.com/v1"),
    ] {
        let (_, list) = raw(&s, "GET", collection, "application/json", "");
        let list_rv: i64 = rv(&list).parse().expect("list resourceVersion");
        let (body, took) = raw_text(
            &s,
            &format!(
                "{collection}?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion={list_rv}"
            ),
        );
        assert!(
            took >= Duration::from_secs(2) && took < Duration::from_secs(20),
            "the watch lasts its timeout: {took:?}"
        );
        let evs = events(&body);
        let last = evs.last().unwrap_or_else(|| panic!("no event in {body}"));
        assert_eq!(last["type"], "BOOKMARK", "{body}");
        assert_eq!(last["object"]["kind"], kind);
        assert_eq!(last["object"]["apiVersion"], api_version);
        let bookmark_rv: i64 = rv(&last["object"])
            .parse()
            .expect("bookmark resourceVersion");
        assert!(bookmark_rv >= list_rv, "{body}");
        // Without allowWatchBookmarks there is none.
        let (body, _) = raw_text(
            &s,
            &format!("{collection}?watch=1&timeoutSeconds=3&resourceVersion={list_rv}"),
        );
        assert!(
            events(&body).iter().all(|e| e["type"] != "BOOKMARK"),
            "{body}"
        );
    }
    // A watch too short for a bookmark before its deadline gets none, as kube's.
    let (body, _) = raw_text(
        &s,
        &format!("{CMS}?watch=1&allowWatchBookmarks=true&timeoutSeconds=1"),
    );
    assert!(
        events(&body).iter().all(|e| e["type"] != "BOOKMARK"),
        "{body}"
    );
}

/// Item 12: a method no route of the path serves is 405 with go-restful's message; a patch
/// that renames the object is 400; invalid options are kube's 422.
#[test]
fn status_codes_of_unserved_methods_renames_and_options() {
    let s = Server::start();
    s.kubectl_ok(&["create", "configmap", "c1", "--from-literal=a=1"]);
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1"}}"#;
    let not_allowed = "the server does not allow this method on the requested resource";
    for (method, path, body) in [
        ("POST", format!("{CMS}/c1"), cm),
        ("PUT", CMS.to_string(), cm),
        ("PATCH", CMS.to_string(), "{}"),
        ("POST", "/api/v1/configmaps".to_string(), cm),
        ("DELETE", "/api/v1/namespaces".to_string(), ""),
        (
            "POST",
            "/apis/apps/v1/namespaces/default/deployments/web/status".to_string(),
            "{}",
        ),
        (
            "DELETE",
            "/apis/apps/v1/namespaces/default/deployments/web/scale".to_string(),
            "",
        ),
        (
            "GET",
            "/api/v1/namespaces/default/serviceaccounts/default/token".to_string(),
            "",
        ),
        (
            "GET",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews".to_string(),
            "",
        ),
        ("POST", "/version".to_string(), "{}"),
    ] {
        let ct = if method == "PATCH" {
            "application/merge-patch+json"
        } else {
            "application/json"
        };
        let got = raw(&s, method, &path, ct, body);
        assert_status(&got, 405, "MethodNotAllowed", not_allowed);
        assert_eq!(got.1["details"], json!({}), "{method} {path}");
    }
    // Paths no route serves at all are 404.
    for path in [
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews/x",
        "/api/v1/configmaps/c1",
    ] {
        assert_eq!(
            raw(&s, "GET", path, "application/json", "").0,
            404,
            "{path}"
        );
    }
    // kubectl says it the same way.
    let err = s.kubectl_err(&["delete", "--raw", "/api/v1/namespaces"]);
    assert!(err.contains("MethodNotAllowed"), "{err}");
    // Namespaces list no deletecollection verb in discovery.
    let (_, v1) = raw(&s, "GET", "/api/v1", "application/json", "");
    let ns = v1["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "namespaces"))
        .cloned()
        .unwrap_or_default();
    assert!(
        !ns["verbs"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v == "deletecollection"),
        "{ns}"
    );

    // A patch may not rename an object or move it to another namespace.
    assert_status(
        &raw(
            &s,
            "PATCH",
            &format!("{CMS}/c1"),
            "application/merge-patch+json",
            r#"{"metadata":{"name":"c2"}}"#,
        ),
        400,
        "BadRequest",
        "the name of the object (c2) does not match the name on the URL (c1)",
    );
    assert_status(
        &raw(
            &s,
            "PATCH",
            &format!("{CMS}/c1"),
            "application/json-patch+json",
            r#"[{"op":"replace","path":"/metadata/namespace","value":"kube-system"}]"#,
        ),
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    );
    let err = s.kubectl_err(&[
        "patch",
        "configmap",
        "c1",
        "--type=merge",
        "-p",
        r#"{"metadata":{"name":"c2"}}"#,
    ]);
    assert!(err.contains("BadRequest"), "{err}");

    // Invalid options: 422 naming the options kind.
    let fresh = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c9"}}"#;
    assert_status(
        &raw(
            &s,
            "POST",
            &format!("{CMS}?fieldValidation=Loose"),
            "application/json",
            fresh,
        ),
        422,
        "Invalid",
        "CreateOptions.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
    );
    assert_status(
        &raw(
            &s,
            "PUT",
            &format!("{CMS}/c1?dryRun=Some"),
            "application/json",
            cm,
        ),
        422,
        "Invalid",
        "UpdateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Some\"}: supported values: \"All\"",
    );
    assert_status(
        &raw(
            &s,
            "PATCH",
            &format!("{CMS}/c1?fieldValidation=strict&force=true"),
            "application/merge-patch+json",
            "{}",
        ),
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: [force: Forbidden: may not be specified for non-apply patch, fieldValidation: Unsupported value: \"strict\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]",
    );
    assert!(!s.kubectl(&["get", "configmap", "c9"]).status.success());
}

/// Item 13: the wording people search for: unsupported field selectors per kind, and failed
/// delete preconditions (rest.BeforeDelete's conflicts).
#[test]
fn selector_and_precondition_messages_match_kube_apiserver() {
    let s = Server::start();
    with_widgets(&s);
    s.kubectl_ok(&["create", "configmap", "c1", "--from-literal=a=1"]);
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    for (path, message) in [
        (
            format!("{WIDGETS}?fieldSelector=spec.foo%3Dbar"),
            "field label not supported: spec.foo".to_string(),
        ),
        (
            "/apis/policy.karmada.io/v1alpha1/propagationpolicies?fieldSelector=spec.foo%3Dbar"
                .to_string(),
            "field label not supported: spec.foo".to_string(),
        ),
        (
            "/api/v1/pods?fieldSelector=spec.foo%3Dbar".to_string(),
            "field label not supported: spec.foo".to_string(),
        ),
        (
            format!("{CMS}?fieldSelector=spec.foo%3Dbar"),
            "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                .to_string(),
        ),
        (
            "/apis/batch/v1/jobs?fieldSelector=spec.foo%3Dbar".to_string(),
            "field label \"spec.foo\" not supported for batchv1.Job".to_string(),
        ),
        (
            "/api/v1/nodes?fieldSelector=metadata.namespace%3Ddefault".to_string(),
            "field label not supported: metadata.namespace".to_string(),
        ),
        (
            format!("{CMS}?watch=1&fieldSelector=spec.foo%3Dbar"),
            "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                .to_string(),
        ),
    ] {
        assert_status(
            &raw(&s, "GET", &path, "application/json", ""),
            400,
            "BadRequest",
            &message,
        );
    }
    let err = s.kubectl_err(&["get", "widgets", "--field-selector", "spec.foo=bar"]);
    assert!(err.contains("field label not supported: spec.foo"), "{err}");

    let cm = s.get_json(&["configmap", "c1"]);
    let uid = cm["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let got = raw(
        &s,
        "DELETE",
        &format!("{CMS}/c1"),
        "application/json",
        r#"{"preconditions":{"uid":"not-the-uid"}}"#,
    );
    assert_status(
        &got,
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on ConfigMap \"c1\": the UID in the precondition (not-the-uid) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        ),
    );
    assert_eq!(got.1["details"], json!({"name": "c1", "kind": "ConfigMap"}));
    let dep = s.get_json(&["deployment", "web"]);
    let got = raw(
        &s,
        "DELETE",
        "/apis/apps/v1/namespaces/default/deployments/web",
        "application/json",
        r#"{"preconditions":{"resourceVersion":"1"}}"#,
    );
    assert_status(
        &got,
        409,
        "Conflict",
        &format!(
            "Operation cannot be fulfilled on Deployment.apps \"web\": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({}). The object might have been modified",
            rv(&dep)
        ),
    );
    // Still there; matching preconditions delete.
    let body = json!({"preconditions": {"uid": uid, "resourceVersion": rv(&cm)}});
    let got = raw(
        &s,
        "DELETE",
        &format!("{CMS}/c1"),
        "application/json",
        &body.to_string(),
    );
    assert_eq!(got.0, 200, "{}", got.1);
    assert!(!s.kubectl(&["get", "configmap", "c1"]).status.success());
}

/// DeleteOptions.gracePeriodSeconds where kube has no graceful deletion: an unscheduled pod
/// (the control plane runs no kubelets) and every other kind go at once, whatever the grace.
#[test]
fn deletes_without_graceful_deletion_are_immediate() {
    let s = Server::start();
    s.kubectl_ok(&["run", "p1", "--image=nginx"]);
    let got = raw(
        &s,
        "DELETE",
        "/api/v1/namespaces/default/pods/p1",
        "application/json",
        r#"{"gracePeriodSeconds":30}"#,
    );
    assert_eq!(got.0, 200, "{}", got.1);
    assert_eq!(got.1["kind"], "Pod", "pods return the deleted object");
    assert_eq!(
        got.1["metadata"]["deletionGracePeriodSeconds"], 0,
        "{}",
        got.1
    );
    assert!(!s.kubectl(&["get", "pod", "p1"]).status.success());
    s.kubectl_ok(&["create", "configmap", "c1"]);
    let got = raw(
        &s,
        "DELETE",
        &format!("{CMS}/c1?gracePeriodSeconds=60"),
        "application/json",
        "",
    );
    assert_eq!(got.0, 200, "{}", got.1);
    assert_eq!(got.1["status"], "Success", "{}", got.1);
    assert!(!s.kubectl(&["get", "configmap", "c1"]).status.success());
}

/// deploymentStrategy.PrepareForUpdate bumps the generation on annotation changes too (the
/// Deployment controller copies them to its ReplicaSets); other workloads count only the spec.
#[test]
fn deployment_generation_counts_annotations() {
    let s = Server::start();
    let manifests = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec: {containers: [{name: db, image: postgres}]}
"#;
    s.kubectl_stdin_ok(&["create", "-f", "-"], manifests);
    let generation =
        |kind: &str, name: &str| s.get_json(&[kind, name])["metadata"]["generation"].clone();
    s.kubectl_ok(&["annotate", "deployment", "web", "owner=ops"]);
    s.kubectl_ok(&["annotate", "statefulset", "db", "owner=ops"]);
    assert_eq!(generation("deployment", "web"), 2);
    assert_eq!(generation("statefulset", "db"), 1);
    // Labels are not copied that way: no bump for either.
    s.kubectl_ok(&["label", "deployment", "web", "team=core"]);
    assert_eq!(generation("deployment", "web"), 2);
    s.kubectl_ok(&["annotate", "deployment", "web", "owner-"]);
    assert_eq!(generation("deployment", "web"), 3);
}
