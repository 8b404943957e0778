//! `policy.karmada.io/v1alpha1`: propagation and override policies.

mod overrides;
mod propagation;

pub use overrides::*;
pub use propagation::*;

/// The group/version string.
pub const API_VERSION: &str = "policy.karmada.io/v1alpha1";
