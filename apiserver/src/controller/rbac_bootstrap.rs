//! The bootstrap RBAC policy created on first start, as kube-apiserver's
//! (plugin/pkg/auth/authorizer/rbac/bootstrappolicy), plus the ClusterRole of the in-process
//! Karmada controllers and, on a control plane, what Karmada's installers add for the admin
//! (`cluster-proxy-admin`). Like kube's `ensure-rbac` post-start hook it only adds: a missing
//! object is created; an existing one annotated `rbac.authorization.kubernetes.io/autoupdate:
//! "true"` gets the rules (or subjects) it lacks; anything else a user changed is left alone.

use serde_json::{Value, json};

use crate::auth::rbac::RBAC_GROUP;
use crate::auth::rbac::index::parse_rules;
use crate::auth::{
    AUTHENTICATED_GROUP, CONTROLLER_MANAGER_USER, MASTERS_GROUP, PUBLIC_INFO_PATHS,
    UNAUTHENTICATED_GROUP,
};
use crate::error::ApiError;
use crate::registry::{Registry, Subresource, WriteContext};
use crate::state::{ApiState, Flavor};

/// The annotation that lets the bootstrap policy update an object.
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// The name of the in-process controllers' ClusterRole and ClusterRoleBinding.
pub const CONTROLLER_MANAGER_ROLE: &str = "system:karmada:controller-manager";
/// The ClusterRole and ClusterRoleBinding that give the admin the cluster proxy, named as
/// `karmadactl init` names them (`grantProxyPermissionToAdmin`).
pub const CLUSTER_PROXY_ADMIN: &str = "cluster-proxy-admin";

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": groups, "resources": resources})
}

fn urls(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"verbs": verbs, "nonResourceURLs": urls})
}

fn metadata(name: &str, labels: &[(&str, &str)]) -> Value {
    let mut l = serde_json::Map::new();
    l.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults".into());
    for (k, v) in labels {
        l.insert((*k).into(), (*v).into());
    }
    json!({"name": name, "labels": l, "annotations": {AUTOUPDATE_ANNOTATION: "true"}})
}

/// Metadata of an object Karmada's installer creates: not one of kube's defaults (no
/// `kubernetes.io/bootstrapping` label), but completed at start like them unless the
/// annotation is turned off.
fn installer_metadata(name: &str) -> Value {
    json!({"name": name, "annotations": {AUTOUPDATE_ANNOTATION: "true"}})
}

fn cluster_role(name: &str, labels: &[(&str, &str)], rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "rules": rules,
    })
}

fn aggregated(name: &str, labels: &[(&str, &str)], selector_label: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": metadata(name, labels),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selector_label: "true"}}]},
        "rules": [],
    })
}

