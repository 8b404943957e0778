//! controller-runtime's reconcile metrics (`sigs.k8s.io/controller-runtime/pkg/internal/
//! controller/metrics`), which Karmada's controllers built on controller-runtime report per
//! controller name: how many reconciles ended in each result, how many failed, and how long each
//! call of the reconciler took (the queue wait excluded; `workqueue_*` has that).

use std::time::Duration;

use component_base::metrics::{Desc, Kind, global};

/// controller-runtime's reconcile time buckets (seconds).
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

/// `controller_runtime_reconcile_total`.
pub static RECONCILE_TOTAL: Desc = Desc {
    name: "controller_runtime_reconcile_total",
    help: "Total number of reconciliations per controller",
    labels: &["controller", "result"],
    kind: Kind::Counter,
};
/// `controller_runtime_reconcile_errors_total`.
pub static RECONCILE_ERRORS: Desc = Desc {
    name: "controller_runtime_reconcile_errors_total",
    help: "Total number of reconciliation errors per controller",
    labels: &["controller"],
    kind: Kind::Counter,
};
/// `controller_runtime_reconcile_time_seconds`.
pub static RECONCILE_TIME: Desc = Desc {
    name: "controller_runtime_reconcile_time_seconds",
    help: "Length of time per reconciliation per controller",
    labels: &["controller"],
    kind: Kind::Histogram(&RECONCILE_TIME_BUCKETS),
};

/// How a reconcile ended, as controller-runtime labels `result`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done until the object changes again.
    Success,
    /// Asked to run again after a delay.
    RequeueAfter,
    /// Failed; retried with back-off.
    Error,
}

impl Outcome {
    fn label(self) -> &'static str {
        match self {
            Outcome::Success => "success",
            Outcome::RequeueAfter => "requeue_after",
            Outcome::Error => "error",
        }
    }
}

/// Creates a controller's series at zero, as controller-runtime does when the controller starts,
/// so a scrape shows the controller before its first reconcile.
pub fn init(controller: &str) {
    let r = global();
    for outcome in [Outcome::Success, Outcome::RequeueAfter, Outcome::Error] {
        r.add(&RECONCILE_TOTAL, &[controller, outcome.label()], 0.0);
    }
    r.add(&RECONCILE_ERRORS, &[controller], 0.0);
}

/// Records one reconcile of `controller` that took `took` and ended as `outcome`.
pub fn observe(controller: &str, took: Duration, outcome: Outcome) {
    let r = global();
    r.inc(&RECONCILE_TOTAL, &[controller, outcome.label()]);
    if outcome == Outcome::Error {
        r.inc(&RECONCILE_ERRORS, &[controller]);
    }
    r.observe_duration(&RECONCILE_TIME, &[controller], took);
}
