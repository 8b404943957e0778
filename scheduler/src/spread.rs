//! Grouping scored clusters and selecting them under spread constraints
//! (Karmada `pkg/scheduler/core/spreadconstraint`).

use std::collections::BTreeMap;

use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::{
    Placement, ReplicaDivisionPreference, ReplicaSchedulingType, SpreadConstraint, SpreadFieldValue,
};

use super::ScheduleInput;
use super::estimator::max_available_replicas;
use super::selector::cluster_matches;

/// A feasible cluster with what selection and assignment need (`ClusterDetailInfo`).
#[derive(Clone, Debug)]
pub(crate) struct ClusterDetail<'a> {
    pub name: String,
    pub score: i64,
    /// 0 for the primary affinity, n for the n-th overflow affinity.
    pub overflow_order: i32,
    /// Estimated free replicas plus the replicas already assigned here.
    pub available_replicas: i64,
    /// Estimated free replicas.
    pub allocatable_replicas: i32,
    pub cluster: &'a Cluster,
}

/// Orders clusters by overflow order, then score descending, then available replicas
/// descending, then name (`sortClusters` with the available-replicas comparator).
fn sort_clusters(clusters: &mut [ClusterDetail<'_>]) {
    clusters.sort_by(|a, b| {
        a.overflow_order
            .cmp(&b.overflow_order)
            .then(b.score.cmp(&a.score))
            .then(b.available_replicas.cmp(&a.available_replicas))
            .then(a.name.cmp(&b.name))
    });
}

/// Estimated free replicas per cluster (`calAvailableReplicas` with the general estimator):
/// unbounded for non-workloads, and the workload's replicas when nothing bounds it.
fn available_replicas(input: &ScheduleInput<'_>, cluster: &Cluster) -> i32 {
    if input.replicas == 0 {
        return i32::MAX;
    }
    match max_available_replicas(cluster, input.replica_requirements) {
        i32::MAX => input.replicas,
        n => n,
    }
}

/// The overflow tier of a cluster (`getClusterOverflowOrder`).
fn overflow_order(placement: &Placement, affinity_name: &str, cluster: &Cluster) -> i32 {
    if placement.cluster_affinity.is_some() || placement.cluster_affinities.is_empty() {
        return 0;
    }
    let Some(term) = placement
        .cluster_affinities
        .iter()
        .find(|t| t.affinity_name == affinity_name)
    else {
        return 1000;
    };
    if cluster_matches(cluster, &term.cluster_affinity) {
        return 0;
    }
    term.overflow_affinities
        .iter()
        .position(|o| cluster_matches(cluster, &o.cluster_affinity))
        .map(|i| i32::try_from(i + 1).unwrap_or(i32::MAX))
        .unwrap_or(1000)
}

/// Builds the sorted cluster details (`generateClustersInfo`).
fn cluster_details<'a>(
    input: &ScheduleInput<'_>,
    affinity_name: &str,
    scored: Vec<(&'a Cluster, i64)>,
) -> Vec<ClusterDetail<'a>> {
    let mut details: Vec<ClusterDetail<'a>> = scored
        .into_iter()
        .map(|(cluster, score)| {
            let name = cluster.metadata.name.clone().unwrap_or_default();
            let allocatable = available_replicas(input, cluster);
            let assigned = input
                .previous
                .iter()
                .find(|t| t.name == name)
                .map(|t| t.replicas)
                .unwrap_or(0);
            ClusterDetail {
                overflow_order: overflow_order(input.placement, affinity_name, cluster),
                available_replicas: i64::from(allocatable) + i64::from(assigned),
                allocatable_replicas: allocatable,
                name,
                score,
                cluster,
            }
        })
        .collect();
    sort_clusters(&mut details);
    details
}

fn is_divided(placement: &Placement) -> bool {
    placement.replica_scheduling.as_ref().is_some_and(|s| {
        s.replica_scheduling_type
            .unwrap_or(ReplicaSchedulingType::Divided)
            == ReplicaSchedulingType::Divided
    })
}

/// Static weighting ignores spread constraints (`shouldIgnoreSpreadConstraint`).
fn should_ignore_spread_constraint(placement: &Placement) -> bool {
    let Some(strategy) = &placement.replica_scheduling else {
        return false;
    };
    is_divided(placement)
        && strategy.replica_division_preference == Some(ReplicaDivisionPreference::Weighted)
        && strategy
            .weight_preference
            .as_ref()
            .is_none_or(|w| !w.static_weight_list.is_empty() && w.dynamic_weight.is_none())
}

