//! The ClusterTaintPolicy controller (pkg/controllers/taint/clustertaintpolicy_controller.go):
//! for each cluster, the policies selecting it (oldest first) add their taints when the
//! cluster's status conditions match `addOnConditions` and remove them when they match
//! `removeOnConditions`. Taints are left alone when a policy is deleted or stops selecting
//! the cluster.

use std::sync::{Arc, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::{ClusterTaintPolicy, PolicyTaint, conditions_match};
use kube::api::{Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_conflict, now};
use karmada_scheduler::selector::cluster_matches;

/// Event reason of a taint update (events.EventReasonTaintClusterSucceed).
pub const REASON_TAINT_CLUSTER_SUCCEED: &str = "TaintClusterSucceed";
/// Event reason of a failed taint update (events.EventReasonTaintClusterFailed).
pub const REASON_TAINT_CLUSTER_FAILED: &str = "TaintClusterFailed";

const NAME: &str = "cluster-taint-policy-controller";

/// The taints of a cluster after every policy had its say (the reconcile loop, pure).
pub fn desired_taints(
    cluster: &Cluster,
    policies: &[Arc<ClusterTaintPolicy>],
    now: &Time,
) -> Vec<Taint> {
    let mut sorted: Vec<&ClusterTaintPolicy> = policies.iter().map(AsRef::as_ref).collect();
    // Oldest first, so conflicting policies settle instead of flapping.
    sorted.sort_by(|a, b| {
        let ta = a.metadata.creation_timestamp.as_ref().map(|t| t.0);
        let tb = b.metadata.creation_timestamp.as_ref().map(|t| t.0);
        ta.cmp(&tb).then_with(|| a.name_any().cmp(&b.name_any()))
    });
    let mut taints = cluster.spec.taints.clone();
    for p in sorted {
        if let Some(target) = &p.spec.target_clusters
            && !cluster_matches(cluster, target)
        {
            continue;
        }
        if conditions_match(&cluster.status.conditions, &p.spec.add_on_conditions) {
            add(&mut taints, &p.spec.taints, now);
        }
        if conditions_match(&cluster.status.conditions, &p.spec.remove_on_conditions) {
            remove(&mut taints, &p.spec.taints);
        }
    }
    taints
}

/// addTaintsOnCluster: taints whose key and effect are absent are added, stamped `now`.
fn add(taints: &mut Vec<Taint>, add: &[PolicyTaint], now: &Time) {
    for t in add {
        if !taints
            .iter()
            .any(|c| c.key == t.key && c.effect == t.effect)
        {
            taints.push(Taint {
                key: t.key.clone(),
                value: (!t.value.is_empty()).then(|| t.value.clone()),
                effect: t.effect.clone(),
                time_added: Some(now.clone()),
            });
        }
    }
}

/// removeTaintsFromCluster: the first taint with each key and effect goes.
fn remove(taints: &mut Vec<Taint>, remove: &[PolicyTaint]) {
    for t in remove {
        if let Some(i) = taints
            .iter()
            .position(|c| c.key == t.key && c.effect == t.effect)
        {
            taints.remove(i);
        }
    }
}

/// GenerateTaintsMessage.
fn taints_message(taints: &[Taint]) -> String {
    if taints.is_empty() {
        return "cluster now does not have taints".to_owned();
    }
    let list = taints
        .iter()
        .map(|t| match t.value.as_deref() {
            Some(v) if !v.is_empty() => {
                format!("{{Key:{},Value:{},Effect:{}}}", t.key, v, t.effect)
            }
            _ => format!("{{Key:{},Effect:{}}}", t.key, t.effect),
        })
        .collect::<Vec<_>>()
        .join(",");
    format!("cluster now has taints([{list}])")
}

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
    policies: Mutex<Vec<Arc<ClusterTaintPolicy>>>,
}

