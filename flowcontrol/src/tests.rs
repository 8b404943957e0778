use super::*;
use serde_json::{Value, json};
use std::sync::Arc;

fn digest<'a>(user: &'a str, groups: &'a [String], verb: &'a str) -> RequestDigest<'a> {
    RequestDigest {
        user,
        groups,
        verb,
        api_group: "",
        resource: "configmaps",
        subresource: "",
        namespace: "default",
        path: "/api/v1/namespaces/default/configmaps",
        is_resource_request: true,
    }
}

fn groups(g: &[&str]) -> Vec<String> {
    g.iter().map(|s| s.to_string()).collect()
}

fn fc(server: usize, max_wait: Duration) -> FlowControl {
    FlowControl::new(Config {
        server_concurrency_limit: server,
        max_wait,
    })
}

#[test]
fn requests_are_classified_by_kubes_bootstrap_schemas() {
    let fc = fc(600, Duration::from_secs(15));
    let masters = groups(&["system:masters", "system:authenticated"]);
    let users = groups(&["system:authenticated"]);
    let sas = groups(&["system:serviceaccounts", "system:authenticated"]);
    let controllers = groups(&["system:karmada:controllers", "system:authenticated"]);
    let agents = groups(&["system:karmada:agents", "system:authenticated"]);
    let nodes = groups(&["system:nodes", "system:authenticated"]);
    let class = |d: RequestDigest<'_>| {
        let c = fc.classify(&d);
        (c.flow_schema, c.priority_level)
    };
    let is = |s: &str, l: &str| (s.to_string(), l.to_string());
    assert_eq!(
        class(digest("admin", &masters, "create")),
        is("exempt", "exempt")
    );
    assert_eq!(
        class(digest("alice", &users, "create")),
        is("global-default", "global-default")
    );
    assert_eq!(
        class(digest("system:serviceaccount:default:x", &sas, "list")),
        is("service-accounts", "workload-low")
    );
    assert_eq!(
        class(digest("system:serviceaccount:kube-system:x", &sas, "list")),
        is("kube-system-service-accounts", "workload-high")
    );
    assert_eq!(
        class(digest("ctl", &controllers, "update")),
        is("karmada-controllers", "exempt")
    );
    assert_eq!(
        class(digest("agent", &agents, "update")),
        is("karmada-agents", "system")
    );
    assert_eq!(
        class(digest("n", &nodes, "update")),
        is("system-nodes", "system")
    );
    let lease = RequestDigest {
        api_group: "coordination.k8s.io",
        resource: "leases",
        ..digest("n", &nodes, "update")
    };
    assert_eq!(class(lease), is("system-node-high", "node-high"));
    let anonymous = groups(&["system:unauthenticated"]);
    let probe = RequestDigest {
        path: "/readyz",
        is_resource_request: false,
        ..digest("system:anonymous", &anonymous, "get")
    };
    assert_eq!(class(probe), is("probes", "exempt"));
    // Unauthenticated requests are in neither group's subjects but catch-all's.
    assert_eq!(
        class(digest("system:anonymous", &anonymous, "get")),
        is("global-default", "global-default")
    );
    assert_eq!(fc.classify(&digest("alice", &users, "get")).flow, "alice");
    // kube-controller-manager's flows are its namespaces.
    let kcm = fc.classify(&digest("system:kube-controller-manager", &users, "get"));
    assert_eq!(
        (kcm.flow_schema.as_str(), kcm.flow.as_str()),
        ("kube-controller-manager", "default")
    );
}

#[test]
fn limits_follow_kubes_nominal_shares() {
    let fc = fc(600, Duration::from_secs(15));
    // ceil(600 × shares / 245), as kube's bootstrap configuration gives.
    for (level, seats) in [
        ("system", 74),
        ("node-high", 98),
        ("leader-election", 25),
        ("workload-high", 98),
        ("workload-low", 245),
        ("global-default", 49),
        ("catch-all", 13),
        ("exempt", 0),
    ] {
        assert_eq!(fc.limit(level), Some(seats), "{level}");
    }
}

fn level(name: &str, shares: u64, queuing: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares, "limitResponse": queuing}}})
}

fn schema(name: &str, level: &str, precedence: i32, user: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "distinguisherMethod": {"type": "ByUser"},
        "rules": [{"subjects": [{"kind": "User", "user": {"name": user}}],
                   "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                      "namespaces": ["*"], "clusterScope": true}]}]}})
}

/// A configuration of one level `tiny` (1 share, next to catch-all's mandatory 5) for every
/// user, queued as given.
fn tiny(queuing: Value) -> Configuration {
    Configuration::from_objects(
        &[schema("everyone", "tiny", 100, "*")],
        &[level("tiny", 1, queuing)],
    )
}

fn waiting(fc: &FlowControl, level: &str) -> usize {
    fc.current().levels[level]
        .lock()
        .queues
        .iter()
        .map(|q| q.waiting.len())
        .sum()
}

async fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited too long for {what}"
        );
        tokio::task::yield_now().await;
    }
}

