//! `cluster.karmada.io/v1alpha1`: Cluster, a member cluster registered with Karmada.

use std::collections::BTreeMap;

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::{karmada_resource, omit, string_enum};

/// The group/version string.
pub const API_VERSION: &str = "cluster.karmada.io/v1alpha1";

/// Condition type: the cluster is healthy and accepts workloads.
pub const CLUSTER_CONDITION_READY: &str = "Ready";
/// Condition type: status.apiEnablements lists every API of the cluster.
pub const CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS: &str = "CompleteAPIEnablements";

/// Key of the bearer token in the secrets referenced by secretRef and impersonatorSecretRef.
pub const SECRET_TOKEN_KEY: &str = "token";
/// Key of the CA bundle in the secret referenced by secretRef.
pub const SECRET_CA_DATA_KEY: &str = "caBundle";

/// A member cluster: how to reach it and what it reports about itself.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct Cluster {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// How to reach and classify the cluster.
    pub spec: ClusterSpec,
    /// The state last reported for the cluster.
    #[serde(default)]
    pub status: ClusterStatus,
}

karmada_resource!(
    Cluster,
    group: "cluster.karmada.io",
    version: "v1alpha1",
    plural: "clusters",
    scope: ClusterResourceScope,
    status: always
);

impl Cluster {
    /// The status of the Ready condition, if reported.
    pub fn ready_status(&self) -> Option<&str> {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == CLUSTER_CONDITION_READY)
            .map(|c| c.status.as_str())
    }
}

/// The desired state of a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterSpec {
    /// Unique identifier of the cluster, taken from its `cluster.clusterset.k8s.io`
    /// ClusterProperty or, failing that, from the UID of its kube-system namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 128000))]
    pub id: String,

    /// How resources reach the cluster: Push (the control plane applies them) or Pull (an
    /// agent in the cluster fetches them).
    pub sync_mode: ClusterSyncMode,

    /// URL of the cluster's Kubernetes API server, e.g. https://10.0.0.1:6443.
    #[serde(
        default,
        rename = "apiEndpoint",
        skip_serializing_if = "String::is_empty"
    )]
    pub api_endpoint: String,

    /// Secret in the control plane holding credentials for the cluster: `token` and
    /// `caBundle`. Required for Push clusters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<LocalSecretReference>,

    /// Secret holding the token of the impersonator service account used by the cluster proxy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonator_secret_ref: Option<LocalSecretReference>,

    /// Skip verification of the cluster's serving certificate. Insecure; for testing only.
    #[serde(
        default,
        rename = "insecureSkipTLSVerification",
        skip_serializing_if = "omit::is_false"
    )]
    pub insecure_skip_tls_verification: bool,

    /// Proxy used to reach the cluster; http, https and socks5 URLs are supported.
    #[serde(default, rename = "proxyURL", skip_serializing_if = "String::is_empty")]
    pub proxy_url: String,

    /// Headers sent with every proxied request; several values of one header are joined with
    /// commas.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub proxy_header: BTreeMap<String, String>,

    /// Name of the cloud provider running the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,

    /// Region the cluster runs in.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub region: String,

    /// Deprecated: use zones. Zone the cluster runs in; moved into zones on write.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub zone: String,

    /// Failure zones the cluster spans.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub zones: Vec<String>,

    /// Taints that keep workloads without matching tolerations off the cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,

    /// Resource grades used to summarise node capacity. Grades are contiguous intervals per
    /// resource; the default has nine grades for cpu and memory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_models: Vec<ResourceModel>,
}

string_enum! {
    /// How resources reach a member cluster.
    #[derive(Default)]
    ClusterSyncMode {
        /// The control plane applies resources to the cluster.
        #[default]
        Push = "Push",
        /// An agent in the cluster fetches and applies resources.
        Pull = "Pull",
    }
}

/// A secret in the control plane, by namespace and name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-go-required" = ["namespace", "name"]))]
#[serde(rename_all = "camelCase")]
pub struct LocalSecretReference {
    /// Namespace of the secret.
    #[serde(default)]
    pub namespace: String,
    /// Name of the secret.
    #[serde(default)]
    pub name: String,
}

/// One resource grade: for each resource, the interval a node must fall in.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-go-required" = ["grade", "ranges"]))]
#[serde(rename_all = "camelCase")]
pub struct ResourceModel {
    /// Grade index, starting at 0.
    #[serde(default)]
    pub grade: u64,
    /// The interval per resource.
    #[serde(default)]
    pub ranges: Vec<ResourceModelRange>,
}

/// The interval [min, max) of one resource within a grade.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-go-required" = ["name", "min", "max"]))]
#[serde(rename_all = "camelCase")]
pub struct ResourceModelRange {
    /// Resource name: cpu, memory, storage or ephemeral-storage.
    #[serde(default)]
    pub name: String,
    /// Inclusive lower bound.
    #[serde(default)]
    pub min: Quantity,
    /// Exclusive upper bound.
    #[serde(default)]
    pub max: Quantity,
}

/// The observed state of a member cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    /// Kubernetes version of the cluster.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kubernetes_version: String,
    /// API groups, versions and resources the cluster serves.
    #[serde(
        default,
        rename = "apiEnablements",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub api_enablements: Vec<ApiEnablement>,
    /// Latest observations: Ready and CompleteAPIEnablements.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// Node counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_summary: Option<NodeSummary>,
    /// Resource totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_summary: Option<ResourceSummary>,
    /// Remedies currently applied to the cluster, e.g. TrafficControl.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub remedy_actions: Vec<String>,
}

/// The resources one group/version of the cluster serves.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-go-required" = ["groupVersion"]))]
#[serde(rename_all = "camelCase")]
pub struct ApiEnablement {
    /// The group/version, e.g. apps/v1.
    #[serde(default)]
    pub group_version: String,
    /// The resources served in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ApiResource>,
}

/// One served resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-go-required" = ["name", "kind"]))]
#[serde(rename_all = "camelCase")]
pub struct ApiResource {
    /// Plural resource name, e.g. deployments.
    #[serde(default)]
    pub name: String,
    /// Kind, e.g. Deployment.
    #[serde(default)]
    pub kind: String,
}

/// Node counts of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeSummary {
    /// Number of nodes.
    #[serde(default, skip_serializing_if = "omit::is_zero_i32")]
    pub total_num: i32,
    /// Number of ready nodes.
    #[serde(default, skip_serializing_if = "omit::is_zero_i32")]
    pub ready_num: i32,
}

/// Resource totals of a cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSummary {
    /// Sum of node allocatable resources.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocatable: BTreeMap<String, Quantity>,
    /// Resources requested by pods not yet scheduled.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocating: BTreeMap<String, Quantity>,
    /// Resources requested by scheduled pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub allocated: BTreeMap<String, Quantity>,
    /// Number of nodes per resource grade.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allocatable_modelings: Vec<AllocatableModeling>,
}

/// The number of nodes in one resource grade.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("x-go-required" = ["grade", "count"]))]
#[serde(rename_all = "camelCase")]
pub struct AllocatableModeling {
    /// The grade index.
    #[serde(default)]
    pub grade: u64,
    /// Nodes in this grade.
    #[serde(default)]
    pub count: i64,
}

/// Options of the `clusters/{name}/proxy` subresource, read from the query string.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProxyOptions {
    /// Path to forward to the member cluster's API server.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub path: String,
}
