//! The dispatchers (k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go,
//! mutating/dispatcher.go, validating/dispatcher.go): which webhooks a request reaches, the
//! calls, and what their answers do to the request.
//!
//! Mutating webhooks are called one after another in configuration-name order, each seeing
//! the object as the previous ones left it; a JSONPatch answer is applied at once. A webhook
//! with `reinvocationPolicy: IfNeeded` is called once more when a later webhook changed the
//! object after it. Validating webhooks are called in parallel; the first denial in order
//! decides. A webhook that cannot be called, times out, or answers something unbelievable
//! fails the request (`failurePolicy: Fail`, a 500) or is skipped (`Ignore`). A dry-run request
//! reaches only webhooks without side effects (`None`, `NoneOnDryRun`).
//!
//! Configurations of this group (webhook configurations, policies and bindings) are never
//! sent to webhooks, so that a broken webhook cannot lock its own configuration.

use std::sync::Arc;
use std::time::Instant;

use genericapiserver::admission_plugin::{
    AdmissionOperation, Attributes, MutationPlugin, Record, ValidationPlugin,
};
use genericapiserver::conversion;
use genericapiserver::error::ApiError;
use genericapiserver::resources::ResourceDef;
use genericapiserver::state::ApiState;
use serde_json::{Value, json};

use crate::client::ClientManager;
use crate::config::{HookType, Manager, Webhook};
use crate::equivalent;
use crate::metrics;
use crate::review::{self, ReviewRequest, Target};
use crate::rules;
use crate::selectors;
use admission_policy::{Authorizer, ConditionsOutcome as Outcome};

const GROUP: &str = "admissionregistration.k8s.io";

/// Whether a resource is exempt from webhooks (kube's IsExemptAdmissionConfigurationResource).
pub(crate) fn exempt(def: &ResourceDef) -> bool {
    def.group == GROUP
}

/// Whether any webhook could take writes of `def` with `op` (the version and subresource are
/// looked at later): the cheap test that keeps other writes off the plugin. Equivalent
/// resources share the plural but not always the group (core and `events.k8s.io` Events), so
/// a hook with `matchPolicy: Equivalent` is kept whatever groups its rules name.
fn could_match(hooks: &[Arc<Webhook>], def: &ResourceDef, op: AdmissionOperation) -> bool {
    let op = op.as_str();
    hooks.iter().any(|h| {
        h.rules.iter().any(|r| {
            r.operations.iter().any(|o| o == "*" || o == op)
                && (h.equivalent || r.api_groups.iter().any(|g| g == "*" || *g == def.group))
                && r.resources.iter().any(|res| {
                    let name = res.split('/').next().unwrap_or("");
                    name == "*" || name == def.plural
                })
        })
    })
}

/// One webhook call about to be made: the resource version it is told about.
struct Invocation {
    target: Arc<ResourceDef>,
}

/// What both dispatchers share.
struct Dispatcher {
    manager: Manager,
    /// What the conditions' `authorizer` checks ask.
    authorizer: Arc<dyn Authorizer>,
    clients: Arc<ClientManager>,
    hook_type: HookType,
}

/// The request's facts a dispatcher reads for every webhook.
struct Call<'a> {
    state: &'a ApiState,
    attrs: &'a Attributes<'a>,
}

impl Dispatcher {
    fn new(
        state: std::sync::Weak<ApiState>,
        clients: Arc<ClientManager>,
        authorizer: Arc<dyn Authorizer>,
        hook_type: HookType,
    ) -> Dispatcher {
        Dispatcher {
            manager: Manager::new(state, hook_type),
            authorizer,
            clients,
            hook_type,
        }
    }

    fn handles(&self, def: &ResourceDef, op: AdmissionOperation) -> bool {
        if exempt(def) || op == AdmissionOperation::Connect {
            return false;
        }
        let snapshot = self.manager.webhooks();
        !snapshot.hooks.is_empty() && could_match(&snapshot.hooks, def, op)
    }

