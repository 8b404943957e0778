//! OpenAPI v3 component schemas of the built-in kinds, generated once from k8s-openapi's
//! schemars implementations (whose names, descriptions and shapes are kube's own).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::{JsonSchema, Schema};
use serde_json::{Value, json};

/// Where component schemas live in an OpenAPI v3 document.
pub const SCHEMA_REF_PREFIX: &str = "#/components/schemas/";

/// The component name of `metav1.ObjectMeta`.
pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
/// The component name of `metav1.ListMeta`.
pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
/// The component name of `metav1.Status`.
pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
/// The component name of `metav1.DeleteOptions`.
pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// The component name of `metav1.Patch`.
pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// The component name of `autoscaling/v1.Scale`.
pub const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

type Register = fn(&mut SchemaGenerator) -> Schema;

fn reg<T: JsonSchema>(g: &mut SchemaGenerator) -> Schema {
    g.subschema_for::<T>()
}

/// The served built-in kinds and their Rust types.
const KINDS: &[(&str, &str, &str, Register)] = &[
    ("", "v1", "Namespace", reg::<api::core::v1::Namespace>),
    ("", "v1", "ConfigMap", reg::<api::core::v1::ConfigMap>),
    ("", "v1", "Secret", reg::<api::core::v1::Secret>),
    ("", "v1", "Service", reg::<api::core::v1::Service>),
    (
        "",
        "v1",
        "ServiceAccount",
        reg::<api::core::v1::ServiceAccount>,
    ),
    ("", "v1", "Event", reg::<api::core::v1::Event>),
    (
        "",
        "v1",
        "PersistentVolumeClaim",
        reg::<api::core::v1::PersistentVolumeClaim>,
    ),
    (
        "",
        "v1",
        "PersistentVolume",
        reg::<api::core::v1::PersistentVolume>,
    ),
    ("", "v1", "Pod", reg::<api::core::v1::Pod>),
    ("", "v1", "Node", reg::<api::core::v1::Node>),
    ("", "v1", "Endpoints", reg::<api::core::v1::Endpoints>),
    (
        "",
        "v1",
        "ResourceQuota",
        reg::<api::core::v1::ResourceQuota>,
    ),
    ("", "v1", "LimitRange", reg::<api::core::v1::LimitRange>),
    ("apps", "v1", "Deployment", reg::<api::apps::v1::Deployment>),
    (
        "apps",
        "v1",
        "StatefulSet",
        reg::<api::apps::v1::StatefulSet>,
    ),
    ("apps", "v1", "DaemonSet", reg::<api::apps::v1::DaemonSet>),
    ("apps", "v1", "ReplicaSet", reg::<api::apps::v1::ReplicaSet>),
    (
        "apps",
        "v1",
        "ControllerRevision",
        reg::<api::apps::v1::ControllerRevision>,
    ),
    ("batch", "v1", "Job", reg::<api::batch::v1::Job>),
    ("batch", "v1", "CronJob", reg::<api::batch::v1::CronJob>),
    (
        "coordination.k8s.io",
        "v1",
        "Lease",
        reg::<api::coordination::v1::Lease>,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "MutatingWebhookConfiguration",
        reg::<api::admissionregistration::v1::MutatingWebhookConfiguration>,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
        reg::<api::admissionregistration::v1::ValidatingWebhookConfiguration>,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicy",
        reg::<api::admissionregistration::v1::ValidatingAdmissionPolicy>,
    ),
    (
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingAdmissionPolicyBinding",
        reg::<api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>,
    ),
    (
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        reg::<api::certificates::v1::CertificateSigningRequest>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "Role",
        reg::<api::rbac::v1::Role>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        reg::<api::rbac::v1::ClusterRole>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        reg::<api::rbac::v1::RoleBinding>,
    ),
    (
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        reg::<api::rbac::v1::ClusterRoleBinding>,
    ),
    (
        "apiextensions.k8s.io",
        "v1",
        "CustomResourceDefinition",
        reg::<apiextensions::CustomResourceDefinition>,
    ),
    (
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        reg::<apiregistration::APIService>,
    ),
    (
        "networking.k8s.io",
        "v1",
        "Ingress",
        reg::<api::networking::v1::Ingress>,
    ),
    (
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        reg::<api::networking::v1::NetworkPolicy>,
    ),
    (
        "policy",
        "v1",
        "PodDisruptionBudget",
        reg::<api::policy::v1::PodDisruptionBudget>,
    ),
    (
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        reg::<api::autoscaling::v2::HorizontalPodAutoscaler>,
    ),
    (
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        reg::<api::autoscaling::v1::HorizontalPodAutoscaler>,
    ),
    (
        "scheduling.k8s.io",
        "v1",
        "PriorityClass",
        reg::<api::scheduling::v1::PriorityClass>,
    ),
    (
        "storage.k8s.io",
        "v1",
        "StorageClass",
        reg::<api::storage::v1::StorageClass>,
    ),
    ("", "v1", "PodTemplate", reg::<api::core::v1::PodTemplate>),
    (
        "",
        "v1",
        "ReplicationController",
        reg::<api::core::v1::ReplicationController>,
    ),
    (
        "",
        "v1",
        "ComponentStatus",
        reg::<api::core::v1::ComponentStatus>,
    ),
    ("", "v1", "Binding", reg::<api::core::v1::Binding>),
    (
        "discovery.k8s.io",
        "v1",
        "EndpointSlice",
        reg::<api::discovery::v1::EndpointSlice>,
    ),
    (
        "events.k8s.io",
        "v1",
        "Event",
        reg::<api::events::v1::Event>,
    ),
    (
        "networking.k8s.io",
        "v1",
        "IngressClass",
        reg::<api::networking::v1::IngressClass>,
    ),
    (
        "node.k8s.io",
        "v1",
        "RuntimeClass",
        reg::<api::node::v1::RuntimeClass>,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "FlowSchema",
        reg::<api::flowcontrol::v1::FlowSchema>,
    ),
    (
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "PriorityLevelConfiguration",
        reg::<api::flowcontrol::v1::PriorityLevelConfiguration>,
    ),
    (
        "storage.k8s.io",
        "v1",
        "CSIDriver",
        reg::<api::storage::v1::CSIDriver>,
    ),
    (
        "storage.k8s.io",
        "v1",
        "CSINode",
        reg::<api::storage::v1::CSINode>,
    ),
    (
        "storage.k8s.io",
        "v1",
        "CSIStorageCapacity",
        reg::<api::storage::v1::CSIStorageCapacity>,
    ),
    (
        "storage.k8s.io",
        "v1",
        "VolumeAttachment",
        reg::<api::storage::v1::VolumeAttachment>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        reg::<api::authorization::v1::SelfSubjectAccessReview>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        reg::<api::authorization::v1::SelfSubjectRulesReview>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        reg::<api::authorization::v1::SubjectAccessReview>,
    ),
    (
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        reg::<api::authorization::v1::LocalSubjectAccessReview>,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "TokenReview",
        reg::<api::authentication::v1::TokenReview>,
    ),
    (
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        reg::<api::authentication::v1::SelfSubjectReview>,
    ),
];

