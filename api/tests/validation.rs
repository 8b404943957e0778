//! Every validation rule: the CRD schema checks (422 Invalid) and Karmada's validating
//! webhooks (403 Forbidden), with exact field paths and messages.

mod common;

use api::{AdmissionError, FieldErrorKind, Operation, admit};
use common::{messages, yaml};
use serde_json::{Value, json};

const KIND_REGEX_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p.clone(),
    }
}

/// A minimal valid PropagationPolicy in namespace ns1 with `spec` merged in.
fn pp(spec: Value) -> Value {
    let mut obj = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "ns1"},
        "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}]}
    });
    merge(&mut obj["spec"], &spec);
    obj
}

/// A minimal valid OverridePolicy in namespace ns1 with `spec` merged in.
fn op(spec: Value) -> Value {
    let mut obj = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy",
        "metadata": {"name": "o", "namespace": "ns1"},
        "spec": {}
    });
    merge(&mut obj["spec"], &spec);
    obj
}

fn rule(overriders: Value) -> Value {
    json!({"overrideRules": [{"overriders": overriders}]})
}

fn reject(kind: &str, op: Operation, mut obj: Value, old: Option<&Value>) -> AdmissionError {
    match admit(kind, op, &mut obj, old) {
        Ok(()) => panic!("{kind} was admitted: {obj}"),
        Err(e) => e,
    }
}

fn accept(kind: &str, mut obj: Value) -> Value {
    admit(kind, Operation::Create, &mut obj, None)
        .unwrap_or_else(|e| panic!("{kind} rejected: {e}"));
    obj
}

/// Expects a 422 with exactly these field errors.
fn assert_invalid(kind: &str, obj: Value, expected: &[&str]) {
    let err = reject(kind, Operation::Create, obj, None);
    assert_eq!(err.code(), 422, "{err}");
    assert_eq!(err.reason(), "Invalid");
    assert_eq!(messages(&err), expected);
}

/// Expects a 403 from `webhook` with exactly these field errors.
fn assert_denied(kind: &str, webhook: &str, obj: Value, expected: &[&str]) {
    let err = reject(kind, Operation::Create, obj, None);
    assert_eq!(err.code(), 403, "{err}");
    assert_eq!(err.reason(), "Forbidden");
    match &err {
        AdmissionError::Denied { webhook: w, .. } => assert_eq!(*w, webhook),
        other => panic!("not a webhook denial: {other:?}"),
    }
    assert_eq!(messages(&err), expected, "{err}");
}

#[test]
fn schema_errors_are_422_with_kube_messages() {
    let cases: Vec<(&str, Value, Vec<&str>)> = vec![
        (
            "wrong type",
            pp(json!({"priority": "x"})),
            vec![
                r#"spec.priority: Invalid value: "string": spec.priority in body must be of type integer: "string""#,
            ],
        ),
        (
            "empty resourceSelectors",
            pp(json!({"resourceSelectors": []})),
            vec![
                "spec.resourceSelectors: Invalid value: 0: spec.resourceSelectors in body should have at least 1 items",
            ],
        ),
        (
            "resourceSelector without kind",
            pp(json!({"resourceSelectors": [{"apiVersion": "v1"}]})),
            vec!["spec.resourceSelectors[0].kind: Required value"],
        ),
        (
            "enum",
            pp(json!({"conflictResolution": "Merge"})),
            vec![
                r#"spec.conflictResolution: Unsupported value: "Merge": supported values: "Abort", "Overwrite""#,
            ],
        ),
        (
            "restricted enum on a shared type",
            pp(json!({"propagateDeps": true, "failover": {"cluster": {"purgeMode": "Never"}}})),
            vec![
                r#"spec.failover.cluster.purgeMode: Unsupported value: "Never": supported values: "Directly", "Gracefully""#,
            ],
        ),
        (
            "minimum",
            pp(
                json!({"placement": {"replicaScheduling": {"weightPreference": {"staticWeightList": [{"targetCluster": {}, "weight": 0}]}}}}),
            ),
            vec![
                "spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight: Invalid value: 0: spec.placement.replicaScheduling.weightPreference.staticWeightList[0].weight in body should be greater than or equal to 1",
            ],
        ),
        (
            "maxLength",
            pp(json!({"placement": {"clusterAffinities": [{"affinityName": "a".repeat(33)}]}})),
            vec![
                "spec.placement.clusterAffinities[0].affinityName: Too long: may not be more than 32 bytes",
            ],
        ),
        (
            "minLength",
            pp(json!({"placement": {"clusterAffinities": [{"affinityName": ""}]}})),
            vec![
                r#"spec.placement.clusterAffinities[0].affinityName: Invalid value: "": spec.placement.clusterAffinities[0].affinityName in body should be at least 1 chars long"#,
            ],
        ),
        (
            "several errors at once",
            pp(json!({"priority": 1.5, "preemption": "Sometimes", "resourceSelectors": [{}]})),
            vec![
                r#"spec.preemption: Unsupported value: "Sometimes": supported values: "Always", "Never""#,
                r#"spec.priority: Invalid value: "number": spec.priority in body must be of type integer: "number""#,
                "spec.resourceSelectors[0].apiVersion: Required value",
                "spec.resourceSelectors[0].kind: Required value",
            ],
        ),
    ];
    for (name, obj, expected) in cases {
        let err = reject("PropagationPolicy", Operation::Create, obj, None);
        assert_eq!(err.code(), 422, "{name}: {err}");
        assert_eq!(messages(&err), expected, "{name}");
    }
}

#[test]
fn schema_error_kinds_map_to_status_cause_reasons() {
    let err = reject(
        "PropagationPolicy",
        Operation::Create,
        pp(
            json!({"priority": "x", "conflictResolution": "Merge", "resourceSelectors": [{"apiVersion": "v1"}],
                  "placement": {"clusterAffinities": [{"affinityName": "a".repeat(40)}]}}),
        ),
        None,
    );
    let reasons: Vec<(&str, &str)> = err
        .field_errors()
        .iter()
        .map(|e| (e.field.as_str(), e.reason()))
        .collect();
    assert_eq!(
        reasons,
        vec![
            ("spec.conflictResolution", "FieldValueNotSupported"),
            (
                "spec.placement.clusterAffinities[0].affinityName",
                "FieldValueTooLong"
            ),
            ("spec.priority", "FieldValueTypeInvalid"),
            ("spec.resourceSelectors[0].kind", "FieldValueRequired"),
        ]
    );
    assert_eq!(
        err.status_message("PropagationPolicy", "policy.karmada.io", "p"),
        format!(
            "PropagationPolicy.policy.karmada.io \"p\" is invalid: [{}]",
            messages(&err).join(", ")
        )
    );
}

