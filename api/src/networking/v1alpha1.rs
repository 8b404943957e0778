//! `networking.karmada.io/v1alpha1` (pkg/apis/networking/v1alpha1: service_types.go,
//! ingress_types.go, well_known_constants.go).

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::ServiceStatus;
use k8s_openapi::api::networking::v1::{IngressSpec, IngressStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::karmada_resource;

/// The exposure type that makes a Service reachable across clusters.
pub const EXPOSURE_CROSS_CLUSTER: &str = "CrossCluster";
/// The exposure type of a load balancer in front of the clusters.
pub const EXPOSURE_LOAD_BALANCER: &str = "LoadBalancer";
/// The condition of the Service having been propagated.
pub const SERVICE_APPLIED_CONDITION: &str = "ServiceApplied";
/// The condition of the EndpointSlices having been dispatched.
pub const ENDPOINT_SLICE_DISPATCHED_CONDITION: &str = "EndpointSliceDispatched";
/// The permanent id the mutating webhook gives every MultiClusterService.
pub const PERMANENT_ID_LABEL: &str = "multiclusterservice.karmada.io/permanent-id";
/// Names, on the Service and its binding, the MultiClusterService that claimed it.
pub const NAME_ANNOTATION: &str = "multiclusterservice.karmada.io/name";
/// Names, on the Service and its binding, the namespace of that MultiClusterService.
pub const NAMESPACE_ANNOTATION: &str = "multiclusterservice.karmada.io/namespace";

/// Exposes a Service (of the same name and namespace) across clusters: its endpoints in the
/// provider clusters become reachable from the consumer clusters.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct MultiClusterService {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// How and where the Service is exposed.
    pub spec: MultiClusterServiceSpec,
    /// The state of the exposure: conditions ServiceApplied and EndpointSliceDispatched.
    #[serde(default)]
    pub status: ServiceStatus,
}

karmada_resource!(
    MultiClusterService,
    group: "networking.karmada.io",
    version: "v1alpha1",
    plural: "multiclusterservices",
    scope: NamespaceResourceScope,
    status: always
);

/// The desired exposure of a MultiClusterService.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterServiceSpec {
    /// How the Service is exposed: CrossCluster (endpoints dispatched between clusters) or
    /// LoadBalancer (a load balancer in front of them); one type.
    pub types: Vec<String>,
    /// The ports exposed; all the Service's when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ExposurePort>,
    /// Deprecated: the clusters the Service is exposed in; use providerClusters and
    /// consumerClusters.
    #[serde(default, skip_serializing_if = "ExposureRange::is_empty")]
    pub range: ExposureRange,
    /// Deprecated: the clusters that provide the Service; use providerClusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_provision_clusters: Vec<String>,
    /// Deprecated: the clusters that consume the Service; use consumerClusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_consumption_clusters: Vec<String>,
    /// The clusters whose endpoints serve the Service; every cluster when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_clusters: Vec<ClusterSelector>,
    /// The clusters that reach the Service; every cluster when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consumer_clusters: Vec<ClusterSelector>,
}

/// One cluster, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClusterSelector {
    /// The cluster's name.
    pub name: String,
}

/// A port the Service is exposed on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExposurePort {
    /// The port's name, unique among the ports (a DNS-1123 label).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The port number.
    pub port: i32,
}

/// Deprecated: where the Service is exposed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExposureRange {
    /// The clusters; every cluster when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cluster_names: Vec<String>,
}

impl ExposureRange {
    /// Whether no cluster is named.
    pub fn is_empty(&self) -> bool {
        self.cluster_names.is_empty()
    }
}

impl MultiClusterService {
    /// Whether the Service is exposed across clusters (`MultiClusterServiceCrossClusterEnabled`).
    pub fn cross_cluster(&self) -> bool {
        self.spec.types.iter().any(|t| t == EXPOSURE_CROSS_CLUSTER)
    }
}

/// An Ingress across clusters: the ingress spec, served by the clusters that run its
/// backends, for a multi-cluster ingress provider to implement.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct MultiClusterIngress {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The ingress rules, as an Ingress has them.
    #[serde(default)]
    pub spec: IngressSpec,
    /// The load balancer, the clusters taken out of traffic and where each backend runs.
    #[serde(default)]
    pub status: MultiClusterIngressStatus,
}

karmada_resource!(
    MultiClusterIngress,
    group: "networking.karmada.io",
    version: "v1alpha1",
    plural: "multiclusteringresses",
    scope: NamespaceResourceScope,
    status: always
);

/// The observed state of a MultiClusterIngress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiClusterIngressStatus {
    /// The load balancer, as an Ingress reports it.
    #[serde(flatten)]
    pub ingress: IngressStatus,
    /// The clusters whose traffic is blocked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub traffic_block_clusters: Vec<String>,
    /// Where each backend Service runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_locations: Vec<ServiceLocation>,
}

/// The clusters a backend Service runs in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ServiceLocation {
    /// The Service's name.
    pub name: String,
    /// The clusters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
}
