//! The RBAC index: every binding resolved to its role's rules and filed under each of its
//! subjects, split by scope (cluster-wide, or per namespace). A decision looks up the user and
//! each of its groups and checks only the rules granted to them in the request's scope,
//! instead of scanning every binding as kube's `DefaultRuleResolver.VisitRulesFor` does. The
//! index is rebuilt from the watch caches when an RBAC object changes and swapped in whole.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::rule::PolicyRule;
use crate::auth::attributes::Attributes;
use crate::auth::{SERVICE_ACCOUNT_PREFIX, UserInfo};

/// A role's rules, or why the binding's role reference does not resolve.
type Resolved = Result<Arc<[PolicyRule]>, Arc<str>>;

/// One binding's grant to one subject.
#[derive(Clone, Debug)]
struct Grant {
    /// Identifies the binding (a user matched through several subjects of one binding is
    /// granted its rules once).
    binding: u32,
    rules: Resolved,
    /// kube's describer: `ClusterRoleBinding "b" of ClusterRole "r" to Group "g"`.
    source: Arc<str>,
}

/// The grants of one subject.
#[derive(Clone, Debug, Default)]
struct Grants {
    cluster: Vec<Grant>,
    namespaced: HashMap<String, Vec<Grant>>,
}

/// The result of an authorization check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Allowed?
    pub allowed: bool,
    /// kube's reason: `RBAC: allowed by ...`, or the role resolution errors of a denial.
    pub reason: String,
}

impl Decision {
    /// An allow with a reason.
    pub fn allow(reason: impl Into<String>) -> Decision {
        Decision {
            allowed: true,
            reason: reason.into(),
        }
    }
}

/// The rules that apply to a user in a namespace (kube's `RulesFor`).
#[derive(Clone, Debug, Default)]
pub struct RulesFor {
    /// The rules.
    pub rules: Vec<PolicyRule>,
    /// Role references that did not resolve (the list may be incomplete).
    pub errors: Vec<String>,
}

/// The indexed RBAC policy.
#[derive(Debug, Default)]
pub struct Index {
    users: HashMap<String, Grants>,
    groups: HashMap<String, Grants>,
    roles: HashMap<(String, String), Arc<[PolicyRule]>>,
    cluster_roles: HashMap<String, Arc<[PolicyRule]>>,
    bindings: usize,
}

fn s<'a>(v: &'a Value, path: &str) -> &'a str {
    v.pointer(path).and_then(Value::as_str).unwrap_or("")
}

/// The rules of a Role or ClusterRole object (malformed entries are skipped: validation
/// keeps them out of storage).
pub fn parse_rules(role: &Value) -> Vec<PolicyRule> {
    role.get("rules")
        .and_then(Value::as_array)
        .map(|rules| {
            rules
                .iter()
                .filter_map(|r| serde_json::from_value(r.clone()).ok())
                .collect()
        })
        .unwrap_or_default()
}

/// kube's NotFound message for a missing role.
fn not_found(kind: &str, name: &str) -> Arc<str> {
    let resource = if kind == "Role" {
        "role"
    } else {
        "clusterrole"
    };
    format!("{resource}.rbac.authorization.k8s.io {name:?} not found").into()
}

fn describe_subject(kind: &str, name: &str, ns: &str, binding_ns: &str) -> String {
    if kind == "ServiceAccount" {
        let ns = if ns.is_empty() { binding_ns } else { ns };
        format!("{kind} {:?}", format!("{name}/{ns}"))
    } else {
        format!("{kind} {name:?}")
    }
}

impl Index {
    /// Builds the index from the four kinds of RBAC objects (as served JSON).
    pub fn build(
        roles: &[Value],
        cluster_roles: &[Value],
        role_bindings: &[Value],
        cluster_role_bindings: &[Value],
    ) -> Index {
        let mut idx = Index::default();
        for r in roles {
            idx.roles.insert(
                (
                    s(r, "/metadata/namespace").into(),
                    s(r, "/metadata/name").into(),
                ),
                parse_rules(r).into(),
            );
        }
        for r in cluster_roles {
            idx.cluster_roles
                .insert(s(r, "/metadata/name").into(), parse_rules(r).into());
        }
        let mut id: u32 = 0;
        for b in cluster_role_bindings {
            id += 1;
            idx.add_binding(id, b, "");
        }
        for b in role_bindings {
            id += 1;
            let ns = s(b, "/metadata/namespace").to_string();
            if !ns.is_empty() {
                idx.add_binding(id, b, &ns);
            }
        }
        idx.bindings = id as usize;
        idx
    }

    /// The rules a role reference resolves to (kube's `GetRoleReferenceRules`); `namespace`
    /// is the binding's (`""` for a ClusterRoleBinding).
    pub fn role_rules(&self, kind: &str, name: &str, namespace: &str) -> Resolved {
        match kind {
            "Role" => self
                .roles
                .get(&(namespace.to_string(), name.to_string()))
                .cloned()
                .ok_or_else(|| not_found("Role", name)),
            "ClusterRole" => self
                .cluster_roles
                .get(name)
                .cloned()
                .ok_or_else(|| not_found("ClusterRole", name)),
            other => Err(format!("unsupported role reference kind: {other:?}").into()),
        }
    }

