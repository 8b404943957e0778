//! Defaulting and validation of Kubernetes built-in kinds, as kube-apiserver 1.32 does them, on
//! objects in Kubernetes JSON (`serde_json::Value`).
//!
//! The registry calls, in kube's order:
//! - create: [`default_object`] (decoding) → fill uid/creationTimestamp/name → [`prepare_for_create`]
//!   (strategy PrepareForCreate) → [`validate`] with `old = None`;
//! - update: [`default_object`] → [`prepare_for_update`] (rest.BeforeUpdate + PrepareForUpdate) →
//!   [`validate`] with `old = Some(stored)`.
//!
//! [`validate`] expects a defaulted object, as kube validates only after decoding applied the
//! defaults (`terminationGracePeriodSeconds: Required value` is what an undefaulted pod gets).
//! Namespace presence/absence and `resourceVersion` are the registry's to check.

mod apps;
mod batch;
pub mod certificates;
mod core;
mod defaults;
mod field;
mod json;
mod meta;
mod names;
mod others;
mod pod;
pub(crate) mod quantity;
mod strategy;

use std::collections::BTreeSet;

use serde_json::Value;

use crate::error::Cause;

pub use names::{is_dns1123_label, is_dns1123_subdomain};

/// Applies kube's defaulting for a built-in kind (what `kubectl get -o yaml` shows after a
/// create): pod spec and container defaults, workload strategies, Service traffic policies and
/// IP families, Secret `stringData` folding, canonical quantities, and so on. Unknown kinds
/// are left alone.
pub fn default_object(group: &str, kind: &str, obj: &mut Value) {
    defaults::default_object(group, kind, obj);
}

/// kube's PrepareForCreate for a built-in kind: resets `status` to its initial value (e.g.
/// `{"phase": "Pending"}` for a PVC, `{"loadBalancer": {}}` for a Service), adds the
/// `kubernetes` finalizer to a Namespace, records a CRD's storage version, and generates a
/// Job's selector and template labels from `metadata.uid` (which must be set before).
pub fn prepare_for_create(group: &str, kind: &str, obj: &mut Value) {
    strategy::prepare_for_create(group, kind, obj);
}

/// kube's rest.BeforeUpdate and PrepareForUpdate for a built-in kind: keeps the stored
/// `uid` (when absent), `creationTimestamp`, `deletionTimestamp` and grace period; keeps the
/// stored `status` of kinds with a status subresource and a Namespace's `spec.finalizers`;
/// for a Service, re-fills allocated values the client omitted (clusterIP(s), nodePorts,
/// healthCheckNodePort) and drops the ones a type change makes unused.
pub fn prepare_for_update(group: &str, kind: &str, new: &mut Value, old: &Value) {
    strategy::prepare_for_update(group, kind, new, old);
}

type NameFn = fn(&str, bool) -> Vec<String>;

/// A name rule that may look at the object (CRD and APIService names derive from the spec).
type ObjectNameFn<'a> = Box<dyn Fn(&str, bool) -> Vec<String> + 'a>;

fn path_segment(name: &str, prefix: bool) -> Vec<String> {
    names::path_segment_name(name, prefix)
}

/// The name rule kube applies to `group`/`kind` (a DNS-1123 subdomain unless listed).
fn name_rule(group: &str, kind: &str) -> NameFn {
    match (group, kind) {
        ("", "Namespace") | ("apps", "StatefulSet") => names::name_is_dns_label,
        ("", "Service") => names::name_is_dns1035_label,
        ("rbac.authorization.k8s.io", _) | ("apiregistration.k8s.io", "APIService") => path_segment,
        _ => names::name_is_dns_subdomain,
    }
}

/// Whether kube validates this kind with pkg/apis/core/validation's ObjectMeta rules (which
/// add the "standard finalizer name" check) rather than apimachinery's generic ones.
fn uses_core_meta(group: &str) -> bool {
    matches!(
        group,
        "" | "apps"
            | "batch"
            | "rbac.authorization.k8s.io"
            | "autoscaling"
            | "policy"
            | "networking.k8s.io"
            | "scheduling.k8s.io"
            | "storage.k8s.io"
    )
}

