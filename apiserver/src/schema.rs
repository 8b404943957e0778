//! Structural schemas of served kinds: pruning and unknown-field detection for
//! `fieldValidation`, as kube-apiserver does with its OpenAPI models and CRD schemas.

use serde_json::Value;

use crate::resources::ResourceDef;
use crate::state::ApiState;

/// Removes fields the kind's schema does not know and returns their paths.
pub fn prune_unknown(_state: &ApiState, _def: &ResourceDef, _obj: &mut Value) -> Vec<String> {
    // TODO(lead): walk the kind's OpenAPI schema (built-in, Karmada, CRD) once schemas land.
    Vec::new()
}
