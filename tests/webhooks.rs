//! End to end: dynamic admission webhooks (admissionregistration.k8s.io/v1) called by the
//! control plane over HTTPS — a webhook server the test runs on loopback mutates a Deployment's
//! template before it is stored (and the member receives the mutated Deployment), denies a
//! PropagationPolicy by a rule, fails open or closed when down or slow, is skipped by its
//! matchConditions and selectors, is reinvoked, and sees dry-run requests; the webhook
//! configurations themselves are never sent to webhooks.

mod propagation_env;
mod support;

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use propagation_env::Env;
use serde_json::{Value, json};
use support::Server;

/// Every review the webhook server received: (path, request).
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<(String, Value)>>>);

impl Seen {
    fn on(&self, path: &str) -> Vec<Value> {
        self.0
            .lock()
            .expect("seen")
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, r)| r.clone())
            .collect()
    }

    fn names(&self, path: &str) -> Vec<String> {
        self.on(path)
            .iter()
            .map(|r| r["name"].as_str().unwrap_or("").to_string())
            .collect()
    }
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The test's webhooks, one per path.
async fn answer(path: &str, request: &Value) -> Value {
    let uid = request["uid"].clone();
    let allow = |extra: Value| {
        let mut r = json!({"uid": uid, "allowed": true});
        if let (Some(m), Some(e)) = (r.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        r
    };
    let patch = |ops: Value| {
        allow(json!({"patchType": "JSONPatch", "patch": b64(ops.to_string().as_bytes())}))
    };
    match path {
        // Labels the pod template (and so every pod the members run).
        "/inject" => patch(json!([
            {"op": "add", "path": "/spec/template/metadata/labels/injected-by", "value": "webhook"},
            {"op": "add", "path": "/spec/template/spec/containers/0/env", "value": [{"name": "INJECTED", "value": "yes"}]},
        ])),
        // Refuses PropagationPolicies that place onto `member1` by name.
        "/policies" => {
            let names = request
                .pointer("/object/spec/placement/clusterAffinity/clusterNames")
                .cloned()
                .unwrap_or(Value::Null);
            if names
                .as_array()
                .is_some_and(|n| n.iter().any(|c| c == "forbidden"))
            {
                json!({"uid": uid, "allowed": false,
                       "status": {"code": 403, "reason": "Forbidden",
                                  "message": "placement onto cluster forbidden is not allowed"}})
            } else {
                allow(
                    json!({"warnings": ["placement checked by policies.example.com"],
                             "auditAnnotations": {"checked": "true"}}),
                )
            }
        }
        "/slow" => {
            tokio::time::sleep(Duration::from_secs(4)).await;
            allow(json!({}))
        }
        // Reinvocation: `first` records whether it saw `second`'s label.
        "/first" => {
            let saw = request.pointer("/object/metadata/labels/second").is_some();
            let op = if request.pointer("/object/metadata/annotations").is_some() {
                json!([{"op": "add", "path": "/metadata/annotations/first-saw-second", "value": saw.to_string()}])
            } else {
                json!([{"op": "add", "path": "/metadata/annotations", "value": {"first-saw-second": saw.to_string()}}])
            };
            patch(op)
        }
        "/second" => patch(json!([
            {"op": "add", "path": "/metadata/labels", "value": {"second": "yes"}}
        ])),
        "/deny-all" => {
            json!({"uid": uid, "allowed": false, "status": {"message": "everything is refused"}})
        }
        _ => allow(json!({})),
    }
}

/// An HTTPS webhook server on a free loopback port, serving until the runtime is dropped.
fn serve_webhooks(cert: &certs::IssuedCert, seen: Seen) -> (tokio::runtime::Runtime, u16) {
    let acceptor = support::https_acceptor(cert);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    rt.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let seen = seen.clone();
                    async move {
                        let path = req.uri().path().to_string();
                        let body = req.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        seen.0.lock().expect("seen").push((path.clone(), review["request"].clone()));
                        let response = answer(&path, &review["request"]).await;
                        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
                        Ok::<_, Infallible>(
                            http::Response::builder()
                                .header("content-type", "application/json")
                                .body(Full::new(bytes::Bytes::from(out.to_string())))
                                .expect("response"),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (rt, port)
}

/// A serving certificate for the webhook as `127.0.0.1` and as the Service `hooks.webhooks.svc`.
fn webhook_pki() -> (certs::Ca, certs::IssuedCert) {
    let ca = certs::Ca::generate().expect("ca");
    let cert = ca
        .issue_serving(
            "webhooks",
            &["127.0.0.1".to_owned(), "hooks.webhooks.svc".to_owned()],
        )
        .expect("serving cert");
    (ca, cert)
}

/// One webhook entry of a configuration.
struct Hook<'a> {
    name: &'a str,
    path: &'a str,
    rules: &'a str,
    extra: &'a str,
}

fn configuration(kind: &str, name: &str, port: u16, ca: &certs::Ca, hooks: &[Hook<'_>]) -> String {
    let mut out = format!(
        "apiVersion: admissionregistration.k8s.io/v1\nkind: {kind}\nmetadata: {{name: {name}}}\nwebhooks:\n"
    );
    for h in hooks {
        out.push_str(&format!(
            "- name: {}
  clientConfig:
    url: https://127.0.0.1:{port}{}
    caBundle: {}
  rules: {}
  sideEffects: None
  admissionReviewVersions: [v1]
{}",
            h.name,
            h.path,
            b64(ca.cert_pem().as_bytes()),
            h.rules,
            h.extra
        ));
    }
    out
}

const DEPLOYMENTS: &str = "[{operations: [CREATE, UPDATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]";
const CONFIGMAPS: &str = "[{operations: [CREATE, UPDATE, DELETE], apiGroups: [\"\"], apiVersions: [v1], resources: [configmaps], scope: Namespaced}]";

fn deployment(name: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default}}
spec:
  replicas: 1
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
"
    )
}

