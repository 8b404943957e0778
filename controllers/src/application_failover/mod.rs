//! The application failover controller (pkg/controllers/applicationfailover): for bindings
//! whose policy sets `failover.application` (and `propagateDeps`, which Karmada requires), a
//! cluster where the workload's health stays Unhealthy for longer than
//! `decisionConditions.tolerationSeconds` is evicted with the policy's purgeMode and
//! gracePeriodSeconds (Never: `suppressDeletion`); the workload becoming healthy (or its health
//! unknown) within the window cancels the countdown.
//!
//! Beyond Karmada, each step is an event on the binding and on its template:
//! `ApplicationUnhealthy` when a countdown starts, `ApplicationFailoverCanceled` when the
//! workload recovers in time, `ApplicationFailure` when the cluster is evicted.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use karmada_api::policy::v1alpha1::{ApplicationFailoverBehavior, PurgeMode};
use karmada_api::well_known::conditions::EVICTION_REASON_APPLICATION_FAILURE;
use karmada_api::work::v1alpha2::{
    ClusterResourceBinding, ResourceBinding, ResourceBindingSpec, ResourceHealth,
};
use tokio::task::JoinHandle;

use crate::graceful_eviction::state_preservation::{reflected_statuses, state_for_eviction};
use crate::graceful_eviction::{self, REASON_EVICT_FAILED, TaskOptions, event_both};
use crate::runtime::bindings::Binding;
use crate::runtime::events::Recorder;
use crate::runtime::precedence::Class;
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_conflict};

/// Event reason: the workload turned unhealthy on a cluster and the countdown started.
pub const REASON_APPLICATION_UNHEALTHY: &str = "ApplicationUnhealthy";
/// Event reason: the workload recovered within its toleration; no failover.
pub const REASON_APPLICATION_FAILOVER_CANCELED: &str = "ApplicationFailoverCanceled";

/// Karmada's producer names of the two controllers.
const RB_PRODUCER: &str = "resource-binding-application-failover-controller";
const CRB_PRODUCER: &str = "cluster-resource-binding-application-failover-controller";

/// Default decisionConditions.tolerationSeconds (the CRD default).
const DEFAULT_TOLERATION_SECONDS: i32 = 300;

/// When the workload was first seen unhealthy, per binding and cluster (workloadUnhealthyMap).
type Unhealthy = HashMap<Key, HashMap<String, Timestamp>>;

/// What one pass decided for a binding.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Verdict {
    /// Clusters to evict now.
    pub evict: Vec<String>,
    /// Clusters whose countdown started in this pass.
    pub started: Vec<String>,
    /// Clusters whose countdown was canceled (healthy or unknown again).
    pub canceled: Vec<String>,
    /// When to look again (the nearest countdown end).
    pub retry: Option<Duration>,
}

/// distinguishUnhealthyClustersWithOthers + detectFailure + deleteIrrelevantClusters over the
/// countdowns of one binding.
pub(crate) fn detect(
    spec: &ResourceBindingSpec,
    health: &[(String, Option<ResourceHealth>)],
    toleration_seconds: i32,
    seen: &mut HashMap<String, Timestamp>,
    now: Timestamp,
) -> Verdict {
    let mut v = Verdict::default();
    let toleration = SignedDuration::from_secs(i64::from(toleration_seconds.max(0)));
    let evicting = |c: &str| {
        spec.graceful_eviction_tasks
            .iter()
            .any(|t| t.from_cluster == c)
    };
    for (cluster, h) in health {
        if *h != Some(ResourceHealth::Unhealthy) || evicting(cluster) {
            continue;
        }
        match seen.get(cluster) {
            None => {
                seen.insert(cluster.clone(), now);
                v.started.push(cluster.clone());
                let d = Duration::try_from(toleration).unwrap_or(Duration::ZERO);
                v.retry = Some(v.retry.map_or(d, |r| r.min(d)));
            }
            Some(since) => {
                let end = since.checked_add(toleration).unwrap_or(Timestamp::MAX);
                if now > end {
                    v.evict.push(cluster.clone());
                } else {
                    let d = Duration::try_from(end.duration_since(now)).unwrap_or(Duration::ZERO);
                    v.retry = Some(v.retry.map_or(d, |r| r.min(d)));
                }
            }
        }
    }
    // Clusters no longer scheduled, evicted now, or healthy/unknown again lose their countdown.
    let scheduled =
        |c: &str| spec.clusters.iter().any(|t| t.name == c) && !v.evict.iter().any(|e| e == c);
    let recovered: Vec<String> = seen
        .keys()
        .filter(|c| {
            health.iter().any(|(hc, h)| {
                hc == *c && matches!(h, Some(ResourceHealth::Healthy | ResourceHealth::Unknown))
            })
        })
        .cloned()
        .collect();
    for c in &recovered {
        seen.remove(c);
        v.canceled.push(c.clone());
    }
    seen.retain(|c, _| scheduled(c));
    // A second past the end, so the next pass is strictly after it.
    v.retry = v.retry.map(|d| d + Duration::from_secs(1));
    v
}

