//! JSON merge patches (RFC 7386) computed from two documents, for writing a whole field
//! (a template's aggregated status) without a read-modify-write cycle, and status writes that
//! do not decode the object the server answers with.

use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Map, Value};

/// Merge-patches `name`'s status subresource through `api`. The object the server returns is not decoded:
/// controllers read objects from their informers, never from write responses, and decoding a
/// whole Work or binding after each status write was a measurable share of the control
/// plane's CPU. Errors are the ones `Api::patch_status` returns (`is_not_found` applies).
pub async fn merge_patch_status<K: kube::Resource>(
    api: Api<K>,
    name: &str,
    patch: &Value,
) -> kube::Result<()> {
    let req = kube::core::Request::new(api.resource_url())
        .patch_subresource(
            "status",
            name,
            &PatchParams::default(),
            &Patch::Merge(patch),
        )
        .map_err(kube::Error::BuildRequest)?;
    api.into_client().request_text(req).await.map(drop)
}

/// The merge patch that turns `old` into `new`: changed members set, removed members null,
/// arrays and scalars replaced whole.
pub fn merge_diff(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out = Map::new();
            for (k, nv) in n {
                match o.get(k) {
                    Some(ov) if ov == nv => {}
                    Some(ov) if ov.is_object() && nv.is_object() => {
                        out.insert(k.clone(), merge_diff(ov, nv));
                    }
                    _ => {
                        out.insert(k.clone(), nv.clone());
                    }
                }
            }
            for k in o.keys() {
                if !n.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(out)
        }
        (_, n) => n.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn table() {
        let cases = [
            (json!({"a": 1}), json!({"a": 2}), json!({"a": 2})),
            (json!({"a": 1, "b": 2}), json!({"a": 1}), json!({"b": null})),
            (
                json!({"a": {"x": 1, "y": 2}}),
                json!({"a": {"x": 1}}),
                json!({"a": {"y": null}}),
            ),
            (json!({"l": [1, 2]}), json!({"l": [1]}), json!({"l": [1]})),
            (json!(null), json!({"a": 1}), json!({"a": 1})),
            (json!({"a": 1}), json!({"a": 1}), json!({})),
        ];
        for (i, (old, new, want)) in cases.iter().enumerate() {
            assert_eq!(&merge_diff(old, new), want, "case {i}");
        }
    }
}
