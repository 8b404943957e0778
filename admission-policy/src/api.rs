//! The admissionregistration.k8s.io/v1 fields the policy plugin reads, decoded from kube's
//! JSON (ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding).

use std::collections::BTreeMap;

use serde::Deserialize;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    pub name: String,
    pub uid: String,
    pub generation: i64,
    pub resource_version: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ValidatingAdmissionPolicy {
    pub metadata: ObjectMeta,
    pub spec: PolicySpec,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PolicySpec {
    pub param_kind: Option<ParamKind>,
    pub match_constraints: Option<MatchResources>,
    pub validations: Vec<Validation>,
    pub failure_policy: Option<String>,
    pub audit_annotations: Vec<AuditAnnotation>,
    pub match_conditions: Vec<NamedExpression>,
    pub variables: Vec<NamedExpression>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ParamKind {
    pub api_version: String,
    pub kind: String,
}

impl ParamKind {
    /// The Go `String()` of the struct, as kube's messages print it.
    pub fn go_string(&self) -> String {
        format!(
            "&ParamKind{{APIVersion:{},Kind:{},}}",
            self.api_version, self.kind
        )
    }

    /// The group and version of `apiVersion`.
    pub fn group_version(&self) -> (&str, &str) {
        match self.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", self.api_version.as_str()),
        }
    }
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Validation {
    pub expression: String,
    pub message: String,
    pub reason: Option<String>,
    pub message_expression: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AuditAnnotation {
    pub key: String,
    pub value_expression: String,
}

/// A match condition or a variable: a name and an expression.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NamedExpression {
    pub name: String,
    pub expression: String,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MatchResources {
    pub namespace_selector: Option<LabelSelector>,
    pub object_selector: Option<LabelSelector>,
    pub resource_rules: Vec<NamedRuleWithOperations>,
    pub exclude_resource_rules: Vec<NamedRuleWithOperations>,
    pub match_policy: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NamedRuleWithOperations {
    pub resource_names: Vec<String>,
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub scope: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelector {
    pub match_labels: BTreeMap<String, String>,
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: String,
    pub values: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ValidatingAdmissionPolicyBinding {
    pub metadata: ObjectMeta,
    pub spec: BindingSpec,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct BindingSpec {
    pub policy_name: String,
    pub param_ref: Option<ParamRef>,
    pub match_resources: Option<MatchResources>,
    pub validation_actions: Vec<String>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ParamRef {
    pub name: String,
    pub namespace: String,
    pub selector: Option<LabelSelector>,
    pub parameter_not_found_action: Option<String>,
}
