//! Conversion between the served versions of a kind and the version it is stored in, as
//! kube-apiserver runs a CRD's conversion webhook: a write at an older version is checked
//! against that version's schema and converted to the storage version before admission; a
//! read converts the stored object to the version asked for.

use serde_json::Value;

use crate::admission::{AdmissionError, check_schema, normalize};
use crate::schema::{RESOURCE_ROOT_SKIP, kind_schema_at};

/// Whether objects of `kind` served at `version` are stored in another version.
pub fn converts(kind: &str, version: &str) -> bool {
    crate::catalog::kind_info(kind)
        .is_some_and(|k| k.version != version && k.other_versions.contains(&version))
}

/// A stored object of `kind` as `version` serves it; `None` when `version` is the storage
/// version (or not one the kind serves).
pub fn from_storage(kind: &str, version: &str, stored: &Value) -> Option<Value> {
    if !converts(kind, version) {
        return None;
    }
    match kind {
        "ResourceBinding" | "ClusterResourceBinding" => {
            Some(crate::work::conversion::to_v1alpha1(stored))
        }
        _ => None,
    }
}

/// A written object of `kind` at `version`, checked against that version's schema (defaults
/// applied, unknown fields dropped, 422 with the version's field paths) and converted to the
/// storage version; unchanged when `version` is the storage version.
pub fn to_storage(kind: &str, version: &str, obj: &mut Value) -> Result<(), AdmissionError> {
    if !converts(kind, version) {
        return Ok(());
    }
    let schema = kind_schema_at(version, kind).ok_or_else(|| {
        AdmissionError::BadRequest(format!("no schema for {kind} in version {version:?}"))
    })?;
    if !obj.is_object() {
        return Err(AdmissionError::BadRequest(format!(
            "{kind} in version \"{version}\" cannot be handled as a {kind}: the object is not a JSON object"
        )));
    }
    normalize(schema, obj, RESOURCE_ROOT_SKIP);
    check_schema(schema, obj, RESOURCE_ROOT_SKIP)?;
    let converted = match kind {
        "ResourceBinding" | "ClusterResourceBinding" => {
            crate::work::conversion::to_v1alpha2(obj)
                .map_err(|e| AdmissionError::Invalid(vec![e]))?
        }
        _ => return Ok(()),
    };
    *obj = converted;
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_older_served_versions_convert() {
        assert!(converts("ResourceBinding", "v1alpha1"));
        assert!(converts("ClusterResourceBinding", "v1alpha1"));
        assert!(!converts("ResourceBinding", "v1alpha2"));
        assert!(!converts("Work", "v1alpha1"));
        assert!(!converts("ResourceBinding", "v1beta1"));
        assert!(!converts("Deployment", "v1"));
        let stored = json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                            "metadata": {"name": "b"}, "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}}});
        assert_eq!(from_storage("ResourceBinding", "v1alpha2", &stored), None);
        assert_eq!(
            from_storage("ResourceBinding", "v1alpha1", &stored).unwrap()["apiVersion"],
            "work.karmada.io/v1alpha1"
        );
    }

    #[test]
    fn writes_are_checked_against_the_served_version() {
        // A v1alpha2 field at v1alpha1 is unknown there: dropped, not stored.
        let mut obj = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "ResourceBinding",
                             "metadata": {"name": "b", "namespace": "n"},
                             "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "replicas": 2},
                                      "placement": {"clusterAffinity": {"clusterNames": ["m"]}}}});
        to_storage("ResourceBinding", "v1alpha1", &mut obj).unwrap();
        assert_eq!(obj["apiVersion"], "work.karmada.io/v1alpha2");
        assert_eq!(obj["spec"]["replicas"], 2);
        assert!(obj["spec"].get("placement").is_none());

        // v1alpha1's own rules, with v1alpha1's paths.
        let mut bad = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "ResourceBinding",
                             "metadata": {"name": "b"},
                             "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "replicas": "two"}}});
        let err = to_storage("ResourceBinding", "v1alpha1", &mut bad).unwrap_err();
        assert_eq!(err.code(), 422);
        assert_eq!(err.field_errors()[0].field, "spec.resource.replicas");
        let mut missing = json!({"apiVersion": "work.karmada.io/v1alpha1", "kind": "ResourceBinding",
                                 "metadata": {"name": "b"}, "spec": {"resource": {"kind": "ConfigMap"}}});
        let err = to_storage("ResourceBinding", "v1alpha1", &mut missing).unwrap_err();
        let fields: Vec<&str> = err
            .field_errors()
            .iter()
            .map(|e| e.field.as_str())
            .collect();
        assert_eq!(fields, ["spec.resource.apiVersion", "spec.resource.name"]);

        // The storage version passes through untouched.
        let mut hub = json!({"apiVersion": "work.karmada.io/v1alpha2", "spec": {"anything": 1}});
        let before = hub.clone();
        to_storage("ResourceBinding", "v1alpha2", &mut hub).unwrap();
        assert_eq!(hub, before);
    }
}
