//! OpenAPI machinery that does not depend on what a server serves (k8s.io/kube-openapi's
//! part): the component schemas of the built-in kinds, and the OpenAPI v2 protobuf (gnostic)
//! encoding of a document.

pub mod builtin;
pub mod gnostic;
pub mod unknown_fields;
