//! FederatedResourceQuota and Remedy end to end: static assignments become ResourceQuotas in
//! the members whose usage comes back into the quota's status; with FederatedQuotaEnforcement
//! the scheduler refuses placements over the quota until it is raised; a Remedy's actions
//! follow the member conditions it matches.

mod propagation_env;
mod support;

use propagation_env::Env;
use serde_json::Value;

/// A Deployment in namespace `quota` whose pods request `cpu` each, placed on `member1`.
fn deployment(name: &str, replicas: u32, cpu: &str) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: quota, labels: {{app: {name}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers:
        - name: web
          image: nginx:1.25
          resources: {{requests: {{cpu: {cpu}, memory: 64Mi}}}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: quota}}
spec:
  resourceSelectors:
    - {{apiVersion: apps/v1, kind: Deployment, name: {name}}}
  placement:
    clusterAffinity: {{clusterNames: [member1]}}
"
    )
}

fn quota(overall_cpu: &str, assignments: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1
kind: FederatedResourceQuota
metadata: {{name: team, namespace: quota}}
spec:
  overall: {{cpu: {overall_cpu}, pods: 10}}
{assignments}"
    )
}

fn frq(env: &Env) -> Value {
    env.cp
        .get_json(&["federatedresourcequota", "team", "-n", "quota"])
}

#[test]
fn static_assignments_become_member_quotas_that_report_usage() {
    let env = Env::start(2);
    env.cp.kubectl_ok(&["create", "namespace", "quota"]);

    // Karmada's webhook: the assignments together may not exceed `overall`.
    let err = env.cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &quota(
            "1",
            "  staticAssignments:\n    - {clusterName: member1, hard: {cpu: 600m}}\n    - {clusterName: member2, hard: {cpu: 500m}}\n",
        ),
    );
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(
        stderr.contains("admission webhook \"federatedresourcequota.karmada.io\" denied the request: spec.overall[cpu]: Invalid value: \"1\": overall is less than assignments"),
        "{stderr}"
    );

    env.apply(&quota(
        "4",
        "  staticAssignments:\n    - {clusterName: member1, hard: {cpu: 2, pods: 5}}\n    - {clusterName: member2, hard: {cpu: 2, pods: 5}}\n",
    ));
    for m in ["member1", "member2"] {
        let rq = env.wait_member_object(m, &["resourcequota", "team", "-n", "quota"]);
        assert_eq!(
            rq["spec"]["hard"],
            serde_json::json!({"cpu": "2", "pods": "5"}),
            "{rq}"
        );
    }
    // The members report usage; nothing runs yet.
    env.wait("the members' quota status", || {
        let q = frq(&env);
        let agg = q["status"]["aggregatedStatus"].as_array()?.clone();
        (agg.len() == 2 && agg[0]["clusterName"] == "member1" && agg[0]["used"]["pods"] == "0")
            .then_some(())
    });

    // A Deployment's (virtual) pods come up in member1 and count.
    env.apply(&deployment("web", 3, "250m"));
    env.wait("usage of the Deployment's pods", || {
        let q = frq(&env);
        let s = &q["status"];
        (s["aggregatedStatus"][0]["used"] == serde_json::json!({"cpu": "750m", "pods": "3"})
            && s["aggregatedStatus"][1]["used"] == serde_json::json!({"cpu": "0", "pods": "0"})
            && s["overallUsed"] == serde_json::json!({"cpu": "750m", "pods": "3"})
            && s["overall"] == serde_json::json!({"cpu": "4", "pods": "10"}))
        .then_some(())
    });
    let table = env
        .cp
        .kubectl_ok(&["get", "federatedresourcequotas", "-n", "quota"]);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "OVERALL", "OVERALL_USED"], "{table}");

    // An assignment that goes takes its ResourceQuota along; the quota's deletion the rest.
    env.apply(&quota(
        "4",
        "  staticAssignments:\n    - {clusterName: member1, hard: {cpu: 2, pods: 5}}\n",
    ));
    env.wait_member_absent("member2", &["resourcequota", "team", "-n", "quota"]);
    env.cp
        .kubectl_ok(&["delete", "federatedresourcequota", "team", "-n", "quota"]);
    env.wait_member_absent("member1", &["resourcequota", "team", "-n", "quota"]);
}

