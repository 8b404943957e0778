//! What a member object's status contributes to its Work (`reflectstatus.go`) and whether the
//! member object is healthy (`healthy.go`, and the work-status controller's `interpretHealth`).

use karmada_api::well_known::annotations;
use karmada_api::work::v1alpha1::ResourceHealth;
use serde_json::{Map, Value};

use super::{InterpreterError, NativeKind, Operation, get, hook_enabled, int_at, str_at};

/// Adds an integer field, leaving it out when zero (Go `omitempty`).
fn put_int(out: &mut Map<String, Value>, key: &str, v: i64) {
    if v != 0 {
        out.insert(key.into(), Value::from(v));
    }
}

/// Adds an integer field even when zero (a Go field without `omitempty`).
fn put_int_always(out: &mut Map<String, Value>, key: &str, v: i64) {
    out.insert(key.into(), Value::from(v));
}

/// The member generation and the template generation it was built from
/// (`FederatedGeneration`): `generation` and `resourceTemplateGeneration`.
fn federated_generation(object: &Value, out: &mut Map<String, Value>) {
    put_int(
        out,
        "generation",
        int_at(object, &["metadata", "generation"]),
    );
    let template_generation = str_at(
        object,
        &[
            "metadata",
            "annotations",
            annotations::RESOURCE_TEMPLATE_GENERATION,
        ],
    )
    .parse::<i64>()
    .unwrap_or(0);
    put_int(out, "resourceTemplateGeneration", template_generation);
}

fn status_of(object: &Value) -> Result<Option<&Map<String, Value>>, InterpreterError> {
    match object.get("status") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => Ok(Some(m)),
        Some(_) => Err(InterpreterError::malformed(
            object,
            ".status accessor error: not an object",
        )),
    }
}

fn copy_ints(status: &Map<String, Value>, out: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        put_int(
            out,
            key,
            status.get(*key).and_then(Value::as_i64).unwrap_or(0),
        );
    }
}

/// The status Karmada records in `Work.status.manifestStatuses[].status` for a member object
/// (Karmada `ReflectStatus`); `None` when there is nothing to report. Kinds without a rule
/// reflect their whole status.
pub fn reflect_status(object: &Value) -> Result<Option<Value>, InterpreterError> {
    let kind = NativeKind::of_object(object);
    if kind == Some(NativeKind::Service) {
        // Only load balancers have a status worth reporting.
        if str_at(object, &["spec", "type"]) != "LoadBalancer" {
            return Ok(None);
        }
    }
    let Some(status) = status_of(object)? else {
        return Ok(None);
    };
    let mut out = Map::new();
    match kind {
        Some(NativeKind::Deployment) => {
            federated_generation(object, &mut out);
            copy_ints(
                status,
                &mut out,
                &[
                    "observedGeneration",
                    "replicas",
                    "updatedReplicas",
                    "readyReplicas",
                    "availableReplicas",
                    "unavailableReplicas",
                ],
            );
            // An empty status means the member has not reported yet.
            if out.is_empty() {
                return Ok(None);
            }
        }
        Some(NativeKind::ReplicaSet) => {
            federated_generation(object, &mut out);
            copy_ints(
                status,
                &mut out,
                &[
                    "observedGeneration",
                    "replicas",
                    "readyReplicas",
                    "availableReplicas",
                ],
            );
            if out.is_empty() {
                return Ok(None);
            }
        }
        Some(NativeKind::DaemonSet) => {
            federated_generation(object, &mut out);
            for key in [
                "currentNumberScheduled",
                "numberMisscheduled",
                "desiredNumberScheduled",
                "numberReady",
            ] {
                put_int_always(
                    &mut out,
                    key,
                    status.get(key).and_then(Value::as_i64).unwrap_or(0),
                );
            }
            copy_ints(
                status,
                &mut out,
                &[
                    "observedGeneration",
                    "updatedNumberScheduled",
                    "numberAvailable",
                    "numberUnavailable",
                ],
            );
        }
        Some(NativeKind::StatefulSet) => {
            // Upstream leaves observedGeneration out of the reflected StatefulSet status.
            federated_generation(object, &mut out);
            for key in ["replicas", "availableReplicas"] {
                put_int_always(
                    &mut out,
                    key,
                    status.get(key).and_then(Value::as_i64).unwrap_or(0),
                );
            }
            copy_ints(
                status,
                &mut out,
                &["readyReplicas", "currentReplicas", "updatedReplicas"],
            );
        }
        Some(NativeKind::Service) => {
            let mut lb = Map::new();
            if let Some(ingress) = get(&Value::Object(status.clone()), &["loadBalancer", "ingress"])
                .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()))
            {
                lb.insert("ingress".into(), ingress.clone());
            }
            out.insert("loadBalancer".into(), Value::Object(lb));
        }
        Some(NativeKind::Job) => {
            for key in ["conditions", "startTime", "completionTime"] {
                if let Some(v) = status.get(key).filter(|v| !v.is_null()) {
                    if v.as_array().is_some_and(|a| a.is_empty()) {
                        continue;
                    }
                    out.insert(key.into(), v.clone());
                }
            }
            copy_ints(status, &mut out, &["active", "succeeded", "failed"]);
        }
        Some(NativeKind::PodDisruptionBudget) => {
            for key in [
                "disruptionsAllowed",
                "currentHealthy",
                "desiredHealthy",
                "expectedPods",
            ] {
                put_int_always(
                    &mut out,
                    key,
                    status.get(key).and_then(Value::as_i64).unwrap_or(0),
                );
            }
            if let Some(pods) = status
                .get("disruptedPods")
                .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
            {
                out.insert("disruptedPods".into(), pods.clone());
            }
        }
        Some(NativeKind::HorizontalPodAutoscaler) => {
            copy_ints(status, &mut out, &["currentReplicas"]);
            put_int_always(
                &mut out,
                "desiredReplicas",
                status
                    .get("desiredReplicas")
                    .and_then(Value::as_i64)
                    .unwrap_or(0),
            );
        }
        _ => return Ok(Some(Value::Object(status.clone()))),
    }
    Ok(Some(Value::Object(out)))
}

