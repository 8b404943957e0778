//! Conversion of ResourceBinding and ClusterResourceBinding between `v1alpha1` and `v1alpha2`
//! (the storage version), as Karmada's conversion webhook does it
//! (pkg/apis/work/v1alpha1/binding_types_conversion.go: `ConvertBindingSpecToHub`,
//! `ConvertBindingSpecFromHub` and their status counterparts).
//!
//! `v1alpha1` keeps the template's replicas and per-replica resources inside `spec.resource`
//! (`replicas`, `resourcePerReplicas`); `v1alpha2` has them at `spec.replicas` and
//! `spec.replicaRequirements.resourceRequest`. Everything else only `v1alpha2` has (the
//! template's uid, the placement, eviction tasks, the scheduler's status fields, each
//! cluster's health...) Karmada's conversion drops, so a `v1alpha1` client that writes a
//! binding back would erase it. Here it rides in the [`V1ALPHA2_FIELDS`] annotation of the
//! `v1alpha1` object, as Kubernetes keeps what an older version cannot hold (autoscaling/v1's
//! `autoscaling.alpha.kubernetes.io/*` annotations), and comes back on the way up. The
//! annotation never reaches storage.
//!
//! Both directions work on the JSON: what neither version describes is left where it is, so
//! the served version's schema (on writes) decides what is kept.

use serde_json::{Map, Value};

use crate::field::{FieldError, FieldPath};

/// On `v1alpha1` bindings: the JSON of the `v1alpha2` fields `v1alpha1` cannot hold.
pub const V1ALPHA2_FIELDS: &str = "work.karmada.io/v1alpha2-fields";

/// The `v1alpha1` group/version.
const V1ALPHA1: &str = "work.karmada.io/v1alpha1";
/// The `v1alpha2` group/version.
const V1ALPHA2: &str = "work.karmada.io/v1alpha2";

/// Members of `spec.resource` both versions have.
const REFERENCE_FIELDS: &[&str] = &["apiVersion", "kind", "namespace", "name", "resourceVersion"];
/// Members of an aggregatedStatus item both versions have.
const STATUS_ITEM_FIELDS: &[&str] = &["clusterName", "status", "applied", "appliedMessage"];
/// Members of a spec.clusters item both versions have.
const TARGET_FIELDS: &[&str] = &["name", "replicas"];

