//! ClusterRole aggregation, as kube's clusterrole-aggregation controller
//! (pkg/controller/clusterroleaggregation): a ClusterRole with an `aggregationRule` gets the
//! union of the rules of every other ClusterRole its label selectors match, in name order,
//! without duplicates.

use std::collections::BTreeMap;

use serde_json::Value;

use super::index::parse_rules;
use super::rule::PolicyRule;
use crate::object;

/// Does a metav1.LabelSelector match these labels? `{}` matches everything; an unknown
/// operator matches nothing.
pub fn selector_matches(selector: &Value, labels: &BTreeMap<String, String>) -> bool {
    if let Some(ml) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in ml {
            if labels.get(k).map(String::as_str) != v.as_str() {
                return false;
            }
        }
    }
    if let Some(exprs) = selector.get("matchExpressions").and_then(Value::as_array) {
        for e in exprs {
            let key = e.get("key").and_then(Value::as_str).unwrap_or("");
            let values: Vec<&str> = e
                .get("values")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let have = labels.get(key).map(String::as_str);
            let ok = match e.get("operator").and_then(Value::as_str).unwrap_or("") {
                "In" => have.is_some_and(|h| values.contains(&h)),
                "NotIn" => have.is_none_or(|h| !values.contains(&h)),
                "Exists" => have.is_some(),
                "DoesNotExist" => have.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
    }
    true
}

/// The ClusterRoles whose rules must change, with their new rules.
pub fn plan(cluster_roles: &[Value]) -> Vec<(String, Vec<PolicyRule>)> {
    let mut sorted: Vec<&Value> = cluster_roles.iter().collect();
    sorted.sort_by(|a, b| object::name(a).cmp(object::name(b)));
    let mut changes = Vec::new();
    for shared in &sorted {
        let Some(selectors) = shared
            .pointer("/aggregationRule/clusterRoleSelectors")
            .and_then(Value::as_array)
        else {
            continue;
        };
        let name = object::name(shared);
        let mut rules: Vec<PolicyRule> = Vec::new();
        for role in &sorted {
            if object::name(role) == name {
                continue;
            }
            let labels = object::labels(role);
            if !selectors.iter().any(|s| selector_matches(s, &labels)) {
                continue;
            }
            for r in parse_rules(role) {
                if !rules.contains(&r) {
                    rules.push(r);
                }
            }
        }
        if rules != parse_rules(shared) {
            changes.push((name.to_string(), rules));
        }
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn selectors() {
        let l = labels(&[("a", "1"), ("b", "2")]);
        let cases = [
            (json!({}), true),
            (json!({"matchLabels": {"a": "1"}}), true),
            (json!({"matchLabels": {"a": "2"}}), false),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "3"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "c", "operator": "NotIn", "values": ["1"]}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "b", "operator": "Exists"}]}),
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]}),
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "b", "operator": "Bogus"}]}),
                false,
            ),
        ];
        for (sel, want) in cases {
            assert_eq!(selector_matches(&sel, &l), want, "{sel}");
        }
    }

    #[test]
    fn aggregates_in_name_order_without_duplicates() {
        let rule = |r: &str| json!({"verbs": ["get"], "apiGroups": [""], "resources": [r]});
        let roles = vec![
            json!({"metadata": {"name": "view"}, "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "view"}}]}, "rules": []}),
            json!({"metadata": {"name": "z-extra", "labels": {"agg": "view"}}, "rules": [rule("secrets"), rule("pods")]}),
            json!({"metadata": {"name": "a-base", "labels": {"agg": "view"}}, "rules": [rule("pods")]}),
            json!({"metadata": {"name": "other"}, "rules": [rule("nodes")]}),
        ];
        let changes = plan(&roles);
        assert_eq!(changes.len(), 1);
        let (name, rules) = &changes[0];
        assert_eq!(name, "view");
        let resources: Vec<&str> = rules.iter().map(|r| r.resources[0].as_str()).collect();
        assert_eq!(resources, vec!["pods", "secrets"]);
        // Once written, nothing changes any more.
        let mut done = roles.clone();
        done[0]["rules"] = serde_json::to_value(rules).unwrap();
        assert!(plan(&done).is_empty());
    }
}
