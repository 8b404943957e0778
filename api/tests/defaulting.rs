//! Defaults and mutations applied on admission, as the CRD schemas and Karmada's mutating
//! webhooks apply them.

mod common;

use api::{Operation, admit};
use common::{fixture, yaml};
use serde_json::{Value, json};

fn admitted(kind: &str, op: Operation, mut obj: Value, old: Option<&Value>) -> Value {
    admit(kind, op, &mut obj, old).unwrap_or_else(|e| panic!("{kind} rejected: {e}"));
    obj
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.chars().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit() && !c.is_ascii_uppercase(),
        })
}

/// Takes the generated permanent id out of an object's labels, checking it is a UUID.
fn take_permanent_id(obj: &mut Value, key: &str) -> String {
    let labels = obj["metadata"]["labels"].as_object_mut().expect("labels");
    let id = labels
        .remove(key)
        .and_then(|v| v.as_str().map(str::to_owned))
        .expect("permanent id");
    assert!(is_uuid(&id), "{id} is not a UUID");
    if labels.is_empty() {
        obj["metadata"].as_object_mut().unwrap().remove("labels");
    }
    id
}

#[test]
fn propagation_policy_create_gets_crd_defaults_and_webhook_mutations() {
    let mut out = admitted(
        "PropagationPolicy",
        Operation::Create,
        fixture("propagationpolicy-divided.yaml"),
        None,
    );
    take_permanent_id(&mut out, "propagationpolicy.karmada.io/permanent-id");
    let expected = yaml(
        r#"
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata:
  name: nginx-divided
  namespace: default
  finalizers: [karmada.io/propagation-policy-controller]
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: nginx, namespace: default}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [member1]}, weight: 3}
        - {targetCluster: {clusterNames: [member2]}, weight: 1}
  priority: 0
  preemption: Never
  schedulerName: default-scheduler
  conflictResolution: Abort
"#,
    );
    assert_eq!(out, expected);
}

#[test]
fn propagation_spec_defaults_table() {
    // (spec fragment merged into a minimal valid spec, expected fragment after admission)
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "replicaScheduling without a type is Divided, then Weighted",
            json!({"placement": {"replicaScheduling": {}}}),
            json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"}}}),
        ),
        (
            "an explicit Aggregated preference is kept",
            json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}}),
            json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}}),
        ),
        (
            "Duplicated gets no division preference",
            json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}),
            json!({"placement": {"replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}),
        ),
        (
            "an empty spread constraint spreads by cluster with at least one group",
            json!({"placement": {"spreadConstraints": [{}, {"spreadByLabel": "rack", "maxGroups": 2}]}}),
            json!({"placement": {"spreadConstraints": [
                {"spreadByField": "cluster", "minGroups": 1},
                {"spreadByLabel": "rack", "maxGroups": 2, "minGroups": 1}
            ]}}),
        ),
        (
            "application failover defaults: toleration 300s, Gracefully, 600s grace",
            json!({"propagateDeps": true, "failover": {"application": {"decisionConditions": {}}, "cluster": {}}}),
            json!({"propagateDeps": true, "failover": {
                "application": {"decisionConditions": {"tolerationSeconds": 300}, "purgeMode": "Gracefully", "gracePeriodSeconds": 600},
                "cluster": {"purgeMode": "Gracefully"}
            }}),
        ),
        (
            "a Directly purge mode gets no grace period",
            json!({"propagateDeps": true, "failover": {"application": {"decisionConditions": {"tolerationSeconds": 10}, "purgeMode": "Directly"}}}),
            json!({"propagateDeps": true, "failover": {"application": {"decisionConditions": {"tolerationSeconds": 10}, "purgeMode": "Directly"}}}),
        ),
        (
            "explicit values are not replaced by defaults",
            json!({"priority": 5, "preemption": "Always", "conflictResolution": "Overwrite", "schedulerName": "custom"}),
            json!({"priority": 5, "preemption": "Always", "conflictResolution": "Overwrite", "schedulerName": "custom"}),
        ),
        (
            "nulls are dropped, and then defaulted",
            json!({"priority": null, "suspension": null, "placement": {"clusterAffinity": null}}),
            json!({"priority": 0}),
        ),
        (
            "false and empty optional values are dropped like Go's omitempty",
            json!({"propagateDeps": false, "association": false, "dependentOverrides": [], "activationPreference": null}),
            json!({}),
        ),
    ];
    for (name, input, expected_fragment) in cases {
        let mut obj = json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "ns1"},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}]}
        });
        merge(&mut obj["spec"], &input);
        let out = admitted("PropagationPolicy", Operation::Create, obj, None);
        let mut expected_spec = json!({
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "namespace": "ns1"}],
            "placement": {},
            "priority": 0, "preemption": "Never", "schedulerName": "default-scheduler", "conflictResolution": "Abort"
        });
        merge(&mut expected_spec, &expected_fragment);
        assert_eq!(out["spec"], expected_spec, "{name}");
    }
}

