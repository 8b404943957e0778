//! Every supported kind, with every field set, read back through the k8s-openapi type: a field
//! with a wrong name is dropped by k8s-openapi and a value of the wrong shape fails to
//! deserialize, so the re-serialized object must equal the decoded JSON.

use std::collections::BTreeSet;

use k8s_openapi::api as oa;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as oa_apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as oa_meta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as oa_apiregistration;
use k8s_pb::api as pb;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as pb_apiextensions;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as pb_apiregistration;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::protobuf::decode;
use crate::protobuf::testing::{Gen, Populate, envelope};

/// JSON fields of Kubernetes 1.34 and 1.35 that k8s-pb 0.9 carries but k8s-openapi's `v1_33`
/// types do not know, as path suffixes (`[]` for any index); they are the only ones the round
/// trip may lose.
const NEWER_THAN_K8S_OPENAPI: &[&str] = &[
    "status.declaredFeatures",
    "status.allocatedResources",
    "status.resources",
    "projected.sources[].podCertificate",
    "env[].valueFrom.fileKeyRef",
    ".restartPolicyRules",
    "spec.hostnameOverride",
    "spec.workloadRef",
    "status.extendedResourceClaimStatus",
    "status.observedGeneration",
    "status.conditions[].observedGeneration",
    "spec.serviceAccountTokenInSecrets",
];

/// Differences between the decoded JSON and its k8s-openapi round trip.
#[derive(Default)]
struct Diff {
    /// Paths present in the decoded JSON only.
    dropped: Vec<String>,
    /// Anything else: changed values, fields k8s-openapi added.
    changed: Vec<String>,
}

fn compare(ours: &Value, theirs: &Value, path: &str, diff: &mut Diff) {
    match (ours, theirs) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, value) in a {
                let sub = format!("{path}.{key}");
                match b.get(key) {
                    Some(other) => compare(value, other, &sub, diff),
                    None => diff.dropped.push(sub),
                }
            }
            for key in b.keys().filter(|k| !a.contains_key(*k)) {
                if embedded_type_meta(path, key) {
                    continue;
                }
                diff.changed
                    .push(format!("{path}.{key}: added by k8s-openapi"));
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                compare(x, y, &format!("{path}[{i}]"), diff);
            }
        }
        (a, b) if a == b => {}
        (a, b) => diff.changed.push(format!("{path}: {a} became {b}")),
    }
}

/// k8s-openapi always writes `apiVersion` and `kind` of a whole object embedded in another (a
/// StatefulSet's claim templates, an APIGroupList's groups); protobuf does not carry them and
/// Go's JSON omits them.
fn embedded_type_meta(path: &str, key: &str) -> bool {
    matches!(key, "apiVersion" | "kind")
        && (path.contains(".volumeClaimTemplates[") || path.starts_with(".groups["))
}

/// Leaves (non-container values) in a JSON document.
fn leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaves).sum(),
        Value::Array(a) => a.iter().map(leaves).sum(),
        _ => 1,
    }
}

fn nulls(v: &Value, path: &str, out: &mut Vec<String>) {
    match v {
        Value::Null => out.push(path.to_owned()),
        Value::Object(m) => m
            .iter()
            .for_each(|(k, v)| nulls(v, &format!("{path}.{k}"), out)),
        Value::Array(a) => a.iter().for_each(|v| nulls(v, &format!("{path}[]"), out)),
        _ => {}
    }
}

/// Decodes a message of a request kind as a body, or of a response kind by its converter.
fn decode_any(
    api_version: &str,
    kind: &str,
    message: &impl prost::Message,
) -> Result<Value, crate::protobuf::ProtobufError> {
    if crate::protobuf::supported_kinds().any(|k| k == (api_version, kind)) {
        return decode(&envelope(api_version, kind, message));
    }
    let found = crate::protobuf::RESPONSE_KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
        .expect("a response kind");
    let mut json = (found.convert)(&message.encode_to_vec(), Default::default())?;
    json["apiVersion"] = api_version.into();
    json["kind"] = kind.into();
    Ok(json)
}

