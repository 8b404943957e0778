//! karmada-scheduler's decisions (`pkg/scheduler/core` and `pkg/scheduler/framework`): filter
//! clusters, score them, select them under spread constraints and assign replicas.
//!
//! No I/O, no async runtime and no API client: the scheduling controller (in `controllers/`)
//! feeds in the binding and the clusters and writes the result. Must not depend on the
//! controllers, the API server or storage.

mod assignment;
mod estimator;
pub mod filter;
pub mod resource;
pub mod selector;
mod spread;
mod webster;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Instant;

use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::Placement;
use karmada_api::work::v1alpha2::{
    BINDING_REASON_NO_CLUSTER_FIT, BINDING_REASON_SCHEDULER_ERROR, BINDING_REASON_UNSCHEDULABLE,
    ReplicaRequirements, ResourceBindingSpec, ResourceBindingStatus, TargetCluster,
};

use karmada_metrics as metrics;

pub use estimator::max_available_replicas;
pub use filter::{ApiEnablement, api_enabled, find_untolerated_taint, taint_to_string, tolerates};
pub use selector::{
    ImplicitPriority, cluster_matches, label_selector_matches, resource_match_selectors_priority,
    resource_selector_priority,
};
pub use webster::{TieBreaker, allocate_by_weight, spread_replicas_by_target_clusters};

/// Message of the `Scheduled` condition on success.
pub const SUCCESSFUL_SCHEDULING_MESSAGE: &str = "Binding has been scheduled successfully.";

/// Everything one scheduling decision depends on.
#[derive(Clone, Debug)]
pub struct ScheduleInput<'a> {
    /// The placement copied into the binding.
    pub placement: &'a Placement,
    /// Total replicas of the workload (`spec.replicas`); 0 for non-workloads.
    pub replicas: i32,
    /// What one replica needs (`spec.replicaRequirements`).
    pub replica_requirements: Option<&'a ReplicaRequirements>,
    /// apiVersion of the resource template, for the APIEnablement filter.
    pub api_version: &'a str,
    /// Kind of the resource template, for the APIEnablement filter.
    pub kind: &'a str,
    /// UID of the resource template; it picks how ties between equal weights are broken.
    pub uid: &'a str,
    /// All member clusters.
    pub clusters: &'a [Cluster],
    /// The previous result (`spec.clusters`): kept in "Steady" mode, preferred by ClusterLocality,
    /// and exempt from the APIEnablement and TaintToleration filters.
    pub previous: &'a [TargetCluster],
    /// Clusters the workload is being evicted from (`spec.gracefulEvictionTasks[].fromCluster`).
    pub evicting_clusters: BTreeSet<String>,
    /// `status.schedulerObservingAffinityName`: the clusterAffinities group used last time, where
    /// the search starts.
    pub observed_affinity_name: &'a str,
    /// "Fresh" mode: ignore the previous division (`rescheduleTriggeredAt` later than
    /// `lastScheduledTime`, see [`reschedule_required`]).
    pub fresh: bool,
    /// Keep selected clusters that got 0 replicas in the result (the scheduler's
    /// `--enable-empty-workload-propagation`, off by default).
    pub enable_empty_workload_propagation: bool,
}

impl<'a> ScheduleInput<'a> {
    /// The input for a binding as the scheduler sees it; `None` when the binding has no placement.
    pub fn for_binding(
        spec: &'a ResourceBindingSpec,
        status: &'a ResourceBindingStatus,
        clusters: &'a [Cluster],
    ) -> Option<Self> {
        let placement = spec.placement.as_ref()?;
        Some(ScheduleInput {
            placement,
            replicas: spec.replicas,
            replica_requirements: spec.replica_requirements.as_ref(),
            api_version: &spec.resource.api_version,
            kind: &spec.resource.kind,
            uid: &spec.resource.uid,
            clusters,
            previous: &spec.clusters,
            evicting_clusters: spec
                .graceful_eviction_tasks
                .iter()
                .map(|t| t.from_cluster.clone())
                .collect(),
            observed_affinity_name: &status.scheduler_observed_affinity_name,
            fresh: reschedule_required(
                spec.reschedule_triggered_at.as_ref().map(|t| &t.0),
                status.last_scheduled_time.as_ref().map(|t| &t.0),
            ),
            // The scheduler's flag, not the binding's: the caller sets it.
            enable_empty_workload_propagation: false,
        })
    }

    /// Whether the binding is for a workload (`ResourceBindingSpec.IsWorkload`).
    pub fn is_workload(&self) -> bool {
        self.replicas > 0 || self.replica_requirements.is_some()
    }
}

/// Whether an explicitly requested reschedule is pending (Karmada `util.RescheduleRequired`):
/// the trigger is later than the last successful schedule.
pub fn reschedule_required(
    triggered_at: Option<&k8s_openapi::jiff::Timestamp>,
    last_scheduled: Option<&k8s_openapi::jiff::Timestamp>,
) -> bool {
    match (triggered_at, last_scheduled) {
        (Some(t), Some(l)) => t > l,
        _ => false,
    }
}

/// A successful scheduling decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleResult {
    /// The new `spec.clusters`.
    pub clusters: Vec<TargetCluster>,
    /// The clusterAffinities group that produced the result, to be written to
    /// `status.schedulerObservingAffinityName`; `None` when the placement uses clusterAffinity.
    pub affinity_name: Option<String>,
}

