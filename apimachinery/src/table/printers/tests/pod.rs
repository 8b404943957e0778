use super::*;

fn pod(name: &str, spec: Value, status: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta(name, 300), "spec": spec, "status": status})
}

fn one_container() -> Value {
    json!({"containers": [{"name": "app", "image": "nginx:1.27"}]})
}

fn running(name: &str, ready: bool, restarts: i64) -> Value {
    json!({"name": name, "ready": ready, "restartCount": restarts, "started": true,
           "state": {"running": {"startedAt": ago(250)}}})
}

fn waiting(name: &str, reason: &str) -> Value {
    json!({"name": name, "ready": false, "restartCount": 0, "state": {"waiting": {"reason": reason}}})
}

fn terminated(name: &str, reason: &str, exit_code: i64, signal: i64) -> Value {
    json!({"name": name, "ready": false, "restartCount": 0,
           "state": {"terminated": {"reason": reason, "exitCode": exit_code, "signal": signal}}})
}

#[test]
fn pod_cells() {
    let cases: Vec<Case> = vec![
        (
            "running with two ready containers",
            pod(
                "web-1",
                json!({"nodeName": "node-a", "containers": [{"name": "app"}, {"name": "log"}]}),
                json!({"phase": "Running", "podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [running("app", true, 0), running("log", true, 0)]}),
            ),
            json!([
                "web-1", "2/2", "Running", "0", "5m", "10.0.0.5", "node-a", "<none>", "<none>"
            ]),
        ),
        (
            "freshly created: no status at all",
            json!({"metadata": meta("new", 5), "spec": one_container()}),
            json!([
                "new", "0/1", "Pending", "0", "5s", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "podIP only (no podIPs)",
            pod(
                "old",
                one_container(),
                json!({"phase": "Running", "podIP": "10.1.1.1"}),
            ),
            json!([
                "old", "0/1", "Running", "0", "5m", "10.1.1.1", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "container creating",
            pod(
                "c",
                one_container(),
                json!({"phase": "Pending", "containerStatuses": [waiting("app", "ContainerCreating")]}),
            ),
            json!([
                "c",
                "0/1",
                "ContainerCreating",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "crash loop with restarts",
            pod(
                "crash",
                one_container(),
                json!({"phase": "Running", "containerStatuses": [{
                    "name": "app", "ready": false, "restartCount": 5,
                    "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                    "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(130)}}
                }]}),
            ),
            json!([
                "crash",
                "0/1",
                "CrashLoopBackOff",
                "5 (2m10s ago)",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "restarts without a termination time",
            pod(
                "r",
                one_container(),
                json!({"phase": "Running", "containerStatuses": [running("app", true, 2)]}),
            ),
            json!([
                "r", "1/1", "Running", "2", "5m", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "first init container still running",
            pod(
                "i",
                json!({"initContainers": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "app"}]}),
                json!({"phase": "Pending",
                       "initContainerStatuses": [waiting("a", "PodInitializing"), waiting("b", "PodInitializing")],
                       "containerStatuses": [waiting("app", "PodInitializing")]}),
            ),
            json!([
                "i", "0/1", "Init:0/2", "0", "5m", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "second init container crash looping",
            pod(
                "i2",
                json!({"initContainers": [{"name": "a"}, {"name": "b"}], "containers": [{"name": "app"}]}),
                json!({"phase": "Pending",
                       "initContainerStatuses": [terminated("a", "Completed", 0, 0), waiting("b", "CrashLoopBackOff")],
                       "containerStatuses": [waiting("app", "PodInitializing")]}),
            ),
            json!([
                "i2",
                "0/1",
                "Init:CrashLoopBackOff",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "init container failed with a reason",
            pod(
                "i3",
                json!({"initContainers": [{"name": "a"}], "containers": [{"name": "app"}]}),
                json!({"phase": "Pending", "initContainerStatuses": [terminated("a", "Error", 1, 0)]}),
            ),
            json!([
                "i3",
                "0/1",
                "Init:Error",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "init container failed without a reason",
            pod(
                "i4",
                json!({"initContainers": [{"name": "a"}], "containers": [{"name": "app"}]}),
                json!({"phase": "Pending", "initContainerStatuses": [terminated("a", "", 2, 0)]}),
            ),
            json!([
                "i4",
                "0/1",
                "Init:ExitCode:2",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "init container killed by a signal",
            pod(
                "i5",
                json!({"initContainers": [{"name": "a"}], "containers": [{"name": "app"}]}),
                json!({"phase": "Pending", "initContainerStatuses": [terminated("a", "", 137, 9)]}),
            ),
            json!([
                "i5",
                "0/1",
                "Init:Signal:9",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "running sidecar init container counts as a container",
            pod(
                "side",
                json!({"initContainers": [{"name": "proxy", "restartPolicy": "Always"}], "containers": [{"name": "app"}]}),
                json!({"phase": "Running",
                       "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
                       "initContainerStatuses": [{"name": "proxy", "ready": true, "started": true, "restartCount": 1,
                                                  "state": {"running": {}},
                                                  "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(60)}}}],
                       "containerStatuses": [running("app", true, 2)]}),
            ),
            json!([
                "side",
                "2/2",
                "Running",
                "3 (60s ago)",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "succeeded pod",
            pod(
                "done",
                one_container(),
                json!({"phase": "Succeeded", "containerStatuses": [terminated("app", "Completed", 0, 0)]}),
            ),
            json!([
                "done",
                "0/1",
                "Completed",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "failed pod",
            pod(
                "oops",
                one_container(),
                json!({"phase": "Failed", "containerStatuses": [terminated("app", "Error", 1, 0)]}),
            ),
            json!([
                "oops", "0/1", "Error", "0", "5m", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "container killed without a reason",
            pod(
                "killed",
                one_container(),
                json!({"phase": "Running", "containerStatuses": [terminated("app", "", 137, 0)]}),
            ),
            json!([
                "killed",
                "0/1",
                "ExitCode:137",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "evicted pod",
            pod(
                "ev",
                one_container(),
                json!({"phase": "Failed", "reason": "Evicted"}),
            ),
            json!([
                "ev", "0/1", "Evicted", "0", "5m", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "one container completed, another still running, pod not ready",
            pod(
                "mix",
                json!({"containers": [{"name": "job"}, {"name": "server"}]}),
                json!({"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "False"}],
                       "containerStatuses": [terminated("job", "Completed", 0, 0), running("server", true, 0)]}),
            ),
            json!([
                "mix", "1/2", "NotReady", "0", "5m", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "one container completed, another still running, pod ready",
            pod(
                "mix2",
                json!({"containers": [{"name": "job"}, {"name": "server"}]}),
                json!({"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [terminated("job", "Completed", 0, 0), running("server", true, 0)]}),
            ),
            json!([
                "mix2", "1/2", "Running", "0", "5m", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "terminating running pod",
            json!({"metadata": {"name": "bye", "creationTimestamp": ago(600), "deletionTimestamp": ago(-30)},
                   "spec": {"nodeName": "node-b", "containers": [{"name": "app"}]},
                   "status": {"phase": "Running", "containerStatuses": [running("app", true, 0)]}}),
            json!([
                "bye",
                "1/1",
                "Terminating",
                "0",
                "10m",
                "<none>",
                "node-b",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "terminating pod that already succeeded",
            json!({"metadata": {"name": "bye2", "creationTimestamp": ago(600), "deletionTimestamp": ago(-30)},
                   "spec": one_container(),
                   "status": {"phase": "Succeeded", "containerStatuses": [terminated("app", "Completed", 0, 0)]}}),
            json!([
                "bye2",
                "0/1",
                "Completed",
                "0",
                "10m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "terminating pod on a lost node",
            json!({"metadata": {"name": "lost", "creationTimestamp": ago(600), "deletionTimestamp": ago(10)},
                   "spec": one_container(),
                   "status": {"phase": "Running", "reason": "NodeLost"}}),
            json!([
                "lost", "0/1", "Unknown", "0", "10m", "<none>", "<none>", "<none>", "<none>"
            ]),
        ),
        (
            "scheduling gated",
            pod(
                "gated",
                one_container(),
                json!({"phase": "Pending",
                       "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
            ),
            json!([
                "gated",
                "0/1",
                "SchedulingGated",
                "0",
                "5m",
                "<none>",
                "<none>",
                "<none>",
                "<none>"
            ]),
        ),
        (
            "readiness gates and nominated node",
            pod(
                "gates",
                json!({"containers": [{"name": "app"}],
                       "readinessGates": [{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]}),
                json!({"phase": "Pending", "nominatedNodeName": "node-c",
                       "conditions": [{"type": "example.com/lb", "status": "True"},
                                      {"type": "example.com/dns", "status": "False"}]}),
            ),
            json!([
                "gates", "0/1", "Pending", "0", "5m", "<none>", "<none>", "node-c", "1/2"
            ]),
        ),
    ];
    check("", "Pod", cases);
}

#[test]
fn finished_pods_carry_a_completed_row_condition() {
    let printer = builtin_printer("", "Pod").unwrap();
    let cases = [
        (
            "Succeeded",
            Some(("Succeeded", "The pod has completed successfully.")),
        ),
        ("Failed", Some(("Failed", "The pod failed."))),
        ("Running", None),
        ("Pending", None),
    ];
    for (phase, want) in cases {
        let obj = pod("p", one_container(), json!({"phase": phase}));
        let conditions = printer.row(&obj, now()).conditions;
        let got: Vec<_> = conditions
            .iter()
            .map(|c| {
                (
                    c.type_.as_ref(),
                    c.status.as_ref(),
                    c.reason.as_ref(),
                    c.message.as_ref(),
                )
            })
            .collect();
        let want: Vec<_> = want
            .into_iter()
            .map(|(reason, message)| ("Completed", "True", reason, message))
            .collect();
        assert_eq!(got, want, "phase {phase}");
    }
}
