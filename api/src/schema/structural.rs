//! Rewrites the JSON Schema that schemars derives into the "structural" OpenAPI v3 form
//! Kubernetes uses for CRDs: one `type` per node, no null unions, enums as `enum`, free-form
//! values marked `x-kubernetes-preserve-unknown-fields`, defaults only where the CRD has them.

use serde_json::{Map, Value, json};

/// Field names with CRD defaults are marked with this extension in the Rust types; every other
/// `default` schemars emits (from `#[serde(default)]`) is not a CRD default and is dropped.
const CRD_DEFAULT: &str = "x-crd-default";

/// Lists fields that are required on the wire but decoded leniently (see `rewrite`).
const GO_REQUIRED: &str = "x-go-required";

/// Formats Kubernetes OpenAPI documents use; schemars' Rust-specific ones are dropped.
const KEPT_FORMATS: &[&str] = &["int32", "int64", "date-time", "float", "double", "byte"];

/// Converts a schemars root schema (generated with inlined subschemas) to structural form.
pub(crate) fn structural(root: Value) -> Value {
    let mut root = root;
    rewrite(&mut root);
    root
}

/// Adds the `apiVersion` and `kind` properties every top-level kind has on the wire.
pub(crate) fn add_type_meta(root: &mut Value) {
    let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) else {
        return;
    };
    props.insert(
        "apiVersion".into(),
        json!({
            "description": "The versioned schema of this representation of the object; the server converts recognised versions to the one it stores.",
            "type": "string",
        }),
    );
    props.insert(
        "kind".into(),
        json!({
            "description": "The REST resource this object represents, in CamelCase; the server infers it from the endpoint the request was sent to.",
            "type": "string",
        }),
    );
}

fn rewrite(node: &mut Value) {
    if node == &Value::Bool(true) {
        *node = json!({ "x-kubernetes-preserve-unknown-fields": true });
        return;
    }
    let Value::Object(map) = node else {
        return;
    };

    for key in ["$schema", "title", "default", "$defs", "examples", "$id"] {
        map.remove(key);
    }
    if let Some(default) = map.remove(CRD_DEFAULT) {
        map.insert("default".into(), default);
    }

    unwrap_nullable_any_of(map);
    collapse_type_union(map);
    one_of_to_enum(map);
    if let Some(value) = map.remove("const") {
        map.entry("enum")
            .or_insert_with(|| Value::Array(vec![value]));
    }
    if let Some(format) = map.get("format").and_then(Value::as_str)
        && !KEPT_FORMATS.contains(&format)
    {
        map.remove("format");
    }
    if map.get("type").and_then(Value::as_str) != Some("integer")
        && map.get("type").and_then(Value::as_str) != Some("number")
    {
        // schemars adds `minimum: 0` for unsigned integers; only numeric nodes may keep bounds.
        map.remove("minimum");
        map.remove("maximum");
    }

    // Typed (non-CRD) kinds decode missing fields as zero values, so their Rust fields carry
    // `#[serde(default)]`; the fields Go requires are listed under this extension instead.
    if let Some(Value::Array(extra)) = map.remove(GO_REQUIRED) {
        let required = map
            .entry("required")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(required) = required {
            for name in extra {
                if !required.contains(&name) {
                    required.push(name);
                }
            }
        }
    }
    if let Some(Value::Array(required)) = map.get_mut("required") {
        // controller-gen lists required fields alphabetically; so do we.
        required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for child in props.values_mut() {
            rewrite(child);
        }
    }
    if let Some(items) = map.get_mut("items") {
        rewrite(items);
    }
    match map.get_mut("additionalProperties") {
        Some(Value::Bool(false)) => {
            map.remove("additionalProperties");
        }
        Some(Value::Bool(true)) => {
            map.remove("additionalProperties");
            map.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
        }
        Some(additional) => rewrite(additional),
        None => {}
    }

    mark_free_form(map);
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
        || schema.get("enum") == Some(&json!([null]))
        || schema.get("const") == Some(&Value::Null)
}

/// `Option<T>` becomes `anyOf: [T, {type: null}]`; keep `T`, letting the outer keys (the
/// field's description and any extensions) win.
fn unwrap_nullable_any_of(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("anyOf") else {
        return;
    };
    let kept: Vec<Value> = branches
        .iter()
        .filter(|b| !is_null_schema(b))
        .cloned()
        .collect();
    if kept.len() != 1 {
        map.insert("anyOf".into(), Value::Array(kept));
        return;
    }
    map.remove("anyOf");
    if let Some(Value::Object(inner)) = kept.into_iter().next() {
        for (key, value) in inner {
            map.entry(key).or_insert(value);
        }
    } else {
        map.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    }
}

fn collapse_type_union(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let kept: Vec<Value> = types
        .iter()
        .filter(|t| t.as_str() != Some("null"))
        .cloned()
        .collect();
    match kept.len() {
        0 => {
            map.remove("type");
        }
        1 => {
            map.insert(
                "type".into(),
                kept.into_iter().next().unwrap_or(Value::Null),
            );
        }
        _ => {
            map.insert("type".into(), Value::Array(kept));
        }
    }
}

/// Documented unit enums come out as `oneOf` of `const` branches; Kubernetes wants `enum`.
fn one_of_to_enum(map: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = map.get("oneOf") else {
        return;
    };
    let mut values = Vec::new();
    let mut ty = None;
    for branch in branches {
        if let Some(c) = branch.get("const") {
            values.push(c.clone());
        } else if let Some(Value::Array(e)) = branch.get("enum") {
            values.extend(e.iter().cloned());
        } else {
            return;
        }
        if ty.is_none() {
            ty = branch.get("type").cloned();
        }
    }
    map.remove("oneOf");
    map.entry("enum").or_insert(Value::Array(values));
    if let Some(ty) = ty {
        map.entry("type").or_insert(ty);
    }
}

/// A node that constrains nothing (serde_json::Value) or an object without declared fields
/// (raw extensions) keeps whatever it is given, as `x-kubernetes-preserve-unknown-fields`.
fn mark_free_form(map: &mut Map<String, Value>) {
    let has_shape = map.contains_key("properties")
        || map.contains_key("additionalProperties")
        || map.contains_key("items")
        || map.contains_key("enum")
        || map.contains_key("anyOf")
        || map.contains_key("x-kubernetes-int-or-string");
    let ty = map.get("type").and_then(Value::as_str);
    if !has_shape && (ty.is_none() || ty == Some("object")) {
        map.insert("x-kubernetes-preserve-unknown-fields".into(), true.into());
    }
}
