//! The WorkloadRebalancer controller (pkg/controllers/workloadrebalancer): sets
//! `spec.rescheduleTriggeredAt` of each listed workload's binding to the rebalancer's
//! creation time, which makes the scheduler place it afresh (Fresh mode, ignoring where its
//! replicas are now), reports a result per workload, and deletes the rebalancer
//! `ttlSecondsAfterFinished` after every workload finished.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use karmada_api::apps::v1alpha1::{
    ObservedWorkload, REBALANCE_FAILED, REBALANCE_OBJECT_NOT_FOUND, REBALANCE_SUCCESSFUL,
    WorkloadRebalancer, WorkloadRebalancerStatus,
};
use karmada_api::names::binding_name;
use karmada_api::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};
use kube::api::{DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::runtime::{Context, Error, Key, Requeue, Result, WorkQueue, is_not_found};

const NAME: &str = "workload-rebalancer";

/// syncWorkloadsFromSpecToStatus: workloads still listed keep their result; workloads no
/// longer listed are kept only if they succeeded; new ones start pending. Sorted.
pub(crate) fn sync_status(r: &WorkloadRebalancer) -> WorkloadRebalancerStatus {
    let mut pending: Vec<_> = r.spec.workloads.clone();
    let mut out: Vec<ObservedWorkload> = Vec::new();
    for item in &r.status.observed_workloads {
        if let Some(i) = pending.iter().position(|w| *w == item.workload) {
            pending.remove(i);
            out.push(item.clone());
        } else if item.result == REBALANCE_SUCCESSFUL {
            out.push(item.clone());
        }
    }
    pending.sort();
    pending.dedup();
    out.extend(pending.into_iter().map(|w| ObservedWorkload {
        workload: w,
        ..Default::default()
    }));
    out.sort_by(|a, b| {
        let k = |w: &ObservedWorkload| {
            format!(
                "{} {} {} {}",
                w.workload.api_version, w.workload.kind, w.workload.namespace, w.workload.name
            )
        };
        k(a).cmp(&k(b))
    });
    WorkloadRebalancerStatus {
        observed_workloads: out,
        observed_generation: r.metadata.generation.unwrap_or(0),
        finish_time: None,
    }
}

/// How long until a finished rebalancer expires (timeLeft); None without a TTL or finish time.
pub(crate) fn time_left(r: &WorkloadRebalancer, now: Timestamp) -> Option<Duration> {
    let ttl = r.spec.ttl_seconds_after_finished?;
    let finish = r.status.finish_time.as_ref()?.0;
    let expire = finish
        .checked_add(SignedDuration::from_secs(i64::from(ttl.max(0))))
        .unwrap_or(Timestamp::MAX);
    Some(Duration::try_from(expire.duration_since(now)).unwrap_or(Duration::ZERO))
}

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
}

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        queue: WorkQueue::with_rate_limiter(NAME, ctx.settings.rate_limiter),
        ctx,
    });
    let w = c.clone();
    let r = c.clone();
    vec![
        tokio::spawn(async move {
            let api = Api::<WorkloadRebalancer>::all(w.ctx.client.clone());
            let mut stream =
                std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
            while let Some(ev) = stream.next().await {
                match ev {
                    Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => {
                        w.queue.add(Key::cluster(o.name_any()))
                    }
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "WorkloadRebalancer watch failed"),
                }
            }
        }),
        tokio::spawn(async move {
            r.ctx.wait_synced().await;
            let r2 = r.clone();
            let handles = r.queue.run(1, move |k: Key| {
                let c = r2.clone();
                async move { c.reconcile(k).await }
            });
            for h in handles {
                let _ = h.await;
            }
        }),
    ]
}

