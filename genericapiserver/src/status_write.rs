//! A stored object as a write through the status subresource reads it. Such a write changes
//! nothing but `metadata` and `status` (the registry's `prepare_for_update` keeps the rest of
//! the stored object), yet a full parse and serialization of the object is most of its cost:
//! a Work's manifests are more than half of it, and status writes are the pipeline's most
//! frequent writes. So only `apiVersion`, `kind`, `metadata` and `status` are parsed; the
//! other members stay as the stored text and are written back byte for byte.

use bytes::Bytes;
use serde_json::{Map, Value};

use apimachinery::serializer::json as go_json;

use crate::error::ApiError;
use crate::json_splice;
use crate::object;

/// The members a status write reads or changes.
const PARSED: &[&str] = &["apiVersion", "kind", "metadata", "status"];

/// The members of a stored object that a status write leaves as they are.
pub struct Kept {
    text: Bytes,
    /// Each member's key and the range of its value in `text`, sorted by key.
    members: Vec<(String, (usize, usize))>,
}

/// Reads a stored object for a status write: the object with only the members a status write
/// reads (with its resourceVersion, as `object::from_stored`), and the members left out.
/// `None` for the second when nothing was left out (or the text has a shape the scanner does
/// not take, and was parsed whole), and the first is then the whole object.
pub fn from_stored(stored: &Bytes, rv: i64) -> Result<(Value, Option<Kept>), ApiError> {
    let Some(found) = json_splice::members(stored, 0) else {
        return Ok((object::from_stored(stored, rv)?, None));
    };
    let mut parsed = Map::new();
    let mut kept = Vec::new();
    for (key, (from, to)) in found {
        if PARSED.contains(&key) {
            parsed.insert(key.to_string(), object::parse_stored(&stored[from..to])?);
        } else {
            kept.push((key.to_string(), (from, to)));
        }
    }
    kept.sort_by(|a, b| a.0.cmp(&b.0));
    // A key written twice would be written back twice; a parse keeps the last one.
    if kept.windows(2).any(|w| w[0].0 == w[1].0) {
        return Ok((object::from_stored(stored, rv)?, None));
    }
    let mut obj = Value::Object(parsed);
    object::set_resource_version(&mut obj, rv);
    // Nothing left out: what was parsed is the whole object.
    let kept = (!kept.is_empty()).then(|| Kept {
        text: stored.clone(),
        members: kept,
    });
    Ok((obj, kept))
}

impl Kept {
    fn has(&self, key: &str) -> bool {
        self.members
            .binary_search_by(|(k, _)| k.as_str().cmp(key))
            .is_ok()
    }

    /// The whole object as custom resources are stored (`storage_codec`: Go's JSON, its keys
    /// sorted, a final newline): `obj`'s members and the kept ones in key order, so an
    /// unchanged object gives the stored bytes. A kept member wins over one of the same name
    /// in `obj`: a status write cannot change it.
    pub fn to_stored(&self, obj: &Value) -> Result<Bytes, ApiError> {
        let Value::Object(map) = obj else {
            return Err(ApiError::internal(
                "a status write's object is not an object",
            ));
        };
        let mut out = Vec::with_capacity(self.text.len() + 256);
        out.push(b'{');
        let mut ours = map.iter().filter(|(k, _)| !self.has(k)).peekable();
        let mut kept = self.members.iter().peekable();
        let mut first = true;
        loop {
            let take_ours = match (ours.peek(), kept.peek()) {
                (Some((a, _)), Some((b, _))) => a.as_str() < b.as_str(),
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if !first {
                out.push(b',');
            }
            first = false;
            if take_ours {
                let Some((key, value)) = ours.next() else {
                    break;
                };
                go_json::write(&mut out, key).map_err(ApiError::internal)?;
                out.push(b':');
                let value = if key == "metadata" {
                    object::stored_metadata(value)
                } else {
                    std::borrow::Cow::Borrowed(value)
                };
                go_json::write(&mut out, &*value).map_err(ApiError::internal)?;
            } else {
                let Some((key, (from, to))) = kept.next() else {
                    break;
                };
                go_json::write(&mut out, key).map_err(ApiError::internal)?;
                out.push(b':');
                out.extend_from_slice(&self.text[*from..*to]);
            }
        }
        out.push(b'}');
        out.push(b'\n');
        Ok(Bytes::from(out))
    }

    /// The whole object, for the answers that need it as a value (dry runs, unchanged objects).
    pub fn complete(&self, mut obj: Value) -> Result<Value, ApiError> {
        if let Value::Object(map) = &mut obj {
            for (key, (from, to)) in &self.members {
                map.insert(key.clone(), object::parse_stored(&self.text[*from..*to])?);
            }
        }
        Ok(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stored(v: &Value) -> Bytes {
        Bytes::from(go_json::encode(v).expect("serialize"))
    }

    #[test]
    fn unchanged_object_gives_the_stored_bytes() {
        let full = json!({
            "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
            "metadata": {"name": "w", "namespace": "karmada-es-m1", "labels": {"a": "b"}},
            "spec": {"workload": {"manifests": [{"kind": "Deployment", "spec": {"replicas": 2.5}}]}},
            "status": {"conditions": [{"type": "Applied", "status": "True"}]},
            "zz": [1, "two", null]
        });
        let bytes = stored(&full);
        let (view, kept) = from_stored(&bytes, 42).expect("read");
        let kept = kept.expect("spec and zz are kept");
        assert_eq!(view.get("spec"), None);
        assert_eq!(view.get("zz"), None);
        assert_eq!(
            view.pointer("/metadata/resourceVersion"),
            Some(&json!("42"))
        );
        assert_eq!(view["status"], full["status"]);
        // resourceVersion is not stored.
        assert_eq!(kept.to_stored(&view).expect("join"), bytes);
        let mut whole = full.clone();
        object::set_resource_version(&mut whole, 42);
        assert_eq!(kept.complete(view).expect("complete"), whole);
    }

    #[test]
    fn a_new_status_is_written_with_the_kept_members_as_stored() {
        let full = json!({
            "apiVersion": "v1", "kind": "X", "metadata": {"name": "x"},
            "data": {"k": "v"}, "spec": {"a": 1}
        });
        let (mut view, kept) = from_stored(&stored(&full), 7).expect("read");
        let kept = kept.expect("kept");
        view["status"] = json!({"phase": "Ready"});
        // A status write cannot change a kept member, even if the value carries one.
        view["spec"] = json!({"a": 2});
        let mut want = full.clone();
        want["status"] = json!({"phase": "Ready"});
        assert_eq!(kept.to_stored(&view).expect("join"), stored(&want));
    }

    #[test]
    fn objects_without_other_members_or_unscannable_are_read_whole() {
        let only =
            json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, "status": {}});
        let (view, kept) = from_stored(&stored(&only), 3).expect("read");
        assert!(kept.is_none());
        assert_eq!(view["metadata"]["resourceVersion"], json!("3"));
        let escaped = Bytes::from_static(br#"{"metadata":{"name":"x"},"sp\u0065c":{"a":1}}"#);
        let (view, kept) = from_stored(&escaped, 3).expect("read");
        assert!(kept.is_none());
        assert_eq!(view["spec"], json!({"a": 1}));
        let twice =
            Bytes::from_static(br#"{"metadata":{"name":"x"},"spec":{"a":1},"spec":{"a":2}}"#);
        let (view, kept) = from_stored(&twice, 3).expect("read");
        assert!(kept.is_none());
        assert_eq!(view["spec"], json!({"a": 2}));
    }
}
