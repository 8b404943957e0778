use jiff::Timestamp;
use serde_json::{Value, json};

use super::*;
use crate::patch::{default_field_manager, json_patch};

const T1: &str = "2024-05-01T10:00:00Z";
const T2: &str = "2024-05-01T11:30:00Z";

fn at(time: &str) -> Timestamp {
    time.parse().unwrap()
}

fn configmap_schema() -> Schema {
    Schema::builtin(&GroupVersionKindRef::from_api_version("v1", "ConfigMap")).unwrap()
}

fn deployment_schema() -> Schema {
    Schema::builtin(&GroupVersionKindRef::from_api_version(
        "apps/v1",
        "Deployment",
    ))
    .unwrap()
}

fn apply_opts<'a>(manager: &'a str, force: bool, time: &str) -> ApplyOptions<'a> {
    ApplyOptions {
        manager,
        force,
        api_version: "v1",
        kind: "ConfigMap",
        subresource: None,
        reset_fields: &[],
        now: at(time),
    }
}

fn update_opts<'a>(manager: &'a str, time: &str) -> UpdateOptions<'a> {
    UpdateOptions {
        manager,
        api_version: "v1",
        subresource: None,
        reset_fields: &[],
        now: at(time),
    }
}

fn configmap(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": "default"}, "data": data})
}

fn entry(manager: &str, operation: &str, time: &str, fields: Value) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": "v1", "time": time,
           "fieldsType": "FieldsV1", "fieldsV1": fields})
}

fn managed_fields(obj: &Value) -> &Value {
    &obj["metadata"]["managedFields"]
}

/// An object created by `kubectl create` / client-side apply: an Update entry for `manager`.
fn created_by(manager: &str, obj: Value) -> Value {
    let mut obj = obj;
    update_managed_fields(
        &configmap_schema(),
        None,
        &mut obj,
        &update_opts(manager, T1),
    );
    obj
}

#[test]
fn create_by_apply() {
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c1", "labels": {"app": "web"}}, "data": {"a": "1", "b": "2"}});
    let created = apply(
        &configmap_schema(),
        None,
        &applied,
        &apply_opts("kubectl", false, T1),
    )
    .unwrap();
    assert_eq!(created["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(created["metadata"]["labels"], json!({"app": "web"}));
    assert_eq!(
        managed_fields(&created),
        &json!([entry(
            "kubectl",
            "Apply",
            T1,
            json!({
                "f:data": {"f:a": {}, "f:b": {}},
                "f:metadata": {"f:labels": {"f:app": {}}},
            })
        )])
    );
}

#[test]
fn reapplying_without_a_field_removes_it() {
    let schema = configmap_schema();
    let first = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c1", "labels": {"app": "web"}}, "data": {"a": "1", "b": "2"}});
    let live = apply(&schema, None, &first, &apply_opts("kubectl", false, T1)).unwrap();

    let second = configmap(json!({"a": "1"}));
    let updated = apply(
        &schema,
        Some(&live),
        &second,
        &apply_opts("kubectl", false, T2),
    )
    .unwrap();
    assert_eq!(updated["data"], json!({"a": "1"}));
    assert!(
        updated["metadata"].get("labels").is_none(),
        "emptied labels go: {updated}"
    );
    assert_eq!(
        managed_fields(&updated),
        &json!([entry(
            "kubectl",
            "Apply",
            T2,
            json!({"f:data": {"f:a": {}}})
        )])
    );

    // The same configuration again changes nothing, not even the time.
    let again = apply(
        &schema,
        Some(&updated),
        &second,
        &apply_opts("kubectl", false, "2024-05-02T00:00:00Z"),
    )
    .unwrap();
    assert_eq!(again, updated);
}

#[test]
fn conflicts_with_another_manager() {
    let schema = configmap_schema();
    let live = created_by(
        "kubectl-client-side-apply",
        configmap(json!({"a": "1", "b": "x"})),
    );
    assert_eq!(
        managed_fields(&live),
        &json!([entry(
            "kubectl-client-side-apply",
            "Update",
            T1,
            json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
        )])
    );

    let applied = configmap(json!({"a": "2"}));
    let err = apply(
        &schema,
        Some(&live),
        &applied,
        &apply_opts("kubectl", false, T2),
    )
    .unwrap_err();
    assert_eq!(err.http_status(), 409);
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a"#
    );
    let PatchError::Conflicts(conflicts) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(
        conflicts[0].cause_message(),
        r#"conflict with "kubectl-client-side-apply" using v1"#
    );
    assert_eq!(conflicts[0].field, ".data.a");

    // Applying the value the other manager set is not a conflict: both own it.
    let same = configmap(json!({"a": "1"}));
    let shared = apply(
        &schema,
        Some(&live),
        &same,
        &apply_opts("kubectl", false, T2),
    )
    .unwrap();
    assert_eq!(
        managed_fields(&shared),
        &json!([
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
            entry("kubectl-client-side-apply", "Update", T1, json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})),
        ]),
        "an apply that changes nothing records ownership but no time, as upstream"
    );

    let two = configmap(json!({"a": "2", "b": "y"}));
    let err = apply(&schema, Some(&live), &two, &apply_opts("ci", false, T2)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using v1:\n- .data.a\n- .data.b"
    );
}

