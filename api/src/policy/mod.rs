//! The `policy.karmada.io` API group.

pub mod v1alpha1;

/// The API group name.
pub const GROUP: &str = "policy.karmada.io";
