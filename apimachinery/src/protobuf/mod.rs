//! Kubernetes protobuf (`application/vnd.kubernetes.protobuf`) in both directions: request
//! bodies turned into the JSON kube-apiserver's JSON serializer prints for the same object, and
//! objects turned into the protobuf responses kube-apiserver writes for clients that ask for it.
//!
//! A body is the magic `k8s\0` followed by a `runtime.Unknown` whose `typeMeta` names the kind
//! and whose `raw` holds the kind's `generated.proto` message (apimachinery's
//! `runtime/serializer/protobuf`). Each supported kind is converted with its `k8s-pb` message,
//! field by field following the Go struct's JSON tags (see `fields.rs`); one table of fields
//! drives both directions.

mod encode;
mod extra_value;
mod fields;
mod intstr;
mod json;
mod jsonschema;
mod quantity;
mod raw;
#[cfg(test)]
mod testing;
#[cfg(test)]
mod tests;
mod time;

use k8s_pb::api;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::apis::meta::v1beta1 as meta_v1beta1;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use prost::Message;
use serde_json::Value;

use json::{Ctx, Enc, FromJson, ToJson};

pub use encode::{Codec, ListWriter, envelope, watch_event};

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: &[u8; 4] = b"k8s\0";

/// Why a protobuf body could not be turned into JSON.
#[derive(Debug, thiserror::Error)]
pub enum ProtobufError {
    /// The body names a kind this server cannot read as protobuf (answer 415).
    #[error(
        "protobuf is not supported for kind {kind:?} in {api_version:?}; send the object as application/json"
    )]
    UnsupportedKind {
        /// `typeMeta.apiVersion` of the envelope.
        api_version: String,
        /// `typeMeta.kind` of the envelope.
        kind: String,
    },
    /// The envelope's `contentEncoding` is set; only unencoded bodies are read (answer 415).
    #[error("protobuf content encoding {0:?} is not supported")]
    UnsupportedEncoding(String),
    /// The bytes are not a valid protobuf object (answer 400).
    #[error("invalid protobuf body: {0}")]
    Malformed(String),
    /// An object's JSON does not fit its protobuf message (a server error).
    #[error("{}", unencodable_message(.path, .reason))]
    Unencodable {
        /// JSON path of the value, e.g. `spec.replicas` (empty: the object itself).
        path: String,
        /// What is wrong with it.
        reason: String,
    },
}

fn unencodable_message(path: &str, reason: &str) -> String {
    if path.is_empty() {
        format!("the object cannot be encoded as protobuf: {reason}")
    } else {
        format!("field {path} cannot be encoded as protobuf: {reason}")
    }
}

/// Whether `body` starts like a Kubernetes protobuf body.
pub fn is_protobuf(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// Decodes a Kubernetes protobuf body into the object's JSON, with `apiVersion` and `kind`
/// taken from the envelope.
pub fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    let mut obj = decode_nested(body, Ctx::default())?;
    stamp_embedded_types(&mut obj);
    Ok(obj)
}

/// What protobuf has no field for but kube's decoding restores: a StatefulSet's claim
/// templates carry no TypeMeta in `generated.proto`, and apps/v1's conversion
/// (`Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec`) stamps each with
/// `v1`/`PersistentVolumeClaim`, so an object read back equals the one written.
fn stamp_embedded_types(obj: &mut Value) {
    if obj.get("apiVersion").and_then(Value::as_str) != Some("apps/v1")
        || obj.get("kind").and_then(Value::as_str) != Some("StatefulSet")
    {
        return;
    }
    let Some(templates) = obj
        .pointer_mut("/spec/volumeClaimTemplates")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for t in templates.iter_mut().filter_map(Value::as_object_mut) {
        t.insert("apiVersion".into(), Value::String("v1".into()));
        t.insert("kind".into(), Value::String("PersistentVolumeClaim".into()));
    }
}

/// The `(apiVersion, kind)` pairs [`decode`] understands. `DeleteOptions` is also accepted under
/// any other `apiVersion`, since Kubernetes registers it in every group version.
pub fn supported_kinds() -> impl Iterator<Item = (&'static str, &'static str)> {
    KINDS.iter().map(|k| (k.api_version, k.kind))
}

