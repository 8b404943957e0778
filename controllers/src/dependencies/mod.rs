//! The dependencies distributor (pkg/dependenciesdistributor): for bindings whose policy sets
//! `propagateDeps`, the ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims their
//! workload refers to get "attached" bindings whose `requiredBy` snapshots carry the
//! workload's clusters, so the binding controller sends them to the same clusters.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::names;
use karmada_api::policy::v1alpha1::ConflictResolution;
use karmada_api::well_known::{annotations, finalizers, labels};
use karmada_api::work::v1alpha2::{
    BindingSnapshot, ObjectReference, ResourceBinding, ResourceBindingSpec,
};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::task::JoinHandle;

use crate::binding::{fetch_template, template_key};
use crate::detector::template_target;
use crate::interpreter::DependentObjectReference;
use crate::runtime::bindings::Binding;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::selector;
use crate::runtime::{
    Change, Context, Error, Key, ObjectKey, RawObject, Requeue, Result, WorkQueue,
    is_already_exists, is_conflict, is_not_found,
};

/// Events of this controller come from this component.
pub const COMPONENT: &str = "dependencies-distributor";

struct Controller {
    ctx: Arc<Context>,
    queue: WorkQueue<Key>,
    recorder: Recorder,
    /// Dependencies recorded on independent bindings, to find the bindings a changed template
    /// is a dependency of.
    deps: Mutex<HashMap<Key, Vec<DependentObjectReference>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `resourcebinding.karmada.io/depended-by-<hash of namespace/name>`.
pub fn depended_by_label(namespace: &str, name: &str) -> String {
    format!(
        "{}{}",
        labels::DEPENDED_BY_PREFIX,
        names::binding_reference_key(namespace, name)
    )
}

fn recorded_deps(rb: &ResourceBinding) -> Vec<DependentObjectReference> {
    crate::runtime::annotation(&rb.metadata, annotations::DEPENDENCIES)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default()
}

/// Starts the dependencies distributor.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let c = Arc::new(Controller {
        recorder: ctx.events.recorder(COMPONENT),
        queue: WorkQueue::with_rate_limiter("dependencies-distributor", ctx.settings.rate_limiter)
            .reconciled_as(
                &["dependencies-distributor"],
                |_| "dependencies-distributor",
            ),
        deps: Mutex::new(HashMap::new()),
        ctx: ctx.clone(),
    });
    let c1 = c.clone();
    ctx.rbs.on_change(move |ch| {
        let rb = ch.object();
        let key = rb.key();
        match ch {
            Change::Delete(_) => {
                lock(&c1.deps).remove(&key);
                if rb.spec.propagate_deps {
                    c1.queue.add(key);
                }
            }
            Change::Add(rb) => {
                c1.note_deps(rb);
                if rb.spec.propagate_deps && !rb.spec.clusters.is_empty() {
                    c1.queue.add(key);
                }
            }
            Change::Update(old, new) => {
                c1.note_deps(new);
                if (old.metadata.generation != new.metadata.generation
                    || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp)
                    && (old.spec.propagate_deps || new.spec.propagate_deps)
                {
                    c1.queue.add(key);
                }
            }
        }
    });
    let c2 = c.clone();
    ctx.templates.on_change(move |_r, ch| {
        let t = ch.object();
        if t.namespace().is_empty() {
            return;
        }
        if let Change::Update(old, new) = ch
            && old.digest == new.digest
        {
            return;
        }
        for k in c2.dependents_of(t) {
            c2.queue.add(k);
        }
    });
    let c3 = c.clone();
    vec![tokio::spawn(async move {
        c3.ctx.wait_synced().await;
        let c4 = c3.clone();
        let handles = c3
            .queue
            .run(c3.ctx.settings.concurrency.dependent_resource, move |k| {
                let c = c4.clone();
                async move { c.reconcile(k).await }
            });
        for h in handles {
            let _ = h.await;
        }
    })]
}

impl Controller {
    fn note_deps(&self, rb: &ResourceBinding) {
        let d = recorded_deps(rb);
        let mut m = lock(&self.deps);
        if d.is_empty() {
            m.remove(&rb.key());
        } else {
            m.insert(rb.key(), d);
        }
    }

