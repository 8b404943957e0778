//! The graceful eviction controller (pkg/controllers/gracefuleviction) and the eviction task
//! helpers the taint manager and application failover share (GracefulEvictCluster in
//! pkg/apis/work/v1alpha2/binding_types_helper.go).
//!
//! A binding's `spec.gracefulEvictionTasks` lists the clusters its workload is moving away
//! from. While a task stands, the binding controller keeps the old cluster's Work (unless the
//! task's purgeMode is Directly); this controller removes the task once the workload is
//! healthy on every cluster it is scheduled to, when its grace period (the task's
//! `gracePeriodSeconds`, else `--graceful-eviction-timeout`) has passed, or when a person set
//! `suppressDeletion` to false. A task with `suppressDeletion: true` (purgeMode Never) stays.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use karmada_api::policy::v1alpha1::PurgeMode;
use karmada_api::work::v1alpha2::{
    AggregatedStatusItem, ClusterResourceBinding, GracefulEvictionTask, ResourceBinding,
    ResourceBindingSpec, ResourceHealth, TargetCluster,
};
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::runtime::bindings::{Binding, template_target};
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::precedence::Class;
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_conflict, is_not_found};

/// Event reason when a task ended and the old copy goes (events.EventReasonEvictWorkloadFromClusterSucceed).
pub const REASON_EVICT_SUCCEED: &str = "EvictWorkloadFromClusterSucceed";
/// Event reason when recording an eviction failed (events.EventReasonEvictWorkloadFromClusterFailed).
pub const REASON_EVICT_FAILED: &str = "EvictWorkloadFromClusterFailed";

/// The controller's name (its events' source).
const NAME: &str = "graceful-eviction-controller";

/// Purge modes with the deprecated spellings read as their replacements (Immediately is
/// Directly, Graciously is Gracefully).
pub fn normalized(mode: Option<PurgeMode>) -> Option<PurgeMode> {
    match mode {
        Some(PurgeMode::Immediately) => Some(PurgeMode::Directly),
        Some(PurgeMode::Graciously) => Some(PurgeMode::Gracefully),
        other => other,
    }
}

/// What a new eviction task says (workv1alpha2.TaskOptions).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskOptions {
    /// How the old copy is removed.
    pub purge_mode: Option<PurgeMode>,
    /// CamelCase reason (TaintUntolerated, ApplicationFailure, ...).
    pub reason: String,
    /// Human-readable detail.
    pub message: String,
    /// The controller creating the task.
    pub producer: String,
    /// Longest wait before the old copy goes.
    pub grace_period_seconds: Option<i32>,
    /// Keep the old copy until a person sets this to false.
    pub suppress_deletion: Option<bool>,
    /// State to inject as labels into the new copy.
    pub preserved_label_state: BTreeMap<String, String>,
    /// The clusters before this failover.
    pub clusters_before_failover: Vec<String>,
}

/// GracefulEvictCluster: removes `cluster` from the scheduling result and, unless it already
/// has one, adds an eviction task for it, created `now`. Returns false when the cluster was not
/// in the result.
///
/// Karmada leaves the task's creationTimestamp to the graceful eviction controller, which sets
/// it in a write of its own right after the eviction. Setting it here gives the task the same
/// time in the eviction's own write: during a failover that second write raced the
/// scheduler's on every binding (and lost with a 409 on three in four). The controller still
/// stamps tasks that arrive without one (written by a person or another tool).
pub fn evict_cluster(
    spec: &mut ResourceBindingSpec,
    cluster: &str,
    opts: TaskOptions,
    now: Timestamp,
) -> bool {
    let Some(i) = spec.clusters.iter().position(|t| t.name == cluster) else {
        return false;
    };
    let evicted = spec.clusters.remove(i);
    if spec
        .graceful_eviction_tasks
        .iter()
        .any(|t| t.from_cluster == cluster)
    {
        return true;
    }
    spec.graceful_eviction_tasks.push(GracefulEvictionTask {
        from_cluster: evicted.name,
        purge_mode: opts.purge_mode,
        replicas: (evicted.replicas > 0).then_some(evicted.replicas),
        reason: opts.reason,
        message: opts.message,
        producer: opts.producer,
        grace_period_seconds: opts.grace_period_seconds,
        suppress_deletion: opts.suppress_deletion,
        preserved_label_state: opts.preserved_label_state,
        creation_timestamp: Some(Time(now)),
        clusters_before_failover: opts.clusters_before_failover,
    });
    true
}

/// What a task is assessed against (assessmentOption).
pub(crate) struct Assessment<'a> {
    /// `--graceful-eviction-timeout`, for tasks without gracePeriodSeconds.
    pub timeout: Duration,
    /// The current scheduling result.
    pub schedule_result: &'a [TargetCluster],
    /// The binding's aggregated status.
    pub observed: &'a [AggregatedStatusItem],
    /// Whether the scheduler has seen the binding's current generation.
    pub has_scheduled: bool,
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    t.checked_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(Timestamp::MAX)
}

fn timeout_of(task: &GracefulEvictionTask, default: Duration) -> Duration {
    task.grace_period_seconds.map_or(default, |s| {
        Duration::from_secs(u64::try_from(s).unwrap_or(0))
    })
}

