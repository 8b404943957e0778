//! Every kind kube-apiserver 1.32 serves that Karmada users apply as templates, through stock
//! kubectl and kube-rs: create, get (object, table, protobuf), list, watch, update, patch,
//! delete, and an invalid object refused in kube's words.

use futures::StreamExt;
use http_body_util::BodyExt;
use kube::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::discovery::ApiResource;
use serde_json::Value;

use crate::support::Server;

/// One kind: its resource, a valid object, the table columns kube prints, a default kube
/// fills in, and an invalid object with (part of) the error kube gives it.
struct Case {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    name: &'static str,
    yaml: &'static str,
    columns: &'static [&'static str],
    /// (JSON pointer, value) kube's defaulting or strategy leaves in the created object.
    defaulted: (&'static str, &'static str),
    invalid: &'static str,
    error: &'static str,
}

const CASES: &[Case] = &[
    Case {
        group: "discovery.k8s.io",
        version: "v1",
        kind: "EndpointSlice",
        plural: "endpointslices",
        namespaced: true,
        name: "web-abc",
        yaml: "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: web-abc}\naddressType: IPv4\nports: [{port: 80}]\nendpoints: [{addresses: [10.0.0.1]}]\n",
        columns: &["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"],
        defaulted: ("/ports/0/protocol", "TCP"),
        invalid: "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: bad}\naddressType: IPv5\nendpoints: [{addresses: []}]\n",
        error: "The EndpointSlice \"bad\" is invalid: \n* addressType: Unsupported value: \"IPv5\": supported values: \"FQDN\", \"IPv4\", \"IPv6\"\n* endpoints[0].addresses: Required value: must contain at least 1 address",
    },
    Case {
        group: "networking.k8s.io",
        version: "v1",
        kind: "IngressClass",
        plural: "ingressclasses",
        namespaced: false,
        name: "nginx",
        yaml: "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: nginx}\nspec:\n  controller: k8s.io/ingress-nginx\n  parameters: {kind: IngressParameters, name: p, apiGroup: k8s.example.com}\n",
        columns: &["NAME", "CONTROLLER", "PARAMETERS", "AGE"],
        defaulted: ("/spec/parameters/scope", "Cluster"),
        invalid: "apiVersion: networking.k8s.io/v1\nkind: IngressClass\nmetadata: {name: bad}\nspec: {controller: nginx}\n",
        error: "The IngressClass \"bad\" is invalid: spec.controller: Invalid value: \"nginx\": must be a domain-prefixed path (such as \"acme.io/foo\")",
    },
    Case {
        group: "node.k8s.io",
        version: "v1",
        kind: "RuntimeClass",
        plural: "runtimeclasses",
        namespaced: false,
        name: "gvisor",
        yaml: "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n",
        columns: &["NAME", "HANDLER", "AGE"],
        defaulted: ("/handler", "runsc"),
        invalid: "apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: bad}\nhandler: Run_SC\n",
        error: "The RuntimeClass \"bad\" is invalid: handler: Invalid value: \"Run_SC\": a lowercase RFC 1123 label must consist of",
    },
    Case {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSIDriver",
        plural: "csidrivers",
        namespaced: false,
        name: "csi.example.com",
        yaml: "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: csi.example.com}\nspec: {}\n",
        columns: &[
            "NAME",
            "ATTACHREQUIRED",
            "PODINFOONMOUNT",
            "STORAGECAPACITY",
            "TOKENREQUESTS",
            "REQUIRESREPUBLISH",
            "MODES",
            "AGE",
        ],
        defaulted: ("/spec/fsGroupPolicy", "ReadWriteOnceWithFSType"),
        invalid: "apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata: {name: bad.example.com}\nspec: {volumeLifecycleModes: [Forever]}\n",
        error: "The CSIDriver \"bad.example.com\" is invalid: spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\"",
    },
    Case {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSINode",
        plural: "csinodes",
        namespaced: false,
        name: "node-1",
        yaml: "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: node-1}\nspec:\n  drivers: [{name: csi.example.com, nodeID: node-1}]\n",
        columns: &["NAME", "DRIVERS", "AGE"],
        defaulted: ("/spec/drivers/0/nodeID", "node-1"),
        invalid: "apiVersion: storage.k8s.io/v1\nkind: CSINode\nmetadata: {name: bad}\nspec:\n  drivers: [{name: csi.example.com, nodeID: \"\"}]\n",
        error: "The CSINode \"bad\" is invalid: spec.drivers[0].nodeID: Required value",
    },
    Case {
        group: "storage.k8s.io",
        version: "v1",
        kind: "CSIStorageCapacity",
        plural: "csistoragecapacities",
        namespaced: true,
        name: "zone-a",
        yaml: "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: zone-a}\nstorageClassName: fast\ncapacity: 10Gi\n",
        columns: &["NAME", "STORAGECLASSNAME", "CAPACITY"],
        defaulted: ("/capacity", "10Gi"),
        invalid: "apiVersion: storage.k8s.io/v1\nkind: CSIStorageCapacity\nmetadata: {name: bad}\nstorageClassName: Fast_Disk\n",
        error: "The CSIStorageCapacity \"bad\" is invalid: storageClassName: Invalid value: \"Fast_Disk\": a lowercase RFC 1123 subdomain must consist of",
    },
    Case {
        group: "storage.k8s.io",
        version: "v1",
        kind: "VolumeAttachment",
        plural: "volumeattachments",
        namespaced: false,
        name: "pv1-node1",
        yaml: "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: pv1-node1}\nspec:\n  attacher: csi.example.com\n  nodeName: node-1\n  source: {persistentVolumeName: pv1}\n",
        columns: &["NAME", "ATTACHER", "PV", "NODE", "ATTACHED", "AGE"],
        defaulted: ("/spec/source/persistentVolumeName", "pv1"),
        invalid: "apiVersion: storage.k8s.io/v1\nkind: VolumeAttachment\nmetadata: {name: bad}\nspec: {attacher: csi.example.com, nodeName: node-1, source: {}}\n",
        error: "The VolumeAttachment \"bad\" is invalid: spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
    },
    Case {
        group: "",
        version: "v1",
        kind: "PodTemplate",
        plural: "podtemplates",
        namespaced: true,
        name: "worker",
        yaml: "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: worker}\ntemplate:\n  metadata: {labels: {app: worker}}\n  spec: {containers: [{name: w, image: busybox}]}\n",
        columns: &["NAME", "CONTAINERS", "IMAGES", "POD LABELS"],
        defaulted: ("/template/spec/restartPolicy", "Always"),
        invalid: "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: bad}\ntemplate:\n  spec: {containers: [{name: w}]}\n",
        error: "The PodTemplate \"bad\" is invalid: template.spec.containers[0].image: Required value",
    },
    Case {
        group: "",
        version: "v1",
        kind: "ReplicationController",
        plural: "replicationcontrollers",
        namespaced: true,
        name: "legacy",
        yaml: "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: legacy}\nspec:\n  template:\n    metadata: {labels: {app: legacy}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
        columns: &["NAME", "DESIRED", "CURRENT", "READY", "AGE"],
        defaulted: ("/spec/selector/app", "legacy"),
        invalid: "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: bad}\nspec:\n  selector: {app: one}\n  template:\n    metadata: {labels: {app: two}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
        error: "The ReplicationController \"bad\" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"two\"}: `selector` does not match template `labels`",
    },
    Case {
        group: "events.k8s.io",
        version: "v1",
        kind: "Event",
        plural: "events",
        namespaced: true,
        name: "web.scaled",
        yaml: "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: web.scaled}\neventTime: \"2025-01-01T00:00:00.000000Z\"\nreportingController: example.com/scaler\nreportingInstance: scaler-1\naction: Scale\nreason: Scaled\ntype: Normal\nnote: scaled to 3\nregarding: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: default}\n",
        columns: &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        defaulted: ("/note", "scaled to 3"),
        invalid: "apiVersion: events.k8s.io/v1\nkind: Event\nmetadata: {name: bad}\nreportingController: example.com/scaler\nreportingInstance: scaler-1\naction: Scale\nreason: Scaled\ntype: Sideways\n",
        error: "The Event \"bad\" is invalid: \n* eventTime: Required value\n* type: Invalid value: \"\": has invalid value: Sideways",
    },
];

