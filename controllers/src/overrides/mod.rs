//! Override policies (Karmada `pkg/util/overridemanager`): per-cluster changes to a resource
//! template before it is put into the cluster's Work.

mod image;
pub(crate) mod json_patch;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use karmada_api::cluster::v1alpha1::Cluster;
use karmada_api::policy::v1alpha1::{
    ClusterOverridePolicy, CommandArgsOverrider, FieldOverrider, ImageOverrider,
    LabelAnnotationOverrider, OverridePolicy, OverrideSpec, OverriderOperator, Overriders,
};
use serde_json::Value;

use json_patch::{Node, Op, PatchOp, apply_to_value, go_json, pointer_tokens};
use karmada_scheduler::selector::{
    ImplicitPriority, cluster_matches, resource_match_selectors_priority,
};

/// A template with the overrides for one cluster applied.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The overridden object.
    pub object: Value,
    /// Value of the Work annotation `policy.karmada.io/applied-cluster-overrides`: the JSON list of
    /// `{policyName, overriders}` of the ClusterOverridePolicies applied, by name; `None` when
    /// none applied.
    pub applied_cluster_overrides: Option<String>,
    /// Value of the Work annotation `policy.karmada.io/applied-overrides`, likewise for
    /// OverridePolicies.
    pub applied_overrides: Option<String>,
}

/// An override that cannot be applied; the Work is then not updated for that cluster.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed to apply overrides of policy {policy}: {message}")]
pub struct OverrideError {
    /// The policy whose overriders failed (`namespace/name` for OverridePolicies).
    pub policy: String,
    /// What went wrong.
    pub message: String,
}

/// One matching rule of one policy, in application order.
struct PolicyOverriders<'a> {
    name: &'a str,
    namespace: &'a str,
    overriders: &'a Overriders,
}

/// Applies the ClusterOverridePolicies, then (for namespaced templates) the OverridePolicies of
/// the template's namespace, to a template for one cluster (`ApplyOverridePolicies`). Within each
/// set, policies apply from the least to the most specific selector match, then by name, so the
/// most specific one wins; only rules whose targetCluster matches the cluster apply. OverridePolicies
/// of other namespaces in `ops` are ignored.
pub fn apply_overrides(
    template: &Value,
    cluster: &Cluster,
    cops: &[ClusterOverridePolicy],
    ops: &[OverridePolicy],
) -> Result<Applied, OverrideError> {
    let mut object = template.clone();
    let cluster_policies: Vec<(&ObjectMeta, &OverrideSpec)> =
        cops.iter().map(|p| (&p.metadata, &p.spec)).collect();
    let applied_cluster_overrides = apply_set(&mut object, cluster, &cluster_policies)?;

    let namespace = object
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let applied_overrides = if namespace.is_empty() {
        None
    } else {
        let namespaced: Vec<(&ObjectMeta, &OverrideSpec)> = ops
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()))
            .map(|p| (&p.metadata, &p.spec))
            .collect();
        apply_set(&mut object, cluster, &namespaced)?
    };
    Ok(Applied {
        object,
        applied_cluster_overrides,
        applied_overrides,
    })
}

/// Applies one set of policies and returns the annotation value recording them.
fn apply_set(
    object: &mut Value,
    cluster: &Cluster,
    policies: &[(&ObjectMeta, &OverrideSpec)],
) -> Result<Option<String>, OverrideError> {
    let matching = matching_overriders(object, cluster, policies);
    if matching.is_empty() {
        return Ok(None);
    }
    for p in &matching {
        apply_overriders(object, p.overriders).map_err(|message| OverrideError {
            policy: if p.namespace.is_empty() {
                p.name.to_string()
            } else {
                format!("{}/{}", p.namespace, p.name)
            },
            message,
        })?;
        tracing::debug!(policy = p.name, "applied overrides");
    }
    applied_annotation(&matching)
        .map(Some)
        .map_err(|message| OverrideError {
            policy: String::new(),
            message,
        })
}

