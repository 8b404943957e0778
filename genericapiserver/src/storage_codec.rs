//! How objects are stored, resource by resource, as kube-apiserver stores them, so that the
//! same etcd can be served by either (k8s.io/apiserver pkg/server/storage: the storage
//! serializer and encoding version the storage factory gives each resource):
//!
//! - built-in kinds: protobuf (kube-apiserver's `--storage-media-type` default), `k8s\0` and a
//!   `runtime.Unknown` naming the storage version's kind around its message; or, with
//!   `--storage-media-type=application/json`, JSON of the kind in its storage version;
//! - custom resources and Karmada's CRD kinds: JSON as apiextensions-apiserver writes an
//!   unstructured object (Go's `json.Encoder`: sorted keys, HTML-safe escaping, a newline);
//! - CustomResourceDefinitions (in `v1beta1`), APIServices and Clusters: JSON of a typed Go
//!   struct (apiextensions-apiserver's, kube-aggregator's and karmada-aggregated-apiserver's
//!   `LegacyCodec`), whose member order is the struct's; they are compared by content.
//!
//! Reading goes by content, not by resource: a value starting with `k8s\0` is protobuf, any
//! other is JSON, so whatever either server wrote (and what earlier versions of this server
//! wrote: JSON for every kind, CRDs in `v1`) is always readable. A value in another encoding
//! than the one its resource is written with is stale: an update rewrites it even when
//! nothing changed (which `karmada-rs storage rewrite` relies on), as an update rewrites a
//! value encrypted with a key that no longer writes.
//!
//! Encryption at rest sits below this (the store's value transformers), as kube orders them:
//! a write is encoded, then encrypted; a read is decrypted, then decoded.

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};

use apimachinery::protobuf::{self, Codec, ProtobufError};
use apimachinery::serializer::json as go_json;
use bytes::Bytes;
use serde_json::Value;

use crate::error::ApiError;
use crate::object;
use crate::resources::{ResourceDef, Source};

/// kube-apiserver's `--storage-media-type`: how built-in kinds are written (custom resources
/// are JSON whatever it says, as in kube).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StorageMediaType {
    /// `application/vnd.kubernetes.protobuf`, kube's default.
    #[default]
    Protobuf,
    /// `application/json`.
    Json,
}

impl std::str::FromStr for StorageMediaType {
    type Err = String;

    /// kube's values, and its message for others; `application/yaml`, which kube accepts,
    /// is refused with what to use instead.
    fn from_str(s: &str) -> Result<StorageMediaType, String> {
        match s {
            "application/vnd.kubernetes.protobuf" => Ok(StorageMediaType::Protobuf),
            "application/json" => Ok(StorageMediaType::Json),
            "application/yaml" => Err(
                "--storage-media-type \"application/yaml\" is not supported by this server: use application/json or application/vnd.kubernetes.protobuf".into(),
            ),
            _ => Err(format!(
                "--storage-media-type {s:?} invalid, allowed values: application/json, application/vnd.kubernetes.protobuf, application/yaml"
            )),
        }
    }
}

/// Whether built-in kinds are written as JSON: one setting for the process, as kube's
/// storage factory has one default media type, chosen before any server starts.
static JSON_STORAGE: AtomicBool = AtomicBool::new(false);

/// Sets how built-in kinds are written from now on. Values in the other encoding stay
/// readable and are rewritten by their next update (or `storage rewrite`).
pub fn set_media_type(media_type: StorageMediaType) {
    JSON_STORAGE.store(media_type == StorageMediaType::Json, Ordering::Relaxed);
}

/// How the objects of one resource are written.
#[derive(Clone, Copy, Debug)]
pub enum Encoding {
    /// kube's protobuf envelope around the kind's message.
    Protobuf(Codec),
    /// JSON as Go writes an unstructured object (custom resources).
    Unstructured,
    /// JSON of a typed Go struct in the storage version.
    Typed(Typed),
}

/// The typed kinds stored as JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typed {
    /// A CustomResourceDefinition, stored in `apiextensions.k8s.io/v1beta1`.
    CustomResourceDefinition,
    /// An APIService, or a registered kind not served as a CRD's (Karmada's Cluster), stored
    /// in the version served; or a built-in kind under `--storage-media-type=application/json`,
    /// stored in its storage version.
    Served,
}

fn is_crd(def: &ResourceDef) -> bool {
    def.group == "apiextensions.k8s.io" && def.plural == "customresourcedefinitions"
}

