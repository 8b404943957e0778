//! A custom resource's structural schema applied on its way in and out: pruning and defaulting
//! on decoding, kube's `None` conversion and defaulting on read (apiextensions-apiserver's
//! crdHandler and its unstructured converter and defaulter).

use std::sync::Arc;

use kube_registry::resources::{ResourceDef, Source};
use serde_json::Value;

use crate::{defaulting, pruning, schema};

/// The compiled schema of a custom resource's version (`None` for other resources or a
/// version without a schema).
pub fn compiled(def: &ResourceDef) -> Option<Arc<schema::Schema>> {
    let Source::Custom(custom) = &def.source else {
        return None;
    };
    let s = custom.schema.as_ref()?;
    Some(schema::compiled(&custom.crd_name, &def.version, s))
}

/// Decoding of a custom resource: drops fields its schema does not specify (and nulls it
/// does not allow) and returns the unknown field paths in kube's order.
pub fn prune_custom_resource(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    let compiled = compiled(def);
    pruning::prune_custom_resource(obj, compiled.as_deref())
}

/// The mutating part of a custom resource's admission: pruning and structural defaulting.
pub fn default_custom_resource(def: &ResourceDef, obj: &mut Value) {
    if !def.is_custom() {
        return;
    }
    let compiled = compiled(def);
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
    let compiled = compiled(def).filter(|s| s.any_default);
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
