//! The resource interpreter the controllers use (Karmada's `customResourceInterpreterImpl`):
//! for each operation, a user's ResourceInterpreterCustomization of the kind, else a matching
//! interpreter webhook, else the customizations shipped with karmada-rs, else the built-in
//! interpreter.
//!
//! Scripts run on tokio's blocking threads, so a slow script never holds up the controllers'
//! tasks; each call is bounded by the runtime's deadline and memory limit.

use std::sync::Arc;

use karmada_api::config::v1alpha1::{
    ResourceInterpreterCustomization, ResourceInterpreterResponse,
    ResourceInterpreterWebhookConfiguration,
};
use karmada_api::work::v1alpha1::ResourceHealth;
use karmada_api::work::v1alpha2::{AggregatedStatusItem, Component, ReplicaRequirements};
use lua::Operation as LuaOp;
use serde_json::Value;

use super::declarative::{Customizations, ScriptRef};
use super::webhook::{Attributes, Hook, Webhooks, apply_json_patch};
use super::{DependentObjectReference, InterpreterError, Operation, str_at};

/// Which layer answers an operation for a kind.
enum Layer {
    Script(ScriptRef),
    Webhook(Arc<Hook>),
    Native,
}

/// The resource interpreter with every layer; shared by all controllers.
pub struct ResourceInterpreter {
    runtime: lua::Runtime,
    customizations: Customizations,
    webhooks: Webhooks,
    shipped: Customizations,
}

/// The built-in operation behind a customization operation (GetComponents has none).
fn native_operation(op: LuaOp) -> Option<Operation> {
    Some(match op {
        LuaOp::Retain => Operation::Retain,
        LuaOp::InterpretReplica => Operation::InterpretReplica,
        LuaOp::InterpretComponent => return None,
        LuaOp::ReviseReplica => Operation::ReviseReplica,
        LuaOp::InterpretStatus => Operation::InterpretStatus,
        LuaOp::AggregateStatus => Operation::AggregateStatus,
        LuaOp::InterpretHealth => Operation::InterpretHealth,
        LuaOp::InterpretDependency => Operation::InterpretDependency,
    })
}

fn type_of(object: &Value) -> (&str, &str) {
    (str_at(object, &["apiVersion"]), str_at(object, &["kind"]))
}

impl ResourceInterpreter {
    /// An interpreter with the shipped customizations and none of the user's yet;
    /// `control_plane` resolves the Services webhooks name.
    pub fn new(control_plane: Option<kube::Client>, limits: lua::Limits) -> ResourceInterpreter {
        let runtime = lua::Runtime::new(Arc::new(super::pods::NativePods), limits);
        let shipped = Customizations::default();
        shipped.load(&super::thirdparty::customizations(), |c| {
            format!(
                "the built-in customization {}",
                c.metadata.name.as_deref().unwrap_or("")
            )
        });
        ResourceInterpreter {
            runtime,
            customizations: Customizations::default(),
            webhooks: Webhooks::new(control_plane),
            shipped,
        }
    }

    /// An interpreter with none of the shipped customizations (what `karmada-rs interpret`
    /// runs a file's customizations with, as karmadactl's `ConfigurableInterpreter`).
    pub fn without_shipped(limits: lua::Limits) -> ResourceInterpreter {
        ResourceInterpreter {
            runtime: lua::Runtime::new(Arc::new(super::pods::NativePods), limits),
            customizations: Customizations::default(),
            webhooks: Webhooks::new(None),
            shipped: Customizations::default(),
        }
    }

    /// Whether a user's customization scripts an operation for a kind.
    pub fn customized(&self, api_version: &str, kind: &str, op: LuaOp) -> bool {
        self.customizations.enabled(api_version, kind, op)
    }

    /// The Lua runtime.
    pub fn runtime(&self) -> &lua::Runtime {
        &self.runtime
    }

    /// Replaces the user's customizations.
    pub fn load_customizations(&self, items: &[ResourceInterpreterCustomization]) {
        self.customizations.load(items, |c| {
            format!(
                "ResourceInterpreterCustomization({})",
                c.metadata.name.as_deref().unwrap_or("")
            )
        });
    }

    /// Replaces the interpreter webhooks.
    pub fn load_webhooks(&self, items: &[ResourceInterpreterWebhookConfiguration]) {
        self.webhooks.load(items);
    }