/// Recursively merges `patch` into `target` (objects merge, everything else replaces).
fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(t), Value::Object(p)) => {
            for (k, v) in p {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        (t, p) => *t = p.clone(),
    }
}

#[test]
fn service_import_selector_turns_on_propagate_deps() {
    let obj = yaml(
        r#"
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: imports}
spec:
  resourceSelectors:
  - {apiVersion: multicluster.x-k8s.io/v1alpha1, kind: ServiceImport, name: web, namespace: shop}
"#,
    );
    let out = admitted("ClusterPropagationPolicy", Operation::Create, obj, None);
    assert_eq!(out["spec"]["propagateDeps"], true);
    // A ServiceImport of another API version does not count.
    let other = yaml(
        r#"
apiVersion: policy.karmada.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: imports}
spec:
  resourceSelectors:
  - {apiVersion: example.com/v1, kind: ServiceImport}
"#,
    );
    let out = admitted("ClusterPropagationPolicy", Operation::Create, other, None);
    assert_eq!(out["spec"].get("propagateDeps"), None);
}

#[test]
fn cluster_propagation_policy_keeps_selector_namespaces_and_gets_its_own_label() {
    let mut out = admitted(
        "ClusterPropagationPolicy",
        Operation::Create,
        fixture("clusterpropagationpolicy.yaml"),
        None,
    );
    take_permanent_id(&mut out, "clusterpropagationpolicy.karmada.io/permanent-id");
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["karmada.io/cluster-propagation-policy-controller"])
    );
    assert_eq!(
        out["spec"]["resourceSelectors"][0],
        json!({"apiVersion": "v1", "kind": "Namespace", "name": "shop"})
    );
}

#[test]
fn permanent_id_is_set_on_create_and_kept_through_updates() {
    let mut input = fixture("propagationpolicy-duplicated.yaml");
    // A client-supplied id is replaced on create, as Karmada's MergeLabel does.
    input["metadata"]["labels"] =
        json!({"propagationpolicy.karmada.io/permanent-id": "mine", "team": "a"});
    let created = admitted("PropagationPolicy", Operation::Create, input, None);
    let id = created["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"].clone();
    assert_ne!(id, "mine");
    assert_eq!(created["metadata"]["labels"]["team"], "a");

    let mut changed = created.clone();
    changed["spec"]["priority"] = json!(3);
    let updated = admitted(
        "PropagationPolicy",
        Operation::Update,
        changed,
        Some(&created),
    );
    assert_eq!(
        updated["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"],
        id
    );
    assert_eq!(updated["spec"]["priority"], 3);
    // The finalizer is not added twice.
    assert_eq!(
        updated["metadata"]["finalizers"],
        json!(["karmada.io/propagation-policy-controller"])
    );
}

