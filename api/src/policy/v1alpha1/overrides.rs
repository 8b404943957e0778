//! OverridePolicy and ClusterOverridePolicy: per-cluster changes applied to propagated resources.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{ClusterAffinity, ResourceSelector};
use crate::resource::{karmada_resource, string_enum};

/// A namespaced policy that changes resources of its namespace per target cluster.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct OverridePolicy {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Which resources to change, and how.
    pub spec: OverrideSpec,
}

karmada_resource!(
    OverridePolicy,
    group: "policy.karmada.io",
    version: "v1alpha1",
    plural: "overridepolicies",
    scope: NamespaceResourceScope,
    status: none
);

/// A cluster-wide policy that changes resources per target cluster.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ClusterOverridePolicy {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Which resources to change, and how.
    pub spec: OverrideSpec,
}

karmada_resource!(
    ClusterOverridePolicy,
    group: "policy.karmada.io",
    version: "v1alpha1",
    plural: "clusteroverridepolicies",
    scope: ClusterResourceScope,
    status: none
);

/// The desired behaviour of an override policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverrideSpec {
    /// Resources the policy applies to; every resource when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_selectors: Vec<ResourceSelector>,

    /// Override rules, each scoped to a set of clusters. Rules apply in order, so a later rule
    /// wins over an earlier one on the same field.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub override_rules: Vec<RuleWithCluster>,

    /// Deprecated: use overrideRules. Clusters the top-level overriders apply to; cannot be
    /// combined with overrideRules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,

    /// Deprecated: use overrideRules. Overriders applied to targetCluster; cannot be combined
    /// with overrideRules.
    #[serde(default)]
    pub overriders: Overriders,
}

/// Overriders together with the clusters they apply to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleWithCluster {
    /// The clusters this rule applies to; every cluster when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_cluster: Option<ClusterAffinity>,
    /// The changes to make. Within a rule they apply in the order image, command, args, labels,
    /// annotations, field, plaintext.
    pub overriders: Overriders,
}

/// The changes an override rule makes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Overriders {
    /// Raw JSON patch operations on the manifest.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plaintext: Vec<PlaintextOverrider>,
    /// Changes to container images.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub image_overrider: Vec<ImageOverrider>,
    /// Changes to container commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_overrider: Vec<CommandArgsOverrider>,
    /// Changes to container arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args_overrider: Vec<CommandArgsOverrider>,
    /// Changes to metadata.labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub labels_overrider: Vec<LabelAnnotationOverrider>,
    /// Changes to metadata.annotations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub annotations_overrider: Vec<LabelAnnotationOverrider>,
    /// Patches to JSON or YAML documents stored inside string fields, such as ConfigMap data.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub field_overrider: Vec<FieldOverrider>,
}

impl Overriders {
    /// True when no overrider of the kinds the deprecated top-level form supports is set
    /// (fieldOverrider is not counted, as in Karmada's check).
    pub fn is_empty(&self) -> bool {
        self.plaintext.is_empty()
            && self.image_overrider.is_empty()
            && self.command_overrider.is_empty()
            && self.args_overrider.is_empty()
            && self.labels_overrider.is_empty()
            && self.annotations_overrider.is_empty()
    }
}

/// A change to labels or annotations.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LabelAnnotationOverrider {
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The keys (and, for add and replace, values) to change.
    pub value: BTreeMap<String, String>,
}

/// A change to one component of container images.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImageOverrider {
    /// Which image field to change. When unset, every container image of a Pod, ReplicaSet,
    /// Deployment, DaemonSet, StatefulSet or Job is changed; other kinds are left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<ImagePredicate>,
    /// The image component to change: Registry, Repository or Tag.
    pub component: ImageComponent,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The new value; not needed for remove.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub value: String,
}

/// Locates the image field to change.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImagePredicate {
    /// JSON pointer to the image field, e.g. /spec/template/spec/containers/0/image.
    pub path: String,
}

string_enum! {
    /// A part of a container image reference such as `docker.io/library/nginx:1.0`.
    #[derive(Default)]
    ImageComponent {
        /// The registry host, e.g. docker.io.
        #[default]
        Registry = "Registry",
        /// The repository path, e.g. library/nginx.
        Repository = "Repository",
        /// The tag, e.g. 1.0.
        Tag = "Tag",
    }
}

/// A change to the command or arguments of one container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandArgsOverrider {
    /// Name of the container.
    pub container_name: String,
    /// add (append) or remove.
    #[schemars(extend("enum" = ["add", "remove"]))]
    pub operator: OverriderOperator,
    /// Items to append or remove.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub value: Vec<String>,
}

/// A JSON patch operation on the manifest.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlaintextOverrider {
    /// JSON pointer to the target field.
    pub path: String,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The value to add or replace with; must be empty for remove.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

string_enum! {
    /// A patch operation.
    #[derive(Default)]
    OverriderOperator {
        /// Add the value.
        #[default]
        Add = "add",
        /// Remove the target.
        Remove = "remove",
        /// Replace the target with the value.
        Replace = "replace",
    }
}

/// Patches a JSON or YAML document stored in a string field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FieldOverrider {
    /// JSON pointer (RFC 6901) to the string field, e.g. /data/db-config.yaml. Use ~1 for '/'
    /// and ~0 for '~' inside a key.
    pub field_path: String,
    /// Operations for a field holding JSON. Exactly one of json and yaml must be set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub json: Vec<JsonPatchOperation>,
    /// Operations for a field holding YAML. Exactly one of json and yaml must be set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yaml: Vec<YamlPatchOperation>,
}

/// One operation on a JSON document held in a string field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JsonPatchOperation {
    /// JSON pointer inside the embedded document.
    pub sub_path: String,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The value to add or replace with; must be empty for remove.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}

/// One operation on a YAML document held in a string field.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct YamlPatchOperation {
    /// JSON pointer inside the embedded document.
    pub sub_path: String,
    /// add, remove or replace.
    pub operator: OverriderOperator,
    /// The value to add or replace with; must be empty for remove.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
}
