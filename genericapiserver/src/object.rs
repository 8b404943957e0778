//! Helpers over Kubernetes objects held as JSON values (metav1.ObjectMeta accessors, from
//! apimachinery), and the conversion between stored bytes and served JSON.

use bytes::Bytes;
use serde_json::{Map, Value};

pub use apimachinery::meta::*;

use crate::error::ApiError;

/// Drops the metadata Go's `omitempty` drops when kube decodes an object's metadata into
/// metav1.ObjectMeta and encodes it again: empty or null labels, annotations, finalizers and
/// ownerReferences, empty strings and null pointers. So `annotations: {}`, which kubectl's
/// three-way patch adds to an object without annotations, is never stored.
pub fn drop_empty_meta(obj: &mut Value) {
    let Some(Value::Object(m)) = obj.get_mut("metadata") else {
        return;
    };
    m.retain(|k, v| match k.as_str() {
        "labels" | "annotations" => !(v.is_null() || v.as_object().is_some_and(Map::is_empty)),
        "finalizers" | "ownerReferences" => {
            !(v.is_null() || v.as_array().is_some_and(Vec::is_empty))
        }
        "generateName" | "uid" | "selfLink" | "resourceVersion" => {
            !(v.is_null() || v.as_str() == Some(""))
        }
        "deletionTimestamp" | "deletionGracePeriodSeconds" | "generation" => {
            !(v.is_null() || v.as_i64() == Some(0) && k == "generation")
        }
        _ => true,
    });
}

/// `metadata.resourceVersion` parsed; `Ok(None)` when absent or empty.
pub fn resource_version(obj: &Value) -> Result<Option<i64>, ApiError> {
    match meta(obj).and_then(|m| m.get("resourceVersion")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => parse_resource_version(s).map(Some),
        Some(other) => Err(ApiError::bad_request(format!(
            "metadata.resourceVersion must be a string, got {other}"
        ))),
    }
}

/// Parses a resourceVersion string as kube does (a non-negative integer).
pub fn parse_resource_version(s: &str) -> Result<i64, ApiError> {
    s.parse::<i64>()
        .ok()
        .filter(|v| *v >= 0)
        .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: \"{s}\"")))
}

/// Sets `metadata.resourceVersion`.
pub fn set_resource_version(obj: &mut Value, rv: i64) {
    meta_mut(obj).insert("resourceVersion".into(), Value::String(rv.to_string()));
}

/// Stored JSON text (no resourceVersion) → served JSON value with resourceVersion = `rv`
/// (`storage_codec` decodes what is stored into such text first).
pub fn from_stored(value: &[u8], rv: i64) -> Result<Value, ApiError> {
    let mut obj = parse_stored(value)?;
    set_resource_version(&mut obj, rv);
    Ok(obj)
}

/// Parses stored JSON (a whole object or one of its members).
pub fn parse_stored(value: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(value)
        .map_err(|e| ApiError::internal(format!("stored object is not valid JSON: {e}")))
}

/// Whether metadata carries what is cleared before storing (resourceVersion, selfLink).
fn has_server_fields(meta: &Map<String, Value>) -> bool {
    meta.contains_key("resourceVersion") || meta.contains_key("selfLink")
}

/// `metadata` as stored (kube clears resourceVersion and selfLink before writing,
/// APIObjectVersioner.PrepareObjectForStorage); copied only when there is something to clear.
pub fn stored_metadata(meta: &Value) -> std::borrow::Cow<'_, Value> {
    match meta {
        Value::Object(m) if has_server_fields(m) => {
            let mut m = m.clone();
            m.remove("resourceVersion");
            m.remove("selfLink");
            std::borrow::Cow::Owned(Value::Object(m))
        }
        _ => std::borrow::Cow::Borrowed(meta),
    }
}

/// Serializes an object.
pub fn to_json_bytes(obj: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(obj).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_metadata_is_dropped_as_omitempty_does() {
        let mut obj = serde_json::json!({"metadata": {
            "name": "x", "labels": {}, "annotations": null, "finalizers": [],
            "ownerReferences": [], "generateName": "", "uid": "", "generation": 0,
            "deletionTimestamp": null, "managedFields": [], "creationTimestamp": null,
        }, "data": {}});
        drop_empty_meta(&mut obj);
        assert_eq!(
            obj,
            serde_json::json!({"metadata": {"name": "x", "managedFields": [], "creationTimestamp": null}, "data": {}})
        );
        let mut kept = serde_json::json!({"metadata": {"labels": {"a": "b"}, "finalizers": ["f"], "labels2": {}}});
        let before = kept.clone();
        drop_empty_meta(&mut kept);
        assert_eq!(kept, before);
    }
}
