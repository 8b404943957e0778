//! Objects as the controllers keep them: keys, and [`RawObject`], any Kubernetes object held as its
//! JSON text with only its metadata parsed. Informer caches hold thousands of templates and member
//! objects; keeping the text (parsed on demand) costs a fraction of a `serde_json::Value` tree.

use std::borrow::Cow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
pub use karmada_api::names::split_api_version;
use kube::core::{ApiResource, DynamicResourceScope};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::text::Text;

/// Namespace and name of an object; the namespace is empty for cluster-scoped objects.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Key {
    /// Namespace, empty when cluster-scoped.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl Key {
    /// A key from namespace and name.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Key {
        Key {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The key of a cluster-scoped object.
    pub fn cluster(name: impl Into<String>) -> Key {
        Key::new("", name)
    }

    /// The key of an object from its metadata.
    pub fn of(meta: &ObjectMeta) -> Key {
        Key::new(
            meta.namespace.clone().unwrap_or_default(),
            meta.name.clone().unwrap_or_default(),
        )
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

/// An object of any kind by group, version, kind, namespace and name (Karmada's ClusterWideKey).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ObjectKey {
    /// apiVersion (`apps/v1`, `v1`).
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Namespace, empty when cluster-scoped.
    pub namespace: String,
    /// Name.
    pub name: String,
}

impl ObjectKey {
    /// The key of an object from its apiVersion, kind and metadata.
    pub fn new(
        api_version: impl Into<String>,
        kind: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        ObjectKey {
            api_version: api_version.into(),
            kind: kind.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// The namespace/name part.
    pub fn key(&self) -> Key {
        Key::new(self.namespace.clone(), self.name.clone())
    }

    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        split_api_version(&self.api_version).0
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, kind={}, {}",
            self.api_version,
            self.kind,
            Key::new(self.namespace.clone(), self.name.clone())
        )
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
}

/// Any Kubernetes object: its JSON text plus its parsed apiVersion, kind and metadata
/// (without managedFields, which no controller reads).
#[derive(Clone)]
pub struct RawObject {
    /// apiVersion.
    pub api_version: String,
    /// Kind.
    pub kind: String,
    /// Metadata, managedFields dropped.
    pub metadata: ObjectMeta,
    /// [`RawObject::spec_hash`] when the cache that holds the object computed it, else 0.
    pub digest: u64,
    raw: Text,
}

impl fmt::Debug for RawObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RawObject")
            .field("api_version", &self.api_version)
            .field("kind", &self.kind)
            .field("namespace", &self.metadata.namespace)
            .field("name", &self.metadata.name)
            .field("resource_version", &self.metadata.resource_version)
            .finish()
    }
}

impl RawObject {
    /// Parses an object from JSON text. The text kept has no `metadata.managedFields`: no
    /// controller reads them, and leaving them out of the text spares both the memory of every
    /// cached template and their parsing, here and each time the object is read as a value.
    pub fn from_json(raw: &str) -> Result<RawObject, serde_json::Error> {
        let raw = apimachinery::json_splice::without_managed_fields(raw);
        let head: Head = serde_json::from_str(&raw)?;
        Ok(RawObject::with_head(head, Text::Plain(Arc::from(&*raw))))
    }

    /// Wraps a JSON value.
    pub fn from_value(value: &Value) -> Result<RawObject, serde_json::Error> {
        RawObject::from_json(&serde_json::to_string(value)?)
    }

    fn with_head(head: Head, raw: Text) -> RawObject {
        let mut metadata = head.metadata;
        metadata.managed_fields = None;
        RawObject {
            api_version: head.api_version,
            kind: head.kind,
            metadata,
            digest: 0,
            raw,
        }
    }

    /// The JSON text as received, without `metadata.managedFields`.
    pub fn json(&self) -> Cow<'_, str> {
        self.raw.get()
    }

    /// The object as a JSON value (parsed now), without `metadata.managedFields`.
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.raw.get())
    }

    /// Packs the object's text when that saves memory: for objects a cache keeps, whose text
    /// is read now and then.
    pub fn pack(&mut self) {
        let raw = std::mem::replace(&mut self.raw, Text::Plain(Arc::from("")));
        self.raw = raw.pack();
    }

    /// Namespace, empty when cluster-scoped.
    pub fn namespace(&self) -> &str {
        self.metadata.namespace.as_deref().unwrap_or("")
    }

    /// Name.
    pub fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or("")
    }

    /// UID.
    pub fn uid(&self) -> &str {
        self.metadata.uid.as_deref().unwrap_or("")
    }

    /// resourceVersion.
    pub fn resource_version(&self) -> &str {
        self.metadata.resource_version.as_deref().unwrap_or("")
    }

    /// metadata.generation, 0 when unset.
    pub fn generation(&self) -> i64 {
        self.metadata.generation.unwrap_or(0)
    }

    /// A label's value.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(key))
            .map(String::as_str)
    }

    /// An annotation's value.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .map(String::as_str)
    }

    /// True when the object is being deleted.
    pub fn is_deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// The object's key with its type.
    pub fn object_key(&self) -> ObjectKey {
        ObjectKey::new(
            self.api_version.clone(),
            self.kind.clone(),
            self.namespace(),
            self.name(),
        )
    }

    /// A hash of everything but status, managedFields, resourceVersion and a propagation
    /// policy's claim: it changes when the object's specification changes (Karmada's
    /// eventfilter.SpecificationChanged). The claim is left out because the detector writes it
    /// itself and re-reading a template just claimed changes nothing.
    pub fn spec_hash(&self) -> u64 {
        use karmada_api::well_known::{annotations, labels};
        let Ok(mut v) = self.to_value() else {
            return 0;
        };
        if let Some(obj) = v.as_object_mut() {
            obj.remove("status");
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("resourceVersion");
                for (field, keys) in [
                    (
                        "labels",
                        &[
                            labels::PROPAGATION_POLICY_PERMANENT_ID,
                            labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
                        ][..],
                    ),
                    (
                        "annotations",
                        &[
                            annotations::PROPAGATION_POLICY_NAMESPACE,
                            annotations::PROPAGATION_POLICY_NAME,
                            annotations::CLUSTER_PROPAGATION_POLICY_NAME,
                        ][..],
                    ),
                ] {
                    if let Some(m) = meta.get_mut(field).and_then(Value::as_object_mut) {
                        for k in keys {
                            m.remove(*k);
                        }
                        if m.is_empty() {
                            meta.remove(field);
                        }
                    }
                }
            }
        }
        hash_value(&v)
    }
}

