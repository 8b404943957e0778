//! Go `encoding/json` rules applied to prost values, in both directions.
//!
//! Kubernetes' protobuf messages are proto2, so prost gives every scalar and message field an
//! `Option`. What Go would print for a field depends on how the Go struct declares it, which the
//! generated field table (`fields.rs`) records as a [`Mode`] per field.
//!
//! The same table drives the reverse direction ([`FromJson`]): the Kubernetes JSON of an object
//! becomes the message Go's generated `Marshal` would write for the Go struct that JSON decodes
//! into. Value-typed Go fields are always written (gogo-protobuf's non-nullable fields), so a
//! value field missing from the JSON is written as its zero value, while a pointer field is
//! written only when set.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::ProtobufError;

/// How deeply `RawExtension`s may embed further protobuf objects.
const MAX_NESTING: u8 = 16;

/// State carried down a conversion.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ctx {
    nesting: u8,
}

impl Ctx {
    /// The context for an object embedded in a `RawExtension`.
    pub(crate) fn nested(self) -> Result<Ctx, ProtobufError> {
        if self.nesting >= MAX_NESTING {
            return Err(ProtobufError::Malformed(
                "embedded objects are nested too deeply".into(),
            ));
        }
        Ok(Ctx {
            nesting: self.nesting + 1,
        })
    }
}

/// State carried down an encoding (JSON to protobuf).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Enc {
    /// Refuse JSON keys the message has no field for, instead of leaving them out as Go's JSON
    /// decoder does (for tests proving the tables cover every field).
    pub(crate) strict: bool,
}

/// An encoding error at the value being encoded (callers add the path).
pub(crate) fn unencodable(reason: impl std::fmt::Display) -> ProtobufError {
    ProtobufError::Unencodable {
        path: String::new(),
        reason: reason.to_string(),
    }
}

/// Prefixes an encoding error's path with the field (or `[index]`) it was found under.
pub(crate) fn under(name: &str, e: ProtobufError) -> ProtobufError {
    match e {
        ProtobufError::Unencodable { path, reason } => {
            let path = if path.is_empty() {
                name.to_owned()
            } else if path.starts_with('[') {
                format!("{name}{path}")
            } else {
                format!("{name}.{path}")
            };
            ProtobufError::Unencodable { path, reason }
        }
        other => other,
    }
}

/// What a JSON value is, for messages.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The error for a JSON value of the wrong type.
pub(crate) fn mistyped(want: &str, got: &Value) -> ProtobufError {
    unencodable(format_args!("expected {want}, found {}", json_type(got)))
}

/// A prost value built from its Kubernetes JSON form.
pub(crate) trait FromJson: Sized {
    /// The value for non-null JSON (`null` is an absent value, handled by the caller).
    fn from_json(v: &Value, enc: Enc) -> Result<Self, ProtobufError>;

    /// What Go's generated `Marshal` writes for a value-typed field left at its zero value:
    /// `None` when it writes nothing.
    fn zero() -> Option<Self>;

    /// An inlined struct read from its parent's JSON object; `seen` counts the keys used.
    fn from_parent(
        _obj: &Map<String, Value>,
        _enc: Enc,
        _seen: &mut usize,
    ) -> Result<Self, ProtobufError> {
        Err(unencodable("only a struct can be inlined"))
    }

    /// Whether an inlined struct has a field of this JSON name.
    fn knows(_key: &str) -> bool {
        false
    }
}

/// A struct field of a prost message, read from the parent's JSON object.
pub(crate) trait FieldFromJson: Sized {
    /// The field's value from `obj[name]`; `seen` counts the keys used.
    fn take(
        obj: &Map<String, Value>,
        name: &'static str,
        mode: Mode,
        enc: Enc,
        seen: &mut usize,
    ) -> Result<Self, ProtobufError>;

    /// Whether this field reads the JSON key `key` (inlined structs read several).
    fn reads(&self, key: &str, name: &'static str, mode: Mode) -> bool {
        mode != Mode::Inline && key == name
    }
}

