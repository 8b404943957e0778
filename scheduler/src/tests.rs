//! Table tests of the scheduling algorithm, including the examples of issue 5.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Taint, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use karmada_api::cluster::v1alpha1::{
    ApiEnablement as ApiGroup, ApiResource, Cluster, ResourceSummary,
};
use karmada_api::policy::v1alpha1::{
    ClusterAffinity, ClusterAffinityTerm, ClusterPreferences, DynamicWeightFactor, Placement,
    ReplicaDivisionPreference, ReplicaSchedulingStrategy, ReplicaSchedulingType, SpreadConstraint,
    SpreadFieldValue, StaticClusterWeight,
};
use karmada_api::work::v1alpha2::{
    GracefulEvictionTask, ObjectReference, ReplicaRequirements, ResourceBindingSpec,
    ResourceBindingStatus, TargetCluster,
};

use super::*;

fn cluster(name: &str) -> Cluster {
    let mut c = Cluster::default();
    c.metadata.name = Some(name.into());
    c.status.api_enablements = vec![ApiGroup {
        group_version: "apps/v1".into(),
        resources: vec![ApiResource {
            name: "deployments".into(),
            kind: "Deployment".into(),
        }],
    }];
    c.status.resource_summary = Some(ResourceSummary {
        allocatable: BTreeMap::from([("pods".to_string(), Quantity("100".into()))]),
        ..Default::default()
    });
    c
}

fn with_pods(mut c: Cluster, pods: i64) -> Cluster {
    c.status.resource_summary = Some(ResourceSummary {
        allocatable: BTreeMap::from([("pods".to_string(), Quantity(pods.to_string()))]),
        ..Default::default()
    });
    c
}

fn with_taint(mut c: Cluster, key: &str, value: Option<&str>, effect: &str) -> Cluster {
    c.spec.taints.push(Taint {
        key: key.into(),
        value: value.map(String::from),
        effect: effect.into(),
        time_added: None,
    });
    c
}

fn with_region(mut c: Cluster, region: &str) -> Cluster {
    c.spec.region = region.into();
    c
}

fn names_affinity(names: &[&str]) -> ClusterAffinity {
    ClusterAffinity {
        cluster_names: names.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    }
}

fn tc(name: &str, replicas: i32) -> TargetCluster {
    TargetCluster {
        name: name.into(),
        replicas,
    }
}

fn divided(
    pref: ReplicaDivisionPreference,
    weights: Option<ClusterPreferences>,
) -> Option<ReplicaSchedulingStrategy> {
    Some(ReplicaSchedulingStrategy {
        replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
        replica_division_preference: Some(pref),
        weight_preference: weights,
    })
}

fn duplicated() -> Option<ReplicaSchedulingStrategy> {
    Some(ReplicaSchedulingStrategy {
        replica_scheduling_type: Some(ReplicaSchedulingType::Duplicated),
        ..Default::default()
    })
}

fn static_weights(pairs: &[(&[&str], i64)]) -> Option<ClusterPreferences> {
    Some(ClusterPreferences {
        static_weight_list: pairs
            .iter()
            .map(|(names, weight)| StaticClusterWeight {
                target_cluster: names_affinity(names),
                weight: *weight,
            })
            .collect(),
        dynamic_weight: None,
    })
}

fn dynamic_weights() -> Option<ClusterPreferences> {
    Some(ClusterPreferences {
        static_weight_list: vec![],
        dynamic_weight: Some(DynamicWeightFactor::AvailableReplicas),
    })
}

fn input<'a>(
    placement: &'a Placement,
    replicas: i32,
    clusters: &'a [Cluster],
    previous: &'a [TargetCluster],
) -> ScheduleInput<'a> {
    ScheduleInput {
        placement,
        replicas,
        replica_requirements: None,
        api_version: "apps/v1",
        kind: "Deployment",
        uid: "",
        clusters,
        previous,
        evicting_clusters: BTreeSet::new(),
        observed_affinity_name: "",
        fresh: false,
        enable_empty_workload_propagation: false,
    }
}

fn clusters_of(result: Result<ScheduleResult, ScheduleError>) -> Vec<TargetCluster> {
    match result {
        Ok(r) => r.clusters,
        Err(e) => panic!("scheduling failed: {e}"),
    }
}

