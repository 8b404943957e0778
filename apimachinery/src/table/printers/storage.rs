//! storage.k8s.io/v1 CSIDriver, CSINode, CSIStorageCapacity and VolumeAttachment, and
//! node.k8s.io/v1 RuntimeClass.

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE, ColumnDefinition, NAME, age, array_at, bool_at, cells, col, get, name, str_at};
use crate::table::column::Row;

pub(super) static CSI_DRIVER_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "AttachRequired",
        "boolean",
        "Whether the driver needs an attach operation.",
    ),
    col(
        "PodInfoOnMount",
        "boolean",
        "Whether the driver gets pod information on mount.",
    ),
    col(
        "StorageCapacity",
        "boolean",
        "Whether the scheduler considers the driver's storage capacity.",
    ),
    col(
        "TokenRequests",
        "string",
        "Audiences of the service account tokens passed to the driver.",
    ),
    col(
        "RequiresRepublish",
        "boolean",
        "Whether NodePublishVolume is called periodically.",
    ),
    col(
        "Modes",
        "string",
        "Volume lifecycle modes the driver supports.",
    ),
    AGE,
];

/// `printCSIDriver`.
pub(super) fn csi_driver(obj: &Value, now: Timestamp) -> Row {
    let modes: Vec<&str> = array_at(obj, "/spec/volumeLifecycleModes")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let modes = if modes.is_empty() {
        "<none>".to_string()
    } else {
        modes.join(",")
    };
    let audiences: Vec<&str> = array_at(obj, "/spec/tokenRequests")
        .iter()
        .map(|t| str_at(t, "/audience"))
        .collect();
    let token_requests = if audiences.is_empty() {
        "<unset>".to_string()
    } else {
        audiences.join(",")
    };
    cells![
        name(obj),
        bool_at(obj, "/spec/attachRequired").unwrap_or(true),
        bool_at(obj, "/spec/podInfoOnMount").unwrap_or(false),
        bool_at(obj, "/spec/storageCapacity").unwrap_or(false),
        token_requests,
        bool_at(obj, "/spec/requiresRepublish").unwrap_or(false),
        modes,
        age(obj, now),
    ]
}

pub(super) static CSI_NODE_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Drivers", "integer", "Number of CSI drivers on the node."),
    AGE,
];

/// `printCSINode`.
pub(super) fn csi_node(obj: &Value, now: Timestamp) -> Row {
    cells![
        name(obj),
        array_at(obj, "/spec/drivers").len() as i64,
        age(obj, now)
    ]
}

pub(super) static CSI_STORAGE_CAPACITY_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "StorageClassName",
        "string",
        "The StorageClass the capacity is for.",
    ),
    col("Capacity", "string", "Capacity reported by the driver."),
];

/// `printCSIStorageCapacity` (kube prints no age).
pub(super) fn csi_storage_capacity(obj: &Value, _now: Timestamp) -> Row {
    let capacity = match get(obj, "/capacity") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "<unset>".to_string(),
    };
    cells![name(obj), str_at(obj, "/storageClassName"), capacity]
}

pub(super) static VOLUME_ATTACHMENT_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col(
        "Attacher",
        "string",
        "The CSI driver that attaches the volume.",
    ),
    col("PV", "string", "The PersistentVolume attached."),
    col("Node", "string", "The node the volume is attached to."),
    col(
        "Attached",
        "boolean",
        "Whether the attach operation succeeded.",
    ),
    AGE,
];

/// `printVolumeAttachment`.
pub(super) fn volume_attachment(obj: &Value, now: Timestamp) -> Row {
    cells![
        name(obj),
        str_at(obj, "/spec/attacher"),
        str_at(obj, "/spec/source/persistentVolumeName"),
        str_at(obj, "/spec/nodeName"),
        bool_at(obj, "/status/attached").unwrap_or(false),
        age(obj, now),
    ]
}

pub(super) static RUNTIME_CLASS_COLUMNS: &[ColumnDefinition] = &[
    NAME,
    col("Handler", "string", "The container runtime handler."),
    AGE,
];

/// `printRuntimeClass`.
pub(super) fn runtime_class(obj: &Value, now: Timestamp) -> Row {
    cells![name(obj), str_at(obj, "/handler"), age(obj, now)]
}
