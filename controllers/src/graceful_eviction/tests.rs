use super::*;

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn task(cluster: &str, created: Option<i64>) -> GracefulEvictionTask {
    GracefulEvictionTask {
        from_cluster: cluster.into(),
        reason: "TaintUntolerated".into(),
        producer: "TaintManager".into(),
        creation_timestamp: created.map(|s| Time(ts(s))),
        ..Default::default()
    }
}

fn target(name: &str) -> TargetCluster {
    TargetCluster {
        name: name.into(),
        replicas: 2,
    }
}

fn status(name: &str, health: ResourceHealth) -> AggregatedStatusItem {
    AggregatedStatusItem {
        cluster_name: name.into(),
        health: Some(health),
        applied: true,
        ..Default::default()
    }
}

fn opt<'a>(
    result: &'a [TargetCluster],
    observed: &'a [AggregatedStatusItem],
    has_scheduled: bool,
) -> Assessment<'a> {
    Assessment {
        timeout: Duration::from_secs(600),
        schedule_result: result,
        observed,
        has_scheduled,
    }
}

#[test]
fn evicting_moves_the_cluster_into_a_task_once() {
    let mut spec = ResourceBindingSpec {
        clusters: vec![target("m1"), target("m2")],
        ..Default::default()
    };
    let opts = TaskOptions {
        purge_mode: Some(PurgeMode::Gracefully),
        reason: "TaintUntolerated".into(),
        producer: "TaintManager".into(),
        ..Default::default()
    };
    assert!(evict_cluster(&mut spec, "m2", opts.clone(), ts(7)));
    assert_eq!(spec.clusters, vec![target("m1")]);
    assert_eq!(spec.graceful_eviction_tasks.len(), 1);
    let t = &spec.graceful_eviction_tasks[0];
    assert_eq!(t.from_cluster, "m2");
    assert_eq!(t.replicas, Some(2));
    assert_eq!(t.purge_mode, Some(PurgeMode::Gracefully));
    assert_eq!(
        t.creation_timestamp,
        Some(Time(ts(7))),
        "stamped in the eviction's own write"
    );
    assert!(
        !evict_cluster(&mut spec, "m2", opts.clone(), ts(7)),
        "not in the result any more"
    );
    // A cluster back in the result while its task stands is removed again without a second task.
    spec.clusters.push(target("m2"));
    assert!(evict_cluster(&mut spec, "m2", opts, ts(7)));
    assert_eq!(spec.graceful_eviction_tasks.len(), 1);
    assert_eq!(spec.clusters, vec![target("m1")]);
    // Workloads without replicas record none.
    let mut spec = ResourceBindingSpec {
        clusters: vec![TargetCluster {
            name: "m1".into(),
            replicas: 0,
        }],
        ..Default::default()
    };
    evict_cluster(&mut spec, "m1", TaskOptions::default(), ts(7));
    assert_eq!(spec.graceful_eviction_tasks[0].replicas, None);
}

#[test]
fn new_tasks_get_their_creation_time() {
    let (kept, ended) = assess(&[task("m3", None)], ts(5), &opt(&[], &[], true));
    assert!(ended.is_empty());
    assert_eq!(kept[0].creation_timestamp, Some(Time(ts(5))));
}

#[test]
fn gracefully_waits_for_health_on_every_new_cluster() {
    let result = [target("m1"), target("m2")];
    let tasks = [task("m3", Some(0))];
    let half = [
        status("m1", ResourceHealth::Healthy),
        status("m2", ResourceHealth::Unhealthy),
    ];
    let (kept, _) = assess(&tasks, ts(10), &opt(&result, &half, true));
    assert_eq!(kept.len(), 1, "m2 is not healthy yet");
    let missing = [status("m1", ResourceHealth::Healthy)];
    let (kept, _) = assess(&tasks, ts(10), &opt(&result, &missing, true));
    assert_eq!(kept.len(), 1, "m2 has no status yet");
    let healthy = [
        status("m1", ResourceHealth::Healthy),
        status("m2", ResourceHealth::Healthy),
    ];
    let (kept, _) = assess(&tasks, ts(10), &opt(&result, &healthy, false));
    assert_eq!(
        kept.len(),
        1,
        "not scheduled yet: the status may be the old one"
    );
    let (kept, ended) = assess(&tasks, ts(10), &opt(&result, &healthy, true));
    assert!(kept.is_empty());
    assert_eq!(ended, ["m3"]);
}

#[test]
fn tasks_end_after_their_grace_period() {
    let mut t = task("m3", Some(0));
    let (kept, _) = assess(std::slice::from_ref(&t), ts(600), &opt(&[], &[], false));
    assert_eq!(kept.len(), 1, "exactly at the timeout it stands");
    let (kept, ended) = assess(std::slice::from_ref(&t), ts(601), &opt(&[], &[], false));
    assert!(kept.is_empty());
    assert_eq!(ended, ["m3"]);
    t.grace_period_seconds = Some(30);
    let (kept, _) = assess(std::slice::from_ref(&t), ts(31), &opt(&[], &[], false));
    assert!(kept.is_empty(), "the task's own grace period wins");
    assert_eq!(
        next_retry(std::slice::from_ref(&t), Duration::from_secs(600), ts(10)),
        Some(Duration::from_millis(20_010))
    );
}

#[test]
fn never_keeps_the_old_copy_until_a_person_acts() {
    let mut t = task("m3", Some(0));
    t.suppress_deletion = Some(true);
    let healthy = [status("m1", ResourceHealth::Healthy)];
    let result = [target("m1")];
    let (kept, _) = assess(
        std::slice::from_ref(&t),
        ts(100_000),
        &opt(&result, &healthy, true),
    );
    assert_eq!(kept.len(), 1, "neither health nor time ends it");
    assert_eq!(
        next_retry(std::slice::from_ref(&t), Duration::from_secs(600), ts(0)),
        None
    );
    t.suppress_deletion = Some(false);
    let (kept, ended) = assess(std::slice::from_ref(&t), ts(1), &opt(&[], &[], false));
    assert!(kept.is_empty());
    assert_eq!(ended, ["m3"]);
}

#[test]
fn deprecated_purge_modes_read_as_their_replacements() {
    assert_eq!(
        normalized(Some(PurgeMode::Immediately)),
        Some(PurgeMode::Directly)
    );
    assert_eq!(
        normalized(Some(PurgeMode::Graciously)),
        Some(PurgeMode::Gracefully)
    );
    assert_eq!(normalized(Some(PurgeMode::Never)), Some(PurgeMode::Never));
    assert_eq!(normalized(None), None);
}
