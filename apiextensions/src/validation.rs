//! Validation of custom resources against their CRD's schema, with kube's messages: the
//! checks of kube-openapi's `validate.SchemaValidator` as apiextensions-apiserver runs them
//! (`ValidateCustomResource` → `kubeOpenAPIResultToFieldErrors`), the list-type checks of
//! `listtype.ValidateListSetsAndMaps`, and the type-meta checks of embedded resources.
//!
//! Not done: `x-kubernetes-validations` (CEL rules are not evaluated) and validation
//! ratcheting (an update is validated like a create).

use std::collections::BTreeSet;

use serde_json::Value;

use super::field::{
    GoNumber, Shown, child, duplicate, go_float, go_number, go_value, invalid, not_supported,
    required, too_long, too_many, type_invalid,
};
use super::formats;
use super::schema::{Additional, Schema};
use apimachinery::status::Cause;

const IN: &str = "body";
/// The field kube reports errors without a field path under (a nil `field.Path`).
const NIL_PATH: &str = "<nil>";

/// Validates a whole custom resource; empty means valid.
pub fn validate_custom_resource(obj: &Value, schema: &Schema) -> Vec<Cause> {
    let mut errs = Vec::new();
    validate_node(obj, schema, "", &mut errs);
    list_types(obj, schema, "", &mut errs);
    embedded_type_meta(obj, schema, "", true, &mut errs);
    errs
}

/// Validates a value against a schema with errors under `base` (kube's
/// `ValidateCustomResource(fldPath, ...)`, used for a CRD's default values).
pub fn validate_value_at(v: &Value, schema: &Schema, base: &str) -> Vec<Cause> {
    let mut errs = Vec::new();
    validate_node(v, schema, "", &mut errs);
    for c in &mut errs {
        c.field = if c.field == NIL_PATH {
            base.to_string()
        } else {
            format!("{base}.{}", c.field)
        };
    }
    errs
}

/// The JSON type go-openapi infers for a decoded value, with the number format it reports.
fn json_type(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(_) => ("integer", "int64"),
            GoNumber::Float(_) => ("number", "float64"),
        },
    }
}

/// The path kube reports a validation error at (the error's name without a leading dot).
fn err_path(name: &str) -> String {
    match name.trim_start_matches('.') {
        "" => NIL_PATH.to_string(),
        p => p.to_string(),
    }
}

fn type_error(errs: &mut Vec<Cause>, name: &str, type_name: &str, value: &str) {
    errs.push(type_invalid(
        &err_path(name),
        Shown::str(value),
        &format!(
            "{name} in {IN} must be of type {type_name}: {}",
            go_value(&Value::String(value.into()), false)
        ),
    ));
}

fn schema_types(s: &Schema) -> Vec<&str> {
    if s.int_or_string {
        vec!["integer", "string"]
    } else if s.type_.is_empty() {
        vec![]
    } else {
        vec![s.type_.as_str()]
    }
}

/// typeValidator.Validate; returns false when the value is of the wrong type.
fn check_type(v: &Value, s: &Schema, name: &str, errs: &mut Vec<Cause>) -> bool {
    let types = schema_types(s);
    let format = s.checked_format().unwrap_or("");
    if types.is_empty() && format.is_empty() {
        return true;
    }
    if v.is_null() {
        if !types.is_empty() && !s.nullable {
            type_error(errs, name, &types.join(","), "null");
            return false;
        }
        return true;
    }
    let (sch_type, value_format) = json_type(v);
    let contains = |t: &str| types.contains(&t);
    let float_int = match v {
        Value::Number(n) => {
            matches!(go_number(n), GoNumber::Float(f) if f.fract() == 0.0 && f.is_finite())
                && contains("integer")
        }
        _ => false,
    };
    let int_float = sch_type == "integer" && contains("number");
    let is_string_or_array = matches!(v, Value::String(_) | Value::Array(_));
    if !(is_string_or_array
        || format.is_empty()
        || contains(sch_type)
        || value_format == format
        || float_int
        || int_float)
    {
        type_error(errs, name, format, value_format);
        return false;
    }
    if !(contains("number") || contains("integer") || format.is_empty()) && is_string_or_array {
        return true;
    }
    if !(contains(sch_type) || float_int || int_float) {
        type_error(errs, name, &types.join(","), sch_type);
        return false;
    }
    true
}

fn child_name(name: &str, k: &str) -> String {
    if name.is_empty() {
        k.to_string()
    } else {
        format!("{name}.{k}")
    }
}

