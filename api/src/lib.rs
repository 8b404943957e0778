//! Karmada's API for karmada-rs: the types of `policy.karmada.io`, `work.karmada.io` and
//! `cluster.karmada.io` as Karmada v1.18 defines them, plus everything an API server and the
//! controllers need to treat them as Karmada does. The crate does no I/O.
//!
//! Must not depend on the server, storage or the controllers.
//!
//! - [`policy::v1alpha1`], [`work::v1alpha1`], [`work::v1alpha2`], [`cluster::v1alpha1`],
//!   [`config::v1alpha1`]: the
//!   types, which serialize like Karmada's Go types and implement `kube::Resource`.
//! - [`admit`] / [`admit_delete`]: CRD schema defaulting, pruning and validation plus Karmada's
//!   mutating and validating webhooks (or, for Cluster, its aggregated API server's strategy).
//! - [`catalog`]: discovery facts per kind (and the versions each serves); [`conversion`]:
//!   between a kind's served versions and its storage version; [`printers`]: table columns
//!   and rows; [`schema`]: the OpenAPI schemas; [`validation`]: name, label and Karmada rules.
//! - [`ineffective`]: fields accepted without effect, reported as API warnings.
//! - [`well_known`]: labels, annotations, finalizers, taints, conditions; [`names`]: generated
//!   names (execution spaces, bindings, Works); [`prune`]: fields stripped before dispatch.

pub mod apps;
pub mod cluster;
pub mod config;
pub mod networking;
pub mod policy;
pub mod remedy;
pub mod work;

pub mod admission;
pub mod catalog;
pub mod conversion;
pub mod ineffective;
pub mod names;
pub mod printers;
pub mod prune;
pub mod quantity;
pub mod schema;
pub mod validation;
pub mod well_known;

mod field;
mod resource;

pub use admission::{
    AdmissionError, Operation, admission_reads_peers, admit, admit_delete, admit_with_peers,
    status_admission_reads_only_status,
};
pub use catalog::{KindInfo, ServedBy, kind_info, kinds};
pub use field::{FieldError, FieldErrorKind, FieldPath, aggregate_message, go_quote};
pub use printers::{PrinterColumn, cluster_row, printer_columns};

/// A string that is not one of an enum's values.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {type_name} value {value:?}")]
pub struct UnknownValue {
    /// The enum type.
    pub type_name: &'static str,
    /// The rejected string.
    pub value: String,
}
