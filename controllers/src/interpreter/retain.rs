//! Fields a member cluster owns and that updates from Karmada must keep (`retain.go`,
//! `lifted/retain.go`, and the object watcher's `retainClusterFields`).

use std::collections::BTreeSet;

use karmada_api::well_known::{annotations, labels};
use serde_json::{Map, Value};

use super::{InterpreterError, NativeKind, get, nested_int, remove, set, str_at};

/// Copies into `desired` what the member cluster manages in `observed` (Karmada `Retain`), for
/// kinds with a rule; other kinds are returned unchanged. The generic metadata retention of the
/// object watcher is [`retain_cluster_fields`].
pub fn retain(desired: &Value, observed: &Value) -> Result<Value, InterpreterError> {
    let mut out = desired.clone();
    match NativeKind::of_object(desired) {
        Some(NativeKind::Deployment) => retain_workload_replicas(&mut out, observed)?,
        Some(NativeKind::Pod) => retain_pod_fields(&mut out, observed),
        Some(NativeKind::Service) => retain_service_fields(&mut out, observed)?,
        Some(NativeKind::ServiceAccount) => {
            retain_secrets_field(&mut out, observed, "secrets");
            retain_secrets_field(&mut out, observed, "imagePullSecrets");
        }
        Some(NativeKind::PersistentVolumeClaim) => {
            let volume = str_at(observed, &["spec", "volumeName"]);
            if !volume.is_empty() {
                set(&mut out, &["spec", "volumeName"], Value::from(volume));
            }
        }
        Some(NativeKind::PersistentVolume) => {
            if let Some(claim) = get(observed, &["spec", "claimRef"]) {
                set(&mut out, &["spec", "claimRef"], claim.clone());
            }
        }
        Some(NativeKind::Job) => {
            for path in [
                &["spec", "selector", "matchLabels"][..],
                &["spec", "template", "metadata", "labels"][..],
            ] {
                if let Some(v) = get(observed, path).filter(|v| v.is_object()) {
                    set(&mut out, path, v.clone());
                }
            }
        }
        Some(NativeKind::Secret) => {
            if str_at(desired, &["type"]) == "kubernetes.io/service-account-token"
                && let Some(data) = get(observed, &["data"]).filter(|v| v.is_object())
            {
                set(&mut out, &["data"], data.clone());
            }
        }
        _ => {}
    }
    Ok(out)
}

/// With `resourcetemplate.karmada.io/retain-replicas=true` on the template, the member's replicas
/// win (e.g. under a member HPA) (`retainWorkloadReplicas`).
fn retain_workload_replicas(desired: &mut Value, observed: &Value) -> Result<(), InterpreterError> {
    if str_at(desired, &["metadata", "labels", labels::RETAIN_REPLICAS])
        != labels::RETAIN_REPLICAS_VALUE
    {
        return Ok(());
    }
    let replicas = nested_int(observed, &["spec", "replicas"])
        .ok()
        .flatten()
        .ok_or_else(|| InterpreterError::malformed(observed, "failed to get spec.replicas"))?;
    set(desired, &["spec", "replicas"], Value::from(replicas));
    Ok(())
}