    /// kube's ShouldCallHook: rules (with `matchPolicy: Equivalent`), then the namespace
    /// and object selectors. matchConditions are evaluated by the caller, which has the review.
    async fn invocation(
        &self,
        call: &Call<'_>,
        hook: &Webhook,
        obj: Option<&Value>,
    ) -> Result<Option<Invocation>, ApiError> {
        let a = call.attrs;
        let def = a.def;
        let matches = |d: &ResourceDef| {
            let req = rules::Request {
                operation: a.operation.as_str(),
                group: &d.group,
                version: &d.version,
                resource: &d.plural,
                subresource: a.subresource,
                namespace: a.namespace,
            };
            hook.rules.iter().any(|r| r.matches(&req))
        };
        let snapshot = call.state.catalog.snapshot();
        let target = if matches(def) {
            snapshot.get(&def.group, &def.version, &def.plural).cloned()
        } else if hook.equivalent {
            // The same objects served by another resource, which they convert to.
            equivalent::equivalents(&snapshot, def, a.subresource)
                .into_iter()
                .find(|d| matches(d))
        } else {
            None
        };
        let Some(target) = target else {
            return Ok(None);
        };
        let is_namespace = def.group.is_empty() && def.plural == "namespaces";
        let ns_target = selectors::NamespaceTarget {
            namespace: a.namespace,
            is_namespace: is_namespace && a.subresource.is_empty(),
            operation: a.operation.as_str(),
            object: obj,
            old: a.old_object,
        };
        if !selectors::namespace_matches(call.state, &hook.namespace_selector, &ns_target).await? {
            return Ok(None);
        }
        if !selectors::object_matches(&hook.object_selector, obj, a.old_object) {
            return Ok(None);
        }
        Ok(Some(Invocation { target }))
    }

