//! Equality and ordering of JSON values as the Go libraries see them.
//!
//! Go decodes Kubernetes JSON with integers preserved (`int64`) and compares numbers by value;
//! structured-merge-diff orders values of different types (`value.Compare`). serde_json's own
//! `PartialEq` treats `1` and `1.0` as different, so these helpers are used instead.

use std::cmp::Ordering;

use serde_json::{Number, Value};

/// The JSON type of a value, the granularity at which Go's `reflect.TypeOf` differs for
/// decoded JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

/// The JSON type of `v`.
pub(crate) fn kind(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(_) => Kind::Number,
        Value::String(_) => Kind::String,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

/// Deep equality that compares numbers by value (`value.Equals` in structured-merge-diff).
pub(crate) fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y) == Ordering::Equal,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(l, r)| json_eq(l, r))
        }
        // Maps are sorted by key: walking both in step needs no lookups.
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, l), (ky, r))| kx == ky && json_eq(l, r))
        }
        _ => a == b,
    }
}

fn number_cmp(x: &Number, y: &Number) -> Ordering {
    if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
        return a.cmp(&b);
    }
    if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
        return a.cmp(&b);
    }
    let a = x.as_f64().unwrap_or(f64::NAN);
    let b = y.as_f64().unwrap_or(f64::NAN);
    a.partial_cmp(&b).unwrap_or(Ordering::Equal)
}

/// Rank of a type in structured-merge-diff's total order: numbers, strings, booleans, lists,
/// maps, null.
fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// Total order over JSON values (`value.Compare` in structured-merge-diff).
pub(crate) fn value_cmp(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => number_cmp(x, y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (l, r) in x.iter().zip(y) {
                let c = value_cmp(l, r);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            // Lexical over the union of keys; a key missing on one side sorts that side last.
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let c = match (x.get(key), y.get(key)) {
                    (Some(l), Some(r)) => value_cmp(l, r),
                    (None, _) => Ordering::Greater,
                    (_, None) => Ordering::Less,
                };
                if c != Ordering::Equal {
                    return c;
                }
            }
            Ordering::Equal
        }
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => type_rank(a).cmp(&type_rank(b)),
    }
}

/// Serializes `v` as Go's `encoding/json` does for decoded JSON: compact, object keys sorted,
/// `<`, `>`, `&`, U+2028 and U+2029 escaped.
pub(crate) fn go_json(v: &Value) -> String {
    let mut out = String::new();
    write_go_json(&mut out, v);
    out
}

fn write_go_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_go_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_json(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go_string(out, key);
                out.push(':');
                write_go_json(out, value);
            }
            out.push('}');
        }
    }
}

/// A JSON string literal with Go's escaping rules.
pub(crate) fn write_go_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn numbers_compare_by_value() {
        let cases = [
            (json!(1), json!(1.0), true),
            (json!(1), json!(2), false),
            (json!({"a": [1, 2]}), json!({"a": [1.0, 2]}), true),
            (json!({"a": 1}), json!({"a": 1, "b": null}), false),
            (json!("1"), json!(1), false),
        ];
        for (a, b, want) in cases {
            assert_eq!(json_eq(&a, &b), want, "{a} vs {b}");
        }
    }

    #[test]
    fn go_encoding() {
        let v = json!({"b": "<a&b>", "a": [1, 2.5, true, null], "c": "line\nbreak \"q\""});
        assert_eq!(
            go_json(&v),
            r#"{"a":[1,2.5,true,null],"b":"\u003ca\u0026b\u003e","c":"line\nbreak \"q\""}"#
        );
    }

    #[test]
    fn order_across_types() {
        let ordered = [
            json!(-1),
            json!(1.5),
            json!(2),
            json!("a"),
            json!("b"),
            json!(false),
            json!(true),
            json!([1]),
            json!({"a": 1}),
            json!(null),
        ];
        for pair in ordered.windows(2) {
            assert_eq!(
                value_cmp(&pair[0], &pair[1]),
                Ordering::Less,
                "{} < {}",
                pair[0],
                pair[1]
            );
            assert_eq!(value_cmp(&pair[1], &pair[0]), Ordering::Greater);
        }
    }
}
