//! End to end: ValidatingAdmissionPolicy and its binding on the control plane, with stock
//! kubectl — a policy forbidding `Duplicated` replica scheduling in the PropagationPolicies of
//! the namespaces a binding selects, the forbidden type read from a ConfigMap param, in Deny
//! and then Warn mode, with kube's messages and metrics; `matchPolicy: Equivalent` judging an
//! `autoscaling/v1` HorizontalPodAutoscaler as the `v2` one its rules name, and the Audit
//! action recording failures on the request's audit event.

mod support;

use serde_json::Value;
use support::Server;

const POLICY: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: no-duplicated}
spec:
  failurePolicy: Fail
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - operations: [CREATE, UPDATE]
      apiGroups: [policy.karmada.io]
      apiVersions: [v1alpha1]
      resources: [propagationpolicies]
  validations:
  - expression: >-
      !has(object.spec.placement.replicaScheduling) ||
      object.spec.placement.replicaScheduling.replicaSchedulingType != params.data.forbidden
    messageExpression: >-
      'replicaScheduling ' + params.data.forbidden + ' is not allowed in ' + request.namespace
    reason: Forbidden
";

fn binding(actions: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: no-duplicated-team-a}}
spec:
  policyName: no-duplicated
  validationActions: [{actions}]
  paramRef: {{name: placement-rules, parameterNotFoundAction: Deny}}
  matchResources:
    namespaceSelector: {{matchLabels: {{team: a}}}}
"
    )
}

fn propagation_policy(name: &str, namespace: &str, scheduling: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: {namespace}}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: web}}]
  placement:
    clusterAffinity: {{clusterNames: [member1]}}
    replicaScheduling: {{replicaSchedulingType: {scheduling}}}
"
    )
}

/// The policy check counter of one binding and enforcement action for failed validations
/// (kube counts a validation that fails as `invalid_error`), and the policy series of /metrics to show when it is not there.
fn checks(cp: &Server, binding: &str, action: &str) -> (Option<f64>, String) {
    let metrics = cp.kubectl_ok(&["get", "--raw", "/metrics"]);
    let series = format!(
        "apiserver_validating_admission_policy_check_total{{enforcement_action=\"{action}\",error_type=\"invalid_error\",policy=\"no-duplicated\",policy_binding=\"{binding}\"}}"
    );
    let shown = metrics
        .lines()
        .filter(|l| l.starts_with("apiserver_validating_admission_policy"))
        .collect::<Vec<_>>()
        .join("\n");
    (support::metric(&metrics, &series), shown)
}

