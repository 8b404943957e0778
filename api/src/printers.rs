//! Table output (`kubectl get`) of the Karmada kinds: the CRDs' additionalPrinterColumns, and
//! the Cluster printer of karmada-aggregated-apiserver (pkg/printers).

use std::sync::OnceLock;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use serde_json::Value;

/// One column of a server-side table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrinterColumn {
    /// Header as the server sends it; kubectl prints it upper-cased.
    pub name: &'static str,
    /// OpenAPI type of the cells: `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: &'static str,
    /// OpenAPI format hint, e.g. `name` for the name column; may be empty.
    pub format: &'static str,
    /// What the column shows.
    pub description: &'static str,
    /// 0 for default columns, 1 for columns only `-o wide` shows.
    pub priority: i32,
    /// Where a CRD column reads its value; `None` for computed cells.
    pub json_path: Option<&'static str>,
}

/// The description of an ObjectMeta field, taken from the Kubernetes OpenAPI schema.
fn object_meta_description(field: &str) -> &'static str {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let schema = SCHEMA.get_or_init(|| {
        schemars::schema_for!(k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta).to_value()
    });
    static NAME: OnceLock<String> = OnceLock::new();
    static CREATED: OnceLock<String> = OnceLock::new();
    let cell = if field == "name" { &NAME } else { &CREATED };
    cell.get_or_init(|| {
        schema
            .pointer(&format!("/properties/{field}/description"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    })
}

fn name_column() -> PrinterColumn {
    PrinterColumn {
        name: "Name",
        type_: "string",
        format: "name",
        description: object_meta_description("name"),
        priority: 0,
        json_path: Some(".metadata.name"),
    }
}

/// A CRD column; its description is the one kube-apiserver gives columns without their own.
macro_rules! crd_column {
    ($name:literal, $type_:literal, $json_path:literal $(,)?) => {
        PrinterColumn {
            name: $name,
            type_: $type_,
            format: "",
            description: concat!(
                "Custom resource definition column (in JSONPath format): ",
                $json_path
            ),
            priority: 0,
            json_path: Some($json_path),
        }
    };
}

/// The column kube-apiserver uses for a CRD that declares none.
fn default_age_column() -> PrinterColumn {
    PrinterColumn {
        name: "Age",
        type_: "date",
        format: "",
        description: object_meta_description("creationTimestamp"),
        priority: 0,
        json_path: Some(".metadata.creationTimestamp"),
    }
}

fn cluster_column(name: &'static str, priority: i32, description: &'static str) -> PrinterColumn {
    PrinterColumn {
        name,
        type_: "string",
        format: "",
        description,
        priority,
        json_path: None,
    }
}

fn build_columns(kind: &str) -> Vec<PrinterColumn> {
    let mut columns = vec![name_column()];
    match kind {
        "PropagationPolicy" | "ClusterPropagationPolicy" => columns.extend([
            crd_column!("CONFLICT-RESOLUTION", "string", ".spec.conflictResolution"),
            crd_column!("PRIORITY", "string", ".spec.priority"),
            crd_column!("AGE", "date", ".metadata.creationTimestamp"),
        ]),
        "OverridePolicy"
        | "ClusterOverridePolicy"
        | "ClusterTaintPolicy"
        | "WorkloadRebalancer"
        | "MultiClusterService"
        | "MultiClusterIngress"
        | "Remedy"
        | "ResourceInterpreterWebhookConfiguration" => columns.push(default_age_column()),
        // Karmada's CRD declares these two only, so kube-apiserver adds no Age column.
        "FederatedResourceQuota" => columns.extend([
            crd_column!("OVERALL", "string", ".status.overall"),
            crd_column!("OVERALL_USED", "string", ".status.overallUsed"),
        ]),
        "ResourceInterpreterCustomization" => columns.extend([
            crd_column!("TARGET-API-VERSION", "string", ".spec.target.apiVersion"),
            crd_column!("TARGET-KIND", "string", ".spec.target.kind"),
            crd_column!("AGE", "date", ".metadata.creationTimestamp"),
        ]),
        "Work" => columns.extend([
            crd_column!(
                "WORKLOAD-KIND",
                "string",
                ".spec.workload.manifests[*].kind"
            ),
            crd_column!(
                "APPLIED",
                "string",
                ".status.conditions[?(@.type==\"Applied\")].status"
            ),
            crd_column!("AGE", "date", ".metadata.creationTimestamp"),
        ]),
        "ResourceBinding" | "ClusterResourceBinding" => columns.extend([
            crd_column!(
                "SCHEDULED",
                "string",
                ".status.conditions[?(@.type==\"Scheduled\")].status"
            ),
            crd_column!(
                "FULLYAPPLIED",
                "string",
                ".status.conditions[?(@.type==\"FullyApplied\")].status",
            ),
            crd_column!("AGE", "date", ".metadata.creationTimestamp"),
            // Beyond Karmada, shown by `-o wide` only (so the default table stays Karmada's):
            // the (first) cluster the workload is being evicted from.
            PrinterColumn {
                priority: 1,
                ..crd_column!(
                    "EVICTING-FROM",
                    "string",
                    ".spec.gracefulEvictionTasks[*].fromCluster"
                )
            },
        ]),
        "Cluster" => {
            columns.extend([
                cluster_column("Version", 0, "Kubernetes version of the member cluster."),
                cluster_column("Mode", 0, "How resources reach the cluster: Push or Pull."),
                cluster_column(
                    "Ready",
                    0,
                    "Whether the cluster is ready to accept workloads.",
                ),
                PrinterColumn {
                    name: "Age",
                    type_: "string",
                    format: "",
                    description: object_meta_description("creationTimestamp"),
                    priority: 0,
                    json_path: None,
                },
                cluster_column("Zones", 1, "Failure zones the member cluster spans."),
                cluster_column("Region", 1, "Region the member cluster runs in."),
                cluster_column("Provider", 1, "Cloud provider of the member cluster."),
                cluster_column("API-Endpoint", 1, "API server URL of the member cluster."),
                cluster_column("Proxy-URL", 1, "Proxy used to reach the member cluster."),
            ]);
        }
        _ => return Vec::new(),
    }
    columns
}

macro_rules! column_cache {
    ($($kind:literal),+ $(,)?) => {
        /// The table columns of a kind, Name first, as kube-apiserver (CRDs) or
        /// karmada-aggregated-apiserver (Cluster) declares them; empty for unknown kinds.
        pub fn printer_columns(kind: &str) -> &'static [PrinterColumn] {
            match kind {
                $(
                    $kind => {
                        static CELL: OnceLock<Vec<PrinterColumn>> = OnceLock::new();
                        CELL.get_or_init(|| build_columns($kind))
                    }
                )+
                _ => &[],
            }
        }
    };
}

