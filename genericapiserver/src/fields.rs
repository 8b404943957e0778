//! Which field selectors each resource supports, and how their values are read
//! (kube's per-kind `GetAttrs` / `SelectableFields`, e.g. pkg/registry/core/pod/strategy.go).

use std::sync::Arc;

use serde_json::Value;

use crate::object;
use crate::resources::{ResourceDef, Source};
use apimachinery::selectors::FieldSelector;

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
        ("apps", "replicasets") | ("", "replicationcontrollers") => {
            &[("status.replicas", ".status.replicas")]
        }
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

/// How a kind's field labels are converted (Scheme.ConvertFieldLabel): which metadata labels
/// it takes and how it words a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LabelConversion {
    /// runtime.DefaultMetaV1FieldSelectorConversion, for kinds that register no conversion
    /// (ConfigMaps, Deployments, ...): metadata.name and metadata.namespace.
    DefaultMeta,
    /// A conversion registered in pkg/apis/core/v1 (or a custom resource's crConverter):
    /// `field label not supported: X`; `namespace` says whether metadata.namespace is taken.
    NotSupported {
        /// metadata.namespace is accepted.
        namespace: bool,
    },
    /// batch/v1 Job's conversion.
    Job,
}

fn label_conversion(def: &ResourceDef) -> LabelConversion {
    if def.served_as_crd() {
        return LabelConversion::NotSupported {
            namespace: def.namespaced,
        };
    }
    match (def.group.as_str(), def.plural.as_str()) {
        ("", "nodes" | "namespaces") => LabelConversion::NotSupported { namespace: false },
        ("", "pods" | "secrets" | "services" | "events" | "replicationcontrollers") => {
            LabelConversion::NotSupported { namespace: true }
        }
        ("batch", "jobs") => LabelConversion::Job,
        _ => LabelConversion::DefaultMeta,
    }
}

/// Checks that every field of the selector is supported; the error is the message of the
/// kind's field label conversion, as kube-apiserver answers it (400).
pub fn validate(def: &ResourceDef, sel: &FieldSelector) -> Result<(), String> {
    let conversion = label_conversion(def);
    for t in &sel.terms {
        let field = t.field.as_str();
        let known = match field {
            "metadata.name" => true,
            "metadata.namespace" => !matches!(
                conversion,
                LabelConversion::NotSupported { namespace: false }
            ),
            _ => kind_fields(def).any(|(f, _)| f.as_str() == field),
        };
        if known {
            continue;
        }
        return Err(match conversion {
            LabelConversion::NotSupported { .. } => format!("field label not supported: {field}"),
            LabelConversion::Job => format!(
                "field label {} not supported for batchv1.Job",
                apiextensions::go_quote(field)
            ),
            LabelConversion::DefaultMeta => format!(
                "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
                apiextensions::go_quote(field)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::resources::served as def;

    fn check(d: &ResourceDef, sel: &str) -> Result<(), String> {
        validate(d, &FieldSelector::parse(sel).expect("selector"))
    }

    #[test]
    fn unsupported_labels_are_worded_as_each_kind_converts_them() {
        let default_meta = "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"";
        for (group, plural, message) in [
            ("", "configmaps", default_meta),
            ("apps", "deployments", default_meta),
            ("cluster.karmada.io", "clusters", default_meta),
            ("", "pods", "field label not supported: spec.foo"),
            ("", "secrets", "field label not supported: spec.foo"),
            ("", "namespaces", "field label not supported: spec.foo"),
            (
                "batch",
                "jobs",
                "field label \"spec.foo\" not supported for batchv1.Job",
            ),
            (
                "policy.karmada.io",
                "propagationpolicies",
                "field label not supported: spec.foo",
            ),
        ] {
            let d = def(group, plural);
            assert_eq!(check(&d, "spec.foo=x").unwrap_err(), message, "{plural}");
            assert!(check(&d, "metadata.name=x").is_ok(), "{plural}");
        }
        assert!(check(&def("", "pods"), "spec.nodeName=n,metadata.namespace=d").is_ok());
        assert!(check(&def("batch", "jobs"), "status.successful=1").is_ok());
        // Conversions that do not take metadata.namespace: nodes, namespaces, cluster-scoped
        // custom kinds; the default conversion takes it even for cluster-scoped kinds.
        for (group, plural) in [
            ("", "nodes"),
            ("", "namespaces"),
            ("policy.karmada.io", "clusterpropagationpolicies"),
        ] {
            assert_eq!(
                check(&def(group, plural), "metadata.namespace=x").unwrap_err(),
                "field label not supported: metadata.namespace"
            );
        }
        assert!(
            check(
                &def("cluster.karmada.io", "clusters"),
                "metadata.namespace="
            )
            .is_ok()
        );
        assert!(check(&def("", "persistentvolumes"), "metadata.namespace=").is_ok());
    }
}
