//! OpenAPI schemas of the Karmada kinds, and the CRD-style processing built on them.
//!
//! The schemas are derived from the Rust types (so doc comments become the descriptions
//! `kubectl explain` shows) and rewritten into Kubernetes' structural form. The same schema
//! drives defaulting, pruning and validation, so what the API documents is what it enforces.

pub(crate) mod helpers;
mod node;
mod structural;

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde_json::Value;

pub(crate) use node::{Checks, Node, json_type_name};

use crate::apps::v1alpha1::WorkloadRebalancer;
use crate::cluster::v1alpha1::Cluster;
use crate::config::v1alpha1::{
    ResourceInterpreterCustomization, ResourceInterpreterWebhookConfiguration,
};
use crate::networking::v1alpha1::{MultiClusterIngress, MultiClusterService};
use crate::policy::v1alpha1::FederatedResourceQuota;
use crate::policy::v1alpha1::{
    ClusterOverridePolicy, ClusterPropagationPolicy, ClusterTaintPolicy, OverridePolicy,
    PropagationPolicy,
};
use crate::remedy::v1alpha1::Remedy;
use crate::work::v1alpha1::Work;
use crate::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};

/// Top-level keys of a resource that the schema machinery leaves to the API server's generic
/// object-meta handling.
pub(crate) const RESOURCE_ROOT_SKIP: &[&str] = &["apiVersion", "kind", "metadata"];

/// A kind's structural schema and its compiled form.
pub(crate) struct KindSchema {
    pub(crate) structural: Value,
    pub(crate) root: Node,
}

fn build<T: JsonSchema>() -> KindSchema {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    let root = settings.into_generator().into_root_schema_for::<T>();
    let mut structural = structural::structural(root.to_value());
    structural::add_type_meta(&mut structural);
    let compiled = Node::compile(&structural);
    KindSchema {
        structural,
        root: compiled,
    }
}

macro_rules! kind_schemas {
    ($($ty:ident),+ $(,)?) => {
        /// The schema of a kind, built once on first use.
        pub(crate) fn kind_schema(kind: &str) -> Option<&'static KindSchema> {
            match kind {
                $(
                    stringify!($ty) => {
                        static CELL: OnceLock<KindSchema> = OnceLock::new();
                        Some(CELL.get_or_init(build::<$ty>))
                    }
                )+
                _ => None,
            }
        }
    };
}

kind_schemas!(
    PropagationPolicy,
    ClusterPropagationPolicy,
    OverridePolicy,
    ClusterOverridePolicy,
    ClusterTaintPolicy,
    FederatedResourceQuota,
    Remedy,
    WorkloadRebalancer,
    MultiClusterService,
    MultiClusterIngress,
    Work,
    ResourceBinding,
    ClusterResourceBinding,
    ResourceInterpreterCustomization,
    ResourceInterpreterWebhookConfiguration,
    Cluster,
);

/// The structural OpenAPI v3 schema of a Karmada kind (fully inlined, with descriptions), for
/// the API server's OpenAPI documents; `None` for kinds this crate does not define.
pub fn openapi_schema(kind: &str) -> Option<&'static Value> {
    kind_schema(kind).map(|s| &s.structural)
}

/// The schema of a kind at one of its served versions (see
/// [`crate::catalog::KindInfo::other_versions`]); `None` for versions the kind does not serve.
pub(crate) fn kind_schema_at(version: &str, kind: &str) -> Option<&'static KindSchema> {
    use crate::work::v1alpha1 as binding_v1alpha1;
    macro_rules! cached {
        ($ty:ty) => {{
            static CELL: OnceLock<KindSchema> = OnceLock::new();
            Some(CELL.get_or_init(build::<$ty>))
        }};
    }
    match (version, kind) {
        ("v1alpha1", "ResourceBinding") => cached!(binding_v1alpha1::ResourceBinding),
        ("v1alpha1", "ClusterResourceBinding") => {
            cached!(binding_v1alpha1::ClusterResourceBinding)
        }
        _ => crate::catalog::kind_info(kind)
            .filter(|k| k.version == version)
            .and_then(|_| kind_schema(kind)),
    }
}

/// [`openapi_schema`] of a kind at one of its served versions.
pub fn openapi_schema_at(version: &str, kind: &str) -> Option<&'static Value> {
    kind_schema_at(version, kind).map(|s| &s.structural)
}

/// [`unknown_fields`] against the schema of a kind at one of its served versions.
pub fn unknown_fields_at(version: &str, kind: &str, obj: &Value) -> Vec<String> {
    unknown_in(kind_schema_at(version, kind), obj)
}

fn unknown_in(schema: Option<&KindSchema>, obj: &Value) -> Vec<String> {
    let Some(schema) = schema else {
        return Vec::new();
    };
    let mut unknown = Vec::new();
    schema
        .root
        .unknown(obj, &mut String::new(), RESOURCE_ROOT_SKIP, &mut unknown);
    unknown.sort();
    unknown
}

/// Paths of the fields of `obj` that the kind's schema does not declare (and that admission
/// would drop), e.g. `spec.foo`, sorted, for `fieldValidation=Strict|Warn`. Empty for unknown
/// kinds.
pub fn unknown_fields(kind: &str, obj: &Value) -> Vec<String> {
    unknown_in(kind_schema(kind), obj)
}
