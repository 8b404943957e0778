//! kube's validating admission policy metrics (pkg/admission/plugin/policy/validating/metrics):
//! `apiserver_validating_admission_policy_check_total` and
//! `apiserver_validating_admission_policy_check_duration_seconds`, labelled by policy,
//! binding, error type and enforcement action.

use std::time::Duration;

use component_base::metrics::{Desc, Kind, Registry};

use crate::validator::{Decision, Evaluation, OUT_OF_BUDGET};

/// In the order client_golang writes them (sorted by name).
const LABELS: &[&str] = &[
    "enforcement_action",
    "error_type",
    "policy",
    "policy_binding",
];

pub static CHECK_TOTAL: Desc = Desc {
    name: "apiserver_validating_admission_policy_check_total",
    help: "[BETA] Validation admission policy check total, labeled by policy and further identified by binding and enforcement action taken.",
    labels: LABELS,
    kind: Kind::Counter,
};

pub static CHECK_DURATION: Desc = Desc {
    name: "apiserver_validating_admission_policy_check_duration_seconds",
    help: "[BETA] Validation admission latency for individual validation expressions in seconds, labeled by policy and further including binding and enforcement action taken.",
    labels: LABELS,
    kind: Kind::Histogram(&[0.0000005, 0.001, 0.01, 0.1, 1.0]),
};

/// kube's `ErrorType` of a decision.
pub fn error_type(d: &Decision) -> &'static str {
    if d.evaluation == Evaluation::Admit {
        "no_error"
    } else if d.message.starts_with("compilation") {
        "compile_error"
    } else if d.message.starts_with(OUT_OF_BUDGET) {
        "out_of_budget"
    } else {
        "invalid_error"
    }
}

/// Counts one check and its latency.
pub fn observe(
    registry: &Registry,
    elapsed: Duration,
    policy: &str,
    binding: &str,
    error_type: &str,
    action: &str,
) {
    let labels = [action, error_type, policy, binding];
    registry.inc(&CHECK_TOTAL, &labels);
    registry.observe_duration(&CHECK_DURATION, &labels, elapsed);
}
