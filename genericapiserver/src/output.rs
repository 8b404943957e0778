//! Response bodies in the negotiated media type, as kube's `WriteObjectNegotiated`,
//! `SerializeObject` and `ErrorNegotiated` (apiserver `endpoints/handlers/responsewriters`)
//! write them: JSON (indented when asked), YAML converted from the JSON, or protobuf encoded
//! with the kind's message; errors as a Status in whatever the Accept header allows.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::Value;

use crate::error::ApiError;
use crate::negotiation::{self, Endpoint, MediaType};
use apimachinery::protobuf::{Codec, ProtobufError};
use apimachinery::serializer::{pretty, yaml};

/// A document (a JSON value) in `media`.
pub fn encode_value(media: MediaType, pretty: bool, value: &Value) -> Result<Vec<u8>, ApiError> {
    match media {
        MediaType::Json => {
            let json = serde_json::to_vec(value).map_err(ApiError::internal)?;
            Ok(if pretty { pretty::indent(&json) } else { json })
        }
        MediaType::Yaml => Ok(yaml::to_yaml(value)),
        MediaType::Protobuf => encode_protobuf(value),
    }
}

/// A document given as compact JSON bytes (stored, or written piece by piece) in `media`.
pub fn encode_json(media: MediaType, pretty: bool, json: Vec<u8>) -> Result<Vec<u8>, ApiError> {
    match media {
        MediaType::Json if pretty => Ok(pretty::indent(&json)),
        MediaType::Json => Ok(json),
        MediaType::Yaml => yaml::from_json(&json).map_err(ApiError::internal),
        MediaType::Protobuf => {
            let value: Value = serde_json::from_slice(&json).map_err(ApiError::internal)?;
            encode_protobuf(&value)
        }
    }
}

/// An object as a protobuf body, with the message of its `apiVersion` and `kind`.
fn encode_protobuf(value: &Value) -> Result<Vec<u8>, ApiError> {
    let api_version = value
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
    // Legacy discovery documents have no apiVersion (`stripVersionEncoder`): their messages
    // are meta/v1's, and the envelope keeps the empty apiVersion.
    let message_version = if api_version.is_empty() {
        "v1"
    } else {
        api_version
    };
    // Negotiation offers protobuf only for kinds with a message; anything else is a bug here.
    let codec = Codec::for_kind(message_version, kind).ok_or_else(|| {
        ApiError::internal(format!("{kind} in {api_version} has no protobuf encoding"))
    })?;
    let message = codec.message(value).map_err(protobuf_error)?;
    Ok(apimachinery::protobuf::envelope(
        api_version,
        kind,
        &[&message],
    ))
}

/// An object that could not be encoded: a server error, as `SerializeObject` reports it.
pub fn protobuf_error(e: ProtobufError) -> ApiError {
    tracing::warn!(error = %e, "protobuf encoding failed");
    ApiError::internal(e)
}

/// `meta.AsPartialObjectMetadata`: the object's metadata under `meta.k8s.io`'s kind.
pub fn partial_object_metadata(obj: &Value, version: apimachinery::table::TableVersion) -> Value {
    serde_json::json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": version.api_version(),
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| serde_json::json!({})),
    })
}

/// A response with a body of `content_type`.
pub fn respond(status: StatusCode, content_type: &str, body: Vec<u8>) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp
}

/// How a request's errors are written (`ErrorNegotiated`): what its Accept header allows, and
/// whether it asks for indented JSON.
#[derive(Clone, Debug, Default)]
pub struct ErrorForm {
    accept: Option<String>,
    pretty: bool,
}

impl ErrorForm {
    /// The error form of a request.
    pub fn of(headers: &HeaderMap, query: Option<&str>) -> ErrorForm {
        let text = |h: header::HeaderName| headers.get(h).and_then(|v| v.to_str().ok());
        ErrorForm {
            accept: text(header::ACCEPT).map(str::to_owned),
            pretty: negotiation::pretty_requested(query, text(header::USER_AGENT)),
        }
    }

    /// The error's Status in the media type the Accept header allows without conversions;
    /// indented JSON when it allows none (`WriteRawJSON`).
    pub fn render(&self, e: &ApiError) -> Response {
        let Some(accepted) =
            negotiation::negotiate_media(self.accept.as_deref(), Endpoint::Default)
        else {
            return e.response_with("application/json", pretty::indent(&e.status_bytes()));
        };
        let media = accepted.media;
        let body = match media {
            MediaType::Json if accepted.pretty || self.pretty => {
                Ok(pretty::indent(&e.status_bytes()))
            }
            MediaType::Json => Ok(e.status_bytes()),
            other => encode_value(other, false, &e.status_json()),
        };
        match body {
            Ok(body) => e.response_with(media.as_str(), body),
            // A Status always encodes; should it not, JSON still carries the error.
            Err(_) => e.response_with("application/json", e.status_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderMap;

    use super::*;

    async fn body(resp: Response) -> (StatusCode, String, Vec<u8>) {
        let status = resp.status();
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, ct, bytes.to_vec())
    }

    fn form(accept: Option<&str>, user_agent: Option<&str>) -> ErrorForm {
        let mut h = HeaderMap::new();
        if let Some(a) = accept {
            h.insert(header::ACCEPT, HeaderValue::from_str(a).unwrap());
        }
        if let Some(ua) = user_agent {
            h.insert(header::USER_AGENT, HeaderValue::from_str(ua).unwrap());
        }
        ErrorForm::of(&h, None)
    }

    #[tokio::test]
    async fn errors_follow_the_accept_header() {
        let e = ApiError::not_found("", "configmaps", "x");
        let (status, ct, json) = body(form(None, None).render(&e)).await;
        assert_eq!((status.as_u16(), ct.as_str()), (404, "application/json"));
        assert_eq!(
            String::from_utf8(json).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
        );

        let (_, ct, pb) =
            body(form(Some("application/vnd.kubernetes.protobuf"), None).render(&e)).await;
        assert_eq!(ct, "application/vnd.kubernetes.protobuf");
        let decoded = apimachinery::protobuf::decode_response(&pb).unwrap();
        assert_eq!(decoded, e.status_json());

        let (_, ct, yaml) = body(form(Some("application/yaml"), None).render(&e)).await;
        assert_eq!(ct, "application/yaml");
        assert!(
            String::from_utf8(yaml)
                .unwrap()
                .starts_with("apiVersion: v1\ncode: 404\n")
        );

        // Nothing acceptable, or a conversion only: kube writes the Status as indented JSON.
        for accept in ["text/html", "application/json;as=Table;v=v1;g=meta.k8s.io"] {
            let (status, ct, json) = body(form(Some(accept), None).render(&e)).await;
            assert_eq!((status.as_u16(), ct.as_str()), (404, "application/json"));
            let text = String::from_utf8(json).unwrap();
            assert!(
                text.starts_with("{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n"),
                "{text}"
            );
        }
        // curl gets indented JSON.
        let (_, _, json) = body(form(Some("*/*"), Some("curl/8.5.0")).render(&e)).await;
        assert!(json.starts_with(b"{\n  \"kind\""));
    }
}
