//! Which subjects may use the cluster proxy for a cluster, and the impersonation rules and
//! objects pushed to it (Karmada's `findRBACSubjectsWithCluster`,
//! `util.GenerateImpersonationRules`, `buildImpersonationClusterRole` and
//! `buildImpersonationClusterRoleBinding`).

use std::collections::BTreeSet;

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Subject};
use serde_json::{Value, json};

/// Name of the ClusterRole and ClusterRoleBinding pushed to members.
pub const KARMADA_IMPERSONATOR: &str = "karmada-impersonator";
/// The impersonator ServiceAccount on members (`GenerateServiceAccountName("impersonator")`).
pub const IMPERSONATOR_SERVICE_ACCOUNT: &str = "karmada-impersonator";
const CLUSTER_API_GROUP: &str = "cluster.karmada.io";
const CLUSTER_PROXY_RESOURCE: &str = "clusters/proxy";
const SEARCH_API_GROUP: &str = "search.karmada.io";
const PROXYING_PROXY_RESOURCE: &str = "proxying/proxy";

fn group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups
        .as_ref()
        .is_some_and(|gs| gs.iter().any(|g| g == "*" || g == group))
}

fn resource_matches(rule: &PolicyRule, resource: &str) -> bool {
    rule.resources
        .as_ref()
        .is_some_and(|rs| rs.iter().any(|r| r == "*" || r == resource))
}

fn name_matches(rule: &PolicyRule, name: &str) -> bool {
    match &rule.resource_names {
        None => true,
        Some(ns) if ns.is_empty() => true,
        Some(ns) => ns.iter().any(|n| n == name),
    }
}

/// True when a rule grants the cluster proxy of `cluster` (or Karmada's search proxy, which
/// reaches every cluster).
pub fn grants_proxy(rule: &PolicyRule, cluster: &str) -> bool {
    (group_matches(rule, CLUSTER_API_GROUP)
        && resource_matches(rule, CLUSTER_PROXY_RESOURCE)
        && name_matches(rule, cluster))
        || (group_matches(rule, SEARCH_API_GROUP)
            && resource_matches(rule, PROXYING_PROXY_RESOURCE))
}

/// The subjects bound (by ClusterRoleBindings) to ClusterRoles granting `cluster`'s proxy.
pub fn subjects_for_cluster(
    roles: &[ClusterRole],
    bindings: &[ClusterRoleBinding],
    cluster: &str,
) -> Vec<Subject> {
    let matched: BTreeSet<&str> = roles
        .iter()
        .filter(|r| {
            r.rules
                .iter()
                .flatten()
                .any(|rule| grants_proxy(rule, cluster))
        })
        .filter_map(|r| r.metadata.name.as_deref())
        .collect();
    if matched.is_empty() {
        return vec![];
    }
    bindings
        .iter()
        .filter(|b| b.role_ref.kind == "ClusterRole" && matched.contains(b.role_ref.name.as_str()))
        .flat_map(|b| b.subjects.iter().flatten().cloned())
        .collect()
}

/// `impersonate` rules for the subjects: users, service accounts and groups, each sorted and
/// deduplicated, in that order.
pub fn impersonation_rules(subjects: &[Subject]) -> Vec<PolicyRule> {
    let mut users = BTreeSet::new();
    let mut service_accounts = BTreeSet::new();
    let mut groups = BTreeSet::new();
    for s in subjects {
        match s.kind.as_str() {
            "User" => users.insert(s.name.clone()),
            "ServiceAccount" => service_accounts.insert(s.name.clone()),
            "Group" => groups.insert(s.name.clone()),
            _ => false,
        };
    }
    let rule = |resource: &str, names: BTreeSet<String>| PolicyRule {
        verbs: vec!["impersonate".into()],
        api_groups: Some(vec![String::new()]),
        resources: Some(vec![resource.into()]),
        resource_names: Some(names.into_iter().collect()),
        non_resource_urls: None,
    };
    let mut rules = Vec::new();
    if !users.is_empty() {
        rules.push(rule("users", users));
    }
    if !service_accounts.is_empty() {
        rules.push(rule("serviceaccounts", service_accounts));
    }
    if !groups.is_empty() {
        rules.push(rule("groups", groups));
    }
    rules
}

/// The `karmada-impersonator` ClusterRole for a member.
pub fn impersonator_cluster_role(rules: &[PolicyRule]) -> Value {
    let rules = serde_json::to_value(rules).unwrap_or_else(|_| json!([]));
    let mut role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {
            "name": KARMADA_IMPERSONATOR,
            "labels": {karmada_api::well_known::labels::KARMADA_SYSTEM: "true"},
        },
    });
    if rules.as_array().is_some_and(|r| !r.is_empty()) {
        role["rules"] = rules;
    }
    role
}

