//! coordination.k8s.io/v1 Lease.

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE, ColumnDefinition, NAME, age, cells, col, name, str_at};
use crate::table::column::Row;

pub(super) static LEASE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Holder",
        "string",
        "Identity of the current holder of the lease.",
    ),
    AGE,
];

/// `printLease`.
pub(super) fn lease(obj: &Value, now: Timestamp) -> Row {
    cells![
        name(obj),
        str_at(obj, "/spec/holderIdentity"),
        age(obj, now)
    ]
}