/// A UID whose FNV-1a hash has the given parity, so the tie-breaker is known.
fn uid_with_parity(odd: bool) -> String {
    (0..1000)
        .map(|i| format!("4f1c0d7e-0000-4000-8000-{i:012}"))
        .find(|u| (TieBreaker::from_uid(u) == TieBreaker::NameDescending) == odd)
        .unwrap()
}

#[test]
fn issue5_divided_static_weights_three_to_one() {
    let clusters = [cluster("member1"), cluster("member2")];
    let placement = Placement {
        cluster_affinity: Some(names_affinity(&["member1", "member2"])),
        replica_scheduling: divided(
            ReplicaDivisionPreference::Weighted,
            static_weights(&[(&["member1"], 3), (&["member2"], 1)]),
        ),
        ..Default::default()
    };
    for uid in [String::new(), uid_with_parity(true), uid_with_parity(false)] {
        let mut i = input(&placement, 4, &clusters, &[]);
        i.uid = &uid;
        assert_eq!(
            clusters_of(schedule(&i)),
            vec![tc("member1", 3), tc("member2", 1)],
            "uid {uid:?}"
        );
    }
}

#[test]
fn static_weight_remainders_are_deterministic() {
    let clusters = [cluster("member1"), cluster("member2"), cluster("member3")];
    let odd = uid_with_parity(true);
    let even = uid_with_parity(false);
    let equal = Placement {
        replica_scheduling: divided(ReplicaDivisionPreference::Weighted, None),
        ..Default::default()
    };
    let two = Placement {
        cluster_affinity: Some(names_affinity(&["member1", "member2"])),
        ..equal.clone()
    };
    let unmatched = Placement {
        replica_scheduling: divided(
            ReplicaDivisionPreference::Weighted,
            static_weights(&[(&["member1"], 2), (&["member2"], 1)]),
        ),
        ..Default::default()
    };
    let none_matched = Placement {
        replica_scheduling: divided(
            ReplicaDivisionPreference::Weighted,
            static_weights(&[(&["elsewhere"], 5)]),
        ),
        ..Default::default()
    };
    let cases: Vec<(&str, &Placement, i32, &str, Vec<TargetCluster>)> = vec![
        (
            "5 over 1:1, ascending tie-break",
            &two,
            5,
            &even,
            vec![tc("member1", 3), tc("member2", 2)],
        ),
        (
            "5 over 1:1, descending tie-break",
            &two,
            5,
            &odd,
            vec![tc("member1", 2), tc("member2", 3)],
        ),
        (
            "5 over 1:1, no uid",
            &two,
            5,
            "",
            vec![tc("member1", 3), tc("member2", 2)],
        ),
        (
            "equal weights over three",
            &equal,
            7,
            &even,
            vec![tc("member1", 3), tc("member2", 2), tc("member3", 2)],
        ),
        (
            "equal weights, one replica",
            &equal,
            1,
            &odd,
            vec![tc("member3", 1)],
        ),
        (
            "clusters matching no rule get nothing",
            &unmatched,
            6,
            "",
            vec![tc("member1", 4), tc("member2", 2)],
        ),
        (
            "no rule matches: equal weights",
            &none_matched,
            3,
            "",
            vec![tc("member1", 1), tc("member2", 1), tc("member3", 1)],
        ),
    ];
    for (name, placement, replicas, uid, want) in cases {
        let mut i = input(placement, replicas, &clusters, &[]);
        i.uid = uid;
        assert_eq!(clusters_of(schedule(&i)), want, "{name}");
    }
}

#[test]
fn duplicated_and_non_workloads() {
    let clusters = [cluster("member2"), cluster("member1")];
    let placement = Placement {
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&placement, 4, &clusters, &[]))),
        vec![tc("member1", 4), tc("member2", 4)]
    );
    // A nil replicaScheduling is Duplicated too.
    let default_placement = Placement::default();
    assert_eq!(
        clusters_of(schedule(&input(&default_placement, 2, &clusters, &[]))),
        vec![tc("member1", 2), tc("member2", 2)]
    );
    // Resources without replicas go everywhere with none, even under Divided.
    let divided_placement = Placement {
        replica_scheduling: divided(ReplicaDivisionPreference::Weighted, None),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&divided_placement, 0, &clusters, &[]))),
        vec![tc("member1", 0), tc("member2", 0)]
    );
    // A workload scaled to zero ends up nowhere, unless empty workloads are propagated.
    let requirements = ReplicaRequirements::default();
    let mut zero = input(&placement, 0, &clusters, &[]);
    zero.replica_requirements = Some(&requirements);
    assert_eq!(clusters_of(schedule(&zero)), vec![]);
    zero.enable_empty_workload_propagation = true;
    assert_eq!(
        clusters_of(schedule(&zero)),
        vec![tc("member1", 0), tc("member2", 0)]
    );
}

