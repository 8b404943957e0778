//! `work.karmada.io/v1alpha2`: ResourceBinding and ClusterResourceBinding, the scheduling unit
//! that ties one resource template to its policy and to the clusters chosen for it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::v1alpha1::ResourceHealth;
use crate::policy::v1alpha1::{
    ConflictResolution, FailoverBehavior, Placement, PurgeMode, Suspension as PolicySuspension,
};
use crate::resource::{karmada_resource, omit};

/// The group/version string.
pub const API_VERSION: &str = "work.karmada.io/v1alpha2";

/// Condition type: the binding has been scheduled.
pub const SCHEDULED: &str = "Scheduled";
/// Condition type: every Work of the binding has been applied.
pub const FULLY_APPLIED: &str = "FullyApplied";

/// Scheduled reason: scheduling succeeded.
pub const BINDING_REASON_SUCCESS: &str = "Success";
/// Scheduled reason: the scheduler failed internally.
pub const BINDING_REASON_SCHEDULER_ERROR: &str = "SchedulerError";
/// Scheduled reason: no cluster fits the placement.
pub const BINDING_REASON_NO_CLUSTER_FIT: &str = "NoClusterFit";
/// Scheduled reason: the binding cannot be scheduled.
pub const BINDING_REASON_UNSCHEDULABLE: &str = "Unschedulable";
/// Scheduled reason: a FederatedResourceQuota would be exceeded.
pub const BINDING_REASON_QUOTA_EXCEEDED: &str = "QuotaExceeded";

/// Binds a namespaced resource template to its PropagationPolicy and to the clusters the
/// scheduler chose.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ResourceBinding {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The template, its requirements and the scheduling result.
    pub spec: ResourceBindingSpec,
    /// Scheduling progress and the status collected from member clusters.
    #[serde(default)]
    pub status: ResourceBindingStatus,
}

karmada_resource!(
    ResourceBinding,
    group: "work.karmada.io",
    version: "v1alpha2",
    plural: "resourcebindings",
    scope: NamespaceResourceScope,
    status: unless_empty
);

/// Binds a cluster-scoped resource template (or one claimed by a ClusterPropagationPolicy) to
/// its policy and to the clusters the scheduler chose.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ClusterResourceBinding {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The template, its requirements and the scheduling result.
    pub spec: ResourceBindingSpec,
    /// Scheduling progress and the status collected from member clusters.
    #[serde(default)]
    pub status: ResourceBindingStatus,
}

karmada_resource!(
    ClusterResourceBinding,
    group: "work.karmada.io",
    version: "v1alpha2",
    plural: "clusterresourcebindings",
    scope: ClusterResourceScope,
    status: unless_empty
);

/// The desired state of a binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingSpec {
    /// The resource template this binding is for.
    pub resource: ObjectReference,

    /// Whether dependencies of the template are propagated with it (copied from the policy).
    #[serde(default, skip_serializing_if = "omit::is_false")]
    pub propagate_deps: bool,

    /// What one replica needs (resources, node constraints), as reported by the resource
    /// interpreter; used to estimate cluster capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ReplicaRequirements>,

    /// Total replica count of the template.
    #[serde(default, skip_serializing_if = "omit::is_zero_i32")]
    pub replicas: i32,

    /// Per-component requirements of workloads with several pod templates (alpha, behind the
    /// MultiplePodTemplatesScheduling feature gate).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,

    /// The scheduling result: target clusters and their replicas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,

    /// The placement copied from the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<Placement>,

    /// Evictions in progress: clusters the workload is leaving, kept until the new placement is
    /// healthy or a timeout passes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub graceful_eviction_tasks: Vec<GracefulEvictionTask>,

    /// Bindings that depend on this one; set on bindings of dependencies propagated with
    /// propagateDeps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<BindingSnapshot>,

    /// The scheduler responsible for this binding (copied from the policy).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scheduler_name: String,

    /// Failover behaviour (copied from the policy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<FailoverBehavior>,

    /// What to do when the resource already exists in a member cluster: Abort or Overwrite.
    /// Defaults to Abort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-crd-default" = "Abort"))]
    pub conflict_resolution: Option<ConflictResolution>,

    /// Requests a fresh reschedule: when later than status.lastScheduledTime the scheduler
    /// places the workload from scratch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reschedule_triggered_at: Option<Time>,

    /// Which parts of propagation are paused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspension: Option<Suspension>,

    /// When true, objects in member clusters are kept when the template is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,

    /// The resolved scheduling priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_priority: Option<SchedulePriority>,

    /// The workload's affinity groups, resolved from the policy's workloadAffinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_affinity_groups: Option<WorkloadAffinityGroups>,
}

