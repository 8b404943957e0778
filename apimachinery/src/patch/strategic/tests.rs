use serde_json::{Value, json};

use super::*;

fn gvk<'a>(api_version: &'a str, kind: &'a str) -> GroupVersionKindRef<'a> {
    GroupVersionKindRef::from_api_version(api_version, kind)
}

fn deployment(containers: Value) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {
                "metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {"containers": containers, "restartPolicy": "Always"},
            },
        },
    })
}

fn containers(v: &Value) -> &Value {
    &v["spec"]["template"]["spec"]["containers"]
}

struct Case {
    name: &'static str,
    kind: (&'static str, &'static str),
    original: Value,
    patch: Value,
    want: Value,
}

fn run(cases: Vec<Case>) {
    for case in cases {
        let got =
            strategic_merge_patch(&case.original, &case.patch, &gvk(case.kind.0, case.kind.1))
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(got, case.want, "{}", case.name);
    }
}

#[test]
fn maps_merge_and_null_deletes() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c1", "labels": {"app": "web", "tier": "fe"}}, "data": {"a": "1", "b": "2"}});
    run(vec![
        Case {
            name: "change and add keys",
            kind: ("v1", "ConfigMap"),
            original: cm.clone(),
            patch: json!({"data": {"a": "3", "c": "4"}}),
            want: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c1", "labels": {"app": "web", "tier": "fe"}},
                "data": {"a": "3", "b": "2", "c": "4"}}),
        },
        Case {
            name: "null deletes a key, a missing key is ignored",
            kind: ("v1", "ConfigMap"),
            original: cm.clone(),
            patch: json!({"metadata": {"labels": {"tier": null, "missing": null}}, "binaryData": null}),
            want: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c1", "labels": {"app": "web"}}, "data": {"a": "1", "b": "2"}}),
        },
        Case {
            name: "nulls inside a new value are dropped",
            kind: ("v1", "ConfigMap"),
            original: cm.clone(),
            patch: json!({"metadata": {"annotations": {"x": "y", "z": null}}}),
            want: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c1", "labels": {"app": "web", "tier": "fe"}, "annotations": {"x": "y"}},
                "data": {"a": "1", "b": "2"}}),
        },
        Case {
            name: "$patch: replace replaces a map",
            kind: ("v1", "ConfigMap"),
            original: cm.clone(),
            patch: json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
            want: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c1", "labels": {"only": "this"}}, "data": {"a": "1", "b": "2"}}),
        },
        Case {
            name: "$patch: delete empties a map",
            kind: ("v1", "ConfigMap"),
            original: cm.clone(),
            patch: json!({"data": {"$patch": "delete"}}),
            want: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c1", "labels": {"app": "web", "tier": "fe"}}, "data": {}}),
        },
        Case {
            // `kubectl diff` sends this dry-run patch with a resourceVersion precondition.
            name: "empty annotations map and resourceVersion",
            kind: ("v1", "ConfigMap"),
            original: cm.clone(),
            patch: json!({"metadata": {"annotations": {}, "resourceVersion": "104"}}),
            want: json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "c1", "labels": {"app": "web", "tier": "fe"}, "annotations": {}, "resourceVersion": "104"},
                "data": {"a": "1", "b": "2"}}),
        },
    ]);
}

