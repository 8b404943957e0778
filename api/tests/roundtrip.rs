//! Every kind round-trips through its Rust type without losing anything a Karmada server
//! would return, and serializes with the right apiVersion and kind.

mod common;

use api::cluster::v1alpha1::Cluster;
use api::policy::v1alpha1::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
};
use api::work::v1alpha1::Work;
use api::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};
use common::fixture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

fn roundtrip<T: Serialize + DeserializeOwned>(original: &Value) -> Value {
    let typed: T = serde_json::from_value(original.clone()).expect("fixture decodes");
    serde_json::to_value(&typed).expect("encodes")
}

fn roundtrip_by_kind(original: &Value) -> Value {
    match original["kind"].as_str().expect("kind") {
        "PropagationPolicy" => roundtrip::<PropagationPolicy>(original),
        "ClusterPropagationPolicy" => roundtrip::<ClusterPropagationPolicy>(original),
        "OverridePolicy" => roundtrip::<OverridePolicy>(original),
        "ClusterOverridePolicy" => roundtrip::<ClusterOverridePolicy>(original),
        "Work" => roundtrip::<Work>(original),
        "ResourceBinding" => roundtrip::<ResourceBinding>(original),
        "ClusterResourceBinding" => roundtrip::<ClusterResourceBinding>(original),
        "Cluster" => roundtrip::<Cluster>(original),
        other => panic!("unexpected kind {other}"),
    }
}

#[test]
fn karmada_shaped_objects_round_trip_losslessly() {
    for name in [
        "karmada-propagationpolicy-full.yaml",
        "karmada-clusteroverridepolicy.yaml",
        "karmada-work.yaml",
        "karmada-resourcebinding.yaml",
        "karmada-clusterresourcebinding.yaml",
        "karmada-cluster.yaml",
        "clusterpropagationpolicy.yaml",
        "propagationpolicy-divided.yaml",
        "propagationpolicy-duplicated.yaml",
    ] {
        let original = fixture(name);
        assert_eq!(roundtrip_by_kind(&original), original, "{name}");
    }
}

/// Go always writes struct-typed fields that have no pointer; the sample omits
/// spec.overriders, so the typed form adds it, exactly as Karmada's webhook does.
#[test]
fn override_sample_gains_only_the_always_present_overriders() {
    let original = fixture("overridepolicy.yaml");
    let mut expected = original.clone();
    expected["spec"]["overriders"] = json!({});
    assert_eq!(roundtrip::<OverridePolicy>(&original), expected);
}

#[test]
fn typed_objects_serialize_type_meta() {
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            serde_json::to_value(PropagationPolicy::default()).unwrap(),
            "policy.karmada.io/v1alpha1",
            "PropagationPolicy",
        ),
        (
            serde_json::to_value(ClusterPropagationPolicy::default()).unwrap(),
            "policy.karmada.io/v1alpha1",
            "ClusterPropagationPolicy",
        ),
        (
            serde_json::to_value(OverridePolicy::default()).unwrap(),
            "policy.karmada.io/v1alpha1",
            "OverridePolicy",
        ),
        (
            serde_json::to_value(ClusterOverridePolicy::default()).unwrap(),
            "policy.karmada.io/v1alpha1",
            "ClusterOverridePolicy",
        ),
        (
            serde_json::to_value(Work::default()).unwrap(),
            "work.karmada.io/v1alpha1",
            "Work",
        ),
        (
            serde_json::to_value(ResourceBinding::default()).unwrap(),
            "work.karmada.io/v1alpha2",
            "ResourceBinding",
        ),
        (
            serde_json::to_value(ClusterResourceBinding::default()).unwrap(),
            "work.karmada.io/v1alpha2",
            "ClusterResourceBinding",
        ),
        (
            serde_json::to_value(Cluster::default()).unwrap(),
            "cluster.karmada.io/v1alpha1",
            "Cluster",
        ),
    ];
    for (value, api_version, kind) in cases {
        assert_eq!(value["apiVersion"], api_version, "{kind}");
        assert_eq!(value["kind"], kind);
    }
}

/// Empty objects serialize the way Go's encoder does: struct fields present, empty optional
/// fields absent, and an empty status only on Cluster (a typed API, not a CRD).
#[test]
fn empty_objects_serialize_like_go() {
    let cases = vec![
        (
            serde_json::to_value(PropagationPolicy::default()).unwrap(),
            json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy", "metadata": {},
                   "spec": {"resourceSelectors": [], "placement": {}}}),
        ),
        (
            serde_json::to_value(OverridePolicy::default()).unwrap(),
            json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "OverridePolicy", "metadata": {},
                   "spec": {"overriders": {}}}),
        ),
        (
            serde_json::to_value(Work::default()).unwrap(),
            json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work", "metadata": {},
                   "spec": {"workload": {}}}),
        ),
        (
            serde_json::to_value(ResourceBinding::default()).unwrap(),
            json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding", "metadata": {},
                   "spec": {"resource": {"apiVersion": "", "kind": "", "name": ""}}}),
        ),
        (
            serde_json::to_value(Cluster::default()).unwrap(),
            json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {},
                   "spec": {"syncMode": "Push"}, "status": {}}),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got, want);
    }
}

