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
        assert_eq!(fc.nominal_limit(level), Some(seats), "{level}");
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
    assert_eq!(fc.nominal_limit("tiny"), Some(1));
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
    let seats = fc.current_limit("catch-all").expect("catch-all level");
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
    assert_eq!(fc.nominal_limit("tiny"), Some(12));
    assert_eq!(fc.nominal_limit("workload-low"), Some(240));
    // Without any objects the mandatory ones stand in.
    fc.apply(Configuration::default());
    assert_eq!(
        fc.classify(&digest("alice", &users, "get")).priority_level,
        "catch-all"
    );
    assert_eq!(fc.nominal_limit("catch-all"), Some(600));
    assert_eq!(fc.nominal_limit("tiny"), None);
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
        SeatLimits::default(),
        Some(LimitResponse::Queue {
            queues: 64,
            hand_size: 6,
            queue_length_limit: 1,
        }),
        Clock::default(),
    );
    assert_eq!(l.pick_queue(99), deal(99, 64, 6).first().copied());
}

/// With no demand anywhere, each level's target is what it does not lend, and the server's
/// seats are shared in proportion: 602 nominal seats over 258.001 of targets, p ≈ 2.333.
#[test]
fn idle_bootstrap_levels_share_the_seats_the_lenders_lend() {
    let fc = fc(600, Duration::from_secs(15));
    for (level, nominal, min, current) in [
        ("system", 74, 50, 117),
        ("node-high", 98, 73, 170),
        ("leader-election", 25, 25, 58),
        ("workload-high", 98, 49, 114),
        ("workload-low", 245, 24, 56),
        ("global-default", 49, 24, 56),
        ("catch-all", 13, 13, 30),
        ("exempt", 0, 0, 0),
    ] {
        let running = fc.current();
        let l = running.levels[level].lock();
        assert_eq!(
            (l.seats.nominal, l.seats.min, l.seats.max, l.limit),
            (nominal, min, nominal + 600, current),
            "{level}"
        );
    }
    let mut text = String::new();
    fc.render_metrics(&mut text);
    for line in [
        "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"exempt\"} 0",
        "apiserver_flowcontrol_lower_limit_seats{priority_level=\"workload-low\"} 24",
        "apiserver_flowcontrol_upper_limit_seats{priority_level=\"workload-low\"} 845",
        "apiserver_flowcontrol_current_limit_seats{priority_level=\"catch-all\"} 30",
        "apiserver_flowcontrol_target_seats{priority_level=\"catch-all\"} 13",
        "apiserver_flowcontrol_demand_seats_smoothed{priority_level=\"catch-all\"} 0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
    let frac: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("apiserver_flowcontrol_seat_fair_frac "))
        .expect("fair fraction")
        .parse()
        .expect("a number");
    assert!((frac - 602.0 / 258.001).abs() < 1e-9, "{frac}");
}

fn level_with(name: &str, shares: u64, lendable: u64, borrowing: u64) -> Value {
    json!({"metadata": {"name": name}, "spec": {"type": "Limited", "limited": {
        "nominalConcurrencyShares": shares, "lendablePercent": lendable,
        "borrowingLimitPercent": borrowing,
        "limitResponse": {"type": "Queue",
                          "queuing": {"queues": 1, "handSize": 1, "queueLengthLimit": 50}}}}})
}

fn executing_and_waiting(fc: &FlowControl, level: &str) -> (usize, usize) {
    let running = fc.current();
    let l = running.levels[level].lock();
    (l.executing, l.waiting)
}

/// `n` requests of `user` admitted or queued (each task ends with its seat, held until the
/// task's result is dropped).
fn requests(
    fc: &Arc<FlowControl>,
    user: &str,
    n: usize,
) -> tokio::task::JoinSet<Result<Seat, Rejection>> {
    let c = fc.classify(&digest(user, &[], "get"));
    let mut set = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (fc, c) = (fc.clone(), c.clone());
        set.spawn(async move { fc.admit(&c).await });
    }
    set
}