impl ResourceBindingSpec {
    /// The conflict resolution in force, Abort when unset.
    pub fn conflict_resolution(&self) -> ConflictResolution {
        self.conflict_resolution
            .unwrap_or(ConflictResolution::Abort)
    }

    /// Whether the given cluster is in the scheduling result.
    pub fn target_contains(&self, cluster: &str) -> bool {
        self.clusters.iter().any(|c| c.name == cluster)
    }
}

/// Identifies the resource template of a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version of the template.
    pub api_version: String,
    /// Kind of the template.
    pub kind: String,
    /// Namespace of the template; empty for cluster-scoped templates.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the template.
    pub name: String,
    /// UID of the template.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// The template's resourceVersion when the binding was last synced.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
}

/// What one replica needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReplicaRequirements {
    /// Node constraints of the replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    /// Compute resources one replica requests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub resource_request: BTreeMap<String, Quantity>,
    /// Namespace of the workload.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Priority class of the workload's pods.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// One pod template of a multi-template workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    /// Unique name of the component, at most 32 characters.
    #[schemars(length(max = 32))]
    pub name: String,
    /// Replicas of this component.
    pub replicas: i32,
    /// What one replica of this component needs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ComponentReplicaRequirements>,
}

/// What one replica of a component needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComponentReplicaRequirements {
    /// Node constraints of the replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_claim: Option<NodeClaim>,
    /// Compute resources one replica requests.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub resource_request: BTreeMap<String, Quantity>,
    /// Priority class of the component's pods.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub priority_class_name: String,
}

/// Node constraints of a replica, used to estimate how many fit in a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeClaim {
    /// The pod's required node affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_node_affinity: Option<NodeSelector>,
    /// The pod's node selector.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// The pod's tolerations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
}

/// A cluster chosen by the scheduler.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetCluster {
    /// Cluster name.
    pub name: String,
    /// Replicas assigned to this cluster.
    #[serde(default, skip_serializing_if = "omit::is_zero_i32")]
    pub replicas: i32,
}

/// A cluster the workload is being moved away from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GracefulEvictionTask {
    /// The cluster being evicted from.
    pub from_cluster: String,
    /// How the old copy is removed; taken from the policy's failover settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("enum" = ["Immediately", "Directly", "Graciously", "Gracefully", "Never"]))]
    pub purge_mode: Option<PurgeMode>,
    /// Replicas on the evicted cluster; unset for workloads without replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// Machine-readable CamelCase reason, 1 to 32 characters.
    #[schemars(
        length(min = 1, max = 32),
        regex(pattern = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
    )]
    pub reason: String,
    /// Human-readable detail, at most 1024 characters.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 1024))]
    pub message: String,
    /// The controller that created the task.
    pub producer: String,
    /// Longest wait, in seconds, before the old copy is removed regardless of the new copy's
    /// health. Cannot be combined with suppressDeletion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_period_seconds: Option<i32>,
    /// When true the old copy is kept until this is set to false. Cannot be combined with
    /// gracePeriodSeconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppress_deletion: Option<bool>,
    /// State captured from the old copy, to be injected into the new one as labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub preserved_label_state: BTreeMap<String, String>,
    /// When the task was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// The clusters the workload ran on before this failover.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters_before_failover: Vec<String>,
}

/// A dependent binding and the clusters it was scheduled to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindingSnapshot {
    /// Namespace of the dependent binding; empty for a ClusterResourceBinding.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the dependent binding.
    pub name: String,
    /// The dependent binding's scheduling result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
}

/// Which parts of propagation are paused for a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Suspension {
    /// The dispatching suspension copied from the policy.
    #[serde(flatten)]
    pub policy: PolicySuspension,
    /// When true the binding is not scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<bool>,
}

/// The scheduling priority resolved for a binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulePriority {
    /// Priority value; higher schedules first. Defaults to 0.
    #[serde(default, skip_serializing_if = "omit::is_zero_i32")]
    #[schemars(extend("x-crd-default" = 0))]
    pub priority: i32,
}

/// The workload's affinity group names.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadAffinityGroups {
    /// The affinity group the workload belongs to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub affinity_group: String,
    /// The anti-affinity group the workload belongs to.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub anti_affinity_group: String,
}

