//! `ExtraValue` (a user's extra attributes) and `Verbs` (discovery): Go `[]string` types that
//! protobuf wraps in a message with one repeated field.

use serde_json::Value;

use super::ProtobufError;
use super::json::{Ctx, Enc, FromJson, ToJson, list_from_json, mistyped};

macro_rules! extra_value {
    ($($ty:path),*) => {$(
        impl ToJson for $ty {
            fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
                // Decoded from protobuf, an empty list is a nil slice: null.
                if self.items.is_empty() {
                    return Ok(Value::Null);
                }
                Ok(Value::Array(
                    self.items.iter().cloned().map(Value::String).collect(),
                ))
            }

            fn is_empty(&self) -> bool {
                self.items.is_empty()
            }

            fn absent(omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
                Ok((!omitempty).then_some(Value::Null))
            }
        }

        impl FromJson for $ty {
            fn from_json(v: &Value, enc: Enc) -> Result<Self, ProtobufError> {
                let items = v.as_array().ok_or_else(|| mistyped("an array of strings", v))?;
                Ok(Self { items: list_from_json(items, enc)? })
            }

            fn zero() -> Option<Self> {
                Some(Self::default())
            }
        }
    )*};
}

extra_value!(
    k8s_pb::api::authentication::v1::ExtraValue,
    k8s_pb::api::authorization::v1::ExtraValue,
    k8s_pb::api::certificates::v1::ExtraValue,
    k8s_pb::apimachinery::pkg::apis::meta::v1::Verbs
);

#[cfg(test)]
mod tests {
    use k8s_pb::api::authentication::v1::ExtraValue;
    use serde_json::json;

    use super::*;

    #[test]
    fn extra_value_is_a_list() {
        let v = ExtraValue {
            items: vec!["a".into(), "b".into()],
        };
        assert_eq!(v.to_json(Ctx::default()).unwrap(), json!(["a", "b"]));
        assert_eq!(
            ExtraValue::default().to_json(Ctx::default()).unwrap(),
            Value::Null
        );
    }
}
