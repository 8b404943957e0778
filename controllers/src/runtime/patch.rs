//! JSON merge patches (RFC 7386) computed from two documents, for writing a whole field
//! (a template's aggregated status) without a read-modify-write cycle.

use serde_json::{Map, Value};

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