impl<T: FromJson> FieldFromJson for Option<T> {
    fn take(
        obj: &Map<String, Value>,
        name: &'static str,
        mode: Mode,
        enc: Enc,
        seen: &mut usize,
    ) -> Result<Self, ProtobufError> {
        if mode == Mode::Inline {
            return T::from_parent(obj, enc, seen).map(Some);
        }
        match present(obj, name, seen) {
            Some(v) => T::from_json(v, enc).map(Some).map_err(|e| under(name, e)),
            // Go's JSON decoder leaves a field that is absent or null at its zero value.
            None => Ok(match mode {
                Mode::Ptr | Mode::PtrNull => None,
                Mode::Omit | Mode::Always | Mode::Inline => T::zero(),
            }),
        }
    }

    fn reads(&self, key: &str, name: &'static str, mode: Mode) -> bool {
        if mode == Mode::Inline {
            T::knows(key)
        } else {
            key == name
        }
    }
}

/// An element of a slice or map that JSON gave as `null`: Go decodes the zero value.
fn element<T: FromJson>(v: &Value, enc: Enc) -> Result<T, ProtobufError> {
    if v.is_null() {
        return T::zero().ok_or_else(|| mistyped("a value", v));
    }
    T::from_json(v, enc)
}

/// The elements of a JSON array, errors naming their index.
pub(crate) fn list_from_json<T: FromJson>(
    items: &[Value],
    enc: Enc,
) -> Result<Vec<T>, ProtobufError> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| element(item, enc).map_err(|e| under(&format!("[{i}]"), e)))
        .collect()
}

/// `obj[name]` unless absent or `null`; `seen` counts the key when present.
fn present<'a>(obj: &'a Map<String, Value>, name: &str, seen: &mut usize) -> Option<&'a Value> {
    let value = obj.get(name)?;
    *seen += 1;
    (!value.is_null()).then_some(value)
}

impl<T: FromJson> FieldFromJson for Vec<T> {
    fn take(
        obj: &Map<String, Value>,
        name: &'static str,
        _mode: Mode,
        enc: Enc,
        seen: &mut usize,
    ) -> Result<Self, ProtobufError> {
        match present(obj, name, seen) {
            None => Ok(Vec::new()),
            Some(Value::Array(items)) => list_from_json(items, enc).map_err(|e| under(name, e)),
            Some(other) => Err(under(name, mistyped("an array", other))),
        }
    }
}

impl<T: FromJson> FieldFromJson for BTreeMap<String, T> {
    fn take(
        obj: &Map<String, Value>,
        name: &'static str,
        _mode: Mode,
        enc: Enc,
        seen: &mut usize,
    ) -> Result<Self, ProtobufError> {
        match present(obj, name, seen) {
            None => Ok(BTreeMap::new()),
            Some(Value::Object(entries)) => entries
                .iter()
                .map(|(k, v)| {
                    element(v, enc)
                        .map(|v| (k.clone(), v))
                        .map_err(|e| under(name, under(k, e)))
                })
                .collect(),
            Some(other) => Err(under(name, mistyped("an object", other))),
        }
    }
}

/// Checks a message's JSON object for keys none of its fields read. `apiVersion` and `kind`
/// are the inlined `TypeMeta`, which protobuf does not carry. Go's JSON decoder drops unknown
/// keys; strict encodings refuse them.
pub(crate) fn check_unknown(
    obj: &Map<String, Value>,
    seen: usize,
    enc: Enc,
    knows: impl Fn(&str) -> bool,
) -> Result<(), ProtobufError> {
    if seen == obj.len() {
        return Ok(());
    }
    let unknown: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "apiVersion" | "kind") && !knows(k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    if enc.strict {
        return Err(unencodable(format_args!(
            "no protobuf field for {unknown:?}"
        )));
    }
    tracing::debug!(fields = ?unknown, "JSON fields without a protobuf field left out");
    Ok(())
}

impl<T: FromJson> FromJson for Box<T> {
    fn from_json(v: &Value, enc: Enc) -> Result<Self, ProtobufError> {
        T::from_json(v, enc).map(Box::new)
    }

    fn zero() -> Option<Self> {
        T::zero().map(Box::new)
    }

    fn from_parent(
        obj: &Map<String, Value>,
        enc: Enc,
        seen: &mut usize,
    ) -> Result<Self, ProtobufError> {
        T::from_parent(obj, enc, seen).map(Box::new)
    }

    fn knows(key: &str) -> bool {
        T::knows(key)
    }
}