column_cache!(
    "PropagationPolicy",
    "ClusterPropagationPolicy",
    "OverridePolicy",
    "ClusterOverridePolicy",
    "ClusterTaintPolicy",
    "WorkloadRebalancer",
    "MultiClusterService",
    "MultiClusterIngress",
    "FederatedResourceQuota",
    "Remedy",
    "Work",
    "ResourceBinding",
    "ClusterResourceBinding",
    "ResourceInterpreterCustomization",
    "ResourceInterpreterWebhookConfiguration",
    "Cluster",
);

/// [`printer_columns`] of a kind at one of its served versions. The older versions Karmada's
/// CRDs still serve (`v1alpha1` of the bindings) declare no columns, so kube-apiserver prints
/// them with Name and Age.
pub fn printer_columns_at(version: &str, kind: &str) -> &'static [PrinterColumn] {
    if crate::conversion::converts(kind, version) {
        static CELL: OnceLock<Vec<PrinterColumn>> = OnceLock::new();
        return CELL.get_or_init(|| vec![name_column(), default_age_column()]);
    }
    printer_columns(kind)
}

/// The cells of one table row of a kind (matching [`printer_columns`], Name first), with ages
/// computed against `now`; `None` for unknown kinds. Missing values are `null` cells, as
/// kube-apiserver sends them for CRDs.
pub fn table_row(kind: &str, obj: &Value, now: Timestamp) -> Option<Vec<Value>> {
    table_row_at("", kind, obj, now)
}

/// [`table_row`] of a kind at one of its served versions (matching [`printer_columns_at`]).
pub fn table_row_at(version: &str, kind: &str, obj: &Value, now: Timestamp) -> Option<Vec<Value>> {
    if kind == "Cluster" {
        return Some(cluster_row_at(obj, now));
    }
    let columns = printer_columns_at(version, kind);
    if columns.is_empty() {
        return None;
    }
    Some(
        columns
            .iter()
            .map(|c| match c.json_path {
                Some(path) => crd_cell(c.type_, first_match(obj, path), now),
                None => Value::Null,
            })
            .collect(),
    )
}

