//! Karmada's API for karmada-rs: the types of `policy.karmada.io`, `work.karmada.io` and
//! `cluster.karmada.io` as Karmada v1.18 defines them, plus everything an API server and the
//! controllers need to treat them as Karmada does — admission (CRD defaulting and validation,
//! Karmada's mutating and validating webhooks), a kind catalog, printer columns, well-known
//! labels and annotations, and the naming rules. The crate does no I/O.

pub mod cluster;
pub mod policy;
pub mod work;

pub mod admission;
pub mod catalog;
pub mod names;
pub mod printers;
pub mod prune;
pub mod quantity;
pub mod schema;
pub mod validation;
pub mod well_known;

mod field;
mod resource;

pub use admission::{AdmissionError, Operation, admit, admit_delete};
pub use catalog::{KindInfo, ServedBy, kind_info, kinds};
pub use field::{FieldError, FieldErrorKind, FieldPath, aggregate_message};
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
