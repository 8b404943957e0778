//! The controllers that run inside the API server process, beside the request path: API
//! Priority and Fairness's configuration (its bootstrap objects and their hand-over), the
//! RBAC bootstrap policy written at start and the authorizer's feed with ClusterRole
//! aggregation, the CRD controller (names accepted, Established, instance cleanup), and the
//! kube-controller-manager controllers with the service-account token controller. They sit
//! above the registry and reach the server only through it and the state; nothing below
//! imports them.

pub mod apf;
pub mod crd;
pub mod kcm;
pub mod rbac;
pub mod rbac_bootstrap;
pub mod tokens;
