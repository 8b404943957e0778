//! Privilege-escalation prevention, as kube's policy-based RBAC storage
//! (pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased and
//! pkg/registry/rbac/escalation_check.go): a Role or ClusterRole may be written only by a user
//! who holds every permission it grants (or may `escalate` it), a binding only by a user who
//! holds every permission of the referenced role (or may `bind` it). `system:masters` is
//! exempt, and so is the server's own work (no request identity).

use serde_json::{Value, json};

use super::RBAC_GROUP;
use super::index::parse_rules;
use super::rule::{self, PolicyRule};
use crate::auth::attributes::{Attributes, forbidden_error};
use crate::auth::{Authorizer, UserInfo, current_user};
use crate::error::ApiError;
use crate::object;
use crate::resources::ResourceDef;
use crate::state::WriteCheck;

/// What creating an aggregated ClusterRole requires: every permission (its rules are filled
/// in by the aggregation controller from other roles).
fn full_authority() -> Vec<PolicyRule> {
    vec![
        PolicyRule {
            verbs: vec!["*".into()],
            api_groups: vec!["*".into()],
            resources: vec!["*".into()],
            ..Default::default()
        },
        PolicyRule {
            verbs: vec!["*".into()],
            non_resource_urls: vec!["*".into()],
            ..Default::default()
        },
    ]
}

/// The object without the fields the garbage collector changes and the server owns.
fn without_gc_fields(v: &Value) -> Value {
    let mut v = v.clone();
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "ownerReferences",
            "finalizers",
            "resourceVersion",
            "managedFields",
            "generation",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "selfLink",
        ] {
            m.remove(f);
        }
    }
    v
}

/// kube's `IsOnlyMutatingGCFields`.
fn only_gc_fields_changed(obj: &Value, old: &Value) -> bool {
    without_gc_fields(obj) == without_gc_fields(old)
}

/// kube's `ConfirmNoEscalation`: the user's rules in `namespace` must cover `rules`.
pub fn confirm_no_escalation(
    authz: &Authorizer,
    user: &UserInfo,
    namespace: &str,
    rules: &[PolicyRule],
) -> Result<(), String> {
    let owner = authz.rules_for(user, namespace);
    let (covered, missing) = rule::covers(&owner.rules, rules);
    if covered {
        return Ok(());
    }
    let groups: Vec<String> = user.groups.iter().map(|g| rule::go_quote(g)).collect();
    let mut msg = format!(
        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        groups.join(" "),
        rule::describe_missing(&missing).join("\n")
    );
    if !owner.errors.is_empty() {
        msg.push_str(&format!(
            "; resolution errors: [{}]",
            owner.errors.join(", ")
        ));
    }
    Err(msg)
}

/// The escalation check over an authorizer, handed to the registry's state at launch (as
/// kube's policy-based RBAC storage is built with the authorizer).
pub struct EscalationCheck(pub std::sync::Arc<Authorizer>);

impl WriteCheck for EscalationCheck {
    fn check(&self, def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Result<(), ApiError> {
        check(&self.0, def, obj, old)
    }
}

/// Refuses a create or update of an RBAC object that would grant the requesting user more
/// than it holds. Called by admission before the object is defaulted and validated, where
/// kube's policy-based storage runs.
pub fn check(
    authz: &Authorizer,
    def: &ResourceDef,
    obj: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    if def.group != RBAC_GROUP {
        return Ok(());
    }
    let Some(user) = current_user() else {
        return Ok(());
    };
    // kube's EscalationAllowed.
    if user.is_master() {
        return Ok(());
    }
    if let Some(old) = old
        && only_gc_fields_changed(obj, old)
    {
        return Ok(());
    }
    let ns = if def.namespaced {
        object::namespace(obj)
    } else {
        ""
    };
    let name = object::name(obj);
    let forbidden = |msg: &str| forbidden_error(RBAC_GROUP, &def.plural, name, msg);
    match def.kind.as_str() {
        "Role" | "ClusterRole" => {
            let escalate =
                Attributes::resource(&user, "escalate", RBAC_GROUP, &def.plural, "", ns, name);
            if authz.authorize(&escalate).allowed {
                return Ok(());
            }
            let rules = if def.kind == "ClusterRole"
                && obj.get("aggregationRule").is_some_and(|a| !a.is_null())
            {
                full_authority()
            } else {
                parse_rules(obj)
            };
            confirm_no_escalation(authz, &user, ns, &rules).map_err(|m| forbidden(&m))
        }
        "RoleBinding" | "ClusterRoleBinding" => {
            let role_ref = obj.get("roleRef").cloned().unwrap_or(json!({}));
            let kind = role_ref.get("kind").and_then(Value::as_str).unwrap_or("");
            let role = role_ref.get("name").and_then(Value::as_str).unwrap_or("");
            let resource = if kind == "ClusterRole" {
                "clusterroles"
            } else {
                "roles"
            };
            let bind = Attributes::resource(&user, "bind", RBAC_GROUP, resource, "", ns, role);
            if authz.authorize(&bind).allowed {
                return Ok(());
            }
            let rules = authz
                .index()
                .role_rules(kind, role, ns)
                .map_err(|e| forbidden(&e))?;
            confirm_no_escalation(authz, &user, ns, &rules).map_err(|m| forbidden(&m))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::Index;

    #[test]
    fn escalation_message() {
        let authz = Authorizer::new();
        authz.set_index(Index::build(
            &[],
            &[json!({"metadata": {"name": "pod-reader"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]})],
            &[json!({"metadata": {"name": "b", "namespace": "team"}, "roleRef": {"kind": "ClusterRole", "name": "pod-reader"}, "subjects": [{"kind": "User", "name": "alice"}]})],
            &[],
        ));
        let alice = UserInfo::new("alice", vec![]);
        let pods = vec![PolicyRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["pods".into()],
            ..Default::default()
        }];
        assert!(confirm_no_escalation(&authz, &alice, "team", &pods).is_ok());
        let err = confirm_no_escalation(&authz, &alice, "other", &pods).unwrap_err();
        assert_eq!(
            err,
            "user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}"
        );
    }

    #[test]
    fn gc_only_changes() {
        let a = json!({"metadata": {"name": "r", "resourceVersion": "1"}, "rules": []});
        let mut b = a.clone();
        b["metadata"]["finalizers"] = json!(["x"]);
        b["metadata"]["resourceVersion"] = json!("2");
        assert!(only_gc_fields_changed(&b, &a));
        b["metadata"]["labels"] = json!({"k": "v"});
        assert!(!only_gc_fields_changed(&b, &a));
    }
}