    fn add_binding(&mut self, id: u32, b: &Value, ns: &str) {
        let (ref_kind, ref_name) = (s(b, "/roleRef/kind"), s(b, "/roleRef/name"));
        let rules = self.role_rules(ref_kind, ref_name, ns);
        let binding_kind = if ns.is_empty() {
            "ClusterRoleBinding"
        } else {
            "RoleBinding"
        };
        let binding_name = if ns.is_empty() {
            s(b, "/metadata/name").to_string()
        } else {
            format!("{}/{ns}", s(b, "/metadata/name"))
        };
        let Some(subjects) = b.get("subjects").and_then(Value::as_array) else {
            return;
        };
        for subj in subjects {
            let (kind, name, subj_ns) = (s(subj, "/kind"), s(subj, "/name"), s(subj, "/namespace"));
            let (map, key) = match kind {
                "User" => (&mut self.users, name.to_string()),
                "Group" => (&mut self.groups, name.to_string()),
                "ServiceAccount" => {
                    let sa_ns = if subj_ns.is_empty() { ns } else { subj_ns };
                    if sa_ns.is_empty() || name.is_empty() {
                        continue;
                    }
                    (
                        &mut self.users,
                        format!("{SERVICE_ACCOUNT_PREFIX}{sa_ns}:{name}"),
                    )
                }
                _ => continue,
            };
            let grant = Grant {
                binding: id,
                rules: rules.clone(),
                source: format!(
                    "{binding_kind} {binding_name:?} of {ref_kind} {ref_name:?} to {}",
                    describe_subject(kind, name, subj_ns, ns)
                )
                .into(),
            };
            let grants = map.entry(key).or_default();
            if ns.is_empty() {
                grants.cluster.push(grant);
            } else {
                grants
                    .namespaced
                    .entry(ns.to_string())
                    .or_default()
                    .push(grant);
            }
        }
    }

    /// The number of bindings indexed.
    pub fn bindings(&self) -> usize {
        self.bindings
    }

