//! The binding-status controllers (rb_status_controller.go, crb_status_controller.go): collect
//! the Works' status into the binding's `aggregatedStatus` and `FullyApplied` condition, then
//! aggregate it into the resource template's own `.status` through the interpreter.

use std::sync::Arc;

use karmada_api::names;
use karmada_api::well_known::conditions;
use karmada_api::work::v1alpha1::WORK_APPLIED;
use karmada_api::work::v1alpha2::{
    AggregatedStatusItem, ClusterResourceBinding, FULLY_APPLIED, ObjectReference, ResourceBinding,
    ResourceHealth,
};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::binding::{fetch_template, template_key};
use crate::runtime::bindings::{Binding, digest_statuses, existing_clusters};
use crate::runtime::context::BY_ID;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::patch::merge_diff;
use crate::runtime::precedence::Class;
use crate::runtime::write::merge_patch_status;
use crate::runtime::{
    CachedWork, Change, Context, Key, RawObject, Requeue, Result, WorkQueue, is_not_found,
    set_condition,
};

/// Events of this controller come from this component.
pub const COMPONENT: &str = "resource-binding-status-controller";

/// Work status changes within this window make one aggregation: a binding's Works change
/// together (one per cluster, each several times while its workload starts), and each
/// aggregation costs a binding status write and usually a template status write. The change
/// that leaves every Work of the binding applied and healthy is aggregated at once (see
/// `settled`).
const COALESCE: std::time::Duration = std::time::Duration::from_millis(1000);

/// Karmada's controller-runtime names of its two binding status controllers, which this one
/// controller serves.
const RB_STATUS_CONTROLLER: &str = "resource-binding-status-controller";
const CRB_STATUS_CONTROLLER: &str = "cluster-resource-binding-status-controller";

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
}

