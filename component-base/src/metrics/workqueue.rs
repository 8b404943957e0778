//! client-go's work queue metrics (`k8s.io/component-base/metrics/prometheus/workqueue`), one
//! set per queue name: depth, adds, retries, how long keys wait and how long their processing
//! takes, and — read at each scrape — the work in progress and the longest-running processor.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Collect, Desc, Kind, Registry, exponential_buckets, lock};

const LATENCY_BUCKETS: [f64; 10] = exponential_buckets(10e-9, 10.0);

/// `workqueue_depth`.
pub static DEPTH: Desc = Desc {
    name: "workqueue_depth",
    help: "[BETA] Current depth of workqueue",
    labels: &["name"],
    kind: Kind::Gauge,
};
/// `workqueue_adds_total`.
pub static ADDS: Desc = Desc {
    name: "workqueue_adds_total",
    help: "[BETA] Total number of adds handled by workqueue",
    labels: &["name"],
    kind: Kind::Counter,
};
/// `workqueue_queue_duration_seconds`.
pub static QUEUE_DURATION: Desc = Desc {
    name: "workqueue_queue_duration_seconds",
    help: "[BETA] How long in seconds an item stays in workqueue before being requested.",
    labels: &["name"],
    kind: Kind::Histogram(&LATENCY_BUCKETS),
};
/// `workqueue_work_duration_seconds`.
pub static WORK_DURATION: Desc = Desc {
    name: "workqueue_work_duration_seconds",
    help: "[BETA] How long in seconds processing an item from workqueue takes.",
    labels: &["name"],
    kind: Kind::Histogram(&LATENCY_BUCKETS),
};
/// `workqueue_unfinished_work_seconds`.
pub static UNFINISHED_WORK: Desc = Desc {
    name: "workqueue_unfinished_work_seconds",
    help: "[BETA] How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
    labels: &["name"],
    kind: Kind::Gauge,
};
/// `workqueue_longest_running_processor_seconds`.
pub static LONGEST_RUNNING: Desc = Desc {
    name: "workqueue_longest_running_processor_seconds",
    help: "[BETA] How many seconds has the longest running processor for workqueue been running.",
    labels: &["name"],
    kind: Kind::Gauge,
};
/// `workqueue_retries_total`.
pub static RETRIES: Desc = Desc {
    name: "workqueue_retries_total",
    help: "[BETA] Total number of retries handled by workqueue",
    labels: &["name"],
    kind: Kind::Counter,
};

/// The keys being processed, by a processing id, with when each started.
struct InProgress {
    name: &'static str,
    started: Mutex<HashMap<u64, Instant>>,
}

impl Collect for InProgress {
    fn collect(&self, add: &mut dyn FnMut(&'static Desc, Vec<String>, f64)) {
        let now = Instant::now();
        let (total, longest) = lock(&self.started).values().fold(
            (Duration::ZERO, Duration::ZERO),
            |(total, longest), s| {
                let d = now.saturating_duration_since(*s);
                (total + d, longest.max(d))
            },
        );
        add(
            &UNFINISHED_WORK,
            vec![self.name.to_string()],
            total.as_secs_f64(),
        );
        add(
            &LONGEST_RUNNING,
            vec![self.name.to_string()],
            longest.as_secs_f64(),
        );
    }
}

/// The metrics of one named queue; the queue calls it as keys move.
pub struct QueueMetrics {
    registry: &'static Registry,
    in_progress: Arc<InProgress>,
}

impl std::fmt::Debug for QueueMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueueMetrics")
            .field("name", &self.in_progress.name)
            .finish()
    }
}

impl QueueMetrics {
    /// The metrics of queue `name` in `registry`.
    pub fn new(registry: &'static Registry, name: &'static str) -> QueueMetrics {
        let in_progress = Arc::new(InProgress {
            name,
            started: Mutex::new(HashMap::new()),
        });
        let weak: std::sync::Weak<InProgress> = Arc::downgrade(&in_progress);
        let weak: std::sync::Weak<dyn Collect> = weak;
        registry.register(weak);
        // A queue reports from its creation, as client-go's provider creates the series.
        registry.add(&DEPTH, &[name], 0.0);
        registry.add(&ADDS, &[name], 0.0);
        registry.add(&RETRIES, &[name], 0.0);
        QueueMetrics {
            registry,
            in_progress,
        }
    }

    fn name(&self) -> &'static str {
        self.in_progress.name
    }

    /// A key entered the queue.
    pub fn added(&self) {
        self.registry.inc(&ADDS, &[self.name()]);
        self.registry.add(&DEPTH, &[self.name()], 1.0);
    }

    /// A key that waited `waited` left the queue for processing `id`.
    pub fn taken(&self, id: u64, waited: Duration) {
        self.registry.add(&DEPTH, &[self.name()], -1.0);
        self.registry
            .observe_duration(&QUEUE_DURATION, &[self.name()], waited);
        lock(&self.in_progress.started).insert(id, Instant::now());
    }

    /// Processing `id` ended.
    pub fn done(&self, id: u64) {
        if let Some(started) = lock(&self.in_progress.started).remove(&id) {
            self.registry
                .observe_duration(&WORK_DURATION, &[self.name()], started.elapsed());
        }
    }

    /// A key was queued again after a failure.
    pub fn retried(&self) {
        self.registry.inc(&RETRIES, &[self.name()]);
    }
}
