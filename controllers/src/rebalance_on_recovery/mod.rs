//! Rebalance on recovery, a karmada-rs addition (Karmada keeps replicas where failover put
//! them until someone creates a WorkloadRebalancer). A (Cluster)PropagationPolicy annotated
//! `policy.karmada-rs.io/rebalance-on-recovery: "true"` has the Divided workloads it
//! propagates moved back towards the placement a fresh schedule would give them once the
//! clusters they were moved off are schedulable again (Ready, no NoSchedule/NoExecute taint
//! they do not tolerate).
//!
//! The move is bounded: each step moves at most `policy.karmada-rs.io/rebalance-on-recovery-max-share`
//! of the replicas (a percentage, 25% by default, at least one replica), keeping the total,
//! and the next step waits until the workload is healthy on every cluster it runs on. Each
//! step is a `RebalanceOnRecovery` event on the binding and on its template.

use std::sync::Arc;
use std::time::Duration;

use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::ReplicaSchedulingType;
use karmada_api::well_known::annotations;
use karmada_api::work::v1alpha2::{
    ClusterResourceBinding, ResourceBinding, ResourceBindingSpec, ResourceHealth, TargetCluster,
};
use kube::api::{Patch, PatchParams};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::graceful_eviction::event_both;
use crate::runtime::bindings::Binding;
use crate::runtime::events::Recorder;
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_conflict};
use karmada_scheduler::{self as algorithm, ScheduleInput};

/// The opt-in annotation on a (Cluster)PropagationPolicy.
pub const REBALANCE_ON_RECOVERY: &str = "policy.karmada-rs.io/rebalance-on-recovery";
/// The largest share of replicas one step moves, as a percentage (`"25%"`).
pub const REBALANCE_MAX_SHARE: &str = "policy.karmada-rs.io/rebalance-on-recovery-max-share";
/// Event reason of a step.
pub const REASON_REBALANCE_ON_RECOVERY: &str = "RebalanceOnRecovery";

const DEFAULT_SHARE_PERCENT: u32 = 25;

/// The most replicas one step may move: the share of `replicas`, at least one.
pub fn step_limit(replicas: i32, share: Option<&str>) -> i32 {
    let percent = share
        .and_then(|s| s.trim().strip_suffix('%'))
        .and_then(|p| p.trim().parse::<u32>().ok())
        .filter(|p| (1..=100).contains(p))
        .unwrap_or(DEFAULT_SHARE_PERCENT);
    let limit = i64::from(replicas.max(0)) * i64::from(percent) / 100;
    i32::try_from(limit).unwrap_or(i32::MAX).max(1)
}

/// One step from `current` towards `desired` (same total): clusters that gain get at most
/// `limit` replicas in all, taken from the clusters that lose. None when already there.
pub fn step(
    current: &[TargetCluster],
    desired: &[TargetCluster],
    limit: i32,
) -> Option<Vec<TargetCluster>> {
    let get = |list: &[TargetCluster], name: &str| {
        list.iter()
            .find(|t| t.name == name)
            .map_or(0, |t| t.replicas)
    };
    let mut names: Vec<String> = current
        .iter()
        .chain(desired)
        .map(|t| t.name.clone())
        .collect();
    names.sort();
    names.dedup();
    let mut next: Vec<TargetCluster> = names
        .iter()
        .map(|n| TargetCluster {
            name: n.clone(),
            replicas: get(current, n),
        })
        .collect();
    let mut budget = limit;
    let mut moved = 0;
    for t in next.iter_mut() {
        let want = get(desired, &t.name);
        if want > t.replicas && budget > 0 {
            let add = (want - t.replicas).min(budget);
            t.replicas += add;
            budget -= add;
            moved += add;
        }
    }
    if moved == 0 {
        return None;
    }
    let mut take = moved;
    for t in next.iter_mut() {
        let want = get(desired, &t.name);
        if t.replicas > want && take > 0 {
            let sub = (t.replicas - want).min(take);
            t.replicas -= sub;
            take -= sub;
        }
    }
    next.retain(|t| t.replicas > 0);
    Some(next)
}

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
}

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder("rebalance-on-recovery"),
        queue: WorkQueue::with_rate_limiter("rebalance-on-recovery", ctx.settings.rate_limiter),
        ctx: ctx.clone(),
    });
    let c2 = c.clone();
    ctx.clusters.on_change(move |ch| {
        if let Change::Update(old, new) = ch
            && (old.ready_status() != new.ready_status() || old.spec.taints != new.spec.taints)
            && schedulable(new)
        {
            c2.enqueue_all::<ResourceBinding>();
            c2.enqueue_all::<ClusterResourceBinding>();
        }
    });
    c.register::<ResourceBinding>();
    c.register::<ClusterResourceBinding>();
    let c3 = c.clone();
    vec![tokio::spawn(async move {
        c3.ctx.wait_synced().await;
        let c4 = c3.clone();
        let handles = c3.queue.run(1, move |k: Key| {
            let c = c4.clone();
            async move {
                if k.namespace.is_empty() {
                    c.reconcile::<ClusterResourceBinding>(k).await
                } else {
                    c.reconcile::<ResourceBinding>(k).await
                }
            }
        });
        for h in handles {
            let _ = h.await;
        }
    })]
}

