//! Which field selectors each resource supports, and how their values are read
//! (kube's per-kind `GetAttrs` / `SelectableFields`, e.g. pkg/registry/core/pod/strategy.go).

use std::sync::Arc;

use serde_json::Value;

use crate::object;
use crate::resources::{ResourceDef, Source};
use crate::selectors::FieldSelector;

/// Fields every resource supports.
const COMMON: &[&str] = &["metadata.name", "metadata.namespace"];

/// The kind-specific selectable fields (beyond metadata.name/namespace) and where to read
/// them: a built-in kind's table, or a custom resource's selectableFields. Borrowed, because
/// the watch cache asks for every version of every object of such kinds.
fn kind_fields(def: &ResourceDef) -> impl Iterator<Item = (FieldRef<'_>, &str)> {
    let custom: &[String] = match &def.source {
        Source::Custom(c) => &c.selectable_fields,
        _ => &[],
    };
    built_in_fields(def)
        .iter()
        .map(|&(f, path)| (FieldRef::Static(f), path))
        .chain(
            custom
                .iter()
                .map(|jp| (FieldRef::Custom(jp.trim_start_matches('.')), jp.as_str())),
        )
}

/// A selectable field's name as the kind's definition holds it.
#[derive(Clone, Copy)]
enum FieldRef<'a> {
    /// From a built-in kind's table.
    Static(&'static str),
    /// From a custom resource's selectableFields.
    Custom(&'a str),
}

impl<'a> FieldRef<'a> {
    fn as_str(self) -> &'a str {
        match self {
            FieldRef::Static(s) => s,
            FieldRef::Custom(s) => s,
        }
    }

    fn to_name(self) -> FieldName {
        match self {
            FieldRef::Static(s) => FieldName::Static(s),
            FieldRef::Custom(s) => FieldName::Custom(Arc::from(s)),
        }
    }
}

fn built_in_fields(def: &ResourceDef) -> &'static [(&'static str, &'static str)] {
    match (def.group.as_str(), def.plural.as_str()) {
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
    }
}

/// Reads one selectable field of an object as the string kube compares.
pub fn field_value(def: &ResourceDef, obj: &Value, field: &str) -> Option<String> {
    match field {
        "metadata.name" => return Some(object::name(obj).to_string()),
        "metadata.namespace" => return Some(object::namespace(obj).to_string()),
        _ => {}
    }
    let (_, path) = kind_fields(def).find(|(f, _)| f.as_str() == field)?;
    Some(value_at(obj, field, path))
}

/// The string kube compares for `field`, read at `path`.
fn value_at(obj: &Value, field: &str, path: &str) -> String {
    match object::get_path(obj, path) {
        None | Some(Value::Null) => {
            // Booleans and numbers default to their zero value as Go's struct fields do.
            match field {
                "spec.hostNetwork" | "spec.unschedulable" => "false".into(),
                "status.replicas" | "status.successful" => "0".into(),
                _ => String::new(),
            }
        }
        Some(Value::String(s)) => s.clone(),
        Some(Value::Bool(b)) => b.to_string(),
        Some(Value::Number(n)) => n.to_string(),
        Some(other) => other.to_string(),
    }
}

/// True when the kind has selectable fields beyond metadata.name/namespace (the watch cache
/// then needs the whole object parsed).
pub fn has_kind_fields(def: &ResourceDef) -> bool {
    kind_fields(def).next().is_some()
}

/// A selectable field's name: a built-in kind's from its static table (no copy per object),
/// a custom resource's from its definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FieldName {
    /// From a built-in kind's table.
    Static(&'static str),
    /// From a CustomResourceDefinition's selectableFields.
    Custom(Arc<str>),
}

impl FieldName {
    /// The name.
    pub fn as_str(&self) -> &str {
        match self {
            FieldName::Static(s) => s,
            FieldName::Custom(s) => s,
        }
    }
}

/// An object's kind-specific field values, shared by the versions of the object that have the
/// same values (most writes change none of them).
pub type FieldValues = Arc<[(FieldName, Box<str>)]>;

/// Precomputes the kind-specific field values of an object (for the watch cache).
pub fn extract(def: &ResourceDef, obj: &Value) -> FieldValues {
    kind_fields(def)
        .map(|(f, path)| (f.to_name(), value_at(obj, f.as_str(), path).into()))
        .collect()
}

/// Checks that every field of the selector is supported; the error is kube's message.
pub fn validate(def: &ResourceDef, sel: &FieldSelector) -> Result<(), String> {
    for t in &sel.terms {
        if COMMON.contains(&t.field.as_str())
            || kind_fields(def).any(|(f, _)| f.as_str() == t.field)
        {
            continue;
        }
        return Err(
            if matches!(def.source, Source::Custom(_) | Source::Karmada) {
                let mut known: Vec<String> = COMMON.iter().map(|s| format!("\"{s}\"")).collect();
                known.extend(kind_fields(def).map(|(f, _)| format!("\"{}\"", f.as_str())));
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
