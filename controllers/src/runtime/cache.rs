//! Lean cached forms of the most numerous control-plane objects. A Work carries a whole manifest;
//! caching tens of thousands of them as `serde_json::Value` trees would dominate the process's
//! memory, so the cache keeps each manifest as text with where its identity is in it
//! ([`CachedManifest`]), labels and annotations as sorted lists ([`Pairs`]) and reflected
//! statuses as text ([`CachedManifestStatus`]), parses the rest when needed, and sizes every
//! list to its contents (a one-element list otherwise holds room for four).

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::names;
use karmada_api::well_known::labels;
use karmada_api::work::v1alpha1::{
    ManifestStatus, ResourceHealth, ResourceIdentifier, WORK_APPLIED, WorkStatus,
};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::object::{Key, ObjectKey};
use super::text::Text as JsonText;

/// A Work as the controllers cache it.
#[derive(Clone, Debug, Default)]
pub struct CachedWork {
    /// Metadata without managedFields, labels and annotations (those are in `labels` and
    /// `annotations`; [`CachedWork::full_metadata`] has them all).
    pub metadata: ObjectMeta,
    /// `metadata.labels`.
    pub labels: Pairs,
    /// `metadata.annotations`.
    pub annotations: Pairs,
    /// The manifests and dispatch settings.
    pub spec: CachedWorkSpec,
    /// The observed status.
    pub status: CachedWorkStatus,
}

/// A Work as it arrives, before its labels and annotations leave the metadata.
#[derive(Deserialize)]
struct WorkFields {
    #[serde(default, deserialize_with = "metadata_only")]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: CachedWorkSpec,
    #[serde(default, deserialize_with = "compact_status")]
    status: CachedWorkStatus,
}

impl<'de> Deserialize<'de> for CachedWork {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let WorkFields {
            mut metadata,
            spec,
            status,
        } = WorkFields::deserialize(d)?;
        Ok(CachedWork {
            labels: Pairs::from_map(metadata.labels.take()),
            annotations: Pairs::from_map(metadata.annotations.take()),
            metadata,
            spec,
            status,
        })
    }
}

/// Labels or annotations as a sorted list. A Work has one label or two; as a map, each would
/// cost a whole B-tree node (eleven slots), for each of tens of thousands of cached Works.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pairs(Box<[(Box<str>, Box<str>)]>);

impl Pairs {
    /// From a map (its order is the sorted order kept).
    pub fn from_map(map: Option<BTreeMap<String, String>>) -> Pairs {
        Pairs(
            map.into_iter()
                .flatten()
                .map(|(k, v)| (k.into_boxed_str(), v.into_boxed_str()))
                .collect(),
        )
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        let i = self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        Some(&self.0[i].1)
    }

    /// As the map of an ObjectMeta (None when empty).
    pub fn to_map(&self) -> Option<BTreeMap<String, String>> {
        (!self.0.is_empty()).then(|| {
            self.0
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
    }

    /// True when `map` holds exactly these entries (an absent map and an empty one alike).
    pub fn same_as(&self, map: &Option<BTreeMap<String, String>>) -> bool {
        self.0.len() == map.as_ref().map_or(0, BTreeMap::len)
            && self
                .0
                .iter()
                .zip(map.iter().flatten())
                .all(|((k, v), (mk, mv))| **k == **mk && **v == **mv)
    }
}

/// Metadata parsed without its managedFields (a third of a Work's metadata, which no
/// controller reads): cut out of the text, not built and dropped.
fn metadata_only<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let raw = Box::<RawValue>::deserialize(d)?;
    let text = apimachinery::json_splice::metadata_without_managed_fields(raw.get());
    serde_json::from_str(&text).map_err(D::Error::custom)
}

/// A Work's status with its lists sized to their contents.
fn compact_status<'de, D: Deserializer<'de>>(d: D) -> Result<CachedWorkStatus, D::Error> {
    let mut status = CachedWorkStatus::deserialize(d)?;
    status.conditions.shrink_to_fit();
    status.manifest_statuses.shrink_to_fit();
    Ok(status)
}

/// A Work's status as the cache keeps it: each reflected status as its JSON text, which its
/// readers parse when they aggregate it (a JSON tree costs several times the text, for each of
/// tens of thousands of Works). It is not serializable: what a controller writes is the API's
/// [`WorkStatus`] ([`CachedWorkStatus::to_api`]).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedWorkStatus {
    /// Applied, Dispatching.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The status of each manifest.
    #[serde(default)]
    pub manifest_statuses: Vec<CachedManifestStatus>,
}