    fn layer(&self, api_version: &str, kind: &str, op: LuaOp) -> Layer {
        let scripted = |c: &Customizations| {
            let a = c.accessor(api_version, kind)?;
            if op == LuaOp::InterpretDependency {
                a.dependency_scripts().first().cloned()
            } else {
                a.script(op).cloned()
            }
        };
        if let Some(s) = scripted(&self.customizations) {
            return Layer::Script(s);
        }
        if let Some(h) = self.webhooks.relevant(api_version, kind, op.name()) {
            return Layer::Webhook(h);
        }
        if let Some(s) = scripted(&self.shipped) {
            return Layer::Script(s);
        }
        Layer::Native
    }

    /// Whether any layer handles an operation for a kind (`HookEnabled`).
    pub fn hook_enabled(&self, api_version: &str, kind: &str, op: LuaOp) -> bool {
        native_operation(op).is_some_and(|n| super::hook_enabled(api_version, kind, n))
            || !matches!(self.layer(api_version, kind, op), Layer::Native)
    }

    /// Whether the built-in interpreter is what answers an operation for a kind.
    pub fn is_native(&self, api_version: &str, kind: &str, op: LuaOp) -> bool {
        matches!(self.layer(api_version, kind, op), Layer::Native)
    }

    async fn run<T: Send + 'static>(
        &self,
        s: &ScriptRef,
        op: LuaOp,
        f: impl FnOnce(&lua::Runtime, &lua::Script) -> Result<T, lua::LuaError> + Send + 'static,
    ) -> Result<T, InterpreterError> {
        let (rt, script) = (self.runtime.clone(), s.script.clone());
        let result = tokio::task::spawn_blocking(move || f(&rt, &script))
            .await
            .unwrap_or_else(|e| Err(lua::LuaError::Runtime(format!("script call aborted: {e}"))));
        result.map_err(|error| InterpreterError::Script {
            origin: s.origin.clone(),
            operation: op.name(),
            error,
        })
    }

    async fn call_webhook(
        &self,
        hook: &Hook,
        op: LuaOp,
        attributes: Attributes<'_>,
    ) -> Result<ResourceInterpreterResponse, InterpreterError> {
        self.webhooks
            .call(hook, op.name(), &attributes)
            .await
            .map_err(|message| InterpreterError::Webhook {
                operation: op.name(),
                message,
            })
    }

    /// The replicas and per-replica requirements of a template (GetReplicas).
    pub async fn get_replicas(
        &self,
        object: &Value,
    ) -> Result<(i32, Option<ReplicaRequirements>), InterpreterError> {
        let (av, kind) = type_of(object);
        match self.layer(av, kind, LuaOp::InterpretReplica) {
            Layer::Script(s) => {
                let obj = object.clone();
                let (n, req) = self
                    .run(&s, LuaOp::InterpretReplica, move |rt, sc| {
                        lua::operations::get_replicas(rt, sc, &obj)
                    })
                    .await?;
                let req = match req {
                    Some(v) => Some(typed_requirements(v).map_err(|message| {
                        InterpreterError::result(&s, LuaOp::InterpretReplica, message)
                    })?),
                    None => None,
                };
                Ok((n, req))
            }
            Layer::Webhook(h) => {
                let r = self
                    .call_webhook(&h, LuaOp::InterpretReplica, attributes(object))
                    .await?;
                Ok((r.replicas.unwrap_or(0), r.replica_requirements))
            }
            Layer::Native => super::get_replicas(object),
        }
    }

    /// The components of a multi-template workload (GetComponents); the built-in interpreter
    /// has none, as Karmada's.
    pub async fn get_components(&self, object: &Value) -> Result<Vec<Component>, InterpreterError> {
        let (av, kind) = type_of(object);
        match self.layer(av, kind, LuaOp::InterpretComponent) {
            Layer::Script(s) => {
                let obj = object.clone();
                let items = self
                    .run(&s, LuaOp::InterpretComponent, move |rt, sc| {
                        lua::operations::get_components(rt, sc, &obj)
                    })
                    .await?;
                items
                    .into_iter()
                    .map(|mut c| {
                        if let Some(rr) = c.get_mut("replicaRequirements") {
                            normalize_quantities(rr)?;
                        }
                        serde_json::from_value::<Component>(c).map_err(|e| e.to_string())
                    })
                    .collect::<Result<Vec<_>, String>>()
                    .map_err(|m| InterpreterError::result(&s, LuaOp::InterpretComponent, m))
            }
            Layer::Webhook(h) => Ok(self
                .call_webhook(&h, LuaOp::InterpretComponent, attributes(object))
                .await?
                .components),
            Layer::Native => Err(InterpreterError::malformed(
                object,
                "interface GetComponents not implemented yet",
            )),
        }
    }

    /// A member's copy of a template with its share of replicas (ReviseReplica).
    pub async fn revise_replica(
        &self,
        object: &Value,
        replicas: i64,
    ) -> Result<Value, InterpreterError> {
        let (av, kind) = type_of(object);
        match self.layer(av, kind, LuaOp::ReviseReplica) {
            Layer::Script(s) => {
                let obj = object.clone();
                self.run(&s, LuaOp::ReviseReplica, move |rt, sc| {
                    lua::operations::revise_replica(rt, sc, &obj, replicas)
                })
                .await
            }
            Layer::Webhook(h) => {
                let r = self
                    .call_webhook(
                        &h,
                        LuaOp::ReviseReplica,
                        Attributes {
                            replicas: i32::try_from(replicas).unwrap_or(i32::MAX),
                            ..attributes(object)
                        },
                    )
                    .await?;
                patched(object, &r, LuaOp::ReviseReplica)
            }
            Layer::Native => super::revise_replica(object, replicas),
        }
    }

    /// The desired object with what the member owns kept from the observed one (Retain).
    pub async fn retain(
        &self,
        desired: &Value,
        observed: &Value,
    ) -> Result<Value, InterpreterError> {
        let (av, kind) = type_of(desired);
        match self.layer(av, kind, LuaOp::Retain) {
            Layer::Script(s) => {
                let (d, o) = (desired.clone(), observed.clone());
                self.run(&s, LuaOp::Retain, move |rt, sc| {
                    lua::operations::retain(rt, sc, &d, &o)
                })
                .await
            }
            Layer::Webhook(h) => {
                let r = self
                    .call_webhook(
                        &h,
                        LuaOp::Retain,
                        Attributes {
                            observed: Some(observed),
                            ..attributes(desired)
                        },
                    )
                    .await?;
                patched(desired, &r, LuaOp::Retain)
            }
            Layer::Native => super::retain(desired, observed),
        }
    }

    /// The template's new status from its members' (AggregateStatus); `None` when the kind has
    /// no aggregation or the status is unchanged.
    pub async fn aggregate_status(
        &self,
        template: &Value,
        items: &[AggregatedStatusItem],
    ) -> Result<Option<Value>, InterpreterError> {
        let (av, kind) = type_of(template);
        if let Layer::Native = self.layer(av, kind, LuaOp::AggregateStatus) {
            return super::aggregate_status(template, items, jiff::Timestamp::now());
        }
        let new = self.aggregate_object(template, items).await?;
        // Only the status is written back (UpdateStatus ignores the rest).
        let old = template.get("status").cloned().unwrap_or(Value::Null);
        let status = new.get("status").cloned().unwrap_or(Value::Null);
        Ok((status != old).then_some(status))
    }

    /// The template as the aggregation returns it, whole (what `karmada-rs interpret` prints).
    pub async fn aggregate_object(
        &self,
        template: &Value,
        items: &[AggregatedStatusItem],
    ) -> Result<Value, InterpreterError> {
        let (av, kind) = type_of(template);
        match self.layer(av, kind, LuaOp::AggregateStatus) {
            Layer::Script(s) => {
                // Always a list, empty when no Work reports: Karmada's binding-status
                // controller passes the slice it assembled, never nil.
                let items = serde_json::to_value(items).unwrap_or(Value::Array(Vec::new()));
                self.aggregate_by_script(&s, template, items).await
            }
            Layer::Webhook(h) => {
                let r = self
                    .call_webhook(
                        &h,
                        LuaOp::AggregateStatus,
                        Attributes {
                            aggregated_status: items,
                            ..attributes(template)
                        },
                    )
                    .await?;
                patched(template, &r, LuaOp::AggregateStatus)
            }
            Layer::Native => {
                let mut t = template.clone();
                if let Some(s) = super::aggregate_status(template, items, jiff::Timestamp::now())? {
                    t["status"] = s;
                }
                Ok(t)
            }
        }
    }

    /// AggregateStatus by a user's customization of the template's kind, on status items given
    /// as the JSON list the script receives, or `null` for none (`karmadactl interpret` without
    /// a status file: the script's `statusItems` is nil); `None` when no customization of the
    /// kind scripts it.
    pub async fn aggregate_customized(
        &self,
        template: &Value,
        items: Value,
    ) -> Result<Option<Value>, InterpreterError> {
        let (av, kind) = type_of(template);
        let Some(s) = self
            .customizations
            .accessor(av, kind)
            .and_then(|a| a.script(LuaOp::AggregateStatus).cloned())
        else {
            return Ok(None);
        };
        self.aggregate_by_script(&s, template, items)
            .await
            .map(Some)
    }

    async fn aggregate_by_script(
        &self,
        s: &ScriptRef,
        template: &Value,
        items: Value,
    ) -> Result<Value, InterpreterError> {
        let obj = template.clone();
        self.run(s, LuaOp::AggregateStatus, move |rt, sc| {
            lua::operations::aggregate_status(rt, sc, &obj, &items)
        })
        .await
    }

    /// The status to record for a member object (ReflectStatus); `None` when there is none.
    pub async fn reflect_status(
        &self,
        observed: &Value,
    ) -> Result<Option<Value>, InterpreterError> {
        let (av, kind) = type_of(observed);
        match self.layer(av, kind, LuaOp::InterpretStatus) {
            Layer::Script(s) => {
                let obj = observed.clone();
                self.run(&s, LuaOp::InterpretStatus, move |rt, sc| {
                    lua::operations::reflect_status(rt, sc, &obj)
                })
                .await
                .map(Some)
            }
            Layer::Webhook(h) => Ok(self
                .call_webhook(&h, LuaOp::InterpretStatus, attributes(observed))
                .await?
                .raw_status),
            Layer::Native => super::reflect_status(observed),
        }
    }

    /// The health of a member object (the work-status controller's `interpretHealth`):
    /// Healthy for kinds nothing interprets, Unhealthy or Healthy as interpreted, and an error
    /// (to be recorded as Unknown) when interpreting failed.
    pub async fn interpret_health(
        &self,
        observed: &Value,
    ) -> Result<ResourceHealth, InterpreterError> {
        let (av, kind) = type_of(observed);
        let healthy = match self.layer(av, kind, LuaOp::InterpretHealth) {
            Layer::Script(s) => {
                let obj = observed.clone();
                self.run(&s, LuaOp::InterpretHealth, move |rt, sc| {
                    lua::operations::interpret_health(rt, sc, &obj)
                })
                .await?
            }
            Layer::Webhook(h) => self
                .call_webhook(&h, LuaOp::InterpretHealth, attributes(observed))
                .await?
                .healthy
                .unwrap_or(false),
            Layer::Native => return Ok(super::interpret_health(observed)),
        };
        Ok(if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        })
    }

    /// The health of a member object when it can be told without waiting on a webhook (for
    /// fast paths that cannot wait); `None` otherwise.
    pub fn interpret_health_now(&self, observed: &Value) -> Option<ResourceHealth> {
        let (av, kind) = type_of(observed);
        match self.layer(av, kind, LuaOp::InterpretHealth) {
            Layer::Script(s) => Some(
                match lua::operations::interpret_health(&self.runtime, &s.script, observed) {
                    Ok(true) => ResourceHealth::Healthy,
                    Ok(false) => ResourceHealth::Unhealthy,
                    Err(_) => ResourceHealth::Unknown,
                },
            ),
            Layer::Webhook(_) => None,
            Layer::Native => Some(super::interpret_health(observed)),
        }
    }

    /// The objects a template depends on (GetDependencies): with customizations, the union of
    /// every dependency script's answer, sorted.
    pub async fn get_dependencies(
        &self,
        object: &Value,
    ) -> Result<Vec<DependentObjectReference>, InterpreterError> {
        let (av, kind) = type_of(object);
        let scripts = |c: &Customizations| {
            c.accessor(av, kind)
                .map(|a| a.dependency_scripts().to_vec())
                .filter(|s| !s.is_empty())
        };
        let from_scripts = match scripts(&self.customizations) {
            Some(s) => Some(s),
            None if self
                .webhooks
                .relevant(av, kind, LuaOp::InterpretDependency.name())
                .is_some() =>
            {
                None
            }
            None => scripts(&self.shipped),
        };
        if let Some(list) = from_scripts {
            let mut all: Vec<DependentObjectReference> = Vec::new();
            for s in &list {
                let obj = object.clone();
                let refs = self
                    .run(s, LuaOp::InterpretDependency, move |rt, sc| {
                        lua::operations::get_dependencies(rt, sc, &obj)
                    })
                    .await?;
                let refs: Vec<DependentObjectReference> = refs
                    .into_iter()
                    .map(serde_json::from_value)
                    .collect::<Result<_, _>>()
                    .map_err(|e| {
                        InterpreterError::result(s, LuaOp::InterpretDependency, e.to_string())
                    })?;
                verify_dependencies(&refs)
                    .map_err(|m| InterpreterError::result(s, LuaOp::InterpretDependency, m))?;
                for r in refs {
                    if !all.contains(&r) {
                        all.push(r);
                    }
                }
            }
            all.sort_by(|a, b| {
                (&a.api_version, &a.kind, &a.namespace, &a.name).cmp(&(
                    &b.api_version,
                    &b.kind,
                    &b.namespace,
                    &b.name,
                ))
            });
            return Ok(all);
        }
        match self.layer(av, kind, LuaOp::InterpretDependency) {
            Layer::Webhook(h) => {
                let deps = self
                    .call_webhook(&h, LuaOp::InterpretDependency, attributes(object))
                    .await?
                    .dependencies;
                verify_dependencies(&deps).map_err(|message| InterpreterError::Webhook {
                    operation: LuaOp::InterpretDependency.name(),
                    message: format!("received invalid webhook response: {message}"),
                })?;
                Ok(deps)
            }
            _ => super::get_dependencies(object),
        }
    }
}

