//! `matchConditions` outside a policy: a webhook's (k8s.io/apiserver
//! pkg/admission/plugin/webhook/matchconditions), compiled in the policies' CEL environment
//! (kube's libraries) over `object`, `oldObject`, `request` and `authorizer`, and evaluated as
//! kube's matcher does: the first false condition decides; errors count only when no
//! condition is false.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::CelBool;
use serde_json::Value;

use crate::Authorizer;
use crate::checker::types::Ty;
use crate::cost;
use crate::environment::{Compiled, EvalError};
use crate::library::authz::{AuthorizerVal, CachingAuthorizer, ResourceCheck};
use crate::request::UserInfo;
use crate::validator::{Bindings, compile_as, request_declarations};
use crate::value::json_to_val;

/// One webhook's conditions, compiled once per configuration change.
#[derive(Default)]
pub struct MatchConditions {
    conditions: Vec<(String, Result<Compiled, String>)>,
}

impl std::fmt::Debug for MatchConditions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.conditions.iter().map(|(n, _)| n))
            .finish()
    }
}

/// What a webhook's conditions decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConditionsOutcome {
    /// Every condition is true (or there are none): call the webhook.
    Match,
    /// This condition is false: skip the webhook.
    NoMatch(String),
    /// No condition is false but one could not be evaluated (the first such, named).
    Error(String),
}

/// authentication/v1 UserInfo JSON (as the AdmissionRequest carries it) as the checks' user.
fn user_info(u: Option<&Value>) -> UserInfo {
    let Some(u) = u else {
        return UserInfo::default();
    };
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    };
    UserInfo {
        username: string_at(u, "/username").to_owned(),
        uid: string_at(u, "/uid").to_owned(),
        groups: strings(u.get("groups")),
        extra: u
            .get("extra")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), strings(Some(v))))
                    .collect()
            })
            .unwrap_or_default(),
    }
}

fn string_at<'v>(v: &'v Value, path: &str) -> &'v str {
    v.pointer(path).and_then(Value::as_str).unwrap_or("")
}

