//! ValidatingAdmissionPolicy as kube-apiserver evaluates it: k8s.io/apiserver
//! pkg/admission/plugin/policy/validating (the dispatcher, validator, type checking and
//! metrics), pkg/admission/plugin/policy/matching and generic (matching, params), and
//! pkg/cel/library (kube's CEL libraries), on the `cel` crate.
//!
//! Pure: no I/O, no server types. The server hands the [`Engine`] the policies and bindings it
//! stores (kube's JSON) as they change, and for each admission request the request's
//! [`Attributes`] and a [`Cluster`] to read namespaces and param objects from and to
//! authorize `authorizer` checks with; the [`Outcome`] says whether to deny (kube's message,
//! reason and code), which warnings to return and which audit annotations to record.
//! [`typecheck::check_policy`] computes a policy's `status.typeChecking` from the schemas of
//! its kinds.
//!
//! It must not depend on a runtime, HTTP, storage or the server: only apimachinery (selectors,
//! quantities) and component-base (the metrics registry).

pub mod api;
pub mod checker;
pub mod conditions;
pub mod cost;
pub mod environment;
pub mod library;
pub mod matching;
pub mod metrics;
pub mod request;
pub mod typecheck;
pub mod validator;
pub mod value;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use cel::common::types::CelNull;
use cel::common::value::Val;
use serde::Serialize;
use serde_json::{Value, json};

pub use api::{ParamKind, ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
pub use conditions::{ConditionsOutcome, MatchConditions};
pub use library::authz::{AuthorizationAttributes, AuthorizationDecision, Authorizer, Verdict};
pub use request::{Attributes, Gvk, Gvr, Operation, UserInfo};

use library::authz::{AuthorizerVal, CachingAuthorizer, ResourceCheck};
use validator::Bindings;
use validator::{Action, AuditOutcome, CompiledPolicy, Evaluation};
use value::json_to_val;

/// Whether a param kind's objects live in namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamScope {
    Namespaced,
    Cluster,
}

/// What the engine reads from the server for a request.
pub trait Cluster {
    /// A namespace object.
    fn namespace(&self, name: &str) -> Option<Value>;
    /// The scope of a param kind, `None` when the server does not serve it.
    fn param_scope(&self, kind: &ParamKind) -> Option<ParamScope>;
    /// One param object (`namespace` empty for a cluster-scoped kind).
    fn param(&self, kind: &ParamKind, namespace: &str, name: &str) -> Option<Value>;
    /// The param objects of a namespace (or all of a cluster-scoped kind).
    fn params(&self, kind: &ParamKind, namespace: &str) -> Vec<Value>;
    /// The resources equivalent to one (other versions and groups serving the same objects),
    /// with their kinds, for `matchPolicy: Equivalent`.
    fn equivalent_resources(&self, _resource: &Gvr, _subresource: &str) -> Vec<(Gvr, Gvk)> {
        Vec::new()
    }
    /// The request's object as `resource` serves it (kube's VersionedAttributes: the matched
    /// version, which differs from the request's under `matchPolicy: Equivalent`); `None` when
    /// that is the object as given.
    fn versioned(&self, _object: &Value, _resource: &Gvr) -> Option<Value> {
        None
    }
    /// The authorizer `authorizer` checks ask.
    fn authorizer(&self) -> Option<Arc<dyn Authorizer>> {
        None
    }
}

/// A denial: kube's message, status reason and HTTP code.
#[derive(Clone, Debug, PartialEq)]
pub struct Denial {
    pub message: String,
    pub reason: String,
    pub code: u16,
}