/// A stable hash of a JSON value (object keys in sorted order).
pub fn hash_value(v: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    hash_into(v, &mut h);
    h.finish()
}

fn hash_into(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => 0u8.hash(h),
        Value::Bool(b) => (1u8, b).hash(h),
        Value::Number(n) => (2u8, n.to_string()).hash(h),
        Value::String(s) => (3u8, s).hash(h),
        Value::Array(a) => {
            (4u8, a.len()).hash(h);
            for x in a {
                hash_into(x, h);
            }
        }
        Value::Object(m) => {
            (5u8, m.len()).hash(h);
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for k in keys {
                k.hash(h);
                if let Some(x) = m.get(k) {
                    hash_into(x, h);
                }
            }
        }
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        RawObject::from_json(raw.get()).map_err(D::Error::custom)
    }
}

impl serde::Serialize for RawObject {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let text = self.raw.get();
        let raw: &RawValue = serde_json::from_str(&text).map_err(serde::ser::Error::custom)?;
        raw.serialize(s)
    }
}

impl kube::Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_object_keeps_text_and_parses_metadata() {
        let text = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"n","namespace":"d","labels":{"a":"b"},"managedFields":[{"manager":"x"}]},"spec":{"replicas":2}}"#;
        let o: RawObject = serde_json::from_str(text).unwrap();
        assert_eq!(o.kind, "Deployment");
        assert_eq!(o.namespace(), "d");
        assert_eq!(o.label("a"), Some("b"));
        assert!(o.metadata.managed_fields.is_none());
        assert!(!o.json().contains("managedFields"), "{}", o.json());
        assert_eq!(o.to_value().unwrap()["spec"]["replicas"], 2);
        assert!(
            o.to_value().unwrap()["metadata"]
                .get("managedFields")
                .is_none()
        );
        // Packed, it reads and serializes the same.
        let long = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"k": "v".repeat(2000)}});
        let plain = RawObject::from_value(&long).unwrap();
        let mut packed = plain.clone();
        packed.pack();
        assert!(matches!(packed.raw, Text::Packed(_)));
        assert_eq!(packed.json(), plain.json());
        assert_eq!(packed.to_value().unwrap(), long);
        assert_eq!(
            serde_json::to_string(&packed).unwrap(),
            serde_json::to_string(&plain).unwrap()
        );
    }

    #[test]
    fn spec_hash_ignores_status_and_resource_version() {
        let a = RawObject::from_json(r#"{"kind":"X","metadata":{"name":"n","resourceVersion":"1"},"spec":{"a":1},"status":{"x":1}}"#).unwrap();
        let b = RawObject::from_json(r#"{"kind":"X","metadata":{"resourceVersion":"2","name":"n"},"status":{"x":2},"spec":{"a":1}}"#).unwrap();
        let c =
            RawObject::from_json(r#"{"kind":"X","metadata":{"name":"n"},"spec":{"a":2}}"#).unwrap();
        let claimed = RawObject::from_json(r#"{"kind":"X","metadata":{"name":"n","labels":{"propagationpolicy.karmada.io/permanent-id":"x"},"annotations":{"propagationpolicy.karmada.io/name":"p"}},"spec":{"a":1}}"#).unwrap();
        let labelled = RawObject::from_json(
            r#"{"kind":"X","metadata":{"name":"n","labels":{"app":"y"}},"spec":{"a":1}}"#,
        )
        .unwrap();
        assert_eq!(a.spec_hash(), b.spec_hash());
        assert_ne!(a.spec_hash(), c.spec_hash());
        assert_eq!(
            a.spec_hash(),
            claimed.spec_hash(),
            "a policy's claim is not a change"
        );
        assert_ne!(a.spec_hash(), labelled.spec_hash(), "a user's label is");
    }

    #[test]
    fn splits_api_versions() {
        for (av, g, v) in [
            ("v1", "", "v1"),
            ("apps/v1", "apps", "v1"),
            ("a.b/v1beta1", "a.b", "v1beta1"),
        ] {
            assert_eq!(split_api_version(av), (g, v));
        }
    }
}
