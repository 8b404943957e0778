//! karmada-webhook's ClusterTaintPolicy validation (pkg/webhook/clustertaintpolicy): NoExecute
//! taints only when the administrator allows them, no duplicate key and effect. Beyond
//! Karmada, operators and effects it would silently ignore are refused as unsupported.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{AdmissionError, Operation, Webhooks};
use crate::field::{FieldError, FieldPath};
use crate::policy::v1alpha1::{ClusterTaintPolicy, MATCH_CONDITION_OPERATORS, MatchCondition};

/// The webhook's name in Karmada's ValidatingWebhookConfiguration.
const WEBHOOK: &str = "clustertaintpolicy.karmada.io";

/// Taint effects a cluster taint may have (corev1.TaintEffect).
const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];

/// `--allow-no-execute-taint-policy` of karmada-webhook (default false). One process serves
/// one control plane, so the flag is process-wide, set once at startup.
static ALLOW_NO_EXECUTE: AtomicBool = AtomicBool::new(false);

/// Sets `--allow-no-execute-taint-policy`.
pub fn set_allow_no_execute_taint_policy(allow: bool) {
    ALLOW_NO_EXECUTE.store(allow, Ordering::Relaxed);
}

/// Whether ClusterTaintPolicies may carry NoExecute taints.
pub fn allow_no_execute_taint_policy() -> bool {
    ALLOW_NO_EXECUTE.load(Ordering::Relaxed)
}

fn validate_conditions(list: &[MatchCondition], path: &FieldPath, errors: &mut Vec<FieldError>) {
    for (i, c) in list.iter().enumerate() {
        if !MATCH_CONDITION_OPERATORS.contains(&c.operator.as_str()) {
            errors.push(FieldError::not_supported(
                path.index(i).child("operator").as_str(),
                c.operator.clone(),
                MATCH_CONDITION_OPERATORS,
            ));
        }
    }
}

/// validatePolicySpec.
pub(crate) fn validate(policy: &ClusterTaintPolicy, allow_no_execute: bool) -> Vec<FieldError> {
    let spec = FieldPath::new("spec");
    let mut errors = Vec::new();
    let taints = spec.child("taints");
    for (i, t) in policy.spec.taints.iter().enumerate() {
        if !EFFECTS.contains(&t.effect.as_str()) {
            errors.push(FieldError::not_supported(
                taints.index(i).child("effect").as_str(),
                t.effect.clone(),
                EFFECTS,
            ));
        }
        if !allow_no_execute && t.effect == "NoExecute" {
            errors.push(FieldError::forbidden(
                taints.index(i).as_str(),
                "Configuring taint with NoExecute effect is not allowed, this capability must be explicitly enabled by administrators through command-line flags",
            ));
        }
        if policy.spec.taints[i + 1..]
            .iter()
            .any(|o| o.key == t.key && o.effect == t.effect)
        {
            errors.push(FieldError::duplicate(
                taints.index(i).as_str(),
                format!(
                    "Duplicate taint with the same key({}) and effect({}) is not allowed",
                    t.key, t.effect
                ),
            ));
        }
    }
    validate_conditions(
        &policy.spec.add_on_conditions,
        &spec.child("addOnConditions"),
        &mut errors,
    );
    validate_conditions(
        &policy.spec.remove_on_conditions,
        &spec.child("removeOnConditions"),
        &mut errors,
    );
    errors
}

/// Karmada registers only a validating webhook for ClusterTaintPolicy.
impl Webhooks for ClusterTaintPolicy {
    const VALIDATES: bool = true;

    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        let errors = validate(self, allow_no_execute_taint_policy());
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AdmissionError::denied_fields(WEBHOOK, errors))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::v1alpha1::{ClusterTaintPolicySpec, PolicyTaint};

    fn policy(taints: &[(&str, &str)], op: &str) -> ClusterTaintPolicy {
        ClusterTaintPolicy {
            spec: ClusterTaintPolicySpec {
                taints: taints
                    .iter()
                    .map(|(k, e)| PolicyTaint {
                        key: (*k).into(),
                        effect: (*e).into(),
                        value: String::new(),
                    })
                    .collect(),
                add_on_conditions: vec![MatchCondition {
                    condition_type: "Ready".into(),
                    operator: op.into(),
                    status_values: vec!["False".into()],
                }],
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn no_execute_needs_the_flag() {
        let p = policy(&[("a", "NoExecute")], "In");
        assert_eq!(
            messages(&validate(&p, false)),
            [
                "spec.taints[0]: Forbidden: Configuring taint with NoExecute effect is not allowed, this capability must be explicitly enabled by administrators through command-line flags"
            ]
        );
        assert!(validate(&p, true).is_empty());
    }

    #[test]
    fn duplicates_and_unsupported_values() {
        let p = policy(
            &[("a", "NoSchedule"), ("a", "NoSchedule"), ("b", "Sometimes")],
            "Maybe",
        );
        assert_eq!(
            messages(&validate(&p, false)),
            [
                "spec.taints[0]: Duplicate value: \"Duplicate taint with the same key(a) and effect(NoSchedule) is not allowed\"",
                "spec.taints[2].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "spec.addOnConditions[0].operator: Unsupported value: \"Maybe\": supported values: \"In\", \"NotIn\"",
            ]
        );
    }
}