impl Case {
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    fn path(&self, name: &str) -> String {
        let base = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        let ns = if self.namespaced {
            "/namespaces/default"
        } else {
            ""
        };
        format!("{base}{ns}/{}/{name}", self.plural)
    }

    fn api(&self, c: &kube::Client) -> Api<DynamicObject> {
        let ar = ApiResource {
            group: self.group.into(),
            version: self.version.into(),
            api_version: self.api_version(),
            kind: self.kind.into(),
            plural: self.plural.into(),
        };
        if self.namespaced {
            Api::namespaced_with(c.clone(), "default", &ar)
        } else {
            Api::all_with(c.clone(), &ar)
        }
    }
}

fn at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Create, read, change and delete one object of every case's kind.
pub fn every_kind_round_trips(s: &Server) {
    for case in CASES {
        let res = case.qualified();
        let out = s.kubectl_stdin_ok(&["create", "-f", "-"], case.yaml);
        assert!(out.contains("created"), "{res}: {out}");
        let obj = s.get_json(&[&res, case.name]);
        assert_eq!(obj["kind"], case.kind, "{obj}");
        assert_eq!(obj["apiVersion"], case.api_version());
        assert_eq!(
            at(&obj, case.defaulted.0),
            case.defaulted.1,
            "{res} {}: {obj}",
            case.defaulted.0
        );
        // The table kube prints.
        let table = s.kubectl_ok(&["get", &res, case.name]);
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or_default()
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(header, case.columns, "{res}:\n{table}");
        // Patches (strategic merge, as kubectl sends) and an update.
        s.kubectl_ok(&["label", &res, case.name, "tier=gold"]);
        s.kubectl_ok(&[
            "patch",
            &res,
            case.name,
            "-p",
            r#"{"metadata":{"annotations":{"patched":"yes"}}}"#,
        ]);
        let mut current = s.get_json(&[&res, case.name]);
        assert_eq!(current["metadata"]["labels"]["tier"], "gold", "{current}");
        current["metadata"]["annotations"]["replaced"] = "yes".into();
        let out = s.kubectl_stdin_ok(&["replace", "-f", "-"], &current.to_string());
        assert!(out.contains("replaced"), "{res}: {out}");
        if case.kind == "ReplicationController" {
            // kube's field selector of ReplicationControllers.
            let names = s.kubectl_ok(&[
                "get",
                &res,
                "--field-selector=status.replicas=0",
                "-o",
                "name",
            ]);
            assert_eq!(names.trim(), "replicationcontroller/legacy");
            let none = s.kubectl_ok(&[
                "get",
                &res,
                "--field-selector=status.replicas=3",
                "-o",
                "name",
            ]);
            assert_eq!(none.trim(), "");
        }
        // Server-side apply owns what it sets, and the kind's schema explains it.
        let out = s.kubectl_stdin_ok(
            &[
                "apply",
                "--server-side",
                "--force-conflicts",
                "--field-manager=chart",
                "-f",
                "-",
            ],
            case.yaml,
        );
        assert!(out.contains("serverside-applied"), "{res}: {out}");
        let applied = s.get_json(&[&res, case.name, "--show-managed-fields"]);
        let managers: Vec<&str> = applied["metadata"]["managedFields"]
            .as_array()
            .map(|m| m.iter().filter_map(|e| e["manager"].as_str()).collect())
            .unwrap_or_default();
        assert!(managers.contains(&"chart"), "{res}: {managers:?}");
        let explained = s.kubectl_ok(&[
            "explain",
            case.plural,
            &format!("--api-version={}", case.api_version()),
        ]);
        assert!(
            explained.contains(&format!("KIND:       {}", case.kind)),
            "{res}: {explained}"
        );
        // Invalid objects are refused in kube's words.
        let err = s.kubectl_stdin(&["create", "-f", "-"], case.invalid);
        let stderr = String::from_utf8_lossy(&err.stderr);
        assert!(!err.status.success(), "{res}: invalid object accepted");
        assert!(stderr.contains(case.error), "{res}: {stderr}");
    }
    s.block_on(async {
        let c = s.client().await;
        for case in CASES {
            let api = case.api(&c);
            // kube-rs lists by label and watches the delete.
            let listed = api
                .list(&ListParams::default().labels("tier=gold"))
                .await
                .unwrap_or_else(|e| panic!("{}: list: {e}", case.kind));
            assert_eq!(listed.items.len(), 1, "{}", case.kind);
            let got = api.get(case.name).await.expect("kube-rs get");
            assert_eq!(
                got.metadata.annotations.unwrap_or_default()["replaced"],
                "yes"
            );
            // kube-rs writes its own object: create, merge patch, update, delete.
            let mut mine: DynamicObject = serde_yaml::from_str(case.yaml).expect("case YAML");
            let own = format!("{}-rs", case.name);
            mine.metadata.name = Some(own.clone());
            let created = api
                .create(&PostParams::default(), &mine)
                .await
                .unwrap_or_else(|e| panic!("{}: kube-rs create: {e}", case.kind));
            assert!(created.metadata.uid.is_some());
            let patch = serde_json::json!({"metadata": {"labels": {"client": "kube-rs"}}});
            let mut patched = api
                .patch(&own, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .unwrap_or_else(|e| panic!("{}: kube-rs patch: {e}", case.kind));
            patched
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert("updated".into(), "yes".into());
            let updated = api
                .replace(&own, &PostParams::default(), &patched)
                .await
                .unwrap_or_else(|e| panic!("{}: kube-rs replace: {e}", case.kind));
            assert_eq!(
                updated.metadata.labels.unwrap_or_default()["client"],
                "kube-rs"
            );
            api.delete(&own, &DeleteParams::default())
                .await
                .unwrap_or_else(|e| panic!("{}: kube-rs delete: {e}", case.kind));
            let rv = listed.metadata.resource_version.unwrap_or_default();
            let mut events = api
                .watch(&WatchParams::default().timeout(30), &rv)
                .await
                .expect("watch")
                .boxed();
            let res = case.qualified();
            let name = case.name;
            let kubectl = s.kubectl_cmd();
            let deleting = tokio::task::spawn_blocking(move || {
                let mut cmd = kubectl;
                cmd.args(["delete", &res, name]);
                crate::support::run(&mut cmd)
            });
            let mut deleted = false;
            while let Some(ev) = events.next().await {
                // kube-rs's own object was deleted before; the watch replays that too.
                if let WatchEvent::Deleted(o) = ev.expect("watch event")
                    && o.metadata.name.as_deref() == Some(case.name)
                {
                    deleted = true;
                    break;
                }
            }
            assert!(deleted, "{}: no DELETED event", case.kind);
            let out = deleting.await.expect("kubectl delete");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            // Protobuf, as client-go asks for built-in kinds.
            s.kubectl_stdin_ok(&["create", "-f", "-"], case.yaml);
            let req = http::Request::get(case.path(case.name))
                .header("Accept", "application/vnd.kubernetes.protobuf")
                .body(kube::client::Body::empty())
                .expect("request");
            let resp = c.send(req).await.expect("protobuf get");
            assert_eq!(resp.status(), 200, "{}", case.kind);
            let ct = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_string();
            assert_eq!(ct, "application/vnd.kubernetes.protobuf", "{}", case.kind);
            let body = resp.into_body().collect().await.expect("body").to_bytes();
            assert!(body.starts_with(b"k8s\0"), "{}", case.kind);
            let needle = case.kind.as_bytes();
            assert!(
                body.windows(needle.len()).any(|w| w == needle),
                "{}: the envelope names the kind",
                case.kind
            );
        }
    });
}

/// ComponentStatus (probed, read-only) and pod bindings (create-only, setting the pod's node).
pub fn component_statuses_and_bindings(s: &Server) {
    let table = s.kubectl_ok(&["get", "componentstatuses"]);
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "STATUS", "MESSAGE", "ERROR"], "{table}");
    let names: Vec<&str> = lines.filter_map(|l| l.split_whitespace().next()).collect();
    for n in ["scheduler", "controller-manager", "etcd-0"] {
        assert!(names.contains(&n), "{table}");
    }
    let etcd = s.get_json(&["cs", "etcd-0"]);
    assert_eq!(etcd["conditions"][0]["type"], "Healthy", "{etcd}");
    assert_eq!(etcd["conditions"][0]["status"], "True", "{etcd}");
    assert_eq!(etcd["conditions"][0]["message"], "ok", "{etcd}");
    let err = s.kubectl_err(&["get", "cs", "kubelet"]);
    assert!(
        err.contains("componentstatuses \"kubelet\" not found"),
        "{err}"
    );
    let err = s.kubectl_err(&["delete", "cs", "etcd-0"]);
    assert!(
        err.contains("MethodNotAllowed") || err.contains("not allowed"),
        "{err}"
    );

    for pod in ["bind-me", "bind-legacy"] {
        s.kubectl_ok(&["run", pod, "--image=nginx", "--restart=Never"]);
    }
    let binding = |pod: &str, node: &str| {
        serde_json::json!({
            "apiVersion": "v1", "kind": "Binding",
            "metadata": {"name": pod, "annotations": {"scheduled-by": "test"}},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        })
    };
    s.block_on(async {
        let c = s.client().await;
        let post = |path: String, body: Value| {
            let c = c.clone();
            async move {
                let req = http::Request::post(path)
                    .header("Content-Type", "application/json")
                    .body(kube::client::Body::from(serde_json::to_vec(&body).expect("json")))
                    .expect("request");
                let resp = c.send(req).await.expect("binding request");
                let status = resp.status().as_u16();
                let body = resp.into_body().collect().await.expect("body").to_bytes();
                (status, serde_json::from_slice::<Value>(&body).expect("status JSON"))
            }
        };
        let (code, st) = post(
            "/api/v1/namespaces/default/pods/bind-me/binding".into(),
            binding("bind-me", "node-a"),
        )
        .await;
        assert_eq!((code, &st["status"]), (201, &Value::from("Success")), "{st}");
        let (code, st) = post(
            "/api/v1/namespaces/default/pods/bind-me/binding".into(),
            binding("bind-me", "node-b"),
        )
        .await;
        assert_eq!(code, 409, "{st}");
        assert_eq!(
            st["message"],
            "Operation cannot be fulfilled on pods/binding \"bind-me\": pod bind-me is already assigned to node \"node-a\""
        );
        let (code, st) = post(
            "/api/v1/namespaces/default/pods/bind-me/binding".into(),
            binding("other", "node-b"),
        )
        .await;
        assert_eq!(code, 400, "{st}");
        assert_eq!(st["message"], "name in URL does not match name in Binding object");
        let (code, st) = post(
            "/api/v1/namespaces/default/bindings".into(),
            binding("bind-legacy", ""),
        )
        .await;
        assert_eq!(code, 422, "{st}");
        assert_eq!(st["details"]["causes"][0]["field"], "target.name", "{st}");
        let (code, st) = post(
            "/api/v1/namespaces/default/bindings".into(),
            binding("bind-legacy", "node-b"),
        )
        .await;
        assert_eq!(code, 201, "{st}");
        let (code, st) = post(
            "/api/v1/namespaces/default/bindings".into(),
            binding("no-such-pod", "node-b"),
        )
        .await;
        assert_eq!(code, 404, "{st}");
    });
    let pod = s.get_json(&["pod", "bind-me"]);
    assert_eq!(pod["spec"]["nodeName"], "node-a", "{pod}");
    assert_eq!(pod["metadata"]["annotations"]["scheduled-by"], "test");
    let scheduled = pod["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "PodScheduled"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(scheduled["status"], "True", "{pod}");
    let legacy = s.get_json(&["pod", "bind-legacy"]);
    assert_eq!(legacy["spec"]["nodeName"], "node-b", "{legacy}");
    s.kubectl_ok(&["delete", "pod", "bind-me", "bind-legacy", "--wait=false"]);
}

