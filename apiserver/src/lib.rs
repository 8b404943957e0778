//! The API server as it runs (kube-apiserver's `pkg/controlplane` and `cmd/kube-apiserver`):
//! the handler chain ([`handler`], whose [`handler::Chain`] holds the security stack, the
//! audit log, the aggregator and the cluster proxy ([`proxy`])), the in-process controllers
//! ([`controller`]: RBAC bootstrap, CRDs, service-account tokens, and the
//! kube-controller-manager ones through [`controller::kcm`]), aggregated mode ([`aggregated`])
//! and the launch of it all ([`launch`]).
//!
//! Everything the chain calls — authentication, authorization, audit, admission, the
//! registry, the watch cache, discovery, OpenAPI, the aggregator and the proxy transport — is
//! the `genericapiserver` crate below, re-exported here under the same module names, so
//! `apiserver::auth` and `crate::auth` mean what they always did. Only this small crate is
//! compiled again after an edit of a handler. It must not depend on the controllers crate,
//! and no lower crate may depend on it.
//!
//! Karmada lives here, above the generic library: [`karmada`] is Karmada's served resources
//! and the strategy of its kinds (printer columns, schemas, conversion, its admission
//! webhooks), registered with the catalog and installed into `genericapiserver::kinds` when a
//! server is assembled, and [`proxy`] is
//! karmada-aggregated-apiserver's cluster proxy over the library's proxy transport.
//!
//! Inside, modules depend one way (README's Layout section; `scripts/module-cycles` checks
//! it): [`launch`] on top, then [`controller`] and [`aggregated`], then [`handler`], then
//! [`proxy`] and [`karmada`].

pub mod aggregated;
pub mod controller;
pub mod handler;
pub mod karmada;
pub mod launch;
pub mod migrate;
pub mod proxy;

// Tests of the proxy and the aggregator that start the whole server (their fixtures are
// shared with aggregated mode's tests), so they live above `launch`.
#[cfg(test)]
mod aggregator_tests;
#[cfg(test)]
mod proxy_tests;

pub use genericapiserver::{
    admission, aggregator, audit, audit_policy, auth, body, client, conversion, crd, discovery,
    error, fields, healthz, ids, json_splice, kinds, managed_fields, metrics, negotiation, object,
    openapi, options, output, protobuf_body, registry, request_info, resources, schema, server,
    state, status_write, storage_codec, storage_layout, version, watch, watch_cache,
};
