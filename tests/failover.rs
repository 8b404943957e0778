//! Cluster health and failover end to end: three simulated members behind the real binary,
//! driven by kubectl. A member is killed, ClusterTaintPolicies taint it, the taint manager and
//! the graceful eviction controller move its workloads, and what must stay on it stays.

mod propagation_env;
mod support;

use propagation_env::Env;
use serde_json::Value;
use support::{Backend, DEADLINE, Server, metric, wait_for};

/// Applies YAML that the server must refuse; returns kubectl's stderr.
fn apply_err(cp: &Server, yaml: &str) -> String {
    let out = cp.kubectl_stdin(&["apply", "-f", "-"], yaml);
    assert!(!out.status.success(), "apply unexpectedly succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Control-plane flags: taint eviction on, NoExecute policies allowed, short timings.
const FAILOVER_FLAGS: &[&str] = &[
    "--enable-no-execute-taint-eviction",
    "--allow-no-execute-taint-policy",
    "--graceful-eviction-timeout=60s",
];

/// Taints a cluster NoExecute while it is not Ready, and removes the taint when it is.
const DOWN_POLICY: &str = "apiVersion: policy.karmada.io/v1alpha1
kind: ClusterTaintPolicy
metadata: {name: down}
spec:
  addOnConditions: [{conditionType: Ready, operator: NotIn, statusValues: ['True']}]
  removeOnConditions: [{conditionType: Ready, operator: In, statusValues: ['True']}]
  taints: [{key: failover.karmada-rs.io/down, effect: NoExecute}]
";

const DOWN_TAINT: &str = "failover.karmada-rs.io/down";

fn deployment(name: &str, replicas: i64) -> String {
    format!(
        "apiVersion: apps/v1
kind: Deployment
metadata: {{name: {name}, namespace: default, labels: {{app: {name}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: {name}}}}}
  template:
    metadata: {{labels: {{app: {name}}}}}
    spec:
      containers: [{{name: c, image: nginx:1.25}}]
---
"
    )
}

fn policy(name: &str, placement: &str, extra: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: default}}
spec:
  resourceSelectors: [{{apiVersion: apps/v1, kind: Deployment, name: {name}}}]
  placement:
{placement}
{extra}---
"
    )
}

const ALL_DUPLICATED: &str = "    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling: {replicaSchedulingType: Duplicated}";

const ALL_DIVIDED: &str = "    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Weighted}";

fn rb(env: &Env, name: &str) -> Option<Value> {
    let out = env.cp.kubectl(&[
        "get",
        "rb",
        &format!("{name}-deployment"),
        "-n",
        "default",
        "-o",
        "json",
    ]);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).ok())
        .flatten()
}