    /// The independent bindings that name a template among their dependencies
    /// (matchesWithBindingDependencies).
    fn dependents_of(&self, t: &RawObject) -> Vec<Key> {
        lock(&self.deps)
            .iter()
            .filter(|(k, deps)| {
                k.namespace == t.namespace()
                    && deps.iter().any(|d| {
                        d.api_version == t.api_version
                            && d.kind == t.kind
                            && d.namespace == t.namespace()
                            && if !d.name.is_empty() {
                                d.name == t.name()
                            } else {
                                d.label_selector.as_ref().is_some_and(|s| {
                                    selector::matches(s, t.metadata.labels.as_ref())
                                })
                            }
                    })
            })
            .map(|(k, _)| k.clone())
            .collect()
    }

    fn attached_of(&self, namespace: &str, name: &str, id: &str) -> Vec<Arc<ResourceBinding>> {
        let label = depended_by_label(namespace, name);
        self.ctx
            .rbs
            .list()
            .into_iter()
            .filter(|b| b.metadata.namespace.as_deref() == Some(namespace))
            .filter(|b| {
                crate::runtime::label(&b.metadata, &label).is_some_and(|v| id.is_empty() || v == id)
            })
            .collect()
    }

    async fn reconcile(&self, key: Key) -> Result<Requeue> {
        let rb = self.ctx.rbs.get(&key);
        let Some(rb) =
            rb.filter(|b| b.spec.propagate_deps && b.metadata.deletion_timestamp.is_none())
        else {
            // Gone, being deleted, or propagateDeps switched off: release the attached bindings.
            let id = self
                .ctx
                .rbs
                .get(&key)
                .map(|b| {
                    crate::runtime::label(&b.metadata, labels::RESOURCE_BINDING_PERMANENT_ID)
                        .unwrap_or("")
                        .to_owned()
                })
                .unwrap_or_default();
            let attached = self.attached_of(&key.namespace, &key.name, &id);
            self.remove_from_attached(&key, attached).await?;
            if let Some(b) = self.ctx.rbs.get(&key) {
                self.remove_finalizer(&b).await?;
            }
            return Ok(Requeue::No);
        };
        let Some(template) = fetch_template(&self.ctx, &template_key(&rb.spec)).await? else {
            return Ok(Requeue::No);
        };
        let deps = match self
            .ctx
            .interpreter
            .get_dependencies(&template.to_value()?)
            .await
        {
            Ok(d) => d,
            Err(e) => {
                self.recorder.warning(
                    &template_target(&template),
                    "GetDependenciesFailed",
                    e.to_string(),
                );
                return Err(Error::msg(e.to_string()));
            }
        };
        self.recorder.normal(
            &template_target(&template),
            "GetDependenciesSucceed",
            format!(
                "Get dependencies({}) succeed.",
                serde_json::to_string(&deps)?
            ),
        );
        self.add_finalizer(&rb).await?;
        let res = self.sync(&rb, &deps).await;
        let target = EventTarget::of(rb.as_ref());
        match &res {
            Ok(()) => self.recorder.normal(
                &target,
                "SyncScheduleResultToDependenciesSucceed",
                "Sync schedule results to dependencies succeed.",
            ),
            Err(e) => self.recorder.warning(
                &target,
                "SyncScheduleResultToDependenciesFailed",
                e.to_string(),
            ),
        }
        res.map(|_| Requeue::No)
    }

