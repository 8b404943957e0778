//! The agent's RBAC on the control plane (karmadactl register's `GenerateClusterRole`,
//! `GenerateWorkAccessRole` and their bindings), narrowed further: the agent's identity
//! `system:karmada:agent:<cluster>` may read and update its own Cluster only (Karmada lets it
//! list every Cluster), write its own Lease only, and reach Works in its own execution space
//! only. It may create Clusters and Leases (creation cannot be limited to a name) and Events
//! (they go to the templates' namespaces), as in Karmada. Its replicas' leader election Lease
//! (`karmada-agent-<cluster>`, in the namespace the agent is told) is the only other Lease it
//! may read and write.

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use karmada_api::names;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The common name of an agent's client certificate (`ClusterPermissionPrefix`).
pub const AGENT_USER_PREFIX: &str = "system:karmada:agent:";
/// The organization of every agent's client certificate (`ClusterPermissionGroups`).
pub const AGENTS_GROUP: &str = "system:karmada:agents";

/// The user an agent authenticates as.
pub fn agent_user(cluster: &str) -> String {
    format!("{AGENT_USER_PREFIX}{cluster}")
}

/// The name of the agent's ClusterRole and ClusterRoleBinding.
pub fn cluster_role_name(cluster: &str) -> String {
    format!("system:karmada:{cluster}:agent")
}

/// The name of the agent's Role and RoleBinding in its execution space.
pub fn work_role_name(cluster: &str) -> String {
    format!("system:karmada:{cluster}:agent-work")
}

/// The name of the agent's Role and RoleBinding for its Lease in `karmada-cluster`.
pub fn lease_role_name(cluster: &str) -> String {
    format!("system:karmada:{cluster}:agent-lease")
}

fn rule(verbs: &[&str], group: &str, resources: &[&str], names: &[&str]) -> Value {
    let mut r = json!({"verbs": verbs, "apiGroups": [group], "resources": resources});
    if !names.is_empty() {
        r["resourceNames"] = json!(names);
    }
    r
}

fn subject(cluster: &str) -> Value {
    json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": agent_user(cluster)}])
}

fn labels() -> Value {
    json!({karmada_api::well_known::labels::KARMADA_SYSTEM: "true"})
}

/// The agent's ClusterRole.
pub fn cluster_role(cluster: &str) -> Value {
    json!({
        "metadata": {"name": cluster_role_name(cluster), "labels": labels()},
        "rules": [
            // list and watch with a metadata.name field selector are authorized by name.
            rule(&["get", "list", "watch", "update", "patch", "delete"], "cluster.karmada.io", &["clusters"], &[cluster]),
            rule(&["create"], "cluster.karmada.io", &["clusters"], &[]),
            rule(&["get", "update", "patch"], "cluster.karmada.io", &["clusters/status"], &[cluster]),
            // The reverse tunnel of its own cluster only (proxy::tunnel).
            rule(&["create"], "cluster.karmada.io", &["clusters/tunnel"], &[cluster]),
            rule(&["create", "patch", "update"], "", &["events"], &[]),
            rule(&["create", "patch", "update"], "events.k8s.io", &["events"], &[]),
            // Leader election among its replicas (the namespace is the agent's flag).
            rule(&["get", "list", "watch", "update", "patch"], "coordination.k8s.io", &["leases"], &[&super::leader_election_id(cluster)]),
            rule(&["create"], "coordination.k8s.io", &["leases"], &[]),
        ],
    })
}

/// The agent's Role in its execution space.
pub fn work_role(cluster: &str) -> Value {
    json!({
        "metadata": {
            "name": work_role_name(cluster),
            "namespace": names::execution_space_name(cluster),
            "labels": labels(),
        },
        "rules": [
            rule(&["get", "create", "list", "watch", "update", "patch", "delete"], "work.karmada.io", &["works"], &[]),
            rule(&["get", "patch", "update"], "work.karmada.io", &["works/status"], &[]),
        ],
    })
}

