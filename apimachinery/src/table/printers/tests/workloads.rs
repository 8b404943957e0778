use super::*;

fn template(containers: &[(&str, &str)]) -> Value {
    let containers: Vec<Value> = containers
        .iter()
        .map(|(name, image)| json!({"name": name, "image": image}))
        .collect();
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}})
}

#[test]
fn deployment_cells() {
    check(
        "apps",
        "Deployment",
        vec![
            (
                "rolling out",
                json!({"metadata": meta("web", 600),
                       "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                                "template": template(&[("nginx", "nginx:1.27"), ("log", "fluent-bit:3")])},
                       "status": {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}}),
                json!([
                    "web",
                    "2/3",
                    3,
                    2,
                    "10m",
                    "nginx,log",
                    "nginx:1.27,fluent-bit:3",
                    "app=web"
                ]),
            ),
            (
                "scaled to zero, no status",
                json!({"metadata": meta("idle", 600),
                       "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "idle"},
                                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]},
                                "template": template(&[("app", "idle:1")])}}),
                json!([
                    "idle",
                    "0/0",
                    0,
                    0,
                    "10m",
                    "app",
                    "idle:1",
                    "app=idle,tier in (a,b)"
                ]),
            ),
            (
                "replicas not defaulted yet, no selector",
                json!({"metadata": meta("bare", 600), "spec": {"template": template(&[])}}),
                json!(["bare", "0/1", 0, 0, "10m", "", "", ""]),
            ),
            (
                "invalid selector",
                json!({"metadata": meta("bad", 600),
                       "spec": {"replicas": 1, "selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}}),
                json!(["bad", "0/1", 0, 0, "10m", "", "", "<invalid>"]),
            ),
        ],
    );
}

#[test]
fn stateful_set_daemon_set_replica_set_cells() {
    check(
        "apps",
        "StatefulSet",
        vec![
            (
                "partly ready",
                json!({"metadata": meta("db", 3600),
                       "spec": {"replicas": 3, "serviceName": "db", "template": template(&[("pg", "postgres:16")])},
                       "status": {"replicas": 3, "readyReplicas": 1}}),
                json!(["db", "1/3", "60m", "pg", "postgres:16"]),
            ),
            (
                "no replicas field, no status",
                json!({"metadata": meta("new", 3600), "spec": {"template": template(&[("pg", "postgres:16")])}}),
                json!(["new", "0/1", "60m", "pg", "postgres:16"]),
            ),
        ],
    );
    check(
        "apps",
        "DaemonSet",
        vec![
            (
                "node agent",
                json!({"metadata": meta("agent", 86400 * 3),
                       "spec": {"selector": {"matchLabels": {"app": "agent"}},
                                "template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux"},
                                                      "containers": [{"name": "agent", "image": "agent:2"}]}}},
                       "status": {"desiredNumberScheduled": 5, "currentNumberScheduled": 5, "numberReady": 4,
                                  "updatedNumberScheduled": 3, "numberAvailable": 4}}),
                json!([
                    "agent",
                    5,
                    5,
                    4,
                    3,
                    4,
                    "kubernetes.io/os=linux",
                    "3d",
                    "agent",
                    "agent:2",
                    "app=agent"
                ]),
            ),
            (
                "no node selector, no status",
                json!({"metadata": meta("new", 30), "spec": {"template": {"spec": {"containers": []}}}}),
                json!(["new", 0, 0, 0, 0, 0, "<none>", "30s", "", "", "<none>"]),
            ),
        ],
    );
    check(
        "apps",
        "ReplicaSet",
        vec![
            (
                "owned by a deployment",
                json!({"metadata": meta("web-5d4f8", 600),
                       "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d4f8"}},
                                "template": template(&[("nginx", "nginx:1.27")])},
                       "status": {"replicas": 3, "readyReplicas": 2}}),
                json!([
                    "web-5d4f8",
                    3,
                    3,
                    2,
                    "10m",
                    "nginx",
                    "nginx:1.27",
                    "app=web,pod-template-hash=5d4f8"
                ]),
            ),
            (
                "old replica set scaled down",
                json!({"metadata": meta("web-1a2b3", 600),
                       "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                                "template": template(&[("nginx", "nginx:1.26")])},
                       "status": {"replicas": 0}}),
                json!([
                    "web-1a2b3",
                    0,
                    0,
                    0,
                    "10m",
                    "nginx",
                    "nginx:1.26",
                    "app=web"
                ]),
            ),
        ],
    );
}

fn job(name: &str, spec: Value, status: Value) -> Value {
    let mut spec = spec;
    spec["template"] = template(&[("work", "busybox:1.36")]);
    json!({"metadata": meta(name, 900), "spec": spec, "status": status})
}

