//! The NoExecute taint manager (pkg/controllers/cluster/taint_manager.go), run when
//! `--enable-no-execute-taint-eviction` is set: a binding scheduled to a cluster with a
//! NoExecute taint its applied placement does not tolerate, or tolerates only for
//! `tolerationSeconds` (timed from the taint's `timeAdded`), loses that cluster from its
//! scheduling result and gets a graceful eviction task for it; the scheduler then places the
//! replicas elsewhere (the ClusterEviction filter keeps them off the evicted cluster).

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::{FailoverBehavior, Placement, PurgeMode};
use karmada_api::well_known::annotations;
use karmada_api::well_known::conditions::{
    EVICTION_PRODUCER_TAINT_MANAGER, EVICTION_REASON_TAINT_UNTOLERATED,
};
use karmada_api::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};
use tokio::task::JoinHandle;

use crate::graceful_eviction::state_preservation::{reflected_statuses, state_for_eviction};
use crate::graceful_eviction::{self, REASON_EVICT_FAILED, TaskOptions, event_both};
use crate::metrics;
use crate::runtime::bindings::Binding;
use crate::runtime::events::Recorder;
use crate::runtime::precedence::Class;
use crate::runtime::{Change, Context, Error, Key, Requeue, Result, WorkQueue, is_conflict};
use component_base::rate_limiter::{RateLimiter, eviction_interval};
use karmada_scheduler::filter::{taint_to_string, tolerates};

/// The controller's name (its events' source).
const NAME: &str = "taint-manager";
/// Karmada's names of its two eviction queues (their workqueue and eviction metrics).
const BINDING_QUEUE: &str = "binding-eviction";
const CLUSTER_BINDING_QUEUE: &str = "cluster-binding-eviction";
/// Workers per eviction queue (Karmada's `ConcurrentReconciles: 3` for the taint manager);
/// with the pacing each adds `3 × --resource-eviction-rate` evictions per second per queue.
const WORKERS: usize = 3;

/// What the taints and tolerations decide for a binding on a cluster (needEviction).
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Evict now; the untolerated (or expired) taint.
    Evict(Taint),
    /// Tolerated for this much longer.
    After(Duration),
    /// Tolerated for ever (or no NoExecute taint).
    Stay,
}

/// GetMatchingTolerations + GetMinTolerationTime over the cluster's NoExecute taints.
pub fn decide(taints: &[Taint], tolerations: &[Toleration], now: Timestamp) -> Decision {
    let no_execute: Vec<&Taint> = taints.iter().filter(|t| t.effect == "NoExecute").collect();
    let mut used: Vec<&Toleration> = Vec::new();
    for taint in &no_execute {
        match tolerations.iter().find(|tol| tolerates(tol, taint)) {
            Some(tol) => used.push(tol),
            None => return Decision::Evict((*taint).clone()),
        }
    }
    // The earliest moment any used toleration runs out for any taint it tolerates.
    let mut earliest: Option<(Timestamp, &Taint)> = None;
    for tol in &used {
        let Some(seconds) = tol.toleration_seconds else {
            continue;
        };
        for taint in &no_execute {
            let Some(added) = taint.time_added.as_ref() else {
                continue;
            };
            if !tolerates(tol, taint) {
                continue;
            }
            let end = added
                .0
                .checked_add(SignedDuration::from_secs(seconds.max(0)))
                .unwrap_or(Timestamp::MAX);
            if earliest.is_none_or(|(e, _)| end < e) {
                earliest = Some((end, taint));
            }
        }
    }
    match earliest {
        None => Decision::Stay,
        Some((end, taint)) if end <= now => Decision::Evict(taint.clone()),
        Some((end, _)) => {
            Decision::After(Duration::try_from(end.duration_since(now)).unwrap_or(Duration::ZERO))
        }
    }
}

