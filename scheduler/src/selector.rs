//! Label, field and resource selectors as Kubernetes and Karmada evaluate them
//! (apimachinery `labels.Selector`, Karmada `util.ClusterMatches` and `util.ResourceSelectorPriority`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::{ClusterAffinity, ResourceSelector};
use karmada_api::well_known::cluster_fields;
use serde_json::Value;

/// One parsed requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement<'a> {
    In(&'a str, &'a [String]),
    NotIn(&'a str, &'a [String]),
    Exists(&'a str),
    DoesNotExist(&'a str),
    GreaterThan(&'a str, i64),
    LessThan(&'a str, i64),
    Equals(&'a str, &'a str),
}

impl Requirement<'_> {
    fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Requirement::In(key, values) => labels
                .get(*key)
                .is_some_and(|v| values.iter().any(|x| x == v)),
            Requirement::NotIn(key, values) => labels
                .get(*key)
                .is_none_or(|v| !values.iter().any(|x| x == v)),
            Requirement::Exists(key) => labels.contains_key(*key),
            Requirement::DoesNotExist(key) => !labels.contains_key(*key),
            Requirement::Equals(key, value) => labels.get(*key).is_some_and(|v| v == value),
            Requirement::GreaterThan(key, bound) => labels
                .get(*key)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v > *bound),
            Requirement::LessThan(key, bound) => labels
                .get(*key)
                .and_then(|v| v.parse::<i64>().ok())
                .is_some_and(|v| v < *bound),
        }
    }
}