/// The agent's Role for its Lease.
pub fn lease_role(cluster: &str) -> Value {
    json!({
        "metadata": {
            "name": lease_role_name(cluster),
            "namespace": names::NAMESPACE_KARMADA_CLUSTER,
            "labels": labels(),
        },
        "rules": [
            rule(&["get", "update", "patch"], "coordination.k8s.io", &["leases"], &[cluster]),
            rule(&["create"], "coordination.k8s.io", &["leases"], &[]),
        ],
    })
}

fn binding(name: &str, namespace: Option<&str>, role_kind: &str, cluster: &str) -> Value {
    let mut meta = json!({"name": name, "labels": labels()});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    json!({
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": subject(cluster),
    })
}

/// Creates the object `value` describes, or replaces the existing one of its name (karmadactl's
/// CreateOrUpdate).
pub(crate) async fn put<K>(api: Api<K>, value: Value) -> Result<(), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Serialize + std::fmt::Debug,
{
    let mut obj: K = serde_json::from_value(value).map_err(kube::Error::SerdeError)?;
    let name = obj.meta().name.clone().unwrap_or_default();
    match api.get_opt(&name).await? {
        Some(existing) => {
            obj.meta_mut().resource_version = existing.meta().resource_version.clone();
            api.replace(&name, &PostParams::default(), &obj).await?;
        }
        None => {
            api.create(&PostParams::default(), &obj).await?;
        }
    }
    Ok(())
}

/// Creates (or puts back) the agent's RBAC for `cluster`, creating its execution space first
/// when the cluster controller has not yet (its Role lives there).
pub async fn ensure(client: &kube::Client, cluster: &str) -> Result<(), kube::Error> {
    let es = names::execution_space_name(cluster);
    let kc = names::NAMESPACE_KARMADA_CLUSTER;
    let namespaces = Api::<Namespace>::all(client.clone());
    if namespaces.get_opt(&es).await?.is_none() {
        let ns: Namespace =
            serde_json::from_value(json!({"metadata": {"name": es, "labels": labels()}}))
                .map_err(kube::Error::SerdeError)?;
        match namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    put(
        Api::<ClusterRole>::all(client.clone()),
        cluster_role(cluster),
    )
    .await?;
    put(
        Api::<ClusterRoleBinding>::all(client.clone()),
        binding(&cluster_role_name(cluster), None, "ClusterRole", cluster),
    )
    .await?;
    put(
        Api::<Role>::namespaced(client.clone(), &es),
        work_role(cluster),
    )
    .await?;
    put(
        Api::<RoleBinding>::namespaced(client.clone(), &es),
        binding(&work_role_name(cluster), Some(&es), "Role", cluster),
    )
    .await?;
    put(
        Api::<Role>::namespaced(client.clone(), kc),
        lease_role(cluster),
    )
    .await?;
    put(
        Api::<RoleBinding>::namespaced(client.clone(), kc),
        binding(&lease_role_name(cluster), Some(kc), "Role", cluster),
    )
    .await?;
    Ok(())
}

/// Deletes the agent's RBAC (what exists of it).
pub async fn remove(client: &kube::Client, cluster: &str) -> Result<(), kube::Error> {
    async fn del<K>(api: Api<K>, name: &str) -> Result<(), kube::Error>
    where
        K: Resource + Clone + DeserializeOwned + std::fmt::Debug,
    {
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(()),
            Err(e) => Err(e),
        }
    }
    let es = names::execution_space_name(cluster);
    let kc = names::NAMESPACE_KARMADA_CLUSTER;
    let crn = cluster_role_name(cluster);
    del(Api::<ClusterRoleBinding>::all(client.clone()), &crn).await?;
    del(Api::<ClusterRole>::all(client.clone()), &crn).await?;
    del(
        Api::<RoleBinding>::namespaced(client.clone(), &es),
        &work_role_name(cluster),
    )
    .await?;
    del(
        Api::<Role>::namespaced(client.clone(), &es),
        &work_role_name(cluster),
    )
    .await?;
    del(
        Api::<RoleBinding>::namespaced(client.clone(), kc),
        &lease_role_name(cluster),
    )
    .await?;
    del(
        Api::<Role>::namespaced(client.clone(), kc),
        &lease_role_name(cluster),
    )
    .await?;
    Ok(())
}
