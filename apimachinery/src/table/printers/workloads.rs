//! Workload controllers: apps/v1 Deployment, StatefulSet, DaemonSet, ReplicaSet, batch/v1
//! Job, CronJob and core v1 ReplicationController.

use jiff::Timestamp;
use serde_json::Value;

use super::{
    AGE, CONTAINERS, ColumnDefinition, IMAGES, NAME, age, array_at, bool_at, cells, col,
    condition_status, container_cells, get, int_at, is_deleting, name, opt_int_at, str_at, time_at,
    wide,
};
use crate::table::column::Row;
use crate::table::duration::{human_duration, since};
use crate::table::format::{format_label_selector, format_labels, label_selector_string};

const SELECTOR: ColumnDefinition = wide(
    "Selector",
    "string",
    "Label selector of the pods it manages.",
);

/// `spec.replicas`, which apps/v1 defaults to 1.
fn desired_replicas(obj: &Value) -> i64 {
    opt_int_at(obj, "/spec/replicas").unwrap_or(1)
}

fn template_containers(obj: &Value) -> (Value, Value) {
    container_cells(array_at(obj, "/spec/template/spec/containers"))
}

pub(super) static DEPLOYMENT_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Ready", "string", "Ready pods out of desired pods."),
    col(
        "Up-to-date",
        "string",
        "Pods running the latest pod template.",
    ),
    col("Available", "string", "Pods available to serve."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `printDeployment`.
pub(super) fn deployment(obj: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_containers(obj);
    let selector = label_selector_string(get(obj, "/spec/selector"))
        .unwrap_or_else(|_| "<invalid>".to_string());
    cells![
        name(obj),
        format!(
            "{}/{}",
            int_at(obj, "/status/readyReplicas"),
            desired_replicas(obj)
        ),
        int_at(obj, "/status/updatedReplicas"),
        int_at(obj, "/status/availableReplicas"),
        age(obj, now),
        containers,
        images,
        selector,
    ]
}

pub(super) static STATEFUL_SET_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Ready", "string", "Ready pods out of desired pods."),
    AGE,
    CONTAINERS,
    IMAGES,
];

/// `printStatefulSet`.
pub(super) fn stateful_set(obj: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_containers(obj);
    cells![
        name(obj),
        format!(
            "{}/{}",
            int_at(obj, "/status/readyReplicas"),
            desired_replicas(obj)
        ),
        age(obj, now),
        containers,
        images,
    ]
}

pub(super) static DAEMON_SET_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Desired",
        "integer",
        "Nodes that should run the daemon pod.",
    ),
    col(
        "Current",
        "integer",
        "Nodes running at least one daemon pod.",
    ),
    col("Ready", "integer", "Nodes whose daemon pod is ready."),
    col(
        "Up-to-date",
        "integer",
        "Nodes running the latest pod template.",
    ),
    col(
        "Available",
        "integer",
        "Nodes whose daemon pod is available.",
    ),
    col(
        "Node Selector",
        "string",
        "Node labels the daemon pods are restricted to.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `printDaemonSet`.
pub(super) fn daemon_set(obj: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_containers(obj);
    cells![
        name(obj),
        int_at(obj, "/status/desiredNumberScheduled"),
        int_at(obj, "/status/currentNumberScheduled"),
        int_at(obj, "/status/numberReady"),
        int_at(obj, "/status/updatedNumberScheduled"),
        int_at(obj, "/status/numberAvailable"),
        format_labels(get(obj, "/spec/template/spec/nodeSelector")),
        age(obj, now),
        containers,
        images,
        format_label_selector(get(obj, "/spec/selector")),
    ]
}

pub(super) static REPLICA_SET_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Desired", "integer", "Desired number of pods."),
    col("Current", "integer", "Pods created."),
    col("Ready", "integer", "Pods ready."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `printReplicaSet`.
pub(super) fn replica_set(obj: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_containers(obj);
    cells![
        name(obj),
        desired_replicas(obj),
        int_at(obj, "/status/replicas"),
        int_at(obj, "/status/readyReplicas"),
        age(obj, now),
        containers,
        images,
        format_label_selector(get(obj, "/spec/selector")),
    ]
}

pub(super) static JOB_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Status",
        "string",
        "Complete, Failed, Terminating, Suspended, FailureTarget or Running.",
    ),
    col(
        "Completions",
        "string",
        "Succeeded pods out of required completions.",
    ),
    col(
        "Duration",
        "string",
        "Time the job ran, or has been running.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `printJob`.
pub(super) fn job(obj: &Value, now: Timestamp) -> Row {
    let succeeded = int_at(obj, "/status/succeeded");
    let completions = match opt_int_at(obj, "/spec/completions") {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int_at(obj, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        time_at(obj, "/status/startTime"),
        time_at(obj, "/status/completionTime"),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.duration_since(start)),
    };
    let conditions = array_at(obj, "/status/conditions");
    let is = |type_: &str| condition_status(conditions, type_) == Some("True");
    let status = if is("Complete") {
        "Complete"
    } else if is("Failed") {
        "Failed"
    } else if is_deleting(obj) {
        "Terminating"
    } else if is("Suspended") {
        "Suspended"
    } else if is("FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (containers, images) = template_containers(obj);
    cells![
        name(obj),
        status,
        completions,
        duration,
        age(obj, now),
        containers,
        images,
        format_label_selector(get(obj, "/spec/selector")),
    ]
}

pub(super) static CRON_JOB_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Schedule", "string", "Cron schedule of the job."),
    col("Timezone", "string", "Time zone the schedule is read in."),
    col("Suspend", "boolean", "Whether new runs are suspended."),
    col("Active", "integer", "Jobs currently running."),
    col(
        "Last Schedule",
        "string",
        "Time since a job was last scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `printCronJob`.
pub(super) fn cron_job(obj: &Value, now: Timestamp) -> Row {
    let last_schedule = match time_at(obj, "/status/lastScheduleTime") {
        Some(ts) => since(Some(ts), now),
        None if get(obj, "/status/lastScheduleTime").is_some() => since(None, now),
        None => "<none>".to_string(),
    };
    let time_zone = get(obj, "/spec/timeZone")
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    // printBoolPtr; batch/v1 defaults suspend to false.
    let suspend = if bool_at(obj, "/spec/suspend") == Some(true) {
        "True"
    } else {
        "False"
    };
    let (containers, images) = container_cells(array_at(
        obj,
        "/spec/jobTemplate/spec/template/spec/containers",
    ));
    cells![
        name(obj),
        str_at(obj, "/spec/schedule"),
        time_zone,
        suspend,
        array_at(obj, "/status/active").len() as i64,
        last_schedule,
        age(obj, now),
        containers,
        images,
        format_label_selector(get(obj, "/spec/jobTemplate/spec/selector")),
    ]
}

pub(super) static REPLICATION_CONTROLLER_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Desired", "integer", "Number of desired pods."),
    col("Current", "integer", "Number of pods observed."),
    col("Ready", "integer", "Number of ready pods."),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
];

/// `printReplicationController`.
pub(super) fn replication_controller(obj: &Value, now: Timestamp) -> Row {
    let (containers, images) = template_containers(obj);
    cells![
        name(obj),
        desired_replicas(obj),
        int_at(obj, "/status/replicas"),
        int_at(obj, "/status/readyReplicas"),
        age(obj, now),
        containers,
        images,
        format_labels(get(obj, "/spec/selector")),
    ]
}
