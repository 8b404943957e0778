//! The resource detector (pkg/detector): watches every served kind, matches each resource
//! template to the PropagationPolicy or ClusterPropagationPolicy that claims it, marks the
//! template with the claim and keeps its ResourceBinding or ClusterResourceBinding in step.
//! Policy changes re-evaluate the templates they select; a deleted template takes its binding
//! with it (Karmada leaves that to the garbage collector through owner references).

mod binding;
pub use binding::controller_ref;
mod discovery;
pub mod policy;

use std::collections::HashSet;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use karmada_api::names;
use karmada_api::policy::v1alpha1::{
    ClusterPropagationPolicy, PreemptionBehavior, PropagationPolicy,
};
use karmada_api::well_known::{annotations, labels};
use karmada_api::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};
use kube::api::{Patch, PatchParams};
use regex::Regex;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use crate::runtime::discovery::ServedResource;
use crate::runtime::events::{EventTarget, Recorder};
use crate::runtime::precedence::Class;
use crate::runtime::{
    Change, Context, Error, Key, ObjectKey, RawObject, Requeue, Result, WorkQueue,
};
use policy::{PolicyIndex, TemplateView, matches_any};

/// Events on templates come from this component.
pub const COMPONENT: &str = "resource-detector";

/// A PropagationPolicy (namespaced key) or ClusterPropagationPolicy (name only).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum PolicyKey {
    Pp(Key),
    Cpp(String),
}

/// Which kind of policy claims a template.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClaimKind {
    Pp,
    Cpp,
}

/// The detector's state.
pub struct Detector {
    ctx: Arc<Context>,
    queue: WorkQueue<ObjectKey>,
    /// PropagationPolicies.
    policies: WorkQueue<PolicyKey>,
    /// ClusterPropagationPolicies, with their own workers
    /// (`--concurrent-cluster-propagation-policy-syncs`).
    cluster_policies: WorkQueue<PolicyKey>,
    waiting: Mutex<HashSet<ObjectKey>>,
    /// Templates queued for a change of their own (a user's): the others were queued for a
    /// policy change or a change only Karmada made, which a Lazy policy does not act on until
    /// the template changes (Karmada's ResourceChangeByKarmada queue flag).
    user_changed: Mutex<HashSet<ObjectKey>>,
    index: RwLock<Arc<PolicyIndex>>,
    skipped: Vec<Regex>,
    recorder: Recorder,
}

/// Starts the detector: handlers are registered now, workers start once the shared informers
/// have synced.
pub fn start(ctx: Arc<Context>) -> Vec<JoinHandle<()>> {
    let skipped = ctx
        .settings
        .skipped_namespaces
        .iter()
        .filter_map(|p| match Regex::new(&format!("^(?:{p})$")) {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(pattern = %p, error = %e, "ignoring invalid skipped-namespace pattern");
                None
            }
        })
        .collect();
    let d = Arc::new(Detector {
        recorder: ctx.events.recorder(COMPONENT),
        queue: ctx.queue("resource-detector", Class::Placement),
        policies: WorkQueue::with_rate_limiter("propagation-policies", ctx.settings.rate_limiter),
        cluster_policies: WorkQueue::with_rate_limiter(
            "cluster-propagation-policies",
            ctx.settings.rate_limiter,
        ),
        waiting: Mutex::new(HashSet::new()),
        user_changed: Mutex::new(HashSet::new()),
        index: RwLock::new(Arc::new(PolicyIndex::default())),
        skipped,
        ctx: ctx.clone(),
    });
    d.register();

    let mut tasks = Vec::new();
    tasks.push(tokio::spawn(discovery::run(d.clone())));
    let dd = d.clone();
    tasks.push(tokio::spawn(async move {
        dd.ctx.wait_synced().await;
        let workers = dd.ctx.settings.concurrency.resource_template;
        let d1 = dd.clone();
        let mut h = dd.queue.run(workers, move |k| {
            let d = d1.clone();
            async move { d.reconcile(k).await }
        });
        let concurrency = dd.ctx.settings.concurrency;
        let d2 = dd.clone();
        h.extend(dd.policies.run(concurrency.propagation_policy, move |k| {
            let d = d2.clone();
            async move { d.reconcile_policy(k).await }
        }));
        let d3 = dd.clone();
        h.extend(
            dd.cluster_policies
                .run(concurrency.cluster_propagation_policy, move |k| {
                    let d = d3.clone();
                    async move { d.reconcile_policy(k).await }
                }),
        );
        // Keep the workers owned by this task so aborting it stops them.
        struct AbortOnDrop(Vec<JoinHandle<()>>);
        impl Drop for AbortOnDrop {
            fn drop(&mut self) {
                for h in &self.0 {
                    h.abort();
                }
            }
        }
        let _guard = AbortOnDrop(h);
        std::future::pending::<()>().await;
    }));
    tasks
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn view(o: &RawObject) -> TemplateView<'_> {
    TemplateView {
        api_version: &o.api_version,
        kind: &o.kind,
        namespace: o.namespace(),
        name: o.name(),
        labels: o.metadata.labels.as_ref(),
    }
}

/// The event target of a template.
pub fn template_target(o: &RawObject) -> EventTarget {
    EventTarget {
        api_version: o.api_version.clone(),
        kind: o.kind.clone(),
        namespace: o.namespace().to_owned(),
        name: o.name().to_owned(),
        uid: o.uid().to_owned(),
    }
}