#[test]
fn a_policy_with_a_param_denies_then_warns_about_duplicated_placement_in_a_namespace() {
    let cp = Server::start();
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {team: a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: placement-rules, namespace: team-a}
data: {forbidden: Duplicated}
",
    );
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], POLICY);
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &binding("Deny"));

    // The binding is in force once the server has it; a server-side dry run is admitted
    // like a write, so it shows when without storing anything.
    let dup = propagation_policy("dup", "team-a", "Duplicated");
    let denied = dry_run_refusal(&cp, "the Deny binding in force", &[], &dup);
    let expected = "propagationpolicies.policy.karmada.io \"dup\" is forbidden: \
        ValidatingAdmissionPolicy 'no-duplicated' with binding 'no-duplicated-team-a' denied \
        request: replicaScheduling Duplicated is not allowed in team-a";
    assert!(denied.contains(expected), "{denied}");
    let out = cp.kubectl_stdin(&["create", "-f", "-"], &dup);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(expected),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !cp.kubectl(&["get", "propagationpolicy", "dup", "-n", "team-a"])
            .status
            .success(),
        "a denied object is not stored"
    );

    // Divided placement in the namespace, and Duplicated in a namespace the binding does not
    // select, are admitted.
    cp.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &propagation_policy("divided", "team-a", "Divided"),
    );
    cp.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &propagation_policy("dup", "team-b", "Duplicated"),
    );
    let (denials, shown) = checks(&cp, "no-duplicated-team-a", "deny");
    assert!(denials >= Some(2.0), "{shown}");

    // The param decides: forbidding Divided instead denies an update of the Divided one.
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        "placement-rules",
        "-n",
        "team-a",
        "--type=merge",
        "-p",
        "{\"data\":{\"forbidden\":\"Divided\"}}",
    ]);
    let denied = support::wait_for("the new param in force", support::DEADLINE, || {
        let out = cp.kubectl(&[
            "label",
            "propagationpolicy",
            "divided",
            "-n",
            "team-a",
            "--dry-run=server",
            "touched=yes",
        ]);
        (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
    });
    assert!(
        denied.contains("denied request: replicaScheduling Divided is not allowed in team-a"),
        "{denied}"
    );
    cp.kubectl_ok(&[
        "patch",
        "configmap",
        "placement-rules",
        "-n",
        "team-a",
        "--type=merge",
        "-p",
        "{\"data\":{\"forbidden\":\"Duplicated\"}}",
    ]);

    // Warn: the write goes through and kubectl prints kube's warning.
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &binding("Warn"));
    let warning = "Warning: Validation failed for ValidatingAdmissionPolicy 'no-duplicated' \
        with binding 'no-duplicated-team-a': replicaScheduling Duplicated is not allowed in \
        team-a";
    dry_run_admitted(&cp, "the Warn binding in force", &dup);
    let out = cp.kubectl_stdin(&["create", "-f", "-"], &dup);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(warning), "{stderr}");
    let stored: Value = cp.get_json(&["propagationpolicy", "dup", "-n", "team-a"]);
    assert_eq!(
        stored["spec"]["placement"]["replicaScheduling"]["replicaSchedulingType"],
        "Duplicated"
    );
    let (warnings, shown) = checks(&cp, "no-duplicated-team-a", "warn");
    assert!(warnings >= Some(2.0), "{shown}");

    // Without the param the binding's parameterNotFoundAction Deny refuses the write.
    cp.kubectl_ok(&["delete", "configmap", "placement-rules", "-n", "team-a"]);
    let denied = dry_run_refusal(
        &cp,
        "the param gone",
        &[],
        &propagation_policy("other", "team-a", "Divided"),
    );
    assert!(
        denied.contains(
            "ValidatingAdmissionPolicy 'no-duplicated' with binding 'no-duplicated-team-a' \
             denied request: failed to configure binding: no params found for policy binding \
             with `Deny` parameterNotFoundAction"
        ),
        "{denied}"
    );
}

fn typed_policy(comparison: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: typed}}
spec:
  matchConstraints:
    resourceRules:
    - operations: [CREATE]
      apiGroups: [policy.karmada.io]
      apiVersions: [v1alpha1]
      resources: [propagationpolicies]
  validations:
  - expression: \"object.spec.placement.replicaScheduling.replicaSchedulingType != {comparison}\"
"
    )
}

#[test]
fn a_policy_with_a_type_error_shows_it_in_its_status_until_fixed() {
    let cp = Server::start();
    // replicaSchedulingType is a string in PropagationPolicy's schema: comparing it with an
    // int is a type error.
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &typed_policy("1"));
    let status = support::wait_for("type checking at generation 1", support::DEADLINE, || {
        let p = cp.get_json(&["validatingadmissionpolicy", "typed"]);
        (p["status"]["observedGeneration"] == 1).then(|| p["status"].clone())
    });
    let warnings = status["typeChecking"]["expressionWarnings"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(warnings.len(), 1, "{status}");
    assert_eq!(warnings[0]["fieldRef"], "spec.validations[0].expression");
    let warning = warnings[0]["warning"].as_str().unwrap_or_default();
    for part in [
        "policy.karmada.io/v1alpha1, Kind=PropagationPolicy: ERROR: <input>:1:",
        "found no matching overload for '_!=_' applied to '(string, int)'",
    ] {
        assert!(warning.contains(part), "no {part:?} in {warning}");
    }

    // Fixed, the next generation checks clean.
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &typed_policy("'Duplicated'"));
    let status = support::wait_for("type checking at generation 2", support::DEADLINE, || {
        let p = cp.get_json(&["validatingadmissionpolicy", "typed"]);
        (p["status"]["observedGeneration"] == 2).then(|| p["status"].clone())
    });
    assert_eq!(status["typeChecking"], serde_json::json!({}), "{status}");
}

