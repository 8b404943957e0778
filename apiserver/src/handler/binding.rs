//! Binding a pod to a node: `POST .../pods/NAME/binding` and the older
//! `POST .../namespaces/NS/bindings` (kube's BindingREST and LegacyBindingREST in
//! pkg/registry/core/pod/storage). Nothing is stored of the Binding itself: the pod gets
//! `spec.nodeName`, the Binding's annotations and the PodScheduled condition in one
//! storage-level write, as kube-scheduler's binding does.

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;
use serde_json::{Map, Value, json};

use crate::error::{ApiError, Cause};
use crate::handler::{Ctx, json_response, read_body, request_media};
use crate::options::{OptionsKind, WriteOptions};
use crate::registry::Registry;

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// ValidatePodBinding. kube returns these as a plain error (a 500); they are the caller's
/// mistake, so they answer 422 naming the field.
fn validate(binding: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = str_at(binding, "/target/kind");
    if !kind.is_empty() && kind != "Node" {
        causes.push(Cause {
            reason: "FieldValueNotSupported".into(),
            message: format!(
                "Unsupported value: {}: supported values: \"Node\", \"<empty>\"",
                crate::auth::rbac::rule::go_quote(kind)
            ),
            field: "target.kind".into(),
        });
    }
    if str_at(binding, "/target/name").is_empty() {
        causes.push(Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value".into(),
            field: "target.name".into(),
        });
    }
    causes
}

/// `POST .../pods/NAME/binding` (`from_url` = NAME) or `POST .../bindings` (`None`: the pod is
/// the Binding's own name).
pub async fn create(ctx: &Ctx, body: Body, from_url: Option<&str>) -> Result<Response, ApiError> {
    let opts = WriteOptions::parse(&ctx.query, OptionsKind::Create)?;
    let bytes = read_body(ctx, body).await?;
    let binding = crate::body::decode(&request_media(ctx), &bytes, "Binding", "v1")?.value;
    if !binding.is_object() {
        return Err(ApiError::bad_request(
            "Binding in version \"v1\" cannot be handled as a Binding: the body is not an object",
        ));
    }
    match binding.get("kind").and_then(Value::as_str) {
        None | Some("" | "Binding") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "not a Binding object: the kind in the data is {other}"
            )));
        }
    }
    let name = str_at(&binding, "/metadata/name");
    if let Some(url_name) = from_url
        && url_name != name
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let body_ns = str_at(&binding, "/metadata/namespace");
    if !body_ns.is_empty() && body_ns != ctx.ns {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if name.is_empty() {
        return Err(ApiError::invalid(
            "",
            "Binding",
            "",
            vec![Cause {
                reason: "FieldValueRequired".into(),
                message: "Required value: name or generateName is required".into(),
                field: "metadata.name".into(),
            }],
        ));
    }
    let causes = validate(&binding);
    if !causes.is_empty() {
        return Err(ApiError::invalid("", "Binding", name, causes));
    }
    let pods = ctx
        .chain
        .state
        .catalog
        .snapshot()
        .get("", "v1", "pods")
        .cloned()
        .ok_or_else(|| ApiError::unknown_resource("", "v1", "pods"))?;
    let node = str_at(&binding, "/target/name").to_string();
    let uid = str_at(&binding, "/metadata/uid").to_string();
    let rv = str_at(&binding, "/metadata/resourceVersion").to_string();
    let annotations = binding
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let conflict = |why: String| ApiError::conflict("", "pods/binding", name, &why);
    Registry::new(&ctx.chain.state, pods)
        .storage_update(&ctx.ns, name, opts.dry_run, |pod| {
            if pod.pointer("/metadata/deletionTimestamp").is_some() {
                return Err(conflict(format!(
                    "pod {name} is being deleted, cannot be assigned to a host"
                )));
            }
            let pod_uid = str_at(pod, "/metadata/uid");
            if !uid.is_empty() && uid != pod_uid {
                return Err(conflict(format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {pod_uid}"
                )));
            }
            let pod_rv = str_at(pod, "/metadata/resourceVersion");
            if !rv.is_empty() && rv != pod_rv {
                return Err(conflict(format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {pod_rv}"
                )));
            }
            let assigned = str_at(pod, "/spec/nodeName");
            if !assigned.is_empty() {
                return Err(conflict(format!(
                    "pod {name} is already assigned to node {}",
                    crate::auth::rbac::rule::go_quote(assigned)
                )));
            }
            if pod
                .pointer("/spec/schedulingGates")
                .and_then(Value::as_array)
                .is_some_and(|g| !g.is_empty())
            {
                return Err(conflict(format!(
                    "pod {name} has non-empty .spec.schedulingGates"
                )));
            }
            let mut pod = pod.clone();
            assign(&mut pod, &node, &annotations);
            Ok(pod)
        })
        .await?;
    let status = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    });
    Ok(json_response(StatusCode::CREATED, &status))
}

/// Sets the node, merges the annotations and marks the pod scheduled.
fn assign(pod: &mut Value, node: &str, annotations: &Map<String, Value>) {
    if let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("nodeName".into(), json!(node));
    }
    if !annotations.is_empty()
        && let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut)
    {
        let target = meta
            .entry("annotations")
            .or_insert_with(|| json!({}))
            .as_object_mut();
        if let Some(target) = target {
            target.extend(annotations.clone());
        }
    }
    set_condition(pod, json!({"type": "PodScheduled", "status": "True"}));
}

/// podutil's UpdatePodCondition: the condition replaces the one of its type (or is added);
/// its transition time moves only when its status changes.
pub(crate) fn set_condition(pod: &mut Value, condition: Value) {
    let Some(obj) = pod.as_object_mut() else {
        return;
    };
    let status = obj.entry("status").or_insert_with(|| json!({}));
    let Some(status) = status.as_object_mut() else {
        return;
    };
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(conditions) = conditions.as_array_mut() else {
        return;
    };
    let mut condition = condition;
    condition["lastProbeTime"] = Value::Null;
    condition["lastTransitionTime"] = json!(apimachinery::meta::now_rfc3339());
    match conditions
        .iter_mut()
        .find(|c| c.get("type") == condition.get("type"))
    {
        Some(old) => {
            if old.get("status") == condition.get("status") {
                condition["lastTransitionTime"] = old
                    .get("lastTransitionTime")
                    .cloned()
                    .unwrap_or(Value::Null);
            }
            *old = condition;
        }
        None => conditions.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binding_validation_is_kubes() {
        let ok = json!({"target": {"kind": "Node", "name": "n1"}});
        assert!(validate(&ok).is_empty());
        let bad = json!({"target": {"kind": "Pod"}});
        let causes = validate(&bad);
        assert_eq!(causes.len(), 2);
        assert_eq!(causes[0].field, "target.kind");
        assert_eq!(
            causes[0].message,
            "Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\""
        );
        assert_eq!(causes[1].field, "target.name");
    }

    #[test]
    fn assignment_sets_node_annotations_and_the_scheduled_condition() {
        let mut pod = json!({
            "metadata": {"name": "p", "annotations": {"a": "1"}},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
            ]},
        });
        let ann = json!({"b": "2"}).as_object().cloned().unwrap();
        assign(&mut pod, "n1", &ann);
        assert_eq!(pod["spec"]["nodeName"], "n1");
        assert_eq!(pod["metadata"]["annotations"], json!({"a": "1", "b": "2"}));
        let c = &pod["status"]["conditions"][0];
        assert_eq!(c["status"], "True");
        assert!(c.get("reason").is_none());
        assert!(c["lastTransitionTime"].is_string());
    }
}