#[test]
fn a_mutating_webhook_changes_a_deployment_before_it_is_stored_and_a_validating_one_denies_a_policy()
 {
    let (ca, cert) = webhook_pki();
    let seen = Seen::default();
    let (_hooks, port) = serve_webhooks(&cert, seen.clone());
    let audit_dir = tempfile::tempdir().expect("audit dir");
    let audit_log = audit_dir.path().join("audit.log");
    let env = Env::start_with_flags(
        support::Backend::Embedded,
        1,
        &[&format!("--audit-log-path={}", audit_log.display())],
    );
    // The mutating webhook is reached through a Service (ExternalName, as a Karmada control
    // plane has no endpoints to route to), verified as hooks.webhooks.svc.
    env.apply(&format!(
        "apiVersion: v1
kind: Namespace
metadata: {{name: webhooks}}
---
apiVersion: v1
kind: Service
metadata: {{name: hooks, namespace: webhooks}}
spec: {{type: ExternalName, externalName: 127.0.0.1}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {{name: inject}}
webhooks:
- name: inject.example.com
  clientConfig:
    service: {{namespace: webhooks, name: hooks, port: {port}, path: /inject}}
    caBundle: {}
  rules: {DEPLOYMENTS}
  sideEffects: None
  admissionReviewVersions: [v1]
",
        b64(ca.cert_pem().as_bytes())
    ));
    env.apply(&configuration(
        "ValidatingWebhookConfiguration",
        "policies",
        port,
        &ca,
        &[Hook {
            name: "policies.example.com",
            path: "/policies",
            rules: "[{operations: [CREATE, UPDATE], apiGroups: [policy.karmada.io], apiVersions: [v1alpha1], resources: [propagationpolicies]}]",
            extra: "",
        }],
    ));
    let got = env.cp.get_json(&["mutatingwebhookconfiguration", "inject"]);
    assert_eq!(
        got["webhooks"][0]["failurePolicy"], "Fail",
        "defaulted: {got}"
    );
    assert_eq!(got["webhooks"][0]["timeoutSeconds"], 10);
    let table = env
        .cp
        .kubectl_ok(&["get", "validatingwebhookconfigurations"]);
    assert!(
        table.contains("WEBHOOKS") && table.contains("policies"),
        "{table}"
    );

    env.apply(&deployment("web"));
    let stored = env.cp.get_json(&["deployment", "web", "-n", "default"]);
    assert_eq!(
        stored["spec"]["template"]["metadata"]["labels"]["injected-by"], "webhook",
        "stored: {stored}"
    );
    let review = seen.on("/inject").into_iter().next().expect("a review");
    assert_eq!(review["operation"], "CREATE");
    assert_eq!(
        review["kind"],
        json!({"group": "apps", "version": "v1", "kind": "Deployment"})
    );
    assert_eq!(review["namespace"], "default");
    assert_eq!(review["userInfo"]["username"], "karmada-admin");

    // A policy the validating webhook refuses; one it allows, with its warning.
    let denied = env.cp.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: nowhere, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [forbidden]}}