/// The problem with `name` as the name of a `group`/`kind` object, in kube's words (several
/// problems are joined with `, `); `None` when the name is valid. For CRDs and APIServices only
/// the format is checked here, not the `plural.group` / `version.group` match.
pub fn validate_name(group: &str, kind: &str, name: &str) -> Option<String> {
    let msgs = name_rule(group, kind)(name, false);
    (!msgs.is_empty()).then(|| msgs.join(", "))
}

/// kube-apiserver's validation of a built-in object on create (`old = None`) or update
/// (`old = Some(stored object)`), as metav1.StatusCauses (`field`, `reason`, and `message` =
/// kube's ErrorBody, e.g. `Required value`). Empty means valid. Kinds this module does not
/// know get kube's generic ObjectMeta checks only (as custom resources do).
pub fn validate(group: &str, kind: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let rule = name_rule(group, kind);
    let name_fn: ObjectNameFn = match (group, kind) {
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            Box::new(|n, p| others::crd_name(obj, n, p))
        }
        ("apiregistration.k8s.io", "APIService") => {
            Box::new(|n, _| others::api_service_name(obj, n))
        }
        _ => Box::new(rule),
    };
    let core_meta = uses_core_meta(group);
    let mut errs = Vec::new();
    if let Some(old) = old {
        errs.extend(meta::validate_object_meta_update(obj, old, core_meta));
    }
    errs.extend(meta::validate_object_meta(obj, &name_fn, core_meta));
    match (group, kind) {
        ("", "Pod") => {
            let empty = Value::Null;
            let spec = obj.get("spec").unwrap_or(&empty);
            errs.extend(pod::validate_pod_spec(
                spec,
                &field::Path::new("spec"),
                true,
            ));
        }
        ("", "Service") => core::validate_service(obj, old, &mut errs),
        ("", "ConfigMap") => core::validate_config_map(obj, old, &mut errs),
        ("", "Secret") => core::validate_secret(obj, old, &mut errs),
        ("", "Namespace") => core::validate_namespace(obj, &mut errs),
        (certificates::GROUP, certificates::KIND) => certificates::validate(obj, old, &mut errs),
        ("", "PersistentVolumeClaim") => core::validate_pvc(obj, old, &mut errs),
        ("apps", _) => apps::validate(kind, obj, old, &mut errs),
        ("batch", "Job") => batch::validate_job(obj, old, &mut errs),
        ("batch", "CronJob") => batch::validate_cron_job(obj, old, &mut errs),
        ("rbac.authorization.k8s.io", "Role") => others::validate_role(obj, true, &mut errs),
        ("rbac.authorization.k8s.io", "ClusterRole") => {
            others::validate_role(obj, false, &mut errs)
        }
        ("rbac.authorization.k8s.io", "RoleBinding") => {
            others::validate_binding(obj, old, true, &mut errs)
        }
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            others::validate_binding(obj, old, false, &mut errs)
        }
        ("coordination.k8s.io", "Lease") => others::validate_lease(obj, &mut errs),
        ("autoscaling", "HorizontalPodAutoscaler") => others::validate_hpa(obj, &mut errs),
        ("policy", "PodDisruptionBudget") => others::validate_pdb(obj, &mut errs),
        ("networking.k8s.io", "Ingress") => others::validate_ingress(obj, &mut errs),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            others::validate_crd(obj, old, &mut errs)
        }
        ("apiregistration.k8s.io", "APIService") => others::validate_api_service(obj, &mut errs),
        _ => {}
    }
    // kube runs ObjectMeta checks more than once on update; the aggregate message dedups them.
    let mut seen = BTreeSet::new();
    errs.retain(|c| seen.insert((c.field.clone(), c.reason.clone(), c.message.clone())));
    errs
}

#[cfg(test)]
mod tests;
