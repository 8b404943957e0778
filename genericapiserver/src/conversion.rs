//! The conversion seam between how objects are stored and how a resource serves them: a
//! Karmada kind served at a version other than its storage version (ResourceBinding and
//! ClusterResourceBinding at `v1alpha1`) is converted both ways, as kube-apiserver runs a
//! CRD's conversion webhook; a built-in kind stored in another form (`events.k8s.io/v1`
//! Events as core Events, `autoscaling/v1` HorizontalPodAutoscalers as v2 ones) is converted
//! as kube's scheme does; a
//! custom resource is relabelled and defaulted on read (apiextensions'
//! `custom_resource::on_read`).

use serde_json::Value;

use crate::error::ApiError;
use crate::resources::{ResourceDef, Source};

/// Whether objects of `def` are stored in another version of its kind.
pub fn converts(def: &ResourceDef) -> bool {
    match def.source {
        Source::Karmada => karmada_api::conversion::converts(&def.kind, &def.version),
        Source::BuiltIn => kube_registry::conversion::converts(&def.group, &def.version, &def.kind),
        Source::Custom(_) => false,
    }
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
        Source::Karmada => karmada_api::conversion::from_storage(&def.kind, &def.version, stored),
        Source::BuiltIn => {
            kube_registry::conversion::from_storage(&def.group, &def.version, &def.kind, stored)
        }
    }
}

/// [`on_read`], returning the object itself when nothing changes.
pub fn served(def: &ResourceDef, stored: Value) -> Value {
    on_read(def, &stored).unwrap_or(stored)
}

/// A written object of `def` in its storage version: checked against the served version's
/// schema and converted (Karmada's conversion); unchanged for resources that do not convert.
pub fn to_storage(def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
    if !converts(def) {
        return Ok(());
    }
    if def.source == Source::BuiltIn {
        // A value kube's conversion cannot read fails decoding: a 400.
        return kube_registry::conversion::to_storage(&def.group, &def.version, &def.kind, obj)
            .map_err(|why| {
                ApiError::bad_request(format!(
                    "{kind} in version \"{version}\" cannot be handled as a {kind}: {why}",
                    kind = def.kind,
                    version = def.version
                ))
            });
    }
    karmada_api::conversion::to_storage(&def.kind, &def.version, obj)
        .map_err(|e| crate::error::karmada_error(def, obj, &e))
}
