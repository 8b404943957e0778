//! The dispatcher end to end, with expectations from kube's documented behaviour and
//! k8s.io/apiserver pkg/admission/plugin/policy/validating's tests: the scenario
//! (Duplicated placement forbidden in listed namespaces, Deny and Warn), matching, params,
//! variables, match conditions, audit annotations, failure policy and metrics.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::*;

#[derive(Default)]
struct TestCluster {
    namespaces: HashMap<String, Value>,
    /// (kind, namespace, object)
    params: Vec<(String, String, Value)>,
    cluster_scoped_params: bool,
    authorizer: Option<Arc<dyn Authorizer>>,
}

impl TestCluster {
    fn with_namespace(mut self, name: &str, labels: Value) -> Self {
        self.namespaces.insert(
            name.into(),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}, "spec": {}, "status": {"phase": "Active"}}),
        );
        self
    }

    fn with_param(mut self, kind: &str, namespace: &str, obj: Value) -> Self {
        self.params.push((kind.into(), namespace.into(), obj));
        self
    }
}

impl Cluster for TestCluster {
    fn namespace(&self, name: &str) -> Option<Value> {
        self.namespaces.get(name).cloned()
    }
    fn param_scope(&self, kind: &ParamKind) -> Option<ParamScope> {
        match kind.kind.as_str() {
            "ConfigMap" if !self.cluster_scoped_params => Some(ParamScope::Namespaced),
            "ConfigMap" => Some(ParamScope::Cluster),
            _ => None,
        }
    }
    fn param(&self, kind: &ParamKind, namespace: &str, name: &str) -> Option<Value> {
        self.params
            .iter()
            .find(|(k, ns, o)| *k == kind.kind && ns == namespace && o["metadata"]["name"] == name)
            .map(|(_, _, o)| o.clone())
    }
    fn params(&self, kind: &ParamKind, namespace: &str) -> Vec<Value> {
        self.params
            .iter()
            .filter(|(k, ns, _)| *k == kind.kind && (namespace.is_empty() || ns == namespace))
            .map(|(_, _, o)| o.clone())
            .collect()
    }
    fn equivalent_resources(&self, resource: &Gvr, _: &str) -> Vec<(Gvr, Gvk)> {
        if resource.resource == "deployments" {
            return vec![
                (
                    Gvr::new("apps", "v1", "deployments"),
                    Gvk::new("apps", "v1", "Deployment"),
                ),
                (
                    Gvr::new("extensions", "v1beta1", "deployments"),
                    Gvk::new("extensions", "v1beta1", "Deployment"),
                ),
            ];
        }
        Vec::new()
    }
    fn authorizer(&self) -> Option<Arc<dyn Authorizer>> {
        self.authorizer.clone()
    }
}

/// The policy: no `Duplicated` replica scheduling for PropagationPolicies in the
/// namespaces the param ConfigMap lists.
fn duplicated_policy() -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "no-duplicated", "uid": "u1", "generation": 1},
        "spec": {
            "failurePolicy": "Fail",
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{
                "apiGroups": ["policy.karmada.io"], "apiVersions": ["v1alpha1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["propagationpolicies"]
            }]},
            "validations": [{
                "expression": "!(request.namespace in params.data.namespaces.split(',')) || !has(object.spec.placement.replicaScheduling) || object.spec.placement.replicaScheduling.replicaSchedulingType != 'Duplicated'",
                "messageExpression": "'Duplicated placement is forbidden in namespace ' + request.namespace",
                "reason": "Forbidden"
            }]
        }
    })
}

fn binding(name: &str, policy: &str, actions: &[&str]) -> Value {
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": policy,
            "paramRef": {"name": "restricted-namespaces", "namespace": "policy-params", "parameterNotFoundAction": "Deny"},
            "validationActions": actions
        }
    })
}

fn params_cluster() -> TestCluster {
    TestCluster::default()
        .with_namespace("team-a", json!({}))
        .with_namespace("team-c", json!({}))
        .with_param(
            "ConfigMap",
            "policy-params",
            json!({"metadata": {"name": "restricted-namespaces", "namespace": "policy-params"}, "data": {"namespaces": "team-a,team-b"}}),
        )
}

fn propagation_policy(ns: &str, scheduling: &str) -> Value {
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {"name": "pp", "namespace": ns},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"}],
            "placement": {
                "clusterAffinity": {"clusterNames": ["member1", "member2"]},
                "replicaScheduling": {"replicaSchedulingType": scheduling}
            }
        }
    })
}