#[test]
fn omitted_zero_values_are_dropped_like_omitempty() {
    let original = json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": ""},
            "propagateDeps": false, "replicas": 0,
            "clusters": [{"name": "member1", "replicas": 0}],
        },
        "status": {"aggregatedStatus": [{"clusterName": "member1", "applied": false, "appliedMessage": ""}]}
    });
    let expected = json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "x"},
            "clusters": [{"name": "member1"}],
        },
        "status": {"aggregatedStatus": [{"clusterName": "member1"}]}
    });
    assert_eq!(roundtrip::<ResourceBinding>(&original), expected);
}

/// The types plug into kube: `kube::Resource` comes from the k8s-openapi traits.
#[test]
fn kinds_implement_kube_resource() {
    use kube::Resource;
    assert_eq!(PropagationPolicy::kind(&()), "PropagationPolicy");
    assert_eq!(PropagationPolicy::group(&()), "policy.karmada.io");
    assert_eq!(PropagationPolicy::version(&()), "v1alpha1");
    assert_eq!(PropagationPolicy::plural(&()), "propagationpolicies");
    assert_eq!(
        ClusterResourceBinding::api_version(&()),
        "work.karmada.io/v1alpha2"
    );
    assert_eq!(Work::plural(&()), "works");
    assert_eq!(Cluster::plural(&()), "clusters");
    assert_eq!(
        PropagationPolicy::url_path(&(), Some("default")),
        "/apis/policy.karmada.io/v1alpha1/namespaces/default/propagationpolicies"
    );
    assert_eq!(
        Cluster::url_path(&(), None),
        "/apis/cluster.karmada.io/v1alpha1/clusters"
    );

    let mut pp = PropagationPolicy::default();
    pp.meta_mut().name = Some("web".into());
    assert_eq!(pp.meta().name.as_deref(), Some("web"));

    // Compile-time check that kube::Api accepts the types.
    fn _api(client: kube::Client) {
        let _: kube::Api<PropagationPolicy> = kube::Api::namespaced(client.clone(), "default");
        let _: kube::Api<ClusterPropagationPolicy> = kube::Api::all(client.clone());
        let _: kube::Api<OverridePolicy> = kube::Api::namespaced(client.clone(), "default");
        let _: kube::Api<ClusterOverridePolicy> = kube::Api::all(client.clone());
        let _: kube::Api<Work> = kube::Api::namespaced(client.clone(), "karmada-es-member1");
        let _: kube::Api<ResourceBinding> = kube::Api::namespaced(client.clone(), "default");
        let _: kube::Api<ClusterResourceBinding> = kube::Api::all(client.clone());
        let _: kube::Api<Cluster> = kube::Api::all(client);
    }
}

#[test]
fn helper_accessors_apply_api_defaults() {
    let pp: PropagationPolicy =
        serde_json::from_value(fixture("propagationpolicy-duplicated.yaml")).unwrap();
    assert_eq!(pp.spec.explicit_priority(), 0);
    assert_eq!(
        pp.spec.conflict_resolution(),
        api::policy::v1alpha1::ConflictResolution::Abort
    );
    assert_eq!(
        pp.spec.preemption(),
        api::policy::v1alpha1::PreemptionBehavior::Never
    );
    assert_eq!(
        pp.spec.placement.replica_scheduling_type(),
        api::policy::v1alpha1::ReplicaSchedulingType::Duplicated
    );
    let no_strategy = api::policy::v1alpha1::Placement::default();
    assert_eq!(
        no_strategy.replica_scheduling_type(),
        api::policy::v1alpha1::ReplicaSchedulingType::Duplicated
    );
    let full: PropagationPolicy =
        serde_json::from_value(fixture("karmada-propagationpolicy-full.yaml")).unwrap();
    assert_eq!(full.spec.explicit_priority(), 10);
    assert!(full.spec.is_lazy());
    let cluster: Cluster = serde_json::from_value(fixture("karmada-cluster.yaml")).unwrap();
    assert_eq!(cluster.ready_status(), Some("True"));
    assert_eq!(Cluster::default().ready_status(), None);
}

#[test]
fn string_enums_parse_and_print_wire_values() {
    use api::policy::v1alpha1::{OverriderOperator, SpreadFieldValue};
    assert_eq!(
        "replace".parse::<OverriderOperator>(),
        Ok(OverriderOperator::Replace)
    );
    assert_eq!(SpreadFieldValue::Region.to_string(), "region");
    assert_eq!(SpreadFieldValue::ALL.len(), 4);
    let err = "Replace".parse::<OverriderOperator>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown OverriderOperator value \"Replace\""
    );
}
