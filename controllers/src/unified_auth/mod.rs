//! The unifiedAuth controller (Karmada's `unifiedauth.Controller`,
//! pkg/controllers/unifiedauth/unified_auth_controller.go): for every Cluster with an
//! impersonator secret, the subjects bound to ClusterRoles granting `clusters/proxy` of that
//! cluster become `impersonate` rules of a `karmada-impersonator` ClusterRole, bound to the
//! member's impersonator ServiceAccount; both are pushed to the member as Works in its
//! execution space, so the cluster proxy may act as any user allowed to use it.

pub mod rules;

use std::sync::Arc;
use std::time::Duration;

use futures::{Stream, StreamExt};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::names::{execution_space_name, work_name};
use karmada_api::well_known::{annotations, finalizers, labels};
use kube::api::{ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

/// The controller's name (events, field manager).
pub const CONTROLLER_NAME: &str = "unified-auth-controller";
/// Re-reconcile everything this often even without changes (recreates deleted Works).
const RESYNC: Duration = Duration::from_secs(300);
/// Lets a burst of changes settle into one pass.
const SETTLE: Duration = Duration::from_millis(50);
/// First retry delay after a failed pass; doubles up to [`RESYNC`].
const RETRY: Duration = Duration::from_millis(500);

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
pub enum UnifiedAuthError {
    /// The control plane refused or failed a request.
    #[error("{what}: {source}")]
    Api {
        /// What was being done.
        what: String,
        /// The cause.
        source: kube::Error,
    },
    /// A Work exists but is being deleted.
    #[error("work {0} is being deleted")]
    Deleting(String),
    /// The cluster's execution space is not there yet: the cluster controller creates it
    /// right after a join, so this is expected for a moment and retried quietly.
    #[error("execution space {0} does not exist yet")]
    NoExecutionSpace(String),
}

impl UnifiedAuthError {
    /// Whether the error is an expected, transient state rather than a failure to report.
    fn is_transient(&self) -> bool {
        matches!(self, UnifiedAuthError::NoExecutionSpace(_))
    }
}

/// The running controller; dropping it stops it.
#[derive(Debug)]
pub struct UnifiedAuth {
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for UnifiedAuth {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn work_resource() -> ApiResource {
    ApiResource {
        group: "work.karmada.io".into(),
        version: "v1alpha1".into(),
        api_version: "work.karmada.io/v1alpha1".into(),
        kind: "Work".into(),
        plural: "works".into(),
    }
}

fn changes<K>(api: Api<K>, writer: reflector::store::Writer<K>) -> impl Stream<Item = ()> + Send
where
    K: kube::Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + Sync
        + 'static,
{
    reflector::reflector(
        writer,
        watcher(api, watcher::Config::default()).default_backoff(),
    )
    .map(|_| ())
}

/// Starts the controller with `client` (the control plane).
pub fn start(client: kube::Client) -> UnifiedAuth {
    let (roles, roles_w) = reflector::store::<ClusterRole>();
    let (bindings, bindings_w) = reflector::store::<ClusterRoleBinding>();
    let (clusters, clusters_w) = reflector::store::<Cluster>();
    let trigger = Arc::new(Notify::new());
    let events = futures::stream::select_all([
        changes(Api::<ClusterRole>::all(client.clone()), roles_w).boxed(),
        changes(Api::<ClusterRoleBinding>::all(client.clone()), bindings_w).boxed(),
        changes(Api::<Cluster>::all(client.clone()), clusters_w).boxed(),
    ]);
    let t = trigger.clone();
    let watch = tokio::spawn(async move {
        let mut events = std::pin::pin!(events);
        while events.next().await.is_some() {
            t.notify_one();
        }
    });
    let work = tokio::spawn(async move {
        for s in [
            roles.wait_until_ready().await,
            bindings.wait_until_ready().await,
            clusters.wait_until_ready().await,
        ] {
            if s.is_err() {
                return;
            }
        }
        let mut retry = RETRY;
        loop {
            tokio::select! {
                _ = trigger.notified() => {}
                _ = tokio::time::sleep(RESYNC) => {}
            }
            tokio::time::sleep(SETTLE).await;
            match reconcile_all(&client, &roles, &bindings, &clusters).await {
                Ok(()) => retry = RETRY,
                Err(e) => {
                    if e.is_transient() {
                        tracing::debug!(error = %e, "unified auth: not ready; retrying");
                    } else {
                        tracing::warn!(error = %e, "unified auth: sync failed; retrying");
                    }
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(RESYNC);
                    trigger.notify_one();
                }
            }
        }
    });
    UnifiedAuth {
        tasks: vec![watch, work],
    }
}

/// Syncs the impersonation config of every cluster; the first error is returned after all
/// clusters were tried.
pub async fn reconcile_all(
    client: &kube::Client,
    roles: &Store<ClusterRole>,
    bindings: &Store<ClusterRoleBinding>,
    clusters: &Store<Cluster>,
) -> Result<(), UnifiedAuthError> {
    let roles: Vec<ClusterRole> = roles.state().iter().map(|r| (**r).clone()).collect();
    let bindings: Vec<ClusterRoleBinding> =
        bindings.state().iter().map(|b| (**b).clone()).collect();
    let mut first_error = None;
    for cluster in clusters.state() {
        if let Err(e) = sync_cluster(client, &cluster, &roles, &bindings).await {
            if e.is_transient() {
                tracing::debug!(cluster = %cluster.name_any(), error = %e, "impersonation config waits");
            } else {
                tracing::warn!(cluster = %cluster.name_any(), error = %e, "failed to sync impersonation config");
            }
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Pushes the impersonation ClusterRole and ClusterRoleBinding of one cluster.
pub async fn sync_cluster(
    client: &kube::Client,
    cluster: &Cluster,
    roles: &[ClusterRole],
    bindings: &[ClusterRoleBinding],
) -> Result<(), UnifiedAuthError> {
    // Works of a deleted cluster go with it (they are owned by the Cluster).
    if cluster.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let Some(imp) = &cluster.spec.impersonator_secret_ref else {
        tracing::debug!(cluster = %cluster.name_any(), "unified auth is disabled: no impersonator secret");
        return Ok(());
    };
    let subjects = rules::subjects_for_cluster(roles, bindings, &cluster.name_any());
    let role = rules::impersonator_cluster_role(&rules::impersonation_rules(&subjects));
    ensure_work(client, cluster, role).await?;
    let binding = rules::impersonator_cluster_role_binding(&imp.namespace);
    ensure_work(client, cluster, binding).await
}

/// The manifest as `CreateOrUpdateWork` stores it: managed by Karmada, pointing at its Work.
fn workload(mut obj: Value, work: &str, namespace: &str) -> Value {
    obj["metadata"]["labels"][labels::MANAGED_BY_KARMADA] = json!(labels::MANAGED_BY_KARMADA_VALUE);
    let a = &mut obj["metadata"]["annotations"];
    a[annotations::RESOURCE_TEMPLATE_UID] = json!("");
    a[annotations::WORK_NAME] = json!(work);
    a[annotations::WORK_NAMESPACE] = json!(namespace);
    obj
}

/// True when the stored manifest already says what `desired` says (admission adds labels
/// and annotations of its own, which are ignored).
fn same_content(stored: &Value, desired: &Value) -> bool {
    let norm = |v: Option<&Value>| match v {
        None | Some(Value::Null) => Value::Null,
        Some(Value::Array(a)) if a.is_empty() => Value::Null,
        Some(x) => x.clone(),
    };
    ["kind", "rules", "subjects", "roleRef"]
        .iter()
        .all(|k| norm(stored.get(*k)) == norm(desired.get(*k)))
        && stored.pointer("/metadata/name") == desired.pointer("/metadata/name")
        && desired["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .all(|(k, v)| stored.pointer("/metadata/labels").and_then(|l| l.get(k)) == Some(v))
        && desired["metadata"]["annotations"]
            .as_object()
            .into_iter()
            .flatten()
            .all(|(k, v)| {
                stored
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(k))
                    == Some(v)
            })
}

async fn ensure_work(
    client: &kube::Client,
    cluster: &Cluster,
    obj: Value,
) -> Result<(), UnifiedAuthError> {
    let cluster_name = cluster.name_any();
    let ns = execution_space_name(&cluster_name);
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let wname = work_name(&kind, &name, "");
    let manifest = workload(obj, &wname, &ns);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &work_resource());
    let err = |what: &str| {
        let what = format!("{what} work {ns}/{wname}");
        move |source| UnifiedAuthError::Api { what, source }
    };
    let owner = json!({
        "apiVersion": karmada_api::cluster::v1alpha1::API_VERSION,
        "kind": "Cluster",
        "name": cluster_name,
        "uid": cluster.metadata.uid.clone().unwrap_or_default(),
        "controller": true,
        "blockOwnerDeletion": true,
    });
    match api.get_opt(&wname).await.map_err(err("reading"))? {
        None => {
            let work: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "work.karmada.io/v1alpha1",
                "kind": "Work",
                "metadata": {
                    "name": wname,
                    "namespace": ns,
                    "finalizers": [finalizers::EXECUTION_CONTROLLER],
                    "ownerReferences": [owner],
                },
                "spec": {"workload": {"manifests": [manifest]}},
            }))
            .map_err(|e| err("building")(kube::Error::SerdeError(e)))?;
            match api.create(&PostParams::default(), &work).await {
                Ok(_) => {
                    tracing::info!(work = %wname, namespace = %ns, "created impersonation work");
                    Ok(())
                }
                // Created meanwhile: the next pass compares it.
                Err(kube::Error::Api(e)) if e.code == 409 => Ok(()),
                Err(kube::Error::Api(e))
                    if e.code == 404
                        && e.details.as_ref().is_some_and(|d| d.kind == "namespaces") =>
                {
                    Err(UnifiedAuthError::NoExecutionSpace(ns))
                }
                Err(e) => Err(err("creating")(e)),
            }
        }
        Some(existing) => {
            if existing.metadata.deletion_timestamp.is_some() {
                return Err(UnifiedAuthError::Deleting(format!("{ns}/{wname}")));
            }
            let stored = existing
                .data
                .pointer("/spec/workload/manifests/0")
                .cloned()
                .unwrap_or(Value::Null);
            let mut fins = existing.metadata.finalizers.clone().unwrap_or_default();
            let has_finalizer = fins.iter().any(|f| f == finalizers::EXECUTION_CONTROLLER);
            if same_content(&stored, &manifest) && has_finalizer {
                return Ok(());
            }
            if !has_finalizer {
                fins.push(finalizers::EXECUTION_CONTROLLER.to_string());
            }
            let patch = json!({
                "metadata": {"finalizers": fins},
                "spec": {"workload": {"manifests": [manifest]}},
            });
            api.patch(&wname, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(err("updating"))?;
            tracing::info!(work = %wname, namespace = %ns, "updated impersonation work");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifests_compare_by_content() {
        let desired = workload(
            rules::impersonator_cluster_role(&[]),
            "karmada-impersonator-123",
            "karmada-es-m1",
        );
        assert_eq!(desired["metadata"]["labels"]["karmada.io/managed"], "true");
        assert_eq!(
            desired["metadata"]["annotations"]["work.karmada.io/name"],
            "karmada-impersonator-123"
        );
        let mut stored = desired.clone();
        stored["metadata"]["labels"]["work.karmada.io/permanent-id"] = json!("abc");
        stored["metadata"]["annotations"]["resourcetemplate.karmada.io/managed-labels"] =
            json!("x");
        stored["rules"] = json!([]);
        assert!(same_content(&stored, &desired));
        stored["rules"] = json!([{"verbs": ["impersonate"]}]);
        assert!(!same_content(&stored, &desired));
        assert!(!same_content(&Value::Null, &desired));
    }
}
