//! Core kinds: Namespace, ConfigMap, Secret, ServiceAccount, PersistentVolumeClaim, Node,
//! ResourceQuota, PodTemplate, ComponentStatus.

use jiff::Timestamp;
use serde_json::Value;

use super::{
    AGE, ColumnDefinition, NAME, age, array_at, bool_at, cells, col, get, is_deleting, map_len,
    name, str_at, wide,
};
use crate::table::column::Row;
use crate::table::quantity::quantity_string;

pub(super) static NAMESPACE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Status", "string", "Lifecycle phase of the namespace."),
    AGE,
];

/// `printNamespace`.
pub(super) fn namespace(obj: &Value, now: Timestamp) -> Row {
    // The namespace strategy sets Active on create and Terminating on delete.
    let phase = match str_at(obj, "/status/phase") {
        "" if is_deleting(obj) => "Terminating",
        "" => "Active",
        phase => phase,
    };
    cells![name(obj), phase, age(obj, now)]
}

pub(super) static CONFIG_MAP_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Data", "string", "Number of keys in data and binaryData."),
    AGE,
];

/// `printConfigMap`.
pub(super) fn config_map(obj: &Value, now: Timestamp) -> Row {
    let count = map_len(obj, "/data") + map_len(obj, "/binaryData");
    cells![name(obj), count as i64, age(obj, now)]
}

pub(super) static SECRET_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Type",
        "string",
        "Kind of secret, which fixes the keys it must hold.",
    ),
    col("Data", "string", "Number of keys in data."),
    AGE,
];

/// `printSecret`.
pub(super) fn secret(obj: &Value, now: Timestamp) -> Row {
    let type_ = match str_at(obj, "/type") {
        "" => "Opaque",
        t => t,
    };
    cells![
        name(obj),
        type_,
        map_len(obj, "/data") as i64,
        age(obj, now)
    ]
}

pub(super) static SERVICE_ACCOUNT_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Secrets",
        "string",
        "Number of secrets listed for the service account.",
    ),
    AGE,
];

/// `printServiceAccount`.
pub(super) fn service_account(obj: &Value, now: Timestamp) -> Row {
    cells![
        name(obj),
        array_at(obj, "/secrets").len() as i64,
        age(obj, now)
    ]
}

pub(super) static PVC_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Status", "string", "Binding phase of the claim."),
    col(
        "Volume",
        "string",
        "Name of the persistent volume bound to the claim.",
    ),
    col(
        "Capacity",
        "string",
        "Storage capacity of the bound volume.",
    ),
    col(
        "Access Modes",
        "string",
        "Access modes of the bound volume.",
    ),
    col(
        "StorageClass",
        "string",
        "Storage class requested by the claim.",
    ),
    col(
        "VolumeAttributesClass",
        "string",
        "Volume attributes class requested by the claim.",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        "Whether the volume is a filesystem or a raw block device.",
    ),
];

/// `helper.GetAccessModesAsString`: the short names in a fixed order, without duplicates.
pub(super) fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// `printPersistentVolumeClaim`.
pub(super) fn persistent_volume_claim(obj: &Value, now: Timestamp) -> Row {
    let phase = if is_deleting(obj) {
        "Terminating"
    } else {
        match str_at(obj, "/status/phase") {
            // SetDefaults_PersistentVolumeClaim starts claims Pending.
            "" => "Pending",
            phase => phase,
        }
    };
    let volume = str_at(obj, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity_string(obj.pointer("/status/capacity/storage")),
            access_modes(array_at(obj, "/status/accessModes")),
        )
    };
    // helper.GetPersistentVolumeClaimClass: the beta annotation wins over the field.
    let class = obj
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .unwrap_or_else(|| str_at(obj, "/spec/storageClassName"));
    let attributes_class = match get(obj, "/spec/volumeAttributesClassName") {
        Some(v) => v.as_str().unwrap_or_default(),
        None => "<unset>",
    };
    let volume_mode = match str_at(obj, "/spec/volumeMode") {
        // Claims default to a filesystem volume.
        "" => "Filesystem",
        mode => mode,
    };
    cells![
        name(obj),
        phase,
        volume,
        capacity,
        modes,
        class,
        attributes_class,
        age(obj, now),
        volume_mode,
    ]
}

pub(super) static NODE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Status",
        "string",
        "Readiness of the node, and whether it accepts new pods.",
    ),
    col(
        "Roles",
        "string",
        "Roles from the node-role.kubernetes.io/ labels.",
    ),
    AGE,
    col("Version", "string", "Kubelet version reported by the node."),
    wide(
        "Internal-IP",
        "string",
        "First internal address of the node.",
    ),
    wide(
        "External-IP",
        "string",
        "First external address of the node.",
    ),
    wide(
        "OS-Image",
        "string",
        "Operating system image reported by the node.",
    ),
    wide(
        "Kernel-Version",
        "string",
        "Kernel version reported by the node.",
    ),
    wide(
        "Container-Runtime",
        "string",
        "Container runtime and version reported by the node.",
    ),
];