impl FromJson for String {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        v.as_str()
            .map(str::to_owned)
            .ok_or_else(|| mistyped("a string", v))
    }

    fn zero() -> Option<Self> {
        Some(String::new())
    }
}

impl FromJson for bool {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        v.as_bool().ok_or_else(|| mistyped("a boolean", v))
    }

    fn zero() -> Option<Self> {
        Some(false)
    }
}

impl FromJson for i32 {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        v.as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| mistyped("a 32-bit integer", v))
    }

    fn zero() -> Option<Self> {
        Some(0)
    }
}

impl FromJson for i64 {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        v.as_i64().ok_or_else(|| mistyped("a 64-bit integer", v))
    }

    fn zero() -> Option<Self> {
        Some(0)
    }
}

impl FromJson for f64 {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        v.as_f64().ok_or_else(|| mistyped("a number", v))
    }

    fn zero() -> Option<Self> {
        Some(0.0)
    }
}

/// `[]byte` from its base64 JSON string. Go's generated `Marshal` writes a byte slice only when
/// it is not nil, so a missing one writes nothing.
impl FromJson for Vec<u8> {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        use base64::Engine as _;
        let s = v.as_str().ok_or_else(|| mistyped("a base64 string", v))?;
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|e| unencodable(format_args!("invalid base64: {e}")))
    }

    fn zero() -> Option<Self> {
        None
    }
}

/// How Go's `encoding/json` treats one struct field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `*T` with `omitempty`: printed when set.
    Ptr,
    /// `*T` without `omitempty`: `null` when unset.
    PtrNull,
    /// `T` with `omitempty`: zero scalars and empty slices or maps are dropped; a struct is
    /// always printed (`omitempty` never applies to structs).
    Omit,
    /// `T` without `omitempty`: always printed, as the zero value when unset.
    Always,
    /// An embedded struct tagged `json:",inline"`: its fields are merged into the parent.
    Inline,
}

/// A prost value with a Kubernetes JSON form.
pub(crate) trait ToJson {
    /// The JSON Go prints for this value.
    fn to_json(&self, ctx: Ctx) -> Result<Value, ProtobufError>;

    /// Whether `omitempty` drops this value: zero scalars only, structs never.
    fn is_empty(&self) -> bool {
        false
    }

    /// What Go prints for a value-typed field of this type that the message did not carry:
    /// `None` when `omitempty` drops the zero value.
    fn absent(omitempty: bool, ctx: Ctx) -> Result<Option<Value>, ProtobufError>;
}

/// A struct field of a prost message, written into the parent's JSON object.
pub(crate) trait Field {
    /// Inserts this field's JSON under `name` if Go would print it.
    fn put(
        &self,
        obj: &mut Map<String, Value>,
        name: &'static str,
        mode: Mode,
        ctx: Ctx,
    ) -> Result<(), ProtobufError>;
}

impl<T: ToJson> Field for Option<T> {
    fn put(
        &self,
        obj: &mut Map<String, Value>,
        name: &'static str,
        mode: Mode,
        ctx: Ctx,
    ) -> Result<(), ProtobufError> {
        let value = match (mode, self) {
            (Mode::Inline, v) => {
                let inner = match v {
                    Some(v) => v.to_json(ctx)?,
                    None => T::absent(false, ctx)?.unwrap_or(Value::Null),
                };
                return merge_inline(obj, inner);
            }
            (Mode::Ptr, None) => None,
            (Mode::PtrNull, None) => Some(Value::Null),
            (Mode::Ptr | Mode::PtrNull | Mode::Always, Some(v)) => Some(v.to_json(ctx)?),
            (Mode::Omit, Some(v)) if v.is_empty() => None,
            (Mode::Omit, Some(v)) => Some(v.to_json(ctx)?),
            (Mode::Omit, None) => T::absent(true, ctx)?,
            (Mode::Always, None) => T::absent(false, ctx)?,
        };
        if let Some(value) = value {
            obj.insert(name.to_owned(), value);
        }
        Ok(())
    }
}

/// Go's encoding of a slice or map field decoded from protobuf: an empty one is nil.
fn put_collection(
    obj: &mut Map<String, Value>,
    name: &'static str,
    mode: Mode,
    value: Option<Value>,
) {
    match (value, mode) {
        (Some(v), _) => {
            obj.insert(name.to_owned(), v);
        }
        (None, Mode::Always | Mode::PtrNull) => {
            obj.insert(name.to_owned(), Value::Null);
        }
        (None, Mode::Omit | Mode::Ptr | Mode::Inline) => {}
    }
}