/// Duplicated placements select clusters without looking at capacity (`shouldIgnoreAvailableResource`).
fn should_ignore_available_resource(placement: &Placement) -> bool {
    !is_divided(placement)
}

/// Groups and selects the clusters to assign replicas to (`SelectClusters`).
pub(crate) fn select_clusters<'a>(
    input: &ScheduleInput<'_>,
    affinity_name: &str,
    scored: Vec<(&'a Cluster, i64)>,
) -> Result<Vec<ClusterDetail<'a>>, String> {
    let clusters = cluster_details(input, affinity_name, scored);
    let placement = input.placement;
    if placement.spread_constraints.is_empty() || should_ignore_spread_constraint(placement) {
        return Ok(clusters);
    }
    let need_replicas = if should_ignore_available_resource(placement) {
        None
    } else {
        Some(i64::from(input.replicas))
    };
    let mut by_field: BTreeMap<Option<SpreadFieldValue>, &SpreadConstraint> = BTreeMap::new();
    for c in &placement.spread_constraints {
        by_field.insert(c.spread_by_field, c);
    }
    let default_constraint = SpreadConstraint::default();
    let cluster_constraint = by_field
        .get(&Some(SpreadFieldValue::Cluster))
        .copied()
        .unwrap_or(&default_constraint);
    if let Some(region_constraint) = by_field.get(&Some(SpreadFieldValue::Region)) {
        return select_by_region(input, clusters, region_constraint, cluster_constraint);
    }
    if by_field.contains_key(&Some(SpreadFieldValue::Cluster)) {
        return select_by_cluster(clusters, cluster_constraint, need_replicas);
    }
    Err("just support cluster and region spread constraint".into())
}

fn to_usize(n: i64) -> usize {
    usize::try_from(n.max(0)).unwrap_or(usize::MAX)
}

/// Picks up to maxGroups clusters by score, swapping in clusters with more capacity when the
/// best-scored ones cannot hold the replicas (`selectBestClustersByCluster`).
fn select_by_cluster<'a>(
    mut clusters: Vec<ClusterDetail<'a>>,
    constraint: &SpreadConstraint,
    need_replicas: Option<i64>,
) -> Result<Vec<ClusterDetail<'a>>, String> {
    if (clusters.len() as i64) < constraint.min_groups {
        return Err(
            "the number of feasible clusters is less than spreadConstraint.MinGroups".into(),
        );
    }
    let need = clusters.len().min(to_usize(constraint.max_groups));
    let Some(need_replicas) = need_replicas else {
        clusters.truncate(need);
        return Ok(clusters);
    };
    let mut rest = clusters.split_off(need);
    let mut selected = clusters;
    let enough = |s: &[ClusterDetail<'_>]| {
        s.iter()
            .fold(0i64, |sum, c| sum.saturating_add(c.available_replicas))
            >= need_replicas
    };
    let mut update = selected.len();
    while !enough(&selected) && update > 0 {
        let idx = update - 1;
        let mut best: Option<usize> = None;
        let mut max_available = selected[idx].available_replicas;
        for (i, c) in rest.iter().enumerate() {
            if max_available < c.available_replicas {
                best = Some(i);
                max_available = c.available_replicas;
            }
        }
        if let Some(i) = best {
            std::mem::swap(&mut selected[idx], &mut rest[i]);
        }
        update -= 1;
    }
    if !enough(&selected) {
        return Err(format!("no enough resource when selecting {need} clusters"));
    }
    Ok(selected)
}

/// A region with its clusters (`RegionInfo`).
struct Region<'a> {
    name: String,
    score: i64,
    clusters: Vec<ClusterDetail<'a>>,
}

/// Weight unit that makes replica counts dominate the average score (`weightUnit`).
const WEIGHT_UNIT: i64 = 1000;