",
    );
    let stderr = String::from_utf8_lossy(&denied.stderr);
    assert!(!denied.status.success());
    assert!(
        stderr.contains("admission webhook \"policies.example.com\" denied the request: placement onto cluster forbidden is not allowed"),
        "{stderr}"
    );
    assert!(
        env.cp
            .kubectl(&["get", "pp", "nowhere", "-n", "default"])
            .status
            .code()
            != Some(0)
    );
    let allowed = env.cp.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: web}]
  placement: {clusterAffinity: {clusterNames: [member1]}}
",
    );
    assert!(
        allowed.status.success(),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );
    assert!(
        String::from_utf8_lossy(&allowed.stderr)
            .contains("Warning: placement checked by policies.example.com"),
        "{}",
        String::from_utf8_lossy(&allowed.stderr)
    );

    // The webhooks' audit annotations are on the requests' audit events (written when the
    // response is complete).
    let (checked, mutation) = support::wait_for("audit annotations", support::DEADLINE, || {
        let events: Vec<Value> = std::fs::read_to_string(&audit_log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        let annotation = |key: &str, resource: &str| {
            events
                .iter()
                .filter(|e| e["objectRef"]["resource"] == resource)
                .find_map(|e| e["annotations"].get(key).and_then(Value::as_str))
                .map(str::to_string)
        };
        Some((
            annotation("policies.example.com/checked", "propagationpolicies")?,
            annotation(
                "mutation.webhook.admission.k8s.io/round_0_index_0",
                "deployments",
            )?,
        ))
    });
    assert_eq!(checked, "true");
    let record: Value = serde_json::from_str(&mutation).expect("a JSON record");
    assert_eq!(
        record,
        json!({"configuration": "inject", "webhook": "inject.example.com", "mutated": true})
    );

    // The member gets the Deployment as the webhook left it.
    let member = env.wait_member_object("member1", &["deployment", "web", "-n", "default"]);
    assert_eq!(
        member["spec"]["template"]["metadata"]["labels"]["injected-by"], "webhook",
        "{member}"
    );
    assert_eq!(
        member["spec"]["template"]["spec"]["containers"][0]["env"][0]["name"],
        "INJECTED"
    );

    // kube's admission series.
    let metrics = env.cp.kubectl_ok(&["get", "--raw", "/metrics"]);
    for series in [
        "apiserver_admission_webhook_admission_duration_seconds_count{name=\"inject.example.com\",operation=\"CREATE\",rejected=\"false\",type=\"admit\"}",
        "apiserver_admission_webhook_rejection_count{error_type=\"no_error\",name=\"policies.example.com\",operation=\"CREATE\",rejection_code=\"403\",type=\"validating\"} 1",
        "apiserver_admission_webhook_request_total{code=\"200\",name=\"policies.example.com\",operation=\"CREATE\",rejected=\"true\",type=\"validating\"} 1",
        "apiserver_admission_step_admission_duration_seconds_count{operation=\"CREATE\",rejected=\"true\",type=\"validate\"}",
        "apiserver_admission_controller_admission_duration_seconds_count{name=\"MutatingAdmissionWebhook\",operation=\"CREATE\",rejected=\"false\",type=\"admit\"}",
    ] {
        assert!(metrics.contains(series), "no {series} in /metrics");
    }
}

