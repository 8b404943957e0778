//! CustomResourceDefinitions served dynamically, as kube-apiserver's apiextensions-apiserver
//! serves them:
//!
//! - [`controller`]: accepts names, establishes CRDs, serves their versions through the
//!   catalog and deletes the objects of a CRD being deleted;
//! - the apiextensions crate's `definition` (a CRD's [`ResourceDef`]s and status) and
//!   structural-schema machinery (`schema`, `pruning`, `defaulting`, `validation`,
//!   `structural`) applied to the custom resources of a served version and to CRDs themselves.
//!
//! Not done: CEL (`x-kubernetes-validations` rules are not evaluated), conversion between
//! versions (a multi-version CRD serves objects in the stored version's JSON), validation
//! ratcheting.

use apiextensions::custom_resource::compiled;
use apiextensions::field;
pub use apiextensions::{defaulting, definition, formats, pruning, schema, structural, validation};
use serde_json::{Value, json};

use crate::error::{ApiError, Cause};
use crate::object;
use crate::resources::{ResourceDef, Source};
use crate::state::ApiState;

pub use apiextensions::custom_resource::{default_custom_resource, on_read, prune_custom_resource};
pub use definition::CLEANUP_FINALIZER;

/// The group of CustomResourceDefinitions.
pub const CRD_GROUP: &str = "apiextensions.k8s.io";

fn is_crd_resource(def: &ResourceDef) -> bool {
    def.group == CRD_GROUP && def.plural == "customresourcedefinitions"
}

/// Validation causes this module adds to kube's generic checks: a custom resource against
/// its schema (and its scale replicas), a CRD's schemas against the structural rules. A CRD
/// stored with schemas that break the rules may keep them (kube ratchets these checks).
pub fn validate(def: &ResourceDef, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    if is_crd_resource(def) {
        let causes = structural::validate_crd_versions(obj);
        if !causes.is_empty()
            && old.is_some_and(|o| !structural::validate_crd_versions(o).is_empty())
        {
            return Vec::new();
        }
        return causes;
    }
    let Source::Custom(custom) = &def.source else {
        return Vec::new();
    };
    let mut causes = match compiled(def) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{CustomSource, Storage};

    fn def(version: &str, schema: Value) -> ResourceDef {
        ResourceDef {
            group: "example.com".into(),
            version: version.into(),
            plural: "widgets".into(),
            singular: "widget".into(),
            kind: "Widget".into(),
            list_kind: "WidgetList".into(),
            short_names: vec![],
            categories: vec![],
            namespaced: false,
            status: false,
            scale: None,
            extra_subresources: vec![],
            generation: true,
            strategic_merge: false,
            storage: Storage::Stored {
                prefix: "/registry/example.com/widgets/".into(),
            },
            source: Source::Custom(Box::new(CustomSource {
                crd_name: format!("widgets.example.com-{version}-test"),
                schema: Some(schema),
                printer_columns: vec![],
                selectable_fields: vec![],
                scale: None,
            })),
        }
    }

    #[test]
    fn reads_convert_and_default() {
        let d = def(
            "v2",
            json!({"type": "object", "properties": {"spec": {"type": "object",
                "properties": {"size": {"type": "string", "default": "M"}}}}}),
        );
        let stored = json!({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}});
        assert_eq!(
            on_read(&d, &stored),
            Some(json!({"apiVersion": "example.com/v2", "kind": "Widget", "spec": {"size": "M"}}))
        );
        let current =
            json!({"apiVersion": "example.com/v2", "kind": "Widget", "spec": {"size": "S"}});
        assert_eq!(on_read(&d, &current), None);
    }

    #[test]
    fn admission_prunes_defaults_and_validates() {
        let d = def(
            "v1",
            json!({"type": "object", "properties": {"spec": {"type": "object",
                "properties": {"size": {"type": "string", "enum": ["S", "M"], "default": "M"}}}}}),
        );
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                             "metadata": {"name": "w"}, "spec": {"extra": 1}});
        default_custom_resource(&d, &mut obj);
        assert_eq!(obj["spec"], json!({"size": "M"}));
        assert!(validate(&d, &obj, None).is_empty());
        obj["spec"]["size"] = json!("XL");
        let causes = validate(&d, &obj, None);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec.size");
    }

    #[test]
    fn crd_deletion_hooks() {
        let crd_def = crate::resources::built_in()
            .into_iter()
            .find(|d| d.plural == "customresourcedefinitions")
            .unwrap_or_else(|| panic!("crd resource"));
        let crd =
            json!({"metadata": {"name": "widgets.example.com"}, "status": {"conditions": []}});
        let mut finalizers = vec![];
        add_cleanup_finalizer(&crd_def, &crd, &mut finalizers);
        assert_eq!(finalizers, vec![CLEANUP_FINALIZER.to_string()]);
        add_cleanup_finalizer(&crd_def, &crd, &mut finalizers);
        assert_eq!(finalizers.len(), 1);
        let mut marked = crd.clone();
        mark_terminating(&crd_def, &mut marked);
        assert_eq!(marked["status"]["conditions"][0]["type"], "Terminating");
        assert_eq!(
            marked["status"]["conditions"][0]["reason"],
            "InstanceDeletionPending"
        );

        let other = crate::resources::built_in()
            .into_iter()
            .find(|d| d.plural == "configmaps")
            .unwrap_or_else(|| panic!("configmaps"));
        let mut none = vec![];
        add_cleanup_finalizer(&other, &crd, &mut none);
        assert!(none.is_empty());
    }

    #[test]
    fn non_structural_crds_may_keep_their_schemas() {
        let crd_def = crate::resources::built_in()
            .into_iter()
            .find(|d| d.plural == "customresourcedefinitions")
            .unwrap_or_else(|| panic!("crd resource"));
        let bad = json!({"spec": {"versions": [{"name": "v1",
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {}}}}}]}});
        assert_eq!(validate(&crd_def, &bad, None).len(), 1);
        assert!(validate(&crd_def, &bad, Some(&bad)).is_empty());
    }
}