/// A noisy flow fills its own queue; a quiet flow's request gets the next free seat.
#[tokio::test]
async fn a_noisy_flow_cannot_starve_a_quiet_one() {
    let fc = Arc::new(fc(5, Duration::from_secs(30)));
    fc.apply(tiny(
        json!({"type": "Queue", "queuing": {"queues": 64, "handSize": 1, "queueLengthLimit": 3}}),
    ));
    // ceil(5 × 1 / 6) = 1 seat.
    assert_eq!(fc.limit("tiny"), Some(1));
    let users = groups(&["system:authenticated"]);
    let noisy = fc.classify(&digest("noisy", &users, "get"));
    let quiet = fc.classify(&digest("quiet", &users, "get"));
    assert_eq!(noisy.priority_level, "tiny");
    let held = fc.admit(&noisy).await.expect("the only seat");
    // Three noisy requests queue, the fourth is rejected: its queue is full.
    let mut queued = Vec::new();
    for _ in 0..3 {
        let (fc, c) = (fc.clone(), noisy.clone());
        queued.push(tokio::spawn(async move { fc.admit(&c).await.is_ok() }));
    }
    until("3 waiting", || waiting(&fc, "tiny") == 3).await;
    assert_eq!(fc.admit(&noisy).await.err(), Some(Rejection::QueueFull));
    // The quiet flow queues behind one noisy request only: the turns alternate.
    let q = {
        let (fc, c) = (fc.clone(), quiet.clone());
        tokio::spawn(async move { fc.admit(&c).await.is_ok() })
    };
    until("the quiet request waiting", || waiting(&fc, "tiny") == 4).await;
    let turn = fc.current().levels["tiny"].lock().turn.len();
    assert_eq!(turn, 2, "the flows have queues of their own");
    let dump = fc.dump_requests();
    assert!(
        dump.contains("tiny,") && dump.contains("everyone,") && dump.contains("quiet,"),
        "{dump}"
    );
    drop(held);
    // Seats pass one by one, the flows taking turns; every queued request is admitted.
    for w in queued {
        assert!(w.await.expect("task"));
    }
    assert!(q.await.expect("task"));
    let mut text = String::new();
    fc.render_metrics(&mut text);
    assert!(text.contains("apiserver_flowcontrol_rejected_requests_total{flow_schema=\"everyone\",priority_level=\"tiny\",reason=\"queue-full\"} 1"), "{text}");
    assert!(text.contains("apiserver_flowcontrol_dispatched_requests_total{flow_schema=\"everyone\",priority_level=\"tiny\"} 5"), "{text}");
    assert!(text.contains("apiserver_flowcontrol_current_executing_requests{flow_schema=\"everyone\",priority_level=\"tiny\"} 0"), "{text}");
    assert!(
        text.contains("apiserver_flowcontrol_nominal_limit_seats{priority_level=\"tiny\"} 1"),
        "{text}"
    );
    let levels = fc.dump_priority_levels();
    let row = levels
        .lines()
        .find(|l| l.starts_with("tiny,"))
        .expect(&levels);
    let cells: Vec<&str> = row.split(',').map(str::trim).collect();
    assert_eq!(
        cells,
        ["tiny", "0", "true", "false", "0", "0", "5", "1", "0", "0"],
        "{levels}"
    );
}

#[tokio::test]
async fn a_rejecting_level_answers_at_once() {
    let fc = fc(5, Duration::from_secs(30));
    fc.apply(tiny(json!({"type": "Reject"})));
    let c = fc.classify(&digest("u", &[], "get"));
    let _held = fc.admit(&c).await.expect("seat");
    assert_eq!(fc.admit(&c).await.err(), Some(Rejection::ConcurrencyLimit));
}

/// A request in neither `system:authenticated` nor `system:unauthenticated` matches no schema
/// (not even catch-all's); it still gets catch-all's seats, as kube's controller gives it.
#[tokio::test]
async fn a_request_no_schema_matches_takes_catch_alls_seats() {
    let fc = fc(600, Duration::from_secs(30));
    let c = fc.classify(&digest(
        "system:bootstrap:abcdef",
        &groups(&["system:bootstrappers"]),
        "create",
    ));
    assert_eq!(
        (c.flow_schema.as_str(), c.priority_level.as_str()),
        ("catch-all", "catch-all")
    );
    let seats = fc.limit("catch-all").expect("catch-all level");
    assert!(seats > 0, "catch-all has seats: {seats}");
    let mut held = Vec::new();
    for _ in 0..seats {
        held.push(fc.admit(&c).await.expect("a catch-all seat"));
    }
    assert_eq!(fc.admit(&c).await.err(), Some(Rejection::ConcurrencyLimit));
}

