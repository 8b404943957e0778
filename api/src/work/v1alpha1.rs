//! `work.karmada.io/v1alpha1`: Work, the unit of dispatch to one member cluster.

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::{karmada_resource, string_enum};

/// The group/version string.
pub const API_VERSION: &str = "work.karmada.io/v1alpha1";

/// Condition type: the manifests were applied to the member cluster.
pub const WORK_APPLIED: &str = "Applied";
/// Condition type: the work is progressing (declared, not set by upstream controllers).
pub const WORK_PROGRESSING: &str = "Progressing";
/// Condition type: the workload is available (declared, not set by upstream controllers).
pub const WORK_AVAILABLE: &str = "Available";
/// Condition type: the work is degraded (declared, not set by upstream controllers).
pub const WORK_DEGRADED: &str = "Degraded";
/// Condition type: whether the work is being dispatched or is suspended.
pub const WORK_DISPATCHING: &str = "Dispatching";

/// The manifests to apply to one member cluster; lives in that cluster's execution namespace
/// `karmada-es-<cluster>`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct Work {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The manifests and dispatch settings.
    pub spec: WorkSpec,
    /// The observed state of the manifests in the member cluster.
    #[serde(default)]
    pub status: WorkStatus,
}

karmada_resource!(
    Work,
    group: "work.karmada.io",
    version: "v1alpha1",
    plural: "works",
    scope: NamespaceResourceScope,
    status: unless_empty
);

/// The desired state of a Work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkSpec {
    /// The manifests to apply.
    #[serde(default)]
    pub workload: WorkloadTemplate,
    /// When true, the work is not applied to (or updated in) the member cluster. Defaults to
    /// false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend_dispatching: Option<bool>,
    /// When true, the objects in the member cluster are kept when the work is deleted. Defaults
    /// to false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_resources_on_deletion: Option<bool>,
}

impl WorkSpec {
    /// Whether dispatching is suspended.
    pub fn is_suspended(&self) -> bool {
        self.suspend_dispatching.unwrap_or(false)
    }
}

/// The manifests of a Work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadTemplate {
    /// Complete Kubernetes objects to apply. In practice a Work carries one manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifests: Vec<Manifest>,
}

/// One complete Kubernetes object, kept as raw JSON.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
#[schemars(extend("type" = "object", "x-kubernetes-preserve-unknown-fields" = true))]
pub struct Manifest(pub serde_json::Value);

/// The observed state of a Work.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkStatus {
    /// Latest observations of the work: Applied and Dispatching are set by the execution and
    /// status controllers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "crate::schema::helpers::conditions")]
    pub conditions: Vec<Condition>,
    /// Status of each manifest as seen in the member cluster.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_statuses: Vec<ManifestStatus>,
}

impl WorkStatus {
    /// True when nothing has been observed yet.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty() && self.manifest_statuses.is_empty()
    }
}

/// The observed state of one manifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ManifestStatus {
    /// Which manifest this status belongs to.
    pub identifier: ResourceIdentifier,
    /// The status reflected from the member object by the resource interpreter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("type" = "object", "x-kubernetes-preserve-unknown-fields" = true))]
    pub status: Option<serde_json::Value>,
    /// Health of the member object: Healthy, Unhealthy or Unknown. A kind without a health
    /// interpreter counts as Healthy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<ResourceHealth>,
}

/// Identifies a manifest within a Work and the object it became.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceIdentifier {
    /// Index of the manifest in spec.workload.manifests.
    pub ordinal: i64,
    /// API group; empty for the core group.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Resource name (plural).
    pub resource: String,
    /// Namespace; empty for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Object name.
    pub name: String,
}

impl ResourceIdentifier {
    /// True when it names the object `apiVersion`/`kind` `namespace`/`name` (any ordinal).
    pub fn names(&self, api_version: &str, kind: &str, namespace: &str, name: &str) -> bool {
        let (group, version) = crate::names::split_api_version(api_version);
        self.group == group
            && self.version == version
            && self.kind == kind
            && self.namespace == namespace
            && self.name == name
    }
}

string_enum! {
    /// Health of a propagated object.
    ResourceHealth {
        /// The object is healthy.
        Healthy = "Healthy",
        /// The object is not healthy.
        Unhealthy = "Unhealthy",
        /// Health could not be determined.
        Unknown = "Unknown",
    }
}

mod binding;

pub use binding::{
    AggregatedStatusItem, ClusterResourceBinding, ObjectReference, ResourceBinding,
    ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};
