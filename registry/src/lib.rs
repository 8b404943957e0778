//! The built-in kinds' registry strategies, as k8s.io/kubernetes/pkg/registry and the
//! validation and defaulting of pkg/apis/* give them to kube-apiserver 1.32: defaulting,
//! PrepareForCreate/PrepareForUpdate and validation of objects in Kubernetes JSON
//! (`serde_json::Value`).
//!
//! The server reaches all of it through one interface, [`Strategy`] ([`strategy_for`] gives the
//! strategy of a group and kind), and calls, in kube's order:
//! - create: [`Strategy::default`] (decoding) → fill uid/creationTimestamp/name →
//!   [`Strategy::prepare_for_create`] → [`Strategy::validate`] with `old = None`;
//! - update: [`Strategy::default`] → [`Strategy::prepare_for_update`] (rest.BeforeUpdate +
//!   PrepareForUpdate) → [`Strategy::validate`] with `old = Some(stored)`.
//!
//! [`resources`] says what one served resource is (`ResourceDef`: names, scope, subresources,
//! storage prefix, where its behaviour comes from) and holds the fixed table of the built-in
//! resources the server serves; the kinds a layer above registers (Karmada's) are its own.
//!
//! Validation expects a defaulted object, as kube validates only after decoding applied the
//! defaults (`terminationGracePeriodSeconds: Required value` is what an undefaulted pod gets).
//! Namespace presence/absence and `resourceVersion` are the server's to check.
//!
//! This crate has no I/O: it must not depend on an async runtime, an HTTP stack, storage or the
//! API server itself; of this workspace it uses only `apimachinery` and `certs`, and it knows
//! no Karmada.

pub mod admissionregistration;
mod apps;
mod batch;
pub mod certificates;
pub mod conversion;
mod core;
mod csi;
mod defaults;
mod endpointslice;
mod events;
mod field;
mod flowcontrol;
mod hpa_v1;
mod ingressclass;
mod json;
mod meta;
mod names;
mod others;
mod pod;
mod replication;
pub mod resources;
mod runtimeclass;
mod strategy;

use std::collections::BTreeSet;

use serde_json::Value;

use apimachinery::status::Cause;

pub use names::{is_dns1123_label, is_dns1123_subdomain};

/// Applies kube's defaulting for a built-in kind (what `kubectl get -o yaml` shows after a
/// create): pod spec and container defaults, workload strategies, Service traffic policies and
/// IP families, Secret `stringData` folding, canonical quantities, and so on. Unknown kinds
/// are left alone.
pub(crate) fn default_object(group: &str, kind: &str, obj: &mut Value) {
    defaults::default_object(group, kind, obj);
}

/// kube's PrepareForCreate for a built-in kind: resets `status` to its initial value (e.g.
/// `{"phase": "Pending"}` for a PVC, `{"loadBalancer": {}}` for a Service), adds the
/// `kubernetes` finalizer to a Namespace, records a CRD's storage version, and generates a
/// Job's selector and template labels from `metadata.uid` (which must be set before).
pub(crate) fn prepare_for_create(group: &str, kind: &str, obj: &mut Value) {
    strategy::prepare_for_create(group, kind, obj);
}

/// kube's rest.BeforeUpdate and PrepareForUpdate for a built-in kind: keeps the stored
/// `uid` (when absent), `creationTimestamp`, `deletionTimestamp` and grace period; keeps the
/// stored `status` of kinds with a status subresource and a Namespace's `spec.finalizers`;
/// for a Service, re-fills allocated values the client omitted (clusterIP(s), nodePorts,
/// healthCheckNodePort) and drops the ones a type change makes unused.
pub(crate) fn prepare_for_update(group: &str, kind: &str, new: &mut Value, old: &Value) {
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
            | "discovery.k8s.io"
            | "events.k8s.io"
    )
}

/// The problem with `name` as the name of a `group`/`kind` object, in kube's words (several
/// problems are joined with `, `); `None` when the name is valid. For CRDs and APIServices only
/// the format is checked here, not the `plural.group` / `version.group` match.
pub(crate) fn validate_name(group: &str, kind: &str, name: &str) -> Option<String> {
    let msgs = name_rule(group, kind)(name, false);
    (!msgs.is_empty()).then(|| msgs.join(", "))
}

