//! core/v1 Event.

use jiff::Timestamp;
use serde_json::Value;

use super::{ColumnDefinition, cells, col, get, int_at, name, str_at, time_at, wide};
use crate::table::column::Row;
use crate::table::duration::since;

pub(super) static EVENT_COLUMNS: &[ColumnDefinition] = &[
    col(
        "Last Seen",
        "string",
        "Time since the event was last observed.",
    ),
    col("Type", "string", "Normal or Warning."),
    col(
        "Reason",
        "string",
        "Short machine-readable reason for the event.",
    ),
    col(
        "Object",
        "string",
        "The object the event is about, as kind/name.",
    ),
    wide(
        "Subobject",
        "string",
        "Field path of the part of the object the event is about.",
    ),
    wide(
        "Source",
        "string",
        "Component (and host) that reported the event.",
    ),
    col(
        "Message",
        "string",
        "Human-readable description of the event.",
    ),
    wide(
        "First Seen",
        "string",
        "Time since the event was first observed.",
    ),
    wide("Count", "string", "Number of times the event occurred."),
    ColumnDefinition::new(
        "Name",
        "string",
        "name",
        crate::table::column::NAME_DESCRIPTION,
        1,
    ),
];

/// `formatEventSource`: component and host, falling back to the reporting fields.
fn event_source(obj: &Value) -> String {
    let first_non_empty = |a: &'static str, b: &'static str| {
        let v = str_at(obj, a);
        if v.is_empty() { str_at(obj, b) } else { v }
    };
    let component = first_non_empty("/source/component", "/reportingComponent");
    let instance = first_non_empty("/source/host", "/reportingInstance");
    if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    }
}

/// events.k8s.io/v1 Events print like core ones: kube converts both to the same internal
/// Event first (`pkg/apis/events/v1` conversion), renaming these fields.
const EVENTS_V1_FIELDS: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// `printEvent` for an events.k8s.io/v1 Event.
pub(super) fn events_v1_event(obj: &Value, now: Timestamp) -> Row {
    let Some(fields) = obj.as_object() else {
        return event(obj, now);
    };
    let mut core = fields.clone();
    for (from, to) in EVENTS_V1_FIELDS {
        if let Some(value) = core.remove(from) {
            core.insert(to.to_string(), value);
        }
    }
    event(&Value::Object(core), now)
}

/// `printEvent`.
pub(super) fn event(obj: &Value, now: Timestamp) -> Row {
    let first_seen = match time_at(obj, "/firstTimestamp") {
        Some(ts) => since(Some(ts), now),
        None => since(time_at(obj, "/eventTime"), now),
    };
    let mut last_seen = match time_at(obj, "/lastTimestamp") {
        Some(ts) => since(Some(ts), now),
        None => first_seen.clone(),
    };
    let mut count = int_at(obj, "/count");
    if get(obj, "/series").is_some() {
        last_seen = since(time_at(obj, "/series/lastObservedTime"), now);
        count = int_at(obj, "/series/count");
    } else if count == 0 {
        // Events of the events.k8s.io API leave count unset for singletons.
        count = 1;
    }
    let kind = str_at(obj, "/involvedObject/kind").to_lowercase();
    let involved = str_at(obj, "/involvedObject/name");
    let target = if involved.is_empty() {
        kind
    } else {
        format!("{kind}/{involved}")
    };
    cells![
        last_seen,
        str_at(obj, "/type"),
        str_at(obj, "/reason"),
        target,
        str_at(obj, "/involvedObject/fieldPath"),
        event_source(obj),
        str_at(obj, "/message").trim(),
        first_seen,
        count,
        name(obj),
    ]
}
