//! The `cluster.karmada.io` API group (served by Karmada's aggregated API server).

pub mod v1alpha1;

/// The API group name.
pub const GROUP: &str = "cluster.karmada.io";