fn binding(name: &str, role: &str, subjects: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": metadata(name, &[]),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

fn group(name: &str) -> Value {
    json!({"apiGroup": RBAC_GROUP, "kind": "Group", "name": name})
}

fn user(name: &str) -> Value {
    json!({"apiGroup": RBAC_GROUP, "kind": "User", "name": name})
}

const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";

/// The bootstrap ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let core = "";
    vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        cluster_role(
            "system:discovery",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/livez",
                    "/readyz",
                    "/healthz",
                    "/version",
                    "/version/",
                    "/openapi",
                    "/openapi/*",
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                ],
            )],
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![urls(&["get"], PUBLIC_INFO_PATHS)],
        ),
        aggregated("admin", &[], TO_ADMIN),
        aggregated("edit", &[(TO_ADMIN, "true")], TO_EDIT),
        aggregated("view", &[(TO_EDIT, "true")], TO_VIEW),
        cluster_role(
            "system:aggregate-to-admin",
            &[(TO_ADMIN, "true")],
            vec![
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, &[RBAC_GROUP], &["roles", "rolebindings"]),
            ],
        ),
        cluster_role(
            "system:aggregate-to-edit",
            &[(TO_EDIT, "true")],
            vec![
                rule(
                    READ,
                    &[core],
                    &[
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                rule(&["impersonate"], &[core], &["serviceaccounts"]),
                rule(
                    WRITE,
                    &[core],
                    &[
                        "pods",
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                    ],
                ),
                rule(&["create"], &[core], &["pods/eviction"]),
                rule(
                    WRITE,
                    &[core],
                    &[
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                        "persistentvolumeclaims",
                        "configmaps",
                        "secrets",
                        "events",
                    ],
                ),
                rule(&["create"], &[core], &["serviceaccounts/token"]),
                rule(
                    WRITE,
                    &["apps"],
                    &[
                        "statefulsets",
                        "statefulsets/scale",
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "replicasets",
                        "replicasets/scale",
                    ],
                ),
                rule(WRITE, &["autoscaling"], &["horizontalpodautoscalers"]),
                rule(WRITE, &["batch"], &["jobs", "cronjobs"]),
                rule(
                    WRITE,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "ingresses",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                rule(WRITE, &["policy"], &["poddisruptionbudgets"]),
                rule(
                    WRITE,
                    &["networking.k8s.io"],
                    &["networkpolicies", "ingresses"],
                ),
                rule(READ_WRITE, &["coordination.k8s.io"], &["leases"]),
            ],
        ),
        cluster_role(
            "system:aggregate-to-view",
            &[(TO_VIEW, "true")],
            vec![
                rule(
                    READ,
                    &[core],
                    &[
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "configmaps",
                    ],
                ),
                rule(
                    READ,
                    &[core],
                    &[
                        "limitranges",
                        "resourcequotas",
                        "bindings",
                        "events",
                        "pods/status",
                        "resourcequotas/status",
                        "namespaces/status",
                        "replicationcontrollers/status",
                        "pods/log",
                    ],
                ),
                rule(READ, &[core], &["namespaces"]),
                rule(READ, &["discovery.k8s.io"], &["endpointslices"]),
                rule(
                    READ,
                    &["apps"],
                    &[
                        "controllerrevisions",
                        "statefulsets",
                        "statefulsets/status",
                        "statefulsets/scale",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/status",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/status",
                        "replicasets/scale",
                    ],
                ),
                rule(
                    READ,
                    &["autoscaling"],
                    &[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ],
                ),
                rule(
                    READ,
                    &["batch"],
                    &["jobs", "cronjobs", "cronjobs/status", "jobs/status"],
                ),
                rule(
                    READ,
                    &["extensions"],
                    &[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                rule(
                    READ,
                    &["policy"],
                    &["poddisruptionbudgets", "poddisruptionbudgets/status"],
                ),
                rule(
                    READ,
                    &["networking.k8s.io"],
                    &["networkpolicies", "ingresses", "ingresses/status"],
                ),
            ],
        ),
        cluster_role(
            "system:auth-delegator",
            &[],
            vec![
                rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
            ],
        ),
        // The in-process Karmada controllers: the detector reads every kind, the binding,
        // execution and status controllers write templates, bindings, Works, Clusters,
        // namespaces, events, leases and cluster secrets. Everything but the RBAC verbs
        // (bind, escalate, impersonate), so a controller can never hand out more than it
        // holds.
        cluster_role(
            CONTROLLER_MANAGER_ROLE,
            &[],
            vec![
                rule(READ_WRITE, &["*"], &["*"]),
                urls(&["get"], &["*"]),
                // agentcsrapproving approves agents' CSRs (CertificateApproval admission).
                json!({"verbs": ["approve"], "apiGroups": ["certificates.k8s.io"], "resources": ["signers"], "resourceNames": ["kubernetes.io/kube-apiserver-client"]}),
            ],
        ),
    ]
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", "cluster-admin", vec![group(MASTERS_GROUP)]),
        binding(
            "system:discovery",
            "system:discovery",
            vec![group(AUTHENTICATED_GROUP)],
        ),
        binding(
            "system:basic-user",
            "system:basic-user",
            vec![group(AUTHENTICATED_GROUP)],
        ),
        binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            vec![group(AUTHENTICATED_GROUP), group(UNAUTHENTICATED_GROUP)],
        ),
        binding(
            CONTROLLER_MANAGER_ROLE,
            CONTROLLER_MANAGER_ROLE,
            vec![user(CONTROLLER_MANAGER_USER)],
        ),
    ]
}

/// What Karmada's installers create on a control plane for its admin: `karmadactl init` (and
/// the operator, and the Helm chart under a prefixed name) grant the admin's user every verb
/// on `clusters/proxy`. system:masters already passes the control plane's RBAC, but the
/// unifiedAuth controller pushes member-side impersonation rules only for subjects bound
/// explicitly, so without this binding the members refuse to let the proxy act as the admin.
/// Karmada's admin is `system:admin`; ours is [`certs::ADMIN_USER`].
pub fn karmada_installer_policy() -> (Vec<Value>, Vec<Value>) {
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": installer_metadata(CLUSTER_PROXY_ADMIN),
        "rules": [rule(&["*"], &["cluster.karmada.io"], &["clusters/proxy"])],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": installer_metadata(CLUSTER_PROXY_ADMIN),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": CLUSTER_PROXY_ADMIN},
        "subjects": [user(certs::ADMIN_USER)],
    });
    let (mut roles, mut bindings) = registration_policy();
    roles.insert(0, role);
    bindings.insert(0, binding);
    (roles, bindings)
}

