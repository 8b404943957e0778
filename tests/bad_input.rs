//! Every malformed request gets a clear metav1.Status with kube-apiserver's code and reason,
//! never a 500, and leaves storage unchanged.

mod support;

use serde_json::{Value, json};
use support::{Server, kube_client_without_retries, post_configmap};

struct Case {
    name: &'static str,
    method: &'static str,
    path: String,
    content_type: Option<&'static str>,
    accept: Option<&'static str>,
    body: Vec<u8>,
    code: u16,
    reason: &'static str,
    message_contains: &'static str,
}

#[allow(clippy::too_many_arguments)]
fn case(
    name: &'static str,
    method: &'static str,
    path: &str,
    content_type: Option<&'static str>,
    body: impl Into<Vec<u8>>,
    code: u16,
    reason: &'static str,
    message_contains: &'static str,
) -> Case {
    Case {
        name,
        method,
        path: path.to_string(),
        content_type,
        accept: None,
        body: body.into(),
        code,
        reason,
        message_contains,
    }
}

/// A snapshot of what is stored: every ConfigMap, Deployment and PropagationPolicy in
/// `default`, with their resourceVersions.
async fn snapshot(c: &kube::Client) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in [
        "/api/v1/namespaces/default/configmaps",
        "/apis/apps/v1/namespaces/default/deployments",
        "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies",
        "/api/v1/namespaces",
    ] {
        let req = http::Request::get(path).body(Vec::new()).expect("request");
        let text = c.request_text(req).await.expect("list");
        let v: Value = serde_json::from_str(&text).expect("json");
        for item in v["items"].as_array().cloned().unwrap_or_default() {
            out.push((
                format!("{path}/{}", item["metadata"]["name"].as_str().unwrap_or("")),
                item["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn malformed_requests_get_clear_errors_and_change_nothing() {
    let s = Server::start();
    s.kubectl_ok(&["create", "configmap", "existing", "--from-literal=a=1"]);
    s.kubectl_stdin_ok(
        &["apply", "--validate=false", "-f", "-"],
        r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: pp1
spec:
  resourceSelectors:
    - apiVersion: apps/v1
      kind: Deployment
      name: nginx
  placement:
    clusterAffinity:
      clusterNames: [member1]
"#,
    );
    let cm = s.get_json(&["configmap", "existing"]);
    let rv = cm["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let stale_rv = (rv.parse::<i64>().unwrap_or(1) - 1).to_string();
    let cms = "/api/v1/namespaces/default/configmaps";
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"a":"{}"}}}}"#,
        "x".repeat(3 * 1024 * 1024 + 10)
    );
    let pps = "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies";
    let cases = vec![
        case(
            "malformed JSON",
            "POST",
            cms,
            Some("application/json"),
            "{\"apiVersion\":",
            400,
            "BadRequest",
            "cannot be handled as a ConfigMap",
        ),
        case(
            "malformed YAML",
            "POST",
            cms,
            Some("application/yaml"),
            "a: [b",
            400,
            "BadRequest",
            "cannot be handled as a ConfigMap",
        ),
        case(
            "not an object",
            "POST",
            cms,
            Some("application/json"),
            "[1,2]",
            400,
            "BadRequest",
            "",
        ),
        case(
            "garbage protobuf",
            "POST",
            cms,
            Some("application/vnd.kubernetes.protobuf"),
            "k8s\0garbage",
            400,
            "BadRequest",
            "protobuf",
        ),
        case(
            "unknown content type",
            "POST",
            cms,
            Some("text/plain"),
            "hello",
            415,
            "UnsupportedMediaType",
            "unknown format",
        ),
        case(
            "mismatched kind",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#,
            400,
            "BadRequest",
            "does not match",
        ),
        case(
            "mismatched apiVersion",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
            400,
            "BadRequest",
            "does not match",
        ),
        case(
            "namespace mismatch",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}"#,
            400,
            "BadRequest",
            "does not match the namespace",
        ),
        case(
            "missing name",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#,
            422,
            "Invalid",
            "name or generateName is required",
        ),
        case(
            "invalid name",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#,
            422,
            "Invalid",
            "RFC 1123",
        ),
        case(
            "invalid label",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","labels":{"a":"-bad-"}}}"#,
            422,
            "Invalid",
            "metadata.labels",
        ),
        case(
            "already exists",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"existing"}}"#,
            409,
            "AlreadyExists",
            "already exists",
        ),
        case(
            "resourceVersion on create",
            "POST",
            cms,
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","resourceVersion":"5"}}"#,
            400,
            "BadRequest",
            "resourceVersion",
        ),
        case(
            "missing namespace",
            "POST",
            "/api/v1/namespaces/nope/configmaps",
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
            404,
            "NotFound",
            "namespaces \"nope\" not found",
        ),
        case(
            "body over 3 MiB",
            "POST",
            cms,
            Some("application/json"),
            big,
            413,
            "RequestEntityTooLarge",
            "",
        ),
        case(
            "strict unknown field",
            "POST",
            &format!("{cms}?fieldValidation=Strict"),
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{},"data":{}}"#,
            400,
            "BadRequest",
            "duplicate field",
        ),
        case(
            "bad fieldValidation",
            "POST",
            &format!("{cms}?fieldValidation=Loose"),
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
            422,
            "Invalid",
            "fieldValidation: Unsupported value: \"Loose\"",
        ),
        case(
            "bad dryRun",
            "POST",
            &format!("{cms}?dryRun=Some"),
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
            422,
            "Invalid",
            "dryRun",
        ),
        case(
            "stale update",
            "PUT",
            &format!("{cms}/existing"),
            Some("application/json"),
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"existing","resourceVersion":"{stale_rv}"}},"data":{{"a":"2"}}}}"#
            ),
            409,
            "Conflict",
            "the object has been modified",
        ),
        case(
            "update name mismatch",
            "PUT",
            &format!("{cms}/existing"),
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}"#,
            400,
            "BadRequest",
            "does not match the name on the URL",
        ),
        case(
            "update missing object",
            "PUT",
            &format!("{cms}/missing"),
            Some("application/json"),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"missing"}}"#,
            404,
            "NotFound",
            "configmaps \"missing\" not found",
        ),
        case(
            "patch missing object",
            "PATCH",
            &format!("{cms}/missing"),
            Some("application/merge-patch+json"),
            r#"{"data":{"a":"1"}}"#,
            404,
            "NotFound",
            "not found",
        ),
        case(
            "json patch not an array",
            "PATCH",
            &format!("{cms}/existing"),
            Some("application/json-patch+json"),
            r#"{"op":"add"}"#,
            400,
            "BadRequest",
            "",
        ),
        case(
            "json patch failing test",
            "PATCH",
            &format!("{cms}/existing"),
            Some("application/json-patch+json"),
            r#"[{"op":"test","path":"/data/a","value":"nope"}]"#,
            422,
            "Invalid",
            "",
        ),
        case(
            "json patch missing path",
            "PATCH",
            &format!("{cms}/existing"),
            Some("application/json-patch+json"),
            r#"[{"op":"remove","path":"/data/none"}]"#,
            422,
            "Invalid",
            "",
        ),
        case(
            "merge patch malformed",
            "PATCH",
            &format!("{cms}/existing"),
            Some("application/merge-patch+json"),
            "{",
            400,
            "BadRequest",
            "",
        ),
        case(
            "patch stale resourceVersion",
            "PATCH",
            &format!("{cms}/existing"),
            Some("application/merge-patch+json"),
            format!(r#"{{"metadata":{{"resourceVersion":"{stale_rv}"}},"data":{{"a":"9"}}}}"#),
            409,
            "Conflict",
            "modified",
        ),
        case(
            "patch unsupported type",
            "PATCH",
            &format!("{cms}/existing"),
            Some("application/json"),
            "{}",
            415,
            "UnsupportedMediaType",
            "json-patch+json",
        ),
        case(
            "strategic merge on a Karmada CRD kind",
            "PATCH",
            &format!("{pps}/pp1"),
            Some("application/strategic-merge-patch+json"),
            r#"{"spec":{"priority":1}}"#,
            415,
            "UnsupportedMediaType",
            "merge-patch+json",
        ),
        case(
            "force on non-apply patch",
            "PATCH",
            &format!("{cms}/existing?force=true"),
            Some("application/merge-patch+json"),
            "{}",
            422,
            "Invalid",
            "force",
        ),
        case(
            "apply without fieldManager",
            "PATCH",
            &format!("{cms}/existing"),
            Some("application/apply-patch+yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: existing\n",
            422,
            "Invalid",
            "fieldManager",
        ),
        case(
            "invalid Karmada policy (empty resourceSelectors)",
            "POST",
            pps,
            Some("application/json"),
            r#"{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{"name":"bad"},"spec":{"resourceSelectors":[]}}"#,
            422,
            "Invalid",
            "resourceSelectors",
        ),
        case(
            "Karmada policy with a wrong type",
            "POST",
            pps,
            Some("application/json"),
            r#"{"apiVersion":"policy.karmada.io/v1alpha1","kind":"PropagationPolicy","metadata":{"name":"bad"},"spec":{"priority":"high","resourceSelectors":[{"apiVersion":"v1","kind":"ConfigMap"}]}}"#,
            422,
            "Invalid",
            "spec.priority",
        ),
        case(
            "bad label selector",
            "GET",
            &format!("{cms}?labelSelector=a%20in%20("),
            None,
            "",
            400,
            "BadRequest",
            "",
        ),
        case(
            "bad field selector",
            "GET",
            &format!("{cms}?fieldSelector=metadata.name"),
            None,
            "",
            400,
            "BadRequest",
            "",
        ),
        case(
            "unsupported field selector",
            "GET",
            &format!("{cms}?fieldSelector=spec.foo%3Dbar"),
            None,
            "",
            400,
            "BadRequest",
            "\"spec.foo\" is not a known field selector",
        ),
        case(
            "bad resourceVersion",
            "GET",
            &format!("{cms}?resourceVersion=abc"),
            None,
            "",
            400,
            "BadRequest",
            "resource version",
        ),
        case(
            "resourceVersionMatch without resourceVersion",
            "GET",
            &format!("{cms}?resourceVersionMatch=Exact"),
            None,
            "",
            422,
            "Invalid",
            "resourceVersionMatch",
        ),
        case(
            "bad continue token",
            "GET",
            &format!("{cms}?limit=1&continue=notatoken"),
            None,
            "",
            400,
            "BadRequest",
            "continue",
        ),
        case(
            "resourceVersion in the future",
            "GET",
            &format!("{cms}?resourceVersion=99999999"),
            None,
            "",
            504,
            "Timeout",
            "Too large resource version",
        ),
        case(
            "unknown resource",
            "GET",
            "/api/v1/namespaces/default/widgets",
            None,
            "",
            404,
            "NotFound",
            "",
        ),
        case(
            "unknown group",
            "GET",
            "/apis/example.com/v1/widgets",
            None,
            "",
            404,
            "NotFound",
            "",
        ),
        case(
            "get missing object",
            "GET",
            &format!("{cms}/missing"),
            None,
            "",
            404,
            "NotFound",
            "configmaps \"missing\" not found",
        ),
        case(
            "delete missing object",
            "DELETE",
            &format!("{cms}/missing"),
            None,
            "",
            404,
            "NotFound",
            "not found",
        ),
        case(
            "delete precondition mismatch",
            "DELETE",
            &format!("{cms}/existing"),
            Some("application/json"),
            r#"{"preconditions":{"uid":"not-the-uid"}}"#,
            409,
            "Conflict",
            "the UID in the precondition (not-the-uid) does not match the UID in record",
        ),
        case(
            "delete options both orphan and propagation",
            "DELETE",
            &format!("{cms}/existing"),
            Some("application/json"),
            r#"{"orphanDependents":true,"propagationPolicy":"Background"}"#,
            422,
            "Invalid",
            "cannot be both set",
        ),
        case(
            "subresource not served",
            "GET",
            &format!("{cms}/existing/status"),
            None,
            "",
            404,
            "NotFound",
            "",
        ),
        case(
            "method on virtual kind",
            "GET",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            None,
            "",
            405,
            "MethodNotAllowed",
            "",
        ),
    ];
    let mut cases = cases;
    cases.push(Case {
        accept: Some("text/html"),
        ..case(
            "unacceptable Accept",
            "GET",
            cms,
            None,
            "",
            406,
            "NotAcceptable",
            "media types",
        )
    });

    s.block_on(async {
        let c = s.client().await;
        let before = snapshot(&c).await;
        let mut failures = Vec::new();
        for k in &cases {
            let mut req = http::Request::builder()
                .method(k.method)
                .uri(k.path.as_str());
            if let Some(ct) = k.content_type {
                req = req.header("content-type", ct);
            }
            if let Some(a) = k.accept {
                req = req.header("accept", a);
            }
            let req = req.body(k.body.clone().into()).expect("request");
            let resp =
                match tokio::time::timeout(std::time::Duration::from_secs(20), c.send(req)).await {
                    Ok(r) => r.expect("send"),
                    Err(_) => {
                        failures.push(format!("{}: no answer within 20 s", k.name));
                        continue;
                    }
                };
            let code = resp.status().as_u16();
            let body = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let status: Value = serde_json::from_slice(&body).unwrap_or(json!({}));
            let ok = code == k.code
                && status["kind"] == "Status"
                && status["code"] == k.code
                && status["reason"] == k.reason
                && status["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(k.message_contains) && !m.is_empty());
            if !ok {
                failures.push(format!(
                    "{}: got {code} {}",
                    k.name,
                    String::from_utf8_lossy(&body)
                ));
            }
        }
        let after = snapshot(&c).await;
        assert!(
            failures.is_empty(),
            "unexpected answers:\n{}",
            failures.join("\n")
        );
        assert_eq!(before, after, "a bad request changed stored objects");
    });
}

/// Input that used to panic a handler and drop the connection gets a clear answer instead: a
/// field selector with a multi-byte character (401 without credentials: nothing reads it
/// before authentication; 400 or an empty list with them), a generateName prefix ending in a
/// multi-byte character and a dash (422 on every kind tried), a watch timeout the clock cannot
/// add (the watch stays open) or one past int64 (400).
#[test]
fn input_that_panicked_gets_clear_answers() {
    let s = Server::start();
    s.kubectl_ok(&["create", "configmap", "w1"]);
    let status_of = |a: &support::RawAnswer| -> Value {
        serde_json::from_str(&a.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", a.body))
    };

    for (query, admin_code) in [
        ("fieldSelector=%C3%A9", 400),
        ("fieldSelector=%5C%C3%A9%3Dx", 400),
        ("fieldSelector=%C3%A9%21%3D%C3%A9", 400),
        ("fieldSelector=metadata.name%3D%C3%A9", 200),
        ("labelSelector=%C3%A9%3D1", 400),
    ] {
        for path in [
            format!("/api/v1/configmaps?{query}"),
            format!("/api/v1/namespaces/default/configmaps?watch=1&{query}"),
        ] {
            let anonymous = s.raw(false, "GET", &path, None, b"").expect("an answer");
            assert_eq!(anonymous.status, 401, "{path}: {}", anonymous.body);
            let admin = s.raw(true, "GET", &path, None, b"").expect("an answer");
            assert_eq!(admin.status, admin_code, "{path}: {}", admin.body);
            if admin_code == 400 {
                assert_eq!(status_of(&admin)["reason"], "BadRequest", "{path}");
            } else if !path.contains("watch") {
                assert_eq!(status_of(&admin)["items"], json!([]), "{path}");
            }
        }
    }

    let kinds = [
        ("/api/v1/namespaces/default/configmaps", "v1", "ConfigMap"),
        ("/api/v1/namespaces/default/services", "v1", "Service"),
        (
            "/api/v1/namespaces/default/serviceaccounts",
            "v1",
            "ServiceAccount",
        ),
        ("/api/v1/namespaces", "v1", "Namespace"),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            "apps/v1",
            "Deployment",
        ),
        (
            "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies",
            "policy.karmada.io/v1alpha1",
            "PropagationPolicy",
        ),
    ];
    for prefix in ["é-", "中-", "a😀-"] {
        for (path, api_version, kind) in kinds {
            let mut body = json!({"apiVersion": api_version, "kind": kind,
                "metadata": {"generateName": prefix}});
            if kind == "PropagationPolicy" {
                body["spec"] =
                    json!({"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]});
            }
            let a = s
                .raw(
                    true,
                    "POST",
                    path,
                    Some("application/json"),
                    body.to_string().as_bytes(),
                )
                .expect("an answer");
            assert_eq!(a.status, 422, "{kind} {prefix}: {}", a.body);
            let st = status_of(&a);
            assert_eq!(st["reason"], "Invalid", "{kind} {prefix}");
            assert!(
                st["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("metadata.generateName: Invalid value")),
                "{kind} {prefix}: {}",
                a.body
            );
        }
    }

    let watch = "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=";
    let open = s
        .raw(true, "GET", &format!("{watch}{}", i64::MAX), None, b"")
        .expect("an answer");
    assert_eq!(open.status, 200, "{}", open.body);
    assert!(
        open.body.contains("\"ADDED\"") && open.body.contains("\"w1\""),
        "{}",
        open.body
    );
    assert!(!open.ended, "a watch with the longest timeout stays open");
    for past in ["9223372036854775808", "18446744073709551615"] {
        let a = s
            .raw(true, "GET", &format!("{watch}{past}"), None, b"")
            .expect("an answer");
        assert_eq!(a.status, 400, "{past}: {}", a.body);
        assert_eq!(
            status_of(&a)["message"],
            format!("invalid value for timeoutSeconds: \"{past}\"")
        );
    }
    let listed = s
        .raw(
            true,
            "GET",
            &format!("/api/v1/namespaces/default/configmaps?limit={}", i64::MAX),
            None,
            b"",
        )
        .expect("an answer");
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains("\"w1\""));
    // Nothing was created by the refused writes, and the server still serves.
    let names = s.kubectl_ok(&["get", "configmaps", "-o", "name"]);
    assert!(
        !names.contains('é') && names.contains("configmap/w1"),
        "{names}"
    );
}

/// An object whose stored form would exceed etcd's default request limit (1.5 MiB) is refused
/// with a 422 naming it, on every backend, and nothing is stored; a body under the 3 MiB
/// request limit but over the object limit is what reaches this check.
#[test]
fn objects_over_the_storage_limit_are_invalid() {
    let s = Server::start();
    let big_arg = "x".repeat(2 * 1024 * 1024);
    let deployment = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "huge"},
        "spec": {
            "selector": {"matchLabels": {"app": "huge"}},
            "template": {
                "metadata": {"labels": {"app": "huge"}},
                "spec": {"containers": [{"name": "c", "image": "nginx", "args": [big_arg]}]}
            }
        }
    });
    let body = serde_json::to_vec(&deployment).expect("json");
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let a = s
        .raw(true, "POST", path, Some("application/json"), &body)
        .expect("an answer");
    assert_eq!(a.status, 422, "{}", a.body);
    let status: Value = serde_json::from_str(&a.body).expect("a Status");
    assert_eq!(status["reason"], "Invalid");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(
            "Deployment.apps \"huge\" is invalid: Too long: may not be more than 1572864 bytes"
        ),
        "{message}"
    );
    assert_eq!(
        status["details"]["causes"][0]["reason"],
        "FieldValueTooLong"
    );
    let out = s.kubectl(&["get", "deployment", "huge"]);
    assert!(!out.status.success(), "the refused object was stored");

    // The same object under the limit is stored, and an update that would grow it past the
    // limit is refused and leaves the stored one as it was.
    let mut small = deployment.clone();
    small["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["small"]);
    let a = s
        .raw(
            true,
            "POST",
            path,
            Some("application/json"),
            &serde_json::to_vec(&small).expect("json"),
        )
        .expect("an answer");
    assert_eq!(a.status, 201, "{}", a.body);
    let rv = s.get_json(&["deployment", "huge"])["metadata"]["resourceVersion"].clone();
    let patch = serde_json::to_vec(&json!({"metadata": {"annotations": {"note": "y".repeat(200_000)}},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "args": ["z".repeat(1_600_000)]}]}}}}))
    .expect("json");
    let a = s
        .raw(
            true,
            "PATCH",
            &format!("{path}/huge"),
            Some("application/strategic-merge-patch+json"),
            &patch,
        )
        .expect("an answer");
    assert_eq!(a.status, 422, "{}", a.body);
    assert!(
        a.body.contains("may not be more than 1572864 bytes"),
        "{}",
        a.body
    );
    let after = s.get_json(&["deployment", "huge"]);
    assert_eq!(after["metadata"]["resourceVersion"], rv);
    assert_eq!(
        after["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["small"])
    );
}

