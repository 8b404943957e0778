//! Which requests a policy or binding applies to (k8s.io/apiserver
//! pkg/admission/plugin/policy/matching and webhook/predicates): namespace and object
//! selectors, resource rules with operations, scopes, subresources and resource names,
//! exclusions, and `matchPolicy: Equivalent` through the caller's equivalent resources.

use std::collections::BTreeMap;

use apimachinery::selectors::{LabelOp, Requirement};
use serde_json::Value;

use crate::Cluster;
use crate::api::{LabelSelector, MatchResources, NamedRuleWithOperations};
use crate::request::{Attributes, Gvk, Gvr};

/// A label selector as apimachinery's `LabelSelectorAsSelector` builds it.
pub fn selector(s: &LabelSelector) -> Result<apimachinery::selectors::LabelSelector, String> {
    let mut requirements = Vec::new();
    for (k, v) in &s.match_labels {
        requirements.push(Requirement {
            key: k.clone(),
            op: LabelOp::In(vec![v.clone()]),
        });
    }
    for e in &s.match_expressions {
        let op = match e.operator.as_str() {
            "In" | "NotIn" if e.values.is_empty() => {
                return Err("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".into());
            }
            "In" => LabelOp::In(e.values.clone()),
            "NotIn" => LabelOp::NotIn(e.values.clone()),
            "Exists" => LabelOp::Exists,
            "DoesNotExist" => LabelOp::DoesNotExist,
            other => return Err(format!("{other:?} is not a valid label selector operator")),
        };
        requirements.push(Requirement {
            key: e.key.clone(),
            op,
        });
    }
    Ok(apimachinery::selectors::LabelSelector { requirements })
}

pub fn labels_of(obj: Option<&Value>) -> BTreeMap<String, String> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn is_namespace(attrs: &Attributes<'_>) -> bool {
    attrs.resource.group.is_empty()
        && attrs.resource.resource == "namespaces"
        && attrs.subresource.is_empty()
}

/// The namespace selector: cluster-scoped requests (but namespaces themselves) always match.
fn namespace_matches(
    sel: Option<&LabelSelector>,
    attrs: &Attributes<'_>,
    cluster: &dyn Cluster,
) -> Result<bool, String> {
    let Some(sel) = sel else { return Ok(true) };
    let s = selector(sel)?;
    if s.is_empty() {
        return Ok(true);
    }
    if is_namespace(attrs) {
        let labels = labels_of(attrs.object.or(attrs.old_object));
        return Ok(s.matches(&labels));
    }
    if attrs.namespace.is_empty() {
        return Ok(true);
    }
    let ns = cluster
        .namespace(&attrs.namespace)
        .ok_or_else(|| format!("namespaces \"{}\" not found", attrs.namespace))?;
    Ok(s.matches(&labels_of(Some(&ns))))
}

/// The object selector: the new or the old object's labels match.
fn object_matches(sel: Option<&LabelSelector>, attrs: &Attributes<'_>) -> Result<bool, String> {
    let Some(sel) = sel else { return Ok(true) };
    let s = selector(sel)?;
    if s.is_empty() {
        return Ok(true);
    }
    Ok([attrs.object, attrs.old_object]
        .into_iter()
        .flatten()
        .any(|o| s.matches(&labels_of(Some(o)))))
}

fn any_or(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

/// kube's rules.Matcher on a (possibly equivalent) resource.
fn rule_matches(rule: &NamedRuleWithOperations, attrs: &Attributes<'_>, resource: &Gvr) -> bool {
    if !any_or(&rule.operations, attrs.operation.as_str())
        || !any_or(&rule.api_groups, &resource.group)
        || !any_or(&rule.api_versions, &resource.version)
    {
        return false;
    }
    let resource_ok = rule.resources.iter().any(|r| {
        let (res, sub) = r.split_once('/').unwrap_or((r, ""));
        (res == "*" || res == resource.resource) && (sub == "*" || sub == attrs.subresource)
    });
    if !resource_ok {
        return false;
    }
    let cluster_scoped = attrs.namespace.is_empty() || is_namespace(attrs);
    match rule.scope.as_deref() {
        Some("Cluster") => cluster_scoped,
        Some("Namespaced") => !cluster_scoped,
        _ => true,
    }
}

fn names_match(rule: &NamedRuleWithOperations, attrs: &Attributes<'_>) -> bool {
    rule.resource_names.is_empty() || rule.resource_names.contains(&attrs.name)
}

/// The first rule matching the request, or an equivalent resource of it under
/// `matchPolicy: Equivalent`: the matched resource and kind.
fn rules_match(
    rules: &[NamedRuleWithOperations],
    equivalent: bool,
    attrs: &Attributes<'_>,
    cluster: &dyn Cluster,
) -> Result<Option<(Gvr, Gvk)>, String> {
    for rule in rules {
        if rule_matches(rule, attrs, &attrs.resource) && names_match(rule, attrs) {
            return Ok(Some((attrs.resource.clone(), attrs.kind.clone())));
        }
    }
    if !equivalent {
        return Ok(None);
    }
    let equivalents = cluster.equivalent_resources(&attrs.resource, &attrs.subresource);
    for rule in rules {
        for (gvr, gvk) in &equivalents {
            if *gvr == attrs.resource || !rule_matches(rule, attrs, gvr) {
                continue;
            }
            if gvk.kind.is_empty() {
                return Err(format!(
                    "unable to convert to {}/{}, Resource={}: unknown kind",
                    gvr.group, gvr.version, gvr.resource
                ));
            }
            if names_match(rule, attrs) {
                return Ok(Some((gvr.clone(), gvk.clone())));
            }
        }
    }
    Ok(None)
}

/// kube's `Matcher.Matches`: `Ok(None)` when the criteria do not select the request;
/// selector errors count only for requests the rules select.
pub fn matches(
    criteria: &MatchResources,
    attrs: &Attributes<'_>,
    cluster: &dyn Cluster,
) -> Result<Option<(Gvr, Gvk)>, String> {
    let ns = namespace_matches(criteria.namespace_selector.as_ref(), attrs, cluster);
    if ns == Ok(false) {
        return Ok(None);
    }
    let obj = object_matches(criteria.object_selector.as_ref(), attrs);
    if obj == Ok(false) {
        return Ok(None);
    }
    // The API defaults matchPolicy to Equivalent.
    let equivalent = criteria.match_policy.as_deref() != Some("Exact");
    if rules_match(&criteria.exclude_resource_rules, equivalent, attrs, cluster)?.is_some() {
        return Ok(None);
    }
    let matched = if criteria.resource_rules.is_empty() {
        Some((attrs.resource.clone(), attrs.kind.clone()))
    } else {
        rules_match(&criteria.resource_rules, equivalent, attrs, cluster)?
    };
    if matched.is_none() {
        return Ok(None);
    }
    ns?;
    obj?;
    Ok(matched)
}
