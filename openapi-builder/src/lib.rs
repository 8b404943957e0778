//! The OpenAPI documents of the served resources, as kube-apiserver builds them
//! (k8s.io/apiserver's pkg/endpoints/openapi with kube-openapi's builder3 and builder, and
//! apiextensions-apiserver's CRD builder for custom resources):
//!
//! - [`document`]: one group-version's OpenAPI v3 document (paths, operations and component
//!   schemas) from its [`ResourceDef`](kube_registry::resources::ResourceDef)s;
//! - [`v2`]: the `/openapi/v2` (Swagger 2.0) document assembled from the same group-version
//!   documents, and the merge of aggregated servers' documents into it.
//!
//! Serving the documents (caching, ETags, content negotiation) is the apiserver crate's. This
//! crate must not depend on an async runtime (tokio), an HTTP stack (hyper, axum), storage or
//! the apiserver crate (only apimachinery, apiextensions and the registry crate); it knows no
//! Karmada: the schemas of registered kinds are passed in.

pub mod document;
pub mod v2;
