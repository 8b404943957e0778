//! Validation of a v1 CRD's schemas beyond what `builtin` checks: the API rules of
//! apiextensions' `validateCustomResourceDefinitionOpenAPISchema` (unsupported keywords,
//! list and map types) and the structural-schema requirement (`schema.ValidateStructural`),
//! plus the scale subresource's paths. Defaults are not validated against their schema, and
//! CEL rules are not compiled.

use serde_json::{Map, Value, json};

use super::field::{Shown, forbidden, invalid, not_supported, required};
use apimachinery::status::Cause;

/// Causes for every problem with the schemas and subresources of a CRD's versions.
pub fn validate_crd_versions(crd: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    let versions = crd
        .pointer("/spec/versions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, v) in versions.iter().enumerate() {
        let vp = format!("spec.versions[{i}]");
        if let Some(schema) = v.pointer("/schema/openAPIV3Schema") {
            errs.extend(validate_schema(
                schema,
                &format!("{vp}.schema.openAPIV3Schema"),
            ));
        }
        if let Some(scale) = v.pointer("/subresources/scale") {
            scale_paths(scale, &format!("{vp}.subresources"), &mut errs);
        }
    }
    errs
}

/// The API and structural problems of one `openAPIV3Schema` (path is where it sits).
pub fn validate_schema(schema: &Value, path: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    api_rules(schema, path, false, &mut errs);
    let mut structural = Vec::new();
    invariants(schema, Level::Root, path, &mut structural);
    structural.sort_by(|a, b| {
        format!("{}: {}", a.field, a.message).cmp(&format!("{}: {}", b.field, b.message))
    });
    errs.extend(structural);
    if errs.is_empty() {
        defaults(schema, path, false, &mut errs);
    }
    errs
}

/// defaulting.ValidateDefaults: a default may not carry fields its schema prunes, and must
/// validate against its schema (defaults inside `metadata` are not checked here).
fn defaults(s: &Value, path: &str, inside_meta: bool, errs: &mut Vec<Cause>) {
    let Some(m) = obj(s) else {
        return;
    };
    if let Some(default) = m.get("default")
        && !inside_meta
    {
        let compiled = super::schema::Schema::compile(s);
        let mut pruned = default.clone();
        super::pruning::prune_value(&mut pruned, &compiled, compiled.embedded);
        let at = format!("{path}.default");
        if &pruned != default {
            errs.push(invalid(
                &at,
                Shown::Json(default.clone()),
                "must not have unknown fields",
            ));
        }
        errs.extend(super::validation::validate_value_at(
            default, &compiled, &at,
        ));
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let meta = inside_meta
                || (k == "metadata"
                    && (path.ends_with("openAPIV3Schema")
                        || flag(m, "x-kubernetes-embedded-resource")));
            defaults(p, &key_path(path, k), meta, errs);
        }
    }
    if let Some(items) = m.get("items") {
        defaults(items, &format!("{path}.items"), inside_meta, errs);
    }
    if let Some(ap) = m.get("additionalProperties") {
        defaults(
            ap,
            &format!("{path}.additionalProperties"),
            inside_meta,
            errs,
        );
    }
}

fn obj(v: &Value) -> Option<&Map<String, Value>> {
    v.as_object()
}

fn type_of(m: &Map<String, Value>) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or("")
}