/// `--request-timeout` and `--max-mutating-requests-inflight`: a request still unanswered at
/// the deadline (etcd paused) gets kube's 504 Timeout Status, a shorter `timeout` parameter of
/// the request's own is honoured and one that does not parse gets a 400; while a write holds
/// the only mutating slot, another from outside system:masters gets 429 with kube's message
/// and Retry-After, and system:masters is still served (as kube, whichever request holds the
/// slot: the admin's or a controller's, such as a leader-election renewal); once etcd is back,
/// everything stored before is still there and writes work again.
#[test]
fn requests_past_the_request_timeout_get_a_504() {
    let s = Server::start_with(
        support::Backend::Etcd,
        &[
            "--request-timeout",
            "10s",
            "--max-mutating-requests-inflight",
            "1",
            // kube's plain in-flight limits (with priority and fairness, the admin is exempt).
            "--enable-priority-and-fairness=false",
        ],
    );
    s.kubectl_ok(&["create", "configmap", "before", "--from-literal=k=v"]);
    let alice = s.cert_kubeconfig("alice", None);
    let bad = s
        .raw(
            true,
            "GET",
            "/api/v1/namespaces/default/configmaps?timeout=soon",
            None,
            b"",
        )
        .expect("an answer");
    assert_eq!(bad.status, 400, "{}", bad.body);
    assert!(
        bad.body.contains(
            "invalid timeout specified in the request URL - time: invalid duration \\\"soon\\\""
        ),
        "{}",
        bad.body
    );

    let etcd = s.etcd_pid().expect("etcd runs");
    let signal = move |sig: &str| {
        let st = std::process::Command::new("kill")
            .args([sig, &etcd.to_string()])
            .status()
            .expect("kill");
        assert!(st.success(), "kill {sig} {etcd}");
    };
    // Resumes etcd however this test ends, so the server and etcd stop cleanly.
    struct Resume<F: Fn(&str)>(F);
    impl<F: Fn(&str)> Drop for Resume<F> {
        fn drop(&mut self) {
            (self.0)("-CONT");
        }
    }
    signal("-STOP");
    let resume = Resume(signal);
    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = serde_json::to_vec(
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "during"}}),
    )
    .expect("json");
    let timeout_status = |a: &support::RawAnswer| {
        assert_eq!(a.status, 504, "{}", a.body);
        let status: Value = serde_json::from_str(&a.body).expect("a Status");
        assert_eq!(status["reason"], "Timeout");
        assert_eq!(
            status["message"],
            "Timeout: request did not complete within requested timeout - context deadline exceeded"
        );
    };
    // The admin's write with its own, shorter timeout: a 504 within that second.
    let admin_write_times_out = || {
        let a = s
            .raw(
                true,
                "POST",
                &format!("{cms}?timeout=1s"),
                Some("application/json"),
                &cm,
            )
            .expect("an answer within the request's timeout");
        timeout_status(&a);
    };
    admin_write_times_out();

    std::thread::scope(|scope| {
        // The server's timeout (10 s, well before the etcd client's own 30 s deadline).
        let held = scope.spawn(|| {
            s.raw(true, "POST", cms, Some("application/json"), &cm)
                .expect("an answer within the server's request timeout")
        });
        support::wait_for(
            "a write to hold the mutating slot",
            support::DEADLINE,
            || {
                let m = s.raw(true, "GET", "/metrics", None, b"").ok()?;
                let held = support::metric(
                    &m.body,
                    r#"apiserver_current_inflight_requests{request_kind="mutating"}"#,
                )?;
                (held >= 1.0).then_some(())
            },
        );
        // Refused before authorization, as kube's filter: alice, who may not write
        // ConfigMaps, gets the 429, not the 403 she would get with a slot free.
        let refused = s
            .raw_as(Some(&alice), "POST", cms, Some("application/json"), &cm)
            .expect("an answer");
        assert_eq!(refused.status, 429, "{}", refused.body);
        let status: Value = serde_json::from_str(&refused.body).expect("a Status");
        assert_eq!(status["reason"], "TooManyRequests");
        assert_eq!(
            status["message"],
            "Too many requests, please try again later."
        );
        assert_eq!(status["details"]["retryAfterSeconds"], 1);
        // system:masters gets an answer even with every slot taken: here etcd's silence.
        admin_write_times_out();
        timeout_status(&held.join().expect("the held request"));
    });
    drop(resume);

    support::wait_for("writes to work again", support::DEADLINE, || {
        s.kubectl(&["create", "configmap", "after"])
            .status
            .success()
            .then_some(())
    });
    let before = s.get_json(&["configmap", "before"]);
    assert_eq!(before["data"]["k"], "v");
}

