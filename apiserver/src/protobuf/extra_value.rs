//! `ExtraValue` (a user's extra attributes): a Go `[]string` that protobuf wraps in a message.

use serde_json::Value;

use super::ProtobufError;
use super::json::{Ctx, ToJson};

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
    )*};
}

extra_value!(
    k8s_pb::api::authentication::v1::ExtraValue,
    k8s_pb::api::authorization::v1::ExtraValue,
    k8s_pb::api::certificates::v1::ExtraValue
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