/// No cluster passed the filters (Karmada `framework.FitError`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FitError {
    /// How many clusters were considered.
    pub num_all_clusters: usize,
    /// Why each filtered cluster was rejected, by cluster name.
    pub reasons: BTreeMap<String, String>,
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.num_all_clusters == 0 || self.reasons.is_empty() {
            return write!(
                f,
                "0/{} clusters are available: no cluster exists.",
                self.num_all_clusters
            );
        }
        let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
        for reason in self.reasons.values() {
            *histogram.entry(reason).or_insert(0) += 1;
        }
        let mut parts: Vec<String> = histogram
            .iter()
            .map(|(reason, n)| format!("{n} {reason}"))
            .collect();
        parts.sort();
        write!(
            f,
            "0/{} clusters are available: {}.",
            self.num_all_clusters,
            parts.join(", ")
        )
    }
}

/// Why scheduling failed; the variants map to the reasons of the `Scheduled` condition, and
/// `Display` gives its message as Karmada words it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// No cluster fits (reason NoClusterFit). Karmada clears `spec.clusters` and does not retry.
    #[error("{0}")]
    NoClusterFit(FitError),
    /// Clusters fit but cannot take the replicas (reason Unschedulable); retried.
    #[error("{0}")]
    Unschedulable(String),
    /// Any other failure (reason SchedulerError); retried.
    #[error("{0}")]
    Failed(String),
}

impl ScheduleError {
    /// The reason of the `Scheduled` condition.
    pub fn reason(&self) -> &'static str {
        match self {
            ScheduleError::NoClusterFit(_) => BINDING_REASON_NO_CLUSTER_FIT,
            ScheduleError::Unschedulable(_) => BINDING_REASON_UNSCHEDULABLE,
            ScheduleError::Failed(_) => BINDING_REASON_SCHEDULER_ERROR,
        }
    }
}

/// Schedules a binding: with clusterAffinities, tries the groups in order from the one used last
/// time and keeps the first that succeeds (the scheduler's `scheduleResourceBindingWithClusterAffinities`);
/// when all fail, the error of the first group tried is returned.
pub fn schedule(input: &ScheduleInput<'_>) -> Result<ScheduleResult, ScheduleError> {
    let placement = input.placement;
    if placement.cluster_affinity.is_some() || placement.cluster_affinities.is_empty() {
        return schedule_once(input, input.observed_affinity_name).map(|clusters| ScheduleResult {
            clusters,
            affinity_name: None,
        });
    }
    let start = placement
        .cluster_affinities
        .iter()
        .position(|t| t.affinity_name == input.observed_affinity_name)
        .unwrap_or(0);
    let mut first_error = None;
    for term in &placement.cluster_affinities[start..] {
        match schedule_once(input, &term.affinity_name) {
            Ok(clusters) => {
                return Ok(ScheduleResult {
                    clusters,
                    affinity_name: Some(term.affinity_name.clone()),
                });
            }
            Err(e) => {
                tracing::debug!(affinity = %term.affinity_name, error = %e, "cluster affinity group does not fit");
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error
        .unwrap_or_else(|| ScheduleError::Failed("no cluster affinity to schedule with".into())))
}

/// One pass of the generic scheduler (`genericScheduler.Schedule`) with the given affinity group.
fn schedule_once(
    input: &ScheduleInput<'_>,
    affinity_name: &str,
) -> Result<Vec<TargetCluster>, ScheduleError> {
    let step = Instant::now();
    let affinities = filter::affinities_for(input, affinity_name);
    let mut feasible = Vec::new();
    let mut reasons = BTreeMap::new();
    for cluster in input.clusters {
        if cluster.metadata.deletion_timestamp.is_some() {
            continue;
        }
        match filter::run_filters(input, affinities.as_deref(), cluster) {
            Ok(()) => feasible.push(cluster),
            Err(reason) => {
                reasons.insert(cluster.metadata.name.clone().unwrap_or_default(), reason);
            }
        }
    }
    metrics::schedule_step("Filter", step.elapsed());
    if feasible.is_empty() {
        return Err(ScheduleError::NoClusterFit(FitError {
            num_all_clusters: input.clusters.len(),
            reasons,
        }));
    }

    let step = Instant::now();
    let scored: Vec<(&Cluster, i64)> = feasible
        .into_iter()
        .map(|c| {
            let name = c.metadata.name.as_deref().unwrap_or("");
            (c, filter::locality_score(input, name))
        })
        .collect();

    metrics::schedule_step("Score", step.elapsed());
    let step = Instant::now();
    let selected = spread::select_clusters(input, affinity_name, scored)
        .map_err(|e| ScheduleError::Failed(format!("failed to select clusters: {e}")));
    metrics::schedule_step("Select", step.elapsed());
    let selected = selected?;

    let step = Instant::now();
    let result =
        assignment::assign_replicas(input, affinity_name, &selected).map_err(|e| match e {
            assignment::AssignError::Unschedulable(m) => {
                ScheduleError::Unschedulable(format!("failed to assign replicas: {m}"))
            }
            assignment::AssignError::Failed(m) => {
                ScheduleError::Failed(format!("failed to assign replicas: {m}"))
            }
        });
    metrics::schedule_step("AssignReplicas", step.elapsed());
    let mut result = result?;

    if input.enable_empty_workload_propagation {
        for c in &selected {
            if !result.iter().any(|t| t.name == c.name) {
                result.push(TargetCluster {
                    name: c.name.clone(),
                    replicas: 0,
                });
            }
        }
    }
    Ok(result)
}

#[cfg(test)]
mod tests;
