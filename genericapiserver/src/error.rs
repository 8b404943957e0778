//! The API server's one error type, and the one place it becomes a metav1.Status.
//!
//! Handlers return `Result<_, ApiError>`; [`ApiError`]'s `IntoResponse` writes kube-apiserver's
//! Status body (k8s.io/apimachinery/pkg/api/errors) with the matching HTTP code.

use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::{Value, json};

use crate::resources::ResourceDef;

/// One field problem of an Invalid (422) error (defined with the validation that produces it).
pub use apimachinery::status::Cause;

/// Details of a Status (metav1.StatusDetails).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Details {
    /// The object's name.
    pub name: Option<String>,
    /// The API group.
    pub group: Option<String>,
    /// The resource (plural) or, for Invalid, the Kind.
    pub kind: Option<String>,
    /// The object's uid.
    pub uid: Option<String>,
    /// Field causes.
    pub causes: Vec<Cause>,
    /// Seconds to wait before retrying.
    pub retry_after_seconds: Option<u32>,
}

/// A failed API request: an HTTP code, a Kubernetes reason and a message a person can act on.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// metav1.StatusReason, e.g. `NotFound`.
    pub reason: &'static str,
    /// Human-readable message in kube-apiserver's form.
    pub message: String,
    /// Optional details.
    pub details: Option<Box<Details>>,
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({}): {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

pub use kube_registry::resources::qualified_resource;

fn opt_group(group: &str) -> Option<String> {
    (!group.is_empty()).then(|| group.to_string())
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn with_details(mut self, details: Details) -> ApiError {
        self.details = Some(Box::new(details));
        self
    }

    /// An error whose code, reason and message come from elsewhere (a metav1.Status an
    /// admission webhook answered): a reason metav1 does not define is left empty.
    pub fn from_status(code: u16, reason: &str, message: impl Into<String>) -> ApiError {
        const REASONS: &[&str] = &[
            "Unauthorized",
            "Forbidden",
            "NotFound",
            "AlreadyExists",
            "Conflict",
            "Gone",
            "Invalid",
            "ServerTimeout",
            "StoreReadError",
            "Timeout",
            "TooManyRequests",
            "BadRequest",
            "MethodNotAllowed",
            "NotAcceptable",
            "RequestEntityTooLarge",
            "UnsupportedMediaType",
            "InternalError",
            "Expired",
            "ServiceUnavailable",
        ];
        let reason = REASONS
            .iter()
            .find(|r| **r == reason)
            .copied()
            .unwrap_or("");
        ApiError::new(code, reason, message)
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 401 Unauthorized.
    pub fn unauthorized() -> ApiError {
        ApiError::new(401, "Unauthorized", "Unauthorized")
    }

    /// 403 Forbidden with a ready message.
    pub fn forbidden_message(
        group: &str,
        resource: &str,
        name: &str,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError::new(403, "Forbidden", message).with_details(Details {
            name: (!name.is_empty()).then(|| name.to_string()),
            group: opt_group(group),
            kind: (!resource.is_empty()).then(|| resource.to_string()),
            ..Default::default()
        })
    }

    /// 404 NotFound for a named object.
    pub fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!(
                "{} \"{name}\" not found",
                qualified_resource(group, resource)
            ),
        )
        .with_details(Details {
            name: Some(name.to_string()),
            group: opt_group(group),
            kind: Some(resource.to_string()),
            ..Default::default()
        })
    }

    /// 404 for a path that serves nothing.
    pub fn path_not_found() -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    }

    /// 404 for a resource type the server does not serve.
    pub fn unknown_resource(group: &str, version: &str, resource: &str) -> ApiError {
        let gv = if group.is_empty() {
            version.to_string()
        } else {
            format!("{group}/{version}")
        };
        ApiError::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({resource} in {gv})"),
        )
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(verb: &str, kind: &str) -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!("{verb} is not supported on resources of kind \"{kind}\""),
        )
    }

    /// 405 for a method no route of the path serves: what go-restful answers through
    /// kube-apiserver's serviceErrorHandler (apierrors.NewGenericServerResponse, empty
    /// details), e.g. POST to an object's path or PUT to a collection.
    pub fn method_not_allowed_route() -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        )
        .with_details(Details::default())
    }

    /// 406 NotAcceptable.
    pub fn not_acceptable(accepted: &[&str]) -> ApiError {
        ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "only the following media types are accepted: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 406 NotAcceptable with its own message (a conversion the object does not allow).
    pub fn not_acceptable_message(message: impl Into<String>) -> ApiError {
        ApiError::new(406, "NotAcceptable", message)
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!(
                "{} \"{name}\" already exists",
                qualified_resource(group, resource)
            ),
        )
        .with_details(Details {
            name: Some(name.to_string()),
            group: opt_group(group),
            kind: Some(resource.to_string()),
            ..Default::default()
        })
    }

    /// 409 Conflict: the object changed since the caller read it.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified_resource(group, resource)
            ),
        )
        .with_details(Details {
            name: Some(name.to_string()),
            group: opt_group(group),
            kind: Some(resource.to_string()),
            ..Default::default()
        })
    }

    /// The standard optimistic-concurrency conflict.
    pub fn stale(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 409 Conflict with causes (server-side apply conflicts).
    pub fn conflict_with_causes(message: String, causes: Vec<Cause>) -> ApiError {
        ApiError::new(409, "Conflict", message).with_details(Details {
            causes,
            ..Default::default()
        })
    }

    /// 410 Expired: the requested resourceVersion is no longer available.
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(message: impl Into<String>) -> ApiError {
        ApiError::new(413, "RequestEntityTooLarge", message)
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(accepted: &[&str]) -> ApiError {
        ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                accepted.join(", ")
            ),
        )
    }

    /// 415 with a custom message.
    pub fn unsupported_media_type_message(message: impl Into<String>) -> ApiError {
        ApiError::new(415, "UnsupportedMediaType", message)
    }

    /// 422 Invalid with field causes; the message lists them as kube does.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let rendered: Vec<String> = causes
            .iter()
            .map(|c| {
                if c.field.is_empty() {
                    c.message.clone()
                } else {
                    format!("{}: {}", c.field, c.message)
                }
            })
            .collect();
        let list = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        ApiError::new(
            422,
            "Invalid",
            format!("{qualified_kind} \"{name}\" is invalid: {list}"),
        )
        .with_details(Details {
            name: Some(name.to_string()),
            group: opt_group(group),
            kind: Some(kind.to_string()),
            causes,
            ..Default::default()
        })
    }

    /// 422 Invalid for one field of a resource.
    pub fn invalid_field(
        def: &ResourceDef,
        name: &str,
        reason: &str,
        field: &str,
        message: impl Into<String>,
    ) -> ApiError {
        ApiError::invalid(
            &def.group,
            &def.kind,
            name,
            vec![Cause {
                reason: reason.to_string(),
                message: message.into(),
                field: field.to_string(),
            }],
        )
    }

    /// 422 with a plain message (no object), e.g. invalid list options.
    pub fn invalid_message(message: impl Into<String>) -> ApiError {
        ApiError::new(422, "Invalid", message)
    }

    /// 429 TooManyRequests.
    pub fn too_many_requests(message: impl Into<String>, retry_after: u32) -> ApiError {
        ApiError::new(429, "TooManyRequests", message).with_details(Details {
            retry_after_seconds: Some(retry_after),
            ..Default::default()
        })
    }

    /// 429 TooManyRequests with a cause (an eviction a disruption budget refuses); no
    /// `retryAfterSeconds` when `retry_after` is 0, as kube omits it.
    pub fn too_many_requests_because(
        message: impl Into<String>,
        cause: Cause,
        retry_after: u32,
    ) -> ApiError {
        ApiError::new(429, "TooManyRequests", message).with_details(Details {
            retry_after_seconds: (retry_after > 0).then_some(retry_after),
            causes: vec![cause],
            ..Default::default()
        })
    }

    /// 500 InternalError.
    pub fn internal(err: impl std::fmt::Display) -> ApiError {
        let msg = err.to_string();
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {msg}"),
        )
        .with_details(Details {
            causes: vec![Cause {
                reason: String::new(),
                message: msg,
                field: String::new(),
            }],
            ..Default::default()
        })
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(503, "ServiceUnavailable", message)
    }

    /// 503 ServiceUnavailable with `Retry-After` (client-go waits that long and retries).
    pub fn unavailable_retry(message: impl Into<String>, retry_after: u32) -> ApiError {
        ApiError::unavailable(message).with_details(Details {
            retry_after_seconds: Some(retry_after),
            ..Default::default()
        })
    }

    /// 501 NotImplemented.
    pub fn not_implemented(message: impl Into<String>) -> ApiError {
        ApiError::new(501, "NotImplemented", message)
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>, retry_after: Option<u32>) -> ApiError {
        ApiError::new(504, "Timeout", message).with_details(Details {
            retry_after_seconds: retry_after,
            ..Default::default()
        })
    }

    /// 504 for a resourceVersion newer than the store's (kube's ResourceVersionTooLarge).
    pub fn too_large_resource_version(requested: i64, current: i64) -> ApiError {
        let mut e = ApiError::timeout(
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
            Some(1),
        );
        if let Some(d) = e.details.as_mut() {
            d.causes.push(Cause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            });
        }
        e
    }

    /// The metav1.Status of this error, fields in Go's order.
    fn status_doc(&self) -> StatusDoc<'_> {
        StatusDoc {
            kind: "Status",
            api_version: "v1",
            metadata: EmptyMeta {},
            status: "Failure",
            message: &self.message,
            reason: self.reason,
            details: self.details.as_deref().map(|d| DetailsDoc {
                // StatusDetails' strings are omitempty.
                name: d.name.as_deref().filter(|v| !v.is_empty()),
                group: d.group.as_deref().filter(|v| !v.is_empty()),
                kind: d.kind.as_deref().filter(|v| !v.is_empty()),
                uid: d.uid.as_deref().filter(|v| !v.is_empty()),
                causes: d
                    .causes
                    .iter()
                    .map(|c| CauseDoc {
                        reason: &c.reason,
                        message: &c.message,
                        field: &c.field,
                    })
                    .collect(),
                retry_after_seconds: d.retry_after_seconds,
            }),
            code: self.code,
        }
    }

    /// The metav1.Status JSON of this error.
    pub fn status_json(&self) -> Value {
        serde_json::to_value(self.status_doc()).unwrap_or(Value::Null)
    }

    /// The metav1.Status JSON of this error as kube writes it (Go's field order).
    pub fn status_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(&self.status_doc()).unwrap_or_default()
    }
}