/// getPurgeMode: the policy's `failover.cluster.purgeMode` (Gracefully when unset), else the
/// controller's `--no-execute-taint-eviction-purge-mode`.
pub fn purge_mode(failover: Option<&FailoverBehavior>, default: PurgeMode) -> PurgeMode {
    match failover.and_then(|f| f.cluster.as_ref()) {
        Some(c) => graceful_eviction::normalized(c.purge_mode).unwrap_or(PurgeMode::Gracefully),
        None => match graceful_eviction::normalized(Some(default)) {
            Some(PurgeMode::Directly) => PurgeMode::Directly,
            _ => PurgeMode::Gracefully,
        },
    }
}

/// The binding kind of a queued item, as the eviction metrics label it.
fn kind_of(key: &EvictionKey) -> &'static str {
    if key.binding.namespace.is_empty() {
        "ClusterResourceBinding"
    } else {
        "ResourceBinding"
    }
}

/// A binding and one of its clusters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct EvictionKey {
    binding: Key,
    cluster: String,
}

struct TaintManager {
    ctx: Arc<Context>,
    /// ResourceBindings to look at (Karmada's `binding-eviction` worker).
    bindings: WorkQueue<EvictionKey>,
    /// ClusterResourceBindings (`cluster-binding-eviction`).
    cluster_bindings: WorkQueue<EvictionKey>,
    recorder: Recorder,
}

fn no_execute_taints(c: &Cluster) -> Vec<&Taint> {
    c.spec
        .taints
        .iter()
        .filter(|t| t.effect == "NoExecute")
        .collect()
}

/// Starts the taint manager when `--enable-no-execute-taint-eviction` is set.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    if !ctx.settings.failover.enable_no_execute_taint_eviction {
        return Vec::new();
    }
    let m = Arc::new(TaintManager {
        recorder: ctx.events.recorder(NAME),
        bindings: eviction_queue(&ctx, BINDING_QUEUE),
        cluster_bindings: eviction_queue(&ctx, CLUSTER_BINDING_QUEUE),
        ctx: ctx.clone(),
    });
    let m2 = m.clone();
    ctx.clusters.on_change(move |ch| {
        let cluster = match ch {
            Change::Add(c) => c,
            Change::Update(old, new) if no_execute_taints(old) != no_execute_taints(new) => new,
            _ => return,
        };
        if no_execute_taints(cluster).is_empty() {
            return;
        }
        let name = cluster.metadata.name.clone().unwrap_or_default();
        m2.enqueue_bindings_on::<ResourceBinding>(&name);
        m2.enqueue_bindings_on::<ClusterResourceBinding>(&name);
    });
    m.register::<ResourceBinding>();
    m.register::<ClusterResourceBinding>();
    let m3 = m.clone();
    vec![tokio::spawn(async move {
        m3.ctx.wait_synced().await;
        let (m4, m5) = (m3.clone(), m3.clone());
        let mut handles = m3.bindings.run(WORKERS, move |k: EvictionKey| {
            let m = m4.clone();
            async move { m.process::<ResourceBinding>(k).await }
        });
        handles.extend(m3.cluster_bindings.run(WORKERS, move |k: EvictionKey| {
            let m = m5.clone();
            async move { m.process::<ClusterResourceBinding>(k).await }
        }));
        for h in handles {
            let _ = h.await;
        }
    })]
}

/// An eviction queue as Karmada's `NewEvictionWorker` builds it: the controllers' rate limiter
/// with a floor of 1/`--resource-eviction-rate`, pacing the workers between items as well as
/// delaying retries.
///
/// Its waiting keys count as placement work (see [`crate::runtime::precedence`]) only when it
/// may evict at least [`FAST_EVICTION`] bindings per second. Paced slower, its backlog waits for
/// the pacer rather than for CPU, and lasts long: 1,000 bindings take 11 minutes at Karmada's
/// default 0.5 per second, during which status must not be held back.
fn eviction_queue(ctx: &Context, name: &'static str) -> WorkQueue<EvictionKey> {
    let floor = eviction_interval(ctx.settings.failover.resource_eviction_rate);
    let queue = WorkQueue::paced(
        name,
        RateLimiter::with_floor(ctx.settings.rate_limiter, floor),
    );
    let fast = floor.as_secs_f64() * FAST_EVICTION <= 1.0
        && f64::from(ctx.settings.rate_limiter.qps) >= FAST_EVICTION;
    if fast {
        queue.with_precedence(Class::Placement, ctx.precedence.clone())
    } else {
        queue
    }
}

