//! Unknown-field detection and pruning for `fieldValidation`, as kube-apiserver's decoders do
//! it: built-in kinds are decoded into Go structs (sigs.k8s.io/json reports unknown fields
//! by path, e.g. `spec.template.spec.containers[0].foo`, and drops them), custom resources
//! are pruned by their CRD's structural schema, and the installed kinds are checked by their
//! strategy ([`crate::kinds`]).
//!
//! The shapes of the built-in kinds are apimachinery's (`openapi::unknown_fields`).

use serde_json::Value;

use crate::resources::{ResourceDef, Source};

/// Removes fields the kind's schema does not know and returns their paths, in the order kube
/// reports them.
pub fn prune_unknown(def: &ResourceDef, obj: &mut Value) -> Vec<String> {
    match &def.source {
        Source::Custom(_) => apiextensions::custom_resource::prune_custom_resource(def, obj),
        _ => crate::kinds::for_resource(def)
            .map(|k| k.prune_unknown(def, obj))
            .unwrap_or_default(),
    }
}

/// What kube answers when a non-apply patch leaves unknown fields and `fieldValidation` is
/// `Strict` (handlers/patch.go): 422 with the patched object (JSON and merge patches) or the
/// patch map (strategic merge patches, Go's `%+v`) as the invalid value of field `patch`.
pub fn strict_patch_error(
    strategic: bool,
    patch: &Value,
    patched: &Value,
    unknown: &[String],
) -> crate::error::ApiError {
    let shown = if strategic {
        go_plus_v(patch)
    } else {
        serde_json::to_string(patched).unwrap_or_default()
    };
    let list: Vec<String> = unknown
        .iter()
        .map(|u| format!("unknown field \"{u}\""))
        .collect();
    crate::error::ApiError::invalid(
        "",
        "",
        "",
        vec![crate::error::Cause {
            reason: "FieldValueInvalid".into(),
            message: format!(
                "Invalid value: {}: strict decoding error: {}",
                apiextensions::go_quote(&shown),
                list.join(", ")
            ),
            field: "patch".into(),
        }],
    )
}

/// Go's `%+v` of a decoded JSON value (`map[a:1 b:[x y]]`).
fn go_plus_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n
            .as_i64()
            .map(|i| i.to_string())
            .unwrap_or_else(|| apiextensions::go_float(n.as_f64().unwrap_or(0.0))),
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(go_plus_v).collect();
            format!("[{}]", inner.join(" "))
        }
        Value::Object(m) => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{k}:{}", go_plus_v(v)))
                .collect();
            format!("map[{}]", inner.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::openapi::unknown_fields;
    use serde_json::json;

    #[test]
    fn strict_patch_errors() {
        let e = strict_patch_error(
            true,
            &json!({"spec": {"foo": 1, "replicas": 2}}),
            &json!({}),
            &["spec.foo".to_string()],
        );
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            " \"\" is invalid: patch: Invalid value: \"map[spec:map[foo:1 replicas:2]]\": strict decoding error: unknown field \"spec.foo\""
        );
        let e = strict_patch_error(
            false,
            &json!({}),
            &json!({"a": {"b": 1}}),
            &["a.b".to_string()],
        );
        assert!(
            e.message
                .contains("Invalid value: \"{\\\"a\\\":{\\\"b\\\":1}}\""),
            "{}",
            e.message
        );
    }

    #[test]
    fn every_served_builtin_kind_has_a_shape() {
        for d in crate::resources::built_in() {
            assert!(
                unknown_fields::has_kind(&d.group, &d.version, &d.kind),
                "{}",
                d.kind
            );
        }
    }
}