#[test]
fn failure_policies_conditions_selectors_reinvocation_and_dry_run() {
    let (ca, cert) = webhook_pki();
    let seen = Seen::default();
    let (_hooks, port) = serve_webhooks(&cert, seen.clone());
    let cp = Server::start();
    let apply = |yaml: &str| cp.kubectl_stdin(&["apply", "-f", "-"], yaml);
    let apply_ok = |yaml: &str| cp.kubectl_stdin_ok(&["apply", "-f", "-"], yaml);
    let configmap = |name: &str, labels: &str| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: default, labels: {{{labels}}}}}\ndata: {{a: b}}\n"
        )
    };

    // A webhook that is down (nothing listens on its port), with Ignore then Fail.
    let down = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let down_port = down.local_addr().expect("addr").port();
    drop(down);
    let down_hook = |policy: &str| {
        configuration(
            "ValidatingWebhookConfiguration",
            "down",
            down_port,
            &ca,
            &[Hook {
                name: "down.example.com",
                path: "/any",
                rules: CONFIGMAPS,
                extra: &format!("  failurePolicy: {policy}\n"),
            }],
        )
    };
    apply_ok(&down_hook("Ignore"));
    apply_ok(&configmap("open", ""));
    apply_ok(&down_hook("Fail"));
    let out = apply(&configmap("closed", ""));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post"),
        "{stderr}"
    );
    // The configurations themselves are not subject to webhooks: the failing one goes.
    cp.kubectl_ok(&["delete", "validatingwebhookconfiguration", "down"]);

    // A slow webhook past its timeout: Fail refuses, Ignore lets the write through.
    let slow_hook = |policy: &str| {
        configuration(
            "ValidatingWebhookConfiguration",
            "slow",
            port,
            &ca,
            &[Hook {
                name: "slow.example.com",
                path: "/slow",
                rules: CONFIGMAPS,
                extra: &format!("  failurePolicy: {policy}\n  timeoutSeconds: 1\n"),
            }],
        )
    };
    apply_ok(&slow_hook("Fail"));
    let started = std::time::Instant::now();
    let out = apply(&configmap("slow-closed", ""));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("context deadline exceeded"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the timeout was not kept"
    );
    apply_ok(&slow_hook("Ignore"));
    apply_ok(&configmap("slow-open", ""));
    cp.kubectl_ok(&["delete", "validatingwebhookconfiguration", "slow"]);
    let metrics = cp.kubectl_ok(&["get", "--raw", "/metrics"]);
    assert!(
        metrics.contains("apiserver_admission_webhook_fail_open_count{name=\"slow.example.com\",type=\"validating\"} 1"),
        "fail-open not counted"
    );

    // matchConditions (one asking the server's RBAC through `authorizer`), objectSelector and
    // namespaceSelector decide who is sent to the webhook.
    cp.kubectl_ok(&["create", "namespace", "quiet"]);
    cp.kubectl_ok(&["label", "namespace", "quiet", "webhooks=skip"]);
    apply_ok(&configuration(
        "ValidatingWebhookConfiguration",
        "selective",
        port,
        &ca,
        &[Hook {
            name: "selective.example.com",
            path: "/deny-all",
            rules: CONFIGMAPS,
            extra: "  objectSelector: {matchExpressions: [{key: exempt, operator: DoesNotExist}]}
  namespaceSelector: {matchExpressions: [{key: webhooks, operator: NotIn, values: [skip]}]}
  matchConditions:
  - name: not-system
    expression: \"!object.metadata.name.startsWith('kube-')\"
  - name: admin-only
    expression: \"request.userInfo.username == 'karmada-admin'\"
  - name: may-create
    expression: \"authorizer.group('').resource('configmaps').namespace(request.namespace).check('create').allowed()\"
",
        }],
    ));
    let out = apply(&configmap("refused", ""));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "admission webhook \"selective.example.com\" denied the request: everything is refused"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    apply_ok(&configmap("kube-skipped", ""));
    apply_ok(&configmap("labelled", "exempt: \"yes\""));
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: elsewhere, namespace: quiet}\n",
    );
    assert_eq!(
        seen.names("/deny-all"),
        vec!["refused"],
        "only the refused one was sent"
    );
    cp.kubectl_ok(&["delete", "validatingwebhookconfiguration", "selective"]);

    // Reinvocation: `first` runs before `second` (configurations by name) and is called again
    // after `second` changed the object only with IfNeeded.
    let reinvocation = |policy: &str| {
        apply_ok(&configuration(
            "MutatingWebhookConfiguration",
            "a-first",
            port,
            &ca,
            &[Hook {
                name: "first.example.com",
                path: "/first",
                rules: CONFIGMAPS,
                extra: &format!("  reinvocationPolicy: {policy}\n"),
            }],
        ));
        apply_ok(&configuration(
            "MutatingWebhookConfiguration",
            "b-second",
            port,
            &ca,
            &[Hook {
                name: "second.example.com",
                path: "/second",
                rules: CONFIGMAPS,
                extra: "",
            }],
        ));
    };
    reinvocation("Never");
    apply_ok(&configmap("once", ""));
    let once = cp.get_json(&["configmap", "once", "-n", "default"]);
    assert_eq!(
        once["metadata"]["annotations"]["first-saw-second"], "false",
        "{once}"
    );
    assert_eq!(once["metadata"]["labels"]["second"], "yes");
    reinvocation("IfNeeded");
    apply_ok(&configmap("twice", ""));
    let twice = cp.get_json(&["configmap", "twice", "-n", "default"]);
    assert_eq!(
        twice["metadata"]["annotations"]["first-saw-second"], "true",
        "{twice}"
    );
    let first_calls = seen
        .on("/first")
        .iter()
        .filter(|r| r["name"] == "twice")
        .count();
    assert_eq!(first_calls, 2);

    // Dry-run reaches the webhooks (sideEffects None), flagged, and stores nothing.
    cp.kubectl_stdin_ok(
        &["create", "--dry-run=server", "-f", "-"],
        &configmap("dry", ""),
    );
    let dry: Vec<Value> = seen
        .on("/second")
        .into_iter()
        .filter(|r| r["name"] == "dry")
        .collect();
    assert_eq!(dry.len(), 1);
    assert_eq!(dry[0]["dryRun"], true);
    assert_eq!(dry[0]["options"]["dryRun"], json!(["All"]));
    assert!(
        cp.kubectl(&["get", "configmap", "dry", "-n", "default"])
            .status
            .code()
            != Some(0)
    );

    // Deletes are sent with the stored object as oldObject.
    cp.kubectl_ok(&[
        "delete",
        "mutatingwebhookconfiguration",
        "a-first",
        "b-second",
    ]);
    apply_ok(&configuration(
        "ValidatingWebhookConfiguration",
        "deletes",
        port,
        &ca,
        &[Hook {
            name: "deletes.example.com",
            path: "/deletes",
            rules: CONFIGMAPS,
            extra: "",
        }],
    ));
    cp.kubectl_ok(&["delete", "configmap", "once", "-n", "default"]);
    let deletes: Vec<Value> = seen
        .on("/deletes")
        .into_iter()
        .filter(|r| r["operation"] == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 1);
    assert_eq!(deletes[0]["oldObject"]["metadata"]["name"], "once");
    assert!(deletes[0]["object"].is_null());
    assert_eq!(deletes[0]["options"]["kind"], "DeleteOptions");
}

