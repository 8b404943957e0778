//! Go `encoding/json` rules applied to prost values.
//!
//! Kubernetes' protobuf messages are proto2, so prost gives every scalar and message field an
//! `Option`. What Go would print for a field depends on how the Go struct declares it, which the
//! generated field table (`fields.rs`) records as a [`Mode`] per field.

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