impl<T: ToJson> Field for Vec<T> {
    fn put(
        &self,
        obj: &mut Map<String, Value>,
        name: &'static str,
        mode: Mode,
        ctx: Ctx,
    ) -> Result<(), ProtobufError> {
        let value = if self.is_empty() {
            None
        } else {
            let items = self
                .iter()
                .map(|item| item.to_json(ctx))
                .collect::<Result<Vec<_>, _>>()?;
            Some(Value::Array(items))
        };
        put_collection(obj, name, mode, value);
        Ok(())
    }
}

impl<T: ToJson> Field for BTreeMap<String, T> {
    fn put(
        &self,
        obj: &mut Map<String, Value>,
        name: &'static str,
        mode: Mode,
        ctx: Ctx,
    ) -> Result<(), ProtobufError> {
        let value = if self.is_empty() {
            None
        } else {
            let mut map = Map::new();
            for (key, item) in self {
                map.insert(key.clone(), item.to_json(ctx)?);
            }
            Some(Value::Object(map))
        };
        put_collection(obj, name, mode, value);
        Ok(())
    }
}

/// Merges an inlined struct's fields into its parent; the parent's own fields win, as in Go.
fn merge_inline(obj: &mut Map<String, Value>, inner: Value) -> Result<(), ProtobufError> {
    match inner {
        Value::Object(inner) => {
            for (key, value) in inner {
                obj.entry(key).or_insert(value);
            }
            Ok(())
        }
        Value::Null => Ok(()),
        other => Err(ProtobufError::Malformed(format!(
            "inlined field is not an object: {other}"
        ))),
    }
}

impl<T: ToJson> ToJson for Box<T> {
    fn to_json(&self, ctx: Ctx) -> Result<Value, ProtobufError> {
        (**self).to_json(ctx)
    }

    fn is_empty(&self) -> bool {
        (**self).is_empty()
    }

    fn absent(omitempty: bool, ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        T::absent(omitempty, ctx)
    }
}

/// Scalars print as themselves and are `omitempty`-empty when zero.
macro_rules! scalar {
    ($($ty:ty => |$v:ident| $json:expr, $zero:expr;)*) => {$(
        impl ToJson for $ty {
            fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
                let $v = self;
                $json
            }

            fn is_empty(&self) -> bool {
                *self == $zero
            }

            fn absent(omitempty: bool, ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
                if omitempty {
                    Ok(None)
                } else {
                    let zero: $ty = $zero;
                    zero.to_json(ctx).map(Some)
                }
            }
        }
    )*};
}

scalar! {
    String => |v| Ok(Value::String(v.clone())), String::new();
    bool => |v| Ok(Value::Bool(*v)), false;
    i32 => |v| Ok(Value::from(*v)), 0;
    i64 => |v| Ok(Value::from(*v)), 0;
    f64 => |v| float(*v), 0.0;
}

/// A Go `float64` as encoding/json prints it: integral values without a fraction.
fn float(v: f64) -> Result<Value, ProtobufError> {
    if !v.is_finite() {
        return Err(ProtobufError::Malformed(format!(
            "unsupported float value {v}"
        )));
    }
    // Go prints integral floats below 1e21 with no fractional part ("3", not "3.0"); keep them
    // integers so the JSON reads the same. Only exactly representable integers get this form.
    if v.fract() == 0.0 && v.abs() < 9.007_199_254_740_992e15 {
        return Ok(Value::from(v as i64));
    }
    serde_json::Number::from_f64(v)
        .map(Value::Number)
        .ok_or_else(|| ProtobufError::Malformed(format!("unsupported float value {v}")))
}

/// `[]byte`: base64 (standard alphabet, padded), as Go's encoding/json writes it.
impl ToJson for Vec<u8> {
    fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
        use base64::Engine as _;
        Ok(Value::String(
            base64::engine::general_purpose::STANDARD.encode(self),
        ))
    }

    fn is_empty(&self) -> bool {
        <[u8]>::is_empty(self)
    }

    fn absent(omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        // A nil slice: dropped by omitempty, otherwise null.
        Ok((!omitempty).then_some(Value::Null))
    }
}