    /// The grant lists that apply to `user` in `namespace`, cluster-wide first (kube visits
    /// ClusterRoleBindings before RoleBindings).
    fn applicable<'s>(&'s self, user: &UserInfo, namespace: &str) -> Vec<&'s [Grant]> {
        let mut subjects: Vec<&Grants> = Vec::with_capacity(user.groups.len() + 1);
        if let Some(g) = self.users.get(&user.name) {
            subjects.push(g);
        }
        for group in &user.groups {
            if let Some(g) = self.groups.get(group) {
                subjects.push(g);
            }
        }
        let mut lists: Vec<&[Grant]> = subjects.iter().map(|g| g.cluster.as_slice()).collect();
        if !namespace.is_empty() {
            lists.extend(
                subjects
                    .iter()
                    .filter_map(|g| g.namespaced.get(namespace).map(Vec::as_slice)),
            );
        }
        lists
    }

    /// kube's `RBACAuthorizer.Authorize`.
    pub fn authorize(&self, a: &Attributes) -> Decision {
        let combined;
        let resource: &str = if a.subresource.is_empty() {
            a.resource
        } else {
            combined = format!("{}/{}", a.resource, a.subresource);
            &combined
        };
        let mut errors: Vec<&str> = Vec::new();
        for list in self.applicable(a.user, a.namespace) {
            for grant in list {
                let rules = match &grant.rules {
                    Ok(r) => r,
                    Err(e) => {
                        if !errors.contains(&&**e) {
                            errors.push(e);
                        }
                        continue;
                    }
                };
                let allowed = rules.iter().any(|r| {
                    if a.resource_request {
                        r.allows_resource(a.verb, a.api_group, resource, a.subresource, a.name)
                    } else {
                        r.allows_non_resource(a.verb, a.path)
                    }
                });
                if allowed {
                    return Decision::allow(format!("RBAC: allowed by {}", grant.source));
                }
            }
        }
        let reason = match errors.as_slice() {
            [] => String::new(),
            [one] => format!("RBAC: {one}"),
            many => format!("RBAC: [{}]", many.join(", ")),
        };
        Decision {
            allowed: false,
            reason,
        }
    }

    /// kube's `RulesFor`: every rule granted to `user` in `namespace` (cluster-wide grants
    /// included).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> RulesFor {
        let mut out = RulesFor::default();
        let mut seen: Vec<u32> = Vec::new();
        for list in self.applicable(user, namespace) {
            for grant in list {
                if seen.contains(&grant.binding) {
                    continue;
                }
                seen.push(grant.binding);
                match &grant.rules {
                    Ok(r) => out.rules.extend(r.iter().cloned()),
                    Err(e) => out.errors.push(e.to_string()),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster_role(name: &str, rules: Value) -> Value {
        json!({"metadata": {"name": name}, "rules": rules})
    }

    fn binding(name: &str, ns: Option<&str>, kind: &str, role: &str, subjects: Value) -> Value {
        let mut meta = json!({"name": name});
        if let Some(ns) = ns {
            meta["namespace"] = ns.into();
        }
        json!({"metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role}, "subjects": subjects})
    }

    fn index() -> Index {
        Index::build(
            &[
                json!({"metadata": {"name": "cm-reader", "namespace": "team"}, "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]}),
            ],
            &[
                cluster_role(
                    "view",
                    json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]}]),
                ),
                cluster_role(
                    "discovery",
                    json!([{"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*"]}]),
                ),
                cluster_role(
                    "proxy-m1",
                    json!([{"verbs": ["*"], "apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "resourceNames": ["member1"]}]),
                ),
            ],
            &[
                binding(
                    "viewers",
                    Some("team"),
                    "ClusterRole",
                    "view",
                    json!([{"kind": "User", "name": "alice"}]),
                ),
                binding(
                    "reader",
                    Some("team"),
                    "Role",
                    "cm-reader",
                    json!([{"kind": "ServiceAccount", "name": "robot"}]),
                ),
                binding(
                    "dangling",
                    Some("team"),
                    "Role",
                    "gone",
                    json!([{"kind": "User", "name": "dave"}]),
                ),
            ],
            &[
                binding(
                    "discovery",
                    None,
                    "ClusterRole",
                    "discovery",
                    json!([{"kind": "Group", "name": "system:authenticated"}]),
                ),
                binding(
                    "proxy",
                    None,
                    "ClusterRole",
                    "proxy-m1",
                    json!([{"kind": "User", "name": "prox"}, {"kind": "ServiceAccount", "name": "nons"}]),
                ),
            ],
        )
    }

    #[test]
    fn decisions() {
        let idx = index();
        let alice = UserInfo::new("alice", vec![]);
        let robot = UserInfo::new("system:serviceaccount:team:robot", vec![]);
        let prox = UserInfo::new("prox", vec![]);
        let dave = UserInfo::new("dave", vec![]);
        let r = |u, verb, group, res, sub, ns, name| {
            idx.authorize(&Attributes::resource(u, verb, group, res, sub, ns, name))
        };
        let d = r(&alice, "list", "", "pods", "", "team", "");
        assert!(d.allowed);
        assert_eq!(
            d.reason,
            r#"RBAC: allowed by RoleBinding "viewers/team" of ClusterRole "view" to User "alice""#
        );
        assert!(!r(&alice, "list", "", "pods", "", "other", "").allowed);
        assert!(
            !r(&alice, "list", "", "pods", "", "", "").allowed,
            "not cluster-wide"
        );
        assert!(!r(&alice, "delete", "", "pods", "", "team", "p").allowed);
        let d = r(&robot, "get", "", "configmaps", "", "team", "c");
        assert_eq!(
            d.reason,
            r#"RBAC: allowed by RoleBinding "reader/team" of Role "cm-reader" to ServiceAccount "robot/team""#
        );
        assert!(
            r(
                &prox,
                "get",
                "cluster.karmada.io",
                "clusters",
                "proxy",
                "",
                "member1"
            )
            .allowed
        );
        assert!(
            !r(
                &prox,
                "get",
                "cluster.karmada.io",
                "clusters",
                "proxy",
                "",
                "member2"
            )
            .allowed
        );
        assert!(
            !r(
                &prox,
                "get",
                "cluster.karmada.io",
                "clusters",
                "",
                "",
                "member1"
            )
            .allowed
        );
        let d = r(&dave, "get", "", "pods", "", "team", "p");
        assert!(!d.allowed);
        assert_eq!(
            d.reason,
            r#"RBAC: role.rbac.authorization.k8s.io "gone" not found"#
        );
        // Non-resource: through the group binding.
        let nr = |u, path| idx.authorize(&Attributes::non_resource(u, "get", path));
        assert!(nr(&alice, "/api/v1").allowed);
        assert!(!nr(&alice, "/metrics").allowed);
        assert!(!nr(&UserInfo::anonymous(), "/api").allowed);
        // A ServiceAccount subject without namespace in a ClusterRoleBinding matches nobody.
        let nons = UserInfo::new("system:serviceaccount::nons", vec![]);
        assert!(
            !r(
                &nons,
                "get",
                "cluster.karmada.io",
                "clusters",
                "proxy",
                "",
                "member1"
            )
            .allowed
        );
    }

    #[test]
    fn rules_for_lists_cluster_and_namespace_grants() {
        let idx = index();
        let alice = UserInfo::new("alice", vec![]);
        let team = idx.rules_for(&alice, "team");
        assert_eq!(team.rules.len(), 2, "{team:?}");
        assert!(team.errors.is_empty());
        assert_eq!(idx.rules_for(&alice, "other").rules.len(), 1);
        let dave = idx.rules_for(&UserInfo::new("dave", vec![]), "team");
        assert_eq!(dave.errors.len(), 1);
        assert_eq!(idx.bindings(), 5);
    }
}
