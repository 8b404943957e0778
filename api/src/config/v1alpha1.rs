//! `config.karmada.io/v1alpha1`: ResourceInterpreterCustomization (Lua scripts that tell
//! Karmada how to read and write a kind) and ResourceInterpreterWebhookConfiguration (HTTPS
//! endpoints that do the same), plus the ResourceInterpreterContext sent to those endpoints.

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::api::admissionregistration::v1::WebhookClientConfig;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::resource::karmada_resource;
use crate::work::v1alpha2::{AggregatedStatusItem, Component, ReplicaRequirements};

/// The group/version string.
pub const API_VERSION: &str = "config.karmada.io/v1alpha1";

/// The ResourceInterpreterContext versions this server sends.
pub const INTERPRETER_CONTEXT_VERSIONS: &[&str] = &["v1alpha1"];

/// How a specific resource kind is interpreted (replicas, status, health, dependencies...),
/// by Lua scripts. It has higher precedence than the interpreter webhooks and the built-in
/// interpreter.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ResourceInterpreterCustomization {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The configuration in detail.
    pub spec: ResourceInterpreterCustomizationSpec,
}

karmada_resource!(
    ResourceInterpreterCustomization,
    group: "config.karmada.io",
    version: "v1alpha1",
    plural: "resourceinterpretercustomizations",
    scope: ClusterResourceScope,
    status: none
);

/// The configuration of a customization.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterCustomizationSpec {
    /// The resource type the customization applies to.
    pub target: CustomizationTarget,
    /// The interpretation rules.
    pub customizations: CustomizationRules,
}

/// The resource type a customization applies to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizationTarget {
    /// The API version of the target resource.
    pub api_version: String,
    /// The kind of the target resource.
    pub kind: String,
}

/// The interpretation rules; each is a Lua script defining one function.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomizationRules {
    /// Keeps what member clusters change (e.g. replicas under a member HPA):
    /// `function Retain(desiredObj, observedObj)` returns the object to apply.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<LuaScriptRule>,
    /// The replicas and per-replica requirements: `function GetReplicas(desiredObj)` returns
    /// the replica count and a ReplicaRequirements table (or nil).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_resource: Option<LuaScriptRule>,
    /// The replicas and requirements of each component of a multi-template workload:
    /// `function GetComponents(desiredObj)` returns a list of components. Used only with the
    /// MultiplePodTemplatesScheduling feature gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component_resource: Option<LuaScriptRule>,
    /// Sets a member's share of replicas: `function ReviseReplica(desiredObj, desiredReplica)`
    /// returns the revised object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_revision: Option<LuaScriptRule>,
    /// The status recorded for a member object: `function ReflectStatus(observedObj)` returns
    /// the status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_reflection: Option<LuaScriptRule>,
    /// Folds the members' statuses into the resource template:
    /// `function AggregateStatus(desiredObj, statusItems)` returns the template with its status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_aggregation: Option<LuaScriptRule>,
    /// Whether a member object is healthy: `function InterpretHealth(observedObj)` returns a
    /// boolean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_interpretation: Option<LuaScriptRule>,
    /// The objects the resource depends on: `function GetDependencies(desiredObj)` returns a
    /// list of DependentObjectReferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_interpretation: Option<LuaScriptRule>,
}

/// A rule's Lua script.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LuaScriptRule {
    /// The Lua script: a whole function, declaration and implementation.
    pub lua_script: String,
}

impl CustomizationRules {
    /// The script of an operation, when set and not empty.
    pub fn script(&self, op: lua::Operation) -> Option<&str> {
        use lua::Operation::*;
        let rule = match op {
            Retain => &self.retention,
            InterpretReplica => &self.replica_resource,
            InterpretComponent => &self.component_resource,
            ReviseReplica => &self.replica_revision,
            InterpretStatus => &self.status_reflection,
            AggregateStatus => &self.status_aggregation,
            InterpretHealth => &self.health_interpretation,
            InterpretDependency => &self.dependency_interpretation,
        };
        rule.as_ref()
            .map(|r| r.lua_script.as_str())
            .filter(|s| !s.is_empty())
    }
}

/// Webhooks that interpret resources, called over HTTPS with a ResourceInterpreterContext.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, JsonSchema)]
pub struct ResourceInterpreterWebhookConfiguration {
    /// Standard object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The webhooks and the resources and operations each interprets.
    pub webhooks: Vec<ResourceInterpreterWebhook>,
}

impl k8s_openapi::Resource for ResourceInterpreterWebhookConfiguration {
    const API_VERSION: &'static str = API_VERSION;
    const GROUP: &'static str = "config.karmada.io";
    const KIND: &'static str = "ResourceInterpreterWebhookConfiguration";
    const VERSION: &'static str = "v1alpha1";
    const URL_PATH_SEGMENT: &'static str = "resourceinterpreterwebhookconfigurations";
    type Scope = ClusterResourceScope;
}

impl k8s_openapi::ListableResource for ResourceInterpreterWebhookConfiguration {
    const LIST_KIND: &'static str = "ResourceInterpreterWebhookConfigurationList";
}

