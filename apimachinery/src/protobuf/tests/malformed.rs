//! Bad input gives the right error and never a panic.

use k8s_pb::api::apps::v1::ControllerRevision;
use k8s_pb::api::core::v1::{ConfigMap, Pod};
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionSpec, CustomResourceDefinitionVersion,
    CustomResourceValidation, JsonSchemaProps, JsonSchemaPropsOrArray,
};
use k8s_pb::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde_json::json;

use crate::protobuf::testing::{Gen, Populate, envelope};
use crate::protobuf::{MAGIC, ProtobufError, decode};

const DEPLOYMENT: &[u8] = include_bytes!("kubectl/create_deployment.pb");
const TOKEN: &[u8] = include_bytes!("kubectl/create_token.pb");

fn malformed(body: &[u8]) -> bool {
    matches!(decode(body), Err(ProtobufError::Malformed(_)))
}

fn with_unknown(unknown: &Unknown) -> Vec<u8> {
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    body
}

fn type_meta(api_version: &str, kind: &str) -> Option<TypeMeta> {
    Some(TypeMeta {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
    })
}

#[test]
fn envelope_errors() {
    assert!(malformed(b""));
    assert!(malformed(b"k8s"));
    assert!(malformed(b"k8s\0"));
    assert!(malformed(b"{\"kind\":\"ConfigMap\"}"));
    assert!(malformed(b"k8s\x01\x0a\x00"));
    // A field with a length running past the end.
    assert!(malformed(b"k8s\0\x12\x7f"));
    // No typeMeta at all, or an empty kind.
    assert!(malformed(&with_unknown(&Unknown::default())));
    assert!(malformed(&with_unknown(&Unknown {
        type_meta: type_meta("v1", ""),
        ..Default::default()
    })));
}

#[test]
fn unknown_kinds_are_unsupported() {
    for (api_version, kind) in [
        ("v1", "Frobnicator"),
        ("cluster.karmada.io/v1alpha1", "Cluster"),
        ("apps/v1beta1", "Deployment"),
        ("v2", "ConfigMap"),
    ] {
        let body = envelope(api_version, kind, &ConfigMap::default());
        match decode(&body) {
            Err(ProtobufError::UnsupportedKind {
                api_version: a,
                kind: k,
            }) => assert_eq!((a.as_str(), k.as_str()), (api_version, kind)),
            other => panic!("{api_version} {kind}: {other:?}"),
        }
    }
}

#[test]
fn content_encoding_is_refused() {
    let body = with_unknown(&Unknown {
        type_meta: type_meta("v1", "ConfigMap"),
        raw: Some(ConfigMap::default().encode_to_vec()),
        content_encoding: Some("gzip".into()),
        content_type: None,
    });
    assert!(matches!(
        decode(&body),
        Err(ProtobufError::UnsupportedEncoding(e)) if e == "gzip"
    ));
}

#[test]
fn garbage_raw_is_malformed() {
    for raw in [
        &b"\xff\xff\xff"[..],
        b"\x0a\x05ab",
        b"\x0a\x02\x0a\x7f",
        b"\x08",
    ] {
        let body = with_unknown(&Unknown {
            type_meta: type_meta("v1", "ConfigMap"),
            raw: Some(raw.to_vec()),
            ..Default::default()
        });
        assert!(malformed(&body), "{raw:?}");
    }
}