/// `kubectl autoscale` (which creates autoscaling/v1 HorizontalPodAutoscalers) and the v2 view
/// of the same object; a v1 update keeps what only v2 can say.
pub fn autoscaling_v1_and_v2_are_one_object(s: &Server) {
    s.kubectl_ok(&["create", "deployment", "scaled", "--image=nginx"]);
    let out = s.kubectl_ok(&[
        "autoscale",
        "deployment",
        "scaled",
        "--min=2",
        "--max=5",
        "--cpu-percent=80",
    ]);
    assert!(out.contains("autoscaled"), "{out}");
    let v2 = s.get_json(&["horizontalpodautoscalers.v2.autoscaling", "scaled"]);
    assert_eq!(v2["apiVersion"], "autoscaling/v2");
    assert_eq!(
        v2["spec"]["metrics"],
        serde_json::json!([{"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}}]),
        "{v2}"
    );
    // A v2 client adds a metric v1 cannot express.
    s.kubectl_ok(&[
        "patch",
        "horizontalpodautoscalers.v2.autoscaling",
        "scaled",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/metrics/-","value":{"type":"Pods","pods":{"metric":{"name":"rps"},"target":{"type":"AverageValue","averageValue":"100"}}}}]"#,
    ]);
    let mut v1 = s.get_json(&["horizontalpodautoscalers.v1.autoscaling", "scaled"]);
    assert_eq!(v1["apiVersion"], "autoscaling/v1");
    assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 80, "{v1}");
    assert_eq!(v1["spec"]["minReplicas"], 2);
    let others = v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(others.contains("\"metricName\":\"rps\""), "{v1}");
    // A v1 client updates it whole: the Pods metric survives.
    v1["spec"]["maxReplicas"] = 7.into();
    s.kubectl_stdin_ok(&["replace", "-f", "-"], &v1.to_string());
    let v2 = s.get_json(&["horizontalpodautoscalers.v2.autoscaling", "scaled"]);
    assert_eq!(v2["spec"]["maxReplicas"], 7, "{v2}");
    let names: Vec<&str> = v2["spec"]["metrics"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["Pods", "Resource"], "{v2}");
    assert!(
        v2["metadata"]["annotations"]
            .get("autoscaling.alpha.kubernetes.io/metrics")
            .is_none()
    );
    let table = s.kubectl_ok(&["get", "hpa", "scaled"]);
    assert!(table.contains("Deployment/scaled"), "{table}");
    // An annotation v1's conversion cannot read is the caller's error.
    v1["metadata"]["annotations"]["autoscaling.alpha.kubernetes.io/metrics"] = "{".into();
    v1["metadata"]["resourceVersion"] = serde_json::Value::Null;
    let err = s.kubectl_stdin(&["replace", "-f", "-"], &v1.to_string());
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(
        stderr.contains("HorizontalPodAutoscaler in version \"v1\" cannot be handled as a HorizontalPodAutoscaler"),
        "{stderr}"
    );
    s.kubectl_ok(&["delete", "hpa", "scaled"]);
    s.kubectl_ok(&["delete", "deployment", "scaled"]);
}

/// `pods/eviction`: a running pod goes only when its PodDisruptionBudget allows it, a pending
/// one at once.
pub fn evictions_respect_disruption_budgets(s: &Server) {
    for pod in ["guarded", "pending"] {
        s.kubectl_ok(&[
            "run",
            pod,
            "--image=nginx",
            "--restart=Never",
            "--labels=app=guarded",
        ]);
    }
    // What a kubelet would report for the first: running and ready.
    s.kubectl_ok(&[
        "patch",
        "pod",
        "guarded",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    s.kubectl_ok(&[
        "create",
        "poddisruptionbudget",
        "guard",
        "--selector=app=guarded",
        "--min-available=1",
    ]);
    let post = |pod: &str, body: Value| -> (u16, Value) {
        s.block_on(async {
            let c = s.client().await;
            let req =
                http::Request::post(format!("/api/v1/namespaces/default/pods/{pod}/eviction"))
                    .header("Content-Type", "application/json")
                    .body(kube::client::Body::from(
                        serde_json::to_vec(&body).expect("json"),
                    ))
                    .expect("request");
            let resp = c.send(req).await.expect("eviction");
            let code = resp.status().as_u16();
            let bytes = resp.into_body().collect().await.expect("body").to_bytes();
            (code, serde_json::from_slice(&bytes).expect("status JSON"))
        })
    };
    let eviction = |name: &str| {
        serde_json::json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": "default"}})
    };
    let evict = |pod: &str| post(pod, eviction(pod));
    let (code, st) = post("guarded", eviction("pending"));
    assert_eq!(
        (code, &st["message"]),
        (
            400,
            &Value::from("name in URL does not match name in Eviction object")
        ),
        "{st}"
    );
    let (code, st) = evict("absent");
    assert_eq!(code, 404, "{st}");
    // No disruption controller has processed the budget: kube refuses too.
    let (code, st) = evict("guarded");
    assert_eq!(code, 429, "{st}");
    assert_eq!(
        st["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        st["details"]["causes"][0]["reason"], "DisruptionBudget",
        "{st}"
    );
    // A pending pod disrupts nothing.
    let (code, st) = evict("pending");
    assert_eq!(code, 201, "{st}");
    assert!(s.kubectl(&["get", "pod", "pending"]).status.code() != Some(0));
    // The budget allows one disruption, as a disruption controller would report it.
    let generation = s.get_json(&["pdb", "guard"])["metadata"]["generation"].clone();
    let status = serde_json::json!({"status": {"observedGeneration": generation,
        "disruptionsAllowed": 1, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2}});
    s.kubectl_ok(&[
        "patch",
        "pdb",
        "guard",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status.to_string(),
    ]);
    // A dry run checks the budget and changes nothing.
    let mut dry = eviction("guarded");
    dry["deleteOptions"] = serde_json::json!({"dryRun": ["All"]});
    let (code, st) = post("guarded", dry);
    assert_eq!(code, 201, "{st}");
    assert_eq!(
        s.get_json(&["pdb", "guard"])["status"]["disruptionsAllowed"],
        1
    );
    let pod = s.get_json(&["pod", "guarded"]);
    assert!(pod["metadata"]["deletionTimestamp"].is_null(), "{pod}");
    // kube-rs's eviction, as a controller written with it sends one.
    let st = s.block_on(async {
        let pods: Api<k8s_openapi::api::core::v1::Pod> =
            Api::namespaced(s.client().await, "default");
        pods.evict("guarded", &kube::api::EvictParams::default())
            .await
            .expect("eviction")
    });
    assert_eq!(
        st.status,
        Some(kube::core::response::StatusSummary::Success),
        "{st:?}"
    );
    let pdb = s.get_json(&["pdb", "guard"]);
    assert_eq!(pdb["status"]["disruptionsAllowed"], 0, "{pdb}");
    assert!(
        pdb["status"]["disruptedPods"]["guarded"].is_string(),
        "{pdb}"
    );
    let err = s.kubectl_err(&["get", "pod", "guarded"]);
    assert!(err.contains("not found"), "{err}");
    // An unready pod under a budget that lets unhealthy pods go needs no disruption, even
    // from a budget nothing has processed.
    s.kubectl_ok(&[
        "run",
        "unready",
        "--image=nginx",
        "--restart=Never",
        "--labels=app=guarded",
    ]);
    s.kubectl_ok(&[
        "patch",
        "pod",
        "unready",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"False"}]}}"#,
    ]);
    s.kubectl_ok(&["delete", "pdb", "guard"]);
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: tolerant, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: guarded}}
  unhealthyPodEvictionPolicy: AlwaysAllow
",
    );
    let (code, st) = evict("unready");
    assert_eq!(code, 201, "{st}");
    let pdb = s.get_json(&["pdb", "tolerant"]);
    assert!(pdb["status"]["disruptedPods"].is_null(), "{pdb}");
    let err = s.kubectl_err(&["get", "pod", "unready"]);
    assert!(err.contains("not found"), "{err}");
    s.kubectl_ok(&["delete", "pdb", "tolerant"]);
}
