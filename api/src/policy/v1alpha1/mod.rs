//! `policy.karmada.io/v1alpha1`: propagation and override policies, cluster taint policies and
//! federated resource quotas.

mod overrides;
mod propagation;
mod quota;
mod taint;

pub use overrides::*;
pub use propagation::*;
pub use quota::*;
pub use taint::*;

/// The group/version string.
pub const API_VERSION: &str = "policy.karmada.io/v1alpha1";