/// Starts the controller: a watch of ClusterTaintPolicies, and the shared Cluster informer.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder(NAME),
        queue: WorkQueue::with_rate_limiter(NAME, ctx.settings.rate_limiter),
        policies: Mutex::new(Vec::new()),
        ctx: ctx.clone(),
    });
    let c2 = c.clone();
    ctx.clusters.on_change(move |ch| match ch {
        Change::Add(cl) => c2.queue.add(Key::of(&cl.metadata)),
        // Conditions drive the policies; taints edited by others are looked at again too.
        Change::Update(old, new)
            if old.status.conditions != new.status.conditions
                || old.spec.taints != new.spec.taints
                || old.metadata.labels != new.metadata.labels =>
        {
            c2.queue.add(Key::of(&new.metadata))
        }
        _ => {}
    });
    let watch = c.clone();
    let run = c.clone();
    vec![
        tokio::spawn(async move { watch.watch_policies().await }),
        tokio::spawn(async move {
            run.ctx.wait_synced().await;
            let r = run.clone();
            let handles = run.queue.run(1, move |k: Key| {
                let r = r.clone();
                async move { r.reconcile(k).await }
            });
            for h in handles {
                let _ = h.await;
            }
        }),
    ]
}

impl Controller {
    fn enqueue_all_clusters(&self) {
        self.queue.add_all(self.ctx.clusters.keys());
    }

    async fn watch_policies(&self) {
        let api = Api::<ClusterTaintPolicy>::all(self.ctx.client.clone());
        let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
        let mut initial: Vec<Arc<ClusterTaintPolicy>> = Vec::new();
        while let Some(ev) = stream.next().await {
            let changed = {
                let mut policies = self.policies.lock().unwrap_or_else(|p| p.into_inner());
                match ev {
                    Ok(watcher::Event::Init) => {
                        initial.clear();
                        false
                    }
                    Ok(watcher::Event::InitApply(p)) => {
                        initial.push(Arc::new(p));
                        false
                    }
                    Ok(watcher::Event::InitDone) => {
                        *policies = std::mem::take(&mut initial);
                        true
                    }
                    Ok(watcher::Event::Apply(p)) => {
                        let name = p.name_any();
                        policies.retain(|o| o.name_any() != name);
                        policies.push(Arc::new(p));
                        true
                    }
                    Ok(watcher::Event::Delete(p)) => {
                        let name = p.name_any();
                        policies.retain(|o| o.name_any() != name);
                        // Deleting a policy leaves taints as they are.
                        false
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "ClusterTaintPolicy watch failed");
                        false
                    }
                }
            };
            if changed {
                self.enqueue_all_clusters();
            }
        }
    }

    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let Some(cluster) = self.ctx.clusters.get(&key) else {
            return Ok(Requeue::No);
        };
        let policies = self
            .policies
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let taints = desired_taints(&cluster, &policies, &now());
        if taints == cluster.spec.taints {
            return Ok(Requeue::No);
        }
        let patch = json!({
            "metadata": {"resourceVersion": cluster.metadata.resource_version},
            "spec": {"taints": taints},
        });
        let target = EventTarget::of(cluster.as_ref());
        match Api::<Cluster>::all(self.ctx.client.clone())
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                let msg = format!(
                    "Update Cluster({}) with taints({}) succeed",
                    key.name,
                    taints_message(&taints)
                );
                tracing::info!(cluster = %key.name, "updated cluster taints");
                self.recorder
                    .normal(&target, REASON_TAINT_CLUSTER_SUCCEED, msg);
                Ok(Requeue::No)
            }
            // Decided on a stale cluster: look again at the newer one.
            Err(e) if is_conflict(&e) => Ok(Requeue::After(std::time::Duration::from_millis(20))),
            Err(e) => {
                self.recorder
                    .warning(&target, REASON_TAINT_CLUSTER_FAILED, e.to_string());
                Err(e.into())
            }
        }
    }
}

#[cfg(test)]
mod tests;