/// Evictions per second from which an eviction queue's backlog is CPU work.
const FAST_EVICTION: f64 = 100.0;

impl TaintManager {
    /// The queue of a binding's kind, and its name.
    fn queue_for(&self, key: &EvictionKey) -> (&WorkQueue<EvictionKey>, &'static str) {
        if key.binding.namespace.is_empty() {
            (&self.cluster_bindings, CLUSTER_BINDING_QUEUE)
        } else {
            (&self.bindings, BINDING_QUEUE)
        }
    }

    /// Queues a binding's cluster to look at, counted as Karmada's eviction worker counts
    /// its items (every add counts; a pass that ends the item uncounts it).
    fn add(&self, key: EvictionKey) {
        let (queue, name) = self.queue_for(&key);
        metrics::record_eviction_kind(&key.cluster, kind_of(&key), true);
        queue.add(key);
        metrics::record_eviction_queue_depth(name, queue.len());
    }

    /// One pass over a queued item, with Karmada's eviction metrics around it.
    async fn process<B: Binding>(&self, key: EvictionKey) -> Result<Requeue> {
        let (queue, name) = self.queue_for(&key);
        metrics::record_eviction_queue_depth(name, queue.len());
        let (cluster, kind) = (key.cluster.clone(), kind_of(&key));
        let started = Instant::now();
        let r = self.reconcile::<B>(key).await;
        metrics::record_eviction_processing(name, started.elapsed(), r.is_ok());
        // A pass that comes back later (a toleration still running, a conflict) stays
        // counted, as Karmada's AddAfter counts it again.
        if matches!(r, Ok(Requeue::No)) {
            metrics::record_eviction_kind(&cluster, kind, false);
        }
        r
    }

    fn enqueue_bindings_on<B: Binding>(&self, cluster: &str) {
        for b in B::informer(&self.ctx).list() {
            if b.spec().clusters.iter().any(|t| t.name == cluster) {
                self.add(EvictionKey {
                    binding: b.key(),
                    cluster: cluster.to_owned(),
                });
            }
        }
    }

    /// A binding newly scheduled to a tainted cluster, or whose tolerations changed, is
    /// looked at for each of its tainted clusters.
    fn register<B: Binding>(self: &Arc<Self>) {
        let m = self.clone();
        B::informer(&self.ctx).on_change(move |ch| {
            let b = match ch {
                Change::Add(b) => b,
                Change::Update(old, new)
                    if old.spec().clusters != new.spec().clusters
                        || crate::runtime::annotation(
                            old.meta(),
                            annotations::APPLIED_PLACEMENT,
                        ) != crate::runtime::annotation(
                            new.meta(),
                            annotations::APPLIED_PLACEMENT,
                        ) =>
                {
                    new
                }
                _ => return,
            };
            for t in &b.spec().clusters {
                let tainted = m
                    .ctx
                    .clusters
                    .get(&Key::cluster(t.name.clone()))
                    .is_some_and(|c| !no_execute_taints(&c).is_empty());
                if tainted {
                    m.add(EvictionKey {
                        binding: b.key(),
                        cluster: t.name.clone(),
                    });
                }
            }
        });
    }

