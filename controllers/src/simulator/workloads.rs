//! The status a healthy cluster's controllers would give a workload once it has rolled out:
//! Deployments, StatefulSets, ReplicaSets and DaemonSets with every replica ready, Jobs
//! complete, Pods running. Pure functions over the objects' JSON.

use serde_json::{Map, Value, json};

/// The workload kinds the simulator moves to ready.
pub const KINDS: &[(&str, &str, &str)] = &[
    ("apps", "v1", "Deployment"),
    ("apps", "v1", "StatefulSet"),
    ("apps", "v1", "ReplicaSet"),
    ("apps", "v1", "DaemonSet"),
    ("batch", "v1", "Job"),
    ("", "v1", "Pod"),
];

/// The annotation that keeps a workload unready: set to `"false"` on a Deployment,
/// StatefulSet or ReplicaSet of a simulated member, its replicas are reported as not ready (and
/// the workload as unhealthy) until the annotation is removed or set to anything else. For
/// application failover tests.
pub const READY_ANNOTATION: &str = "simulator.karmada-rs.io/ready";

/// Whether the object asks to be kept unready.
fn held_unready(obj: &Value) -> bool {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(READY_ANNOTATION))
        .and_then(Value::as_str)
        == Some("false")
}

/// What the status depends on besides the object.
#[derive(Clone, Debug)]
pub struct World {
    /// Ready nodes by name, with their InternalIP (DaemonSets run one pod on each; pods run
    /// on one).
    pub nodes: Vec<(String, String)>,
    /// RFC 3339 time for new timestamps.
    pub now: String,
    /// The member's pod addresses.
    pub pod_cidr: super::pod_network::PodCidr,
}

impl World {
    /// The node an unscheduled pod goes to: a stable pick among the ready nodes.
    pub fn pick_node(&self, pod: &str) -> Option<&str> {
        if self.nodes.is_empty() {
            return None;
        }
        let h = karmada_api::names::fnv32a(pod.as_bytes()) as usize;
        self.nodes
            .get(h % self.nodes.len())
            .map(|(n, _)| n.as_str())
    }

    fn ip_of(&self, node: &str) -> &str {
        self.nodes
            .iter()
            .find(|(n, _)| n == node)
            .map_or("", |(_, ip)| ip.as_str())
    }
}

fn int(obj: &Value, path: &str) -> Option<i64> {
    obj.pointer(path).and_then(Value::as_i64)
}

fn generation(obj: &Value) -> i64 {
    int(obj, "/metadata/generation").unwrap_or(1)
}

/// A short, stable hash of a pod template, for revision and ReplicaSet names.
pub fn template_hash(obj: &Value) -> String {
    let template = obj
        .pointer("/spec/template")
        .map_or_else(|| Value::Null.to_string(), Value::to_string);
    let h = karmada_api::names::fnv32a(template.as_bytes());
    karmada_api::names::safe_encode_string(&h.to_string())
}

/// Puts a condition into `conditions`, keeping the timestamps of an existing one of the same
/// type and status (controllers only move them on a transition).
fn condition(
    existing: &[Value],
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
    time_fields: &[&str],
) -> Value {
    let mut c = json!({"type": type_, "status": status, "reason": reason, "message": message});
    let old = existing
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_));
    for field in time_fields {
        let keep = old
            .filter(|o| o.get("status").and_then(Value::as_str) == Some(status))
            .and_then(|o| o.get(*field))
            .cloned();
        c[*field] = keep.unwrap_or_else(|| Value::String(now.to_owned()));
    }
    c
}