/// assessEvictionTasks: the tasks to keep (new ones get their creation time) and the
/// clusters whose tasks ended.
pub(crate) fn assess(
    tasks: &[GracefulEvictionTask],
    now: Timestamp,
    opt: &Assessment<'_>,
) -> (Vec<GracefulEvictionTask>, Vec<String>) {
    let mut kept = Vec::new();
    let mut ended = Vec::new();
    for task in tasks {
        let Some(created) = task.creation_timestamp.as_ref().map(|t| t.0) else {
            kept.push(GracefulEvictionTask {
                creation_timestamp: Some(Time(now)),
                ..task.clone()
            });
            continue;
        };
        let keep = match task.suppress_deletion {
            // Never: kept until a person sets it to false, which ends it at once.
            Some(suppress) => suppress,
            None => {
                now <= plus(created, timeout_of(task, opt.timeout))
                    && !(opt.has_scheduled && all_healthy(opt))
            }
        };
        if keep {
            kept.push(task.clone());
        } else {
            ended.push(task.from_cluster.clone());
        }
    }
    (kept, ended)
}

/// allScheduledResourceInHealthyState.
fn all_healthy(opt: &Assessment<'_>) -> bool {
    opt.schedule_result.iter().all(|target| {
        opt.observed
            .iter()
            .find(|s| s.cluster_name == target.name)
            .is_some_and(|s| s.health == Some(ResourceHealth::Healthy))
    })
}

/// nextRetry: when the first task with a deadline times out; None when none has one.
pub(crate) fn next_retry(
    tasks: &[GracefulEvictionTask],
    timeout: Duration,
    now: Timestamp,
) -> Option<Duration> {
    tasks
        .iter()
        .filter(|t| t.suppress_deletion.is_none())
        .filter_map(|t| {
            let created = t.creation_timestamp.as_ref()?.0;
            let deadline = plus(created, timeout_of(t, timeout));
            Some(
                Duration::try_from(deadline.duration_since(now)).unwrap_or(Duration::ZERO)
                    + Duration::from_millis(10),
            )
        })
        .min()
}

/// Writes a binding's scheduling result and eviction tasks, guarded by the resourceVersion the
/// decision was made on (as Karmada's Update / optimistic-lock patch).
pub(crate) async fn write_eviction<B: Binding>(
    ctx: &Context,
    b: &B,
    spec: &ResourceBindingSpec,
) -> std::result::Result<(), kube::Error> {
    let tasks = if spec.graceful_eviction_tasks.is_empty() {
        Value::Null
    } else {
        serde_json::to_value(&spec.graceful_eviction_tasks).unwrap_or(Value::Null)
    };
    let patch = json!({
        "metadata": {"resourceVersion": b.meta().resource_version},
        "spec": {
            "clusters": spec.clusters,
            "gracefulEvictionTasks": tasks,
        },
    });
    let key = b.key();
    B::api(ctx.client.clone(), &key)
        .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}

/// Records an event on the binding and on its resource template.
pub fn event_both<B: Binding>(
    recorder: &Recorder,
    b: &B,
    warning: bool,
    reason: &'static str,
    message: &str,
) {
    let targets: [EventTarget; 2] = [EventTarget::of(b), template_target(b.spec())];
    for t in &targets {
        if warning {
            recorder.warning(t, reason, message);
        } else {
            recorder.normal(t, reason, message);
        }
    }
}

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
}

/// Starts the graceful eviction controller (ResourceBindings and ClusterResourceBindings).
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder(NAME),
        queue: ctx.queue(NAME, Class::Status),
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

impl Controller {
    fn register<B: Binding>(self: &Arc<Self>) {
        let c = self.clone();
        // Only bindings with tasks (the controller's predicate); the binding status changing
        // (the new copy turning healthy) is an update like any other.
        B::informer(&self.ctx).on_change(move |ch| match ch {
            Change::Add(b) | Change::Update(_, b) => {
                if !b.spec().graceful_eviction_tasks.is_empty() {
                    c.queue.add(b.key());
                }
            }
            Change::Delete(_) => {}
        });
    }

    async fn reconcile<B: Binding>(&self, key: Key) -> Result<Requeue> {
        let Some(b) = B::informer(&self.ctx).get(&key) else {
            return Ok(Requeue::No);
        };
        if b.meta().deletion_timestamp.is_some() {
            return Ok(Requeue::No);
        }
        let timeout = self.ctx.settings.failover.graceful_eviction_timeout;
        let spec = b.spec();
        let now = Timestamp::now();
        let (kept, ended) = assess(
            &spec.graceful_eviction_tasks,
            now,
            &Assessment {
                timeout,
                schedule_result: &spec.clusters,
                observed: &b.status().aggregated_status,
                has_scheduled: b.status().scheduler_observed_generation
                    == b.meta().generation.unwrap_or(0),
            },
        );
        if kept != spec.graceful_eviction_tasks {
            let mut new_spec = spec.clone();
            new_spec.graceful_eviction_tasks = kept.clone();
            match write_eviction(&self.ctx, b.as_ref(), &new_spec).await {
                Ok(()) => {}
                // A newer version is on its way and brings the binding back here.
                Err(e) if is_conflict(&e) || is_not_found(&e) => return Ok(Requeue::No),
                Err(e) => {
                    for cluster in &ended {
                        event_both(
                            &self.recorder,
                            b.as_ref(),
                            true,
                            REASON_EVICT_FAILED,
                            &format!("Evict from cluster {cluster} failed."),
                        );
                    }
                    return Err(e.into());
                }
            }
            for cluster in &ended {
                tracing::info!(binding = %key, cluster, "eviction task ended; the old copy is removed");
                event_both(
                    &self.recorder,
                    b.as_ref(),
                    false,
                    REASON_EVICT_SUCCEED,
                    &format!("Evict from cluster {cluster} succeed."),
                );
            }
        }
        Ok(match next_retry(&kept, timeout, Timestamp::now()) {
            Some(d) => Requeue::After(d),
            None => Requeue::No,
        })
    }
}

pub mod state_preservation;

#[cfg(test)]
mod tests;