fn flag(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn key_path(path: &str, prop: &str) -> String {
    format!("{path}.properties[{prop}]")
}

/// The per-node API rules, recursively.
fn api_rules(s: &Value, path: &str, inside_meta: bool, errs: &mut Vec<Cause>) {
    let Some(m) = obj(s) else {
        return;
    };
    let t = type_of(m);
    if m.get("type").is_some_and(Value::is_null) || t == "null" {
        errs.push(forbidden(
            &format!("{path}.type"),
            "type cannot be set to null, use nullable as an alternative",
        ));
    } else if !t.is_empty()
        && !["array", "boolean", "integer", "number", "object", "string"].contains(&t)
    {
        errs.push(not_supported(
            &format!("{path}.type"),
            Shown::str(t),
            &["array", "boolean", "integer", "number", "object", "string"].map(String::from),
        ));
    }
    for (k, what) in [
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
        ("$ref", "$ref is not supported"),
    ] {
        if m.contains_key(k) {
            errs.push(forbidden(&format!("{path}.{k}"), what));
        }
    }
    if flag(m, "uniqueItems") {
        errs.push(forbidden(
            &format!("{path}.uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let has_props = m
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if let Some(ap) = m.get("additionalProperties")
        && has_props
        && (ap == &Value::Bool(false) || ap.is_object())
    {
        errs.push(forbidden(
            &format!("{path}.additionalProperties"),
            "additionalProperties and properties are mutual exclusive",
        ));
    }
    if m.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(false)) {
        errs.push(invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            Shown::Json(json!(false)),
            "must be true or undefined",
        ));
    }
    if inside_meta && flag(m, "x-kubernetes-embedded-resource") {
        errs.push(forbidden(
            &format!("{path}.x-kubernetes-embedded-resource"),
            "must not be used inside of resource meta",
        ));
    }
    if let Some(map_type) = m.get("x-kubernetes-map-type").and_then(Value::as_str) {
        if t != "object" {
            if t.is_empty() {
                errs.push(required(
                    &format!("{path}.type"),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            } else {
                errs.push(invalid(
                    &format!("{path}.type"),
                    Shown::str(t),
                    "must be object if x-kubernetes-map-type is specified",
                ));
            }
        }
        if !["atomic", "granular"].contains(&map_type) {
            errs.push(not_supported(
                &format!("{path}.x-kubernetes-map-type"),
                Shown::str(map_type),
                &["atomic".into(), "granular".into()],
            ));
        }
    }
    list_type_rules(m, t, path, errs);
    match m.get("items") {
        Some(Value::Array(_)) => errs.push(forbidden(
            &format!("{path}.items"),
            "items must be a schema object and not an array",
        )),
        Some(items) => api_rules(items, &format!("{path}.items"), inside_meta, errs),
        None => {}
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            let meta = inside_meta
                || (k == "metadata"
                    && (path.ends_with("openAPIV3Schema")
                        || flag(m, "x-kubernetes-embedded-resource")));
            api_rules(p, &key_path(path, k), meta, errs);
        }
    }
    if let Some(ap) = m.get("additionalProperties")
        && ap.is_object()
    {
        api_rules(
            ap,
            &format!("{path}.additionalProperties"),
            inside_meta,
            errs,
        );
    }
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(list) = m.get(k).and_then(Value::as_array) {
            for (i, sub) in list.iter().enumerate() {
                api_rules(sub, &format!("{path}.{k}[{i}]"), inside_meta, errs);
            }
        }
    }
    if let Some(not) = m.get("not") {
        api_rules(not, &format!("{path}.not"), inside_meta, errs);
    }
}

fn list_type_rules(m: &Map<String, Value>, t: &str, path: &str, errs: &mut Vec<Cause>) {
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(lt) = list_type {
        if t != "array" {
            if t.is_empty() {
                errs.push(required(
                    &format!("{path}.type"),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            } else {
                errs.push(invalid(
                    &format!("{path}.type"),
                    Shown::str(t),
                    "must be array if x-kubernetes-list-type is specified",
                ));
            }
        }
        if !["atomic", "set", "map"].contains(&lt) {
            errs.push(not_supported(
                &format!("{path}.x-kubernetes-list-type"),
                Shown::str(lt),
                &["atomic".into(), "set".into(), "map".into()],
            ));
        }
    }
    if !keys.is_empty() && list_type != Some("map") {
        match list_type {
            None => errs.push(required(
                &format!("{path}.x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some(lt) => errs.push(invalid(
                &format!("{path}.x-kubernetes-list-type"),
                Shown::str(lt),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
    if list_type == Some("map") {
        if keys.is_empty() {
            errs.push(required(
                &format!("{path}.x-kubernetes-list-map-keys"),
                "must not be empty if x-kubernetes-list-type is map",
            ));
        }
        match m.get("items").and_then(Value::as_object) {
            None => errs.push(required(
                &format!("{path}.items"),
                "must have a schema if x-kubernetes-list-type is map",
            )),
            Some(items) => {
                let it = type_of(items);
                if it != "object" {
                    errs.push(invalid(
                        &format!("{path}.items.type"),
                        Shown::str(it),
                        "must be object if parent array's x-kubernetes-list-type is map",
                    ));
                } else {
                    let props = items.get("properties").and_then(Value::as_object);
                    let required_keys: Vec<&str> = items
                        .get("required")
                        .and_then(Value::as_array)
                        .map(|a| a.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    if keys
                        .iter()
                        .any(|k| props.is_none_or(|p| !p.contains_key(*k)))
                    {
                        errs.push(invalid(
                            &format!("{path}.x-kubernetes-list-map-keys"),
                            Shown::Raw(go_strings(&keys)),
                            "entries must all be names of item properties",
                        ));
                    }
                    for k in &keys {
                        let Some(p) = props.and_then(|p| p.get(*k)).and_then(Value::as_object)
                        else {
                            continue;
                        };
                        if !required_keys.contains(k) && !p.contains_key("default") {
                            errs.push(required(
                                &format!("{path}.items.properties[{k}].default"),
                                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
                            ));
                        }
                        if flag(p, "nullable") {
                            errs.push(forbidden(
                                &format!("{path}.items.properties[{k}].nullable"),
                                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                            ));
                        }
                    }
                }
            }
        }
    }
}

fn go_strings(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| super::field::go_quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Item,
    Field,
}

fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    any_of == Some(&json!([{"type": "integer"}, {"type": "string"}]))
}

/// validateStructuralInvariants.
fn invariants(s: &Value, lvl: Level, path: &str, errs: &mut Vec<Cause>) {
    let Some(m) = obj(s) else {
        return;
    };
    let t = type_of(m);
    let embedded = flag(m, "x-kubernetes-embedded-resource");
    let int_or_string = flag(m, "x-kubernetes-int-or-string");
    let preserve = flag(m, "x-kubernetes-preserve-unknown-fields");
    if t == "array" && !m.get("items").is_some_and(Value::is_object) {
        errs.push(required(&format!("{path}.items"), "must be specified"));
    }
    if let Some(items) = m.get("items")
        && items.is_object()
    {
        invariants(items, Level::Item, &format!("{path}.items"), errs);
    }
    let props = m.get("properties").and_then(Value::as_object);
    if let Some(props) = props {
        for (k, p) in props {
            invariants(p, Level::Field, &key_path(path, k), errs);
        }
    }
    if let Some(ap) = m.get("additionalProperties") {
        if lvl == Level::Root {
            errs.push(forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used at the root",
            ));
        }
        if ap.is_object() {
            invariants(
                ap,
                Level::Field,
                &format!("{path}.additionalProperties"),
                errs,
            );
        }
        if embedded {
            errs.push(forbidden(
                &format!("{path}.additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            ));
        }
    }
    if int_or_string && preserve {
        errs.push(invalid(
            &format!("{path}.x-kubernetes-preserve-unknown-fields"),
            Shown::Json(json!(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        errs.push(invalid(
            &format!("{path}.x-kubernetes-embedded-resource"),
            Shown::Json(json!(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let skip_any_of = is_int_or_string_any_of(m.get("anyOf"));
    let skip_first_all_of_any_of = m
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
    value_validation(m, skip_any_of, skip_first_all_of_any_of, path, errs);

    if embedded && t != "object" {
        if t.is_empty() {
            errs.push(required(
                &format!("{path}.type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            errs.push(invalid(
                &format!("{path}.type"),
                Shown::str(t),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if t.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(required(&format!("{path}.type"), detail));
    }
    if lvl == Level::Root && !t.is_empty() && t != "object" {
        errs.push(invalid(
            &format!("{path}.type"),
            Shown::str(t),
            "must be object at the root",
        ));
    }
    let check_metadata = lvl == Level::Root || embedded;
    if check_metadata && let Some(props) = props {
        for k in ["kind", "apiVersion"] {
            if let Some(p) = props.get(k).and_then(Value::as_object) {
                let pt = type_of(p);
                if pt != "string" {
                    errs.push(invalid(
                        &format!("{}.type", key_path(path, k)),
                        Shown::str(pt),
                        "must be string",
                    ));
                }
            }
        }
    }
    if let Some(meta) = props
        .and_then(|p| p.get("metadata"))
        .and_then(Value::as_object)
    {
        let mp = key_path(path, "metadata");
        if check_metadata && type_of(meta) != "object" {
            errs.push(invalid(
                &format!("{mp}.type"),
                Shown::str(type_of(meta)),
                "must be object",
            ));
        }
        if lvl == Level::Root && !root_metadata_ok(meta) {
            errs.push(forbidden(
                &mp,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if embedded && !preserve && props.is_none_or(|p| p.is_empty()) {
        errs.push(required(
            &format!("{path}.properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// At the root, `metadata` may only restrict `name` and `generateName` (and carry a type).
fn root_metadata_ok(meta: &Map<String, Value>) -> bool {
    meta.iter().all(|(k, v)| match k.as_str() {
        "type" | "default" => true,
        "properties" => v
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    })
}

/// validateValueValidation over allOf/anyOf/oneOf/not.
fn value_validation(
    m: &Map<String, Value>,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &str,
    errs: &mut Vec<Cause>,
) {
    if !skip_any_of && let Some(list) = m.get("anyOf").and_then(Value::as_array) {
        for (i, sub) in list.iter().enumerate() {
            nested(sub, false, &format!("{path}.anyOf[{i}]"), errs);
        }
    }
    if let Some(list) = m.get("allOf").and_then(Value::as_array) {
        for (i, sub) in list.iter().enumerate() {
            nested(
                sub,
                skip_first_all_of_any_of && i == 0,
                &format!("{path}.allOf[{i}]"),
                errs,
            );
        }
    }
    if let Some(list) = m.get("oneOf").and_then(Value::as_array) {
        for (i, sub) in list.iter().enumerate() {
            nested(sub, false, &format!("{path}.oneOf[{i}]"), errs);
        }
    }
    if let Some(not) = m.get("not") {
        nested(not, false, &format!("{path}.not"), errs);
    }
    if let Some(p) = m.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(p)
    {
        errs.push(invalid(
            &format!("{path}.pattern"),
            Shown::str(p),
            &format!("must be a valid regular expression, but isn't: {e}"),
        ));
    }
}

/// validateNestedValueValidation: value validations may not carry structure.
fn nested(s: &Value, skip_any_of: bool, path: &str, errs: &mut Vec<Cause>) {
    let Some(m) = obj(s) else {
        return;
    };
    value_validation(m, skip_any_of, false, path, errs);
    if let Some(items) = m.get("items") {
        nested(items, false, &format!("{path}.items"), errs);
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, p) in props {
            nested(p, false, &key_path(path, k), errs);
        }
        if props.contains_key("metadata") {
            errs.push(forbidden(
                &key_path(path, "metadata"),
                "must not be specified in a nested context",
            ));
        }
    }
    let forbidden_if = |cond: bool, k: &str, detail: &str, errs: &mut Vec<Cause>| {
        if cond {
            errs.push(forbidden(&format!("{path}.{k}"), detail));
        }
    };
    forbidden_if(
        !type_of(m).is_empty(),
        "type",
        "must be empty to be structural",
        errs,
    );
    forbidden_if(
        m.contains_key("additionalProperties"),
        "additionalProperties",
        "must be undefined to be structural",
        errs,
    );
    forbidden_if(
        m.contains_key("default"),
        "default",
        "must be undefined to be structural",
        errs,
    );
    forbidden_if(
        m.get("title")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty()),
        "title",
        "must be empty to be structural",
        errs,
    );
    forbidden_if(
        m.get("description")
            .and_then(Value::as_str)
            .is_some_and(|t| !t.is_empty()),
        "description",
        "must be empty to be structural",
        errs,
    );
    forbidden_if(
        flag(m, "nullable"),
        "nullable",
        "must be false to be structural",
        errs,
    );
    for (k, detail) in [
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
    ] {
        forbidden_if(flag(m, k), k, detail, errs);
    }
    forbidden_if(
        m.get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty()),
        "x-kubernetes-list-map-keys",
        "must be empty to be structural",
        errs,
    );
    forbidden_if(
        m.contains_key("x-kubernetes-list-type"),
        "x-kubernetes-list-type",
        "must be undefined to be structural",
        errs,
    );
    forbidden_if(
        m.contains_key("x-kubernetes-map-type"),
        "x-kubernetes-map-type",
        "must be undefined to be structural",
        errs,
    );
    forbidden_if(
        m.get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty()),
        "x-kubernetes-validations",
        "must be empty to be structural",
        errs,
    );
}

/// ValidateCustomResourceDefinitionSubresources for `scale`.
fn scale_paths(scale: &Value, path: &str, errs: &mut Vec<Cause>) {
    let spec = scale
        .get("specReplicasPath")
        .and_then(Value::as_str)
        .unwrap_or("");
    let status = scale
        .get("statusReplicasPath")
        .and_then(Value::as_str)
        .unwrap_or("");
    let selector = scale.get("labelSelectorPath").and_then(Value::as_str);
    if spec.is_empty() {
        errs.push(required(&format!("{path}.scale.specReplicasPath"), ""));
    } else if !json_path_ok(spec, &format!("{path}.scale.specReplicasPath"), errs) {
    } else if !spec.starts_with(".spec.") {
        errs.push(invalid(
            &format!("{path}.scale.specReplicasPath"),
            Shown::str(spec),
            "should be a json path under .spec",
        ));
    }
    if status.is_empty() {
        errs.push(required(&format!("{path}.scale.statusReplicasPath"), ""));
    } else if !json_path_ok(status, &format!("{path}.scale.statusReplicasPath"), errs) {
    } else if !status.starts_with(".status.") {
        errs.push(invalid(
            &format!("{path}.scale.statusReplicasPath"),
            Shown::str(status),
            "should be a json path under .status",
        ));
    }
    if let Some(sel) = selector.filter(|s| !s.is_empty())
        && json_path_ok(sel, &format!("{path}.scale.labelSelectorPath"), errs)
        && !sel.starts_with(".spec.")
        && !sel.starts_with(".status.")
    {
        errs.push(invalid(
            &format!("{path}.scale.labelSelectorPath"),
            Shown::str(sel),
            "should be a json path under either .spec or .status",
        ));
    }
}

/// validateSimpleJSONPath.
fn json_path_ok(s: &str, path: &str, errs: &mut Vec<Cause>) -> bool {
    if !s.starts_with('.') {
        errs.push(invalid(
            path,
            Shown::str(s),
            "must be a simple json path starting with .",
        ));
        return false;
    }
    if s.contains('[') || s.contains(']') || s.contains("..") {
        errs.push(invalid(
            path,
            Shown::str(s),
            "must be a json path in the dot notation",
        ));
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msgs(schema: Value) -> Vec<String> {
        validate_schema(&schema, "spec.versions[0].schema.openAPIV3Schema")
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn structural_table() {
        let p = "spec.versions[0].schema.openAPIV3Schema";
        let cases: Vec<(Value, Vec<String>)> = vec![
            (
                json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}}),
                vec![],
            ),
            (
                json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
                vec![format!(
                    "{p}.properties[spec].type: Required value: must not be empty for specified object fields"
                )],
            ),
            (
                json!({"properties": {"spec": {"type": "object"}}}),
                vec![format!(
                    "{p}.type: Required value: must not be empty at the root"
                )],
            ),
            (
                json!({"type": "string"}),
                vec![format!(
                    "{p}.type: Invalid value: \"string\": must be object at the root"
                )],
            ),
            (
                json!({"type": "object", "properties": {"l": {"type": "array"}}}),
                vec![format!(
                    "{p}.properties[l].items: Required value: must be specified"
                )],
            ),
            (
                json!({"type": "object", "properties": {"l": {"type": "array", "items": {}}}}),
                vec![format!(
                    "{p}.properties[l].items.type: Required value: must not be empty for specified array items"
                )],
            ),
            (
                json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
                vec![format!(
                    "{p}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
                )],
            ),
            (
                json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
                vec![],
            ),
            (
                json!({"type": "object", "properties": {"v": {"type": "string", "anyOf": [{"type": "string"}]}}}),
                vec![format!(
                    "{p}.properties[v].anyOf[0].type: Forbidden: must be empty to be structural"
                )],
            ),
            (
                json!({"type": "object", "properties": {"v": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
                vec![],
            ),
            (
                json!({"type": "object", "properties": {"l": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}}}),
                vec![format!(
                    "{p}.properties[l].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
                )],
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}}),
                vec![format!(
                    "{p}.properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
                )],
            ),
            (
                json!({"type": "object", "properties": {"l": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"k": {"type": "string"}}}}}}),
                vec![format!(
                    "{p}.properties[l].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
                )],
            ),
            (
                json!({"type": "object", "properties": {"x": {"type": "object", "$ref": "#/foo"}}}),
                vec![format!(
                    "{p}.properties[x].$ref: Forbidden: $ref is not supported"
                )],
            ),
            (
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                vec![],
            ),
            (
                json!({"type": "object", "properties": {"n": {"type": "integer", "default": "x"}}}),
                vec![format!(
                    "{p}.properties[n].default: Invalid value: \"string\":  in body must be of type integer: \"string\""
                )],
            ),
            (
                json!({"type": "object", "properties": {"o": {"type": "object", "default": {"a": 1, "b": 2},
                    "properties": {"a": {"type": "integer", "minimum": 2}}}}}),
                vec![
                    format!(
                        "{p}.properties[o].default: Invalid value: map[string]interface {{}}{{\"a\":1, \"b\":2}}: must not have unknown fields"
                    ),
                    format!(
                        "{p}.properties[o].default.a: Invalid value: 1: a in body should be greater than or equal to 2"
                    ),
                ],
            ),
            (
                json!({"type": "object", "properties": {"o": {"type": "object", "default": {"a": 3},
                    "properties": {"a": {"type": "integer", "minimum": 2}}}}}),
                vec![],
            ),
        ];
        for (schema, want) in cases {
            assert_eq!(msgs(schema.clone()), want, "{schema}");
        }
    }

    #[test]
    fn scale_paths_table() {
        let crd = json!({"spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object"}},
            "subresources": {"scale": {"specReplicasPath": ".status.replicas", "statusReplicasPath": "status.replicas"}}}]}});
        let got: Vec<String> = validate_crd_versions(&crd)
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            got,
            vec![
                "spec.versions[0].subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
                "spec.versions[0].subresources.scale.statusReplicasPath: Invalid value: \"status.replicas\": must be a simple json path starting with .",
            ]
        );
    }
}
