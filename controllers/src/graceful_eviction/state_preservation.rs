//! Stateful failover: the state a failover carries from the old cluster to the new one
//! (`failover.application.statePreservation` and `failover.cluster.statePreservation`).
//!
//! When a cluster is evicted, each rule's JSONPath (the kubectl dialect, e.g.
//! `{ .updateRevision }`) is evaluated over the workload's status as reflected from that
//! cluster (the binding's `aggregatedStatus`), and the values go into the eviction task's
//! `preservedLabelState` keyed by the rules' `aliasLabelName`. The binding controller then
//! puts them as labels on the workload it sends to the cluster the workload moved to.
//! Karmada does this behind the alpha StatefulFailoverInjection feature gate; karmada-rs has no
//! feature gates, so setting rules is the opt-in.

use std::collections::{BTreeMap, HashSet};

use apimachinery::table::jsonpath::JsonPath;
use karmada_api::policy::v1alpha1::{PurgeMode, StatePreservation};
use karmada_api::work::v1alpha2::{AggregatedStatusItem, ResourceBindingSpec, TargetCluster};
use serde_json::Value;

use super::normalized;
use crate::runtime::bindings::Binding;
use crate::runtime::context::Context;

/// BuildPreservedLabelState: one label per rule, its value the rule's JSONPath rendered over
/// `status` as `kubectl -o jsonpath` renders it. A missing key is an error, as Karmada's
/// parser (AllowMissingKeys(false)) makes it.
pub fn build_preserved_label_state(
    preservation: &StatePreservation,
    status: &Value,
) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for rule in &preservation.rules {
        let value = JsonPath::parse(&rule.json_path)
            .and_then(|p| p.execute(status))
            .map_err(|e| {
                format!(
                    "failed to execute jsonpath {:?} for label {}: {e}",
                    rule.json_path, rule.alias_label_name
                )
            })?;
        out.insert(rule.alias_label_name.clone(), value);
    }
    Ok(out)
}

/// The binding's reflected statuses, read from the API server when `preservation` has rules.
/// The binding informers keep only a digest of each `aggregatedStatus[].status` (to hold
/// thousands of bindings in little memory), so the rules cannot be evaluated over the cached
/// copy; an eviction is rare enough to afford one GET.
pub async fn reflected_statuses<B: Binding>(
    ctx: &Context,
    b: &B,
    preservation: Option<&StatePreservation>,
) -> Result<Vec<AggregatedStatusItem>, String> {
    if preservation.is_none_or(|p| p.rules.is_empty()) {
        return Ok(Vec::new());
    }
    let key = b.key();
    B::api(ctx.client.clone(), &key)
        .get(&key.name)
        .await
        .map(|fresh| fresh.status().aggregated_status.clone())
        .map_err(|e| format!("reading the binding's reflected status: {e}"))
}

/// extractStateForEviction (and its twin in buildTaskOptions): the state to keep when
/// `cluster` is evicted; empty when no rule is set. An error when the workload's status on
/// that cluster has not been collected or a rule does not evaluate, which holds the eviction
/// back as it does in Karmada.
pub fn state_for_eviction(
    preservation: Option<&StatePreservation>,
    aggregated: &[AggregatedStatusItem],
    cluster: &str,
) -> Result<BTreeMap<String, String>, String> {
    let Some(preservation) = preservation.filter(|p| !p.rules.is_empty()) else {
        return Ok(BTreeMap::new());
    };
    let status = aggregated
        .iter()
        .find(|s| s.cluster_name == cluster)
        .and_then(|s| s.status.as_ref())
        .ok_or_else(|| {
            format!("the application status has not yet been collected from Cluster({cluster})")
        })?;
    build_preserved_label_state(preservation, status)
}

