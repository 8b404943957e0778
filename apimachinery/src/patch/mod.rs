//! Patch algorithms of the API server: JSON patch, JSON merge patch, strategic merge patch and
//! server-side apply with `metadata.managedFields`.
//!
//! Everything here is a pure function over `serde_json::Value` objects in their Kubernetes JSON
//! form. The module knows nothing about HTTP or storage: the caller picks the algorithm from the
//! request's Content-Type, feeds it the stored object, and maps [`PatchError`] to a
//! `metav1.Status` (each variant documents the code kube-apiserver answers with).
//!
//! Type information (list merge keys, list and map types) comes from a [`Schema`]: built-in kinds
//! have a hand-written table ([`Schema::builtin`]), custom resources get one from their CRD's
//! `openAPIV3Schema` ([`Schema::from_openapi_v3`]) or the untyped default ([`Schema::untyped`]).

mod error;
mod fieldpath;
mod json_patch;
mod managed_fields;
mod merge_patch;
mod schema;
mod schema_builtin;
mod schema_crd;
mod server_side_apply;
mod strategic;
mod typed;
mod value;

pub use error::{ApplyError, Conflict, PatchError};
pub use json_patch::{MAX_JSON_PATCH_OPERATIONS, go_json_type, json_patch};
pub use managed_fields::{LAST_APPLIED_ANNOTATION, ManagedFieldsOperation, default_field_manager};
pub use merge_patch::{json_merge_patch, merge_patch};
pub use schema::{GroupVersionKindRef, Schema};
pub use server_side_apply::{ApplyOptions, UpdateOptions, apply, update_managed_fields};
pub use strategic::strategic_merge_patch;
