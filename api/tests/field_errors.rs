//! Field errors print the way Kubernetes prints them.

use api::{FieldError, FieldErrorKind, FieldPath, aggregate_message};
use serde_json::json;

#[test]
fn rendering_by_kind() {
    let cases = vec![
        (
            FieldError::required("spec.resourceSelectors", ""),
            "spec.resourceSelectors: Required value",
            "FieldValueRequired",
        ),
        (
            FieldError::required("spec.x", "must be set"),
            "spec.x: Required value: must be set",
            "FieldValueRequired",
        ),
        (
            FieldError::invalid("spec.priority", 3, "too high"),
            "spec.priority: Invalid value: 3: too high",
            "FieldValueInvalid",
        ),
        (
            FieldError::invalid("a", -1.5, "d"),
            "a: Invalid value: -1.5: d",
            "FieldValueInvalid",
        ),
        (
            FieldError::invalid("a", true, "d"),
            "a: Invalid value: true: d",
            "FieldValueInvalid",
        ),
        (
            FieldError::invalid("a", serde_json::Value::Null, "d"),
            "a: Invalid value: null: d",
            "FieldValueInvalid",
        ),
        (
            FieldError::invalid("a", json!(["x", 1]), "d"),
            r#"a: Invalid value: ["x",1]: d"#,
            "FieldValueInvalid",
        ),
        (
            FieldError::invalid("a", json!({"b": 1, "a": 2}), "d"),
            r#"a: Invalid value: {"a":2,"b":1}: d"#,
            "FieldValueInvalid",
        ),
        (
            FieldError::invalid("a", "say \"hi\"\n\tnow\u{1}", "d"),
            r#"a: Invalid value: "say \"hi\"\n\tnow\x01": d"#,
            "FieldValueInvalid",
        ),
        (
            FieldError::not_supported("spec.mode", "Foo", &["Pull", "Push"]),
            r#"spec.mode: Unsupported value: "Foo": supported values: "Pull", "Push""#,
            "FieldValueNotSupported",
        ),
        (
            FieldError::not_supported("spec.mode", "Foo", &[]),
            r#"spec.mode: Unsupported value: "Foo""#,
            "FieldValueNotSupported",
        ),
        (
            FieldError::duplicate("spec.taints[1]", "k"),
            r#"spec.taints[1]: Duplicate value: "k""#,
            "FieldValueDuplicate",
        ),
        (
            FieldError::forbidden("spec.x", "may not be set"),
            "spec.x: Forbidden: may not be set",
            "FieldValueForbidden",
        ),
        (
            FieldError::too_long("metadata.annotations", 262144),
            "metadata.annotations: Too long: may not be more than 262144 bytes",
            "FieldValueTooLong",
        ),
        (
            FieldError::too_long("a", 1),
            "a: Too long: may not be more than 1 byte",
            "FieldValueTooLong",
        ),
        (
            FieldError::too_many("spec.list", Some(5), 4),
            "spec.list: Too many: 5: must have at most 4 items",
            "FieldValueTooMany",
        ),
        (
            FieldError::too_many("spec.list", None, 1),
            "spec.list: Too many: must have at most 1 item",
            "FieldValueTooMany",
        ),
        (
            FieldError::type_invalid("spec.p", "string", "bad type"),
            r#"spec.p: Invalid value: "string": bad type"#,
            "FieldValueTypeInvalid",
        ),
    ];
    for (err, text, reason) in cases {
        assert_eq!(err.to_string(), text);
        assert_eq!(err.reason(), reason, "{text}");
        assert_eq!(err.kind.reason(), reason);
    }
    assert_eq!(FieldError::required("a", "").error_body(), "Required value");
    assert_eq!(FieldErrorKind::TypeInvalid.label(), "Invalid value");
}

#[test]
fn struct_values_keep_field_order() {
    #[derive(serde::Serialize)]
    struct Go {
        zeta: u8,
        alpha: u8,
    }
    let err = FieldError::invalid_struct("spec", &Go { zeta: 1, alpha: 2 }, "d");
    assert_eq!(
        err.to_string(),
        r#"spec: Invalid value: {"zeta":1,"alpha":2}: d"#
    );
    assert_eq!(err.value, Some(json!({"alpha": 2, "zeta": 1})));
}

#[test]
fn aggregation() {
    let a = FieldError::required("a", "");
    let b = FieldError::invalid("b", 1, "x");
    assert_eq!(aggregate_message(&[]), "");
    assert_eq!(
        aggregate_message(std::slice::from_ref(&a)),
        "a: Required value"
    );
    assert_eq!(
        aggregate_message(&[a.clone(), b.clone(), a.clone()]),
        "[a: Required value, b: Invalid value: 1: x]"
    );
    assert_eq!(aggregate_message(&[a.clone(), a]), "a: Required value");
}

#[test]
fn paths() {
    let p = FieldPath::new("spec")
        .child("placement")
        .child("spreadConstraints")
        .index(2);
    assert_eq!(p.as_str(), "spec.placement.spreadConstraints[2]");
    assert_eq!(
        FieldPath::new("metadata")
            .child("labels")
            .key("a/b")
            .to_string(),
        "metadata.labels[a/b]"
    );
    assert_eq!(FieldPath::default().child("spec").as_str(), "spec");
    assert_eq!(String::from(&p), "spec.placement.spreadConstraints[2]");
}