#[test]
fn force_takes_ownership() {
    let schema = configmap_schema();
    let live = created_by("kubectl-client-side-apply", configmap(json!({"a": "1"})));
    let applied = configmap(json!({"a": "2"}));
    let forced = apply(
        &schema,
        Some(&live),
        &applied,
        &apply_opts("kubectl", true, T2),
    )
    .unwrap();
    assert_eq!(forced["data"], json!({"a": "2"}));
    assert_eq!(
        managed_fields(&forced),
        &json!([
            entry("kubectl", "Apply", T2, json!({"f:data": {"f:a": {}}})),
            entry(
                "kubectl-client-side-apply",
                "Update",
                T1,
                json!({"f:data": {}})
            ),
        ])
    );
}

#[test]
fn update_after_apply_moves_ownership() {
    let schema = configmap_schema();
    let applied = configmap(json!({"a": "1", "b": "2"}));
    let live = apply(&schema, None, &applied, &apply_opts("kubectl", false, T1)).unwrap();

    let mut edited = live.clone();
    edited["data"]["b"] = json!("3");
    edited["data"]["c"] = json!("4");
    update_managed_fields(
        &schema,
        Some(&live),
        &mut edited,
        &update_opts("kubectl-edit", T2),
    );
    assert_eq!(
        managed_fields(&edited),
        &json!([
            entry("kubectl", "Apply", T1, json!({"f:data": {"f:a": {}}})),
            entry(
                "kubectl-edit",
                "Update",
                T2,
                json!({"f:data": {"f:b": {}, "f:c": {}}})
            ),
        ])
    );

    // Applying the old value again now conflicts with the editor.
    let err = apply(
        &schema,
        Some(&edited),
        &applied,
        &apply_opts("kubectl", false, T2),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl-edit" using v1: .data.b"#
    );

    // Removing a field removes it from every manager; an unchanged write records nothing.
    let mut removed = edited.clone();
    removed["data"].as_object_mut().unwrap().remove("c");
    update_managed_fields(
        &schema,
        Some(&edited),
        &mut removed,
        &update_opts("kubectl-patch", T2),
    );
    assert_eq!(
        managed_fields(&removed),
        &json!([
            entry("kubectl", "Apply", T1, json!({"f:data": {"f:a": {}}})),
            entry("kubectl-edit", "Update", T2, json!({"f:data": {"f:b": {}}})),
        ])
    );
}

#[test]
fn managed_fields_of_a_created_deployment() {
    let schema = deployment_schema();
    let mut deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]},
            },
        },
    });
    let opts = UpdateOptions {
        api_version: "apps/v1",
        ..update_opts("kubectl-create", T1)
    };
    update_managed_fields(&schema, None, &mut deployment, &opts);
    assert_eq!(
        managed_fields(&deployment),
        &json!([{"manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": T1,
        "fieldsType": "FieldsV1", "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
                        ".": {},
                        "f:image": {},
                        "f:name": {},
                        "f:ports": {
                            ".": {},
                            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}},
                        },
                    }}},
                },
            },
        }}])
    );
}

