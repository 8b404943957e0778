//! Request bodies: size limit, JSON / YAML / protobuf decoding, and duplicate-field
//! detection for `fieldValidation`.

use std::fmt;

use bytes::Bytes;
use http_body_util::BodyExt;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::negotiation::parse_media_types;

/// Media types a create/update body may use.
pub const BODY_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Reads a request body up to `limit` bytes (413 beyond).
pub async fn read_limited(body: axum::body::Body, limit: usize) -> Result<Bytes, ApiError> {
    let limited = http_body_util::Limited::new(body, limit);
    match limited.collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large(format!(
                    "the request body is larger than the limit of {limit} bytes"
                )))
            } else {
                Err(ApiError::bad_request(format!(
                    "failed to read the request body: {e}"
                )))
            }
        }
    }
}

/// The essence of a Content-Type header (`application/json` when absent, as kube does).
pub fn content_type(header: Option<&str>) -> String {
    header
        .and_then(|h| parse_media_types(h).into_iter().next())
        .map(|m| m.essence)
        .unwrap_or_else(|| "application/json".to_string())
}

/// A decoded body and the duplicate fields found in it.
pub struct Decoded {
    /// The object.
    pub value: Value,
    /// JSON paths of duplicated fields (for strict field validation).
    pub duplicates: Vec<String>,
}

/// Decodes a create/update body by media type; `what` names the kind for messages
/// (`ConfigMap in version "v1"`).
pub fn decode(media: &str, bytes: &[u8], kind: &str, version: &str) -> Result<Decoded, ApiError> {
    let cannot = |detail: String| {
        ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: {detail}"
        ))
    };
    match media {
        "application/json" | "" => decode_json(bytes).map_err(cannot),
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let value = decode_yaml(bytes).map_err(cannot)?;
            Ok(Decoded {
                value,
                duplicates: vec![],
            })
        }
        "application/vnd.kubernetes.protobuf" => {
            let value = crate::protobuf_body(bytes)?;
            Ok(Decoded {
                value,
                duplicates: vec![],
            })
        }
        _ => Err(ApiError::unsupported_media_type(BODY_TYPES)),
    }
}

/// The check the unstructured decoding of a kind served from a CustomResourceDefinition
/// makes, which defaults nothing (typed kinds take `kind` and `apiVersion` from the URL): a
/// body without `kind` is kube's MissingKindErr, one without `apiVersion` fails the CR
/// conversion to the served version; both are 400s worded by the create/update handlers'
/// transformDecodeError. `json` is the body as JSON (what the JSON decoder saw), `raw` the
/// request body (summarized in the message).
pub fn require_type_meta(
    raw: &[u8],
    json: &[u8],
    value: &Value,
    kind: &str,
    api_version: &str,
) -> Result<(), ApiError> {
    let field = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or("");
    let body_kind = field("kind");
    if body_kind.is_empty() {
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): Object 'Kind' is missing in '{}' ({})",
            String::from_utf8_lossy(json),
            summarize(raw, 30)
        )));
    }
    if field("apiVersion").is_empty() {
        return Err(ApiError::bad_request(format!(
            "{body_kind} in version \"\" cannot be handled as a {kind}: /, Kind={body_kind} is unstructured and is not suitable for converting to \"{api_version}\""
        )));
    }
    Ok(())
}