#[test]
fn no_cluster_fit_message() {
    let not_ready = "cluster.karmada.io/not-ready";
    let clusters = [
        cluster("member1"),
        with_taint(cluster("member2"), not_ready, None, "NoSchedule"),
        with_taint(cluster("member3"), not_ready, None, "NoSchedule"),
    ];
    let placement = Placement {
        cluster_affinity: Some(names_affinity(&["member2", "member3"])),
        ..Default::default()
    };
    let err = schedule(&input(&placement, 1, &clusters, &[])).unwrap_err();
    assert_eq!(err.reason(), "NoClusterFit");
    assert_eq!(
        err.to_string(),
        "0/3 clusters are available: 1 cluster(s) did not match the placement cluster affinity \
         constraint, 2 cluster(s) had untolerated taint {cluster.karmada.io/not-ready:NoSchedule}."
    );
    let ScheduleError::NoClusterFit(fit) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(fit.reasons.len(), 3);
    assert_eq!(
        fit.reasons.get("member1").map(String::as_str),
        Some("cluster(s) did not match the placement cluster affinity constraint")
    );

    // Missing API, a taint with a value, and eviction.
    let mut no_api = cluster("member1");
    no_api.status.api_enablements.clear();
    let clusters = [
        no_api,
        with_taint(cluster("member2"), "dedicated", Some("gpu"), "NoExecute"),
        cluster("member3"),
    ];
    let anywhere = Placement::default();
    let mut i = input(&anywhere, 1, &clusters, &[]);
    i.evicting_clusters = BTreeSet::from(["member3".to_string()]);
    assert_eq!(
        schedule(&i).unwrap_err().to_string(),
        "0/3 clusters are available: 1 cluster(s) did not have the API resource, 1 cluster(s) had \
         untolerated taint {dedicated=gpu:NoExecute}, 1 cluster(s) is in the process of eviction."
    );

    // Deleting clusters are skipped but counted.
    let mut deleting = cluster("member1");
    deleting.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let clusters = [deleting];
    assert_eq!(
        schedule(&input(&Placement::default(), 1, &clusters, &[]))
            .unwrap_err()
            .to_string(),
        "0/1 clusters are available: no cluster exists."
    );
    assert_eq!(
        schedule(&input(&Placement::default(), 1, &[], &[]))
            .unwrap_err()
            .to_string(),
        "0/0 clusters are available: no cluster exists."
    );
}

#[test]
fn tolerations_and_scheduled_clusters_pass_filters() {
    let tol = |key: Option<&str>, op: Option<&str>, value: Option<&str>, effect: Option<&str>| {
        Toleration {
            key: key.map(String::from),
            operator: op.map(String::from),
            value: value.map(String::from),
            effect: effect.map(String::from),
            toleration_seconds: None,
        }
    };
    let taint = Taint {
        key: "dedicated".into(),
        value: Some("gpu".into()),
        effect: "NoSchedule".into(),
        time_added: None,
    };
    let cases = [
        (tol(Some("dedicated"), None, Some("gpu"), None), true),
        (
            tol(Some("dedicated"), Some("Equal"), Some("cpu"), None),
            false,
        ),
        (
            tol(Some("dedicated"), Some("Exists"), None, Some("NoSchedule")),
            true,
        ),
        (
            tol(Some("dedicated"), Some("Exists"), None, Some("NoExecute")),
            false,
        ),
        (tol(None, Some("Exists"), None, None), true),
        (tol(Some("other"), Some("Exists"), None, None), false),
        (tol(Some("dedicated"), Some("Gt"), Some("1"), None), false),
    ];
    for (i, (t, want)) in cases.iter().enumerate() {
        assert_eq!(tolerates(t, &taint), *want, "case {i}");
    }
    // PreferNoSchedule taints never filter.
    let soft = [Taint {
        effect: "PreferNoSchedule".into(),
        ..taint.clone()
    }];
    assert!(find_untolerated_taint(&soft, &[]).is_none());

    let clusters = [with_taint(
        cluster("member1"),
        "dedicated",
        Some("gpu"),
        "NoSchedule",
    )];
    let placement = Placement {
        cluster_tolerations: vec![tol(Some("dedicated"), Some("Exists"), None, None)],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&placement, 1, &clusters, &[]))),
        vec![tc("member1", 1)]
    );

    // A cluster already in the result keeps the workload despite a new taint or a missing API.
    let mut no_api = with_taint(cluster("member1"), "dedicated", Some("gpu"), "NoSchedule");
    no_api.status.api_enablements.clear();
    let clusters = [no_api];
    let previous = [tc("member1", 1)];
    let placement = Placement {
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&placement, 1, &clusters, &previous))),
        vec![tc("member1", 1)]
    );
}