/// The `karmada-impersonator` ClusterRoleBinding for a member: the impersonator
/// ServiceAccount in `namespace` (the impersonator secret's namespace).
pub fn impersonator_cluster_role_binding(namespace: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": KARMADA_IMPERSONATOR,
            "labels": {karmada_api::well_known::labels::KARMADA_SYSTEM: "true"},
        },
        "subjects": [{
            "kind": "ServiceAccount",
            "namespace": namespace,
            "name": IMPERSONATOR_SERVICE_ACCOUNT,
        }],
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": KARMADA_IMPERSONATOR,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::rbac::v1::RoleRef;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn rule(groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        PolicyRule {
            api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
            resources: Some(resources.iter().map(|s| s.to_string()).collect()),
            resource_names: (!names.is_empty())
                .then(|| names.iter().map(|s| s.to_string()).collect()),
            verbs: vec!["*".into()],
            non_resource_urls: None,
        }
    }

    fn role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            rules: Some(rules),
            ..Default::default()
        }
    }

    fn binding(role: &str, kind: &str, subjects: &[(&str, &str)]) -> ClusterRoleBinding {
        ClusterRoleBinding {
            metadata: ObjectMeta::default(),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: kind.into(),
                name: role.into(),
            },
            subjects: Some(
                subjects
                    .iter()
                    .map(|(k, n)| Subject {
                        kind: k.to_string(),
                        name: n.to_string(),
                        namespace: (*k == "ServiceAccount").then(|| "ns".to_string()),
                        api_group: None,
                    })
                    .collect(),
            ),
        }
    }

    #[test]
    fn rules_granting_the_proxy() {
        let cases: &[(PolicyRule, &str, bool)] = &[
            (
                rule(&["cluster.karmada.io"], &["clusters/proxy"], &[]),
                "m1",
                true,
            ),
            (
                rule(&["cluster.karmada.io"], &["clusters/proxy"], &["m1"]),
                "m1",
                true,
            ),
            (
                rule(&["cluster.karmada.io"], &["clusters/proxy"], &["m2"]),
                "m1",
                false,
            ),
            (rule(&["*"], &["*"], &[]), "m1", true),
            (
                rule(&["cluster.karmada.io"], &["clusters"], &[]),
                "m1",
                false,
            ),
            (
                rule(&["cluster.karmada.io"], &["clusters/status"], &[]),
                "m1",
                false,
            ),
            (
                rule(&["search.karmada.io"], &["proxying/proxy"], &["m2"]),
                "m1",
                true,
            ),
            (rule(&["apps"], &["clusters/proxy"], &[]), "m1", false),
        ];
        for (r, cluster, want) in cases {
            assert_eq!(grants_proxy(r, cluster), *want, "{r:?} {cluster}");
        }
    }

    #[test]
    fn subjects_and_impersonation_rules() {
        let roles = vec![
            role(
                "proxy-m1",
                vec![rule(&["cluster.karmada.io"], &["clusters/proxy"], &["m1"])],
            ),
            role(
                "proxy-all",
                vec![rule(&["cluster.karmada.io"], &["clusters/proxy"], &[])],
            ),
            role("view", vec![rule(&[""], &["pods"], &[])]),
        ];
        let bindings = vec![
            binding(
                "proxy-m1",
                "ClusterRole",
                &[("User", "alice"), ("Group", "ops")],
            ),
            binding(
                "proxy-all",
                "ClusterRole",
                &[
                    ("User", "bob"),
                    ("ServiceAccount", "robot"),
                    ("User", "alice"),
                ],
            ),
            binding("view", "ClusterRole", &[("User", "carol")]),
            binding("proxy-m1", "Role", &[("User", "dave")]),
        ];
        let m1 = subjects_for_cluster(&roles, &bindings, "m1");
        let rules = impersonation_rules(&m1);
        let summary: Vec<(String, Vec<String>)> = rules
            .iter()
            .map(|r| {
                (
                    r.resources.clone().unwrap()[0].clone(),
                    r.resource_names.clone().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            vec![
                (
                    "users".to_string(),
                    vec!["alice".to_string(), "bob".to_string()]
                ),
                ("serviceaccounts".to_string(), vec!["robot".to_string()]),
                ("groups".to_string(), vec!["ops".to_string()]),
            ]
        );
        assert!(
            rules.iter().all(
                |r| r.verbs == vec!["impersonate"] && r.api_groups == Some(vec![String::new()])
            )
        );
        let m2 = subjects_for_cluster(&roles, &bindings, "m2");
        let names: Vec<&str> = m2.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, vec!["bob", "robot", "alice"]);
        assert!(impersonation_rules(&[]).is_empty());
        assert!(subjects_for_cluster(&roles[2..], &bindings, "m1").is_empty());
    }

    #[test]
    fn objects() {
        let role = impersonator_cluster_role(&impersonation_rules(&[Subject {
            kind: "User".into(),
            name: "alice".into(),
            ..Default::default()
        }]));
        assert_eq!(role["metadata"]["name"], "karmada-impersonator");
        assert_eq!(role["metadata"]["labels"]["karmada.io/system"], "true");
        assert_eq!(role["rules"][0]["resourceNames"], json!(["alice"]));
        assert!(impersonator_cluster_role(&[]).get("rules").is_none());
        let b = impersonator_cluster_role_binding("karmada-cluster");
        assert_eq!(b["subjects"][0]["namespace"], "karmada-cluster");
        assert_eq!(b["subjects"][0]["name"], "karmada-impersonator");
        assert_eq!(b["roleRef"]["name"], "karmada-impersonator");
    }
}
