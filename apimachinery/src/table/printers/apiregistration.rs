//! apiregistration.k8s.io/v1 APIService (kube-aggregator's `REST.ConvertToTable`).

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE, ColumnDefinition, NAME, age, array_at, cells, col, get, name, str_at};
use crate::table::column::Row;

pub(super) static API_SERVICE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Service",
        "string",
        "Service that serves the API, or Local when served in-process.",
    ),
    col(
        "Available",
        "string",
        "Whether the API is reachable, with the reason when it is not.",
    ),
    AGE,
];

/// kube-aggregator's APIService row.
pub(super) fn api_service(obj: &Value, now: Timestamp) -> Row {
    let service = match get(obj, "/spec/service") {
        Some(svc) => format!("{}/{}", str_at(svc, "/namespace"), str_at(svc, "/name")),
        None => "Local".to_string(),
    };
    let available = array_at(obj, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Available")
        .map_or_else(
            || "Unknown".to_string(),
            |c| {
                let status = str_at(c, "/status");
                let reason = str_at(c, "/reason");
                if status == "True" || reason.is_empty() {
                    status.to_string()
                } else {
                    format!("{status} ({reason})")
                }
            },
        );
    cells![name(obj), service, available, age(obj, now)]
}
