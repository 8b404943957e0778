//! Strips the fields of a resource template that the control plane's API server filled in and
//! that must not (or cannot) be sent to a member cluster (Karmada's RemoveIrrelevantFields).

use serde_json::{Map, Value};

/// Removes server-populated metadata, status and kind-specific member-local fields from an
/// object about to be put in a Work. When `remove_job_ttl` is set, a Job's
/// `spec.ttlSecondsAfterFinished` goes too, so the member's TTL controller cannot delete a Job
/// Karmada would then recreate.
pub fn remove_irrelevant_fields(object: &mut Value, remove_job_ttl: bool) {
    let Some(obj) = object.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        for field in [
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
            "managedFields",
            "resourceVersion",
            "selfLink",
            "uid",
            "ownerReferences",
            "finalizers",
        ] {
            meta.remove(field);
        }
    }
    obj.remove("status");

    match obj.get("kind").and_then(Value::as_str).unwrap_or("") {
        "Deployment" => {
            for key in [
                "deployment.kubernetes.io/revision",
                "deployment.kubernetes.io/revision-history",
            ] {
                remove_path(obj, &["metadata", "annotations", key]);
            }
        }
        "Job" => {
            let manual = obj
                .get("spec")
                .and_then(|s| s.get("manualSelector"))
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !manual {
                remove_generated_job_selector(obj);
            }
        }
        "Secret"
            if obj.get("type").and_then(Value::as_str)
                == Some("kubernetes.io/service-account-token") =>
        {
            remove_path(
                obj,
                &[
                    "metadata",
                    "annotations",
                    "kubernetes.io/service-account.uid",
                ],
            );
            obj.insert("data".into(), Value::Null);
        }
        "ServiceAccount" => {
            let prefix = format!(
                "{}-token-",
                obj.get("metadata")
                    .and_then(|m| m.get("name"))
                    .and_then(Value::as_str)
                    .unwrap_or("")
            );
            if let Some(Value::Array(secrets)) = obj.get_mut("secrets") {
                secrets.retain(|s| {
                    !s.get("name")
                        .and_then(Value::as_str)
                        .is_some_and(|n| n.starts_with(&prefix))
                });
            }
        }
        "Service" => {
            let cluster_ip = obj
                .get("spec")
                .and_then(|s| s.get("clusterIP"))
                .and_then(Value::as_str);
            // A headless service ("None") keeps its clusterIP; any other is member-local.
            if cluster_ip.is_some_and(|ip| ip != "None") {
                remove_path(obj, &["spec", "clusterIP"]);
                remove_path(obj, &["spec", "clusterIPs"]);
            }
        }
        "PersistentVolumeClaim" => {
            let node = [
                "metadata",
                "annotations",
                "volume.kubernetes.io/selected-node",
            ];
            if get_path(obj, &node)
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty())
            {
                remove_path(obj, &node);
            }
        }
        _ => {}
    }

    if remove_job_ttl && obj.get("kind").and_then(Value::as_str) == Some("Job") {
        remove_path(obj, &["spec", "ttlSecondsAfterFinished"]);
    }
}

/// Removes the selector labels the Job controller generates, which differ per cluster.
fn remove_generated_job_selector(obj: &mut Map<String, Value>) {
    for (path, keys) in [
        (
            &["spec", "selector", "matchLabels"][..],
            &["controller-uid", "batch.kubernetes.io/controller-uid"][..],
        ),
        (
            &["spec", "template", "metadata", "labels"][..],
            &[
                "controller-uid",
                "job-name",
                "batch.kubernetes.io/controller-uid",
                "batch.kubernetes.io/job-name",
            ][..],
        ),
    ] {
        if let Some(Value::Object(labels)) = get_path_mut(obj, path) {
            for key in keys {
                labels.remove(*key);
            }
        }
    }
}

fn get_path<'a>(obj: &'a Map<String, Value>, path: &[&str]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(obj.get(*first)?, |v, k| v.get(*k))
}

fn get_path_mut<'a>(obj: &'a mut Map<String, Value>, path: &[&str]) -> Option<&'a mut Value> {
    let (first, rest) = path.split_first()?;
    rest.iter()
        .try_fold(obj.get_mut(*first)?, |v, k| v.get_mut(*k))
}

fn remove_path(obj: &mut Map<String, Value>, path: &[&str]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let parent = if parents.is_empty() {
        Some(obj)
    } else {
        get_path_mut(obj, parents).and_then(Value::as_object_mut)
    };
    if let Some(parent) = parent {
        parent.remove(*last);
    }
}