/// `metav1.Status`, serialized in the order of the Go struct's fields.
#[derive(serde::Serialize)]
struct StatusDoc<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    metadata: EmptyMeta,
    status: &'static str,
    message: &'a str,
    reason: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<DetailsDoc<'a>>,
    code: u16,
}

/// An empty `ListMeta` (`{}`).
#[derive(serde::Serialize)]
struct EmptyMeta {}

/// `metav1.StatusDetails`.
#[derive(serde::Serialize)]
struct DetailsDoc<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    group: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    causes: Vec<CauseDoc<'a>>,
    #[serde(rename = "retryAfterSeconds", skip_serializing_if = "Option::is_none")]
    retry_after_seconds: Option<u32>,
}

/// `metav1.StatusCause`.
#[derive(serde::Serialize)]
struct CauseDoc<'a> {
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    field: &'a str,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.status_bytes();
        self.response_with("application/json", body)
    }
}

impl ApiError {
    /// A response with this error's status code and `Retry-After`, whose body is its Status
    /// already serialized as `content_type`.
    pub fn response_with(&self, content_type: &str, body: Vec<u8>) -> Response {
        let code = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, body).into_response();
        if let Ok(v) = HeaderValue::from_str(content_type) {
            resp.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        if let Some(r) = self.details.as_ref().and_then(|d| d.retry_after_seconds)
            && (self.code == 429 || self.code >= 500)
            && let Ok(v) = HeaderValue::from_str(&r.to_string())
        {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        resp
    }
}

impl From<storage::Error> for ApiError {
    fn from(e: storage::Error) -> ApiError {
        match e {
            storage::Error::Compacted {
                requested,
                compacted,
            } => ApiError::expired(format!(
                "too old resource version: {requested} ({compacted})"
            )),
            storage::Error::FutureRevision { requested, current } => {
                ApiError::too_large_resource_version(requested, current)
            }
            storage::Error::TooLarge { size, limit } => ApiError::too_large(format!(
                "object of {size} bytes is larger than the storage limit of {limit} bytes"
            )),
            storage::Error::Unavailable(m) => {
                ApiError::unavailable(format!("storage unavailable: {m}"))
            }
            other => ApiError::internal(other),
        }
    }
}

/// The response body kube-apiserver gives for a successful delete of kinds that do not
/// return the deleted object.
pub fn success_status(group: &str, resource: &str, name: &str, uid: Option<&str>) -> Value {
    let mut details = json!({"name": name, "kind": resource});
    if !group.is_empty() {
        details["group"] = json!(group);
    }
    if let Some(uid) = uid {
        details["uid"] = json!(uid);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_message_and_details() {
        let e = ApiError::not_found("cluster.karmada.io", "clusters", "m1");
        assert_eq!(e.message, "clusters.cluster.karmada.io \"m1\" not found");
        let s = e.status_json();
        assert_eq!(s["details"]["kind"], "clusters");
        assert_eq!(s["details"]["group"], "cluster.karmada.io");
        assert_eq!(s["code"], 404);
    }

    #[test]
    fn invalid_lists_causes() {
        let one = ApiError::invalid(
            "",
            "ConfigMap",
            "x",
            vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value".into(),
                field: "metadata.name".into(),
            }],
        );
        assert_eq!(
            one.message,
            "ConfigMap \"x\" is invalid: metadata.name: Required value"
        );
        let two = ApiError::invalid(
            "cluster.karmada.io",
            "Cluster",
            "m1",
            vec![
                Cause {
                    reason: "FieldValueRequired".into(),
                    message: "Required value".into(),
                    field: "spec.apiEndpoint".into(),
                },
                Cause {
                    reason: "FieldValueInvalid".into(),
                    message: "Invalid value: \"A\"".into(),
                    field: "metadata.name".into(),
                },
            ],
        );
        assert_eq!(
            two.message,
            "Cluster.cluster.karmada.io \"m1\" is invalid: [spec.apiEndpoint: Required value, metadata.name: Invalid value: \"A\"]"
        );
    }

    #[test]
    fn unserved_methods_answer_as_go_restful() {
        let s = ApiError::method_not_allowed_route().status_json();
        assert_eq!(s["code"], 405);
        assert_eq!(s["reason"], "MethodNotAllowed");
        assert_eq!(
            s["message"],
            "the server does not allow this method on the requested resource"
        );
        assert_eq!(s["details"], json!({}));
        // StatusDetails strings are omitempty: an Invalid of an unnamed object has no name.
        let e = ApiError::invalid("meta.k8s.io", "CreateOptions", "", vec![]);
        assert_eq!(
            e.status_json()["details"],
            json!({"group": "meta.k8s.io", "kind": "CreateOptions"})
        );
    }
}
