//! Content negotiation: the media type and form of a response, decided as kube-apiserver's
//! `negotiation.NegotiateOutputMediaType` and `NegotiateOutputMediaTypeStream` decide them
//! (apiserver `pkg/endpoints/handlers/negotiation`), with the endpoint restrictions of
//! `RequestScope.AllowsMediaTypeTransform` (resources), `DefaultEndpointRestrictions` (errors
//! and legacy discovery) and `DiscoveryEndpointRestrictions` (aggregated discovery).
//!
//! Every endpoint serves JSON, YAML and protobuf, in that order (`CodecFactory`'s serializers).
//! Custom resources (and kinds without a protobuf message) are served as JSON or YAML only,
//! like a CRD's `StandardSerializers`; protobuf still carries their errors and their
//! `PartialObjectMetadata` forms. Tables are JSON or YAML.

mod accept;

use crate::error::ApiError;
use apimachinery::table::TableVersion;

pub use accept::{Clause, parse as parse_accept};

/// A serializer of the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MediaType {
    /// `application/json`.
    Json,
    /// `application/yaml`.
    Yaml,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

impl MediaType {
    /// The serializers in kube's order: the first one answers a request without Accept.
    pub const ALL: [MediaType; 3] = [MediaType::Json, MediaType::Yaml, MediaType::Protobuf];

    /// The media type.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaType::Json => "application/json",
            MediaType::Yaml => "application/yaml",
            MediaType::Protobuf => apimachinery::protobuf::CONTENT_TYPE,
        }
    }

    fn subtype(self) -> &'static str {
        match self {
            MediaType::Json => "json",
            MediaType::Yaml => "yaml",
            MediaType::Protobuf => "vnd.kubernetes.protobuf",
        }
    }

    /// Whether watches can be served in it (YAML has no stream framer).
    pub fn streams(self) -> bool {
        self != MediaType::Yaml
    }

    /// The Content-Type of a watch in it: JSON as is, protobuf with `;stream=watch`
    /// (`serveWatchHandler`).
    pub fn watch_content_type(self) -> &'static str {
        match self {
            MediaType::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
            other => other.as_str(),
        }
    }
}

/// A conversion asked with the `as`, `g` and `v` parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Convert {
    /// `g`.
    pub group: String,
    /// `v`.
    pub version: String,
    /// `as`.
    pub kind: String,
}

impl Convert {
    /// The `meta.k8s.io` version this conversion names, if it names one.
    fn meta_version(&self) -> Option<TableVersion> {
        if self.group != "meta.k8s.io" {
            return None;
        }
        TableVersion::from_version(&self.version)
    }

    /// The aggregated discovery version this conversion names (`IsAggregatedDiscoveryGVK`).
    pub fn discovery_version(&self) -> Option<&'static str> {
        if self.group != "apidiscovery.k8s.io" || self.kind != "APIGroupDiscoveryList" {
            return None;
        }
        match self.version.as_str() {
            "v2" => Some("v2"),
            "v2beta1" => Some("v2beta1"),
            _ => None,
        }
    }
}

/// The form of a resource response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The objects themselves.
    Object,
    /// A `meta.k8s.io` Table.
    Table(TableVersion),
    /// `PartialObjectMetadata` (objects only).
    PartialObjectMetadata(TableVersion),
    /// `PartialObjectMetadataList` (lists only).
    PartialObjectMetadataList(TableVersion),
}

/// What an endpoint can serve (kube's `EndpointRestrictions`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// A resource (`RequestScope`).
    Resource {
        /// Whether the kind itself can be served as protobuf (false for custom resources and
        /// kinds without a protobuf message, as a CRD's `StandardSerializers`).
        protobuf: bool,
        /// Whether Tables can be served (false for watch-list requests,
        /// `watchListEndpointRestrictions`).
        table: bool,
    },
    /// Errors and documents without conversions (`DefaultEndpointRestrictions`).
    Default,
    /// `/api` and `/apis` choosing aggregated discovery (`DiscoveryEndpointRestrictions`).
    Discovery,
}

impl Endpoint {
    fn allows_transform(self, media: MediaType, convert: Option<&Convert>) -> bool {
        match (self, convert) {
            (Endpoint::Resource { protobuf, .. }, None) => protobuf || media != MediaType::Protobuf,
            (Endpoint::Resource { table, .. }, Some(c)) => {
                if c.meta_version().is_none() {
                    return false;
                }
                match c.kind.as_str() {
                    "Table" => table && media != MediaType::Protobuf,
                    "PartialObjectMetadata" | "PartialObjectMetadataList" => true,
                    _ => false,
                }
            }
            (Endpoint::Default, convert) => convert.is_none(),
            (Endpoint::Discovery, convert) => {
                convert.and_then(Convert::discovery_version).is_some()
            }
        }
    }

    fn allows_server_version(self, version: &str) -> bool {
        // Only resources have a MetaGroupVersion (meta.k8s.io/v1).
        matches!(self, Endpoint::Resource { .. }) && version == "v1"
    }
}

/// The options of the media type chosen from an Accept header (`MediaTypeOptions`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// The serializer.
    pub media: MediaType,
    /// `pretty=1`.
    pub pretty: bool,
    /// `as`/`g`/`v`, when any of them was given.
    pub convert: Option<Convert>,
}

