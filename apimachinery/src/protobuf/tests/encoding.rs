//! Encoding (JSON to protobuf) against decoding: every kind round-trips, the bytes kubectl's
//! Go client wrote are reproduced from the JSON they decode to, and Go's rules for zero values
//! and unknown fields hold.

use prost::Message;
use serde_json::{Value, json};

use crate::protobuf::json::{Ctx, Enc};
use crate::protobuf::testing::envelope_raw;
use crate::protobuf::{Codec, KINDS, Kind, ProtobufError, RESPONSE_KINDS, decode};

fn strict() -> Enc {
    Enc { strict: true }
}

/// JSON of a message, its protobuf from that JSON, and the JSON of that protobuf.
fn round_trip(kind: &Kind, message: &[u8]) -> (Value, Vec<u8>, Value) {
    let json = (kind.convert)(message, Ctx::default())
        .unwrap_or_else(|e| panic!("{} {}: decode: {e}", kind.api_version, kind.kind));
    let encoded = (kind.encode)(&json, strict())
        .unwrap_or_else(|e| panic!("{} {}: encode {json}: {e}", kind.api_version, kind.kind));
    let back = (kind.convert)(&encoded, Ctx::default())
        .unwrap_or_else(|e| panic!("{} {}: decode again: {e}", kind.api_version, kind.kind));
    (json, encoded, back)
}

#[test]
fn every_kind_round_trips_with_every_field_set() {
    for kind in KINDS.iter().chain(RESPONSE_KINDS) {
        let (json, encoded, back) = round_trip(kind, &(kind.sample)());
        assert_eq!(json, back, "{} {}", kind.api_version, kind.kind);
        // Encoding is a function of the JSON: the second pass writes the same bytes.
        let again = (kind.encode)(&back, strict()).unwrap();
        assert_eq!(encoded, again, "{} {}", kind.api_version, kind.kind);
    }
}

#[test]
fn every_kind_round_trips_empty() {
    for kind in KINDS.iter().chain(RESPONSE_KINDS) {
        let (json, _, back) = round_trip(kind, &[]);
        assert_eq!(json, back, "{} {}", kind.api_version, kind.kind);
    }
}

#[test]
fn whole_bodies_round_trip_with_their_type() {
    // Request kinds only: response kinds are never decoded as bodies.
    for kind in KINDS {
        let codec = Codec::for_kind(kind.api_version, kind.kind).unwrap();
        let body = envelope_raw(kind.api_version, kind.kind, (kind.sample)());
        let json = decode(&body).unwrap();
        let encoded = codec.strict().object(&json).unwrap();
        assert_eq!(decode(&encoded).unwrap(), json, "{}", kind.kind);
    }
}

