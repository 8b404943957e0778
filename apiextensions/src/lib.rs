//! The structural-schema machinery of CustomResourceDefinitions, as
//! k8s.io/apiextensions-apiserver's pkg/apiserver/schema (with its pruning and defaulting) and
//! pkg/apiserver/validation provide it in Go:
//!
//! - [`definition`]: what a CRD means to the server: the resources it serves (a
//!   [`ResourceDef`](kube_registry::resources::ResourceDef) per served version) and the status
//!   kube's naming and establishing controllers give it;
//! - [`schema`]: a CRD version's `openAPIV3Schema` compiled once (and cached per CRD version);
//! - [`pruning`], [`defaulting`], [`validation`], [`formats`]: that schema applied to custom
//!   resources (decoding prunes, writes default and validate);
//! - [`custom_resource`]: that schema applied to a served version's custom resources;
//! - [`openapi_v2`]: a version's schema as the OpenAPI v2 document publishes it;
//! - [`structural`]: the CRD's own schema rules (a v1 CRD needs structural schemas);
//! - [`v1beta1`]: CRDs in `apiextensions.k8s.io/v1beta1`, the version kube-apiserver stores
//!   them in, converted to and from the `v1` served.
//!
//! Everything here is a function over objects in their Kubernetes JSON form and is testable
//! alone; serving CRDs (the controller, the catalog, storage) stays in the apiserver crate.
//! It must not depend on an async runtime (tokio), an HTTP stack (hyper, axum), storage or the
//! apiserver crate (only apimachinery and the registry crate's resource types); it knows no
//! Karmada.

pub mod custom_resource;
pub mod defaulting;
pub mod definition;
pub mod field;
pub mod formats;
pub mod openapi_v2;
pub mod pruning;
pub mod schema;
pub mod structural;
pub mod v1beta1;
pub mod validation;

pub use field::{go_float, go_quote};
