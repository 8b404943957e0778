//! core/v1 Pod: the `READY`, `STATUS` and `RESTARTS` logic of `kubectl get pods`.

use std::borrow::Cow;
use std::collections::HashMap;

use jiff::Timestamp;
use serde_json::Value;

use super::{
    AGE, ColumnDefinition, NAME, age, array_at, bool_at, cells, col, condition_status, get, int_at,
    is_deleting, name, str_at, time_at, wide,
};
use crate::table::column::{Row, RowCondition};
use crate::table::duration::since;

pub(super) static POD_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Ready",
        "string",
        "Ready containers out of all containers of the pod.",
    ),
    col(
        "Status",
        "string",
        "Summary of the pod's phase and container states.",
    ),
    col(
        "Restarts",
        "string",
        "Container restarts, and how long ago the last one happened.",
    ),
    AGE,
    wide("IP", "string", "First IP address assigned to the pod."),
    wide("Node", "string", "Node the pod is bound to."),
    wide(
        "Nominated Node",
        "string",
        "Node the scheduler nominated for the pod after preemption.",
    ),
    wide(
        "Readiness Gates",
        "string",
        "Readiness gates that are true, out of all gates.",
    ),
];

fn completed(reason: &'static str, message: &'static str) -> RowCondition {
    RowCondition {
        type_: Cow::Borrowed("Completed"),
        status: Cow::Borrowed("True"),
        reason: Cow::Borrowed(reason),
        message: Cow::Borrowed(message),
    }
}

/// Tracks the restart count and the most recent restart of a set of containers.
#[derive(Default, Clone, Copy)]
struct Restarts {
    count: i64,
    last: Option<Timestamp>,
}

impl Restarts {
    fn add(&mut self, status: &Value) {
        self.count += int_at(status, "/restartCount");
        if get(status, "/lastState/terminated").is_some() {
            let finished = time_at(status, "/lastState/terminated/finishedAt");
            if finished > self.last {
                self.last = finished;
            }
        }
    }
}

/// `terminated` state without a reason: `Signal:N` or `ExitCode:N`.
fn exit_reason(terminated: &Value) -> String {
    let signal = int_at(terminated, "/signal");
    if signal != 0 {
        format!("Signal:{signal}")
    } else {
        format!("ExitCode:{}", int_at(terminated, "/exitCode"))
    }
}

/// `printPod`.
pub(super) fn pod(obj: &Value, now: Timestamp) -> Row {
    // The pod strategy creates pods Pending.
    let phase = match str_at(obj, "/status/phase") {
        "" => "Pending",
        phase => phase,
    };
    let mut reason = match str_at(obj, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let conditions = array_at(obj, "/status/conditions");
    if conditions
        .iter()
        .any(|c| str_at(c, "/type") == "PodScheduled" && str_at(c, "/reason") == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let row_conditions = match phase {
        "Succeeded" => vec![completed(
            "Succeeded",
            "The pod has completed successfully.",
        )],
        "Failed" => vec![completed("Failed", "The pod failed.")],
        _ => Vec::new(),
    };

    let init_specs = array_at(obj, "/spec/initContainers");
    // Init containers with restartPolicy Always are sidecars: they count as containers. Looked
    // up by name, the last spec of a name wins (upstream keeps them in a map).
    let is_sidecar_spec = |c: &Value| str_at(c, "/restartPolicy") == "Always";
    let sidecars: HashMap<&str, bool> = init_specs
        .iter()
        .map(|c| (str_at(c, "/name"), is_sidecar_spec(c)))
        .collect();
    let total = array_at(obj, "/spec/containers").len()
        + init_specs.iter().filter(|c| is_sidecar_spec(c)).count();

    let mut ready = 0;
    let mut all_restarts = Restarts::default();
    let mut sidecar_restarts = Restarts::default();
    let mut initializing = false;
    for (i, status) in array_at(obj, "/status/initContainerStatuses")
        .iter()
        .enumerate()
    {
        all_restarts.add(status);
        let is_sidecar = sidecars
            .get(str_at(status, "/name"))
            .copied()
            .unwrap_or(false);
        if is_sidecar {
            sidecar_restarts.add(status);
        }
        let terminated = get(status, "/state/terminated");
        let waiting_reason = str_at(status, "/state/waiting/reason");
        if terminated.is_some_and(|t| int_at(t, "/exitCode") == 0) {
            continue;
        }
        if is_sidecar && bool_at(status, "/started") == Some(true) {
            if bool_at(status, "/ready") == Some(true) {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(t) = terminated {
            match str_at(t, "/reason") {
                "" => format!("Init:{}", exit_reason(t)),
                r => format!("Init:{r}"),
            }
        } else if get(status, "/state/waiting").is_some()
            && !waiting_reason.is_empty()
            && waiting_reason != "PodInitializing"
        {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    let mut restarts = all_restarts;
    if !initializing || condition_status(conditions, "Initialized") == Some("True") {
        restarts = sidecar_restarts;
        let mut has_running = false;
        for status in array_at(obj, "/status/containerStatuses").iter().rev() {
            restarts.add(status);
            let waiting_reason = str_at(status, "/state/waiting/reason");
            let terminated = get(status, "/state/terminated");
            if get(status, "/state/waiting").is_some() && !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = terminated {
                reason = match str_at(t, "/reason") {
                    "" => exit_reason(t),
                    r => r.to_string(),
                };
            } else if bool_at(status, "/ready") == Some(true)
                && get(status, "/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        // A pod whose last container completed but another still runs is not "Completed".
        if reason == "Completed" && has_running {
            let pod_ready = conditions
                .iter()
                .any(|c| str_at(c, "/type") == "Ready" && str_at(c, "/status") == "True");
            reason = if pod_ready {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    if is_deleting(obj) && str_at(obj, "/status/reason") == "NodeLost" {
        reason = "Unknown".to_string();
    } else if is_deleting(obj) && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match restarts.last {
        Some(last) if restarts.count != 0 => {
            format!("{} ({} ago)", restarts.count, since(Some(last), now))
        }
        _ => restarts.count.to_string(),
    };

    let pod_ip = array_at(obj, "/status/podIPs")
        .first()
        .map(|ip| str_at(ip, "/ip"))
        // The v1→internal conversion fills podIPs from podIP.
        .unwrap_or_else(|| str_at(obj, "/status/podIP"));
    let or_none = |s: &str| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s.to_string()
        }
    };

    let gates = array_at(obj, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                let type_ = str_at(g, "/conditionType");
                conditions
                    .iter()
                    .find(|c| str_at(c, "/type") == type_)
                    .is_some_and(|c| str_at(c, "/status") == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };

    let mut row = cells![
        name(obj),
        format!("{ready}/{total}"),
        reason,
        restarts_text,
        age(obj, now),
        or_none(pod_ip),
        or_none(str_at(obj, "/spec/nodeName")),
        or_none(str_at(obj, "/status/nominatedNodeName")),
        readiness_gates,
    ];
    row.conditions = row_conditions;
    row
}
