//! Fields that carry raw serialized bytes: `runtime.RawExtension`, `metav1.FieldsV1` and the
//! CRD schema's `JSON`. Their JSON form is the value the bytes hold; encoding stores the JSON
//! text of the value, as their `UnmarshalJSON` keeps the bytes it was given.

use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::Json;
use k8s_pb::apimachinery::pkg::apis::meta::v1::FieldsV1;
use k8s_pb::apimachinery::pkg::runtime::RawExtension;
use serde_json::Value;

use super::json::{Ctx, Enc, FromJson, ToJson, unencodable};
use super::{MAGIC, ProtobufError};

/// The CBOR self-describe tag that Kubernetes' CBOR serializer puts first.
const CBOR_SELF_DESCRIBED: &[u8] = &[0xd9, 0xd9, 0xf7];

impl ToJson for RawExtension {
    fn to_json(&self, ctx: Ctx) -> Result<Value, ProtobufError> {
        let Some(raw) = &self.raw else {
            return Ok(Value::Null);
        };
        // Mirrors RawExtension.MarshalJSON / guessContentType in apimachinery's runtime: JSON is
        // embedded as is; an embedded protobuf object is decoded like a request body.
        match raw.first() {
            None => Ok(Value::Null),
            Some(_) if raw.starts_with(MAGIC) => super::decode_nested(raw, ctx.nested()?),
            Some(_) if raw.starts_with(CBOR_SELF_DESCRIBED) => Err(ProtobufError::Malformed(
                "CBOR in a RawExtension is not supported".into(),
            )),
            Some(
                b'\t'
                | b'\r'
                | b'\n'
                | b' '
                | b'{'
                | b'['
                | b'n'
                | b't'
                | b'f'
                | b'"'
                | b'-'
                | b'0'..=b'9',
            ) => parse(raw, "RawExtension"),
            Some(_) => Err(ProtobufError::Malformed(
                "RawExtension holds neither JSON nor protobuf".into(),
            )),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Null))
    }
}

impl ToJson for FieldsV1 {
    fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
        match self.raw.as_deref() {
            None | Some([]) => Ok(Value::Null),
            // FieldsV1.getContentType in meta/v1/helpers.go: a null or map-like first byte is
            // CBOR, which only a CBOR-speaking client writes.
            Some([first, ..]) if *first == 0xf6 || (0xa0..=0xbf).contains(first) => Err(
                ProtobufError::Malformed("CBOR in FieldsV1 is not supported".into()),
            ),
            Some(raw) => parse(raw, "FieldsV1"),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Null))
    }
}

impl ToJson for Json {
    fn to_json(&self, _ctx: Ctx) -> Result<Value, ProtobufError> {
        // JSON.MarshalJSON in apiextensions v1 marshal.go: empty bytes are null.
        match self.raw.as_deref() {
            None | Some([]) => Ok(Value::Null),
            Some(raw) => parse(raw, "JSON"),
        }
    }

    fn absent(_omitempty: bool, _ctx: Ctx) -> Result<Option<Value>, ProtobufError> {
        Ok(Some(Value::Null))
    }
}

/// The JSON text of a value, as raw bytes.
fn text(v: &Value) -> Result<Vec<u8>, ProtobufError> {
    serde_json::to_vec(v).map_err(unencodable)
}

macro_rules! raw_from_json {
    ($($ty:ty),*) => {$(
        impl FromJson for $ty {
            fn from_json(v: &Value, _enc: Enc) -> Result<Self, ProtobufError> {
                Ok(Self { raw: Some(text(v)?) })
            }

            fn zero() -> Option<Self> {
                // A value-typed field with no bytes: an empty message.
                Some(Self { raw: None })
            }
        }
    )*};
}

raw_from_json!(RawExtension, FieldsV1, Json);

fn parse(raw: &[u8], what: &str) -> Result<Value, ProtobufError> {
    serde_json::from_slice(raw)
        .map_err(|e| ProtobufError::Malformed(format!("{what} does not hold valid JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn raw_extension_json() {
        let cases: &[(Option<&[u8]>, Option<Value>)] = &[
            (None, Some(Value::Null)),
            (Some(b""), Some(Value::Null)),
            (Some(br#"{"a":[1,"x"]}"#), Some(json!({"a": [1, "x"]}))),
            (Some(b" \n[true]"), Some(json!([true]))),
            (Some(b"12"), Some(json!(12))),
            (Some(b"{"), None),
            (Some(b"\x00\x01"), None),
            (Some(&[0xd9, 0xd9, 0xf7, 0xa0]), None),
        ];
        for (raw, want) in cases {
            let v = RawExtension {
                raw: raw.map(<[u8]>::to_vec),
            };
            match (v.to_json(Ctx::default()), want) {
                (Ok(got), Some(want)) => assert_eq!(&got, want, "{raw:?}"),
                (Err(ProtobufError::Malformed(_)), None) => {}
                (got, want) => panic!("{raw:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn fields_v1_and_json() {
        let fields = FieldsV1 {
            raw: Some(br#"{"f:data":{".":{},"f:k":{}}}"#.to_vec()),
        };
        assert_eq!(
            fields.to_json(Ctx::default()).unwrap(),
            json!({"f:data": {".": {}, "f:k": {}}})
        );
        let cbor = FieldsV1 {
            raw: Some(vec![0xa1, 0x61, 0x61, 0x01]),
        };
        assert!(cbor.to_json(Ctx::default()).is_err());
        assert_eq!(
            Json { raw: None }.to_json(Ctx::default()).unwrap(),
            Value::Null
        );
        assert_eq!(
            Json {
                raw: Some(b"\"x\"".to_vec())
            }
            .to_json(Ctx::default())
            .unwrap(),
            json!("x")
        );
        assert!(
            Json {
                raw: Some(b"x".to_vec())
            }
            .to_json(Ctx::default())
            .is_err()
        );
    }
}
