//! Protobuf responses: objects, lists and watch events written as kube-apiserver's protobuf
//! serializer writes them (apimachinery `runtime/serializer/protobuf`).
//!
//! An object is the magic `k8s\0` and a `runtime.Unknown` naming its kind around the message
//! (`Serializer.Encode`). A list's items are written one by one into the list message, whose
//! fields are `metadata` and `items` in every Kubernetes list. A watch event is a
//! `metav1.WatchEvent` without the envelope (`RawSerializer`) whose `object` holds the whole
//! enveloped object, framed by a 4-byte big-endian length (`LengthDelimitedFramer`).

use prost::Message;
use prost::encoding::{WireType, encode_key, encode_varint, encoded_len_varint};
use serde_json::Value;

use super::json::{Enc, FromJson};
use super::{Kind, MAGIC, ProtobufError, find};
use k8s_pb::apimachinery::pkg::apis::meta::v1::ListMeta;
use k8s_pb::apimachinery::pkg::runtime::TypeMeta;

/// The protobuf message of one kind, for encoding objects of it.
#[derive(Clone, Copy, Debug)]
pub struct Codec {
    kind: &'static Kind,
    enc: Enc,
}

impl Codec {
    /// The codec of `apiVersion`/`kind`, if the kind has a protobuf message.
    pub fn for_kind(api_version: &str, kind: &str) -> Option<Codec> {
        find(api_version, kind).map(|kind| Codec {
            kind,
            enc: Enc::default(),
        })
    }

    /// The same codec refusing JSON fields its messages do not have (tests).
    #[cfg(test)]
    pub(crate) fn strict(self) -> Codec {
        Codec {
            enc: Enc { strict: true },
            ..self
        }
    }

    /// `apiVersion` of the kind.
    pub fn api_version(&self) -> &'static str {
        self.kind.api_version
    }

    /// The kind.
    pub fn kind(&self) -> &'static str {
        self.kind.kind
    }

    /// The message of an object (no envelope), from its JSON.
    pub fn message(&self, object: &Value) -> Result<Vec<u8>, ProtobufError> {
        (self.kind.encode)(object, self.enc)
    }

    /// An object as a whole protobuf body: `k8s\0` and the `runtime.Unknown` around its message.
    pub fn object(&self, object: &Value) -> Result<Vec<u8>, ProtobufError> {
        let message = self.message(object)?;
        Ok(envelope(self.kind.api_version, self.kind.kind, &[&message]))
    }
}

/// `k8s\0` and a `runtime.Unknown` of `apiVersion`/`kind` whose `raw` is the concatenation of
/// `raw`, written as `Unknown.NestedMarshalTo` does: every field, the two empty strings included.
pub fn envelope(api_version: &str, kind: &str, raw: &[&[u8]]) -> Vec<u8> {
    let type_meta = TypeMeta {
        api_version: Some(api_version.to_owned()),
        kind: Some(kind.to_owned()),
    }
    .encode_to_vec();
    let raw_len: usize = raw.iter().map(|r| r.len()).sum();
    let mut out = Vec::with_capacity(MAGIC.len() + type_meta.len() + raw_len + 24);
    out.extend_from_slice(MAGIC);
    length_delimited(1, type_meta.len(), &mut out);
    out.extend_from_slice(&type_meta);
    length_delimited(2, raw_len, &mut out);
    for part in raw {
        out.extend_from_slice(part);
    }
    // contentEncoding and contentType: empty.
    length_delimited(3, 0, &mut out);
    length_delimited(4, 0, &mut out);
    out
}