#[test]
fn api_enablement_states() {
    let mut c = cluster("member1");
    assert_eq!(
        api_enabled(&c, "apps/v1", "Deployment"),
        ApiEnablement::Enabled
    );
    assert_eq!(
        api_enabled(&c, "apps/v1", "StatefulSet"),
        ApiEnablement::Unknown
    );
    assert_eq!(api_enabled(&c, "v1", "Deployment"), ApiEnablement::Unknown);
    c.status.conditions.push(Condition {
        type_: "CompleteAPIEnablements".into(),
        status: "True".into(),
        reason: "Complete".into(),
        message: String::new(),
        last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        observed_generation: None,
    });
    assert_eq!(
        api_enabled(&c, "apps/v1", "StatefulSet"),
        ApiEnablement::Disabled
    );
}

#[test]
fn cluster_affinities_fall_back_in_order() {
    let clusters = [
        with_taint(
            cluster("member1"),
            "cluster.karmada.io/unreachable",
            None,
            "NoSchedule",
        ),
        cluster("member2"),
        cluster("member3"),
    ];
    let term = |name: &str, names: &[&str]| ClusterAffinityTerm {
        affinity_name: name.into(),
        cluster_affinity: names_affinity(names),
        overflow_affinities: vec![],
    };
    let placement = Placement {
        cluster_affinities: vec![term("primary", &["member1"]), term("backup", &["member2"])],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    let result = schedule(&input(&placement, 2, &clusters, &[])).unwrap();
    assert_eq!(result.clusters, vec![tc("member2", 2)]);
    assert_eq!(result.affinity_name.as_deref(), Some("backup"));

    // The search starts at the group used last time.
    let placement = Placement {
        cluster_affinities: vec![term("first", &["member3"]), term("second", &["member2"])],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    let mut i = input(&placement, 1, &clusters, &[]);
    i.observed_affinity_name = "second";
    let result = schedule(&i).unwrap();
    assert_eq!(result.affinity_name.as_deref(), Some("second"));
    assert_eq!(result.clusters, vec![tc("member2", 1)]);

    // All groups failing report the first group's error.
    let placement = Placement {
        cluster_affinities: vec![term("a", &["member1"]), term("b", &["nowhere"])],
        ..Default::default()
    };
    let err = schedule(&input(&placement, 1, &clusters, &[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "0/3 clusters are available: 1 cluster(s) had untolerated taint \
         {cluster.karmada.io/unreachable:NoSchedule}, 2 cluster(s) did not match the placement \
         cluster affinity constraint."
    );
}

fn capacity_clusters() -> [Cluster; 3] {
    [
        with_pods(cluster("m1"), 60),
        with_pods(cluster("m2"), 30),
        with_pods(cluster("m3"), 10),
    ]
}

#[test]
fn dynamic_weight_steady_and_fresh() {
    let clusters = capacity_clusters();
    let placement = Placement {
        replica_scheduling: divided(ReplicaDivisionPreference::Weighted, dynamic_weights()),
        ..Default::default()
    };
    type Case<'a> = (&'a str, i32, Vec<TargetCluster>, bool, Vec<TargetCluster>);
    let cases: Vec<Case> = vec![
        (
            "first schedule by free capacity",
            10,
            vec![],
            false,
            vec![tc("m1", 6), tc("m2", 3), tc("m3", 1)],
        ),
        (
            "scale up adds the extra replicas by capacity",
            20,
            vec![tc("m1", 6), tc("m2", 3), tc("m3", 1)],
            false,
            vec![tc("m1", 12), tc("m2", 6), tc("m3", 2)],
        ),
        (
            "scale down in proportion to the current division",
            5,
            vec![tc("m1", 12), tc("m2", 6), tc("m3", 2)],
            false,
            vec![tc("m1", 3), tc("m2", 1), tc("m3", 1)],
        ),
        (
            "unchanged replicas keep the division",
            10,
            vec![tc("m3", 10)],
            false,
            vec![tc("m3", 10)],
        ),
        (
            "fresh mode redistributes, counting current replicas as free",
            10,
            vec![tc("m3", 10)],
            true,
            vec![tc("m1", 5), tc("m2", 3), tc("m3", 2)],
        ),
        (
            "replicas on clusters no longer feasible are placed again",
            10,
            vec![tc("gone", 4), tc("m1", 6)],
            false,
            // 4 extra replicas divided 60:30:10 give 3/1/0 on top of m1's 6.
            vec![tc("m1", 9), tc("m2", 1)],
        ),
    ];
    for (name, replicas, previous, fresh, want) in cases {
        let mut i = input(&placement, replicas, &clusters, &previous);
        i.fresh = fresh;
        assert_eq!(clusters_of(schedule(&i)), want, "{name}");
    }
}

#[test]
fn aggregated_packs_into_few_clusters() {
    let clusters = capacity_clusters();
    let placement = Placement {
        replica_scheduling: divided(ReplicaDivisionPreference::Aggregated, None),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&placement, 25, &clusters, &[]))),
        vec![tc("m1", 25)]
    );
    assert_eq!(
        clusters_of(schedule(&input(&placement, 80, &clusters, &[]))),
        vec![tc("m1", 53), tc("m2", 27)]
    );
    // Scaling up fills the clusters already used first.
    let previous = [tc("m2", 5)];
    assert_eq!(
        clusters_of(schedule(&input(&placement, 40, &clusters, &previous))),
        vec![tc("m1", 23), tc("m2", 17)]
    );
    // Scaling down keeps the clusters with the most replicas.
    let previous = [tc("m1", 20), tc("m2", 10)];
    assert_eq!(
        clusters_of(schedule(&input(&placement, 15, &clusters, &previous))),
        vec![tc("m1", 15)]
    );
}