/// The rules that apply, ordered (`getOverridersFromOverridePolicies`).
fn matching_overriders<'a>(
    object: &Value,
    cluster: &Cluster,
    policies: &[(&'a ObjectMeta, &'a OverrideSpec)],
) -> Vec<PolicyOverriders<'a>> {
    let priority = |spec: &OverrideSpec| {
        if spec.resource_selectors.is_empty() {
            ImplicitPriority::MatchAll
        } else {
            resource_match_selectors_priority(object, &spec.resource_selectors)
        }
    };
    let mut selected: Vec<(ImplicitPriority, &str, &str, &OverrideSpec)> = policies
        .iter()
        .map(|(meta, spec)| {
            (
                priority(spec),
                meta.name.as_deref().unwrap_or(""),
                meta.namespace.as_deref().unwrap_or(""),
                *spec,
            )
        })
        .filter(|(p, ..)| *p != ImplicitPriority::MisMatch)
        .collect();
    selected.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));

    let mut out = Vec::new();
    for (_, name, namespace, spec) in selected {
        let applies = |target: &Option<_>| {
            target
                .as_ref()
                .is_none_or(|affinity| cluster_matches(cluster, affinity))
        };
        if spec.override_rules.is_empty() {
            // The deprecated targetCluster/overriders pair stands for a single rule.
            if applies(&spec.target_cluster) {
                out.push(PolicyOverriders {
                    name,
                    namespace,
                    overriders: &spec.overriders,
                });
            }
            continue;
        }
        for rule in &spec.override_rules {
            if applies(&rule.target_cluster) {
                out.push(PolicyOverriders {
                    name,
                    namespace,
                    overriders: &rule.overriders,
                });
            }
        }
    }
    out
}

/// The annotation value: `[{"policyName": ..., "overriders": {...}}]` sorted by policy name, in
/// Go's JSON form (absent plaintext values written as null, HTML characters escaped).
fn applied_annotation(items: &[PolicyOverriders<'_>]) -> Result<String, String> {
    let mut sorted: Vec<&PolicyOverriders<'_>> = items.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(b.name));
    let mut parts = Vec::with_capacity(sorted.len());
    for item in sorted {
        let mut overriders = item.overriders.clone();
        for p in &mut overriders.plaintext {
            p.value.get_or_insert(Value::Null);
        }
        for f in &mut overriders.field_overrider {
            for op in &mut f.json {
                op.value.get_or_insert(Value::Null);
            }
            for op in &mut f.yaml {
                op.value.get_or_insert(Value::Null);
            }
        }
        parts.push(format!(
            "{{\"policyName\":{},\"overriders\":{}}}",
            go_json(&item.name)?,
            go_json(&overriders)?
        ));
    }
    Ok(format!("[{}]", parts.join(",")))
}

/// Applies one rule's overriders in Karmada's order: image, command, args, labels, annotations,
/// field, plaintext (`applyPolicyOverriders`).
fn apply_overriders(object: &mut Value, o: &Overriders) -> Result<(), String> {
    for io in &o.image_overrider {
        let patches = image_patches(object, io)?;
        apply_to_value(object, &patches)?;
    }
    for c in &o.command_overrider {
        let patches = command_args_patches(object, c, "command")?;
        apply_to_value(object, &patches)?;
    }
    for a in &o.args_overrider {
        let patches = command_args_patches(object, a, "args")?;
        apply_to_value(object, &patches)?;
    }
    for l in &o.labels_overrider {
        label_annotation_overrider(object, l, "labels")?;
    }
    for a in &o.annotations_overrider {
        label_annotation_overrider(object, a, "annotations")?;
    }
    for f in &o.field_overrider {
        field_overrider(object, f)?;
    }
    let plaintext: Vec<PatchOp> = o
        .plaintext
        .iter()
        .map(|p| PatchOp {
            op: op_of(p.operator),
            path: p.path.clone(),
            value: p.value.clone().unwrap_or(Value::Null),
        })
        .collect();
    apply_to_value(object, &plaintext)
}

fn op_of(o: OverriderOperator) -> Op {
    match o {
        OverriderOperator::Add => Op::Add,
        OverriderOperator::Remove => Op::Remove,
        OverriderOperator::Replace => Op::Replace,
    }
}

fn kind_of(object: &Value) -> &str {
    object.get("kind").and_then(Value::as_str).unwrap_or("")
}

/// Where the containers of a kind are, for the image and command overriders (any API version).
fn containers_path(kind: &str) -> Option<&'static [&'static str]> {
    match kind {
        "Pod" => Some(&["spec", "containers"]),
        "ReplicaSet" | "Deployment" | "DaemonSet" | "StatefulSet" | "Job" => {
            Some(&["spec", "template", "spec", "containers"])
        }
        _ => None,
    }
}