/// buildTaskOptions; `preserved_label_state` is what [`state_for_eviction`] read for the
/// evicted cluster.
pub(crate) fn task_options(
    app: &ApplicationFailoverBehavior,
    producer: &str,
    clusters_before: Vec<String>,
    preserved_label_state: BTreeMap<String, String>,
) -> TaskOptions {
    let mode = graceful_eviction::normalized(app.purge_mode).unwrap_or(PurgeMode::Gracefully);
    TaskOptions {
        purge_mode: Some(mode),
        reason: EVICTION_REASON_APPLICATION_FAILURE.to_owned(),
        producer: producer.to_owned(),
        grace_period_seconds: (mode == PurgeMode::Gracefully)
            .then_some(app.grace_period_seconds)
            .flatten(),
        suppress_deletion: (mode == PurgeMode::Never).then_some(true),
        clusters_before_failover: clusters_before,
        preserved_label_state,
        ..Default::default()
    }
}

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
    unhealthy: Mutex<Unhealthy>,
}

fn wants<B: Binding>(b: &B) -> bool {
    let spec = b.spec();
    spec.failover
        .as_ref()
        .is_some_and(|f| f.application.is_some())
}

/// Starts the controller for ResourceBindings and ClusterResourceBindings.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder("application-failover-controller"),
        queue: ctx.queue("application-failover", Class::Placement),
        unhealthy: Mutex::new(HashMap::new()),
        ctx: ctx.clone(),
    });
    c.register::<ResourceBinding>();
    c.register::<ClusterResourceBinding>();
    let c2 = c.clone();
    vec![tokio::spawn(async move {
        c2.ctx.wait_synced().await;
        let c3 = c2.clone();
        let handles = c2
            .queue
            .run(c2.ctx.settings.concurrency.bindings(), move |k: Key| {
                let c = c3.clone();
                async move {
                    if k.namespace.is_empty() {
                        c.reconcile::<ClusterResourceBinding>(k, CRB_PRODUCER).await
                    } else {
                        c.reconcile::<ResourceBinding>(k, RB_PRODUCER).await
                    }
                }
            });
        for h in handles {
            let _ = h.await;
        }
    })]
}

impl Controller {
    fn register<B: Binding>(self: &Arc<Self>) {
        let c = self.clone();
        B::informer(&self.ctx).on_change(move |ch| match ch {
            Change::Add(b) if wants(b.as_ref()) => c.queue.add(b.key()),
            Change::Update(old, new) if wants(old.as_ref()) || wants(new.as_ref()) => {
                c.queue.add(new.key())
            }
            Change::Delete(b) if wants(b.as_ref()) => c.queue.add(b.key()),
            _ => {}
        });
    }

    fn forget(&self, key: &Key) {
        self.unhealthy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(key);
    }

    /// Puts back the countdowns of `clusters` as they were before a pass whose eviction did not
    /// happen.
    fn restore_countdowns(
        &self,
        key: &Key,
        clusters: &[String],
        before: &HashMap<String, Timestamp>,
    ) {
        let mut all = self.unhealthy.lock().unwrap_or_else(|p| p.into_inner());
        let seen = all.entry(key.clone()).or_default();
        for c in clusters {
            if let Some(since) = before.get(c) {
                seen.insert(c.clone(), *since);
            }
        }
    }