#[test]
fn enforcement_refuses_placements_over_the_quota_until_it_is_raised() {
    let env = Env::start_with_flags(
        support::Backend::Embedded,
        1,
        &["--feature-gates=FederatedQuotaEnforcement=true"],
    );
    env.cp.kubectl_ok(&["create", "namespace", "quota"]);
    env.apply(&quota("1", ""));
    env.wait("the quota's overall", || {
        (frq(&env)["status"]["overall"]["cpu"] == "1").then_some(())
    });

    env.apply(&deployment("small", 2, "300m"));
    env.wait_member_object("member1", &["deploy", "small", "-n", "quota"]);
    env.wait("usage of the scheduled binding", || {
        (frq(&env)["status"]["overallUsed"] == serde_json::json!({"cpu": "600m"})).then_some(())
    });

    // 2 × 300m more would make 1200m of the 1 cpu allowed.
    env.apply(&deployment("big", 2, "300m"));
    let want = "admission webhook \"resourcebinding.karmada.io\" denied the request: FederatedResourceQuota(quota/team) exceeded for resource cpu: requested sum 1200m, limit 1.";
    env.wait("the QuotaExceeded condition", || {
        let rb = env.cp.get_json(&["rb", "big-deployment", "-n", "quota"]);
        let c = rb["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "Scheduled")?
            .clone();
        (c["status"] == "False" && c["reason"] == "QuotaExceeded").then_some(())?;
        assert_eq!(c["message"], want, "{rb}");
        assert!(rb["spec"]["clusters"].is_null(), "{rb}");
        Some(())
    });
    env.wait("the ScheduleBindingFailed Event", || {
        env.cp
            .kubectl_ok(&[
                "get",
                "events",
                "-n",
                "quota",
                "--field-selector",
                "reason=ScheduleBindingFailed,involvedObject.kind=ResourceBinding",
                "-o",
                "jsonpath={.items[*].message}",
            ])
            .contains(want)
            .then_some(())
    });
    env.barrier("member1");
    assert!(
        env.member("member1")
            .get_json(&["deploy", "big", "-n", "quota"])
            .is_none()
    );

    // Raising the quota lets it through.
    env.apply(&quota("2", ""));
    env.wait_member_object("member1", &["deploy", "big", "-n", "quota"]);
    env.wait("usage of both bindings", || {
        (frq(&env)["status"]["overallUsed"] == serde_json::json!({"cpu": "1200m"})).then_some(())
    });
}

#[test]
fn remedy_actions_follow_matching_conditions_and_go_with_the_remedy() {
    let env = Env::start(2);
    let remedy = |status: &str| {
        format!(
            "apiVersion: remedy.karmada.io/v1alpha1
kind: Remedy
metadata: {{name: ready-traffic}}
spec:
  clusterAffinity: {{clusterNames: [member1]}}
  decisionMatches:
    - clusterConditionMatch: {{conditionType: Ready, operator: Equal, conditionStatus: \"{status}\"}}
  actions: [TrafficControl]
"
        )
    };
    let actions = |c: &str| {
        env.cp.kubectl_ok(&[
            "get",
            "cluster",
            c,
            "-o",
            "jsonpath={.status.remedyActions}",
        ])
    };
    env.apply(&remedy("True"));
    env.wait("TrafficControl on member1", || {
        (actions("member1") == "[\"TrafficControl\"]").then_some(())
    });
    assert_eq!(actions("member2"), "");

    // No longer matching: the action goes.
    env.apply(&remedy("False"));
    env.wait("no actions on member1", || {
        actions("member1").is_empty().then_some(())
    });

    // Matching again, then the Remedy's deletion clears it.
    env.apply(&remedy("True"));
    env.wait("TrafficControl again", || {
        (actions("member1") == "[\"TrafficControl\"]").then_some(())
    });
    env.cp.kubectl_ok(&["delete", "remedy", "ready-traffic"]);
    env.wait("actions cleared by the deletion", || {
        actions("member1").is_empty().then_some(())
    });

    // Karmada's CRD schema: the operator is Equal or NotEqual.
    let out = env.cp.kubectl_stdin(
        &["apply", "-f", "-"],
        &remedy("True").replace("operator: Equal", "operator: Is"),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("Unsupported value: \"Is\""), "{stderr}");
}
