//! Writes to member clusters (pkg/util/objectwatcher): create, update with Karmada's conflict
//! rule and field retention, delete only what Karmada manages, and the record of the version
//! each object had after Karmada's last write, by which drift is recognised.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hasher;
use std::sync::{Arc, Mutex, MutexGuard};

use karmada_api::prune::remove_irrelevant_fields;
use karmada_api::well_known::{annotations, labels};
use kube::Api;
use kube::api::{DeleteParams, PostParams, PropagationPolicy};
use serde_json::{Map, Value};

use crate::runtime::discovery::ServedResource;
use crate::runtime::{Context, Error, ObjectKey, RawObject, Result, is_not_found};

/// What an update did (Karmada's OperationResult).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing differed: no write was sent (`none`).
    Skipped,
    /// The write was sent and the member kept the object's version (`unchanged`).
    Unchanged,
    /// The object was written (`updated`).
    Updated,
}

impl Outcome {
    /// Karmada's name of the result, as its metrics label it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Skipped => "none",
            Outcome::Unchanged => "unchanged",
            Outcome::Updated => "updated",
        }
    }
}

/// Member-cluster writes shared by the execution and work-status controllers.
pub struct ObjectWatcher {
    ctx: Arc<Context>,
    versions: VersionRecords,
}

/// The versions Karmada last wrote or confirmed, per cluster, as digests (see [`digest`]).
#[derive(Default)]
struct VersionRecords(Mutex<HashMap<String, HashMap<u64, u64>>>);

impl VersionRecords {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, HashMap<u64, u64>>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn record(&self, cluster: &str, key: &ObjectKey, version: &str) {
        let (key, version) = (key_digest(key), digest(&[version]));
        let mut clusters = self.lock();
        match clusters.get_mut(cluster) {
            Some(records) => {
                records.insert(key, version);
            }
            None => {
                clusters.insert(cluster.to_owned(), HashMap::from([(key, version)]));
            }
        }
    }

    /// Whether a version is recorded for the object, and whether it is `version`.
    fn recorded(&self, cluster: &str, key: &ObjectKey, version: &str) -> (bool, bool) {
        match self
            .lock()
            .get(cluster)
            .and_then(|records| records.get(&key_digest(key)).copied())
        {
            Some(v) => (true, v == digest(&[version])),
            None => (false, false),
        }
    }

    fn forget(&self, cluster: &str, key: &ObjectKey) {
        if let Some(records) = self.lock().get_mut(cluster) {
            records.remove(&key_digest(key));
        }
    }

    fn forget_cluster(&self, cluster: &str) {
        self.lock().remove(cluster);
    }
}

/// What the version records are keyed by and hold: 64-bit digests of the object's key and of
/// its version. One record per member object is tens of thousands of records; as strings
/// (cluster, apiVersion, kind, namespace, name, version) they took about 400 bytes each, as
/// digests 16 bytes in a table per cluster. Two keys or two versions of one object sharing a
/// digest (about 1 in 2^64) would only make the controller read an object before creating it,
/// or miss one drift correction until the next change.
fn digest(parts: &[&str]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for p in parts {
        h.write(p.as_bytes());
        // A separator, so that ("ab", "c") and ("a", "bc") differ.
        h.write_u8(0xff);
    }
    h.finish()
}

fn key_digest(key: &ObjectKey) -> u64 {
    digest(&[&key.api_version, &key.kind, &key.namespace, &key.name])
}

/// ObjectVersion: `gen:<generation>` for objects with a generation, else `rv:<resourceVersion>`.
pub fn object_version(obj: &RawObject) -> String {
    match obj.metadata.generation {
        Some(g) if g != 0 => format!("gen:{g}"),
        _ => format!("rv:{}", obj.resource_version()),
    }
}

fn str_map(v: &Value, field: &str) -> Map<String, Value> {
    v.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn set_meta(v: &mut Value, field: &str, value: Option<Value>) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        match value {
            Some(x) => {
                meta.insert(field.to_owned(), x);
            }
            None => {
                meta.remove(field);
            }
        }
    }
}

