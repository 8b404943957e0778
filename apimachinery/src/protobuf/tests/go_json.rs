//! Go `encoding/json` behaviours that a fully populated object does not exercise: zero values
//! of value fields, set-to-zero pointers, nil slices, absent structs, inlined structs.

use k8s_pb::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_pb::api::authentication::v1::{TokenRequest, TokenRequestSpec};
use k8s_pb::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, Container, ExecAction, LocalObjectReference, Pod, PodSpec,
    Probe, ProbeHandler, Secret, Volume, VolumeSource,
};
use k8s_pb::api::events::v1::Event;
use k8s_pb::api::rbac::v1::Role;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionSpec, CustomResourceDefinitionVersion,
    CustomResourceValidation, JsonSchemaProps,
};
use k8s_pb::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use serde_json::{Value, json};

use crate::protobuf::decode;
use crate::protobuf::testing::envelope;

fn meta(name: &str) -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: Some(name.into()),
        ..Default::default()
    })
}

fn check(api_version: &str, kind: &str, message: &impl prost::Message, want: Value) {
    let got = decode(&envelope(api_version, kind, message)).unwrap();
    let mut want = want;
    want["apiVersion"] = api_version.into();
    want["kind"] = kind.into();
    assert_eq!(got, want, "{kind}");
}

#[test]
fn zero_values_follow_pointer_and_omitempty() {
    // Value fields Go clients always send, zero: dropped under omitempty, kept otherwise.
    let deployment = Deployment {
        metadata: Some(ObjectMeta {
            name: Some("d".into()),
            namespace: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(Time::default()),
            ..Default::default()
        }),
        spec: Some(DeploymentSpec {
            // *int32 set to 0: printed.
            replicas: Some(0),
            min_ready_seconds: Some(0),
            paused: Some(false),
            ..Default::default()
        }),
        status: None,
    };
    check(
        "apps/v1",
        "Deployment",
        &deployment,
        json!({
            "metadata": {"name": "d", "creationTimestamp": null},
            "spec": {
                "replicas": 0,
                // Value structs are printed even when the message lacks them.
                "selector": null,
                "template": {
                    "metadata": {"creationTimestamp": null},
                    "spec": {"containers": null}
                },
                "strategy": {}
            },
            "status": {}
        }),
    );
}

#[test]
fn nil_slices_and_maps() {
    // Role.rules has no omitempty: a nil slice is null. ConfigMap.data has omitempty.
    check(
        "rbac.authorization.k8s.io/v1",
        "Role",
        &Role {
            metadata: meta("r"),
            rules: Vec::new(),
        },
        json!({"metadata": {"name": "r", "creationTimestamp": null}, "rules": null}),
    );
    check(
        "v1",
        "ConfigMap",
        &ConfigMap {
            metadata: meta("c"),
            ..Default::default()
        },
        json!({"metadata": {"name": "c", "creationTimestamp": null}}),
    );
}

#[test]
fn required_scalars_print_their_zero_value() {
    // Container.name has no omitempty; a message without it still prints "".
    let pod = Pod {
        metadata: meta("p"),
        spec: Some(PodSpec {
            containers: vec![Container {
                image: Some("nginx".into()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    check(
        "v1",
        "Pod",
        &pod,
        json!({
            "metadata": {"name": "p", "creationTimestamp": null},
            "spec": {"containers": [{"name": "", "image": "nginx", "resources": {}}]},
            "status": {}
        }),
    );
}

#[test]
fn inlined_structs_merge_into_their_parent() {
    let pod = Pod {
        metadata: meta("p"),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: Some("c".into()),
                liveness_probe: Some(Probe {
                    handler: Some(ProbeHandler {
                        exec: Some(ExecAction {
                            command: vec!["true".into()],
                        }),
                        ..Default::default()
                    }),
                    period_seconds: Some(5),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            volumes: vec![Volume {
                name: Some("v".into()),
                volume_source: Some(VolumeSource {
                    config_map: Some(ConfigMapVolumeSource {
                        local_object_reference: Some(LocalObjectReference {
                            name: Some("cm".into()),
                        }),
                        default_mode: Some(0o644),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
            }],
            ..Default::default()
        }),
        status: None,
    };
    check(
        "v1",
        "Pod",
        &pod,
        json!({
            "metadata": {"name": "p", "creationTimestamp": null},
            "spec": {
                "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420}}],
                "containers": [{
                    "name": "c",
                    "resources": {},
                    "livenessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5}
                }]
            },
            "status": {}
        }),
    );
}

#[test]
fn bytes_times_and_floats() {
    let secret = Secret {
        metadata: Some(ObjectMeta {
            name: Some("s".into()),
            deletion_timestamp: Some(Time {
                seconds: Some(1_704_164_645),
                nanos: None,
            }),
            ..Default::default()
        }),
        data: [("bin".to_owned(), vec![0, 159, 255])].into(),
        string_data: [("plain".to_owned(), "text".to_owned())].into(),
        ..Default::default()
    };
    check(
        "v1",
        "Secret",
        &secret,
        json!({
            "metadata": {
                "name": "s",
                "creationTimestamp": null,
                "deletionTimestamp": "2024-01-02T03:04:05Z"
            },
            "data": {"bin": "AJ//"},
            "stringData": {"plain": "text"}
        }),
    );

    let event = Event {
        metadata: meta("e"),
        event_time: Some(MicroTime {
            seconds: Some(1_704_164_645),
            nanos: Some(7_000),
        }),
        ..Default::default()
    };
    check(
        "events.k8s.io/v1",
        "Event",
        &event,
        json!({
            "metadata": {"name": "e", "creationTimestamp": null},
            "eventTime": "2024-01-02T03:04:05.000007Z",
            "regarding": {},
            "deprecatedSource": {},
            "deprecatedFirstTimestamp": null,
            "deprecatedLastTimestamp": null
        }),
    );

    let schema = JsonSchemaProps {
        r#type: Some("number".into()),
        maximum: Some(5.0),
        minimum: Some(-0.5),
        ..Default::default()
    };
    let crd = CustomResourceDefinition {
        metadata: meta("things.example.com"),
        spec: Some(CustomResourceDefinitionSpec {
            versions: vec![CustomResourceDefinitionVersion {
                name: Some("v1".into()),
                served: Some(true),
                storage: Some(true),
                schema: Some(CustomResourceValidation {
                    open_apiv3_schema: Some(schema),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    let json = decode(&envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
    ))
    .unwrap();
    // Go prints an integral float64 without a fraction.
    assert_eq!(
        json["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        json!({"type": "number", "maximum": 5, "minimum": -0.5})
    );
}

#[test]
fn pointers_without_omitempty_print_null() {
    let request = TokenRequest {
        metadata: None,
        spec: Some(TokenRequestSpec {
            audiences: vec!["api".into()],
            expiration_seconds: Some(0),
            bound_object_ref: None,
        }),
        status: None,
    };
    check(
        "authentication.k8s.io/v1",
        "TokenRequest",
        &request,
        json!({
            "metadata": {"creationTimestamp": null},
            "spec": {"audiences": ["api"], "expirationSeconds": 0, "boundObjectRef": null},
            "status": {"token": "", "expirationTimestamp": null}
        }),
    );
}