#[test]
fn not_enough_capacity_is_unschedulable() {
    let clusters = [with_pods(cluster("m1"), 3), with_pods(cluster("m2"), 2)];
    let placement = Placement {
        replica_scheduling: divided(ReplicaDivisionPreference::Weighted, dynamic_weights()),
        ..Default::default()
    };
    let err = schedule(&input(&placement, 10, &clusters, &[])).unwrap_err();
    assert_eq!(err.reason(), "Unschedulable");
    assert_eq!(
        err.to_string(),
        "failed to assign replicas: failed to scale up: Clusters available replicas 5 are not enough to schedule."
    );
    let mut fresh = input(&placement, 10, &clusters, &[]);
    fresh.fresh = true;
    assert_eq!(
        schedule(&fresh).unwrap_err().to_string(),
        "failed to assign replicas: failed to do fresh scale: Clusters available replicas 5 are not enough to schedule."
    );
    // Unset division preference is not a strategy.
    let placement = Placement {
        replica_scheduling: Some(ReplicaSchedulingStrategy {
            replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = schedule(&input(&placement, 1, &clusters, &[])).unwrap_err();
    assert_eq!(err.reason(), "SchedulerError");
}

#[test]
fn spread_constraints_select_clusters() {
    let clusters = [cluster("member3"), cluster("member1"), cluster("member2")];
    let spread = |field, min, max| SpreadConstraint {
        spread_by_field: Some(field),
        spread_by_label: String::new(),
        min_groups: min,
        max_groups: max,
    };
    let placement = Placement {
        spread_constraints: vec![spread(SpreadFieldValue::Cluster, 1, 2)],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&placement, 1, &clusters, &[]))),
        vec![tc("member1", 1), tc("member2", 1)]
    );
    // The cluster already used scores higher and is kept.
    let previous = [tc("member3", 1)];
    assert_eq!(
        clusters_of(schedule(&input(&placement, 1, &clusters, &previous))),
        vec![tc("member3", 1), tc("member1", 1)]
    );
    let placement = Placement {
        spread_constraints: vec![spread(SpreadFieldValue::Cluster, 4, 5)],
        ..placement
    };
    assert_eq!(
        schedule(&input(&placement, 1, &clusters, &[]))
            .unwrap_err()
            .to_string(),
        "failed to select clusters: the number of feasible clusters is less than spreadConstraint.MinGroups"
    );

    // Divided by capacity: the best-scored cluster is swapped for one with room.
    let clusters = [
        with_pods(cluster("a"), 5),
        with_pods(cluster("b"), 50),
        with_pods(cluster("c"), 2),
    ];
    let placement = Placement {
        spread_constraints: vec![spread(SpreadFieldValue::Cluster, 1, 1)],
        replica_scheduling: divided(ReplicaDivisionPreference::Aggregated, None),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&placement, 20, &clusters, &[]))),
        vec![tc("b", 20)]
    );

    // Regions: one cluster per region first, then the rest by score.
    let clusters = [
        with_region(cluster("m1"), "r1"),
        with_region(cluster("m2"), "r1"),
        with_region(cluster("m3"), "r2"),
        cluster("m4"),
    ];
    let placement = Placement {
        spread_constraints: vec![
            spread(SpreadFieldValue::Region, 2, 2),
            spread(SpreadFieldValue::Cluster, 2, 2),
        ],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    // m4 has no region: the SpreadConstraint filter drops it.
    assert_eq!(
        clusters_of(schedule(&input(&placement, 1, &clusters, &[]))),
        vec![tc("m1", 1), tc("m3", 1)]
    );
    let clusters = &clusters[..3];
    let placement = Placement {
        spread_constraints: vec![
            spread(SpreadFieldValue::Region, 1, 2),
            spread(SpreadFieldValue::Cluster, 3, 3),
        ],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    assert_eq!(
        clusters_of(schedule(&input(&placement, 1, clusters, &[]))),
        vec![tc("m1", 1), tc("m3", 1), tc("m2", 1)]
    );
    let placement = Placement {
        spread_constraints: vec![
            spread(SpreadFieldValue::Zone, 1, 2),
            spread(SpreadFieldValue::Cluster, 1, 2),
        ],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    let mut zoned = cluster("z1");
    zoned.spec.zones = vec!["a".into()];
    let zoned = [zoned, cluster("unzoned")];
    // A zone constraint only filters; selection goes by the cluster constraint.
    assert_eq!(
        clusters_of(schedule(&input(&placement, 1, &zoned, &[]))),
        vec![tc("z1", 1)]
    );
    let placement = Placement {
        spread_constraints: vec![SpreadConstraint {
            spread_by_label: "topology".into(),
            min_groups: 1,
            ..Default::default()
        }],
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    assert_eq!(
        schedule(&input(&placement, 1, &zoned, &[]))
            .unwrap_err()
            .to_string(),
        "failed to select clusters: just support cluster and region spread constraint"
    );
}

#[test]
fn input_from_binding() {
    let placement = Placement {
        replica_scheduling: duplicated(),
        ..Default::default()
    };
    let t = |s: i64| Time(k8s_openapi::jiff::Timestamp::from_second(s).unwrap());
    let spec = ResourceBindingSpec {
        resource: ObjectReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "nginx".into(),
            uid: "u-1".into(),
            ..Default::default()
        },
        replicas: 3,
        placement: Some(placement),
        clusters: vec![tc("member1", 3)],
        graceful_eviction_tasks: vec![GracefulEvictionTask {
            from_cluster: "member2".into(),
            reason: "TaintUntolerated".into(),
            producer: "TaintManager".into(),
            ..Default::default()
        }],
        reschedule_triggered_at: Some(t(200)),
        ..Default::default()
    };
    let status = ResourceBindingStatus {
        scheduler_observed_affinity_name: "x".into(),
        last_scheduled_time: Some(t(100)),
        ..Default::default()
    };
    let clusters = [cluster("member1")];
    let i = ScheduleInput::for_binding(&spec, &status, &clusters).unwrap();
    assert_eq!(i.replicas, 3);
    assert_eq!(i.uid, "u-1");
    assert!(i.fresh);
    assert_eq!(i.observed_affinity_name, "x");
    assert!(i.evicting_clusters.contains("member2"));
    assert!(!reschedule_required(Some(&t(100).0), Some(&t(100).0)));
    assert!(!reschedule_required(Some(&t(100).0), None));
    assert!(!reschedule_required(None, Some(&t(100).0)));
    let no_placement = ResourceBindingSpec::default();
    assert!(ScheduleInput::for_binding(&no_placement, &status, &clusters).is_none());
}
