//! Which field selectors each resource supports, and how their values are read
//! (kube's per-kind `GetAttrs` / `SelectableFields`, e.g. pkg/registry/core/pod/strategy.go).

use serde_json::Value;

use crate::object;
use crate::resources::{ResourceDef, Source};
use crate::selectors::FieldSelector;

/// Fields every resource supports.
const COMMON: &[&str] = &["metadata.name", "metadata.namespace"];

/// The kind-specific selectable fields (beyond metadata.name/namespace) and where to read them.
fn kind_fields(def: &ResourceDef) -> Vec<(String, String)> {
    let pairs: &[(&str, &str)] = match (def.group.as_str(), def.plural.as_str()) {
        ("", "pods") => &[
            ("spec.nodeName", ".spec.nodeName"),
            ("spec.restartPolicy", ".spec.restartPolicy"),
            ("spec.schedulerName", ".spec.schedulerName"),
            ("spec.serviceAccountName", ".spec.serviceAccountName"),
            ("spec.hostNetwork", ".spec.hostNetwork"),
            ("status.phase", ".status.phase"),
            ("status.podIP", ".status.podIP"),
            ("status.nominatedNodeName", ".status.nominatedNodeName"),
        ],
        ("", "events") => &[
            ("involvedObject.kind", ".involvedObject.kind"),
            ("involvedObject.namespace", ".involvedObject.namespace"),
            ("involvedObject.name", ".involvedObject.name"),
            ("involvedObject.uid", ".involvedObject.uid"),
            ("involvedObject.apiVersion", ".involvedObject.apiVersion"),
            (
                "involvedObject.resourceVersion",
                ".involvedObject.resourceVersion",
            ),
            ("involvedObject.fieldPath", ".involvedObject.fieldPath"),
            ("reason", ".reason"),
            ("reportingComponent", ".reportingComponent"),
            ("source", ".source.component"),
            ("type", ".type"),
        ],
        ("", "secrets") => &[("type", ".type")],
        ("", "namespaces") => &[("status.phase", ".status.phase")],
        ("", "nodes") => &[("spec.unschedulable", ".spec.unschedulable")],
        ("", "services") => &[
            ("spec.clusterIP", ".spec.clusterIP"),
            ("spec.type", ".spec.type"),
        ],
        ("", "persistentvolumes") => &[("name", ".metadata.name")],
        ("apps", "replicasets") => &[("status.replicas", ".status.replicas")],
        ("batch", "jobs") => &[("status.successful", ".status.succeeded")],
        _ => &[],
    };
    let mut out: Vec<(String, String)> = pairs
        .iter()
        .map(|(f, p)| (f.to_string(), p.to_string()))
        .collect();
    if let Source::Custom(c) = &def.source {
        for jp in &c.selectable_fields {
            let f = jp.trim_start_matches('.').to_string();
            out.push((f, jp.clone()));
        }
    }
    out
}

/// Reads one selectable field of an object as the string kube compares.
pub fn field_value(def: &ResourceDef, obj: &Value, field: &str) -> Option<String> {
    match field {
        "metadata.name" => return Some(object::name(obj).to_string()),
        "metadata.namespace" => return Some(object::namespace(obj).to_string()),
        _ => {}
    }
    let fields = kind_fields(def);
    let (_, path) = fields.iter().find(|(f, _)| f == field)?;
    match object::get_path(obj, path) {
        None | Some(Value::Null) => {
            // Booleans and numbers default to their zero value as Go's struct fields do.
            match field {
                "spec.hostNetwork" | "spec.unschedulable" => Some("false".into()),
                "status.replicas" | "status.successful" => Some("0".into()),
                _ => Some(String::new()),
            }
        }
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => Some(other.to_string()),
    }
}

/// True when the kind has selectable fields beyond metadata.name/namespace (the watch cache
/// then needs the whole object parsed).
pub fn has_kind_fields(def: &ResourceDef) -> bool {
    !kind_fields(def).is_empty()
}

/// Precomputes the kind-specific field values of an object (for the watch cache).
pub fn extract(def: &ResourceDef, obj: &Value) -> Vec<(String, String)> {
    kind_fields(def)
        .into_iter()
        .filter_map(|(f, _)| field_value(def, obj, &f).map(|v| (f, v)))
        .collect()
}

/// Checks that every field of the selector is supported; the error is kube's message.
pub fn validate(def: &ResourceDef, sel: &FieldSelector) -> Result<(), String> {
    let fields = kind_fields(def);
    for t in &sel.terms {
        if COMMON.contains(&t.field.as_str()) || fields.iter().any(|(f, _)| *f == t.field) {
            continue;
        }
        return Err(
            if matches!(def.source, Source::Custom(_) | Source::Karmada) {
                let mut known: Vec<String> = COMMON.iter().map(|s| format!("\"{s}\"")).collect();
                known.extend(fields.iter().map(|(f, _)| format!("\"{f}\"")));
                format!(
                    "\"{}\" is not a known field selector: only {}",
                    t.field,
                    known.join(", ")
                )
            } else {
                format!("field label not supported: {}", t.field)
            },
        );
    }
    Ok(())
}
