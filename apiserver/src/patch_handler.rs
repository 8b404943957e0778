//! PATCH requests: JSON patch, merge patch, strategic merge patch and server-side apply.

use axum::body::Body;
use axum::response::Response;

use crate::error::ApiError;
use crate::handler::Ctx;
use crate::registry::Subresource;

/// Serves a PATCH of the main resource or a subresource.
pub async fn patch(_ctx: &Ctx, _body: Body, _sub: Subresource) -> Result<Response, ApiError> {
    // TODO(lead): wire the patch module once it lands.
    Err(ApiError::unsupported_media_type(&[]))
}

/// Applies a patch body of the given media type to a value (used for subresources such as
/// scale that patch a derived object).
pub fn apply_to(
    _media: &str,
    _current: &serde_json::Value,
    _patch: &[u8],
    _group: &str,
    _version: &str,
    _kind: &str,
) -> Result<serde_json::Value, ApiError> {
    // TODO(lead): wire the patch module once it lands.
    Err(ApiError::unsupported_media_type(&[]))
}