/// RetainLabels / RetainAnnotations: keys the member added survive, keys Karmada once set and no
/// longer wants (listed in the observed object's managed-keys annotation) do not.
fn retain_map(desired: &mut Value, observed: &Value, field: &str) {
    let mut d = str_map(desired, field);
    let o = str_map(observed, field);
    let record: BTreeSet<String> = observed
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| {
            a.get(if field == "labels" {
                annotations::MANAGED_LABELS
            } else {
                annotations::MANAGED_ANNOTATIONS
            })
        })
        .and_then(Value::as_str)
        .unwrap_or("")
        .split(',')
        .map(str::to_owned)
        .filter(|k| !d.contains_key(k))
        .collect();
    for (k, v) in o {
        if record.contains(&k) || d.contains_key(&k) {
            continue;
        }
        d.insert(k, v);
    }
    if !d.is_empty() {
        set_meta(desired, field, Some(Value::Object(d)));
    }
}

/// retainClusterFields: the member's resourceVersion, finalizers, owner references, and the
/// labels and annotations set there.
fn retain_cluster_fields(desired: &mut Value, observed: &Value) {
    let om = observed.get("metadata").cloned().unwrap_or(Value::Null);
    set_meta(
        desired,
        "resourceVersion",
        om.get("resourceVersion").cloned(),
    );
    set_meta(desired, "finalizers", om.get("finalizers").cloned());
    set_meta(
        desired,
        "ownerReferences",
        om.get("ownerReferences").cloned(),
    );
    retain_map(desired, observed, "annotations");
    retain_map(desired, observed, "labels");
}

/// Whether the object carries `karmada.io/managed: "true"`.
pub fn is_managed(obj: &Value) -> bool {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(labels::MANAGED_BY_KARMADA))
        .and_then(Value::as_str)
        == Some(labels::MANAGED_BY_KARMADA_VALUE)
}

fn conflict_resolution(obj: &Value) -> Option<&str> {
    obj.get("metadata")?
        .get("annotations")?
        .get(annotations::CONFLICT_RESOLUTION)?
        .as_str()
}

fn object_key(v: &Value) -> ObjectKey {
    ObjectKey::new(
        v["apiVersion"].as_str().unwrap_or(""),
        v["kind"].as_str().unwrap_or(""),
        v["metadata"]["namespace"].as_str().unwrap_or(""),
        v["metadata"]["name"].as_str().unwrap_or(""),
    )
}

impl ObjectWatcher {
    /// An object watcher with no versions recorded.
    pub fn new(ctx: Arc<Context>) -> Arc<ObjectWatcher> {
        Arc::new(ObjectWatcher {
            ctx,
            versions: VersionRecords::default(),
        })
    }

    /// Records the version of an object Karmada just wrote or confirmed.
    pub fn record(&self, cluster: &str, obj: &RawObject) {
        self.versions
            .record(cluster, &obj.object_key(), &object_version(obj));
    }

    /// Whether Karmada has written the object since this process started.
    pub fn has_record(&self, cluster: &str, key: &ObjectKey) -> bool {
        self.versions.recorded(cluster, key, "").0
    }

    /// Forgets an object.
    pub fn forget(&self, cluster: &str, key: &ObjectKey) {
        self.versions.forget(cluster, key);
    }

    /// Forgets everything about a cluster.
    pub fn forget_cluster(&self, cluster: &str) {
        self.versions.forget_cluster(cluster);
    }

    /// ObjectNeedsUpdate: the member object changed since Karmada's last write (its version
    /// differs from the recorded one), or — for objects with a generation — its labels differ.
    pub fn needs_update(&self, cluster: &str, desired: &Value, observed: &RawObject) -> bool {
        let current = object_version(observed);
        if !self
            .versions
            .recorded(cluster, &observed.object_key(), &current)
            .1
        {
            return true;
        }
        if !current.starts_with("gen:") {
            return false;
        }
        let dl = desired["metadata"]
            .get("labels")
            .cloned()
            .unwrap_or(Value::Null);
        let ol = serde_json::to_value(&observed.metadata.labels).unwrap_or(Value::Null);
        let empty = |v: &Value| v.is_null() || v.as_object().is_some_and(Map::is_empty);
        dl != ol && !(empty(&dl) && empty(&ol))
    }