/// API Priority and Fairness (on by default): 400 concurrent writers as one user fill the
/// queues their flow is dealt and get 429 with Retry-After beyond them, never a 5xx, while
/// another user's write is admitted in its turn and answers within a second; the rejections
/// show in kube's metrics.
#[test]
fn a_noisy_user_cannot_starve_another() {
    let dir = tempfile::tempdir().expect("temp dir");
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "noisy-token,noisy,1001\nquiet-token,quiet,1002\n").expect("tokens");
    // 10 seats in all: global-default (users) gets ceil(10 × 20 / 245) = 1 nominal seat and
    // borrows at most 10 more; each flow is dealt 6 of its 128 queues of 50.
    let s = Server::start_with(
        support::Backend::Embedded,
        &[
            "--token-auth-file",
            tokens.to_str().expect("path"),
            "--max-requests-inflight",
            "5",
            "--max-mutating-requests-inflight",
            "5",
        ],
    );
    for u in ["noisy", "quiet"] {
        s.kubectl_ok(&[
            "create",
            "clusterrolebinding",
            u,
            "--clusterrole=cluster-admin",
            &format!("--user={u}"),
        ]);
    }
    let noisy_kc = s.token_kubeconfig("noisy", "noisy-token");
    let quiet_kc = s.token_kubeconfig("quiet", "quiet-token");
    let client = |kc: std::path::PathBuf| async move { kube_client_without_retries(&kc).await };
    let (codes, quiet) = s.block_on(async {
        let noisy = client(noisy_kc).await;
        let quiet = client(quiet_kc).await;
        // Connected before the storm, so the measured write is the admission, not a handshake.
        assert_eq!(
            post_configmap(quiet.clone(), "quiet-first".into()).await.0,
            201
        );
        let until = std::time::Instant::now() + std::time::Duration::from_secs(4);
        let writers: Vec<_> = (0..400)
            .map(|w| {
                let noisy = noisy.clone();
                tokio::spawn(async move {
                    let mut seen = Vec::new();
                    let mut i = 0;
                    while std::time::Instant::now() < until {
                        seen.push(post_configmap(noisy.clone(), format!("noisy-{w}-{i}")).await);
                        i += 1;
                    }
                    seen
                })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let started = std::time::Instant::now();
        let answer = post_configmap(quiet, "quiet".into()).await;
        let quiet = (answer, started.elapsed());
        let mut codes = Vec::new();
        for w in writers {
            codes.extend(w.await.expect("writer"));
        }
        (codes, quiet)
    });
    let ((code, _), took) = quiet;
    assert_eq!(code, 201, "the quiet user's write was not admitted");
    eprintln!("the quiet user's write took {took:?}");
    assert!(
        took < std::time::Duration::from_secs(1),
        "the quiet user waited {took:?}"
    );
    let created = codes.iter().filter(|(c, _)| *c == 201).count();
    let rejected: Vec<_> = codes.iter().filter(|(c, _)| *c == 429).collect();
    assert!(created > 0, "no noisy write got through");
    assert!(
        !rejected.is_empty(),
        "400 writers over at most 11 seats and 6 queues of 50: some are rejected"
    );
    assert!(
        rejected.iter().all(|(_, retry_after)| *retry_after),
        "429 without Retry-After"
    );
    let others: Vec<_> = codes
        .iter()
        .filter(|(c, _)| *c != 201 && *c != 429)
        .collect();
    assert!(others.is_empty(), "only 201 and 429: {others:?}");
    let metrics = s.kubectl_ok(&["get", "--raw", "/metrics"]);
    let flow: Vec<&str> = metrics
        .lines()
        .filter(|l| l.contains("flowcontrol"))
        .collect();
    assert!(
        metrics.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"global-default\",priority_level=\"global-default\",reason=\"queue-full\"}"),
        "{flow:?}"
    );
    assert!(
        metrics.contains(
            "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"} 1"
        ),
        "{flow:?}"
    );
}