#[test]
fn override_policy_defaults_selector_namespace_but_cluster_override_policy_does_not() {
    let out = admitted(
        "OverridePolicy",
        Operation::Create,
        fixture("overridepolicy.yaml"),
        None,
    );
    assert_eq!(out["spec"]["resourceSelectors"][0]["namespace"], "default");
    assert_eq!(out["spec"]["overriders"], json!({}));
    assert_eq!(
        out["metadata"].get("labels"),
        None,
        "no permanent id on override policies"
    );

    let out = admitted(
        "ClusterOverridePolicy",
        Operation::Create,
        fixture("karmada-clusteroverridepolicy.yaml"),
        None,
    );
    assert_eq!(
        out["spec"]["resourceSelectors"][0],
        json!({"apiVersion": "apps/v1", "kind": "Deployment"})
    );
    assert_eq!(out, fixture("karmada-clusteroverridepolicy.yaml"));
}

#[test]
fn bindings_get_a_permanent_id_on_create_only() {
    for (kind, key) in [
        ("ResourceBinding", "resourcebinding.karmada.io/permanent-id"),
        (
            "ClusterResourceBinding",
            "clusterresourcebinding.karmada.io/permanent-id",
        ),
    ] {
        let mut obj = json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": kind,
            "metadata": {"name": "nginx-deployment"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "nginx"},
                     "schedulePriority": {}}
        });
        if kind == "ResourceBinding" {
            obj["metadata"]["namespace"] = json!("default");
        }
        let mut created = admitted(kind, Operation::Create, obj.clone(), None);
        take_permanent_id(&mut created, key);
        assert_eq!(created["spec"]["conflictResolution"], "Abort", "{kind}");
        assert_eq!(
            created["spec"]["schedulePriority"],
            json!({"priority": 0}),
            "{kind}"
        );

        // An id already present is kept.
        let mut with_id = obj.clone();
        with_id["metadata"]["labels"] = json!({key: "given"});
        let kept = admitted(kind, Operation::Create, with_id, None);
        assert_eq!(kept["metadata"]["labels"][key], "given");

        // Updates do not add one.
        let updated = admitted(kind, Operation::Update, obj.clone(), Some(&obj));
        assert_eq!(updated["metadata"].get("labels"), None, "{kind}");
    }
}

fn work_with(manifest: Value) -> Value {
    json!({
        "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
        "metadata": {"name": "w", "namespace": "karmada-es-member1"},
        "spec": {"workload": {"manifests": [manifest]}}
    })
}

