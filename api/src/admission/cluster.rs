//! Admission of Cluster objects, as karmada-aggregated-apiserver's registry strategy does it
//! (pkg/registry/cluster/strategy.go, pkg/apis/cluster/mutation and validation). Cluster is a
//! typed API, not a CRD: there are no schema defaults or enum checks, only JSON types, then
//! Karmada's own validation (HTTP 422) and canonicalisation.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use super::{AdmissionError, Operation, decode, encode, normalize, schema_of, validate_schema};
use crate::cluster::v1alpha1::{Cluster, ClusterSpec, ResourceModel, ResourceModelRange};
use crate::field::FieldPath;
use crate::schema::{Checks, RESOURCE_ROOT_SKIP};
use crate::validation::cluster::{validate_cluster_spec, validate_sync_mode};

/// `math.MaxInt64` as a quantity: the open upper end of the last resource grade.
const MAX_QUANTITY: &str = "9223372036854775807";

pub(super) fn admit(
    op: Operation,
    obj: &mut Value,
    _old: Option<&Value>,
) -> Result<(), AdmissionError> {
    let schema = schema_of::<Cluster>()?;
    let Some(map) = obj.as_object_mut() else {
        return Err(AdmissionError::BadRequest(
            "Cluster in version \"v1alpha1\" cannot be handled as a Cluster: the object is not a JSON object"
                .to_owned(),
        ));
    };
    // A missing spec decodes as an empty one in Go; its syncMode is then reported missing.
    map.entry("spec")
        .or_insert_with(|| Value::Object(Default::default()));
    normalize(schema, obj, RESOURCE_ROOT_SKIP);
    let errors = validate_schema(schema, obj, Checks::TypesOnly, RESOURCE_ROOT_SKIP);
    if !errors.is_empty() {
        return Err(AdmissionError::Invalid(errors));
    }

    let spec_path = FieldPath::new("spec");
    let raw_mode = obj.pointer("/spec/syncMode").cloned();
    let mode_errors = validate_sync_mode(raw_mode.as_ref(), &spec_path.child("syncMode"));
    // An unknown mode cannot be decoded into the enum; decode with a placeholder (the errors
    // above already report it) and put the original back when nothing is validated.
    let mut decodable = obj.clone();
    if !mode_errors.is_empty()
        && let Some(spec) = decodable.get_mut("spec").and_then(Value::as_object_mut)
    {
        spec.insert("syncMode".into(), Value::String("Push".into()));
    }
    let mut cluster: Cluster = decode(&decodable)?;

    match op {
        Operation::Create => prepare_resource_models_for_create(&mut cluster.spec),
        Operation::Update => standardize_resource_models(&mut cluster.spec.resource_models),
        Operation::UpdateStatus => {}
    }
    if op != Operation::UpdateStatus {
        let mut errors = mode_errors.clone();
        errors.extend(validate_cluster_spec(&cluster.spec, &spec_path));
        if !errors.is_empty() {
            return Err(AdmissionError::Invalid(errors));
        }
    }
    canonicalize(&mut cluster.spec);

    let mut out = encode(&cluster)?;
    if !mode_errors.is_empty()
        && let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut)
    {
        match raw_mode {
            Some(mode) => spec.insert("syncMode".into(), mode),
            None => spec.remove("syncMode"),
        };
    }
    *obj = out;
    Ok(())
}

/// MutateCluster: NoExecute taints get a timeAdded; a lone deprecated zone moves to zones.
fn canonicalize(spec: &mut ClusterSpec) {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    for taint in &mut spec.taints {
        if taint.effect == "NoExecute" && taint.time_added.is_none() {
            taint.time_added = Some(now.clone());
        }
    }
    if !spec.zone.is_empty() && spec.zones.is_empty() {
        spec.zones.push(std::mem::take(&mut spec.zone));
    }
}

/// On create, a cluster without resource models gets the default grades; otherwise its models
/// are standardised (CustomizedClusterResourceModeling is on by default).
fn prepare_resource_models_for_create(spec: &mut ClusterSpec) {
    if spec.resource_models.is_empty() {
        spec.resource_models = default_resource_models();
    } else {
        standardize_resource_models(&mut spec.resource_models);
    }
}

/// Sorts models by grade, pins the first grade's minimums to 0 and the last grade's maximums
/// to MaxInt64 (StandardizeClusterResourceModels).
pub(crate) fn standardize_resource_models(models: &mut [ResourceModel]) {
    if models.is_empty() {
        return;
    }
    models.sort_by_key(|m| m.grade);
    for range in &mut models[0].ranges {
        range.min = Quantity("0".into());
    }
    if let Some(last) = models.last_mut() {
        for range in &mut last.ranges {
            range.max = Quantity(MAX_QUANTITY.into());
        }
    }
}

/// The nine default grades: cpu [0,1) [1,2) [2,4) ... [128,∞) cores and memory
/// [0,4) [4,16) [16,32) ... [1024,∞) GiB (SetDefaultClusterResourceModels).
pub fn default_resource_models() -> Vec<ResourceModel> {
    const CPU: [&str; 10] = [
        "0",
        "1",
        "2",
        "4",
        "8",
        "16",
        "32",
        "64",
        "128",
        MAX_QUANTITY,
    ];
    const MEMORY: [&str; 10] = [
        "0",
        "4Gi",
        "16Gi",
        "32Gi",
        "64Gi",
        "128Gi",
        "256Gi",
        "512Gi",
        "1Ti",
        MAX_QUANTITY,
    ];
    (0..9)
        .map(|grade| ResourceModel {
            grade: grade as u64,
            ranges: vec![
                ResourceModelRange {
                    name: "cpu".into(),
                    min: Quantity(CPU[grade].into()),
                    max: Quantity(CPU[grade + 1].into()),
                },
                ResourceModelRange {
                    name: "memory".into(),
                    min: Quantity(MEMORY[grade].into()),
                    max: Quantity(MEMORY[grade + 1].into()),
                },
            ],
        })
        .collect()
}
