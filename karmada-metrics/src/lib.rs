//! Karmada's controller and scheduler metrics (`pkg/metrics`, `pkg/scheduler/metrics`), with its
//! names, help texts, labels and buckets, recorded in the process's registry
//! ([`component_base::metrics::global`]) that `/metrics` serves.
//!
//! The controllers record through these functions; this crate must not depend on the
//! controllers, the API server or an async runtime.

use std::time::Duration;

use component_base::metrics::{DEFAULT_BUCKETS, Desc, Kind, Registry, exponential_buckets, global};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::cluster::v1alpha1::{CLUSTER_CONDITION_READY, ClusterStatus};
use karmada_api::quantity::ParsedQuantity;

const SCHEDULER_BUCKETS: [f64; 15] = exponential_buckets(0.001, 2.0);
const SYNC_BUCKETS: [f64; 12] = exponential_buckets(0.001, 2.0);

/// `karmada_scheduler_schedule_attempts_total`.
pub static SCHEDULE_ATTEMPTS: Desc = Desc {
    name: "karmada_scheduler_schedule_attempts_total",
    help: "Number of attempts to schedule a ResourceBinding or ClusterResourceBinding",
    labels: &["result", "schedule_type"],
    kind: Kind::Counter,
};
/// `karmada_scheduler_e2e_scheduling_duration_seconds`.
pub static E2E_SCHEDULING_DURATION: Desc = Desc {
    name: "karmada_scheduler_e2e_scheduling_duration_seconds",
    help: "E2e scheduling latency in seconds",
    labels: &["result", "schedule_type"],
    kind: Kind::Histogram(&SCHEDULER_BUCKETS),
};
/// `karmada_scheduler_scheduling_algorithm_duration_seconds`.
pub static SCHEDULING_ALGORITHM_DURATION: Desc = Desc {
    name: "karmada_scheduler_scheduling_algorithm_duration_seconds",
    help: "Scheduling algorithm latency in seconds(exclude scale scheduler)",
    labels: &["schedule_step"],
    kind: Kind::Histogram(&SCHEDULER_BUCKETS),
};
/// `karmada_scheduler_queue_incoming_bindings_total`.
pub static QUEUE_INCOMING_BINDINGS: Desc = Desc {
    name: "karmada_scheduler_queue_incoming_bindings_total",
    help: "Number of ResourceBinding and ClusterResourceBinding objects added to scheduling queues by event type.",
    labels: &["event"],
    kind: Kind::Counter,
};

/// `cluster_ready_state`.
pub static CLUSTER_READY: Desc = cluster_gauge(
    "cluster_ready_state",
    "State of the cluster (1 if ready, 0 otherwise).",
);
/// `cluster_node_number`.
pub static CLUSTER_NODES: Desc =
    cluster_gauge("cluster_node_number", "Number of nodes in the cluster.");
/// `cluster_ready_node_number`.
pub static CLUSTER_READY_NODES: Desc = cluster_gauge(
    "cluster_ready_node_number",
    "Number of ready nodes in the cluster.",
);
/// `cluster_memory_allocatable_bytes`.
pub static CLUSTER_MEMORY_ALLOCATABLE: Desc = cluster_gauge(
    "cluster_memory_allocatable_bytes",
    "Allocatable cluster memory resource in bytes.",
);
/// `cluster_cpu_allocatable_number`.
pub static CLUSTER_CPU_ALLOCATABLE: Desc = cluster_gauge(
    "cluster_cpu_allocatable_number",
    "Number of allocatable CPU in the cluster.",
);
/// `cluster_pod_allocatable_number`.
pub static CLUSTER_POD_ALLOCATABLE: Desc = cluster_gauge(
    "cluster_pod_allocatable_number",
    "Number of allocatable pods in the cluster.",
);
/// `cluster_memory_allocated_bytes`.
pub static CLUSTER_MEMORY_ALLOCATED: Desc = cluster_gauge(
    "cluster_memory_allocated_bytes",
    "Allocated cluster memory resource in bytes.",
);
/// `cluster_cpu_allocated_number`.
pub static CLUSTER_CPU_ALLOCATED: Desc = cluster_gauge(
    "cluster_cpu_allocated_number",
    "Number of allocated CPU in the cluster.",
);
/// `cluster_pod_allocated_number`.
pub static CLUSTER_POD_ALLOCATED: Desc = cluster_gauge(
    "cluster_pod_allocated_number",
    "Number of allocated pods in the cluster.",
);
/// `cluster_sync_status_duration_seconds`.
pub static CLUSTER_SYNC_STATUS_DURATION: Desc = Desc {
    name: "cluster_sync_status_duration_seconds",
    help: "Duration in seconds for syncing the status of the cluster once.",
    labels: &["member_cluster"],
    // Karmada sets none for this histogram.
    kind: Kind::Histogram(&DEFAULT_BUCKETS),
};