fn create<'a>(object: &'a Value, resource: Gvr, kind: Gvk) -> Attributes<'a> {
    Attributes {
        operation: Operation::Create,
        kind,
        resource,
        subresource: String::new(),
        name: object["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .into(),
        namespace: object["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .into(),
        object: Some(object),
        old_object: None,
        dry_run: false,
        options: None,
        user: UserInfo {
            username: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        },
    }
}

fn create_pp(object: &Value) -> Attributes<'_> {
    create(
        object,
        Gvr::new("policy.karmada.io", "v1alpha1", "propagationpolicies"),
        Gvk::new("policy.karmada.io", "v1alpha1", "PropagationPolicy"),
    )
}

fn deploy_attrs(obj: &Value) -> Attributes<'_> {
    create(
        obj,
        Gvr::new("apps", "v1", "deployments"),
        Gvk::new("apps", "v1", "Deployment"),
    )
}

fn engine(policies: &[Value], bindings: &[Value]) -> Engine {
    let registry: &'static component_base::metrics::Registry = Box::leak(Box::default());
    let e = Engine::new(registry);
    assert!(e.sync(policies, bindings).is_empty());
    e
}

#[test]
fn duplicated_placement_is_denied_in_listed_namespaces() {
    let e = engine(
        &[duplicated_policy()],
        &[binding("no-duplicated-binding", "no-duplicated", &["Deny"])],
    );
    let cluster = params_cluster();
    let pp = propagation_policy("team-a", "Duplicated");
    let attrs = create_pp(&pp);
    let out = e.validate(&attrs, &cluster);
    let denial = out.denial.expect("denied");
    assert_eq!(
        denial.message,
        "ValidatingAdmissionPolicy 'no-duplicated' with binding 'no-duplicated-binding' denied request: Duplicated placement is forbidden in namespace team-a"
    );
    assert_eq!(denial.reason, "Forbidden");
    assert_eq!(denial.code, 403);
    let status = denial.status(&attrs);
    assert_eq!(
        status["message"],
        "propagationpolicies.policy.karmada.io \"pp\" is forbidden: ValidatingAdmissionPolicy 'no-duplicated' with binding 'no-duplicated-binding' denied request: Duplicated placement is forbidden in namespace team-a"
    );
    assert_eq!(status["code"], 403);
    assert_eq!(
        status["details"]["causes"][0]["message"],
        json!(denial.message)
    );
    assert!(out.warnings.is_empty());

    // Divided placement, or a namespace the param does not list, is admitted.
    let divided = propagation_policy("team-a", "Divided");
    assert_eq!(
        e.validate(&create_pp(&divided), &cluster),
        Outcome::default()
    );
    let elsewhere = propagation_policy("team-c", "Duplicated");
    assert_eq!(
        e.validate(&create_pp(&elsewhere), &cluster),
        Outcome::default()
    );
}

#[test]
fn duplicated_placement_warns_in_warn_mode() {
    let e = engine(
        &[duplicated_policy()],
        &[binding("warn-binding", "no-duplicated", &["Warn", "Audit"])],
    );
    let pp = propagation_policy("team-a", "Duplicated");
    let out = e.validate(&create_pp(&pp), &params_cluster());
    assert_eq!(out.denial, None);
    assert_eq!(
        out.warnings,
        [
            "Validation failed for ValidatingAdmissionPolicy 'no-duplicated' with binding 'warn-binding': Duplicated placement is forbidden in namespace team-a"
        ]
    );
    let audit: Value = serde_json::from_str(
        &out.audit_annotations["validation.policy.admission.k8s.io/validation_failure"],
    )
    .unwrap();
    assert_eq!(
        audit,
        json!([{
            "message": "Duplicated placement is forbidden in namespace team-a",
            "policy": "no-duplicated",
            "binding": "warn-binding",
            "expressionIndex": 0,
            "validationActions": ["Warn", "Audit"]
        }])
    );
}

