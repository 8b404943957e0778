//! The namespace sync controller (pkg/controllers/namespace): every namespace created in the
//! control plane is propagated to every member as a Work, with ClusterOverridePolicies applied —
//! except Karmada's reserved namespaces, `default`, the skipped ones (`kube-*`) and those
//! labelled `namespace.karmada.io/skip-auto-propagation=true`.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use karmada_api::names;
use karmada_api::policy::v1alpha1::ClusterOverridePolicy;
use karmada_api::well_known::{annotations, finalizers, labels};
use karmada_api::work::v1alpha1::Work;
use kube::Api;
use kube::api::DeleteParams;
use regex::Regex;
use tokio::task::JoinHandle;

use crate::binding::work;
use crate::overrides;
use crate::runtime::{Change, Context, Error, Key, Requeue, Result, WorkQueue, is_not_found};

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<String>,
    skipped: Vec<Regex>,
}

/// Starts the namespace sync controller.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let skipped = ctx
        .settings
        .skipped_namespaces
        .iter()
        .filter_map(|p| Regex::new(&format!("^(?:{p})$")).ok())
        .collect();
    let c = Arc::new(Controller {
        queue: WorkQueue::with_rate_limiter("namespace-sync", ctx.settings.rate_limiter),
        skipped,
        ctx: ctx.clone(),
    });
    let c1 = c.clone();
    ctx.namespaces.on_change(move |ch| {
        c1.queue
            .add(ch.object().metadata.name.clone().unwrap_or_default());
    });
    let c2 = c.clone();
    ctx.clusters.on_change(move |ch| {
        if let Change::Add(_) = ch {
            c2.enqueue_all();
        }
    });
    let c3 = c.clone();
    ctx.cops.on_change(move |ch| {
        let mut pols: Vec<&ClusterOverridePolicy> = vec![ch.object()];
        if let Change::Update(old, _) = ch {
            pols.push(old);
        }
        for p in pols {
            let mut all = false;
            for rs in &p.spec.resource_selectors {
                if rs.api_version != "v1" || rs.kind != "Namespace" {
                    continue;
                }
                if rs.name.is_empty() {
                    all = true;
                } else {
                    c3.queue.add(rs.name.clone());
                }
            }
            if all {
                c3.enqueue_all();
            }
        }
    });
    let c4 = c.clone();
    vec![tokio::spawn(async move {
        c4.ctx.wait_synced().await;
        let c5 = c4.clone();
        let handles = c4
            .queue
            .run(c4.ctx.settings.concurrency.namespace, move |k| {
                let c = c5.clone();
                async move { c.reconcile(k).await }
            });
        for h in handles {
            let _ = h.await;
        }
    })]
}

impl Controller {
    fn enqueue_all(&self) {
        for k in self.ctx.namespaces.keys() {
            self.queue.add(k.name);
        }
    }

    /// namespaceShouldBeSynced.
    fn should_sync(&self, ns: &str) -> bool {
        !(names::is_reserved_namespace(ns)
            || ns == names::NAMESPACE_DEFAULT
            || self.skipped.iter().any(|r| r.is_match(ns)))
    }

    async fn reconcile(&self, name: String) -> Result<Requeue> {
        if !self.should_sync(&name) {
            return Ok(Requeue::No);
        }
        let ns = self.ctx.namespaces.get(&Key::cluster(name.clone()));
        let Some(ns) = ns.filter(|n| n.metadata.deletion_timestamp.is_none()) else {
            // Karmada leaves this to the garbage collector through the Works' owner reference.
            return self.delete_works(&name).await;
        };
        let skip = crate::runtime::label(&ns.metadata, labels::NAMESPACE_SKIP_AUTO_PROPAGATION)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"));
        if skip {
            return Ok(Requeue::No);
        }
        let value = serde_json::to_value(ns.as_ref())?;
        let cops: Vec<ClusterOverridePolicy> =
            self.ctx.cops.list().iter().map(|c| (**c).clone()).collect();
        let mut errors = Vec::new();
        for cluster in self.ctx.clusters.list() {
            let cname = cluster.metadata.name.clone().unwrap_or_default();
            let applied = match overrides::apply_overrides(&value, &cluster, &cops, &[]) {
                Ok(a) => a,
                Err(e) => {
                    errors.push(format!(
                        "sync namespace({name}) to cluster({cname}) failed due to: {e}"
                    ));
                    continue;
                }
            };
            let mut ann = std::collections::BTreeMap::new();
            if let Some(a) = applied.applied_cluster_overrides {
                ann.insert(annotations::APPLIED_CLUSTER_OVERRIDES.to_owned(), a);
            }
            let meta = ObjectMeta {
                name: Some(names::work_name("Namespace", &name, "")),
                namespace: Some(names::execution_space_name(&cname)),
                finalizers: Some(vec![finalizers::EXECUTION_CONTROLLER.to_owned()]),
                owner_references: Some(vec![OwnerReference {
                    api_version: "v1".into(),
                    kind: "Namespace".into(),
                    name: name.clone(),
                    uid: ns.metadata.uid.clone().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                annotations: (!ann.is_empty()).then_some(ann),
                ..Default::default()
            };
            let manifest = work::prepare_manifest(applied.object, &meta);
            if let Err(e) = work::create_or_update(&self.ctx, &meta, &manifest, None, None).await {
                errors.push(format!(
                    "sync namespace({name}) to cluster({cname}) failed due to: {e}"
                ));
            }
        }
        if errors.is_empty() {
            Ok(Requeue::No)
        } else {
            Err(Error::msg(errors.join("; ")))
        }
    }

    async fn delete_works(&self, name: &str) -> Result<Requeue> {
        let wname = names::work_name("Namespace", name, "");
        for cluster in self.ctx.clusters.list() {
            let es = names::execution_space_name(cluster.metadata.name.as_deref().unwrap_or(""));
            let Some(w) = self.ctx.works.get(&Key::new(es.clone(), wname.clone())) else {
                continue;
            };
            // Only the namespace controller's own Works (owned by the Namespace) go.
            let owned = w
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.kind == "Namespace" && o.name == name);
            if !owned || w.deleting() {
                continue;
            }
            match Api::<Work>::namespaced(self.ctx.client.clone(), &es)
                .delete(&wname, &DeleteParams::default())
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Requeue::No)
    }
}