/// The bodies kubectl 1.32.4 sent (see `kubectl.rs`) come out of their JSON byte for byte:
/// value fields are written even when zero and pointers only when set, as gogo-protobuf does.
#[test]
fn kubectl_bodies_are_reproduced_from_their_json() {
    let mut failures = Vec::new();
    for (name, body, _) in super::kubectl::FIXTURES {
        let json = decode(body).unwrap();
        let api_version = json["apiVersion"].as_str().unwrap();
        let kind = json["kind"].as_str().unwrap();
        let codec = Codec::for_kind(api_version, kind).unwrap().strict();
        match codec.object(&json) {
            Ok(encoded) if encoded == *body => {}
            Ok(encoded) => failures.push(format!(
                "{name}: {} bytes, kubectl sent {}; decodes to {}",
                encoded.len(),
                body.len(),
                decode(&encoded).map(|v| v.to_string()).unwrap_or_default()
            )),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn go_zero_values_and_pointers() {
    use k8s_pb::api::core::v1::{Service, ServicePort};

    let codec = Codec::for_kind("v1", "Service").unwrap().strict();
    let json = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]}});
    let message = Service::decode(&codec.message(&json).unwrap()[..]).unwrap();
    let port: &ServicePort = &message.spec.as_ref().unwrap().ports[0];
    // Value fields absent from the JSON are written as zero values...
    assert_eq!(port.name.as_deref(), Some(""));
    assert_eq!(port.node_port, Some(0));
    assert_eq!(
        port.target_port.as_ref().map(|t| (t.r#type, t.int_val)),
        Some((Some(0), Some(0)))
    );
    // ...pointers are not, and value structs are written even when empty.
    assert_eq!(port.app_protocol, None);
    assert!(message.status.is_some());
    let meta = message.metadata.unwrap();
    assert_eq!(meta.creation_timestamp, Some(Default::default()));
    assert_eq!(meta.deletion_timestamp, None);
}

#[test]
fn json_shapes_that_go_reads() {
    let pod = Codec::for_kind("v1", "Pod").unwrap().strict();
    // Quantities as JSON numbers are written in canonical form, as Quantity.String() prints them.
    let json = json!({"metadata": {"name": "p", "creationTimestamp": "2024-01-02T03:04:05+01:00"},
        "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": 0.5, "memory": "1Gi"}}}]}});
    let back = decode(&pod.object(&json).unwrap()).unwrap();
    assert_eq!(
        back["spec"]["containers"][0]["resources"]["limits"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    // Times are written in UTC, whole seconds.
    assert_eq!(
        back["metadata"]["creationTimestamp"],
        "2024-01-02T02:04:05Z"
    );
    // Null is an absent value.
    let json = json!({"metadata": {"name": "p", "labels": null}, "spec": null});
    let back = decode(&pod.object(&json).unwrap()).unwrap();
    assert_eq!(back["metadata"]["name"], "p");
    assert!(back["metadata"].get("labels").is_none());
}

#[test]
fn unknown_and_mistyped_fields() {
    let cm = Codec::for_kind("v1", "ConfigMap").unwrap();
    let json = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "bogus": 1}, "data": {"a": "b"}});
    // Go's JSON decoder drops fields it has no place for; so does the server's encoder...
    let back = decode(&cm.object(&json).unwrap()).unwrap();
    assert_eq!(
        back,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "creationTimestamp": null}, "data": {"a": "b"}})
    );
    // ...and the strict one used in tests names them.
    match cm.strict().object(&json) {
        Err(ProtobufError::Unencodable { path, reason }) => {
            assert_eq!(path, "metadata");
            assert!(reason.contains("bogus"), "{reason}");
        }
        other => panic!("{other:?}"),
    }
    // A value of the wrong type is an error naming the field.
    let json = json!({"metadata": {"name": "c", "labels": {"a": 1}}});
    let err = cm.object(&json).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field metadata.labels.a cannot be encoded as protobuf: expected a string, found a number"
    );
    let deploy = Codec::for_kind("apps/v1", "Deployment").unwrap();
    let json = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1e10}]}]}}}});
    let err = deploy.object(&json).unwrap_err();
    assert_eq!(
        err.to_string(),
        "field spec.template.spec.containers[0].ports[0].containerPort cannot be encoded as protobuf: expected a 32-bit integer, found a number"
    );
}

#[test]
fn response_kinds() {
    use k8s_pb::apimachinery::pkg::apis::meta::v1::Status;

    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "configmaps \"x\" not found", "reason": "NotFound",
        "details": {"name": "x", "kind": "configmaps"}, "code": 404});
    let codec = Codec::for_kind("v1", "Status").unwrap().strict();
    let message = Status::decode(&codec.message(&status).unwrap()[..]).unwrap();
    assert_eq!(message.code, Some(404));
    assert_eq!(message.reason.as_deref(), Some("NotFound"));
    assert_eq!(message.details.unwrap().kind.as_deref(), Some("configmaps"));
    assert!(Codec::for_kind("meta.k8s.io/v1", "PartialObjectMetadataList").is_some());
    assert!(Codec::for_kind("apidiscovery.k8s.io/v2", "APIGroupDiscoveryList").is_some());
    assert!(Codec::for_kind("work.karmada.io/v1alpha1", "Work").is_none());
    assert!(Codec::for_kind("meta.k8s.io/v1", "Table").is_none());
}

/// Go cannot tell an absent value-typed struct from an empty one: both are its zero value,
/// whose own value fields are written. So a Deployment without a status (as a create stores
/// it) is written as one with `status: {}`, and reading it back and writing it again changes
/// nothing.
#[test]
fn an_absent_value_struct_is_written_as_its_zero_value() {
    let codec = Codec::for_kind("apps/v1", "Deployment").unwrap().strict();
    let without = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}}});
    let mut with = without.clone();
    with["status"] = json!({});
    let a = codec.object(&without).unwrap();
    assert_eq!(a, codec.object(&with).unwrap());
    assert_eq!(codec.object(&decode(&a).unwrap()).unwrap(), a);
    let status = k8s_pb::api::apps::v1::Deployment::decode(&codec.message(&without).unwrap()[..])
        .unwrap()
        .status
        .unwrap();
    assert_eq!(
        (status.replicas, status.observed_generation),
        (Some(0), Some(0))
    );
}
