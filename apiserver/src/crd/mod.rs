//! CustomResourceDefinitions served dynamically, as kube-apiserver's apiextensions-apiserver
//! serves them:
//!
//! - [`controller`]: accepts names, establishes CRDs, serves their versions through the
//!   catalog and deletes the objects of a CRD being deleted;
//! - [`definition`]: a CRD's [`ResourceDef`]s and status;
//! - [`schema`], [`pruning`], [`defaulting`], [`validation`], [`formats`]: the structural
//!   schema of a version applied to custom resources (decoding prunes, writes default and
//!   validate);
//! - [`structural`]: the CRD's own schema rules (a v1 CRD needs structural schemas).
//!
//! Not done: CEL (`x-kubernetes-validations` rules are not evaluated), conversion between
//! versions (a multi-version CRD serves objects in the stored version's JSON), validation
//! ratcheting.

pub mod controller;
pub mod defaulting;
pub mod definition;
mod field;
pub mod formats;
pub mod pruning;
pub mod schema;
pub mod structural;
pub mod validation;

use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::object;
use crate::resources::{ResourceDef, Source};
use crate::state::ApiState;

pub use controller::CRD_GROUP;
pub use definition::CLEANUP_FINALIZER;
pub(crate) use field::{go_float, go_quote};

fn is_crd_resource(def: &ResourceDef) -> bool {
    def.group == CRD_GROUP && def.plural == "customresourcedefinitions"
}

/// Decoding of a custom resource: drops fields its schema does not specify (and nulls it
/// does not allow) and returns the unknown field paths in kube's order.
pub fn prune_custom_resource(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    let compiled = schema::compiled(def);
    pruning::prune_custom_resource(obj, compiled.as_deref())
}

/// The mutating part of a custom resource's admission: pruning and structural defaulting.
pub fn default_custom_resource(def: &ResourceDef, obj: &mut Value) {
    if !def.is_custom() {
        return;
    }
    let compiled = schema::compiled(def);
    pruning::prune_custom_resource(obj, compiled.as_deref());
    defaulting::apply_defaults(obj, compiled.as_deref());
}

/// A custom resource read from storage as the requested version serves it: kube's `None`
/// conversion (the object is stored in whichever version wrote it; only `apiVersion`
/// changes) and structural defaulting (kube defaults on every decode, so defaults added to a
/// CRD show on existing objects). `None` when nothing changes.
pub fn on_read(def: &ResourceDef, obj: &Value) -> Option<Value> {
    if !def.is_custom() {
        return None;
    }
    let api_version = def.api_version();
    let convert = obj.get("apiVersion").and_then(Value::as_str) != Some(api_version.as_str());
    let compiled = schema::compiled(def).filter(|s| s.any_default);
    if !convert && compiled.is_none() {
        return None;
    }
    let mut out = obj.clone();
    if convert && let Value::Object(m) = &mut out {
        m.insert("apiVersion".into(), Value::String(api_version));
    }
    if let Some(s) = compiled {
        defaulting::apply_defaults(&mut out, Some(&s));
    }
    (out != *obj).then_some(out)
}

/// Validation causes this module adds to kube's generic checks: a custom resource against
/// its schema (and its scale replicas), a CRD's schemas against the structural rules.
pub fn validate(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    if is_crd_resource(def) {
        return structural::validate_crd_versions(obj);
    }
    let Source::Custom(custom) = &def.source else {
        return Vec::new();
    };
    let mut causes = match schema::compiled(def) {
        Some(s) => validation::validate_custom_resource(obj, &s),
        None => Vec::new(),
    };
    if let Some(scale) = &custom.scale {
        causes.extend(scale_spec(obj, &scale.spec_replicas_path));
    }
    causes
}

/// customResourceValidator.ValidateScaleSpec.
fn scale_spec(obj: &Value, path: &str) -> Vec<Cause> {
    let Some(v) = object::get_path(obj, path) else {
        return Vec::new();
    };
    let Some(n) = v.as_i64() else {
        return Vec::new();
    };
    let detail = if n < 0 {
        "should be a non-negative integer".to_string()
    } else if n > i64::from(i32::MAX) {
        format!("should be less than or equal to {}", i32::MAX)
    } else {
        return Vec::new();
    };
    vec![field::invalid(path, field::Shown::Json(json!(n)), &detail)]
}

/// Refuses to create objects of a CRD that is being deleted (kube's CRD handler answers
/// 405 then).
pub fn check_create_allowed(state: &ApiState, def: &ResourceDef) -> Result<(), ApiError> {
    let Source::Custom(custom) = &def.source else {
        return Ok(());
    };
    let snapshot = state.catalog.snapshot();
    let Some(crd_def) = snapshot
        .get(CRD_GROUP, "v1", "customresourcedefinitions")
        .cloned()
    else {
        return Ok(());
    };
    let Ok(cache) = state.cache(&crd_def) else {
        return Ok(());
    };
    let terminating = crd_def
        .key("", &custom.crd_name)
        .and_then(|k| cache.get(&k))
        .is_some_and(|o| object::is_terminating(&o.value()));
    if terminating {
        let mut e = ApiError::method_not_allowed("create", &def.kind);
        e.message = "create not allowed while custom resource definition is terminating".into();
        return Err(e);
    }
    Ok(())
}

/// kube's CRD REST Delete: the first delete of a CRD adds the cleanup finalizer, so that the
/// controller can delete its objects first.
pub fn add_cleanup_finalizer(def: &ResourceDef, current: &Value, finalizers: &mut Vec<String>) {
    if is_crd_resource(def)
        && !object::is_terminating(current)
        && !finalizers.iter().any(|f| f == CLEANUP_FINALIZER)
    {
        finalizers.push(CLEANUP_FINALIZER.to_string());
    }
}

/// The `Terminating` condition a CRD gets when its deletion starts.
pub fn mark_terminating(def: &ResourceDef, obj: &mut Value) {
    if !is_crd_resource(def) {
        return;
    }
    let mut status = obj.get("status").cloned().unwrap_or(json!({}));
    definition::set_condition(
        &mut status,
        json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionPending",
               "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"}),
        &object::now_rfc3339(),
    );
    obj["status"] = status;
}