/// A busy level borrows the seats an idle one lends after an adjustment period, and the
/// lender gets its seats back as soon as it has the demand for them.
#[tokio::test]
async fn a_busy_level_borrows_from_an_idle_one_and_gives_back() {
    let clock = Clock::manual();
    let fc = Arc::new(FlowControl::with_clock(
        Config {
            server_concurrency_limit: 25,
            max_wait: Duration::from_secs(60),
        },
        clock.clone(),
    ));
    // busy: 10 nominal seats, lends none, may borrow 10; lender: 10 seats, lends them all,
    // borrows none; catch-all (mandatory): 5 seats, lends none.
    fc.apply(Configuration::from_objects(
        &[
            schema("busy", "busy", 100, "b"),
            schema("lender", "lender", 100, "l"),
        ],
        &[
            level_with("busy", 10, 0, 100),
            level_with("lender", 10, 100, 0),
        ],
    ));
    let seats = |level| {
        let running = fc.current();
        let l = running.levels[level].lock();
        (l.seats.nominal, l.seats.min, l.seats.max)
    };
    assert_eq!(
        (seats("busy"), seats("lender"), seats("catch-all")),
        ((10, 10, 20), (10, 0, 10), (5, 5, 30))
    );
    // Idle, busy and catch-all keep their 15 seats in proportion to 25: p = 25 / 15.002.
    let current = |level| fc.current_limit(level).expect("level");
    assert_eq!(
        (current("busy"), current("lender"), current("catch-all")),
        (17, 0, 8)
    );
    // 30 requests at busy: 17 execute, 13 wait.
    let mut busy = requests(&fc, "b", 30);
    until("13 waiting at busy", || {
        executing_and_waiting(&fc, "busy") == (17, 13)
    })
    .await;
    clock.advance(BORROWING_ADJUSTMENT_PERIOD);
    fc.update_borrowing();
    // A demand of 30 for the whole period: busy borrows up to its limit of 20, the lender
    // keeps nothing, catch-all its 5.
    assert_eq!(
        (current("busy"), current("lender"), current("catch-all")),
        (20, 0, 5)
    );
    assert_eq!(executing_and_waiting(&fc, "busy"), (20, 10));
    let mut text = String::new();
    fc.render_metrics(&mut text);
    for line in [
        "apiserver_flowcontrol_current_limit_seats{priority_level=\"busy\"} 20",
        "apiserver_flowcontrol_current_limit_seats{priority_level=\"lender\"} 0",
        "apiserver_flowcontrol_demand_seats_high_watermark{priority_level=\"busy\"} 30",
        "apiserver_flowcontrol_demand_seats_average{priority_level=\"busy\"} 30",
        "apiserver_flowcontrol_demand_seats_stdev{priority_level=\"busy\"} 0",
        "apiserver_flowcontrol_demand_seats_smoothed{priority_level=\"busy\"} 30",
        "apiserver_flowcontrol_target_seats{priority_level=\"busy\"} 30",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }
    // Busy's requests finish; 10 arrive at the lender, which runs one at a time with no
    // seats of its own.
    // Seats are given back as their tasks finish, so those still waiting get theirs.
    while let Some(done) = busy.join_next().await {
        drop(done.expect("task").expect("a busy seat"));
    }
    assert_eq!(executing_and_waiting(&fc, "busy"), (0, 0));
    let mut lent = requests(&fc, "l", 10);
    until("9 waiting at the lender", || {
        executing_and_waiting(&fc, "lender") == (1, 9)
    })
    .await;
    clock.advance(BORROWING_ADJUSTMENT_PERIOD);
    fc.update_borrowing();
    // The lender's demand of 10 raises its lower bound to its nominal seats: every level is at
    // its lower bound, busy's smoothed demand (29.31) notwithstanding.
    assert_eq!(
        (current("busy"), current("lender"), current("catch-all")),
        (10, 10, 5)
    );
    assert_eq!(executing_and_waiting(&fc, "lender"), (10, 0));
    let running = fc.current();
    let stats = running.levels["busy"].lock().stats;
    assert_eq!((stats.high_watermark, stats.average), (30.0, 0.0));
    assert!((stats.smoothed - 30.0 * SEAT_DEMAND_SMOOTHING).abs() < 1e-9);
    while let Some(done) = lent.join_next().await {
        assert!(done.expect("task").is_ok());
    }
}
