use super::*;

#[test]
fn namespace_cells() {
    check(
        "",
        "Namespace",
        vec![
            (
                "active",
                json!({"metadata": meta("team-a", 3 * 86400), "status": {"phase": "Active"}}),
                json!(["team-a", "Active", "3d"]),
            ),
            (
                "terminating",
                json!({"metadata": {"name": "old", "creationTimestamp": ago(90), "deletionTimestamp": ago(5)},
                       "status": {"phase": "Terminating"}}),
                json!(["old", "Terminating", "90s"]),
            ),
            (
                "no status yet",
                json!({"metadata": meta("fresh", 1)}),
                json!(["fresh", "Active", "1s"]),
            ),
            (
                "deleted before a status was written",
                json!({"metadata": {"name": "gone", "creationTimestamp": ago(1), "deletionTimestamp": ago(0)}}),
                json!(["gone", "Terminating", "1s"]),
            ),
            (
                "no creation time",
                json!({"metadata": {"name": "odd"}, "status": {"phase": "Active"}}),
                json!(["odd", "Active", "<unknown>"]),
            ),
        ],
    );
}

#[test]
fn config_map_secret_service_account_cells() {
    check(
        "",
        "ConfigMap",
        vec![
            (
                "data and binaryData",
                json!({"metadata": meta("cfg", 60), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}),
                json!(["cfg", 3, "60s"]),
            ),
            (
                "empty",
                json!({"metadata": meta("empty", 60)}),
                json!(["empty", 0, "60s"]),
            ),
        ],
    );
    check(
        "",
        "Secret",
        vec![
            (
                "tls secret",
                json!({"metadata": meta("tls", 7200), "type": "kubernetes.io/tls",
                       "data": {"tls.crt": "Y3J0", "tls.key": "a2V5"}}),
                json!(["tls", "kubernetes.io/tls", 2, "120m"]),
            ),
            (
                "type defaults to Opaque",
                json!({"metadata": meta("plain", 7200)}),
                json!(["plain", "Opaque", 0, "120m"]),
            ),
        ],
    );
    check(
        "",
        "ServiceAccount",
        vec![
            (
                "with a token secret",
                json!({"metadata": meta("builder", 86400 * 400), "secrets": [{"name": "builder-token"}]}),
                json!(["builder", 1, "400d"]),
            ),
            (
                "no secrets",
                json!({"metadata": meta("default", 3 * 3600)}),
                json!(["default", 0, "3h"]),
            ),
        ],
    );
}

