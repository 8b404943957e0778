//! Karmada's webhooks for propagation and override policies (pkg/webhook/propagationpolicy,
//! clusterpropagationpolicy, overridepolicy, clusteroverridepolicy).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::{AdmissionError, Operation, Webhooks, add_finalizer, label, permanent_id, set_label};
use crate::policy::v1alpha1::{
    ClusterOverridePolicy, ClusterPropagationPolicy, OverridePolicy, PropagationPolicy,
    PropagationSpec, PurgeMode, ReplicaDivisionPreference, ReplicaSchedulingType, SpreadFieldValue,
};
use crate::validation::policy::{validate_override_spec, validate_propagation_spec};
use crate::well_known::{finalizers, labels};

/// The apiVersion ServiceImport selectors must use to turn on propagateDeps.
const SERVICE_IMPORT_API_VERSION: &str = "multicluster.x-k8s.io/v1alpha1";

/// Grace period the webhook sets for graceful application failover, in seconds.
const DEFAULT_GRACE_PERIOD_SECONDS: i32 = 600;

/// The defaults both propagation policy webhooks apply to the spec.
fn mutate_propagation_spec(spec: &mut PropagationSpec) {
    // SetDefaultSpreadConstraints
    for c in &mut spec.placement.spread_constraints {
        if c.spread_by_label.is_empty() && c.spread_by_field.is_none() {
            c.spread_by_field = Some(SpreadFieldValue::Cluster);
        }
        if c.min_groups == 0 {
            c.min_groups = 1;
        }
    }
    // ServiceImports only work with their derived Services and EndpointSlices alongside.
    if spec
        .resource_selectors
        .iter()
        .any(|s| s.kind == "ServiceImport" && s.api_version == SERVICE_IMPORT_API_VERSION)
    {
        spec.propagate_deps = true;
    }
    // SetReplicaDivisionPreferenceWeighted
    if spec.placement.replica_scheduling_type() == ReplicaSchedulingType::Divided
        && let Some(strategy) = &mut spec.placement.replica_scheduling
        && strategy.replica_division_preference.is_none()
    {
        strategy.replica_division_preference = Some(ReplicaDivisionPreference::Weighted);
    }
    // SetDefaultGracePeriodSeconds
    if let Some(app) = spec.failover.as_mut().and_then(|f| f.application.as_mut())
        && matches!(
            app.purge_mode,
            Some(PurgeMode::Gracefully | PurgeMode::Graciously)
        )
        && app.grace_period_seconds.is_none()
    {
        app.grace_period_seconds = Some(DEFAULT_GRACE_PERIOD_SECONDS);
    }
}

/// The checks both propagation policy validating webhooks make.
fn validate_propagation(
    webhook: &'static str,
    id_label: &str,
    meta: &ObjectMeta,
    spec: &PropagationSpec,
    old: Option<(&ObjectMeta, &PropagationSpec)>,
    op: Operation,
    namespace: &str,
) -> Result<(), AdmissionError> {
    if op == Operation::Update
        && let Some((old_meta, old_spec)) = old
    {
        if spec.scheduler_name != old_spec.scheduler_name {
            return Err(AdmissionError::denied(
                webhook,
                "the schedulerName should not be updated",
            ));
        }
        if label(meta, id_label) != label(old_meta, id_label) {
            return Err(AdmissionError::denied(
                webhook,
                format!(
                    "label {id_label} is immutable, it can only be set by the system during creation"
                ),
            ));
        }
    }
    if !meta
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(id_label))
    {
        return Err(AdmissionError::denied(
            webhook,
            format!(
                "label {id_label} is required, it should be set by the mutating admission webhook during creation"
            ),
        ));
    }
    let errors = validate_propagation_spec(spec, namespace);
    if !errors.is_empty() {
        return Err(AdmissionError::denied_fields(webhook, errors));
    }
    Ok(())
}

impl Webhooks for PropagationPolicy {
    const VALIDATES: bool = true;

    fn mutates(op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutate(&mut self, op: Operation) -> Result<(), AdmissionError> {
        let namespace = self.metadata.namespace.clone().unwrap_or_default();
        for selector in &mut self.spec.resource_selectors {
            if selector.namespace.is_empty() {
                selector.namespace = namespace.clone();
            }
        }
        mutate_propagation_spec(&mut self.spec);
        if op == Operation::Create {
            set_label(
                &mut self.metadata,
                labels::PROPAGATION_POLICY_PERMANENT_ID,
                permanent_id(),
            );
            add_finalizer(
                &mut self.metadata,
                finalizers::PROPAGATION_POLICY_CONTROLLER,
            );
        }
        Ok(())
    }

    fn validate(&self, old: Option<&Self>, op: Operation) -> Result<(), AdmissionError> {
        validate_propagation(
            "propagationpolicy.karmada.io",
            labels::PROPAGATION_POLICY_PERMANENT_ID,
            &self.metadata,
            &self.spec,
            old.map(|o| (&o.metadata, &o.spec)),
            op,
            self.metadata.namespace.as_deref().unwrap_or(""),
        )
    }
}

impl Webhooks for ClusterPropagationPolicy {
    const VALIDATES: bool = true;

    fn mutates(op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutate(&mut self, op: Operation) -> Result<(), AdmissionError> {
        mutate_propagation_spec(&mut self.spec);
        if op == Operation::Create {
            set_label(
                &mut self.metadata,
                labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
                permanent_id(),
            );
            add_finalizer(
                &mut self.metadata,
                finalizers::CLUSTER_PROPAGATION_POLICY_CONTROLLER,
            );
        }
        Ok(())
    }

    fn validate(&self, old: Option<&Self>, op: Operation) -> Result<(), AdmissionError> {
        validate_propagation(
            "clusterpropagationpolicy.karmada.io",
            labels::CLUSTER_PROPAGATION_POLICY_PERMANENT_ID,
            &self.metadata,
            &self.spec,
            old.map(|o| (&o.metadata, &o.spec)),
            op,
            "",
        )
    }
}

impl Webhooks for OverridePolicy {
    const VALIDATES: bool = true;

    fn mutates(op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutate(&mut self, _op: Operation) -> Result<(), AdmissionError> {
        let namespace = self.metadata.namespace.clone().unwrap_or_default();
        for selector in &mut self.spec.resource_selectors {
            if selector.namespace.is_empty() {
                selector.namespace = namespace.clone();
            }
        }
        Ok(())
    }

    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        let errors =
            validate_override_spec(&self.spec, self.metadata.namespace.as_deref().unwrap_or(""));
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AdmissionError::denied_fields(
                "overridepolicy.karmada.io",
                errors,
            ))
        }
    }
}

/// Karmada registers no mutating webhook for ClusterOverridePolicy.
impl Webhooks for ClusterOverridePolicy {
    const VALIDATES: bool = true;

    fn validate(&self, _old: Option<&Self>, _op: Operation) -> Result<(), AdmissionError> {
        let errors = validate_override_spec(&self.spec, "");
        if errors.is_empty() {
            Ok(())
        } else {
            Err(AdmissionError::denied_fields(
                "clusteroverridepolicy.karmada.io",
                errors,
            ))
        }
    }
}
