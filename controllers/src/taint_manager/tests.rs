use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::policy::v1alpha1::ClusterFailoverBehavior;

fn ts(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn taint(key: &str, effect: &str, added: Option<i64>) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        time_added: added.map(|s| Time(ts(s))),
        ..Default::default()
    }
}

fn toleration(key: &str, seconds: Option<i64>) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some("Exists".into()),
        effect: Some("NoExecute".into()),
        toleration_seconds: seconds,
        ..Default::default()
    }
}

#[test]
fn untolerated_no_execute_taints_evict_at_once() {
    let taints = [taint("a", "NoExecute", Some(0))];
    assert_eq!(
        decide(&taints, &[], ts(0)),
        Decision::Evict(taints[0].clone())
    );
    // NoSchedule taints never evict.
    let taints = [taint("a", "NoSchedule", Some(0))];
    assert_eq!(decide(&taints, &[], ts(0)), Decision::Stay);
    // One untolerated taint among tolerated ones is enough.
    let taints = [
        taint("a", "NoExecute", Some(0)),
        taint("b", "NoExecute", Some(0)),
    ];
    assert_eq!(
        decide(&taints, &[toleration("a", None)], ts(0)),
        Decision::Evict(taints[1].clone())
    );
}

#[test]
fn tolerations_without_seconds_tolerate_for_ever() {
    let taints = [taint("a", "NoExecute", Some(0))];
    assert_eq!(
        decide(&taints, &[toleration("a", None)], ts(1_000_000)),
        Decision::Stay
    );
}

#[test]
fn toleration_seconds_count_from_the_taints_time_added() {
    let taints = [taint("a", "NoExecute", Some(100))];
    let tol = [toleration("a", Some(30))];
    assert_eq!(
        decide(&taints, &tol, ts(110)),
        Decision::After(Duration::from_secs(20))
    );
    assert_eq!(
        decide(&taints, &tol, ts(130)),
        Decision::Evict(taints[0].clone()),
        "exactly at the end"
    );
    assert_eq!(
        decide(&taints, &tol, ts(500)),
        Decision::Evict(taints[0].clone())
    );
    // Zero seconds: evicted as soon as the taint is there.
    let zero = [toleration("a", Some(0))];
    assert_eq!(
        decide(&taints, &zero, ts(100)),
        Decision::Evict(taints[0].clone())
    );
    // A negative value counts as zero, as Kubernetes treats it.
    let negative = [toleration("a", Some(-5))];
    assert_eq!(
        decide(&taints, &negative, ts(100)),
        Decision::Evict(taints[0].clone())
    );
}

#[test]
fn the_earliest_expiry_of_several_taints_wins() {
    let taints = [
        taint("a", "NoExecute", Some(0)),
        taint("b", "NoExecute", Some(50)),
    ];
    let tol = [toleration("a", Some(100)), toleration("b", Some(10))];
    assert_eq!(
        decide(&taints, &tol, ts(40)),
        Decision::After(Duration::from_secs(20))
    );
    assert_eq!(
        decide(&taints, &tol, ts(60)),
        Decision::Evict(taints[1].clone())
    );
    // A taint without timeAdded does not start a countdown.
    let untimed = [taint("a", "NoExecute", None)];
    assert_eq!(
        decide(&untimed, &[toleration("a", Some(1))], ts(1_000)),
        Decision::Stay
    );
}

#[test]
fn purge_mode_comes_from_the_policy_else_the_flag() {
    let cluster = |mode| FailoverBehavior {
        cluster: Some(ClusterFailoverBehavior {
            purge_mode: mode,
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        purge_mode(None, PurgeMode::Gracefully),
        PurgeMode::Gracefully
    );
    assert_eq!(purge_mode(None, PurgeMode::Directly), PurgeMode::Directly);
    assert_eq!(
        purge_mode(
            Some(&cluster(Some(PurgeMode::Directly))),
            PurgeMode::Gracefully
        ),
        PurgeMode::Directly
    );
    assert_eq!(
        purge_mode(Some(&cluster(None)), PurgeMode::Directly),
        PurgeMode::Gracefully,
        "failover.cluster without a purgeMode means Gracefully"
    );
    assert_eq!(
        purge_mode(
            Some(&cluster(Some(PurgeMode::Immediately))),
            PurgeMode::Gracefully
        ),
        PurgeMode::Directly
    );
    // An application-only failover section leaves the flag in charge.
    assert_eq!(
        purge_mode(Some(&FailoverBehavior::default()), PurgeMode::Directly),
        PurgeMode::Directly
    );
}