/// A `v1alpha2` binding as `v1alpha1` serves it (`ConvertFrom`), with what `v1alpha1` cannot
/// hold in the [`V1ALPHA2_FIELDS`] annotation.
pub fn to_v1alpha1(hub: &Value) -> Value {
    let mut out = Map::new();
    let mut rest = Map::new();
    out.insert("apiVersion".into(), Value::String(V1ALPHA1.into()));
    if let Some(kind) = hub.get("kind") {
        out.insert("kind".into(), kind.clone());
    }
    let mut metadata = hub.get("metadata").cloned();

    if let Some(spec) = hub.get("spec").and_then(Value::as_object) {
        let mut spec_rest = Map::new();
        let mut resource = Map::new();
        let mut resource_rest = Map::new();
        if let Some(reference) = spec.get("resource").and_then(Value::as_object) {
            for (k, v) in reference {
                if REFERENCE_FIELDS.contains(&k.as_str()) {
                    resource.insert(k.clone(), v.clone());
                } else {
                    resource_rest.insert(k.clone(), v.clone());
                }
            }
        }
        let mut v1_spec = Map::new();
        for (k, v) in spec {
            match k.as_str() {
                "resource" => {}
                "replicas" => {
                    if v.as_i64() != Some(0) {
                        resource.insert("replicas".into(), v.clone());
                    }
                }
                "replicaRequirements" => {
                    let Some(requirements) = v.as_object() else {
                        spec_rest.insert(k.clone(), v.clone());
                        continue;
                    };
                    let mut requirements_rest = Map::new();
                    let mut moved = false;
                    for (rk, rv) in requirements {
                        if rk == "resourceRequest" && !rv.is_null() {
                            resource.insert("resourcePerReplicas".into(), rv.clone());
                            moved = true;
                        } else {
                            requirements_rest.insert(rk.clone(), rv.clone());
                        }
                    }
                    if !requirements_rest.is_empty() || !moved {
                        spec_rest.insert(k.clone(), Value::Object(requirements_rest));
                    }
                }
                "clusters" => {
                    let (kept, extra) = split_items(v, TARGET_FIELDS, "name");
                    v1_spec.insert(k.clone(), kept);
                    if let Some(extra) = extra {
                        spec_rest.insert(k.clone(), extra);
                    }
                }
                _ => {
                    spec_rest.insert(k.clone(), v.clone());
                }
            }
        }
        if !resource_rest.is_empty() {
            spec_rest.insert("resource".into(), Value::Object(resource_rest));
        }
        v1_spec.insert("resource".into(), Value::Object(resource));
        out.insert("spec".into(), Value::Object(v1_spec));
        if !spec_rest.is_empty() {
            rest.insert("spec".into(), Value::Object(spec_rest));
        }
    } else if let Some(spec) = hub.get("spec") {
        out.insert("spec".into(), spec.clone());
    }

    if let Some(status) = hub.get("status").and_then(Value::as_object) {
        let mut v1_status = Map::new();
        let mut status_rest = Map::new();
        for (k, v) in status {
            match k.as_str() {
                "conditions" => {
                    v1_status.insert(k.clone(), v.clone());
                }
                "aggregatedStatus" => {
                    let (kept, extra) = split_items(v, STATUS_ITEM_FIELDS, "clusterName");
                    v1_status.insert(k.clone(), kept);
                    if let Some(extra) = extra {
                        status_rest.insert(k.clone(), extra);
                    }
                }
                _ => {
                    status_rest.insert(k.clone(), v.clone());
                }
            }
        }
        out.insert("status".into(), Value::Object(v1_status));
        if !status_rest.is_empty() {
            rest.insert("status".into(), Value::Object(status_rest));
        }
    } else if let Some(status) = hub.get("status") {
        out.insert("status".into(), status.clone());
    }

    if !rest.is_empty() {
        let meta = metadata.get_or_insert_with(|| Value::Object(Map::new()));
        if let Some(meta) = meta.as_object_mut() {
            let annotations = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Map::new()));
            if !annotations.is_object() {
                *annotations = Value::Object(Map::new());
            }
            if let Some(a) = annotations.as_object_mut() {
                a.insert(
                    V1ALPHA2_FIELDS.into(),
                    Value::String(Value::Object(rest).to_string()),
                );
            }
        }
    }
    if let Some(metadata) = metadata {
        out.insert("metadata".into(), metadata);
    }
    Value::Object(out)
}

/// A `v1alpha1` binding as `v1alpha2` stores it (`ConvertTo`), with the fields its
/// [`V1ALPHA2_FIELDS`] annotation carries put back; fails when that annotation is not the
/// JSON object this module writes.
pub fn to_v1alpha2(v1: &Value) -> Result<Value, FieldError> {
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::String(V1ALPHA2.into()));
    if let Some(kind) = v1.get("kind") {
        out.insert("kind".into(), kind.clone());
    }
    let mut metadata = v1.get("metadata").cloned();
    let rest = take_preserved(metadata.as_mut())?;
    if let Some(metadata) = metadata {
        out.insert("metadata".into(), metadata);
    }

    if let Some(spec) = v1.get("spec").and_then(Value::as_object) {
        let mut hub_spec = Map::new();
        for (k, v) in spec {
            if k == "resource" {
                let mut reference = Map::new();
                for (rk, rv) in v.as_object().into_iter().flatten() {
                    match rk.as_str() {
                        "replicas" => {
                            hub_spec.insert("replicas".into(), rv.clone());
                        }
                        "resourcePerReplicas" if !rv.is_null() => {
                            hub_spec.insert(
                                "replicaRequirements".into(),
                                Value::Object(Map::from_iter([(
                                    "resourceRequest".to_string(),
                                    rv.clone(),
                                )])),
                            );
                        }
                        "resourcePerReplicas" => {}
                        _ => {
                            reference.insert(rk.clone(), rv.clone());
                        }
                    }
                }
                hub_spec.insert(
                    k.clone(),
                    if v.is_object() {
                        Value::Object(reference)
                    } else {
                        v.clone()
                    },
                );
            } else {
                hub_spec.insert(k.clone(), v.clone());
            }
        }
        if let Some(Value::Object(spec_rest)) = rest.get("spec") {
            restore(&mut hub_spec, spec_rest, ("clusters", "name"));
        }
        out.insert("spec".into(), Value::Object(hub_spec));
    } else if let Some(spec) = v1.get("spec") {
        out.insert("spec".into(), spec.clone());
    }

    match v1.get("status") {
        Some(Value::Object(status)) => {
            let mut hub_status = status.clone();
            if let Some(Value::Object(status_rest)) = rest.get("status") {
                restore(
                    &mut hub_status,
                    status_rest,
                    ("aggregatedStatus", "clusterName"),
                );
            }
            out.insert("status".into(), Value::Object(hub_status));
        }
        Some(other) => {
            out.insert("status".into(), other.clone());
        }
        None => {
            if let Some(Value::Object(status_rest)) = rest.get("status") {
                let mut hub_status = Map::new();
                restore(
                    &mut hub_status,
                    status_rest,
                    ("aggregatedStatus", "clusterName"),
                );
                out.insert("status".into(), Value::Object(hub_status));
            }
        }
    }
    Ok(Value::Object(out))
}