/// injectReservedLabelState: the labels of the binding's latest eviction task, for the copy
/// sent to `target`. As in Karmada, only when the workload runs on a single cluster
/// (`clusters` is the number of clusters it is sent to), the latest task's purgeMode is
/// Directly, and `target` is not one of the clusters it ran on before that failover.
pub fn labels_to_inject<'a>(
    spec: &'a ResourceBindingSpec,
    target: &TargetCluster,
    clusters: usize,
) -> Option<&'a BTreeMap<String, String>> {
    if clusters > 1 {
        return None;
    }
    let task = spec.graceful_eviction_tasks.last()?;
    if normalized(task.purge_mode) != Some(PurgeMode::Directly) {
        return None;
    }
    let before: HashSet<&str> = task
        .clusters_before_failover
        .iter()
        .map(String::as_str)
        .collect();
    if before.contains(target.name.as_str()) || task.preserved_label_state.is_empty() {
        return None;
    }
    Some(&task.preserved_label_state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use karmada_api::policy::v1alpha1::StatePreservationRule;
    use karmada_api::work::v1alpha2::GracefulEvictionTask;
    use serde_json::json;

    fn rules(pairs: &[(&str, &str)]) -> StatePreservation {
        StatePreservation {
            rules: pairs
                .iter()
                .map(|(alias, path)| StatePreservationRule {
                    alias_label_name: (*alias).to_owned(),
                    json_path: (*path).to_owned(),
                })
                .collect(),
        }
    }

    fn item(cluster: &str, status: Option<Value>) -> AggregatedStatusItem {
        AggregatedStatusItem {
            cluster_name: cluster.to_owned(),
            status,
            ..Default::default()
        }
    }

    #[test]
    fn values_are_rendered_as_kubectl_jsonpath_renders_them() {
        let status = json!({
            "updateRevision": "web-7d9f",
            "replicas": 3,
            "ready": true,
            "jobStatus": {"savepointInfo": {"location": "s3://b/sp-1"}},
            "conditions": [{"type": "A"}, {"type": "B"}],
        });
        let got = build_preserved_label_state(
            &rules(&[
                ("revision", "{ .updateRevision }"),
                ("replicas", "{.replicas}"),
                ("ready", "{.ready}"),
                ("savepoint", "{.jobStatus.savepointInfo.location}"),
                ("types", "{.conditions[*].type}"),
                ("prefixed", "rev-{.updateRevision}"),
            ]),
            &status,
        )
        .expect("state");
        let want: BTreeMap<String, String> = [
            ("prefixed", "rev-web-7d9f"),
            ("ready", "true"),
            ("replicas", "3"),
            ("revision", "web-7d9f"),
            ("savepoint", "s3://b/sp-1"),
            ("types", "A B"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_missing_key_or_a_bad_path_is_an_error() {
        let status = json!({"replicas": 1});
        let e = build_preserved_label_state(&rules(&[("a", "{.nope}")]), &status)
            .expect_err("missing key");
        assert!(e.contains("nope") && e.contains("label a"), "{e}");
        let e = build_preserved_label_state(&rules(&[("a", "{.replicas")]), &status)
            .expect_err("unclosed");
        assert!(e.contains("{.replicas"), "{e}");
    }

    #[test]
    fn eviction_reads_the_evicted_clusters_status() {
        let agg = [
            item("m1", Some(json!({"rev": "one"}))),
            item("m2", Some(json!({"rev": "two"}))),
            item("m3", None),
        ];
        let sp = rules(&[("x/rev", "{.rev}")]);
        let got = state_for_eviction(Some(&sp), &agg, "m2").expect("state");
        assert_eq!(got.get("x/rev").map(String::as_str), Some("two"));
        // No rules: nothing to keep, whatever the status.
        assert!(
            state_for_eviction(None, &agg, "m3")
                .expect("none")
                .is_empty()
        );
        assert!(
            state_for_eviction(Some(&rules(&[])), &agg, "m9")
                .expect("none")
                .is_empty()
        );
        // Rules but no collected status: held back.
        for cluster in ["m3", "m9"] {
            let e = state_for_eviction(Some(&sp), &agg, cluster).expect_err("no status");
            assert_eq!(
                e,
                format!(
                    "the application status has not yet been collected from Cluster({cluster})"
                )
            );
        }
    }

    fn spec_with(tasks: Vec<GracefulEvictionTask>) -> ResourceBindingSpec {
        ResourceBindingSpec {
            graceful_eviction_tasks: tasks,
            ..Default::default()
        }
    }

    fn task(
        from: &str,
        mode: PurgeMode,
        before: &[&str],
        state: &[(&str, &str)],
    ) -> GracefulEvictionTask {
        GracefulEvictionTask {
            from_cluster: from.to_owned(),
            purge_mode: Some(mode),
            clusters_before_failover: before.iter().map(|c| (*c).to_owned()).collect(),
            preserved_label_state: state
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Default::default()
        }
    }

    fn target(name: &str) -> TargetCluster {
        TargetCluster {
            name: name.to_owned(),
            replicas: 1,
        }
    }

    #[test]
    fn labels_go_to_the_single_new_cluster_of_a_directly_purged_failover() {
        let state = [("rev", "r1")];
        let spec = spec_with(vec![task("m1", PurgeMode::Directly, &["m1"], &state)]);
        let got = labels_to_inject(&spec, &target("m2"), 1).expect("injected");
        assert_eq!(got.get("rev").map(String::as_str), Some("r1"));
        // The deprecated spelling of Directly counts as Directly.
        let spec = spec_with(vec![task("m1", PurgeMode::Immediately, &["m1"], &state)]);
        assert!(labels_to_inject(&spec, &target("m2"), 1).is_some());
        // The taint manager records no clustersBeforeFailover: every single target gets them.
        let spec = spec_with(vec![task("m1", PurgeMode::Directly, &[], &state)]);
        assert!(labels_to_inject(&spec, &target("m2"), 1).is_some());
    }

    #[test]
    fn labels_are_not_injected_outside_karmadas_restrictions() {
        let state = [("rev", "r1")];
        let directly = spec_with(vec![task("m1", PurgeMode::Directly, &["m1", "m2"], &state)]);
        // Spread over more than one cluster.
        assert!(labels_to_inject(&directly, &target("m3"), 2).is_none());
        // A cluster the workload ran on before the failover.
        assert!(labels_to_inject(&directly, &target("m2"), 1).is_none());
        // Other purge modes.
        for mode in [
            PurgeMode::Gracefully,
            PurgeMode::Never,
            PurgeMode::Graciously,
        ] {
            let spec = spec_with(vec![task("m1", mode, &["m1"], &state)]);
            assert!(
                labels_to_inject(&spec, &target("m2"), 1).is_none(),
                "{mode}"
            );
        }
        // No task, or a latest task without state (an earlier one's state is not used).
        assert!(labels_to_inject(&spec_with(vec![]), &target("m2"), 1).is_none());
        let spec = spec_with(vec![
            task("m1", PurgeMode::Directly, &["m1"], &state),
            task("m2", PurgeMode::Directly, &["m2"], &[]),
        ]);
        assert!(labels_to_inject(&spec, &target("m3"), 1).is_none());
    }
}