#[test]
fn work_webhook_prunes_and_labels_manifests() {
    let deployment = common::fixture_docs("nginx-deployment.yaml").remove(0);
    let mut template = deployment.clone();
    template["metadata"]["uid"] = json!("1d2c3b4a");
    template["metadata"]["resourceVersion"] = json!("311");
    template["metadata"]["generation"] = json!(4);
    template["metadata"]["creationTimestamp"] = json!("2026-07-01T10:00:00Z");
    template["metadata"]["managedFields"] = json!([{"manager": "kubectl"}]);
    template["metadata"]["finalizers"] = json!(["x"]);
    template["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "v1", "kind": "A", "name": "a", "uid": "u"}]);
    template["metadata"]["annotations"] =
        json!({"deployment.kubernetes.io/revision": "3", "note": "kept"});
    template["status"] = json!({"replicas": 4});

    let mut out = admitted("Work", Operation::Create, work_with(template), None);
    let id = take_permanent_id(&mut out, "work.karmada.io/permanent-id");
    let manifest = &out["spec"]["workload"]["manifests"][0];

    let mut expected = deployment;
    expected["metadata"]["labels"] = json!({"app": "nginx", "work.karmada.io/permanent-id": id});
    expected["metadata"]["annotations"] = json!({
        "note": "kept",
        "resourcetemplate.karmada.io/managed-annotations": "note,resourcetemplate.karmada.io/managed-annotations,resourcetemplate.karmada.io/managed-labels",
        "resourcetemplate.karmada.io/managed-labels": "app,work.karmada.io/permanent-id",
    });
    assert_eq!(manifest, &expected);
}

#[test]
fn work_webhook_kind_specific_pruning() {
    let cases: Vec<(&str, Value, Value)> = vec![
        (
            "Job: generated selector labels and TTL removed",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                   "spec": {"ttlSecondsAfterFinished": 100,
                            "selector": {"matchLabels": {"controller-uid": "u", "batch.kubernetes.io/controller-uid": "u"}},
                            "template": {"metadata": {"labels": {"job-name": "j", "batch.kubernetes.io/job-name": "j", "controller-uid": "u", "app": "a"}}}}}),
            json!({"selector": {"matchLabels": {}}, "template": {"metadata": {"labels": {"app": "a"}}}}),
        ),
        (
            "Job with a manual selector keeps it",
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
                   "spec": {"manualSelector": true, "selector": {"matchLabels": {"controller-uid": "u"}}}}),
            json!({"manualSelector": true, "selector": {"matchLabels": {"controller-uid": "u"}}}),
        ),
        (
            "Service: cluster IPs removed",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                   "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": [{"port": 80}]}}),
            json!({"ports": [{"port": 80}]}),
        ),
        (
            "headless Service keeps clusterIP None",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                   "spec": {"clusterIP": "None", "clusterIPs": ["None"]}}),
            json!({"clusterIP": "None", "clusterIPs": ["None"]}),
        ),
    ];
    for (name, manifest, expected_spec) in cases {
        let out = admitted("Work", Operation::Create, work_with(manifest), None);
        assert_eq!(
            out["spec"]["workload"]["manifests"][0]["spec"], expected_spec,
            "{name}"
        );
    }

    let token = json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "t", "annotations": {"kubernetes.io/service-account.uid": "u"}}, "data": {"token": "eA=="}});
    let out = admitted("Work", Operation::Create, work_with(token), None);
    let secret = &out["spec"]["workload"]["manifests"][0];
    assert_eq!(secret["data"], Value::Null);
    assert_eq!(
        secret["metadata"]["annotations"].get("kubernetes.io/service-account.uid"),
        None
    );

    let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "app"},
        "secrets": [{"name": "app-token-abcde"}, {"name": "pull-secret"}]});
    let out = admitted("Work", Operation::Create, work_with(sa), None);
    assert_eq!(
        out["spec"]["workload"]["manifests"][0]["secrets"],
        json!([{"name": "pull-secret"}])
    );

    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "annotations": {"volume.kubernetes.io/selected-node": "node1"}}});
    let out = admitted("Work", Operation::Create, work_with(pvc), None);
    assert_eq!(
        out["spec"]["workload"]["manifests"][0]["metadata"]["annotations"]
            .get("volume.kubernetes.io/selected-node"),
        None
    );
}

#[test]
fn work_webhook_keeps_an_existing_permanent_id_and_runs_on_update() {
    let mut work = fixture("karmada-work.yaml");
    let out = admitted("Work", Operation::Update, work.clone(), Some(&work));
    assert_eq!(
        out["metadata"]["labels"]["work.karmada.io/permanent-id"],
        "9a8b7c6d-5e4f-4a3b-2c1d-0e9f8a7b6c5d"
    );
    // The fixture's manifest is already in webhook form, so nothing changes.
    assert_eq!(out, work);

    // Status updates skip the webhook: a new Work without an id does not get one.
    work["metadata"]["labels"] = json!({});
    let out = admitted("Work", Operation::UpdateStatus, work.clone(), Some(&work));
    assert_eq!(out["metadata"].get("labels"), Some(&json!({})));
}

#[test]
fn status_writes_normalise_the_status_and_changed_metadata_only() {
    let stored = fixture("karmada-work.yaml");
    let mut req = stored.clone();
    req["status"]["bogus"] = json!(1);
    req["status"]["conditions"][0]["observedGeneration"] = Value::Null;
    // The request's resourceVersion (a precondition) does not make the metadata differ.
    req["metadata"]["resourceVersion"] = json!("999");
    let out = admitted("Work", Operation::UpdateStatus, req, Some(&stored));
    assert_eq!(out["status"].get("bogus"), None);
    assert_eq!(
        out["status"]["conditions"][0].get("observedGeneration"),
        None
    );
    assert_eq!(out["metadata"]["resourceVersion"], "999");
    assert_eq!(out["spec"], stored["spec"]);

    // Metadata that differs from the stored one (here the request's managedFields) goes
    // through its typed form: what ObjectMeta does not declare is dropped.
    let mut req = stored.clone();
    req["metadata"]["managedFields"] = json!([{
        "manager": "m", "operation": "Update", "apiVersion": "work.karmada.io/v1alpha1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:status": {}}, "bogus": true
    }]);
    req["metadata"]["bogus"] = json!("x");
    let out = admitted("Work", Operation::UpdateStatus, req, Some(&stored));
    assert_eq!(out["metadata"].get("bogus"), None);
    assert_eq!(out["metadata"]["managedFields"][0].get("bogus"), None);
    assert_eq!(out["metadata"]["managedFields"][0]["manager"], "m");
}