/// Splits the items of a list into the members both versions have and, keyed by `key`, the
/// others (`None` when there are none).
fn split_items(list: &Value, shared: &[&str], key: &str) -> (Value, Option<Value>) {
    let Some(items) = list.as_array() else {
        return (list.clone(), None);
    };
    let mut kept = Vec::with_capacity(items.len());
    let mut extra = Vec::new();
    for item in items {
        let Some(fields) = item.as_object() else {
            kept.push(item.clone());
            continue;
        };
        let mut k = Map::new();
        let mut e = Map::new();
        for (name, v) in fields {
            if shared.contains(&name.as_str()) {
                k.insert(name.clone(), v.clone());
            } else {
                e.insert(name.clone(), v.clone());
            }
        }
        kept.push(Value::Object(k));
        if !e.is_empty()
            && let Some(id) = fields.get(key)
        {
            e.insert(key.to_string(), id.clone());
            extra.push(Value::Object(e));
        }
    }
    let extra = (!extra.is_empty()).then_some(Value::Array(extra));
    (Value::Array(kept), extra)
}

/// Removes the [`V1ALPHA2_FIELDS`] annotation (and an annotations map it leaves empty) and
/// returns what it carried.
fn take_preserved(metadata: Option<&mut Value>) -> Result<Map<String, Value>, FieldError> {
    let Some(meta) = metadata.and_then(Value::as_object_mut) else {
        return Ok(Map::new());
    };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return Ok(Map::new());
    };
    let Some(raw) = annotations.remove(V1ALPHA2_FIELDS) else {
        return Ok(Map::new());
    };
    if annotations.is_empty() {
        meta.remove("annotations");
    }
    let field = FieldPath::new("metadata")
        .child("annotations")
        .key(V1ALPHA2_FIELDS);
    let text = raw.as_str().unwrap_or_default();
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(rest))
            if rest
                .iter()
                .all(|(k, v)| matches!(k.as_str(), "spec" | "status") && v.is_object()) =>
        {
            Ok(rest)
        }
        _ => Err(FieldError::invalid(
            field,
            raw,
            "must be the JSON object of v1alpha2 fields this server wrote when it served the binding as v1alpha1 (or be removed)",
        )),
    }
}

/// Puts preserved members back into `target`: members `target` lacks are added and objects
/// merged; the items of the `keyed` list get their extra members back by their key (an item
/// the `v1alpha1` client removed stays removed).
fn restore(target: &mut Map<String, Value>, preserved: &Map<String, Value>, keyed: (&str, &str)) {
    let (list, key) = keyed;
    for (k, v) in preserved {
        if k == list {
            let (Some(Value::Array(items)), Value::Array(extras)) = (target.get_mut(k), v) else {
                continue;
            };
            for extra in extras.iter().filter_map(Value::as_object) {
                let Some(id) = extra.get(key) else {
                    continue;
                };
                if let Some(Value::Object(item)) = items.iter_mut().find(|i| i.get(key) == Some(id))
                {
                    for (ek, ev) in extra {
                        item.entry(ek.clone()).or_insert_with(|| ev.clone());
                    }
                }
            }
            continue;
        }
        match (target.get_mut(k), v) {
            (None, _) => {
                target.insert(k.clone(), v.clone());
            }
            (Some(Value::Object(t)), Value::Object(p)) => merge_absent(t, p),
            (Some(_), _) => {}
        }
    }
}

