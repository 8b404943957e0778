//! Field paths and field errors, rendered as k8s.io/apimachinery/pkg/util/validation/field
//! renders them (`Error.ErrorBody`), so that a [`Cause`] reads exactly like kube-apiserver's.

use std::collections::BTreeMap;

use apimachinery::status::Cause;

/// A field path such as `spec.template.spec.containers[0].image`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Path(String);

impl Path {
    /// A root path (`metadata`, `spec`, or `""` for the whole object).
    pub(crate) fn new(root: &str) -> Path {
        Path(root.to_string())
    }

    /// `a.b` — a struct field.
    pub(crate) fn child(&self, name: &str) -> Path {
        if self.0.is_empty() {
            Path(name.to_string())
        } else {
            Path(format!("{}.{name}", self.0))
        }
    }

    /// `a.b.c` — several struct fields.
    pub(crate) fn children(&self, names: &[&str]) -> Path {
        names.iter().fold(self.clone(), |p, n| p.child(n))
    }

    /// `a[3]` — a list element.
    pub(crate) fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }

    /// `a[key]` — a map entry (kube writes the key unquoted).
    pub(crate) fn key(&self, k: &str) -> Path {
        Path(format!("{}[{k}]", self.0))
    }

    /// The rendered path.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The offending value of a field error, as Go's `%v`/`%q`/`%#v` would print it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Bad {
    /// A string, printed quoted (`"Bad_Name"`).
    Str(String),
    /// An integer, printed bare.
    Int(i64),
    /// A boolean, printed bare.
    Bool(bool),
    /// Already rendered Go syntax (`map[string]string{"a":"b"}`).
    Raw(String),
    /// No value shown (field.OmitValueType).
    Omit,
}

impl Bad {
    pub(crate) fn str(s: &str) -> Bad {
        Bad::Str(s.to_string())
    }

    fn render(&self) -> Option<String> {
        match self {
            Bad::Str(s) => Some(go_quote(s)),
            Bad::Int(i) => Some(i.to_string()),
            Bad::Bool(b) => Some(b.to_string()),
            Bad::Raw(r) => Some(r.clone()),
            Bad::Omit => None,
        }
    }
}

const REQUIRED: &str = "FieldValueRequired";
const INVALID: &str = "FieldValueInvalid";
const NOT_SUPPORTED: &str = "FieldValueNotSupported";
const DUPLICATE: &str = "FieldValueDuplicate";
const FORBIDDEN: &str = "FieldValueForbidden";
const TOO_LONG: &str = "FieldValueTooLong";
const TOO_MANY: &str = "FieldValueTooMany";
const NOT_FOUND: &str = "FieldValueNotFound";

fn cause(reason: &str, path: &Path, message: String) -> Cause {
    Cause {
        reason: reason.to_string(),
        message,
        field: path.as_str().to_string(),
    }
}

fn with_detail(mut s: String, detail: &str) -> String {
    if !detail.is_empty() {
        s.push_str(": ");
        s.push_str(detail);
    }
    s
}

fn with_value(kind: &str, value: &Bad, detail: &str) -> String {
    let head = match value.render() {
        Some(v) => format!("{kind}: {v}"),
        None => kind.to_string(),
    };
    with_detail(head, detail)
}

/// field.Required: `Required value[: detail]`.
pub(crate) fn required(path: &Path, detail: &str) -> Cause {
    cause(REQUIRED, path, with_detail("Required value".into(), detail))
}

/// field.Invalid: `Invalid value: <value>[: detail]`.
pub(crate) fn invalid(path: &Path, value: Bad, detail: &str) -> Cause {
    cause(INVALID, path, with_value("Invalid value", &value, detail))
}

/// field.NotSupported: `Unsupported value: <value>: supported values: "A", "B"`.
pub(crate) fn not_supported(path: &Path, value: Bad, valid: &[&str]) -> Cause {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    cause(
        NOT_SUPPORTED,
        path,
        with_value("Unsupported value", &value, &detail),
    )
}

/// field.Duplicate: `Duplicate value: <value>`.
/// ValidateImmutableField's error: the new value (strings and numbers as Go prints them,
/// structured values left out) and `field is immutable`.
pub(crate) fn immutable(path: &Path, new: Option<&serde_json::Value>) -> Cause {
    let value = match new {
        Some(serde_json::Value::String(s)) => Bad::Str(s.clone()),
        Some(serde_json::Value::Number(n)) => n.as_i64().map_or(Bad::Omit, Bad::Int),
        Some(serde_json::Value::Bool(b)) => Bad::Bool(*b),
        None | Some(serde_json::Value::Null) => Bad::Str(String::new()),
        Some(_) => Bad::Omit,
    };
    invalid(path, value, "field is immutable")
}