#[test]
fn missing_params_follow_parameter_not_found_action() {
    let e = engine(
        &[duplicated_policy()],
        &[binding("b", "no-duplicated", &["Deny"])],
    );
    let pp = propagation_policy("team-a", "Duplicated");
    let empty = TestCluster::default().with_namespace("team-a", json!({}));
    let out = e.validate(&create_pp(&pp), &empty);
    assert_eq!(
        out.denial.unwrap().message,
        "ValidatingAdmissionPolicy 'no-duplicated' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
    );
    // Allow: no param, nothing to evaluate.
    let mut allow = binding("b", "no-duplicated", &["Deny"]);
    allow["spec"]["paramRef"]["parameterNotFoundAction"] = json!("Allow");
    let e = engine(&[duplicated_policy()], &[allow]);
    assert_eq!(e.validate(&create_pp(&pp), &empty), Outcome::default());
    // A cluster-scoped param kind with a namespace in the paramRef is a configuration error.
    let cluster = TestCluster {
        cluster_scoped_params: true,
        ..params_cluster()
    };
    let e = engine(
        &[duplicated_policy()],
        &[binding("b", "no-duplicated", &["Deny"])],
    );
    assert!(e.validate(&create_pp(&pp), &cluster).denial.unwrap().message.ends_with(
        "failed to configure binding: paramRef.namespace must not be provided for a cluster-scoped `paramKind`"
    ));
}

#[test]
fn params_by_selector_evaluate_once_each() {
    let mut b = binding("b", "no-duplicated", &["Warn"]);
    b["spec"]["paramRef"] =
        json!({"selector": {"matchLabels": {"policy": "dup"}}, "namespace": "policy-params"});
    let e = engine(&[duplicated_policy()], &[b]);
    let cluster = TestCluster::default()
        .with_namespace("team-a", json!({}))
        .with_param("ConfigMap", "policy-params", json!({"metadata": {"name": "one", "labels": {"policy": "dup"}}, "data": {"namespaces": "team-a"}}))
        .with_param("ConfigMap", "policy-params", json!({"metadata": {"name": "two", "labels": {"policy": "dup"}}, "data": {"namespaces": "team-a,team-x"}}))
        .with_param("ConfigMap", "policy-params", json!({"metadata": {"name": "other"}, "data": {"namespaces": "team-a"}}));
    let pp = propagation_policy("team-a", "Duplicated");
    let out = e.validate(&create_pp(&pp), &cluster);
    assert_eq!(out.warnings.len(), 2, "{:?}", out.warnings);
}

#[test]
fn messages_fall_back_as_kubes() {
    let policy = |validation: Value| {
        json!({
            "metadata": {"name": "p", "generation": 1},
            "spec": {
                "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]},
                "validations": [validation]
            }
        })
    };
    let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}});
    let pp = propagation_policy("team-a", "Duplicated");
    let cluster = params_cluster();
    let cases = [
        (
            json!({"expression": "object.metadata.name == 'x'"}),
            "failed expression: object.metadata.name == 'x'",
            "Invalid",
            422,
        ),
        (
            json!({"expression": "false", "message": " static message "}),
            "static message",
            "Invalid",
            422,
        ),
        (
            json!({"expression": "false", "message": "static", "messageExpression": "'multi\\nline'"}),
            "static",
            "Invalid",
            422,
        ),
        (
            json!({"expression": "false", "message": "static", "messageExpression": "object.missing"}),
            "static",
            "Invalid",
            422,
        ),
        (
            json!({"expression": "false", "messageExpression": "'name is ' + object.metadata.name", "reason": "Unauthorized"}),
            "name is pp",
            "Unauthorized",
            401,
        ),
        (
            json!({"expression": "object.spec.missing"}),
            "compilation error: must evaluate to bool but got dyn",
            "Invalid",
            422,
        ),
        (
            json!({"expression": "object.spec.missing == 1"}),
            "expression 'object.spec.missing == 1' resulted in error: no such key: missing",
            "Invalid",
            422,
        ),
        (
            json!({"expression": "params.x == 1"}),
            "compilation error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.x == 1\n | ^",
            "Invalid",
            422,
        ),
    ];
    for (validation, message, reason, code) in cases {
        let e = engine(&[policy(validation.clone())], std::slice::from_ref(&b));
        let denial = e
            .validate(&create_pp(&pp), &cluster)
            .denial
            .unwrap_or_else(|| panic!("{validation}"));
        assert_eq!(
            denial.message,
            format!("ValidatingAdmissionPolicy 'p' with binding 'b' denied request: {message}"),
            "{validation}"
        );
        assert_eq!(
            (denial.reason.as_str(), denial.code),
            (reason, code),
            "{validation}"
        );
    }
}