/// Types every document references (responses, request bodies, list metadata).
const SHARED: &[Register] = &[
    reg::<meta::ObjectMeta>,
    reg::<meta::ListMeta>,
    reg::<meta::Status>,
    reg::<meta::DeleteOptions>,
    reg::<meta::Patch>,
    reg::<api::autoscaling::v1::Scale>,
    reg::<api::policy::v1::Eviction>,
];

/// Every component schema the built-in kinds need, and which component is which kind.
pub struct BuiltinSchemas {
    /// Component schemas by name.
    pub definitions: BTreeMap<String, Value>,
    kinds: HashMap<(String, String, String), String>,
}

impl BuiltinSchemas {
    /// The component name of a built-in kind (`io.k8s.api.apps.v1.Deployment`).
    pub fn kind_name(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        self.kinds
            .get(&(group.to_string(), version.to_string(), kind.to_string()))
            .map(String::as_str)
    }
}

fn ref_name(schema: &Schema) -> Option<String> {
    schema
        .as_object()?
        .get("$ref")?
        .as_str()?
        .strip_prefix(SCHEMA_REF_PREFIX)
        .map(str::to_string)
}

/// The schemas, generated on first use.
pub fn schemas() -> &'static BuiltinSchemas {
    static SCHEMAS: OnceLock<BuiltinSchemas> = OnceLock::new();
    SCHEMAS.get_or_init(generate)
}

fn generate() -> BuiltinSchemas {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut kinds = HashMap::new();
    for (group, version, kind, register) in KINDS {
        if let Some(name) = ref_name(&register(&mut generator)) {
            kinds.insert(
                (group.to_string(), version.to_string(), kind.to_string()),
                name,
            );
        }
    }
    for register in SHARED {
        register(&mut generator);
    }
    let mut definitions: BTreeMap<String, Value> =
        generator.take_definitions(true).into_iter().collect();
    for schema in definitions.values_mut() {
        // k8s-openapi marks `metadata` required where the Rust field is not optional (kinds,
        // Scale, Status); kube's documents never do.
        if let Value::Object(schema) = schema
            && let Some(Value::Array(required)) = schema.get_mut("required")
        {
            required.retain(|r| r != "metadata");
            if required.is_empty() {
                schema.remove("required");
            }
        }
    }
    for ((group, version, kind), name) in &kinds {
        if let Some(Value::Object(schema)) = definitions.get_mut(name) {
            schema.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": group, "kind": kind, "version": version}]),
            );
        }
    }
    if let Some(Value::Object(scale)) = definitions.get_mut(SCALE) {
        scale.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": "autoscaling", "kind": "Scale", "version": "v1"}]),
        );
    }
    add_merge_extensions(&mut definitions, &kinds);
    BuiltinSchemas { definitions, kinds }
}

/// Go fields tagged `patchStrategy:"retainKeys"` (which the merge tables do not model: the
/// server honours a patch's `$retainKeys` directive wherever it appears): definition,
/// property, strategy.
const RETAIN_KEYS: &[(&str, &str, &str)] = &[
    (
        "io.k8s.api.apps.v1.DeploymentSpec",
        "strategy",
        "retainKeys",
    ),
    ("io.k8s.api.core.v1.PodSpec", "volumes", "merge,retainKeys"),
];