impl Detector {
    fn register(self: &Arc<Self>) {
        let d = self.clone();
        self.ctx.templates.on_change(move |_r: &ServedResource, c| {
            let o = c.object();
            if !d.watched_namespace(o.namespace(), &o.kind, o.name()) {
                return;
            }
            let by_karmada = match c {
                Change::Update(old, new) if old.digest == new.digest => return,
                // Only a template a Lazy policy claims needs to know who changed it.
                Change::Update(old, new) => {
                    d.claimed_by_lazy_policy(new) && changed_by_karmada(old, new)
                }
                _ => false,
            };
            let key = o.object_key();
            if !by_karmada {
                lock(&d.user_changed).insert(key.clone());
            }
            d.queue.add(key);
        });
        let d = self.clone();
        self.ctx.pps.on_change(move |c| {
            d.rebuild_index();
            if let Change::Update(old, new) = c {
                d.deprioritized(&old.spec, &new.spec, |p| {
                    p.metadata.namespace == new.metadata.namespace
                });
            }
            if let Change::Update(old, new) = c
                && old.metadata.generation == new.metadata.generation
                && old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
            {
                return;
            }
            if matches!(c, Change::Delete(_)) {
                return;
            }
            d.policies.add(PolicyKey::Pp(Key::of(&c.object().metadata)));
        });
        let d = self.clone();
        self.ctx.cpps.on_change(move |c| {
            d.rebuild_index();
            if let Change::Update(old, new) = c {
                d.deprioritized_cluster(&old.spec, &new.spec);
            }
            if let Change::Update(old, new) = c
                && old.metadata.generation == new.metadata.generation
                && old.metadata.deletion_timestamp == new.metadata.deletion_timestamp
            {
                return;
            }
            if matches!(c, Change::Delete(_)) {
                return;
            }
            d.cluster_policies.add(PolicyKey::Cpp(
                c.object().metadata.name.clone().unwrap_or_default(),
            ));
        });
    }

    /// HandleDeprioritizedPropagationPolicy: when a policy's priority drops, the preempting
    /// policies now above it (between its new and old priorities, in `same_scope`) try again,
    /// highest first.
    fn deprioritized(
        &self,
        old: &karmada_api::policy::v1alpha1::PropagationSpec,
        new: &karmada_api::policy::v1alpha1::PropagationSpec,
        same_scope: impl Fn(&PropagationPolicy) -> bool,
    ) {
        let (Some(was), Some(now)) = (old.priority, new.priority) else {
            return;
        };
        if !self.ctx.settings.policy_preemption || now >= was {
            return;
        }
        let mut candidates: Vec<Arc<PropagationPolicy>> = self
            .ctx
            .pps
            .list()
            .into_iter()
            .filter(|p| same_scope(p) && preempts_between(&p.spec, now, was))
            .collect();
        candidates.sort_by_key(|p| std::cmp::Reverse(p.spec.explicit_priority()));
        for p in candidates {
            self.policies.add(PolicyKey::Pp(Key::of(&p.metadata)));
        }
    }

    /// HandleDeprioritizedClusterPropagationPolicy.
    fn deprioritized_cluster(
        &self,
        old: &karmada_api::policy::v1alpha1::PropagationSpec,
        new: &karmada_api::policy::v1alpha1::PropagationSpec,
    ) {
        let (Some(was), Some(now)) = (old.priority, new.priority) else {
            return;
        };
        if !self.ctx.settings.policy_preemption || now >= was {
            return;
        }
        let mut candidates: Vec<Arc<ClusterPropagationPolicy>> = self
            .ctx
            .cpps
            .list()
            .into_iter()
            .filter(|p| preempts_between(&p.spec, now, was))
            .collect();
        candidates.sort_by_key(|p| std::cmp::Reverse(p.spec.explicit_priority()));
        for p in candidates {
            self.cluster_policies
                .add(PolicyKey::Cpp(p.metadata.name.clone().unwrap_or_default()));
        }
    }

    fn rebuild_index(&self) {
        let idx = PolicyIndex::build(self.ctx.pps.list(), self.ctx.cpps.list());
        *self.index.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(idx);
    }