impl CachedWorkStatus {
    /// True when `status` says what this status says.
    pub fn same_as(&self, status: &WorkStatus) -> bool {
        self.conditions == status.conditions && self.manifests_same_as(&status.manifest_statuses)
    }

    /// True when `statuses` say what this status's manifest statuses say.
    pub fn manifests_same_as(&self, statuses: &[ManifestStatus]) -> bool {
        self.manifest_statuses.len() == statuses.len()
            && self
                .manifest_statuses
                .iter()
                .zip(statuses)
                .all(|(a, b)| a.same_as(b))
    }

    /// The status as the API's type (reflected statuses parsed).
    pub fn to_api(&self) -> WorkStatus {
        WorkStatus {
            conditions: self.conditions.clone(),
            manifest_statuses: self
                .manifest_statuses
                .iter()
                .map(CachedManifestStatus::to_api)
                .collect(),
        }
    }
}

/// One manifest's status, its reflected status kept as text.
#[derive(Clone, Debug, Deserialize)]
pub struct CachedManifestStatus {
    /// Which manifest.
    pub identifier: ResourceIdentifier,
    #[serde(default)]
    status: Option<Box<RawValue>>,
    /// Health of the member object.
    #[serde(default)]
    pub health: Option<ResourceHealth>,
}

impl PartialEq for CachedManifestStatus {
    fn eq(&self, other: &Self) -> bool {
        self.identifier == other.identifier
            && self.health == other.health
            && self.status.as_deref().map(RawValue::get)
                == other.status.as_deref().map(RawValue::get)
    }
}

impl CachedManifestStatus {
    /// The reflected status (parsed now); None when absent or unreadable.
    pub fn status(&self) -> Option<Value> {
        serde_json::from_str(self.status.as_deref()?.get()).ok()
    }

    /// The status as the API's type.
    pub fn to_api(&self) -> ManifestStatus {
        ManifestStatus {
            identifier: self.identifier.clone(),
            status: self.status(),
            health: self.health,
        }
    }

    /// True when `ms` says what this status says.
    pub fn same_as(&self, ms: &ManifestStatus) -> bool {
        self.identifier == ms.identifier && self.health == ms.health && self.status() == ms.status
    }
}

/// The spec of a cached Work.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedWorkSpec {
    /// The manifests.
    #[serde(default)]
    pub workload: CachedWorkload,
    /// Dispatching suspended.
    #[serde(default)]
    pub suspend_dispatching: Option<bool>,
    /// Keep member objects when the Work goes.
    #[serde(default)]
    pub preserve_resources_on_deletion: Option<bool>,
}

/// The manifests of a cached Work.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CachedWorkload {
    /// The manifests.
    #[serde(default)]
    pub manifests: Box<[CachedManifest]>,
}

/// A manifest of a cached Work: its JSON text and its identity. Readers that need more (the
/// applier, the drift check) parse the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedManifest {
    text: JsonText,
    /// apiVersion, kind, namespace, name and the `resourcetemplate.karmada.io/uid` annotation
    /// (every event about the manifest names the template by it) one after the other, and
    /// where each ends: one allocation instead of five.
    identity: Box<str>,
    ends: [u32; 5],
}

const API_VERSION: usize = 0;
const KIND: usize = 1;
const NAMESPACE: usize = 2;
const NAME: usize = 3;
const TEMPLATE_UID: usize = 4;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Identity<'a> {
    #[serde(default, borrow)]
    api_version: Cow<'a, str>,
    #[serde(default, borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    metadata: IdentityMeta<'a>,
}