/// Starts the binding-status controller for both binding kinds.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder(COMPONENT),
        queue: ctx.queue("binding-status", Class::Status).reconciled_as(
            &[RB_STATUS_CONTROLLER, CRB_STATUS_CONTROLLER],
            |k: &Key| {
                if k.namespace.is_empty() {
                    CRB_STATUS_CONTROLLER
                } else {
                    RB_STATUS_CONTROLLER
                }
            },
        ),
        ctx: ctx.clone(),
    });
    c.register::<ResourceBinding>();
    c.register::<ClusterResourceBinding>();
    let c1 = c.clone();
    ctx.works.on_change(move |ch| {
        let w = match ch {
            Change::Update(old, new) if old.status != new.status => new,
            Change::Delete(w) => w,
            _ => return,
        };
        if let Some(k) = w.binding() {
            if k.namespace.is_empty() {
                c1.aggregate_soon::<ClusterResourceBinding>(k);
            } else {
                c1.aggregate_soon::<ResourceBinding>(k);
            }
        }
    });
    let c2 = c.clone();
    vec![tokio::spawn(async move {
        c2.ctx.wait_synced().await;
        let c3 = c2.clone();
        let handles = c2
            .queue
            .run(c2.ctx.settings.concurrency.bindings(), move |k| {
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

/// The aggregated status items of a binding's Works (assembleWorkStatus), sorted by cluster.
pub fn assemble(
    works: &[Arc<CachedWork>],
    resource: &ObjectReference,
) -> Vec<AggregatedStatusItem> {
    let mut items = Vec::new();
    for w in works {
        if w.deleting() {
            continue;
        }
        let Some(ordinal) = w.spec.workload.manifests.iter().position(|m| {
            m.api_version() == resource.api_version
                && m.kind() == resource.kind
                && m.namespace() == resource.namespace
                && m.name() == resource.name
        }) else {
            continue;
        };
        let Some(cluster) = w
            .metadata
            .namespace
            .as_deref()
            .and_then(|ns| names::cluster_name_from_execution_space(ns).ok())
        else {
            continue;
        };
        let applied = w.status.conditions.iter().find(|c| c.type_ == WORK_APPLIED);
        let mut item = AggregatedStatusItem {
            cluster_name: cluster.to_owned(),
            status: None,
            applied: false,
            applied_message: String::new(),
            health: Some(ResourceHealth::Unknown),
        };
        match applied {
            Some(c) if c.status == "True" => {
                item.applied = true;
                if let Some(ms) = w.status.manifest_statuses.iter().find(|ms| {
                    ms.identifier.ordinal == ordinal as i64
                        && ms.identifier.names(
                            &resource.api_version,
                            &resource.kind,
                            &resource.namespace,
                            &resource.name,
                        )
                }) {
                    item.status = ms.status();
                    item.health = ms.health;
                }
            }
            Some(c) => item.applied_message = c.message.clone(),
            None => {}
        }
        items.push(item);
    }
    items.sort_by(|a, b| a.cluster_name.cmp(&b.cluster_name));
    items
}

/// True when the binding has a Work for every cluster it targets and each reports all its
/// manifests applied and healthy: the state users wait for, aggregated without delay.
fn settled<B: Binding>(ctx: &Context, key: &Key) -> bool {
    let Some(b) = B::informer(ctx).get(key) else {
        return false;
    };
    let clusters = existing_clusters(b.spec());
    let works = ctx.works.by_index(BY_ID, b.id());
    !clusters.is_empty()
        && works.len() == clusters.len()
        && works.iter().all(|w| {
            !w.deleting()
                && w.cluster().is_some_and(|c| clusters.contains(c))
                && w.applied()
                && w.status.manifest_statuses.len() == w.spec.workload.manifests.len()
                && w.status
                    .manifest_statuses
                    .iter()
                    .all(|ms| ms.health == Some(ResourceHealth::Healthy))
        })
}

/// worksFullyApplied.
pub fn fully_applied(
    items: &[AggregatedStatusItem],
    clusters: &std::collections::HashSet<String>,
) -> bool {
    if clusters.is_empty() || clusters.len() != items.len() {
        return false;
    }
    items
        .iter()
        .all(|i| i.applied && clusters.contains(&i.cluster_name))
}

impl Controller {
    fn register<B: Binding>(self: &Arc<Self>) {
        let c = self.clone();
        // A binding just scheduled or changed has Works on their way: its first aggregation
        // waits for them (or is made at once when they already report healthy).
        B::informer(&self.ctx).on_change(move |ch| match ch {
            Change::Add(b) => {
                if b.status().last_scheduled_time.is_some() {
                    c.aggregate_soon::<B>(b.key());
                }
            }
            Change::Update(old, new) => {
                if new.status().last_scheduled_time.is_none() {
                    return;
                }
                if old.spec().resource.resource_version != new.spec().resource.resource_version
                    || old.meta().generation != new.meta().generation
                    || old.status().last_scheduled_time.is_none()
                {
                    c.aggregate_soon::<B>(new.key());
                }
            }
            Change::Delete(_) => {}
        });
    }

    /// Queues an aggregation: at once when the binding's Works are settled, else after
    /// [`COALESCE`].
    fn aggregate_soon<B: Binding>(&self, key: Key) {
        if settled::<B>(&self.ctx, &key) {
            self.queue.add(key);
        } else {
            self.queue.add_after(key, COALESCE);
        }
    }

    async fn reconcile<B: Binding>(&self, key: Key) -> Result<Requeue> {
        let Some(b) = B::informer(&self.ctx).get(&key) else {
            return Ok(Requeue::No);
        };
        if b.meta().deletion_timestamp.is_some() {
            return Ok(Requeue::No);
        }
        let works = self.ctx.works.by_index(BY_ID, b.id());
        let items = assemble(&works, &b.spec().resource);
        let mut status = b.status().clone();
        let ok = fully_applied(&items, &existing_clusters(b.spec()));
        let changed_cond = if ok {
            set_condition(
                &mut status.conditions,
                FULLY_APPLIED,
                "True",
                conditions::REASON_FULLY_APPLIED_SUCCESS,
                conditions::MESSAGE_FULLY_APPLIED_SUCCESS,
                None,
            )
        } else {
            set_condition(
                &mut status.conditions,
                FULLY_APPLIED,
                "False",
                conditions::REASON_FULLY_APPLIED_FAILED,
                conditions::MESSAGE_FULLY_APPLIED_FAILED,
                None,
            )
        };
        // The cache holds digests of the reflected statuses (`digest_statuses`).
        let mut digested = items.clone();
        digest_statuses(&mut digested);
        if changed_cond || status.aggregated_status != digested {
            let patch =
                json!({"status": {"aggregatedStatus": items, "conditions": status.conditions}});
            match merge_patch_status(B::api(self.ctx.client.clone(), &key), &key.name, &patch).await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => return Ok(Requeue::No),
                Err(e) => {
                    self.recorder.warning(
                        &EventTarget::of(b.as_ref()),
                        "AggregateStatusFailed",
                        e.to_string(),
                    );
                    return Err(e.into());
                }
            }
            let what = if key.namespace.is_empty() {
                format!("ClusterResourceBinding({})", key.name)
            } else {
                format!("ResourceBinding({key})")
            };
            self.recorder.normal(
                &EventTarget::of(b.as_ref()),
                "AggregateStatusSucceed",
                format!("Update {what} with AggregatedStatus successfully."),
            );
        }
        self.update_template_status(b.spec(), &items).await?;
        Ok(Requeue::No)
    }

    /// updateResourceStatus: the template's status, aggregated by the interpreter.
    async fn update_template_status(
        &self,
        spec: &karmada_api::work::v1alpha2::ResourceBindingSpec,
        items: &[AggregatedStatusItem],
    ) -> Result<()> {
        let tkey = template_key(spec);
        let Some(template) = fetch_template(&self.ctx, &tkey).await? else {
            return Ok(());
        };
        if template.is_deleting() {
            return Ok(());
        }
        if !self.ctx.interpreter.hook_enabled(
            &template.api_version,
            &template.kind,
            lua::Operation::AggregateStatus,
        ) {
            return Ok(());
        }
        let value = template.to_value()?;
        let new_status = match self.ctx.interpreter.aggregate_status(&value, items).await {
            Ok(Some(s)) => s,
            Ok(None) => return Ok(()),
            Err(e) => {
                let target = crate::detector::template_target(&template);
                self.recorder
                    .warning(&target, "AggregateStatusFailed", e.to_string());
                return Err(crate::runtime::Error::msg(e.to_string()));
            }
        };
        let old_status = value.get("status").cloned().unwrap_or(Value::Null);
        if old_status == new_status {
            return Ok(());
        }
        let Some(r) = self
            .ctx
            .served_resource(&template.api_version, &template.kind)
        else {
            return Ok(());
        };
        let api: Api<RawObject> = if r.namespaced {
            Api::namespaced_with(
                self.ctx.client.clone(),
                template.namespace(),
                &r.api_resource(),
            )
        } else {
            Api::all_with(self.ctx.client.clone(), &r.api_resource())
        };
        let patch = json!({"status": merge_diff(&old_status, &new_status)});
        let target = crate::detector::template_target(&template);
        // The status subresource when the kind has one; a custom resource without one keeps
        // its status in the main resource.
        let written = if r.status_subresource {
            merge_patch_status(api, template.name(), &patch).await
        } else {
            api.patch(
                template.name(),
                &PatchParams::default(),
                &Patch::Merge(&patch),
            )
            .await
            .map(drop)
        };
        match written {
            Ok(_) => {
                self.recorder.normal(
                    &target,
                    "AggregateStatusSucceed",
                    "Update Resource with AggregatedStatus successfully.",
                );
                Ok(())
            }
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => {
                self.recorder
                    .warning(&target, "AggregateStatusFailed", e.to_string());
                Err(e.into())
            }
        }
    }
}