    fn index(&self) -> Arc<PolicyIndex> {
        self.index.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Karmada's EventFilter: reserved and skipped namespaces are never propagated, nor the
    /// apiserver's own extension-apiserver-authentication ConfigMap.
    fn watched_namespace(&self, ns: &str, kind: &str, name: &str) -> bool {
        if names::is_reserved_namespace(ns) {
            return false;
        }
        if !ns.is_empty() && self.skipped.iter().any(|r| r.is_match(ns)) {
            return false;
        }
        !(ns == "kube-system"
            && kind == "ConfigMap"
            && name == "extension-apiserver-authentication")
    }

    /// The template from the cache, falling back to the API server.
    async fn fetch(&self, key: &ObjectKey) -> Result<Option<Arc<RawObject>>> {
        if let Some(o) = self.ctx.template(key) {
            return Ok(Some(o));
        }
        let Some(r) = self.ctx.served_resource(&key.api_version, &key.kind) else {
            return Ok(None);
        };
        let api: kube::Api<RawObject> = if r.namespaced {
            kube::Api::namespaced_with(self.ctx.client.clone(), &key.namespace, &r.api_resource())
        } else {
            kube::Api::all_with(self.ctx.client.clone(), &r.api_resource())
        };
        Ok(api.get_opt(&key.name).await?.map(Arc::new))
    }

    /// Whether the policy claiming a template activates lazily (isClaimedByLazyPolicy).
    fn claimed_by_lazy_policy(&self, o: &RawObject) -> bool {
        let pp = (
            o.annotation(annotations::PROPAGATION_POLICY_NAMESPACE),
            o.annotation(annotations::PROPAGATION_POLICY_NAME),
            o.label(labels::PROPAGATION_POLICY_PERMANENT_ID),
        );
        if let (Some(ns), Some(name), Some(id)) = pp
            && !ns.is_empty()
            && !name.is_empty()
            && !id.is_empty()
        {
            return self
                .ctx
                .pps
                .get(&Key::new(ns, name))
                .is_some_and(|p| p.spec.is_lazy());
        }
        match (
            o.annotation(annotations::CLUSTER_PROPAGATION_POLICY_NAME),
            o.label(labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID),
        ) {
            (Some(name), Some(id)) if !name.is_empty() && !id.is_empty() => self
                .ctx
                .cpps
                .get(&Key::cluster(name))
                .is_some_and(|p| p.spec.is_lazy()),
            _ => false,
        }
    }

    /// Reconciles one template, knowing whether it was queued for a change of its own.
    async fn reconcile(&self, key: ObjectKey) -> Result<Requeue> {
        let by_user = lock(&self.user_changed).remove(&key);
        let result = self.reconcile_template(key.clone(), !by_user).await;
        // A user's change not yet acted on stays one for the retry.
        if by_user && !matches!(result, Ok(Requeue::No)) {
            lock(&self.user_changed).insert(key);
        }
        result
    }

    /// Reconciles one template (ResourceDetector.Reconcile).
    async fn reconcile_template(&self, key: ObjectKey, by_karmada: bool) -> Result<Requeue> {
        let Some(obj) = self.fetch(&key).await? else {
            lock(&self.waiting).remove(&key);
            self.delete_orphan_binding(&key, None).await?;
            return Ok(Requeue::No);
        };
        if obj.is_deleting() {
            return Ok(Requeue::No);
        }
        // A binding left by an earlier object of the same name goes first (karmada#2090).
        if self.delete_orphan_binding(&key, Some(obj.uid())).await? {
            return Ok(Requeue::After(std::time::Duration::from_millis(50)));
        }
        if obj
            .label(labels::RESOURCE_TEMPLATE_CLAIMED_BY)
            .is_some_and(|v| !v.is_empty())
        {
            lock(&self.waiting).remove(&key);
            return Ok(Requeue::No);
        }
        self.propagate(&key, obj, by_karmada).await
    }

    /// Deletes the binding of a template that is gone (or that belonged to an earlier object
    /// with the same name). Returns whether a binding was deleted.
    async fn delete_orphan_binding(&self, key: &ObjectKey, live_uid: Option<&str>) -> Result<bool> {
        let bkey = Key::new(
            key.namespace.clone(),
            names::binding_name(&key.kind, &key.name),
        );
        let (owner, uid, resource_matches) = if key.namespace.is_empty() {
            match self.ctx.crbs.get(&bkey) {
                Some(b) => owner_info(&b.metadata, &b.spec.resource, key),
                None => return Ok(false),
            }
        } else {
            match self.ctx.rbs.get(&bkey) {
                Some(b) => owner_info(&b.metadata, &b.spec.resource, key),
                None => return Ok(false),
            }
        };
        if !resource_matches {
            return Ok(false);
        }
        let stale = match live_uid {
            None => true,
            Some(live) => !owner.is_empty() && owner != live,
        };
        if !stale {
            return Ok(false);
        }
        let dp = kube::api::DeleteParams {
            preconditions: Some(kube::api::Preconditions {
                uid: Some(uid),
                resource_version: None,
            }),
            ..Default::default()
        };
        let res = if key.namespace.is_empty() {
            kube::Api::<ClusterResourceBinding>::all(self.ctx.client.clone())
                .delete(&bkey.name, &dp)
                .await
                .map(|_| ())
        } else {
            kube::Api::<ResourceBinding>::namespaced(self.ctx.client.clone(), &bkey.namespace)
                .delete(&bkey.name, &dp)
                .await
                .map(|_| ())
        };
        match res {
            Ok(()) => {
                tracing::info!(template = %key, binding = %bkey, "deleted the binding of a removed template");
                Ok(true)
            }
            Err(e) if crate::runtime::is_not_found(&e) || crate::runtime::is_conflict(&e) => {
                Ok(false)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// propagateResource: follow an existing claim, or find the policy that claims the template.
    async fn propagate(
        &self,
        key: &ObjectKey,
        obj: Arc<RawObject>,
        by_karmada: bool,
    ) -> Result<Requeue> {
        let pp_ns = obj
            .annotation(annotations::PROPAGATION_POLICY_NAMESPACE)
            .unwrap_or("");
        let pp_name = obj
            .annotation(annotations::PROPAGATION_POLICY_NAME)
            .unwrap_or("");
        let pp_id = obj
            .label(labels::PROPAGATION_POLICY_PERMANENT_ID)
            .unwrap_or("");
        if !pp_ns.is_empty() && !pp_name.is_empty() && !pp_id.is_empty() {
            let (ns, name, id) = (pp_ns.to_owned(), pp_name.to_owned(), pp_id.to_owned());
            return self
                .apply_claimed_pp(obj, &ns, &name, &id, by_karmada)
                .await;
        }
        let cpp_name = obj
            .annotation(annotations::CLUSTER_PROPAGATION_POLICY_NAME)
            .unwrap_or("");
        let cpp_id = obj
            .label(labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID)
            .unwrap_or("");
        if !cpp_name.is_empty() && !cpp_id.is_empty() {
            let (name, id) = (cpp_name.to_owned(), cpp_id.to_owned());
            return self.apply_claimed_cpp(obj, &name, &id, by_karmada).await;
        }

        // Karmada times the lookup up to the policy that claims the template.
        let started = Instant::now();
        let matched = || {
            crate::metrics::registry().observe_duration(
                &crate::metrics::RESOURCE_MATCH_POLICY_DURATION,
                &[],
                started.elapsed(),
            )
        };
        let idx = self.index();
        if let Some(pp) = idx.match_pp(&view(&obj)) {
            matched();
            self.check_dependent_overrides(
                pp.metadata.namespace.as_deref().unwrap_or(""),
                &pp.spec.dependent_overrides,
                false,
            )?;
            lock(&self.waiting).remove(key);
            return self.apply_pp(obj, &pp, by_karmada).await;
        }
        if let Some(cpp) = idx.match_cpp(&view(&obj)) {
            matched();
            self.check_dependent_overrides("", &cpp.spec.dependent_overrides, true)?;
            lock(&self.waiting).remove(key);
            return self.apply_cpp(obj, &cpp, by_karmada).await;
        }
        let first = lock(&self.waiting).insert(key.clone());
        if first {
            // Retry once in case the template and its policy arrive together (karmada#1195).
            return Err(Error::msg("no matched propagation policy"));
        }
        Ok(Requeue::No)
    }

    fn check_dependent_overrides(&self, ns: &str, deps: &[String], cluster: bool) -> Result<()> {
        for d in deps {
            let present = if cluster {
                self.ctx.cops.get(&Key::cluster(d.clone())).is_some()
            } else {
                self.ctx.ops.get(&Key::new(ns, d.clone())).is_some()
            };
            if !present {
                return Err(Error::msg("waiting for dependent overrides"));
            }
        }
        Ok(())
    }

    async fn apply_claimed_pp(
        &self,
        obj: Arc<RawObject>,
        ns: &str,
        name: &str,
        id: &str,
        by_karmada: bool,
    ) -> Result<Requeue> {
        let Some(pp) = self.ctx.pps.get(&Key::new(ns, name)) else {
            // The policy is gone but its claim survived (a missed cleanup): release it.
            self.release(&obj, ClaimKind::Pp, id).await?;
            return Ok(Requeue::No);
        };
        if pp.metadata.deletion_timestamp.is_some() {
            return Err(Error::msg(format!("policy({ns}/{name}) is being deleted")));
        }
        if !matches_any(&view(&obj), &pp.spec.resource_selectors) {
            return Ok(Requeue::No);
        }
        self.check_dependent_overrides(ns, &pp.spec.dependent_overrides, false)?;
        self.apply_pp(obj, &pp, by_karmada).await
    }

    async fn apply_claimed_cpp(
        &self,
        obj: Arc<RawObject>,
        name: &str,
        id: &str,
        by_karmada: bool,
    ) -> Result<Requeue> {
        let Some(cpp) = self.ctx.cpps.get(&Key::cluster(name)) else {
            self.release(&obj, ClaimKind::Cpp, id).await?;
            return Ok(Requeue::No);
        };
        if cpp.metadata.deletion_timestamp.is_some() {
            return Err(Error::msg(format!(
                "cluster policy({name}) is being deleted"
            )));
        }
        if !matches_any(&view(&obj), &cpp.spec.resource_selectors) {
            return Ok(Requeue::No);
        }
        self.check_dependent_overrides("", &cpp.spec.dependent_overrides, true)?;
        self.apply_cpp(obj, &cpp, by_karmada).await
    }

    async fn apply_pp(
        &self,
        obj: Arc<RawObject>,
        pp: &PropagationPolicy,
        by_karmada: bool,
    ) -> Result<Requeue> {
        let ns = pp.metadata.namespace.clone().unwrap_or_default();
        let name = pp.metadata.name.clone().unwrap_or_default();
        let started = Instant::now();
        let res = self.apply_pp_inner(&obj, pp, by_karmada).await;
        self.record_apply(
            &obj,
            res.as_ref().map(|c| *c),
            &format!("policy({ns}/{name})"),
            started,
        );
        res.map(|_| Requeue::No)
    }

    async fn apply_cpp(
        &self,
        obj: Arc<RawObject>,
        cpp: &ClusterPropagationPolicy,
        by_karmada: bool,
    ) -> Result<Requeue> {
        let name = cpp.metadata.name.clone().unwrap_or_default();
        let started = Instant::now();
        let res = self.apply_cpp_inner(&obj, cpp, by_karmada).await;
        self.record_apply(
            &obj,
            res.as_ref().map(|c| *c),
            &format!("cluster policy({name})"),
            started,
        );
        res.map(|_| Requeue::No)
    }

    /// Records the outcome of ApplyPolicy: its Event, and `policy_apply_attempts_total` and
    /// `resource_apply_policy_duration_seconds` (`metrics.ObserveApplyPolicyAttemptAndLatency`).
    fn record_apply(
        &self,
        obj: &RawObject,
        res: std::result::Result<bool, &Error>,
        what: &str,
        started: Instant,
    ) {
        let result = crate::metrics::result(&res);
        let r = crate::metrics::registry();
        r.inc(&crate::metrics::POLICY_APPLY_ATTEMPTS, &[result]);
        r.observe_duration(
            &crate::metrics::RESOURCE_APPLY_POLICY_DURATION,
            &[result],
            started.elapsed(),
        );
        let t = template_target(obj);
        match res {
            Ok(true) => {
                self.recorder
                    .normal(&t, "ApplyPolicySucceed", format!("Apply {what} succeed"))
            }
            Ok(false) => {}
            Err(e) => {
                self.recorder
                    .warning(&t, "ApplyPolicyFailed", format!("Apply {what} failed: {e}"))
            }
        }
    }

    /// ApplyPolicy: claims the template and creates or updates its ResourceBinding. Returns
    /// whether the binding changed. A Lazy policy leaves the binding as it is when the
    /// template was queued for anything but a change of its own.
    async fn apply_pp_inner(
        &self,
        obj: &Arc<RawObject>,
        pp: &PropagationPolicy,
        by_karmada: bool,
    ) -> Result<bool> {
        let id = crate::runtime::label(&pp.metadata, labels::PROPAGATION_POLICY_PERMANENT_ID)
            .unwrap_or("")
            .to_owned();
        let claimed = obj.label(labels::PROPAGATION_POLICY_PERMANENT_ID) == Some(id.as_str())
            && obj
                .label(labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID)
                .is_none();
        let obj = if claimed {
            obj.clone()
        } else {
            Arc::new(self.claim_for_pp(obj, pp).await?)
        };
        if by_karmada && pp.spec.is_lazy() {
            tracing::debug!(template = %obj.name(), "lazy policy: the binding waits for a template change");
            return Ok(false);
        }
        let claim = binding::Claim::pp(&id, &pp.metadata);
        let desired = binding::build(&self.ctx, &self.recorder, &obj, &pp.spec, &claim).await?;
        binding::create_or_update::<ResourceBinding>(
            &self.ctx,
            &obj,
            desired,
            pp.spec.suspension.as_ref(),
        )
        .await
    }

    async fn apply_cpp_inner(
        &self,
        obj: &Arc<RawObject>,
        cpp: &ClusterPropagationPolicy,
        by_karmada: bool,
    ) -> Result<bool> {
        let id = crate::runtime::label(
            &cpp.metadata,
            labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
        )
        .unwrap_or("")
        .to_owned();
        let claimed =
            obj.label(labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID) == Some(id.as_str());
        let obj = if claimed {
            obj.clone()
        } else {
            Arc::new(self.claim_for_cpp(obj, cpp).await?)
        };
        if by_karmada && cpp.spec.is_lazy() {
            tracing::debug!(template = %obj.name(), "lazy cluster policy: the binding waits for a template change");
            return Ok(false);
        }
        let claim = binding::Claim::cpp(&id, &cpp.metadata);
        let desired = binding::build(&self.ctx, &self.recorder, &obj, &cpp.spec, &claim).await?;
        if obj.namespace().is_empty() {
            binding::create_or_update::<ClusterResourceBinding>(
                &self.ctx,
                &obj,
                desired,
                cpp.spec.suspension.as_ref(),
            )
            .await
        } else {
            binding::create_or_update::<ResourceBinding>(
                &self.ctx,
                &obj,
                desired,
                cpp.spec.suspension.as_ref(),
            )
            .await
        }
    }

    /// ClaimPolicyForObject: the PropagationPolicy's labels and annotations on the template,
    /// displacing any cluster policy's.
    async fn claim_for_pp(&self, obj: &RawObject, pp: &PropagationPolicy) -> Result<RawObject> {
        let id = crate::runtime::label(&pp.metadata, labels::PROPAGATION_POLICY_PERMANENT_ID)
            .unwrap_or("");
        let patch = json!({"metadata": {
            "labels": {
                labels::PROPAGATION_POLICY_PERMANENT_ID: id,
                labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID: Value::Null,
            },
            "annotations": {
                annotations::PROPAGATION_POLICY_NAMESPACE: pp.metadata.namespace,
                annotations::PROPAGATION_POLICY_NAME: pp.metadata.name,
                annotations::CLUSTER_PROPAGATION_POLICY_NAME: Value::Null,
            },
        }});
        self.patch_template(obj, &patch).await
    }

    /// ClaimClusterPolicyForObject.
    async fn claim_for_cpp(
        &self,
        obj: &RawObject,
        cpp: &ClusterPropagationPolicy,
    ) -> Result<RawObject> {
        let id = crate::runtime::label(
            &cpp.metadata,
            labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
        )
        .unwrap_or("");
        let patch = json!({"metadata": {
            "labels": {labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID: id},
            "annotations": {annotations::CLUSTER_PROPAGATION_POLICY_NAME: cpp.metadata.name},
        }});
        self.patch_template(obj, &patch).await
    }

    /// The templates a policy names (preemption takes over only named ones), existing and not
    /// being deleted (fetchResourceTemplate).
    fn named_templates(
        &self,
        selectors: &[karmada_api::policy::v1alpha1::ResourceSelector],
        policy_ns: &str,
    ) -> Vec<Arc<RawObject>> {
        selectors
            .iter()
            .filter(|rs| !rs.name.is_empty())
            .filter_map(|rs| {
                let ns = if policy_ns.is_empty() {
                    rs.namespace.clone()
                } else {
                    policy_ns.to_owned()
                };
                let key =
                    ObjectKey::new(rs.api_version.clone(), rs.kind.clone(), ns, rs.name.clone());
                self.ctx.template(&key)
            })
            .filter(|t| !t.is_deleting())
            .collect()
    }

    /// handlePropagationPolicyPreemption: the policy takes the templates it names over from
    /// PropagationPolicies of lower priority, and from any ClusterPropagationPolicy.
    async fn preempt_for_pp(&self, pp: &PropagationPolicy) -> Result<()> {
        let ns = pp.metadata.namespace.clone().unwrap_or_default();
        let name = pp.metadata.name.clone().unwrap_or_default();
        let mut errors = Vec::new();
        for t in self.named_templates(&pp.spec.resource_selectors, &ns) {
            let claimed_ns = t
                .annotation(annotations::PROPAGATION_POLICY_NAMESPACE)
                .unwrap_or("");
            let claimed_name = t
                .annotation(annotations::PROPAGATION_POLICY_NAME)
                .unwrap_or("");
            let claimed_cpp = t
                .annotation(annotations::CLUSTER_PROPAGATION_POLICY_NAME)
                .unwrap_or("");
            let preempted = if !claimed_ns.is_empty() && !claimed_name.is_empty() {
                if claimed_ns == ns && claimed_name == name {
                    continue;
                }
                let Some(claimed) = self.ctx.pps.get(&Key::new(claimed_ns, claimed_name)) else {
                    errors.push(format!(
                        "claimed propagation policy({claimed_ns}/{claimed_name}) not found"
                    ));
                    continue;
                };
                if pp.spec.explicit_priority() <= claimed.spec.explicit_priority() {
                    continue;
                }
                format!("propagation policy({claimed_ns}/{claimed_name})")
            } else if !claimed_cpp.is_empty() {
                format!("cluster propagation policy({claimed_cpp})")
            } else {
                continue;
            };
            let claimed = self.claim_for_pp(&t, pp).await;
            let who = format!("Propagation policy({ns}/{name})");
            if let Err(e) = self.preempted(&t, &who, &preempted, claimed) {
                errors.push(e.to_string());
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(Error::msg(errors.join("; "))),
        }
    }

    /// Reports a preemption as Karmada does (PreemptPolicySucceed / PreemptPolicyFailed on the
    /// template) and queues the template a new claim moved.
    fn preempted(
        &self,
        t: &RawObject,
        who: &str,
        whom: &str,
        claim: Result<RawObject>,
    ) -> Result<()> {
        let target = template_target(t);
        match claim {
            Ok(_) => {
                self.recorder.normal(
                    &target,
                    "PreemptPolicySucceed",
                    format!("{who} preempted {whom} successfully"),
                );
                self.queue.add(t.object_key());
                Ok(())
            }
            Err(e) => {
                self.recorder.warning(
                    &target,
                    "PreemptPolicyFailed",
                    format!("{who} failed to preempt {whom}: {e}"),
                );
                Err(e)
            }
        }
    }

    /// handleClusterPropagationPolicyPreemption: from ClusterPropagationPolicies of lower
    /// priority.
    async fn preempt_for_cpp(&self, cpp: &ClusterPropagationPolicy) -> Result<()> {
        let name = cpp.metadata.name.clone().unwrap_or_default();
        let mut errors = Vec::new();
        for t in self.named_templates(&cpp.spec.resource_selectors, "") {
            let claimed = t
                .annotation(annotations::CLUSTER_PROPAGATION_POLICY_NAME)
                .unwrap_or("");
            if claimed.is_empty() || claimed == name {
                continue;
            }
            let Some(other) = self.ctx.cpps.get(&Key::cluster(claimed)) else {
                errors.push(format!(
                    "claimed cluster propagation policy({claimed}) not found"
                ));
                continue;
            };
            if cpp.spec.explicit_priority() <= other.spec.explicit_priority() {
                continue;
            }
            let result = self.claim_for_cpp(&t, cpp).await;
            let who = format!("Cluster propagation policy({name})");
            let whom = format!("cluster propagation policy({claimed})");
            if let Err(e) = self.preempted(&t, &who, &whom, result) {
                errors.push(e.to_string());
            }
        }
        match errors.is_empty() {
            true => Ok(()),
            false => Err(Error::msg(errors.join("; "))),
        }
    }

    /// Patches a template's metadata and returns it as the server now has it.
    async fn patch_template(&self, obj: &RawObject, patch: &Value) -> Result<RawObject> {
        let r = self
            .ctx
            .served_resource(&obj.api_version, &obj.kind)
            .ok_or_else(|| {
                Error::msg(format!(
                    "resource {} {} is not served",
                    obj.api_version, obj.kind
                ))
            })?;
        let api: kube::Api<RawObject> = if r.namespaced {
            kube::Api::namespaced_with(self.ctx.client.clone(), obj.namespace(), &r.api_resource())
        } else {
            kube::Api::all_with(self.ctx.client.clone(), &r.api_resource())
        };
        Ok(api
            .patch(obj.name(), &PatchParams::default(), &Patch::Merge(patch))
            .await?)
    }

    /// Removes a policy's claim from a template and its binding (handleResourceTemplateAndBindingCleanup):
    /// the binding first, so that a failure leaves the template claimed and the cleanup is retried.
    async fn release(&self, obj: &RawObject, kind: ClaimKind, id: &str) -> Result<()> {
        let (label_key, ann_null) = match kind {
            ClaimKind::Pp => (
                labels::PROPAGATION_POLICY_PERMANENT_ID,
                json!({
                    annotations::PROPAGATION_POLICY_NAMESPACE: Value::Null,
                    annotations::PROPAGATION_POLICY_NAME: Value::Null,
                }),
            ),
            ClaimKind::Cpp => (
                labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
                json!({annotations::CLUSTER_PROPAGATION_POLICY_NAME: Value::Null}),
            ),
        };
        let patch =
            json!({"metadata": {"labels": {label_key: Value::Null}, "annotations": ann_null}});
        let bname = names::binding_name(&obj.kind, obj.name());
        let pp = PatchParams::default();
        if obj.namespace().is_empty() {
            let api = kube::Api::<ClusterResourceBinding>::all(self.ctx.client.clone());
            if let Some(b) = self.ctx.crbs.get(&Key::cluster(bname.clone()))
                && crate::runtime::label(&b.metadata, label_key) == Some(id)
            {
                ignore_not_found(api.patch(&bname, &pp, &Patch::Merge(&patch)).await)?;
            }
        } else {
            let api =
                kube::Api::<ResourceBinding>::namespaced(self.ctx.client.clone(), obj.namespace());
            if let Some(b) = self.ctx.rbs.get(&Key::new(obj.namespace(), bname.clone()))
                && crate::runtime::label(&b.metadata, label_key) == Some(id)
            {
                ignore_not_found(api.patch(&bname, &pp, &Patch::Merge(&patch)).await)?;
            }
        }
        if obj.label(label_key) == Some(id) {
            match self.patch_template(obj, &patch).await {
                Ok(_) => {}
                Err(Error::Kube(e)) if crate::runtime::is_not_found(&e) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Reconciles a policy (ReconcilePropagationPolicy / ReconcileClusterPropagationPolicy).
    async fn reconcile_policy(&self, key: PolicyKey) -> Result<Requeue> {
        match key {
            PolicyKey::Pp(k) => {
                let Some(pp) = self.ctx.pps.get(&k) else {
                    return Ok(Requeue::No);
                };
                let id =
                    crate::runtime::label(&pp.metadata, labels::PROPAGATION_POLICY_PERMANENT_ID)
                        .unwrap_or("")
                        .to_owned();
                if pp.metadata.deletion_timestamp.is_some() {
                    self.handle_policy_deletion(
                        ClaimKind::Pp,
                        &id,
                        &pp.spec.resource_selectors,
                        &k.namespace,
                    )
                    .await?;
                    self.remove_policy_finalizer::<PropagationPolicy>(&k, &pp.metadata)
                        .await?;
                    return Ok(Requeue::No);
                }
                if self.ctx.settings.policy_preemption
                    && pp.spec.preemption() == PreemptionBehavior::Always
                {
                    self.preempt_for_pp(&pp).await?;
                }
                self.handle_policy_change(
                    ClaimKind::Pp,
                    &id,
                    &pp.spec.resource_selectors,
                    &k.namespace,
                    &pp.spec.dependent_overrides,
                )
                .await
            }
            PolicyKey::Cpp(name) => {
                let k = Key::cluster(name);
                let Some(cpp) = self.ctx.cpps.get(&k) else {
                    return Ok(Requeue::No);
                };
                let id = crate::runtime::label(
                    &cpp.metadata,
                    labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
                )
                .unwrap_or("")
                .to_owned();
                if cpp.metadata.deletion_timestamp.is_some() {
                    self.handle_policy_deletion(
                        ClaimKind::Cpp,
                        &id,
                        &cpp.spec.resource_selectors,
                        "",
                    )
                    .await?;
                    self.remove_policy_finalizer::<ClusterPropagationPolicy>(&k, &cpp.metadata)
                        .await?;
                    return Ok(Requeue::No);
                }
                if self.ctx.settings.policy_preemption
                    && cpp.spec.preemption() == PreemptionBehavior::Always
                {
                    self.preempt_for_cpp(&cpp).await?;
                }
                self.handle_policy_change(
                    ClaimKind::Cpp,
                    &id,
                    &cpp.spec.resource_selectors,
                    "",
                    &cpp.spec.dependent_overrides,
                )
                .await
            }
        }
    }

    async fn remove_policy_finalizer<P>(
        &self,
        key: &Key,
        meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    ) -> Result<()>
    where
        P: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
        P::Scope: 'static,
    {
        let fin = if key.namespace.is_empty() {
            karmada_api::well_known::finalizers::CLUSTER_PROPAGATION_POLICY_CONTROLLER
        } else {
            karmada_api::well_known::finalizers::PROPAGATION_POLICY_CONTROLLER
        };
        let Some(fins) = &meta.finalizers else {
            return Ok(());
        };
        if !fins.iter().any(|f| f == fin) {
            return Ok(());
        }
        let rest: Vec<&String> = fins.iter().filter(|f| *f != fin).collect();
        let patch =
            json!({"metadata": {"finalizers": rest, "resourceVersion": meta.resource_version}});
        let url = P::url_path(
            &(),
            (!key.namespace.is_empty()).then_some(key.namespace.as_str()),
        );
        let req = http::Request::patch(format!("{url}/{}", key.name))
            .header(http::header::CONTENT_TYPE, "application/merge-patch+json")
            .body(serde_json::to_vec(&patch)?)
            .map_err(|e| Error::msg(e.to_string()))?;
        match self.ctx.client.request::<Value>(req).await {
            Ok(_) => Ok(()),
            Err(e) if crate::runtime::is_not_found(&e) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// handlePolicyDeletion: releases every template the policy claimed. Their bindings stay
    /// until the templates go, so what is already propagated is left in place.
    async fn handle_policy_deletion(
        &self,
        kind: ClaimKind,
        id: &str,
        selectors: &[karmada_api::policy::v1alpha1::ResourceSelector],
        policy_ns: &str,
    ) -> Result<()> {
        let label_key = match kind {
            ClaimKind::Pp => labels::PROPAGATION_POLICY_PERMANENT_ID,
            ClaimKind::Cpp => labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
        };
        let mut errors = Vec::new();
        let mut seen = HashSet::new();
        for rs in selectors {
            if !seen.insert((rs.api_version.clone(), rs.kind.clone())) {
                continue;
            }
            let Some(inf) = self.ctx.templates.get(&rs.api_version, &rs.kind) else {
                continue;
            };
            for t in inf.list() {
                if t.label(label_key) != Some(id) {
                    continue;
                }
                if kind == ClaimKind::Pp && t.namespace() != policy_ns {
                    continue;
                }
                match self.release(&t, kind, id).await {
                    // Released, the template may now match another policy.
                    Ok(()) => self.queue.add(t.object_key()),
                    Err(e) => errors.push(e.to_string()),
                }
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::msg(errors.join("; ")))
        }
    }

    /// HandlePropagationPolicyCreationOrUpdate: releases templates the policy no longer selects,
    /// re-evaluates the ones it claims, and picks up waiting templates it now matches.
    async fn handle_policy_change(
        &self,
        kind: ClaimKind,
        id: &str,
        selectors: &[karmada_api::policy::v1alpha1::ResourceSelector],
        policy_ns: &str,
        dependent_overrides: &[String],
    ) -> Result<Requeue> {
        let label_key = match kind {
            ClaimKind::Pp => labels::PROPAGATION_POLICY_PERMANENT_ID,
            ClaimKind::Cpp => labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
        };
        let mut derived: Vec<karmada_api::work::v1alpha2::ObjectReference> = self
            .ctx
            .rbs
            .by_index(crate::runtime::context::BY_ID, id)
            .iter()
            .filter(|b| crate::runtime::label(&b.metadata, label_key) == Some(id))
            .map(|b| b.spec.resource.clone())
            .collect();
        if kind == ClaimKind::Cpp {
            derived.extend(
                self.ctx
                    .crbs
                    .by_index(crate::runtime::context::BY_ID, id)
                    .iter()
                    .filter(|b| crate::runtime::label(&b.metadata, label_key) == Some(id))
                    .map(|b| b.spec.resource.clone()),
            );
        }
        for r in derived {
            let key = ObjectKey::new(r.api_version, r.kind, r.namespace, r.name);
            let Some(t) = self.ctx.template(&key) else {
                continue;
            };
            if !matches_any(&view(&t), selectors) {
                self.release(&t, kind, id).await?;
            }
            self.queue.add(key);
        }
        let matched: Vec<ObjectKey> = {
            let waiting = lock(&self.waiting);
            waiting
                .iter()
                .filter(|k| kind == ClaimKind::Cpp || k.namespace == policy_ns)
                .filter(|k| {
                    self.ctx
                        .template(k)
                        .is_some_and(|t| matches_any(&view(&t), selectors))
                })
                .cloned()
                .collect()
        };
        if !matched.is_empty() {
            self.check_dependent_overrides(policy_ns, dependent_overrides, kind == ClaimKind::Cpp)?;
        }
        for k in matched {
            lock(&self.waiting).remove(&k);
            self.queue.add(k);
        }
        Ok(Requeue::No)
    }
}

/// A preempting policy with an explicit priority strictly between `low` and `high`.
fn preempts_between(
    spec: &karmada_api::policy::v1alpha1::PropagationSpec,
    low: i32,
    high: i32,
) -> bool {
    spec.priority.is_some()
        && spec.preemption() == PreemptionBehavior::Always
        && spec.explicit_priority() > low
        && spec.explicit_priority() < high
}

/// eventfilter.ResourceChangeByKarmada: the objects differ only in what Karmada writes —
/// labels and annotations under `.karmada.io` (but the user's skip-auto-propagation label),
/// generation, status, managedFields and resourceVersion.
fn changed_by_karmada(old: &RawObject, new: &RawObject) -> bool {
    fn strip(o: &RawObject) -> Option<Value> {
        let mut v = o.to_value().ok()?;
        let obj = v.as_object_mut()?;
        obj.remove("status");
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in ["managedFields", "resourceVersion", "generation"] {
                meta.remove(f);
            }
            for field in ["labels", "annotations"] {
                if let Some(m) = meta.get_mut(field).and_then(Value::as_object_mut) {
                    m.retain(|k, _| {
                        !k.contains(".karmada.io") || k == labels::NAMESPACE_SKIP_AUTO_PROPAGATION
                    });
                }
            }
        }
        Some(v)
    }
    match (strip(old), strip(new)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn ignore_not_found<T>(r: std::result::Result<T, kube::Error>) -> Result<()> {
    match r {
        Ok(_) => Ok(()),
        Err(e) if crate::runtime::is_not_found(&e) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The binding's controlling owner uid, its own uid, and whether it is the binding of `key`.
fn owner_info(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    resource: &karmada_api::work::v1alpha2::ObjectReference,
    key: &ObjectKey,
) -> (String, String, bool) {
    let owner = meta
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.clone())
        .unwrap_or_default();
    let matches = resource.kind == key.kind
        && resource.name == key.name
        && resource.namespace == key.namespace;
    (owner, meta.uid.clone().unwrap_or_default(), matches)
}