/// `findNodeRoles`: `node-role.kubernetes.io/<role>` keys and `kubernetes.io/role` values.
fn node_roles(obj: &Value) -> String {
    let mut roles: Vec<&str> = Vec::new();
    if let Some(labels) = get(obj, "/metadata/labels").and_then(Value::as_object) {
        for (key, value) in labels {
            if let Some(role) = key.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.push(role);
                }
            } else if key == "kubernetes.io/role" {
                let value = value.as_str().unwrap_or_default();
                if !value.is_empty() {
                    roles.push(value);
                }
            }
        }
    }
    roles.sort_unstable();
    roles.dedup();
    if roles.is_empty() {
        "<none>".to_string()
    } else {
        roles.join(",")
    }
}

fn node_address<'a>(obj: &'a Value, type_: &str) -> &'a str {
    array_at(obj, "/status/addresses")
        .iter()
        .find(|a| str_at(a, "/type") == type_)
        .map_or("<none>", |a| str_at(a, "/address"))
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "<unknown>" } else { s }
}

/// `printNode`.
pub(super) fn node(obj: &Value, now: Timestamp) -> Row {
    let conditions = array_at(obj, "/status/conditions");
    // Later conditions of the same type win, as upstream builds a map of them.
    let ready = conditions
        .iter()
        .rev()
        .find(|c| str_at(c, "/type") == "Ready")
        .map(|c| str_at(c, "/status"));
    let mut status = vec![match ready {
        Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if bool_at(obj, "/spec/unschedulable") == Some(true) {
        status.push("SchedulingDisabled");
    }
    cells![
        name(obj),
        status.join(","),
        node_roles(obj),
        age(obj, now),
        str_at(obj, "/status/nodeInfo/kubeletVersion"),
        node_address(obj, "InternalIP"),
        node_address(obj, "ExternalIP"),
        or_unknown(str_at(obj, "/status/nodeInfo/osImage")),
        or_unknown(str_at(obj, "/status/nodeInfo/kernelVersion")),
        or_unknown(str_at(obj, "/status/nodeInfo/containerRuntimeVersion")),
    ]
}

pub(super) static RESOURCE_QUOTA_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    AGE,
    col(
        "Request",
        "string",
        "Used and hard amounts of the quota's request resources.",
    ),
    col(
        "Limit",
        "string",
        "Used and hard amounts of the quota's limits.* resources.",
    ),
];

/// `printResourceQuota`.
pub(super) fn resource_quota(obj: &Value, now: Timestamp) -> Row {
    let mut request = Vec::new();
    let mut limit = Vec::new();
    if let Some(hard) = get(obj, "/status/hard").and_then(Value::as_object) {
        let mut resources: Vec<&String> = hard.keys().collect();
        resources.sort();
        for resource in resources {
            let used = quantity_string(obj.pointer("/status/used").and_then(|u| u.get(resource)));
            let limit_of = quantity_string(hard.get(resource));
            let entry = format!("{resource}: {used}/{limit_of}");
            let mut pieces = resource.split('.');
            match (pieces.next(), pieces.next()) {
                (Some("limits"), Some(_)) => limit.push(entry),
                _ => request.push(entry),
            }
        }
    }
    cells![
        name(obj),
        age(obj, now),
        request.join(", "),
        limit.join(", ")
    ]
}

pub(super) static POD_TEMPLATE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Containers",
        "string",
        "Names of the containers in the template.",
    ),
    col(
        "Images",
        "string",
        "Images of the containers in the template.",
    ),
    col("Pod Labels", "string", "The labels of the pod template."),
];

/// `printPodTemplate` (no age).
pub(super) fn pod_template(obj: &Value, _now: Timestamp) -> Row {
    let (containers, images) = super::container_cells(array_at(obj, "/template/spec/containers"));
    cells![
        name(obj),
        containers,
        images,
        crate::table::format::format_labels(get(obj, "/template/metadata/labels")),
    ]
}

pub(super) static COMPONENT_STATUS_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Status", "string", "Status of the component conditions"),
    col("Message", "string", "Message of the component conditions"),
    col("Error", "string", "Error of the component conditions"),
];

/// `printComponentStatus`.
pub(super) fn component_status(obj: &Value, _now: Timestamp) -> Row {
    let healthy = array_at(obj, "/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => (
            if str_at(c, "/status") == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            str_at(c, "/message"),
            str_at(c, "/error"),
        ),
        None => ("Unknown", "", ""),
    };
    cells![name(obj), status, message, error]
}