#[test]
fn lists_merge_by_key() {
    let original = deployment(json!([
        {"name": "app", "image": "nginx:1.0", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
         "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]},
        {"name": "log", "image": "busybox"},
    ]));
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "change one container's image",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "log", "image": "busybox:2"}]}}}}),
            json!([
                {"name": "app", "image": "nginx:1.0", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]},
                {"name": "log", "image": "busybox:2"},
            ]),
        ),
        (
            "a new container without an order directive goes first",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "envoy", "args": null}]}}}}),
            json!([
                {"name": "side", "image": "envoy"},
                {"name": "app", "image": "nginx:1.0", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]},
                {"name": "log", "image": "busybox"},
            ]),
        ),
        (
            "$patch: delete removes an env var, nested lists merge by their own key",
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "app", "env": [{"$patch": "delete", "name": "A"}, {"name": "C", "value": "3"}]}
            ]}}}}),
            json!([
                {"name": "app", "image": "nginx:1.0", "env": [{"name": "C", "value": "3"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]},
                {"name": "log", "image": "busybox"},
            ]),
        ),
        (
            "ports merge by containerPort",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "app",
                "$setElementOrder/ports": [{"containerPort": 80}],
                "ports": [{"$patch": "delete", "containerPort": 443}]}]}}}}),
            json!([
                {"name": "app", "image": "nginx:1.0", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "log", "image": "busybox"},
            ]),
        ),
        (
            "$patch: replace in a list replaces the whole list",
            json!({"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}}}}),
            json!([{"name": "only", "image": "x"}]),
        ),
        (
            "$setElementOrder reorders and places server-only items",
            json!({"spec": {"template": {"spec": {"$setElementOrder/containers": [{"name": "log"}, {"name": "app"}]}}}}),
            json!([
                {"name": "log", "image": "busybox"},
                {"name": "app", "image": "nginx:1.0", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                 "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "protocol": "TCP"}]},
            ]),
        ),
    ];
    for (name, patch, want) in cases {
        let got = strategic_merge_patch(&original, &patch, &gvk("apps/v1", "Deployment"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(containers(&got), &want, "{name}");
        assert_eq!(got["spec"]["replicas"], 2, "{name}: the rest is kept");
    }
}

#[test]
fn primitive_lists_merge_as_sets() {
    let meta = |finalizers: Value| json!({"metadata": {"name": "n", "finalizers": finalizers}});
    let cases: Vec<(&str, Value, Value, Value)> = vec![
        (
            "union, patch order first",
            json!(["a", "b"]),
            json!({"metadata": {"finalizers": ["c", "a"]}}),
            json!(["c", "a", "b"]),
        ),
        (
            "duplicates collapse",
            json!(["a", "a", "b"]),
            json!({"metadata": {"finalizers": ["b"]}}),
            json!(["a", "b"]),
        ),
        (
            "$deleteFromPrimitiveList removes items",
            json!(["a", "b", "c"]),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "x"]}}),
            json!(["a", "c"]),
        ),
        (
            "kubectl's add-and-remove with an order",
            json!(["a", "b", "c"]),
            json!({"metadata": {
                "$setElementOrder/finalizers": ["d", "a", "c"],
                "$deleteFromPrimitiveList/finalizers": ["b"],
                "finalizers": ["d"],
            }}),
            json!(["d", "a", "c"]),
        ),
        (
            "order directive with a server-only item",
            json!(["a", "x", "b"]),
            json!({"metadata": {"$setElementOrder/finalizers": ["b", "a"]}}),
            json!(["x", "b", "a"]),
        ),
    ];
    for (name, original, patch, want) in cases {
        let got = strategic_merge_patch(&meta(original), &patch, &gvk("v1", "Namespace"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got["metadata"]["finalizers"], want, "{name}");
    }
    // A deletion list for a list that is not there changes nothing.
    let no_list = json!({"metadata": {"name": "n"}});
    let got = strategic_merge_patch(
        &no_list,
        &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        &gvk("v1", "Namespace"),
    )
    .unwrap();
    assert_eq!(got, no_list);
}

#[test]
fn retain_keys_clears_other_fields() {
    let original = deployment(json!([{"name": "app", "image": "nginx"}]));
    let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}});
    let got = strategic_merge_patch(&original, &patch, &gvk("apps/v1", "Deployment")).unwrap();
    assert_eq!(got["spec"]["strategy"], json!({"type": "Recreate"}));

    let volumes = json!({"spec": {"template": {"spec": {"volumes": [
        {"name": "data", "emptyDir": {}},
    ]}}}});
    let patch = json!({"spec": {"template": {"spec": {"volumes": [
        {"name": "data", "$retainKeys": ["configMap", "name"], "configMap": {"name": "cfg"}},
    ]}}}});
    let got = strategic_merge_patch(&volumes, &patch, &gvk("apps/v1", "Deployment")).unwrap();
    assert_eq!(
        got["spec"]["template"]["spec"]["volumes"],
        json!([{"name": "data", "configMap": {"name": "cfg"}}])
    );
}

