//! The CRD controller: a background task driven by the CustomResourceDefinition watch cache
//! that does what kube-apiserver's apiextensions controllers do — accept names and set the
//! `NamesAccepted` / `Established` conditions (NamingConditionController,
//! EstablishingController), serve every established CRD's versions through the catalog
//! (the CRD handler and discovery controller), and delete the objects of a CRD being deleted
//! before releasing its finalizer (CRDFinalizer).

use crate::crd::CRD_GROUP;
use std::collections::BTreeSet;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::{Value, json};
use storage::RangeRequest;

use tokio::task::JoinHandle;

use crate::crd::definition::{
    CLEANUP_FINALIZER, ClaimedNames, condition, condition_true, desired_status, mirrors_native,
    resource_defs, set_condition,
};
use crate::error::ApiError;
use crate::object;
use crate::options::DeleteOptions;
use crate::registry::{DeleteOutcome, Registry, Subresource, WriteContext};
use crate::resources::ResourceDef;
use crate::state::ApiState;
use crate::watch_cache::{Filter, RecvError, TryRecvError};

const CRD_VERSION: &str = "v1";
const CRD_PLURAL: &str = "customresourcedefinitions";

/// How often the controller looks again without an event (retries, CRDs waiting for their
/// objects to go away).
const RESYNC: Duration = Duration::from_secs(1);

/// The controller's memory between passes.
struct Controller {
    state: Weak<ApiState>,
    /// What the catalog serves from CRDs now.
    served: Vec<ResourceDef>,
}

/// Runs a first pass (so that stored CRDs are served before the server takes requests) and
/// starts the controller; the task ends when the state is dropped.
pub async fn start(state: &Arc<ApiState>) -> JoinHandle<()> {
    let mut c = Controller {
        state: Arc::downgrade(state),
        served: Vec::new(),
    };
    c.reconcile(state).await;
    tokio::spawn(c.run())
}

fn crd_def(state: &ApiState) -> Option<Arc<ResourceDef>> {
    state
        .catalog
        .snapshot()
        .get(CRD_GROUP, CRD_VERSION, CRD_PLURAL)
        .cloned()
}

fn writer() -> WriteContext {
    WriteContext {
        manager: "kube-apiserver".into(),
        dry_run: false,
        apply: false,
    }
}

fn creation_order(a: &Value, b: &Value) -> std::cmp::Ordering {
    object::meta_str(a, "creationTimestamp")
        .cmp(object::meta_str(b, "creationTimestamp"))
        .then_with(|| object::name(a).cmp(object::name(b)))
}

