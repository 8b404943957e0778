//! kube's webhook admission series (k8s.io/apiserver pkg/admission/metrics), recorded into the
//! process registry that `/metrics` renders.

use std::time::Duration;

use component_base::metrics::{Desc, Kind, global};

const WEBHOOK_BUCKETS: [f64; 8] = [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10.0, 25.0];
const CONDITION_BUCKETS: [f64; 6] = [0.0000005, 0.000001, 0.00001, 0.0001, 0.001, 0.01];

/// `apiserver_admission_webhook_admission_duration_seconds`.
pub static DURATION: Desc = Desc {
    name: "apiserver_admission_webhook_admission_duration_seconds",
    help: "[STABLE] Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).",
    labels: &["name", "operation", "rejected", "type"],
    kind: Kind::Histogram(&WEBHOOK_BUCKETS),
};

/// `apiserver_admission_webhook_request_total`.
pub static REQUESTS: Desc = Desc {
    name: "apiserver_admission_webhook_request_total",
    help: "[ALPHA] Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
    labels: &["code", "name", "operation", "rejected", "type"],
    kind: Kind::Counter,
};

/// `apiserver_admission_webhook_rejection_count`.
pub static REJECTIONS: Desc = Desc {
    name: "apiserver_admission_webhook_rejection_count",
    help: "[ALPHA] Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.",
    labels: &["error_type", "name", "operation", "rejection_code", "type"],
    kind: Kind::Counter,
};

/// `apiserver_admission_webhook_fail_open_count`.
pub static FAIL_OPEN: Desc = Desc {
    name: "apiserver_admission_webhook_fail_open_count",
    help: "[ALPHA] Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).",
    labels: &["name", "type"],
    kind: Kind::Counter,
};

/// `apiserver_admission_match_condition_evaluation_errors_total`.
pub static CONDITION_ERRORS: Desc = Desc {
    name: "apiserver_admission_match_condition_evaluation_errors_total",
    help: "[ALPHA] Admission match condition evaluation errors count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit).",
    labels: &["kind", "name", "operation", "type"],
    kind: Kind::Counter,
};

/// `apiserver_admission_match_condition_exclusions_total`.
pub static CONDITION_EXCLUSIONS: Desc = Desc {
    name: "apiserver_admission_match_condition_exclusions_total",
    help: "[ALPHA] Admission match condition evaluation exclusions count, identified by name of resource containing the match condition and broken out for each kind containing matchConditions (webhook or policy), operation and admission type (validate or admit).",
    labels: &["kind", "name", "operation", "type"],
    kind: Kind::Counter,
};

/// `apiserver_admission_match_condition_evaluation_seconds`.
pub static CONDITION_DURATION: Desc = Desc {
    name: "apiserver_admission_match_condition_evaluation_seconds",
    help: "[ALPHA] Admission match condition evaluation time in seconds, identified by name and broken out for each kind containing matchConditions (webhook or policy), operation and type (validate or admit).",
    labels: &["kind", "name", "operation", "type"],
    kind: Kind::Histogram(&CONDITION_BUCKETS),
};

fn flag(b: bool) -> &'static str {
    if b { "true" } else { "false" }
}

/// One call's latency and outcome (`code`: the webhook's HTTP status, 0 without an answer).
pub fn observe_call(name: &str, ty: &str, op: &str, rejected: bool, code: u16, took: Duration) {
    let r = global();
    r.observe_duration(&DURATION, &[name, op, flag(rejected), ty], took);
    let code = code.min(600).to_string();
    r.inc(&REQUESTS, &[&code, name, op, flag(rejected), ty]);
}

/// Why a webhook rejected a request: `calling_webhook_error`, `apiserver_internal_error` or
/// `no_error` (a denial), with the denial's code.
pub fn observe_rejection(name: &str, ty: &str, op: &str, error_type: &str, code: u16) {
    let code = code.min(600).to_string();
    global().inc(&REJECTIONS, &[error_type, name, op, &code, ty]);
}

/// A webhook that failed with `failurePolicy: Ignore`.
pub fn observe_fail_open(name: &str, ty: &str) {
    global().inc(&FAIL_OPEN, &[name, ty]);
}

/// One evaluation of a webhook's matchConditions.
pub fn observe_conditions(
    name: &str,
    ty: &str,
    op: &str,
    excluded: bool,
    error: bool,
    took: Duration,
) {
    let r = global();
    let labels = ["webhook", name, op, ty];
    r.observe_duration(&CONDITION_DURATION, &labels, took);
    if excluded {
        r.inc(&CONDITION_EXCLUSIONS, &labels);
    }
    if error {
        r.inc(&CONDITION_ERRORS, &labels);
    }
}