impl Denial {
    /// The metav1.Status kube answers with (admission.NewForbidden, then the policy's reason
    /// and code).
    pub fn status(&self, attrs: &Attributes<'_>) -> Value {
        let name = if attrs.name.is_empty() {
            attrs
                .object
                .and_then(|o| o.pointer("/metadata/name"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        } else {
            attrs.name.clone()
        };
        let resource = if attrs.resource.group.is_empty() {
            attrs.resource.resource.clone()
        } else {
            format!("{}.{}", attrs.resource.resource, attrs.resource.group)
        };
        let message = if name.is_empty() {
            format!("{resource} is forbidden: {}", self.message)
        } else {
            format!("{resource} \"{name}\" is forbidden: {}", self.message)
        };
        let mut details = serde_json::Map::new();
        if !name.is_empty() {
            details.insert("name".into(), json!(name));
        }
        if !attrs.resource.group.is_empty() {
            details.insert("group".into(), json!(attrs.resource.group));
        }
        details.insert("kind".into(), json!(attrs.resource.resource));
        details.insert("causes".into(), json!([{"message": self.message}]));
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": self.reason,
            "details": details,
            "code": self.code,
        })
    }
}

/// What the policies decided for one request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub denial: Option<Denial>,
    /// `Warning:` headers, in kube's words.
    pub warnings: Vec<String>,
    /// Audit annotations: `validation.policy.admission.k8s.io/validation_failure` and each
    /// policy's `<policy>/<key>`.
    pub audit_annotations: BTreeMap<String, String>,
}

/// One entry of the `validation_failure` audit annotation.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ValidationFailure {
    message: String,
    policy: String,
    binding: String,
    expression_index: usize,
    validation_actions: Vec<String>,
}

/// kube's `maxAuditAnnotationValueLength`.
const MAX_AUDIT_VALUE: usize = 10 * 1024;
/// kube's `maxValidationFailures`.
const MAX_VALIDATION_FAILURES: usize = 50;

fn reason_to_code(reason: &str) -> u16 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

#[derive(Default)]
struct State {
    policies: BTreeMap<String, Arc<CompiledPolicy>>,
    bindings: BTreeMap<String, Arc<ValidatingAdmissionPolicyBinding>>,
}

/// The validating admission policy plugin: the policies and bindings it knows, compiled.
pub struct Engine {
    state: RwLock<State>,
    metrics: &'static component_base::metrics::Registry,
}

impl Default for Engine {
    fn default() -> Self {
        Engine::new(component_base::metrics::global())
    }
}

struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: String,
}

