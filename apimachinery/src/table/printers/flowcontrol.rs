//! flowcontrol.apiserver.k8s.io/v1 FlowSchema and PriorityLevelConfiguration.

use jiff::Timestamp;
use serde_json::Value;

use super::{
    AGE, ColumnDefinition, NAME, age, array_at, cells, col, condition_status, get, name, str_at,
};
use crate::table::column::Row;

pub(super) static FLOW_SCHEMA_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "PriorityLevel",
        "string",
        "The name of the priority level configuration being referenced.",
    ),
    col(
        "MatchingPrecedence",
        "string",
        "Used to choose among the FlowSchemas that match a given request; the numerically lowest wins.",
    ),
    col(
        "DistinguisherMethod",
        "string",
        "How the flow distinguisher of matching requests is computed.",
    ),
    AGE,
    col(
        "MissingPL",
        "string",
        "indicates if the referenced priority level exists",
    ),
];

/// `printFlowSchema`.
pub(super) fn flow_schema(obj: &Value, now: Timestamp) -> Row {
    let distinguisher = match str_at(obj, "/spec/distinguisherMethod/type") {
        "" => "<none>",
        t => t,
    };
    let missing = condition_status(array_at(obj, "/status/conditions"), "Dangling").unwrap_or("?");
    let precedence = get(obj, "/spec/matchingPrecedence")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    cells![
        name(obj),
        str_at(obj, "/spec/priorityLevelConfiguration/name"),
        precedence,
        distinguisher,
        age(obj, now),
        missing
    ]
}

pub(super) static PRIORITY_LEVEL_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Type",
        "string",
        "Whether this priority level is subject to limitation on request execution.",
    ),
    col(
        "NominalConcurrencyShares",
        "string",
        "The number of execution seats available at this priority level, as shares of the server's concurrency limit.",
    ),
    col(
        "Queues",
        "string",
        "The number of queues for this priority level.",
    ),
    col(
        "HandSize",
        "string",
        "The number of queues each flow is dealt when queued (shuffle sharding).",
    ),
    col(
        "QueueLengthLimit",
        "string",
        "The maximum number of requests allowed to be waiting in a given queue of this priority level.",
    ),
    AGE,
];

/// `printPriorityLevelConfiguration`: numbers of a limited level, `<none>` otherwise.
pub(super) fn priority_level(obj: &Value, now: Timestamp) -> Row {
    let number = |pointer: &str| {
        get(obj, "/spec/limited")
            .map(|_| get(obj, pointer).cloned().unwrap_or(Value::from(0)))
            .unwrap_or(Value::from("<none>"))
    };
    let queuing = |key: &str| {
        get(obj, "/spec/limited/limitResponse/queuing")
            .map(|q| q.get(key).cloned().unwrap_or(Value::from(0)))
            .unwrap_or(Value::from("<none>"))
    };
    cells![
        name(obj),
        str_at(obj, "/spec/type"),
        number("/spec/limited/nominalConcurrencyShares"),
        queuing("queues"),
        queuing("handSize"),
        queuing("queueLengthLimit"),
        age(obj, now)
    ]
}