    async fn reconcile<B: Binding>(&self, key: Key, producer: &str) -> Result<Requeue> {
        let Some(b) = B::informer(&self.ctx).get(&key) else {
            self.forget(&key);
            return Ok(Requeue::No);
        };
        let spec = b.spec();
        // bindingFilter: failover.application set, some status collected, propagateDeps.
        let Some(app) = spec.failover.as_ref().and_then(|f| f.application.as_ref()) else {
            self.forget(&key);
            return Ok(Requeue::No);
        };
        if b.meta().deletion_timestamp.is_some()
            || b.status().aggregated_status.is_empty()
            || !spec.propagate_deps
        {
            self.forget(&key);
            return Ok(Requeue::No);
        }
        let health: Vec<(String, Option<ResourceHealth>)> = b
            .status()
            .aggregated_status
            .iter()
            .map(|s| (s.cluster_name.clone(), s.health))
            .collect();
        let toleration = app
            .decision_conditions
            .toleration_seconds
            .unwrap_or(DEFAULT_TOLERATION_SECONDS);
        let (verdict, before_detect) = {
            let mut all = self.unhealthy.lock().unwrap_or_else(|p| p.into_inner());
            let seen = all.entry(key.clone()).or_default();
            let before_detect = seen.clone();
            (
                detect(spec, &health, toleration, seen, Timestamp::now()),
                before_detect,
            )
        };
        for c in &verdict.started {
            event_both(
                &self.recorder,
                b.as_ref(),
                true,
                REASON_APPLICATION_UNHEALTHY,
                &format!(
                    "Workload is unhealthy on cluster {c}; it fails over in {toleration}s unless it recovers."
                ),
            );
        }
        for c in &verdict.canceled {
            event_both(
                &self.recorder,
                b.as_ref(),
                false,
                REASON_APPLICATION_FAILOVER_CANCELED,
                &format!("Workload recovered on cluster {c} within {toleration}s; no failover."),
            );
        }
        if !verdict.evict.is_empty() {
            let mut new_spec = spec.clone();
            let before: Vec<String> = spec.clusters.iter().map(|t| t.name.clone()).collect();
            let preservation = app.state_preservation.as_ref();
            let statuses = reflected_statuses(&self.ctx, b.as_ref(), preservation).await;
            for c in &verdict.evict {
                let state = match statuses
                    .clone()
                    .and_then(|statuses| state_for_eviction(preservation, &statuses, c))
                {
                    Ok(state) => state,
                    Err(e) => {
                        // Held back (as Karmada's evictBinding): the countdowns stay as they
                        // were, so the next try evicts at once.
                        self.restore_countdowns(&key, &verdict.evict, &before_detect);
                        event_both(
                            &self.recorder,
                            b.as_ref(),
                            true,
                            REASON_EVICT_FAILED,
                            &format!("Evict from cluster {c} failed: preserving its state: {e}."),
                        );
                        return Err(crate::runtime::Error::msg(format!(
                            "extracting the preserved label state of {} {key} on cluster {c}: {e}",
                            B::KIND
                        )));
                    }
                };
                let opts = task_options(app, producer, before.clone(), state);
                graceful_eviction::evict_cluster(&mut new_spec, c, opts, Timestamp::now());
            }
            match graceful_eviction::write_eviction(&self.ctx, b.as_ref(), &new_spec).await {
                Ok(()) => {}
                Err(e) if is_conflict(&e) => {
                    return Ok(Requeue::After(Duration::from_millis(5)));
                }
                Err(e) => {
                    for c in &verdict.evict {
                        event_both(
                            &self.recorder,
                            b.as_ref(),
                            true,
                            REASON_EVICT_FAILED,
                            &format!("Evict from cluster {c} failed."),
                        );
                    }
                    return Err(e.into());
                }
            }
            let mode =
                graceful_eviction::normalized(app.purge_mode).unwrap_or(PurgeMode::Gracefully);
            for c in &verdict.evict {
                tracing::info!(binding = %key, cluster = %c, purge_mode = %mode, "application failover");
                event_both(
                    &self.recorder,
                    b.as_ref(),
                    true,
                    EVICTION_REASON_APPLICATION_FAILURE,
                    &format!(
                        "Evicting from cluster {c} (purgeMode {mode}): the workload was unhealthy for more than {toleration}s."
                    ),
                );
            }
        }
        Ok(verdict.retry.map_or(Requeue::No, Requeue::After))
    }
}

#[cfg(test)]
mod tests;