/// Decodes any protobuf body this server writes (objects, lists' kinds aside, and response
/// kinds such as Status) into JSON; for reading responses back (audit, tests).
pub fn decode_response(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_envelope(body, Ctx::default(), true, |api_version, kind| {
        // Legacy discovery documents leave their apiVersion out (`stripVersionEncoder`).
        let api_version = if api_version.is_empty() {
            "v1"
        } else {
            api_version
        };
        find(api_version, kind).map(|k| k.convert)
    })
}

fn decode_nested(body: &[u8], ctx: Ctx) -> Result<Value, ProtobufError> {
    decode_envelope(body, ctx, false, |api_version, kind| {
        KINDS
            .iter()
            .find(|k| k.api_version == api_version && k.kind == kind)
            .map(|k| k.convert)
            .or_else(|| (kind == "DeleteOptions").then_some(convert::<meta::DeleteOptions>))
    })
}

/// The converter of a body's kind.
type Converter = fn(&[u8], Ctx) -> Result<Value, ProtobufError>;

fn decode_envelope(
    body: &[u8],
    ctx: Ctx,
    unversioned: bool,
    lookup: impl Fn(&str, &str) -> Option<Converter>,
) -> Result<Value, ProtobufError> {
    let envelope = body.strip_prefix(MAGIC.as_slice()).ok_or_else(|| {
        ProtobufError::Malformed("the body does not start with the protobuf magic k8s\\0".into())
    })?;
    if envelope.is_empty() {
        return Err(ProtobufError::Malformed("empty body".into()));
    }
    let unknown = Unknown::decode(envelope)
        .map_err(|e| ProtobufError::Malformed(format!("runtime.Unknown: {e}")))?;
    let encoding = unknown.content_encoding.unwrap_or_default();
    if !encoding.is_empty() {
        return Err(ProtobufError::UnsupportedEncoding(encoding));
    }
    let type_meta = unknown.type_meta.unwrap_or_default();
    let api_version = type_meta.api_version.unwrap_or_default();
    let kind = type_meta.kind.unwrap_or_default();
    if (api_version.is_empty() && !unversioned) || kind.is_empty() {
        return Err(ProtobufError::Malformed(format!(
            "the envelope does not name its object: apiVersion {api_version:?}, kind {kind:?}"
        )));
    }
    let Some(convert) = lookup(&api_version, &kind) else {
        return Err(ProtobufError::UnsupportedKind { api_version, kind });
    };
    let raw = unknown.raw.unwrap_or_default();
    let Value::Object(fields) = convert(&raw, ctx)? else {
        return Err(ProtobufError::Malformed(
            "object is not a JSON object".into(),
        ));
    };
    let mut object = serde_json::Map::with_capacity(fields.len() + 2);
    object.insert("kind".into(), Value::String(kind));
    if !api_version.is_empty() {
        object.insert("apiVersion".into(), Value::String(api_version));
    }
    object.extend(fields);
    Ok(Value::Object(object))
}

fn convert<M: Message + Default + ToJson>(raw: &[u8], ctx: Ctx) -> Result<Value, ProtobufError> {
    let message = M::decode(raw).map_err(|e| ProtobufError::Malformed(e.to_string()))?;
    message.to_json(ctx)
}

fn encode_message<M: Message + FromJson>(v: &Value, enc: Enc) -> Result<Vec<u8>, ProtobufError> {
    Ok(M::from_json(v, enc)?.encode_to_vec())
}

/// One kind with a protobuf message.
#[derive(Debug)]
struct Kind {
    api_version: &'static str,
    kind: &'static str,
    convert: Converter,
    encode: fn(&Value, Enc) -> Result<Vec<u8>, ProtobufError>,
    /// A message of the kind with every field set (tests).
    #[cfg(test)]
    sample: fn() -> Vec<u8>,
}

#[cfg(test)]
fn sample<M: Message + testing::Populate>() -> Vec<u8> {
    M::populate(&mut testing::Gen::default()).encode_to_vec()
}