/// Ready and without taints that keep new replicas off.
fn schedulable(c: &Cluster) -> bool {
    c.ready_status() == Some("True")
        && !c
            .spec
            .taints
            .iter()
            .any(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
}

fn divided(spec: &ResourceBindingSpec) -> bool {
    spec.placement
        .as_ref()
        .is_some_and(|p| p.replica_scheduling_type() == ReplicaSchedulingType::Divided)
        && spec.replicas > 0
}

impl Controller {
    fn enqueue_all<B: Binding>(&self) {
        for b in B::informer(&self.ctx).list() {
            if divided(b.spec()) && self.opted_in(b.as_ref()).is_some() {
                self.queue.add(b.key());
            }
        }
    }

    /// A binding in progress becoming healthy is looked at again for its next step.
    fn register<B: Binding>(self: &Arc<Self>) {
        let c = self.clone();
        B::informer(&self.ctx).on_change(move |ch| {
            if let Change::Update(old, new) = ch
                && old.status().aggregated_status != new.status().aggregated_status
                && divided(new.spec())
                && c.opted_in(new.as_ref()).is_some()
            {
                c.queue.add(new.key());
            }
        });
    }

    /// The policy's annotations when it opts in: the max share.
    fn opted_in<B: Binding>(&self, b: &B) -> Option<Option<String>> {
        let meta = b.meta();
        let annotations_of = |a: Option<&std::collections::BTreeMap<String, String>>| {
            let a = a?;
            (a.get(REBALANCE_ON_RECOVERY).map(String::as_str) == Some("true"))
                .then(|| a.get(REBALANCE_MAX_SHARE).cloned())
        };
        if let Some(name) = crate::runtime::annotation(meta, annotations::PROPAGATION_POLICY_NAME) {
            let ns = crate::runtime::annotation(meta, annotations::PROPAGATION_POLICY_NAMESPACE)
                .unwrap_or("");
            let pp = self.ctx.pps.get(&Key::new(ns, name))?;
            return annotations_of(pp.metadata.annotations.as_ref());
        }
        let name = crate::runtime::annotation(meta, annotations::CLUSTER_PROPAGATION_POLICY_NAME)?;
        let cpp = self.ctx.cpps.get(&Key::cluster(name))?;
        annotations_of(cpp.metadata.annotations.as_ref())
    }

    async fn reconcile<B: Binding>(&self, key: Key) -> Result<Requeue> {
        let Some(b) = B::informer(&self.ctx).get(&key) else {
            return Ok(Requeue::No);
        };
        let spec = b.spec();
        let Some(share) = self.opted_in(b.as_ref()) else {
            return Ok(Requeue::No);
        };
        // Only a settled workload moves: scheduled, no eviction in progress, healthy
        // everywhere it runs.
        let settled = b.meta().deletion_timestamp.is_none()
            && divided(spec)
            && spec.graceful_eviction_tasks.is_empty()
            && b.status().scheduler_observed_generation == b.meta().generation.unwrap_or(0)
            && spec.clusters.iter().all(|t| {
                b.status()
                    .aggregated_status
                    .iter()
                    .any(|s| s.cluster_name == t.name && s.health == Some(ResourceHealth::Healthy))
            });
        if !settled {
            return Ok(Requeue::No);
        }
        let clusters: Vec<Cluster> = self
            .ctx
            .clusters
            .list()
            .iter()
            .map(|c| (**c).clone())
            .collect();
        let Some(mut input) = ScheduleInput::for_binding(spec, b.status(), &clusters) else {
            return Ok(Requeue::No);
        };
        input.fresh = true;
        input.enable_empty_workload_propagation =
            self.ctx.settings.enable_empty_workload_propagation;
        let Ok(desired) = algorithm::schedule(&input) else {
            return Ok(Requeue::No);
        };
        // Only towards clusters that are schedulable now, keeping the total.
        let total: i32 = desired.clusters.iter().map(|t| t.replicas).sum();
        if total != spec.replicas {
            return Ok(Requeue::No);
        }
        let limit = step_limit(spec.replicas, share.as_deref());
        let mut current = spec.clusters.clone();
        current.sort_by(|a, b| a.name.cmp(&b.name));
        let Some(next) = step(&current, &desired.clusters, limit) else {
            return Ok(Requeue::No);
        };
        let patch = json!({
            "metadata": {"resourceVersion": b.meta().resource_version},
            "spec": {"clusters": next},
        });
        match B::api(self.ctx.client.clone(), &key)
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {}
            Err(e) if is_conflict(&e) => return Ok(Requeue::After(Duration::from_millis(20))),
            Err(e) => return Err(e.into()),
        }
        let gained: Vec<String> = next
            .iter()
            .filter_map(|t| {
                let before = current
                    .iter()
                    .find(|c| c.name == t.name)
                    .map_or(0, |c| c.replicas);
                (t.replicas > before).then(|| format!("{}+{}", t.name, t.replicas - before))
            })
            .collect();
        let msg = format!(
            "Moving replicas back to recovered clusters ({}; at most {limit} per step): {}",
            gained.join(", "),
            next.iter()
                .map(|t| format!("{}:{}", t.name, t.replicas))
                .collect::<Vec<_>>()
                .join(", ")
        );
        tracing::info!(binding = %key, "{msg}");
        event_both(
            &self.recorder,
            b.as_ref(),
            false,
            REASON_REBALANCE_ON_RECOVERY,
            &msg,
        );
        Ok(Requeue::No)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(list: &[(&str, i32)]) -> Vec<TargetCluster> {
        list.iter()
            .map(|(n, r)| TargetCluster {
                name: (*n).into(),
                replicas: *r,
            })
            .collect()
    }

    #[test]
    fn steps_are_bounded_and_keep_the_total() {
        let desired = tc(&[("m1", 2), ("m2", 2), ("m3", 2)]);
        let s1 = step(&tc(&[("m1", 3), ("m2", 3)]), &desired, 1).unwrap();
        assert_eq!(s1, tc(&[("m1", 2), ("m2", 3), ("m3", 1)]));
        let s2 = step(&s1, &desired, 1).unwrap();
        assert_eq!(s2, tc(&[("m1", 2), ("m2", 2), ("m3", 2)]));
        assert_eq!(step(&s2, &desired, 1), None);
        // A larger limit moves more at once, never past the target.
        let s = step(&tc(&[("m1", 3), ("m2", 3)]), &desired, 10).unwrap();
        assert_eq!(s, desired);
    }

    #[test]
    fn the_share_is_a_percentage_of_replicas_at_least_one() {
        assert_eq!(step_limit(6, None), 1);
        assert_eq!(step_limit(100, None), 25);
        assert_eq!(step_limit(100, Some("50%")), 50);
        assert_eq!(step_limit(3, Some("10%")), 1);
        assert_eq!(step_limit(100, Some("bogus")), 25);
        assert_eq!(step_limit(100, Some("0%")), 25);
        assert_eq!(step_limit(100, Some("100%")), 100);
    }
}
