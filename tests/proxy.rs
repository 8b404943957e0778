//! The cluster proxy end to end: the real binary, real kubectl, simulated members.

mod support;

use serde_json::Value;
use support::{DEADLINE, Server, wait_for};

fn work(server: &Server, cluster: &str, kind: &str) -> Option<Value> {
    let name = karmada_api::names::work_name(kind, "karmada-impersonator", "");
    let out = server.kubectl(&[
        "get",
        "works.work.karmada.io",
        "-n",
        &format!("karmada-es-{cluster}"),
        &name,
        "-o",
        "json",
    ]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("work JSON"))
}

fn impersonated(work: &Value, resource: &str) -> Vec<String> {
    work["spec"]["workload"]["manifests"][0]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|r| r["resources"][0] == resource)
        .flat_map(|r| r["resourceNames"].as_array().cloned().unwrap_or_default())
        .filter_map(|n| n.as_str().map(str::to_string))
        .collect()
}

/// unifiedAuth: subjects granted `clusters/proxy` become impersonation rules pushed to the
/// member through Works in its execution space.
#[test]
fn unified_auth_pushes_impersonation_rbac() {
    let server = Server::start();
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: karmada-es-m1}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1}
spec:
  syncMode: Push
  apiEndpoint: https://127.0.0.1:1
  secretRef: {namespace: karmada-cluster, name: m1}
  impersonatorSecretRef: {namespace: karmada-cluster, name: m1-impersonator}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: proxy-m1}
rules:
- apiGroups: [cluster.karmada.io]
  resources: [clusters/proxy]
  resourceNames: [m1]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: proxy-m1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: proxy-m1}
subjects:
- {kind: User, name: alice}
- {kind: Group, name: ops}
"#,
    );
    let role_work = wait_for("the impersonator ClusterRole work", DEADLINE, || {
        work(&server, "m1", "ClusterRole").filter(|w| impersonated(w, "users") == ["alice"])
    });
    assert_eq!(impersonated(&role_work, "groups"), ["ops"]);
    let manifest = &role_work["spec"]["workload"]["manifests"][0];
    assert_eq!(manifest["kind"], "ClusterRole");
    assert_eq!(manifest["metadata"]["name"], "karmada-impersonator");
    assert_eq!(manifest["metadata"]["labels"]["karmada.io/managed"], "true");
    assert_eq!(
        role_work["metadata"]["finalizers"][0],
        "karmada.io/execution-controller"
    );
    let cluster = server.get_json(&["clusters.cluster.karmada.io", "m1"]);
    let owner = &role_work["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Cluster");
    assert_eq!(owner["uid"], cluster["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);

    let binding_work = wait_for("the impersonator ClusterRoleBinding work", DEADLINE, || {
        work(&server, "m1", "ClusterRoleBinding")
    });
    let b = &binding_work["spec"]["workload"]["manifests"][0];
    assert_eq!(b["roleRef"]["name"], "karmada-impersonator");
    assert_eq!(b["subjects"][0]["kind"], "ServiceAccount");
    assert_eq!(b["subjects"][0]["name"], "karmada-impersonator");
    assert_eq!(b["subjects"][0]["namespace"], "karmada-cluster");

    // A newly granted user is added; a grant for another cluster changes nothing here.
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "proxy-m1-bob",
        "--clusterrole=proxy-m1",
        "--user=bob",
        "--serviceaccount=default:robot",
    ]);
    let w = wait_for("bob in the impersonation rules", DEADLINE, || {
        work(&server, "m1", "ClusterRole").filter(|w| impersonated(w, "users") == ["alice", "bob"])
    });
    assert_eq!(impersonated(&w, "serviceaccounts"), ["robot"]);
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: proxy-m2}
rules:
- apiGroups: [cluster.karmada.io]
  resources: [clusters/proxy]
  resourceNames: [m2]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: proxy-m2}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: proxy-m2}
subjects:
- {kind: User, name: carol}
"#,
    );
    // Revoking alice's binding removes her (and proves the controller saw the m2 grant too).
    server.kubectl_ok(&["delete", "clusterrolebinding", "proxy-m1"]);
    let w = wait_for("alice removed", DEADLINE, || {
        work(&server, "m1", "ClusterRole").filter(|w| impersonated(w, "users") == ["bob"])
    });
    assert!(impersonated(&w, "groups").is_empty());
}