    /// The member API for an object's kind.
    pub async fn api(
        &self,
        cluster: &str,
        key: &ObjectKey,
    ) -> Result<(Api<RawObject>, ServedResource)> {
        let r = self
            .ctx
            .served_resource(&key.api_version, &key.kind)
            .ok_or_else(|| {
                Error::msg(format!(
                    "no resource is served for {} {}",
                    key.api_version, key.kind
                ))
            })?;
        let client = self
            .ctx
            .members
            .get(cluster)
            .await
            .map_err(|e| Error::msg(e.to_string()))?;
        let api = if r.namespaced {
            Api::namespaced_with(client, &key.namespace, &r.api_resource())
        } else {
            Api::all_with(client, &r.api_resource())
        };
        Ok((api, r))
    }

    /// Reads a member object.
    pub async fn get(&self, cluster: &str, key: &ObjectKey) -> Result<Option<RawObject>> {
        let (api, _) = self.api(cluster, key).await?;
        Ok(api.get_opt(&key.name).await?)
    }

    /// Creates a member object from its JSON text, sent as it is. Returns the created object,
    /// or Err with the API error (a 409 means it already exists).
    pub async fn create(
        &self,
        cluster: &str,
        desired: &str,
    ) -> std::result::Result<RawObject, CreateError> {
        let body = RawObject::from_json(desired).map_err(|e| CreateError::Other(e.into()))?;
        let key = body.object_key();
        let (api, _) = self.api(cluster, &key).await.map_err(CreateError::Other)?;
        match api.create(&PostParams::default(), &body).await {
            Ok(created) => {
                self.record(cluster, &created);
                tracing::debug!(%cluster, object = %key, "created the resource");
                Ok(created)
            }
            Err(e) if crate::runtime::is_already_exists(&e) => Err(CreateError::Exists),
            Err(e) => Err(CreateError::Other(e.into())),
        }
    }

    /// Updates a member object toward `desired` (ObjectWatcher.Update): refused when the object is
    /// not Karmada's unless the conflict resolution is overwrite; member-owned fields are kept;
    /// nothing is written when nothing differs.
    pub async fn update(
        &self,
        cluster: &str,
        desired: &Value,
        observed: &RawObject,
    ) -> Result<(Outcome, RawObject)> {
        let observed_v = observed.to_value()?;
        if !is_managed(&observed_v)
            && conflict_resolution(desired) != Some(annotations::CONFLICT_RESOLUTION_OVERWRITE)
        {
            return Err(Error::msg(format!(
                "resource(kind={}, {}/{}) already exists in the cluster {cluster} and the {} strategy value is empty, Karmada will not manage this resource",
                observed.kind,
                observed.namespace(),
                observed.name(),
                annotations::CONFLICT_RESOLUTION
            )));
        }
        let mut want = desired.clone();
        retain_cluster_fields(&mut want, &observed_v);
        let want = self.ctx.interpreter.retain(&want, &observed_v).await.map_err(|e| {
            Error::msg(format!(
                "failed to retain fields for resource(kind={}, {}/{}) in cluster {cluster}: {e}",
                observed.kind,
                observed.namespace(),
                observed.name()
            ))
        })?;
        let mut have = observed_v.clone();
        remove_irrelevant_fields(&mut have, true);
        retain_cluster_fields(&mut have, &observed_v);
        if want == have {
            self.record(cluster, observed);
            return Ok((Outcome::Skipped, observed.clone()));
        }
        let key = observed.object_key();
        let (api, _) = self.api(cluster, &key).await?;
        let body = RawObject::from_value(&want)?;
        let updated = api
            .replace(&key.name, &PostParams::default(), &body)
            .await?;
        self.record(cluster, &updated);
        tracing::debug!(%cluster, object = %key, "updated the resource");
        if updated.resource_version() == observed.resource_version() {
            Ok((Outcome::Unchanged, updated))
        } else {
            Ok((Outcome::Updated, updated))
        }
    }

