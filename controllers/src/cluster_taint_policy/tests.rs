use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use karmada_api::cluster::v1alpha1::CLUSTER_CONDITION_READY;
use karmada_api::policy::v1alpha1::{ClusterAffinity, ClusterTaintPolicySpec, MatchCondition};

fn ts(secs: i64) -> Time {
    Time(k8s_openapi::jiff::Timestamp::from_second(1_700_000_000 + secs).unwrap())
}

fn cluster(name: &str, ready: Option<&str>, taints: Vec<Taint>) -> Cluster {
    let mut c = Cluster {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    c.spec.taints = taints;
    if let Some(s) = ready {
        c.status.conditions.push(Condition {
            type_: CLUSTER_CONDITION_READY.into(),
            status: s.into(),
            reason: String::new(),
            message: String::new(),
            last_transition_time: ts(0),
            observed_generation: None,
        });
    }
    c
}

fn cond(op: &str, values: &[&str]) -> MatchCondition {
    MatchCondition {
        condition_type: "Ready".into(),
        operator: op.into(),
        status_values: values.iter().map(|v| (*v).to_string()).collect(),
    }
}

fn policy(name: &str, created: i64, taint: (&str, &str)) -> Arc<ClusterTaintPolicy> {
    Arc::new(ClusterTaintPolicy {
        metadata: ObjectMeta {
            name: Some(name.into()),
            creation_timestamp: Some(ts(created)),
            ..Default::default()
        },
        spec: ClusterTaintPolicySpec {
            add_on_conditions: vec![cond("NotIn", &["True"])],
            remove_on_conditions: vec![cond("In", &["True"])],
            taints: vec![PolicyTaint {
                key: taint.0.into(),
                effect: taint.1.into(),
                value: String::new(),
            }],
            ..Default::default()
        },
    })
}

fn keys(t: &[Taint]) -> Vec<String> {
    t.iter()
        .map(|t| format!("{}:{}", t.key, t.effect))
        .collect()
}

#[test]
fn taints_follow_the_conditions() {
    let p = [policy("p", 0, ("fail", "NoExecute"))];
    let now = ts(10);
    let down = cluster("m1", Some("False"), vec![]);
    let got = desired_taints(&down, &p, &now);
    assert_eq!(keys(&got), ["fail:NoExecute"]);
    assert_eq!(got[0].time_added, Some(now.clone()));
    let unknown = cluster("m1", Some("Unknown"), vec![]);
    assert_eq!(
        keys(&desired_taints(&unknown, &p, &now)),
        ["fail:NoExecute"]
    );
    // Already there: kept with its original time.
    let tainted = cluster("m1", Some("False"), got.clone());
    assert_eq!(desired_taints(&tainted, &p, &ts(99)), got);
    let back = cluster("m1", Some("True"), got);
    assert!(desired_taints(&back, &p, &now).is_empty());
}

#[test]
fn a_missing_condition_matches_neither_operator() {
    let p = [policy("p", 0, ("fail", "NoExecute"))];
    let never = cluster("m1", None, vec![]);
    assert!(desired_taints(&never, &p, &ts(0)).is_empty());
}

#[test]
fn policies_only_touch_the_clusters_they_select() {
    let mut p = (*policy("p", 0, ("fail", "NoSchedule"))).clone();
    p.spec.target_clusters = Some(ClusterAffinity {
        cluster_names: vec!["m2".into()],
        ..Default::default()
    });
    let p = [Arc::new(p)];
    assert!(desired_taints(&cluster("m1", Some("False"), vec![]), &p, &ts(0)).is_empty());
    assert_eq!(
        keys(&desired_taints(
            &cluster("m2", Some("False"), vec![]),
            &p,
            &ts(0)
        )),
        ["fail:NoSchedule"]
    );
}

#[test]
fn older_policies_go_first() {
    // The older policy adds a taint on Ready=False that the younger one removes: the younger
    // one has the last word, every time.
    let old = policy("old", 0, ("x", "NoSchedule"));
    let mut young = (*policy("young", 5, ("x", "NoSchedule"))).clone();
    young.spec.remove_on_conditions = vec![cond("In", &["False"])];
    young.spec.add_on_conditions = vec![];
    let young = Arc::new(young);
    let c = cluster("m1", Some("False"), vec![]);
    assert!(desired_taints(&c, &[young.clone(), old.clone()], &ts(0)).is_empty());
    assert!(desired_taints(&c, &[old, young], &ts(0)).is_empty());
}

#[test]
fn the_event_message_lists_the_taints_as_karmada_does() {
    assert_eq!(taints_message(&[]), "cluster now does not have taints");
    let t = [
        Taint {
            key: "a".into(),
            effect: "NoExecute".into(),
            ..Default::default()
        },
        Taint {
            key: "b".into(),
            value: Some("v".into()),
            effect: "NoSchedule".into(),
            ..Default::default()
        },
    ];
    assert_eq!(
        taints_message(&t),
        "cluster now has taints([{Key:a,Effect:NoExecute},{Key:b,Value:v,Effect:NoSchedule}])"
    );
}