#[test]
fn schema_checks_for_other_kinds() {
    assert_invalid(
        "PropagationPolicy",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {"name": "p", "namespace": "ns1"}}),
        &["spec: Required value"],
    );
    assert_invalid(
        "PropagationPolicy",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": "p",
               "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "A"}]}}),
        &[
            r#"metadata: Invalid value: "string": metadata in body must be of type object: "string""#,
        ],
    );
    let rb = |spec: Value| {
        let mut obj = json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "r", "namespace": "default"},
            "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}});
        merge(&mut obj["spec"], &spec);
        obj
    };
    assert_invalid(
        "ResourceBinding",
        rb(
            json!({"gracefulEvictionTasks": [{"fromCluster": "m1", "producer": "p", "reason": "bad reason"}]}),
        ),
        &[
            r#"spec.gracefulEvictionTasks[0].reason: Invalid value: "bad reason": spec.gracefulEvictionTasks[0].reason in body should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'"#,
        ],
    );
    assert_invalid(
        "ResourceBinding",
        rb(
            json!({"replicaRequirements": {"resourceRequest": {"cpu": "1.5x", "memory": 1024, "gpu": true}}}),
        ),
        &[
            r#"spec.replicaRequirements.resourceRequest.cpu: Invalid value: "1.5x": spec.replicaRequirements.resourceRequest.cpu in body should match '^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$'"#,
            r#"spec.replicaRequirements.resourceRequest.gpu: Invalid value: "boolean": spec.replicaRequirements.resourceRequest.gpu in body must be of type integer,string: "boolean""#,
        ],
    );
    assert_invalid(
        "ResourceBinding",
        rb(
            json!({"resource": {"name": null}, "components": [{"name": "c".repeat(33), "replicas": 1}]}),
        ),
        &[
            "spec.components[0].name: Too long: may not be more than 32 bytes",
            "spec.resource.name: Required value",
        ],
    );
    assert_invalid(
        "Work",
        json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": {"name": "w", "namespace": "karmada-es-m1"},
               "spec": {"workload": {"manifests": ["not an object"]}}}),
        &[
            r#"spec.workload.manifests[0]: Invalid value: "string": spec.workload.manifests[0] in body must be of type object: "string""#,
        ],
    );

    // Status updates are schema-checked too.
    let mut work = common::fixture("karmada-work.yaml");
    work["status"]["conditions"][0]["status"] = json!("Maybe");
    work["status"]["conditions"][0]
        .as_object_mut()
        .unwrap()
        .remove("lastTransitionTime");
    let err = reject("Work", Operation::UpdateStatus, work.clone(), Some(&work));
    assert_eq!(
        messages(&err),
        vec![
            r#"status.conditions[0].status: Unsupported value: "Maybe": supported values: "True", "False", "Unknown""#,
            "status.conditions[0].lastTransitionTime: Required value",
        ]
    );
}

