//! Label selectors (apimachinery's metav1.LabelSelectorAsSelector and Matches).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// Whether the labels satisfy the selector. A selector that cannot be parsed (an unknown
/// operator, values where none are allowed) matches nothing, as Karmada treats it.
pub fn matches(selector: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    let empty = BTreeMap::new();
    let labels = labels.unwrap_or(&empty);
    for (k, v) in selector.match_labels.iter().flatten() {
        if labels.get(k) != Some(v) {
            return false;
        }
    }
    for e in selector.match_expressions.iter().flatten() {
        let values = e.values.as_deref().unwrap_or(&[]);
        let got = labels.get(&e.key);
        let ok = match e.operator.as_str() {
            "In" => !values.is_empty() && got.is_some_and(|g| values.contains(g)),
            "NotIn" => !values.is_empty() && got.is_none_or(|g| !values.contains(g)),
            "Exists" => values.is_empty() && got.is_some(),
            "DoesNotExist" => values.is_empty() && got.is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// The selector in the `a=b,c in (d)` syntax of label-selector query parameters.
pub fn to_query(selector: &LabelSelector) -> String {
    let mut parts = Vec::new();
    for (k, v) in selector.match_labels.iter().flatten() {
        parts.push(format!("{k}={v}"));
    }
    for e in selector.match_expressions.iter().flatten() {
        let values = e.values.as_deref().unwrap_or(&[]).join(",");
        match e.operator.as_str() {
            "In" => parts.push(format!("{} in ({values})", e.key)),
            "NotIn" => parts.push(format!("{} notin ({values})", e.key)),
            "Exists" => parts.push(e.key.clone()),
            "DoesNotExist" => parts.push(format!("!{}", e.key)),
            _ => {}
        }
    }
    parts.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn req(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn table() {
        let labels: BTreeMap<String, String> = [("app", "web"), ("tier", "fe")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let cases: Vec<(LabelSelector, bool)> = vec![
            (LabelSelector::default(), true),
            (
                LabelSelector {
                    match_labels: Some([("app".to_string(), "web".to_string())].into()),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_labels: Some([("app".to_string(), "db".to_string())].into()),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![req("tier", "In", &["fe", "be"])]),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![req("tier", "NotIn", &["fe"])]),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![req("zone", "NotIn", &["a"])]),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![req("app", "Exists", &[])]),
                    ..Default::default()
                },
                true,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![req("app", "DoesNotExist", &[])]),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![req("app", "Bogus", &[])]),
                    ..Default::default()
                },
                false,
            ),
            (
                LabelSelector {
                    match_expressions: Some(vec![req("app", "In", &[])]),
                    ..Default::default()
                },
                false,
            ),
        ];
        for (i, (sel, want)) in cases.iter().enumerate() {
            assert_eq!(matches(sel, Some(&labels)), *want, "case {i}");
        }
    }
}
