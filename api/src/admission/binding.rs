//! Karmada's webhooks for bindings (pkg/webhook/resourcebinding, clusterresourcebinding).

use serde_json::Value;

use super::{AdmissionError, Operation, Webhooks, label, permanent_id, set_label};
use crate::field::{FieldError, FieldPath};
use crate::well_known::{annotations, labels};
use crate::work::v1alpha2::{ClusterResourceBinding, ResourceBinding};

/// The mutating webhooks run on create only.
impl Webhooks for ResourceBinding {
    const VALIDATES: bool = true;
    const VALIDATION_READS_OLD: bool = false;

    fn mutates(op: Operation) -> bool {
        op == Operation::Create
    }

    fn mutate(&mut self, op: Operation) -> Result<(), AdmissionError> {
        if op == Operation::Create
            && label(&self.metadata, labels::RESOURCE_BINDING_PERMANENT_ID).is_empty()
        {
            set_label(
                &mut self.metadata,
                labels::RESOURCE_BINDING_PERMANENT_ID,
                permanent_id(),
            );
        }
        Ok(())
    }

    /// Only the dependencies annotation is checked here; the FederatedResourceQuota check
    /// needs the quotas and belongs to the quota enforcement, and the components check is
    /// behind a gate that is off by default.
    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        let Some(deps) = self
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(annotations::DEPENDENCIES))
        else {
            return Ok(());
        };
        if is_dependency_list(deps) {
            return Ok(());
        }
        let field = FieldPath::new("metadata")
            .child("annotations")
            .child(annotations::DEPENDENCIES);
        Err(AdmissionError::denied_fields(
            "resourcebinding.karmada.io",
            vec![FieldError::invalid(
                field,
                deps.as_str(),
                "annotation value must be a valid JSON",
            )],
        ))
    }
}

impl Webhooks for ClusterResourceBinding {
    fn mutates(op: Operation) -> bool {
        op == Operation::Create
    }

    fn mutate(&mut self, op: Operation) -> Result<(), AdmissionError> {
        if op == Operation::Create
            && label(
                &self.metadata,
                labels::CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
            )
            .is_empty()
        {
            set_label(
                &mut self.metadata,
                labels::CLUSTER_RESOURCE_BINDING_PERMANENT_ID,
                permanent_id(),
            );
        }
        Ok(())
    }
}

/// Whether a string decodes as a JSON list of DependentObjectReference
/// (`{apiVersion, kind, namespace, name, labelSelector}`).
fn is_dependency_list(raw: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(raw) else {
        return false;
    };
    let items = match &value {
        Value::Null => return true,
        Value::Array(items) => items,
        _ => return false,
    };
    items.iter().all(|item| match item {
        Value::Null => true,
        Value::Object(fields) => fields.iter().all(|(key, v)| match key.as_str() {
            "apiVersion" | "kind" | "namespace" | "name" => v.is_string() || v.is_null(),
            "labelSelector" => {
                v.is_null()
                    || serde_json::from_value::<
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
                    >(v.clone())
                    .is_ok()
            }
            _ => true,
        }),
        _ => false,
    })
}
