//! A compiled structural schema and the three things kube-apiserver does with a CRD schema:
//! drop nulls and fill defaults (structuraldefaulting), drop unknown fields (structuralpruning),
//! and validate (kube-openapi's validator, reported as field errors the way apiextensions does).

use std::collections::BTreeMap;

use regex::Regex;
use serde_json::Value;

use crate::field::FieldError;

/// The JSON type a node requires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JsonType {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl JsonType {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "object" => JsonType::Object,
            "array" => JsonType::Array,
            "string" => JsonType::String,
            "integer" => JsonType::Integer,
            "number" => JsonType::Number,
            "boolean" => JsonType::Boolean,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            JsonType::Object => "object",
            JsonType::Array => "array",
            JsonType::String => "string",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::Boolean => "boolean",
        }
    }
}

/// One node of a compiled structural schema.
#[derive(Debug, Default)]
pub(crate) struct Node {
    ty: Option<JsonType>,
    int_or_string: bool,
    preserve_unknown: bool,
    nullable: bool,
    properties: BTreeMap<String, Node>,
    required: Vec<String>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    enum_values: Option<Vec<Value>>,
    default: Option<Value>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    min_length: Option<usize>,
    max_length: Option<usize>,
    pattern: Option<(String, Regex)>,
    min_items: Option<usize>,
    max_items: Option<usize>,
}

/// Which checks `validate` performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Checks {
    /// Everything a CRD schema checks.
    All,
    /// Only JSON types, as a typed (non-CRD) API's decoder does.
    TypesOnly,
}

impl Node {
    /// Compiles a structural schema. Patterns that fail to compile are ignored.
    pub(crate) fn compile(schema: &Value) -> Node {
        let Some(map) = schema.as_object() else {
            return Node {
                preserve_unknown: true,
                ..Node::default()
            };
        };
        let get_usize = |k: &str| map.get(k).and_then(Value::as_u64).map(|v| v as usize);
        Node {
            ty: map
                .get("type")
                .and_then(Value::as_str)
                .and_then(JsonType::parse),
            int_or_string: map.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)),
            preserve_unknown: map.get("x-kubernetes-preserve-unknown-fields")
                == Some(&Value::Bool(true)),
            nullable: map.get("nullable") == Some(&Value::Bool(true)),
            properties: map
                .get("properties")
                .and_then(Value::as_object)
                .map(|props| {
                    props
                        .iter()
                        .map(|(k, v)| (k.clone(), Node::compile(v)))
                        .collect()
                })
                .unwrap_or_default(),
            required: map
                .get("required")
                .and_then(Value::as_array)
                .map(|r| {
                    r.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default(),
            items: map.get("items").map(|i| Box::new(Node::compile(i))),
            additional: match map.get("additionalProperties") {
                Some(Value::Object(_)) => map
                    .get("additionalProperties")
                    .map(|a| Box::new(Node::compile(a))),
                _ => None,
            },
            enum_values: map.get("enum").and_then(Value::as_array).cloned(),
            default: map.get("default").cloned(),
            minimum: map.get("minimum").and_then(Value::as_f64),
            maximum: map.get("maximum").and_then(Value::as_f64),
            min_length: get_usize("minLength"),
            max_length: get_usize("maxLength"),
            pattern: map
                .get("pattern")
                .and_then(Value::as_str)
                .and_then(|p| Regex::new(p).ok().map(|re| (p.to_owned(), re))),
            min_items: get_usize("minItems"),
            max_items: get_usize("maxItems"),
        }
    }