/// Adds the members of `from` that `into` lacks, recursively.
fn merge_absent(into: &mut Map<String, Value>, from: &Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(k), v) {
            (None, _) => {
                into.insert(k.clone(), v.clone());
            }
            (Some(Value::Object(i)), Value::Object(f)) => merge_absent(i, f),
            (Some(_), _) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn hub() -> Value {
        json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": "nginx-deployment", "namespace": "default",
                         "labels": {"resourcebinding.karmada.io/permanent-id": "x"}},
            "spec": {
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                             "name": "nginx", "uid": "u-1", "resourceVersion": "7"},
                "replicas": 3,
                "replicaRequirements": {"resourceRequest": {"cpu": "100m"}, "namespace": "default",
                                        "priorityClassName": "high"},
                "clusters": [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}],
                "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}},
                "conflictResolution": "Abort",
                "schedulerName": "default-scheduler",
                "gracefulEvictionTasks": [{"fromCluster": "member3", "reason": "TaintUntolerated",
                                           "producer": "taint-manager"}]
            },
            "status": {
                "schedulerObservedGeneration": 2,
                "lastScheduledTime": "2026-01-01T00:00:00Z",
                "conditions": [{"type": "Scheduled", "status": "True", "reason": "Success",
                                "message": "ok", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "aggregatedStatus": [
                    {"clusterName": "member1", "applied": true, "health": "Healthy", "status": {"replicas": 2}},
                    {"clusterName": "member2", "applied": false, "appliedMessage": "boom"}
                ]
            }
        })
    }

    #[test]
    fn down_moves_replicas_into_the_reference() {
        let v1 = to_v1alpha1(&hub());
        assert_eq!(v1["apiVersion"], "work.karmada.io/v1alpha1");
        assert_eq!(
            v1["spec"],
            json!({
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                             "name": "nginx", "resourceVersion": "7",
                             "resourcePerReplicas": {"cpu": "100m"}, "replicas": 3},
                "clusters": [{"name": "member1", "replicas": 2}, {"name": "member2", "replicas": 1}]
            })
        );
        assert_eq!(
            v1["status"],
            json!({
                "conditions": hub()["status"]["conditions"],
                "aggregatedStatus": [
                    {"clusterName": "member1", "applied": true, "status": {"replicas": 2}},
                    {"clusterName": "member2", "applied": false, "appliedMessage": "boom"}
                ]
            })
        );
        let preserved: Value = serde_json::from_str(
            v1["metadata"]["annotations"][V1ALPHA2_FIELDS]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            preserved,
            json!({
                "spec": {
                    "resource": {"uid": "u-1"},
                    "replicaRequirements": {"namespace": "default", "priorityClassName": "high"},
                    "placement": {"clusterAffinity": {"clusterNames": ["member1", "member2"]}},
                    "conflictResolution": "Abort",
                    "schedulerName": "default-scheduler",
                    "gracefulEvictionTasks": [{"fromCluster": "member3", "reason": "TaintUntolerated",
                                               "producer": "taint-manager"}]
                },
                "status": {
                    "schedulerObservedGeneration": 2,
                    "lastScheduledTime": "2026-01-01T00:00:00Z",
                    "aggregatedStatus": [{"clusterName": "member1", "health": "Healthy"}]
                }
            })
        );
        assert_eq!(v1["metadata"]["labels"], hub()["metadata"]["labels"]);
    }

    #[test]
    fn round_trips_both_ways() {
        let hub = hub();
        assert_eq!(to_v1alpha2(&to_v1alpha1(&hub)).unwrap(), hub);
        let v1 = to_v1alpha1(&hub);
        assert_eq!(to_v1alpha1(&to_v1alpha2(&v1).unwrap()), v1);
        // Only what v1alpha1 holds: no annotation, nothing added.
        let plain = json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
                           "metadata": {"name": "c"},
                           "spec": {"resource": {"apiVersion": "v1", "kind": "Namespace", "name": "n"},
                                    "clusters": [{"name": "m"}]}});
        let down = to_v1alpha1(&plain);
        assert!(down["metadata"].get("annotations").is_none());
        assert_eq!(to_v1alpha2(&down).unwrap(), plain);
    }

    #[test]
    fn up_is_karmadas_convert_to() {
        // What a v1alpha1 client writes from scratch.
        let v1 = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "ResourceBinding",
                        "metadata": {"name": "b", "namespace": "ns"},
                        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns",
                                              "name": "d", "replicas": 4, "resourcePerReplicas": {"memory": "1Gi"}},
                                 "clusters": [{"name": "member1", "replicas": 4}]},
                        "status": {"aggregatedStatus": [{"clusterName": "member1", "applied": true}]}});
        assert_eq!(
            to_v1alpha2(&v1).unwrap(),
            json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                   "metadata": {"name": "b", "namespace": "ns"},
                   "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"},
                            "replicas": 4, "replicaRequirements": {"resourceRequest": {"memory": "1Gi"}},
                            "clusters": [{"name": "member1", "replicas": 4}]},
                   "status": {"aggregatedStatus": [{"clusterName": "member1", "applied": true}]}})
        );
    }

    #[test]
    fn v1alpha1_edits_win_over_the_annotation() {
        let mut v1 = to_v1alpha1(&hub());
        // The client drops member2, removes the per-replica resources and changes replicas.
        v1["spec"]["clusters"] = json!([{"name": "member1", "replicas": 5}]);
        v1["spec"]["resource"]
            .as_object_mut()
            .unwrap()
            .remove("resourcePerReplicas");
        v1["spec"]["resource"]["replicas"] = json!(5);
        v1["status"]["aggregatedStatus"] = json!([{"clusterName": "member2", "applied": true}]);
        let up = to_v1alpha2(&v1).unwrap();
        assert_eq!(up["spec"]["replicas"], 5);
        assert_eq!(
            up["spec"]["clusters"],
            json!([{"name": "member1", "replicas": 5}])
        );
        // The v1alpha2-only requirements come back without the removed resources.
        assert_eq!(
            up["spec"]["replicaRequirements"],
            json!({"namespace": "default", "priorityClassName": "high"})
        );
        assert_eq!(up["spec"]["resource"]["uid"], "u-1");
        assert_eq!(up["spec"]["placement"], hub()["spec"]["placement"]);
        assert_eq!(
            up["spec"]["gracefulEvictionTasks"],
            hub()["spec"]["gracefulEvictionTasks"]
        );
        // member1's health is not resurrected: the client removed member1's item.
        assert_eq!(
            up["status"]["aggregatedStatus"],
            json!([{"clusterName": "member2", "applied": true}])
        );
        assert_eq!(up["status"]["schedulerObservedGeneration"], 2);
        assert_eq!(up["metadata"], hub()["metadata"]);
    }

    #[test]
    fn a_tampered_annotation_is_refused() {
        for bad in [
            json!("not json"),
            json!("[1]"),
            json!("{\"metadata\":{}}"),
            json!(3),
        ] {
            let v1 = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "ResourceBinding",
                            "metadata": {"name": "b", "annotations": {V1ALPHA2_FIELDS: bad}},
                            "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}});
            let err = to_v1alpha2(&v1).unwrap_err();
            assert_eq!(
                err.field,
                "metadata.annotations[work.karmada.io/v1alpha2-fields]"
            );
        }
    }

    #[test]
    fn odd_shapes_pass_through() {
        // Not objects where objects belong: left for the schema check to report.
        let odd = json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                         "metadata": {"name": "o"}, "spec": 3, "status": "x"});
        let down = to_v1alpha1(&odd);
        assert_eq!(down["spec"], 3);
        assert_eq!(down["status"], "x");
        assert_eq!(to_v1alpha2(&down).unwrap()["spec"], 3);
    }
}