#[test]
fn persistent_volume_claim_cells() {
    check(
        "",
        "PersistentVolumeClaim",
        vec![
            (
                "bound",
                json!({"metadata": meta("data", 600),
                       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                                "volumeName": "pv-1", "resources": {"requests": {"storage": "5Gi"}}},
                       "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}}),
                json!([
                    "data",
                    "Bound",
                    "pv-1",
                    "10Gi",
                    "RWO",
                    "standard",
                    "<unset>",
                    "10m",
                    "Filesystem"
                ]),
            ),
            (
                "pending without status",
                json!({"metadata": meta("wait", 600),
                       "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
                json!([
                    "wait",
                    "Pending",
                    "",
                    "",
                    "",
                    "",
                    "<unset>",
                    "10m",
                    "Filesystem"
                ]),
            ),
            (
                "terminating, beta class annotation, canonical capacity, mode order",
                json!({"metadata": {"name": "rm", "creationTimestamp": ago(600), "deletionTimestamp": ago(1),
                                    "annotations": {"volume.beta.kubernetes.io/storage-class": "legacy"}},
                       "spec": {"storageClassName": "standard", "volumeName": "pv-2", "volumeMode": "Block",
                                "volumeAttributesClassName": "gold"},
                       "status": {"phase": "Bound", "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                                  "capacity": {"storage": "1024Mi"}}}),
                json!([
                    "rm",
                    "Terminating",
                    "pv-2",
                    "1Gi",
                    "RWO,RWX",
                    "legacy",
                    "gold",
                    "10m",
                    "Block"
                ]),
            ),
            (
                "bound volume without reported capacity",
                json!({"metadata": meta("nocap", 600), "spec": {"volumeName": "pv-3"}, "status": {"phase": "Bound"}}),
                json!([
                    "nocap",
                    "Bound",
                    "pv-3",
                    "0",
                    "",
                    "",
                    "<unset>",
                    "10m",
                    "Filesystem"
                ]),
            ),
        ],
    );
}

#[test]
fn node_cells() {
    let info = json!({"kubeletVersion": "v1.32.4", "osImage": "Ubuntu 24.04 LTS",
                      "kernelVersion": "6.8.0-45-generic", "containerRuntimeVersion": "containerd://1.7.22"});
    check(
        "",
        "Node",
        vec![
            (
                "ready control plane",
                json!({"metadata": {"name": "cp-1", "creationTimestamp": ago(30 * 86400),
                                    "labels": {"node-role.kubernetes.io/control-plane": "",
                                               "node-role.kubernetes.io/etcd": "",
                                               "kubernetes.io/role": "master",
                                               "kubernetes.io/hostname": "cp-1"}},
                       "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                                 {"type": "Ready", "status": "True"}],
                                  "addresses": [{"type": "Hostname", "address": "cp-1"},
                                                {"type": "InternalIP", "address": "192.168.1.10"},
                                                {"type": "InternalIP", "address": "192.168.1.11"},
                                                {"type": "ExternalIP", "address": "34.1.2.3"}],
                                  "nodeInfo": info}}),
                json!([
                    "cp-1",
                    "Ready",
                    "control-plane,etcd,master",
                    "30d",
                    "v1.32.4",
                    "192.168.1.10",
                    "34.1.2.3",
                    "Ubuntu 24.04 LTS",
                    "6.8.0-45-generic",
                    "containerd://1.7.22"
                ]),
            ),
            (
                "not ready and cordoned",
                json!({"metadata": meta("w-1", 7 * 86400 + 5 * 3600), "spec": {"unschedulable": true},
                       "status": {"conditions": [{"type": "Ready", "status": "Unknown"}], "nodeInfo": info}}),
                json!([
                    "w-1",
                    "NotReady,SchedulingDisabled",
                    "<none>",
                    "7d5h",
                    "v1.32.4",
                    "<none>",
                    "<none>",
                    "Ubuntu 24.04 LTS",
                    "6.8.0-45-generic",
                    "containerd://1.7.22"
                ]),
            ),
            (
                "registered without status",
                json!({"metadata": meta("w-2", 30)}),
                json!([
                    "w-2",
                    "Unknown",
                    "<none>",
                    "30s",
                    "",
                    "<none>",
                    "<none>",
                    "<unknown>",
                    "<unknown>",
                    "<unknown>"
                ]),
            ),
        ],
    );
}

#[test]
fn resource_quota_cells() {
    check(
        "",
        "ResourceQuota",
        vec![
            (
                "requests and limits",
                json!({"metadata": meta("compute", 3600),
                       "spec": {"hard": {"cpu": "2"}},
                       "status": {"hard": {"cpu": "2", "memory": "2Gi", "limits.cpu": "4000m", "pods": "10",
                                           "requests.storage": "10Gi", "limits.memory": "4Gi"},
                                  "used": {"cpu": "500m", "memory": "1024Mi", "pods": "3", "limits.memory": "0"}}}),
                json!([
                    "compute",
                    "60m",
                    "cpu: 500m/2, memory: 1Gi/2Gi, pods: 3/10, requests.storage: 0/10Gi",
                    "limits.cpu: 0/4, limits.memory: 0/4Gi"
                ]),
            ),
            (
                "no status yet",
                json!({"metadata": meta("new", 3600), "spec": {"hard": {"pods": "10"}}}),
                json!(["new", "60m", "", ""]),
            ),
        ],
    );
}
