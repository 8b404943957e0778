//! Replicas and per-replica requirements (`replica.go`, `revisereplica.go`,
//! `helper.GenerateReplicaRequirements`) and the Job completions the binding controller divides.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::work::v1alpha2::{NodeClaim, ReplicaRequirements, TargetCluster};
use serde_json::Value;

use super::quantity::{format_binary_si, format_decimal_si};
use super::{InterpreterError, NativeKind, get, nested_int, set, str_at};
use karmada_scheduler::resource::{Resource, is_huge_page};
use karmada_scheduler::spread_replicas_by_target_clusters;

/// The replica count and per-replica requirements of a workload (Karmada `GetReplicas`):
/// `spec.replicas` of Deployments, ReplicaSets and StatefulSets, `min(parallelism, completions)`
/// of Jobs, 1 for Pods; `(0, None)` for kinds without a rule.
pub fn get_replicas(
    object: &Value,
) -> Result<(i32, Option<ReplicaRequirements>), InterpreterError> {
    let (replicas, template_spec) = match NativeKind::of_object(object) {
        Some(NativeKind::Deployment | NativeKind::ReplicaSet | NativeKind::StatefulSet) => (
            nested_int(object, &["spec", "replicas"])?.unwrap_or(0),
            get(object, &["spec", "template", "spec"]),
        ),
        Some(NativeKind::Job) => {
            let parallelism = nested_int(object, &["spec", "parallelism"])?.unwrap_or(0);
            // Fixed-completion Jobs never run more pods at once than completions remain.
            let completions = nested_int(object, &["spec", "completions"])?.unwrap_or(parallelism);
            (
                parallelism.min(completions),
                get(object, &["spec", "template", "spec"]),
            )
        }
        Some(NativeKind::Pod) => (1, get(object, &["spec"])),
        _ => return Ok((0, None)),
    };
    let replicas = i32::try_from(replicas).map_err(|_| {
        InterpreterError::malformed(object, format!("replicas {replicas} out of range"))
    })?;
    let empty = Value::Object(Default::default());
    let requirements = generate_replica_requirements(template_spec.unwrap_or(&empty))
        .map_err(|e| InterpreterError::malformed(object, e))?;
    Ok((replicas, requirements))
}

fn decode<T: serde::de::DeserializeOwned>(
    value: Option<&Value>,
    what: &str,
) -> Result<Option<T>, String> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| format!("{what}: {e}")),
    }
}

/// What one replica of a pod spec needs (`helper.GenerateReplicaRequirements`): the node claim
/// from nodeSelector, required node affinity and tolerations, and the summed resource requests.
/// `None` when the pod asks for nothing. The namespace and priority class are left empty, as
/// they are only filled behind Karmada's (disabled) ResourceQuotaEstimate feature gate.
pub fn generate_replica_requirements(
    pod_spec: &Value,
) -> Result<Option<ReplicaRequirements>, String> {
    let node_selector: Option<BTreeMap<String, String>> =
        decode(pod_spec.get("nodeSelector"), "nodeSelector")?;
    let tolerations: Vec<Toleration> =
        decode(pod_spec.get("tolerations"), "tolerations")?.unwrap_or_default();
    let hard_node_affinity: Option<NodeSelector> = decode(
        get(
            pod_spec,
            &[
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
            ],
        ),
        "nodeAffinity",
    )?;
    let node_claim =
        if node_selector.is_none() && hard_node_affinity.is_none() && tolerations.is_empty() {
            None
        } else {
            Some(NodeClaim {
                hard_node_affinity,
                node_selector: node_selector.unwrap_or_default(),
                tolerations,
            })
        };
    let resource_request = pod_resource_request(pod_spec)?;
    if node_claim.is_none() && resource_request.is_empty() {
        return Ok(None);
    }
    Ok(Some(ReplicaRequirements {
        node_claim,
        resource_request,
        ..Default::default()
    }))
}

/// A container's requests, with limits standing in for missing requests.
fn container_requests(container: &Value) -> Result<BTreeMap<String, Quantity>, String> {
    let mut requests: BTreeMap<String, Quantity> = decode(
        get(container, &["resources", "requests"]),
        "resources.requests",
    )?
    .unwrap_or_default();
    let limits: BTreeMap<String, Quantity> =
        decode(get(container, &["resources", "limits"]), "resources.limits")?.unwrap_or_default();
    for (name, q) in limits {
        requests.entry(name).or_insert(q);
    }
    Ok(requests)
}