    /// Calls one webhook: `Ok(None)` when it was skipped (conditions, fail-open), else its
    /// believed response.
    async fn call_hook(
        &self,
        call: &Call<'_>,
        hook: &Webhook,
        index: (usize, usize),
        inv: &Invocation,
        object: &Value,
        record: &mut Record,
    ) -> Result<Option<review::Response>, ApiError> {
        let a = call.attrs;
        let ty = self.hook_type.metric_type();
        let op = a.operation.as_str();
        let old_view = a
            .old_object
            .map(|o| view(a.def, &inv.target, o))
            .unwrap_or(Value::Null);
        let uid = uuid::Uuid::new_v4().to_string();
        let is_namespace = a.def.group.is_empty() && a.def.plural == "namespaces";
        let namespace = if is_namespace { a.name } else { a.namespace };
        let request = ReviewRequest {
            version: hook.review_version,
            uid: &uid,
            target: Target {
                group: &inv.target.group,
                version: &inv.target.version,
                resource: &inv.target.plural,
                kind: &inv.target.kind,
            },
            request: Target {
                group: &a.def.group,
                version: &a.def.version,
                resource: &a.def.plural,
                kind: &a.def.kind,
            },
            subresource: a.subresource,
            name: a.name,
            namespace,
            operation: op,
            user: a.user,
            object,
            old_object: &old_view,
            dry_run: a.dry_run,
            options: a.options,
        };
        let request_json = request.request_json();
        if !hook.conditions.is_empty() {
            let t = Instant::now();
            let outcome =
                hook.conditions
                    .evaluate(object, &old_view, &request_json, Some(&self.authorizer));
            let (excluded, error) = match &outcome {
                Outcome::Match => (false, false),
                Outcome::NoMatch(_) => (true, false),
                Outcome::Error(_) => (false, true),
            };
            metrics::observe_conditions(&hook.name, ty, op, excluded, error, t.elapsed());
            match outcome {
                Outcome::Match => {}
                Outcome::NoMatch(_) => return Ok(None),
                Outcome::Error(e) if hook.ignore_failures => {
                    tracing::warn!(webhook = %hook.name, error = %e, "failed evaluating match conditions, failing open");
                    self.fail_open(hook, index, record);
                    return Ok(None);
                }
                Outcome::Error(e) => {
                    metrics::observe_rejection(&hook.name, ty, op, "apiserver_internal_error", 0);
                    return Err(ApiError::forbidden_message(
                        &a.def.group,
                        &a.def.plural,
                        a.name,
                        format!(
                            "failed evaluating match conditions of webhook \"{}\": {e}",
                            hook.name
                        ),
                    ));
                }
            }
        }
        if a.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
            return Err(ApiError::bad_request(format!(
                "admission webhook \"{}\" does not support dry run",
                hook.name
            )));
        }
        let body = serde_json::to_vec(&request.review(request_json)).map_err(ApiError::internal)?;
        let started = Instant::now();
        let answer = match &hook.client {
            Err(e) => Err(crate::client::CallError(e.clone())),
            Ok(cc) => self.clients.call(call.state, cc, body, hook.timeout).await,
        };
        let (code, result) = match answer {
            Err(e) => (0, Err(e.0)),
            Ok(ans) if !(200..300).contains(&ans.status) => (
                ans.status,
                Err(format!(
                    "failed to call webhook: the server responded with the status code {} but did not return more information",
                    ans.status
                )),
            ),
            Ok(ans) => (
                ans.status,
                review::verify(
                    &ans.body,
                    hook.review_version,
                    &uid,
                    self.hook_type == HookType::Mutating,
                ),
            ),
        };
        let took = started.elapsed();
        match result {
            Err(reason) => {
                metrics::observe_call(&hook.name, ty, op, !hook.ignore_failures, code, took);
                if hook.ignore_failures {
                    tracing::warn!(webhook = %hook.name, error = %reason, "failed calling webhook, failing open");
                    self.fail_open(hook, index, record);
                    return Ok(None);
                }
                tracing::warn!(webhook = %hook.name, error = %reason, "failed calling webhook, failing closed");
                metrics::observe_rejection(&hook.name, ty, op, "calling_webhook_error", 0);
                Err(ApiError::internal(format!(
                    "failed calling webhook \"{}\": {reason}",
                    hook.name
                )))
            }
            Ok(resp) => {
                metrics::observe_call(&hook.name, ty, op, !resp.allowed, code, took);
                record.warnings.extend(resp.warnings.iter().cloned());
                for (k, v) in &resp.audit_annotations {
                    record
                        .audit_annotations
                        .push((format!("{}/{k}", hook.name), v.clone()));
                }
                if !resp.allowed {
                    metrics::observe_rejection(&hook.name, ty, op, "no_error", resp.denial.code);
                    return Err(ApiError::from_status(
                        resp.denial.code,
                        &resp.denial.reason,
                        resp.denial.message_for(&hook.name),
                    ));
                }
                Ok(Some(resp))
            }
        }
    }

    fn fail_open(&self, hook: &Webhook, (round, index): (usize, usize), record: &mut Record) {
        metrics::observe_fail_open(&hook.name, self.hook_type.metric_type());
        let kind = match self.hook_type {
            HookType::Mutating => "mutation",
            HookType::Validating => "validating",
        };
        record.audit_annotations.push((
            format!("failed-open.{kind}.webhook.admission.k8s.io/round_{round}_index_{index}"),
            hook.name.clone(),
        ));
    }
}

/// The object as `target` serves it, from the form admission holds it in.
fn view(def: &ResourceDef, target: &ResourceDef, obj: &Value) -> Value {
    equivalent::view(def, target, obj).unwrap_or_else(|| obj.clone())
}

/// A webhook's result back in the form admission holds the object in.
fn unview(def: &ResourceDef, target: &ResourceDef, mut obj: Value) -> Result<Value, ApiError> {
    if equivalent::same(def, target) && !conversion::converts(def) {
        return Ok(obj);
    }
    conversion::to_storage(target, &mut obj)?;
    if def.is_custom()
        && let Some(m) = obj.as_object_mut()
    {
        m.insert("apiVersion".into(), json!(def.api_version()));
    }
    Ok(obj)
}

/// MutatingAdmissionWebhook.
pub struct MutatingWebhook(Dispatcher);

impl MutatingWebhook {
    /// The plugin over the server's MutatingWebhookConfigurations.
    pub fn new(
        state: std::sync::Weak<ApiState>,
        clients: Arc<ClientManager>,
        authorizer: Arc<dyn Authorizer>,
    ) -> MutatingWebhook {
        MutatingWebhook(Dispatcher::new(
            state,
            clients,
            authorizer,
            HookType::Mutating,
        ))
    }
}