const HPA_POLICIES: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: v2-utilization}
spec:
  matchConstraints:
    resourceRules:
    - operations: [CREATE]
      apiGroups: [autoscaling]
      apiVersions: [v2]
      resources: [horizontalpodautoscalers]
  validations:
  - expression: >-
      !has(object.spec.metrics) || object.spec.metrics.all(m, m.type != 'Resource' ||
      !has(m.resource.target.averageUtilization) || m.resource.target.averageUtilization <= 80)
    message: a utilization target above 80%
  auditAnnotations:
  - key: versions
    valueExpression: \"request.requestKind.version + ' as ' + request.kind.version\"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: v1-exact}
spec:
  matchConstraints:
    matchPolicy: Exact
    resourceRules:
    - operations: [CREATE]
      apiGroups: [autoscaling]
      apiVersions: [v1]
      resources: [horizontalpodautoscalers]
  validations:
  - expression: object.spec.targetCPUUtilizationPercentage <= 90
    message: a CPU target above 90%
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: v1-exact}
spec: {policyName: v1-exact, validationActions: [Deny]}
";

fn utilization_binding(actions: &str) -> String {
    format!(
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: v2-utilization}}
spec: {{policyName: v2-utilization, validationActions: [{actions}]}}
"
    )
}

/// An `autoscaling/v1` HorizontalPodAutoscaler with a CPU target.
fn hpa_v1(name: &str, percent: u32) -> String {
    format!(
        "apiVersion: autoscaling/v1
kind: HorizontalPodAutoscaler
metadata: {{name: {name}, namespace: default}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  maxReplicas: 5
  targetCPUUtilizationPercentage: {percent}
"
    )
}

/// A server-side dry run of creating `manifest` (kubectl's `flags` first, `--as=USER` say);
/// admitted like a write, it shows when a binding is in force without storing anything.
fn dry_run(cp: &Server, flags: &[&str], manifest: &str) -> std::process::Output {
    let mut args = flags.to_vec();
    args.extend(["create", "--dry-run=server", "-f", "-"]);
    cp.kubectl_stdin(&args, manifest)
}

/// The stderr of a server-side dry run of `manifest` that fails, once one does.
fn dry_run_refusal(cp: &Server, what: &str, flags: &[&str], manifest: &str) -> String {
    support::wait_for(what, support::DEADLINE, || {
        let out = dry_run(cp, flags, manifest);
        (!out.status.success()).then(|| String::from_utf8_lossy(&out.stderr).into_owned())
    })
}

/// Waits until a server-side dry run of `manifest` is admitted.
fn dry_run_admitted(cp: &Server, what: &str, manifest: &str) {
    support::wait_for(what, support::DEADLINE, || {
        dry_run(cp, &[], manifest).status.success().then_some(())
    })
}

#[test]
fn an_equivalent_version_is_judged_as_the_matched_one_and_audit_records_failures() {
    let audit_dir = tempfile::tempdir().expect("audit dir");
    let audit_log = audit_dir.path().join("audit.log");
    let cp = Server::start_with(
        support::Backend::Embedded,
        &[&format!("--audit-log-path={}", audit_log.display())],
    );
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], HPA_POLICIES);
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &utilization_binding("Deny"));

    // Created through autoscaling/v1, the object reaches the v2 policy converted to v2 (the
    // CPU target becomes a Resource metric), and the Exact v1 policy as v1.
    let denied = dry_run_refusal(&cp, "the v2 policy in force", &[], &hpa_v1("hot", 85));
    assert!(
        // Without a reason the denial is Invalid (422), which kubectl prints from the
        // details and the cause.
        denied.contains(
            "The horizontalpodautoscalers \"hot\" is invalid: : ValidatingAdmissionPolicy \
             'v2-utilization' with binding 'v2-utilization' denied request: a utilization target \
             above 80%"
        ),
        "{denied}"
    );
    cp.kubectl_stdin_ok(&["create", "-f", "-"], &hpa_v1("cool", 50));
    let denied = dry_run_refusal(&cp, "the v1 policy in force", &[], &hpa_v1("hotter", 95));
    assert!(
        denied.contains("ValidatingAdmissionPolicy 'v1-exact' with binding 'v1-exact' denied request: a CPU target above 90%"),
        "{denied}"
    );

    // Audit: the write goes through, the failure is on its audit event with the policy's
    // own audit annotation, and the check is counted as audited.
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &utilization_binding("Audit"));
    dry_run_admitted(&cp, "the Audit binding in force", &hpa_v1("hot", 85));
    cp.kubectl_stdin_ok(&["create", "-f", "-"], &hpa_v1("hot", 85));
    let annotations = support::wait_for("the create's audit event", support::DEADLINE, || {
        std::fs::read_to_string(&audit_log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find(|e| {
                e["verb"] == "create"
                    && e["objectRef"]["name"] == "hot"
                    && e["responseStatus"]["code"] == 201
                    && e["stage"] == "ResponseComplete"
            })
            .map(|e| e["annotations"].clone())
    });
    let failures: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_else(|| panic!("no validation failure in {annotations}")),
    )
    .expect("a JSON list of failures");
    assert_eq!(
        failures,
        serde_json::json!([{
            "message": "a utilization target above 80%",
            "policy": "v2-utilization",
            "binding": "v2-utilization",
            "expressionIndex": 0,
            "validationActions": ["Audit"],
        }])
    );
    assert_eq!(
        annotations["v2-utilization/versions"], "v1 as v2",
        "{annotations}"
    );
    let metrics = cp.kubectl_ok(&["get", "--raw", "/metrics"]);
    let audited = support::metric(
        &metrics,
        "apiserver_validating_admission_policy_check_total{enforcement_action=\"audit\",error_type=\"invalid_error\",policy=\"v2-utilization\",policy_binding=\"v2-utilization\"}",
    );
    assert!(audited >= Some(1.0), "{metrics}");
    let stored = cp.get_json(&[
        "horizontalpodautoscalers.v1.autoscaling",
        "hot",
        "-n",
        "default",
    ]);
    assert_eq!(stored["spec"]["targetCPUUtilizationPercentage"], 85);
}