/// Implements [`ToJson`] for generated messages from their field table: one line per field,
/// `rust_field: "jsonName" Mode`. Destructuring without `..` makes a field missing from the
/// table a compile error.
macro_rules! messages {
    ($(
        $($seg:ident)::+ {
            $( $field:ident : $json:literal $mode:ident ),* $(,)?
        }
    )*) => {
        $(
            impl $crate::protobuf::json::ToJson for $($seg)::+ {
                fn to_json(
                    &self,
                    ctx: $crate::protobuf::json::Ctx,
                ) -> Result<::serde_json::Value, $crate::protobuf::ProtobufError> {
                    let $($seg)::+ { $( $field ),* } = self;
                    #[allow(unused_mut)]
                    let mut obj = ::serde_json::Map::new();
                    $(
                        $crate::protobuf::json::Field::put(
                            $field,
                            &mut obj,
                            $json,
                            $crate::protobuf::json::Mode::$mode,
                            ctx,
                        )?;
                    )*
                    let _ = ctx;
                    Ok(::serde_json::Value::Object(obj))
                }

                fn absent(
                    _omitempty: bool,
                    ctx: $crate::protobuf::json::Ctx,
                ) -> Result<Option<::serde_json::Value>, $crate::protobuf::ProtobufError> {
                    // A value-typed struct is printed even under omitempty.
                    <Self as ::core::default::Default>::default().to_json(ctx).map(Some)
                }
            }

            impl $crate::protobuf::json::FromJson for $($seg)::+ {
                fn from_json(
                    v: &::serde_json::Value,
                    enc: $crate::protobuf::json::Enc,
                ) -> Result<Self, $crate::protobuf::ProtobufError> {
                    let ::serde_json::Value::Object(obj) = v else {
                        return Err($crate::protobuf::json::mistyped("an object", v));
                    };
                    let mut seen = 0;
                    let message = Self::from_parent(obj, enc, &mut seen)?;
                    $crate::protobuf::json::check_unknown(obj, seen, enc, Self::knows)?;
                    Ok(message)
                }

                fn zero() -> Option<Self> {
                    // A value-typed struct is always written, empty or not, and its own
                    // value fields in it (Go marshals the zero struct's fields too).
                    Self::from_parent(
                        &::serde_json::Map::new(),
                        $crate::protobuf::json::Enc::default(),
                        &mut 0,
                    )
                    .ok()
                }

                fn from_parent(
                    #[allow(unused_variables)] obj: &::serde_json::Map<String, ::serde_json::Value>,
                    #[allow(unused_variables)] enc: $crate::protobuf::json::Enc,
                    #[allow(unused_variables)] seen: &mut usize,
                ) -> Result<Self, $crate::protobuf::ProtobufError> {
                    Ok($($seg)::+ {
                        $(
                            $field: $crate::protobuf::json::FieldFromJson::take(
                                obj,
                                $json,
                                $crate::protobuf::json::Mode::$mode,
                                enc,
                                seen,
                            )?,
                        )*
                    })
                }

                fn knows(#[allow(unused_variables)] key: &str) -> bool {
                    let message = <Self as ::core::default::Default>::default();
                    let $($seg)::+ { $( $field ),* } = &message;
                    false $(
                        || $crate::protobuf::json::FieldFromJson::reads(
                            $field,
                            key,
                            $json,
                            $crate::protobuf::json::Mode::$mode,
                        )
                    )*
                }
            }

            #[cfg(test)]
            impl $crate::protobuf::testing::Populate for $($seg)::+ {
                fn populate(g: &mut $crate::protobuf::testing::Gen) -> Self {
                    g.enter(::std::any::type_name::<Self>());
                    let value = $($seg)::+ {
                        $( $field: $crate::protobuf::testing::Populate::populate(g) ),*
                    };
                    g.leave();
                    value
                }
            }
        )*

        /// Every generated message with its `(prost field, JSON name)` pairs.
        #[cfg(test)]
        pub(crate) const FIELD_NAMES: &[(&str, &[(&str, &str)])] = &[
            $( (
                stringify!($($seg)::+),
                &[ $( (stringify!($field), $json) ),* ],
            ) ),*
        ];
    };
}

pub(crate) use messages;
