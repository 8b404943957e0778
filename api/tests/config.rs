//! Admission of `config.karmada.io` kinds: ResourceInterpreterCustomization (scripts compiled,
//! conflicting customizations refused) and ResourceInterpreterWebhookConfiguration (Karmada's
//! webhook checks, with its field paths and messages).

mod common;

use api::{AdmissionError, Operation, admit, admit_with_peers};
use common::{messages, yaml};
use serde_json::Value;

fn customization(name: &str, rules: &str) -> Value {
    yaml(&format!(
        "apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {{name: {name}}}
spec:
  target: {{apiVersion: apps.example.io/v1, kind: Workload}}
  customizations:
{rules}"
    ))
}

const HEALTH: &str = "    healthInterpretation:
      luaScript: |
        function InterpretHealth(observedObj)
          return observedObj.status.ready == true
        end
";

const REPLICAS: &str = "    replicaResource:
      luaScript: |
        function GetReplicas(obj)
          return obj.spec.replicas, nil
        end
";

fn denied(e: &AdmissionError) -> (u16, String) {
    (e.code(), e.to_string())
}

#[test]
fn a_customization_with_scripts_that_compile_is_admitted_as_sent() {
    let mut obj = customization("health", HEALTH);
    let before = obj.clone();
    admit(
        "ResourceInterpreterCustomization",
        Operation::Create,
        &mut obj,
        None,
    )
    .expect("admitted");
    assert_eq!(obj["spec"], before["spec"]);
}

#[test]
fn a_script_that_does_not_compile_is_refused_with_the_lua_error_and_line() {
    let mut obj = customization(
        "broken",
        "    healthInterpretation:
      luaScript: |
        function InterpretHealth(observedObj)
          return observedObj.status.ready ==
        end
",
    );
    let err = admit(
        "ResourceInterpreterCustomization",
        Operation::Create,
        &mut obj,
        None,
    )
    .expect_err("refused");
    assert_eq!(
        denied(&err),
        (
            403,
            "admission webhook \"resourceinterpretercustomization.karmada.io\" denied the request: InterpreterOperation(InterpretHealth) Lua script error: <string>:3: unexpected symbol near 'end'".into()
        )
    );
}

#[test]
fn two_customizations_of_a_kind_may_not_script_the_same_operation() {
    let existing = customization("first", &format!("{HEALTH}{REPLICAS}"));
    let mut second = customization("second", HEALTH);
    let err = admit_with_peers(
        "ResourceInterpreterCustomization",
        Operation::Create,
        &mut second,
        None,
        std::slice::from_ref(&existing),
    )
    .expect_err("conflict");
    assert_eq!(
        denied(&err),
        (
            403,
            "admission webhook \"resourceinterpretercustomization.karmada.io\" denied the request: conflicting with InterpreterOperation(InterpretHealth) of existing ResourceInterpreterCustomization(first)".into()
        )
    );
    // Another operation of the same kind, the object's own old version, or another kind are fine.
    let mut other_op = customization(
        "second",
        "    statusReflection:
      luaScript: 'function ReflectStatus(o) return o.status end'
",
    );
    admit_with_peers(
        "ResourceInterpreterCustomization",
        Operation::Create,
        &mut other_op,
        None,
        std::slice::from_ref(&existing),
    )
    .expect("other operation");
    let mut update = customization("first", HEALTH);
    admit_with_peers(
        "ResourceInterpreterCustomization",
        Operation::Update,
        &mut update,
        Some(&existing),
        std::slice::from_ref(&existing),
    )
    .expect("own old version");
    let mut other_kind = customization("third", HEALTH);
    other_kind["spec"]["target"]["kind"] = "Other".into();
    admit_with_peers(
        "ResourceInterpreterCustomization",
        Operation::Create,
        &mut other_kind,
        None,
        std::slice::from_ref(&existing),
    )
    .expect("other kind");
}

