//! policy/v1 PodDisruptionBudget.

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE, ColumnDefinition, NAME, age, cells, col, get, int_at, name};
use crate::table::column::Row;
use crate::table::format::int_or_string;

pub(super) static PDB_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Min Available",
        "string",
        "Pods that must stay available, as a number or percentage.",
    ),
    col(
        "Max Unavailable",
        "string",
        "Pods that may be unavailable, as a number or percentage.",
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Pod disruptions currently allowed.",
    ),
    AGE,
];

/// `printPodDisruptionBudget`.
pub(super) fn pod_disruption_budget(obj: &Value, now: Timestamp) -> Row {
    let bound = |pointer: &str| get(obj, pointer).map_or_else(|| "N/A".to_string(), int_or_string);
    cells![
        name(obj),
        bound("/spec/minAvailable"),
        bound("/spec/maxUnavailable"),
        int_at(obj, "/status/disruptionsAllowed"),
        age(obj, now),
    ]
}
