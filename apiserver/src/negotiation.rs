//! Content negotiation: which response form the client asked for (kube's
//! `negotiation.NegotiateOutputMediaType` and the Table / PartialObjectMetadata variants).

use crate::error::ApiError;

/// The response form of a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// Plain JSON objects and lists.
    Json,
    /// `as=Table;g=meta.k8s.io;v=v1` (or v1beta1).
    Table,
    /// `as=PartialObjectMetadata` / `PartialObjectMetadataList`.
    Metadata,
}

/// One media range of an Accept header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediaRange {
    /// e.g. `application/json`.
    pub essence: String,
    /// Parameters, lower-cased keys.
    pub params: Vec<(String, String)>,
}

impl MediaRange {
    /// A parameter's value.
    pub fn param(&self, k: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses a media type list (Accept) or a single media type (Content-Type).
pub fn parse_media_types(header: &str) -> Vec<MediaRange> {
    header
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let essence = pieces.next()?.trim().to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let params = pieces
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    Some((
                        k.trim().to_ascii_lowercase(),
                        v.trim().trim_matches('"').to_string(),
                    ))
                })
                .collect();
            Some(MediaRange { essence, params })
        })
        .collect()
}

fn json_like(essence: &str) -> bool {
    matches!(
        essence,
        "application/json"
            | "*/*"
            | "application/*"
            | "application/yaml"
            | "application/vnd.kubernetes.protobuf"
    )
}

/// Picks the output for a resource request's Accept header. Protobuf and YAML requests are
/// answered with JSON, which every Kubernetes client accepts alongside.
pub fn negotiate(accept: Option<&str>) -> Result<Output, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Output::Json);
    };
    let ranges = parse_media_types(accept);
    for r in &ranges {
        match r.param("as") {
            Some("Table") => {
                if r.essence == "application/json"
                    && r.param("g") == Some("meta.k8s.io")
                    && matches!(r.param("v"), Some("v1") | Some("v1beta1"))
                {
                    return Ok(Output::Table);
                }
            }
            Some("PartialObjectMetadata") | Some("PartialObjectMetadataList") => {
                if r.essence == "application/json" && r.param("g") == Some("meta.k8s.io") {
                    return Ok(Output::Metadata);
                }
            }
            Some(_) => {}
            None => {
                if json_like(&r.essence) {
                    return Ok(Output::Json);
                }
            }
        }
    }
    Err(ApiError::not_acceptable(&[
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
    ]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_accepts() {
        assert_eq!(
            negotiate(Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")).unwrap(),
            Output::Table
        );
        assert_eq!(
            negotiate(Some("application/json, */*")).unwrap(),
            Output::Json
        );
        assert_eq!(negotiate(None).unwrap(), Output::Json);
        assert_eq!(
            negotiate(Some("application/vnd.kubernetes.protobuf,application/json")).unwrap(),
            Output::Json
        );
        assert_eq!(
            negotiate(Some(
                "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
            ))
            .unwrap(),
            Output::Metadata
        );
        assert_eq!(negotiate(Some("text/html")).unwrap_err().code, 406);
        // A Table of an unknown version falls through to the plain JSON alternative.
        assert_eq!(
            negotiate(Some(
                "application/json;as=Table;v=v9;g=meta.k8s.io,application/json"
            ))
            .unwrap(),
            Output::Json
        );
    }
}
