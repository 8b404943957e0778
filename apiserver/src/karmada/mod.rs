//! Karmada's kinds in the generic server: the [`KindStrategy`] of `policy.karmada.io`,
//! `work.karmada.io`, `config.karmada.io`, `apps.karmada.io`... and `cluster.karmada.io`
//! (kube-apiserver serves them from Karmada's CRDs, karmada-aggregated-apiserver serves
//! Cluster), and Karmada's delete admission, installed into `genericapiserver::kinds` when the
//! server is assembled ([`install`]). It mirrors what karmada-io/karmada adds to a
//! kube-apiserver: the CRDs' printer columns, schemas and conversion webhook
//! (pkg/webhook/... `conversion`), its admission webhooks (pkg/webhook: mutating and
//! validating, resourcedeletionprotection) and the aggregated apiserver's Cluster strategy
//! (pkg/registry/cluster); the rules themselves are the api crate's. Their served resources
//! ([`resources`]) join the built-in ones in the catalog the server assembles.

mod resources;
pub mod tables;

pub use resources::resources;

use std::sync::Arc;

use serde_json::Value;

use crate::error::{ApiError, Cause};
use crate::kinds::{DeleteAdmission, KindStrategy, WriteOperation};
use crate::resources::ResourceDef;
use apimachinery::openapi::unknown_fields;
use apimachinery::table::TableConvertor;

/// The strategy of Karmada's kinds.
#[derive(Debug, Clone, Copy)]
pub struct KarmadaKinds;

/// Karmada's resource-deletion-protection webhook, for every resource.
#[derive(Debug, Clone, Copy)]
pub struct DeletionProtection;

/// Installs Karmada's kinds and delete admission into the generic server; every way of
/// assembling a server calls it before it creates any state.
pub fn install() {
    crate::kinds::install(&KarmadaKinds, &DeletionProtection);
}

impl KindStrategy for KarmadaKinds {
    fn table_convertor(&self, def: &ResourceDef) -> Arc<dyn TableConvertor> {
        Arc::new(tables::convertor(&def.version, &def.kind))
    }

    fn prune_unknown(&self, def: &ResourceDef, obj: &mut Value) -> Vec<String> {
        let mut out = match obj.get_mut("metadata") {
            Some(meta) => unknown_fields::prune_object_meta(meta, "metadata"),
            None => Vec::new(),
        };
        // Karmada's admission re-encodes the typed object, which prunes; here we only report.
        out.extend(karmada_api::schema::unknown_fields_at(
            &def.version,
            &def.kind,
            obj,
        ));
        out
    }

    fn openapi_schema(&self, def: &ResourceDef) -> Option<&'static Value> {
        karmada_api::schema::openapi_schema_at(&def.version, &def.kind)
    }

    fn converts(&self, def: &ResourceDef) -> bool {
        karmada_api::conversion::converts(&def.kind, &def.version)
    }

    fn on_read(&self, def: &ResourceDef, stored: &Value) -> Option<Value> {
        karmada_api::conversion::from_storage(&def.kind, &def.version, stored)
    }

    fn to_storage(&self, def: &ResourceDef, obj: &mut Value) -> Result<(), ApiError> {
        karmada_api::conversion::to_storage(&def.kind, &def.version, obj)
            .map_err(|e| admission_error(def, obj, &e))
    }

    fn validate_name(&self, def: &ResourceDef, name: &str) -> Vec<String> {
        karmada_api::kind_info(&def.kind)
            .map(|info| info.validate_name(name, false))
            .unwrap_or_default()
    }

    fn admission_reads_peers(&self, def: &ResourceDef) -> bool {
        karmada_api::admission_reads_peers(&def.kind)
    }

    fn admit(
        &self,
        def: &ResourceDef,
        op: WriteOperation,
        obj: &mut Value,
        old: Option<&Value>,
        peers: &[Value],
    ) -> Result<(), ApiError> {
        let op = match op {
            WriteOperation::Create => karmada_api::Operation::Create,
            WriteOperation::Update => karmada_api::Operation::Update,
            WriteOperation::UpdateStatus => karmada_api::Operation::UpdateStatus,
        };
        karmada_api::admit_with_peers(&def.kind, op, obj, old, peers)
            .map_err(|e| admission_error(def, obj, &e))?;
        if def.kind == "MultiClusterIngress" && op != karmada_api::Operation::UpdateStatus {
            validate_multi_cluster_ingress(def, obj)?;
        }
        Ok(())
    }

    /// All but Cluster, whose admission decodes and canonicalises the whole object, and older
    /// versions served by conversion, which convert the whole object.
    fn status_admission_reads_only_status(&self, def: &ResourceDef) -> bool {
        karmada_api::status_admission_reads_only_status(&def.kind) && !self.converts(def)
    }

    fn warnings(&self, def: &ResourceDef, obj: &Value) -> Vec<String> {
        karmada_api::ineffective::warnings(&def.kind, obj)
    }
}

