//! Assigning replicas to the selected clusters (Karmada `pkg/scheduler/core/assignment.go`,
//! `division_algorithm.go` and `common.go`): Duplicated, static weights, dynamic weights and
//! Aggregated, each in "Steady" or "Fresh" mode.

use karmada_api::policy::v1alpha1::{ReplicaDivisionPreference, ReplicaSchedulingType};
use karmada_api::work::v1alpha2::TargetCluster;

use super::ScheduleInput;
use super::selector::cluster_matches;
use super::spread::ClusterDetail;
use super::webster::{TieBreaker, allocate_by_weight, sort_by_replicas_desc};

/// Why replicas could not be assigned; the message excludes the "failed to assign replicas: "
/// prefix the caller adds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AssignError {
    /// Not enough capacity (`framework.UnschedulableError`).
    Unschedulable(String),
    /// Anything else.
    Failed(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Strategy {
    Duplicated,
    Aggregated,
    StaticWeight,
    DynamicWeight,
}

fn strategy(input: &ScheduleInput<'_>) -> Result<Strategy, AssignError> {
    let Some(rs) = &input.placement.replica_scheduling else {
        return Ok(Strategy::Duplicated);
    };
    let kind = rs
        .replica_scheduling_type
        .unwrap_or(ReplicaSchedulingType::Divided);
    match (kind, rs.replica_division_preference) {
        (ReplicaSchedulingType::Duplicated, _) => Ok(Strategy::Duplicated),
        (_, Some(ReplicaDivisionPreference::Aggregated)) => Ok(Strategy::Aggregated),
        (_, Some(ReplicaDivisionPreference::Weighted)) => Ok(
            if rs
                .weight_preference
                .as_ref()
                .is_some_and(|w| w.dynamic_weight.is_some())
            {
                Strategy::DynamicWeight
            } else {
                Strategy::StaticWeight
            },
        ),
        (_, None) => Err(AssignError::Failed(format!(
            "unsupported replica scheduling strategy, replicaSchedulingType: {}, replicaDivisionPreference: , please try another scheduling strategy",
            kind.as_str()
        ))),
    }
}

/// Assigns replicas to the selected clusters (`AssignReplicas`); non-workloads get every cluster
/// with no replicas.
pub(crate) fn assign_replicas(
    input: &ScheduleInput<'_>,
    affinity_name: &str,
    clusters: &[ClusterDetail<'_>],
) -> Result<Vec<TargetCluster>, AssignError> {
    if clusters.is_empty() {
        return Err(AssignError::Failed(
            "no clusters available to schedule".into(),
        ));
    }
    if !input.is_workload() {
        return Ok(clusters
            .iter()
            .map(|c| TargetCluster {
                name: c.name.clone(),
                replicas: 0,
            })
            .collect());
    }
    if overflow_enabled(input, affinity_name) {
        return assign_with_overflow(input, clusters);
    }
    assign_to_clusters(input, clusters, input.replicas)
}

/// Overflow tiers apply when the affinity group in force declares overflow affinities
/// (`enableOverflow`).
fn overflow_enabled(input: &ScheduleInput<'_>, affinity_name: &str) -> bool {
    let placement = input.placement;
    if placement.cluster_affinity.is_some() || affinity_name.is_empty() {
        return false;
    }
    placement
        .cluster_affinities
        .iter()
        .any(|t| t.affinity_name == affinity_name && !t.overflow_affinities.is_empty())
}

/// Fills the primary tier first, then each overflow tier with what remains
/// (`assignWorkloadReplicas` with overflow).
fn assign_with_overflow(
    input: &ScheduleInput<'_>,
    clusters: &[ClusterDetail<'_>],
) -> Result<Vec<TargetCluster>, AssignError> {
    let max_order = clusters.iter().map(|c| c.overflow_order).max().unwrap_or(0);
    let mut results = Vec::new();
    let mut remaining = i64::from(input.replicas);
    for order in 0..=max_order {
        let tier: Vec<ClusterDetail<'_>> = clusters
            .iter()
            .filter(|c| c.overflow_order == order)
            .cloned()
            .collect();
        if tier.is_empty() {
            continue;
        }
        let available = super::webster::saturating_sum(tier.iter().map(|c| c.available_replicas));
        let share = remaining.min(available);
        let share = i32::try_from(share).unwrap_or(i32::MAX);
        results.extend(assign_to_clusters(input, &tier, share)?);
        remaining -= i64::from(share);
        if remaining <= 0 {
            break;
        }
    }
    if remaining > 0 {
        return Err(AssignError::Unschedulable(
            "Clusters available replicas are not enough to schedule.".into(),
        ));
    }
    Ok(results)
}

/// Runs the strategy and drops clusters left with no replicas (`assignReplicasToClusters`).
fn assign_to_clusters(
    input: &ScheduleInput<'_>,
    clusters: &[ClusterDetail<'_>],
    replicas: i32,
) -> Result<Vec<TargetCluster>, AssignError> {
    let result = match strategy(input)? {
        Strategy::Duplicated => clusters
            .iter()
            .map(|c| TargetCluster {
                name: c.name.clone(),
                replicas,
            })
            .collect(),
        Strategy::StaticWeight => static_weight(input, clusters, replicas),
        Strategy::Aggregated => dynamic(input, clusters, replicas, true)?,
        Strategy::DynamicWeight => dynamic(input, clusters, replicas, false)?,
    };
    Ok(result.into_iter().filter(|t| t.replicas > 0).collect())
}

/// Divides by the static weight list: a cluster's weight is the highest weight of the rules it
/// matches, clusters matching none are left out, and all clusters weigh 1 when none matches
/// (`assignByStaticWeightStrategy`, `getStaticWeightInfoList`).
fn static_weight(
    input: &ScheduleInput<'_>,
    clusters: &[ClusterDetail<'_>],
    replicas: i32,
) -> Vec<TargetCluster> {
    let rules = input
        .placement
        .replica_scheduling
        .as_ref()
        .and_then(|rs| rs.weight_preference.as_ref())
        .map(|w| w.static_weight_list.as_slice());
    let mut weights: Vec<(String, i64)> = match rules {
        // No weightPreference: every cluster weighs the same.
        None => clusters.iter().map(|c| (c.name.clone(), 1)).collect(),
        Some(rules) => clusters
            .iter()
            .filter_map(|c| {
                let weight = rules
                    .iter()
                    .filter(|r| cluster_matches(c.cluster, &r.target_cluster))
                    .map(|r| r.weight)
                    .fold(0, i64::max);
                (weight > 0).then(|| (c.name.clone(), weight))
            })
            .collect(),
    };
    if super::webster::saturating_sum(weights.iter().map(|(_, w)| *w)) == 0 {
        weights = clusters.iter().map(|c| (c.name.clone(), 1)).collect();
    }
    allocate_by_weight(replicas, &weights, &[], TieBreaker::from_uid(input.uid))
}

/// The dynamic strategies (Aggregated, or Weighted by available replicas) in Steady or Fresh
/// mode (`assignByDynamicStrategy`).
fn dynamic(
    input: &ScheduleInput<'_>,
    clusters: &[ClusterDetail<'_>],
    replicas: i32,
    aggregated: bool,
) -> Result<Vec<TargetCluster>, AssignError> {
    // Only clusters that are still candidates keep their previous replicas; the others' replicas
    // count as new ones to place.
    let scheduled: Vec<TargetCluster> = input
        .previous
        .iter()
        .filter(|t| clusters.iter().any(|c| c.name == t.name))
        .cloned()
        .collect();
    let assigned: i64 = scheduled.iter().map(|t| i64::from(t.replicas)).sum();
    let target = i64::from(replicas);
    let wrap = |prefix: &str, e: AssignError| match e {
        AssignError::Unschedulable(m) => AssignError::Unschedulable(format!("{prefix}: {m}")),
        AssignError::Failed(m) => AssignError::Failed(format!("{prefix}: {m}")),
    };

    if input.fresh {
        // Fresh: everything may move; the replicas a cluster already runs count as available there.
        let mut available: Vec<TargetCluster> = clusters
            .iter()
            .map(|c| TargetCluster {
                name: c.name.clone(),
                replicas: c.allocatable_replicas.saturating_add(
                    scheduled
                        .iter()
                        .find(|t| t.name == c.name)
                        .map(|t| t.replicas)
                        .unwrap_or(0),
                ),
            })
            .collect();
        sort_by_replicas_desc(&mut available);
        return divide(input, replicas, available, &[], aggregated)
            .map_err(|e| wrap("failed to do fresh scale", e));
    }
    if assigned > target {
        // Scale down in proportion to the current division.
        let mut available = scheduled.clone();
        sort_by_replicas_desc(&mut available);
        return divide(input, replicas, available, &[], aggregated)
            .map_err(|e| wrap("failed to scale down", e));
    }
    if assigned < target {
        // Scale up: only the extra replicas are placed, weighted by free capacity, clusters that
        // already run replicas first.
        let extra = i32::try_from(target - assigned).unwrap_or(i32::MAX);
        let mut available: Vec<TargetCluster> = clusters
            .iter()
            .map(|c| TargetCluster {
                name: c.name.clone(),
                replicas: c.allocatable_replicas,
            })
            .collect();
        sort_by_replicas_desc(&mut available);
        return divide(input, extra, available, &scheduled, aggregated)
            .map_err(|e| wrap("failed to scale up", e));
    }
    Ok(scheduled)
}

/// Divides `target` replicas weighted by `available`, then adds them to `scheduled`
/// (`dynamicDivideReplicas` and `util.MergeTargetClusters`). Aggregated first trims the list to
/// the fewest clusters that can hold the replicas, previously used clusters first.
fn divide(
    input: &ScheduleInput<'_>,
    target: i32,
    mut available: Vec<TargetCluster>,
    scheduled: &[TargetCluster],
    aggregated: bool,
) -> Result<Vec<TargetCluster>, AssignError> {
    let total: i64 = available.iter().map(|t| i64::from(t.replicas)).sum();
    if total < i64::from(target) {
        return Err(AssignError::Unschedulable(format!(
            "Clusters available replicas {} are not enough to schedule.",
            i32::try_from(total).unwrap_or(i32::MAX)
        )));
    }
    if aggregated {
        let prior: Vec<&str> = scheduled
            .iter()
            .filter(|t| t.replicas > 0)
            .map(|t| t.name.as_str())
            .collect();
        if !prior.is_empty() {
            let (mut first, rest): (Vec<TargetCluster>, Vec<TargetCluster>) = available
                .into_iter()
                .partition(|t| prior.contains(&t.name.as_str()));
            first.extend(rest);
            available = first;
        }
        let mut sum = 0i64;
        if let Some(cut) = available.iter().position(|t| {
            sum = sum.saturating_add(i64::from(t.replicas));
            sum >= i64::from(target)
        }) {
            available.truncate(cut + 1);
        }
    }
    let weights: Vec<(String, i64)> = available
        .iter()
        .map(|t| (t.name.clone(), i64::from(t.replicas)))
        .collect();
    let new = allocate_by_weight(target, &weights, &[], TieBreaker::from_uid(input.uid));
    Ok(merge_target_clusters(scheduled, new))
}

/// Adds the old replicas to the new division (`util.MergeTargetClusters`); old clusters absent
/// from the new division are appended by name.
fn merge_target_clusters(old: &[TargetCluster], mut new: Vec<TargetCluster>) -> Vec<TargetCluster> {
    if old.is_empty() {
        return new;
    }
    if new.is_empty() {
        return old.to_vec();
    }
    let mut leftover: Vec<TargetCluster> = Vec::new();
    for o in old {
        match new.iter_mut().find(|n| n.name == o.name) {
            Some(n) => n.replicas = n.replicas.saturating_add(o.replicas),
            None => leftover.push(o.clone()),
        }
    }
    leftover.sort_by(|a, b| a.name.cmp(&b.name));
    new.extend(leftover);
    new
}
