//! The `config.karmada.io` API group: resource interpreter customizations and webhooks.

pub mod v1alpha1;

/// The API group name.
pub const GROUP: &str = "config.karmada.io";
