//! RBAC policy rules: matching a request against a rule
//! (k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go) and deciding whether one set of
//! rules covers another (k8s.io/component-helpers/auth/rbac/validation, used by the
//! privilege-escalation checks).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// `*`: every verb, group, resource or URL.
pub const ALL: &str = "*";

/// One rule of a Role or ClusterRole.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyRule {
    /// Verbs.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// API groups.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// Resources, optionally `resource/subresource`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Object names (empty: all).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Non-resource URL paths (`/healthz`, `/apis/*`).
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

fn has(set: &[String], s: &str) -> bool {
    set.iter().any(|x| x == s)
}

fn has_all(set: &[String], wanted: &[String]) -> bool {
    wanted.iter().all(|w| has(set, w))
}

impl PolicyRule {
    /// VerbMatches.
    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    /// APIGroupMatches.
    pub fn api_group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// ResourceMatches: `*`, the exact `resource[/subresource]`, or `*/subresource`.
    pub fn resource_matches(&self, combined: &str, subresource: &str) -> bool {
        self.resources.iter().any(|r| {
            r == ALL
                || r == combined
                || (!subresource.is_empty()
                    && r.len() == subresource.len() + 2
                    && r.starts_with("*/")
                    && r.ends_with(subresource))
        })
    }

    /// ResourceNameMatches: no names means every name; otherwise the name must be listed (so
    /// a request without a name never matches a rule with names).
    pub fn resource_name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    /// NonResourceURLMatches: `*`, the exact path, or a prefix ending in `*`.
    pub fn non_resource_url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == ALL || u == path || (u.ends_with('*') && path.starts_with(u.trim_end_matches('*')))
        })
    }

    /// RuleAllows for a resource request.
    pub fn allows_resource(
        &self,
        verb: &str,
        group: &str,
        combined: &str,
        subresource: &str,
        name: &str,
    ) -> bool {
        self.verb_matches(verb)
            && self.api_group_matches(group)
            && self.resource_matches(combined, subresource)
            && self.resource_name_matches(name)
    }

    /// RuleAllows for a non-resource request.
    pub fn allows_non_resource(&self, verb: &str, path: &str) -> bool {
        self.verb_matches(verb) && self.non_resource_url_matches(path)
    }

    /// kube's `CompactString`: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
    pub fn compact_string(&self) -> String {
        let mut parts = Vec::new();
        let q = |v: &[String]| {
            let quoted: Vec<String> = v.iter().map(|s| go_quote(s)).collect();
            format!("[{}]", quoted.join(" "))
        };
        if !self.api_groups.is_empty() {
            parts.push(format!("APIGroups:{}", q(&self.api_groups)));
        }
        if !self.resources.is_empty() {
            parts.push(format!("Resources:{}", q(&self.resources)));
        }
        if !self.non_resource_urls.is_empty() {
            parts.push(format!("NonResourceURLs:{}", q(&self.non_resource_urls)));
        }
        if !self.resource_names.is_empty() {
            parts.push(format!("ResourceNames:{}", q(&self.resource_names)));
        }
        if !self.verbs.is_empty() {
            parts.push(format!("Verbs:{}", q(&self.verbs)));
        }
        format!("{{{}}}", parts.join(", "))
    }
}

/// Go's `%q` for the strings RBAC deals with.
pub fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// kube's `BreakdownRule`: one simple rule per (group, resource, verb[, name]) and per
/// (URL, verb).
pub fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                if rule.resource_names.is_empty() {
                    out.push(PolicyRule {
                        api_groups: vec![group.clone()],
                        resources: vec![resource.clone()],
                        verbs: vec![verb.clone()],
                        ..Default::default()
                    });
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            api_groups: vec![group.clone()],
                            resources: vec![resource.clone()],
                            verbs: vec![verb.clone()],
                            resource_names: vec![name.clone()],
                            ..Default::default()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: vec![url.clone()],
                verbs: vec![verb.clone()],
                ..Default::default()
            });
        }
    }
    out
}

fn resource_covers_all(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        if has(owner, path) {
            return true;
        }
        match path.split_once('/') {
            Some((_, sub)) => has(owner, &format!("*/{sub}")),
            None => false,
        }
    })
}

fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    owner == sub || (owner.ends_with('*') && sub.starts_with(owner.trim_end_matches('*')))
}

fn non_resource_urls_cover_all(owner: &[String], wanted: &[String]) -> bool {
    wanted
        .iter()
        .all(|w| owner.iter().any(|o| non_resource_url_covers(o, w)))
}