impl MatchConditions {
    /// Compiles `(name, expression)` pairs; a compile error is kept and reported when the
    /// conditions are evaluated, as kube reports it.
    pub fn compile<'a>(conditions: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        // kube's webhook conditions: object, oldObject, request and authorizer.
        let vars = request_declarations(&Ty::Dyn, true);
        let conditions = conditions
            .into_iter()
            .map(|(name, expression)| (name.to_owned(), compile_as(expression, &vars, &[Ty::Bool])))
            .collect();
        MatchConditions { conditions }
    }

    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }

    /// Evaluates the conditions for one request; `request` is the AdmissionRequest JSON (its
    /// `userInfo` and resource are what `authorizer` checks speak of).
    pub fn evaluate(
        &self,
        object: &Value,
        old_object: &Value,
        request: &Value,
        authorizer: Option<&Arc<dyn Authorizer>>,
    ) -> ConditionsOutcome {
        if self.conditions.is_empty() {
            return ConditionsOutcome::Match;
        }
        let mut vals: HashMap<&'static str, Box<dyn cel::common::value::Val + '_>> =
            HashMap::with_capacity(5);
        vals.insert("object", json_to_val(object));
        vals.insert("oldObject", json_to_val(old_object));
        vals.insert("request", json_to_val(request));
        if let Some(a) = authorizer {
            let who = AuthorizerVal {
                authz: Arc::new(CachingAuthorizer::new(a.clone())),
                user: user_info(request.get("userInfo")),
            };
            vals.insert(
                "authorizer.requestResource",
                Box::new(ResourceCheck::for_request(
                    who.clone(),
                    string_at(request, "/resource/group"),
                    string_at(request, "/resource/version"),
                    string_at(request, "/resource/resource"),
                    string_at(request, "/subResource"),
                    string_at(request, "/namespace"),
                    string_at(request, "/name"),
                )),
            );
            vals.insert("authorizer", Box::new(who));
        }
        let bindings = Bindings {
            vals,
            variables: None,
        };
        let mut budget = cost::MATCH_CONDITIONS_BUDGET;
        let mut first_error = None;
        for (name, compiled) in &self.conditions {
            let result = match compiled {
                Err(e) => Err(e.clone()),
                Ok(c) => {
                    let (out, spent) = c.evaluate(&bindings, budget, |v| {
                        v.downcast_ref::<CelBool>().map(|b| *b.inner())
                    });
                    budget = budget.saturating_sub(spent);
                    match out {
                        Ok(Some(b)) => Ok(b),
                        Ok(None) => Err("expected a boolean".to_owned()),
                        Err(EvalError::OutOfBudget) => Err(cost::LIMIT_EXCEEDED.to_owned()),
                        Err(EvalError::Failed(e)) => Err(e),
                    }
                }
            };
            match result {
                Ok(true) => {}
                Ok(false) => return ConditionsOutcome::NoMatch(name.clone()),
                Err(e) => {
                    first_error.get_or_insert_with(|| format!("matchCondition '{name}': {e}"));
                }
            }
        }
        match first_error {
            Some(e) => ConditionsOutcome::Error(e),
            None => ConditionsOutcome::Match,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AuthorizationAttributes, AuthorizationDecision, Verdict};
    use serde_json::json;

    fn run(
        exprs: &[&str],
        obj: Value,
        authorizer: Option<&Arc<dyn Authorizer>>,
    ) -> ConditionsOutcome {
        let names: Vec<String> = (0..exprs.len()).map(|i| format!("c{i}")).collect();
        let conditions =
            MatchConditions::compile(names.iter().map(String::as_str).zip(exprs.iter().copied()));
        let request = json!({
            "operation": "CREATE", "userInfo": {"username": "alice", "groups": ["dev"]},
            "resource": {"group": "apps", "version": "v1", "resource": "deployments"},
            "namespace": "shop", "name": "web",
        });
        conditions.evaluate(&obj, &Value::Null, &request, authorizer)
    }

    #[test]
    fn conditions_decide() {
        let obj = json!({"metadata": {"name": "web", "labels": {"tier": "front"}}, "spec": {"replicas": 3}});
        assert_eq!(run(&[], obj.clone(), None), ConditionsOutcome::Match);
        assert_eq!(
            run(
                &[
                    "object.spec.replicas > 2",
                    "request.userInfo.username == 'alice'"
                ],
                obj.clone(),
                None
            ),
            ConditionsOutcome::Match
        );
        assert_eq!(
            run(
                &[
                    "has(object.metadata.labels.tier)",
                    "object.metadata.name != 'web'"
                ],
                obj.clone(),
                None
            ),
            ConditionsOutcome::NoMatch("c1".into())
        );
        assert_eq!(
            run(
                &["'dev' in request.userInfo.groups", "oldObject == null"],
                obj.clone(),
                None
            ),
            ConditionsOutcome::Match
        );
        // kube's libraries are there, as in policies.
        assert_eq!(
            run(
                &["[3, 1, 2].max() == 3 && quantity('1Gi').isGreaterThan(quantity('1Mi'))"],
                obj,
                None
            ),
            ConditionsOutcome::Match
        );
    }

    #[test]
    fn errors_count_only_without_a_false_condition() {
        let obj = json!({"metadata": {"name": "web"}});
        match run(&["object.spec.replicas > 2"], obj.clone(), None) {
            ConditionsOutcome::Error(e) => assert!(e.starts_with("matchCondition 'c0': "), "{e}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            run(&["object.spec.replicas > 2", "false"], obj.clone(), None),
            ConditionsOutcome::NoMatch("c1".into())
        );
        match run(&["object.metadata.name"], obj, None) {
            ConditionsOutcome::Error(e) => {
                assert!(e.contains("must evaluate to bool but got dyn"), "{e}")
            }
            other => panic!("{other:?}"),
        }
    }

    /// Allows `get` of pods to `alice` only, and records what it was asked.
    struct AliceMayGetPods(std::sync::Mutex<Vec<AuthorizationAttributes>>);

    impl Authorizer for AliceMayGetPods {
        fn authorize(&self, a: &AuthorizationAttributes) -> AuthorizationDecision {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(a.clone());
            let allowed = a.user.username == "alice" && a.verb == "get" && a.resource == "pods";
            AuthorizationDecision {
                verdict: if allowed {
                    Verdict::Allow
                } else {
                    Verdict::NoOpinion
                },
                reason: String::new(),
                error: None,
            }
        }
    }

    #[test]
    fn the_authorizer_is_asked_about_the_requests_user() {
        let asked = Arc::new(AliceMayGetPods(Default::default()));
        let authorizer: Arc<dyn Authorizer> = asked.clone();
        let obj = json!({"metadata": {"name": "web"}});
        let check =
            "authorizer.group('').resource('pods').namespace('shop').check('get').allowed()";
        assert_eq!(
            run(&[check], obj.clone(), Some(&authorizer)),
            ConditionsOutcome::Match
        );
        assert_eq!(
            run(
                &["authorizer.requestResource.check('update').allowed()"],
                obj.clone(),
                Some(&authorizer)
            ),
            ConditionsOutcome::NoMatch("c0".into())
        );
        let seen = asked.0.lock().unwrap_or_else(|p| p.into_inner()).clone();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].resource, "deployments");
        assert_eq!(seen[1].api_group, "apps");
        assert_eq!(seen[1].namespace, "shop");
        assert_eq!(seen[1].name, "web");
        assert_eq!(seen[1].user.groups, ["dev"]);
        // Without an authorizer, a condition using it cannot be evaluated.
        match run(&[check], obj, None) {
            ConditionsOutcome::Error(e) => assert!(e.contains("authorizer"), "{e}"),
            other => panic!("{other:?}"),
        }
    }
}