#[async_trait::async_trait]
impl MutationPlugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }

    fn handles(&self, def: &ResourceDef, op: AdmissionOperation) -> bool {
        self.0.handles(def, op)
    }

    async fn admit(
        &self,
        attrs: &Attributes<'_>,
        obj: &mut Value,
        record: &mut Record,
    ) -> Result<(), ApiError> {
        let d = &self.0;
        let Some(state) = d.manager.state() else {
            return Ok(());
        };
        let call = Call {
            state: &state,
            attrs,
        };
        let hooks = d.manager.webhooks().hooks.clone();
        // How many changes the object had when each webhook last saw it, and how many since.
        let mut seen_at: Vec<Option<usize>> = vec![None; hooks.len()];
        let mut changes = 0usize;
        for round in 0..2 {
            for (i, hook) in hooks.iter().enumerate() {
                if round == 1 {
                    // Reinvoked only when asked for and another webhook changed the object
                    // after this one's call.
                    let changed_since = seen_at[i].is_some_and(|at| at < changes);
                    if !hook.reinvoke || !changed_since {
                        continue;
                    }
                }
                let current = (!obj.is_null()).then_some(&*obj);
                let Some(inv) = d.invocation(&call, hook, current).await? else {
                    continue;
                };
                let object = view(attrs.def, &inv.target, obj);
                let Some(resp) = d
                    .call_hook(&call, hook, (round, i), &inv, &object, record)
                    .await?
                else {
                    continue;
                };
                let mut mutated = false;
                if let Some(patch) = resp.patch.filter(|_| !obj.is_null()) {
                    let patched =
                        apimachinery::patch::json_patch(&object, &patch).map_err(|e| {
                            ApiError::internal(format!(
                                "applying the patch of webhook \"{}\": {e}",
                                hook.name
                            ))
                        })?;
                    if patched != object {
                        *obj = unview(attrs.def, &inv.target, patched)?;
                        mutated = true;
                        changes += 1;
                    }
                }
                seen_at[i] = Some(changes);
                record.audit_annotations.push((
                    format!("mutation.webhook.admission.k8s.io/round_{round}_index_{i}"),
                    json!({"configuration": hook.configuration, "webhook": hook.name, "mutated": mutated}).to_string(),
                ));
            }
        }
        Ok(())
    }
}

/// ValidatingAdmissionWebhook.
pub struct ValidatingWebhook(Dispatcher);

impl ValidatingWebhook {
    /// The plugin over the server's ValidatingWebhookConfigurations.
    pub fn new(
        state: std::sync::Weak<ApiState>,
        clients: Arc<ClientManager>,
        authorizer: Arc<dyn Authorizer>,
    ) -> ValidatingWebhook {
        ValidatingWebhook(Dispatcher::new(
            state,
            clients,
            authorizer,
            HookType::Validating,
        ))
    }
}

#[async_trait::async_trait]
impl ValidationPlugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }

    fn handles(&self, def: &ResourceDef, op: AdmissionOperation) -> bool {
        self.0.handles(def, op)
    }

    async fn validate(
        &self,
        attrs: &Attributes<'_>,
        obj: Option<&Value>,
        record: &mut Record,
    ) -> Result<(), ApiError> {
        let d = &self.0;
        let Some(state) = d.manager.state() else {
            return Ok(());
        };
        let call = Call {
            state: &state,
            attrs,
        };
        let hooks = d.manager.webhooks().hooks.clone();
        let mut calls = Vec::new();
        for (i, hook) in hooks.iter().enumerate() {
            if let Some(inv) = d.invocation(&call, hook, obj).await? {
                let object = obj
                    .map(|o| view(attrs.def, &inv.target, o))
                    .unwrap_or(Value::Null);
                calls.push((i, hook.clone(), inv, object));
            }
        }
        let call = &call;
        let results =
            futures::future::join_all(calls.iter().map(|(i, hook, inv, object)| async move {
                let mut own = Record::default();
                let r = d
                    .call_hook(call, hook, (0, *i), inv, object, &mut own)
                    .await;
                (r, own)
            }))
            .await;
        let mut first_error = None;
        for (r, own) in results {
            record.warnings.extend(own.warnings);
            record.audit_annotations.extend(own.audit_annotations);
            if let Err(e) = r {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
