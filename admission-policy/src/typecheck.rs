//! A policy's `status.typeChecking` (k8s.io/apiserver
//! pkg/admission/plugin/policy/validating/typechecking.go and kube-controller-manager's
//! validatingadmissionpolicystatus controller): each validation's expression and
//! messageExpression checked against the schema of every kind its match constraints name
//! (at most ten, wildcards and subresources skipped), with `params` typed by the paramKind's
//! schema; what fails becomes an `expressionWarnings` entry in kube's words.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{Value, json};

use crate::api::ValidatingAdmissionPolicy;
use crate::checker::schema::resource_type;
use crate::checker::types::Ty;
use crate::environment::check_issues;
use crate::request::{Gvk, Gvr};
use crate::validator::declarations;

/// kube's `maxTypesToCheck`.
const MAX_TYPES: usize = 10;

/// Where the server's schemas come from.
pub trait SchemaResolver {
    /// The kinds a resource serves (a RESTMapper's `KindsFor`); empty when unknown.
    fn kinds_for(&self, resource: &Gvr) -> Vec<Gvk>;
    /// A kind's OpenAPI v3 schema, `None` when the server has none.
    fn schema(&self, kind: &Gvk) -> Option<Value>;
    /// A `#/components/schemas/NAME` the schemas refer to.
    fn component(&self, _name: &str) -> Option<&Value> {
        None
    }
}

/// One entry of `status.typeChecking.expressionWarnings`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpressionWarning {
    pub field_ref: String,
    pub warning: String,
}

/// The kinds to check a policy against, sorted by group, version and kind.
fn types_to_check(policy: &ValidatingAdmissionPolicy, resolver: &dyn SchemaResolver) -> Vec<Gvk> {
    let mut out: Vec<Gvk> = Vec::new();
    let Some(m) = &policy.spec.match_constraints else {
        return out;
    };
    let mut count = 0;
    for rule in &m.resource_rules {
        if rule
            .api_groups
            .iter()
            .chain(&rule.api_versions)
            .any(|g| g.contains('*'))
        {
            continue;
        }
        let mut groups = rule.api_groups.clone();
        let mut versions = rule.api_versions.clone();
        let mut resources: Vec<String> = rule
            .resources
            .iter()
            .filter(|r| !r.contains(['*', '/']))
            .cloned()
            .collect();
        groups.sort();
        versions.sort();
        resources.sort();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    for kind in resolver.kinds_for(&Gvr::new(g, v, r)) {
                        if kind.kind.is_empty() {
                            continue;
                        }
                        if !out.contains(&kind) {
                            out.push(kind);
                        }
                        count += 1;
                        if count == MAX_TYPES {
                            out.sort();
                            return out;
                        }
                    }
                }
            }
        }
    }
    out.sort();
    out
}

fn kind_type(resolver: &dyn SchemaResolver, gvk: &Gvk) -> Option<Ty> {
    let schema = resolver.schema(gvk)?;
    let components = |name: &str| resolver.component(name).cloned();
    resource_type(&schema, &gvk.kind, &components)
}

/// The warnings of a policy (kube's `TypeChecker.Check`); empty when it checks clean.
pub fn check_policy(
    policy: &ValidatingAdmissionPolicy,
    resolver: &dyn SchemaResolver,
) -> Vec<ExpressionWarning> {
    let kinds: Vec<(Gvk, Ty)> = types_to_check(policy, resolver)
        .into_iter()
        .filter_map(|gvk| kind_type(resolver, &gvk).map(|t| (gvk, t)))
        .collect();
    if kinds.is_empty() {
        return Vec::new();
    }
    let params = policy.spec.param_kind.as_ref().map(|pk| {
        let (g, v) = pk.group_version();
        kind_type(resolver, &Gvk::new(g, v, &pk.kind)).unwrap_or(Ty::Dyn)
    });
    let check = |expression: &str| -> String {
        let mut messages = Vec::new();
        for (gvk, object) in &kinds {
            let mut var_types = BTreeMap::new();
            for v in &policy.spec.variables {
                let vars = declarations(object, params.as_ref(), true, &var_types);
                let t = check_issues(&v.expression, &vars).unwrap_or(Ty::Dyn);
                var_types.insert(v.name.clone(), t);
            }
            let vars = declarations(object, params.as_ref(), true, &var_types);
            if let Err(issues) = check_issues(expression, &vars) {
                messages.push(format!("{gvk}: {issues}\n"));
            }
        }
        messages.join("\n")
    };
    let mut warnings = Vec::new();
    for (i, v) in policy.spec.validations.iter().enumerate() {
        let w = check(&v.expression);
        if !w.is_empty() {
            warnings.push(ExpressionWarning {
                field_ref: format!("spec.validations[{i}].expression"),
                warning: w,
            });
        }
        if v.message_expression.is_empty() {
            continue;
        }
        let w = check(&v.message_expression);
        if !w.is_empty() {
            warnings.push(ExpressionWarning {
                field_ref: format!("spec.validations[{i}].messageExpression"),
                warning: w,
            });
        }
    }
    warnings
}

/// The policy's status as the status controller writes it: `observedGeneration` and
/// `typeChecking`.
pub fn status(policy: &Value, resolver: &dyn SchemaResolver) -> Result<Value, serde_json::Error> {
    let p: ValidatingAdmissionPolicy = serde_json::from_value(policy.clone())?;
    let warnings = check_policy(&p, resolver);
    let mut type_checking = json!({});
    if !warnings.is_empty() {
        type_checking["expressionWarnings"] = serde_json::to_value(&warnings)?;
    }
    Ok(json!({
        "observedGeneration": p.metadata.generation,
        "typeChecking": type_checking,
    }))
}