    /// syncBindingEviction / syncClusterBindingEviction.
    async fn reconcile<B: Binding>(&self, key: EvictionKey) -> Result<Requeue> {
        let Some(b) = B::informer(&self.ctx).get(&key.binding) else {
            return Ok(Requeue::No);
        };
        if b.meta().deletion_timestamp.is_some()
            || !b.spec().clusters.iter().any(|t| t.name == key.cluster)
        {
            return Ok(Requeue::No);
        }
        let Some(placement) = crate::runtime::annotation(b.meta(), annotations::APPLIED_PLACEMENT)
            .filter(|p| !p.is_empty())
        else {
            return Err(Error::msg(format!(
                "the applied placement for {} {} can not be empty",
                B::KIND,
                key.binding
            )));
        };
        let placement: Placement = serde_json::from_str(placement)?;
        let Some(cluster) = self.ctx.clusters.get(&Key::cluster(key.cluster.clone())) else {
            return Ok(Requeue::No);
        };
        let taint = match decide(
            &cluster.spec.taints,
            &placement.cluster_tolerations,
            Timestamp::now(),
        ) {
            Decision::Stay => return Ok(Requeue::No),
            Decision::After(d) => return Ok(Requeue::After(d + Duration::from_millis(10))),
            Decision::Evict(t) => t,
        };
        let mut spec = b.spec().clone();
        let mode = purge_mode(
            spec.failover.as_ref(),
            self.ctx
                .settings
                .failover
                .no_execute_taint_eviction_purge_mode,
        );
        let message = format!(
            "cluster {} has taint {{{}}} that the placement does not tolerate (any longer)",
            key.cluster,
            taint_to_string(&taint)
        );
        let preservation = spec
            .failover
            .as_ref()
            .and_then(|f| f.cluster.as_ref())
            .and_then(|c| c.state_preservation.as_ref());
        let preserved_label_state = match reflected_statuses(&self.ctx, b.as_ref(), preservation)
            .await
            .and_then(|statuses| state_for_eviction(preservation, &statuses, &key.cluster))
        {
            Ok(state) => state,
            Err(e) => {
                // Held back until the state can be read, as Karmada's syncBindingEviction.
                event_both(
                    &self.recorder,
                    b.as_ref(),
                    true,
                    REASON_EVICT_FAILED,
                    &format!(
                        "Evict from cluster {} failed: preserving its state: {e}.",
                        key.cluster
                    ),
                );
                return Err(Error::msg(format!(
                    "extracting the preserved label state of {} {} on cluster {}: {e}",
                    B::KIND,
                    key.binding,
                    key.cluster
                )));
            }
        };
        graceful_eviction::evict_cluster(
            &mut spec,
            &key.cluster,
            TaskOptions {
                purge_mode: Some(mode),
                reason: EVICTION_REASON_TAINT_UNTOLERATED.to_owned(),
                message: message.clone(),
                producer: EVICTION_PRODUCER_TAINT_MANAGER.to_owned(),
                preserved_label_state,
                ..Default::default()
            },
            Timestamp::now(),
        );
        match graceful_eviction::write_eviction(&self.ctx, b.as_ref(), &spec).await {
            Ok(()) => {}
            Err(e) if is_conflict(&e) => return Ok(Requeue::After(Duration::from_millis(5))),
            Err(e) => {
                event_both(
                    &self.recorder,
                    b.as_ref(),
                    true,
                    REASON_EVICT_FAILED,
                    &format!("Evict from cluster {} failed.", key.cluster),
                );
                return Err(e.into());
            }
        }
        tracing::info!(binding = %key.binding, cluster = %key.cluster, purge_mode = %mode, "evicted cluster from binding");
        event_both(
            &self.recorder,
            b.as_ref(),
            false,
            EVICTION_REASON_TAINT_UNTOLERATED,
            &format!(
                "Evicting from cluster {} (purgeMode {mode}): {message}.",
                key.cluster
            ),
        );
        Ok(Requeue::No)
    }
}

#[cfg(test)]
mod tests;