impl k8s_openapi::Metadata for ResourceInterpreterWebhookConfiguration {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl Serialize for ResourceInterpreterWebhookConfiguration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut s = serializer.serialize_struct("ResourceInterpreterWebhookConfiguration", 4)?;
        s.serialize_field("apiVersion", API_VERSION)?;
        s.serialize_field("kind", <Self as k8s_openapi::Resource>::KIND)?;
        s.serialize_field("metadata", &self.metadata)?;
        s.serialize_field("webhooks", &self.webhooks)?;
        s.end()
    }
}

/// One interpreter webhook.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterWebhook {
    /// The webhook's name, a fully qualified domain name (e.g. `workloads.example.com`).
    pub name: String,
    /// How to reach the webhook: a URL or a Service, and the CA bundle that signed its
    /// serving certificate.
    pub client_config: WebhookClientConfig,
    /// Which resources and operations the webhook interprets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleWithOperations>,
    /// How long a call may take, 1 to 30 seconds. Defaults to 10 seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
    /// The ResourceInterpreterContext versions the webhook accepts, preferred first; this
    /// server sends `v1alpha1`.
    pub interpreter_context_versions: Vec<String>,
}

/// The operations and resources a rule matches.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleWithOperations {
    /// The operations the hook cares about (`InterpretReplica`, `ReviseReplica`, `Retain`,
    /// `AggregateStatus`, `InterpretStatus`, `InterpretHealth`, `InterpretDependency`,
    /// `InterpretComponent`), or `*` alone for all.
    pub operations: Vec<String>,
    /// The API groups the resources belong to; `*` is all groups.
    pub api_groups: Vec<String>,
    /// The API versions the resources belong to; `*` is all versions.
    pub api_versions: Vec<String>,
    /// The kinds the rule applies to; `*` is all kinds.
    pub kinds: Vec<String>,
}

impl RuleWithOperations {
    /// Whether the rule covers an object's group, version and kind for an operation
    /// (`interpreter.Matcher.Matches`).
    pub fn matches(&self, group: &str, version: &str, kind: &str, operation: &str) -> bool {
        let any = |items: &[String], want: &str| items.iter().any(|i| i == "*" || i == want);
        any(&self.operations, operation)
            && any(&self.api_groups, group)
            && any(&self.api_versions, version)
            && any(&self.kinds, kind)
    }
}

/// What an interpreter webhook receives and answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterContext {
    /// `config.karmada.io/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `ResourceInterpreterContext`.
    #[serde(default)]
    pub kind: String,
    /// The request, set by the caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<ResourceInterpreterRequest>,
    /// The response, set by the webhook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ResourceInterpreterResponse>,
}

/// A group, version and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// Group.
    pub group: String,
    /// Version.
    pub version: String,
    /// Kind.
    pub kind: String,
}

/// The attributes of one interpretation request.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterRequest {
    /// Identifies this call; the response carries it back.
    pub uid: String,
    /// The object's type.
    pub kind: GroupVersionKind,
    /// The object's name.
    pub name: String,
    /// The object's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The operation.
    pub operation: String,
    /// The object (the template, or the desired object for Retain).
    #[serde(default)]
    pub object: serde_json::Value,
    /// The object observed in a member (Retain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_object: Option<serde_json::Value>,
    /// The replicas to set (ReviseReplica).
    #[serde(default, rename = "replicas", skip_serializing_if = "Option::is_none")]
    pub desired_replicas: Option<i32>,
    /// The members' statuses (AggregateStatus).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregated_status: Vec<AggregatedStatusItem>,
}

/// A webhook's answer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceInterpreterResponse {
    /// The request's uid.
    #[serde(default)]
    pub uid: String,
    /// Whether the interpretation succeeded.
    #[serde(default)]
    pub successful: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<RequestStatus>,
    /// A JSON patch to the object (ReviseReplica, Retain, AggregateStatus), base64-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<k8s_openapi::ByteString>,
    /// The patch type: `JSONPatch`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// The requirements of each replica (InterpretReplica).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica_requirements: Option<ReplicaRequirements>,
    /// The replicas (InterpretReplica).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The components (InterpretComponent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub components: Vec<Component>,
    /// The dependencies (InterpretDependency).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<DependentObjectReference>,
    /// The reflected status (InterpretStatus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_status: Option<serde_json::Value>,
    /// The health (InterpretHealth).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
}

/// Why a webhook failed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestStatus {
    /// A message for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// An HTTP-like status code.
    #[serde(default, skip_serializing_if = "crate::resource::omit::is_zero_i32")]
    pub code: i32,
}

/// An object a resource depends on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DependentObjectReference {
    /// API version of the dependency.
    #[serde(default)]
    pub api_version: String,
    /// Kind of the dependency.
    #[serde(default)]
    pub kind: String,
    /// Namespace of the dependency.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Name of the dependency; empty when selected by labels.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Selects several dependencies by label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
}
