use super::*;
use crate::gofloat::go_json_float;
use serde_json::json;

#[test]
fn go_float_v_matches_fmt_print() {
    let cases: &[(f64, &str)] = &[
        (0.0, "0"),
        (-0.0, "-0"),
        (1.0, "1"),
        (0.5, "0.5"),
        (-2.25, "-2.25"),
        (123456.0, "123456"),
        (123456.7, "123456.7"),
        (1_000_000.0, "1e+06"),
        (1_234_567.0, "1.234567e+06"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (1.5e-7, "1.5e-07"),
        (1e21, "1e+21"),
        (1e100, "1e+100"),
        (0.1 + 0.2, "0.30000000000000004"),
    ];
    for (f, want) in cases {
        assert_eq!(go_float_v(*f), *want, "go_float_v({f})");
    }
}

#[test]
fn go_json_float_matches_encoding_json() {
    let cases: &[(f64, &str)] = &[
        (1.0, "1"),
        (0.5, "0.5"),
        (1_234_567.0, "1234567"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (0.000001, "0.000001"),
        (1.5e-7, "1.5e-7"),
        (1e-10, "1e-10"),
        (-3.25e-8, "-3.25e-8"),
    ];
    for (f, want) in cases {
        assert_eq!(go_json_float(*f), *want, "go_json_float({f})");
    }
}

#[test]
fn go_json_sorts_keys_and_escapes_html() {
    let v = json!({"b": [1, 2.5, true, null], "a": "<x&y>", "c": {"z": 1.0, "y": "\u{2028}"}});
    assert_eq!(
        go_json(&v),
        r#"{"a":"\u003cx\u0026y\u003e","b":[1,2.5,true,null],"c":{"y":"\u2028","z":1}}"#
    );
    assert_eq!(go_json(&json!("tab\t\u{1}")), r#""tab\t\u0001""#);
}

#[test]
fn format_labels_sorts_pairs_as_strings() {
    let cases = [
        (None, "<none>"),
        (Some(json!({})), "<none>"),
        (Some(json!({"app": "web"})), "app=web"),
        (Some(json!({"b": "2", "a": "1"})), "a=1,b=2"),
        // Whole "k=v" strings are sorted: '.' sorts before '='.
        (Some(json!({"a": "1", "a.b": "2"})), "a.b=2,a=1"),
    ];
    for (input, want) in cases {
        assert_eq!(
            format_labels(input.as_ref()),
            want,
            "format_labels({input:?})"
        );
    }
}

#[test]
fn label_selector_formatting() {
    let cases = [
        (None, Ok(""), "<none>"),
        (Some(json!(null)), Ok(""), "<none>"),
        (Some(json!({})), Ok(""), "<none>"),
        (
            Some(json!({"matchLabels": {"app": "web"}})),
            Ok("app=web"),
            "app=web",
        ),
        (
            Some(json!({"matchLabels": {"tier": "fe", "app": "web"}})),
            Ok("app=web,tier=fe"),
            "app=web,tier=fe",
        ),
        (
            Some(json!({
                "matchLabels": {"app": "web"},
                "matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                    {"key": "zone", "operator": "NotIn", "values": ["b"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                    {"key": "ack", "operator": "Exists"}
                ]
            })),
            Ok("ack,app=web,!canary,env in (dev,prod),zone notin (b)"),
            "ack,app=web,!canary,env in (dev,prod),zone notin (b)",
        ),
        (
            Some(
                json!({"matchExpressions": [{"key": "env", "operator": "Bogus", "values": ["a"]}]}),
            ),
            Err(InvalidSelector),
            "<error>",
        ),
        (
            Some(json!({"matchExpressions": [{"key": "env", "operator": "In", "values": []}]})),
            Err(InvalidSelector),
            "<error>",
        ),
        (
            Some(
                json!({"matchExpressions": [{"key": "env", "operator": "Exists", "values": ["x"]}]}),
            ),
            Err(InvalidSelector),
            "<error>",
        ),
        (
            Some(json!({"matchLabels": {"bad key": "x"}})),
            Err(InvalidSelector),
            "<error>",
        ),
        (
            Some(json!({"matchLabels": {"app": "bad value!"}})),
            Err(InvalidSelector),
            "<error>",
        ),
        (
            Some(json!({"matchLabels": {"app.kubernetes.io/name": "web"}})),
            Ok("app.kubernetes.io/name=web"),
            "app.kubernetes.io/name=web",
        ),
    ];
    for (input, want_str, want_fmt) in cases {
        assert_eq!(
            label_selector_string(input.as_ref()),
            want_str.map(str::to_string),
            "label_selector_string({input:?})"
        );
        assert_eq!(format_label_selector(input.as_ref()), want_fmt);
    }
}

#[test]
fn qualified_names() {
    let cases = [
        ("app", true),
        ("app.kubernetes.io/name", true),
        ("example.com/a_b-c.d", true),
        ("", false),
        ("-app", false),
        ("app-", false),
        ("a/b/c", false),
        ("Example.com/app", false),
        ("/app", false),
        (&*"x".repeat(63), true),
        (&*"x".repeat(64), false),
    ];
    for (name, want) in cases {
        assert_eq!(is_qualified_name(name), want, "is_qualified_name({name:?})");
    }
}

#[test]
fn int_or_string_formatting() {
    assert_eq!(int_or_string(&json!(3)), "3");
    assert_eq!(int_or_string(&json!("50%")), "50%");
}
