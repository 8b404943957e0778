//! `work.karmada.io/v1alpha1` ResourceBinding and ClusterResourceBinding: the first binding
//! API, still served beside `v1alpha2` (where objects are stored) and converted to and from it
//! (see [`crate::work::conversion`]).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::{karmada_resource, omit};

/// A binding of a namespaced resource template to its PropagationPolicy and target clusters
/// (the `v1alpha1` form).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ResourceBinding {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The template and the clusters it goes to.
    pub spec: ResourceBindingSpec,
    /// The status collected from the member clusters.
    #[serde(default)]
    pub status: ResourceBindingStatus,
}

karmada_resource!(
    ResourceBinding,
    group: "work.karmada.io",
    version: "v1alpha1",
    plural: "resourcebindings",
    scope: NamespaceResourceScope,
    status: unless_empty
);

/// A binding of a cluster-scoped resource template to its ClusterPropagationPolicy and target
/// clusters (the `v1alpha1` form).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ClusterResourceBinding {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The template and the clusters it goes to.
    pub spec: ResourceBindingSpec,
    /// The status collected from the member clusters.
    #[serde(default)]
    pub status: ResourceBindingStatus,
}

karmada_resource!(
    ClusterResourceBinding,
    group: "work.karmada.io",
    version: "v1alpha1",
    plural: "clusterresourcebindings",
    scope: ClusterResourceScope,
    status: unless_empty
);

/// The desired state of a `v1alpha1` binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingSpec {
    /// The resource template to propagate.
    pub resource: ObjectReference,
    /// The member clusters the template goes to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<TargetCluster>,
}

/// Locates the resource template of a `v1alpha1` binding, with what one replica needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
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
    /// The template's resourceVersion when the binding was last synced.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Compute resources one replica requests.
    #[serde(
        default,
        rename = "resourcePerReplicas",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub replica_resource_requirements: BTreeMap<String, Quantity>,
    /// Total replica count of the template.
    #[serde(default, skip_serializing_if = "omit::is_zero_i32")]
    pub replicas: i32,
}

/// A member cluster of a `v1alpha1` binding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetCluster {
    /// Cluster name.
    pub name: String,
    /// Replicas assigned to this cluster.
    #[serde(default, skip_serializing_if = "omit::is_zero_i32")]
    pub replicas: i32,
}

/// The observed state of a `v1alpha1` binding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceBindingStatus {
    /// Latest observations: Scheduled and FullyApplied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::conditions")]
    pub conditions: Vec<Condition>,
    /// Status of the template in each target cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<AggregatedStatusItem>,
}

impl ResourceBindingStatus {
    /// True when nothing has been observed yet.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.aggregated_status.is_empty()
    }
}

/// The status of the template in one member cluster (the `v1alpha1` form).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AggregatedStatusItem {
    /// The member cluster.
    pub cluster_name: String,
    /// The status reflected from the member object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "object", "x-kubernetes-preserve-unknown-fields" = true))]
    pub status: Option<serde_json::Value>,
    /// Whether the template was applied to the cluster.
    #[serde(default, skip_serializing_if = "omit::is_false")]
    pub applied: bool,
    /// Why applying failed, when it did.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub applied_message: String,
}
