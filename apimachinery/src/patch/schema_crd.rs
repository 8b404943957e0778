//! Schemas of custom resources, from a CRD version's `openAPIV3Schema` and its Kubernetes
//! extensions (as kube-openapi's `schemaconv` reads them for structured-merge-diff).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::schema::{Builder, DEDUCED, ListType, Node, NodeId, SCALAR, Schema, SmpList};
use super::schema_builtin::object_meta;

/// See [`Schema::from_openapi_v3`].
pub(crate) fn from_openapi_v3(schema: &Value) -> Schema {
    let mut b = Builder::new();
    let body = convert(&mut b, schema);
    let meta = object_meta(&mut b);
    let mut fields = b_node_fields(&b, body).unwrap_or_default();
    fields.insert("apiVersion".to_string(), SCALAR);
    fields.insert("kind".to_string(), SCALAR);
    fields.insert("metadata".to_string(), meta);
    let root = b.add(Node::Struct {
        fields,
        other: DEDUCED,
        other_is_field: false,
        atomic: false,
    });
    b.finish(root, json!({}), false)
}

/// See [`Schema::untyped`].
pub(crate) fn untyped() -> Schema {
    from_openapi_v3(&json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}))
}

/// The named fields of a struct node just built, to graft the object metadata on.
fn b_node_fields(b: &Builder, id: NodeId) -> Option<BTreeMap<String, NodeId>> {
    match b.get(id) {
        Some(Node::Struct { fields, .. }) => Some(fields.clone()),
        _ => None,
    }
}

fn flag(schema: &Map<String, Value>, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool).unwrap_or(false)
}

fn convert(b: &mut Builder, schema: &Value) -> NodeId {
    let Value::Object(s) = schema else {
        return DEDUCED;
    };
    if flag(s, "x-kubernetes-int-or-string") {
        return SCALAR;
    }
    let ty = s.get("type").and_then(Value::as_str);
    let properties = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties");
    match ty {
        Some("object") | None if properties.is_some() || ty.is_some() || additional.is_some() => {
            convert_object(b, s, properties, additional)
        }
        Some("array") => convert_array(b, s),
        Some(_) => SCALAR,
        None => DEDUCED,
    }
}

fn convert_object(
    b: &mut Builder,
    s: &Map<String, Value>,
    properties: Option<&Map<String, Value>>,
    additional: Option<&Value>,
) -> NodeId {
    let atomic = s.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
    if let Some(properties) = properties {
        let fields = properties
            .iter()
            .map(|(name, sub)| (name.clone(), convert(b, sub)))
            .collect();
        return b.add(Node::Struct {
            fields,
            other: DEDUCED,
            other_is_field: false,
            atomic,
        });
    }
    let elem = match additional {
        Some(sub @ Value::Object(_)) => convert(b, sub),
        _ => DEDUCED,
    };
    b.add(Node::Map { elem, atomic })
}

fn convert_array(b: &mut Builder, s: &Map<String, Value>) -> NodeId {
    let items = s.get("items");
    let elem = items.map_or(DEDUCED, |items| convert(b, items));
    let list = match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => ListType::Set,
        Some("map") => {
            let keys: Vec<String> = s
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|keys| {
                    keys.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let item_properties = items
                .and_then(|items| items.get("properties"))
                .and_then(Value::as_object);
            let defaults = keys
                .iter()
                .filter_map(|key| {
                    let default = item_properties?.get(key)?.get("default")?;
                    Some((key.clone(), default.clone()))
                })
                .collect();
            ListType::Map { keys, defaults }
        }
        _ => ListType::Atomic,
    };
    b.add(Node::List {
        elem,
        list,
        smp: SmpList::Replace,
    })
}

#[cfg(test)]
mod tests {
    use super::super::schema::ObjectType;
    use super::*;

    #[test]
    fn extensions_decide_list_and_map_types() {
        let schema = Schema::from_openapi_v3(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer"},
                        "ports": {
                            "type": "array",
                            "x-kubernetes-list-type": "map",
                            "x-kubernetes-list-map-keys": ["port", "protocol"],
                            "items": {"type": "object", "properties": {
                                "port": {"type": "integer"},
                                "protocol": {"type": "string", "default": "TCP"},
                            }},
                        },
                        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
                        "args": {"type": "array", "items": {"type": "string"}},
                        "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "size": {"x-kubernetes-int-or-string": true},
                    },
                },
            },
        }));
        let spec = schema.field(schema.root, "spec").0;
        let (ports, named) = schema.field(spec, "ports");
        assert!(named);
        assert_eq!(
            schema.list_type(ports),
            &ListType::Map {
                keys: vec!["port".to_string(), "protocol".to_string()],
                defaults: [("protocol".to_string(), json!("TCP"))]
                    .into_iter()
                    .collect(),
            }
        );
        assert_eq!(
            schema.list_type(schema.field(spec, "tags").0),
            &ListType::Set
        );
        assert_eq!(
            schema.list_type(schema.field(spec, "args").0),
            &ListType::Atomic
        );
        assert!(matches!(
            schema.object_type(schema.field(spec, "selector").0),
            ObjectType::Atomic
        ));
        let labels = schema.field(spec, "labels").0;
        assert!(matches!(schema.object_type(labels), ObjectType::Granular));
        assert!(
            !schema.field(labels, "anything").1,
            "map keys are not named fields"
        );
        assert_eq!(schema.field(spec, "size").0, SCALAR);
        assert!(!schema.field(spec, "unknown").1);
        // Object metadata is always ObjectMeta.
        let meta = schema.field(schema.root, "metadata").0;
        let finalizers = schema.field(meta, "finalizers").0;
        assert_eq!(schema.list_type(finalizers), &ListType::Set);
        assert!(!schema.supports_strategic_merge());
    }

    #[test]
    fn untyped_lists_are_atomic_and_objects_granular() {
        let schema = Schema::untyped();
        let spec = schema.field(schema.root, "spec").0;
        assert!(matches!(schema.object_type(spec), ObjectType::Granular));
        assert!(!schema.field(spec, "x").1);
        assert_eq!(
            schema.list_type(schema.field(spec, "items").0),
            &ListType::Atomic
        );
    }
}
