//! `apps.karmada.io/v1alpha1` (pkg/apis/apps/v1alpha1/workloadrebalancer_types.go).

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::karmada_resource;

/// Result of a successful rebalance of one workload.
pub const REBALANCE_SUCCESSFUL: &str = "Successful";
/// Result of a failed rebalance of one workload.
pub const REBALANCE_FAILED: &str = "Failed";
/// Reason of a failure: the workload's binding does not exist.
pub const REBALANCE_OBJECT_NOT_FOUND: &str = "ReferencedBindingNotFound";

/// A one-off job that reschedules the listed workloads from scratch (ignoring where their
/// replicas are now) and reports the outcome per workload.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct WorkloadRebalancer {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Which workloads to rebalance.
    pub spec: WorkloadRebalancerSpec,
    /// What happened to each of them.
    #[serde(default)]
    pub status: WorkloadRebalancerStatus,
}

karmada_resource!(
    WorkloadRebalancer,
    group: "apps.karmada.io",
    version: "v1alpha1",
    plural: "workloadrebalancers",
    scope: ClusterResourceScope,
    status: unless_empty
);

/// The desired behaviour of a WorkloadRebalancer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRebalancerSpec {
    /// The workloads (resource templates) to rebalance; at least one.
    #[schemars(length(min = 1))]
    pub workloads: Vec<ObjectReference>,
    /// Seconds after every workload finished (Successful or Failed) when the rebalancer is
    /// deleted; never when unset, at once when 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
}

/// A resource template.
#[derive(
    Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// API version of the resource.
    pub api_version: String,
    /// Kind of the resource.
    pub kind: String,
    /// Name of the resource.
    pub name: String,
    /// Namespace of the resource; empty for cluster-scoped resources.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// The observed state of a WorkloadRebalancer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRebalancerStatus {
    /// The outcome for each workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub observed_workloads: Vec<ObservedWorkload>,
    /// The generation the controller acted on.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
    /// When every workload had finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_time: Option<Time>,
}

fn is_zero(n: &i64) -> bool {
    *n == 0
}

impl WorkloadRebalancerStatus {
    /// Whether nothing was reported yet.
    pub fn is_empty(&self) -> bool {
        self.observed_workloads.is_empty()
            && self.observed_generation == 0
            && self.finish_time.is_none()
    }
}

/// The outcome for one workload.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObservedWorkload {
    /// The workload.
    pub workload: ObjectReference,
    /// Successful or Failed; empty while pending.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub result: String,
    /// Why it failed (ReferencedBindingNotFound).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}
