//! Accessors of Kubernetes objects held as JSON values: metav1.ObjectMeta's fields, metav1.Time,
//! and simple field paths (the parts of k8s.io/apimachinery/pkg/api/meta this project uses).

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// A stored object as a cache holds it, read through accessors as Go code reads a
/// `metav1.Object`: its key, metadata and resourceVersion without a parse, the object parsed
/// or its JSON on demand. A cache implements it for its own entries, so readers in other
/// crates (kube-controller-manager's informers) take the cached `Arc`s as they are, with no
/// wrapper to allocate per object.
pub trait Object: Send + Sync {
    /// Storage key.
    fn key(&self) -> &str;
    /// `metadata.namespace` (empty when cluster-scoped).
    fn namespace(&self) -> &str;
    /// `metadata.name`.
    fn name(&self) -> &str;
    /// resourceVersion of this state.
    fn rv(&self) -> i64;
    /// The object parsed.
    fn value(&self) -> Value;
    /// The object's JSON (as stored, maybe without its resourceVersion), for readers of its
    /// metadata, without a copy where possible.
    fn raw_json(&self) -> Cow<'_, [u8]>;
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`) (the core group), as
/// `schema.ParseGroupVersion` does for a well-formed apiVersion.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// Finalizer kube's garbage collector uses for foreground deletion (metav1.FinalizerDeleteDependents).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// Finalizer kube's garbage collector uses for orphaning dependents (metav1.FinalizerOrphanDependents).
pub const ORPHAN_FINALIZER: &str = "orphan";

/// `obj.metadata`, if it is an object.
pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// `obj.metadata`, created when missing or not an object.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let Value::Object(root) = obj else {
        unreachable!("made an object above")
    };
    let m = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    match m {
        Value::Object(map) => map,
        _ => unreachable!("made an object above"),
    }
}

/// A string field of metadata, or "".
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    meta(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `metadata.name`.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name")
}

/// `metadata.namespace`.
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace")
}

/// `metadata.uid`.
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid")
}

/// `metadata.labels` as an ordered map (non-string values are ignored).
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    string_map(meta(obj).and_then(|m| m.get("labels")))
}

/// `metadata.annotations` as an ordered map.
pub fn annotations(obj: &Value) -> BTreeMap<String, String> {
    string_map(meta(obj).and_then(|m| m.get("annotations")))
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `metadata.finalizers` (removing the field when empty).
pub fn set_finalizers(obj: &mut Value, finalizers: &[String]) {
    let m = meta_mut(obj);
    if finalizers.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert(
            "finalizers".into(),
            Value::Array(
                finalizers
                    .iter()
                    .map(|f| Value::String(f.clone()))
                    .collect(),
            ),
        );
    }
}

/// True when `metadata.deletionTimestamp` is set.
pub fn is_terminating(obj: &Value) -> bool {
    meta(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// The current time as kube serializes metav1.Time (RFC 3339, seconds, UTC).
pub fn now_rfc3339() -> String {
    format_time(jiff::Timestamp::now())
}

/// Formats a timestamp as metav1.Time.
pub fn format_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses metav1.Time.
pub fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    s.parse::<jiff::Timestamp>().ok()
}

/// Reads a value at a simple JSON path like `.spec.replicas` or `spec.replicas`.
pub fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    for part in path.trim_start_matches('.').split('.') {
        if part.is_empty() {
            continue;
        }
        cur = cur.get(part)?;
    }
    Some(cur)
}

/// Sets a value at a simple JSON path, creating objects on the way.
pub fn set_path(obj: &mut Value, path: &str, value: Value) {
    let parts: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|p| !p.is_empty())
        .collect();
    let mut cur = obj;
    for (i, part) in parts.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(map) = cur else {
            return;
        };
        if i == parts.len() - 1 {
            map.insert(part.to_string(), value);
            return;
        }
        cur = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths() {
        let mut o = json!({});
        set_path(&mut o, ".spec.replicas", json!(3));
        assert_eq!(get_path(&o, ".spec.replicas"), Some(&json!(3)));
        assert_eq!(get_path(&o, "spec.replicas"), Some(&json!(3)));
        assert_eq!(get_path(&o, ".status.replicas"), None);
    }

    #[test]
    fn time_format() {
        let t: jiff::Timestamp = "2024-01-02T03:04:05.678Z".parse().unwrap();
        assert_eq!(format_time(t), "2024-01-02T03:04:05Z");
    }
}