/// Decodes a fully populated `P` and checks it against the k8s-openapi type `O`; returns the
/// paths of the fields k8s-openapi dropped.
fn check<P, O>(api_version: &str, kind: &str) -> Vec<String>
where
    P: Populate + prost::Message,
    O: Serialize + DeserializeOwned,
{
    let message = P::populate(&mut Gen::default());
    let json = decode_any(api_version, kind, &message)
        .unwrap_or_else(|e| panic!("{api_version} {kind}: {e}"));
    assert_eq!(json["apiVersion"], api_version);
    assert_eq!(json["kind"], kind);
    assert!(leaves(&json) >= 5, "{kind}: suspiciously small: {json}");
    let mut null_paths = Vec::new();
    nulls(&json, "", &mut null_paths);
    assert!(
        null_paths.is_empty(),
        "{kind}: unset fields at {null_paths:?}"
    );

    let typed: O = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("{api_version} {kind}: k8s-openapi rejects the JSON: {e}"));
    let back = serde_json::to_value(&typed).unwrap();
    let mut diff = Diff::default();
    compare(&json, &back, "", &mut diff);
    assert!(
        diff.changed.is_empty(),
        "{api_version} {kind}: {:#?}",
        diff.changed
    );
    diff.dropped
        .into_iter()
        .map(|path| format!("{api_version} {kind}: {path}"))
        .collect()
}

/// `a[3].b` → `a[].b`.
fn normalize(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_index = false;
    for c in path.chars() {
        match c {
            '[' => {
                in_index = true;
                out.push('[');
            }
            ']' => {
                in_index = false;
                out.push(']');
            }
            _ if in_index => {}
            _ => out.push(c),
        }
    }
    out
}

macro_rules! fidelity {
    ($($api_version:literal $kind:literal => $pb:ty, $oa:ty;)*) => {
        /// The kinds covered here, for comparison with `supported_kinds`.
        const COVERED: &[(&str, &str)] = &[$(($api_version, $kind)),*];

        #[test]
        fn every_kind_survives_a_k8s_openapi_round_trip() {
            let mut dropped = BTreeSet::new();
            $( dropped.extend(check::<$pb, $oa>($api_version, $kind)); )*
            let mut used = BTreeSet::new();
            let mut unknown = Vec::new();
            for path in &dropped {
                match NEWER_THAN_K8S_OPENAPI.iter().find(|s| normalize(path).ends_with(*s)) {
                    Some(suffix) => {
                        used.insert(*suffix);
                    }
                    None => unknown.push(path),
                }
            }
            assert!(unknown.is_empty(), "fields unknown to k8s-openapi: {unknown:#?}");
            let expected: BTreeSet<&str> = NEWER_THAN_K8S_OPENAPI.iter().copied().collect();
            assert_eq!(used, expected, "the list of newer fields is stale");
        }
    };
}