fn group_of(crd: &Value) -> &str {
    crd.pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl Controller {
    async fn run(mut self) {
        loop {
            let Some(state) = self.state.upgrade() else {
                return;
            };
            let Some(def) = crd_def(&state) else {
                return;
            };
            let subscription = state
                .cache(&def)
                .map(|cache| cache.subscribe(None, &Filter::default()));
            drop(state);
            let mut rx = match subscription {
                Ok(Ok(s)) => s.rx,
                _ => {
                    tokio::time::sleep(RESYNC).await;
                    continue;
                }
            };
            loop {
                let closed = tokio::select! {
                    r = rx.recv() => matches!(r, Err(RecvError::Closed)),
                    _ = tokio::time::sleep(RESYNC) => false,
                };
                // Several events often arrive together: one pass handles them all.
                while let Ok(_) | Err(TryRecvError::Lagged) = rx.try_recv() {}
                let Some(state) = self.state.upgrade() else {
                    return;
                };
                self.reconcile(&state).await;
                if closed {
                    // The cache relisted: subscribe again.
                    break;
                }
            }
        }
    }

    /// One level-triggered pass over every CRD.
    async fn reconcile(&mut self, state: &Arc<ApiState>) {
        let Some(def) = crd_def(state) else {
            return;
        };
        let Ok(cache) = state.cache(&def) else {
            return;
        };
        let mut crds: Vec<Value> = cache.all().iter().map(|o| o.value()).collect();
        crds.sort_by(creation_order);
        let snapshot = state.catalog.snapshot();
        let native: Vec<Arc<ResourceDef>> = snapshot
            .resources
            .iter()
            .filter(|r| !r.is_custom())
            .cloned()
            .collect();

        for i in 0..crds.len() {
            if object::is_terminating(&crds[i]) {
                continue;
            }
            let claimed = claimed_names(&crds, i, &native);
            let now = object::now_rfc3339();
            if crds[i].get("status") == Some(&desired_status(&crds[i], &claimed, &now)) {
                continue;
            }
            let name = object::name(&crds[i]).to_string();
            let result = Registry::new(state, def.clone())
                .guaranteed_update("", &name, Subresource::Status, &writer(), |cur| {
                    let mut next = cur.clone();
                    next["status"] = desired_status(cur, &claimed, &now);
                    Ok(next)
                })
                .await;
            match result {
                Ok(updated) => crds[i] = updated,
                Err(e) if e.code == 404 => {}
                Err(e) => tracing::warn!(crd = %name, error = %e.message, "updating CRD status"),
            }
        }

        for crd in crds.iter().filter(|c| {
            object::is_terminating(c)
                && object::finalizers(c).iter().any(|f| f == CLEANUP_FINALIZER)
        }) {
            let name = object::name(crd).to_string();
            if let Err(e) = self.finalize(state, &def, crd).await {
                tracing::warn!(crd = %name, error = %e.message, "cleaning up CRD");
            }
        }

        let mut defs = Vec::new();
        for crd in &crds {
            if condition_true(crd, "Established") && !mirrors_native(crd, &native) {
                defs.extend(resource_defs(crd));
            }
        }
        if defs != self.served {
            self.serve(state, defs);
        }
    }

    fn serve(&mut self, state: &ApiState, defs: Vec<ResourceDef>) {
        let prefixes = |d: &[ResourceDef]| -> BTreeSet<String> {
            d.iter()
                .filter_map(|r| r.prefix().map(str::to_string))
                .collect()
        };
        let crd_names = |d: &[ResourceDef]| -> BTreeSet<String> {
            d.iter()
                .filter_map(|r| match &r.source {
                    crate::resources::Source::Custom(c) => Some(c.crd_name.clone()),
                    _ => None,
                })
                .collect()
        };
        let (old_prefixes, new_prefixes) = (prefixes(&self.served), prefixes(&defs));
        let (old_crds, new_crds) = (crd_names(&self.served), crd_names(&defs));
        tracing::info!(resources = defs.len(), "serving custom resources");
        state.catalog.set_custom(defs.clone());
        for p in old_prefixes.difference(&new_prefixes) {
            state.drop_cache(p);
        }
        for c in old_crds.difference(&new_crds) {
            crate::crd::schema::forget(c);
        }
        self.served = defs;
    }

    /// CRDFinalizer.sync: deletes every object of a terminating CRD, then releases it.
    async fn finalize(
        &self,
        state: &Arc<ApiState>,
        def: &Arc<ResourceDef>,
        crd: &Value,
    ) -> Result<(), ApiError> {
        let name = object::name(crd).to_string();
        let in_progress = condition(crd, "Terminating")
            .and_then(|c| c.get("reason"))
            .and_then(Value::as_str)
            == Some("InstanceDeletionInProgress");
        if !in_progress {
            self.set_terminating(
                state,
                def,
                &name,
                json!({"type": "Terminating", "status": "True", "reason": "InstanceDeletionInProgress",
                       "message": "CustomResource deletion is in progress"}),
            )
            .await?;
        }
        // The names that were accepted decide where the objects are.
        if let Some(resource) = resource_defs(crd).into_iter().next() {
            let remaining = delete_all(state, Arc::new(resource)).await?;
            if remaining > 0 {
                // Objects with finalizers of their own: look again on the next pass.
                return Ok(());
            }
        }
        self.set_terminating(
            state,
            def,
            &name,
            json!({"type": "Terminating", "status": "False", "reason": "InstanceDeletionCompleted",
                   "message": "removed all instances"}),
        )
        .await?;
        match Registry::new(state, def.clone())
            .guaranteed_update("", &name, Subresource::Main, &writer(), |cur| {
                let mut next = cur.clone();
                let finalizers: Vec<String> = object::finalizers(cur)
                    .into_iter()
                    .filter(|f| f != CLEANUP_FINALIZER)
                    .collect();
                object::set_finalizers(&mut next, &finalizers);
                object::meta_mut(&mut next).remove("resourceVersion");
                Ok(next)
            })
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn set_terminating(
        &self,
        state: &Arc<ApiState>,
        def: &Arc<ResourceDef>,
        name: &str,
        cond: Value,
    ) -> Result<(), ApiError> {
        let now = object::now_rfc3339();
        Registry::new(state, def.clone())
            .guaranteed_update("", name, Subresource::Status, &writer(), |cur| {
                let mut next = cur.clone();
                let mut status = cur.get("status").cloned().unwrap_or(json!({}));
                set_condition(&mut status, cond.clone(), &now);
                next["status"] = status;
                Ok(next)
            })
            .await
            .map(|_| ())
    }
}

/// The names other CRDs of the same group (earlier ones first) and native resources of the
/// group hold.
fn claimed_names(crds: &[Value], i: usize, native: &[Arc<ResourceDef>]) -> ClaimedNames {
    let group = group_of(&crds[i]);
    let mut claimed = ClaimedNames::default();
    for (j, other) in crds.iter().enumerate() {
        if j != i && group_of(other) == group {
            claimed.add_crd(other);
        }
    }
    if !mirrors_native(&crds[i], native) {
        for r in native.iter().filter(|r| r.group == group) {
            claimed.add_resource(r);
        }
    }
    claimed
}

/// Deletes every stored object of a resource through the registry (so finalizers and
/// admission apply); returns how many remain.
async fn delete_all(state: &Arc<ApiState>, def: Arc<ResourceDef>) -> Result<usize, ApiError> {
    let Some(prefix) = def.prefix().map(str::to_string) else {
        return Ok(0);
    };
    let list = || async {
        state
            .store
            .range(RangeRequest {
                prefix: prefix.clone(),
                ..Default::default()
            })
            .await
    };
    let resp = list().await?;
    let registry = Registry::new(state, def.clone());
    for kv in resp.kvs {
        let Ok(obj) = crate::storage_codec::decode_value(&def, &kv.value, kv.mod_revision) else {
            continue;
        };
        if object::is_terminating(&obj) {
            continue;
        }
        let ns = if def.namespaced {
            object::namespace(&obj).to_string()
        } else {
            String::new()
        };
        match registry
            .delete(&ns, object::name(&obj), &DeleteOptions::default())
            .await
        {
            Ok(DeleteOutcome::Deleted(_) | DeleteOutcome::Terminating(_)) => {}
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(list().await?.kvs.len())
}