/// Puts the merge metadata of the server's strategic-merge tables on the properties they
/// describe, as kube-openapi publishes Go's `patchStrategy`/`patchMergeKey` tags and list
/// markers: kubectl computes `apply` patches of built-in kinds from OpenAPI v2 when the
/// server serves it, and they must merge the way the server applies them.
fn add_merge_extensions(
    definitions: &mut BTreeMap<String, Value>,
    kinds: &HashMap<(String, String, String), String>,
) {
    for ((group, version, kind), name) in kinds {
        let gvk = crate::patch::GroupVersionKindRef {
            group,
            version,
            kind,
        };
        let Some(merge) = crate::patch::Schema::builtin(&gvk) else {
            continue;
        };
        for (path, extensions) in merge.list_extensions() {
            if let Some(property) = property_at(definitions, name, &path) {
                property.extend(extensions);
            }
        }
    }
    for (definition, property, strategy) in RETAIN_KEYS {
        if let Some(Value::Object(p)) = definitions
            .get_mut(*definition)
            .and_then(|d| d.pointer_mut(&format!("/properties/{property}")))
        {
            p.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
        }
    }
}

/// The component a schema refers to (`$ref`, or a described reference wrapped in `allOf`).
fn referenced(schema: &Value) -> Option<&str> {
    schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(SCHEMA_REF_PREFIX))
}

/// The property schema at a path of field names (`[]`: list items) from a component,
/// following references into other components.
fn property_at<'a>(
    definitions: &'a mut BTreeMap<String, Value>,
    root: &str,
    path: &[String],
) -> Option<&'a mut serde_json::Map<String, Value>> {
    let (last, steps) = path.split_last()?;
    let mut name = root.to_string();
    let mut pointer = String::new();
    for step in steps {
        let here = definitions.get(&name)?.pointer(&pointer)?;
        let (next, sub) = if step == "[]" {
            (here.get("items")?, "/items".to_string())
        } else {
            (
                here.pointer(&format!("/properties/{step}"))?,
                format!("/properties/{step}"),
            )
        };
        match referenced(next) {
            Some(r) => {
                name = r.to_string();
                pointer.clear();
            }
            None => pointer.push_str(&sub),
        }
    }
    definitions
        .get_mut(&name)?
        .pointer_mut(&format!("{pointer}/properties/{last}"))?
        .as_object_mut()
}

/// Adds to `out` the names of every component schema `v` refers to.
pub fn refs(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref"
                    && let Some(name) = x.as_str().and_then(|r| r.strip_prefix(SCHEMA_REF_PREFIX))
                {
                    out.insert(name.to_string());
                } else {
                    refs(x, out);
                }
            }
        }
        Value::Array(items) => {
            for x in items {
                refs(x, out);
            }
        }
        _ => {}
    }
}

/// The named components plus everything they refer to, transitively.
pub fn closure(roots: impl IntoIterator<Item = String>) -> BTreeMap<String, Value> {
    let defs = &schemas().definitions;
    let mut out = BTreeMap::new();
    let mut pending: Vec<String> = roots.into_iter().collect();
    while let Some(name) = pending.pop() {
        if out.contains_key(&name) {
            continue;
        }
        let Some(schema) = defs.get(&name) else {
            continue;
        };
        let mut found = BTreeSet::new();
        refs(schema, &mut found);
        pending.extend(found.into_iter().filter(|n| !out.contains_key(n)));
        out.insert(name, schema.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_schema_with_its_gvk() {
        let s = schemas();
        for (group, version, kind, _) in KINDS {
            let name = s
                .kind_name(group, version, kind)
                .unwrap_or_else(|| panic!("{kind} has no component"));
            let schema = &s.definitions[name];
            assert_eq!(
                schema["x-kubernetes-group-version-kind"],
                json!([{"group": group, "kind": kind, "version": version}]),
                "{name}"
            );
            assert!(schema["description"].is_string(), "{name}");
            assert!(
                !schema["required"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|x| x == "metadata")),
                "{name}"
            );
        }
        assert_eq!(
            s.kind_name("apps", "v1", "Deployment"),
            Some("io.k8s.api.apps.v1.Deployment")
        );
    }

    #[test]
    fn references_are_ref_siblings_free_and_resolvable() {
        let s = schemas();
        let deploy = &s.definitions["io.k8s.api.apps.v1.Deployment"];
        // A described reference is wrapped in allOf, as kube's v3 documents do.
        assert_eq!(
            deploy["properties"]["spec"]["allOf"][0]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.DeploymentSpec"
        );
        let all = closure(["io.k8s.api.apps.v1.Deployment".to_string()]);
        assert!(all.contains_key("io.k8s.api.core.v1.PodSpec"));
        assert!(all.contains_key(OBJECT_META));
        let mut names = BTreeSet::new();
        for v in all.values() {
            refs(v, &mut names);
        }
        for n in names {
            assert!(all.contains_key(&n), "dangling {n}");
        }
    }
}