fn attributes(object: &Value) -> Attributes<'_> {
    Attributes {
        object,
        observed: None,
        replicas: 0,
        aggregated_status: &[],
    }
}

/// The object with a webhook's patch applied; unchanged without one.
fn patched(
    object: &Value,
    r: &ResourceInterpreterResponse,
    op: LuaOp,
) -> Result<Value, InterpreterError> {
    match &r.patch {
        Some(p) if !p.0.is_empty() => {
            apply_json_patch(object, &p.0).map_err(|message| InterpreterError::Webhook {
                operation: op.name(),
                message: format!("failed to apply the webhook's patch: {message}"),
            })
        }
        _ => Ok(object.clone()),
    }
}

/// Quantities of a `resourceRequest` in canonical form (numbers accepted, as a Quantity
/// decodes them).
fn normalize_quantities(requirements: &mut Value) -> Result<(), String> {
    let Some(Value::Object(list)) = requirements.get_mut("resourceRequest") else {
        return Ok(());
    };
    for (name, q) in list.iter_mut() {
        let text = match q {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => return Err(format!("resourceRequest.{name}: {other} is not a quantity")),
        };
        let parsed = lua::quantity::Quantity::parse(&text)
            .map_err(|e| format!("resourceRequest.{name}: {e}"))?;
        *q = Value::String(parsed.to_string());
    }
    Ok(())
}

fn typed_requirements(mut v: Value) -> Result<ReplicaRequirements, String> {
    normalize_quantities(&mut v)?;
    serde_json::from_value(v).map_err(|e| format!("json unmarshal obj failed: {e}"))
}

/// `validation.VerifyDependencies`.
fn verify_dependencies(deps: &[DependentObjectReference]) -> Result<(), String> {
    use karmada_api::FieldError;
    let mut errors = Vec::new();
    for (i, d) in deps.iter().enumerate() {
        let path = format!("dependencies[{i}]");
        if d.api_version.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.apiVersion"),
                "",
                "missing required apiVersion",
            ));
        }
        if d.kind.is_empty() {
            errors.push(FieldError::invalid(
                format!("{path}.kind"),
                "",
                "missing required kind",
            ));
        }
        if d.name.is_empty() && d.label_selector.is_none() {
            errors.push(FieldError::invalid_struct(
                path,
                d,
                "dependency can not leave name and labelSelector all empty",
            ));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(karmada_api::aggregate_message(&errors))
    }
}
