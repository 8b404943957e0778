//! `policy.karmada.io/v1alpha1`: propagation and override policies.

mod overrides;
mod propagation;
mod taint;

pub use overrides::*;
pub use propagation::*;
pub use taint::*;

/// The group/version string.
pub const API_VERSION: &str = "policy.karmada.io/v1alpha1";
