//! A policy compiled, and its evaluation for one binding and param (k8s.io/apiserver
//! pkg/admission/plugin/policy/validating/validator.go, plugin.go's compilePolicy, and
//! pkg/admission/plugin/cel's composition of variables): match conditions, validations with
//! their messages, audit annotations, each under the policy's failure policy.

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use cel::ExecutionError;
use cel::common::traits::Indexer;
use cel::common::types::{CelBool, CelList, CelMap, CelString, Kind, MAP_TYPE, Type};
use cel::common::value::{CowVal, Val};

use crate::api::{ValidatingAdmissionPolicy, Validation};
use crate::checker::types::Ty;
use cel::context::VariableResolver;

use crate::cost;
use crate::environment::{self, Compiled, EvalError};

/// kube's `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// kube's message when an evaluation runs out of budget.
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// What a validation decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Admit,
    Deny,
}

/// How it was decided: by the expression, or by an error under the failure policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evaluation {
    Admit,
    Deny,
    Error,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub action: Action,
    pub evaluation: Evaluation,
    pub message: String,
    pub reason: String,
    pub elapsed: Duration,
}

/// An audit annotation's outcome.
#[derive(Clone, Debug, PartialEq)]
pub enum AuditOutcome {
    Publish(String),
    Exclude,
    Error(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct AuditResult {
    pub key: String,
    pub outcome: AuditOutcome,
    pub elapsed: Duration,
}

#[derive(Debug, Default)]
pub struct ValidateResult {
    pub decisions: Vec<Decision>,
    pub audit_annotations: Vec<AuditResult>,
}

type Expr = Result<Compiled, String>;

struct CompiledValidation {
    spec: Validation,
    expr: Expr,
    message: Option<Expr>,
}

/// A policy's expressions, compiled once per generation.
pub struct CompiledPolicy {
    pub policy: ValidatingAdmissionPolicy,
    variables: Vec<(String, Expr)>,
    variable_index: HashMap<String, usize>,
    match_conditions: Vec<(String, Expr)>,
    validations: Vec<CompiledValidation>,
    audit: Vec<(String, String, Expr)>,
}

/// The types kube declares for `request` (BuildRequestType).
fn request_type() -> Ty {
    let f = |pairs: &[(&str, Ty)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let gvk = Ty::object(
        "kubernetes.GroupVersionKind",
        f(&[
            ("group", Ty::String),
            ("version", Ty::String),
            ("kind", Ty::String),
        ]),
    );
    let gvr = Ty::object(
        "kubernetes.GroupVersionResource",
        f(&[
            ("group", Ty::String),
            ("version", Ty::String),
            ("resource", Ty::String),
        ]),
    );
    let user = Ty::object(
        "kubernetes.UserInfo",
        f(&[
            ("username", Ty::String),
            ("uid", Ty::String),
            ("groups", Ty::list(Ty::String)),
            ("extra", Ty::map(Ty::String, Ty::list(Ty::String))),
        ]),
    );
    Ty::object(
        "kubernetes.AdmissionRequest",
        f(&[
            ("kind", gvk.clone()),
            ("resource", gvr.clone()),
            ("subResource", Ty::String),
            ("requestKind", gvk),
            ("requestResource", gvr),
            ("requestSubResource", Ty::String),
            ("name", Ty::String),
            ("namespace", Ty::String),
            ("operation", Ty::String),
            ("userInfo", user),
            ("dryRun", Ty::Bool),
            ("options", Ty::Dyn),
        ]),
    )
}

/// The type kube declares for `namespaceObject` (BuildNamespaceType).
fn namespace_type() -> Ty {
    let f = |pairs: &[(&str, Ty)]| {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect()
    };
    let condition = Ty::object(
        "kubernetes.NamespaceCondition",
        f(&[
            ("status", Ty::String),
            ("type", Ty::String),
            ("lastTransitionTime", Ty::Timestamp),
            ("message", Ty::String),
            ("reason", Ty::String),
        ]),
    );
    let strings = Ty::map(Ty::String, Ty::String);
    Ty::object(
        "kubernetes.Namespace",
        f(&[
            (
                "metadata",
                Ty::object(
                    "kubernetes.NamespaceMetadata",
                    f(&[
                        ("name", Ty::String),
                        ("generateName", Ty::String),
                        ("namespace", Ty::String),
                        ("labels", strings.clone()),
                        ("annotations", strings),
                        ("UID", Ty::String),
                        ("creationTimestamp", Ty::Timestamp),
                        ("deletionGracePeriodSeconds", Ty::Int),
                        ("deletionTimestamp", Ty::Timestamp),
                        ("generation", Ty::Int),
                        ("resourceVersion", Ty::String),
                        ("finalizers", Ty::list(Ty::String)),
                    ]),
                ),
            ),
            (
                "spec",
                Ty::object(
                    "kubernetes.NamespaceSpec",
                    f(&[("finalizers", Ty::list(Ty::String))]),
                ),
            ),
            (
                "status",
                Ty::object(
                    "kubernetes.NamespaceStatus",
                    f(&[("conditions", Ty::list(condition)), ("phase", Ty::String)]),
                ),
            ),
        ]),
    )
}

/// The variables every admission expression may use (a webhook's matchConditions too):
/// `object` and `oldObject` typed as given, `request`, and `authorizer` when asked for.
pub(crate) fn request_declarations(object: &Ty, authorizer: bool) -> HashMap<String, Ty> {
    let mut vars = HashMap::new();
    vars.insert("object".to_owned(), object.clone());
    vars.insert("oldObject".to_owned(), object.clone());
    vars.insert("request".to_owned(), request_type());
    if authorizer {
        vars.insert(
            "authorizer".to_owned(),
            Ty::opaque("kubernetes.authorization.Authorizer"),
        );
        vars.insert(
            "authorizer.requestResource".to_owned(),
            Ty::opaque("kubernetes.authorization.ResourceCheck"),
        );
    }
    vars
}

/// The variables an expression of a policy may use: `object` and `params` typed as given
/// (`dyn` at admission), `authorizer` unless for a message expression, and the policy's
/// `variables` declared so far.
pub fn declarations(
    object: &Ty,
    params: Option<&Ty>,
    authorizer: bool,
    variables: &BTreeMap<String, Ty>,
) -> HashMap<String, Ty> {
    let mut vars = request_declarations(object, authorizer);
    vars.insert("namespaceObject".to_owned(), namespace_type());
    if let Some(p) = params {
        vars.insert("params".to_owned(), p.clone());
    }
    vars.insert(
        "variables".to_owned(),
        Ty::object("kubernetes.variables", variables.clone()),
    );
    vars
}

/// Compiles an expression that must evaluate to one of `want` (kube's ReturnTypes).
pub(crate) fn compile_as(source: &str, vars: &HashMap<String, Ty>, want: &[Ty]) -> Expr {
    let c = environment::compile(source, vars)
        .map_err(|issues| format!("compilation failed: {issues}"))?;
    if !want.is_empty() && !want.contains(&c.output) {
        return Err(if want.len() == 1 {
            format!("must evaluate to {} but got {}", want[0], c.output)
        } else {
            let names: Vec<String> = want.iter().map(Ty::to_string).collect();
            format!(
                "must evaluate to one of [{}] but got {}",
                names.join(" "),
                c.output
            )
        });
    }
    Ok(c)
}

impl CompiledPolicy {
    pub fn compile(policy: ValidatingAdmissionPolicy) -> CompiledPolicy {
        let params = policy.spec.param_kind.as_ref().map(|_| Ty::Dyn);
        let mut var_types = BTreeMap::new();
        let mut variables = Vec::new();
        let mut variable_index = HashMap::new();
        for v in &policy.spec.variables {
            let vars = declarations(&Ty::Dyn, params.as_ref(), true, &var_types);
            let c = compile_as(&v.expression, &vars, &[]);
            var_types.insert(
                v.name.clone(),
                c.as_ref().map_or(Ty::Dyn, |c| c.output.clone()),
            );
            variable_index.insert(v.name.clone(), variables.len());
            variables.push((v.name.clone(), c));
        }
        let vars = declarations(&Ty::Dyn, params.as_ref(), true, &var_types);
        let message_vars = declarations(&Ty::Dyn, params.as_ref(), false, &var_types);
        let match_conditions = policy
            .spec
            .match_conditions
            .iter()
            .map(|m| {
                (
                    m.name.clone(),
                    compile_as(&m.expression, &vars, &[Ty::Bool]),
                )
            })
            .collect();
        let validations = policy
            .spec
            .validations
            .iter()
            .map(|v| CompiledValidation {
                spec: v.clone(),
                expr: compile_as(&v.expression, &vars, &[Ty::Bool]),
                message: (!v.message_expression.is_empty())
                    .then(|| compile_as(&v.message_expression, &message_vars, &[Ty::String])),
            })
            .collect();
        let audit = policy
            .spec
            .audit_annotations
            .iter()
            .map(|a| {
                (
                    a.key.clone(),
                    a.value_expression.clone(),
                    compile_as(&a.value_expression, &vars, &[Ty::String, Ty::Null]),
                )
            })
            .collect();
        CompiledPolicy {
            policy,
            variables,
            variable_index,
            match_conditions,
            validations,
            audit,
        }
    }

    /// The failure policy, `Fail` unless set to `Ignore`.
    pub fn ignores_failures(&self) -> bool {
        self.policy.spec.failure_policy.as_deref() == Some("Ignore")
    }

    /// A fresh scope for the policy's variables, evaluated lazily and once.
    pub fn variables_scope(&self) -> VariablesScope<'_> {
        VariablesScope {
            policy: self,
            cache: (0..self.variables.len()).map(|_| OnceLock::new()).collect(),
        }
    }

    fn error_action(&self) -> Action {
        if self.ignores_failures() {
            Action::Admit
        } else {
            Action::Deny
        }
    }

    fn error_decision(&self, message: String) -> ValidateResult {
        ValidateResult {
            decisions: vec![Decision {
                action: self.error_action(),
                evaluation: Evaluation::Error,
                message,
                reason: String::new(),
                elapsed: Duration::ZERO,
            }],
            audit_annotations: Vec::new(),
        }
    }

    /// Evaluates the match conditions; `Err` is the failure to report under `Fail`.
    pub fn match_conditions(&self, bindings: &Bindings<'_>) -> Result<bool, String> {
        let mut budget = cost::MATCH_CONDITIONS_BUDGET;
        let mut errors = Vec::new();
        for (_, expr) in &self.match_conditions {
            let c = match expr {
                Ok(c) => c,
                Err(e) => {
                    errors.push(format!("compilation error: {e}"));
                    continue;
                }
            };
            let (out, spent) = c.evaluate(bindings, budget, as_bool);
            budget = budget.saturating_sub(spent);
            match out {
                Ok(Some(false)) => return Ok(false),
                Ok(Some(true)) => {}
                Ok(None) => errors.push(format!(
                    "expression '{}' resulted in error: no such overload",
                    c.source
                )),
                Err(EvalError::OutOfBudget) => return Err(OUT_OF_BUDGET.into()),
                Err(EvalError::Failed(e)) => {
                    errors.push(format!("expression '{}' resulted in error: {e}", c.source))
                }
            }
        }
        match errors.len() {
            0 => Ok(true),
            _ if self.ignores_failures() => Ok(false),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// kube's `validator.Validate` for one binding and param.
    pub fn validate(&self, bindings: &Bindings<'_>) -> ValidateResult {
        if !self.match_conditions.is_empty() {
            match self.match_conditions(bindings) {
                Ok(true) => {}
                Ok(false) => return ValidateResult::default(),
                Err(message) => return self.error_decision(message),
            }
        }
        let mut budget = cost::RUNTIME_BUDGET;
        let mut decisions = Vec::with_capacity(self.validations.len());
        for v in &self.validations {
            let c = match &v.expr {
                Ok(c) => c,
                Err(e) => {
                    decisions.push(Decision {
                        action: self.error_action(),
                        evaluation: Evaluation::Error,
                        message: format!("compilation error: {e}"),
                        reason: String::new(),
                        elapsed: Duration::ZERO,
                    });
                    continue;
                }
            };
            let start = Instant::now();
            let (out, spent) = c.evaluate(bindings, budget, as_bool);
            let elapsed = start.elapsed();
            budget = budget.saturating_sub(spent);
            let decision = match out {
                Err(EvalError::OutOfBudget) => return self.error_decision(OUT_OF_BUDGET.into()),
                Err(EvalError::Failed(e)) => Decision {
                    action: self.error_action(),
                    evaluation: Evaluation::Error,
                    message: format!("expression '{}' resulted in error: {e}", c.source),
                    reason: String::new(),
                    elapsed,
                },
                Ok(Some(true)) => Decision {
                    action: Action::Admit,
                    evaluation: Evaluation::Admit,
                    message: String::new(),
                    reason: String::new(),
                    elapsed,
                },
                Ok(_) => match self.failure_message(v, bindings, &mut budget) {
                    Ok(message) => Decision {
                        action: Action::Deny,
                        evaluation: Evaluation::Deny,
                        message,
                        reason: v.spec.reason.clone().unwrap_or_else(|| "Invalid".into()),
                        elapsed,
                    },
                    Err(message) => Decision {
                        action: self.error_action(),
                        evaluation: Evaluation::Error,
                        message,
                        reason: String::new(),
                        elapsed,
                    },
                },
            };
            decisions.push(decision);
        }
        ValidateResult {
            decisions,
            audit_annotations: self.audit_annotations(bindings),
        }
    }

    /// The message of a failed validation: its messageExpression's (trimmed, one line, at
    /// most 5 KiB), else its message, else `failed expression: ...`. `Err` when the message
    /// expression ran out of budget.
    fn failure_message(
        &self,
        v: &CompiledValidation,
        bindings: &Bindings<'_>,
        budget: &mut u64,
    ) -> Result<String, String> {
        let mut message = String::new();
        if let Some(Ok(c)) = &v.message {
            let (out, spent) = c.evaluate(bindings, *budget, |val| {
                val.downcast_ref::<CelString>()
                    .map(|s| s.inner().trim().to_owned())
            });
            *budget = budget.saturating_sub(spent);
            match out {
                Ok(Some(m)) if m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n') => message = m,
                Err(EvalError::OutOfBudget) => {
                    return Err(format!("failed messageExpression: {OUT_OF_BUDGET}"));
                }
                Err(EvalError::Failed(e)) => {
                    tracing::debug!(error = %e, "error while evaluating messageExpression");
                }
                _ => {}
            }
        }
        if message.is_empty() {
            message = v.spec.message.trim().to_owned();
        }
        if message.is_empty() {
            message = format!("failed expression: {}", v.spec.expression.trim());
        }
        Ok(message)
    }

    fn audit_annotations(&self, bindings: &Bindings<'_>) -> Vec<AuditResult> {
        let mut budget = cost::RUNTIME_BUDGET;
        let fail = |message: String| {
            if self.ignores_failures() {
                AuditOutcome::Exclude
            } else {
                AuditOutcome::Error(message)
            }
        };
        let mut out = Vec::with_capacity(self.audit.len());
        for (key, source, expr) in &self.audit {
            let start = Instant::now();
            let outcome = match expr {
                Err(e) => fail(format!("compilation error: {e}")),
                Ok(c) => {
                    let (res, spent) =
                        c.evaluate(bindings, budget, |val| match val.get_type().kind() {
                            Kind::String => Ok(val
                                .downcast_ref::<CelString>()
                                .map(|s| s.inner().trim().to_owned())),
                            Kind::NullType => Ok(None),
                            _ => Err(val.get_type().name().to_owned()),
                        });
                    budget = budget.saturating_sub(spent);
                    match res {
                        Ok(Ok(Some(v))) if !v.is_empty() => AuditOutcome::Publish(v),
                        Ok(Ok(_)) => AuditOutcome::Exclude,
                        Ok(Err(t)) => AuditOutcome::Error(format!(
                            "valueExpression '{source}' resulted in unsupported return type: {t}. Return type must be either string or null."
                        )),
                        Err(EvalError::OutOfBudget) => fail(OUT_OF_BUDGET.into()),
                        Err(EvalError::Failed(e)) => {
                            fail(format!("expression '{source}' resulted in error: {e}"))
                        }
                    }
                }
            };
            out.push(AuditResult {
                key: key.clone(),
                outcome,
                elapsed: start.elapsed(),
            });
        }
        out
    }
}

/// Values bound to names for one evaluation: the admission variables, borrowed.
pub struct Bindings<'a> {
    pub vals: HashMap<&'static str, Box<dyn Val + 'a>>,
    pub variables: Option<VariablesScope<'a>>,
}

impl VariableResolver for Bindings<'_> {
    fn resolve<'b>(&'b self, name: &str) -> Option<CowVal<'b, 'b>> {
        if name == "variables" {
            return self.variables.as_ref().map(|v| {
                CowVal::owned(VariablesVal {
                    bindings: self,
                    scope: v,
                })
            });
        }
        self.vals
            .get(name)
            .map(|v| CowVal::Borrowed(v.as_ref() as &dyn Val))
    }
}

/// An owned copy of a value that may borrow the request (a variable's cached result).
pub fn to_static(v: &dyn Val) -> Option<Box<dyn Val + 'static>> {
    match v.get_type().kind() {
        Kind::NullType
        | Kind::Boolean
        | Kind::Int
        | Kind::UInt
        | Kind::Double
        | Kind::String
        | Kind::Duration
        | Kind::Timestamp
        | Kind::Type => cel::Value::try_from(v).ok()?.try_into().ok(),
        Kind::List => {
            let mut out: Vec<Box<dyn Val>> = Vec::new();
            let mut it = v.as_iterable()?.iter();
            while let Some(x) = it.next() {
                out.push(to_static(x)?);
            }
            Some(Box::new(CelList::from(out)))
        }
        Kind::Map => {
            let mut out = std::collections::HashMap::new();
            let idx = v.as_indexer()?;
            let mut it = v.as_iterable()?.iter();
            while let Some(k) = it.next() {
                let key = cel::common::types::CelMapKey::try_from(to_static(k)?).ok()?;
                out.insert(key, to_static(idx.get(k).ok()?.as_ref())?);
            }
            Some(Box::new(CelMap::from(out)))
        }
        _ => crate::library::to_static_opaque(v),
    }
}

