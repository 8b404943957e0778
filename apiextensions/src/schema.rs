//! A CRD version's `openAPIV3Schema` compiled once for pruning, defaulting and validation
//! (the Go side keeps a `structuralschema.Structural` plus a kube-openapi `spec.Schema`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value};

/// A compiled `pattern`: Go's RE2 syntax is accepted by the `regex` crate for everything a
/// schema is likely to use.
#[derive(Debug, Clone)]
pub struct Pattern {
    /// The pattern as written.
    pub source: String,
    /// The compiled expression, or why it does not compile.
    pub regex: Result<regex::Regex, String>,
}

/// `additionalProperties`.
#[derive(Debug, Clone, Default)]
pub enum Additional {
    /// Not given.
    #[default]
    Unset,
    /// `true` / `false`.
    Bool(bool),
    /// A schema for every other key.
    Schema(Box<Schema>),
}

/// One node of a schema.
#[derive(Debug, Clone, Default)]
pub struct Schema {
    /// `type` (empty when absent).
    pub type_: String,
    /// `format`.
    pub format: String,
    /// `nullable`.
    pub nullable: bool,
    /// `default`.
    pub default: Option<Value>,
    /// `properties`.
    pub properties: BTreeMap<String, Schema>,
    /// `additionalProperties`.
    pub additional: Additional,
    /// `items` (a single schema; CRDs forbid the array form).
    pub items: Option<Box<Schema>>,
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-embedded-resource: true`.
    pub embedded: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub int_or_string: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `required`.
    pub required: Vec<String>,
    /// `enum`.
    pub enum_values: Option<Vec<Value>>,
    /// `maximum` and `exclusiveMaximum`.
    pub maximum: Option<(f64, bool)>,
    /// `minimum` and `exclusiveMinimum`.
    pub minimum: Option<(f64, bool)>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `maxLength`.
    pub max_length: Option<i64>,
    /// `minLength`.
    pub min_length: Option<i64>,
    /// `pattern`.
    pub pattern: Option<Pattern>,
    /// `maxItems`.
    pub max_items: Option<i64>,
    /// `minItems`.
    pub min_items: Option<i64>,
    /// `uniqueItems`.
    pub unique_items: bool,
    /// `maxProperties`.
    pub max_properties: Option<i64>,
    /// `minProperties`.
    pub min_properties: Option<i64>,
    /// `allOf`.
    pub all_of: Vec<Schema>,
    /// `anyOf`.
    pub any_of: Vec<Schema>,
    /// `oneOf`.
    pub one_of: Vec<Schema>,
    /// `not`.
    pub not: Option<Box<Schema>>,
    /// Whether this node or one below it has a `default`.
    pub any_default: bool,
}

fn int_field(m: &Map<String, Value>, k: &str) -> Option<i64> {
    m.get(k).and_then(|v| {
        v.as_i64()
            .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
    })
}

fn flag(m: &Map<String, Value>, k: &str) -> bool {
    m.get(k).and_then(Value::as_bool).unwrap_or(false)
}

fn list_of(m: &Map<String, Value>, k: &str) -> Vec<Schema> {
    m.get(k)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Schema::compile).collect())
        .unwrap_or_default()
}

/// Formats kube's CRD validator checks; any other `format` is ignored (as
/// apiextensions' StripUnsupportedFormatsPostProcess does), so `int32`/`int64` never limit
/// values.
const SUPPORTED_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

/// Whether the validator checks values of this `format` (go-openapi drops `-` when
/// comparing names, so `date-time` is `datetime`).
pub fn format_supported(format: &str) -> bool {
    SUPPORTED_FORMATS.contains(&format.replace('-', "").as_str())
}

impl Schema {
    /// Compiles a schema; shapes that are not schemas read as empty schemas.
    pub fn compile(v: &Value) -> Schema {
        let Value::Object(m) = v else {
            return Schema::default();
        };
        let str_of = |k: &str| {
            m.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let bound =
            |k: &str, excl: &str| m.get(k).and_then(Value::as_f64).map(|f| (f, flag(m, excl)));
        let mut s = Schema {
            type_: str_of("type"),
            format: str_of("format"),
            nullable: flag(m, "nullable"),
            default: m.get("default").cloned(),
            properties: m
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| {
                    p.iter()
                        .map(|(k, v)| (k.clone(), Schema::compile(v)))
                        .collect()
                })
                .unwrap_or_default(),
            additional: match m.get("additionalProperties") {
                None | Some(Value::Null) => Additional::Unset,
                Some(Value::Bool(b)) => Additional::Bool(*b),
                Some(v) => Additional::Schema(Box::new(Schema::compile(v))),
            },
            items: match m.get("items") {
                Some(v @ Value::Object(_)) => Some(Box::new(Schema::compile(v))),
                _ => None,
            },
            preserve_unknown: flag(m, "x-kubernetes-preserve-unknown-fields"),
            embedded: flag(m, "x-kubernetes-embedded-resource"),
            int_or_string: flag(m, "x-kubernetes-int-or-string"),
            list_type: m
                .get("x-kubernetes-list-type")
                .and_then(Value::as_str)
                .map(str::to_string),
            list_map_keys: m
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            required: m
                .get("required")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            enum_values: m.get("enum").and_then(Value::as_array).cloned(),
            maximum: bound("maximum", "exclusiveMaximum"),
            minimum: bound("minimum", "exclusiveMinimum"),
            multiple_of: m.get("multipleOf").and_then(Value::as_f64),
            max_length: int_field(m, "maxLength"),
            min_length: int_field(m, "minLength"),
            pattern: m.get("pattern").and_then(Value::as_str).map(|p| Pattern {
                source: p.to_string(),
                regex: regex::Regex::new(p).map_err(|e| e.to_string()),
            }),
            max_items: int_field(m, "maxItems"),
            min_items: int_field(m, "minItems"),
            unique_items: flag(m, "uniqueItems"),
            max_properties: int_field(m, "maxProperties"),
            min_properties: int_field(m, "minProperties"),
            all_of: list_of(m, "allOf"),
            any_of: list_of(m, "anyOf"),
            one_of: list_of(m, "oneOf"),
            not: m.get("not").map(|n| Box::new(Schema::compile(n))),
            any_default: false,
        };
        s.any_default = s.default.is_some()
            || s.properties.values().any(|p| p.any_default)
            || s.items.as_ref().is_some_and(|i| i.any_default)
            || matches!(&s.additional, Additional::Schema(a) if a.any_default);
        s
    }

    /// The schema of the value at key `k` of an object this schema describes (a property,
    /// else `additionalProperties`).
    pub fn field(&self, k: &str) -> Option<&Schema> {
        self.properties.get(k).or(match &self.additional {
            Additional::Schema(s) => Some(s),
            _ => None,
        })
    }

    /// The `format` the validator checks, if any.
    pub fn checked_format(&self) -> Option<&str> {
        (!self.format.is_empty() && format_supported(&self.format)).then_some(self.format.as_str())
    }
}

type Cache = HashMap<(String, String), (Value, Arc<Schema>)>;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The compiled `schema` of version `version` of CRD `crd_name`. Compiled schemas are shared
/// until the CRD's schema changes.
pub fn compiled(crd_name: &str, version: &str, schema: &Value) -> Arc<Schema> {
    let key = (crd_name.to_string(), version.to_string());
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some((source, compiled)) = cache.get(&key)
        && source == schema
    {
        return compiled.clone();
    }
    let compiled = Arc::new(Schema::compile(schema));
    cache.insert(key, (schema.clone(), compiled.clone()));
    compiled
}

/// Forgets the compiled schemas of a deleted CRD.
pub fn forget(crd_name: &str) {
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    cache.retain(|(name, _), _| name != crd_name);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn compiles_keywords() {
        let s = Schema::compile(&json!({
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "exclusiveMaximum": true, "default": 1},
                        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 5},
                        "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "port": {"x-kubernetes-int-or-string": true},
                        "bad": {"type": "string", "pattern": "("}
                    }
                }
            }
        }));
        assert_eq!(s.required, vec!["spec"]);
        let spec = &s.properties["spec"];
        let replicas = &spec.properties["replicas"];
        assert_eq!(replicas.minimum, Some((1.0, false)));
        assert_eq!(replicas.maximum, Some((10.0, true)));
        assert_eq!(replicas.default, Some(json!(1)));
        assert_eq!(spec.properties["name"].max_length, Some(5));
        assert!(
            spec.properties["name"]
                .pattern
                .as_ref()
                .is_some_and(|p| p.regex.is_ok())
        );
        assert!(
            spec.properties["bad"]
                .pattern
                .as_ref()
                .is_some_and(|p| p.regex.is_err())
        );
        assert_eq!(spec.properties["tags"].list_type.as_deref(), Some("set"));
        assert!(spec.properties["labels"].field("anything").is_some());
        assert!(spec.properties["port"].int_or_string);
    }

    #[test]
    fn supported_formats() {
        for (f, ok) in [
            ("date-time", true),
            ("date", true),
            ("int32", false),
            ("int64", false),
            ("byte", true),
            ("float", false),
        ] {
            assert_eq!(format_supported(f), ok, "{f}");
        }
    }
}
