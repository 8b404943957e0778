//! FederatedResourceQuota (pkg/apis/policy/v1alpha1/federatedresourcequota_types.go): a
//! namespace's quota across every member cluster, optionally split into per-cluster
//! ResourceQuotas.

use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::karmada_resource;

/// Label on a quota's Works naming the FederatedResourceQuota's namespace.
pub const FEDERATED_RESOURCE_QUOTA_NAMESPACE_LABEL: &str =
    "federatedresourcequota.karmada.io/namespace";
/// Label on a quota's Works naming the FederatedResourceQuota.
pub const FEDERATED_RESOURCE_QUOTA_NAME_LABEL: &str = "federatedresourcequota.karmada.io/name";

/// FederatedResourceQuota sets aggregate quota restrictions enforced per namespace across all
/// clusters.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct FederatedResourceQuota {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Spec defines the desired quota.
    pub spec: FederatedResourceQuotaSpec,
    /// Status defines the actual enforced quota and its current usage.
    #[serde(default)]
    pub status: FederatedResourceQuotaStatus,
}

karmada_resource!(
    FederatedResourceQuota,
    group: "policy.karmada.io",
    version: "v1alpha1",
    plural: "federatedresourcequotas",
    scope: NamespaceResourceScope,
    status: unless_empty
);

/// The desired hard limits of a FederatedResourceQuota.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedResourceQuotaSpec {
    /// Overall is the set of desired hard limits for each named resource.
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub overall: BTreeMap<String, Quantity>,
    /// StaticAssignments specifies ResourceQuota settings for specific clusters: each becomes
    /// a ResourceQuota named as the FederatedResourceQuota in that cluster's namespace of the
    /// same name. Clusters not listed get no ResourceQuota.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub static_assignments: Vec<StaticClusterAssignment>,
}

/// The ResourceQuota of one member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StaticClusterAssignment {
    /// ClusterName is the name of the cluster the limits enforce to.
    pub cluster_name: String,
    /// Hard is the set of desired hard limits for each named resource.
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub hard: BTreeMap<String, Quantity>,
}

/// The enforced quota and its usage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FederatedResourceQuotaStatus {
    /// Overall is the set of enforced hard limits for each named resource.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub overall: BTreeMap<String, Quantity>,
    /// OverallUsed is the current observed total usage of the resource in the namespace: the
    /// members' ResourceQuota usage summed, or with FederatedQuotaEnforcement the scheduled
    /// replicas' requests of the namespace's ResourceBindings.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub overall_used: BTreeMap<String, Quantity>,
    /// AggregatedStatus is the observed quota usage of each cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<ClusterQuotaStatus>,
}

impl FederatedResourceQuotaStatus {
    /// Whether nothing has been reported (the status is then omitted).
    pub fn is_empty(&self) -> bool {
        self.overall.is_empty() && self.overall_used.is_empty() && self.aggregated_status.is_empty()
    }
}

/// The quota usage of one member cluster, as its ResourceQuota reports it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQuotaStatus {
    /// ClusterName is the name of the cluster the limits enforce to.
    pub cluster_name: String,
    /// Hard is the set of enforced hard limits for each named resource.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub hard: BTreeMap<String, Quantity>,
    /// Used is the current observed total usage of the resource in the namespace.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::resource_list")]
    pub used: BTreeMap<String, Quantity>,
}

impl FederatedResourceQuotaSpec {
    /// The hard limits assigned to `cluster` (extractClusterHardResourceList).
    pub fn cluster_hard(&self, cluster: &str) -> Option<&BTreeMap<String, Quantity>> {
        self.static_assignments
            .iter()
            .find(|a| a.cluster_name == cluster)
            .map(|a| &a.hard)
    }
}