fn as_bool(v: &dyn Val) -> Option<bool> {
    v.downcast_ref::<CelBool>().map(|b| *b.inner())
}

/// The policy's variables for one evaluation: each computed on first use, then kept.
pub struct VariablesScope<'a> {
    policy: &'a CompiledPolicy,
    cache: Vec<OnceLock<Result<Box<dyn Val + 'static>, String>>>,
}

/// The `variables` value of an evaluation.
pub struct VariablesVal<'b, 'a> {
    pub bindings: &'b Bindings<'a>,
    pub scope: &'b VariablesScope<'a>,
}

impl std::fmt::Debug for VariablesVal<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("variables")
    }
}

static VARIABLES_TYPE: Type = Type::new_unspecified_type("kubernetes.variables");

impl<'b, 'a> Val for VariablesVal<'b, 'a> {
    fn get_type(&self) -> &Type {
        &VARIABLES_TYPE
    }

    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }

    fn as_indexer<'c, 'w>(&'c self) -> Option<&'c (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(VariablesVal {
            bindings: self.bindings,
            scope: self.scope,
        })
    }
}

impl<'b, 'a> Indexer for VariablesVal<'b, 'a> {
    fn get<'c, 'w>(&'c self, key: &dyn Val) -> Result<CowVal<'c, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let name = key
            .downcast_ref::<CelString>()
            .map(|s| s.inner().to_owned())
            .unwrap_or_default();
        let Some(&i) = self.scope.policy.variable_index.get(&name) else {
            return Err(ExecutionError::no_such_key(&name));
        };
        let cached = self.scope.cache[i].get_or_init(|| {
            let (_, expr) = &self.scope.policy.variables[i];
            match expr {
                Err(e) => Err(format!(
                    "composited variable \"{name}\" fails to compile: {e}"
                )),
                Ok(c) => match c.evaluate_nested(self.bindings, to_static) {
                    Ok(Some(v)) => Ok(v),
                    Ok(None) => Err(format!(
                        "composited variable \"{name}\" fails to evaluate: unsupported value"
                    )),
                    Err(e) => Err(format!(
                        "composited variable \"{name}\" fails to evaluate: {e}"
                    )),
                },
            }
        });
        match cached {
            Ok(v) => Ok(CowVal::Borrowed(v.as_ref())),
            Err(e) => Err(ExecutionError::FunctionError {
                function: String::new(),
                message: e.clone(),
            }),
        }
    }

    fn steal<'w>(self: Box<Self>, key: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        self.get(key).map(CowVal::into_owned)
    }
}