#[test]
fn associative_list_items_are_owned_by_key() {
    let schema = deployment_schema();
    let opts = |manager, force| ApplyOptions {
        api_version: "apps/v1",
        kind: "Deployment",
        ..apply_opts(manager, force, T1)
    };
    let config = |containers: Value| {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": containers}}},
        })
    };
    let live = apply(
        &schema,
        None,
        &config(json!([
            {"name": "app", "image": "nginx:1"},
            {"name": "log", "image": "busybox"},
        ])),
        &opts("kubectl", false),
    )
    .unwrap();

    // Another applier adds a container and changes an image it does not own.
    let err = apply(
        &schema,
        Some(&live),
        &config(json!([
            {"name": "app", "image": "nginx:2"},
            {"name": "side", "image": "envoy"},
        ])),
        &opts("rollout", false),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "kubectl": .spec.template.spec.containers[name="app"].image"#
    );
    let merged = apply(
        &schema,
        Some(&live),
        &config(json!([
            {"name": "app", "image": "nginx:1"},
            {"name": "side", "image": "envoy"},
        ])),
        &opts("rollout", false),
    )
    .unwrap();
    let names: Vec<&str> = merged["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["app", "log", "side"]);

    // kubectl drops "log" from its configuration: only that item goes.
    let pruned = apply(
        &schema,
        Some(&merged),
        &config(json!([
            {"name": "app", "image": "nginx:1"},
        ])),
        &opts("kubectl", false),
    )
    .unwrap();
    assert_eq!(
        pruned["spec"]["template"]["spec"]["containers"],
        json!([{"name": "app", "image": "nginx:1"}, {"name": "side", "image": "envoy"}])
    );
}

#[test]
fn a_json_patch_rewriting_managed_fields_is_kept() {
    let schema = configmap_schema();
    let live = created_by("kubectl-client-side-apply", configmap(json!({"a": "1"})));
    let rewritten = json!([entry(
        "kubectl",
        "Apply",
        T1,
        json!({"f:data": {"f:a": {}}})
    )]);
    let patch = json!([{"op": "replace", "path": "/metadata/managedFields", "value": rewritten}]);
    let mut patched = json_patch(&live, &patch).unwrap();
    let manager = default_field_manager(None, "kubectl/v1.32.4 (linux/amd64) kubernetes/4cb5f07");
    update_managed_fields(
        &schema,
        Some(&live),
        &mut patched,
        &update_opts(&manager, T2),
    );
    assert_eq!(managed_fields(&patched), &rewritten);

    // Undecodable managedFields from the client fall back to the stored ones.
    let mut bogus = live.clone();
    bogus["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Merge"}]);
    update_managed_fields(
        &schema,
        Some(&live),
        &mut bogus,
        &update_opts("kubectl", T2),
    );
    assert_eq!(managed_fields(&bogus), managed_fields(&live));
}

#[test]
fn clearing_managed_fields_stops_tracking_until_the_next_apply() {
    let schema = configmap_schema();
    let live = created_by("kubectl-create", configmap(json!({"a": "1"})));
    let mut cleared = live.clone();
    cleared["metadata"]["managedFields"] = json!([]);
    update_managed_fields(
        &schema,
        Some(&live),
        &mut cleared,
        &update_opts("kubectl", T2),
    );
    assert!(cleared["metadata"].get("managedFields").is_none());

    let mut changed = cleared.clone();
    changed["data"]["a"] = json!("2");
    update_managed_fields(
        &schema,
        Some(&cleared),
        &mut changed,
        &update_opts("kubectl", T2),
    );
    assert!(changed["metadata"].get("managedFields").is_none());

    // The first apply gives the existing fields to "before-first-apply".
    let mut labelled = changed.clone();
    labelled["metadata"]["labels"] = json!({"x": "1"});
    let applied = apply(
        &schema,
        Some(&labelled),
        &configmap(json!({"b": "2"})),
        &apply_opts("kubectl", false, T2),
    )
    .unwrap();
    assert_eq!(applied["data"], json!({"a": "2", "b": "2"}));
    assert_eq!(
        managed_fields(&applied),
        &json!([
            entry("kubectl", "Apply", T2, json!({"f:data": {"f:b": {}}})),
            entry(
                "before-first-apply",
                "Update",
                T2,
                json!({
                    "f:data": {".": {}, "f:a": {}},
                    "f:metadata": {"f:labels": {".": {}, "f:x": {}}},
                })
            ),
        ])
    );
}

