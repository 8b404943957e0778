//! The pure machinery of the Kubernetes API, as k8s.io/apimachinery (and the printers and
//! JSONPath of kubectl/kube-apiserver) provide it in Go: JSON, merge and strategic merge
//! patches, server-side apply with managed fields and field paths, label and field selector
//! parsing, quantities, server-side table printing with JSONPath, the protobuf codec, the YAML
//! and pretty-JSON serializers, and the built-in kinds' OpenAPI schemas with the OpenAPI v2
//! protobuf (gnostic) encoding (k8s.io/kube-openapi's part).
//!
//! Everything here is a function over objects in their Kubernetes JSON form
//! (`serde_json::Value`) and is testable alone. It must not depend on an async runtime (tokio),
//! an HTTP stack (hyper, axum), storage or any other crate of this workspace; callers map its
//! errors to `metav1.Status` themselves.

/// Test support shared with the registry crate's property tests (not used at run time).
#[doc(hidden)]
pub mod arbitrary_text;
pub mod duration;
pub mod gofloat;
pub mod json_splice;
pub mod meta;
pub mod openapi;
pub mod patch;
pub mod protobuf;
pub mod quantity;
pub mod selectors;
pub mod serializer;
pub mod status;
pub mod strconv;
pub mod table;
pub mod version;
