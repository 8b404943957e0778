//! The checker and the policy status's type checking, with expectations from kube's
//! typechecking_test.go: undefined fields of typed objects, overloads that do not apply,
//! params typed by their kind, variables, authorizer misuse; against the real
//! PropagationPolicy schema and the built-in Deployment schema.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::api::ValidatingAdmissionPolicy;
use crate::request::{Gvk, Gvr};
use crate::typecheck::{ExpressionWarning, SchemaResolver, check_policy, status};

/// Serves PropagationPolicy (Karmada's schema), Deployment (the built-in schema, with its
/// `$ref`s) and ConfigMap.
struct Schemas;

impl SchemaResolver for Schemas {
    fn kinds_for(&self, r: &Gvr) -> Vec<Gvk> {
        match (r.group.as_str(), r.version.as_str(), r.resource.as_str()) {
            ("policy.karmada.io", "v1alpha1", "propagationpolicies") => {
                vec![Gvk::new(
                    "policy.karmada.io",
                    "v1alpha1",
                    "PropagationPolicy",
                )]
            }
            ("apps", "v1", "deployments") => vec![Gvk::new("apps", "v1", "Deployment")],
            _ => Vec::new(),
        }
    }

    fn schema(&self, k: &Gvk) -> Option<Value> {
        match k.kind.as_str() {
            "PropagationPolicy" => {
                karmada_api::schema::openapi_schema("PropagationPolicy").cloned()
            }
            "Deployment" | "ConfigMap" => {
                let builtin = apimachinery::openapi::builtin::schemas();
                let name = builtin.kind_name(&k.group, &k.version, &k.kind)?;
                builtin.definitions.get(name).cloned()
            }
            _ => None,
        }
    }

    fn component(&self, name: &str) -> Option<&Value> {
        apimachinery::openapi::builtin::schemas()
            .definitions
            .get(name)
    }
}

fn policy(rules: Value, validations: Value, extra: Value) -> ValidatingAdmissionPolicy {
    let mut spec =
        json!({"matchConstraints": {"resourceRules": rules}, "validations": validations});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    serde_json::from_value(json!({"metadata": {"name": "p", "generation": 3}, "spec": spec}))
        .unwrap()
}

fn pp_rules() -> Value {
    json!([{"apiGroups": ["policy.karmada.io"], "apiVersions": ["v1alpha1"], "operations": ["CREATE"], "resources": ["propagationpolicies"]}])
}

fn deploy_rules() -> Value {
    json!([{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}])
}

fn warnings(rules: Value, expressions: &[&str], extra: Value) -> Vec<ExpressionWarning> {
    let validations: Vec<Value> = expressions
        .iter()
        .map(|e| json!({"expression": e}))
        .collect();
    check_policy(&policy(rules, json!(validations), extra), &Schemas)
}

#[test]
fn a_type_error_is_reported_in_kubes_words() {
    let w = warnings(
        pp_rules(),
        &["object.spec.placement.replicaScheduling.replicaSchedulingType == 1"],
        json!({}),
    );
    assert_eq!(
        w,
        [ExpressionWarning {
            field_ref: "spec.validations[0].expression".into(),
            warning: "policy.karmada.io/v1alpha1, Kind=PropagationPolicy: ERROR: <input>:1:63: found no matching overload for '_==_' applied to '(string, int)'\n | object.spec.placement.replicaScheduling.replicaSchedulingType == 1\n | ..............................................................^\n".into(),
        }]
    );
}