/// `resource_match_policy_duration_seconds`.
pub static RESOURCE_MATCH_POLICY_DURATION: Desc = Desc {
    name: "resource_match_policy_duration_seconds",
    help: "Duration in seconds to find a matched PropagationPolicy or ClusterPropagationPolicy for the resource templates.",
    labels: &[],
    kind: Kind::Histogram(&SYNC_BUCKETS),
};
/// `resource_apply_policy_duration_seconds`.
pub static RESOURCE_APPLY_POLICY_DURATION: Desc = Desc {
    name: "resource_apply_policy_duration_seconds",
    help: "Duration in seconds to apply a PropagationPolicy or ClusterPropagationPolicy for the resource templates. By the result, 'error' means a resource template failed to apply the policy. Otherwise 'success'.",
    labels: &["result"],
    kind: Kind::Histogram(&SYNC_BUCKETS),
};
/// `policy_apply_attempts_total`.
pub static POLICY_APPLY_ATTEMPTS: Desc = Desc {
    name: "policy_apply_attempts_total",
    help: "Number of attempts to be applied for a PropagationPolicy or ClusterPropagationPolicy. By the result, 'error' means a resource template failed to apply the policy. Otherwise 'success'.",
    labels: &["result"],
    kind: Kind::Counter,
};
/// `binding_sync_work_duration_seconds`.
pub static BINDING_SYNC_WORK_DURATION: Desc = Desc {
    name: "binding_sync_work_duration_seconds",
    help: "Duration in seconds to sync works for ResourceBinding and ClusterResourceBinding objects. By the result, 'error' means a binding failed to sync works. Otherwise 'success'.",
    labels: &["result"],
    kind: Kind::Histogram(&SYNC_BUCKETS),
};
/// `work_sync_workload_duration_seconds`.
pub static WORK_SYNC_WORKLOAD_DURATION: Desc = Desc {
    name: "work_sync_workload_duration_seconds",
    help: "Duration in seconds to sync the workload to a target cluster. By the result, 'error' means a work failed to sync workloads. Otherwise 'success'.",
    labels: &["result"],
    kind: Kind::Histogram(&SYNC_BUCKETS),
};

/// `create_resource_to_cluster`.
pub static CREATE_RESOURCE_TO_CLUSTER: Desc = Desc {
    name: "create_resource_to_cluster",
    help: "Number of creation operations against a target member cluster. The 'result' label indicates outcome ('success' or 'error'), 'recreate' indicates whether the operation is recreated (true/false). Labels 'apiversion', 'kind', and 'member_cluster' specify the resource type, API version, and target cluster respectively.",
    labels: &["result", "apiversion", "kind", "member_cluster", "recreate"],
    kind: Kind::Counter,
};
/// `update_resource_to_cluster`.
pub static UPDATE_RESOURCE_TO_CLUSTER: Desc = Desc {
    name: "update_resource_to_cluster",
    help: "Number of updating operation of the resource to a target member cluster. By the result, 'error' means a resource updated failed. Otherwise 'success'. member_cluster means the target member cluster. operationResult means the result of the update operation.",
    labels: &[
        "result",
        "apiversion",
        "kind",
        "member_cluster",
        "operationResult",
    ],
    kind: Kind::Counter,
};
/// `delete_resource_from_cluster`.
pub static DELETE_RESOURCE_FROM_CLUSTER: Desc = Desc {
    name: "delete_resource_from_cluster",
    help: "Number of deletion operations against a target member cluster. The 'result' label indicates outcome ('success' or 'error'). Labels 'apiversion', 'kind', and 'member_cluster' specify the resource's API version, type, and source cluster respectively.",
    labels: &["result", "apiversion", "kind", "member_cluster"],
    kind: Kind::Counter,
};