fidelity! {
    "v1" "Namespace" => pb::core::v1::Namespace, oa::core::v1::Namespace;
    "v1" "ConfigMap" => pb::core::v1::ConfigMap, oa::core::v1::ConfigMap;
    "v1" "Secret" => pb::core::v1::Secret, oa::core::v1::Secret;
    "v1" "Service" => pb::core::v1::Service, oa::core::v1::Service;
    "v1" "ServiceAccount" => pb::core::v1::ServiceAccount, oa::core::v1::ServiceAccount;
    "v1" "Event" => pb::core::v1::Event, oa::core::v1::Event;
    "v1" "PersistentVolumeClaim" => pb::core::v1::PersistentVolumeClaim, oa::core::v1::PersistentVolumeClaim;
    "v1" "PersistentVolume" => pb::core::v1::PersistentVolume, oa::core::v1::PersistentVolume;
    "v1" "Pod" => pb::core::v1::Pod, oa::core::v1::Pod;
    "v1" "PodTemplate" => pb::core::v1::PodTemplate, oa::core::v1::PodTemplate;
    "v1" "ReplicationController" => pb::core::v1::ReplicationController, oa::core::v1::ReplicationController;
    "v1" "Node" => pb::core::v1::Node, oa::core::v1::Node;
    "v1" "Endpoints" => pb::core::v1::Endpoints, oa::core::v1::Endpoints;
    "v1" "ResourceQuota" => pb::core::v1::ResourceQuota, oa::core::v1::ResourceQuota;
    "v1" "LimitRange" => pb::core::v1::LimitRange, oa::core::v1::LimitRange;
    "v1" "Binding" => pb::core::v1::Binding, oa::core::v1::Binding;
    "v1" "DeleteOptions" => pb_meta::DeleteOptions, oa_meta::DeleteOptions;
    "apps/v1" "Deployment" => pb::apps::v1::Deployment, oa::apps::v1::Deployment;
    "apps/v1" "StatefulSet" => pb::apps::v1::StatefulSet, oa::apps::v1::StatefulSet;
    "apps/v1" "DaemonSet" => pb::apps::v1::DaemonSet, oa::apps::v1::DaemonSet;
    "apps/v1" "ReplicaSet" => pb::apps::v1::ReplicaSet, oa::apps::v1::ReplicaSet;
    "apps/v1" "ControllerRevision" => pb::apps::v1::ControllerRevision, oa::apps::v1::ControllerRevision;
    "batch/v1" "Job" => pb::batch::v1::Job, oa::batch::v1::Job;
    "batch/v1" "CronJob" => pb::batch::v1::CronJob, oa::batch::v1::CronJob;
    "coordination.k8s.io/v1" "Lease" => pb::coordination::v1::Lease, oa::coordination::v1::Lease;
    "rbac.authorization.k8s.io/v1" "Role" => pb::rbac::v1::Role, oa::rbac::v1::Role;
    "rbac.authorization.k8s.io/v1" "ClusterRole" => pb::rbac::v1::ClusterRole, oa::rbac::v1::ClusterRole;
    "rbac.authorization.k8s.io/v1" "RoleBinding" => pb::rbac::v1::RoleBinding, oa::rbac::v1::RoleBinding;
    "rbac.authorization.k8s.io/v1" "ClusterRoleBinding" => pb::rbac::v1::ClusterRoleBinding, oa::rbac::v1::ClusterRoleBinding;
    "authentication.k8s.io/v1" "TokenRequest" => pb::authentication::v1::TokenRequest, oa::authentication::v1::TokenRequest;
    "authentication.k8s.io/v1" "TokenReview" => pb::authentication::v1::TokenReview, oa::authentication::v1::TokenReview;
    "authentication.k8s.io/v1" "SelfSubjectReview" => pb::authentication::v1::SelfSubjectReview, oa::authentication::v1::SelfSubjectReview;
    "authorization.k8s.io/v1" "SelfSubjectAccessReview" => pb::authorization::v1::SelfSubjectAccessReview, oa::authorization::v1::SelfSubjectAccessReview;
    "authorization.k8s.io/v1" "SelfSubjectRulesReview" => pb::authorization::v1::SelfSubjectRulesReview, oa::authorization::v1::SelfSubjectRulesReview;
    "authorization.k8s.io/v1" "SubjectAccessReview" => pb::authorization::v1::SubjectAccessReview, oa::authorization::v1::SubjectAccessReview;
    "authorization.k8s.io/v1" "LocalSubjectAccessReview" => pb::authorization::v1::LocalSubjectAccessReview, oa::authorization::v1::LocalSubjectAccessReview;
    "autoscaling/v1" "Scale" => pb::autoscaling::v1::Scale, oa::autoscaling::v1::Scale;
    "autoscaling/v1" "HorizontalPodAutoscaler" => pb::autoscaling::v1::HorizontalPodAutoscaler, oa::autoscaling::v1::HorizontalPodAutoscaler;
    "autoscaling/v2" "HorizontalPodAutoscaler" => pb::autoscaling::v2::HorizontalPodAutoscaler, oa::autoscaling::v2::HorizontalPodAutoscaler;
    "events.k8s.io/v1" "Event" => pb::events::v1::Event, oa::events::v1::Event;
    "networking.k8s.io/v1" "Ingress" => pb::networking::v1::Ingress, oa::networking::v1::Ingress;
    "networking.k8s.io/v1" "IngressClass" => pb::networking::v1::IngressClass, oa::networking::v1::IngressClass;
    "networking.k8s.io/v1" "NetworkPolicy" => pb::networking::v1::NetworkPolicy, oa::networking::v1::NetworkPolicy;
    "policy/v1" "PodDisruptionBudget" => pb::policy::v1::PodDisruptionBudget, oa::policy::v1::PodDisruptionBudget;
    "policy/v1" "Eviction" => pb::policy::v1::Eviction, oa::policy::v1::Eviction;
    "admissionregistration.k8s.io/v1" "MutatingWebhookConfiguration" => pb::admissionregistration::v1::MutatingWebhookConfiguration, oa::admissionregistration::v1::MutatingWebhookConfiguration;
    "admissionregistration.k8s.io/v1" "ValidatingWebhookConfiguration" => pb::admissionregistration::v1::ValidatingWebhookConfiguration, oa::admissionregistration::v1::ValidatingWebhookConfiguration;
    "admissionregistration.k8s.io/v1" "ValidatingAdmissionPolicy" => pb::admissionregistration::v1::ValidatingAdmissionPolicy, oa::admissionregistration::v1::ValidatingAdmissionPolicy;
    "admissionregistration.k8s.io/v1" "ValidatingAdmissionPolicyBinding" => pb::admissionregistration::v1::ValidatingAdmissionPolicyBinding, oa::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
    "certificates.k8s.io/v1" "CertificateSigningRequest" => pb::certificates::v1::CertificateSigningRequest, oa::certificates::v1::CertificateSigningRequest;
    "scheduling.k8s.io/v1" "PriorityClass" => pb::scheduling::v1::PriorityClass, oa::scheduling::v1::PriorityClass;
    "discovery.k8s.io/v1" "EndpointSlice" => pb::discovery::v1::EndpointSlice, oa::discovery::v1::EndpointSlice;
    "apiextensions.k8s.io/v1" "CustomResourceDefinition" => pb_apiextensions::CustomResourceDefinition, oa_apiextensions::CustomResourceDefinition;
    "apiregistration.k8s.io/v1" "APIService" => pb_apiregistration::APIService, oa_apiregistration::APIService;
    "storage.k8s.io/v1" "StorageClass" => pb::storage::v1::StorageClass, oa::storage::v1::StorageClass;
    "storage.k8s.io/v1" "CSIDriver" => pb::storage::v1::CSIDriver, oa::storage::v1::CSIDriver;
    "storage.k8s.io/v1" "CSINode" => pb::storage::v1::CSINode, oa::storage::v1::CSINode;
    "storage.k8s.io/v1" "CSIStorageCapacity" => pb::storage::v1::CSIStorageCapacity, oa::storage::v1::CSIStorageCapacity;
    "storage.k8s.io/v1" "VolumeAttachment" => pb::storage::v1::VolumeAttachment, oa::storage::v1::VolumeAttachment;
    "node.k8s.io/v1" "RuntimeClass" => pb::node::v1::RuntimeClass, oa::node::v1::RuntimeClass;
    "flowcontrol.apiserver.k8s.io/v1" "FlowSchema" => pb::flowcontrol::v1::FlowSchema, oa::flowcontrol::v1::FlowSchema;
    "flowcontrol.apiserver.k8s.io/v1" "PriorityLevelConfiguration" => pb::flowcontrol::v1::PriorityLevelConfiguration, oa::flowcontrol::v1::PriorityLevelConfiguration;
    "v1" "ComponentStatus" => pb::core::v1::ComponentStatus, oa::core::v1::ComponentStatus;
    "v1" "Status" => pb_meta::Status, oa_meta::Status;
    "v1" "APIVersions" => pb_meta::APIVersions, oa_meta::APIVersions;
    "v1" "APIGroupList" => pb_meta::APIGroupList, oa_meta::APIGroupList;
    "v1" "APIGroup" => pb_meta::APIGroup, oa_meta::APIGroup;
    "v1" "APIResourceList" => pb_meta::APIResourceList, oa_meta::APIResourceList;
}

