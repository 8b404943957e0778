//! `remedy.karmada.io/v1alpha1` (pkg/apis/remedy/v1alpha1/remedy_types.go).

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::karmada_resource;

/// The operators a cluster condition requirement accepts (ClusterConditionOperator).
pub const CLUSTER_CONDITION_OPERATORS: &[&str] = &["Equal", "NotEqual"];

/// The action Karmada defines: the cluster requires traffic control.
pub const TRAFFIC_CONTROL: &str = "TrafficControl";

/// Remedy represents the cluster-level management strategies based on cluster conditions.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct Remedy {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec represents the desired behavior of Remedy.
    pub spec: RemedySpec,
}

karmada_resource!(
    Remedy,
    group: "remedy.karmada.io",
    version: "v1alpha1",
    plural: "remedies",
    scope: ClusterResourceScope,
    status: none
);

/// RemedySpec represents the desired behavior of Remedy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemedySpec {
    /// ClusterAffinity specifies the clusters that Remedy needs to pay attention to. For
    /// clusters that meet the DecisionConditions, Actions will be performed. If empty, all
    /// clusters will be selected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_affinity: Option<ClusterAffinity>,
    /// DecisionMatches indicates the decision matches of triggering the remedy system to
    /// perform the actions. As long as any one DecisionMatch matches, the Actions will be
    /// performed. If empty, the Actions will be performed immediately.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_matches: Option<Vec<DecisionMatch>>,
    /// Actions specifies the actions that remedy system needs to perform (TrafficControl).
    /// If empty, no action will be performed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<String>,
}

/// DecisionMatch represents the decision match detail of activating the remedy system.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DecisionMatch {
    /// ClusterConditionMatch describes the cluster condition requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_condition_match: Option<ClusterConditionRequirement>,
}

/// ClusterConditionRequirement describes the Cluster condition requirement details.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterConditionRequirement {
    /// ConditionType specifies the ClusterStatus condition type, e.g.
    /// ServiceDomainNameResolutionReady.
    pub condition_type: String,
    /// Operator represents a conditionType's relationship to a conditionStatus. Valid
    /// operators are Equal, NotEqual.
    #[schemars(extend("enum" = ["Equal", "NotEqual"]))]
    pub operator: String,
    /// ConditionStatus specifies the ClusterStatus condition status.
    pub condition_status: String,
}

/// ClusterAffinity represents the filter to select clusters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAffinity {
    /// ClusterNames is the list of clusters to be selected.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

impl Remedy {
    /// Whether the remedy looks after `cluster` (isRemedyWorkOnCluster): every cluster without
    /// a cluster affinity.
    pub fn applies_to(&self, cluster: &str) -> bool {
        self.spec
            .cluster_affinity
            .as_ref()
            .is_none_or(|a| a.cluster_names.iter().any(|n| n == cluster))
    }

    /// Whether the cluster's conditions trigger the actions
    /// (remedyDecisionMatchWithCluster): always without decision matches, never on a cluster
    /// without conditions, else when any match holds for a condition the cluster has.
    pub fn decision_matches(&self, conditions: &[Condition]) -> bool {
        let Some(matches) = &self.spec.decision_matches else {
            return true;
        };
        if conditions.is_empty() {
            return false;
        }
        matches
            .iter()
            .filter_map(|m| m.cluster_condition_match.as_ref())
            .any(|m| {
                let Some(c) = conditions.iter().find(|c| c.type_ == m.condition_type) else {
                    return false;
                };
                match m.operator.as_str() {
                    "Equal" => m.condition_status == c.status,
                    "NotEqual" => m.condition_status != c.status,
                    _ => false,
                }
            })
    }
}

/// The sorted, deduplicated actions of every remedy that applies to the cluster and whose
/// decision matches hold (calculateActions).
pub fn cluster_actions<'a>(
    remedies: impl IntoIterator<Item = &'a Remedy>,
    cluster: &str,
    conditions: &[Condition],
) -> Vec<String> {
    let mut actions: Vec<String> = remedies
        .into_iter()
        .filter(|r| r.applies_to(cluster) && r.decision_matches(conditions))
        .flat_map(|r| r.spec.actions.iter().cloned())
        .collect();
    actions.sort();
    actions.dedup();
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn condition(t: &str, s: &str) -> Condition {
        Condition {
            type_: t.into(),
            status: s.into(),
            last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
            ),
            message: String::new(),
            observed_generation: None,
            reason: String::new(),
        }
    }

    fn remedy(clusters: Option<&[&str]>, matches: Option<&[(&str, &str, &str)]>) -> Remedy {
        Remedy {
            spec: RemedySpec {
                cluster_affinity: clusters.map(|c| ClusterAffinity {
                    cluster_names: c.iter().map(|s| (*s).into()).collect(),
                }),
                decision_matches: matches.map(|m| {
                    m.iter()
                        .map(|(t, op, s)| DecisionMatch {
                            cluster_condition_match: Some(ClusterConditionRequirement {
                                condition_type: (*t).into(),
                                operator: (*op).into(),
                                condition_status: (*s).into(),
                            }),
                        })
                        .collect()
                }),
                actions: vec![TRAFFIC_CONTROL.into()],
            },
            ..Default::default()
        }
    }

    #[test]
    fn actions_follow_affinity_and_decision_matches() {
        let dns_false = [condition("ServiceDomainNameResolutionReady", "False")];
        let dns_true = [condition("ServiceDomainNameResolutionReady", "True")];
        let eq = [("ServiceDomainNameResolutionReady", "Equal", "False")];
        let ne = [("ServiceDomainNameResolutionReady", "NotEqual", "True")];
        let other = [("Ready", "Equal", "False")];
        let cases: &[(&str, Remedy, &[Condition], bool)] = &[
            ("no matches: always", remedy(None, None), &[], true),
            (
                "empty matches on no conditions",
                remedy(None, Some(&[])),
                &[],
                false,
            ),
            ("Equal holds", remedy(None, Some(&eq)), &dns_false, true),
            ("Equal fails", remedy(None, Some(&eq)), &dns_true, false),
            ("NotEqual holds", remedy(None, Some(&ne)), &dns_false, true),
            ("NotEqual fails", remedy(None, Some(&ne)), &dns_true, false),
            (
                "absent condition",
                remedy(None, Some(&other)),
                &dns_false,
                false,
            ),
            (
                "other cluster",
                remedy(Some(&["m2"]), Some(&eq)),
                &dns_false,
                false,
            ),
            (
                "named cluster",
                remedy(Some(&["m1"]), Some(&eq)),
                &dns_false,
                true,
            ),
        ];
        for (name, r, conditions, want) in cases {
            let got = cluster_actions([r], "m1", conditions);
            assert_eq!(!got.is_empty(), *want, "{name}");
        }
    }

    #[test]
    fn actions_are_deduplicated_and_sorted() {
        let mut a = remedy(None, None);
        a.spec.actions = vec!["TrafficControl".into(), "Other".into()];
        let b = remedy(None, None);
        assert_eq!(
            cluster_actions([&a, &b], "m1", &[]),
            vec!["Other".to_string(), "TrafficControl".to_string()]
        );
    }
}
