//! A kind's OpenAPI v3 schema as a checker type, as kube's `SchemaDeclType` makes one
//! (k8s.io/apiserver pkg/cel/common/schemas.go): objects with properties are objects of those
//! fields, `additionalProperties` makes a `map(string, T)`, `x-kubernetes-int-or-string` and
//! schemaless `x-kubernetes-preserve-unknown-fields` are `dyn`, string formats `date-time` and
//! `date` are timestamps, `duration` durations and `byte` bytes; a resource root always has
//! `apiVersion`, `kind` and `metadata.name`/`generateName`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::types::Ty;

/// Resolves `#/components/schemas/NAME` references.
pub type Components<'a> = &'a dyn Fn(&str) -> Option<Value>;

/// The type of a resource (or param) kind, named `name`.
pub fn resource_type(schema: &Value, name: &str, components: Components<'_>) -> Option<Ty> {
    decl_type(schema, name, true, components, 0)
}

/// Follows `$ref` and a lone `allOf: [{$ref}]`, as kube's resolved schemas have them inlined.
fn resolve(schema: &Value, components: Components<'_>, depth: usize) -> Option<Value> {
    if depth > 64 {
        return None;
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next()?;
        return resolve(&components(name)?, components, depth + 1);
    }
    if let Some([only]) = schema
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        && schema.get("type").is_none()
        && schema.get("properties").is_none()
    {
        return resolve(only, components, depth + 1);
    }
    Some(schema.clone())
}

fn flag(s: &Value, name: &str) -> bool {
    s.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn schema_type(s: &Value) -> &str {
    match s.get("type") {
        Some(Value::String(t)) => t,
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or(""),
        _ => "",
    }
}

fn decl_type(
    schema: &Value,
    name: &str,
    resource_root: bool,
    components: Components<'_>,
    depth: usize,
) -> Option<Ty> {
    if depth > 48 {
        // Recursive schemas (JSONSchemaProps) are cut where kube's would be too deep to use.
        return Some(Ty::Dyn);
    }
    let s = resolve(schema, components, depth)?;
    if flag(&s, "x-kubernetes-int-or-string") {
        return Some(Ty::Dyn);
    }
    let s = if resource_root {
        with_type_and_object_meta(&s, components)
    } else {
        s
    };
    let s = &s;
    let ty = schema_type(s);
    let has_props = s.get("properties").is_some_and(|p| p.is_object());
    if flag(s, "x-kubernetes-preserve-unknown-fields") && ty.is_empty() && !has_props {
        return Some(Ty::Dyn);
    }
    match (ty, has_props) {
        ("array", _) => {
            let items = s.get("items")?;
            let embedded = resolve(items, components, depth)
                .is_some_and(|i| flag(&i, "x-kubernetes-embedded-resource"));
            Some(Ty::list(decl_type(
                items,
                name,
                embedded,
                components,
                depth + 1,
            )?))
        }
        ("object", _) | ("", true) => {
            if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                let embedded = resolve(ap, components, depth)
                    .is_some_and(|i| flag(&i, "x-kubernetes-embedded-resource"));
                return Some(Ty::map(
                    Ty::String,
                    decl_type(ap, name, embedded, components, depth + 1)?,
                ));
            }
            let mut fields = BTreeMap::new();
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (field, prop) in props {
                    let embedded = resolve(prop, components, depth)
                        .is_some_and(|p| flag(&p, "x-kubernetes-embedded-resource"));
                    let child = format!("{name}.{field}");
                    if let Some(t) = decl_type(prop, &child, embedded, components, depth + 1) {
                        fields.insert(field.clone(), t);
                    }
                }
            }
            if fields.is_empty() && flag(s, "x-kubernetes-preserve-unknown-fields") {
                return Some(Ty::Dyn);
            }
            Some(Ty::object(name, fields))
        }
        ("string", _) => Some(match s.get("format").and_then(Value::as_str) {
            Some("byte") => Ty::Bytes,
            Some("duration") => Ty::Duration,
            Some("date") | Some("date-time") => Ty::Timestamp,
            _ => Ty::String,
        }),
        ("boolean", _) => Some(Ty::Bool),
        ("number", _) => Some(Ty::Double),
        ("integer", _) => Some(Ty::Int),
        _ => None,
    }
}

/// kube's `WithTypeAndObjectMeta`: the root keeps its schema when it declares `kind`,
/// `apiVersion` and `metadata.name`/`generateName`; otherwise those replace what it has.
fn with_type_and_object_meta(s: &Value, components: Components<'_>) -> Value {
    let props = s.get("properties").and_then(Value::as_object);
    let is_string = |v: Option<&Value>| {
        v.and_then(|v| resolve(v, components, 0))
            .is_some_and(|v| schema_type(&v) == "string")
    };
    let meta = props
        .and_then(|p| p.get("metadata"))
        .and_then(|m| resolve(m, components, 0));
    let meta_props = meta
        .as_ref()
        .and_then(|m| m.get("properties"))
        .and_then(Value::as_object);
    let complete = props.is_some()
        && is_string(props.and_then(|p| p.get("kind")))
        && is_string(props.and_then(|p| p.get("apiVersion")))
        && meta.as_ref().is_some_and(|m| schema_type(m) == "object")
        && is_string(meta_props.and_then(|p| p.get("name")))
        && is_string(meta_props.and_then(|p| p.get("generateName")));
    let mut out = s.clone();
    if complete {
        if let Some(m) = out.pointer_mut("/properties/metadata") {
            // Inline it, so the resolution above and below agree.
            *m = meta.clone().unwrap_or_default();
        }
        return out;
    }
    let mut props = props.cloned().unwrap_or_default();
    props.insert("kind".into(), json!({"type": "string"}));
    props.insert("apiVersion".into(), json!({"type": "string"}));
    props.insert(
        "metadata".into(),
        json!({"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}),
    );
    if let Some(o) = out.as_object_mut() {
        o.insert("properties".into(), Value::Object(props));
        if schema_type(s).is_empty() {
            o.insert("type".into(), json!("object"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_refs(_: &str) -> Option<Value> {
        None
    }

    #[test]
    fn crd_schema_becomes_an_object_type() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {"type": "object", "properties": {
                    "replicas": {"type": "integer"},
                    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    "port": {"x-kubernetes-int-or-string": true},
                    "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "when": {"type": "string", "format": "date-time"},
                    "items": {"type": "array", "items": {"type": "number"}}
                }},
                "metadata": {"type": "object"}
            }
        });
        let Some(Ty::Object(o)) = resource_type(&schema, "Foo", &no_refs) else {
            panic!("not an object")
        };
        assert_eq!(o.fields["kind"], Ty::String);
        let Ty::Object(meta) = &o.fields["metadata"] else {
            panic!()
        };
        assert_eq!(
            meta.fields.keys().collect::<Vec<_>>(),
            ["generateName", "name"]
        );
        let Ty::Object(spec) = &o.fields["spec"] else {
            panic!()
        };
        assert_eq!(spec.name, "Foo.spec");
        assert_eq!(spec.fields["replicas"], Ty::Int);
        assert_eq!(spec.fields["labels"], Ty::map(Ty::String, Ty::String));
        assert_eq!(spec.fields["port"], Ty::Dyn);
        assert_eq!(spec.fields["raw"], Ty::Dyn);
        assert_eq!(spec.fields["when"], Ty::Timestamp);
        assert_eq!(spec.fields["items"], Ty::list(Ty::Double));
    }
}