/// Builds one requirement the way `labels.NewRequirement` validates it; `None` for an invalid one.
fn requirement<'a>(key: &'a str, operator: &str, values: &'a [String]) -> Option<Requirement<'a>> {
    match operator {
        "In" if !values.is_empty() => Some(Requirement::In(key, values)),
        "NotIn" if !values.is_empty() => Some(Requirement::NotIn(key, values)),
        "Exists" if values.is_empty() => Some(Requirement::Exists(key)),
        "DoesNotExist" if values.is_empty() => Some(Requirement::DoesNotExist(key)),
        "Gt" | "Lt" => match values {
            [single] => {
                let bound = single.parse::<i64>().ok()?;
                Some(if operator == "Gt" {
                    Requirement::GreaterThan(key, bound)
                } else {
                    Requirement::LessThan(key, bound)
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// Whether `labels` satisfy a label selector (`metav1.LabelSelectorAsSelector` then `Matches`).
/// An empty selector matches everything; an invalid selector matches nothing.
pub fn label_selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let mut requirements = Vec::new();
    if let Some(match_labels) = &selector.match_labels {
        for (k, v) in match_labels {
            requirements.push(Requirement::Equals(k, v));
        }
    }
    for expr in selector.match_expressions.iter().flatten() {
        let values = expr.values.as_deref().unwrap_or(&[]);
        // LabelSelectorAsSelector accepts only the four set-based operators.
        if !matches!(
            expr.operator.as_str(),
            "In" | "NotIn" | "Exists" | "DoesNotExist"
        ) {
            return false;
        }
        match requirement(&expr.key, &expr.operator, values) {
            Some(r) => requirements.push(r),
            None => return false,
        }
    }
    requirements.iter().all(|r| r.matches(labels))
}

/// Whether `fields` satisfy node-selector requirements (`NodeSelectorRequirementsAsSelector`):
/// no requirement matches nothing, an invalid one matches nothing.
fn node_selector_requirements_match(
    requirements: &[&NodeSelectorRequirement],
    fields: &BTreeMap<String, String>,
) -> bool {
    if requirements.is_empty() {
        return false;
    }
    requirements.iter().all(|expr| {
        let values = expr.values.as_deref().unwrap_or(&[]);
        requirement(&expr.key, &expr.operator, values).is_some_and(|r| r.matches(fields))
    })
}

/// Whether the zone requirement matches the cluster's zones (Karmada `matchZones`).
fn match_zones(expr: &NodeSelectorRequirement, zones: &[String]) -> bool {
    let values = expr.values.as_deref().unwrap_or(&[]);
    match expr.operator.as_str() {
        "In" => zones.iter().any(|z| values.contains(z)),
        "NotIn" => !zones.iter().any(|z| values.contains(z)),
        "Exists" => !zones.is_empty(),
        "DoesNotExist" => zones.is_empty(),
        _ => false,
    }
}

/// Whether a cluster satisfies a ClusterAffinity (Karmada `util.ClusterMatches`): not excluded,
/// and matching the label selector, the field selector and the name list, each when set.
pub fn cluster_matches(cluster: &Cluster, affinity: &ClusterAffinity) -> bool {
    let name = cluster.metadata.name.as_deref().unwrap_or("");
    if affinity.exclude_clusters.iter().any(|c| c == name) {
        return false;
    }
    if let Some(selector) = &affinity.label_selector {
        let empty = BTreeMap::new();
        let labels = cluster.metadata.labels.as_ref().unwrap_or(&empty);
        if !label_selector_matches(selector, labels) {
            return false;
        }
    }
    if let Some(field_selector) = &affinity.field_selector {
        let mut others = Vec::new();
        for expr in &field_selector.match_expressions {
            if expr.key == cluster_fields::ZONE {
                if !match_zones(expr, &cluster.spec.zones) {
                    return false;
                }
            } else {
                others.push(expr);
            }
        }
        if !others.is_empty() {
            let mut fields = BTreeMap::new();
            if !cluster.spec.provider.is_empty() {
                fields.insert(
                    cluster_fields::PROVIDER.to_string(),
                    cluster.spec.provider.clone(),
                );
            }
            if !cluster.spec.region.is_empty() {
                fields.insert(
                    cluster_fields::REGION.to_string(),
                    cluster.spec.region.clone(),
                );
            }
            if !node_selector_requirements_match(&others, &fields) {
                return false;
            }
        }
    }
    affinity.cluster_names.is_empty() || affinity.cluster_names.iter().any(|c| c == name)
}

/// How specifically a resource selector matches an object (Karmada `util.ImplicitPriority`);
/// the derived order is the precedence order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImplicitPriority {
    /// The selector does not match.
    MisMatch,
    /// The selector has neither name nor label selector.
    MatchAll,
    /// The selector's label selector matches.
    MatchLabelSelector,
    /// The selector's name matches.
    MatchName,
}

fn str_field<'a>(object: &'a Value, path: &[&str]) -> &'a str {
    path.iter()
        .try_fold(object, |v, k| v.get(*k))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The labels of an object, ignoring non-string values.
pub(crate) fn object_labels(object: &Value) -> BTreeMap<String, String> {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// How a resource selector matches an object (Karmada `util.ResourceSelectorPriority`): the
/// name wins over the label selector, which is ignored when a name is given.
pub fn resource_selector_priority(object: &Value, selector: &ResourceSelector) -> ImplicitPriority {
    if str_field(object, &["apiVersion"]) != selector.api_version
        || str_field(object, &["kind"]) != selector.kind
        || (!selector.namespace.is_empty()
            && str_field(object, &["metadata", "namespace"]) != selector.namespace)
    {
        return ImplicitPriority::MisMatch;
    }
    if !selector.name.is_empty() {
        return if selector.name == str_field(object, &["metadata", "name"]) {
            ImplicitPriority::MatchName
        } else {
            ImplicitPriority::MisMatch
        };
    }
    match &selector.label_selector {
        None => ImplicitPriority::MatchAll,
        Some(ls) if label_selector_matches(ls, &object_labels(object)) => {
            ImplicitPriority::MatchLabelSelector
        }
        Some(_) => ImplicitPriority::MisMatch,
    }
}

/// The highest priority among several selectors (Karmada `util.ResourceMatchSelectorsPriority`).
pub fn resource_match_selectors_priority(
    object: &Value,
    selectors: &[ResourceSelector],
) -> ImplicitPriority {
    selectors
        .iter()
        .map(|s| resource_selector_priority(object, s))
        .max()
        .unwrap_or(ImplicitPriority::MisMatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use karmada_api::policy::v1alpha1::FieldSelector;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn cluster(
        name: &str,
        l: &[(&str, &str)],
        provider: &str,
        region: &str,
        zones: &[&str],
    ) -> Cluster {
        let mut c = Cluster::default();
        c.metadata.name = Some(name.into());
        c.metadata.labels = Some(labels(l));
        c.spec.provider = provider.into();
        c.spec.region = region.into();
        c.spec.zones = zones.iter().map(|z| z.to_string()).collect();
        c
    }

    #[test]
    fn label_selectors() {
        let l = labels(&[("env", "prod"), ("tier", "web")]);
        let cases: Vec<(LabelSelector, bool)> = vec![
            (LabelSelector::default(), true),
            (
                LabelSelector {
                    match_labels: Some(labels(&[("env", "prod")])),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: Some(labels(&[("env", "dev")])),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("env", "In", &["dev", "prod"])]),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("env", "NotIn", &["prod"])]),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("missing", "NotIn", &["x"])]),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("tier", "Exists", &[])]),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("tier", "DoesNotExist", &[])]),
                    ..Default::default()
                },
                false,
            ),
            // Invalid: In without values, Exists with values, unknown operator.
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("env", "In", &[])]),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("env", "Exists", &["prod"])]),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![expr("env", "Gt", &["1"])]),
                    ..Default::default()
                },
                false,
            ),
        ];
        for (i, (selector, want)) in cases.iter().enumerate() {
            assert_eq!(label_selector_matches(selector, &l), *want, "case {i}");
        }
    }

    fn field(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn cluster_affinity_rules() {
        let c = cluster("member1", &[("env", "prod")], "aws", "us-east", &["a", "b"]);
        let with_fields = |exprs: Vec<NodeSelectorRequirement>| ClusterAffinity {
            field_selector: Some(FieldSelector {
                match_expressions: exprs,
            }),
            ..Default::default()
        };
        let cases: Vec<(&str, ClusterAffinity, bool)> = vec![
            ("empty matches all", ClusterAffinity::default(), true),
            (
                "name listed",
                ClusterAffinity {
                    cluster_names: vec!["member1".into()],
                    ..Default::default()
                },
                true,
            ),
            (
                "name not listed",
                ClusterAffinity {
                    cluster_names: vec!["member2".into()],
                    ..Default::default()
                },
                false,
            ),
            (
                "excluded wins over names",
                ClusterAffinity {
                    cluster_names: vec!["member1".into()],
                    exclude_clusters: vec!["member1".into()],
                    ..Default::default()
                },
                false,
            ),
            (
                "label selector and names both required",
                ClusterAffinity {
                    label_selector: Some(LabelSelector {
                        match_labels: Some(labels(&[("env", "dev")])),
                        ..Default::default()
                    }),
                    cluster_names: vec!["member1".into()],
                    ..Default::default()
                },
                false,
            ),
            (
                "provider In",
                with_fields(vec![field("provider", "In", &["aws"])]),
                true,
            ),
            (
                "region NotIn",
                with_fields(vec![field("region", "NotIn", &["us-east"])]),
                false,
            ),
            (
                "zone In overlaps",
                with_fields(vec![field("zone", "In", &["b", "c"])]),
                true,
            ),
            (
                "zone NotIn overlaps",
                with_fields(vec![field("zone", "NotIn", &["b"])]),
                false,
            ),
            (
                "zone and provider",
                with_fields(vec![
                    field("zone", "In", &["a"]),
                    field("provider", "In", &["gcp"]),
                ]),
                false,
            ),
            (
                "unknown operator",
                with_fields(vec![field("provider", "Foo", &["aws"])]),
                false,
            ),
        ];
        for (name, affinity, want) in cases {
            assert_eq!(cluster_matches(&c, &affinity), want, "{name}");
        }
        let bare = cluster("member2", &[], "", "", &[]);
        assert!(
            cluster_matches(&bare, &with_fields(vec![field("region", "NotIn", &["x"])])),
            "NotIn matches a cluster without the field"
        );
        assert!(!cluster_matches(
            &bare,
            &with_fields(vec![field("zone", "In", &["a"])])
        ));
    }

    #[test]
    fn resource_selector_priorities() {
        let obj = serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}}
        });
        let sel = |name: &str, ns: &str, ls: Option<LabelSelector>| ResourceSelector {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: ns.into(),
            name: name.into(),
            label_selector: ls,
        };
        let app = |v: &str| {
            Some(LabelSelector {
                match_labels: Some(labels(&[("app", v)])),
                ..Default::default()
            })
        };
        let cases = [
            (sel("", "", None), ImplicitPriority::MatchAll),
            (sel("nginx", "", app("other")), ImplicitPriority::MatchName),
            (sel("other", "", None), ImplicitPriority::MisMatch),
            (
                sel("", "", app("nginx")),
                ImplicitPriority::MatchLabelSelector,
            ),
            (sel("", "", app("other")), ImplicitPriority::MisMatch),
            (sel("", "kube-system", None), ImplicitPriority::MisMatch),
            (
                ResourceSelector {
                    kind: "StatefulSet".into(),
                    ..sel("", "", None)
                },
                ImplicitPriority::MisMatch,
            ),
        ];
        for (i, (s, want)) in cases.iter().enumerate() {
            assert_eq!(resource_selector_priority(&obj, s), *want, "case {i}");
        }
        assert_eq!(
            resource_match_selectors_priority(&obj, &[sel("", "", None), sel("nginx", "", None)]),
            ImplicitPriority::MatchName
        );
    }
}