/// SchemaValidator.Validate for one node (`name` is go-openapi's path, e.g. `spec.replicas`).
fn validate_node(v: &Value, s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    if v.is_null() {
        check_type(v, s, name, errs);
        check_enum(v, s, name, errs);
        return;
    }
    check_type(v, s, name, errs);
    schema_props(v, s, name, errs);
    match v {
        Value::String(text) => {
            check_string(text, s, name, errs);
            check_format(text, s, name, errs);
        }
        Value::Number(n) => check_number(n, s, name, errs),
        Value::Array(items) => check_array(items, s, name, errs),
        _ => {}
    }
    check_enum(v, s, name, errs);
    if let Value::Object(m) = v {
        check_object(m, s, name, errs);
    }
}

fn composite(errs: &mut Vec<Cause>, message: String) {
    errs.push(invalid(NIL_PATH, Shown::str(""), &message));
}

/// allOf / anyOf / oneOf / not.
fn schema_props(v: &Value, s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    let quoted = super::field::go_quote(name);
    if !s.any_of.is_empty() {
        let mut best: Option<Vec<Cause>> = None;
        let mut ok = false;
        for alt in &s.any_of {
            let mut sub = Vec::new();
            validate_node(v, alt, name, &mut sub);
            if sub.is_empty() {
                ok = true;
                break;
            }
            if best.as_ref().is_none_or(|b| sub.len() < b.len()) {
                best = Some(sub);
            }
        }
        if !ok {
            composite(
                errs,
                format!("{quoted} must validate at least one schema (anyOf)"),
            );
            errs.extend(best.unwrap_or_default());
        }
    }
    if !s.one_of.is_empty() {
        let mut best: Option<Vec<Cause>> = None;
        let mut valid = 0;
        for alt in &s.one_of {
            let mut sub = Vec::new();
            validate_node(v, alt, name, &mut sub);
            if sub.is_empty() {
                valid += 1;
            } else if valid == 0 && best.as_ref().is_none_or(|b| sub.len() < b.len()) {
                best = Some(sub);
            }
        }
        if valid != 1 {
            let more = if valid == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {valid} valid alternatives")
            };
            composite(
                errs,
                format!("{quoted} must validate one and only one schema (oneOf). {more}"),
            );
            if valid == 0 {
                errs.extend(best.unwrap_or_default());
            }
        }
    }
    if !s.all_of.is_empty() {
        let mut valid = 0;
        for alt in &s.all_of {
            let mut sub = Vec::new();
            validate_node(v, alt, name, &mut sub);
            if sub.is_empty() {
                valid += 1;
            }
            errs.extend(sub);
        }
        if valid != s.all_of.len() {
            let more = if valid == 0 { ". None validated" } else { "" };
            composite(
                errs,
                format!("{quoted} must validate all the schemas (allOf){more}"),
            );
        }
    }
    if let Some(not) = &s.not {
        let mut sub = Vec::new();
        validate_node(v, not, name, &mut sub);
        if sub.is_empty() {
            composite(errs, format!("{quoted} must not validate the schema (not)"));
        }
    }
}

