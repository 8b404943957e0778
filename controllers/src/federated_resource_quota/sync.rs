//! The federated-resource-quota-sync controller: each static assignment of a
//! FederatedResourceQuota becomes a ResourceQuota of the same name and namespace in that
//! member, carried by a Work in the member's execution space labelled with the quota's
//! namespace and name. A Work goes when its assignment goes, and all of them with the quota.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::policy::v1alpha1::{
    FEDERATED_RESOURCE_QUOTA_NAME_LABEL, FEDERATED_RESOURCE_QUOTA_NAMESPACE_LABEL,
    FederatedResourceQuota,
};
use karmada_api::well_known::finalizers;
use karmada_api::work::v1alpha1::Work;
use kube::Api;
use kube::api::DeleteParams;
use serde_json::json;
use tokio::task::JoinHandle;

use super::{quota_of, work_key};
use crate::binding::work;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::{Change, Context, Error, Key, Requeue, Result, WorkQueue, is_not_found};

/// The controller's name in `--controllers`.
pub const NAME: &str = "federatedResourceQuotaSync";

/// The name Karmada's controller records Events under.
const COMPONENT: &str = "federated-resource-quota-sync-controller";

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
        let relevant = match ch {
            Change::Update(old, new) => old.spec.static_assignments != new.spec.static_assignments,
            Change::Add(_) | Change::Delete(_) => true,
        };
        if relevant {
            c1.queue.add(Key::of(&ch.object().metadata));
        }
    });
    // A joining cluster gets the ResourceQuotas assigned to it.
    let c2 = c.clone();
    ctx.clusters.on_change(move |ch| {
        if let Change::Add(cluster) = ch {
            let name = cluster.metadata.name.as_deref().unwrap_or_default();
            for q in c2.ctx.frqs.list() {
                if q.spec.cluster_hard(name).is_some() {
                    c2.queue.add(Key::of(&q.metadata));
                }
            }
        }
    });
    let queue = c.queue.clone();
    vec![crate::runtime::run_after_sync(ctx, queue, 1, move |k| {
        let c = c.clone();
        async move { c.reconcile(k).await }
    })]
}

/// The ResourceQuota a cluster's assignment asks for.
fn resource_quota(
    quota: &FederatedResourceQuota,
    hard: &BTreeMap<String, impl serde::Serialize>,
) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {
            "namespace": quota.metadata.namespace,
            "name": quota.metadata.name,
        },
        "spec": {"hard": hard},
    })
}

impl Controller {
    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let quota = self
            .ctx
            .frqs
            .get(&key)
            .filter(|q| q.metadata.deletion_timestamp.is_none());
        let Some(quota) = quota else {
            // cleanUpWorks.
            self.delete_works(&key, |_| true).await?;
            return Ok(Requeue::No);
        };
        // cleanUpOrphanWorks: Works of clusters no longer assigned.
        self.delete_works(&key, |cluster| quota.spec.cluster_hard(cluster).is_none())
            .await?;
        let mut errors = Vec::new();
        for cluster in self.ctx.clusters.list() {
            let cname = cluster.metadata.name.clone().unwrap_or_default();
            let Some(hard) = quota.spec.cluster_hard(&cname) else {
                continue;
            };
            let wk = work_key(&cname, &key);
            let meta = ObjectMeta {
                name: Some(wk.name.clone()),
                namespace: Some(wk.namespace.clone()),
                finalizers: Some(vec![finalizers::EXECUTION_CONTROLLER.to_owned()]),
                labels: Some(BTreeMap::from([
                    (
                        FEDERATED_RESOURCE_QUOTA_NAMESPACE_LABEL.to_owned(),
                        key.namespace.clone(),
                    ),
                    (
                        FEDERATED_RESOURCE_QUOTA_NAME_LABEL.to_owned(),
                        key.name.clone(),
                    ),
                ])),
                ..Default::default()
            };
            let manifest = work::prepare_manifest(resource_quota(&quota, hard), &meta);
            if let Err(e) = work::create_or_update(&self.ctx, &meta, &manifest, None, None).await {
                errors.push(e.to_string());
            }
        }
        let target = EventTarget::of(quota.as_ref());
        if errors.is_empty() {
            self.recorder.normal(
                &target,
                "SyncWorkSucceed",
                format!("Sync works for FederatedResourceQuota({key}) succeed."),
            );
            Ok(Requeue::No)
        } else {
            let msg = errors.join(", ");
            self.recorder
                .warning(&target, "SyncWorkFailed", msg.clone());
            Err(Error::msg(msg))
        }
    }

    /// Deletes the quota's Works in the execution spaces of the clusters `doomed` picks.
    async fn delete_works(&self, key: &Key, doomed: impl Fn(&str) -> bool) -> Result<()> {
        for cluster in self.ctx.clusters.list() {
            let cname = cluster.metadata.name.as_deref().unwrap_or_default();
            if !doomed(cname) {
                continue;
            }
            let wk = work_key(cname, key);
            let Some(w) = self.ctx.works.get(&wk) else {
                continue;
            };
            if w.deleting() || quota_of(&w).as_ref() != Some(key) {
                continue;
            }
            match Api::<Work>::namespaced(self.ctx.client.clone(), &wk.namespace)
                .delete(&wk.name, &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }
}