fn get_path<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

/// Replace operations for the images an image overrider changes (`buildPatches`): the image at
/// the predicate path, or every container image of workload kinds.
fn image_patches(object: &Value, io: &ImageOverrider) -> Result<Vec<PatchOp>, String> {
    let replace = |path: String, current: &str| -> Result<PatchOp, String> {
        if !path.starts_with('/') {
            return Err("imagePath should be start with / character".into());
        }
        Ok(PatchOp {
            op: Op::Replace,
            path,
            value: Value::String(image::override_image(current, io)?),
        })
    };
    if let Some(predicate) = &io.predicate {
        let current = obtain_image_value(object, &predicate.path).map_err(|e| {
            format!(
                "failed to obtain imageValue with predicate path({}), error: {e}",
                predicate.path
            )
        })?;
        return Ok(vec![replace(predicate.path.clone(), &current)?]);
    }
    let Some(path) = containers_path(kind_of(object)) else {
        return Ok(Vec::new());
    };
    let prefix = format!("/{}", path[..path.len() - 1].join("/"));
    let containers = get_path(object, path)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    containers
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            replace(format!("{prefix}/containers/{i}/image"), image)
        })
        .collect()
}

/// Walks a predicate path to the image string (`obtainImageValue`): objects by key, arrays by the
/// following numeric segment.
fn obtain_image_value(object: &Value, path: &str) -> Result<String, String> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let Some((last, walk)) = segments.split_last() else {
        return Err("empty path".into());
    };
    let mut current = object;
    let mut i = 0;
    while i < walk.len() {
        let seg = walk[i];
        match current.get(seg) {
            Some(Value::Object(_)) => current = &current[seg],
            Some(Value::Array(items)) => {
                let next = segments.get(i + 1).copied().unwrap_or("");
                let idx: i32 = next
                    .parse()
                    .map_err(|_| format!("path({next}) of rawObj's is not number"))?;
                current = usize::try_from(idx)
                    .ok()
                    .and_then(|idx| items.get(idx))
                    .filter(|v| v.is_object())
                    .ok_or_else(|| format!("path({next}) of rawObj's is out of range"))?;
                i += 1;
            }
            _ => {
                return Err(format!(
                    "path({seg}) of rawObj's type is not map[string]interface{{}} and []interface{{}}"
                ));
            }
        }
        i += 1;
    }
    current
        .get(*last)
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| format!("failed to convert path({last}) to string"))
}

/// Operations that add to or remove from a container's command or args
/// (`buildCommandArgsPatches`); `replace` leaves the list as it is.
fn command_args_patches(
    object: &Value,
    o: &CommandArgsOverrider,
    target: &str,
) -> Result<Vec<PatchOp>, String> {
    let Some(path) = containers_path(kind_of(object)) else {
        return Ok(Vec::new());
    };
    let containers = match get_path(object, path) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => {
            return Err(format!(
                "failed to retrieves path({}) from rawObj, error: not a list",
                path.join("/")
            ));
        }
    };
    let mut patches = Vec::new();
    for (i, c) in containers.iter().enumerate() {
        if c.get("name").and_then(Value::as_str) != Some(o.container_name.as_str()) {
            continue;
        }
        let patch_path = format!("/{}/{i}/{target}", path.join("/"));
        let (op, current): (Op, Vec<String>) = match c.get(target) {
            None | Some(Value::Null) => (Op::Add, Vec::new()),
            Some(Value::Array(items)) => (
                Op::Replace,
                items
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(String::from)
                            .unwrap_or_else(|| v.to_string())
                    })
                    .collect(),
            ),
            Some(_) => {
                return Err(format!(
                    "{target} of container {} is not a list",
                    o.container_name
                ));
            }
        };
        let new: Vec<String> = match o.operator {
            OverriderOperator::Add => current.into_iter().chain(o.value.iter().cloned()).collect(),
            OverriderOperator::Remove => current
                .into_iter()
                .filter(|v| !o.value.contains(v))
                .collect(),
            OverriderOperator::Replace => current,
        };
        patches.push(PatchOp {
            op,
            path: patch_path,
            value: Value::from(new),
        });
    }
    Ok(patches)
}

