//! RFC 7386 JSON merge patch.

use serde_json::{Map, Value};

use super::PatchError;

/// Applies a JSON merge patch (`application/merge-patch+json`) to a stored object.
///
/// A `null` or scalar patch is [`PatchError::BadRequest`] (`Invalid JSON Patch`, as
/// `evanphx/json-patch` reports it); an array patch replaces the object and is then rejected as
/// [`PatchError::Invalid`], because an object is no longer an object.
pub fn json_merge_patch(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    match patch {
        Value::Object(_) => Ok(merge_patch(original, patch)),
        Value::Array(_) => Err(PatchError::Invalid(
            "the merge patch turned the object into an array".to_string(),
        )),
        _ => Err(PatchError::BadRequest("Invalid JSON Patch".to_string())),
    }
}

/// RFC 7386 `MergePatch(target, patch)`: objects merge key by key, `null` deletes a key, any
/// other patch value replaces the target.
///
/// Like `evanphx/json-patch` (which kube-apiserver uses), nulls are also dropped from objects
/// nested in arrays of a value that is added, where the RFC would keep them.
pub fn merge_patch(target: &Value, patch: &Value) -> Value {
    let Value::Object(patch_map) = patch else {
        return patch.clone();
    };
    let mut out = match target {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    merge_into(&mut out, patch_map);
    Value::Object(out)
}

/// `mergeDocs` of `evanphx/json-patch`.
fn merge_into(doc: &mut Map<String, Value>, patch: &Map<String, Value>) {
    for (key, value) in patch {
        if value.is_null() {
            doc.remove(key);
            continue;
        }
        match doc.get_mut(key) {
            Some(Value::Object(current)) => match value {
                Value::Object(nested) => merge_into(current, nested),
                other => {
                    doc.insert(key.clone(), other.clone());
                }
            },
            _ => {
                let mut added = value.clone();
                prune_nulls(&mut added);
                doc.insert(key.clone(), added);
            }
        }
    }
}

/// Removes null members from objects, recursively; array elements stay (`pruneNulls`).
fn prune_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(prune_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The examples of RFC 7386 appendix A.
    #[test]
    fn rfc7386_appendix_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, want) in cases {
            assert_eq!(merge_patch(&target, &patch), want, "{target} + {patch}");
        }
    }

    #[test]
    fn server_rejects_non_object_patches() {
        let object = json!({"metadata": {"name": "c1"}});
        let cases = [
            (json!(null), 400),
            (json!("x"), 400),
            (json!(3), 400),
            (json!([{"a": 1}]), 422),
        ];
        for (patch, status) in cases {
            let err = json_merge_patch(&object, &patch).unwrap_err();
            assert_eq!(err.http_status(), status, "{patch}");
        }
    }

    #[test]
    fn kubectl_label_and_unlabel() {
        let object =
            json!({"metadata": {"name": "c1", "labels": {"app": "web"}}, "data": {"a": "1"}});
        let cases = [
            (
                json!({"metadata": {"labels": {"tier": "web"}}}),
                json!({"metadata": {"name": "c1", "labels": {"app": "web", "tier": "web"}}, "data": {"a": "1"}}),
            ),
            (
                json!({"metadata": {"labels": {"app": null}}}),
                json!({"metadata": {"name": "c1", "labels": {}}, "data": {"a": "1"}}),
            ),
            (
                json!({"spec": {"replicas": 3, "paused": null}}),
                json!({"metadata": {"name": "c1", "labels": {"app": "web"}}, "data": {"a": "1"}, "spec": {"replicas": 3}}),
            ),
            (
                json!({"data": {"list": [{"x": null, "y": 1}]}}),
                json!({"metadata": {"name": "c1", "labels": {"app": "web"}}, "data": {"a": "1", "list": [{"y": 1}]}}),
            ),
        ];
        for (patch, want) in cases {
            assert_eq!(json_merge_patch(&object, &patch).unwrap(), want, "{patch}");
        }
    }
}