/// The key and length of a length-delimited field.
fn length_delimited(tag: u32, len: usize, out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

/// Writes a list body item by item.
#[derive(Debug)]
pub struct ListWriter {
    api_version: String,
    kind: String,
    item: Codec,
    metadata_tag: u32,
    items_tag: u32,
    items: Vec<u8>,
}

impl ListWriter {
    /// A writer of `apiVersion`/`kind` (a list kind) whose items are `item` objects.
    pub fn new(api_version: &str, kind: &str, item: Codec) -> ListWriter {
        // meta.k8s.io/v1beta1's PartialObjectMetadataList numbers its fields the other way
        // round; every other list has metadata = 1, items = 2.
        let (metadata_tag, items_tag) =
            if api_version == "meta.k8s.io/v1beta1" && kind == "PartialObjectMetadataList" {
                (2, 1)
            } else {
                (1, 2)
            };
        ListWriter {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            item,
            metadata_tag,
            items_tag,
            items: Vec::new(),
        }
    }

    /// Appends an item from its JSON.
    pub fn push(&mut self, item: &Value) -> Result<(), ProtobufError> {
        let message = self.item.message(item)?;
        length_delimited(self.items_tag, message.len(), &mut self.items);
        self.items.extend_from_slice(&message);
        Ok(())
    }

    /// The list body, with `metadata` (a `ListMeta` in JSON) and the items pushed.
    pub fn finish(self, metadata: &Value) -> Result<Vec<u8>, ProtobufError> {
        let meta = match metadata {
            Value::Null => ListMeta::default(),
            v => ListMeta::from_json(v, self.item.enc)
                .map_err(|e| super::json::under("metadata", e))?,
        }
        .encode_to_vec();
        let mut head = Vec::with_capacity(meta.len() + 8);
        length_delimited(self.metadata_tag, meta.len(), &mut head);
        head.extend_from_slice(&meta);
        let parts: [&[u8]; 2] = if self.metadata_tag < self.items_tag {
            [&head, &self.items]
        } else {
            [&self.items, &head]
        };
        Ok(envelope(&self.api_version, &self.kind, &parts))
    }
}

/// One watch event frame: the 4-byte big-endian length and a `metav1.WatchEvent` whose object
/// is `object`, an enveloped protobuf object.
pub fn watch_event(event_type: &str, object: &[u8]) -> Vec<u8> {
    // WatchEvent.object is a RawExtension, whose only field (raw = 1) holds the object.
    let raw_field = 1 + encoded_len_varint(object.len() as u64) + object.len();
    let event_len = 1
        + encoded_len_varint(event_type.len() as u64)
        + event_type.len()
        + 1
        + encoded_len_varint(raw_field as u64)
        + raw_field;
    let mut out = Vec::with_capacity(4 + event_len);
    out.extend_from_slice(&u32::try_from(event_len).unwrap_or(u32::MAX).to_be_bytes());
    length_delimited(1, event_type.len(), &mut out);
    out.extend_from_slice(event_type.as_bytes());
    length_delimited(2, raw_field, &mut out);
    length_delimited(1, object.len(), &mut out);
    out.extend_from_slice(object);
    out
}

#[cfg(test)]
mod tests {
    use k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent;
    use k8s_pb::apimachinery::pkg::runtime::{RawExtension, Unknown};
    use serde_json::json;

    use super::*;

    #[test]
    fn envelope_matches_a_prost_unknown() {
        let raw = b"\x0a\x03abc".to_vec();
        let want = Unknown {
            type_meta: Some(TypeMeta {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
            }),
            raw: Some(raw.clone()),
            content_encoding: Some(String::new()),
            content_type: Some(String::new()),
        };
        let got = envelope("v1", "ConfigMap", &[&raw[..2], &raw[2..]]);
        assert_eq!(&got[..4], MAGIC);
        assert_eq!(&got[4..], want.encode_to_vec());
    }

    #[test]
    fn watch_event_frame() {
        let object = envelope("v1", "ConfigMap", &[b"\x0a\x00"]);
        let frame = watch_event("ADDED", &object);
        let len = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
        assert_eq!(len, frame.len() - 4);
        let event = WatchEvent::decode(&frame[4..]).unwrap();
        assert_eq!(
            event,
            WatchEvent {
                r#type: Some("ADDED".into()),
                object: Some(RawExtension { raw: Some(object) }),
            }
        );
    }

    #[test]
    fn list_fields_in_tag_order() {
        use k8s_pb::api::core::v1::ConfigMapList;
        use k8s_pb::apimachinery::pkg::apis::meta::v1beta1::PartialObjectMetadataList;

        let cm = Codec::for_kind("v1", "ConfigMap").unwrap();
        let mut list = ListWriter::new("v1", "ConfigMapList", cm);
        list.push(&json!({"metadata": {"name": "a"}, "data": {"k": "v"}}))
            .unwrap();
        list.push(&json!({"metadata": {"name": "b"}})).unwrap();
        let body = list
            .finish(&json!({"resourceVersion": "7", "continue": "c"}))
            .unwrap();
        let unknown = Unknown::decode(&body[4..]).unwrap();
        let decoded = ConfigMapList::decode(unknown.raw.as_deref().unwrap()).unwrap();
        assert_eq!(decoded.items.len(), 2);
        assert_eq!(
            decoded.items[1].metadata.as_ref().unwrap().name.as_deref(),
            Some("b")
        );
        let meta = decoded.metadata.unwrap();
        assert_eq!(meta.resource_version.as_deref(), Some("7"));
        assert_eq!(meta.r#continue.as_deref(), Some("c"));

        let pom = Codec::for_kind("meta.k8s.io/v1beta1", "PartialObjectMetadata").unwrap();
        let mut list = ListWriter::new("meta.k8s.io/v1beta1", "PartialObjectMetadataList", pom);
        list.push(&json!({"metadata": {"name": "a"}})).unwrap();
        let body = list.finish(&json!({"resourceVersion": "9"})).unwrap();
        let unknown = Unknown::decode(&body[4..]).unwrap();
        let raw = unknown.raw.unwrap();
        // items (1) before metadata (2).
        assert_eq!(raw[0], 0x0a);
        let decoded = PartialObjectMetadataList::decode(&raw[..]).unwrap();
        assert_eq!(decoded.items.len(), 1);
        assert_eq!(
            decoded.metadata.unwrap().resource_version.as_deref(),
            Some("9")
        );
    }
}