/// Adds, removes or replaces labels or annotations (`applyLabelAnnotationOverriders`): remove and
/// replace only touch keys that exist; add creates the map when needed.
fn label_annotation_overrider(
    object: &mut Value,
    o: &LabelAnnotationOverrider,
    field: &str,
) -> Result<(), String> {
    let mut patches = Vec::new();
    for (key, value) in &o.value {
        let map = object.get("metadata").and_then(|m| m.get(field));
        match o.operator {
            OverriderOperator::Remove | OverriderOperator::Replace => {
                if !map
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.contains_key(key))
                {
                    continue;
                }
            }
            OverriderOperator::Add => {
                if !map.is_some_and(Value::is_object) {
                    let Some(meta) = object.as_object_mut().map(|o| {
                        o.entry("metadata")
                            .or_insert_with(|| Value::Object(Default::default()))
                    }) else {
                        continue;
                    };
                    if let Some(meta) = meta.as_object_mut() {
                        meta.insert(field.to_string(), Value::Object(Default::default()));
                    }
                }
            }
        }
        patches.push(PatchOp {
            op: op_of(o.operator),
            // Label and annotation keys cannot contain '~', so only '/' needs escaping.
            path: format!("/metadata/{field}/{}", key.replace('/', "~1")),
            value: Value::String(value.clone()),
        });
    }
    apply_to_value(object, &patches)
}

/// Resolves a JSON pointer to a mutable value (`jsonpointer.Get` / `Set`).
fn pointer_mut<'a>(object: &'a mut Value, path: &str) -> Result<&'a mut Value, String> {
    let tokens = pointer_tokens(path)?;
    let mut cur = object;
    for t in &tokens {
        cur = match cur {
            Value::Object(m) => m
                .get_mut(t)
                .ok_or_else(|| format!("object has no key {t:?}"))?,
            Value::Array(items) => {
                let idx: usize = t
                    .parse()
                    .map_err(|_| format!("{t:?} is not an array index"))?;
                let len = items.len();
                items
                    .get_mut(idx)
                    .ok_or_else(|| format!("index out of bounds array[0,{len}] index '{idx}'"))?
            }
            _ => return Err(format!("invalid token reference {t:?}")),
        };
    }
    Ok(cur)
}

/// Patches a JSON or YAML document held in a string field (`applyFieldOverriders`).
fn field_overrider(object: &mut Value, f: &FieldOverrider) -> Result<(), String> {
    let target = pointer_mut(object, &f.field_path)?;
    let Value::String(text) = &*target else {
        return Err(format!(
            "Get object's value by overrider's path({}) is not string",
            f.field_path
        ));
    };
    let to_ops = |ops: Vec<(OverriderOperator, &String, &Option<Value>)>| -> Vec<PatchOp> {
        ops.into_iter()
            .map(|(op, path, value)| PatchOp {
                op: op_of(op),
                path: path.clone(),
                value: value.clone().unwrap_or(Value::Null),
            })
            .collect()
    };
    let patched = if !f.yaml.is_empty() {
        // YAML goes through JSON and back, so keys come out sorted, as with sigs.k8s.io/yaml.
        let mut doc: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_yaml::from_str(text)
                .map_err(|e| format!("failed to convert yaml to json: {e}"))?
        };
        let ops = to_ops(
            f.yaml
                .iter()
                .map(|o| (o.operator, &o.sub_path, &o.value))
                .collect(),
        );
        apply_to_value(&mut doc, &ops)?;
        serde_yaml::to_string(&doc).map_err(|e| format!("failed to convert json to yaml: {e}"))?
    } else if !f.json.is_empty() {
        let mut doc: Node = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let ops = to_ops(
            f.json
                .iter()
                .map(|o| (o.operator, &o.sub_path, &o.value))
                .collect(),
        );
        json_patch::apply(&mut doc, &ops)?;
        go_json(&doc)?
    } else {
        String::new()
    };
    *target = Value::String(patched);
    Ok(())
}

#[cfg(test)]
mod tests;
