//! Filter and score plugins of Karmada's scheduler framework (`pkg/scheduler/framework/plugins`).

use k8s_openapi::api::core::v1::{Taint, Toleration};
use karmada_api::cluster::v1alpha1::{CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS, Cluster};
use karmada_api::policy::v1alpha1::{ClusterAffinity, SpreadFieldValue};

use super::ScheduleInput;
use super::selector::cluster_matches;

/// Score of a cluster the workload already runs on (`framework.MaxClusterScore`).
pub(crate) const MAX_CLUSTER_SCORE: i64 = 100;

/// The affinities the ClusterAffinity filter checks for one scheduling attempt; `None` when the
/// placement sets no affinity at all (every cluster passes).
pub(crate) fn affinities_for<'a>(
    input: &'a ScheduleInput<'a>,
    affinity_name: &str,
) -> Option<Vec<&'a ClusterAffinity>> {
    if let Some(affinity) = &input.placement.cluster_affinity {
        return Some(vec![affinity]);
    }
    let term = input
        .placement
        .cluster_affinities
        .iter()
        .find(|t| t.affinity_name == affinity_name)?;
    let mut affinities = vec![&term.cluster_affinity];
    if input.is_workload() {
        affinities.extend(term.overflow_affinities.iter().map(|o| &o.cluster_affinity));
    }
    Some(affinities)
}

/// Runs the filter plugins in a fixed order and returns the first failure reason
/// (`frameworkImpl.RunFilterPlugins`; upstream iterates a map, so the order is ours).
pub(crate) fn run_filters(
    input: &ScheduleInput<'_>,
    affinities: Option<&[&ClusterAffinity]>,
    cluster: &Cluster,
) -> Result<(), String> {
    let name = cluster.metadata.name.as_deref().unwrap_or("");
    let scheduled = input.previous.iter().any(|t| t.name == name);
    api_enablement(input, cluster, scheduled)?;
    taint_toleration(input, cluster, scheduled)?;
    cluster_affinity(affinities, cluster)?;
    spread_constraint(input, cluster)?;
    cluster_eviction(input, name)?;
    Ok(())
}

/// APIEnablement: the cluster must report the resource's group/version and kind, unless the
/// workload is already scheduled there. A missing entry fails the filter whether the list is
/// complete (API disabled) or not (API unknown), as only "enabled" passes upstream.
fn api_enablement(
    input: &ScheduleInput<'_>,
    cluster: &Cluster,
    scheduled: bool,
) -> Result<(), String> {
    if scheduled || api_enabled(cluster, input.api_version, input.kind) == ApiEnablement::Enabled {
        return Ok(());
    }
    Err("cluster(s) did not have the API resource".into())
}

/// Whether a cluster serves an API (Karmada `Cluster.APIEnablement`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApiEnablement {
    /// Listed in status.apiEnablements.
    Enabled,
    /// Not listed, and the list is complete (CompleteAPIEnablements is True).
    Disabled,
    /// Not listed, and the list may be partial.
    Unknown,
}

/// Looks an API up in a cluster's status.
pub fn api_enabled(cluster: &Cluster, api_version: &str, kind: &str) -> ApiEnablement {
    let listed = cluster
        .status
        .api_enablements
        .iter()
        .filter(|e| e.group_version == api_version)
        .any(|e| e.resources.iter().any(|r| r.kind == kind));
    if listed {
        return ApiEnablement::Enabled;
    }
    let complete = cluster
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == CLUSTER_CONDITION_COMPLETE_API_ENABLEMENTS && c.status == "True");
    if complete {
        ApiEnablement::Disabled
    } else {
        ApiEnablement::Unknown
    }
}

/// TaintToleration: every NoSchedule/NoExecute taint must be tolerated, unless the workload is
/// already scheduled there.
fn taint_toleration(
    input: &ScheduleInput<'_>,
    cluster: &Cluster,
    scheduled: bool,
) -> Result<(), String> {
    if scheduled {
        return Ok(());
    }
    match find_untolerated_taint(&cluster.spec.taints, &input.placement.cluster_tolerations) {
        None => Ok(()),
        Some(taint) => Err(format!(
            "cluster(s) had untolerated taint {{{}}}",
            taint_to_string(taint)
        )),
    }
}

/// The first NoSchedule or NoExecute taint no toleration tolerates
/// (`v1helper.FindMatchingUntoleratedTaint`).
pub fn find_untolerated_taint<'a>(
    taints: &'a [Taint],
    tolerations: &[Toleration],
) -> Option<&'a Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|t| !tolerations.iter().any(|tol| tolerates(tol, t)))
}

/// Kubernetes `Toleration.ToleratesTaint`: matching effect (or any), key (or any), and value
/// under Equal, or any value under Exists.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    let effect = toleration.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = toleration.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// `Taint.ToString`: `key=value:effect`, or `key:effect` without a value.
pub fn taint_to_string(taint: &Taint) -> String {
    match taint.value.as_deref() {
        None | Some("") => format!("{}:{}", taint.key, taint.effect),
        Some(v) => format!("{}={}:{}", taint.key, v, taint.effect),
    }
}

/// ClusterAffinity: the cluster must match one of the affinities in force.
fn cluster_affinity(
    affinities: Option<&[&ClusterAffinity]>,
    cluster: &Cluster,
) -> Result<(), String> {
    match affinities {
        None => Ok(()),
        Some(list) if list.iter().any(|a| cluster_matches(cluster, a)) => Ok(()),
        Some(_) => Err("cluster(s) did not match the placement cluster affinity constraint".into()),
    }
}

/// SpreadConstraint: a cluster must carry the property a constraint spreads by.
fn spread_constraint(input: &ScheduleInput<'_>, cluster: &Cluster) -> Result<(), String> {
    for c in &input.placement.spread_constraints {
        match c.spread_by_field {
            Some(SpreadFieldValue::Provider) if cluster.spec.provider.is_empty() => {
                return Err("cluster(s) did not have provider property".into());
            }
            Some(SpreadFieldValue::Region) if cluster.spec.region.is_empty() => {
                return Err("cluster(s) did not have region property".into());
            }
            Some(SpreadFieldValue::Zone) if cluster.spec.zones.is_empty() => {
                return Err("cluster(s) did not have zones property".into());
            }
            _ => {}
        }
    }
    Ok(())
}

/// ClusterEviction: clusters the workload is being evicted from are not candidates.
fn cluster_eviction(input: &ScheduleInput<'_>, name: &str) -> Result<(), String> {
    if input.evicting_clusters.iter().any(|c| c == name) {
        return Err("cluster(s) is in the process of eviction".into());
    }
    Ok(())
}

/// ClusterLocality score: clusters already in the scheduling result score highest.
pub(crate) fn locality_score(input: &ScheduleInput<'_>, name: &str) -> i64 {
    if input.previous.iter().any(|t| t.name == name) {
        MAX_CLUSTER_SCORE
    } else {
        0
    }
}