#[test]
fn job_cells() {
    let selector = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "0f1e"}});
    let wide = |status: &str, completions: &str, duration: &str| {
        json!([status, completions, duration, "15m", "work", "busybox:1.36"])
    };
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "running with completions",
            job(
                "a",
                json!({"completions": 3, "parallelism": 1, "selector": selector}),
                json!({"startTime": ago(300), "active": 1, "succeeded": 1}),
            ),
            wide("Running", "1/3", "5m"),
        ),
        (
            "complete",
            job(
                "b",
                json!({"completions": 1, "parallelism": 1}),
                json!({"startTime": ago(600), "completionTime": ago(540), "succeeded": 1,
                       "conditions": [{"type": "SuccessCriteriaMet", "status": "True"},
                                      {"type": "Complete", "status": "True"}]}),
            ),
            wide("Complete", "1/1", "60s"),
        ),
        (
            "failed",
            job(
                "c",
                json!({"completions": 1, "backoffLimit": 0}),
                json!({"startTime": ago(600), "failed": 1,
                       "conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Failed", "status": "True"}]}),
            ),
            wide("Failed", "0/1", "10m"),
        ),
        (
            "failure target only",
            job(
                "d",
                json!({"completions": 1}),
                json!({"startTime": ago(600), "conditions": [{"type": "FailureTarget", "status": "True"}]}),
            ),
            wide("FailureTarget", "0/1", "10m"),
        ),
        (
            "suspended, never started",
            job(
                "e",
                json!({"completions": 2, "suspend": true}),
                json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
            ),
            wide("Suspended", "0/2", ""),
        ),
        (
            "terminating",
            json!({"metadata": {"name": "f", "creationTimestamp": ago(900), "deletionTimestamp": ago(2)},
                   "spec": {"completions": 1, "template": template(&[("work", "busybox:1.36")])},
                   "status": {"startTime": ago(300)}}),
            wide("Terminating", "0/1", "5m"),
        ),
        (
            "work queue: parallelism without completions",
            job(
                "g",
                json!({"parallelism": 3}),
                json!({"startTime": ago(120), "succeeded": 2}),
            ),
            wide("Running", "2/1 of 3", "2m"),
        ),
        (
            "neither completions nor parallelism",
            job("h", json!({}), json!({})),
            wide("Running", "0/1", ""),
        ),
        (
            "complete condition that is False does not count",
            job(
                "i",
                json!({"completions": 1}),
                json!({"startTime": ago(60), "conditions": [{"type": "Complete", "status": "False"}]}),
            ),
            wide("Running", "0/1", "60s"),
        ),
    ];
    let printer = builtin_printer("batch", "Job").unwrap();
    for (what, obj, want) in cases {
        let cells = printer.cells(&obj, now());
        assert_eq!(Value::Array(cells[1..7].to_vec()), want, "Job: {what}");
        assert_eq!(cells[0], obj["metadata"]["name"], "Job: {what}");
        let selector_cell = if obj["spec"]["selector"].is_null() {
            json!("<none>")
        } else {
            json!("batch.kubernetes.io/controller-uid=0f1e")
        };
        assert_eq!(cells[7], selector_cell, "Job: {what}");
    }
}

#[test]
fn cron_job_cells() {
    let job_template = json!({"spec": {"selector": null,
                              "template": {"spec": {"containers": [{"name": "backup", "image": "restic:0.17"}]}}}});
    check(
        "batch",
        "CronJob",
        vec![
            (
                "scheduled and running",
                json!({"metadata": meta("backup", 86400),
                       "spec": {"schedule": "*/5 * * * *", "suspend": false, "jobTemplate": job_template},
                       "status": {"active": [{"name": "backup-28571234"}], "lastScheduleTime": ago(180)}}),
                json!([
                    "backup",
                    "*/5 * * * *",
                    "<none>",
                    "False",
                    1,
                    "3m",
                    "24h",
                    "backup",
                    "restic:0.17",
                    "<none>"
                ]),
            ),
            (
                "suspended with a time zone, never scheduled",
                json!({"metadata": meta("report", 86400),
                       "spec": {"schedule": "0 6 * * 1", "timeZone": "Europe/Paris", "suspend": true,
                                "jobTemplate": {"spec": {"selector": {"matchLabels": {"job": "report"}},
                                                         "template": {"spec": {"containers": []}}}}},
                       "status": {}}),
                json!([
                    "report",
                    "0 6 * * 1",
                    "Europe/Paris",
                    "True",
                    0,
                    "<none>",
                    "24h",
                    "",
                    "",
                    "job=report"
                ]),
            ),
            (
                "suspend not defaulted yet",
                json!({"metadata": meta("fresh", 10), "spec": {"schedule": "@hourly"}}),
                json!([
                    "fresh", "@hourly", "<none>", "False", 0, "<none>", "10s", "", "", "<none>"
                ]),
            ),
        ],
    );
}
