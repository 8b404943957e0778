//! The federated-resource-quota-enforcement controller (FederatedQuotaEnforcement gate, off
//! by default): `status.overall` follows `spec.overall`, and `status.overallUsed` is
//! recalculated from the namespace's ResourceBindings (each one's scheduled replicas times
//! one replica's requests, only the resources `overall` limits) when a quota is created, when
//! its `overall` changes, when a binding of its namespace is deleted, and every five minutes
//! (Karmada's `--federated-resource-quota-sync-period` default) to correct what the
//! scheduler's reservations ([`super::Ledger`]) got wrong. Without the gate it does not run.

use std::sync::Arc;
use std::time::Duration;

use karmada_api::policy::v1alpha1::FederatedResourceQuota;
use tokio::task::JoinHandle;

use super::status::status_patch;
use super::usage::{Usage, binding_usage, canonical_list};
use crate::runtime::context::BY_NAMESPACE;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::write::merge_patch_status;
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_not_found};

/// The controller's name in `--controllers`.
pub const NAME: &str = "federatedResourceQuotaEnforcement";

/// The name Karmada's controller records Events under.
const COMPONENT: &str = "federated-resource-quota-enforcement-controller";

/// How often every quota is recalculated.
const RESYNC_PERIOD: Duration = Duration::from_secs(5 * 60);

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
}

/// Starts the controller when FederatedQuotaEnforcement is on.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    if !ctx.settings.federated_quota_enforcement {
        return Vec::new();
    }
    let c = Arc::new(Controller {
        queue: WorkQueue::with_rate_limiter(COMPONENT, ctx.settings.rate_limiter),
        recorder: ctx.events.recorder(COMPONENT),
        ctx: ctx.clone(),
    });
    let c1 = c.clone();
    ctx.frqs.on_change(move |ch| {
        let relevant = match ch {
            Change::Add(_) => true,
            Change::Update(old, new) => old.spec.overall != new.spec.overall,
            Change::Delete(_) => false,
        };
        if relevant {
            c1.queue.add(Key::of(&ch.object().metadata));
        }
    });
    let c2 = c.clone();
    ctx.rbs.on_change(move |ch| {
        if let Change::Delete(b) = ch {
            let ns = b.metadata.namespace.as_deref().unwrap_or_default();
            for q in c2.ctx.frqs.by_index(BY_NAMESPACE, ns) {
                c2.queue.add(Key::of(&q.metadata));
            }
        }
    });
    let c3 = c.clone();
    let resync = tokio::spawn(async move {
        let mut tick = tokio::time::interval(RESYNC_PERIOD);
        tick.tick().await;
        loop {
            tick.tick().await;
            for k in c3.ctx.frqs.keys() {
                c3.queue.add(k);
            }
        }
    });
    let queue = c.queue.clone();
    vec![
        resync,
        crate::runtime::run_after_sync(ctx, queue, 1, move |k| {
            let c = c.clone();
            async move { c.reconcile(k).await }
        }),
    ]
}

impl Controller {
    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let Some(quota) = self.ctx.frqs.get(&key) else {
            return Ok(Requeue::No);
        };
        if quota.metadata.deletion_timestamp.is_some() {
            return Ok(Requeue::No);
        }
        let mut used = Usage::default();
        for b in self.ctx.rbs.list() {
            if b.metadata.namespace.as_deref() == Some(key.namespace.as_str()) {
                used.add_usage(&binding_usage(&b.spec));
            }
        }
        let mut status = quota.status.clone();
        status.overall = canonical_list(&quota.spec.overall);
        status.overall_used = used.restricted_to(&quota.spec.overall).to_list();
        let target = EventTarget::of(quota.as_ref());
        if status != quota.status {
            let api = kube::Api::<FederatedResourceQuota>::namespaced(
                self.ctx.client.clone(),
                &key.namespace,
            );
            match merge_patch_status(api, &key.name, &status_patch(&quota.status, &status)).await {
                Ok(()) => {}
                Err(e) if is_not_found(&e) => return Ok(Requeue::No),
                Err(e) => {
                    self.recorder
                        .warning(&target, "CollectOverallStatusFailed", e.to_string());
                    return Err(e.into());
                }
            }
        }
        self.recorder.normal(
            &target,
            "CollectOverallStatusSucceed",
            format!("Collect status of FederatedResourceQuota({key}) succeed."),
        );
        Ok(Requeue::No)
    }
}
