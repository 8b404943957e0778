//! autoscaling/v2 HorizontalPodAutoscaler.

use std::borrow::Cow;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{
    AGE, ColumnDefinition, NAME, age, array_at, cells, col, get, int_at, name, opt_int_at, str_at,
};
use crate::table::column::Row;
use crate::table::quantity::quantity_ptr_string;

pub(super) static HPA_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Reference", "string", "The scaled workload, as Kind/name."),
    col(
        "Targets",
        "string",
        "Current and target values of the scaling metrics.",
    ),
    col("MinPods", "string", "Lower bound of the replica count."),
    col("MaxPods", "string", "Upper bound of the replica count."),
    col("Replicas", "string", "Replica count last observed."),
    AGE,
];

/// The metric autoscaling/v2 defaulting adds to an HPA without metrics: 80% average CPU.
fn default_metrics() -> Vec<Value> {
    vec![json!({
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}
    })]
}

/// The metric specs and statuses in autoscaling/v2 form. autoscaling/v1 objects carry only a
/// CPU target, which kube converts to a v2 Resource metric before printing.
fn metrics(obj: &Value) -> (Cow<'_, [Value]>, Cow<'_, [Value]>) {
    let specs = array_at(obj, "/spec/metrics");
    let statuses = array_at(obj, "/status/currentMetrics");
    if !specs.is_empty() {
        return (Cow::Borrowed(specs), Cow::Borrowed(statuses));
    }
    let Some(target) = opt_int_at(obj, "/spec/targetCPUUtilizationPercentage") else {
        return (Cow::Owned(default_metrics()), Cow::Borrowed(statuses));
    };
    let spec = json!({
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}}
    });
    let status = match opt_int_at(obj, "/status/currentCPUUtilizationPercentage") {
        Some(current) => vec![json!({
            "type": "Resource",
            "resource": {"name": "cpu", "current": {"averageUtilization": current}}
        })],
        None => Vec::new(),
    };
    (Cow::Owned(vec![spec]), Cow::Owned(status))
}

/// Current/target of an Object or External metric (`formatHPAMetrics`).
fn value_metric(source: Option<&Value>, status: Option<&Value>) -> String {
    let target = |key: &str| source.and_then(|s| get(s, &format!("/target/{key}")));
    let current = |key: &str| status.and_then(|s| get(s, &format!("/current/{key}")));
    if let Some(average) = target("averageValue") {
        let now = match (status, current("averageValue")) {
            (Some(_), Some(v)) => quantity_ptr_string(Some(v)),
            _ => "<unknown>".to_string(),
        };
        format!("{now}/{} (avg)", quantity_ptr_string(Some(average)))
    } else {
        let now = match status {
            Some(_) => quantity_ptr_string(current("value")),
            None => "<unknown>".to_string(),
        };
        format!("{now}/{}", quantity_ptr_string(target("value")))
    }
}

/// Current/target of a Resource or ContainerResource metric (`formatHPAMetrics`).
fn resource_metric(source: Option<&Value>, status: Option<&Value>) -> String {
    let resource = source.map_or("", |s| str_at(s, "/name"));
    let target = |key: &str| source.and_then(|s| get(s, &format!("/target/{key}")));
    let current = |key: &str| status.and_then(|s| get(s, &format!("/current/{key}")));
    if let Some(average) = target("averageValue") {
        let now = match status {
            Some(_) => quantity_ptr_string(current("averageValue")),
            None => "<unknown>".to_string(),
        };
        format!("{resource}: {now}/{}", quantity_ptr_string(Some(average)))
    } else {
        let percent = |v: Option<&Value>| v.and_then(Value::as_i64).map(|p| format!("{p}%"));
        let now = percent(current("averageUtilization")).unwrap_or_else(|| "<unknown>".into());
        let goal = percent(target("averageUtilization")).unwrap_or_else(|| "<auto>".into());
        format!("{resource}: {now}/{goal}")
    }
}

/// `formatHPAMetrics`: at most two metrics, then "+ N more...".
fn format_metrics(specs: &[Value], statuses: &[Value]) -> String {
    const MAX: usize = 2;
    if specs.is_empty() {
        return "<none>".to_string();
    }
    let mut list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let status_of = |key: &str| statuses.get(i).and_then(|s| get(s, &format!("/{key}")));
            match str_at(spec, "/type") {
                "External" => value_metric(get(spec, "/external"), status_of("external")),
                "Object" => value_metric(get(spec, "/object"), status_of("object")),
                "Pods" => {
                    let now = match status_of("pods") {
                        Some(s) => quantity_ptr_string(get(s, "/current/averageValue")),
                        None => "<unknown>".to_string(),
                    };
                    let goal = quantity_ptr_string(get(spec, "/pods/target/averageValue"));
                    format!("{now}/{goal}")
                }
                "Resource" => resource_metric(get(spec, "/resource"), status_of("resource")),
                "ContainerResource" => resource_metric(
                    get(spec, "/containerResource"),
                    status_of("containerResource"),
                ),
                _ => "<unknown type>".to_string(),
            }
        })
        .collect();
    let count = list.len();
    if count > MAX {
        list.truncate(MAX);
        return format!("{} + {} more...", list.join(", "), count - MAX);
    }
    list.join(", ")
}

/// `printHorizontalPodAutoscaler`.
pub(super) fn horizontal_pod_autoscaler(obj: &Value, now: Timestamp) -> Row {
    let reference = format!(
        "{}/{}",
        str_at(obj, "/spec/scaleTargetRef/kind"),
        str_at(obj, "/spec/scaleTargetRef/name")
    );
    let (specs, statuses) = metrics(obj);
    let targets = format_metrics(&specs, &statuses);
    // autoscaling/v2 defaults minReplicas to 1.
    let min_pods = opt_int_at(obj, "/spec/minReplicas")
        .unwrap_or(1)
        .to_string();
    cells![
        name(obj),
        reference,
        targets,
        min_pods,
        int_at(obj, "/spec/maxReplicas"),
        int_at(obj, "/status/currentReplicas"),
        age(obj, now),
    ]
}
