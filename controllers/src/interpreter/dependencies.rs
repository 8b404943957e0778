//! Objects a workload needs in every cluster it runs in (`dependencies.go`,
//! `helper.GetDependenciesFromPodTemplate`, `lifted.VisitPodSecretNames` / `VisitPodConfigmapNames`).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde_json::Value;

use super::{DependentObjectReference, InterpreterError, NativeKind, get, str_at};

/// Prefix of the Service derived from a ServiceImport (`names.GenerateDerivedServiceName`).
const DERIVED_SERVICE_PREFIX: &str = "derived-";

/// The ConfigMaps, Secrets, ServiceAccounts and PersistentVolumeClaims a workload's pod template
/// references, an Ingress's TLS Secrets, or a ServiceImport's derived Service and EndpointSlices
/// (Karmada `GetDependencies`). Kinds without a rule have none. Within a kind, names are sorted.
pub fn get_dependencies(object: &Value) -> Result<Vec<DependentObjectReference>, InterpreterError> {
    let namespace = str_at(object, &["metadata", "namespace"]);
    let deps = match NativeKind::of_object(object) {
        Some(
            NativeKind::Deployment
            | NativeKind::ReplicaSet
            | NativeKind::Job
            | NativeKind::DaemonSet,
        ) => pod_dependencies(get(object, &["spec", "template", "spec"]), namespace),
        Some(NativeKind::CronJob) => pod_dependencies(
            get(object, &["spec", "jobTemplate", "spec", "template", "spec"]),
            namespace,
        ),
        Some(NativeKind::Pod) => pod_dependencies(object.get("spec"), namespace),
        Some(NativeKind::StatefulSet) => {
            // PVCs named after volumeClaimTemplates are created by the StatefulSet in the member.
            let claim_templates: BTreeSet<&str> = get(object, &["spec", "volumeClaimTemplates"])
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|t| str_at(t, &["metadata", "name"]))
                .collect();
            pod_dependencies(get(object, &["spec", "template", "spec"]), namespace)
                .into_iter()
                .filter(|d| {
                    !(d.kind == "PersistentVolumeClaim"
                        && claim_templates.contains(d.name.as_str()))
                })
                .collect()
        }
        Some(NativeKind::Ingress) => get(object, &["spec", "tls"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|tls| reference("Secret", namespace, str_at(tls, &["secretName"])))
            .collect(),
        Some(NativeKind::ServiceImport) => {
            let derived = format!(
                "{DERIVED_SERVICE_PREFIX}{}",
                str_at(object, &["metadata", "name"])
            );
            vec![
                reference("Service", namespace, &derived),
                DependentObjectReference {
                    api_version: "discovery.k8s.io/v1".into(),
                    kind: "EndpointSlice".into(),
                    namespace: namespace.into(),
                    name: String::new(),
                    label_selector: Some(LabelSelector {
                        match_labels: Some(BTreeMap::from([(
                            "kubernetes.io/service-name".to_string(),
                            derived,
                        )])),
                        ..Default::default()
                    }),
                },
            ]
        }
        _ => Vec::new(),
    };
    // VerifyDependencies: every dependency needs a name or a selector.
    if let Some(bad) = deps
        .iter()
        .find(|d| d.name.is_empty() && d.label_selector.is_none())
    {
        return Err(InterpreterError::malformed(
            object,
            format!(
                "dependency {} can not leave name and labelSelector all empty",
                bad.kind
            ),
        ));
    }
    Ok(deps)
}

fn reference(kind: &str, namespace: &str, name: &str) -> DependentObjectReference {
    DependentObjectReference {
        api_version: "v1".into(),
        kind: kind.into(),
        namespace: namespace.into(),
        name: name.into(),
        label_selector: None,
    }
}

/// Every container of a pod spec: init, regular and ephemeral (`VisitContainers`).
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |field| {
            spec.get(field)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
}

/// The name at a path, if non-empty.
fn name_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    Some(str_at(v, path)).filter(|s| !s.is_empty())
}

/// The ConfigMaps, Secrets, ServiceAccount and PersistentVolumeClaims a pod spec in
/// `namespace` references (`helper.GetDependenciesFromPodTemplate`).
pub(crate) fn pod_dependencies(
    spec: Option<&Value>,
    namespace: &str,
) -> Vec<DependentObjectReference> {
    let Some(spec) = spec else {
        return Vec::new();
    };
    let mut config_maps = BTreeSet::new();
    let mut secrets = BTreeSet::new();
    let mut claims = BTreeSet::new();

    for r in spec
        .get("imagePullSecrets")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        secrets.extend(name_at(r, &["name"]));
    }
    for c in containers(spec) {
        for from in c
            .get("envFrom")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            config_maps.extend(name_at(from, &["configMapRef", "name"]));
            secrets.extend(name_at(from, &["secretRef", "name"]));
        }
        for env in c.get("env").and_then(Value::as_array).into_iter().flatten() {
            config_maps.extend(name_at(env, &["valueFrom", "configMapKeyRef", "name"]));
            secrets.extend(name_at(env, &["valueFrom", "secretKeyRef", "name"]));
        }
    }
    for volume in spec
        .get("volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        secrets.extend(name_at(volume, &["secret", "secretName"]));
        secrets.extend(name_at(volume, &["azureFile", "secretName"]));
        for source in [
            "cephfs",
            "cinder",
            "flexVolume",
            "rbd",
            "scaleIO",
            "iscsi",
            "storageos",
        ] {
            secrets.extend(name_at(volume, &[source, "secretRef", "name"]));
        }
        secrets.extend(name_at(volume, &["csi", "nodePublishSecretRef", "name"]));
        config_maps.extend(name_at(volume, &["configMap", "name"]));
        for source in get(volume, &["projected", "sources"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            secrets.extend(name_at(source, &["secret", "name"]));
            config_maps.extend(name_at(source, &["configMap", "name"]));
        }
        claims.extend(name_at(volume, &["persistentVolumeClaim", "claimName"]));
    }
    let service_account = str_at(spec, &["serviceAccountName"]);

    let mut deps = Vec::new();
    deps.extend(
        config_maps
            .into_iter()
            .map(|n| reference("ConfigMap", namespace, n)),
    );
    deps.extend(
        secrets
            .into_iter()
            .map(|n| reference("Secret", namespace, n)),
    );
    if !service_account.is_empty() && service_account != "default" {
        deps.push(reference("ServiceAccount", namespace, service_account));
    }
    deps.extend(
        claims
            .into_iter()
            .map(|n| reference("PersistentVolumeClaim", namespace, n)),
    );
    deps
}