#[test]
fn other_tagged_lists() {
    let pod = json!({"metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true},
    ]}, "spec": {
        "containers": [{"name": "app", "image": "x"}],
        "tolerations": [{"key": "a", "operator": "Exists"}],
        "imagePullSecrets": [{"name": "one"}],
    }});
    let patch = json!({"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u2"},
        {"uid": "u1", "blockOwnerDeletion": true},
    ]}, "spec": {
        "tolerations": [{"key": "b", "operator": "Exists"}],
        "imagePullSecrets": [{"name": "two"}],
    }});
    let got = strategic_merge_patch(&pod, &patch, &gvk("v1", "Pod")).unwrap();
    assert_eq!(
        got["metadata"]["ownerReferences"],
        json!([
            {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "u2"},
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": true, "blockOwnerDeletion": true},
        ])
    );
    assert_eq!(
        got["spec"]["tolerations"],
        json!([{"key": "b", "operator": "Exists"}]),
        "atomic lists are replaced"
    );
    assert_eq!(
        got["spec"]["imagePullSecrets"],
        json!([{"name": "two"}, {"name": "one"}])
    );

    let service = json!({"spec": {"ports": [{"name": "http", "port": 80, "targetPort": 8080}], "selector": {"app": "a", "tier": "x"}}});
    let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}, {"name": "https", "port": 443}], "selector": {"app": "b"}}});
    let got = strategic_merge_patch(&service, &patch, &gvk("v1", "Service")).unwrap();
    assert_eq!(
        got["spec"]["ports"],
        json!([{"name": "http", "port": 80, "targetPort": 9090}, {"name": "https", "port": 443}])
    );
    assert_eq!(
        got["spec"]["selector"],
        json!({"app": "b", "tier": "x"}),
        "maps always merge under SMP"
    );

    let cluster = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m1"},
        "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "syncMode": "Push"}});
    let patch = json!({"spec": {"taints": [{"key": "b", "effect": "NoExecute"}]}});
    let got = strategic_merge_patch(
        &cluster,
        &patch,
        &gvk("cluster.karmada.io/v1alpha1", "Cluster"),
    )
    .unwrap();
    assert_eq!(
        got["spec"],
        json!({"taints": [{"key": "b", "effect": "NoExecute"}], "syncMode": "Push"})
    );
}

/// The patch `kubectl apply` (client-side) computes with `CreateThreeWayMergePatch` when the
/// manifest changes an image, drops an env var and adds a container, applied to a live object
/// the server has defaulted.
#[test]
fn kubectl_client_side_apply_deployment() {
    let last_applied = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{},"name":"web","namespace":"default"},"spec":{"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"env":[{"name":"A","value":"1"}],"image":"nginx:1.1","name":"app"},{"image":"busybox","name":"sidecar"}]}}}}"#;
    let live = deployment(json!([{
        "name": "app",
        "image": "nginx:1.0",
        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
        "imagePullPolicy": "IfNotPresent",
        "terminationMessagePath": "/dev/termination-log",
        "resources": {},
    }]));
    let patch = json!({
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": last_applied}},
        "spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "app"}, {"name": "sidecar"}],
            "containers": [
                {"$setElementOrder/env": [{"name": "A"}], "env": [{"$patch": "delete", "name": "B"}], "image": "nginx:1.1", "name": "app"},
                {"image": "busybox", "name": "sidecar"},
            ],
        }}},
    });
    let got = strategic_merge_patch(&live, &patch, &gvk("apps/v1", "Deployment")).unwrap();
    assert_eq!(
        containers(&got),
        &json!([
            {"name": "app", "image": "nginx:1.1", "env": [{"name": "A", "value": "1"}],
             "imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log", "resources": {}},
            {"name": "sidecar", "image": "busybox"},
        ])
    );
    assert_eq!(
        got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"],
        last_applied
    );
    assert_eq!(got["spec"]["strategy"], live["spec"]["strategy"]);

    // The ConfigMap case kubectl 1.32 was captured sending.
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1"}, "data": {"a": "1", "b": "2"}});
    let patch = json!({"data": {"a": "3"}, "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}\n"}}});
    let got = strategic_merge_patch(&cm, &patch, &gvk("v1", "ConfigMap")).unwrap();
    assert_eq!(got["data"], json!({"a": "3", "b": "2"}));
}

