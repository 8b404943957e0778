//! The conversion seam between how objects are stored and how a resource serves them: a kind
//! stored in another version than the one served is converted both ways by its
//! [`KindStrategy`](crate::kinds::KindStrategy) — a built-in kind stored in another form
//! (`events.k8s.io/v1` Events as core Events, `autoscaling/v1` HorizontalPodAutoscalers as v2
//! ones) as kube's scheme does, an installed kind served at an older version as kube-apiserver
//! runs a CRD's conversion webhook; a custom resource is relabelled and defaulted on read
//! (apiextensions' `custom_resource::on_read`).

use serde_json::Value;

use crate::error::ApiError;
use crate::kinds;
use crate::resources::{ResourceDef, Source};

/// Whether objects of `def` are stored in another version of its kind.
pub fn converts(def: &ResourceDef) -> bool {
    kinds::for_resource(def).is_some_and(|k| k.converts(def))
}

/// Whether `def` serves objects exactly as stored (apart from the resourceVersion), so
/// readers may splice the stored bytes instead of parsing them.
pub fn serves_stored_bytes(def: &ResourceDef) -> bool {
    !def.is_custom() && !converts(def)
}

/// A stored object as `def` serves it; `None` when it is served unchanged.
pub fn on_read(def: &ResourceDef, stored: &Value) -> Option<Value> {
    match def.source {
        Source::Custom(_) => apiextensions::custom_resource::on_read(def, stored),
        _ => kinds::for_resource(def)?.on_read(def, stored),
    }
}

/// [`on_read`], returning the object itself when nothing changes.
pub fn served(def: &ResourceDef, stored: Value) -> Value {
    on_read(def, &stored).unwrap_or(stored)
}

/// A written object of `def` in its storage version: checked against the served version's
/// schema and converted; unchanged for resources that do not convert.
pub fn to_storage(def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
    match kinds::for_resource(def) {
        Some(k) if k.converts(def) => k.to_storage(def, obj),
        _ => Ok(()),
    }
}
