//! Structural pruning of custom resources: fields the CRD schema does not specify are dropped
//! and their paths reported for `fieldValidation` (apiextensions-apiserver's
//! `pruning.PruneWithOptions`, `objectmeta.GetObjectMetaWithOptions` and
//! `objectmeta.CoerceWithOptions`, as `unstructuredSchemaCoercer.apply` chains them).

use serde_json::Value;

use super::defaulting::prune_non_nullable_nulls;
use super::schema::{Additional, Schema};

const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

fn is_meta(k: &str) -> bool {
    META_FIELDS.contains(&k)
}

/// Prunes a custom resource as kube decodes it and returns the unknown field paths in kube's
/// order: unknown `metadata` fields, then the pruned fields (sorted), then unknown fields of
/// embedded resources' metadata (sorted). Also drops nulls the schema does not allow.
pub fn prune_custom_resource(obj: &mut Value, schema: Option<&Schema>) -> Vec<String> {
    let mut out = Vec::new();
    if let Value::Object(root) = obj
        && let Some(meta) = root.get_mut("metadata")
    {
        out.extend(apimachinery::openapi::unknown_fields::prune_object_meta(
            meta, "metadata",
        ));
    }
    let mut pruned = Vec::new();
    let root_schema = schema.cloned().unwrap_or_default();
    prune_node(obj, Some(&root_schema), true, "", &mut pruned);
    pruned.sort();
    out.extend(pruned);
    prune_non_nullable_nulls(obj, schema);
    let mut coerced = Vec::new();
    if let Some(s) = schema {
        coerce_embedded(obj, s, "", &mut coerced);
    }
    coerced.sort();
    out.extend(coerced);
    out
}

/// Prunes a value by a schema without reporting (`pruning.Prune`); `root` treats the value as
/// a resource whose type meta and metadata are kept.
pub fn prune_value(v: &mut Value, schema: &Schema, root: bool) {
    let mut ignored = Vec::new();
    prune_node(v, Some(schema), root, "", &mut ignored);
}