/// The group of Karmada's registration bootstrap tokens.
const TOKEN_GROUP: &str = certs::bootstrap_token::KARMADA_TOKEN_GROUP;
/// The group of every agent's client certificate.
const AGENTS_GROUP: &str = "system:karmada:agents";
/// Lets registration tokens and agents submit and read their certificate signing requests
/// (kube's `system:node-bootstrapper`, for Karmada's identities).
pub const AGENT_BOOTSTRAP_ROLE: &str = "system:karmada:agent-bootstrap";
/// Marks a token holder's agent CSRs for automatic approval (the approver's
/// SubjectAccessReview for `certificatesigningrequests/clusteragent`).
pub const AUTOAPPROVE_ROLE: &str = "system:karmada:certificatesigningrequest:autoapprove";
/// Marks an agent's renewal CSRs for its own identity for automatic approval
/// (`certificatesigningrequests/selfclusteragent`).
pub const SELF_AUTOAPPROVE_ROLE: &str = "system:karmada:certificatesigningrequest:selfautoapprove";
/// The Role in kube-public that lets anonymous read cluster-info (kubeadm's
/// `kubeadm:bootstrap-signer-clusterinfo`).
pub const CLUSTER_INFO_ROLE: &str = "system:karmada:bootstrap-signer-clusterinfo";

/// Pull-mode registration's RBAC on a control plane: what bootstrap tokens and agents may do
/// before and besides their per-cluster RBAC.
fn registration_policy() -> (Vec<Value>, Vec<Value>) {
    let csr = "certificates.k8s.io";
    let role = |name: &str, rules: Vec<Value>| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": installer_metadata(name),
            "rules": rules,
        })
    };
    let bind = |name: &str, subjects: Vec<Value>| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": installer_metadata(name),
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        })
    };
    (
        vec![
            role(
                AGENT_BOOTSTRAP_ROLE,
                vec![rule(
                    &["create", "get", "list", "watch"],
                    &[csr],
                    &["certificatesigningrequests"],
                )],
            ),
            role(
                AUTOAPPROVE_ROLE,
                vec![rule(
                    &["create"],
                    &[csr],
                    &["certificatesigningrequests/clusteragent"],
                )],
            ),
            role(
                SELF_AUTOAPPROVE_ROLE,
                vec![rule(
                    &["create"],
                    &[csr],
                    &["certificatesigningrequests/selfclusteragent"],
                )],
            ),
        ],
        vec![
            bind(
                AGENT_BOOTSTRAP_ROLE,
                vec![group(TOKEN_GROUP), group(AGENTS_GROUP)],
            ),
            bind(AUTOAPPROVE_ROLE, vec![group(TOKEN_GROUP)]),
            bind(SELF_AUTOAPPROVE_ROLE, vec![group(AGENTS_GROUP)]),
        ],
    )
}

