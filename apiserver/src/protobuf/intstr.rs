//! `intstr.IntOrString`: a JSON number or string chosen by its `type`.

use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

use super::ProtobufError;
use super::json::{Ctx, Enc, FromJson, ToJson, mistyped};

impl ToJson for IntOrString {
    fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
        // Follows IntOrString.MarshalJSON in apimachinery's util/intstr: type 0 is Int, 1 String.
        match self.r#type.unwrap_or(0) {
            0 => Ok(Value::from(self.int_val.unwrap_or(0))),
            1 => Ok(Value::String(self.str_val.clone().unwrap_or_default())),
            other => Err(ProtobufError::Malformed(format!(
                "impossible IntOrString type {other}"
            ))),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::from(0)))
    }
}

/// IntOrString.UnmarshalJSON: a JSON string is a String, anything else an Int. The generated
/// `Marshal` writes all three fields.
impl FromJson for IntOrString {
    fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
        match v {
            Value::String(s) => Ok(IntOrString {
                r#type: Some(1),
                int_val: Some(0),
                str_val: Some(s.clone()),
            }),
            other => {
                let n = other
                    .as_i64()
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| mistyped("a string or a 32-bit integer", other))?;
                Ok(IntOrString {
                    r#type: Some(0),
                    int_val: Some(n),
                    str_val: Some(String::new()),
                })
            }
        }
    }

    fn zero() -> Option<Self> {
        Some(IntOrString {
            r#type: Some(0),
            int_val: Some(0),
            str_val: Some(String::new()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(type, intVal, strVal, JSON or None for an error)`.
    type Case = (
        Option<i64>,
        Option<i32>,
        Option<&'static str>,
        Option<Value>,
    );

    #[test]
    fn int_or_string_json() {
        let cases: &[Case] = &[
            (None, None, None, Some(0.into())),
            (Some(0), Some(8080), Some("ignored"), Some(8080.into())),
            (None, Some(-3), None, Some((-3).into())),
            (Some(1), Some(5), Some("http"), Some("http".into())),
            (Some(1), None, None, Some("".into())),
            (Some(2), Some(1), None, None),
            (Some(-1), None, Some("x"), None),
        ];
        for (ty, int_val, str_val, want) in cases {
            let v = IntOrString {
                r#type: *ty,
                int_val: *int_val,
                str_val: str_val.map(str::to_owned),
            };
            match (v.to_json(Ctx::default()), want) {
                (Ok(got), Some(want)) => assert_eq!(&got, want, "{v:?}"),
                (Err(ProtobufError::Malformed(_)), None) => {}
                (got, want) => panic!("{v:?}: got {got:?}, want {want:?}"),
            }
        }
    }
}
