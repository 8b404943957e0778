//! `matchConditions` (k8s.io/apiserver pkg/admission/plugin/webhook/matchconditions): CEL
//! expressions over the request that must all be true for a webhook to be called.
//!
//! The variables are kube's: `object`, `oldObject` (null where the operation has none) and
//! `request` (the AdmissionRequest: `kind`, `resource`, `subResource`, `requestKind`,
//! `requestResource`, `name`, `namespace`, `operation`, `userInfo`, `dryRun`, `options`).
//! kube's `authorizer` variable is not offered: an expression naming it fails to evaluate, and
//! the webhook is then handled by its failurePolicy.

use std::sync::Arc;

use serde_json::Value;

/// One compiled condition.
pub struct Condition {
    /// Its name (unique within the webhook).
    pub name: String,
    program: Result<cel::Program, String>,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condition")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The CEL environment of the conditions (the standard library, its `matches` over cached
/// patterns).
fn env() -> Arc<cel::Env> {
    static ENV: std::sync::OnceLock<Arc<cel::Env>> = std::sync::OnceLock::new();
    ENV.get_or_init(|| {
        let mut env = cel::Env::stdlib();
        admission_policy::library::regex::register_matches(&mut env)
            .unwrap_or_else(|e| panic!("CEL's matches: {e}"));
        Arc::new(env)
    })
    .clone()
}

impl Condition {
    /// Compiles a condition; a compile error is kept and reported when it is evaluated.
    pub fn compile(name: &str, expression: &str) -> Condition {
        let program = env()
            .compile(expression)
            .map_err(|e| format!("compilation failed: {e}"));
        Condition {
            name: name.to_string(),
            program,
        }
    }
}

/// Why the conditions could not decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The outcome of a webhook's conditions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every condition is true (or there are none): call the webhook.
    Match,
    /// This condition is false: skip the webhook.
    NoMatch(String),
    /// No condition is false but one could not be evaluated.
    Error(EvalError),
}

/// Evaluates `conditions` in order, as kube does: the first false one decides; errors count
/// only when no condition is false.
pub fn evaluate(
    conditions: &[Condition],
    object: &Value,
    old_object: &Value,
    request: &Value,
) -> Outcome {
    if conditions.is_empty() {
        return Outcome::Match;
    }
    let to_cel = |v: &Value| cel::to_value(v).unwrap_or(cel::Value::Null);
    let env = env();
    let mut ctx = cel::Context::with_env(env);
    ctx.add_variable_from_value("object", to_cel(object));
    ctx.add_variable_from_value("oldObject", to_cel(old_object));
    ctx.add_variable_from_value("request", to_cel(request));
    let mut first_error = None;
    for c in conditions {
        let result = match &c.program {
            Err(e) => Err(e.clone()),
            Ok(p) => match p.execute(&ctx) {
                Ok(cel::Value::Bool(b)) => Ok(b),
                Ok(other) => Err(format!("expected a boolean, got {:?}", other.type_of())),
                Err(e) => Err(e.to_string()),
            },
        };
        match result {
            Ok(true) => {}
            Ok(false) => return Outcome::NoMatch(c.name.clone()),
            Err(e) => {
                first_error
                    .get_or_insert_with(|| EvalError(format!("matchCondition '{}': {e}", c.name)));
            }
        }
    }
    match first_error {
        Some(e) => Outcome::Error(e),
        None => Outcome::Match,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(exprs: &[&str], obj: Value) -> Outcome {
        let conds: Vec<Condition> = exprs
            .iter()
            .enumerate()
            .map(|(i, e)| Condition::compile(&format!("c{i}"), e))
            .collect();
        let request =
            json!({"operation": "CREATE", "userInfo": {"username": "alice", "groups": ["dev"]}});
        evaluate(&conds, &obj, &Value::Null, &request)
    }

    #[test]
    fn conditions_decide() {
        let obj = json!({"metadata": {"name": "web", "labels": {"tier": "front"}}, "spec": {"replicas": 3}});
        assert_eq!(run(&[], obj.clone()), Outcome::Match);
        assert_eq!(
            run(
                &[
                    "object.spec.replicas > 2",
                    "request.userInfo.username == 'alice'"
                ],
                obj.clone()
            ),
            Outcome::Match
        );
        assert_eq!(
            run(
                &[
                    "has(object.metadata.labels.tier)",
                    "object.metadata.name != 'web'"
                ],
                obj.clone()
            ),
            Outcome::NoMatch("c1".into())
        );
        assert_eq!(
            run(
                &["'dev' in request.userInfo.groups", "oldObject == null"],
                obj.clone()
            ),
            Outcome::Match
        );
    }

    #[test]
    fn errors_count_only_without_a_false_condition() {
        let obj = json!({"metadata": {"name": "web"}});
        match run(&["object.spec.replicas > 2"], obj.clone()) {
            Outcome::Error(e) => assert!(e.0.starts_with("matchCondition 'c0': "), "{e}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            run(&["object.spec.replicas > 2", "false"], obj.clone()),
            Outcome::NoMatch("c1".into())
        );
        match run(
            &["authorizer.group('').resource('pods').check('get').allowed()"],
            obj.clone(),
        ) {
            Outcome::Error(e) => assert!(e.0.contains("authorizer"), "{e}"),
            other => panic!("{other:?}"),
        }
        match run(&["object.metadata.name"], obj) {
            Outcome::Error(e) => assert!(e.0.contains("expected a boolean"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