/// The Role and RoleBinding in kube-public that let anonymous read cluster-info only.
pub fn cluster_info_policy() -> (Value, Value) {
    let mut meta = installer_metadata(CLUSTER_INFO_ROLE);
    meta["namespace"] = json!(certs::bootstrap_token::CLUSTER_INFO_NAMESPACE);
    let role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": meta.clone(),
        "rules": [{
            "verbs": ["get"],
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [certs::bootstrap_token::CLUSTER_INFO_NAME],
        }],
    });
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": meta,
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": CLUSTER_INFO_ROLE},
        "subjects": [user("system:anonymous")],
    });
    (role, binding)
}

fn autoupdate(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(AUTOUPDATE_ANNOTATION))
        .and_then(Value::as_str)
        == Some("true")
}

/// What an existing object lacks of a wanted one (None: nothing to add).
fn additions(kind: &str, existing: &Value, wanted: &Value) -> Option<Value> {
    if !autoupdate(existing) {
        return None;
    }
    let mut next = existing.clone();
    let mut changed = false;
    match kind {
        "ClusterRole" | "Role" => {
            if wanted.get("aggregationRule").is_some() {
                if existing.get("aggregationRule").is_none_or(Value::is_null) {
                    next["aggregationRule"] = wanted["aggregationRule"].clone();
                    changed = true;
                }
            } else {
                let have = parse_rules(existing);
                let mut rules = existing.get("rules").cloned().unwrap_or(json!([]));
                let want = parse_rules(wanted);
                for (r, raw) in want.iter().zip(wanted["rules"].as_array()?.iter()) {
                    if !have.contains(r) {
                        rules.as_array_mut()?.push(raw.clone());
                        changed = true;
                    }
                }
                next["rules"] = rules;
            }
        }
        _ => {
            let mut subjects = existing.get("subjects").cloned().unwrap_or(json!([]));
            for s in wanted["subjects"].as_array()? {
                let present = subjects
                    .as_array()?
                    .iter()
                    .any(|e| e.get("kind") == s.get("kind") && e.get("name") == s.get("name"));
                if !present {
                    subjects.as_array_mut()?.push(s.clone());
                    changed = true;
                }
            }
            next["subjects"] = subjects;
        }
    }
    changed.then_some(next)
}