#[test]
fn status_subresource_and_reset_fields() {
    let schema = deployment_schema();
    let live = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1}, "status": {"replicas": 1}});
    let mut new = live.clone();
    new["status"] = json!({"replicas": 2, "readyReplicas": 2});
    new["metadata"]["managedFields"] =
        json!([entry("ignored", "Update", T1, json!({"f:spec": {}}))]);
    let opts = UpdateOptions {
        api_version: "apps/v1",
        subresource: Some("status"),
        reset_fields: &["spec"],
        ..update_opts("kube-controller-manager", T2)
    };
    let mut live_with_fields = live.clone();
    live_with_fields["metadata"]["managedFields"] = json!([
        {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
         "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    ]);
    update_managed_fields(&schema, Some(&live_with_fields), &mut new, &opts);
    assert_eq!(
        managed_fields(&new),
        &json!([
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "apps/v1", "time": T1,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
            {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": T2,
             "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {"f:readyReplicas": {}, "f:replicas": {}}},
             "subresource": "status"},
        ])
    );

    // On the main resource of a kind with a status subresource, status changes are not tracked.
    let mut main = live.clone();
    main["spec"]["replicas"] = json!(3);
    main["status"]["replicas"] = json!(5);
    let opts = UpdateOptions {
        api_version: "apps/v1",
        reset_fields: &["status"],
        ..update_opts("hpa", T2)
    };
    update_managed_fields(&schema, Some(&live), &mut main, &opts);
    assert!(
        managed_fields(&main).is_null(),
        "untracked object stays untracked"
    );
    let mut tracked = live_with_fields.clone();
    tracked["spec"]["replicas"] = json!(3);
    tracked["status"]["replicas"] = json!(5);
    update_managed_fields(&schema, Some(&live_with_fields), &mut tracked, &opts);
    assert_eq!(
        managed_fields(&tracked),
        &json!([{"manager": "hpa", "operation": "Update", "apiVersion": "apps/v1", "time": T2,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}])
    );
}

/// `kubectl apply --server-side` on an object managed by client-side apply: conflicts explained
/// by the last-applied annotation are forced, others are not.
#[test]
fn client_side_to_server_side_apply_migration() {
    let schema = configmap_schema();
    let last_applied = "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"1\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"c1\",\"namespace\":\"default\"}}\n";
    let mut object = configmap(json!({"a": "1"}));
    object["metadata"]["annotations"] = json!({LAST_APPLIED_ANNOTATION: last_applied});
    let live = created_by("kubectl-client-side-apply", object);

    let applied = configmap(json!({"a": "2"}));
    let migrated = apply(
        &schema,
        Some(&live),
        &applied,
        &apply_opts("kubectl", false, T2),
    )
    .unwrap();
    assert_eq!(migrated["data"], json!({"a": "2"}));
    assert_eq!(
        migrated["metadata"]["annotations"][LAST_APPLIED_ANNOTATION],
        "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"2\"},\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c1\",\"namespace\":\"default\"}}\n"
    );
    let fields = managed_fields(&migrated);
    assert_eq!(
        fields[0],
        entry("kubectl", "Apply", T2, json!({"f:data": {"f:a": {}}}))
    );
    assert_eq!(fields[1]["manager"], "kubectl-client-side-apply");

    // Only the manager named "kubectl" gets this treatment.
    let err = apply(
        &schema,
        Some(&live),
        &applied,
        &apply_opts("helm", false, T2),
    )
    .unwrap_err();
    assert_eq!(err.http_status(), 409);

    // A value changed since the last client-side apply is a real conflict.
    let mut drifted = live.clone();
    drifted["data"]["a"] = json!("5");
    let err = apply(
        &schema,
        Some(&drifted),
        &applied,
        &apply_opts("kubectl", false, T2),
    )
    .unwrap_err();
    assert_eq!(err.http_status(), 409);
}

#[test]
fn oldest_update_managers_fold_into_ancient_changes() {
    let schema = configmap_schema();
    let mut live = created_by("m00", configmap(json!({"k00": "v"})));
    for i in 1..=10 {
        let mut next = live.clone();
        next["data"][format!("k{i:02}")] = json!("v");
        let time = format!("2024-05-01T10:{i:02}:00Z");
        let manager = format!("m{i:02}");
        update_managed_fields(
            &schema,
            Some(&live),
            &mut next,
            &update_opts(&manager, &time),
        );
        live = next;
    }
    let entries = managed_fields(&live).as_array().unwrap();
    assert_eq!(entries.len(), 10);
    let managers: Vec<&str> = entries
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers[0], "ancient-changes");
    assert!(!managers.contains(&"m00") && !managers.contains(&"m01"));
    assert_eq!(entries[0]["time"], "2024-05-01T10:01:00Z");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:data": {".": {}, "f:k00": {}, "f:k01": {}}})
    );
}

