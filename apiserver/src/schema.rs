//! Structural schemas of served kinds: pruning and unknown-field detection for
//! `fieldValidation`, as kube-apiserver does with its OpenAPI models and CRD schemas.

use serde_json::Value;

use crate::resources::{ResourceDef, Source};
use crate::state::ApiState;

/// Removes fields the kind's schema does not know and returns their paths.
pub fn prune_unknown(_state: &ApiState, def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    match def.source {
        // Karmada's admission re-encodes the typed object, which prunes; here we only report.
        Source::Karmada => karmada_api::schema::unknown_fields(&def.kind, obj),
        // TODO(lead): built-in and CRD schemas (OpenAPI) once they land.
        _ => Vec::new(),
    }
}
