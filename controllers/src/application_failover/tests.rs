use super::*;
use karmada_api::policy::v1alpha1::DecisionConditions;
use karmada_api::work::v1alpha2::{GracefulEvictionTask, TargetCluster};

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn spec(clusters: &[&str]) -> ResourceBindingSpec {
    ResourceBindingSpec {
        clusters: clusters
            .iter()
            .map(|c| TargetCluster {
                name: (*c).into(),
                replicas: 1,
            })
            .collect(),
        ..Default::default()
    }
}

fn h(c: &str, health: ResourceHealth) -> (String, Option<ResourceHealth>) {
    (c.into(), Some(health))
}

#[test]
fn unhealthy_longer_than_the_toleration_fails_over() {
    let s = spec(&["m1", "m2"]);
    let mut seen = HashMap::new();
    let health = [
        h("m1", ResourceHealth::Unhealthy),
        h("m2", ResourceHealth::Healthy),
    ];
    let v = detect(&s, &health, 10, &mut seen, ts(0));
    assert_eq!(v.started, ["m1"]);
    assert!(v.evict.is_empty());
    assert_eq!(v.retry, Some(Duration::from_secs(11)));
    let v = detect(&s, &health, 10, &mut seen, ts(10));
    assert!(
        v.evict.is_empty(),
        "exactly at the end it is still tolerated"
    );
    assert_eq!(v.retry, Some(Duration::from_secs(1)));
    let v = detect(&s, &health, 10, &mut seen, ts(11));
    assert_eq!(v.evict, ["m1"]);
    assert!(seen.is_empty(), "an evicted cluster loses its countdown");
}

#[test]
fn recovering_within_the_window_cancels_the_countdown() {
    let s = spec(&["m1"]);
    let mut seen = HashMap::new();
    detect(
        &s,
        &[h("m1", ResourceHealth::Unhealthy)],
        10,
        &mut seen,
        ts(0),
    );
    let v = detect(
        &s,
        &[h("m1", ResourceHealth::Healthy)],
        10,
        &mut seen,
        ts(5),
    );
    assert_eq!(v.canceled, ["m1"]);
    assert!(seen.is_empty());
    // Unhealthy again later: a fresh countdown.
    let v = detect(
        &s,
        &[h("m1", ResourceHealth::Unhealthy)],
        10,
        &mut seen,
        ts(8),
    );
    assert_eq!(v.started, ["m1"]);
    let v = detect(
        &s,
        &[h("m1", ResourceHealth::Unhealthy)],
        10,
        &mut seen,
        ts(15),
    );
    assert!(v.evict.is_empty(), "counted from 8, not from 0");
    // Unknown health also cancels it, as Karmada counts it with the healthy ones.
    let v = detect(
        &s,
        &[h("m1", ResourceHealth::Unknown)],
        10,
        &mut seen,
        ts(16),
    );
    assert_eq!(v.canceled, ["m1"]);
}

#[test]
fn clusters_being_evicted_are_not_counted_again() {
    let mut s = spec(&["m1"]);
    s.graceful_eviction_tasks.push(GracefulEvictionTask {
        from_cluster: "m2".into(),
        ..Default::default()
    });
    let mut seen = HashMap::new();
    let v = detect(
        &s,
        &[h("m2", ResourceHealth::Unhealthy)],
        0,
        &mut seen,
        ts(0),
    );
    assert_eq!(v, Verdict::default());
}

#[test]
fn task_options_follow_the_purge_mode() {
    let app = |mode| ApplicationFailoverBehavior {
        decision_conditions: DecisionConditions::default(),
        purge_mode: mode,
        grace_period_seconds: Some(600),
        ..Default::default()
    };
    let g = task_options(
        &app(Some(PurgeMode::Gracefully)),
        "p",
        vec!["m1".into()],
        BTreeMap::new(),
    );
    assert_eq!(g.purge_mode, Some(PurgeMode::Gracefully));
    assert_eq!(g.grace_period_seconds, Some(600));
    assert_eq!(g.suppress_deletion, None);
    assert_eq!(g.reason, "ApplicationFailure");
    assert_eq!(g.clusters_before_failover, ["m1"]);
    let g = task_options(
        &app(Some(PurgeMode::Graciously)),
        "p",
        vec![],
        BTreeMap::new(),
    );
    assert_eq!(g.purge_mode, Some(PurgeMode::Gracefully));
    assert_eq!(g.grace_period_seconds, Some(600));
    let n = task_options(&app(Some(PurgeMode::Never)), "p", vec![], BTreeMap::new());
    assert_eq!(n.suppress_deletion, Some(true));
    assert_eq!(n.grace_period_seconds, None);
    let d = task_options(
        &app(Some(PurgeMode::Immediately)),
        "p",
        vec![],
        BTreeMap::new(),
    );
    assert_eq!(d.purge_mode, Some(PurgeMode::Directly));
    assert_eq!(d.grace_period_seconds, None);
    assert_eq!(d.suppress_deletion, None);
}
