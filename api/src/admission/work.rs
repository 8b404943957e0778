//! Karmada's mutating webhook for Works (pkg/webhook/work).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{AdmissionError, Operation, Webhooks, label, permanent_id, set_label};
use crate::prune::remove_irrelevant_fields;
use crate::well_known::{annotations, labels};
use crate::work::v1alpha1::Work;

const WEBHOOK: &str = "work.karmada.io";

impl Webhooks for Work {
    fn mutates(op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutate(&mut self, _op: Operation) -> Result<(), AdmissionError> {
        if label(&self.metadata, labels::WORK_PERMANENT_ID).is_empty() {
            set_label(
                &mut self.metadata,
                labels::WORK_PERMANENT_ID,
                permanent_id(),
            );
        }
        let work_id = label(&self.metadata, labels::WORK_PERMANENT_ID).to_owned();
        for manifest in &mut self.spec.workload.manifests {
            let has_kind = manifest
                .0
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|k| !k.is_empty());
            if !has_kind {
                return Err(AdmissionError::Denied {
                    webhook: WEBHOOK,
                    code: 500,
                    reason: "",
                    message: format!("Object 'Kind' is missing in '{}'", manifest.0),
                    errors: Vec::new(),
                });
            }
            remove_irrelevant_fields(&mut manifest.0, true);
            label_manifest(&mut manifest.0, &work_id);
        }
        Ok(())
    }
}

/// Records which labels and annotations came from Karmada's side and stamps the Work's id on
/// the manifest (SetLabelsAndAnnotationsForWorkload).
fn label_manifest(manifest: &mut Value, work_id: &str) {
    let Some(obj) = manifest.as_object_mut() else {
        return;
    };
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };

    let mut annotation_map = string_map(meta.get("annotations"));
    let mut keys: Vec<String> = vec![
        annotations::MANAGED_ANNOTATIONS.to_owned(),
        annotations::MANAGED_LABELS.to_owned(),
    ];
    keys.extend(
        annotation_map
            .keys()
            .filter(|k| *k != annotations::MANAGED_ANNOTATIONS && *k != annotations::MANAGED_LABELS)
            .cloned(),
    );
    keys.sort();
    annotation_map.insert(annotations::MANAGED_ANNOTATIONS.to_owned(), keys.join(","));

    let mut label_map = string_map(meta.get("labels"));
    if !work_id.is_empty() {
        label_map.insert(labels::WORK_PERMANENT_ID.to_owned(), work_id.to_owned());
        meta.insert("labels".into(), to_object(&label_map));
    }
    let label_keys: Vec<&str> = label_map.keys().map(String::as_str).collect();
    annotation_map.insert(annotations::MANAGED_LABELS.to_owned(), label_keys.join(","));
    meta.insert("annotations".into(), to_object(&annotation_map));
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

fn to_object(map: &BTreeMap<String, String>) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}
