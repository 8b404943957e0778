//! ClusterTaintPolicy (pkg/apis/policy/v1alpha1/clustertaint_types.go): taints added to and
//! removed from the clusters it selects, driven by their status conditions.

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ClusterAffinity;
use crate::resource::karmada_resource;

/// The operators a match condition accepts (MatchConditionOperator).
pub const MATCH_CONDITION_OPERATORS: &[&str] = &["In", "NotIn"];

/// Manages taints on Cluster objects from declarative conditions. AddOnConditions are
/// evaluated before RemoveOnConditions; taints are never removed because the policy is deleted.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ClusterTaintPolicy {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired behaviour of the policy.
    pub spec: ClusterTaintPolicySpec,
}

karmada_resource!(
    ClusterTaintPolicy,
    group: "policy.karmada.io",
    version: "v1alpha1",
    plural: "clustertaintpolicies",
    scope: ClusterResourceScope,
    status: none
);

/// The desired behaviour of a ClusterTaintPolicy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterTaintPolicySpec {
    /// The clusters the policy looks after; any cluster when unset. Clusters that stop
    /// matching keep their taints unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_clusters: Option<ClusterAffinity>,
    /// Conditions (ANDed) under which the taints are added; none are added when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub add_on_conditions: Vec<MatchCondition>,
    /// Conditions (ANDed) under which the taints are removed; none are removed when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remove_on_conditions: Vec<MatchCondition>,
    /// The taints added or removed on the target clusters.
    #[schemars(length(min = 1))]
    pub taints: Vec<PolicyTaint>,
}

/// A condition of a cluster's status to match.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MatchCondition {
    /// The ClusterStatus condition type, e.g. Ready.
    pub condition_type: String,
    /// In or NotIn.
    pub operator: String,
    /// Condition statuses (True, False, Unknown) the operator compares with.
    pub status_values: Vec<String>,
}

/// A taint to apply to a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyTaint {
    /// The taint key.
    pub key: String,
    /// The taint effect: NoSchedule, PreferNoSchedule or NoExecute.
    pub effect: String,
    /// The taint value.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

impl MatchCondition {
    /// Whether the cluster's conditions satisfy this one (conditionMatches, for one
    /// condition): a missing condition matches neither In nor NotIn.
    pub fn matches(
        &self,
        conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    ) -> bool {
        let mut matched = false;
        for c in conditions.iter().filter(|c| c.type_ == self.condition_type) {
            let listed = self.status_values.contains(&c.status);
            matched = match self.operator.as_str() {
                "In" => matched || listed,
                "NotIn" => !listed,
                _ => return false,
            };
        }
        matched
    }
}

/// Whether every condition matches (ANDed); false when there are none.
pub fn conditions_match(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    match_conditions: &[MatchCondition],
) -> bool {
    !match_conditions.is_empty() && match_conditions.iter().all(|m| m.matches(conditions))
}
