//! A Kubernetes-compatible API server (k8s.io/apiserver and kube-aggregator's parts of
//! kube-apiserver): HTTPS, request decoding and negotiation, authentication, authorization,
//! admission, the generic registry over [`storage::Store`], the watch cache, discovery, OpenAPI,
//! the aggregator and the cluster proxy.
//!
//! Pure algorithms (patches, selectors, printers, the protobuf codec) live in `apimachinery`,
//! the built-in kinds' strategies and what a served resource is ([`resources::ResourceDef`]) in
//! `kube-registry`, CRDs' structural schemas in `apiextensions` (apiextensions-apiserver), the
//! OpenAPI document builders in `openapi-builder`, the kube-controller-manager controllers in
//! `kube-controller-manager` (started by [`controller::kcm`], which implements their
//! `ApiServer` interface over this crate); this crate must not depend on the controllers crate,
//! and the lower crates must never depend on it.
//!
//! Inside, modules depend one way (README's Layout section; `scripts/module-cycles` checks
//! it): [`launch`] and [`controller`] on top; the handler chain ([`handler`], whose
//! [`handler::Chain`] holds the security stack, the audit log, the aggregator and the proxy);
//! beside it [`aggregator`], [`aggregated`] and [`proxy`]; then [`auth`] and [`audit`], the
//! [`registry`], [`admission`], and [`state`] with the [`watch_cache`]; the machinery modules
//! at the bottom. A lower module never imports a higher one: what it needs from above is
//! passed in (RBAC's escalation check as a [`state::WriteCheck`], the proxy's route to this
//! server's chain as a [`proxy::ControlPlane`]).

pub mod admission;
pub mod aggregated;
pub mod aggregator;
pub mod audit;
pub mod audit_policy;
pub mod auth;
pub mod body;
pub mod client;
pub mod controller;
pub mod conversion;
pub mod crd;
pub mod discovery;
pub mod error;
pub mod fields;
pub mod handler;
pub mod ids;
pub use karmada_api::json_splice;
pub mod karmada_tables;
pub mod launch;
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
pub mod version;
pub mod watch;
pub mod watch_cache;

/// Decodes a Kubernetes protobuf request body into JSON.
pub(crate) fn protobuf_body(bytes: &[u8]) -> Result<serde_json::Value, error::ApiError> {
    apimachinery::protobuf::decode(bytes).map_err(|e| match e {
        apimachinery::protobuf::ProtobufError::Malformed(m) => {
            error::ApiError::bad_request(format!("malformed protobuf body: {m}"))
        }
        other => error::ApiError::unsupported_media_type_message(format!(
            "{other}; send the object as application/json instead"
        )),
    })
}