#[test]
fn a_policys_authorizer_checks_are_decided_by_the_servers_rbac() {
    let cp = Server::start();
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: hpa-writer, namespace: default}
rules: [{apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [create]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: hpa-writers, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: hpa-writer}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: alice}
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: big-scaler, namespace: default}
rules: [{apiGroups: [autoscaling], resources: [horizontalpodautoscalers], verbs: [scale-past-three]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: big-scalers, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: big-scaler}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: bob}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: big-scale}
spec:
  matchConstraints:
    resourceRules:
    - operations: [CREATE]
      apiGroups: [autoscaling]
      apiVersions: ['*']
      resources: [horizontalpodautoscalers]
  validations:
  - expression: >-
      object.spec.maxReplicas <= 3 || authorizer.group('autoscaling')
      .resource('horizontalpodautoscalers').namespace(request.namespace)
      .check('scale-past-three').allowed()
    messageExpression: \"request.userInfo.username + ' may not allow more than 3 replicas'\"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: big-scale}
spec: {policyName: big-scale, validationActions: [Deny]}
",
    );
    let hpa = |name: &str, max: u32| {
        format!(
            "apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: {name}, namespace: default}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  maxReplicas: {max}
"
        )
    };
    let create_as = |user: &str, manifest: &str| {
        cp.kubectl_stdin(&[&format!("--as={user}"), "create", "-f", "-"], manifest)
    };
    let denied = dry_run_refusal(
        &cp,
        "the policy in force",
        &["--as=alice"],
        &hpa("alices", 5),
    );
    assert!(
        denied.contains(
            "horizontalpodautoscalers.autoscaling \"alices\" is forbidden: \
             ValidatingAdmissionPolicy 'big-scale' with binding 'big-scale' denied request: \
             alice may not allow more than 3 replicas"
        ),
        "{denied}"
    );
    // RBAC grants bob the custom verb; alice may still create within the limit.
    let out = create_as("bob", &hpa("bobs", 5));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = create_as("alice", &hpa("alices", 3));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