#[test]
fn typed_objects_and_params_are_checked() {
    let cm_param = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}});
    let cases: &[(Value, &str, Value, Option<&str>)] = &[
        (
            pp_rules(),
            "object.spec.placement.replicaScheduling.replicaSchedulingType == 'Duplicated'",
            json!({}),
            None,
        ),
        (
            pp_rules(),
            "object.foo == 'bar'",
            json!({}),
            Some("undefined field 'foo'"),
        ),
        (
            pp_rules(),
            "has(object.spec.placement.clusterAffinity)",
            json!({}),
            None,
        ),
        (
            pp_rules(),
            "object.spec.resourceSelectors.all(s, s.kind != '')",
            json!({}),
            None,
        ),
        (
            pp_rules(),
            "object.spec.resourceSelectors.all(s, s.knd != '')",
            json!({}),
            Some("undefined field 'knd'"),
        ),
        (deploy_rules(), "object.spec.replicas > 1", json!({}), None),
        (
            deploy_rules(),
            "object.spec.replicas == 'one'",
            json!({}),
            Some("found no matching overload for '_==_' applied to '(int, string)'"),
        ),
        (
            deploy_rules(),
            "object.spec.template.spec.containers.all(c, c.image.startsWith('r/'))",
            json!({}),
            None,
        ),
        (
            deploy_rules(),
            "object.metadata.name.startsWith('x')",
            json!({}),
            None,
        ),
        // params typed by the ConfigMap schema: `data` is map(string, string).
        (
            deploy_rules(),
            "params.data.limit == object.metadata.name",
            cm_param.clone(),
            None,
        ),
        (
            deploy_rules(),
            "params.bar == 1",
            cm_param.clone(),
            Some("undefined field 'bar'"),
        ),
        (
            deploy_rules(),
            "params.data.limit == 1",
            cm_param,
            Some("found no matching overload for '_==_' applied to '(string, int)'"),
        ),
        (
            deploy_rules(),
            "authorizer.allowed()",
            json!({}),
            Some(
                "found no matching overload for 'allowed' applied to 'kubernetes.authorization.Authorizer.()'",
            ),
        ),
        (
            deploy_rules(),
            "authorizer.group('').resource('endpoints').check('create').allowed()",
            json!({}),
            None,
        ),
        (
            deploy_rules(),
            "variables.name == object.spec.replicas",
            json!({"variables": [{"name": "name", "expression": "'something'"}]}),
            Some("found no matching overload for '_==_' applied to '(string, int)'"),
        ),
        (
            deploy_rules(),
            "variables.nonExisting",
            json!({"variables": [{"name": "works", "expression": "true"}]}),
            Some("undefined field 'nonExisting'"),
        ),
        // Wildcard rules name no kind: nothing is checked.
        (
            json!([{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]),
            "object.foo == 1",
            json!({}),
            None,
        ),
    ];
    for (rules, expr, extra, want) in cases {
        let w = warnings(rules.clone(), &[expr], extra.clone());
        match want {
            None => assert!(w.is_empty(), "{expr}: {w:?}"),
            Some(text) => {
                assert_eq!(w.len(), 1, "{expr}: {w:?}");
                assert_eq!(w[0].field_ref, "spec.validations[0].expression");
                assert!(w[0].warning.contains(text), "{expr}: {}", w[0].warning);
            }
        }
    }
}

#[test]
fn message_expressions_and_several_kinds_are_checked() {
    let rules = json!([{"apiGroups": ["apps", "policy.karmada.io"], "apiVersions": ["v1", "v1alpha1"], "operations": ["CREATE"], "resources": ["deployments", "propagationpolicies"]}]);
    let p = policy(
        rules,
        json!([{"expression": "true", "messageExpression": "object.spec.replicas"}]),
        json!({}),
    );
    let w = check_policy(&p, &Schemas);
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].field_ref, "spec.validations[0].messageExpression");
    // Deployment has spec.replicas; PropagationPolicy does not.
    assert!(w[0].warning.starts_with("policy.karmada.io/v1alpha1, Kind=PropagationPolicy: ERROR: <input>:1:12: undefined field 'replicas'"), "{}", w[0].warning);
    assert!(!w[0].warning.contains("Kind=Deployment"));
}

#[test]
fn status_carries_the_warnings_and_generation() {
    let p = json!({
        "metadata": {"name": "p", "generation": 3},
        "spec": {"matchConstraints": {"resourceRules": pp_rules()}, "validations": [{"expression": "object.nope == 1"}, {"expression": "true"}]}
    });
    let s = status(&p, &Schemas).unwrap();
    assert_eq!(s["observedGeneration"], 3);
    let w = &s["typeChecking"]["expressionWarnings"];
    assert_eq!(w.as_array().map(Vec::len), Some(1));
    assert_eq!(w[0]["fieldRef"], "spec.validations[0].expression");
    let clean = json!({"metadata": {"name": "p", "generation": 1}, "spec": {"matchConstraints": {"resourceRules": pp_rules()}, "validations": [{"expression": "true"}]}});
    assert_eq!(status(&clean, &Schemas).unwrap()["typeChecking"], json!({}));
}

#[test]
fn checker_infers_output_types() {
    use super::types::Ty;
    let vars = crate::validator::declarations(&Ty::Dyn, None, true, &BTreeMap::new());
    let out = |e: &str| crate::environment::check_issues(e, &vars).unwrap();
    assert_eq!(out("[1, 2].map(x, x * 2)"), Ty::list(Ty::Int));
    assert_eq!(out("{'a': 1}"), Ty::map(Ty::String, Ty::Int));
    assert_eq!(out("[1, 'a']"), Ty::list(Ty::Dyn));
    assert_eq!(out("object.x"), Ty::Dyn);
    assert_eq!(out("request.userInfo.groups"), Ty::list(Ty::String));
    assert_eq!(
        out("quantity('1').add(2)"),
        Ty::opaque("kubernetes.Quantity")
    );
    assert_eq!(out("cel.bind(x, 1, x + 1)"), Ty::Int);
    assert_eq!(
        out("'a'.split(',').filter(s, s != '')"),
        Ty::list(Ty::String)
    );
    assert_eq!(out("optional.of(1).orValue(2)"), Ty::Int);
    let err = crate::environment::check_issues("1.size()", &vars).unwrap_err();
    assert!(
        err.contains("found no matching overload for 'size' applied to 'int.()'"),
        "{err}"
    );
    let err = crate::environment::check_issues("1.all(x, true)", &vars).unwrap_err();
    assert!(
        err.contains("expression of type 'int' cannot be range of a comprehension"),
        "{err}"
    );
}