#[tokio::test]
async fn a_request_waiting_too_long_is_rejected_and_leaves_its_queue() {
    let fc = fc(5, Duration::from_millis(50));
    fc.apply(tiny(
        json!({"type": "Queue", "queuing": {"queues": 4, "handSize": 2, "queueLengthLimit": 10}}),
    ));
    let _held = fc
        .admit(&fc.classify(&digest("a", &[], "get")))
        .await
        .expect("seat");
    let b = fc.classify(&digest("b", &[], "get"));
    assert_eq!(fc.admit(&b).await.err(), Some(Rejection::TimeOut));
    let running = fc.current();
    let level = running.levels["tiny"].lock();
    assert!(level.queues.iter().all(|q| q.waiting.is_empty()) && level.turn.is_empty());
    assert_eq!((level.executing, level.timed_out), (1, 1));
}

#[tokio::test]
async fn exempt_requests_are_never_limited() {
    let fc = fc(1, Duration::from_millis(1));
    let admin = fc.classify(&digest("admin", &groups(&["system:masters"]), "get"));
    let mut held = Vec::new();
    for _ in 0..100 {
        held.push(fc.admit(&admin).await.expect("exempt"));
    }
    assert_eq!(held.len(), 100);
}

/// Users' objects take over: a schema of higher precedence sends a user elsewhere, shares
/// are recomputed, and a schema naming a missing level is ignored.
#[test]
fn applied_objects_change_classification_and_seats() {
    let fc = fc(600, Duration::from_secs(15));
    let mut cfg = bootstrap::configuration();
    let users = groups(&["system:authenticated"]);
    cfg.flow_schemas
        .push(FlowSchema::from_object(&schema("alice", "tiny", 50, "alice")).expect("fs"));
    cfg.flow_schemas
        .push(FlowSchema::from_object(&schema("dangling", "nowhere", 10, "bob")).expect("fs"));
    cfg.priority_levels.push(
        PriorityLevel::from_object(&level("tiny", 5, json!({"type": "Reject"}))).expect("pl"),
    );
    fc.apply(cfg);
    assert_eq!(
        fc.classify(&digest("alice", &users, "get")).priority_level,
        "tiny"
    );
    assert_eq!(
        fc.classify(&digest("bob", &users, "get")).priority_level,
        "global-default"
    );
    // 250 shares in all now.
    assert_eq!(fc.limit("tiny"), Some(12));
    assert_eq!(fc.limit("workload-low"), Some(240));
    // Without any objects the mandatory ones stand in.
    fc.apply(Configuration::default());
    assert_eq!(
        fc.classify(&digest("alice", &users, "get")).priority_level,
        "catch-all"
    );
    assert_eq!(fc.limit("catch-all"), Some(600));
    assert_eq!(fc.limit("tiny"), None);
}

/// A waiting request that goes away leaves its queue; one granted a seat it can no longer
/// use hands it on.
#[tokio::test]
async fn cancelled_waiters_leave_no_trace() {
    let fc = Arc::new(fc(5, Duration::from_secs(30)));
    fc.apply(tiny(
        json!({"type": "Queue", "queuing": {"queues": 4, "handSize": 2, "queueLengthLimit": 10}}),
    ));
    let held = fc
        .admit(&fc.classify(&digest("a", &[], "get")))
        .await
        .expect("seat");
    let w = {
        let fc2 = fc.clone();
        let c = fc.classify(&digest("b", &[], "get"));
        tokio::spawn(async move { fc2.admit(&c).await.is_ok() })
    };
    until("b waiting", || waiting(&fc, "tiny") == 1).await;
    w.abort();
    let _ = w.await;
    {
        let running = fc.current();
        let l = running.levels["tiny"].lock();
        assert!(l.queues.iter().all(|q| q.waiting.is_empty()) && l.turn.is_empty());
        assert_eq!(l.cancelled, 1);
    }
    drop(held);
    assert_eq!(fc.current().levels["tiny"].lock().executing, 0);
    // The level is usable again at once.
    let _again = fc
        .admit(&fc.classify(&digest("c", &[], "get")))
        .await
        .expect("seat");
}

#[test]
fn hands_are_distinct_queues() {
    for key in [0u64, 1, 12345, u64::MAX] {
        let mut hand = deal(key, 8, 8);
        hand.sort_unstable();
        assert_eq!(hand, (0..8).collect::<Vec<_>>(), "{key}");
        assert_eq!(deal(key, 128, 6).len(), 6);
    }
    // With every queue empty the first card is picked.
    let l = Level::new(
        1,
        Some(LimitResponse::Queue {
            queues: 64,
            hand_size: 6,
            queue_length_limit: 1,
        }),
    );
    assert_eq!(l.pick_queue(99), deal(99, 64, 6).first().copied());
}