impl DeleteAdmission for DeletionProtection {
    fn admit_delete(&self, def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
        karmada_api::admit_delete(obj).map_err(|e| admission_error(def, obj, &e))
    }
}

/// A Karmada admission refusal as the API error kube-apiserver would return.
fn admission_error(def: &ResourceDef, obj: &Value, e: &karmada_api::AdmissionError) -> ApiError {
    let name = apimachinery::meta::name(obj);
    let causes: Vec<Cause> = e
        .field_errors()
        .iter()
        .map(|f| Cause {
            reason: f.reason().to_string(),
            message: f.error_body(),
            field: f.field.to_string(),
        })
        .collect();
    match e {
        karmada_api::AdmissionError::Invalid(_) => {
            let mut err = ApiError::invalid(&def.group, &def.kind, name, causes);
            err.message = e.status_message(&def.kind, &def.group, name);
            err
        }
        karmada_api::AdmissionError::BadRequest(m) => ApiError::bad_request(m.clone()),
        karmada_api::AdmissionError::Denied { code, .. } => {
            let mut err = ApiError::forbidden_message(&def.group, &def.plural, name, e.to_string());
            err.code = *code;
            if *code != 403 {
                err.reason = if *code == 400 {
                    "BadRequest"
                } else {
                    "InternalError"
                };
            }
            err
        }
    }
}

/// karmada-webhook's MultiClusterIngress validation (pkg/webhook/multiclusteringress): the
/// spec is validated as kube validates an Ingress's, and a failure is the webhook's denial.
fn validate_multi_cluster_ingress(def: &ResourceDef, obj: &Value) -> Result<(), ApiError> {
    let causes = kube_registry::validate_ingress_spec(obj);
    if causes.is_empty() {
        return Ok(());
    }
    let errors: Vec<String> = causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect();
    let message = if errors.len() == 1 {
        errors[0].clone()
    } else {
        format!("[{}]", errors.join(", "))
    };
    Err(ApiError::forbidden_message(
        &def.group,
        &def.plural,
        apimachinery::meta::name(obj),
        format!(
            "admission webhook \"multiclusteringress.karmada.io\" denied the request: {message}"
        ),
    ))
}

/// The CustomResourceDefinitions Karmada's installer puts into karmada-apiserver that are not
/// Karmada's own kinds: the Multi-Cluster Services API's ServiceExport and ServiceImport
/// (charts/karmada/_crds/bases/multicluster), which Karmada's multi-cluster service
/// controllers act on and users propagate to their members.
pub fn installed_crds() -> Vec<Value> {
    [
        include_str!("crds/serviceexports.multicluster.x-k8s.io.yaml"),
        include_str!("crds/serviceimports.multicluster.x-k8s.io.yaml"),
    ]
    .iter()
    .filter_map(|text| match serde_yaml::from_str(text) {
        Ok(v) => Some(v),
        Err(e) => {
            tracing::error!(error = %e, "an installed CustomResourceDefinition does not parse");
            None
        }
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(kind: &str) -> ResourceDef {
        resources()
            .into_iter()
            .find(|d| d.kind == kind)
            .unwrap_or_else(|| panic!("{kind} is served"))
    }

    #[test]
    fn a_protected_object_cannot_be_deleted() {
        let d = def("PropagationPolicy");
        let obj = json!({"metadata": {"name": "p", "namespace": "n", "labels": {
            "resourcetemplate.karmada.io/deletion-protected": "Always"}}});
        let e = DeletionProtection
            .admit_delete(&d, &obj)
            .expect_err("protected");
        assert_eq!(e.code, 403);
        assert_eq!(e.reason, "Forbidden");
        DeletionProtection
            .admit_delete(&d, &json!({"metadata": {"name": "p", "namespace": "n"}}))
            .expect("not protected");
    }

    #[test]
    fn an_invalid_cluster_is_unprocessable_with_karmadas_message() {
        let d = def("Cluster");
        let mut obj = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "m1"}, "spec": {}});
        let e = KarmadaKinds
            .admit(&d, WriteOperation::Create, &mut obj, None, &[])
            .expect_err("a Cluster needs an apiEndpoint or pull mode");
        assert_eq!(e.code, 422, "{e}");
        assert!(
            e.message
                .starts_with("Cluster.cluster.karmada.io \"m1\" is invalid"),
            "{e}"
        );
    }
}
