//! Structural defaulting of custom resources (apiextensions-apiserver's
//! `defaulting.Default` and `defaulting.PruneNonNullableNullsWithoutDefaults`).

use serde_json::Value;

use super::schema::Schema;

fn is_non_nullable_null(x: &Value, s: Option<&Schema>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

/// Removes `null` values whose schema is neither nullable nor defaulted.
pub fn prune_non_nullable_nulls(x: &mut Value, s: Option<&Schema>) {
    match x {
        Value::Object(m) => {
            m.retain(|k, v| {
                let sub = s.and_then(|s| s.field(k));
                !(v.is_null() && sub.is_some_and(|s| !s.nullable && s.default.is_none()))
            });
            for (k, v) in m.iter_mut() {
                prune_non_nullable_nulls(v, s.and_then(|s| s.field(k)));
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for v in items {
                prune_non_nullable_nulls(v, item_schema);
            }
        }
        _ => {}
    }
}

/// Fills absent (or non-nullable null) fields that have a `default`, recursively.
pub fn apply_defaults(x: &mut Value, s: Option<&Schema>) {
    let Some(s) = s else {
        return;
    };
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(default) = &prop.default else {
                    continue;
                };
                let missing = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, Some(prop)),
                };
                if missing {
                    m.insert(k.clone(), default.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    apply_defaults(v, Some(prop));
                } else if let super::schema::Additional::Schema(a) = &s.additional {
                    if is_non_nullable_null(v, Some(a))
                        && let Some(d) = &a.default
                    {
                        *v = d.clone();
                    }
                    apply_defaults(v, Some(a));
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items.as_deref() else {
                return;
            };
            for v in items {
                if is_non_nullable_null(v, Some(item_schema))
                    && let Some(d) = &item_schema.default
                {
                    *v = d.clone();
                }
                apply_defaults(v, Some(item_schema));
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaulting_table() {
        let s = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {},
                    "properties": {
                        "replicas": {"type": "integer", "default": 1},
                        "mode": {"type": "string", "default": "fast"},
                        "opt": {"type": "string", "nullable": true, "default": "d"},
                        "ports": {"type": "array", "items": {"type": "object",
                            "properties": {"protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}},
                        "map": {"type": "object", "additionalProperties": {"type": "object",
                            "properties": {"w": {"type": "integer", "default": 5}}}}
                    }
                }
            }
        }));
        let cases = vec![
            (
                json!({}),
                json!({"spec": {"replicas": 1, "mode": "fast", "opt": "d"}}),
            ),
            (
                json!({"spec": {"replicas": 3, "mode": null, "opt": null}}),
                json!({"spec": {"replicas": 3, "mode": "fast", "opt": null}}),
            ),
            (
                json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}}),
                json!({"spec": {"replicas": 1, "mode": "fast", "opt": "d",
                    "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}}),
            ),
            (
                json!({"spec": {"map": {"a": {}, "b": {"w": 1}}}}),
                json!({"spec": {"replicas": 1, "mode": "fast", "opt": "d", "map": {"a": {"w": 5}, "b": {"w": 1}}}}),
            ),
        ];
        for (mut input, want) in cases {
            apply_defaults(&mut input, Some(&s));
            assert_eq!(input, want);
        }
    }

    #[test]
    fn null_pruning() {
        let s = Schema::compile(&json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "nullable": true},
                "c": {"type": "string", "default": "x"},
                "free": {"x-kubernetes-preserve-unknown-fields": true, "type": "object"}
            }
        }));
        let mut v = json!({"a": null, "b": null, "c": null, "d": null, "free": {"x": null}});
        prune_non_nullable_nulls(&mut v, Some(&s));
        assert_eq!(
            v,
            json!({"b": null, "c": null, "d": null, "free": {"x": null}})
        );
    }
}