#[test]
fn unknown_fields_are_pruned_and_reported() {
    let obj = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "p", "namespace": "ns1"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "extra": 1}],
            "placement": {"clusterAffinity": {"clusterNames": ["a"], "bogus": true}},
            "unknownTop": "x"
        },
        "status": {"whatever": 1}
    });
    assert_eq!(
        api::schema::unknown_fields("PropagationPolicy", &obj),
        vec![
            "spec.placement.clusterAffinity.bogus".to_owned(),
            "spec.resourceSelectors[0].extra".to_owned(),
            "spec.unknownTop".to_owned(),
            "status".to_owned(),
        ]
    );
    let out = admitted("PropagationPolicy", Operation::Create, obj, None);
    assert_eq!(out.get("status"), None);
    assert_eq!(out["spec"].get("unknownTop"), None);
    assert_eq!(
        out["spec"]["placement"]["clusterAffinity"],
        json!({"clusterNames": ["a"]})
    );
    assert_eq!(
        out["spec"]["resourceSelectors"][0],
        json!({"apiVersion": "v1", "kind": "ConfigMap", "namespace": "ns1"})
    );
    // Free-form parts are not pruned.
    let work = fixture("karmada-work.yaml");
    assert!(api::schema::unknown_fields("Work", &work).is_empty());
    assert!(api::schema::unknown_fields("NotAKind", &work).is_empty());
}

#[test]
fn unknown_kinds_are_left_alone() {
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": null}});
    let before = obj.clone();
    admit("ConfigMap", Operation::Create, &mut obj, None).unwrap();
    assert_eq!(obj, before);
}

#[test]
fn cluster_create_gets_default_resource_models_and_canonical_taints_and_zones() {
    let obj = yaml(
        r#"
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member1}
spec:
  syncMode: Pull
  zone: zone-a
  taints:
  - {key: example.com/drain, effect: NoExecute}
  - {key: example.com/soft, effect: NoSchedule}
"#,
    );
    let out = admitted("Cluster", Operation::Create, obj, None);
    assert_eq!(out["spec"]["zones"], json!(["zone-a"]));
    assert_eq!(out["spec"].get("zone"), None);
    let added = out["spec"]["taints"][0]["timeAdded"]
        .as_str()
        .expect("timeAdded set on NoExecute");
    assert!(
        added.parse::<k8s_openapi::jiff::Timestamp>().is_ok(),
        "{added}"
    );
    assert_eq!(out["spec"]["taints"][1].get("timeAdded"), None);
    assert_eq!(out["status"], json!({}));

    let models = out["spec"]["resourceModels"]
        .as_array()
        .expect("default models");
    assert_eq!(models.len(), 9);
    assert_eq!(
        models[0],
        json!({"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}, {"name": "memory", "min": "0", "max": "4Gi"}]})
    );
    assert_eq!(
        models[7],
        json!({"grade": 7, "ranges": [{"name": "cpu", "min": "64", "max": "128"}, {"name": "memory", "min": "512Gi", "max": "1Ti"}]})
    );
    assert_eq!(
        models[8],
        json!({"grade": 8, "ranges": [
            {"name": "cpu", "min": "128", "max": "9223372036854775807"},
            {"name": "memory", "min": "1Ti", "max": "9223372036854775807"}]})
    );
    // The defaults satisfy Karmada's own model validation.
    let typed: Vec<api::cluster::v1alpha1::ResourceModel> =
        serde_json::from_value(Value::Array(models.clone())).unwrap();
    assert_eq!(
        api::validation::cluster::validate_resource_models(
            &api::FieldPath::new("spec").child("resourceModels"),
            &typed
        ),
        None
    );
}

#[test]
fn cluster_resource_models_are_standardized() {
    let obj = yaml(
        r#"
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member1}
spec:
  syncMode: Push
  resourceModels:
  - grade: 1
    ranges: [{name: cpu, min: "2", max: "5"}]
  - grade: 0
    ranges: [{name: cpu, min: "1", max: "2"}]
"#,
    );
    for op in [Operation::Create, Operation::Update] {
        let out = admitted("Cluster", op, obj.clone(), Some(&obj));
        assert_eq!(
            out["spec"]["resourceModels"],
            json!([
                {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "2"}]},
                {"grade": 1, "ranges": [{"name": "cpu", "min": "2", "max": "9223372036854775807"}]}
            ]),
            "{op:?}"
        );
    }
    // Updates do not add default models.
    let bare = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "m"}, "spec": {"syncMode": "Push"}});
    let out = admitted("Cluster", Operation::Update, bare.clone(), Some(&bare));
    assert_eq!(out["spec"].get("resourceModels"), None);
}