/// kube's `ruleCovers`: does `owner` grant everything the (simple) rule `sub` does?
pub fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resource_covers_all(&owner.resources, &sub.resources);
    let urls = non_resource_urls_cover_all(&owner.non_resource_urls, &sub.non_resource_urls);
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && urls && names
}

/// kube's `Covers`: whether `owner` rules grant all of `wanted`, and the simple rules that
/// are missing.
pub fn covers(owner: &[PolicyRule], wanted: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let mut missing = Vec::new();
    for w in wanted {
        for simple in breakdown(w) {
            if !owner.iter().any(|o| rule_covers(o, &simple)) {
                missing.push(simple);
            }
        }
    }
    (missing.is_empty(), missing)
}

/// kube's `CompactRules`: simple rules on the same group and resource (and at most one name)
/// are merged into one rule with all their verbs.
pub fn compact(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    // (group, resource, name) → the merged rule, in first-seen order.
    type Key = (String, String, Option<String>);
    let mut simple: Vec<(Key, PolicyRule)> = Vec::new();
    for r in rules {
        let is_simple = r.resource_names.len() <= 1
            && r.non_resource_urls.is_empty()
            && r.api_groups.len() == 1
            && r.resources.len() == 1;
        if !is_simple {
            out.push(r.clone());
            continue;
        }
        let key = (
            r.api_groups[0].clone(),
            r.resources[0].clone(),
            r.resource_names.first().cloned(),
        );
        match simple.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => existing.verbs.extend(r.verbs.iter().cloned()),
            None => simple.push((key, r.clone())),
        }
    }
    out.extend(simple.into_iter().map(|(_, r)| r));
    out
}