impl Encoding {
    /// How `def`'s objects are written.
    pub fn of(def: &ResourceDef) -> Encoding {
        match def.source {
            Source::BuiltIn if is_crd(def) => Encoding::Typed(Typed::CustomResourceDefinition),
            Source::BuiltIn if def.group == "apiregistration.k8s.io" => {
                Encoding::Typed(Typed::Served)
            }
            // A kind stored in another form (events.k8s.io Events) is encoded as that form.
            Source::BuiltIn => match Codec::for_kind(&def.storage_api_version(), &def.kind) {
                Some(_) if JSON_STORAGE.load(Ordering::Relaxed) => Encoding::Typed(Typed::Served),
                Some(codec) => Encoding::Protobuf(codec),
                None => Encoding::Unstructured,
            },
            Source::Registered {
                served_as_crd: false,
            } => Encoding::Typed(Typed::Served),
            Source::Registered { .. } | Source::Custom(_) => Encoding::Unstructured,
        }
    }

    /// Whether values are JSON text whose members a reader may splice (custom resources).
    pub fn is_unstructured(&self) -> bool {
        matches!(self, Encoding::Unstructured)
    }
}

/// The bytes to store for an object of `def` (already in its storage version): kube clears
/// `resourceVersion` and `selfLink` before writing (APIObjectVersioner.PrepareObjectForStorage).
pub fn encode(def: &ResourceDef, obj: &Value) -> Result<Bytes, ApiError> {
    let stored = stored_form(obj);
    let bytes = match Encoding::of(def) {
        Encoding::Protobuf(codec) => codec.object(&stored).map_err(|e| unencodable(def, e))?,
        Encoding::Typed(Typed::CustomResourceDefinition) => {
            go_json::encode(&apiextensions::v1beta1::from_v1(&stored))
                .map_err(ApiError::internal)?
        }
        Encoding::Typed(Typed::Served) | Encoding::Unstructured => {
            go_json::encode(&*stored).map_err(ApiError::internal)?
        }
    };
    Ok(Bytes::from(bytes))
}

/// `obj` without what is never stored; copied only when there is something to clear.
fn stored_form(obj: &Value) -> Cow<'_, Value> {
    match object::meta(obj) {
        Some(m) if m.contains_key("resourceVersion") || m.contains_key("selfLink") => {
            let mut copy = obj.clone();
            let m = object::meta_mut(&mut copy);
            m.remove("resourceVersion");
            m.remove("selfLink");
            Cow::Owned(copy)
        }
        _ => Cow::Borrowed(obj),
    }
}

/// An object whose JSON does not fit its kind's message: kube's decoder refuses it as a bad
/// request (`json: cannot unmarshal ...`), before anything is stored.
fn unencodable(def: &ResourceDef, e: ProtobufError) -> ApiError {
    ApiError::bad_request(format!(
        "{} in version \"{}\" cannot be handled as a {}: {e}",
        def.kind, def.version, def.kind
    ))
}

/// The JSON text of a stored value without its trailing whitespace (Go's encoder ends it with
/// a newline, which a watch stream's line framing must not see).
pub fn trimmed_json(value: &Bytes) -> Bytes {
    let end = value
        .iter()
        .rposition(|b| !matches!(b, b' ' | b'\n' | b'\r' | b'\t'))
        .map_or(0, |i| i + 1);
    if end == value.len() {
        value.clone()
    } else {
        value.slice(..end)
    }
}

/// What a stored value decodes to.
pub enum Decoded {
    /// JSON text (trailing whitespace trimmed), served as it is: a slice of the stored value.
    Json(Bytes),
    /// An object decoded from protobuf or converted from the storage version (without a
    /// resourceVersion).
    Object(Value),
}

/// Decodes a stored value of `def` (by its content).
pub fn decode(def: &ResourceDef, value: &Bytes) -> Result<Decoded, ApiError> {
    if protobuf::is_protobuf(value) {
        return protobuf::decode(value)
            .map(Decoded::Object)
            .map_err(|e| ApiError::internal(format!("stored object is not valid protobuf: {e}")));
    }
    match value.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'{') => {}
        Some(_) if value.starts_with(b"k8s:enc:") => {
            let prefix: String = value
                .iter()
                .take(64)
                .map(|&b| b as char)
                .collect::<String>()
                .split(':')
                .take(5)
                .collect::<Vec<_>>()
                .join(":");
            return Err(ApiError::internal(format!(
                "stored object is encrypted ({prefix}:) and the encryption configuration does not cover {}",
                def.qualified()
            )));
        }
        _ => {
            return Err(ApiError::internal(
                "stored object is neither JSON nor protobuf",
            ));
        }
    }
    if is_crd(def) {
        let obj = object::parse_stored(value)?;
        if apiextensions::v1beta1::is_v1beta1(&obj) {
            return Ok(Decoded::Object(apiextensions::v1beta1::to_v1(&obj)));
        }
        return Ok(Decoded::Object(obj));
    }
    Ok(Decoded::Json(trimmed_json(value)))
}

