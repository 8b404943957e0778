use super::workqueue::{self, QueueMetrics};
use super::*;
use std::time::Instant;

static REQUESTS: Desc = Desc {
    name: "test_requests_total",
    help: "Requests.",
    labels: &["code", "path"],
    kind: Kind::Counter,
};
static TEMPERATURE: Desc = Desc {
    name: "test_temperature",
    help: "Temperature.",
    labels: &[],
    kind: Kind::Gauge,
};
const BOUNDS: [f64; 3] = exponential_buckets(0.001, 10.0);
static LATENCY: Desc = Desc {
    name: "test_latency_seconds",
    help: "Latency.",
    labels: &["result"],
    kind: Kind::Histogram(&BOUNDS),
};

#[test]
fn numbers_are_written_as_go_writes_them() {
    for (v, want) in [
        (0.0, "0"),
        (1.0, "1"),
        (3.5, "3.5"),
        (0.001, "0.001"),
        (0.0001, "0.0001"),
        (1e-8, "1e-08"),
        (100_000.0, "100000"),
        (1_000_000.0, "1e+06"),
        (1_500_000.0, "1.5e+06"),
        (16.384, "16.384"),
        (-2.0, "-2"),
        (f64::INFINITY, "+Inf"),
    ] {
        assert_eq!(go_float(v), want, "{v}");
    }
    assert_eq!(
        exponential_buckets::<4>(0.001, 2.0),
        [0.001, 0.002, 0.004, 0.008]
    );
}

#[test]
fn families_render_in_the_text_format() {
    let r = Registry::default();
    r.inc(&REQUESTS, &["200", "/a"]);
    r.add(&REQUESTS, &["200", "/a"], 2.0);
    r.inc(&REQUESTS, &["500", "/b\"q\""]);
    r.set(&TEMPERATURE, &[], 21.5);
    r.observe(&LATENCY, &["ok"], 0.0005);
    r.observe(&LATENCY, &["ok"], 0.05);
    r.observe(&LATENCY, &["ok"], 7.0);
    assert_eq!(
        r.render(),
        "# HELP test_latency_seconds Latency.\n# TYPE test_latency_seconds histogram\n\
         test_latency_seconds_bucket{result=\"ok\",le=\"0.001\"} 1\n\
         test_latency_seconds_bucket{result=\"ok\",le=\"0.01\"} 1\n\
         test_latency_seconds_bucket{result=\"ok\",le=\"0.1\"} 2\n\
         test_latency_seconds_bucket{result=\"ok\",le=\"+Inf\"} 3\n\
         test_latency_seconds_sum{result=\"ok\"} 7.0505\n\
         test_latency_seconds_count{result=\"ok\"} 3\n\
         # HELP test_requests_total Requests.\n# TYPE test_requests_total counter\n\
         test_requests_total{code=\"200\",path=\"/a\"} 3\n\
         test_requests_total{code=\"500\",path=\"/b\\\"q\\\"\"} 1\n\
         # HELP test_temperature Temperature.\n# TYPE test_temperature gauge\n\
         test_temperature 21.5\n"
    );
    assert_eq!(r.value(&REQUESTS, &["200", "/a"]), Some(3.0));
    r.remove(&REQUESTS, &["200"]);
    assert_eq!(r.value(&REQUESTS, &["200", "/a"]), None);
    assert_eq!(r.value(&REQUESTS, &["500", "/b\"q\""]), Some(1.0));
}

#[test]
fn a_queue_reports_its_keys_and_the_work_in_progress() {
    // A leaked registry: queue metrics hold a `&'static Registry`.
    let r: &'static Registry = Box::leak(Box::default());
    let q = QueueMetrics::new(r, "binding");
    q.added();
    q.added();
    q.taken(1, Duration::from_millis(3));
    q.retried();
    assert_eq!(r.value(&workqueue::DEPTH, &["binding"]), Some(1.0));
    assert_eq!(r.value(&workqueue::ADDS, &["binding"]), Some(2.0));
    assert_eq!(r.value(&workqueue::RETRIES, &["binding"]), Some(1.0));
    assert_eq!(r.value(&workqueue::QUEUE_DURATION, &["binding"]), Some(1.0));
    let text = r.render();
    assert!(
        text.contains("# HELP workqueue_depth [BETA] Current depth of workqueue\n# TYPE workqueue_depth gauge\nworkqueue_depth{name=\"binding\"} 1\n"),
        "{text}"
    );
    assert!(
        text.contains("workqueue_queue_duration_seconds_bucket{name=\"binding\",le=\"0.01\"} 1\n"),
        "{text}"
    );
    let unfinished = |text: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix("workqueue_unfinished_work_seconds{name=\"binding\"} "))
            .and_then(|v| v.parse::<f64>().ok())
    };
    // One key in progress: some work unfinished; once done, none, and one duration observed.
    let deadline = Instant::now() + Duration::from_secs(5);
    while unfinished(&r.render()) == Some(0.0) && Instant::now() < deadline {
        std::thread::yield_now();
    }
    assert!(unfinished(&r.render()).is_some_and(|v| v > 0.0));
    q.done(1);
    assert_eq!(unfinished(&r.render()), Some(0.0));
    assert_eq!(r.value(&workqueue::WORK_DURATION, &["binding"]), Some(1.0));
    // A queue that went away stops reporting its work in progress.
    drop(q);
    assert!(!r.render().contains("workqueue_unfinished_work_seconds{"));
}