#[test]
fn propagation_policy_webhook_rules() {
    let w = "propagationpolicy.karmada.io";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "clusterAffinity with clusterAffinities",
            pp(json!({"placement": {"clusterAffinity": {"clusterNames": ["m1"]},
                                    "clusterAffinities": [{"affinityName": "a", "clusterNames": ["m2"]}]}})),
            vec![r#"spec.placement: Invalid value: {"clusterAffinity":{"clusterNames":["m1"]},"clusterAffinities":[{"affinityName":"a","clusterNames":["m2"]}]}: clusterAffinities cannot co-exist with clusterAffinity"#.into()],
        ),
        (
            "duplicate affinity names",
            pp(json!({"placement": {"clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1"]}, {"affinityName": "a", "clusterNames": ["m2"]}]}})),
            vec![r#"spec.placement.clusterAffinities: Invalid value: [{"affinityName":"a","clusterNames":["m1"]},{"affinityName":"a","clusterNames":["m2"]}]: each affinity term in a policy must have a unique name"#.into()],
        ),
        (
            "affinity name not a label key",
            pp(json!({"placement": {"clusterAffinities": [{"affinityName": "bad name"}]}})),
            vec![format!(r#"spec.placement.clusterAffinities[0]: Invalid value: "bad name": name part {KIND_REGEX_MSG}"#)],
        ),
        (
            "spreadByField with spreadByLabel",
            pp(json!({"placement": {"spreadConstraints": [{"spreadByField": "cluster", "spreadByLabel": "rack"}]}})),
            vec![r#"spec.placement.spreadConstraints[0]: Invalid value: {"spreadByField":"cluster","spreadByLabel":"rack","minGroups":1}: spreadByLabel should not co-exist with spreadByField"#.into()],
        ),
        (
            "minGroups above maxGroups",
            pp(json!({"placement": {"spreadConstraints": [{"minGroups": 3, "maxGroups": 2}]}})),
            vec![r#"spec.placement.spreadConstraints[0]: Invalid value: {"spreadByField":"cluster","maxGroups":2,"minGroups":3}: maxGroups lower than minGroups is not allowed"#.into()],
        ),
        (
            "negative groups",
            pp(json!({"placement": {"spreadConstraints": [{"minGroups": -1, "maxGroups": -2}]}})),
            vec![
                r#"spec.placement.spreadConstraints[0]: Invalid value: {"spreadByField":"cluster","maxGroups":-2,"minGroups":-1}: minGroups lower than 0 is not allowed"#.into(),
                r#"spec.placement.spreadConstraints[0]: Invalid value: {"spreadByField":"cluster","maxGroups":-2,"minGroups":-1}: maxGroups lower than 0 is not allowed"#.into(),
            ],
        ),
        (
            "repeated field and no cluster constraint",
            pp(json!({"placement": {"spreadConstraints": [{"spreadByField": "region"}, {"spreadByField": "region"}, {"spreadByField": "region"}]}})),
            vec![
                r#"spec.placement.spreadConstraints: Invalid value: [{"spreadByField":"region","minGroups":1},{"spreadByField":"region","minGroups":1},{"spreadByField":"region","minGroups":1}]: multiple region spread constraints are not allowed"#.into(),
                r#"spec.placement.spreadConstraints: Invalid value: [{"spreadByField":"region","minGroups":1},{"spreadByField":"region","minGroups":1},{"spreadByField":"region","minGroups":1}]: the cluster spread constraint must be enabled in one of the constraints in case of SpreadByField is enabled"#.into(),
            ],
        ),
        (
            "unsupported fieldSelector key",
            pp(json!({"placement": {"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["x"]}]}}}})),
            vec![r#"spec.placement.clusterAffinity.fieldSelector: Invalid value: {"matchExpressions":[{"key":"foo","operator":"In","values":["x"]}]}: unsupported key "foo", must be provider, region, or zone"#.into()],
        ),
        (
            "unsupported fieldSelector operator in an affinity term",
            pp(json!({"placement": {"clusterAffinities": [{"affinityName": "a", "fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}})),
            vec![r#"spec.placement.clusterAffinities[0].fieldSelector: Invalid value: {"matchExpressions":[{"key":"zone","operator":"Exists"}]}: unsupported operator "Exists", must be In or NotIn"#.into()],
        ),
        (
            "toleration with a comparison operator",
            pp(json!({"placement": {"clusterTolerations": [{"key": "k", "operator": "Lt", "value": "3", "effect": "NoSchedule"}]}})),
            vec![r#"spec.placement.clusterTolerations[0].operator: Unsupported value: "Lt": supported values: "", "Exists", "Equal""#.into()],
        ),
        (
            "overflow without dynamic or aggregated division",
            pp(json!({"placement": {"clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1"],
                                                           "overflowAffinities": [{"affinityName": "b", "clusterNames": ["m2"]}]}]}})),
            vec![r#"spec.placement.clusterAffinities[0].overflowAffinities: Invalid value: [{"affinityName":"b","clusterNames":["m2"]}]: overflowAffinities can only be used together with dynamic weight or aggregated scheduling"#.into()],
        ),
        (
            "overflow without inline affinity, reusing the primary name",
            pp(json!({"placement": {
                "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"},
                "clusterAffinities": [{"affinityName": "a", "overflowAffinities": [{"affinityName": "a", "clusterNames": ["m2"]}]}]}})),
            vec![
                r#"spec.placement.clusterAffinities[0].overflowAffinities: Invalid value: [{"affinityName":"a","clusterNames":["m2"]}]: overflowAffinities can only be used together with the inline ClusterAffinity"#.into(),
                r#"spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName: Invalid value: "a": overflow affinity name must be unique and must not duplicate the primary group's affinityName"#.into(),
            ],
        ),
        (
            "application failover without propagateDeps",
            pp(json!({"failover": {"application": {"decisionConditions": {}}}})),
            vec!["spec.propagateDeps: Invalid value: false: application failover is set, propagateDeps must be true".into()],
        ),
        (
            "grace period with a direct purge",
            pp(json!({"propagateDeps": true, "failover": {"application": {"decisionConditions": {}, "purgeMode": "Directly", "gracePeriodSeconds": 30}}})),
            vec!["spec.failover.application.gracePeriodSeconds: Invalid value: 30: only takes effect when purgeMode is gracefully".into()],
        ),
        (
            "non-positive grace period and negative toleration",
            pp(json!({"propagateDeps": true, "failover": {"application": {"decisionConditions": {"tolerationSeconds": -1}, "purgeMode": "Graciously", "gracePeriodSeconds": 0}}})),
            vec![
                "spec.failover.application.decisionConditions.tolerationSeconds: Invalid value: -1: must be greater than or equal to 0".into(),
                "spec.failover.application.gracePeriodSeconds: Invalid value: 0: must be greater than 0".into(),
            ],
        ),
        (
            "state preservation alias is not a label key",
            pp(json!({"propagateDeps": true, "failover": {"cluster": {"statePreservation": {"rules": [{"aliasLabelName": "a/b/c", "jsonPath": "{.x}"}]}}}})),
            vec![format!(r#"spec.failover.cluster.statePreservation.rules[0].aliasLabelName: Invalid value: "a/b/c": a valid label key {KIND_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#)],
        ),
        (
            "selector in another namespace",
            pp(json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "other"}]})),
            vec![r#"spec.resourceSelectors[0].namespace: Invalid value: "other": namespace of resource selector must be the same as the namespace of the policy"#.into()],
        ),
        (
            "preemption with an unnamed selector",
            pp(json!({"preemption": "Always", "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]})),
            vec![r#"spec.resourceSelectors[0].name: Invalid value: "": name cannot be empty if preemption is Always, the empty name may cause unexpected resources preemption"#.into()],
        ),
        (
            "suspension of everything and of some clusters",
            pp(json!({"suspension": {"dispatching": true, "dispatchingOnClusters": {"clusterNames": ["m1"]}}})),
            vec![r#"spec.suspension.suspension: Invalid value: {"dispatching":true,"dispatchingOnClusters":{"clusterNames":["m1"]}}: suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames"#.into()],
        ),
        (
            "workload affinity and anti-affinity on one key",
            pp(json!({"placement": {"workloadAffinity": {"affinity": {"groupByLabelKey": "app"}, "antiAffinity": {"groupByLabelKey": "app"}}}})),
            vec![r#"spec.placement.workloadAffinity: Invalid value: {"affinity":{"groupByLabelKey":"app"},"antiAffinity":{"groupByLabelKey":"app"}}: affinity and antiAffinity must not use the same groupByLabelKey"#.into()],
        ),
        (
            "workload affinity key not a label key",
            pp(json!({"placement": {"workloadAffinity": {"antiAffinity": {"groupByLabelKey": "-x"}}}})),
            vec![format!(r#"spec.placement.workloadAffinity.antiAffinity.groupByLabelKey: Invalid value: "-x": name part {KIND_REGEX_MSG}"#)],
        ),
    ];
    for (name, obj, expected) in cases {
        let err = reject("PropagationPolicy", Operation::Create, obj, None);
        assert_eq!(err.code(), 403, "{name}: {err}");
        match &err {
            AdmissionError::Denied { webhook, .. } => assert_eq!(*webhook, w, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(messages(&err), expected, "{name}");
    }
}

#[test]
fn valid_policies_pass_validation() {
    for obj in [
        pp(
            json!({"placement": {"spreadConstraints": [{"spreadByField": "region", "maxGroups": 2}, {"spreadByField": "cluster", "minGroups": 2, "maxGroups": 4}]}}),
        ),
        pp(
            json!({"placement": {"clusterAffinity": {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["cn"]}]}}}}),
        ),
        pp(json!({"placement": {
            "replicaScheduling": {"replicaSchedulingType": "Divided", "weightPreference": {"dynamicWeight": "AvailableReplicas"}},
            "clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1"], "overflowAffinities": [{"affinityName": "b", "clusterNames": ["m2"]}]}]}})),
        pp(
            json!({"propagateDeps": true, "failover": {"application": {"decisionConditions": {}, "purgeMode": "Never"}}}),
        ),
        pp(json!({"preemption": "Always", "suspension": {"dispatching": true}})),
        pp(json!({"placement": {"clusterTolerations": [{"key": "k", "operator": "Exists"}]}})),
    ] {
        accept("PropagationPolicy", obj);
    }
}

#[test]
fn webhook_errors_are_aggregated_into_one_message() {
    let err = reject(
        "PropagationPolicy",
        Operation::Create,
        pp(
            json!({"preemption": "Always", "resourceSelectors": [{"apiVersion": "v1", "kind": "A", "namespace": "x"}]}),
        ),
        None,
    );
    assert_eq!(
        err.to_string(),
        r#"admission webhook "propagationpolicy.karmada.io" denied the request: [spec.resourceSelectors[0].namespace: Invalid value: "x": namespace of resource selector must be the same as the namespace of the policy, spec.resourceSelectors[0].name: Invalid value: "": name cannot be empty if preemption is Always, the empty name may cause unexpected resources preemption]"#
    );
    assert_eq!(
        err.status_message("PropagationPolicy", "policy.karmada.io", "p"),
        err.to_string()
    );
}

#[test]
fn propagation_policy_update_rules() {
    let mut created = pp(json!({}));
    admit("PropagationPolicy", Operation::Create, &mut created, None).unwrap();
    let key = "propagationpolicy.karmada.io/permanent-id";

    let mut new_scheduler = created.clone();
    new_scheduler["spec"]["schedulerName"] = json!("other");
    let err = reject(
        "PropagationPolicy",
        Operation::Update,
        new_scheduler,
        Some(&created),
    );
    assert_eq!(
        err.to_string(),
        r#"admission webhook "propagationpolicy.karmada.io" denied the request: the schedulerName should not be updated"#
    );
    assert!(err.field_errors().is_empty());

    let mut new_id = created.clone();
    new_id["metadata"]["labels"][key] = json!("forged");
    let err = reject(
        "PropagationPolicy",
        Operation::Update,
        new_id,
        Some(&created),
    );
    assert_eq!(
        err.to_string(),
        r#"admission webhook "propagationpolicy.karmada.io" denied the request: label propagationpolicy.karmada.io/permanent-id is immutable, it can only be set by the system during creation"#
    );

    let mut dropped_id = created.clone();
    dropped_id["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove(key);
    let err = reject(
        "PropagationPolicy",
        Operation::Update,
        dropped_id.clone(),
        Some(&created),
    );
    assert!(
        err.to_string()
            .ends_with("is immutable, it can only be set by the system during creation"),
        "{err}"
    );

    // An object that never had the label cannot be updated either.
    let err = reject(
        "PropagationPolicy",
        Operation::Update,
        dropped_id.clone(),
        Some(&dropped_id),
    );
    assert_eq!(
        err.to_string(),
        r#"admission webhook "propagationpolicy.karmada.io" denied the request: label propagationpolicy.karmada.io/permanent-id is required, it should be set by the mutating admission webhook during creation"#
    );

    // The same rules hold for ClusterPropagationPolicy, under its own webhook and label.
    let mut cpp = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "c"}, "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "Namespace"}]}});
    admit(
        "ClusterPropagationPolicy",
        Operation::Create,
        &mut cpp,
        None,
    )
    .unwrap();
    let mut changed = cpp.clone();
    changed["spec"]["schedulerName"] = json!("other");
    let err = reject(
        "ClusterPropagationPolicy",
        Operation::Update,
        changed,
        Some(&cpp),
    );
    assert_eq!(
        err.to_string(),
        r#"admission webhook "clusterpropagationpolicy.karmada.io" denied the request: the schedulerName should not be updated"#
    );
    let mut forged = cpp.clone();
    forged["metadata"]["labels"]["clusterpropagationpolicy.karmada.io/permanent-id"] = json!("x");
    let err = reject(
        "ClusterPropagationPolicy",
        Operation::Update,
        forged,
        Some(&cpp),
    );
    assert!(
        err.to_string()
            .contains("label clusterpropagationpolicy.karmada.io/permanent-id is immutable"),
        "{err}"
    );
}

#[test]
fn cluster_propagation_policy_has_no_namespace_rule() {
    let cpp = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterPropagationPolicy",
        "metadata": {"name": "c"},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "anywhere"}],
                 "placement": {"spreadConstraints": [{"spreadByField": "zone"}]}}});
    assert_denied(
        "ClusterPropagationPolicy",
        "clusterpropagationpolicy.karmada.io",
        cpp,
        &[
            r#"spec.placement.spreadConstraints: Invalid value: [{"spreadByField":"zone","minGroups":1}]: the cluster spread constraint must be enabled in one of the constraints in case of SpreadByField is enabled"#,
        ],
    );
}

#[test]
fn override_policy_webhook_rules() {
    let w = "overridepolicy.karmada.io";
    let ptr_err = "JSON pointer must be empty or start with a \"/\nJSON pointer error";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "targetCluster with overrideRules",
            op(json!({"targetCluster": {"clusterNames": ["m1"]}, "overrideRules": [{"overriders": {}}]})),
            vec![r#"spec.targetCluster: Invalid value: {"clusterNames":["m1"]}: overrideRules and targetCluster can't co-exist"#.into()],
        ),
        (
            "overriders with overrideRules",
            op(json!({"overriders": {"plaintext": [{"path": "/a", "operator": "remove"}]}, "overrideRules": [{"overriders": {}}]})),
            vec![r#"spec.overriders: Invalid value: {"plaintext":[{"path":"/a","operator":"remove"}]}: overrideRules and overriders can't co-exist"#.into()],
        ),
        (
            "invalid label key and value",
            op(rule(json!({"labelsOverrider": [{"operator": "add", "value": {"bad key!": "v", "ok": "-bad"}}]}))),
            vec![
                format!(r#"spec.overrideRules[0].overriders.labelsOverrider[0].value: Invalid value: "bad key!": name part {KIND_REGEX_MSG}"#),
                r#"spec.overrideRules[0].overriders.labelsOverrider[0].value: Invalid value: "-bad": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"#.into(),
            ],
        ),
        (
            "invalid annotation key (case does not matter)",
            op(rule(json!({"annotationsOverrider": [{"operator": "add", "value": {"Example.COM/Key": "v", "a/b/c": "v"}}]}))),
            vec![format!(r#"spec.overrideRules[0].overriders.annotationsOverrider[0].value: Invalid value: "a/b/c": a valid label key {KIND_REGEX_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"#)],
        ),
        (
            "image predicate path is not a JSON pointer",
            op(rule(json!({"imageOverrider": [{"predicate": {"path": "spec/x"}, "component": "Tag", "operator": "remove"}]}))),
            vec![format!(r#"spec.overrideRules[0].overriders.imageOverrider[0].predicate.path: Invalid value: "spec/x": {ptr_err}"#)],
        ),
        (
            "field overrider with JSON and YAML",
            op(rule(json!({"fieldOverrider": [{"fieldPath": "/data/a", "json": [{"subPath": "/x", "operator": "remove"}], "yaml": [{"subPath": "/y", "operator": "remove"}]}]}))),
            vec![r#"spec.overrideRules[0].overriders.fieldOverrider[0]: Invalid value: {"fieldPath":"/data/a","json":[{"subPath":"/x","operator":"remove"}],"yaml":[{"subPath":"/y","operator":"remove"}]}: FieldOverrider has both YAML and JSON set. Only one is allowed"#.into()],
        ),
        (
            "field overrider with neither, and a bad field path",
            op(rule(json!({"fieldOverrider": [{"fieldPath": "data"}]}))),
            vec![
                "spec.overrideRules[0].overriders.fieldOverrider[0]: Required value: FieldOverrider must have either JSON or YAML set".into(),
                format!(r#"spec.overrideRules[0].overriders.fieldOverrider[0].fieldPath: Invalid value: "data": {ptr_err}"#),
            ],
        ),
        (
            "patch operations: sub path, missing and forbidden values",
            op(rule(json!({"fieldOverrider": [
                {"fieldPath": "/data/a", "json": [{"subPath": "x", "operator": "add"}]},
                {"fieldPath": "/data/b", "yaml": [{"subPath": "/y", "operator": "remove", "value": 1}]}
            ]}))),
            vec![
                format!(r#"spec.overrideRules[0].overriders.fieldOverrider[0].json[0].subPath: Invalid value: "x": {ptr_err}"#),
                "spec.overrideRules[0].overriders.fieldOverrider[0].json[0].value: Invalid value: null: value is required for add or replace operation".into(),
                "spec.overrideRules[0].overriders.fieldOverrider[1].yaml[0].value: Invalid value: 1: value is not allowed for remove operation".into(),
            ],
        ),
        (
            "bad fieldSelector in a rule's targetCluster",
            json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy", "metadata": {"name": "o", "namespace": "ns1"},
                   "spec": {"overrideRules": [{"targetCluster": {"fieldSelector": {"matchExpressions": [{"key": "name", "operator": "In"}]}}, "overriders": {}}]}}),
            vec![r#"spec.overrideRules[0].targetCluster.fieldSelector: Invalid value: {"matchExpressions":[{"key":"name","operator":"In"}]}: unsupported key "name", must be provider, region, or zone"#.into()],
        ),
        (
            "selector in another namespace",
            op(json!({"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "namespace": "other"}]})),
            vec![r#"spec.resourceSelectors[0].namespace: Invalid value: "other": namespace of resource selector must be the same as the namespace of the policy"#.into()],
        ),
    ];
    for (name, obj, expected) in cases {
        let err = reject("OverridePolicy", Operation::Create, obj, None);
        assert_eq!(err.code(), 403, "{name}: {err}");
        match &err {
            AdmissionError::Denied { webhook, .. } => assert_eq!(*webhook, w, "{name}"),
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(messages(&err), expected, "{name}");
    }
}

#[test]
fn cluster_override_policy_rules() {
    let mut cop = common::fixture("karmada-clusteroverridepolicy.yaml");
    accept("ClusterOverridePolicy", cop.clone());
    // Selectors may name any namespace.
    cop["spec"]["resourceSelectors"][0]["namespace"] = json!("anywhere");
    accept("ClusterOverridePolicy", cop.clone());
    cop["spec"]["targetCluster"] = json!({"clusterNames": ["m1"]});
    assert_denied(
        "ClusterOverridePolicy",
        "clusteroverridepolicy.karmada.io",
        cop,
        &[
            r#"spec.targetCluster: Invalid value: {"clusterNames":["m1"]}: overrideRules and targetCluster can't co-exist"#,
        ],
    );
    // The deprecated top-level form alone is valid.
    accept(
        "ClusterOverridePolicy",
        json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy", "metadata": {"name": "c"},
               "spec": {"targetCluster": {"clusterNames": ["m1"]}, "overriders": {"plaintext": [{"path": "/a", "operator": "remove"}]}}}),
    );
}

#[test]
fn resource_binding_dependencies_annotation() {
    let rb = |annotation: &str| {
        json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "r", "namespace": "default",
                         "annotations": {"resourcebinding.karmada.io/dependencies": annotation}},
            "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}})
    };
    accept(
        "ResourceBinding",
        rb(r#"[{"apiVersion":"v1","kind":"Secret","namespace":"default","name":"s"}]"#),
    );
    accept(
        "ResourceBinding",
        rb(r#"[{"apiVersion":"v1","kind":"Secret","labelSelector":{"matchLabels":{"a":"b"}}}]"#),
    );
    accept("ResourceBinding", rb("null"));
    for bad in ["not json", r#"{"apiVersion":"v1"}"#, r#"[{"name": 3}]"#] {
        assert_denied(
            "ResourceBinding",
            "resourcebinding.karmada.io",
            rb(bad),
            &[&format!(
                "metadata.annotations.resourcebinding.karmada.io/dependencies: Invalid value: {}: annotation value must be a valid JSON",
                serde_json::to_string(bad).unwrap()
            )],
        );
    }
    // Updates are checked too; ClusterResourceBindings are not.
    let stored = rb("[]");
    let err = reject("ResourceBinding", Operation::Update, rb("{"), Some(&stored));
    assert_eq!(err.code(), 403);
    let mut crb = rb("{");
    crb["kind"] = json!("ClusterResourceBinding");
    crb["metadata"].as_object_mut().unwrap().remove("namespace");
    accept("ClusterResourceBinding", crb);
}

fn cluster(spec: Value) -> Value {
    json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "member1"}, "spec": spec})
}

#[test]
fn cluster_validation_rules() {
    const FORM: &str = "; desired format: hostname, hostname:port, IP or IP:port";
    let label_value_msg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "missing syncMode",
            cluster(json!({})),
            vec!["spec.syncMode: Required value".into(), r#"spec.syncMode: Unsupported value: "": supported values: "Pull", "Push""#.into()],
        ),
        ("missing spec", json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m"}}),
            vec!["spec.syncMode: Required value".into(), r#"spec.syncMode: Unsupported value: "": supported values: "Pull", "Push""#.into()]),
        (
            "unknown syncMode",
            cluster(json!({"syncMode": "Foo"})),
            vec![r#"spec.syncMode: Unsupported value: "Foo": supported values: "Pull", "Push""#.into()],
        ),
        (
            "endpoint without scheme",
            cluster(json!({"syncMode": "Push", "apiEndpoint": "1.2.3.4:6443"})),
            vec![format!(r#"spec.apiEndpoint: Invalid value: "1.2.3.4:6443": apiEndpoint must be a valid URL: parse "1.2.3.4:6443": first path segment in URL cannot contain colon{FORM}"#)],
        ),
        (
            "endpoint parsed as an opaque URL",
            cluster(json!({"syncMode": "Push", "apiEndpoint": "example.com:6443"})),
            vec![format!(r#"spec.apiEndpoint: Invalid value: "": host must be provided{FORM}"#)],
        ),
        (
            "endpoint with user, fragment and query",
            cluster(json!({"syncMode": "Push", "apiEndpoint": "https://user:pw@example.com:6443/?a=b#frag"})),
            vec![
                r#"spec.apiEndpoint: Invalid value: "user:pw": user information is not permitted in the URL"#.into(),
                r#"spec.apiEndpoint: Invalid value: "frag": fragments are not permitted in the URL"#.into(),
                r#"spec.apiEndpoint: Invalid value: "a=b": query parameters are not permitted in the URL"#.into(),
            ],
        ),
        (
            "endpoint with a bad port",
            cluster(json!({"syncMode": "Push", "apiEndpoint": "https://example.com:abc"})),
            vec![format!(r#"spec.apiEndpoint: Invalid value: "https://example.com:abc": apiEndpoint must be a valid URL: parse "https://example.com:abc": invalid port ":abc" after host{FORM}"#)],
        ),
        (
            "incomplete secret references",
            cluster(json!({"syncMode": "Push", "secretRef": {"name": "s"}, "impersonatorSecretRef": {"namespace": "n"}})),
            vec!["spec.secretRef.namespace: Required value".into(), "spec.impersonatorSecretRef.name: Required value".into()],
        ),
        (
            "proxy with an unsupported scheme",
            cluster(json!({"syncMode": "Push", "proxyURL": "ftp://proxy:21"})),
            vec![r#"spec.proxyURL: Invalid value: "ftp://proxy:21": unsupported scheme "ftp", must be http, https, or socks5"#.into()],
        ),
        (
            "provider and region must be label values",
            cluster(json!({"syncMode": "Push", "provider": "my provider", "region": "-x"})),
            vec![
                format!(r#"spec.provider: Invalid value: "my provider": {label_value_msg}"#),
                format!(r#"spec.region: Invalid value: "-x": {label_value_msg}"#),
            ],
        ),
        (
            "zones must be label values",
            cluster(json!({"syncMode": "Push", "zones": ["ok", "not ok"]})),
            vec![format!(r#"spec.Zones: Invalid value: "not ok": {label_value_msg}"#)],
        ),
        (
            "deprecated zone must be a label value",
            cluster(json!({"syncMode": "Push", "zone": "not ok"})),
            vec![format!(r#"spec.Zone: Invalid value: "not ok": {label_value_msg}"#)],
        ),
        (
            "taint effect and duplicates",
            cluster(json!({"syncMode": "Push", "taints": [
                {"key": "a", "effect": "PreferNoSchedule"},
                {"key": "b", "effect": "NoSchedule"},
                {"key": "b", "value": "v", "effect": "NoSchedule"},
                {"key": "bad key", "effect": ""}]})),
            vec![
                r#"spec.taints[0].effect: Unsupported value: "PreferNoSchedule": supported values: "NoSchedule", "NoExecute""#.into(),
                r#"spec.taints[2]: Duplicate value: {"effect":"NoSchedule","key":"b","value":"v"}: taints must be unique by key and effect pair"#.into(),
                format!(r#"spec.taints[3].key: Invalid value: "bad key": name part {KIND_REGEX_MSG}"#),
                "spec.taints[3].effect: Required value".into(),
            ],
        ),
        (
            "resource models with repeated grades",
            cluster(json!({"syncMode": "Push", "resourceModels": [
                {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]},
                {"grade": 0, "ranges": [{"name": "cpu", "min": "1", "max": "2"}]}]})),
            vec![r#"spec.resourceModels: Invalid value: [{"grade":0,"ranges":[{"name":"cpu","min":"0","max":"1"}]},{"grade":0,"ranges":[{"name":"cpu","min":"1","max":"9223372036854775807"}]}]: The grade of each models should not be the same"#.into()],
        ),
        (
            "resource models with a gap",
            cluster(json!({"syncMode": "Push", "resourceModels": [
                {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]},
                {"grade": 1, "ranges": [{"name": "cpu", "min": "2", "max": "3"}]}]})),
            vec![r#"spec.resourceModels: Invalid value: [{"grade":0,"ranges":[{"name":"cpu","min":"0","max":"1"}]},{"grade":1,"ranges":[{"name":"cpu","min":"2","max":"9223372036854775807"}]}]: Model intervals for resources must be contiguous and non-overlapping"#.into()],
        ),
        (
            "resource models with different resources",
            cluster(json!({"syncMode": "Push", "resourceModels": [
                {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}]},
                {"grade": 1, "ranges": [{"name": "memory", "min": "1", "max": "2"}]}]})),
            vec![r#"spec.resourceModels: Invalid value: [{"grade":0,"ranges":[{"name":"cpu","min":"0","max":"1"}]},{"grade":1,"ranges":[{"name":"memory","min":"1","max":"9223372036854775807"}]}]: The resource types of each models should be the same"#.into()],
        ),
        (
            "a JSON type error",
            cluster(json!({"syncMode": "Push", "insecureSkipTLSVerification": "yes"})),
            vec![r#"spec.insecureSkipTLSVerification: Invalid value: "string": spec.insecureSkipTLSVerification in body must be of type boolean: "string""#.into()],
        ),
    ];
    for (name, obj, expected) in cases {
        let err = reject("Cluster", Operation::Create, obj, None);
        assert_eq!(err.code(), 422, "{name}: {err}");
        assert_eq!(messages(&err), expected, "{name}");
    }
    // Karmada reports this one under spec.spec, with the whole spec as the value. (On update,
    // so that the spec is not filled with default resource models first.)
    let both = cluster(json!({"syncMode": "Push", "zone": "a", "zones": ["b"]}));
    let err = reject("Cluster", Operation::Update, both.clone(), Some(&both));
    assert_eq!(
        messages(&err),
        vec![
            r#"spec.spec: Invalid value: {"syncMode":"Push","zone":"a","zones":["b"]}: Zone and Zones cannot co-exist"#
        ]
    );
    assert_eq!(err.field_errors()[0].kind, FieldErrorKind::TypeInvalid);

    let err = reject("Cluster", Operation::Create, cluster(json!({})), None);
    assert_eq!(
        err.status_message("Cluster", "cluster.karmada.io", "member1"),
        r#"Cluster.cluster.karmada.io "member1" is invalid: [spec.syncMode: Required value, spec.syncMode: Unsupported value: "": supported values: "Pull", "Push"]"#
    );
    assert_eq!(err.field_errors()[0].kind, FieldErrorKind::Required);
}

#[test]
fn valid_clusters_pass() {
    for spec in [
        json!({"syncMode": "Pull"}),
        json!({"syncMode": "Push", "apiEndpoint": "https://10.0.0.1:6443", "proxyURL": "http://proxy:3128",
               "secretRef": {"namespace": "karmada-cluster", "name": "m"}, "zones": ["a", "b"], "provider": "", "region": "r1"}),
        json!({"syncMode": "Push", "apiEndpoint": "https://[fd00::1]:6443/base"}),
    ] {
        accept("Cluster", cluster(spec));
    }
    // Status updates skip Karmada's validation (StatusStrategy validates nothing).
    let mut stored = common::fixture("karmada-cluster.yaml");
    stored["spec"]["apiEndpoint"] = json!("not a url:");
    let mut obj = stored.clone();
    admit("Cluster", Operation::UpdateStatus, &mut obj, Some(&stored)).unwrap();
    assert_eq!(obj["spec"]["apiEndpoint"], "not a url:");
}

#[test]
fn bodies_that_are_not_objects_are_bad_requests() {
    for kind in ["PropagationPolicy", "Work", "Cluster"] {
        let err = reject(kind, Operation::Create, json!("text"), None);
        assert_eq!(err.code(), 400, "{kind}");
        assert_eq!(err.reason(), "BadRequest");
        assert!(err.field_errors().is_empty());
    }
}

#[test]
fn deletion_protection() {
    let protected = yaml(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {resourcetemplate.karmada.io/deletion-protected: Always}
"#,
    );
    let err = api::admit_delete(&protected).unwrap_err();
    assert_eq!(err.code(), 403);
    assert_eq!(
        err.to_string(),
        r#"admission webhook "resourcedeletionprotection.karmada.io" denied the request: This resource is protected, please make sure to remove the label: resourcetemplate.karmada.io/deletion-protected"#
    );
    let mut other_value = protected.clone();
    other_value["metadata"]["labels"]["resourcetemplate.karmada.io/deletion-protected"] =
        json!("Never");
    assert!(api::admit_delete(&other_value).is_ok());
    assert!(api::admit_delete(&json!({"metadata": {"name": "x"}})).is_ok());
}

#[test]
fn work_manifest_without_kind_is_a_webhook_error() {
    let work = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": "w", "namespace": "karmada-es-m1"},
        "spec": {"workload": {"manifests": [{"apiVersion": "v1", "metadata": {"name": "x"}}]}}});
    let err = reject("Work", Operation::Create, work, None);
    assert_eq!(err.code(), 500);
    assert_eq!(
        err.to_string(),
        r#"admission webhook "work.karmada.io" denied the request: Object 'Kind' is missing in '{"apiVersion":"v1","metadata":{"name":"x"}}'"#
    );
}

#[test]
fn undecodable_metadata_is_a_bad_request() {
    let obj = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "ns1", "labels": "x"},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "A"}]}});
    let err = reject("PropagationPolicy", Operation::Create, obj, None);
    assert_eq!(err.code(), 400);
    let msg = err.to_string();
    assert!(
        msg.starts_with("PropagationPolicy in version \"v1alpha1\" cannot be handled as a PropagationPolicy: metadata.labels"),
        "{msg}"
    );
}

/// Malformed bodies are refused with an error (never a panic, never accepted): bodies that are
/// no object at all with 400; bodies where a field of the kind's own has the wrong shape with
/// 400 or 422, for create and update alike; a body whose only fields are ones the kind does not
/// have is pruned and accepted. Each expectation is written out per kind.
#[test]
fn malformed_bodies_never_panic() {
    const CREATE_UPDATE: [Operation; 2] = [Operation::Create, Operation::Update];
    const ALL_OPS: [Operation; 3] = [
        Operation::Create,
        Operation::Update,
        Operation::UpdateStatus,
    ];
    const ALL_KINDS: &[&str] = &[
        "PropagationPolicy",
        "ClusterPropagationPolicy",
        "OverridePolicy",
        "ClusterOverridePolicy",
        "ClusterTaintPolicy",
        "FederatedResourceQuota",
        "Remedy",
        "WorkloadRebalancer",
        "MultiClusterService",
        "MultiClusterIngress",
        "Work",
        "ResourceBinding",
        "ClusterResourceBinding",
        "ResourceInterpreterCustomization",
        "ResourceInterpreterWebhookConfiguration",
        "Cluster",
    ];
    let served: Vec<&str> = api::kinds().iter().map(|k| k.kind).collect();
    assert_eq!(served, ALL_KINDS, "a new kind needs its expectations here");
    let policies = &[
        "PropagationPolicy",
        "ClusterPropagationPolicy",
        "OverridePolicy",
        "ClusterOverridePolicy",
    ][..];
    // Override policies require no field: only they accept a body without their own fields.
    let overrides = &["OverridePolicy", "ClusterOverridePolicy"][..];

    // (body, operations, kinds that must refuse it, kinds that must accept it)
    #[allow(clippy::type_complexity)]
    let cases: Vec<(Value, &[Operation], Vec<&str>, Vec<&str>)> = vec![
        (json!(null), &ALL_OPS, ALL_KINDS.to_vec(), vec![]),
        (json!([]), &ALL_OPS, ALL_KINDS.to_vec(), vec![]),
        (
            json!({"spec": []}),
            &CREATE_UPDATE,
            ALL_KINDS.to_vec(),
            vec![],
        ),
        (
            json!({"spec": "x"}),
            &CREATE_UPDATE,
            ALL_KINDS.to_vec(),
            vec![],
        ),
        (
            json!({"metadata": [], "spec": {}}),
            &ALL_OPS,
            ALL_KINDS.to_vec(),
            vec![],
        ),
        // One wrongly typed field of each kind's own.
        (
            json!({"spec": {"resourceSelectors": "x", "placement": [], "workload": 3, "resource": [], "syncMode": 5,
                            "overall": [], "actions": 3}}),
            &CREATE_UPDATE,
            ALL_KINDS
                .iter()
                .copied()
                .filter(|k| *k != "MultiClusterIngress")
                .collect(),
            // An ingress spec requires nothing, and has none of these fields: they are pruned.
            vec!["MultiClusterIngress"],
        ),
        (
            json!({"spec": {"types": "x", "ports": [{"port": "a"}], "rules": 3, "tls": [{"hosts": 1}]}}),
            &CREATE_UPDATE,
            vec!["MultiClusterService", "MultiClusterIngress"],
            vec![],
        ),
        (
            json!({"spec": {"resourceSelectors": [null, 1, "a"], "overrideRules": [null], "clusters": [{}],
                            "taints": [{"effect": 1}], "resourceModels": [{"ranges": [{"min": "x", "max": []}]}]}}),
            &CREATE_UPDATE,
            [
                policies,
                &["ResourceBinding", "ClusterResourceBinding", "Cluster"],
            ]
            .concat(),
            // A Work has none of these fields: they are pruned.
            vec!["Work"],
        ),
        (
            json!({"spec": {"syncMode": "Push", "resourceModels": [{"grade": 0, "ranges": [{"name": "cpu", "min": "bad", "max": "1"}]},
                                                                   {"grade": 1, "ranges": []}]}}),
            &CREATE_UPDATE,
            vec!["Cluster"],
            [overrides, &["Work"]].concat(),
        ),
        (
            json!({"spec": {"syncMode": "Push", "apiEndpoint": "%", "proxyURL": "::"}}),
            &CREATE_UPDATE,
            vec!["Cluster"],
            overrides.to_vec(),
        ),
        (
            json!({"spec": {}, "status": {"conditions": "x"}}),
            &[Operation::UpdateStatus],
            vec!["Cluster"],
            vec![],
        ),
        (
            json!({"spec": {"workload": {"manifests": [{"kind": 3}, {}]}}}),
            &CREATE_UPDATE,
            vec!["Work"],
            overrides.to_vec(),
        ),
        (
            json!({"spec": {}, "status": {"manifestStatuses": [{}]}}),
            &[Operation::UpdateStatus],
            vec!["Work"],
            vec![],
        ),
        (
            json!({"spec": {"target": [], "customizations": {"retention": {"luaScript": 3}}}}),
            &CREATE_UPDATE,
            vec!["ResourceInterpreterCustomization"],
            vec![],
        ),
        (
            json!({"webhooks": [{"name": 1, "rules": "x", "clientConfig": []}]}),
            &CREATE_UPDATE,
            vec!["ResourceInterpreterWebhookConfiguration"],
            vec![],
        ),
    ];
    let old = json!({"metadata": {"name": "x"}, "spec": {}});
    for (body, ops, refused, accepted) in &cases {
        for op in *ops {
            for kind in refused {
                let mut obj = body.clone();
                match admit(kind, *op, &mut obj, Some(&old)) {
                    Ok(()) => panic!("{kind} {op:?} accepted {body}"),
                    Err(e) => {
                        // Karmada's Work webhook answers a manifest without a kind with 500
                        // (`work_manifest_without_kind_is_a_webhook_error`).
                        let want: &[u16] = if !body.is_object() {
                            &[400]
                        } else if body.pointer("/spec/workload/manifests").is_some() {
                            &[500]
                        } else {
                            &[400, 422]
                        };
                        assert!(want.contains(&e.code()), "{kind} {op:?} {body}: {e}");
                        assert!(!e.to_string().is_empty());
                    }
                }
            }
            for kind in accepted {
                let mut obj = body.clone();
                if let Err(e) = admit(kind, *op, &mut obj, Some(&old)) {
                    panic!("{kind} {op:?} refused {body}: {e}");
                }
            }
        }
    }
}