const EVICTION_BUCKETS: [f64; 15] = exponential_buckets(0.001, 2.0);

/// `eviction_queue_depth`.
pub static EVICTION_QUEUE_DEPTH: Desc = Desc {
    name: "eviction_queue_depth",
    help: "Current depth of the eviction queue",
    labels: &["name"],
    kind: Kind::Gauge,
};
/// `eviction_kind_total`.
pub static EVICTION_KIND_TOTAL: Desc = Desc {
    name: "eviction_kind_total",
    help: "Number of resources in the eviction queue by resource kind",
    labels: &["member_cluster", "resource_kind"],
    kind: Kind::Gauge,
};
/// `eviction_processing_latency_seconds`.
pub static EVICTION_PROCESSING_LATENCY: Desc = Desc {
    name: "eviction_processing_latency_seconds",
    help: "Latency of processing an eviction task in seconds",
    labels: &["name"],
    kind: Kind::Histogram(&EVICTION_BUCKETS),
};
/// `eviction_processing_total`.
pub static EVICTION_PROCESSING_TOTAL: Desc = Desc {
    name: "eviction_processing_total",
    help: "Total number of evictions processed",
    labels: &["name", "result"],
    kind: Kind::Counter,
};

const fn cluster_gauge(name: &'static str, help: &'static str) -> Desc {
    Desc {
        name,
        help,
        labels: &["member_cluster"],
        kind: Kind::Gauge,
    }
}

/// The registry Karmada's series go to.
pub fn registry() -> &'static Registry {
    global()
}

/// Karmada's `result` label of an outcome (`utilmetrics.GetResultByError`).
pub fn result<T, E>(r: &Result<T, E>) -> &'static str {
    result_of(r.is_ok())
}

/// Karmada's `result` label: `error` for a failure, otherwise `success`.
fn result_of(ok: bool) -> &'static str {
    if ok { "success" } else { "error" }
}

/// Counts a create of a resource in a member cluster (`metrics.CountCreateResourceToCluster`;
/// Karmada's execution controller never passes `recreate`).
pub fn count_create_resource_to_cluster(ok: bool, api_version: &str, kind: &str, cluster: &str) {
    registry().inc(
        &CREATE_RESOURCE_TO_CLUSTER,
        &[result_of(ok), api_version, kind, cluster, "false"],
    );
}

/// Counts an update of a resource in a member cluster (`metrics.CountUpdateResourceToCluster`);
/// `operation` is Karmada's OperationResult: `none` (not sent: nothing differs, or it
/// failed), `unchanged` (sent, the object kept its version) or `updated`.
pub fn count_update_resource_to_cluster(
    ok: bool,
    api_version: &str,
    kind: &str,
    cluster: &str,
    operation: &str,
) {
    registry().inc(
        &UPDATE_RESOURCE_TO_CLUSTER,
        &[result_of(ok), api_version, kind, cluster, operation],
    );
}

/// Counts a delete of a resource from a member cluster
/// (`metrics.CountDeleteResourceFromCluster`).
pub fn count_delete_resource_from_cluster(ok: bool, api_version: &str, kind: &str, cluster: &str) {
    registry().inc(
        &DELETE_RESOURCE_FROM_CLUSTER,
        &[result_of(ok), api_version, kind, cluster],
    );
}

/// Records an eviction queue's depth (`metrics.RecordEvictionQueueMetrics`).
pub fn record_eviction_queue_depth(queue: &str, depth: usize) {
    registry().set(&EVICTION_QUEUE_DEPTH, &[queue], depth as f64);
}

