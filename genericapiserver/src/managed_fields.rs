//! Field-ownership tracking (`metadata.managedFields`) on every write, and the per-kind
//! merge schemas that patches and server-side apply use.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::Value;

use crate::resources::{ResourceDef, Source};
use apimachinery::patch::{self, GroupVersionKindRef, Schema};

/// Which part of the object a write targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subresource {
    /// The main resource (status changes are ignored when a status subresource exists).
    Main,
    /// The `status` subresource (only status changes are kept).
    Status,
    /// A Namespace's `finalize` subresource: like the main resource, but `spec.finalizers`
    /// comes from the request (kube's namespaceFinalizeStrategy).
    Finalize,
}

/// Built-in and Karmada schemas never change: build each once.
fn static_schemas() -> &'static Mutex<HashMap<String, Arc<Schema>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Schema>>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The merge schema of a resource (list and map semantics for patches and apply).
pub fn schema_for(def: &ResourceDef) -> Arc<Schema> {
    match &def.source {
        Source::Custom(c) => Arc::new(match &c.schema {
            Some(s) => Schema::from_openapi_v3(s),
            None => Schema::untyped(),
        }),
        _ => {
            let key = format!("{}/{}/{}", def.group, def.version, def.kind);
            let mut cache = static_schemas().lock().unwrap_or_else(|p| p.into_inner());
            if let Some(s) = cache.get(&key) {
                return s.clone();
            }
            let gvk = GroupVersionKindRef {
                group: &def.group,
                version: &def.version,
                kind: &def.kind,
            };
            let schema = match Schema::builtin(&gvk) {
                Some(s) => s,
                None => match crate::kinds::for_resource(def).and_then(|k| k.openapi_schema(def)) {
                    Some(s) => Schema::from_openapi_v3(s),
                    None => Schema::untyped(),
                },
            };
            let schema = Arc::new(schema);
            cache.insert(key, schema.clone());
            schema
        }
    }
}

/// The fields a write to `sub` may not change (kube's ResetFieldsStrategy).
pub fn reset_fields(def: &ResourceDef, sub: Subresource) -> &'static [&'static str] {
    match sub {
        Subresource::Main | Subresource::Finalize if def.status => &["status"],
        Subresource::Main | Subresource::Finalize => &[],
        Subresource::Status => &["spec"],
    }
}

/// Records a non-apply write by `manager` in `new`'s managedFields.
pub fn track_update(
    def: &ResourceDef,
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    sub: Subresource,
) {
    let schema = schema_for(def);
    let api_version = def.api_version();
    patch::update_managed_fields(
        &schema,
        old,
        new,
        &patch::UpdateOptions {
            manager,
            api_version: &api_version,
            subresource: match sub {
                Subresource::Main => None,
                Subresource::Status => Some("status"),
                Subresource::Finalize => Some("finalize"),
            },
            reset_fields: reset_fields(def, sub),
            now: jiff::Timestamp::now(),
        },
    );
}