#[test]
fn failure_policy_ignore_admits_on_errors() {
    let p = json!({
        "metadata": {"name": "p", "generation": 1},
        "spec": {
            "failurePolicy": "Ignore",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]},
            "validations": [{"expression": "object.spec.missing == 1"}, {"expression": "1 == "}]
        }
    });
    let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}});
    let e = engine(&[p], &[b]);
    let pp = propagation_policy("team-a", "Duplicated");
    assert_eq!(e.validate(&create_pp(&pp), &params_cluster()).denial, None);
    // Each admitted error is counted, labelled by its kind of error.
    let m = e.metrics;
    assert_eq!(
        m.value(&metrics::CHECK_TOTAL, &["allow", "invalid_error", "p", "b"]),
        Some(1.0)
    );
    assert_eq!(
        m.value(&metrics::CHECK_TOTAL, &["allow", "compile_error", "p", "b"]),
        Some(1.0)
    );
}

#[test]
fn matching_follows_selectors_rules_and_exclusions() {
    let p = |constraints: Value| json!({"metadata": {"name": "p", "generation": 1}, "spec": {"matchConstraints": constraints, "validations": [{"expression": "false"}]}});
    let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}});
    let cluster = TestCluster::default()
        .with_namespace("prod", json!({"env": "prod"}))
        .with_namespace("dev", json!({"env": "dev"}));
    let deploy = |ns: &str, labels: Value| json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": ns, "labels": labels}});
    let rules = json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]);
    let cases = [
        (
            json!({"resourceRules": rules}),
            deploy("dev", json!({})),
            true,
        ),
        (
            json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["deployments"]}]}),
            deploy("dev", json!({})),
            false,
        ),
        (
            json!({"resourceRules": rules, "namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            deploy("dev", json!({})),
            false,
        ),
        (
            json!({"resourceRules": rules, "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}}),
            deploy("prod", json!({})),
            true,
        ),
        (
            json!({"resourceRules": rules, "objectSelector": {"matchLabels": {"app": "web"}}}),
            deploy("dev", json!({"app": "web"})),
            true,
        ),
        (
            json!({"resourceRules": rules, "objectSelector": {"matchLabels": {"app": "web"}}}),
            deploy("dev", json!({"app": "db"})),
            false,
        ),
        (
            json!({"resourceRules": rules, "excludeResourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"], "resourceNames": ["d"]}]}),
            deploy("dev", json!({})),
            false,
        ),
        (
            json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["*"], "resources": ["deployments"], "resourceNames": ["other"]}]}),
            deploy("dev", json!({})),
            false,
        ),
        (
            json!({"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"], "scope": "Cluster"}]}),
            deploy("dev", json!({})),
            false,
        ),
        // matchPolicy Equivalent (the default) matches the same objects at another version.
        (
            json!({"resourceRules": [{"apiGroups": ["extensions"], "apiVersions": ["v1beta1"], "operations": ["CREATE"], "resources": ["deployments"]}]}),
            deploy("dev", json!({})),
            true,
        ),
        (
            json!({"matchPolicy": "Exact", "resourceRules": [{"apiGroups": ["extensions"], "apiVersions": ["v1beta1"], "operations": ["CREATE"], "resources": ["deployments"]}]}),
            deploy("dev", json!({})),
            false,
        ),
    ];
    for (constraints, obj, denied) in cases {
        let e = engine(&[p(constraints.clone())], std::slice::from_ref(&b));
        assert_eq!(
            e.validate(&deploy_attrs(&obj), &cluster).denial.is_some(),
            denied,
            "{constraints}"
        );
    }
    // A binding narrows its policy with its own matchResources.
    let narrowed = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"env": "prod"}}}}});
    let e = engine(&[p(json!({"resourceRules": rules}))], &[narrowed]);
    let (prod, dev) = (deploy("prod", json!({})), deploy("dev", json!({})));
    assert!(e.validate(&deploy_attrs(&prod), &cluster).denial.is_some());
    assert!(e.validate(&deploy_attrs(&dev), &cluster).denial.is_none());
}