#[test]
fn webhook_configurations_are_validated_as_kube_validates_them() {
    let cp = Server::start();
    let out = cp.kubectl_stdin(
        &["apply", "-f", "-"],
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: bad}
webhooks:
- name: bad
  clientConfig: {url: 'http://127.0.0.1:1/x'}
  rules: [{operations: [CREATE], apiGroups: [''], apiVersions: [v1], resources: [pods]}]
  admissionReviewVersions: [v1]
  timeoutSeconds: 40
",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for msg in [
        "webhooks[0].name: Invalid value: \"bad\": should be a domain with at least three segments separated by dots",
        "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "webhooks[0].timeoutSeconds: Invalid value: 40: the timeout value must be between 1 and 30 seconds",
        "webhooks[0].clientConfig.url: Invalid value: \"http://127.0.0.1:1/x\": 'https' is the only allowed URL scheme; 'http' is not allowed",
    ] {
        assert!(stderr.contains(msg), "no {msg:?} in {stderr}");
    }
    // A policy and its binding, with their table columns.
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: replicas}
spec:
  matchConstraints:
    resourceRules: [{operations: [CREATE], apiGroups: [apps], apiVersions: [v1], resources: [deployments]}]
  validations: [{expression: 'object.spec.replicas <= 5'}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: replicas}
spec: {policyName: replicas, validationActions: [Deny]}
",
    );
    let policies = cp.kubectl_ok(&["get", "validatingadmissionpolicies"]);
    assert!(
        policies.contains("VALIDATIONS") && policies.contains("<unset>"),
        "{policies}"
    );
    let bindings = cp.kubectl_ok(&["get", "validatingadmissionpolicybindings"]);
    assert!(
        bindings.contains("POLICYNAME") && bindings.contains("replicas"),
        "{bindings}"
    );
    let policy = cp.get_json(&["validatingadmissionpolicy", "replicas"]);
    assert_eq!(policy["spec"]["failurePolicy"], "Fail");
    assert_eq!(
        policy["spec"]["matchConstraints"]["matchPolicy"],
        "Equivalent"
    );
    assert_eq!(policy["metadata"]["generation"], 1);
}