/// The message lines of missing rules, sorted and de-duplicated as kube's string set lists
/// them.
pub fn describe_missing(missing: &[PolicyRule]) -> Vec<String> {
    compact(missing)
        .iter()
        .map(PolicyRule::compact_string)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: vec![],
        }
    }

    fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            non_resource_urls: urls.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    #[allow(clippy::type_complexity)]
    fn resource_matching() {
        // rule, (verb, group, resource, subresource, name), allowed
        let cases: &[(PolicyRule, (&str, &str, &str, &str, &str), bool)] = &[
            (
                rule(&["get"], &[""], &["pods"], &[]),
                ("get", "", "pods", "", "p"),
                true,
            ),
            (
                rule(&["get"], &[""], &["pods"], &[]),
                ("list", "", "pods", "", ""),
                false,
            ),
            (
                rule(&["*"], &[""], &["pods"], &[]),
                ("delete", "", "pods", "", "p"),
                true,
            ),
            (
                rule(&["get"], &["*"], &["pods"], &[]),
                ("get", "apps", "pods", "", ""),
                true,
            ),
            (
                rule(&["get"], &["apps"], &["pods"], &[]),
                ("get", "", "pods", "", ""),
                false,
            ),
            // A rule on the resource does not grant its subresources, and vice versa.
            (
                rule(&["get"], &[""], &["pods"], &[]),
                ("get", "", "pods", "log", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["pods/log"], &[]),
                ("get", "", "pods", "log", "p"),
                true,
            ),
            (
                rule(&["get"], &[""], &["pods/log"], &[]),
                ("get", "", "pods", "", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["*/log"], &[]),
                ("get", "", "pods", "log", "p"),
                true,
            ),
            (
                rule(&["get"], &[""], &["*/log"], &[]),
                ("get", "", "pods", "status", "p"),
                false,
            ),
            (
                rule(&["get"], &[""], &["*"], &[]),
                ("get", "", "pods", "exec", "p"),
                true,
            ),
            (
                rule(
                    &["*"],
                    &["cluster.karmada.io"],
                    &["clusters/proxy"],
                    &["member1"],
                ),
                ("get", "cluster.karmada.io", "clusters", "proxy", "member1"),
                true,
            ),
            (
                rule(
                    &["*"],
                    &["cluster.karmada.io"],
                    &["clusters/proxy"],
                    &["member1"],
                ),
                ("get", "cluster.karmada.io", "clusters", "proxy", "member2"),
                false,
            ),
            // Names restrict: a request without a name is never allowed by a named rule.
            (
                rule(&["list"], &[""], &["configmaps"], &["c1"]),
                ("list", "", "configmaps", "", ""),
                false,
            ),
            (
                rule(&["list"], &[""], &["configmaps"], &["c1"]),
                ("list", "", "configmaps", "", "c1"),
                true,
            ),
            (
                rule(&["get"], &[""], &[], &[]),
                ("get", "", "pods", "", ""),
                false,
            ),
        ];
        for (r, (verb, group, res, sub, name), want) in cases {
            let combined = if sub.is_empty() {
                res.to_string()
            } else {
                format!("{res}/{sub}")
            };
            assert_eq!(
                r.allows_resource(verb, group, &combined, sub, name),
                *want,
                "{r:?} {verb} {group} {combined} {name}"
            );
        }
    }

    #[test]
    fn url_matching() {
        let cases: &[(PolicyRule, &str, &str, bool)] = &[
            (urls(&["get"], &["/healthz"]), "get", "/healthz", true),
            (urls(&["get"], &["/healthz"]), "get", "/healthz/etcd", false),
            (
                urls(&["get"], &["/healthz/*"]),
                "get",
                "/healthz/etcd",
                true,
            ),
            (urls(&["get"], &["/apis/*"]), "get", "/apis", false),
            (urls(&["get"], &["/apis", "/apis/*"]), "get", "/apis", true),
            (urls(&["get"], &["*"]), "get", "/anything", true),
            (urls(&["get"], &["/version"]), "post", "/version", false),
            (rule(&["*"], &["*"], &["*"], &[]), "get", "/healthz", false),
        ];
        for (r, verb, path, want) in cases {
            assert_eq!(
                r.allows_non_resource(verb, path),
                *want,
                "{r:?} {verb} {path}"
            );
        }
    }

    #[test]
    fn covering() {
        let admin = rule(&["*"], &["*"], &["*"], &[]);
        let view = rule(
            &["get", "list", "watch"],
            &[""],
            &["pods", "configmaps"],
            &[],
        );
        let cases: &[(Vec<PolicyRule>, PolicyRule, bool)] = &[
            (vec![admin.clone()], view.clone(), true),
            (
                vec![view.clone()],
                rule(&["get"], &[""], &["pods"], &[]),
                true,
            ),
            (
                vec![view.clone()],
                rule(&["delete"], &[""], &["pods"], &[]),
                false,
            ),
            (
                vec![view.clone()],
                rule(&["get"], &[""], &["secrets"], &[]),
                false,
            ),
            // A named grant covers only those names; a name-less grant covers all.
            (
                vec![rule(&["get"], &[""], &["pods"], &["a"])],
                rule(&["get"], &[""], &["pods"], &[]),
                false,
            ),
            (
                vec![rule(&["get"], &[""], &["pods"], &["a", "b"])],
                rule(&["get"], &[""], &["pods"], &["a"]),
                true,
            ),
            (
                vec![view.clone()],
                rule(&["get"], &[""], &["pods"], &["a"]),
                true,
            ),
            // `*/status` covers the status of anything.
            (
                vec![rule(&["get"], &[""], &["*/status"], &[])],
                rule(&["get"], &[""], &["pods/status"], &[]),
                true,
            ),
            (
                vec![rule(&["get"], &[""], &["pods"], &[])],
                rule(&["get"], &[""], &["pods/status"], &[]),
                false,
            ),
            // Verb `*` is only covered by `*`.
            (
                vec![view.clone()],
                rule(&["*"], &[""], &["pods"], &[]),
                false,
            ),
            (vec![admin.clone()], urls(&["get"], &["/healthz"]), false),
            (
                vec![urls(&["get"], &["/health*"])],
                urls(&["get"], &["/healthz"]),
                true,
            ),
            (
                vec![urls(&["*"], &["*"])],
                urls(&["get"], &["/metrics"]),
                true,
            ),
        ];
        for (owner, wanted, want) in cases {
            let (ok, missing) = covers(owner, std::slice::from_ref(wanted));
            assert_eq!(ok, *want, "{owner:?} covers {wanted:?}");
            assert_eq!(missing.is_empty(), *want);
        }
    }

    #[test]
    fn missing_descriptions() {
        let owner = vec![rule(&["get"], &[""], &["pods"], &[])];
        let wanted = vec![
            rule(&["get", "list"], &[""], &["pods", "secrets"], &[]),
            urls(&["get"], &["/metrics"]),
        ];
        let (ok, missing) = covers(&owner, &wanted);
        assert!(!ok);
        assert_eq!(
            describe_missing(&missing),
            vec![
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["list"]}"#,
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}"#,
                r#"{NonResourceURLs:["/metrics"], Verbs:["get"]}"#,
            ]
        );
    }

    #[test]
    fn serde_shape() {
        let r: PolicyRule = serde_json::from_value(serde_json::json!({
            "verbs": ["get"], "nonResourceURLs": ["/healthz"]
        }))
        .unwrap();
        assert_eq!(r, urls(&["get"], &["/healthz"]));
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"verbs": ["get"], "nonResourceURLs": ["/healthz"]})
        );
    }
}