#[derive(Default, Deserialize)]
struct IdentityMeta<'a> {
    #[serde(default, borrow)]
    namespace: Option<Text<'a>>,
    #[serde(default, borrow)]
    name: Option<Text<'a>>,
    #[serde(default, borrow)]
    annotations: Option<TemplateUid<'a>>,
}

/// The one annotation kept; the others are skipped without being built.
#[derive(Default, Deserialize)]
struct TemplateUid<'a> {
    #[serde(default, borrow, rename = "resourcetemplate.karmada.io/uid")]
    uid: Option<Text<'a>>,
}

/// A string borrowed from the text when written without escapes (serde borrows a `Cow` only
/// as a field of its own, not inside an `Option`).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

impl CachedManifest {
    /// A manifest from its JSON text.
    pub fn from_json(raw: Box<str>) -> Result<CachedManifest, serde_json::Error> {
        let id: Identity<'_> = serde_json::from_str(&raw)?;
        fn text(t: Option<Text<'_>>) -> Cow<'_, str> {
            t.map(|t| t.0).unwrap_or(Cow::Borrowed(""))
        }
        let parts: [Cow<'_, str>; 5] = [
            id.api_version,
            id.kind,
            text(id.metadata.namespace),
            text(id.metadata.name),
            text(id.metadata.annotations.and_then(|a| a.uid)),
        ];
        let mut identity = String::with_capacity(parts.iter().map(|p| p.len()).sum());
        let mut ends = [0u32; 5];
        for (end, part) in ends.iter_mut().zip(&parts) {
            identity.push_str(part);
            // A manifest is at most a few MiB.
            *end = u32::try_from(identity.len()).unwrap_or(u32::MAX);
        }
        drop(parts);
        Ok(CachedManifest {
            text: JsonText::packed(&raw),
            identity: identity.into_boxed_str(),
            ends,
        })
    }

    fn part(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.identity
            .get(start..self.ends[i] as usize)
            .unwrap_or_default()
    }

    /// apiVersion.
    pub fn api_version(&self) -> &str {
        self.part(API_VERSION)
    }

    /// Kind.
    pub fn kind(&self) -> &str {
        self.part(KIND)
    }

    /// Namespace, empty when cluster-scoped.
    pub fn namespace(&self) -> &str {
        self.part(NAMESPACE)
    }

    /// Name.
    pub fn name(&self) -> &str {
        self.part(NAME)
    }

    /// The JSON text.
    pub fn json(&self) -> Cow<'_, str> {
        self.text.get()
    }

    /// The manifest as a JSON value (parsed now).
    pub fn to_value(&self) -> Result<Value, serde_json::Error> {
        serde_json::from_str(&self.text.get())
    }

    /// The UID of the resource template the manifest comes from (its
    /// `resourcetemplate.karmada.io/uid` annotation), empty when unknown.
    pub fn template_uid(&self) -> &str {
        self.part(TEMPLATE_UID)
    }

    /// The key of the object the manifest becomes.
    pub fn object_key(&self) -> ObjectKey {
        ObjectKey::new(
            self.api_version(),
            self.kind(),
            self.namespace(),
            self.name(),
        )
    }

    /// True when the manifest is the object `key` names.
    pub fn is(&self, key: &ObjectKey) -> bool {
        self.api_version() == key.api_version
            && self.kind() == key.kind
            && self.namespace() == key.namespace
            && self.name() == key.name
    }
}

impl<'de> Deserialize<'de> for CachedManifest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        CachedManifest::from_json(raw.into()).map_err(D::Error::custom)
    }
}

impl k8s_openapi::Resource for CachedWork {
    const API_VERSION: &'static str = "work.karmada.io/v1alpha1";
    const GROUP: &'static str = "work.karmada.io";
    const KIND: &'static str = "Work";
    const VERSION: &'static str = "v1alpha1";
    const URL_PATH_SEGMENT: &'static str = "works";
    type Scope = NamespaceResourceScope;
}

impl k8s_openapi::ListableResource for CachedWork {
    const LIST_KIND: &'static str = "WorkList";
}

impl k8s_openapi::Metadata for CachedWork {
    type Ty = ObjectMeta;