/// The observed state of a binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingStatus {
    /// The metadata.generation the scheduler last acted on.
    #[serde(default, skip_serializing_if = "omit::is_zero_i64")]
    pub scheduler_observed_generation: i64,
    /// The clusterAffinities group the last scheduling used.
    #[serde(
        default,
        rename = "schedulerObservingAffinityName",
        skip_serializing_if = "String::is_empty"
    )]
    pub scheduler_observed_affinity_name: String,
    /// When the binding was last scheduled successfully.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scheduled_time: Option<Time>,
    /// Latest observations: Scheduled and FullyApplied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::conditions")]
    pub conditions: Vec<Condition>,
    /// Status of the workload in each target cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<AggregatedStatusItem>,
}

impl ResourceBindingStatus {
    /// True when nothing has been observed yet.
    pub fn is_empty(&self) -> bool {
        self.scheduler_observed_generation == 0
            && self.scheduler_observed_affinity_name.is_empty()
            && self.last_scheduled_time.is_none()
            && self.conditions.is_empty()
            && self.aggregated_status.is_empty()
    }
}

/// The status of the workload in one member cluster.
///
/// Decoded as Karmada decodes it (Go's JSON decoding into the struct): a field that is missing
/// or `null` takes its zero value and unknown fields are ignored, so an item without
/// `clusterName` is the item of cluster `""`, not an error. The schema still requires
/// `clusterName`, as Karmada's CRD does.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AggregatedStatusItem {
    /// The member cluster.
    pub cluster_name: String,
    /// The status reflected from the member object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "object", "x-kubernetes-preserve-unknown-fields" = true))]
    pub status: Option<serde_json::Value>,
    /// Whether the Work was applied to the cluster.
    #[serde(default, skip_serializing_if = "omit::is_false")]
    pub applied: bool,
    /// Why applying failed, when it did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub applied_message: String,
    /// Health of the member object: Healthy, Unhealthy or Unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ResourceHealth>,
}

impl<'de> Deserialize<'de> for AggregatedStatusItem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Item;
        impl<'de> serde::de::Visitor<'de> for Item {
            type Value = AggregatedStatusItem;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an AggregatedStatusItem object")
            }

            // `null` leaves Go's struct untouched: the zero item.
            fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
                Ok(AggregatedStatusItem::default())
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut m: A,
            ) -> Result<Self::Value, A::Error> {
                let mut item = AggregatedStatusItem::default();
                while let Some(key) = m.next_key::<String>()? {
                    match key.as_str() {
                        "clusterName" => {
                            item.cluster_name =
                                m.next_value::<Option<String>>()?.unwrap_or_default()
                        }
                        "status" => item.status = m.next_value()?,
                        "applied" => {
                            item.applied = m.next_value::<Option<bool>>()?.unwrap_or_default()
                        }
                        "appliedMessage" => {
                            item.applied_message =
                                m.next_value::<Option<String>>()?.unwrap_or_default()
                        }
                        "health" => {
                            item.health = match m.next_value::<Option<String>>()?.as_deref() {
                                None | Some("") => None,
                                Some(h) => Some(h.parse().map_err(serde::de::Error::custom)?),
                            }
                        }
                        _ => {
                            m.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(item)
            }
        }
        d.deserialize_any(Item)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn status_items_decode_as_go_decodes_them() {
        let cases = [
            (
                json!({"status": {"ready": 1}, "extra": 1}),
                "",
                Some(json!({"ready": 1})),
                false,
            ),
            (
                json!({"clusterName": "m1", "applied": null, "appliedMessage": null, "health": "", "status": null}),
                "m1",
                None,
                false,
            ),
            (json!(null), "", None, false),
            (
                json!({"clusterName": null, "applied": true}),
                "",
                None,
                true,
            ),
        ];
        for (doc, cluster, status, applied) in cases {
            let item: AggregatedStatusItem = serde_json::from_value(doc.clone()).expect("decodes");
            assert_eq!(
                (
                    item.cluster_name.as_str(),
                    item.status,
                    item.applied,
                    item.health
                ),
                (cluster, status, applied, None),
                "{doc}"
            );
        }
        for doc in [
            json!({"clusterName": 5}),
            json!({"applied": "yes"}),
            json!([]),
            json!({"health": "Weird"}),
        ] {
            assert!(
                serde_json::from_value::<AggregatedStatusItem>(doc.clone()).is_err(),
                "{doc}"
            );
        }
    }

    #[test]
    fn the_schema_still_requires_cluster_name() {
        let schema = crate::schema::kind_schema("ResourceBinding").expect("schema");
        let item =
            &schema.structural["properties"]["status"]["properties"]["aggregatedStatus"]["items"];
        assert_eq!(item["required"], json!(["clusterName"]), "{item}");
    }
}
