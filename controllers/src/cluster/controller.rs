//! The cluster controller (pkg/controllers/cluster/cluster_controller.go): the execution
//! space `karmada-es-<cluster>`, the scheduling taints that follow the Ready condition, and
//! the finalizer that removes Works and the execution space when the Cluster is deleted.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use karmada_api::cluster::v1alpha1::{CLUSTER_CONDITION_READY, Cluster};
use karmada_api::names;
use karmada_api::well_known::finalizers::CLUSTER_CONTROLLER;
use karmada_api::work::v1alpha1::Work;
use karmada_api::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::json;

use super::{ClusterControllers, ClusterError, Reconciler, kube_err, system_labels, taints};

/// Reconciles one cluster.
pub(super) struct ClusterReconciler {
    client: kube::Client,
    cleanup_check_interval: Duration,
}

impl ClusterReconciler {
    pub(super) fn new(ctx: &ClusterControllers) -> ClusterReconciler {
        ClusterReconciler {
            client: ctx.client.clone(),
            cleanup_check_interval: ctx.settings.cleanup_check_interval,
        }
    }

    /// syncCluster: execution space, taints, finalizer.
    async fn sync(&self, cluster: &Cluster) -> Result<Option<Duration>, ClusterError> {
        let name = cluster.name_any();
        self.create_execution_space(&name).await?;

        let ready = cluster
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == CLUSTER_CONDITION_READY)
            .map(|c| c.status.as_str());
        let (add, remove) = taints::for_ready_status(ready);
        let now = Time(k8s_openapi::jiff::Timestamp::now());
        let new_taints = taints::apply(&cluster.spec.taints, &add, &remove, &now);
        let has_finalizer = cluster.finalizers().iter().any(|f| f == CLUSTER_CONTROLLER);
        if new_taints == cluster.spec.taints && has_finalizer {
            return Ok(None);
        }
        let mut finalizers = cluster.finalizers().to_vec();
        if !has_finalizer {
            finalizers.push(CLUSTER_CONTROLLER.to_owned());
        }
        // One write for both, guarded by the resourceVersion read, like Karmada's Update.
        let patch = json!({
            "metadata": {
                "resourceVersion": cluster.resource_version(),
                "finalizers": finalizers,
            },
            "spec": {"taints": new_taints},
        });
        match Api::<Cluster>::all(self.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(None),
            // The newer version is on its way through the watch and wakes us again.
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(None),
            Err(kube::Error::Api(s)) if s.is_not_found() => Ok(None),
            Err(e) => Err(kube_err(format!("updating cluster {name}"))(e)),
        }
    }

    /// createExecutionSpace: the namespace `karmada-es-<cluster>`, created only when absent.
    async fn create_execution_space(&self, cluster: &str) -> Result<(), ClusterError> {
        let space = names::execution_space_name(cluster);
        let namespaces = Api::<Namespace>::all(self.client.clone());
        if namespaces
            .get_opt(&space)
            .await
            .map_err(kube_err(format!("reading namespace {space}")))?
            .is_some()
        {
            return Ok(());
        }
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(space.clone()),
                labels: Some(system_labels()),
                ..Default::default()
            },
            ..Default::default()
        };
        match namespaces.create(&PostParams::default(), &ns).await {
            Ok(_) => {
                tracing::info!(cluster, namespace = %space, "created execution space");
                Ok(())
            }
            Err(kube::Error::Api(s)) if s.is_already_exists() => Ok(()),
            Err(e) => Err(kube_err(format!("creating namespace {space}"))(e)),
        }
    }

    /// removeCluster: Works and execution space first, then bindings must no longer target
    /// the cluster, then the finalizer goes.
    async fn remove(&self, cluster: &Cluster) -> Result<Option<Duration>, ClusterError> {
        let name = cluster.name_any();
        if !cluster.finalizers().iter().any(|f| f == CLUSTER_CONTROLLER) {
            return Ok(None);
        }
        let space = names::execution_space_name(&name);
        let works = Api::<Work>::namespaced(self.client.clone(), &space);
        match works
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => return Err(kube_err(format!("deleting the Works in {space}"))(e)),
        }
        let namespaces = Api::<Namespace>::all(self.client.clone());
        match namespaces.delete(&space, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.is_not_found() => {}
            Err(e) => return Err(kube_err(format!("deleting namespace {space}"))(e)),
        }
        if namespaces
            .get_opt(&space)
            .await
            .map_err(kube_err(format!("reading namespace {space}")))?
            .is_some()
        {
            tracing::debug!(cluster = %name, "waiting for the execution space to be deleted");
            return Ok(Some(self.cleanup_check_interval));
        }
        if self.targeted_by_bindings(&name).await? {
            tracing::debug!(cluster = %name, "waiting for bindings to stop targeting the cluster");
            return Ok(Some(self.cleanup_check_interval));
        }
        crate::metrics::cleanup_cluster(&name);
        let finalizers: Vec<String> = cluster
            .finalizers()
            .iter()
            .filter(|f| f.as_str() != CLUSTER_CONTROLLER)
            .cloned()
            .collect();
        let patch = json!({
            "metadata": {"resourceVersion": cluster.resource_version(), "finalizers": finalizers}
        });
        match Api::<Cluster>::all(self.client.clone())
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                tracing::info!(cluster = %name, "removed cluster");
                Ok(None)
            }
            Err(kube::Error::Api(s)) if s.code == 409 || s.is_not_found() => Ok(None),
            Err(e) => Err(kube_err(format!(
                "removing the finalizer of cluster {name}"
            ))(e)),
        }
    }

    /// isTargetClusterRemoved, inverted: whether any binding still schedules to the cluster.
    async fn targeted_by_bindings(&self, cluster: &str) -> Result<bool, ClusterError> {
        let rbs = Api::<ResourceBinding>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(kube_err("listing ResourceBindings"))?;
        if rbs
            .items
            .iter()
            .any(|rb| rb.spec.clusters.iter().any(|t| t.name == cluster))
        {
            return Ok(true);
        }
        let crbs = Api::<ClusterResourceBinding>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map_err(kube_err("listing ClusterResourceBindings"))?;
        Ok(crbs
            .items
            .iter()
            .any(|rb| rb.spec.clusters.iter().any(|t| t.name == cluster)))
    }
}

impl Reconciler for ClusterReconciler {
    async fn reconcile(&mut self, cluster: Arc<Cluster>) -> Result<Option<Duration>, ClusterError> {
        if cluster.metadata.deletion_timestamp.is_some() {
            self.remove(&cluster).await
        } else {
            self.sync(&cluster).await
        }
    }
}