#[test]
fn cluster_fixture_round_trips_through_admission() {
    let cluster = fixture("karmada-cluster.yaml");
    let out = admitted(
        "Cluster",
        Operation::Update,
        cluster.clone(),
        Some(&cluster),
    );
    assert_eq!(out, cluster);
    let out = admitted(
        "Cluster",
        Operation::UpdateStatus,
        cluster.clone(),
        Some(&cluster),
    );
    assert_eq!(out, cluster);
}

#[test]
fn admitted_karmada_fixtures_are_unchanged() {
    // Objects as Karmada stores them are a fixed point of admission.
    for (name, kind) in [
        ("karmada-propagationpolicy-full.yaml", "PropagationPolicy"),
        ("karmada-resourcebinding.yaml", "ResourceBinding"),
        (
            "karmada-clusterresourcebinding.yaml",
            "ClusterResourceBinding",
        ),
        ("karmada-work.yaml", "Work"),
    ] {
        let obj = fixture(name);
        let out = admitted(kind, Operation::Update, obj.clone(), Some(&obj));
        assert_eq!(out, obj, "{name}");
    }
}

/// Without a Karmada mutating webhook (ClusterOverridePolicy; bindings after creation; every
/// status update) the stored object is the request as the CRD schema normalised it: unknown
/// fields and nulls dropped, defaults filled, nothing else rewritten.
#[test]
fn writes_without_a_mutating_webhook_keep_the_request_shape() {
    let cop = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy",
        "metadata": {"name": "c", "bogus": 1},
        "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": ""}],
                 "overrideRules": [{"overriders": {"plaintext": [{"path": "/a", "operator": "remove", "value": null}]}}],
                 "extra": true}
    });
    let out = admitted("ClusterOverridePolicy", Operation::Create, cop, None);
    assert_eq!(
        out,
        json!({
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterOverridePolicy",
            "metadata": {"name": "c"},
            "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": ""}],
                     "overrideRules": [{"overriders": {"plaintext": [{"path": "/a", "operator": "remove"}]}}]}
        })
    );

    let rb = json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "r", "namespace": "default", "labels": {"resourcebinding.karmada.io/permanent-id": "x"}},
        "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}, "replicas": 0, "propagateDeps": false}
    });
    let updated = admitted("ResourceBinding", Operation::Update, rb.clone(), Some(&rb));
    assert_eq!(updated["spec"]["replicas"], 0);
    assert_eq!(updated["spec"]["propagateDeps"], false);
    assert_eq!(updated["spec"]["conflictResolution"], "Abort");
    // On create the webhook's Go encoding drops the zero values.
    let created = admitted("ResourceBinding", Operation::Create, rb.clone(), None);
    assert_eq!(created["spec"].get("replicas"), None);
    assert_eq!(created["spec"].get("propagateDeps"), None);
}