/// Creates or completes the bootstrap policy (with Karmada's installer objects on a control
/// plane).
pub async fn ensure(state: &ApiState) -> Result<crate::controller::rbac::Written, ApiError> {
    let mut written = crate::controller::rbac::Written::default();
    let snapshot = state.catalog.snapshot();
    let ctx = WriteContext {
        manager: "kube-apiserver".into(),
        dry_run: false,
        apply: false,
    };
    let mut roles = cluster_roles();
    let mut bindings = cluster_role_bindings();
    let mut ns_roles = Vec::new();
    let mut ns_bindings = Vec::new();
    if state.config.flavor == Flavor::ControlPlane {
        let (r, b) = karmada_installer_policy();
        roles.extend(r);
        bindings.extend(b);
        let (r, b) = cluster_info_policy();
        ns_roles.push(r);
        ns_bindings.push(b);
    }
    for (plural, kind, objects) in [
        ("clusterroles", "ClusterRole", roles),
        ("clusterrolebindings", "ClusterRoleBinding", bindings),
        ("roles", "Role", ns_roles),
        ("rolebindings", "RoleBinding", ns_bindings),
    ] {
        let def = snapshot
            .get(RBAC_GROUP, "v1", plural)
            .cloned()
            .ok_or_else(|| ApiError::internal(format!("{plural} are not served")))?;
        let reg = Registry::new(state, def);
        let slot = crate::controller::rbac::written_index(plural)
            .ok_or_else(|| ApiError::internal(format!("{plural} is not an RBAC resource")))?;
        for obj in objects {
            let name = crate::object::name(&obj).to_string();
            let ns = crate::object::meta_str(&obj, "namespace").to_string();
            let ns = ns.as_str();
            let stored = match reg.get(ns, &name).await {
                Ok(existing) => match additions(kind, &existing, &obj) {
                    Some(next) => {
                        tracing::info!(kind, %name, "completing bootstrap RBAC object");
                        reg.guaranteed_update_written(ns, &name, Subresource::Main, &ctx, |_| {
                            Ok(next.clone())
                        })
                        .await?
                        .revision
                    }
                    None => None,
                },
                Err(e) if e.code == 404 => match reg.create_written(ns, obj, &ctx).await {
                    Ok(w) => w.revision,
                    Err(e) if e.code == 409 => None,
                    Err(e) => return Err(e),
                },
                Err(e) => return Err(e),
            };
            if let Some(rev) = stored {
                written[slot] = written[slot].max(rev);
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additions_only_add_and_respect_the_annotation() {
        let wanted = &cluster_roles()[1];
        let mut existing = wanted.clone();
        existing["rules"] = json!([{"verbs": ["get"], "nonResourceURLs": ["/custom"]}]);
        let next = additions("ClusterRole", &existing, wanted).unwrap();
        let rules = next["rules"].as_array().unwrap();
        assert_eq!(
            rules[0]["nonResourceURLs"],
            json!(["/custom"]),
            "user rules kept"
        );
        assert_eq!(rules.len(), 2);
        assert!(additions("ClusterRole", &next, wanted).is_none());
        existing["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] = json!("false");
        assert!(additions("ClusterRole", &existing, wanted).is_none());

        let b = &cluster_role_bindings()[0];
        let mut eb = b.clone();
        eb["subjects"] = json!([{"kind": "User", "name": "someone"}]);
        let next = additions("ClusterRoleBinding", &eb, b).unwrap();
        assert_eq!(next["subjects"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn every_binding_names_a_bootstrap_role() {
        let (installer_roles, installer_bindings) = karmada_installer_policy();
        let roles: Vec<String> = cluster_roles()
            .iter()
            .chain(&installer_roles)
            .map(|r| crate::object::name(r).to_string())
            .collect();
        for b in cluster_role_bindings()
            .into_iter()
            .chain(installer_bindings)
        {
            let r = b["roleRef"]["name"].as_str().unwrap();
            assert!(roles.iter().any(|n| n == r), "{r}");
        }
    }

    /// The admin's proxy grant is `karmadactl init`'s: one rule, every verb on
    /// `clusters/proxy`, bound to the admin user by name.
    #[test]
    fn the_admin_gets_the_cluster_proxy_as_karmadas_installer_grants_it() {
        let (roles, bindings) = karmada_installer_policy();
        // cluster-proxy-admin, then pull-mode registration's roles.
        assert_eq!(roles.len(), 4);
        let names: Vec<&str> = roles
            .iter()
            .filter_map(|r| r["metadata"]["name"].as_str())
            .collect();
        assert_eq!(
            names[1..],
            [
                AGENT_BOOTSTRAP_ROLE,
                AUTOAPPROVE_ROLE,
                SELF_AUTOAPPROVE_ROLE
            ]
        );
        assert_eq!(
            roles[0]["metadata"]["name"], "cluster-proxy-admin",
            "karmadactl's name"
        );
        assert_eq!(
            roles[0]["rules"],
            json!([{"verbs": ["*"], "apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"]}])
        );
        assert_eq!(bindings.len(), 4);
        assert_eq!(bindings[0]["metadata"]["name"], "cluster-proxy-admin");
        assert_eq!(
            bindings[0]["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-proxy-admin"})
        );
        assert_eq!(
            bindings[0]["subjects"],
            json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "karmada-admin"}])
        );
    }
}
