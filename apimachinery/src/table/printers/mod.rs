//! kube-apiserver's printers for built-in kinds (kubernetes `pkg/printers/internalversion`),
//! plus kube-aggregator's APIService convertor.
//!
//! kube prints internal objects, i.e. after defaulting; objects stored here may lack fields
//! kube always defaults (a Deployment without `spec.replicas`), so where that changes the
//! output the printers assume the default kube would have stored.

mod admissionregistration;
mod apiregistration;
mod autoscaling;
mod certificates;
mod coordination;
mod core;
mod events;
mod flowcontrol;
mod network;
mod pod;
mod policy;
mod rbac;
mod storage;
mod workloads;

use jiff::Timestamp;
use serde_json::Value;

use super::column::{
    AGE_DESCRIPTION, ColumnDefinition, DefaultTableConvertor, Row, TableConvertor,
};
use super::duration;

/// A built-in printer: the columns of one kind and the function printing its objects.
pub struct BuiltinPrinter {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Kind.
    pub kind: &'static str,
    columns: &'static [ColumnDefinition],
    print: fn(&Value, Timestamp) -> Row,
    always_sends_headers: bool,
}

impl std::fmt::Debug for BuiltinPrinter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuiltinPrinter")
            .field("group", &self.group)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl TableConvertor for BuiltinPrinter {
    fn columns(&self) -> &[ColumnDefinition] {
        self.columns
    }

    fn row(&self, obj: &Value, now: Timestamp) -> Row {
        (self.print)(obj, now)
    }

    fn always_sends_headers(&self) -> bool {
        self.always_sends_headers
    }
}

const fn printer(
    group: &'static str,
    kind: &'static str,
    columns: &'static [ColumnDefinition],
    print: fn(&Value, Timestamp) -> Row,
) -> BuiltinPrinter {
    BuiltinPrinter {
        group,
        kind,
        columns,
        print,
        always_sends_headers: false,
    }
}

static PRINTERS: &[BuiltinPrinter] = &[
    printer("", "Namespace", core::NAMESPACE_COLUMNS, core::namespace),
    printer("", "ConfigMap", core::CONFIG_MAP_COLUMNS, core::config_map),
    printer("", "Secret", core::SECRET_COLUMNS, core::secret),
    printer(
        "",
        "ServiceAccount",
        core::SERVICE_ACCOUNT_COLUMNS,
        core::service_account,
    ),
    printer(
        "",
        "PersistentVolumeClaim",
        core::PVC_COLUMNS,
        core::persistent_volume_claim,
    ),
    printer("", "Node", core::NODE_COLUMNS, core::node),
    printer(
        "",
        "ResourceQuota",
        core::RESOURCE_QUOTA_COLUMNS,
        core::resource_quota,
    ),
    printer("", "Event", events::EVENT_COLUMNS, events::event),
    printer(
        "events.k8s.io",
        "Event",
        events::EVENT_COLUMNS,
        events::events_v1_event,
    ),
    printer("", "Pod", pod::POD_COLUMNS, pod::pod),
    printer("", "Service", network::SERVICE_COLUMNS, network::service),
    printer(
        "",
        "Endpoints",
        network::ENDPOINTS_COLUMNS,
        network::endpoints,
    ),
    printer(
        "networking.k8s.io",
        "Ingress",
        network::INGRESS_COLUMNS,
        network::ingress,
    ),
    printer(
        "apps",
        "Deployment",
        workloads::DEPLOYMENT_COLUMNS,
        workloads::deployment,
    ),
    printer(
        "apps",
        "StatefulSet",
        workloads::STATEFUL_SET_COLUMNS,
        workloads::stateful_set,
    ),
    printer(
        "apps",
        "DaemonSet",
        workloads::DAEMON_SET_COLUMNS,
        workloads::daemon_set,
    ),
    printer(
        "apps",
        "ReplicaSet",
        workloads::REPLICA_SET_COLUMNS,
        workloads::replica_set,
    ),
    printer("batch", "Job", workloads::JOB_COLUMNS, workloads::job),
    printer(
        "batch",
        "CronJob",
        workloads::CRON_JOB_COLUMNS,
        workloads::cron_job,
    ),
    printer(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        admissionregistration::WEBHOOK_CONFIGURATION_COLUMNS,
        admissionregistration::webhook_configuration,
    ),
    printer(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        admissionregistration::WEBHOOK_CONFIGURATION_COLUMNS,
        admissionregistration::webhook_configuration,
    ),
    printer(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        admissionregistration::POLICY_COLUMNS,
        admissionregistration::policy,
    ),
    printer(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        admissionregistration::BINDING_COLUMNS,
        admissionregistration::binding,
    ),
    printer(
        "certificates.k8s.io",
        "CertificateSigningRequest",
        certificates::CSR_COLUMNS,
        certificates::csr,
    ),
    printer(
        "coordination.k8s.io",
        "Lease",
        coordination::LEASE_COLUMNS,
        coordination::lease,
    ),
    printer(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        rbac::ROLE_BINDING_COLUMNS,
        rbac::binding,
    ),
    printer(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        rbac::ROLE_BINDING_COLUMNS,
        rbac::binding,
    ),
    printer(
        "policy",
        "PodDisruptionBudget",
        policy::PDB_COLUMNS,
        policy::pod_disruption_budget,
    ),
    printer(
        "autoscaling",
        "HorizontalPodAutoscaler",
        autoscaling::HPA_COLUMNS,
        autoscaling::horizontal_pod_autoscaler,
    ),
    printer(
        "",
        "PodTemplate",
        core::POD_TEMPLATE_COLUMNS,
        core::pod_template,
    ),
    printer(
        "",
        "ComponentStatus",
        core::COMPONENT_STATUS_COLUMNS,
        core::component_status,
    ),
    printer(
        "",
        "ReplicationController",
        workloads::REPLICATION_CONTROLLER_COLUMNS,
        workloads::replication_controller,
    ),
    printer(
        "discovery.k8s.io",
        "EndpointSlice",
        network::ENDPOINT_SLICE_COLUMNS,
        network::endpoint_slice,
    ),
    printer(
        "networking.k8s.io",
        "IngressClass",
        network::INGRESS_CLASS_COLUMNS,
        network::ingress_class,
    ),
    printer(
        "node.k8s.io",
        "RuntimeClass",
        storage::RUNTIME_CLASS_COLUMNS,
        storage::runtime_class,
    ),
    printer(
        "flowcontrol.apiserver.k8s.io",
        "FlowSchema",
        flowcontrol::FLOW_SCHEMA_COLUMNS,
        flowcontrol::flow_schema,
    ),
    printer(
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        flowcontrol::PRIORITY_LEVEL_COLUMNS,
        flowcontrol::priority_level,
    ),
    printer(
        "storage.k8s.io",
        "CSIDriver",
        storage::CSI_DRIVER_COLUMNS,
        storage::csi_driver,
    ),
    printer(
        "storage.k8s.io",
        "CSINode",
        storage::CSI_NODE_COLUMNS,
        storage::csi_node,
    ),
    printer(
        "storage.k8s.io",
        "CSIStorageCapacity",
        storage::CSI_STORAGE_CAPACITY_COLUMNS,
        storage::csi_storage_capacity,
    ),
    printer(
        "storage.k8s.io",
        "VolumeAttachment",
        storage::VOLUME_ATTACHMENT_COLUMNS,
        storage::volume_attachment,
    ),
    BuiltinPrinter {
        always_sends_headers: true,
        ..printer(
            "apiregistration.k8s.io",
            "APIService",
            apiregistration::API_SERVICE_COLUMNS,
            apiregistration::api_service,
        )
    },
];