/// Scores a group of clusters (`calcGroupScore`).
fn group_score(input: &ScheduleInput<'_>, clusters: &[ClusterDetail<'_>], min_groups: i64) -> i64 {
    let replicas = i64::from(input.replicas);
    if !is_divided(input.placement) {
        let valid: Vec<&ClusterDetail<'_>> = clusters
            .iter()
            .filter(|c| c.available_replicas >= replicas)
            .collect();
        if valid.is_empty() {
            return 0;
        }
        let n = valid.len() as i64;
        let sum = valid.iter().fold(0i64, |s, c| s.saturating_add(c.score));
        return n.saturating_mul(WEIGHT_UNIT) + sum / n;
    }
    let min_groups = min_groups.max(1);
    // Saturating where Go's int64 would wrap: user-set minGroups and member-reported
    // capacities are unbounded.
    let target = replicas
        .saturating_add(min_groups - 1)
        .div_euclid(min_groups);
    let mut cluster_min_groups = input
        .placement
        .spread_constraints
        .iter()
        .filter(|c| c.spread_by_field == Some(SpreadFieldValue::Cluster))
        .map(|c| c.min_groups)
        .next_back()
        .unwrap_or(0);
    if cluster_min_groups < min_groups {
        cluster_min_groups = min_groups;
    }
    let (mut sum_available, mut sum_score, mut valid) = (0i64, 0i64, 0i64);
    for c in clusters {
        sum_available = sum_available.saturating_add(c.available_replicas);
        sum_score = sum_score.saturating_add(c.score);
        valid += 1;
        if valid >= cluster_min_groups && sum_available >= target {
            break;
        }
    }
    if sum_available < target {
        return sum_available
            .saturating_mul(WEIGHT_UNIT)
            .saturating_add(sum_score / (clusters.len().max(1) as i64));
    }
    target
        .saturating_mul(WEIGHT_UNIT)
        .saturating_add(sum_score / valid.max(1))
}

/// Picks regions satisfying both region and cluster constraints, then the best cluster of each
/// region, then more clusters by score up to the cluster maxGroups (`selectBestClustersByRegion`).
fn select_by_region<'a>(
    input: &ScheduleInput<'_>,
    clusters: Vec<ClusterDetail<'a>>,
    region_constraint: &SpreadConstraint,
    cluster_constraint: &SpreadConstraint,
) -> Result<Vec<ClusterDetail<'a>>, String> {
    let mut regions: BTreeMap<String, Region<'a>> = BTreeMap::new();
    for c in clusters {
        let region = c.cluster.spec.region.clone();
        if region.is_empty() {
            continue;
        }
        regions
            .entry(region.clone())
            .or_insert_with(|| Region {
                name: region,
                score: 0,
                clusters: Vec::new(),
            })
            .clusters
            .push(c);
    }
    for region in regions.values_mut() {
        region.score = group_score(input, &region.clusters, region_constraint.min_groups);
    }
    if (regions.len() as i64) < region_constraint.min_groups {
        return Err("the number of feasible region is less than spreadConstraint.MinGroups".into());
    }
    let groups: Vec<Group> = regions
        .values()
        .map(|r| Group {
            name: r.name.clone(),
            value: r.clusters.len() as i64,
            weight: r.score,
        })
        .collect();
    let chosen = select_groups(
        groups,
        region_constraint.min_groups,
        region_constraint.max_groups,
        cluster_constraint.min_groups,
    );
    if chosen.is_empty() {
        return Err(
            "the number of clusters is less than the cluster spreadConstraint.MinGroups".into(),
        );
    }
    let mut selected = Vec::new();
    let mut candidates = Vec::new();
    for group in chosen {
        if let Some(region) = regions.remove(&group.name) {
            let mut it = region.clusters.into_iter();
            if let Some(first) = it.next() {
                selected.push(first);
            }
            candidates.extend(it);
        }
    }
    let need = (candidates.len() + selected.len()).min(to_usize(cluster_constraint.max_groups));
    if need > selected.len() {
        let rest = need - selected.len();
        sort_clusters(&mut candidates);
        selected.extend(candidates.into_iter().take(rest));
    }
    Ok(selected)
}

/// A candidate group for the combination search (`GroupInfo`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Group {
    pub name: String,
    /// How many clusters the group has.
    pub value: i64,
    /// The group score.
    pub weight: i64,
}

/// A feasible combination of groups (`dfsPath`).
#[derive(Clone, Debug)]
struct Path {
    id: usize,
    groups: Vec<Group>,
    weight: i64,
    value: i64,
}