#[test]
fn customization_schema_requires_target_and_scripts() {
    let mut obj = yaml(
        "apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: c}
spec:
  target: {kind: Workload}
  customizations:
    healthInterpretation: {}
",
    );
    let err = admit(
        "ResourceInterpreterCustomization",
        Operation::Create,
        &mut obj,
        None,
    )
    .expect_err("invalid");
    assert_eq!(err.code(), 422);
    assert_eq!(
        messages(&err),
        vec![
            "spec.customizations.healthInterpretation.luaScript: Required value",
            "spec.target.apiVersion: Required value",
        ]
    );
}

fn webhook_configuration(hooks: &str) -> Value {
    yaml(&format!(
        "apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {{name: examples}}
webhooks:
{hooks}"
    ))
}

#[test]
fn a_valid_webhook_configuration_is_admitted() {
    let mut obj = webhook_configuration(
        "- name: workloads.example.com
  clientConfig:
    url: https://127.0.0.1:8443/interpreter-workload
    caBundle: Y2E=
  rules:
  - operations: [InterpretReplica, InterpretHealth]
    apiGroups: [apps.example.io]
    apiVersions: ['*']
    kinds: [Workload]
  timeoutSeconds: 3
  interpreterContextVersions: [v1alpha1]
",
    );
    admit(
        "ResourceInterpreterWebhookConfiguration",
        Operation::Create,
        &mut obj,
        None,
    )
    .expect("admitted");
}

#[test]
fn webhook_configuration_checks_are_karmadas() {
    let mut obj = webhook_configuration(
        "- name: workloads
  clientConfig:
    url: http://example.com/x?y=1
  rules:
  - operations: ['*', Retain]
    apiGroups: []
    apiVersions: ['v1', '*']
    kinds: ['']
  - operations: [Prune]
    apiGroups: ['*']
    apiVersions: ['*']
    kinds: ['*']
  timeoutSeconds: 31
  interpreterContextVersions: [v2, v2]
- name: workloads
  clientConfig:
    service: {namespace: '', name: svc, path: 'no-slash'}
  interpreterContextVersions: [v1alpha1]
",
    );
    let err = admit(
        "ResourceInterpreterWebhookConfiguration",
        Operation::Create,
        &mut obj,
        None,
    )
    .expect_err("refused");
    assert_eq!(err.code(), 403);
    assert_eq!(
        messages(&err),
        vec![
            "webhooks[0].name: Invalid value: \"workloads\": should be a domain with at least two segments separated by dots",
            "webhooks[0].rules[0].operations: Invalid value: [\"*\",\"Retain\"]: if '*' is present, must not specify other operations",
            "webhooks[0].rules[0].apiGroups: Required value",
            "webhooks[0].rules[0].apiVersions: Invalid value: [\"v1\",\"*\"]: if '*' is present, must not specify other API versions",
            "webhooks[0].rules[0].kinds[0]: Required value",
            "webhooks[0].rules[1].operations[0]: Unsupported value: \"Prune\": supported values: \"*\", \"AggregateStatus\", \"InterpretComponent\", \"InterpretDependency\", \"InterpretHealth\", \"InterpretReplica\", \"InterpretStatus\", \"Retain\", \"ReviseReplica\"",
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "webhooks[0].clientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            "webhooks[0].interpreterContextVersions[1]: Invalid value: \"v2\": duplicate version",
            "webhooks[0].interpreterContextVersions: Invalid value: [\"v2\",\"v2\"]: must include at least one of v1alpha1",
            "webhooks[1].name: Invalid value: \"workloads\": should be a domain with at least two segments separated by dots",
            "webhooks[1].clientConfig.service.namespace: Required value: service namespace is required",
            "webhooks[1].clientConfig.service.path: Invalid value: \"no-slash\": must start with a '/'",
            "webhooks[1].name: Duplicate value: \"workloads\"",
        ]
    );
    assert!(
        err.to_string().starts_with(
            "admission webhook \"config.karmada.io\" denied the request: [webhooks[0].name: Invalid value"
        ),
        "{err}"
    );
}