#[test]
fn custom_resources_use_their_schema() {
    let schema = Schema::from_openapi_v3(&json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {
            "clusters": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "weight": {"type": "integer"}}},
            },
            "tags": {"type": "array", "items": {"type": "string"}},
        }}},
    }));
    let opts = |manager| ApplyOptions {
        api_version: "policy.example.io/v1",
        kind: "Policy",
        ..apply_opts(manager, false, T1)
    };
    let object = |spec: Value| json!({"apiVersion": "policy.example.io/v1", "kind": "Policy", "metadata": {"name": "p"}, "spec": spec});
    let live = apply(
        &schema,
        None,
        &object(json!({"clusters": [{"name": "m1", "weight": 1}], "tags": ["a"]})),
        &opts("one"),
    )
    .unwrap();
    assert_eq!(
        managed_fields(&live)[0]["fieldsV1"],
        json!({"f:spec": {"f:clusters": {"k:{\"name\":\"m1\"}": {".": {}, "f:name": {}, "f:weight": {}}}, "f:tags": {}}})
    );
    let both = apply(
        &schema,
        Some(&live),
        &object(json!({"clusters": [{"name": "m2", "weight": 2}]})),
        &opts("two"),
    )
    .unwrap();
    assert_eq!(
        both["spec"]["clusters"],
        json!([{"name": "m1", "weight": 1}, {"name": "m2", "weight": 2}])
    );
    let err = apply(
        &schema,
        Some(&live),
        &object(json!({"tags": ["b"]})),
        &opts("two"),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"Apply failed with 1 conflict: conflict with "one": .spec.tags"#
    );

    // Without a schema, objects are granular maps and lists atomic.
    let untyped = Schema::untyped();
    let live = apply(
        &untyped,
        None,
        &object(json!({"x": {"y": 1}, "l": [1]})),
        &opts("one"),
    )
    .unwrap();
    assert_eq!(
        managed_fields(&live)[0]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:l": {}, "f:x": {".": {}, "f:y": {}}}})
    );
}

#[test]
fn bad_apply_requests() {
    let schema = configmap_schema();
    let cases: Vec<(Value, u16, &str)> = vec![
        (json!([1]), 400, "error decoding patch"),
        (
            json!({"apiVersion": "apps/v1", "kind": "ConfigMap"}),
            400,
            "invalid object type: apps/v1, Kind=ConfigMap",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Secret"}),
            400,
            "invalid object type: /v1, Kind=Secret",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "managedFields": []}}),
            400,
            "metadata.managedFields must be nil",
        ),
        (
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "finalizers": ["a", "a"]}}),
            500,
            "duplicate entries for key [=\"a\"]",
        ),
    ];
    for (applied, status, text) in cases {
        let err = apply(&schema, None, &applied, &apply_opts("kubectl", false, T1)).unwrap_err();
        assert_eq!(err.http_status(), status, "{applied}: {err}");
        assert!(err.to_string().contains(text), "{applied}: {err}");
    }
}