    fn metadata(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl CachedWork {
    /// Namespace/name.
    pub fn key(&self) -> Key {
        Key::of(&self.metadata)
    }

    /// The member cluster of the Work's execution space.
    pub fn cluster(&self) -> Option<&str> {
        names::cluster_name_from_execution_space(self.metadata.namespace.as_deref()?).ok()
    }

    /// Dispatching suspended.
    pub fn suspended(&self) -> bool {
        self.spec.suspend_dispatching.unwrap_or(false)
    }

    /// Member objects kept on deletion.
    pub fn preserve(&self) -> bool {
        self.spec.preserve_resources_on_deletion.unwrap_or(false)
    }

    /// True when the Applied condition is True.
    pub fn applied(&self) -> bool {
        super::condition_status(&self.status.conditions, WORK_APPLIED) == Some("True")
    }

    /// True when being deleted.
    pub fn deleting(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// The permanent id of the ResourceBinding or ClusterResourceBinding it came from.
    pub fn binding_id(&self) -> Option<&str> {
        self.labels
            .get(labels::RESOURCE_BINDING_PERMANENT_ID)
            .or_else(|| {
                self.labels
                    .get(labels::CLUSTER_RESOURCE_BINDING_PERMANENT_ID)
            })
    }

    /// The binding the Work belongs to, from its annotations.
    pub fn binding(&self) -> Option<Key> {
        use karmada_api::well_known::annotations;
        let a = &self.annotations;
        if let (Some(ns), Some(name)) = (
            a.get(annotations::RESOURCE_BINDING_NAMESPACE),
            a.get(annotations::RESOURCE_BINDING_NAME),
        ) {
            return Some(Key::new(ns, name));
        }
        a.get(annotations::CLUSTER_RESOURCE_BINDING_NAME)
            .map(Key::cluster)
    }

    /// The metadata with its labels and annotations (managedFields aside).
    pub fn full_metadata(&self) -> ObjectMeta {
        ObjectMeta {
            labels: self.labels.to_map(),
            annotations: self.annotations.to_map(),
            ..self.metadata.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cached_work_keeps_manifest_text_and_identity() {
        let manifest = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {
                "name": "nginx",
                "namespace": "default",
                "annotations": {"resourcetemplate.karmada.io/uid": "u-1"},
                "labels": {"app": "nginx"},
            },
            "spec": {"replicas": 2},
        });
        let work = json!({
            "apiVersion": "work.karmada.io/v1alpha1",
            "kind": "Work",
            "metadata": {"name": "w", "namespace": "karmada-es-member1",
                "labels": {"resourcebinding.karmada.io/permanent-id": "rb-1", "a": "b"},
                "annotations": {"x": "y", "resourcebinding.karmada.io/name": "rb",
                    "resourcebinding.karmada.io/namespace": "default"},
                "managedFields": [{"manager": "m", "operation": "Update", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"workload": {"manifests": [manifest]}},
            "status": {
                "conditions": [{"type": "Applied", "status": "True", "reason": "AppliedSuccessful",
                    "message": "", "lastTransitionTime": "2026-11-21T00:00:00Z"}],
                "manifestStatuses": [{"identifier": {"ordinal": 0, "group": "apps", "version": "v1",
                    "kind": "Deployment", "resource": "deployments", "namespace": "default", "name": "nginx"},
                    "status": {"replicas": 2, "readyReplicas": 2}, "health": "Healthy"}],
            },
        });
        let w: CachedWork = serde_json::from_str(&work.to_string()).unwrap();
        let [m] = &*w.spec.workload.manifests else {
            panic!("one manifest expected")
        };
        assert_eq!(
            m.object_key(),
            ObjectKey::new("apps/v1", "Deployment", "default", "nginx")
        );
        assert!(m.is(&m.object_key()));
        assert!(!m.is(&ObjectKey::new("apps/v1", "Deployment", "default", "other")));
        assert_eq!(m.to_value().unwrap(), manifest);
        assert_eq!(m.template_uid(), "u-1");
        assert!(w.applied());
        assert_eq!(w.status.conditions.capacity(), 1);
        assert_eq!(w.status.manifest_statuses.capacity(), 1);
        let ms = &w.status.manifest_statuses[0];
        assert_eq!(
            ms.status(),
            Some(json!({"readyReplicas": 2, "replicas": 2}))
        );
        let api = w.status.to_api();
        assert_eq!(api.manifest_statuses[0].status, ms.status());
        assert!(w.status.same_as(&api));
        assert!(!w.status.manifests_same_as(&[]));
        assert!(ms.same_as(&api.manifest_statuses[0]));
        let mut other = api.manifest_statuses[0].clone();
        other.status = Some(json!({"readyReplicas": 1, "replicas": 2}));
        assert!(!ms.same_as(&other));
        assert_eq!(w.cluster(), Some("member1"));
        assert!(w.metadata.managed_fields.is_none());
        assert_eq!(w.metadata.name.as_deref(), Some("w"));
        // Labels and annotations are kept as sorted lists, out of the metadata.
        assert!(w.metadata.labels.is_none() && w.metadata.annotations.is_none());
        assert_eq!(w.binding_id(), Some("rb-1"));
        assert_eq!((w.labels.get("a"), w.labels.get("c")), (Some("b"), None));
        let full = w.full_metadata();
        assert_eq!(full.labels.as_ref().map(BTreeMap::len), Some(2));
        assert_eq!(full.annotations.as_ref().map(BTreeMap::len), Some(3));
        assert_eq!(w.binding(), Some(Key::new("default", "rb")));
        assert!(w.labels.same_as(&full.labels));
        assert!(!w.annotations.same_as(&full.labels));
        assert!(
            Pairs::default().same_as(&None) && Pairs::default().same_as(&Some(BTreeMap::new()))
        );
        assert_eq!(Pairs::default().to_map(), None);
    }

    #[test]
    fn a_manifest_identity_written_with_escapes_is_read_unescaped() {
        let m: CachedManifest = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"Config\u004dap","metadata":{"name":"a\"b","namespace":"n"}}"#,
        )
        .unwrap();
        assert_eq!(m.kind(), "ConfigMap");
        assert_eq!(m.name(), "a\"b");
        assert_eq!(
            (m.api_version(), m.namespace(), m.template_uid()),
            ("v1", "n", "")
        );
        let plain: CachedManifest = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
        )
        .unwrap();
        assert_eq!((plain.kind(), plain.name()), ("ConfigMap", "a"));
    }

    #[test]
    fn a_large_manifest_is_kept_packed_and_read_whole() {
        let manifest = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "annotations": {
                "resourcetemplate.karmada.io/uid": "u-2",
                "resourcetemplate.karmada.io/managed-annotations": "resourcetemplate.karmada.io/managed-annotations,resourcetemplate.karmada.io/managed-labels,resourcetemplate.karmada.io/uid,work.karmada.io/name,work.karmada.io/namespace",
                "resourcetemplate.karmada.io/managed-labels": "karmada.io/managed,work.karmada.io/permanent-id",
                "work.karmada.io/name": "web-7b7cc5b9ff",
                "work.karmada.io/namespace": "karmada-es-member1"}},
            "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        });
        let text = manifest.to_string();
        let m = CachedManifest::from_json(text.clone().into_boxed_str()).unwrap();
        assert!(matches!(m.text, JsonText::Packed(_)), "kept packed");
        assert_eq!(m.json(), text);
        assert_eq!(m.to_value().unwrap(), manifest);
        assert_eq!(
            (m.kind(), m.namespace(), m.name(), m.template_uid()),
            ("Deployment", "default", "web", "u-2")
        );
        // Equal manifests compare equal, packed or not.
        let again = CachedManifest::from_json(text.into_boxed_str()).unwrap();
        assert_eq!(m, again);
    }

    #[test]
    fn a_cluster_scoped_manifest_has_an_empty_namespace() {
        let m: CachedManifest = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"a"}}"#,
        )
        .unwrap();
        assert_eq!(m.namespace(), "");
        assert_eq!(m.name(), "a");
        assert_eq!(m.template_uid(), "");
        assert!(serde_json::from_str::<CachedManifest>(r#"{"kind": 1}"#).is_err());
    }
}