macro_rules! kinds {
    ($name:ident: $($api_version:literal $kind:literal => $ty:ty,)*) => {
        const $name: &[Kind] = &[$(
            Kind {
                api_version: $api_version,
                kind: $kind,
                convert: convert::<$ty>,
                encode: encode_message::<$ty>,
                #[cfg(test)]
                sample: sample::<$ty>,
            },
        )*];
    };
}

/// The kind with a protobuf message of this `apiVersion` and `kind`, objects or responses.
fn find(api_version: &str, kind: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .chain(RESPONSE_KINDS)
        .find(|k| k.api_version == api_version && k.kind == kind)
}

// Keep in step with ROOTS in gen_fields.py.
kinds! { KINDS:
    "v1" "Namespace" => api::core::v1::Namespace,
    "v1" "ConfigMap" => api::core::v1::ConfigMap,
    "v1" "Secret" => api::core::v1::Secret,
    "v1" "Service" => api::core::v1::Service,
    "v1" "ServiceAccount" => api::core::v1::ServiceAccount,
    "v1" "Event" => api::core::v1::Event,
    "v1" "PersistentVolumeClaim" => api::core::v1::PersistentVolumeClaim,
    "v1" "PersistentVolume" => api::core::v1::PersistentVolume,
    "v1" "Pod" => api::core::v1::Pod,
    "v1" "PodTemplate" => api::core::v1::PodTemplate,
    "v1" "ReplicationController" => api::core::v1::ReplicationController,
    "v1" "Node" => api::core::v1::Node,
    "v1" "Endpoints" => api::core::v1::Endpoints,
    "v1" "ResourceQuota" => api::core::v1::ResourceQuota,
    "v1" "LimitRange" => api::core::v1::LimitRange,
    "v1" "Binding" => api::core::v1::Binding,
    "v1" "ComponentStatus" => api::core::v1::ComponentStatus,
    "v1" "DeleteOptions" => meta::DeleteOptions,
    "apps/v1" "Deployment" => api::apps::v1::Deployment,
    "apps/v1" "StatefulSet" => api::apps::v1::StatefulSet,
    "apps/v1" "DaemonSet" => api::apps::v1::DaemonSet,
    "apps/v1" "ReplicaSet" => api::apps::v1::ReplicaSet,
    "apps/v1" "ControllerRevision" => api::apps::v1::ControllerRevision,
    "batch/v1" "Job" => api::batch::v1::Job,
    "batch/v1" "CronJob" => api::batch::v1::CronJob,
    "coordination.k8s.io/v1" "Lease" => api::coordination::v1::Lease,
    "rbac.authorization.k8s.io/v1" "Role" => api::rbac::v1::Role,
    "rbac.authorization.k8s.io/v1" "ClusterRole" => api::rbac::v1::ClusterRole,
    "rbac.authorization.k8s.io/v1" "RoleBinding" => api::rbac::v1::RoleBinding,
    "rbac.authorization.k8s.io/v1" "ClusterRoleBinding" => api::rbac::v1::ClusterRoleBinding,
    "authentication.k8s.io/v1" "TokenRequest" => api::authentication::v1::TokenRequest,
    "authentication.k8s.io/v1" "TokenReview" => api::authentication::v1::TokenReview,
    "authentication.k8s.io/v1" "SelfSubjectReview" => api::authentication::v1::SelfSubjectReview,
    "authorization.k8s.io/v1" "SelfSubjectAccessReview" => api::authorization::v1::SelfSubjectAccessReview,
    "authorization.k8s.io/v1" "SelfSubjectRulesReview" => api::authorization::v1::SelfSubjectRulesReview,
    "authorization.k8s.io/v1" "SubjectAccessReview" => api::authorization::v1::SubjectAccessReview,
    "authorization.k8s.io/v1" "LocalSubjectAccessReview" => api::authorization::v1::LocalSubjectAccessReview,
    "autoscaling/v1" "Scale" => api::autoscaling::v1::Scale,
    "autoscaling/v1" "HorizontalPodAutoscaler" => api::autoscaling::v1::HorizontalPodAutoscaler,
    "autoscaling/v2" "HorizontalPodAutoscaler" => api::autoscaling::v2::HorizontalPodAutoscaler,
    "events.k8s.io/v1" "Event" => api::events::v1::Event,
    "networking.k8s.io/v1" "Ingress" => api::networking::v1::Ingress,
    "networking.k8s.io/v1" "IngressClass" => api::networking::v1::IngressClass,
    "networking.k8s.io/v1" "NetworkPolicy" => api::networking::v1::NetworkPolicy,
    "policy/v1" "PodDisruptionBudget" => api::policy::v1::PodDisruptionBudget,
    "policy/v1" "Eviction" => api::policy::v1::Eviction,
    "admissionregistration.k8s.io/v1" "MutatingWebhookConfiguration" => api::admissionregistration::v1::MutatingWebhookConfiguration,
    "admissionregistration.k8s.io/v1" "ValidatingWebhookConfiguration" => api::admissionregistration::v1::ValidatingWebhookConfiguration,
    "admissionregistration.k8s.io/v1" "ValidatingAdmissionPolicy" => api::admissionregistration::v1::ValidatingAdmissionPolicy,
    "admissionregistration.k8s.io/v1" "ValidatingAdmissionPolicyBinding" => api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    "certificates.k8s.io/v1" "CertificateSigningRequest" => api::certificates::v1::CertificateSigningRequest,
    "scheduling.k8s.io/v1" "PriorityClass" => api::scheduling::v1::PriorityClass,
    "discovery.k8s.io/v1" "EndpointSlice" => api::discovery::v1::EndpointSlice,
    "apiextensions.k8s.io/v1" "CustomResourceDefinition" => apiextensions::CustomResourceDefinition,
    "apiregistration.k8s.io/v1" "APIService" => apiregistration::APIService,
    "storage.k8s.io/v1" "StorageClass" => api::storage::v1::StorageClass,
    "storage.k8s.io/v1" "CSIDriver" => api::storage::v1::CSIDriver,
    "storage.k8s.io/v1" "CSINode" => api::storage::v1::CSINode,
    "storage.k8s.io/v1" "CSIStorageCapacity" => api::storage::v1::CSIStorageCapacity,
    "storage.k8s.io/v1" "VolumeAttachment" => api::storage::v1::VolumeAttachment,
    "node.k8s.io/v1" "RuntimeClass" => api::node::v1::RuntimeClass,
    "flowcontrol.apiserver.k8s.io/v1" "FlowSchema" => api::flowcontrol::v1::FlowSchema,
    "flowcontrol.apiserver.k8s.io/v1" "PriorityLevelConfiguration" => api::flowcontrol::v1::PriorityLevelConfiguration,
}

// What responses carry besides objects (never request bodies): errors, metadata-only views and
// discovery documents. Keep in step with ROOTS in gen_fields.py.
kinds! { RESPONSE_KINDS:
    "v1" "Status" => meta::Status,
    "meta.k8s.io/v1" "PartialObjectMetadata" => meta::PartialObjectMetadata,
    "meta.k8s.io/v1" "PartialObjectMetadataList" => meta::PartialObjectMetadataList,
    "meta.k8s.io/v1beta1" "PartialObjectMetadata" => meta::PartialObjectMetadata,
    "meta.k8s.io/v1beta1" "PartialObjectMetadataList" => meta_v1beta1::PartialObjectMetadataList,
    "v1" "APIVersions" => meta::APIVersions,
    "v1" "APIGroupList" => meta::APIGroupList,
    "v1" "APIGroup" => meta::APIGroup,
    "v1" "APIResourceList" => meta::APIResourceList,
    "apidiscovery.k8s.io/v2" "APIGroupDiscoveryList" => api::apidiscovery::v2::APIGroupDiscoveryList,
    "apidiscovery.k8s.io/v2beta1" "APIGroupDiscoveryList" => api::apidiscovery::v2beta1::APIGroupDiscoveryList,
}