    async fn sync(&self, rb: &ResourceBinding, deps: &[DependentObjectReference]) -> Result<()> {
        let key = rb.key();
        let id = crate::runtime::label(&rb.metadata, labels::RESOURCE_BINDING_PERMANENT_ID)
            .unwrap_or("")
            .to_owned();
        // recordDependencies
        let recorded = serde_json::to_string(deps)?;
        if crate::runtime::annotation(&rb.metadata, annotations::DEPENDENCIES)
            != Some(recorded.as_str())
        {
            let patch = json!({"metadata": {"annotations": {annotations::DEPENDENCIES: recorded}}});
            Api::<ResourceBinding>::namespaced(self.ctx.client.clone(), &key.namespace)
                .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
        // The dependencies' templates as they are now.
        let mut wanted: Vec<Arc<RawObject>> = Vec::new();
        for d in deps {
            if !d.name.is_empty() {
                let ok = ObjectKey::new(
                    d.api_version.clone(),
                    d.kind.clone(),
                    d.namespace.clone(),
                    d.name.clone(),
                );
                if let Some(t) = fetch_template(&self.ctx, &ok).await.ok().flatten() {
                    wanted.push(t);
                }
            } else if let Some(sel) = &d.label_selector
                && let Some(inf) = self.ctx.templates.get(&d.api_version, &d.kind)
            {
                wanted.extend(inf.list().into_iter().filter(|t| {
                    t.namespace() == d.namespace
                        && selector::matches(sel, t.metadata.labels.as_ref())
                }));
            }
        }
        // removeOrphanAttachedBindings
        let keep: HashSet<(String, String)> = wanted
            .iter()
            .map(|t| (t.kind.clone(), t.name().to_owned()))
            .collect();
        let orphans: Vec<Arc<ResourceBinding>> = self
            .attached_of(&key.namespace, &key.name, &id)
            .into_iter()
            .filter(|b| {
                !keep.contains(&(b.spec.resource.kind.clone(), b.spec.resource.name.clone()))
            })
            .collect();
        self.remove_from_attached(&key, orphans).await?;
        let mut errors = Vec::new();
        for t in wanted {
            if let Err(e) = self.ensure_attached(rb, &id, &t).await {
                errors.push(e.to_string());
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::msg(errors.join("; ")))
        }
    }

    /// createOrUpdateAttachedBinding.
    async fn ensure_attached(&self, rb: &ResourceBinding, id: &str, t: &RawObject) -> Result<()> {
        let ns = rb.metadata.namespace.clone().unwrap_or_default();
        let name = names::binding_name(&t.kind, t.name());
        let api = Api::<ResourceBinding>::namespaced(self.ctx.client.clone(), &ns);
        let snapshot = BindingSnapshot {
            namespace: ns.clone(),
            name: rb.metadata.name.clone().unwrap_or_default(),
            clusters: rb.spec.clusters.clone(),
        };
        let label = depended_by_label(&ns, rb.metadata.name.as_deref().unwrap_or(""));
        let resource = ObjectReference {
            api_version: t.api_version.clone(),
            kind: t.kind.clone(),
            namespace: t.namespace().to_owned(),
            name: t.name().to_owned(),
            uid: t.uid().to_owned(),
            resource_version: t.resource_version().to_owned(),
        };
        let mut current = self
            .ctx
            .rbs
            .get(&Key::new(ns.clone(), name.clone()))
            .map(|b| (*b).clone());
        for _ in 0..5 {
            match current.take() {
                None => {
                    let b = ResourceBinding {
                        metadata: ObjectMeta {
                            name: Some(name.clone()),
                            namespace: Some(ns.clone()),
                            owner_references: Some(vec![crate::detector::controller_ref(t)]),
                            labels: Some(BTreeMap::from([(label.clone(), id.to_owned())])),
                            finalizers: Some(vec![finalizers::BINDING_CONTROLLER.to_owned()]),
                            ..Default::default()
                        },
                        spec: ResourceBindingSpec {
                            resource: resource.clone(),
                            required_by: vec![snapshot.clone()],
                            preserve_resources_on_deletion: rb.spec.preserve_resources_on_deletion,
                            conflict_resolution: rb.spec.conflict_resolution,
                            ..Default::default()
                        },
                        status: Default::default(),
                    };
                    match api.create(&PostParams::default(), &b).await {
                        Ok(_) => return Ok(()),
                        Err(e) if is_already_exists(&e) => current = Some(api.get(&name).await?),
                        Err(e) => return Err(e.into()),
                    }
                }
                Some(existing) => {
                    let owner = existing
                        .metadata
                        .owner_references
                        .iter()
                        .flatten()
                        .find(|o| o.controller == Some(true))
                        .map(|o| o.uid.as_str());
                    if owner.is_some_and(|u| u != t.uid()) {
                        return Err(Error::msg(format!(
                            "failed to update resourceBinding({ns}/{name}) due to different owner reference UID, will try again later after binding is garbage collected, see https://github.com/karmada-io/karmada/issues/6034"
                        )));
                    }
                    let mut b = existing.clone();
                    let mut required = b.spec.required_by.clone();
                    match required
                        .iter_mut()
                        .find(|s| s.namespace == snapshot.namespace && s.name == snapshot.name)
                    {
                        Some(s) => s.clusters = snapshot.clusters.clone(),
                        None => required.push(snapshot.clone()),
                    }
                    if b.spec.placement.is_none() {
                        let (cr, preserve) = self.effective_strategy(&required);
                        b.spec.conflict_resolution = Some(cr);
                        b.spec.preserve_resources_on_deletion = Some(preserve);
                    }
                    b.spec.required_by = required;
                    b.metadata
                        .labels
                        .get_or_insert_with(BTreeMap::new)
                        .insert(label.clone(), id.to_owned());
                    b.spec.resource = resource.clone();
                    if b == existing {
                        return Ok(());
                    }
                    match api.replace(&name, &PostParams::default(), &b).await {
                        Ok(_) => return Ok(()),
                        Err(e) if is_conflict(&e) => current = api.get_opt(&name).await?,
                        Err(e) if is_not_found(&e) => current = None,
                        Err(e) => return Err(e.into()),
                    }
                }
            }
        }
        Err(Error::msg(format!(
            "attached binding {ns}/{name}: too many conflicts"
        )))
    }

    /// The conflict resolution and preservation of a dependency required by several bindings:
    /// Overwrite if any asks for it, preserved if any asks for it.
    fn effective_strategy(&self, required: &[BindingSnapshot]) -> (ConflictResolution, bool) {
        let mut cr = ConflictResolution::Abort;
        let mut preserve = false;
        for s in required {
            if let Some(b) = self
                .ctx
                .rbs
                .get(&Key::new(s.namespace.clone(), s.name.clone()))
            {
                if b.spec.conflict_resolution == Some(ConflictResolution::Overwrite) {
                    cr = ConflictResolution::Overwrite;
                }
                preserve |= b.spec.preserve_resources_on_deletion.unwrap_or(false);
            }
        }
        (cr, preserve)
    }

    /// removeScheduleResultFromAttachedBindings.
    async fn remove_from_attached(
        &self,
        independent: &Key,
        attached: Vec<Arc<ResourceBinding>>,
    ) -> Result<()> {
        let label = depended_by_label(&independent.namespace, &independent.name);
        for a in attached {
            let mut b = (*a).clone();
            if let Some(l) = b.metadata.labels.as_mut() {
                l.remove(&label);
            }
            b.spec
                .required_by
                .retain(|s| !(s.namespace == independent.namespace && s.name == independent.name));
            if b.spec.placement.is_none() {
                if b.spec.required_by.is_empty() {
                    b.spec.conflict_resolution = None;
                    b.spec.preserve_resources_on_deletion = None;
                } else {
                    let (cr, preserve) = self.effective_strategy(&b.spec.required_by);
                    b.spec.conflict_resolution = Some(cr);
                    b.spec.preserve_resources_on_deletion = Some(preserve);
                }
            }
            let k = b.key();
            match Api::<ResourceBinding>::namespaced(self.ctx.client.clone(), &k.namespace)
                .replace(&k.name, &PostParams::default(), &b)
                .await
            {
                Ok(_) => {}
                Err(e) if is_not_found(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    async fn add_finalizer(&self, rb: &ResourceBinding) -> Result<()> {
        let mut fins = rb.metadata.finalizers.clone().unwrap_or_default();
        if fins
            .iter()
            .any(|f| f == finalizers::BINDING_DEPENDENCIES_DISTRIBUTOR)
        {
            return Ok(());
        }
        fins.push(finalizers::BINDING_DEPENDENCIES_DISTRIBUTOR.to_owned());
        self.patch_finalizers(rb, fins).await
    }

    async fn remove_finalizer(&self, rb: &ResourceBinding) -> Result<()> {
        let fins = rb.metadata.finalizers.clone().unwrap_or_default();
        if !fins
            .iter()
            .any(|f| f == finalizers::BINDING_DEPENDENCIES_DISTRIBUTOR)
        {
            return Ok(());
        }
        let rest = fins
            .into_iter()
            .filter(|f| f != finalizers::BINDING_DEPENDENCIES_DISTRIBUTOR)
            .collect();
        self.patch_finalizers(rb, rest).await
    }

    async fn patch_finalizers(&self, rb: &ResourceBinding, fins: Vec<String>) -> Result<()> {
        let key = rb.key();
        let patch = json!({"metadata": {"finalizers": fins, "resourceVersion": rb.metadata.resource_version}});
        match Api::<ResourceBinding>::namespaced(self.ctx.client.clone(), &key.namespace)
            .patch(&key.name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
