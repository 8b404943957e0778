//! A CRD version's schema as the OpenAPI v2 document publishes it (apiextensions-apiserver's
//! pkg/controller/openapi/v2).

use serde_json::Value;

/// kube's `ToStructuralOpenAPIV2` on a CRD version's schema, in place: kubectl's v2
/// validation cannot express junctors or nullable values, and refuses fields it was not told
/// about, so junctors go, a nullable value becomes untyped (any value passes), a value that
/// keeps unknown fields loses its properties and items, an array without items loses its
/// type, and a nullable property is no longer required. Keys a structural schema does not
/// keep (`example`, `externalDocs`) go too, as kube's structural conversion drops them.
pub fn to_structural_v2(v: &mut Value) {
    let Value::Object(m) = v else {
        return;
    };
    for key in ["allOf", "oneOf", "anyOf", "not", "example", "externalDocs"] {
        m.remove(key);
    }
    if m.remove("nullable") == Some(Value::Bool(true)) {
        for key in ["type", "items", "properties"] {
            m.remove(key);
        }
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        m.remove("items");
        m.remove("properties");
    }
    if !m.contains_key("items") && m.get("type").and_then(Value::as_str) == Some("array") {
        m.remove("type");
    }
    let nullable = |s: &Value| s.get("nullable") == Some(&Value::Bool(true));
    let mut optional: Vec<String> = m
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .filter(|(_, s)| nullable(s))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default();
    if m.get("additionalProperties").is_some_and(nullable) {
        m.remove("required");
        optional.clear();
    }
    if let Some(Value::Array(required)) = m.get_mut("required") {
        required.retain(|r| !r.as_str().is_some_and(|r| optional.iter().any(|o| o == r)));
        if required.is_empty() {
            m.remove("required");
        }
    }
    if let Some(items) = m.get_mut("items") {
        to_structural_v2(items);
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for s in props.values_mut() {
            to_structural_v2(s);
        }
    }
    if let Some(additional) = m.get_mut("additionalProperties") {
        to_structural_v2(additional);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn crd_schemas_are_filtered_as_kube_does_for_v2() {
        let mut s = json!({
            "type": "object",
            "required": ["size", "name"],
            "example": {"name": "x"},
            "properties": {
                "name": {"type": "string", "description": "The name."},
                "size": {"type": "string", "nullable": true, "description": "How big."},
                "port": {"x-kubernetes-int-or-string": true,
                         "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "properties": {"a": {"type": "string"}}},
                "list": {"type": "array", "x-kubernetes-preserve-unknown-fields": true,
                         "items": {"type": "string"}},
                "deep": {"type": "array", "items": {"type": "object", "oneOf": [{"required": ["a"]}],
                         "properties": {"a": {"type": "integer", "nullable": true}},
                         "required": ["a"]}},
                "labels": {"type": "object", "required": ["x"],
                           "additionalProperties": {"type": "string", "nullable": true}},
            },
        });
        to_structural_v2(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "description": "The name."},
                    "size": {"description": "How big."},
                    "port": {"x-kubernetes-int-or-string": true},
                    "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "list": {"x-kubernetes-preserve-unknown-fields": true},
                    "deep": {"type": "array", "items": {"type": "object",
                             "properties": {"a": {}}}},
                    "labels": {"type": "object", "additionalProperties": {}},
                },
            })
        );
    }
}