/// Response kinds k8s-openapi has no type for: metadata-only views and aggregated discovery.
const NOT_IN_K8S_OPENAPI: &[(&str, &str)] = &[
    ("meta.k8s.io/v1", "PartialObjectMetadata"),
    ("meta.k8s.io/v1", "PartialObjectMetadataList"),
    ("meta.k8s.io/v1beta1", "PartialObjectMetadata"),
    ("meta.k8s.io/v1beta1", "PartialObjectMetadataList"),
    ("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList"),
    ("apidiscovery.k8s.io/v2beta1", "APIGroupDiscoveryList"),
];

#[test]
fn every_supported_kind_is_covered() {
    let supported: BTreeSet<_> = crate::protobuf::supported_kinds()
        .chain(
            crate::protobuf::RESPONSE_KINDS
                .iter()
                .map(|k| (k.api_version, k.kind)),
        )
        .collect();
    let covered: BTreeSet<_> = COVERED.iter().chain(NOT_IN_K8S_OPENAPI).copied().collect();
    assert_eq!(supported, covered);
}

#[test]
fn delete_options_is_read_in_any_group_version() {
    let message = pb_meta::DeleteOptions::populate(&mut Gen::default());
    let json = decode(&envelope("apps/v1", "DeleteOptions", &message)).unwrap();
    assert_eq!(json["apiVersion"], "apps/v1");
    assert!(json["gracePeriodSeconds"].is_i64());
}