pub(crate) fn duplicate(path: &Path, value: Bad) -> Cause {
    cause(DUPLICATE, path, with_value("Duplicate value", &value, ""))
}

/// field.Forbidden: `Forbidden[: detail]`.
pub(crate) fn forbidden(path: &Path, detail: &str) -> Cause {
    cause(FORBIDDEN, path, with_detail("Forbidden".into(), detail))
}

/// field.TooLong: `Too long: may not be more than N bytes`.
pub(crate) fn too_long(path: &Path, max: usize) -> Cause {
    cause(
        TOO_LONG,
        path,
        format!("Too long: may not be more than {max} bytes"),
    )
}

/// field.TooMany: `Too many: <n>: must have at most <max> items`.
pub(crate) fn too_many(path: &Path, actual: usize, max: usize) -> Cause {
    cause(
        TOO_MANY,
        path,
        format!("Too many: {actual}: must have at most {max} items"),
    )
}

/// field.NotFound: `Not found: <value>`.
pub(crate) fn not_found(path: &Path, value: Bad) -> Cause {
    cause(NOT_FOUND, path, with_value("Not found", &value, ""))
}

pub(crate) use apimachinery::strconv::go_quote;

/// Go's `%#v` of a `map[string]string` (keys sorted, as fmt prints maps).
pub(crate) fn go_string_map(m: Option<&BTreeMap<String, String>>) -> String {
    match m {
        None => "map[string]string(nil)".to_string(),
        Some(m) => {
            let items: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v)))
                .collect();
            format!("map[string]string{{{}}}", items.join(", "))
        }
    }
}

/// Go's `%#v` of a `[]string`.
pub(crate) fn go_string_slice(items: Option<&[String]>) -> String {
    go_named_string_slice("string", items)
}

/// Go's `%#v` of a slice of a named string type (`[]core.IPFamily{"IPv4"}`).
pub(crate) fn go_named_string_slice(type_name: &str, items: Option<&[String]>) -> String {
    match items {
        None => format!("[]{type_name}(nil)"),
        Some(items) => {
            let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
            format!("[]{type_name}{{{}}}", quoted.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_field_path() {
        let p = Path::new("spec")
            .child("template")
            .children(&["spec", "containers"])
            .index(0)
            .child("image");
        assert_eq!(p.as_str(), "spec.template.spec.containers[0].image");
        assert_eq!(Path::new("data").key("a.b").as_str(), "data[a.b]");
        assert_eq!(Path::new("").child("x").as_str(), "x");
    }

    #[test]
    fn bodies_render_like_error_body() {
        let p = Path::new("metadata").child("name");
        let cases = [
            (required(&p, ""), "Required value"),
            (
                required(&p, "name or generateName is required"),
                "Required value: name or generateName is required",
            ),
            (
                invalid(&p, Bad::str("a\"b"), "bad"),
                "Invalid value: \"a\\\"b\": bad",
            ),
            (invalid(&p, Bad::Int(-1), "neg"), "Invalid value: -1: neg"),
            (invalid(&p, Bad::Omit, "x"), "Invalid value: x"),
            (
                not_supported(&p, Bad::str("X"), &["A", "B"]),
                "Unsupported value: \"X\": supported values: \"A\", \"B\"",
            ),
            (duplicate(&p, Bad::str("x")), "Duplicate value: \"x\""),
            (forbidden(&p, "nope"), "Forbidden: nope"),
            (too_long(&p, 10), "Too long: may not be more than 10 bytes"),
            (too_many(&p, 3, 2), "Too many: 3: must have at most 2 items"),
            (not_found(&p, Bad::str("v")), "Not found: \"v\""),
        ];
        for (c, want) in cases {
            assert_eq!(c.message, want);
            assert_eq!(c.field, "metadata.name");
        }
    }

    #[test]
    fn go_syntax() {
        assert_eq!(go_quote("a\nb\x01é"), "\"a\\nb\\x01é\"");
        let mut m = BTreeMap::new();
        m.insert("b".to_string(), "2".to_string());
        m.insert("a".to_string(), "1".to_string());
        assert_eq!(
            go_string_map(Some(&m)),
            "map[string]string{\"a\":\"1\", \"b\":\"2\"}"
        );
        assert_eq!(go_string_map(None), "map[string]string(nil)");
        assert_eq!(go_string_slice(None), "[]string(nil)");
        assert_eq!(go_string_slice(Some(&["x".to_string()])), "[]string{\"x\"}");
    }
}