impl Controller {
    /// Sets rescheduleTriggeredAt on one workload's binding: Ok(None) when done (or already
    /// newer), Ok(Some(reason)) when it failed for good, Err to retry.
    async fn trigger(
        &self,
        namespace: &str,
        name: &str,
        at: &Time,
    ) -> std::result::Result<Option<&'static str>, kube::Error> {
        let patch = json!({"spec": {"rescheduleTriggeredAt": at}});
        let newer = |t: Option<&Time>| t.is_some_and(|t| t.0 >= at.0);
        let result = if namespace.is_empty() {
            let api = Api::<ClusterResourceBinding>::all(self.ctx.client.clone());
            match api.get(name).await {
                Ok(b) if newer(b.spec.reschedule_triggered_at.as_ref()) => return Ok(None),
                Ok(_) => api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ()),
                Err(e) => Err(e),
            }
        } else {
            let api = Api::<ResourceBinding>::namespaced(self.ctx.client.clone(), namespace);
            match api.get(name).await {
                Ok(b) if newer(b.spec.reschedule_triggered_at.as_ref()) => return Ok(None),
                Ok(_) => api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ()),
                Err(e) => Err(e),
            }
        };
        match result {
            Ok(()) => Ok(None),
            Err(e) if is_not_found(&e) => Ok(Some(REBALANCE_OBJECT_NOT_FOUND)),
            Err(e) => Err(e),
        }
    }

    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let api = Api::<WorkloadRebalancer>::all(self.ctx.client.clone());
        let Some(r) = api.get_opt(&key.name).await? else {
            return Ok(Requeue::No);
        };
        let created = r
            .metadata
            .creation_timestamp
            .clone()
            .unwrap_or_else(crate::runtime::now);
        let mut status = sync_status(&r);
        let mut retry = 0usize;
        for item in &mut status.observed_workloads {
            if !item.result.is_empty() {
                continue;
            }
            let w = &item.workload;
            let binding = binding_name(&w.kind, &w.name);
            match self.trigger(&w.namespace, &binding, &created).await {
                Ok(None) => item.result = REBALANCE_SUCCESSFUL.to_owned(),
                Ok(Some(reason)) => {
                    item.result = REBALANCE_FAILED.to_owned();
                    item.reason = reason.to_owned();
                }
                Err(e) => {
                    tracing::debug!(rebalancer = %key.name, binding, error = %e, "triggering a reschedule failed");
                    retry += 1;
                }
            }
        }
        status.finish_time = r.status.finish_time.clone();
        let mut current = r.clone();
        if status != r.status {
            if retry == 0 {
                status.finish_time = Some(crate::runtime::now());
            }
            let patch = json!({"status": status});
            current = api
                .patch_status(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        if retry > 0 {
            return Err(Error::msg(format!(
                "{retry} resource reschedule triggered failed and need retry"
            )));
        }
        match time_left(&current, Timestamp::now()) {
            None => Ok(Requeue::No),
            Some(left) if !left.is_zero() => Ok(Requeue::After(left)),
            Some(_) => {
                let dp = DeleteParams {
                    preconditions: Some(Preconditions {
                        resource_version: current.metadata.resource_version.clone(),
                        uid: None,
                    }),
                    ..Default::default()
                };
                match api.delete(&key.name, &dp).await {
                    Ok(_) => Ok(Requeue::No),
                    Err(e) if is_not_found(&e) => Ok(Requeue::No),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use karmada_api::apps::v1alpha1::{ObjectReference, WorkloadRebalancerSpec};

    fn w(name: &str) -> ObjectReference {
        ObjectReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: name.into(),
            namespace: "default".into(),
        }
    }

    fn observed(name: &str, result: &str) -> ObservedWorkload {
        ObservedWorkload {
            workload: w(name),
            result: result.into(),
            reason: String::new(),
        }
    }

    #[test]
    fn the_status_follows_the_list() {
        let r = WorkloadRebalancer {
            spec: WorkloadRebalancerSpec {
                workloads: vec![w("c"), w("a"), w("b")],
                ttl_seconds_after_finished: None,
            },
            status: WorkloadRebalancerStatus {
                observed_workloads: vec![
                    observed("a", REBALANCE_SUCCESSFUL),
                    observed("gone-ok", REBALANCE_SUCCESSFUL),
                    observed("gone-failed", REBALANCE_FAILED),
                ],
                ..Default::default()
            },
            ..Default::default()
        };
        let s = sync_status(&r);
        let got: Vec<(&str, &str)> = s
            .observed_workloads
            .iter()
            .map(|o| (o.workload.name.as_str(), o.result.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", "Successful"),
                ("b", ""),
                ("c", ""),
                ("gone-ok", "Successful")
            ]
        );
    }

    #[test]
    fn ttl_counts_from_the_finish_time() {
        let t = |s: i64| Timestamp::from_second(1_700_000_000 + s).unwrap();
        let mut r = WorkloadRebalancer::default();
        assert_eq!(time_left(&r, t(0)), None);
        r.spec.ttl_seconds_after_finished = Some(30);
        assert_eq!(time_left(&r, t(0)), None, "not finished");
        r.status.finish_time = Some(Time(t(0)));
        assert_eq!(time_left(&r, t(10)), Some(Duration::from_secs(20)));
        assert_eq!(time_left(&r, t(40)), Some(Duration::ZERO));
        r.spec.ttl_seconds_after_finished = Some(0);
        assert_eq!(time_left(&r, t(0)), Some(Duration::ZERO));
    }
}
