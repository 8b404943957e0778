//! The generic API server library (k8s.io/apiserver, plus kube-aggregator's APIService
//! proxying): request decoding and negotiation, authentication, authorization, audit,
//! admission, the generic registry over [`storage::Store`], the watch cache, discovery,
//! OpenAPI, the aggregator and the generic proxy transport — everything the handler chain
//! calls, and nothing that assembles it.
//!
//! The `apiserver` crate above builds the handler chain from these parts, runs the in-process
//! controllers and launches the server; this crate must never depend on it (nor on the
//! controllers crate). Keeping the chain out of here is what lets an edit of a handler
//! recompile only the small crate on top. It knows no Karmada and no kube-controller-manager
//! either (neither it nor a crate below it may depend on the api crate, nor on
//! kube-controller-manager): built-in kinds come from `kube-registry`, and the server above
//! registers Karmada's kinds (their `ResourceDef`s, `Source::Registered`) and installs their
//! strategy through the same registration point ([`kinds`]) and serves Karmada's cluster proxy; the controllers read
//! the watch cache through apimachinery's object accessors.
//!
//! Pure algorithms (patches, selectors, printers, the protobuf codec) live in `apimachinery`,
//! the built-in kinds' strategies and what a served resource is ([`resources::ResourceDef`]) in
//! `kube-registry`, CRDs' structural schemas in `apiextensions` (apiextensions-apiserver), the
//! OpenAPI document builders in `openapi-builder`.
//!
//! Inside, modules depend one way (README's Layout section; `scripts/module-cycles` checks
//! it): [`aggregator`] on top, over the [`proxy`] transport; then [`auth`] and [`audit`], the
//! [`registry`], [`admission`], and [`state`] with the [`watch_cache`]; the machinery modules
//! (with [`kinds`]) at the bottom. A lower module never imports a higher one: what it needs
//! from above is passed in (RBAC's escalation check as a [`state::WriteCheck`], the dynamic
//! admission plugins, the installed kinds).

pub mod admission;
pub mod admission_plugin;
pub mod aggregator;
pub mod audit;
pub mod audit_policy;
pub mod auth;
pub mod body;
pub mod client;
pub mod conversion;
pub mod crd;
pub mod discovery;
pub mod error;
pub mod fields;
pub mod healthz;
pub mod ids;
pub mod kinds;
pub use apimachinery::json_splice;
mod cached_object;
pub mod lingering_close;
pub mod managed_fields;
pub mod metrics;
pub mod negotiation;
pub mod object;
pub mod openapi;
pub mod options;
pub mod output;
pub mod proxy;
pub mod registry;
pub mod request_info;
pub mod resources;
pub mod schema;
pub mod server;
pub mod state;
pub mod status_write;
pub mod storage_codec;
pub mod storage_layout;
pub mod version;
pub mod watch;
pub mod watch_cache;

/// Decodes a Kubernetes protobuf request body into JSON.
pub fn protobuf_body(bytes: &[u8]) -> Result<serde_json::Value, error::ApiError> {
    apimachinery::protobuf::decode(bytes).map_err(|e| match e {
        apimachinery::protobuf::ProtobufError::Malformed(m) => {
            error::ApiError::bad_request(format!("malformed protobuf body: {m}"))
        }
        other => error::ApiError::unsupported_media_type_message(format!(
            "{other}; send the object as application/json instead"
        )),
    })
}