/// The cells of a Cluster row, as of now.
pub fn cluster_row(obj: &Value) -> Vec<Value> {
    cluster_row_at(obj, Timestamp::now())
}

/// The cells of a Cluster row (all ten columns: five default, five wide) with the age
/// computed against `now` (printCluster).
pub fn cluster_row_at(obj: &Value, now: Timestamp) -> Vec<Value> {
    let text = |pointer: &str| {
        obj.pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let or_none = |s: String| if s.is_empty() { "<none>".to_owned() } else { s };
    let ready = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|conds| {
            conds
                .iter()
                .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        })
        .map(|c| {
            c.get("status")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_else(|| "Unknown".to_owned());
    let age = match parse_time(obj.pointer("/metadata/creationTimestamp")) {
        Some(t) => human_duration_since(t, now),
        None => "<unknown>".to_owned(),
    };
    let zones: Vec<&str> = obj
        .pointer("/spec/zones")
        .and_then(Value::as_array)
        .map(|z| z.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    vec![
        Value::String(text("/metadata/name")),
        Value::String(text("/status/kubernetesVersion")),
        Value::String(text("/spec/syncMode")),
        Value::String(ready),
        Value::String(age),
        Value::String(or_none(zones.join(","))),
        Value::String(or_none(text("/spec/region"))),
        Value::String(or_none(text("/spec/provider"))),
        Value::String(text("/spec/apiEndpoint")),
        Value::String(or_none(text("/spec/proxyURL"))),
    ]
}

/// Formats a CRD cell like kube-apiserver's CRD table convertor.
fn crd_cell(type_: &str, value: Option<&Value>, now: Timestamp) -> Value {
    let Some(value) = value else {
        return Value::Null;
    };
    match type_ {
        "date" => match value.as_str() {
            Some(s) => match s.parse::<Timestamp>() {
                Ok(t) => Value::String(human_duration_since(t, now)),
                Err(_) => Value::String("<invalid>".to_owned()),
            },
            None => Value::Null,
        },
        "string" => Value::String(match value {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => other.to_string(),
        }),
        "integer" => value.as_i64().map(Value::from).unwrap_or(Value::Null),
        "number" => value.as_f64().map(Value::from).unwrap_or(Value::Null),
        "boolean" => value.as_bool().map(Value::from).unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

fn parse_time(value: Option<&Value>) -> Option<Timestamp> {
    value.and_then(Value::as_str).and_then(|s| s.parse().ok())
}

fn human_duration_since(then: Timestamp, now: Timestamp) -> String {
    let seconds = now.as_second() - then.as_second();
    let nanos = i64::from(now.subsec_nanosecond()) - i64::from(then.subsec_nanosecond());
    let total = i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    human_duration_nanos(total)
}

/// Kubernetes' short age format (duration.HumanDuration): `45s`, `3m20s`, `2d4h`, `3y`...
pub fn human_duration(d: Duration) -> String {
    human_duration_nanos(d.as_nanos().min(i128::MAX as u128) as i128)
}

fn human_duration_nanos(nanos: i128) -> String {
    let seconds = nanos / 1_000_000_000;
    if seconds < -1 {
        return "<invalid>".to_owned();
    }
    if nanos < 0 {
        return "0s".to_owned();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Evaluates the simple JSONPath forms CRD printer columns use (`.a.b`, `[*]`,
/// `[?(@.field=="value")]`) and returns the first match, as the CRD table convertor does.
fn first_match<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current: Vec<&Value> = vec![obj];
    let mut rest = path;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let (name, tail) = after.split_at(end);
            current = current.into_iter().filter_map(|v| v.get(name)).collect();
            rest = tail;
        } else if let Some(after) = rest.strip_prefix("[*]") {
            current = current
                .into_iter()
                .flat_map(|v| {
                    v.as_array()
                        .map(|a| a.iter().collect::<Vec<_>>())
                        .unwrap_or_default()
                })
                .collect();
            rest = after;
        } else if let Some(after) = rest.strip_prefix("[?(@.") {
            let close = after.find(")]")?;
            let (filter, tail) = after.split_at(close);
            let (field, expected) = filter.split_once("==")?;
            let expected = expected.trim_matches('"');
            current = current
                .into_iter()
                .flat_map(|v| {
                    v.as_array()
                        .map(|a| a.iter().collect::<Vec<_>>())
                        .unwrap_or_default()
                })
                .filter(|item| item.get(field).and_then(Value::as_str) == Some(expected))
                .collect();
            rest = &tail[2..];
        } else {
            return None;
        }
    }
    current.into_iter().next()
}
