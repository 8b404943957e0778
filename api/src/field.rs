//! Field errors in the shape Kubernetes reports them (k8s.io/apimachinery util/validation/field).

use std::fmt;

use serde_json::Value;

/// Go's `strconv.Quote`: how kube-apiserver prints string values in messages.
pub use apimachinery::strconv::go_quote;

/// The kind of a field error; each maps to a metav1 StatusCause type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FieldErrorKind {
    /// A required field is missing or empty.
    Required,
    /// The value is malformed or out of range.
    Invalid,
    /// The value is not one of the supported values.
    NotSupported,
    /// The value duplicates another one that must be unique.
    Duplicate,
    /// The field may not be set (here, or by this user).
    Forbidden,
    /// The value is longer than allowed.
    TooLong,
    /// The list has more items than allowed.
    TooMany,
    /// The value has the wrong JSON type.
    TypeInvalid,
}

impl FieldErrorKind {
    /// The metav1 StatusCause type (`reason` in a Status' details.causes).
    pub const fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human label Kubernetes prints before the value.
    pub const fn label(self) -> &'static str {
        match self {
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Invalid | FieldErrorKind::TypeInvalid => "Invalid value",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::TooMany => "Too many",
        }
    }
}

/// One validation failure on one field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    /// What is wrong.
    pub kind: FieldErrorKind,
    /// Path of the field, e.g. `spec.resourceSelectors[0].kind`.
    pub field: String,
    /// The offending value; `None` leaves it out of the message.
    pub value: Option<Value>,
    /// Explanation appended to the message; may be empty.
    pub detail: String,
    /// How the value prints when it is not `value`'s canonical JSON: a Go struct prints its
    /// fields in declaration order, which a `serde_json::Value` map does not keep.
    rendered_value: Option<String>,
}

impl FieldError {
    /// A required field is missing.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Required, field, None, detail)
    }

    /// A value is invalid.
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(value.into()), detail)
    }

    /// A value is not one of `supported` (listed quoted, in the given order).
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<Value>,
        supported: &[&str],
    ) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorKind::NotSupported,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// A value duplicates another.
    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(value.into()), "")
    }

    /// A field may not be set.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Forbidden, field, None, detail)
    }

    /// A value exceeds `max` bytes.
    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            FieldErrorKind::TooLong,
            field,
            None,
            format!("may not be more than {max} {unit}"),
        )
    }

    /// A list has `actual` items where at most `max` are allowed.
    pub fn too_many(field: impl Into<String>, actual: Option<i64>, max: i64) -> Self {
        let unit = if max == 1 { "item" } else { "items" };
        Self::new(
            FieldErrorKind::TooMany,
            field,
            actual.map(Value::from),
            format!("must have at most {max} {unit}"),
        )
    }

    /// A value has the wrong type.
    pub fn type_invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(
            FieldErrorKind::TypeInvalid,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// A struct value is invalid; the message shows its fields in declaration order, as Go
    /// prints a struct.
    pub fn invalid_struct<T: serde::Serialize>(
        field: impl Into<String>,
        value: &T,
        detail: impl Into<String>,
    ) -> Self {
        let mut e = Self::invalid(
            field,
            serde_json::to_value(value).unwrap_or(Value::Null),
            detail,
        );
        e.rendered_value = serde_json::to_string(value).ok();
        e
    }

    /// The same error, its value printed as given (Go's `%#v` of a typed value, say).
    pub(crate) fn rendered_as(mut self, rendered: String) -> Self {
        self.rendered_value = Some(rendered);
        self
    }

    /// The same error, its value printed from `value`'s own serialization (field order kept).
    pub(crate) fn with_struct_value<T: serde::Serialize>(mut self, value: &T) -> Self {
        self.value = Some(serde_json::to_value(value).unwrap_or(Value::Null));
        self.rendered_value = serde_json::to_string(value).ok();
        self
    }

    fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            value,
            detail: detail.into(),
            rendered_value: None,
        }
    }

    /// The metav1 StatusCause type, e.g. `FieldValueInvalid`.
    pub fn reason(&self) -> &'static str {
        self.kind.reason()
    }

    /// The message without the field path, as kube puts in a StatusCause
    /// (`Invalid value: 3: minGroups lower than ...`).
    pub fn error_body(&self) -> String {
        let mut body = self.kind.label().to_owned();
        let shows_value = !matches!(
            self.kind,
            FieldErrorKind::Required | FieldErrorKind::Forbidden | FieldErrorKind::TooLong
        );
        if shows_value && let Some(value) = &self.value {
            body.push_str(": ");
            match &self.rendered_value {
                Some(rendered) => body.push_str(rendered),
                None => body.push_str(&render_value(value)),
            }
        }
        if !self.detail.is_empty() {
            body.push_str(": ");
            body.push_str(&self.detail);
        }
        body
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.error_body())
    }
}

impl std::error::Error for FieldError {}

/// Joins errors the way Kubernetes aggregates them: one message alone, several as
/// `[a, b]`, duplicates removed.
pub fn aggregate_message(errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let msg = e.to_string();
        if !seen.contains(&msg) {
            seen.push(msg);
        }
    }
    match seen.len() {
        0 => String::new(),
        1 => seen.remove(0),
        _ => format!("[{}]", seen.join(", ")),
    }
}

/// Renders a bad value as Go's field errors do: strings quoted, numbers and booleans bare,
/// anything else as compact JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => go_quote(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => serde_json::to_string(other).unwrap_or_default(),
    }
}

/// Builds field paths the way Go's `field.Path` prints them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldPath(String);

impl FieldPath {
    /// A path starting at `root`.
    pub fn new(root: &str) -> Self {
        FieldPath(root.to_owned())
    }

    /// The path of a child field.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            FieldPath(name.to_owned())
        } else {
            FieldPath(format!("{}.{}", self.0, name))
        }
    }

    /// The path of a list element.
    pub fn index(&self, i: usize) -> Self {
        FieldPath(format!("{}[{}]", self.0, i))
    }

    /// The path of a map entry.
    pub fn key(&self, key: &str) -> Self {
        FieldPath(format!("{}[{}]", self.0, key))
    }

    /// The printed path.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<FieldPath> for String {
    fn from(p: FieldPath) -> String {
        p.0
    }
}

impl From<&FieldPath> for String {
    fn from(p: &FieldPath) -> String {
        p.0.clone()
    }
}
