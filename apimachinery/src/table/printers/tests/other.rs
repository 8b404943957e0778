//! Event, Lease, RBAC bindings, PodDisruptionBudget, HorizontalPodAutoscaler, APIService, and
//! the kinds without a printer.

use super::*;

#[test]
fn event_cells() {
    check(
        "",
        "Event",
        vec![
            (
                "classic repeated event",
                json!({"metadata": meta("web-1.17a2b", 600),
                       "involvedObject": {"kind": "Pod", "name": "web-1", "namespace": "default",
                                          "fieldPath": "spec.containers{app}"},
                       "reason": "BackOff", "type": "Warning", "message": "  Back-off restarting failed container\n",
                       "source": {"component": "kubelet", "host": "node-a"},
                       "firstTimestamp": ago(600), "lastTimestamp": ago(120), "count": 5}),
                json!([
                    "2m",
                    "Warning",
                    "BackOff",
                    "pod/web-1",
                    "spec.containers{app}",
                    "kubelet, node-a",
                    "Back-off restarting failed container",
                    "10m",
                    5,
                    "web-1.17a2b"
                ]),
            ),
            (
                "events.k8s.io style with a series",
                json!({"metadata": meta("sched.1", 40),
                       "involvedObject": {"kind": "ResourceBinding", "name": "web-deployment"},
                       "reason": "ScheduleBindingSucceed", "type": "Normal", "message": "Binding has been scheduled",
                       "eventTime": ago(30), "reportingComponent": "karmada-scheduler", "reportingInstance": "",
                       "series": {"count": 3, "lastObservedTime": ago(10)}}),
                json!([
                    "10s",
                    "Normal",
                    "ScheduleBindingSucceed",
                    "resourcebinding/web-deployment",
                    "",
                    "karmada-scheduler",
                    "Binding has been scheduled",
                    "30s",
                    3,
                    "sched.1"
                ]),
            ),
            (
                "singleton without count, cluster-scoped object without name",
                json!({"metadata": meta("ns.1", 40),
                       "involvedObject": {"kind": "Namespace"},
                       "reason": "Created", "type": "Normal", "message": "ok",
                       "eventTime": ago(15), "reportingComponent": "controller", "reportingInstance": "pod-7"}),
                json!([
                    "15s",
                    "Normal",
                    "Created",
                    "namespace",
                    "",
                    "controller, pod-7",
                    "ok",
                    "15s",
                    1,
                    "ns.1"
                ]),
            ),
            (
                "no timestamps at all",
                json!({"metadata": meta("odd.1", 40), "involvedObject": {"kind": "Pod", "name": "p"}}),
                json!([
                    "<unknown>",
                    "",
                    "",
                    "pod/p",
                    "",
                    "",
                    "",
                    "<unknown>",
                    1,
                    "odd.1"
                ]),
            ),
        ],
    );
}

#[test]
fn events_k8s_io_event_cells() {
    check(
        "events.k8s.io",
        "Event",
        vec![
            (
                "new-style event with a series",
                json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("web.1", 40),
                       "regarding": {"kind": "Deployment", "name": "web", "fieldPath": ""},
                       "note": "Scaled up replica set web-5d4f8 to 3 ", "reason": "ScalingReplicaSet", "type": "Normal",
                       "reportingController": "deployment-controller", "reportingInstance": "",
                       "eventTime": ago(35), "series": {"count": 2, "lastObservedTime": ago(5)}}),
                json!([
                    "5s",
                    "Normal",
                    "ScalingReplicaSet",
                    "deployment/web",
                    "",
                    "deployment-controller",
                    "Scaled up replica set web-5d4f8 to 3",
                    "35s",
                    2,
                    "web.1"
                ]),
            ),
            (
                "converted from a core event",
                json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta("p.2", 700),
                       "regarding": {"kind": "Pod", "name": "p"}, "note": "pulled", "reason": "Pulled", "type": "Normal",
                       "deprecatedSource": {"component": "kubelet", "host": "node-a"},
                       "deprecatedFirstTimestamp": ago(600), "deprecatedLastTimestamp": ago(60), "deprecatedCount": 4}),
                json!([
                    "60s",
                    "Normal",
                    "Pulled",
                    "pod/p",
                    "",
                    "kubelet, node-a",
                    "pulled",
                    "10m",
                    4,
                    "p.2"
                ]),
            ),
        ],
    );
}