/// Writes that start from the stored entries decode only those they take fields from (and the
/// writer's own): each result is written out here, entry for entry and in kube's order
/// (operation, then time, then manager), as structured-merge-diff's `Update` gives it.
#[test]
fn updates_from_stored_entries() {
    let schema = deployment_schema();
    let mut live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx:1"}]}}},
        "status": {"replicas": 2, "conditions": [{"type": "Available", "status": "False"}]}});
    let creator_fields = json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
        "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
            "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}});
    let kcm_fields = json!({"f:status": {
        "f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}},
        "f:replicas": {}}});
    let main_entry = |manager: &str, time: &str, fields: Value| {
        json!({"manager": manager, "operation": "Update", "apiVersion": "apps/v1", "time": time,
               "fieldsType": "FieldsV1", "fieldsV1": fields})
    };
    let status_entry = |manager: &str, time: &str, fields: Value| {
        let mut e = main_entry(manager, time, fields);
        e["subresource"] = json!("status");
        e
    };
    live["metadata"]["managedFields"] = json!([
        main_entry("creator", T1, creator_fields.clone()),
        status_entry("kcm", T1, kcm_fields.clone()),
    ]);
    let status = |manager| UpdateOptions {
        api_version: "apps/v1",
        subresource: Some("status"),
        reset_fields: &["spec", "metadata"],
        ..update_opts(manager, T2)
    };
    let main = |manager| UpdateOptions {
        api_version: "apps/v1",
        reset_fields: &["status"],
        ..update_opts(manager, T2)
    };
    let cases: Vec<(&str, Value, UpdateOptions<'_>, Value)> = vec![
        (
            "the status writer again: its entry grows and takes the new time",
            json!({"status": {"readyReplicas": 2}}),
            status("kcm"),
            json!([
                main_entry("creator", T1, creator_fields.clone()),
                status_entry(
                    "kcm",
                    T2,
                    json!({"f:status": {
                    "f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}},
                    "f:readyReplicas": {}, "f:replicas": {}}})
                ),
            ]),
        ),
        (
            "another status writer takes a field from kcm",
            json!({"status": {"replicas": 3}}),
            status("other"),
            json!([
                main_entry("creator", T1, creator_fields.clone()),
                status_entry(
                    "kcm",
                    T1,
                    json!({"f:status": {
                    "f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:status": {}, "f:type": {}}}}})
                ),
                status_entry("other", T2, json!({"f:status": {"f:replicas": {}}})),
            ]),
        ),
        (
            "a status writer changes one field of a list item",
            json!({"status": {"conditions": [{"type": "Available", "status": "True"}]}}),
            status("other"),
            json!([
                main_entry("creator", T1, creator_fields.clone()),
                status_entry(
                    "kcm",
                    T1,
                    json!({"f:status": {
                    "f:conditions": {".": {}, "k:{\"type\":\"Available\"}": {".": {}, "f:type": {}}},
                    "f:replicas": {}}})
                ),
                status_entry(
                    "other",
                    T2,
                    json!({"f:status": {"f:conditions": {
                    "k:{\"type\":\"Available\"}": {"f:status": {}}}}})
                ),
            ]),
        ),
        (
            "the creator's spec change: same fields, new time, now after kcm",
            json!({"spec": {"replicas": 4}}),
            main("creator"),
            json!([
                status_entry("kcm", T1, kcm_fields.clone()),
                main_entry("creator", T2, creator_fields.clone()),
            ]),
        ),
        (
            "another writer takes a container's image from the creator",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}}),
            main("other"),
            json!([
                main_entry(
                    "creator",
                    T1,
                    json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"c\"}": {".": {}, "f:name": {}}}}}}})
                ),
                status_entry("kcm", T1, kcm_fields.clone()),
                main_entry(
                    "other",
                    T2,
                    json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"c\"}": {"f:image": {}}}}}}})
                ),
            ]),
        ),
        (
            "a new label: a new manager owns just that key",
            json!({"metadata": {"labels": {"tier": "web"}}}),
            main("labeller"),
            json!([
                main_entry("creator", T1, creator_fields.clone()),
                status_entry("kcm", T1, kcm_fields.clone()),
                main_entry(
                    "labeller",
                    T2,
                    json!({"f:metadata": {"f:labels": {"f:tier": {}}}})
                ),
            ]),
        ),
    ];
    for (what, patch, opts, want) in cases {
        let mut new = crate::patch::json_merge_patch(&live, &patch).unwrap();
        update_managed_fields(&schema, Some(&live), &mut new, &opts);
        assert_eq!(managed_fields(&new), &want, "{what}");
        // Sent back unchanged or not sent at all, the stored entries are the starting point.
        let mut without = crate::patch::json_merge_patch(&live, &patch).unwrap();
        set_managed_fields(&mut without, None);
        update_managed_fields(&schema, Some(&live), &mut without, &opts);
        assert_eq!(managed_fields(&without), &want, "{what}, none sent");
    }
}
