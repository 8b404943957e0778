//! Admission: the defaulting and validation every write passes before storage, in
//! kube-apiserver's order (mutating, then validating).

use serde_json::Value;

use crate::error::{ApiError, Cause};
use crate::object;
use crate::registry::WriteContext;
use crate::resources::ResourceDef;
use crate::selectors::{is_label_value, is_qualified_name};
use crate::state::ApiState;

/// The kind of write being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// A create.
    Create,
    /// An update or patch.
    Update,
}

/// Defaults and validates `obj` (the new state); `old` is the current state on update.
pub async fn admit(
    _state: &ApiState,
    def: &ResourceDef,
    op: Operation,
    obj: &mut Value,
    old: Option<&Value>,
    _ctx: &WriteContext,
) -> Result<(), ApiError> {
    let name = object::name(obj).to_string();
    let mut causes = validate_object_meta(def, obj);
    if let Some(old) = old {
        if object::name(old) != name {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("Invalid value: \"{name}\": field is immutable"),
                field: "metadata.name".into(),
            });
        }
    }
    let _ = op;
    if !causes.is_empty() {
        return Err(ApiError::invalid(&def.group, &def.kind, &name, causes));
    }
    Ok(())
}

/// kube's ValidateObjectMeta: name format, labels and annotations.
pub fn validate_object_meta(def: &ResourceDef, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let name = object::name(obj);
    if let Some(msg) = name_error(def, name) {
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: \"{name}\": {msg}"),
            field: "metadata.name".into(),
        });
    }
    for (k, v) in object::labels(obj) {
        if !is_qualified_name(&k) {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: \"{k}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
                ),
                field: "metadata.labels".into(),
            });
        }
        if !is_label_value(&v) {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: \"{v}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                ),
                field: format!("metadata.labels.{k}"),
            });
        }
    }
    if let Some(m) = object::meta(obj)
        && let Some(a) = m.get("annotations")
        && !a.is_null()
        && !a.is_object()
    {
        causes.push(Cause {
            reason: "FieldValueTypeInvalid".into(),
            message: "Invalid value: must be a map of strings".into(),
            field: "metadata.annotations".into(),
        });
    }
    for (k, _) in object::annotations(obj) {
        if !is_qualified_name(&k.to_lowercase()) {
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: \"{k}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
                ),
                field: "metadata.annotations".into(),
            });
        }
    }
    causes
}

/// The error kube gives for an invalid object name of this resource, if any.
pub fn name_error(def: &ResourceDef, name: &str) -> Option<String> {
    if name.is_empty() {
        return None;
    }
    let label_only =
        def.group.is_empty() && matches!(def.plural.as_str(), "namespaces" | "services");
    if label_only {
        if !is_dns1123_label(name) {
            return Some("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into());
        }
        return None;
    }
    if def.group == "rbac.authorization.k8s.io" {
        // RBAC objects use the path segment name rule (ValidatePathSegmentName).
        if name == "." || name == ".." {
            return Some(format!("may not be '{name}'"));
        }
        if name.contains('/') || name.contains('%') {
            return Some("may not contain '/' or '%'".into());
        }
        return None;
    }
    if !is_dns1123_subdomain(name) {
        return Some("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
    }
    None
}

/// RFC 1123 label: at most 63 lower-case alphanumerics or '-', alphanumeric at both ends.
pub fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// RFC 1123 subdomain: dot-separated labels, at most 253 characters.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns1123_label)
}