fn existing_conditions(obj: &Value) -> Vec<Value> {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Drops zero counters, as Go's `omitempty` does for these status fields.
fn without_zeroes(mut status: Value) -> Value {
    if let Some(m) = status.as_object_mut() {
        m.retain(|_, v| v.as_i64() != Some(0));
    }
    status
}

/// The rolled-out status of a workload, or `None` for kinds (or states, such as a suspended
/// Job) the simulator leaves alone.
pub fn ready_status(kind: &str, obj: &Value, world: &World) -> Option<Value> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let observed = generation(obj);
    let now = world.now.as_str();
    let conditions = existing_conditions(obj);
    match kind {
        "Deployment" => {
            let r = int(obj, "/spec/replicas").unwrap_or(1);
            let rs = format!("{name}-{}", template_hash(obj));
            let unready = held_unready(obj);
            let ready = if unready { 0 } else { r };
            let mut s = without_zeroes(json!({
                "observedGeneration": observed,
                "replicas": r,
                "updatedReplicas": r,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "unavailableReplicas": r - ready,
            }));
            let times = ["lastUpdateTime", "lastTransitionTime"];
            let available = if unready {
                condition(
                    &conditions,
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                    now,
                    &times,
                )
            } else {
                condition(
                    &conditions,
                    "Available",
                    "True",
                    "MinimumReplicasAvailable",
                    "Deployment has minimum availability.",
                    now,
                    &times,
                )
            };
            s["conditions"] = json!([
                available,
                condition(
                    &conditions,
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    &format!("ReplicaSet \"{rs}\" has successfully progressed."),
                    now,
                    &times
                ),
            ]);
            Some(s)
        }
        "StatefulSet" => {
            let r = int(obj, "/spec/replicas").unwrap_or(1);
            let ready = if held_unready(obj) { 0 } else { r };
            let revision = format!("{name}-{}", template_hash(obj));
            let mut s = without_zeroes(json!({
                "observedGeneration": observed,
                "replicas": r,
                "readyReplicas": ready,
                "currentReplicas": r,
                "updatedReplicas": r,
                "availableReplicas": ready,
            }));
            s["currentRevision"] = json!(revision);
            s["updateRevision"] = json!(revision);
            s["collisionCount"] = json!(0);
            Some(s)
        }
        "ReplicaSet" => {
            let r = int(obj, "/spec/replicas").unwrap_or(1);
            let ready = if held_unready(obj) { 0 } else { r };
            let mut s = without_zeroes(json!({
                "fullyLabeledReplicas": r,
                "readyReplicas": ready,
                "availableReplicas": ready,
                "observedGeneration": observed,
            }));
            // replicas is required in ReplicaSetStatus.
            s["replicas"] = json!(r);
            Some(s)
        }
        "DaemonSet" => {
            let n = i64::try_from(world.nodes.len()).unwrap_or(i64::MAX);
            Some(json!({
                "currentNumberScheduled": n,
                "numberMisscheduled": 0,
                "desiredNumberScheduled": n,
                "numberReady": n,
                "observedGeneration": observed,
                "updatedNumberScheduled": n,
                "numberAvailable": n,
            }))
        }
        "Job" => {
            if obj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true) {
                return None;
            }
            let completions = int(obj, "/spec/completions")
                .or_else(|| int(obj, "/spec/parallelism"))
                .unwrap_or(1)
                .max(1);
            let start = obj
                .pointer("/status/startTime")
                .cloned()
                .unwrap_or_else(|| json!(now));
            let completion = obj
                .pointer("/status/completionTime")
                .cloned()
                .unwrap_or_else(|| json!(now));
            let times = ["lastProbeTime", "lastTransitionTime"];
            let message = "Reached expected number of succeeded pods";
            Some(json!({
                "conditions": [
                    condition(&conditions, "SuccessCriteriaMet", "True", "CompletionsReached", message, now, &times),
                    condition(&conditions, "Complete", "True", "CompletionsReached", message, now, &times),
                ],
                "startTime": start,
                "completionTime": completion,
                "succeeded": completions,
                "terminating": 0,
                "ready": 0,
                "uncountedTerminatedPods": {},
            }))
        }
        "Pod" => {
            if matches!(
                obj.pointer("/status/phase").and_then(Value::as_str),
                Some("Succeeded" | "Failed")
            ) {
                return None;
            }
            let start = obj
                .pointer("/status/startTime")
                .cloned()
                .unwrap_or_else(|| json!(now));
            let times = ["lastProbeTime", "lastTransitionTime"];
            let pod_conditions: Vec<Value> = [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ]
            .iter()
            .map(|t| {
                let mut c = condition(&conditions, t, "True", "", "", now, &times);
                if let Some(m) = c.as_object_mut() {
                    m.remove("reason");
                    m.remove("message");
                    m.insert("lastProbeTime".into(), Value::Null);
                }
                c
            })
            .collect();
            let containers = obj
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let old_statuses = obj
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let statuses: Vec<Value> = containers
                .iter()
                .map(|c| {
                    let cname = c.get("name").and_then(Value::as_str).unwrap_or("");
                    let started = old_statuses
                        .iter()
                        .find(|s| s.get("name").and_then(Value::as_str) == Some(cname))
                        .and_then(|s| s.pointer("/state/running/startedAt"))
                        .cloned()
                        .unwrap_or_else(|| json!(now));
                    json!({
                        "name": cname,
                        "image": c.get("image").cloned().unwrap_or(Value::Null),
                        "imageID": "",
                        "containerID": format!("kwok://{name}-{cname}"),
                        "ready": true,
                        "started": true,
                        "restartCount": 0,
                        "state": {"running": {"startedAt": started}},
                    })
                })
                .collect();
            let node = obj
                .pointer("/spec/nodeName")
                .and_then(Value::as_str)
                .unwrap_or("");
            let host_ip = world.ip_of(node).to_owned();
            let pod_ip = world.pod_cidr.pod_ip(name);
            Some(json!({
                "phase": "Running",
                "conditions": pod_conditions,
                "hostIP": host_ip,
                "hostIPs": [{"ip": host_ip}],
                "podIP": pod_ip,
                "podIPs": [{"ip": pod_ip}],
                "startTime": start,
                "containerStatuses": statuses,
                "qosClass": obj.pointer("/status/qosClass").cloned().unwrap_or(json!("BestEffort")),
            }))
        }
        _ => None,
    }
}