#[test]
fn errors_and_their_statuses() {
    let original = deployment(json!([{"name": "app", "image": "x", "args": ["a"]}]));
    let containers_patch = |c: Value| json!({"spec": {"template": {"spec": {"containers": c}}}});
    let cases: Vec<(&str, Value, u16)> = vec![
        ("not an object", json!([1]), 400),
        (
            "order directive without a list name",
            json!({"spec": {"$setElementOrder": []}}),
            400,
        ),
        (
            "deletion list without a list name",
            json!({"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}}),
            400,
        ),
        (
            "retainKeys not a list",
            json!({"spec": {"strategy": {"$retainKeys": "type"}}}),
            400,
        ),
        (
            "a patched key outside retainKeys",
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {}}}}),
            400,
        ),
        (
            "item without its merge key",
            containers_patch(json!([{"image": "y"}])),
            500,
        ),
        (
            "$patch: merge in a list",
            containers_patch(json!([{"$patch": "merge", "name": "app"}])),
            500,
        ),
        (
            "unknown $patch value",
            json!({"spec": {"$patch": "explode"}}),
            500,
        ),
        (
            "patch order contradicting the order directive",
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "b"}, {"name": "a"}],
            }}}}),
            500,
        ),
    ];
    for (name, patch, status) in cases {
        let err = strategic_merge_patch(&original, &patch, &gvk("apps/v1", "Deployment"))
            .expect_err(name);
        assert_eq!(err.http_status(), status, "{name}: {err}");
    }

    let nested = json!({"metadata": {"name": "n", "finalizers": [["a"]]}});
    let err = strategic_merge_patch(
        &nested,
        &json!({"metadata": {"finalizers": [["b"]]}}),
        &gvk("v1", "Namespace"),
    )
    .unwrap_err();
    assert_eq!(err.http_status(), 422, "list of lists: {err}");

    let err = strategic_merge_patch(
        &json!({}),
        &json!({}),
        &gvk("policy.karmada.io/v1alpha1", "PropagationPolicy"),
    )
    .unwrap_err();
    assert_eq!(err.http_status(), 415);
    assert_eq!(err.reason(), "UnsupportedMediaType");
}

#[test]
fn go_stable_sort_matches_a_stable_sort_for_strict_orders() {
    let mut data: Vec<u32> = (0..200).map(|i| (i * 7919) % 61).collect();
    let mut want = data.clone();
    want.sort();
    go_stable_sort(&mut data, |a, b| a < b);
    assert_eq!(data, want);
    // Comparators that are not orders (as upstream's, for items missing from the order list)
    // must not break it.
    for len in 0..90 {
        let mut data: Vec<usize> = (0..len).collect();
        go_stable_sort(&mut data, |_, _| true);
        let mut sorted = data.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            (0..len).collect::<Vec<_>>(),
            "a permutation for {len}"
        );
        go_stable_sort(&mut data, |a, b| (a + b) % 3 == 0);
    }
    // Stability: equal keys keep their order.
    let mut pairs: Vec<(u32, usize)> = (0..100).map(|i| ((i % 7) as u32, i)).collect();
    go_stable_sort(&mut pairs, |a, b| a.0 < b.0);
    assert!(
        pairs
            .windows(2)
            .all(|w| w[0].0 < w[1].0 || (w[0].0 == w[1].0 && w[0].1 < w[1].1))
    );
}

/// `patchStrategy:"replace"` (a PodDisruptionBudget's selector): the patch's object replaces the
/// stored one instead of merging into it; conditions beside it still merge by type.
#[test]
fn replace_strategy_replaces_objects() {
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
        "metadata": {"name": "p"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web", "tier": "fe"}}},
        "status": {"conditions": [{"type": "DisruptionAllowed", "status": "True"}]}});
    run(vec![
        Case {
            name: "selector replaced",
            kind: ("policy/v1", "PodDisruptionBudget"),
            original: pdb.clone(),
            patch: json!({"spec": {"selector": {"matchLabels": {"app": "api"}}}}),
            want: json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                "metadata": {"name": "p"},
                "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "api"}}},
                "status": {"conditions": [{"type": "DisruptionAllowed", "status": "True"}]}}),
        },
        Case {
            name: "conditions merged by type",
            kind: ("policy/v1", "PodDisruptionBudget"),
            original: pdb.clone(),
            patch: json!({"status": {"conditions": [{"type": "Other", "status": "False"}]}}),
            want: json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": "p"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web", "tier": "fe"}}},
            "status": {"conditions": [
                {"type": "Other", "status": "False"},
                {"type": "DisruptionAllowed", "status": "True"},
            ]}}),
        },
        Case {
            name: "priority class value changed",
            kind: ("scheduling.k8s.io/v1", "PriorityClass"),
            original: json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "high"}, "value": 1000, "description": "a"}),
            patch: json!({"value": 2000, "description": null}),
            want: json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "high"}, "value": 2000}),
        },
    ]);
}