/// `acceptMediaTypeOptions`: the options of one clause for one serializer, if allowed.
fn accept_options(clause: &Clause<'_>, media: MediaType, endpoint: Endpoint) -> Option<Accepted> {
    let mut accepted = Accepted {
        media,
        pretty: false,
        convert: None,
    };
    for (key, value) in &clause.params {
        match *key {
            "as" => accepted.convert.get_or_insert_with(Default::default).kind = value.to_string(),
            "g" => accepted.convert.get_or_insert_with(Default::default).group = value.to_string(),
            "v" => {
                accepted
                    .convert
                    .get_or_insert_with(Default::default)
                    .version = value.to_string()
            }
            "stream" if !value.is_empty() && (!media.streams() || *value != "watch") => {
                return None;
            }
            "sv" if !value.is_empty() && !endpoint.allows_server_version(value) => return None,
            "pretty" => accepted.pretty = *value == "1",
            _ => {}
        }
    }
    endpoint
        .allows_transform(media, accepted.convert.as_ref())
        .then_some(accepted)
}

/// `NegotiateMediaTypeOptions`: the first clause, best first, that a serializer accepts. No
/// (or an empty) Accept header gets JSON.
pub fn negotiate_media(accept: Option<&str>, endpoint: Endpoint) -> Option<Accepted> {
    let header = accept.unwrap_or("");
    if header.is_empty() {
        return Some(Accepted {
            media: MediaType::Json,
            pretty: false,
            convert: None,
        });
    }
    for clause in parse_accept(header) {
        for media in MediaType::ALL {
            let matches = (clause.ty == "application"
                && (clause.sub == media.subtype() || clause.sub == "*"))
                || (clause.ty == "*" && clause.sub == "*");
            if matches && let Some(accepted) = accept_options(&clause, media, endpoint) {
                return Some(accepted);
            }
        }
    }
    None
}

/// The 406 of a failed negotiation (`errNotAcceptable`), listing every serializer.
pub fn not_acceptable() -> ApiError {
    ApiError::not_acceptable(&MediaType::ALL.map(MediaType::as_str))
}

/// The 406 of a failed watch negotiation, listing the stream media types.
pub fn not_acceptable_stream() -> ApiError {
    ApiError::not_acceptable(&[
        "application/json;stream=watch",
        "application/vnd.kubernetes.protobuf;stream=watch",
    ])
}

/// Whether the request asks for indented JSON without saying so in Accept (`isPrettyPrint`):
/// `?pretty=` (a Go boolean), or a curl, Wget or browser User-Agent.
pub fn pretty_requested(query: Option<&str>, user_agent: Option<&str>) -> bool {
    if let Some(raw) = query.filter(|q| q.contains("pretty")) {
        let value = url_query_get(raw, "pretty");
        if !value.is_empty() {
            return matches!(value.as_str(), "1" | "t" | "T" | "TRUE" | "true" | "True");
        }
    }
    user_agent.is_some_and(|ua| {
        ua.starts_with("curl") || ua.starts_with("Wget") || ua.starts_with("Mozilla/5.0")
    })
}

/// The first value of a query parameter, decoded (Go's `url.Values.Get`).
fn url_query_get(raw: &str, key: &str) -> String {
    serde_urlencoded::from_str::<Vec<(String, String)>>(raw)
        .ok()
        .and_then(|pairs| pairs.into_iter().find(|(k, _)| k == key))
        .map(|(_, v)| v)
        .unwrap_or_default()
}

/// A negotiated response form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Negotiated {
    /// The serializer.
    pub media: MediaType,
    /// Indented JSON (`PrettySerializer`; JSON only).
    pub pretty: bool,
    /// The form of the objects.
    pub target: Target,
}

impl Negotiated {
    /// Plain JSON.
    pub const JSON: Negotiated = Negotiated {
        media: MediaType::Json,
        pretty: false,
        target: Target::Object,
    };

    fn from_accepted(accepted: Accepted, pretty: bool) -> Negotiated {
        let target = match &accepted.convert {
            None => Target::Object,
            Some(c) => match (c.kind.as_str(), c.meta_version()) {
                ("Table", Some(v)) => Target::Table(v),
                ("PartialObjectMetadata", Some(v)) => Target::PartialObjectMetadata(v),
                ("PartialObjectMetadataList", Some(v)) => Target::PartialObjectMetadataList(v),
                // Endpoint restrictions admit no other conversion.
                _ => Target::Object,
            },
        };
        Negotiated {
            media: accepted.media,
            pretty: (accepted.pretty || pretty) && accepted.media == MediaType::Json,
            target,
        }
    }
}

/// `NegotiateOutputMediaType` for a resource request; `pretty` is [`pretty_requested`].
pub fn negotiate(
    accept: Option<&str>,
    endpoint: Endpoint,
    pretty: bool,
) -> Result<Negotiated, ApiError> {
    negotiate_media(accept, endpoint)
        .map(|a| Negotiated::from_accepted(a, pretty))
        .ok_or_else(not_acceptable)
}

/// `NegotiateOutputMediaTypeStream`: the serializer of a watch (JSON or protobuf).
pub fn negotiate_stream(accept: Option<&str>, endpoint: Endpoint) -> Result<MediaType, ApiError> {
    negotiate_media(accept, endpoint)
        .map(|a| a.media)
        .filter(|m| m.streams())
        .ok_or_else(not_acceptable_stream)
}

/// Parsed media type (a Content-Type, or one range of an Accept header), lower-cased.
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

/// Parses a media type list or a single media type (Content-Type).
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

#[cfg(test)]
mod tests;