#[test]
fn lease_cells() {
    check(
        "coordination.k8s.io",
        "Lease",
        vec![
            (
                "held",
                json!({"metadata": meta("karmada-scheduler", 4000),
                       "spec": {"holderIdentity": "karmada-0_6f1c", "leaseDurationSeconds": 15}}),
                json!(["karmada-scheduler", "karmada-0_6f1c", "66m"]),
            ),
            (
                "never held",
                json!({"metadata": meta("free", 40), "spec": {}}),
                json!(["free", "", "40s"]),
            ),
        ],
    );
}

#[test]
fn rbac_binding_cells() {
    let subjects = json!([
        {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"},
        {"kind": "ServiceAccount", "name": "builder", "namespace": "ci"},
        {"kind": "User", "name": "bob"},
        {"kind": "Robot", "name": "r2"}
    ]);
    check(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        vec![
            (
                "mixed subjects",
                json!({"metadata": meta("readers", 600), "roleRef": {"kind": "Role", "name": "reader"},
                       "subjects": subjects}),
                json!([
                    "readers",
                    "Role/reader",
                    "10m",
                    "alice, bob",
                    "devs",
                    "ci/builder"
                ]),
            ),
            (
                "no subjects",
                json!({"metadata": meta("empty", 600), "roleRef": {"kind": "ClusterRole", "name": "view"}}),
                json!(["empty", "ClusterRole/view", "10m", "", "", ""]),
            ),
        ],
    );
    check(
        "rbac.authorization.k8s.io",
        "ClusterRoleBinding",
        vec![(
            "cluster admin",
            json!({"metadata": {"name": "cluster-admin", "creationTimestamp": ago(86400 * 900)},
                   "roleRef": {"kind": "ClusterRole", "name": "cluster-admin"},
                   "subjects": [{"kind": "Group", "name": "system:masters"}]}),
            json!([
                "cluster-admin",
                "ClusterRole/cluster-admin",
                "2y170d",
                "",
                "system:masters",
                ""
            ]),
        )],
    );
}

#[test]
fn pod_disruption_budget_cells() {
    check(
        "policy",
        "PodDisruptionBudget",
        vec![
            (
                "min available",
                json!({"metadata": meta("web", 600), "spec": {"minAvailable": 2},
                       "status": {"disruptionsAllowed": 1, "currentHealthy": 3}}),
                json!(["web", "2", "N/A", 1, "10m"]),
            ),
            (
                "max unavailable percentage, no status",
                json!({"metadata": meta("db", 600), "spec": {"maxUnavailable": "25%"}}),
                json!(["db", "N/A", "25%", 0, "10m"]),
            ),
        ],
    );
}

fn hpa(spec_extra: Value, status: Value) -> Value {
    let mut spec = json!({"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                          "minReplicas": 2, "maxReplicas": 10});
    if let (Some(spec), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        spec.extend(extra.clone());
    }
    json!({"metadata": meta("web", 600), "spec": spec, "status": status})
}

#[test]
fn horizontal_pod_autoscaler_cells() {
    let cpu = json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}});
    let mem = json!({"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "512Mi"}}});
    let pods = json!({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}});
    let object = json!({"type": "Object", "object": {"metric": {"name": "hits"}, "describedObject": {"kind": "Ingress", "name": "main"},
                                                       "target": {"type": "Value", "value": "2k"}}});
    let external_avg = json!({"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "AverageValue", "averageValue": "30"}}});
    let container = json!({"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "app",
                           "target": {"type": "Utilization", "averageUtilization": 60}}});
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "cpu utilization with a current value",
            hpa(
                json!({"metrics": [cpu.clone()]}),
                json!({"currentReplicas": 3, "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "120m"}}}]}),
            ),
            "cpu: 45%/80%",
        ),
        (
            "cpu utilization, no metrics yet",
            hpa(json!({"metrics": [cpu.clone()]}), json!({})),
            "cpu: <unknown>/80%",
        ),
        (
            "no metrics: defaulted to 80% cpu",
            hpa(json!({}), json!({})),
            "cpu: <unknown>/80%",
        ),
        (
            "memory average value",
            hpa(
                json!({"metrics": [mem.clone()]}),
                json!({"currentMetrics": [{"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "307200Ki"}}}]}),
            ),
            "memory: 300Mi/512Mi",
        ),
        (
            "pods and object metrics",
            hpa(
                json!({"metrics": [pods.clone(), object.clone()]}),
                json!({"currentMetrics": [{"type": "Pods", "pods": {"current": {"averageValue": "5500m"}}},
                                          {"type": "Object", "object": {"current": {"value": "1500"}}}]}),
            ),
            "5500m/10, 1500/2k",
        ),
        (
            "external average value without status, container resource",
            hpa(
                json!({"metrics": [external_avg.clone(), container.clone()]}),
                json!({"currentMetrics": []}),
            ),
            "<unknown>/30 (avg), cpu: <unknown>/60%",
        ),
        (
            "more than two metrics",
            hpa(
                json!({"metrics": [cpu.clone(), mem.clone(), pods.clone(), object.clone()]}),
                json!({}),
            ),
            "cpu: <unknown>/80%, memory: <unknown>/512Mi + 2 more...",
        ),
        (
            "unknown metric type",
            hpa(json!({"metrics": [{"type": "Telepathy"}]}), json!({})),
            "<unknown type>",
        ),
    ];
    let printer = builtin_printer("autoscaling", "HorizontalPodAutoscaler").unwrap();
    for (what, obj, targets) in cases {
        let cells = printer.cells(&obj, now());
        let replicas = obj["status"]["currentReplicas"].as_i64().unwrap_or(0);
        assert_eq!(
            Value::Array(cells),
            json!(["web", "Deployment/web", targets, "2", 10, replicas, "10m"]),
            "HPA: {what}"
        );
    }
    let v1 = json!({"apiVersion": "autoscaling/v1", "metadata": meta("old", 600),
                    "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 2, "maxReplicas": 10,
                             "targetCPUUtilizationPercentage": 70},
                    "status": {"currentReplicas": 4, "currentCPUUtilizationPercentage": 52}});
    assert_eq!(
        Value::Array(printer.cells(&v1, now())),
        json!(["old", "Deployment/web", "cpu: 52%/70%", "2", 10, 4, "10m"])
    );
    let no_min = json!({"metadata": meta("x", 5), "spec": {"maxReplicas": 3, "scaleTargetRef": {"kind": "StatefulSet", "name": "db"},
                        "metrics": [cpu]}});
    assert_eq!(
        Value::Array(printer.cells(&no_min, now())),
        json!(["x", "StatefulSet/db", "cpu: <unknown>/80%", "1", 3, 0, "5s"])
    );
}

#[test]
fn api_service_cells() {
    check(
        "apiregistration.k8s.io",
        "APIService",
        vec![
            (
                "local",
                json!({"metadata": meta("v1.apps", 86400 * 10),
                       "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15},
                       "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}}),
                json!(["v1.apps", "Local", "True", "10d"]),
            ),
            (
                "aggregated and unavailable",
                json!({"metadata": meta("v1alpha1.cluster.karmada.io", 120),
                       "spec": {"service": {"namespace": "karmada-system", "name": "karmada-aggregated-apiserver", "port": 443},
                                "group": "cluster.karmada.io", "version": "v1alpha1"},
                       "status": {"conditions": [{"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck"}]}}),
                json!([
                    "v1alpha1.cluster.karmada.io",
                    "karmada-system/karmada-aggregated-apiserver",
                    "False (FailedDiscoveryCheck)",
                    "2m"
                ]),
            ),
            (
                "no conditions yet",
                json!({"metadata": meta("v1beta1.metrics.k8s.io", 5),
                       "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}}}),
                json!([
                    "v1beta1.metrics.k8s.io",
                    "kube-system/metrics-server",
                    "Unknown",
                    "5s"
                ]),
            ),
            (
                "false without a reason",
                json!({"metadata": meta("v1.x.io", 5),
                       "status": {"conditions": [{"type": "Available", "status": "False"}]}}),
                json!(["v1.x.io", "Local", "False", "5s"]),
            ),
        ],
    );
}

#[test]
fn kinds_without_printer_use_name_and_created_at() {
    let created = "2024-04-30T08:15:00Z";
    let kinds = [
        ("rbac.authorization.k8s.io", "Role"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("", "LimitRange"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ];
    for (group, kind) in kinds {
        assert!(
            builtin_printer(group, kind).is_none(),
            "{kind} has no printer upstream"
        );
        let obj = json!({"metadata": {"name": "x", "creationTimestamp": created}});
        assert_eq!(
            convertor_for(group, kind).cells(&obj, now()),
            vec![json!("x"), json!(created)],
            "{kind}"
        );
    }
}