/// Counts a binding entering (`+1`) or leaving (`-1`) an eviction queue for a cluster
/// (`metrics.RecordEvictionKindMetrics`).
pub fn record_eviction_kind(cluster: &str, kind: &str, entering: bool) {
    let delta = if entering { 1.0 } else { -1.0 };
    registry().add(&EVICTION_KIND_TOTAL, &[cluster, kind], delta);
}

/// Records one pass of an eviction queue (`metrics.RecordEvictionProcessingMetrics`).
pub fn record_eviction_processing(queue: &str, took: Duration, ok: bool) {
    let r = registry();
    r.observe_duration(&EVICTION_PROCESSING_LATENCY, &[queue], took);
    r.inc(&EVICTION_PROCESSING_TOTAL, &[queue, result_of(ok)]);
}

/// Records one scheduling attempt (`metrics.BindingSchedule`): `scheduled` or `error`.
pub fn binding_schedule(schedule_type: &str, took: Duration, ok: bool) {
    let result = if ok { "scheduled" } else { "error" };
    let r = registry();
    r.inc(&SCHEDULE_ATTEMPTS, &[result, schedule_type]);
    r.observe_duration(&E2E_SCHEDULING_DURATION, &[result, schedule_type], took);
}

/// Records one step of the scheduling algorithm (`metrics.ScheduleStep`).
pub fn schedule_step(step: &str, took: Duration) {
    registry().observe_duration(&SCHEDULING_ALGORITHM_DURATION, &[step], took);
}

/// Records a cluster's status gauges (`metrics.RecordClusterStatus`).
pub fn record_cluster_status(name: &str, status: &ClusterStatus) {
    let r = registry();
    let ready = status
        .conditions
        .iter()
        .any(|c| c.type_ == CLUSTER_CONDITION_READY && c.status == "True");
    r.set(&CLUSTER_READY, &[name], if ready { 1.0 } else { 0.0 });
    if let Some(n) = &status.node_summary {
        r.set(&CLUSTER_NODES, &[name], f64::from(n.total_num));
        r.set(&CLUSTER_READY_NODES, &[name], f64::from(n.ready_num));
    }
    if let Some(s) = &status.resource_summary {
        // Karmada sets these only when the summary has the list at all.
        let lists = [
            (
                &s.allocatable,
                [
                    &CLUSTER_MEMORY_ALLOCATABLE,
                    &CLUSTER_CPU_ALLOCATABLE,
                    &CLUSTER_POD_ALLOCATABLE,
                ],
            ),
            (
                &s.allocated,
                [
                    &CLUSTER_MEMORY_ALLOCATED,
                    &CLUSTER_CPU_ALLOCATED,
                    &CLUSTER_POD_ALLOCATED,
                ],
            ),
        ];
        for (list, descs) in lists {
            if list.is_empty() {
                continue;
            }
            for (resource, desc) in ["memory", "cpu", "pods"].into_iter().zip(descs) {
                r.set(desc, &[name], approximate(list.get(resource)));
            }
        }
    }
}

/// `Quantity.AsApproximateFloat64()`; a missing or malformed quantity is zero.
fn approximate(q: Option<&Quantity>) -> f64 {
    q.and_then(|q| ParsedQuantity::parse(&q.0).ok())
        .map_or(0.0, |p| p.nanos() as f64 / 1e9)
}

/// Removes a deleted cluster's series (`metrics.CleanupMetricsForCluster`).
pub fn cleanup_cluster(name: &str) {
    let r = registry();
    for desc in [
        &CLUSTER_READY,
        &CLUSTER_NODES,
        &CLUSTER_READY_NODES,
        &CLUSTER_MEMORY_ALLOCATABLE,
        &CLUSTER_CPU_ALLOCATABLE,
        &CLUSTER_POD_ALLOCATABLE,
        &CLUSTER_MEMORY_ALLOCATED,
        &CLUSTER_CPU_ALLOCATED,
        &CLUSTER_POD_ALLOCATED,
        &CLUSTER_SYNC_STATUS_DURATION,
    ] {
        r.remove(desc, &[name]);
    }
}