/// The built-in printer for a group and kind, if kube-apiserver has one. Role, ClusterRole,
/// LimitRange and CustomResourceDefinition have none (they print `Name` + `Created At`).
pub fn builtin_printer(group: &str, kind: &str) -> Option<&'static BuiltinPrinter> {
    PRINTERS.iter().find(|p| p.group == group && p.kind == kind)
}

/// The convertor kube-apiserver uses for a built-in group and kind: its printer, or the
/// default `Name` + `Created At` table.
pub fn convertor_for(group: &str, kind: &str) -> &'static dyn TableConvertor {
    static DEFAULT: DefaultTableConvertor = DefaultTableConvertor;
    match builtin_printer(group, kind) {
        Some(p) => p,
        None => &DEFAULT,
    }
}

/// All built-in printers.
pub fn builtin_printers() -> &'static [BuiltinPrinter] {
    PRINTERS
}

// Column helpers shared by the printers.

const CONTAINERS_DESCRIPTION: &str = "Names of the containers in the pod template.";
const IMAGES_DESCRIPTION: &str = "Images of the containers in the pod template.";

const fn col(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
) -> ColumnDefinition {
    ColumnDefinition::new(name, type_, "", description, 0)
}

const fn wide(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
) -> ColumnDefinition {
    ColumnDefinition::new(name, type_, "", description, 1)
}

const NAME: ColumnDefinition = ColumnDefinition::name_column();
const AGE: ColumnDefinition = col("Age", "string", AGE_DESCRIPTION);
const CONTAINERS: ColumnDefinition = wide("Containers", "string", CONTAINERS_DESCRIPTION);
const IMAGES: ColumnDefinition = wide("Images", "string", IMAGES_DESCRIPTION);

// Accessors over unstructured objects: absent or mistyped fields read as Go's zero values.

fn get<'a>(obj: &'a Value, pointer: &str) -> Option<&'a Value> {
    obj.pointer(pointer).filter(|v| !v.is_null())
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    get(obj, pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn int_at(obj: &Value, pointer: &str) -> i64 {
    opt_int_at(obj, pointer).unwrap_or(0)
}

fn opt_int_at(obj: &Value, pointer: &str) -> Option<i64> {
    get(obj, pointer).and_then(Value::as_i64)
}

fn bool_at(obj: &Value, pointer: &str) -> Option<bool> {
    get(obj, pointer).and_then(Value::as_bool)
}

fn array_at<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    get(obj, pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn map_len(obj: &Value, pointer: &str) -> usize {
    get(obj, pointer)
        .and_then(Value::as_object)
        .map_or(0, |m| m.len())
}

fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name")
}

fn is_deleting(obj: &Value) -> bool {
    get(obj, "/metadata/deletionTimestamp").is_some()
}

fn age(obj: &Value, now: Timestamp) -> Value {
    Value::from(duration::age(obj, now))
}

fn time_at(obj: &Value, pointer: &str) -> Option<Timestamp> {
    duration::parse_time(obj.pointer(pointer))
}

/// `layoutContainerCells`: container names and images, comma-joined.
fn container_cells(containers: &[Value]) -> (Value, Value) {
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, "/image")).collect();
    (Value::from(names.join(",")), Value::from(images.join(",")))
}

/// The status of the first condition of `type_` in a conditions list.
fn condition_status<'a>(conditions: &'a [Value], type_: &str) -> Option<&'a str> {
    conditions
        .iter()
        .find(|c| str_at(c, "/type") == type_)
        .map(|c| str_at(c, "/status"))
}

/// Builds a row of cells from values convertible to JSON.
macro_rules! cells {
    ($($cell:expr),* $(,)?) => {
        $crate::table::Row::new(vec![$(serde_json::Value::from($cell)),*])
    };
}
pub(crate) use cells;

#[cfg(test)]
mod tests;
