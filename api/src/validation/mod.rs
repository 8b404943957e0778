//! Validation rules, as pure functions returning field errors: Kubernetes' name and label
//! rules, and Karmada's checks of policies and clusters.

pub mod cluster;
pub mod names;
pub mod policy;
pub mod quota;
pub(crate) mod url;

pub use names::{
    is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value,
    validate_annotations, validate_cluster_name, validate_label_name, validate_labels,
};
