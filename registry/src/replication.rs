//! Core v1 ReplicationController and PodTemplate (ValidateReplicationController and
//! ValidatePodTemplate in pkg/apis/core/validation).

use serde_json::{Value, json};

use super::apps::{nonnegative, validate_template_for_replica_set};
use super::field::{self, Path};
use super::json;
use super::meta;
use super::pod;
use apimachinery::status::Cause;

/// ValidateReplicationControllerSpec (the same on create and update).
pub(crate) fn validate_replication_controller(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let s = json::field(obj, "spec").unwrap_or(&empty);
    let path = Path::new("spec");
    nonnegative(s, "minReadySeconds", &path, errs);
    let selector = json::field(s, "selector").filter(|v| !json::is_empty(Some(v)));
    if selector.is_none() {
        errs.push(field::required(&path.child("selector"), ""));
    }
    nonnegative(s, "replicas", &path, errs);
    // A ReplicationController's selector is a plain label map: matchLabels of a selector.
    let sel = meta::selector_as_selector(Some(&json!({"matchLabels": selector})))
        .unwrap_or(meta::Selector::Reqs(Vec::new()));
    validate_template_for_replica_set(s, &sel, &path, "ReplicationController", errs);
}

/// ValidatePodTemplate / ValidatePodTemplateUpdate.
pub(crate) fn validate_pod_template(obj: &Value, errs: &mut Vec<Cause>) {
    let empty = Value::Null;
    let template = json::field(obj, "template").unwrap_or(&empty);
    errs.extend(pod::validate_pod_template_spec(
        template,
        &Path::new("template"),
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(errs: &[Cause]) -> Vec<&str> {
        errs.iter().map(|c| c.field.as_str()).collect()
    }

    #[test]
    fn replication_controllers_need_a_matching_selector_and_restart_always() {
        let rc = json!({"spec": {
            "replicas": -1,
            "selector": {"app": "web"},
            "template": {
                "metadata": {"labels": {"app": "other"}},
                "spec": {
                    "restartPolicy": "OnFailure",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "containers": [{"name": "c", "image": "nginx",
                        "imagePullPolicy": "IfNotPresent",
                        "terminationMessagePolicy": "File"}],
                },
            },
        }});
        let mut errs = Vec::new();
        validate_replication_controller(&rc, &mut errs);
        assert_eq!(
            fields(&errs),
            [
                "spec.replicas",
                "spec.template.metadata.labels",
                "spec.template.spec.restartPolicy"
            ],
            "{errs:?}"
        );
        errs.clear();
        validate_replication_controller(&json!({"spec": {}}), &mut errs);
        assert_eq!(fields(&errs), ["spec.selector", "spec.template"]);
    }
}
