//! The remedy controller (pkg/controllers/remediation): each Cluster's `status.remedyActions`
//! is the sorted set of actions of every Remedy that applies to it (its clusterAffinity names
//! the cluster, or it has none) and whose decisionMatches hold for the cluster's status
//! conditions. A cluster is looked at again when its conditions or actions change and when a
//! Remedy naming it (or naming no cluster) is created, changed or deleted, so actions go once
//! nothing asks for them, including after the Remedy's deletion.

use std::collections::BTreeSet;
use std::sync::Arc;

use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::remedy::v1alpha1::{Remedy, cluster_actions};
use kube::Api;
use kube::runtime::watcher;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::runtime::informer::Informer;
use crate::runtime::write::merge_patch_status;
use crate::runtime::{Change, Context, Key, Requeue, Result, WorkQueue, is_not_found};

/// The controller's name in `--controllers`.
pub const NAME: &str = "remedy";

/// Karmada's name of the controller (its queue and metrics).
const COMPONENT: &str = "remedy-controller";

struct Controller {
    ctx: Arc<Context>,
    remedies: Informer<Remedy>,
    queue: WorkQueue<String>,
}

/// Starts the controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        remedies: Informer::builder("remedies").build(),
        queue: WorkQueue::with_rate_limiter(COMPONENT, ctx.settings.rate_limiter),
        ctx: ctx.clone(),
    });
    let c1 = c.clone();
    ctx.clusters.on_change(move |ch| {
        if let Change::Update(old, new) = ch {
            let same_actions = old.status.remedy_actions.iter().collect::<BTreeSet<_>>()
                == new.status.remedy_actions.iter().collect::<BTreeSet<_>>();
            if old.status.conditions != new.status.conditions || !same_actions {
                c1.queue.add(new.metadata.name.clone().unwrap_or_default());
            }
        }
    });
    let c2 = c.clone();
    c.remedies.on_change(move |ch| {
        let mut named: Vec<&Remedy> = vec![ch.object()];
        if let Change::Update(old, _) = ch {
            named.push(old);
        }
        if named.iter().any(|r| r.spec.cluster_affinity.is_none()) {
            for k in c2.ctx.clusters.keys() {
                c2.queue.add(k.name);
            }
            return;
        }
        for r in named {
            for n in r
                .spec
                .cluster_affinity
                .iter()
                .flat_map(|a| &a.cluster_names)
            {
                c2.queue.add(n.clone());
            }
        }
    });
    let informer = c
        .remedies
        .run(Api::all(ctx.client.clone()), watcher::Config::default());
    let queue = c.queue.clone();
    vec![
        informer,
        crate::runtime::run_after_sync(ctx, queue, 1, move |k| {
            let c = c.clone();
            async move { c.reconcile(k).await }
        }),
    ]
}

impl Controller {
    async fn reconcile(&self, name: String) -> Result<Requeue> {
        self.remedies.wait_synced().await;
        let Some(cluster) = self.ctx.clusters.get(&Key::cluster(name.clone())) else {
            return Ok(Requeue::No);
        };
        if cluster.metadata.deletion_timestamp.is_some() {
            return Ok(Requeue::No);
        }
        let remedies = self.remedies.list();
        let actions = cluster_actions(
            remedies.iter().map(|r| &**r),
            &name,
            &cluster.status.conditions,
        );
        if actions == cluster.status.remedy_actions {
            return Ok(Requeue::No);
        }
        let value = if actions.is_empty() {
            Value::Null
        } else {
            json!(actions)
        };
        let api = Api::<Cluster>::all(self.ctx.client.clone());
        match merge_patch_status(api, &name, &json!({"status": {"remedyActions": value}})).await {
            Ok(()) => Ok(Requeue::No),
            Err(e) if is_not_found(&e) => Ok(Requeue::No),
            Err(e) => Err(e.into()),
        }
    }
}