/// Sum of container requests, at least the largest init container request, plus overhead
/// (`Resource.AddPodTemplateRequest`), as a resource list of canonical quantities.
fn pod_resource_request(pod_spec: &Value) -> Result<BTreeMap<String, Quantity>, String> {
    let mut total = Resource::default();
    for c in pod_spec
        .get("containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        total.add(&container_requests(c)?);
    }
    for c in pod_spec
        .get("initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        total.set_max(&container_requests(c)?);
    }
    if let Some(overhead) =
        decode::<BTreeMap<String, Quantity>>(pod_spec.get("overhead"), "overhead")?
    {
        total.add(&overhead);
    }
    Ok(resource_list(&total))
}

/// `Resource.ResourceList`: positive amounts only, CPU in DecimalSI millis, memory and storage in
/// BinarySI, scalars in DecimalSI except huge pages.
fn resource_list(r: &Resource) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    if r.milli_cpu > 0 {
        out.insert("cpu".into(), Quantity(format_decimal_si(r.milli_cpu, -3)));
    }
    if r.memory > 0 {
        out.insert("memory".into(), Quantity(format_binary_si(r.memory)));
    }
    if r.ephemeral_storage > 0 {
        out.insert(
            "ephemeral-storage".into(),
            Quantity(format_binary_si(r.ephemeral_storage)),
        );
    }
    if r.allowed_pod_number > 0 {
        out.insert(
            "pods".into(),
            Quantity(format_decimal_si(r.allowed_pod_number, 0)),
        );
    }
    for (name, v) in &r.scalar {
        if *v > 0 {
            let text = if is_huge_page(name) {
                format_binary_si(*v)
            } else {
                format_decimal_si(*v, 0)
            };
            out.insert(name.clone(), Quantity(text));
        }
    }
    out
}

/// Sets an existing integer field under `spec` (`helper.ApplyReplica`): absent fields stay absent.
fn apply_replica(object: &mut Value, field: &str, replicas: i64) -> Result<(), InterpreterError> {
    if nested_int(object, &["spec", field])?.is_some() {
        set(object, &["spec", field], Value::from(replicas));
    }
    Ok(())
}

/// Sets the replicas a member cluster runs (Karmada `ReviseReplica`): `spec.replicas` of
/// Deployments, ReplicaSets and StatefulSets, `spec.parallelism` of Jobs, each only when present.
/// Other kinds are returned unchanged.
pub fn revise_replica(object: &Value, replicas: i64) -> Result<Value, InterpreterError> {
    let mut revised = object.clone();
    match NativeKind::of_object(object) {
        Some(NativeKind::Deployment | NativeKind::ReplicaSet | NativeKind::StatefulSet) => {
            apply_replica(&mut revised, "replicas", replicas)?;
        }
        Some(NativeKind::Job) => apply_replica(&mut revised, "parallelism", replicas)?,
        _ => {}
    }
    Ok(revised)
}

/// Divides a Job template's `spec.completions` over the target clusters, weighted by their
/// replicas (the binding controller's `divideReplicasByJobCompletions`); `None` when the Job has
/// no completions (work-queue Jobs). Karmada does this only for Divided placements of Jobs with
/// replicas.
pub fn divide_job_completions(
    job: &Value,
    targets: &[TargetCluster],
) -> Result<Option<Vec<TargetCluster>>, InterpreterError> {
    let Some(completions) = nested_int(job, &["spec", "completions"])? else {
        return Ok(None);
    };
    let completions = i32::try_from(completions).unwrap_or(i32::MAX);
    let uid = str_at(job, &["metadata", "uid"]);
    Ok(Some(spread_replicas_by_target_clusters(
        completions,
        targets,
        &[],
        uid,
    )))
}

/// Sets a member Job's share of completions, when the Job declares completions
/// (`applyJobCompletions`).
pub fn revise_job_completions(job: &Value, completions: i64) -> Result<Value, InterpreterError> {
    let mut revised = job.clone();
    apply_replica(&mut revised, "completions", completions)?;
    Ok(revised)
}