fn append_key(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

/// `embedded` is the schema's `x-kubernetes-embedded-resource`, forced on at the root.
fn prune_node(
    x: &mut Value,
    s: Option<&Schema>,
    embedded: bool,
    path: &str,
    out: &mut Vec<String>,
) {
    if let Some(s) = s
        && s.preserve_unknown
    {
        skip_prune(x, s, embedded || s.embedded, path, out);
        return;
    }
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                for (k, _) in std::mem::take(m) {
                    out.push(append_key(path, &k));
                }
                return;
            };
            let embedded = embedded || s.embedded;
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                if embedded && is_meta(&k) {
                    continue;
                }
                let child = append_key(path, &k);
                if let Some(prop) = s.properties.get(&k) {
                    if let Some(v) = m.get_mut(&k) {
                        prune_node(v, Some(prop), false, &child, out);
                    }
                } else if !matches!(s.additional, Additional::Unset) {
                    let sub = match &s.additional {
                        Additional::Schema(a) => Some(a.as_ref()),
                        _ => None,
                    };
                    if let Some(v) = m.get_mut(&k) {
                        prune_node(v, sub, false, &child, out);
                    }
                } else {
                    if !is_meta(&k) || !path.is_empty() {
                        out.push(child);
                    }
                    m.remove(&k);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                prune_node(v, item_schema, false, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn skip_prune(x: &mut Value, s: &Schema, embedded: bool, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if embedded && is_meta(k) {
                    continue;
                }
                let child = append_key(path, k);
                if let Some(prop) = s.properties.get(k) {
                    prune_node(v, Some(prop), false, &child, out);
                } else {
                    match &s.additional {
                        Additional::Unset => {}
                        Additional::Schema(a) => prune_node(v, Some(a), false, &child, out),
                        Additional::Bool(_) => prune_node(v, None, false, &child, out),
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    skip_prune(
                        v,
                        item_schema,
                        item_schema.embedded,
                        &format!("{path}[{i}]"),
                        out,
                    );
                }
            }
        }
        _ => {}
    }
}

/// Field-path children as `field.Path` renders them (`a.b`, `a[key]`, `a[0]`).
fn field_child(path: &str, k: &str) -> String {
    append_key(path, k)
}

/// Prunes unknown ObjectMeta fields of embedded resources (kube's `coercer.coerce`).
fn coerce_embedded(x: &mut Value, s: &Schema, path: &str, out: &mut Vec<String>) {
    match x {
        Value::Object(m) => {
            if s.embedded
                && let Some(meta) = m.get_mut("metadata")
            {
                out.extend(apimachinery::openapi::unknown_fields::prune_object_meta(
                    meta,
                    &field_child(path, "metadata"),
                ));
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    coerce_embedded(v, prop, &field_child(path, k), out);
                } else if let Additional::Schema(a) = &s.additional {
                    coerce_embedded(v, a, &format!("{path}[{k}]"), out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    coerce_embedded(v, item_schema, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Schema {
        Schema::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer"},
                        "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                 "properties": {"typed": {"type": "object", "properties": {"a": {"type": "string"}}}}},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "x-kubernetes-preserve-unknown-fields": true},
                        "nothing": {"type": "string"}
                    }
                },
                "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
            }
        }))
    }

    #[test]
    fn prune_table() {
        let s = schema();
        let cases: Vec<(Value, Value, Vec<&str>)> = vec![
            (
                json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"replicas": 1}}),
                json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"replicas": 1}}),
                vec![],
            ),
            (
                json!({"spec": {"replicas": 1, "foo": 2}, "bar": {"x": 1}}),
                json!({"spec": {"replicas": 1}}),
                vec!["bar", "spec.foo"],
            ),
            (
                json!({"spec": {"items": [{"name": "a", "x": 1}, {"y": 2}]}}),
                json!({"spec": {"items": [{"name": "a"}, {}]}}),
                vec!["spec.items[0].x", "spec.items[1].y"],
            ),
            (
                json!({"spec": {"labels": {"a": "b"}}}),
                json!({"spec": {"labels": {"a": "b"}}}),
                vec![],
            ),
            (
                json!({"spec": {"free": {"anything": {"deep": 1}, "typed": {"a": "x", "b": "y"}}}}),
                json!({"spec": {"free": {"anything": {"deep": 1}, "typed": {"a": "x"}}}}),
                vec!["spec.free.typed.b"],
            ),
            (
                json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "bogus": 1}, "spec": {"x": 1}}}}),
                json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"x": 1}}}}),
                vec!["spec.template.metadata.bogus"],
            ),
            (
                json!({"metadata": {"name": "a", "foo": "x"}, "spec": {"nope": 1}}),
                json!({"metadata": {"name": "a"}, "spec": {}}),
                vec!["metadata.foo", "spec.nope"],
            ),
            (
                json!({"spec": {"replicas": null, "nothing": "x"}}),
                json!({"spec": {"nothing": "x"}}),
                vec![],
            ),
        ];
        for (mut input, want, paths) in cases {
            let got = prune_custom_resource(&mut input, Some(&s));
            assert_eq!(input, want);
            assert_eq!(got, paths);
        }
    }

    #[test]
    fn no_schema_keeps_type_meta_only() {
        let mut obj =
            json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"a": 1}});
        let got = prune_custom_resource(&mut obj, None);
        assert_eq!(got, vec!["spec"]);
        assert_eq!(
            obj,
            json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}})
        );
    }

    #[test]
    fn preserve_at_root() {
        let s = Schema::compile(
            &json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        let mut obj = json!({"metadata": {"name": "a"}, "spec": {"a": 1}, "other": [1]});
        let before = obj.clone();
        assert!(prune_custom_resource(&mut obj, Some(&s)).is_empty());
        assert_eq!(obj, before);
    }
}