/// Sets a field to the observed value, or removes it when the member has none.
fn copy_or_remove(desired: &mut Value, observed: &Value, path: &[&str]) {
    match get(observed, path) {
        Some(v) if !is_empty(v) => {
            set(desired, path, v.clone());
        }
        _ => remove(desired, path),
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Node binding, service account and volumes of a Pod are decided in the member
/// (`retainPodFields`).
fn retain_pod_fields(desired: &mut Value, observed: &Value) {
    for field in ["nodeName", "serviceAccountName", "volumes"] {
        copy_or_remove(desired, observed, &["spec", field]);
    }
    for list in ["containers", "initContainers"] {
        let Some(observed_containers) = get(observed, &["spec", list]).and_then(Value::as_array)
        else {
            continue;
        };
        let Some(Value::Array(desired_containers)) =
            desired.get_mut("spec").and_then(|s| s.get_mut(list))
        else {
            continue;
        };
        for oc in observed_containers {
            let name = str_at(oc, &["name"]);
            if let Some(dc) = desired_containers
                .iter_mut()
                .find(|dc| str_at(dc, &["name"]) == name)
            {
                copy_or_remove(dc, oc, &["volumeMounts"]);
            }
        }
    }
}

/// A Service's allocated clusterIP and healthCheckNodePort (`RetainServiceFields`).
fn retain_service_fields(desired: &mut Value, observed: &Value) -> Result<(), InterpreterError> {
    if let Some(port) = nested_int(observed, &["spec", "healthCheckNodePort"])?
        && port > 0
    {
        set(desired, &["spec", "healthCheckNodePort"], Value::from(port));
    }
    let cluster_ip = str_at(observed, &["spec", "clusterIP"]);
    if !cluster_ip.is_empty() {
        set(desired, &["spec", "clusterIP"], Value::from(cluster_ip));
    }
    retain_service_allocations(desired, observed);
    Ok(())
}

/// Fills in the clusterIPs and node ports the member allocated and the desired object leaves
/// unset. Karmada leaves this to kube-apiserver, whose Service update does the same
/// (`patchAllocatedValues`), so the stored result is identical; doing it here also keeps updates
/// valid against API servers that do not.
fn retain_service_allocations(desired: &mut Value, observed: &Value) {
    let service_type = str_at(desired, &["spec", "type"]).to_string();
    if service_type != "ExternalName"
        && get(desired, &["spec", "clusterIPs"])
            .and_then(Value::as_array)
            .is_none_or(|ips| ips.is_empty())
        && let Some(ips) = get(observed, &["spec", "clusterIPs"]).filter(|v| !is_empty(v))
    {
        set(desired, &["spec", "clusterIPs"], ips.clone());
    }
    if !matches!(service_type.as_str(), "NodePort" | "LoadBalancer") {
        return;
    }
    let node_port = |p: &Value| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0);
    let observed_ports: Vec<(String, i64)> = get(observed, &["spec", "ports"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| (str_at(p, &["name"]).to_string(), node_port(p)))
        .collect();
    let Some(Value::Array(ports)) = desired.get_mut("spec").and_then(|s| s.get_mut("ports")) else {
        return;
    };
    let used: BTreeSet<i64> = ports.iter().map(node_port).filter(|p| *p != 0).collect();
    for port in ports.iter_mut() {
        if node_port(port) != 0 {
            continue;
        }
        let name = str_at(port, &["name"]);
        if let Some((_, allocated)) = observed_ports.iter().find(|(n, _)| n == name)
            && *allocated != 0
            && !used.contains(allocated)
            && let Some(obj) = port.as_object_mut()
        {
            obj.insert("nodePort".into(), Value::from(*allocated));
        }
    }
}

/// Desired secret references first, then the member's others, by name (`retainSecretsField`).
fn retain_secrets_field(desired: &mut Value, observed: &Value, field: &str) {
    let mut merged: Vec<Value> = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for source in [&*desired, observed] {
        for item in source
            .get(field)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = str_at(item, &["name"]).to_string();
            if seen.insert(name) {
                merged.push(item.clone());
            }
        }
    }
    if merged.is_empty() {
        remove(desired, &[field]);
    } else {
        set(desired, &[field], Value::Array(merged));
    }
}

fn string_map(object: &Value, field: &str) -> Map<String, Value> {
    get(object, &["metadata", field])
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Keeps the member's own labels or annotations, except those Karmada set before and the template
/// no longer has (`util.RetainLabels` / `util.RetainAnnotations`); the keys Karmada manages are
/// listed in the observed object's managed-labels / managed-annotations annotation.
fn retain_map(desired: &mut Value, observed: &Value, field: &str, managed_annotation: &str) {
    let mut merged = string_map(desired, field);
    let mut deleted: BTreeSet<&str> =
        str_at(observed, &["metadata", "annotations", managed_annotation])
            .split(',')
            .collect();
    for key in merged.keys() {
        deleted.remove(key.as_str());
    }
    for (key, value) in string_map(observed, field) {
        if deleted.contains(key.as_str()) || merged.contains_key(&key) {
            continue;
        }
        merged.insert(key, value);
    }
    if !merged.is_empty() {
        set(desired, &["metadata", field], Value::Object(merged));
    }
}

/// The object watcher's generic retention before an update (`retainClusterFields`): the member's
/// resourceVersion, finalizers and ownerReferences, and its own labels and annotations.
pub fn retain_cluster_fields(desired: &Value, observed: &Value) -> Value {
    let mut out = desired.clone();
    for field in ["resourceVersion", "finalizers", "ownerReferences"] {
        match get(observed, &["metadata", field]) {
            Some(v) if !is_empty(v) => {
                set(&mut out, &["metadata", field], v.clone());
            }
            _ => remove(&mut out, &["metadata", field]),
        }
    }
    retain_map(
        &mut out,
        observed,
        "annotations",
        annotations::MANAGED_ANNOTATIONS,
    );
    retain_map(&mut out, observed, "labels", annotations::MANAGED_LABELS);
    out
}