/// The object stored in `value`, with `metadata.resourceVersion` set to `rv`.
pub fn decode_value(def: &ResourceDef, value: &Bytes, rv: i64) -> Result<Value, ApiError> {
    let mut obj = match decode(def, value)? {
        Decoded::Json(json) => object::parse_stored(&json)?,
        Decoded::Object(obj) => obj,
    };
    object::set_resource_version(&mut obj, rv);
    Ok(obj)
}

/// Whether `value` is in another encoding than `def`'s objects are written in (JSON for a
/// kind stored as protobuf, a CRD in `v1`), so that an update rewrites it even when nothing
/// changed.
pub fn is_stale(def: &ResourceDef, value: &[u8]) -> bool {
    match Encoding::of(def) {
        Encoding::Protobuf(_) => !protobuf::is_protobuf(value),
        Encoding::Typed(Typed::CustomResourceDefinition) => {
            !contains(value, b"\"apiVersion\":\"apiextensions.k8s.io/v1beta1\"")
        }
        Encoding::Typed(Typed::Served) | Encoding::Unstructured => protobuf::is_protobuf(value),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// Whether writing `new` over the stored `stored` would change nothing (kube compares the
/// bytes). Values another writer encoded differently are compared by content: typed JSON
/// (whose member order is the Go struct's) and protobuf (whose `managedFields` hold Go's
/// field order) only when both have the same length (a reordering keeps it; a change rarely
/// does), and JSON this server wrote before it wrote Go's final newline.
pub fn unchanged(def: &ResourceDef, stored: &Bytes, new: &Bytes) -> bool {
    if stored == new {
        return true;
    }
    match Encoding::of(def) {
        Encoding::Unstructured => new.strip_suffix(b"\n") == Some(&stored[..]),
        Encoding::Protobuf(_) | Encoding::Typed(_) if stored.len() == new.len() => {
            match (decode(def, stored), decode(def, new)) {
                (Ok(a), Ok(b)) => decoded_value(a).ok() == decoded_value(b).ok(),
                _ => false,
            }
        }
        _ => false,
    }
}

fn decoded_value(d: Decoded) -> Result<Value, ApiError> {
    match d {
        Decoded::Json(json) => object::parse_stored(&json),
        Decoded::Object(obj) => Ok(obj),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::{built_in, registered, served};
    use serde_json::json;

    #[test]
    fn each_resource_is_written_as_kube_apiserver_writes_it() {
        for def in built_in().iter().filter(|d| d.prefix().is_some()) {
            let e = Encoding::of(def);
            match (def.group.as_str(), def.plural.as_str()) {
                ("apiextensions.k8s.io", _) => {
                    assert!(matches!(
                        e,
                        Encoding::Typed(Typed::CustomResourceDefinition)
                    ))
                }
                ("apiregistration.k8s.io", _) => {
                    assert!(matches!(e, Encoding::Typed(Typed::Served)))
                }
                // Kinds stored in another form are written as that form's message.
                _ => assert!(
                    matches!(e, Encoding::Protobuf(c) if c.api_version() == def.storage_api_version() && c.kind() == def.kind),
                    "{} is not stored as protobuf",
                    def.qualified()
                ),
            }
        }
        // Registered kinds: as the CRDs kube-apiserver serves them from, or typed (Cluster).
        for def in registered() {
            let want_typed = def.kind == "Cluster";
            assert_eq!(
                matches!(Encoding::of(&def), Encoding::Typed(Typed::Served)),
                want_typed,
                "{}",
                def.qualified()
            );
            assert_eq!(Encoding::of(&def).is_unstructured(), !want_typed);
        }
    }

    /// kube's bytes for a ConfigMap, worked out by hand from generated.proto: `k8s\0`, then
    /// runtime.Unknown { typeMeta{apiVersion, kind}, raw, contentEncoding "", contentType "" }
    /// around ConfigMap { metadata, data }, where ObjectMeta writes every value field (name,
    /// generateName, namespace, selfLink, uid, resourceVersion, generation, a zero
    /// creationTimestamp as an empty message) and a map entry is { key, value }.
    #[test]
    fn a_config_map_is_stored_as_kubes_envelope_byte_for_byte() {
        let def = served("", "configmaps");
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default", "resourceVersion": "5"},
            "data": {"k": "v"}});
        let mut golden = b"k8s\0".to_vec();
        golden.extend([0x0a, 0x0f, 0x0a, 0x02]);
        golden.extend(b"v1");
        golden.extend([0x12, 0x09]);
        golden.extend(b"ConfigMap");
        golden.extend([0x12, 0x22]); // raw: the ConfigMap, 34 bytes
        golden.extend([0x0a, 0x18]); // metadata, 24 bytes
        golden.extend([0x0a, 0x01, b'c', 0x12, 0x00, 0x1a, 0x07]);
        golden.extend(b"default");
        golden.extend([0x22, 0x00, 0x2a, 0x00, 0x32, 0x00, 0x38, 0x00, 0x42, 0x00]);
        golden.extend([0x12, 0x06, 0x0a, 0x01, b'k', 0x12, 0x01, b'v']); // data["k"] = "v"
        golden.extend([0x1a, 0x00, 0x22, 0x00]);
        let stored = encode(&def, &obj).expect("encode");
        assert_eq!(stored.as_ref(), golden.as_slice());
        let back = decode_value(&def, &stored, 5).expect("decode");
        assert_eq!(back["data"], json!({"k": "v"}));
        assert_eq!(back["metadata"]["resourceVersion"], "5");
        assert!(!is_stale(&def, &stored));
    }

    #[test]
    fn custom_resources_are_go_json_and_earlier_json_is_read_and_kept() {
        let def = served("work.karmada.io", "works");
        let obj = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "ns", "resourceVersion": "9"},
            "spec": {"workload": {"manifests": [{"data": {"cmd": "a && b"}}]}}});
        let stored = encode(&def, &obj).expect("encode");
        assert_eq!(
            stored.as_ref(),
            &br#"{"apiVersion":"work.karmada.io/v1alpha1","kind":"Work","metadata":{"name":"w","namespace":"ns"},"spec":{"workload":{"manifests":[{"data":{"cmd":"a \u0026\u0026 b"}}]}}}"#[..]
                .iter()
                .chain(b"\n")
                .copied()
                .collect::<Vec<u8>>()[..]
        );
        // Served without the newline (a watch stream is framed by lines).
        match decode(&def, &stored).expect("decode") {
            Decoded::Json(json) => assert!(json.ends_with(b"}")),
            Decoded::Object(_) => panic!("custom resources are served as stored"),
        }
        // What earlier versions stored (serde_json's text, no newline) is the same object:
        // an update that changes nothing leaves it as it is.
        let plain = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "ns"}, "spec": {"workload": {"manifests": []}}});
        let earlier = Bytes::from(serde_json::to_vec(&plain).expect("json"));
        assert!(!is_stale(&def, &earlier));
        assert!(unchanged(
            &def,
            &earlier,
            &encode(&def, &plain).expect("encode")
        ));
        assert!(!unchanged(&def, &earlier, &stored));
    }

    #[test]
    fn other_writers_encodings_are_compared_by_content_and_older_ones_are_stale() {
        let crds = served("apiextensions.k8s.io", "customresourcedefinitions");
        let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1", "served": true, "storage": true}]}});
        let ours = encode(&crds, &crd).expect("encode");
        assert!(!is_stale(&crds, &ours));
        // kube's typed JSON: the struct's member order.
        let theirs = Bytes::from_static(br#"{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1beta1","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","version":"v1","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true}],"preserveUnknownFields":false}}
"#);
        assert!(unchanged(&crds, &theirs, &ours));
        assert_eq!(
            decode_value(&crds, &theirs, 1).expect("decode")["spec"],
            decode_value(&crds, &ours, 1).expect("decode")["spec"]
        );
        // A v1 CRD earlier versions stored is stale: an update writes it in v1beta1.
        let earlier = Bytes::from(serde_json::to_vec(&crd).unwrap());
        assert!(is_stale(&crds, &earlier));

        let deployments = served("apps", "deployments");
        let json_deployment = Bytes::from_static(
            br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"}}"#,
        );
        assert!(is_stale(&deployments, &json_deployment));
        let pb = encode(
            &deployments,
            &decode_value(&deployments, &json_deployment, 1).unwrap(),
        )
        .unwrap();
        assert!(!is_stale(&deployments, &pb));
        assert!(unchanged(&deployments, &pb, &pb.clone()));
    }

    #[test]
    fn unreadable_values_say_why() {
        let secrets = served("", "secrets");
        let err = decode(
            &secrets,
            &Bytes::from_static(b"k8s:enc:aescbc:v1:key1:\x00\x01"),
        )
        .err()
        .expect("refused");
        assert!(
            err.message.contains("encrypted (k8s:enc:aescbc:v1:key1:)")
                && err.message.contains("secrets"),
            "{}",
            err.message
        );
        let err = decode(&secrets, &Bytes::from_static(b"\x00garbage"))
            .err()
            .expect("refused");
        assert!(
            err.message.contains("neither JSON nor protobuf"),
            "{}",
            err.message
        );
        let err = decode(&secrets, &Bytes::from_static(b"k8s\0\x0a"))
            .err()
            .expect("refused");
        assert!(
            err.message.contains("not valid protobuf"),
            "{}",
            err.message
        );
    }
}