fn check_string(text: &str, s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    let len = text.chars().count() as i64;
    let shown = Shown::str(text);
    if let Some(max) = s.max_length
        && len > max
    {
        errs.push(too_long(&err_path(name), max));
        return;
    }
    if let Some(min) = s.min_length
        && len < min
    {
        errs.push(invalid(
            &err_path(name),
            shown,
            &format!("{name} in {IN} should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(p) = &s.pattern {
        match &p.regex {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => {
                errs.push(invalid(
                    &err_path(name),
                    shown,
                    &format!("{name} in {IN} should match '{}'", p.source),
                ));
            }
            Err(e) => {
                errs.push(invalid(
                    &err_path(name),
                    shown,
                    &format!(
                        "{name} in {IN} should match '{}, but pattern is invalid: {e}'",
                        p.source
                    ),
                ));
            }
        }
    }
}

/// formatValidator: runs independently of the string checks.
fn check_format(text: &str, s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    if let Some(format) = s.checked_format()
        && !formats::valid(format, text)
    {
        errs.push(type_invalid(
            &err_path(name),
            Shown::str(text),
            &format!(
                "{name} in {IN} must be of type {format}: {}",
                super::field::go_quote(text)
            ),
        ));
    }
}

fn check_number(n: &serde_json::Number, s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    let number = go_number(n);
    let as_f64 = match number {
        GoNumber::Int(i) => i as f64,
        GoNumber::Float(f) => f,
    };
    let shown = Shown::Json(Value::Number(n.clone()));
    if let Some(factor) = s.multiple_of {
        let not_multiple = match number {
            GoNumber::Int(i) if factor.fract() == 0.0 && factor >= 1.0 => i % (factor as i64) != 0,
            _ => {
                let mult = if factor < 1.0 {
                    1.0 / factor * as_f64
                } else {
                    as_f64 / factor
                };
                factor > 0.0 && mult.fract() != 0.0
            }
        };
        if factor <= 0.0 {
            errs.push(invalid(
                &err_path(name),
                Shown::Json(serde_json::json!(factor)),
                &format!(
                    "factor MultipleOf declared for {name} must be positive: {}",
                    go_float(factor)
                ),
            ));
        } else if not_multiple {
            errs.push(invalid(
                &err_path(name),
                shown.clone(),
                &format!(
                    "{name} in {IN} should be a multiple of {}",
                    go_float(factor)
                ),
            ));
        }
    }
    if let Some((min, exclusive)) = s.minimum {
        let below = if exclusive {
            as_f64 <= min
        } else {
            as_f64 < min
        };
        if below {
            let rel = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            errs.push(invalid(
                &err_path(name),
                shown.clone(),
                &format!("{name} in {IN} should be {rel} {}", go_float(min)),
            ));
        }
    }
    if let Some((max, exclusive)) = s.maximum {
        let above = if exclusive {
            as_f64 >= max
        } else {
            as_f64 > max
        };
        if above {
            let rel = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            errs.push(invalid(
                &err_path(name),
                shown,
                &format!("{name} in {IN} should be {rel} {}", go_float(max)),
            ));
        }
    }
}

fn check_array(items: &[Value], s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    if let Some(item_schema) = s.items.as_deref() {
        for (i, item) in items.iter().enumerate() {
            validate_node(item, item_schema, &format!("{name}[{i}]"), errs);
        }
    }
    let size = items.len() as i64;
    if let Some(min) = s.min_items
        && size < min
    {
        errs.push(invalid(
            &err_path(name),
            Shown::Json(serde_json::json!(size)),
            &format!("{name} in {IN} should have at least {min} items"),
        ));
    }
    if let Some(max) = s.max_items
        && size > max
    {
        errs.push(too_many(&err_path(name), size, max));
    }
    if s.unique_items {
        let mut seen: Vec<&Value> = Vec::new();
        for item in items {
            if seen.iter().any(|x| json_equal(x, item)) {
                errs.push(invalid(
                    &err_path(name),
                    Shown::str(""),
                    &format!("{name} in {IN} shouldn't contain duplicates"),
                ));
                break;
            }
            seen.push(item);
        }
    }
}

/// reflect.DeepEqual after Go's numeric conversion: numbers compare by value.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (go_number(x), go_number(y)) {
            (GoNumber::Int(i), GoNumber::Int(j)) => i == j,
            (GoNumber::Int(i), GoNumber::Float(f)) | (GoNumber::Float(f), GoNumber::Int(i)) => {
                (i as f64) == f
            }
            (GoNumber::Float(f), GoNumber::Float(g)) => f == g,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

fn check_enum(v: &Value, s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    let Some(values) = &s.enum_values else {
        return;
    };
    if values.is_empty() || values.iter().any(|e| json_equal(e, v)) {
        return;
    }
    let supported: Vec<String> = values
        .iter()
        .map(|e| match e {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    errs.push(not_supported(
        &err_path(name),
        Shown::Json(v.clone()),
        &supported,
    ));
}

fn check_object(m: &serde_json::Map<String, Value>, s: &Schema, name: &str, errs: &mut Vec<Cause>) {
    let n = m.len() as i64;
    if let Some(min) = s.min_properties
        && n < min
    {
        errs.push(invalid(
            &err_path(name),
            Shown::Json(serde_json::json!(n)),
            &format!("{name} in {IN} should have at least {min} properties"),
        ));
    }
    if let Some(max) = s.max_properties
        && n > max
    {
        errs.push(too_many(&err_path(name), n, max));
    }
    match &s.additional {
        Additional::Bool(false) => {
            for k in m.keys() {
                if !s.properties.contains_key(k) {
                    errs.push(invalid(
                        &err_path(name),
                        Shown::str(k),
                        &format!("{name}.{k} in {IN} is a forbidden property"),
                    ));
                }
            }
        }
        Additional::Schema(a) => {
            for (k, v) in m {
                if !s.properties.contains_key(k) {
                    validate_node(v, a, &format!("{name}.{k}"), errs);
                }
            }
        }
        _ => {}
    }
    for (k, prop) in &s.properties {
        if let Some(v) = m.get(k) {
            validate_node(v, prop, &child_name(name, k), errs);
        }
    }
    for k in &s.required {
        if !m.contains_key(k) {
            errs.push(required(&err_path(&format!("{name}.{k}")), ""));
        }
    }
}

/// listtype.ValidateListSetsAndMaps: duplicates in `set` and `map` lists.
fn list_types(v: &Value, s: &Schema, path: &str, errs: &mut Vec<Cause>) {
    match v {
        Value::Object(m) => {
            for (k, item) in m {
                if let Some(prop) = s.properties.get(k) {
                    list_types(item, prop, &child(path, k), errs);
                } else if let Additional::Schema(a) = &s.additional {
                    list_types(item, a, &format!("{path}[{k}]"), errs);
                }
            }
        }
        Value::Array(items) => {
            match s.list_type.as_deref() {
                Some("set") => {
                    let mut seen: Vec<&Value> = Vec::new();
                    for (i, item) in items.iter().enumerate() {
                        if seen.iter().any(|x| json_equal(x, item)) {
                            errs.push(duplicate(
                                &format!("{path}[{i}]"),
                                Shown::Json(item.clone()),
                            ));
                        } else {
                            seen.push(item);
                        }
                    }
                }
                Some("map") => {
                    let mut seen: BTreeSet<String> = BTreeSet::new();
                    for (i, item) in items.iter().enumerate() {
                        let mut key = serde_json::Map::new();
                        for k in &s.list_map_keys {
                            let value = item
                                .get(k)
                                .cloned()
                                .or_else(|| {
                                    s.items
                                        .as_deref()
                                        .and_then(|is| is.properties.get(k))
                                        .and_then(|p| p.default.clone())
                                })
                                .unwrap_or(Value::Null);
                            key.insert(k.clone(), value);
                        }
                        let key = Value::Object(key);
                        if !seen.insert(key.to_string()) {
                            errs.push(duplicate(&format!("{path}[{i}]"), Shown::Json(key)));
                        }
                    }
                }
                _ => {}
            }
            if let Some(item_schema) = s.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    list_types(item, item_schema, &format!("{path}[{i}]"), errs);
                }
            }
        }
        _ => {}
    }
}

/// Embedded resources need `apiVersion` and `kind` (objectmeta.Validate).
fn embedded_type_meta(v: &Value, s: &Schema, path: &str, root: bool, errs: &mut Vec<Cause>) {
    match v {
        Value::Object(m) => {
            if s.embedded && !root {
                for k in ["apiVersion", "kind"] {
                    match m.get(k) {
                        Some(Value::String(x)) if !x.is_empty() => {}
                        None => errs.push(required(&child(path, k), "must not be empty")),
                        Some(Value::String(_)) => errs.push(invalid(
                            &child(path, k),
                            Shown::str(""),
                            "must not be empty",
                        )),
                        Some(other) => errs.push(invalid(
                            &child(path, k),
                            Shown::Json(other.clone()),
                            "must be a string",
                        )),
                    }
                }
            }
            for (k, item) in m {
                if let Some(prop) = s.properties.get(k) {
                    embedded_type_meta(item, prop, &child(path, k), false, errs);
                } else if let Additional::Schema(a) = &s.additional {
                    embedded_type_meta(item, a, &format!("{path}[{k}]"), false, errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, item) in items.iter().enumerate() {
                    embedded_type_meta(item, item_schema, &format!("{path}[{i}]"), false, errs);
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
                    "required": ["size"],
                    "properties": {
                        "size": {"type": "string", "enum": ["small", "large"]},
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 5},
                        "ratio": {"type": "number", "exclusiveMaximum": true, "maximum": 1},
                        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2, "minItems": 1,
                                 "x-kubernetes-list-type": "set"},
                        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                                  "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}}}},
                        "when": {"type": "string", "format": "date-time"},
                        "count": {"type": "integer", "format": "int32"},
                        "port": {"x-kubernetes-int-or-string": true},
                        "opt": {"type": "string", "nullable": true},
                        "strict": {"type": "object", "additionalProperties": {"type": "integer"}},
                        "step": {"type": "integer", "multipleOf": 5},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "x-kubernetes-preserve-unknown-fields": true}
                    }
                }
            }
        }))
    }

    fn messages(obj: Value) -> Vec<String> {
        validate_custom_resource(&obj, &schema())
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn validation_table() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({"spec": {"size": "small", "replicas": 3}}), vec![]),
            (
                json!({"spec": {"size": "small", "replicas": "three"}}),
                vec![
                    "spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
                ],
            ),
            (
                json!({"spec": {"size": "medium"}}),
                vec![
                    "spec.size: Unsupported value: \"medium\": supported values: \"small\", \"large\"",
                ],
            ),
            (json!({"spec": {}}), vec!["spec.size: Required value"]),
            (
                json!({"spec": {"size": "small", "replicas": 0}}),
                vec![
                    "spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
                ],
            ),
            (
                json!({"spec": {"size": "small", "replicas": 6}}),
                vec![
                    "spec.replicas: Invalid value: 6: spec.replicas in body should be less than or equal to 5",
                ],
            ),
            (
                json!({"spec": {"size": "small", "ratio": 1}}),
                vec!["spec.ratio: Invalid value: 1: spec.ratio in body should be less than 1"],
            ),
            (json!({"spec": {"size": "small", "replicas": 2.0}}), vec![]),
            (
                json!({"spec": {"size": "small", "replicas": 2.5}}),
                vec![
                    "spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
                ],
            ),
            (
                json!({"spec": {"size": "small", "name": "toolong"}}),
                vec!["spec.name: Too long: may not be more than 5 bytes"],
            ),
            (
                json!({"spec": {"size": "small", "name": "a"}}),
                vec![
                    "spec.name: Invalid value: \"a\": spec.name in body should be at least 2 chars long",
                ],
            ),
            (
                json!({"spec": {"size": "small", "name": "AB"}}),
                vec!["spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"],
            ),
            (
                json!({"spec": {"size": "small", "tags": ["a", "b", "c"]}}),
                vec!["spec.tags: Too many: 3: must have at most 2 items"],
            ),
            (
                json!({"spec": {"size": "small", "tags": []}}),
                vec!["spec.tags: Invalid value: 0: spec.tags in body should have at least 1 items"],
            ),
            (
                json!({"spec": {"size": "small", "tags": ["a", "a"]}}),
                vec!["spec.tags[1]: Duplicate value: \"a\""],
            ),
            (
                json!({"spec": {"size": "small", "ports": [{"port": 80}, {"port": 80}]}}),
                vec!["spec.ports[1]: Duplicate value: map[string]interface {}{\"port\":80}"],
            ),
            (
                json!({"spec": {"size": "small", "ports": [{}]}}),
                vec!["spec.ports[0].port: Required value"],
            ),
            (
                json!({"spec": {"size": "small", "when": "tomorrow"}}),
                vec![
                    "spec.when: Invalid value: \"tomorrow\": spec.when in body must be of type date-time: \"tomorrow\"",
                ],
            ),
            (
                json!({"spec": {"size": "small", "count": 99999999999i64}}),
                vec![],
            ),
            (json!({"spec": {"size": "small", "port": 80}}), vec![]),
            (json!({"spec": {"size": "small", "port": "http"}}), vec![]),
            (
                json!({"spec": {"size": "small", "port": true}}),
                vec![
                    "spec.port: Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"",
                ],
            ),
            (json!({"spec": {"size": "small", "opt": null}}), vec![]),
            (
                json!({"spec": {"size": "small", "strict": {"a": "x"}}}),
                vec![
                    "spec.strict.a: Invalid value: \"string\": spec.strict.a in body must be of type integer: \"string\"",
                ],
            ),
            (
                json!({"spec": {"size": "small", "step": 7}}),
                vec!["spec.step: Invalid value: 7: spec.step in body should be a multiple of 5"],
            ),
            (
                json!({"spec": {"size": "small", "template": {"spec": {}}}}),
                vec![
                    "spec.template.apiVersion: Required value: must not be empty",
                    "spec.template.kind: Required value: must not be empty",
                ],
            ),
            (
                json!({"spec": "nope"}),
                vec![
                    "spec: Invalid value: \"string\": spec in body must be of type object: \"string\"",
                ],
            ),
        ];
        for (obj, want) in cases {
            assert_eq!(messages(obj.clone()), want, "{obj}");
        }
    }

    #[test]
    fn composite_keywords() {
        let s = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "v": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                "w": {"type": "string", "not": {"enum": ["x"]}}
            }
        }));
        assert!(validate_custom_resource(&json!({"v": 1, "w": "y"}), &s).is_empty());
        let errs = validate_custom_resource(&json!({"v": true, "w": "x"}), &s);
        let msgs: Vec<String> = errs
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert!(
            msgs.contains(
                &"<nil>: Invalid value: \"\": \"v\" must validate at least one schema (anyOf)"
                    .to_string()
            ),
            "{msgs:?}"
        );
        assert!(
            msgs.contains(
                &"<nil>: Invalid value: \"\": \"w\" must not validate the schema (not)".to_string()
            ),
            "{msgs:?}"
        );
    }
}