/// The binding's scheduling result as (cluster, replicas), sorted.
fn clusters(rb: &Value) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = rb["spec"]["clusters"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or("").to_owned(),
                        c["replicas"].as_i64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn tasks(rb: &Value) -> Vec<Value> {
    rb["spec"]["gracefulEvictionTasks"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn cluster_taints(env: &Env, name: &str) -> Vec<(String, String)> {
    let c = env.cp.get_json(&["cluster", name]);
    c["spec"]["taints"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|t| {
                    (
                        t["key"].as_str().unwrap_or("").to_owned(),
                        t["effect"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Ready replicas of a Deployment on a member (0 when absent).
fn ready_on(env: &Env, member: &str, name: &str) -> i64 {
    env.member(member)
        .get_json(&["deploy", name, "-n", "default"])
        .and_then(|d| {
            let want = d["spec"]["replicas"].as_i64()?;
            let ready = d["status"]["readyReplicas"].as_i64().unwrap_or(0);
            Some(if ready == want { ready } else { 0 })
        })
        .unwrap_or(0)
}

fn uid_on(env: &Env, member: &str, name: &str) -> Option<String> {
    env.member(member)
        .get_json(&["deploy", name, "-n", "default"])
        .and_then(|d| d["metadata"]["uid"].as_str().map(str::to_owned))
}

fn events_for(env: &Env, kind: &str, name: &str) -> String {
    env.cp.kubectl_ok(&[
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        &format!("involvedObject.kind={kind},involvedObject.name={name}"),
        "-o",
        "custom-columns=REASON:.reason,MESSAGE:.message",
    ])
}

#[test]
fn a_killed_member_is_tainted_and_its_workloads_move_while_pinned_ones_stay() {
    let mut env = Env::start_with_flags(Backend::Embedded, 3, FAILOVER_FLAGS);
    env.apply(DOWN_POLICY);
    let mut yaml = String::new();
    // Duplicated, old copy removed directly.
    yaml += &deployment("dup", 2);
    yaml += &policy(
        "dup",
        ALL_DUPLICATED,
        "  failover: {cluster: {purgeMode: Directly}}\n",
    );
    // Divided, old copy kept until the new ones are healthy (the default).
    yaml += &deployment("div", 6);
    yaml += &policy("div", ALL_DIVIDED, "");
    // Pinned to member3 and tolerating the taint for ever: it stays.
    yaml += &deployment("pinned", 1);
    yaml += &policy(
        "pinned",
        "    clusterAffinity: {clusterNames: [member3]}
    clusterTolerations: [{key: failover.karmada-rs.io/down, operator: Exists, effect: NoExecute}]",
        "",
    );
    // Tolerates the taint for 10 minutes: the member is back long before.
    yaml += &deployment("patient", 3);
    yaml += &policy(
        "patient",
        &format!(
            "{ALL_DIVIDED}
    clusterTolerations: [{{key: failover.karmada-rs.io/down, operator: Exists, effect: NoExecute, tolerationSeconds: 600}}]"
        ),
        "",
    );
    env.apply(&yaml);
    for name in ["dup", "div", "patient"] {
        env.wait(&format!("{name} ready on member3"), || {
            (ready_on(&env, "member3", name) > 0).then_some(())
        });
    }
    env.wait("pinned ready on member3", || {
        (ready_on(&env, "member3", "pinned") == 1).then_some(())
    });
    let pinned_uid = uid_on(&env, "member3", "pinned");
    let dup_uid = uid_on(&env, "member3", "dup");
    let patient_uid = uid_on(&env, "member3", "patient");
    let patient_before = clusters(&rb(&env, "patient").expect("rb"));

    env.members[2].stop();
    env.wait_ready("member3", "False");
    env.wait("member3 tainted not-ready and down", || {
        let t = cluster_taints(&env, "member3");
        (t.contains(&("cluster.karmada.io/not-ready".into(), "NoSchedule".into()))
            && t.contains(&(DOWN_TAINT.into(), "NoExecute".into())))
        .then_some(())
    });

    // Duplicated: member3 leaves the result at once, its Work goes (Directly).
    let dup = env.wait("dup evicted from member3", || {
        let b = rb(&env, "dup")?;
        (clusters(&b) == [("member1".into(), 2), ("member2".into(), 2)]).then_some(b)
    });
    let t = tasks(&dup);
    assert!(
        t.is_empty() || t[0]["purgeMode"] == "Directly",
        "a Directly task: {t:?}"
    );
    // Divided: the 6 replicas are split over the two others, Ready there.
    env.wait("div's replicas move to member1 and member2", || {
        let b = rb(&env, "div")?;
        let c = clusters(&b);
        (c.iter().map(|(_, r)| r).sum::<i64>() == 6
            && c.iter().all(|(n, _)| n != "member3")
            && ready_on(&env, "member1", "div") + ready_on(&env, "member2", "div") == 6)
            .then_some(())
    });
    // Once they are healthy the graceful task ends.
    let div = env.wait("div's eviction task ends", || {
        let b = rb(&env, "div")?;
        tasks(&b).is_empty().then_some(b)
    });
    assert!(clusters(&div).iter().all(|(n, _)| n != "member3"));
    // The pinned and the patient workloads did not move.
    let pinned = rb(&env, "pinned").expect("rb");
    assert_eq!(clusters(&pinned), [("member3".into(), 1)]);
    assert!(tasks(&pinned).is_empty());
    let patient = rb(&env, "patient").expect("rb");
    assert_eq!(clusters(&patient), patient_before);
    assert!(tasks(&patient).is_empty());
    // The decisions are events on the binding and on the template.
    let ev = events_for(&env, "ResourceBinding", "div-deployment");
    assert!(ev.contains("TaintUntolerated"), "{ev}");
    assert!(ev.contains("EvictWorkloadFromClusterSucceed"), "{ev}");
    let ev = events_for(&env, "Deployment", "dup");
    assert!(ev.contains("TaintUntolerated"), "{ev}");
    let ev = env.cp.kubectl_ok(&[
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.kind=Cluster,involvedObject.name=member3",
        "-o",
        "custom-columns=REASON:.reason",
    ]);
    assert!(ev.contains("TaintClusterSucceed"), "{ev}");
    // Karmada's eviction-queue series: every binding on member3 went through the
    // binding-eviction queue; the patient one is still counted (its toleration runs). With
    // the default pacing (3 workers, 2 s after each pass) the last pass may still be
    // waiting for a worker, so the series are waited for.
    let minimums = [
        (
            r#"eviction_processing_total{name="binding-eviction",result="success"}"#,
            4.0,
        ),
        (
            r#"eviction_processing_latency_seconds_count{name="binding-eviction"}"#,
            4.0,
        ),
        (
            r#"eviction_kind_total{member_cluster="member3",resource_kind="ResourceBinding"}"#,
            1.0,
        ),
        (r#"workqueue_adds_total{name="binding-eviction"}"#, 4.0),
        (r#"eviction_queue_depth{name="binding-eviction"}"#, 0.0),
        (
            r#"workqueue_work_duration_seconds_count{name="binding-eviction"}"#,
            1.0,
        ),
    ];
    let metrics = env.wait("the eviction series", || {
        let metrics = env.cp.kubectl_ok(&["get", "--raw", "/metrics"]);
        minimums
            .iter()
            .all(|(name, at_least)| metric(&metrics, name).is_some_and(|v| v >= *at_least))
            .then_some(metrics)
    });
    // Karmada's pacing with its default --resource-eviction-rate (0.5/s): each pass holds its
    // worker (and its key) 2 s after the binding is handled.
    let count = metric(
        &metrics,
        r#"workqueue_work_duration_seconds_count{name="binding-eviction"}"#,
    );
    let sum = metric(
        &metrics,
        r#"workqueue_work_duration_seconds_sum{name="binding-eviction"}"#,
    );
    assert!(
        sum.zip(count).is_some_and(|(s, c)| s >= 1.99 * c),
        "eviction passes not paced 2 s each: sum {sum:?} over {count:?} passes"
    );

    // member3 comes back: taints go, the moved copies are removed from it, the pinned and the
    // patient ones were never touched.
    env.members[2].restart();
    env.wait_ready("member3", "True");
    env.wait("member3's taints removed", || {
        cluster_taints(&env, "member3").is_empty().then_some(())
    });
    env.wait_member_absent("member3", &["deploy", "div", "-n", "default"]);
    // Duplicated workloads are rescheduled whenever clusters change (as Karmada's scheduler
    // does), so once the eviction task has ended dup comes back to the healthy member3: as a
    // new object, the old copy having been removed.
    env.wait("the old dup copy replaced on member3", || {
        let uid = uid_on(&env, "member3", "dup")?;
        (Some(&uid) != dup_uid.as_ref() && ready_on(&env, "member3", "dup") == 2).then_some(())
    });
    env.barrier("member3");
    assert_eq!(uid_on(&env, "member3", "pinned"), pinned_uid);
    assert_eq!(uid_on(&env, "member3", "patient"), patient_uid);
    let patient = rb(&env, "patient").expect("rb");
    assert_eq!(clusters(&patient), patient_before);
}

#[test]
fn the_eviction_and_rate_limiter_flags_are_checked_as_karmada_checks_them() {
    // A negative eviction rate is refused before anything starts, with Karmada's message.
    let out = support::run(
        std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["serve", "--resource-eviction-rate=-1"]),
    );
    assert!(!out.status.success(), "serve accepted a negative rate");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "ClusterFailoverOptions.ResourceEvictionRate: Invalid value: -1: must be non-negative"
        ),
        "{stderr}"
    );
    // Every flag is known to serve, up and agent (their help lists them, with Karmada's
    // defaults).
    for command in ["serve", "up", "agent"] {
        let out = support::run(
            std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs")).args([command, "--help"]),
        );
        let help = String::from_utf8_lossy(&out.stdout);
        for flag in [
            "--rate-limiter-base-delay <RATE_LIMITER_BASE_DELAY>",
            "--rate-limiter-max-delay <RATE_LIMITER_MAX_DELAY>",
            "--rate-limiter-qps <RATE_LIMITER_QPS>",
            "--rate-limiter-bucket-size <RATE_LIMITER_BUCKET_SIZE>",
        ] {
            assert!(
                help.contains(flag),
                "{command} --help lacks {flag}:\n{help}"
            );
        }
        if command != "agent" {
            assert!(
                help.contains("--resource-eviction-rate <RESOURCE_EVICTION_RATE>"),
                "{command} --help lacks --resource-eviction-rate:\n{help}"
            );
        }
    }
}

#[test]
fn cluster_taint_policies_are_validated_as_karmadas_webhook_does() {
    let cp = Server::start();
    let err = apply_err(&cp, DOWN_POLICY);
    assert!(
        err.contains(
            "admission webhook \"clustertaintpolicy.karmada.io\" denied the request: spec.taints[0]: Forbidden: Configuring taint with NoExecute effect is not allowed, this capability must be explicitly enabled by administrators through command-line flags"
        ),
        "{err}"
    );
    let no_schedule = DOWN_POLICY.replace("NoExecute", "NoSchedule");
    cp.kubectl_stdin_ok(&["apply", "-f", "-"], &no_schedule);
    let table = cp.kubectl_ok(&["get", "clustertaintpolicies"]);
    assert!(table.starts_with("NAME   AGE"), "{table}");
    let dup = no_schedule.replace(
        "taints: [{key: failover.karmada-rs.io/down, effect: NoSchedule}]",
        "taints: [{key: a, effect: NoSchedule}, {key: a, effect: NoSchedule}]",
    );
    let err = apply_err(&cp, &dup);
    assert!(
        err.contains("spec.taints[0]: Duplicate value: \"Duplicate taint with the same key(a) and effect(NoSchedule) is not allowed\""),
        "{err}"
    );
    let empty = no_schedule.replace(
        "taints: [{key: failover.karmada-rs.io/down, effect: NoSchedule}]",
        "taints: []",
    );
    let err = apply_err(&cp, &empty);
    assert!(
        err.contains(
            "spec.taints: Invalid value: 0: spec.taints in body should have at least 1 items"
        ),
        "{err}"
    );
}

#[test]
fn a_pull_cluster_that_stops_reporting_goes_unknown_and_unreachable() {
    let cp = Server::start_with(
        Backend::Embedded,
        &[
            "--cluster-monitor-period=200ms",
            "--cluster-monitor-grace-period=6s",
            "--cluster-startup-grace-period=3s",
        ],
    );
    cp.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: agent1}
spec: {syncMode: Pull}
",
    );
    let ready = |c: &Value| -> Option<(String, String)> {
        c["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|x| x["type"] == "Ready")
            .map(|x| {
                (
                    x["status"].as_str().unwrap_or("").to_owned(),
                    x["reason"].as_str().unwrap_or("").to_owned(),
                )
            })
    };
    let taint_keys = |c: &Value| -> Vec<String> {
        c["spec"]["taints"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|t| {
                        format!(
                            "{}:{}",
                            t["key"].as_str().unwrap_or(""),
                            t["effect"].as_str().unwrap_or("")
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    // Never posted: Unknown after the startup grace period, tainted unreachable.
    wait_for("Ready=Unknown, never updated", DEADLINE, || {
        let c = cp.get_json(&["cluster", "agent1"]);
        (ready(&c) == Some(("Unknown".into(), "ClusterStatusNeverUpdated".into()))
            && taint_keys(&c) == ["cluster.karmada.io/unreachable:NoSchedule"])
        .then_some(())
    });
    // The agent posts Ready=True and renews its Lease: the taint goes.
    let now = || k8s_openapi::jiff::Timestamp::now().to_string();
    let post = |status: &str| {
        cp.kubectl_ok(&[
            "patch",
            "cluster",
            "agent1",
            "--subresource=status",
            "--type=merge",
            "-p",
            &format!(
                r#"{{"status":{{"conditions":[{{"type":"Ready","status":"{status}","reason":"ClusterReady","message":"cluster is healthy and ready to accept workloads","lastTransitionTime":"{}"}}]}}}}"#,
                now()
            ),
        ]);
    };
    post("True");
    let lease = |renew: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {{name: agent1, namespace: karmada-cluster}}
spec: {{holderIdentity: agent1, leaseDurationSeconds: 40, renewTime: '{renew}'}}
"
        )
    };
    let renew_until = std::time::Instant::now() + std::time::Duration::from_secs(9);
    // While the Lease is renewed the cluster stays Ready past the grace period.
    while std::time::Instant::now() < renew_until {
        let t = k8s_openapi::jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
            .to_string();
        cp.kubectl_stdin_ok(&["apply", "-f", "-"], &lease(&t));
        let c = cp.get_json(&["cluster", "agent1"]);
        if std::time::Instant::now() + std::time::Duration::from_secs(1) < renew_until {
            assert_ne!(
                ready(&c).map(|r| r.0),
                Some("Unknown".into()),
                "renewed, so fresh"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    wait_for("the unreachable taint to go", DEADLINE, || {
        let c = cp.get_json(&["cluster", "agent1"]);
        taint_keys(&c).is_empty().then_some(())
    });
    // The agent stops: Unknown with ClusterStatusUnknown, tainted unreachable again.
    wait_for("Ready=Unknown, stopped", DEADLINE, || {
        let c = cp.get_json(&["cluster", "agent1"]);
        (ready(&c) == Some(("Unknown".into(), "ClusterStatusUnknown".into()))
            && taint_keys(&c) == ["cluster.karmada.io/unreachable:NoSchedule"])
        .then_some(())
    });
}

/// Keeps (or stops keeping) a Deployment unready on a member through the simulator's switch.
fn hold_unready(env: &Env, member: &str, name: &str, hold: bool) {
    let value = if hold {
        "simulator.karmada-rs.io/ready=false"
    } else {
        "simulator.karmada-rs.io/ready-"
    };
    env.member(member).kubectl_ok(&[
        "annotate",
        "deploy",
        name,
        "-n",
        "default",
        "--overwrite",
        value,
    ]);
}

fn health_on(rb: &Value, cluster: &str) -> Option<String> {
    rb["status"]["aggregatedStatus"]
        .as_array()?
        .iter()
        .find(|s| s["clusterName"] == cluster)
        .and_then(|s| s["health"].as_str().map(str::to_owned))
}

#[test]
fn application_failover_moves_an_unhealthy_workload_and_never_keeps_the_old_copy() {
    let env = Env::start_with_flags(Backend::Embedded, 3, &[]);
    let app = |name: &str, toleration: u32, purge: &str| {
        format!(
            "{}{}",
            deployment(name, 2),
            policy(
                name,
                "    clusterAffinity: {clusterNames: [member1, member2, member3]}
    spreadConstraints: [{spreadByField: cluster, maxGroups: 2, minGroups: 2}]
    replicaScheduling: {replicaSchedulingType: Duplicated}",
                &format!(
                    "  propagateDeps: true
  failover:
    application:
      decisionConditions: {{tolerationSeconds: {toleration}}}
      purgeMode: {purge}
"
                ),
            )
        )
    };
    env.apply(&app("never", 2, "Never"));
    env.apply(&app("flaky", 60, "Gracefully"));
    let first = |name: &str| {
        env.wait(&format!("{name} healthy on two clusters"), || {
            let b = rb(&env, name)?;
            let c = clusters(&b);
            (c.len() == 2
                && c.iter()
                    .all(|(n, _)| health_on(&b, n).as_deref() == Some("Healthy")))
            .then(|| c[0].0.clone())
        })
    };
    let victim = first("never");
    let old_uid = uid_on(&env, &victim, "never");
    hold_unready(&env, &victim, "never", true);
    // Unhealthy for longer than 2 s: evicted with suppressDeletion, replaced elsewhere (the
    // eviction and the scheduler's new placement are two writes: both are waited for).
    let b = env.wait(
        "never evicted from its unhealthy cluster and replaced",
        || {
            let b = rb(&env, "never")?;
            let t = tasks(&b);
            let cs = clusters(&b);
            (cs.iter().all(|(n, _)| *n != victim) && cs.len() == 2 && t.len() == 1).then_some(b)
        },
    );
    let t = &tasks(&b)[0];
    assert_eq!(t["fromCluster"], victim.as_str());
    assert_eq!(t["purgeMode"], "Never");
    assert_eq!(t["suppressDeletion"], true);
    assert_eq!(t["reason"], "ApplicationFailure");
    assert_eq!(
        t["producer"],
        "resource-binding-application-failover-controller"
    );
    assert_eq!(clusters(&b).len(), 2, "replaced on another cluster");
    let wide = env.cp.kubectl_ok(&[
        "get",
        "rb",
        "never-deployment",
        "-n",
        "default",
        "-o",
        "wide",
    ]);
    assert!(
        wide.contains("EVICTING-FROM") && wide.contains(&victim),
        "{wide}"
    );
    // Events are recorded asynchronously.
    env.wait("the failover's events on the template", || {
        let ev = events_for(&env, "Deployment", "never");
        (ev.contains("ApplicationUnhealthy") && ev.contains("ApplicationFailure")).then_some(())
    });
    // Never: the old copy stays, whatever the new copies' health, until a person acts.
    env.wait("the new copies healthy", || {
        let b = rb(&env, "never")?;
        clusters(&b)
            .iter()
            .all(|(n, _)| health_on(&b, n).as_deref() == Some("Healthy"))
            .then_some(())
    });
    env.barrier(&victim);
    assert_eq!(uid_on(&env, &victim, "never"), old_uid, "kept");
    assert_eq!(tasks(&rb(&env, "never").expect("rb")).len(), 1);
    env.cp.kubectl_ok(&[
        "patch",
        "rb",
        "never-deployment",
        "-n",
        "default",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/gracefulEvictionTasks/0/suppressDeletion","value":false}]"#,
    ]);
    env.wait("the task ends and the old copy goes", || {
        let b = rb(&env, "never")?;
        (tasks(&b).is_empty() && uid_on(&env, &victim, "never") != old_uid).then_some(())
    });

    // Recovery within the toleration cancels the countdown.
    let victim = first("flaky");
    let before = clusters(&rb(&env, "flaky").expect("rb"));
    hold_unready(&env, &victim, "flaky", true);
    env.wait("the countdown starts", || {
        events_for(&env, "ResourceBinding", "flaky-deployment")
            .contains("ApplicationUnhealthy")
            .then_some(())
    });
    hold_unready(&env, &victim, "flaky", false);
    env.wait("the countdown is canceled", || {
        events_for(&env, "ResourceBinding", "flaky-deployment")
            .contains("ApplicationFailoverCanceled")
            .then_some(())
    });
    let b = rb(&env, "flaky").expect("rb");
    assert_eq!(clusters(&b), before);
    assert!(tasks(&b).is_empty());
}

/// A `kubectl get -w -o json` running against the control plane or a member; what it printed
/// so far is collected by a reader thread. Stopped (by its PID) on drop.
struct MemberWatch {
    child: std::process::Child,
    seen: std::sync::Arc<std::sync::Mutex<String>>,
}

impl MemberWatch {
    fn start(env: &Env, member: &str, args: &[&str]) -> MemberWatch {
        let m = env.member(member);
        MemberWatch::spawn(
            support::kubectl_cmd(&m.kubeconfig, &m.dir.path().join("watch-cache")),
            args,
        )
    }

    fn spawn(mut cmd: std::process::Command, args: &[&str]) -> MemberWatch {
        use std::io::Read;
        let mut child = cmd
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("kubectl watch");
        let mut out = child.stdout.take().expect("stdout");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = seen.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        MemberWatch { child, seen }
    }

    fn output(&self) -> String {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Every complete object printed so far (the last one may still be arriving).
    fn objects(&self) -> Vec<Value> {
        let out = self.output();
        serde_json::Deserializer::from_str(&out)
            .into_iter::<Value>()
            .map_while(Result::ok)
            .collect()
    }
}

impl Drop for MemberWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The other of member1 and member2.
fn other_member(victim: &str) -> &'static str {
    if victim == "member1" {
        "member2"
    } else {
        "member1"
    }
}

/// Watches every version of the Deployments on `target` and of `name`'s binding: the preserved
/// labels and the eviction task only stand until the new copy is healthy, which a poll can
/// miss on a loaded machine.
fn watch_move(env: &Env, target: &str, name: &str) -> (MemberWatch, MemberWatch) {
    let deployments = MemberWatch::start(
        env,
        target,
        &["get", "deploy", "-n", "default", "-w", "-o", "json"],
    );
    let binding = MemberWatch::spawn(
        env.cp.kubectl_cmd(),
        &[
            "get",
            "rb",
            &format!("{name}-deployment"),
            "-n",
            "default",
            "-w",
            "-o",
            "json",
        ],
    );
    (deployments, binding)
}

/// The one eviction task of the first binding version seen that no longer targets `victim`.
fn eviction_task(env: &Env, what: &str, rb_watch: &MemberWatch, victim: &str) -> Value {
    env.wait(what, || {
        rb_watch.objects().into_iter().find_map(|b| {
            let t = tasks(&b);
            (clusters(&b).iter().all(|(n, _)| *n != victim) && t.len() == 1).then(|| t[0].clone())
        })
    })
}

#[test]
fn application_failover_carries_preserved_state_as_labels_to_the_new_cluster() {
    let env = Env::start_with_flags(Backend::Embedded, 3, &[]);
    env.apply(&format!(
        "{}{}",
        deployment("stateful", 2),
        policy(
            "stateful",
            "    clusterAffinity: {clusterNames: [member1, member2]}
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    replicaScheduling: {replicaSchedulingType: Duplicated}",
            "  propagateDeps: true
  failover:
    application:
      decisionConditions: {tolerationSeconds: 2}
      purgeMode: Directly
      statePreservation:
        rules:
        - {aliasLabelName: failover.karmada-rs.io/replicas, jsonPath: '{ .replicas }'}
        - {aliasLabelName: failover.karmada-rs.io/generation, jsonPath: 'gen-{.observedGeneration}'}
",
        )
    ));
    let victim = env.wait("stateful healthy on one cluster", || {
        let b = rb(&env, "stateful")?;
        let c = clusters(&b);
        (c.len() == 1 && health_on(&b, &c[0].0).as_deref() == Some("Healthy"))
            .then(|| c[0].0.clone())
    });
    let target = other_member(&victim);
    let (watch, rb_watch) = watch_move(&env, target, "stateful");
    // Holding the copy unready is an annotation, which bumps a Deployment's generation (as
    // kube's deployment strategy does): the unready status the state is read from observes
    // the new generation, which `annotate -o json` reports.
    let held: serde_json::Value = serde_json::from_str(&env.member(&victim).kubectl_ok(&[
        "annotate",
        "deploy",
        "stateful",
        "-n",
        "default",
        "--overwrite",
        "simulator.karmada-rs.io/ready=false",
        "-o",
        "json",
    ]))
    .expect("kubectl annotate -o json");
    let generation = held["metadata"]["generation"]
        .as_i64()
        .expect("generation of the held copy");
    // The task stands only until the new copy is healthy, which a poll can miss on a loaded
    // machine: every version of the binding is watched.
    let t = eviction_task(
        &env,
        "stateful evicted from its unhealthy cluster",
        &rb_watch,
        &victim,
    );
    drop(rb_watch);
    assert_eq!(t["purgeMode"], "Directly");
    assert_eq!(
        t["preservedLabelState"],
        serde_json::json!({
            "failover.karmada-rs.io/replicas": "2",
            "failover.karmada-rs.io/generation": format!("gen-{generation}"),
        })
    );
    assert_eq!(t["clustersBeforeFailover"], serde_json::json!([victim]));
    env.wait("stateful scheduled to the other cluster", || {
        (clusters(&rb(&env, "stateful")?) == [(target.to_owned(), 2)]).then_some(())
    });
    let replicas = r#""failover.karmada-rs.io/replicas": "2""#;
    let gen_label = format!(r#""failover.karmada-rs.io/generation": "gen-{generation}""#);
    env.wait("the new copy carries the preserved state", || {
        let out = watch.output();
        (out.contains(replicas) && out.contains(&gen_label)).then_some(())
    });
    drop(watch);
    // The old copy went at once (Directly).
    env.wait_member_absent(&victim, &["deploy", "stateful", "-n", "default"]);
}

/// Cluster failover with `failover.cluster.statePreservation`: when the member a workload runs
/// on dies and the NoExecute taint evicts it, the eviction task carries the state read from the
/// last status the dead member reported, and the copy on the cluster it moves to gets it as
/// labels.
#[test]
fn cluster_failover_carries_preserved_state_as_labels_to_the_new_cluster() {
    let mut env = Env::start_with_flags(Backend::Embedded, 3, FAILOVER_FLAGS);
    env.apply(DOWN_POLICY);
    env.apply(&format!(
        "{}{}",
        deployment("kept", 3),
        policy(
            "kept",
            "    clusterAffinity: {clusterNames: [member1, member2]}
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    replicaScheduling: {replicaSchedulingType: Duplicated}",
            "  failover:
    cluster:
      purgeMode: Directly
      statePreservation:
        rules:
        - {aliasLabelName: failover.karmada-rs.io/ready, jsonPath: '{ .readyReplicas }'}
",
        )
    ));
    let victim = env.wait("kept ready on one cluster", || {
        let c = clusters(&rb(&env, "kept")?);
        (c.len() == 1 && ready_on(&env, &c[0].0, "kept") == 3).then(|| c[0].0.clone())
    });
    // The binding reflects the member's status (3 ready) before the member goes.
    env.wait("the binding reflects kept's status", || {
        let b = rb(&env, "kept")?;
        b["status"]["aggregatedStatus"]
            .as_array()?
            .iter()
            .any(|s| s["clusterName"] == victim.as_str() && s["status"]["readyReplicas"] == 3)
            .then_some(())
    });
    let target = other_member(&victim);
    let (watch, rb_watch) = watch_move(&env, target, "kept");
    let index: usize = victim
        .trim_start_matches("member")
        .parse::<usize>()
        .expect("memberN")
        - 1;
    env.members[index].stop();
    let t = eviction_task(
        &env,
        "kept evicted from the dead member",
        &rb_watch,
        &victim,
    );
    drop(rb_watch);
    assert_eq!(t["purgeMode"], "Directly");
    assert_eq!(t["reason"], "TaintUntolerated");
    assert_eq!(
        t["preservedLabelState"],
        serde_json::json!({"failover.karmada-rs.io/ready": "3"})
    );
    // Karmada's taint manager records no clustersBeforeFailover (only application failover
    // does), so the labels go to every cluster the workload is on after the eviction.
    assert!(t.get("clustersBeforeFailover").is_none(), "{t}");
    env.wait("kept scheduled to the other cluster", || {
        (clusters(&rb(&env, "kept")?) == [(target.to_owned(), 3)]).then_some(())
    });
    env.wait("the new copy carries the preserved state", || {
        watch
            .output()
            .contains(r#""failover.karmada-rs.io/ready": "3""#)
            .then_some(())
    });
}

#[test]
fn a_recovered_member_gets_replicas_back_by_rebalancer_or_by_opt_in_bounded_steps() {
    let mut env = Env::start_with_flags(Backend::Embedded, 3, FAILOVER_FLAGS);
    env.apply(DOWN_POLICY);
    let mut yaml = deployment("manual", 6);
    yaml += &policy("manual", ALL_DIVIDED, "");
    yaml += &deployment("auto", 6);
    yaml += &policy("auto", ALL_DIVIDED, "").replace(
        "metadata: {name: auto, namespace: default}",
        "metadata:
  name: auto
  namespace: default
  annotations:
    policy.karmada-rs.io/rebalance-on-recovery: 'true'
    policy.karmada-rs.io/rebalance-on-recovery-max-share: '20%'",
    );
    env.apply(&yaml);
    let spread = [
        ("member1".to_string(), 2),
        ("member2".to_string(), 2),
        ("member3".to_string(), 2),
    ];
    for name in ["manual", "auto"] {
        env.wait(&format!("{name} spread over three"), || {
            (clusters(&rb(&env, name)?) == spread).then_some(())
        });
    }
    env.members[2].stop();
    for name in ["manual", "auto"] {
        env.wait(&format!("{name} moved off member3"), || {
            let b = rb(&env, name)?;
            (clusters(&b) == [("member1".to_string(), 3), ("member2".to_string(), 3)]
                && tasks(&b).is_empty())
            .then_some(())
        });
    }
    env.members[2].restart();
    env.wait_ready("member3", "True");
    env.wait("member3's taints removed", || {
        cluster_taints(&env, "member3").is_empty().then_some(())
    });
    // Opted in: back to 2/2/2, one replica (20% of 6, at least one) per step.
    env.wait("auto back on member3", || {
        let b = rb(&env, "auto")?;
        (clusters(&b) == spread && ready_on(&env, "member3", "auto") == 2).then_some(())
    });
    let steps = events_for(&env, "ResourceBinding", "auto-deployment")
        .lines()
        .filter(|l| l.starts_with("RebalanceOnRecovery"))
        .count();
    assert_eq!(steps, 2, "two steps of one replica");
    // Not opted in: stays where failover put it until a WorkloadRebalancer asks.
    env.barrier("member3");
    assert_eq!(
        clusters(&rb(&env, "manual").expect("rb")),
        [("member1".to_string(), 3), ("member2".to_string(), 3)]
    );
    env.apply(
        "apiVersion: apps.karmada.io/v1alpha1
kind: WorkloadRebalancer
metadata: {name: back}
spec:
  ttlSecondsAfterFinished: 3
  workloads:
  - {apiVersion: apps/v1, kind: Deployment, name: manual, namespace: default}
  - {apiVersion: apps/v1, kind: Deployment, name: missing, namespace: default}
",
    );
    env.wait("manual rebalanced", || {
        let b = rb(&env, "manual")?;
        (clusters(&b) == spread).then_some(())
    });
    let r = env.wait("the rebalancer's results", || {
        let out = env
            .cp
            .kubectl(&["get", "workloadrebalancer", "back", "-o", "json"]);
        let r: Value = serde_json::from_slice(&out.stdout).ok()?;
        r["status"]["finishTime"].is_string().then_some(r)
    });
    assert_eq!(
        r["status"]["observedWorkloads"],
        serde_json::json!([
            {"workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "manual", "namespace": "default"}, "result": "Successful"},
            {"workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "missing", "namespace": "default"}, "result": "Failed", "reason": "ReferencedBindingNotFound"},
        ])
    );
    env.wait("the rebalancer deleted after its TTL", || {
        (!env
            .cp
            .kubectl(&["get", "workloadrebalancer", "back"])
            .status
            .success())
        .then_some(())
    });
}
