//! Field errors of custom-resource and CRD validation, rendered as
//! k8s.io/apimachinery/pkg/util/validation/field renders them (`Error.ErrorBody`), with the
//! offending JSON value printed the way Go's fmt prints the decoded `interface{}`.

use serde_json::Value;

use apimachinery::status::Cause;

/// A value as it appears in a field error.
#[derive(Clone, Debug, PartialEq)]
pub enum Shown {
    /// A decoded JSON value (strings quoted, numbers bare, objects in `%#v` form).
    Json(Value),
    /// Already rendered text, printed as is.
    Raw(String),
}

impl Shown {
    /// A string value.
    pub fn str(s: &str) -> Shown {
        Shown::Json(Value::String(s.to_string()))
    }

    fn render(&self) -> String {
        match self {
            // ErrorBody prints a nil value as the string "null" (quoted by %q).
            Shown::Json(Value::Null) => "\"null\"".to_string(),
            Shown::Json(v) => go_value(v, false),
            Shown::Raw(r) => r.clone(),
        }
    }
}

/// field.Required: `Required value[: detail]`.
pub fn required(path: &str, detail: &str) -> Cause {
    cause(
        "FieldValueRequired",
        path,
        with_detail("Required value", detail),
    )
}

/// field.Invalid: `Invalid value: <value>[: detail]`.
pub fn invalid(path: &str, value: Shown, detail: &str) -> Cause {
    cause(
        "FieldValueInvalid",
        path,
        with_detail(&format!("Invalid value: {}", value.render()), detail),
    )
}

/// field.TypeInvalid: reads like Invalid, with its own reason.
pub fn type_invalid(path: &str, value: Shown, detail: &str) -> Cause {
    cause(
        "FieldValueTypeInvalid",
        path,
        with_detail(&format!("Invalid value: {}", value.render()), detail),
    )
}

/// field.NotSupported: `Unsupported value: <value>: supported values: "a", "b"`.
pub fn not_supported(path: &str, value: Shown, valid: &[String]) -> Cause {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    cause(
        "FieldValueNotSupported",
        path,
        with_detail(&format!("Unsupported value: {}", value.render()), &detail),
    )
}

/// field.Forbidden: `Forbidden: detail`.
pub fn forbidden(path: &str, detail: &str) -> Cause {
    cause(
        "FieldValueForbidden",
        path,
        with_detail("Forbidden", detail),
    )
}

/// field.Duplicate: `Duplicate value: <value>`.
pub fn duplicate(path: &str, value: Shown) -> Cause {
    cause(
        "FieldValueDuplicate",
        path,
        format!("Duplicate value: {}", value.render()),
    )
}

/// field.TooLong (the value is omitted): `Too long: may not be more than N bytes`.
pub fn too_long(path: &str, max: i64) -> Cause {
    let detail = if max >= 0 {
        format!("may not be more than {max} bytes")
    } else {
        "value is too long".to_string()
    };
    cause("FieldValueTooLong", path, format!("Too long: {detail}"))
}

/// field.TooMany: `Too many: N: must have at most M items`.
pub fn too_many(path: &str, actual: i64, max: i64) -> Cause {
    let detail = if max >= 0 {
        format!("must have at most {max} items")
    } else {
        "has too many items".to_string()
    };
    let head = if actual >= 0 {
        format!("Too many: {actual}")
    } else {
        "Too many".to_string()
    };
    cause("FieldValueTooMany", path, format!("{head}: {detail}"))
}

fn cause(reason: &str, path: &str, message: String) -> Cause {
    Cause {
        reason: reason.to_string(),
        message,
        field: path.to_string(),
    }
}

fn with_detail(head: &str, detail: &str) -> String {
    if detail.is_empty() {
        head.to_string()
    } else {
        format!("{head}: {detail}")
    }
}

/// Child path `a.b` (just `b` at the root).
pub fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

pub use apimachinery::strconv::go_quote;

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)` with %v's exponent range:
/// plain notation for exponents in [-4, 21)).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return "0".into();
    }
    let exp = f.abs().log10().floor() as i32;
    if (-4..21).contains(&exp) {
        format!("{f}")
    } else {
        // Rust prints `1.5e-7`; Go prints `1.5e-07` (at least two exponent digits, signed).
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, e)) => {
                let (sign, digits) = match e.strip_prefix('-') {
                    Some(d) => ('-', d),
                    None => ('+', e),
                };
                format!("{mantissa}e{sign}{digits:0>2}")
            }
            None => s,
        }
    }
}

/// A JSON number as the Go value kube decodes it into (int64 when it fits, else float64).
pub enum GoNumber {
    /// An int64.
    Int(i64),
    /// A float64.
    Float(f64),
}

/// Classifies a JSON number.
pub fn go_number(n: &serde_json::Number) -> GoNumber {
    match n.as_i64() {
        Some(i) => GoNumber::Int(i),
        None => GoNumber::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// Go's `%v` (`nested = false`) or `%#v` (`nested = true`, inside composite values) of a
/// decoded JSON value.
pub fn go_value(v: &Value, nested: bool) -> String {
    match v {
        Value::Null => {
            if nested {
                "interface {}(nil)".into()
            } else {
                "<nil>".into()
            }
        }
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => i.to_string(),
            GoNumber::Float(f) => go_float(f),
        },
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(|i| go_value(i, true)).collect();
            format!("[]interface {{}}{{{}}}", inner.join(", "))
        }
        Value::Object(m) => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_value(v, true)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", inner.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_rendering() {
        let cases: &[(Value, &str)] = &[
            (json!("a\"b"), "\"a\\\"b\""),
            (json!(3), "3"),
            (json!(-2), "-2"),
            (json!(1.5), "1.5"),
            (json!(3.0), "3"),
            (json!(1e21), "1e+21"),
            (json!(0.00001), "1e-05"),
            (json!(true), "true"),
            (
                json!({"a": 1, "b": "x"}),
                "map[string]interface {}{\"a\":1, \"b\":\"x\"}",
            ),
            (json!(["a", 2]), "[]interface {}{\"a\", 2}"),
        ];
        for (v, want) in cases {
            assert_eq!(go_value(v, false), *want, "{v}");
        }
    }

    #[test]
    fn causes_read_like_error_body() {
        let cases = vec![
            (required("spec.a", ""), "Required value"),
            (
                type_invalid(
                    "spec.replicas",
                    Shown::str("string"),
                    "spec.replicas in body must be of type integer: \"string\"",
                ),
                "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\"",
            ),
            (
                not_supported("spec.m", Shown::str("c"), &["a".into(), "b".into()]),
                "Unsupported value: \"c\": supported values: \"a\", \"b\"",
            ),
            (
                invalid("spec.n", Shown::Json(json!(0)), "too small"),
                "Invalid value: 0: too small",
            ),
            (
                invalid("spec.n", Shown::Json(Value::Null), "x"),
                "Invalid value: \"null\": x",
            ),
            (
                too_long("spec.s", 5),
                "Too long: may not be more than 5 bytes",
            ),
            (
                too_many("spec.l", 3, 2),
                "Too many: 3: must have at most 2 items",
            ),
            (
                forbidden("spec.x", "must be empty"),
                "Forbidden: must be empty",
            ),
            (
                duplicate("spec.l[1]", Shown::str("a")),
                "Duplicate value: \"a\"",
            ),
        ];
        for (c, want) in cases {
            assert_eq!(c.message, want);
        }
    }
}
