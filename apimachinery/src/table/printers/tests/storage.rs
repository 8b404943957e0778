//! CSIDriver, CSINode, CSIStorageCapacity, VolumeAttachment and RuntimeClass.

use super::*;

#[test]
fn csi_driver_cells() {
    check(
        "storage.k8s.io",
        "CSIDriver",
        vec![
            (
                "defaulted driver",
                json!({"metadata": meta("csi.example.com", 3600),
                       "spec": {"attachRequired": true, "podInfoOnMount": false,
                                "storageCapacity": false, "requiresRepublish": false,
                                "volumeLifecycleModes": ["Persistent"]}}),
                json!([
                    "csi.example.com",
                    true,
                    false,
                    false,
                    "<unset>",
                    false,
                    "Persistent",
                    "60m"
                ]),
            ),
            (
                "token requests and two modes, nothing defaulted",
                json!({"metadata": meta("d", 30),
                       "spec": {"tokenRequests": [{"audience": "vault"}, {"audience": "gcp"}],
                                "volumeLifecycleModes": ["Persistent", "Ephemeral"]}}),
                json!([
                    "d",
                    true,
                    false,
                    false,
                    "vault,gcp",
                    false,
                    "Persistent,Ephemeral",
                    "30s"
                ]),
            ),
        ],
    );
}

#[test]
fn csi_node_capacity_and_attachment_cells() {
    check(
        "storage.k8s.io",
        "CSINode",
        vec![(
            "two drivers",
            json!({"metadata": meta("node-1", 120),
                   "spec": {"drivers": [{"name": "a", "nodeID": "n"}, {"name": "b", "nodeID": "n"}]}}),
            json!(["node-1", 2, "2m"]),
        )],
    );
    check(
        "storage.k8s.io",
        "CSIStorageCapacity",
        vec![
            (
                "with capacity",
                json!({"metadata": meta("zone-a", 10), "storageClassName": "fast", "capacity": "10Gi"}),
                json!(["zone-a", "fast", "10Gi"]),
            ),
            (
                "capacity unknown",
                json!({"metadata": meta("zone-b", 10), "storageClassName": "fast"}),
                json!(["zone-b", "fast", "<unset>"]),
            ),
        ],
    );
    check(
        "storage.k8s.io",
        "VolumeAttachment",
        vec![(
            "attached",
            json!({"metadata": meta("va", 5),
                   "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
                            "source": {"persistentVolumeName": "pv1"}},
                   "status": {"attached": true}}),
            json!(["va", "csi.example.com", "pv1", "node-1", true, "5s"]),
        )],
    );
    check(
        "node.k8s.io",
        "RuntimeClass",
        vec![(
            "gvisor",
            json!({"metadata": meta("gvisor", 86400 * 3), "handler": "runsc"}),
            json!(["gvisor", "runsc", "3d"]),
        )],
    );
}

#[test]
fn core_and_network_additions() {
    check(
        "",
        "ReplicationController",
        vec![(
            "one of two ready",
            json!({"metadata": meta("rc", 60),
                   "spec": {"replicas": 2, "selector": {"app": "web"},
                            "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
                   "status": {"replicas": 2, "readyReplicas": 1}}),
            json!(["rc", 2, 2, 1, "60s", "c", "nginx", "app=web"]),
        )],
    );
    check(
        "",
        "PodTemplate",
        vec![(
            "labelled template",
            json!({"metadata": meta("t", 60),
                   "template": {"metadata": {"labels": {"app": "w"}},
                                "spec": {"containers": [{"name": "a", "image": "busybox"},
                                                        {"name": "b", "image": "nginx"}]}}}),
            json!(["t", "a,b", "busybox,nginx", "app=w"]),
        )],
    );
    check(
        "",
        "ComponentStatus",
        vec![
            (
                "healthy",
                json!({"metadata": {"name": "etcd-0"},
                       "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}),
                json!(["etcd-0", "Healthy", "ok", ""]),
            ),
            (
                "unhealthy",
                json!({"metadata": {"name": "scheduler"},
                       "conditions": [{"type": "Healthy", "status": "False", "message": "refused"}]}),
                json!(["scheduler", "Unhealthy", "refused", ""]),
            ),
        ],
    );
    check(
        "discovery.k8s.io",
        "EndpointSlice",
        vec![
            (
                "four addresses, a named port without number",
                json!({"metadata": meta("web-x", 30), "addressType": "IPv4",
                       "ports": [{"port": 80}, {"name": "metrics"}],
                       "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]},
                                     {"addresses": ["10.0.0.3"]}, {"addresses": ["10.0.0.4"]}]}),
                json!([
                    "web-x",
                    "IPv4",
                    "80,metrics",
                    "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...",
                    "30s"
                ]),
            ),
            (
                "empty slice",
                json!({"metadata": meta("empty", 30), "addressType": "FQDN"}),
                json!(["empty", "FQDN", "<unset>", "<unset>", "30s"]),
            ),
        ],
    );
    check(
        "networking.k8s.io",
        "IngressClass",
        vec![
            (
                "with parameters",
                json!({"metadata": meta("nginx", 30),
                       "spec": {"controller": "k8s.io/ingress-nginx",
                                "parameters": {"apiGroup": "k8s.example.com", "kind": "Params", "name": "p"}}}),
                json!([
                    "nginx",
                    "k8s.io/ingress-nginx",
                    "Params.k8s.example.com/p",
                    "30s"
                ]),
            ),
            (
                "without",
                json!({"metadata": meta("plain", 30), "spec": {"controller": "example.com/c"}}),
                json!(["plain", "example.com/c", "<none>", "30s"]),
            ),
        ],
    );
}

#[test]
fn flow_control_cells() {
    check(
        "flowcontrol.apiserver.k8s.io",
        "FlowSchema",
        vec![
            (
                "dangling",
                json!({"metadata": meta("fs", 60),
                       "spec": {"priorityLevelConfiguration": {"name": "gone"}, "matchingPrecedence": 500,
                                "distinguisherMethod": {"type": "ByUser"}},
                       "status": {"conditions": [{"type": "Dangling", "status": "True"}]}}),
                json!(["fs", "gone", 500, "ByUser", "60s", "True"]),
            ),
            (
                "no status yet",
                json!({"metadata": meta("exempt", 60),
                       "spec": {"priorityLevelConfiguration": {"name": "exempt"}, "matchingPrecedence": 1}}),
                json!(["exempt", "exempt", 1, "<none>", "60s", "?"]),
            ),
        ],
    );
    check(
        "flowcontrol.apiserver.k8s.io",
        "PriorityLevelConfiguration",
        vec![
            (
                "queued",
                json!({"metadata": meta("workload-low", 60), "spec": {"type": "Limited", "limited": {
                    "nominalConcurrencyShares": 100,
                    "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}}),
                json!(["workload-low", "Limited", 100, 128, 6, 50, "60s"]),
            ),
            (
                "rejecting",
                json!({"metadata": meta("catch-all", 60), "spec": {"type": "Limited", "limited": {
                    "nominalConcurrencyShares": 5, "limitResponse": {"type": "Reject"}}}}),
                json!([
                    "catch-all",
                    "Limited",
                    5,
                    "<none>",
                    "<none>",
                    "<none>",
                    "60s"
                ]),
            ),
            (
                "exempt",
                json!({"metadata": meta("exempt", 60), "spec": {"type": "Exempt", "exempt": {}}}),
                json!([
                    "exempt", "Exempt", "<none>", "<none>", "<none>", "<none>", "60s"
                ]),
            ),
        ],
    );
}
