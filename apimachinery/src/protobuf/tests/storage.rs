//! Objects as kube-apiserver stores them (its storage serializer is the same protobuf codec:
//! `k8s\0`, a `runtime.Unknown` naming the storage version's kind, the message). For every kind
//! with a message, a value built independently with k8s-pb's prost messages (every field set)
//! and enveloped as kube's serializer writes it decodes to JSON; that JSON is written as the
//! same message (kube's field numbers, in their order, as prost and gogo-protobuf both write
//! them) and reads back as the same JSON; and writing it again gives the same bytes. That Go
//! writes zero values of value fields (and so the very bytes kube stores) is shown by the
//! kubectl fixtures (`encoding.rs`).

use crate::protobuf::testing::envelope_raw;
use crate::protobuf::{Codec, KINDS, decode};

#[test]
fn every_kind_round_trips_through_kubes_storage_form() {
    let mut failures = Vec::new();
    for kind in KINDS.iter().filter(|k| k.kind != "DeleteOptions") {
        let name = format!("{} {}", kind.api_version, kind.kind);
        let stored = envelope_raw(kind.api_version, kind.kind, (kind.sample)());
        let json = match decode(&stored) {
            Ok(json) => json,
            Err(e) => {
                failures.push(format!("{name}: decode: {e}"));
                continue;
            }
        };
        assert_eq!(json["apiVersion"], kind.api_version, "{name}");
        assert_eq!(json["kind"], kind.kind, "{name}");
        let codec = Codec::for_kind(kind.api_version, kind.kind)
            .expect("a kind of the table")
            .strict();
        let written = match codec.object(&json) {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{name}: encode: {e}"));
                continue;
            }
        };
        // The envelope is kube's, around the message as prost writes it from its fields.
        let message = match codec.message(&json) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("{name}: message: {e}"));
                continue;
            }
        };
        if written != envelope_raw(kind.api_version, kind.kind, message.clone()) {
            failures.push(format!("{name}: the envelope differs from kube's"));
        }
        if (kind.encode)(
            &(kind.convert)(&message, Default::default()).unwrap_or_default(),
            Default::default(),
        )
        .ok()
        .as_ref()
            != Some(&message)
        {
            failures.push(format!("{name}: writing the message again changes it"));
        }
        match decode(&written) {
            Ok(back) if back == json => {}
            Ok(back) => failures.push(format!("{name}: reads back as {back}, not {json}")),
            Err(e) => failures.push(format!("{name}: decode what was written: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A StatefulSet's claim templates lose their TypeMeta in protobuf; reading it back stamps
/// them again as kube's apps/v1 conversion does, so an update that sends them back unchanged
/// is no change to the immutable part of the spec.
#[test]
fn a_stateful_sets_claim_templates_read_back_with_their_type() {
    let sts = serde_json::json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "etcd", "namespace": "ns"},
        "spec": {
            "serviceName": "etcd",
            "selector": {"matchLabels": {"app": "etcd"}},
            "template": {"metadata": {"labels": {"app": "etcd"}}, "spec": {"containers": [{"name": "etcd", "image": "etcd"}]}},
            "volumeClaimTemplates": [{
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
            }],
        },
    });
    let stored = Codec::for_kind("apps/v1", "StatefulSet")
        .expect("StatefulSet")
        .object(&sts)
        .expect("encode");
    let back = decode(&stored).expect("decode");
    assert_eq!(
        back["spec"]["volumeClaimTemplates"][0]["apiVersion"], "v1",
        "{back}"
    );
    assert_eq!(
        back["spec"]["volumeClaimTemplates"][0]["kind"], "PersistentVolumeClaim",
        "{back}"
    );
}