/// Health of a member object as the work-status controller records it: Healthy for kinds without
/// a health rule, Unknown when the object cannot be read, else the rule's verdict.
pub fn interpret_health(object: &Value) -> ResourceHealth {
    let Some(kind) = NativeKind::of_object(object) else {
        return ResourceHealth::Healthy;
    };
    if !hook_enabled(
        str_at(object, &["apiVersion"]),
        str_at(object, &["kind"]),
        Operation::InterpretHealth,
    ) {
        return ResourceHealth::Healthy;
    }
    match is_healthy(kind, object) {
        Some(true) => ResourceHealth::Healthy,
        Some(false) => ResourceHealth::Unhealthy,
        None => ResourceHealth::Unknown,
    }
}

/// An integer status field as a typed Go field reads it: absent is 0, a non-integer is an error.
fn typed_int(object: &Value, path: &[&str]) -> Option<i64> {
    match get(object, path) {
        None | Some(Value::Null) => Some(0),
        Some(v) => v.as_i64(),
    }
}

/// The native health rules (`healthy.go`); `None` when the object is malformed.
fn is_healthy(kind: NativeKind, o: &Value) -> Option<bool> {
    let generation = typed_int(o, &["metadata", "generation"])?;
    let observed = typed_int(o, &["status", "observedGeneration"])?;
    let spec_replicas = match get(o, &["spec", "replicas"]) {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64()?),
    };
    let status = |key: &str| typed_int(o, &["status", key]);
    let lb_ingress_ready = || {
        get(o, &["status", "loadBalancer", "ingress"])
            .and_then(Value::as_array)
            .is_some_and(|list| {
                list.iter()
                    .any(|i| !str_at(i, &["hostname"]).is_empty() || !str_at(i, &["ip"]).is_empty())
            })
    };
    Some(match kind {
        NativeKind::Deployment | NativeKind::StatefulSet => {
            let updated = status("updatedReplicas")?;
            let available = status("availableReplicas")?;
            observed == generation
                && spec_replicas.is_none_or(|r| updated >= r)
                && available >= updated
        }
        NativeKind::ReplicaSet => {
            let available = status("availableReplicas")?;
            observed == generation && spec_replicas.is_none_or(|r| available >= r)
        }
        NativeKind::DaemonSet => {
            let updated = status("updatedNumberScheduled")?;
            let desired = status("desiredNumberScheduled")?;
            let available = status("numberAvailable")?;
            observed == generation && updated >= desired && available >= updated
        }
        NativeKind::Service => str_at(o, &["spec", "type"]) != "LoadBalancer" || lb_ingress_ready(),
        NativeKind::Ingress => lb_ingress_ready(),
        NativeKind::PersistentVolumeClaim => str_at(o, &["status", "phase"]) == "Bound",
        NativeKind::Pod => {
            let phase = str_at(o, &["status", "phase"]);
            let ready = get(o, &["status", "conditions"])
                .and_then(Value::as_array)
                .and_then(|cs| cs.iter().find(|c| str_at(c, &["type"]) == "Ready"))
                .is_some_and(|c| str_at(c, &["status"]) == "True");
            phase == "Succeeded" || (phase == "Running" && ready)
        }
        NativeKind::PodDisruptionBudget => status("currentHealthy")? >= status("desiredHealthy")?,
        _ => true,
    })
}
