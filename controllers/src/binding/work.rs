//! Writing a Work (ctrlutil.CreateOrUpdateWork): the manifest is marked as Karmada marks it,
//! pruned and stamped exactly as the Work mutating webhook would, so an unchanged Work is
//! recognised as unchanged and not written again.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::prune::remove_irrelevant_fields;
use karmada_api::well_known::{annotations, labels};
use karmada_api::work::v1alpha1::{Manifest, Work, WorkSpec, WorkloadTemplate};
use kube::Api;
use serde_json::{Map, Value};

use crate::runtime::{
    CachedWork, Context, Error, Key, Result, is_already_exists, is_conflict, is_not_found, write,
};

fn meta_map<'a>(obj: &'a mut Value, field: &str) -> Option<&'a mut Map<String, Value>> {
    let meta = obj
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()?;
    let m = meta
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !m.is_object() {
        *m = Value::Object(Map::new());
    }
    m.as_object_mut()
}

/// Sets a label on an object.
pub fn set_label(obj: &mut Value, key: &str, value: &str) {
    if let Some(m) = meta_map(obj, "labels") {
        m.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

/// Sets an annotation on an object.
pub fn set_annotation(obj: &mut Value, key: &str, value: &str) {
    if let Some(m) = meta_map(obj, "annotations") {
        m.insert(key.to_owned(), Value::String(value.to_owned()));
    }
}

fn string_keys(obj: &Value, field: &str) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// What the Work webhook does to each manifest (SetLabelsAndAnnotationsForWorkload): record the
/// managed annotation and label keys and stamp the Work's permanent id.
pub fn stamp_manifest(obj: &mut Value, work_id: Option<&str>) {
    let mut keys: Vec<String> = vec![
        annotations::MANAGED_ANNOTATIONS.to_owned(),
        annotations::MANAGED_LABELS.to_owned(),
    ];
    keys.extend(
        string_keys(obj, "annotations")
            .into_iter()
            .filter(|k| k != annotations::MANAGED_ANNOTATIONS && k != annotations::MANAGED_LABELS),
    );
    keys.sort();
    set_annotation(obj, annotations::MANAGED_ANNOTATIONS, &keys.join(","));
    if let Some(id) = work_id.filter(|i| !i.is_empty()) {
        set_label(obj, labels::WORK_PERMANENT_ID, id);
    }
    let mut lkeys = string_keys(obj, "labels");
    lkeys.sort();
    set_annotation(obj, annotations::MANAGED_LABELS, &lkeys.join(","));
}

/// The manifest of a Work for `resource`: marked as managed, pointed at the Work, pruned
/// (CreateOrUpdateWork before the write).
pub fn prepare_manifest(mut resource: Value, work: &ObjectMeta) -> Value {
    set_label(
        &mut resource,
        labels::MANAGED_BY_KARMADA,
        labels::MANAGED_BY_KARMADA_VALUE,
    );
    let uid = resource
        .get("metadata")
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    set_annotation(&mut resource, annotations::RESOURCE_TEMPLATE_UID, &uid);
    set_annotation(
        &mut resource,
        annotations::WORK_NAME,
        work.name.as_deref().unwrap_or(""),
    );
    set_annotation(
        &mut resource,
        annotations::WORK_NAMESPACE,
        work.namespace.as_deref().unwrap_or(""),
    );
    if let Some(cr) = work
        .annotations
        .as_ref()
        .and_then(|a| a.get(annotations::CONFLICT_RESOLUTION))
    {
        set_annotation(&mut resource, annotations::CONFLICT_RESOLUTION, cr);
    }
    remove_irrelevant_fields(&mut resource, true);
    resource
}

fn merge(
    existing: &Option<BTreeMap<String, String>>,
    new: &Option<BTreeMap<String, String>>,
) -> Option<BTreeMap<String, String>> {
    match existing {
        None => new.clone(),
        Some(e) => {
            let mut m = e.clone();
            for (k, v) in new.iter().flatten() {
                m.insert(k.clone(), v.clone());
            }
            Some(m)
        }
    }
}

/// The Work an existing one becomes after the controller's merge: labels and annotations
/// merged, finalizers added, spec replaced, the manifest stamped with the Work's id.
fn merged(
    existing: &ObjectMeta,
    desired: &ObjectMeta,
    manifest: &Value,
    suspend: Option<bool>,
    preserve: Option<bool>,
) -> Work {
    let mut meta = existing.clone();
    meta.labels = merge(&existing.labels, &desired.labels);
    meta.annotations = merge(&existing.annotations, &desired.annotations);
    let mut fins = existing.finalizers.clone().unwrap_or_default();
    for f in desired.finalizers.iter().flatten() {
        if !fins.contains(f) {
            fins.push(f.clone());
        }
    }
    meta.finalizers = (!fins.is_empty()).then_some(fins);
    if meta.owner_references.is_none() {
        meta.owner_references = desired.owner_references.clone();
    }
    let mut m = manifest.clone();
    let id = crate::runtime::label(&meta, labels::WORK_PERMANENT_ID).map(str::to_owned);
    stamp_manifest(&mut m, id.as_deref());
    Work {
        metadata: meta,
        spec: WorkSpec {
            workload: WorkloadTemplate {
                manifests: vec![Manifest(m)],
            },
            suspend_dispatching: suspend,
            preserve_resources_on_deletion: preserve,
        },
        status: Default::default(),
    }
}

fn unchanged(cached: &CachedWork, w: &Work) -> Result<bool> {
    if !cached.labels.same_as(&w.metadata.labels)
        || !cached.annotations.same_as(&w.metadata.annotations)
        || cached.metadata.finalizers != w.metadata.finalizers
        || cached.spec.suspend_dispatching != w.spec.suspend_dispatching
        || cached.spec.preserve_resources_on_deletion != w.spec.preserve_resources_on_deletion
        || cached.spec.workload.manifests.len() != w.spec.workload.manifests.len()
    {
        return Ok(false);
    }
    for (a, b) in cached
        .spec
        .workload
        .manifests
        .iter()
        .zip(&w.spec.workload.manifests)
    {
        if a.to_value()? != b.0 {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Creates or updates a Work; returns whether anything was written. `manifest` is the object
/// after [`prepare_manifest`]; `suspend` and `preserve` are the spec fields (unset when None).
pub async fn create_or_update(
    ctx: &Context,
    desired: &ObjectMeta,
    manifest: &Value,
    suspend: Option<bool>,
    preserve: Option<bool>,
) -> Result<bool> {
    let key = Key::of(desired);
    let api: Api<Work> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let mut cached = ctx.works.get(&key);
    let mut fetched: Option<Work> = None;
    for _ in 0..5 {
        let existing_meta = match (&fetched, &cached) {
            (Some(w), _) => Some(w.metadata.clone()),
            (None, Some(c)) => Some(c.full_metadata()),
            (None, None) => None,
        };
        match existing_meta {
            None => {
                let mut w = merged(&ObjectMeta::default(), desired, manifest, suspend, preserve);
                w.metadata.name = desired.name.clone();
                w.metadata.namespace = desired.namespace.clone();
                w.metadata.resource_version = None;
                match write::create(api.clone(), &w).await {
                    Ok(_) => return Ok(true),
                    Err(e) if is_already_exists(&e) => {
                        fetched = Some(api.get(&key.name).await?);
                        cached = None;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            Some(meta) => {
                if meta.deletion_timestamp.is_some() {
                    return Err(Error::msg(format!("work {key} is being deleted")));
                }
                let w = merged(&meta, desired, manifest, suspend, preserve);
                if fetched.is_none()
                    && let Some(c) = &cached
                    && unchanged(c, &w)?
                {
                    return Ok(false);
                }
                if let Some(f) = &fetched
                    && f.metadata.labels == w.metadata.labels
                    && f.metadata.annotations == w.metadata.annotations
                    && f.metadata.finalizers == w.metadata.finalizers
                    && f.spec == w.spec
                {
                    return Ok(false);
                }
                match write::replace(api.clone(), &key.name, &w).await {
                    Ok(_) => return Ok(true),
                    Err(e) if is_conflict(&e) => {
                        fetched = Some(api.get(&key.name).await?);
                        cached = None;
                    }
                    Err(e) if is_not_found(&e) => {
                        fetched = None;
                        cached = None;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }
    Err(Error::msg(format!("work {key}: too many conflicts")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stamp_records_managed_keys_like_the_webhook() {
        let mut o =
            json!({"metadata": {"labels": {"b": "1", "a": "2"}, "annotations": {"z": "x"}}});
        stamp_manifest(&mut o, Some("id-1"));
        assert_eq!(
            o["metadata"]["labels"]["work.karmada.io/permanent-id"],
            "id-1"
        );
        assert_eq!(
            o["metadata"]["annotations"]["resourcetemplate.karmada.io/managed-annotations"],
            "resourcetemplate.karmada.io/managed-annotations,resourcetemplate.karmada.io/managed-labels,z"
        );
        assert_eq!(
            o["metadata"]["annotations"]["resourcetemplate.karmada.io/managed-labels"],
            "a,b,work.karmada.io/permanent-id"
        );
    }

    #[test]
    fn prepared_manifest_points_at_its_work_and_is_pruned() {
        let meta = ObjectMeta {
            name: Some("w".into()),
            namespace: Some("karmada-es-m1".into()),
            annotations: Some(
                [(
                    annotations::CONFLICT_RESOLUTION.to_owned(),
                    "abort".to_owned(),
                )]
                .into(),
            ),
            ..Default::default()
        };
        let o = prepare_manifest(
            json!({"kind": "ConfigMap", "metadata": {"name": "c", "uid": "u1", "resourceVersion": "5"}, "status": {}}),
            &meta,
        );
        assert_eq!(o["metadata"]["labels"]["karmada.io/managed"], "true");
        assert_eq!(
            o["metadata"]["annotations"]["resourcetemplate.karmada.io/uid"],
            "u1"
        );
        assert_eq!(o["metadata"]["annotations"]["work.karmada.io/name"], "w");
        assert_eq!(
            o["metadata"]["annotations"]["work.karmada.io/namespace"],
            "karmada-es-m1"
        );
        assert_eq!(
            o["metadata"]["annotations"]["work.karmada.io/conflict-resolution"],
            "abort"
        );
        assert!(o["metadata"].get("uid").is_none());
        assert!(o["metadata"].get("resourceVersion").is_none());
        assert!(o.get("status").is_none());
    }
}