#[test]
fn variables_match_conditions_and_audit_annotations() {
    let p = json!({
        "metadata": {"name": "p", "generation": 1},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]},
            "matchConditions": [{"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}],
            "variables": [
                {"name": "clusters", "expression": "object.spec.placement.clusterAffinity.clusterNames"},
                {"name": "count", "expression": "size(variables.clusters)"},
                {"name": "broken", "expression": "object.spec.missing"}
            ],
            "validations": [
                {"expression": "variables.count <= 1", "messageExpression": "'too many clusters: ' + string(variables.count)"},
                {"expression": "variables.broken == 1"}
            ],
            "auditAnnotations": [
                {"key": "clusters", "valueExpression": "variables.clusters.join(',')"},
                {"key": "nothing", "valueExpression": "null"}
            ]
        }
    });
    let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Warn"]}});
    let e = engine(&[p], &[b]);
    let pp = propagation_policy("team-a", "Duplicated");
    let out = e.validate(&create_pp(&pp), &params_cluster());
    assert_eq!(
        out.warnings,
        [
            "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': too many clusters: 2",
            "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': expression 'variables.broken == 1' resulted in error: composited variable \"broken\" fails to evaluate: no such key: missing",
        ]
    );
    assert_eq!(out.audit_annotations["p/clusters"], "member1,member2");
    assert!(!out.audit_annotations.contains_key("p/nothing"));
    // The match condition leaves system users out.
    let mut attrs = create_pp(&pp);
    attrs.user.username = "system:admin".into();
    assert_eq!(e.validate(&attrs, &params_cluster()), Outcome::default());
}

#[test]
fn policies_recompile_only_on_a_new_generation() {
    let e = engine(&[duplicated_policy()], &[]);
    let before = Arc::as_ptr(&e.read().policies["no-duplicated"]);
    e.set_policy(&duplicated_policy()).unwrap();
    assert_eq!(Arc::as_ptr(&e.read().policies["no-duplicated"]), before);
    let mut next = duplicated_policy();
    next["metadata"]["generation"] = json!(2);
    e.set_policy(&next).unwrap();
    assert_ne!(Arc::as_ptr(&e.read().policies["no-duplicated"]), before);
    e.remove_policy("no-duplicated");
    assert!(!e.has_policy("no-duplicated"));
}

/// Answers `create` on propagationpolicies for alice only.
struct OnlyAlice;

impl Authorizer for OnlyAlice {
    fn authorize(&self, a: &AuthorizationAttributes) -> AuthorizationDecision {
        let allowed =
            a.user.username == "alice" && a.verb == "create" && a.resource == "propagationpolicies";
        AuthorizationDecision {
            verdict: if allowed {
                Verdict::Allow
            } else {
                Verdict::Deny
            },
            reason: String::new(),
            error: None,
        }
    }
}

#[test]
fn request_namespace_and_authorizer_variables() {
    let p = json!({
        "metadata": {"name": "p", "generation": 1},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]},
            "validations": [
                {"expression": "request.operation == 'CREATE' && request.namespace == 'team-a' && request.name == 'pp'"},
                {"expression": "request.kind.kind == 'PropagationPolicy' && request.resource.resource == 'propagationpolicies'"},
                {"expression": "request.userInfo.username == 'alice' && 'system:authenticated' in request.userInfo.groups"},
                {"expression": "request.dryRun == false && oldObject == null && object != null"},
                {"expression": "namespaceObject.metadata.name == 'team-a' && namespaceObject.metadata.labels.env == 'prod'"},
                {"expression": "namespaceObject.status.phase == 'Active'"},
                {"expression": "authorizer.requestResource.check('create').allowed()"},
                {"expression": "authorizer.group('policy.karmada.io').resource('propagationpolicies').namespace('team-a').check('create').allowed()"}
            ]
        }
    });
    let b = json!({"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny"]}});
    let e = engine(&[p], &[b]);
    let cluster = TestCluster {
        authorizer: Some(Arc::new(OnlyAlice)),
        ..TestCluster::default().with_namespace("team-a", json!({"env": "prod"}))
    };
    let pp = propagation_policy("team-a", "Duplicated");
    assert_eq!(e.validate(&create_pp(&pp), &cluster), Outcome::default());
    let mut bob = create_pp(&pp);
    bob.user.username = "bob".into();
    let denial = e.validate(&bob, &cluster).denial.unwrap();
    assert_eq!(
        denial.message,
        "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: request.userInfo.username == 'alice' && 'system:authenticated' in request.userInfo.groups"
    );
}