    /// Deletes a member object if Karmada manages it (ObjectWatcher.Delete), in the background so
    /// that a Job's pods go too.
    pub async fn delete(&self, cluster: &str, desired: &Value) -> Result<()> {
        let key = object_key(desired);
        let (api, _) = self.api(cluster, &key).await?;
        let Some(observed) = api.get_opt(&key.name).await? else {
            self.forget(cluster, &key);
            return Ok(());
        };
        if observed.label(labels::MANAGED_BY_KARMADA) != Some(labels::MANAGED_BY_KARMADA_VALUE) {
            tracing::info!(%cluster, object = %key, "not deleting a resource Karmada does not manage");
            return Ok(());
        }
        let dp = DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..Default::default()
        };
        match api.delete(&key.name, &dp).await {
            Ok(_) => {}
            Err(e) if is_not_found(&e) => {}
            Err(e) => return Err(e.into()),
        }
        self.forget(cluster, &key);
        tracing::debug!(%cluster, object = %key, "deleted the resource");
        Ok(())
    }
}

/// Why a create failed.
#[derive(Debug)]
pub enum CreateError {
    /// The object already exists.
    Exists,
    /// Anything else.
    Other(Error),
}

impl std::fmt::Display for CreateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CreateError::Exists => f.write_str("already exists"),
            CreateError::Other(e) => e.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn retain_keeps_member_keys_and_drops_keys_karmada_released() {
        let observed = json!({"metadata": {
            "resourceVersion": "7",
            "finalizers": ["m/f"],
            "labels": {"app": "x", "member": "y", "old": "z"},
            "annotations": {"resourcetemplate.karmada.io/managed-labels": "app,old", "member-a": "1"},
        }});
        let mut desired = json!({"metadata": {"labels": {"app": "x2"}, "annotations": {"k": "v"}}});
        retain_cluster_fields(&mut desired, &observed);
        assert_eq!(desired["metadata"]["resourceVersion"], "7");
        assert_eq!(desired["metadata"]["finalizers"], json!(["m/f"]));
        assert_eq!(
            desired["metadata"]["labels"],
            json!({"app": "x2", "member": "y"})
        );
        assert_eq!(desired["metadata"]["annotations"]["member-a"], "1");
        assert_eq!(desired["metadata"]["annotations"]["k"], "v");
    }

    #[test]
    fn versions_follow_generation_or_resource_version() {
        let a = RawObject::from_json(
            r#"{"kind":"Deployment","metadata":{"name":"a","generation":3,"resourceVersion":"9"}}"#,
        )
        .unwrap();
        let b = RawObject::from_json(
            r#"{"kind":"ConfigMap","metadata":{"name":"b","resourceVersion":"9"}}"#,
        )
        .unwrap();
        assert_eq!(object_version(&a), "gen:3");
        assert_eq!(object_version(&b), "rv:9");
    }

    #[test]
    fn version_records_are_per_cluster_and_object() {
        let r = VersionRecords::default();
        let a = ObjectKey::new("apps/v1", "Deployment", "default", "a");
        let b = ObjectKey::new("apps/v1", "Deployment", "default", "b");
        assert_eq!(r.recorded("m1", &a, "gen:1"), (false, false));
        r.record("m1", &a, "gen:1");
        assert_eq!(r.recorded("m1", &a, "gen:1"), (true, true));
        assert_eq!(r.recorded("m1", &a, "gen:2"), (true, false));
        assert_eq!(r.recorded("m2", &a, "gen:1"), (false, false));
        assert_eq!(r.recorded("m1", &b, "gen:1"), (false, false));
        // Parts are separated: a name moved into the namespace is another key.
        let shifted = ObjectKey::new("apps/v1", "Deployment", "defaulta", "");
        assert_eq!(r.recorded("m1", &shifted, "gen:1"), (false, false));
        r.record("m1", &a, "gen:2");
        assert_eq!(r.recorded("m1", &a, "gen:2"), (true, true));
        r.record("m1", &b, "rv:5");
        r.forget("m1", &a);
        assert_eq!(r.recorded("m1", &a, "gen:2"), (false, false));
        assert_eq!(r.recorded("m1", &b, "rv:5"), (true, true));
        r.record("m2", &a, "gen:1");
        r.forget_cluster("m1");
        assert_eq!(r.recorded("m1", &b, "rv:5"), (false, false));
        assert_eq!(r.recorded("m2", &a, "gen:1"), (true, true));
    }
}