/// kube's summarizeData: the first `max` bytes of a JSON object, or their hex otherwise.
fn summarize(data: &[u8], max: usize) -> String {
    let cut = &data[..data.len().min(max)];
    let more = if data.len() > max { " ..." } else { "" };
    match data.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(cut)),
        Some(_) => {
            let hex: String = cut.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// Parses JSON, recording duplicate object keys (the last one wins, as Go's decoder does).
pub fn decode_json(bytes: &[u8]) -> Result<Decoded, String> {
    let mut duplicates = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = DupSeed {
        path: String::new(),
        dups: &mut duplicates,
    }
    .deserialize(&mut de)
    .map_err(|e| format!("json: {e}"))?;
    de.end().map_err(|e| format!("json: {e}"))?;
    Ok(Decoded { value, duplicates })
}

/// Parses a single YAML document into JSON.
pub fn decode_yaml(bytes: &[u8]) -> Result<Value, String> {
    let yaml: serde_yaml::Value =
        serde_yaml::from_slice(bytes).map_err(|e| format!("yaml: {e}"))?;
    serde_json::to_value(yaml).map_err(|e| format!("yaml: {e}"))
}

struct DupSeed<'a> {
    path: String,
    dups: &'a mut Vec<String>,
}

impl<'de> DeserializeSeed<'de> for DupSeed<'_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(DupVisitor {
            path: self.path,
            dups: self.dups,
        })
    }
}

struct DupVisitor<'a> {
    path: String,
    dups: &'a mut Vec<String>,
}

impl<'de> Visitor<'de> for DupVisitor<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        let mut i = 0;
        loop {
            let path = format!("{}[{i}]", self.path);
            match seq.next_element_seed(DupSeed {
                path,
                dups: &mut *self.dups,
            })? {
                Some(v) => out.push(v),
                None => break,
            }
            i += 1;
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let path = if self.path.is_empty() {
                k.clone()
            } else {
                format!("{}.{k}", self.path)
            };
            let v = map.next_value_seed(DupSeed {
                path: path.clone(),
                dups: &mut *self.dups,
            })?;
            if out.insert(k, v).is_some() {
                self.dups.push(path);
            }
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_are_found() {
        let d = decode_json(br#"{"a":1,"b":{"c":1,"c":2},"a":3}"#).unwrap();
        assert_eq!(d.value["a"], 3);
        assert_eq!(d.value["b"]["c"], 2);
        assert_eq!(d.duplicates, vec!["b.c".to_string(), "a".to_string()]);
        assert!(decode_json(b"{").is_err());
        assert!(decode_json(b"{} x").is_err());
    }

    #[test]
    fn yaml_bodies() {
        let v = decode_yaml(b"apiVersion: v1\nkind: ConfigMap\ndata:\n  a: \"1\"\n").unwrap();
        assert_eq!(v["data"]["a"], "1");
        assert!(decode_yaml(b"a: [").is_err());
    }

    #[test]
    fn unstructured_bodies_need_kind_and_api_version() {
        let check = |raw: &str| {
            let v: Value = serde_json::from_str(raw).unwrap();
            require_type_meta(
                raw.as_bytes(),
                raw.as_bytes(),
                &v,
                "Widget",
                "example.com/v1",
            )
        };
        assert!(check(r#"{"apiVersion":"example.com/v1","kind":"Widget"}"#).is_ok());
        let no_kind = r#"{"apiVersion":"example.com/v1","metadata":{"name":"w"}}"#;
        let e = check(no_kind).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            format!(
                "the object provided is unrecognized (must be of type Widget): Object 'Kind' is missing in '{no_kind}' ({{\"apiVersion\":\"example.com/v1\" ...)"
            )
        );
        let e = check(r#"{"kind":"Widget","apiVersion":""}"#).unwrap_err();
        assert_eq!(
            e.message,
            "Widget in version \"\" cannot be handled as a Widget: /, Kind=Widget is unstructured and is not suitable for converting to \"example.com/v1\""
        );
    }

    #[test]
    fn summaries_are_kubes() {
        assert_eq!(summarize(b"", 30), "<empty>");
        assert_eq!(summarize(b"{\"a\":1}", 30), "{\"a\":1}");
        assert_eq!(summarize(b"kind: X", 4), "6b696e64 ...");
        // A cut inside a multi-byte character does not panic.
        assert_eq!(summarize("{\"é\"}".as_bytes(), 3), "{\"\u{fffd} ...");
    }
}