impl Engine {
    pub fn new(metrics: &'static component_base::metrics::Registry) -> Engine {
        Engine {
            state: RwLock::new(State::default()),
            metrics,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds or replaces a policy; its expressions are compiled again only when its
    /// generation (or uid) changed.
    pub fn set_policy(&self, policy: &Value) -> Result<(), serde_json::Error> {
        let policy: ValidatingAdmissionPolicy = serde_json::from_value(policy.clone())?;
        let name = policy.metadata.name.clone();
        let current = self.read().policies.get(&name).cloned();
        if let Some(c) = current
            && c.policy.metadata.uid == policy.metadata.uid
            && c.policy.metadata.generation == policy.metadata.generation
            && policy.metadata.generation != 0
        {
            return Ok(());
        }
        let compiled = Arc::new(CompiledPolicy::compile(policy));
        self.write().policies.insert(name, compiled);
        Ok(())
    }

    pub fn remove_policy(&self, name: &str) {
        self.write().policies.remove(name);
    }

    pub fn set_binding(&self, binding: &Value) -> Result<(), serde_json::Error> {
        let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(binding.clone())?;
        self.write()
            .bindings
            .insert(binding.metadata.name.clone(), Arc::new(binding));
        Ok(())
    }

    pub fn remove_binding(&self, name: &str) {
        self.write().bindings.remove(name);
    }

    /// Replaces everything with these lists (compiled policies of unchanged generations are
    /// kept); objects that do not decode are skipped and returned.
    pub fn sync(&self, policies: &[Value], bindings: &[Value]) -> Vec<serde_json::Error> {
        let mut errors = Vec::new();
        let names: Vec<String> = policies
            .iter()
            .filter_map(|p| p.pointer("/metadata/name")?.as_str().map(str::to_owned))
            .collect();
        for p in policies {
            if let Err(e) = self.set_policy(p) {
                errors.push(e);
            }
        }
        let mut decoded = BTreeMap::new();
        for b in bindings {
            match serde_json::from_value::<ValidatingAdmissionPolicyBinding>(b.clone()) {
                Ok(b) => {
                    decoded.insert(b.metadata.name.clone(), Arc::new(b));
                }
                Err(e) => errors.push(e),
            }
        }
        let mut state = self.write();
        state.policies.retain(|n, _| names.contains(n));
        state.bindings = decoded;
        errors
    }

    /// Whether the engine knows a policy.
    pub fn has_policy(&self, name: &str) -> bool {
        self.read().policies.contains_key(name)
    }

    /// kube's dispatcher: every policy matching the request, every binding of it matching,
    /// every param of the binding; denials, warnings and audit annotations as kube makes them.
    pub fn validate(&self, attrs: &Attributes<'_>, cluster: &dyn Cluster) -> Outcome {
        let (policies, bindings) = {
            let s = self.read();
            let mut by_policy: HashMap<String, Vec<Arc<ValidatingAdmissionPolicyBinding>>> =
                HashMap::new();
            for b in s.bindings.values() {
                by_policy
                    .entry(b.spec.policy_name.clone())
                    .or_default()
                    .push(b.clone());
            }
            (s.policies.values().cloned().collect::<Vec<_>>(), by_policy)
        };
        let mut outcome = Outcome::default();
        let mut denied: Vec<Denied> = Vec::new();
        let mut failures: Vec<ValidationFailure> = Vec::new();
        let authorizer = cluster
            .authorizer()
            .map(|a| Arc::new(CachingAuthorizer::new(a)) as Arc<dyn Authorizer>);
        let namespace = if attrs.namespace.is_empty()
            || (attrs.kind.group.is_empty()
                && attrs.kind.version == "v1"
                && attrs.kind.kind == "Namespace")
        {
            None
        } else {
            cluster
                .namespace(&attrs.namespace)
                .map(|ns| request::namespace_object(&ns))
        };
        let mut requests: Vec<Versioned> = Vec::new();

        for policy in &policies {
            let Some(bound) = bindings.get(&policy.policy.metadata.name) else {
                continue;
            };
            let pname = policy.policy.metadata.name.as_str();
            let config_error = |denied: &mut Vec<Denied>, binding: Option<&str>, err: String| {
                if policy.ignores_failures() {
                    return;
                }
                let message = match binding {
                    None => format!("failed to configure policy: {err}"),
                    Some(_) => format!("failed to configure binding: {err}"),
                };
                denied.push(Denied {
                    policy: pname.to_owned(),
                    binding: binding.map(str::to_owned),
                    message,
                    reason: String::new(),
                });
            };
            let matched = match &policy.policy.spec.match_constraints {
                None => Err("policy contained no match constraints, a required field".to_owned()),
                Some(m) => matching::matches(m, attrs, cluster),
            };
            let (gvr, gvk) = match matched {
                Ok(Some(m)) => m,
                Ok(None) => continue,
                Err(e) => {
                    config_error(&mut denied, None, e);
                    continue;
                }
            };
            let mut collected: BTreeMap<String, Vec<String>> = BTreeMap::new();
            let mut bound = bound.clone();
            bound.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
            for binding in &bound {
                let bname = binding.metadata.name.as_str();
                let observe = |elapsed, error_type: &str, action: &str| {
                    metrics::observe(self.metrics, elapsed, pname, bname, error_type, action)
                };
                if let Some(m) = &binding.spec.match_resources {
                    match matching::matches(m, attrs, cluster) {
                        Ok(Some(_)) => {}
                        Ok(None) => continue,
                        Err(e) => {
                            config_error(&mut denied, Some(bname), e);
                            continue;
                        }
                    }
                }
                let params = match collect_params(&policy.policy, binding, attrs, cluster) {
                    Ok(p) => p,
                    Err(e) => {
                        config_error(&mut denied, Some(bname), e);
                        continue;
                    }
                };
                // The `request` variable and the objects in the matched version, once per
                // matched kind.
                let key = (gvr.clone(), gvk.clone());
                let index = match requests.iter().position(|r| r.key == key) {
                    Some(i) => i,
                    None => {
                        requests.push(Versioned {
                            request: attrs.request_json(&gvk, &gvr),
                            object: attrs.object.and_then(|o| cluster.versioned(o, &gvr)),
                            old_object: attrs.old_object.and_then(|o| cluster.versioned(o, &gvr)),
                            key,
                        });
                        requests.len() - 1
                    }
                };
                let versioned = &requests[index];
                let actions = &binding.spec.validation_actions;
                for param in &params {
                    let result = evaluate(
                        policy,
                        attrs,
                        versioned,
                        namespace.as_ref(),
                        param.as_ref(),
                        authorizer.as_ref(),
                        &gvr,
                    );
                    for (i, d) in result.decisions.iter().enumerate() {
                        let error_type = metrics::error_type(d);
                        match d.action {
                            Action::Admit => {
                                if d.evaluation == Evaluation::Error {
                                    observe(d.elapsed, error_type, "allow");
                                }
                            }
                            Action::Deny => {
                                for action in actions {
                                    match action.as_str() {
                                        "Deny" => {
                                            denied.push(Denied {
                                                policy: pname.to_owned(),
                                                binding: Some(bname.to_owned()),
                                                message: d.message.clone(),
                                                reason: d.reason.clone(),
                                            });
                                            observe(d.elapsed, error_type, "deny");
                                        }
                                        "Audit" => {
                                            failures.push(ValidationFailure {
                                                message: d.message.clone(),
                                                policy: binding.spec.policy_name.clone(),
                                                binding: bname.to_owned(),
                                                expression_index: i,
                                                validation_actions: actions.clone(),
                                            });
                                            observe(d.elapsed, error_type, "audit");
                                        }
                                        "Warn" => {
                                            outcome.warnings.push(format!(
                                                "Validation failed for ValidatingAdmissionPolicy '{pname}' with binding '{bname}': {}",
                                                d.message
                                            ));
                                            observe(d.elapsed, error_type, "warn");
                                        }
                                        _ => {}
                                    }
                                }
                            }
                        }
                    }
                    for a in &result.audit_annotations {
                        match &a.outcome {
                            AuditOutcome::Publish(v) => {
                                let mut v = v.clone();
                                if v.len() > MAX_AUDIT_VALUE {
                                    let mut cut = MAX_AUDIT_VALUE;
                                    while !v.is_char_boundary(cut) {
                                        cut -= 1;
                                    }
                                    v.truncate(cut);
                                }
                                let values = collected.entry(a.key.clone()).or_default();
                                if !values.contains(&v) {
                                    values.push(v);
                                }
                            }
                            AuditOutcome::Error(e) => {
                                denied.push(Denied {
                                    policy: pname.to_owned(),
                                    binding: Some(bname.to_owned()),
                                    message: e.clone(),
                                    reason: String::new(),
                                });
                                observe(a.elapsed, "invalid_error", "deny");
                            }
                            AuditOutcome::Exclude => {}
                        }
                    }
                }
            }
            for (key, values) in collected {
                outcome
                    .audit_annotations
                    .insert(format!("{pname}/{key}"), values.join(", "));
            }
        }

        if !failures.is_empty() {
            failures.truncate(MAX_VALIDATION_FAILURES);
            if let Ok(v) = serde_json::to_string(&failures) {
                outcome.audit_annotations.insert(
                    "validation.policy.admission.k8s.io/validation_failure".into(),
                    v,
                );
            }
        }
        if let Some(d) = denied.into_iter().next() {
            let message = match d.binding {
                Some(b) => format!(
                    "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
                    d.policy, d.message
                ),
                None => format!(
                    "ValidatingAdmissionPolicy '{}' denied request: {}",
                    d.policy, d.message
                ),
            };
            let reason = if d.reason.is_empty() {
                "Invalid".to_owned()
            } else {
                d.reason
            };
            outcome.denial = Some(Denial {
                code: reason_to_code(&reason),
                message,
                reason,
            });
        }
        outcome
    }
}

/// kube's `CollectParams`: the params a binding evaluates its policy with (`None` for no
/// param).
fn collect_params(
    policy: &ValidatingAdmissionPolicy,
    binding: &ValidatingAdmissionPolicyBinding,
    attrs: &Attributes<'_>,
    cluster: &dyn Cluster,
) -> Result<Vec<Option<Value>>, String> {
    let (Some(kind), Some(param_ref)) = (&policy.spec.param_kind, &binding.spec.param_ref) else {
        return Ok(vec![None]);
    };
    let scope = cluster
        .param_scope(kind)
        .ok_or_else(|| format!("paramKind kind `{}` not known", kind.go_string()))?;
    let namespace = match scope {
        ParamScope::Cluster if !param_ref.namespace.is_empty() => {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        }
        ParamScope::Cluster => String::new(),
        ParamScope::Namespaced if !param_ref.namespace.is_empty() => param_ref.namespace.clone(),
        ParamScope::Namespaced if attrs.namespace.is_empty() => {
            return Err("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into());
        }
        ParamScope::Namespaced => attrs.namespace.clone(),
    };
    let params: Vec<Value> = if !param_ref.name.is_empty() {
        if param_ref.selector.is_some() {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        cluster
            .param(kind, &namespace, &param_ref.name)
            .into_iter()
            .collect()
    } else if let Some(sel) = &param_ref.selector {
        let s = matching::selector(sel)?;
        cluster
            .params(kind, &namespace)
            .into_iter()
            .filter(|p| s.matches(&matching::labels_of(Some(p))))
            .collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if params.is_empty() && param_ref.parameter_not_found_action.as_deref() == Some("Deny") {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(params.into_iter().map(Some).collect())
}

fn or_null(v: Option<&Value>) -> Box<dyn Val + '_> {
    match v {
        Some(v) => json_to_val(v),
        None => Box::new(CelNull),
    }
}

/// The request as one matched resource sees it.
struct Versioned {
    key: (Gvr, Gvk),
    /// The `request` variable.
    request: Value,
    /// The object and old object converted to the matched version (`None`: as given).
    object: Option<Value>,
    old_object: Option<Value>,
}

/// Evaluates one policy for one param, with the request's variables bound.
fn evaluate(
    policy: &CompiledPolicy,
    attrs: &Attributes<'_>,
    versioned: &Versioned,
    namespace: Option<&Value>,
    param: Option<&Value>,
    authorizer: Option<&Arc<dyn Authorizer>>,
    gvr: &Gvr,
) -> validator::ValidateResult {
    // A param without apiVersion/kind (a built-in kind's object) gets the paramKind's.
    let typed_param;
    let param = match (param, &policy.policy.spec.param_kind) {
        (Some(p), Some(k)) if p.get("kind").is_none() => {
            let mut p = p.clone();
            if let Some(o) = p.as_object_mut() {
                o.insert("apiVersion".into(), json!(k.api_version));
                o.insert("kind".into(), json!(k.kind));
            }
            typed_param = p;
            Some(&typed_param)
        }
        (p, _) => p,
    };
    let mut vals: HashMap<&'static str, Box<dyn Val + '_>> = HashMap::with_capacity(8);
    vals.insert(
        "object",
        or_null(versioned.object.as_ref().or(attrs.object)),
    );
    vals.insert(
        "oldObject",
        or_null(versioned.old_object.as_ref().or(attrs.old_object)),
    );
    vals.insert("request", json_to_val(&versioned.request));
    vals.insert("namespaceObject", or_null(namespace));
    vals.insert("params", or_null(param));
    if let Some(a) = authorizer {
        let who = AuthorizerVal {
            authz: a.clone(),
            user: attrs.user.clone(),
        };
        vals.insert(
            "authorizer.requestResource",
            Box::new(ResourceCheck::for_request(
                who.clone(),
                &gvr.group,
                &gvr.version,
                &gvr.resource,
                &attrs.subresource,
                &attrs.namespace,
                &attrs.name,
            )),
        );
        vals.insert("authorizer", Box::new(who));
    }
    let bindings = Bindings {
        vals,
        variables: Some(policy.variables_scope()),
    };
    policy.validate(&bindings)
}

#[cfg(test)]
mod tests;