    /// Drops null values of fields that are not nullable and fills in defaults of absent
    /// fields, recursively, like kube-apiserver does when decoding a custom resource.
    /// `skip` names top-level keys left untouched (metadata at a resource root).
    pub(crate) fn default_and_drop_nulls(&self, value: &mut Value, skip: &[&str]) {
        match value {
            Value::Object(map) => {
                for (name, prop) in &self.properties {
                    if skip.contains(&name.as_str()) {
                        continue;
                    }
                    let is_null = map.get(name) == Some(&Value::Null);
                    if is_null && !prop.nullable {
                        map.remove(name);
                    }
                    if !map.contains_key(name)
                        && let Some(default) = &prop.default
                    {
                        map.insert(name.clone(), default.clone());
                    }
                }
                if let Some(additional) = &self.additional
                    && !additional.nullable
                {
                    map.retain(|k, v| self.properties.contains_key(k) || !v.is_null());
                }
                for (name, child) in map.iter_mut() {
                    if skip.contains(&name.as_str()) {
                        continue;
                    }
                    if let Some(prop) = self.properties.get(name) {
                        prop.default_and_drop_nulls(child, &[]);
                    } else if let Some(additional) = &self.additional {
                        additional.default_and_drop_nulls(child, &[]);
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = &self.items {
                    for v in items {
                        item.default_and_drop_nulls(v, &[]);
                    }
                }
            }
            _ => {}
        }
    }

    /// The schema of an object's member `key`: its property, else additionalProperties.
    fn member(&self, key: &str) -> Option<&Node> {
        self.properties.get(key).or(self.additional.as_deref())
    }

    /// Whether members an object at this node does not declare are pruned.
    fn prunes_unknown(&self) -> bool {
        let declared = !self.properties.is_empty() || self.additional.is_some();
        !self.preserve_unknown && (declared || self.ty == Some(JsonType::Object))
    }

    /// Removes fields the schema does not declare, recording their paths. `skip` names
    /// top-level keys left untouched.
    pub(crate) fn prune(
        &self,
        value: &mut Value,
        path: &str,
        skip: &[&str],
        pruned: &mut Vec<String>,
    ) {
        self.prune_at(value, &mut path.to_owned(), skip, pruned);
    }

    /// [`Node::prune`] with the path in a buffer extended and truncated in place: the walk
    /// allocates only for what it reports.
    fn prune_at(
        &self,
        value: &mut Value,
        path: &mut String,
        skip: &[&str],
        pruned: &mut Vec<String>,
    ) {
        match value {
            Value::Object(map) => {
                if self.prunes_unknown() {
                    let unknown: Vec<String> = map
                        .keys()
                        .filter(|k| !skip.contains(&k.as_str()) && self.member(k).is_none())
                        .cloned()
                        .collect();
                    for key in unknown {
                        map.remove(&key);
                        pruned.push(join(path, &key));
                    }
                }
                for (key, child) in map.iter_mut() {
                    if skip.contains(&key.as_str()) {
                        continue;
                    }
                    let Some(node) = self.member(key) else {
                        continue;
                    };
                    let len = push_key(path, key);
                    node.prune_at(child, path, &[], pruned);
                    path.truncate(len);
                }
            }
            Value::Array(items) => {
                if let Some(item) = &self.items {
                    for (i, v) in items.iter_mut().enumerate() {
                        let len = push_index(path, i);
                        item.prune_at(v, path, &[], pruned);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    /// The paths [`Node::prune`] would remove, found without changing or copying `value`.
    pub(crate) fn unknown(
        &self,
        value: &Value,
        path: &mut String,
        skip: &[&str],
        out: &mut Vec<String>,
    ) {
        match value {
            Value::Object(map) => {
                let prunes = self.prunes_unknown();
                for (key, child) in map {
                    if skip.contains(&key.as_str()) {
                        continue;
                    }
                    let len = push_key(path, key);
                    match self.member(key) {
                        Some(node) => node.unknown(child, path, &[], out),
                        None if prunes => out.push(path.clone()),
                        None => {}
                    }
                    path.truncate(len);
                }
            }
            Value::Array(items) => {
                if let Some(item) = &self.items {
                    for (i, v) in items.iter().enumerate() {
                        let len = push_index(path, i);
                        item.unknown(v, path, &[], out);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    /// The names of the members an object of this node must have.
    pub(crate) fn required(&self) -> impl Iterator<Item = &str> {
        self.required.iter().map(String::as_str)
    }

    /// Validates `value` against this node. `skip` names top-level keys not validated (their
    /// presence included: whoever skips them answers for them).
    pub(crate) fn validate(
        &self,
        value: &Value,
        path: &str,
        checks: Checks,
        skip: &[&str],
        errors: &mut Vec<FieldError>,
    ) {
        self.validate_at(value, &mut path.to_owned(), checks, skip, errors);
    }

    /// [`Node::validate`] with the path in a buffer (no allocation per field).
    fn validate_at(
        &self,
        value: &Value,
        path: &mut String,
        checks: Checks,
        skip: &[&str],
        errors: &mut Vec<FieldError>,
    ) {
        if !self.check_type(value, path, errors) {
            return;
        }
        if checks == Checks::All {
            self.check_constraints(value, path, errors);
        }
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    if skip.contains(&key.as_str()) {
                        continue;
                    }
                    let Some(node) = self.member(key) else {
                        continue;
                    };
                    let len = push_key(path, key);
                    node.validate_at(child, path, checks, &[], errors);
                    path.truncate(len);
                }
                if checks == Checks::All {
                    for name in &self.required {
                        if !map.contains_key(name) && !skip.contains(&name.as_str()) {
                            errors.push(FieldError::required(join(path, name), ""));
                        }
                    }
                }
            }
            Value::Array(items) => {
                if let Some(item) = &self.items {
                    for (i, v) in items.iter().enumerate() {
                        let len = push_index(path, i);
                        item.validate_at(v, path, checks, &[], errors);
                        path.truncate(len);
                    }
                }
            }
            _ => {}
        }
    }

    /// Checks the JSON type; reports and returns false on a mismatch.
    fn check_type(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) -> bool {
        let actual = json_type_name(value);
        let expected = if self.int_or_string {
            if matches!(actual, "integer" | "string") {
                return true;
            }
            "integer,string".to_owned()
        } else {
            let Some(ty) = self.ty else {
                return true;
            };
            let ok = match ty {
                JsonType::Integer => actual == "integer" || is_integral_float(value),
                JsonType::Number => matches!(actual, "integer" | "number"),
                other => other.name() == actual,
            };
            if ok {
                return true;
            }
            ty.name().to_owned()
        };
        // apiextensions reports the name of the JSON type found, not the value.
        errors.push(FieldError::type_invalid(
            path,
            actual,
            format!("{path} in body must be of type {expected}: \"{actual}\""),
        ));
        false
    }

    fn check_constraints(&self, value: &Value, path: &str, errors: &mut Vec<FieldError>) {
        if let Some(allowed) = &self.enum_values
            && !allowed.iter().any(|a| json_equal(a, value))
        {
            let names: Vec<String> = allowed
                .iter()
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            errors.push(FieldError::not_supported(path, value.clone(), &names));
        }
        match value {
            Value::String(s) => {
                let len = s.chars().count();
                if let Some(max) = self.max_length
                    && len > max
                {
                    errors.push(FieldError::too_long(path, max));
                }
                if let Some(min) = self.min_length
                    && len < min
                {
                    errors.push(FieldError::invalid(
                        path,
                        s.clone(),
                        format!("{path} in body should be at least {min} chars long"),
                    ));
                }
                if let Some((source, re)) = &self.pattern
                    && !re.is_match(s)
                {
                    errors.push(FieldError::invalid(
                        path,
                        s.clone(),
                        format!("{path} in body should match '{source}'"),
                    ));
                }
            }
            Value::Number(n) => {
                let x = n.as_f64().unwrap_or(0.0);
                if let Some(min) = self.minimum
                    && x < min
                {
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        format!(
                            "{path} in body should be greater than or equal to {}",
                            go_float(min)
                        ),
                    ));
                }
                if let Some(max) = self.maximum
                    && x > max
                {
                    errors.push(FieldError::invalid(
                        path,
                        value.clone(),
                        format!(
                            "{path} in body should be less than or equal to {}",
                            go_float(max)
                        ),
                    ));
                }
            }
            Value::Array(items) => {
                if let Some(max) = self.max_items
                    && items.len() > max
                {
                    errors.push(FieldError::too_many(
                        path,
                        Some(items.len() as i64),
                        max as i64,
                    ));
                }
                if let Some(min) = self.min_items
                    && items.len() < min
                {
                    errors.push(FieldError::invalid(
                        path,
                        items.len() as i64,
                        format!("{path} in body should have at least {min} items"),
                    ));
                }
            }
            _ => {}
        }
    }
}

/// Appends `.key` (or `key` at the root) and returns the length to truncate back to.
fn push_key(path: &mut String, key: &str) -> usize {
    let len = path.len();
    if len > 0 {
        path.push('.');
    }
    path.push_str(key);
    len
}

/// Appends `[i]` and returns the length to truncate back to.
fn push_index(path: &mut String, i: usize) -> usize {
    use std::fmt::Write;
    let len = path.len();
    let _ = write!(path, "[{i}]");
    len
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The JSON Schema type name of a value, as kube-openapi infers it.
pub(crate) fn json_type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integral_float(value: &Value) -> bool {
    value
        .as_f64()
        .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Formats a bound like Go's `%v` of a float64 (integral values without a decimal point).
fn go_float(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e21 {
        format!("{}", f as i64)
    } else {
        format!("{f}")
    }
}