/// Finds the best combination of between `min` and `max` groups holding at least `target`
/// clusters (`selectGroups`): all feasible combinations by depth-first search, ranked by total
/// weight, then total value, then discovery order, preferring a prefix of the winner.
pub(crate) fn select_groups(mut groups: Vec<Group>, min: i64, max: i64, target: i64) -> Vec<Group> {
    if groups.is_empty() {
        return Vec::new();
    }
    groups.sort_by(|a, b| {
        a.value
            .cmp(&b.value)
            .then(b.weight.cmp(&a.weight))
            .then(a.name.cmp(&b.name))
    });
    let mut paths = Vec::new();
    let mut stack = Vec::new();
    let mut next_id = 0;
    dfs(
        &groups,
        &mut stack,
        0,
        0,
        min,
        max,
        target,
        &mut next_id,
        &mut paths,
    );
    if paths.is_empty() {
        return Vec::new();
    }
    if paths.len() == 1 {
        return paths.swap_remove(0).groups;
    }
    paths.sort_by(|a, b| {
        b.weight
            .cmp(&a.weight)
            .then(b.value.cmp(&a.value))
            .then(a.id.cmp(&b.id))
    });
    let mut best = 0;
    for i in 1..paths.len() {
        if is_sub_path(&paths[best], &paths[i]) {
            best = i;
        }
    }
    paths.swap_remove(best).groups
}

#[allow(clippy::too_many_arguments)]
fn dfs(
    groups: &[Group],
    stack: &mut Vec<Group>,
    sum: i64,
    begin: usize,
    min: i64,
    max: i64,
    target: i64,
    next_id: &mut usize,
    paths: &mut Vec<Path>,
) -> bool {
    let len = stack.len() as i64;
    if sum >= target && len >= min && len <= max {
        *next_id += 1;
        let mut found = stack.clone();
        found.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.name.cmp(&b.name)));
        paths.push(Path {
            id: *next_id,
            weight: found.iter().map(|g| g.weight).sum(),
            value: found.iter().map(|g| g.value).sum(),
            groups: found,
        });
        return true;
    }
    if len >= max {
        return true;
    }
    for i in begin..groups.len() {
        stack.push(groups[i].clone());
        dfs(
            groups,
            stack,
            sum + groups[i].value,
            i + 1,
            min,
            max,
            target,
            next_id,
            paths,
        );
        // Upstream stops backtracking when every group is needed to reach the minimum.
        if groups.len() as i64 == min {
            return false;
        }
        stack.pop();
    }
    true
}

/// Whether `sub` is a strict prefix of `path` by group names (`dfsPath.matchSubPath`).
fn is_sub_path(path: &Path, sub: &Path) -> bool {
    sub.groups.len() < path.groups.len()
        && sub
            .groups
            .iter()
            .zip(&path.groups)
            .all(|(a, b)| a.name == b.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, value: i64, weight: i64) -> Group {
        Group {
            name: name.into(),
            value,
            weight,
        }
    }

    fn names(groups: &[Group]) -> Vec<&str> {
        groups.iter().map(|g| g.name.as_str()).collect()
    }

    #[test]
    fn group_selection_table() {
        let cases = vec![
            // One region suffices: the highest weight wins.
            (vec![g("R1", 2, 100), g("R2", 3, 200)], 1, 2, 2, vec!["R2"]),
            // Two regions are required by min groups.
            (
                vec![g("R1", 1, 300), g("R2", 1, 200), g("R3", 1, 100)],
                2,
                2,
                2,
                vec!["R1", "R2"],
            ),
            // The cluster minimum forces a second region.
            (
                vec![g("R1", 1, 300), g("R2", 1, 200)],
                1,
                2,
                2,
                vec!["R1", "R2"],
            ),
            // Not enough clusters anywhere.
            (vec![g("R1", 1, 300), g("R2", 1, 200)], 1, 2, 3, vec![]),
            // A prefix of the best path is preferred.
            (
                vec![g("R1", 3, 300), g("R2", 3, 200), g("R3", 3, 100)],
                1,
                3,
                2,
                vec!["R1"],
            ),
        ];
        for (i, (groups, min, max, target, want)) in cases.into_iter().enumerate() {
            assert_eq!(
                names(&select_groups(groups, min, max, target)),
                want,
                "case {i}"
            );
        }
    }
}