#[test]
fn invalid_values_are_malformed() {
    use k8s_pb::api::core::v1::{Service, ServicePort, ServiceSpec};
    let service = |target_port: IntOrString| Service {
        spec: Some(ServiceSpec {
            ports: vec![ServicePort {
                target_port: Some(target_port),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let bad = service(IntOrString {
        r#type: Some(7),
        ..Default::default()
    });
    assert!(malformed(&envelope("v1", "Service", &bad)));
    let good = service(IntOrString {
        r#type: Some(1),
        str_val: Some("http".into()),
        ..Default::default()
    });
    let json = decode(&envelope("v1", "Service", &good)).unwrap();
    assert_eq!(json["spec"]["ports"][0]["targetPort"], "http");
}

/// A ControllerRevision whose data embeds `depth` more ControllerRevisions as protobuf.
fn nested_revision(depth: usize) -> Vec<u8> {
    let mut body = envelope("v1", "ConfigMap", &ConfigMap::default());
    for _ in 0..depth {
        let revision = ControllerRevision {
            data: Some(RawExtension { raw: Some(body) }),
            revision: Some(1),
            ..Default::default()
        };
        body = envelope("apps/v1", "ControllerRevision", &revision);
    }
    body
}

#[test]
fn embedded_protobuf_is_decoded_within_a_depth_limit() {
    let json = decode(&nested_revision(2)).unwrap();
    assert_eq!(
        json["data"],
        json!({
            "kind": "ControllerRevision",
            "apiVersion": "apps/v1",
            "metadata": {"creationTimestamp": null},
            "data": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"creationTimestamp": null}},
            "revision": 1
        })
    );
    assert!(decode(&nested_revision(16)).is_ok());
    assert!(malformed(&nested_revision(18)));
}

/// A CRD whose schema nests `depth` levels of `items`.
fn deep_schema(depth: usize) -> Vec<u8> {
    let mut schema = JsonSchemaProps {
        r#type: Some("string".into()),
        ..Default::default()
    };
    for _ in 0..depth {
        schema = JsonSchemaProps {
            r#type: Some("array".into()),
            items: Some(Box::new(JsonSchemaPropsOrArray {
                schema: Some(Box::new(schema)),
                j_son_schemas: Vec::new(),
            })),
            ..Default::default()
        };
    }
    let crd = CustomResourceDefinition {
        metadata: Some(ObjectMeta {
            name: Some("things.example.com".into()),
            ..Default::default()
        }),
        spec: Some(CustomResourceDefinitionSpec {
            versions: vec![CustomResourceDefinitionVersion {
                schema: Some(CustomResourceValidation {
                    open_apiv3_schema: Some(schema),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        status: None,
    };
    envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd)
}

#[test]
fn recursive_schemas_decode_and_too_deep_ones_are_refused() {
    let json = decode(&deep_schema(20)).unwrap();
    let mut schema = &json["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    for _ in 0..20 {
        assert_eq!(schema["type"], "array");
        schema = &schema["items"];
    }
    assert_eq!(schema, &json!({"type": "string"}));
    // prost's recursion limit stops absurd nesting before it reaches the converter.
    assert!(malformed(&deep_schema(100)));
}

/// xorshift64*: deterministic, dependency-free randomness for the fuzz loops.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn truncated_bodies_never_panic() {
    for body in [DEPLOYMENT, TOKEN] {
        let mut errors = 0;
        for len in 0..body.len() {
            match decode(&body[..len]) {
                Ok(_) => {}
                Err(ProtobufError::Malformed(_)) => errors += 1,
                Err(other) => panic!("cut at {len}: {other:?}"),
            }
        }
        // Most prefixes cut a length-delimited field short.
        assert!(errors > body.len() / 2, "{errors} of {}", body.len());
    }
}

#[test]
fn random_and_mutated_bodies_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let len = rng.below(64);
        let mut body = MAGIC.to_vec();
        body.extend((0..len).map(|_| rng.next() as u8));
        let _ = decode(&body);
    }
    let mut g = Gen::default();
    let pod = envelope("v1", "Pod", &Pod::populate(&mut g));
    let crd = envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &CustomResourceDefinition::populate(&mut g),
    );
    for (seed, rounds) in [
        (DEPLOYMENT, 20_000),
        (TOKEN, 20_000),
        (&pod, 1_000),
        (&crd, 1_000),
    ] {
        for _ in 0..rounds {
            let mut body = seed.to_vec();
            for _ in 0..=rng.below(4) {
                let i = MAGIC.len() + rng.below(body.len() - MAGIC.len());
                body[i] = rng.next() as u8;
            }
            let _ = decode(&body);
        }
    }
}
