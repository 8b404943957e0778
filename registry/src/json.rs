//! Small accessors over `serde_json::Value` in Kubernetes JSON. A field of the wrong JSON type
//! reads as absent: decoding (not this module) is where kube rejects such bodies.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// The value at `key` when it is present and not null.
pub(crate) fn field<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| !x.is_null())
}

/// The value at a path of keys.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| field(cur, k))
}

/// A string field; absent or non-string reads as `""`.
pub(crate) fn string<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A string field, `None` when absent or null.
pub(crate) fn opt_str<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// An integer field.
pub(crate) fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// A boolean field.
pub(crate) fn boolean(v: &Value, key: &str) -> Option<bool> {
    v.get(key).and_then(Value::as_bool)
}

/// A list field; absent reads as empty.
pub(crate) fn list<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// An object field.
pub(crate) fn object<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

/// A `map[string]string` field; `None` when absent (Go's nil map).
pub(crate) fn string_map(v: &Value, key: &str) -> Option<BTreeMap<String, String>> {
    object(v, key).map(|m| {
        m.iter()
            .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect()
    })
}

/// A `[]string` field; `None` when absent.
pub(crate) fn string_list(v: &Value, key: &str) -> Option<Vec<String>> {
    v.get(key).and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|x| x.as_str().map(str::to_string))
            .collect()
    })
}

/// True when the field is absent, null, or an empty string, list or object.
pub(crate) fn is_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        _ => false,
    }
}

/// The object at `key`, created (as `{}`) when absent or null. `None` if `v` is not an object
/// or the field holds a non-object.
pub(crate) fn obj_mut<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let m = v.as_object_mut()?;
    let slot = m.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    slot.is_object().then_some(slot)
}

/// The list at `key`, created (as `[]`) when absent or null.
pub(crate) fn obj_mut_list<'a>(v: &'a mut Value, key: &str) -> Option<&'a mut Vec<Value>> {
    let m = v.as_object_mut()?;
    let slot = m.entry(key.to_string()).or_insert(Value::Null);
    if slot.is_null() {
        *slot = Value::Array(Vec::new());
    }
    slot.as_array_mut()
}

/// Sets `key` when it is absent or null (a Go nil pointer).
pub(crate) fn default_nil(v: &mut Value, key: &str, value: Value) {
    if let Some(m) = v.as_object_mut() {
        let slot = m.entry(key.to_string()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = value;
        }
    }
}

/// Sets a string field when it is absent, null or `""` (a Go zero string).
pub(crate) fn default_str(v: &mut Value, key: &str, value: &str) {
    if let Some(m) = v.as_object_mut() {
        let slot = m.entry(key.to_string()).or_insert(Value::Null);
        if slot.is_null() || slot.as_str() == Some("") {
            *slot = Value::String(value.to_string());
        }
    }
}

/// Sets an integer field when it is absent, null or 0 (a Go zero int).
pub(crate) fn default_int(v: &mut Value, key: &str, value: i64) {
    if let Some(m) = v.as_object_mut() {
        let slot = m.entry(key.to_string()).or_insert(Value::Null);
        if slot.is_null() || slot.as_i64() == Some(0) {
            *slot = Value::from(value);
        }
    }
}

/// Calls `f` on every element of the list at `key`.
pub(crate) fn each_mut(v: &mut Value, key: &str, mut f: impl FnMut(&mut Value)) {
    if let Some(items) = v.get_mut(key).and_then(Value::as_array_mut) {
        items.iter_mut().for_each(&mut f);
    }
}

/// Calls `f` on the object at `key` when it is present (not null).
pub(crate) fn with_mut(v: &mut Value, key: &str, f: impl FnOnce(&mut Value)) {
    if let Some(x) = v.get_mut(key).filter(|x| x.is_object()) {
        f(x);
    }
}

/// Semantic equality as apimachinery's `equality.Semantic.DeepEqual` sees it on JSON: null,
/// absent and empty lists/maps are all the same (Go's nil vs empty), numbers compare by value.
pub(crate) fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    normalize(a) == normalize(b)
}

fn normalize(v: Option<&Value>) -> Option<Value> {
    match v? {
        Value::Null => None,
        Value::Array(a) => {
            let items: Vec<Value> = a
                .iter()
                .map(|x| normalize(Some(x)).unwrap_or(Value::Null))
                .collect();
            (!items.is_empty()).then_some(Value::Array(items))
        }
        Value::Object(o) => {
            let m: Map<String, Value> = o
                .iter()
                .filter_map(|(k, x)| normalize(Some(x)).map(|x| (k.clone(), x)))
                .collect();
            (!m.is_empty()).then_some(Value::Object(m))
        }
        Value::Number(n) => Some(match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n.clone()),
        }),
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_fill_only_zero_values() {
        let mut v = json!({"a": "", "b": "x", "c": 0, "d": null});
        default_str(&mut v, "a", "A");
        default_str(&mut v, "b", "B");
        default_int(&mut v, "c", 5);
        default_nil(&mut v, "d", json!(1));
        default_nil(&mut v, "e", json!(false));
        assert_eq!(v, json!({"a": "A", "b": "x", "c": 5, "d": 1, "e": false}));
    }

    #[test]
    fn semantic_equality_ignores_nil_vs_empty() {
        assert!(semantic_eq(Some(&json!({"a": []})), None));
        assert!(semantic_eq(
            Some(&json!({"a": {}, "b": 1})),
            Some(&json!({"b": 1.0}))
        ));
        assert!(!semantic_eq(Some(&json!({"a": 1})), Some(&json!({"a": 2}))));
    }
}
