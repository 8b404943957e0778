//! The `work.karmada.io` API group.

pub mod conversion;
pub mod v1alpha1;
pub mod v1alpha2;

/// The API group name.
pub const GROUP: &str = "work.karmada.io";