/// kube-apiserver's validation of a built-in object on create (`old = None`) or update
/// (`old = Some(stored object)`), as metav1.StatusCauses (`field`, `reason`, and `message` =
/// kube's ErrorBody, e.g. `Required value`). Empty means valid. Kinds this module does not
/// know get kube's generic ObjectMeta checks only (as custom resources do).
/// kube's validation of an Ingress spec (`ValidateIngressSpec`) on any object with an
/// IngressSpec as its `spec`, e.g. Karmada's MultiClusterIngress.
pub fn validate_ingress_spec(obj: &Value) -> Vec<Cause> {
    let mut errs = Vec::new();
    others::validate_ingress(obj, &mut errs);
    errs
}

pub(crate) fn validate(group: &str, kind: &str, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
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
        ("", "ReplicationController") => {
            replication::validate_replication_controller(obj, &mut errs)
        }
        ("", "PodTemplate") => replication::validate_pod_template(obj, &mut errs),
        ("" | events::GROUP, "Event") => events::validate(group, obj, old, &mut errs),
        ("discovery.k8s.io", "EndpointSlice") => endpointslice::validate(obj, old, &mut errs),
        ("networking.k8s.io", "IngressClass") => ingressclass::validate(obj, old, &mut errs),
        ("node.k8s.io", "RuntimeClass") => runtimeclass::validate(obj, old, &mut errs),
        (flowcontrol::GROUP, "FlowSchema") => flowcontrol::validate_flow_schema(obj, &mut errs),
        (flowcontrol::GROUP, "PriorityLevelConfiguration") => {
            flowcontrol::validate_priority_level(obj, &mut errs)
        }
        (csi::GROUP, "CSIDriver") => csi::validate_csi_driver(obj, old, &mut errs),
        (csi::GROUP, "CSINode") => csi::validate_csi_node(obj, old, &mut errs),
        (csi::GROUP, "CSIStorageCapacity") => {
            csi::validate_csi_storage_capacity(obj, old, &mut errs)
        }
        (csi::GROUP, "VolumeAttachment") => csi::validate_volume_attachment(obj, old, &mut errs),
        (admissionregistration::GROUP, _) => admissionregistration::validate(kind, obj, &mut errs),
        _ => {}
    }
    // kube runs ObjectMeta checks more than once on update; the aggregate message dedups them.
    let mut seen = BTreeSet::new();
    errs.retain(|c| seen.insert((c.field.clone(), c.reason.clone(), c.message.clone())));
    errs
}

/// What the server asks of a kind's registry strategy: kube's rest.RESTCreateStrategy and
/// RESTUpdateStrategy (PrepareForCreate, PrepareForUpdate, Validate, ValidateUpdate) plus the
/// defaulting its decoder applies and the name rule of its ObjectMeta validation.
pub trait Strategy: Send + Sync {
    /// Applies the defaults decoding applies (what `kubectl get -o yaml` shows after a create).
    fn default(&self, obj: &mut Value);
    /// kube's PrepareForCreate (`metadata.uid` must be set before).
    fn prepare_for_create(&self, obj: &mut Value);
    /// kube's rest.BeforeUpdate and PrepareForUpdate, given the stored object.
    fn prepare_for_update(&self, new: &mut Value, old: &Value);
    /// The problem with `name` as this kind's object name, in kube's words; `None` when valid.
    fn validate_name(&self, name: &str) -> Option<String>;
    /// Validation on create (`old = None`) or update (`old = Some(stored)`); empty when valid.
    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause>;
}

/// The strategy of one built-in kind; kinds this crate does not know are left as they are and
/// get kube's generic ObjectMeta checks only (as custom resources do).
#[derive(Clone, Copy, Debug)]
pub struct BuiltinStrategy<'a> {
    group: &'a str,
    kind: &'a str,
}

/// The strategy of the kind `kind` in API group `group` (`""` for the core group).
pub fn strategy_for<'a>(group: &'a str, kind: &'a str) -> BuiltinStrategy<'a> {
    BuiltinStrategy { group, kind }
}

impl Strategy for BuiltinStrategy<'_> {
    fn default(&self, obj: &mut Value) {
        default_object(self.group, self.kind, obj);
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        prepare_for_create(self.group, self.kind, obj);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        prepare_for_update(self.group, self.kind, new, old);
    }

    fn validate_name(&self, name: &str) -> Option<String> {
        validate_name(self.group, self.kind, name)
    }

    fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        validate(self.group, self.kind, obj, old)
    }
}

#[cfg(test)]
mod tests;