/// Whether `current` already has every field of `desired` with the same value.
pub fn already(current: Option<&Value>, desired: &Value) -> bool {
    let (Some(Value::Object(cur)), Value::Object(want)) = (current, desired) else {
        return false;
    };
    want.iter().all(|(k, v)| match (cur.get(k), v) {
        (Some(c), v) => c == v,
        (None, Value::Number(n)) => n.as_i64() == Some(0),
        (None, Value::Object(m)) => m.is_empty(),
        (None, _) => false,
    })
}

/// A merge patch replacing `current` by `desired`: fields only in `current` are nulled.
pub fn status_patch(current: Option<&Value>, desired: &Value) -> Value {
    let mut status: Map<String, Value> = desired.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(cur)) = current {
        for k in cur.keys() {
            status.entry(k.clone()).or_insert(Value::Null);
        }
    }
    json!({ "status": status })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn world() -> World {
        World {
            nodes: vec![
                ("n1".into(), "10.0.0.1".into()),
                ("n2".into(), "10.0.0.2".into()),
                ("n3".into(), "10.0.0.3".into()),
            ],
            now: "2026-01-01T00:00:00Z".into(),
            pod_cidr: Default::default(),
        }
    }

    #[test]
    fn rolled_out_statuses() {
        let w = world();
        let cases: Vec<(&str, Value, Value)> = vec![
            (
                "Deployment",
                json!({"metadata": {"name": "web", "generation": 3}, "spec": {"replicas": 4}}),
                json!({"observedGeneration": 3, "replicas": 4, "updatedReplicas": 4, "readyReplicas": 4, "availableReplicas": 4}),
            ),
            (
                "Deployment",
                json!({"metadata": {"name": "web", "generation": 2}, "spec": {"replicas": 0}}),
                json!({"observedGeneration": 2}),
            ),
            (
                "StatefulSet",
                json!({"metadata": {"name": "db", "generation": 1}, "spec": {"replicas": 2}}),
                json!({"observedGeneration": 1, "replicas": 2, "readyReplicas": 2, "currentReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2, "collisionCount": 0}),
            ),
            (
                "ReplicaSet",
                json!({"metadata": {"name": "rs", "generation": 1}, "spec": {"replicas": 0}}),
                json!({"replicas": 0, "observedGeneration": 1}),
            ),
            (
                "DaemonSet",
                json!({"metadata": {"name": "ds", "generation": 5}, "spec": {}}),
                json!({"desiredNumberScheduled": 3, "numberReady": 3, "numberAvailable": 3, "observedGeneration": 5}),
            ),
            (
                "Job",
                json!({"metadata": {"name": "pi", "generation": 1}, "spec": {"completions": 3, "parallelism": 2}}),
                json!({"succeeded": 3, "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:00:00Z"}),
            ),
            (
                "Pod",
                json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx"}]}}),
                json!({"phase": "Running", "hostIP": "10.0.0.1"}),
            ),
        ];
        for (kind, obj, want) in cases {
            let got = ready_status(kind, &obj, &w).unwrap();
            for (k, v) in want.as_object().unwrap() {
                assert_eq!(&got[k], v, "{kind}: {k} in {got}");
            }
        }
        let job =
            ready_status("Job", &json!({"metadata": {"name": "pi"}, "spec": {}}), &w).unwrap();
        let types: Vec<&str> = job["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
        assert_eq!(job["succeeded"], 1);
        let dep = ready_status(
            "Deployment",
            &json!({"metadata": {"name": "web"}, "spec": {}}),
            &w,
        )
        .unwrap();
        assert_eq!(dep["replicas"], 1);
        assert_eq!(dep["conditions"][0]["type"], "Available");
    }

    #[test]
    fn pods_spread_over_ready_nodes() {
        let w = world();
        let picked: std::collections::HashSet<&str> = (0..50)
            .filter_map(|i| w.pick_node(&format!("pod-{i}")))
            .collect();
        assert_eq!(picked.len(), 3);
        assert_eq!(w.pick_node("a"), w.pick_node("a"));
        let empty = World { nodes: vec![], ..w };
        assert_eq!(empty.pick_node("a"), None);
    }

    #[test]
    fn the_ready_annotation_holds_replica_workloads_unready() {
        let w = world();
        let held = |kind: &str| json!({"kind": kind, "metadata": {"name": "x", "annotations": {READY_ANNOTATION: "false"}}, "spec": {"replicas": 3}});
        let d = ready_status("Deployment", &held("Deployment"), &w).unwrap();
        assert_eq!(d["replicas"], 3);
        assert_eq!(d["updatedReplicas"], 3);
        assert_eq!(d.get("readyReplicas"), None);
        assert_eq!(d.get("availableReplicas"), None);
        assert_eq!(d["unavailableReplicas"], 3);
        assert_eq!(d["conditions"][0]["status"], "False");
        assert_eq!(d["conditions"][0]["reason"], "MinimumReplicasUnavailable");
        let s = ready_status("StatefulSet", &held("StatefulSet"), &w).unwrap();
        assert_eq!(s.get("readyReplicas"), None);
        let r = ready_status("ReplicaSet", &held("ReplicaSet"), &w).unwrap();
        assert_eq!(r.get("readyReplicas"), None);
        // Any other value (or none) is ready as usual.
        let mut ok = held("Deployment");
        ok["metadata"]["annotations"][READY_ANNOTATION] = json!("true");
        let d = ready_status("Deployment", &ok, &w).unwrap();
        assert_eq!(d["readyReplicas"], 3);
        assert_eq!(d.get("unavailableReplicas"), None);
    }

    #[test]
    fn left_alone() {
        let w = world();
        assert!(ready_status("Job", &json!({"spec": {"suspend": true}}), &w).is_none());
        assert!(ready_status("Pod", &json!({"status": {"phase": "Succeeded"}}), &w).is_none());
        assert!(ready_status("ConfigMap", &json!({}), &w).is_none());
    }

    #[test]
    fn written_statuses_are_stable() {
        let w = world();
        let obj = json!({"metadata": {"name": "web", "generation": 1}, "spec": {"replicas": 2}});
        let first = ready_status("Deployment", &obj, &w).unwrap();
        let later = World {
            now: "2026-01-01T00:05:00Z".into(),
            ..w
        };
        let mut stored = obj.clone();
        stored["status"] = first.clone();
        let second = ready_status("Deployment", &stored, &later).unwrap();
        assert_eq!(first, second, "timestamps survive a recompute");
        assert!(already(Some(&first), &second));
        let mut scaled = stored.clone();
        scaled["spec"]["replicas"] = json!(5);
        scaled["metadata"]["generation"] = json!(2);
        let third = ready_status("Deployment", &scaled, &later).unwrap();
        assert!(!already(Some(&first), &third));
    }

    #[test]
    fn patches_null_what_went_away() {
        let cur = json!({"replicas": 2, "unavailableReplicas": 1});
        let want = json!({"replicas": 2});
        assert_eq!(
            status_patch(Some(&cur), &want),
            json!({"status": {"replicas": 2, "unavailableReplicas": null}})
        );
        assert!(!already(Some(&cur), &json!({"replicas": 3})));
        assert!(already(Some(&cur), &json!({"replicas": 2})));
        assert!(already(
            Some(&json!({})),
            &json!({"terminating": 0, "uncountedTerminatedPods": {}})
        ));
        assert!(!already(None, &want));
    }
}
