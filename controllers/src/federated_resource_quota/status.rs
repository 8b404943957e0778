//! The federated-resource-quota-status controller: `status.aggregatedStatus` lists, per
//! member, the hard limits and usage its ResourceQuota reports (reflected into the Work's
//! manifest status once the Work is applied), sorted by cluster. Without
//! FederatedQuotaEnforcement it also sets `status.overall` to the spec's and
//! `status.overallUsed` to the members' usage summed; with it, the enforcement controller
//! owns those two.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::names;
use karmada_api::policy::v1alpha1::{
    ClusterQuotaStatus, FederatedResourceQuota, FederatedResourceQuotaStatus,
};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use super::usage::{Usage, canonical_list};
use super::{quota_of, work_key};
use crate::runtime::cache::CachedWork;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::write::merge_patch_status;
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_not_found};

/// The controller's name in `--controllers`.
pub const NAME: &str = "federatedResourceQuotaStatus";

/// The name Karmada's controller records Events under.
const COMPONENT: &str = "federated-resource-quota-status-controller";

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
}

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        queue: WorkQueue::with_rate_limiter(COMPONENT, ctx.settings.rate_limiter),
        recorder: ctx.events.recorder(COMPONENT),
        ctx: ctx.clone(),
    });
    let c1 = c.clone();
    ctx.frqs.on_change(move |ch| {
        if !matches!(ch, Change::Delete(_)) {
            c1.queue.add(Key::of(&ch.object().metadata));
        }
    });
    // A quota Work's status changed, or the Work went.
    let c2 = c.clone();
    ctx.works.on_change(move |ch| {
        let relevant = match ch {
            Change::Add(_) => false,
            Change::Update(old, new) => old.status != new.status,
            Change::Delete(_) => true,
        };
        if relevant && let Some(q) = quota_of(ch.object()) {
            c2.queue.add(q);
        }
    });
    let queue = c.queue.clone();
    vec![crate::runtime::run_after_sync(ctx, queue, 1, move |k| {
        let c = c.clone();
        async move { c.reconcile(k).await }
    })]
}

/// One member's quota status from its Work: None until the Work is applied and the
/// ResourceQuota's status reflected (aggregatedStatusFormWorks).
fn cluster_status(w: &CachedWork) -> Option<std::result::Result<ClusterQuotaStatus, String>> {
    if !w.applied() {
        return None;
    }
    let reflected = w.status.manifest_statuses.first()?.status()?;
    let space = w.metadata.namespace.as_deref().unwrap_or_default();
    let cluster = names::cluster_name_from_execution_space(space).ok()?;
    #[derive(serde::Deserialize, Default)]
    struct ResourceQuotaStatus {
        #[serde(default)]
        hard: BTreeMap<String, Quantity>,
        #[serde(default)]
        used: BTreeMap<String, Quantity>,
    }
    Some(
        serde_json::from_value::<ResourceQuotaStatus>(reflected)
            .map(|s| ClusterQuotaStatus {
                cluster_name: cluster.to_owned(),
                hard: s.hard,
                used: s.used,
            })
            .map_err(|e| format!("reading the ResourceQuota status of cluster {cluster}: {e}")),
    )
}

/// The members' usage summed (calculateUsed).
pub fn overall_used(aggregated: &[ClusterQuotaStatus]) -> BTreeMap<String, Quantity> {
    let mut sum = Usage::default();
    for s in aggregated {
        sum.add_usage(&Usage::of(&s.used));
    }
    sum.to_list()
}

/// A merge patch turning `old` into `new` (maps replaced key by key, removed keys nulled).
pub(super) fn status_patch(
    old: &FederatedResourceQuotaStatus,
    new: &FederatedResourceQuotaStatus,
) -> Value {
    let old = serde_json::to_value(old).unwrap_or_else(|_| json!({}));
    let new = serde_json::to_value(new).unwrap_or_else(|_| json!({}));
    json!({"status": crate::runtime::patch::merge_diff(&old, &new)})
}

impl Controller {
    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let Some(quota) = self.ctx.frqs.get(&key) else {
            return Ok(Requeue::No);
        };
        if quota.metadata.deletion_timestamp.is_some() {
            return Ok(Requeue::No);
        }
        let target = EventTarget::of(quota.as_ref());
        let mut aggregated = Vec::new();
        for cluster in self.ctx.clusters.list() {
            let cname = cluster.metadata.name.as_deref().unwrap_or_default();
            let Some(w) = self.ctx.works.get(&work_key(cname, &key)) else {
                continue;
            };
            if quota_of(&w).as_ref() != Some(&key) {
                continue;
            }
            match cluster_status(&w) {
                None => {}
                Some(Ok(s)) => aggregated.push(s),
                Some(Err(msg)) => {
                    self.recorder
                        .warning(&target, "AggregateStatusFailed", msg.clone());
                    return Err(crate::runtime::Error::msg(msg));
                }
            }
        }
        aggregated.sort_by(|a, b| a.cluster_name.cmp(&b.cluster_name));
        let mut status = quota.status.clone();
        status.aggregated_status = aggregated;
        if !self.ctx.settings.federated_quota_enforcement {
            status.overall = canonical_list(&quota.spec.overall);
            status.overall_used = overall_used(&status.aggregated_status);
        }
        if status != quota.status {
            self.write(&quota, &status).await?;
        }
        self.recorder.normal(
            &target,
            "AggregateStatusSucceed",
            format!("Collect status of FederatedResourceQuota({key}) succeed."),
        );
        Ok(Requeue::No)
    }

    async fn write(
        &self,
        quota: &FederatedResourceQuota,
        status: &FederatedResourceQuotaStatus,
    ) -> Result<()> {
        let api = kube::Api::<FederatedResourceQuota>::namespaced(
            self.ctx.client.clone(),
            quota.metadata.namespace.as_deref().unwrap_or_default(),
        );
        let name = quota.metadata.name.as_deref().unwrap_or_default();
        match merge_patch_status(api, name, &status_patch(&quota.status, status)).await {
            Ok(()) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    }

    #[test]
    fn overall_used_sums_the_members() {
        let s = |c: &str, used: &[(&str, &str)]| ClusterQuotaStatus {
            cluster_name: c.into(),
            hard: BTreeMap::new(),
            used: list(used),
        };
        let aggregated = [
            s("m1", &[("pods", "2"), ("requests.cpu", "200m")]),
            s("m2", &[("pods", "1"), ("requests.memory", "1Gi")]),
            s("m3", &[]),
        ];
        assert_eq!(
            overall_used(&aggregated),
            list(&[
                ("pods", "3"),
                ("requests.cpu", "200m"),
                ("requests.memory", "1Gi")
            ])
        );
        assert!(overall_used(&[]).is_empty());
    }

    #[test]
    fn removed_keys_are_nulled() {
        let old = FederatedResourceQuotaStatus {
            overall: list(&[("cpu", "1"), ("pods", "2")]),
            ..Default::default()
        };
        let new = FederatedResourceQuotaStatus {
            overall: list(&[("cpu", "2")]),
            ..Default::default()
        };
        assert_eq!(
            status_patch(&old, &new),
            json!({"status": {"overall": {"cpu": "2", "pods": null}}})
        );
    }
}
