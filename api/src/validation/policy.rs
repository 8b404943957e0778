//! Karmada's checks of propagation and override policies (pkg/util/validation), with its paths
//! and messages.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use super::names::{is_qualified_name, validate_annotations, validate_label_name, validate_labels};
use crate::field::{FieldError, FieldPath};
use crate::policy::v1alpha1::{
    ApplicationFailoverBehavior, ClusterAffinity, ClusterAffinityTerm, ClusterFailoverBehavior,
    FailoverBehavior, JsonPatchOperation, OverrideSpec, OverriderOperator, Placement,
    PreemptionBehavior, PropagationSpec, PurgeMode, ReplicaDivisionPreference,
    ReplicaSchedulingStrategy, ReplicaSchedulingType, ResourceSelector, SpreadConstraint,
    SpreadFieldValue, StatePreservation, Suspension, WorkloadAffinity, YamlPatchOperation,
};

/// Checks a PropagationSpec (ValidatePropagationSpec). `policy_namespace` is the namespace of
/// a PropagationPolicy, empty for a ClusterPropagationPolicy.
pub fn validate_propagation_spec(
    spec: &PropagationSpec,
    policy_namespace: &str,
) -> Vec<FieldError> {
    let spec_path = FieldPath::new("spec");
    let mut errs = validate_placement(&spec.placement, &spec_path.child("placement"));
    let app_failover = spec
        .failover
        .as_ref()
        .is_some_and(|f| f.application.is_some());
    if app_failover && !spec.propagate_deps {
        errs.push(FieldError::invalid(
            spec_path.child("propagateDeps"),
            spec.propagate_deps,
            "application failover is set, propagateDeps must be true",
        ));
    }
    errs.extend(validate_failover(
        spec.failover.as_ref(),
        &spec_path.child("failover"),
    ));
    let selectors_path = spec_path.child("resourceSelectors");
    errs.extend(validate_resource_selectors(
        &spec.resource_selectors,
        policy_namespace,
        &selectors_path,
    ));
    if spec.preemption == Some(PreemptionBehavior::Always) {
        for (i, selector) in spec.resource_selectors.iter().enumerate() {
            if selector.name.is_empty() {
                errs.push(FieldError::invalid(
                    selectors_path.index(i).child("name"),
                    "",
                    "name cannot be empty if preemption is Always, the empty name may cause unexpected resources preemption",
                ));
            }
        }
    }
    errs.extend(validate_suspension(
        spec.suspension.as_ref(),
        &spec_path.child("suspension"),
    ));
    errs
}

fn validate_resource_selectors(
    selectors: &[ResourceSelector],
    policy_namespace: &str,
    path: &FieldPath,
) -> Vec<FieldError> {
    if policy_namespace.is_empty() {
        return Vec::new();
    }
    selectors
        .iter()
        .enumerate()
        .filter(|(_, s)| s.namespace != policy_namespace)
        .map(|(i, s)| {
            FieldError::invalid(
                path.index(i).child("namespace"),
                s.namespace.as_str(),
                "namespace of resource selector must be the same as the namespace of the policy",
            )
        })
        .collect()
}

fn validate_suspension(suspension: Option<&Suspension>, path: &FieldPath) -> Vec<FieldError> {
    let Some(s) = suspension else {
        return Vec::new();
    };
    let all = s.dispatching == Some(true);
    let some = s
        .dispatching_on_clusters
        .as_ref()
        .is_some_and(|c| !c.cluster_names.is_empty());
    if all && some {
        // Karmada reports this one level too deep (spec.suspension.suspension); kept as is.
        return vec![FieldError::invalid_struct(
            path.child("suspension"),
            &s,
            "suspension dispatching cannot co-exist with dispatchingOnClusters.clusterNames",
        )];
    }
    Vec::new()
}

/// Checks a Placement (ValidatePlacement).
pub fn validate_placement(placement: &Placement, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if placement.cluster_affinity.is_some() && !placement.cluster_affinities.is_empty() {
        errs.push(FieldError::invalid_struct(
            path,
            &placement,
            "clusterAffinities cannot co-exist with clusterAffinity",
        ));
    }
    let overflow_allowed = is_overflow_scheduling_allowed(placement.replica_scheduling.as_ref());
    for (i, term) in placement.cluster_affinities.iter().enumerate() {
        if !term.overflow_affinities.is_empty() && !overflow_allowed {
            errs.push(FieldError::invalid_struct(
                path.child("clusterAffinities").index(i).child("overflowAffinities"),
                &term.overflow_affinities,
                "overflowAffinities can only be used together with dynamic weight or aggregated scheduling",
            ));
        }
    }
    errs.extend(validate_cluster_affinity(
        placement.cluster_affinity.as_ref(),
        &path.child("clusterAffinity"),
    ));
    errs.extend(validate_cluster_affinities(
        &placement.cluster_affinities,
        &path.child("clusterAffinities"),
    ));
    errs.extend(validate_spread_constraints(
        &placement.spread_constraints,
        &path.child("spreadConstraints"),
    ));
    errs.extend(validate_workload_affinity(
        placement.workload_affinity.as_ref(),
        &path.child("workloadAffinity"),
    ));
    for (i, toleration) in placement.cluster_tolerations.iter().enumerate() {
        // Lt/Gt compare node-level numbers; Karmada refuses them for cluster tolerations.
        if let Some(op @ ("Lt" | "Gt")) = toleration.operator.as_deref() {
            errs.push(FieldError::not_supported(
                path.child("clusterTolerations").index(i).child("operator"),
                op,
                &["", "Exists", "Equal"],
            ));
        }
    }
    errs
}

/// Whether overflow affinities may be used: Divided with Aggregated, or with Weighted and a
/// dynamic weight (IsOverflowSchedulingAllowed).
pub fn is_overflow_scheduling_allowed(strategy: Option<&ReplicaSchedulingStrategy>) -> bool {
    let Some(s) = strategy else {
        return false;
    };
    if s.replica_scheduling_type != Some(ReplicaSchedulingType::Divided) {
        return false;
    }
    match s.replica_division_preference {
        Some(ReplicaDivisionPreference::Aggregated) => true,
        Some(ReplicaDivisionPreference::Weighted) => s
            .weight_preference
            .as_ref()
            .is_some_and(|w| w.dynamic_weight.is_some()),
        None => false,
    }
}

fn validate_workload_affinity(
    affinity: Option<&WorkloadAffinity>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let Some(a) = affinity else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    if let Some(term) = &a.affinity {
        for msg in is_qualified_name(&term.group_by_label_key) {
            errs.push(FieldError::invalid(
                path.child("affinity").child("groupByLabelKey"),
                term.group_by_label_key.as_str(),
                msg,
            ));
        }
    }
    if let Some(term) = &a.anti_affinity {
        for msg in is_qualified_name(&term.group_by_label_key) {
            errs.push(FieldError::invalid(
                path.child("antiAffinity").child("groupByLabelKey"),
                term.group_by_label_key.as_str(),
                msg,
            ));
        }
    }
    if let (Some(aff), Some(anti)) = (&a.affinity, &a.anti_affinity)
        && aff.group_by_label_key == anti.group_by_label_key
    {
        errs.push(FieldError::invalid_struct(
            path,
            &a,
            "affinity and antiAffinity must not use the same groupByLabelKey",
        ));
    }
    errs
}

/// Checks a ClusterAffinity (ValidateClusterAffinity): only its fieldSelector has rules.
pub fn validate_cluster_affinity(
    affinity: Option<&ClusterAffinity>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let Some(a) = affinity else {
        return Vec::new();
    };
    match validate_policy_field_selector(a) {
        Some(msg) => vec![FieldError::invalid_struct(
            path.child("fieldSelector"),
            &a.field_selector,
            msg,
        )],
        None => Vec::new(),
    }
}

/// The first problem of a fieldSelector: keys must be provider, region or zone, operators In or
/// NotIn (ValidatePolicyFieldSelector).
fn validate_policy_field_selector(affinity: &ClusterAffinity) -> Option<String> {
    let selector = affinity.field_selector.as_ref()?;
    for expr in &selector.match_expressions {
        if !matches!(expr.key.as_str(), "provider" | "region" | "zone") {
            return Some(format!(
                "unsupported key {}, must be provider, region, or zone",
                crate::field::go_quote(&expr.key)
            ));
        }
        if !matches!(expr.operator.as_str(), "In" | "NotIn") {
            return Some(format!(
                "unsupported operator {}, must be In or NotIn",
                crate::field::go_quote(&expr.operator)
            ));
        }
    }
    None
}

fn validate_cluster_affinities(terms: &[ClusterAffinityTerm], path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, term) in terms.iter().enumerate() {
        for msg in is_qualified_name(&term.affinity_name) {
            errs.push(FieldError::invalid(
                path.index(i),
                term.affinity_name.as_str(),
                msg,
            ));
        }
        if !names.insert(term.affinity_name.as_str()) {
            errs.push(FieldError::invalid_struct(
                path,
                &terms,
                "each affinity term in a policy must have a unique name",
            ));
        }
        errs.extend(validate_cluster_affinity(
            Some(&term.cluster_affinity),
            &path.index(i),
        ));
        errs.extend(validate_overflow_affinities(term, &path.index(i)));
    }
    errs
}

fn validate_overflow_affinities(term: &ClusterAffinityTerm, path: &FieldPath) -> Vec<FieldError> {
    if term.overflow_affinities.is_empty() {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let overflow_path = path.child("overflowAffinities");
    if term.cluster_affinity.is_empty() {
        errs.push(FieldError::invalid_struct(
            &overflow_path,
            &term.overflow_affinities,
            "overflowAffinities can only be used together with the inline ClusterAffinity",
        ));
    }
    let mut names = BTreeSet::from([term.affinity_name.as_str()]);
    for (i, overflow) in term.overflow_affinities.iter().enumerate() {
        let name_path = overflow_path.index(i).child("affinityName");
        for msg in is_qualified_name(&overflow.affinity_name) {
            errs.push(FieldError::invalid(
                &name_path,
                overflow.affinity_name.as_str(),
                msg,
            ));
        }
        if !names.insert(overflow.affinity_name.as_str()) {
            errs.push(FieldError::invalid(
                &name_path,
                overflow.affinity_name.as_str(),
                "overflow affinity name must be unique and must not duplicate the primary group's affinityName",
            ));
        }
        errs.extend(validate_cluster_affinity(
            Some(&overflow.cluster_affinity),
            &overflow_path.index(i),
        ));
    }
    errs
}

/// Checks spread constraints (ValidateSpreadConstraint).
pub fn validate_spread_constraints(
    constraints: &[SpreadConstraint],
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    // Per field: whether the "multiple constraints" error was already reported.
    let mut seen_fields: HashMap<SpreadFieldValue, bool> = HashMap::new();
    for (i, c) in constraints.iter().enumerate() {
        let item = path.index(i);
        if c.spread_by_field.is_some() && !c.spread_by_label.is_empty() {
            errs.push(FieldError::invalid_struct(
                &item,
                &c,
                "spreadByLabel should not co-exist with spreadByField",
            ));
        }
        if c.min_groups < 0 {
            errs.push(FieldError::invalid_struct(
                &item,
                &c,
                "minGroups lower than 0 is not allowed",
            ));
        }
        if c.max_groups < 0 {
            errs.push(FieldError::invalid_struct(
                &item,
                &c,
                "maxGroups lower than 0 is not allowed",
            ));
        }
        if c.max_groups > 0 && c.max_groups < c.min_groups {
            errs.push(FieldError::invalid_struct(
                &item,
                &c,
                "maxGroups lower than minGroups is not allowed",
            ));
        }
        if let Some(field) = c.spread_by_field {
            match seen_fields.get_mut(&field) {
                Some(reported) => {
                    if !*reported {
                        errs.push(FieldError::invalid_struct(
                            path,
                            &constraints,
                            format!(
                                "multiple {} spread constraints are not allowed",
                                field.as_str()
                            ),
                        ));
                        *reported = true;
                    }
                }
                None => {
                    seen_fields.insert(field, false);
                }
            }
        }
    }
    if !seen_fields.is_empty() && !seen_fields.contains_key(&SpreadFieldValue::Cluster) {
        errs.push(FieldError::invalid_struct(
            path,
            &constraints,
            "the cluster spread constraint must be enabled in one of the constraints in case of SpreadByField is enabled",
        ));
    }
    errs
}

/// Checks failover settings (ValidateFailover).
pub fn validate_failover(failover: Option<&FailoverBehavior>, path: &FieldPath) -> Vec<FieldError> {
    let Some(f) = failover else {
        return Vec::new();
    };
    let mut errs =
        validate_application_failover(f.application.as_ref(), &path.child("application"));
    errs.extend(validate_cluster_failover(
        f.cluster.as_ref(),
        &path.child("cluster"),
    ));
    errs
}

fn is_graceful(mode: Option<PurgeMode>) -> bool {
    matches!(mode, Some(PurgeMode::Gracefully | PurgeMode::Graciously))
}

fn validate_application_failover(
    app: Option<&ApplicationFailoverBehavior>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let Some(app) = app else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    if let Some(t) = app.decision_conditions.toleration_seconds
        && t < 0
    {
        errs.push(FieldError::invalid(
            path.child("decisionConditions").child("tolerationSeconds"),
            t,
            "must be greater than or equal to 0",
        ));
    }
    let grace_path = path.child("gracePeriodSeconds");
    match app.grace_period_seconds {
        Some(g) if !is_graceful(app.purge_mode) => {
            errs.push(FieldError::invalid(
                &grace_path,
                g,
                "only takes effect when purgeMode is gracefully",
            ));
        }
        None if is_graceful(app.purge_mode) => {
            errs.push(FieldError::invalid(
                &grace_path,
                Value::Null,
                "should not be empty when purgeMode is gracefully",
            ));
        }
        _ => {}
    }
    if let Some(g) = app.grace_period_seconds
        && g <= 0
    {
        errs.push(FieldError::invalid(
            &grace_path,
            g,
            "must be greater than 0",
        ));
    }
    if let Some(sp) = &app.state_preservation {
        errs.extend(validate_state_preservation(
            sp,
            &path.child("statePreservation"),
        ));
    }
    errs
}

fn validate_cluster_failover(
    cluster: Option<&ClusterFailoverBehavior>,
    path: &FieldPath,
) -> Vec<FieldError> {
    match cluster.and_then(|c| c.state_preservation.as_ref()) {
        Some(sp) => validate_state_preservation(sp, &path.child("statePreservation")),
        None => Vec::new(),
    }
}

fn validate_state_preservation(sp: &StatePreservation, path: &FieldPath) -> Vec<FieldError> {
    sp.rules
        .iter()
        .enumerate()
        .flat_map(|(i, rule)| {
            validate_label_name(
                &rule.alias_label_name,
                path.child("rules")
                    .index(i)
                    .child("aliasLabelName")
                    .as_str(),
            )
        })
        .collect()
}

/// Checks an OverrideSpec (ValidateOverrideSpec). `policy_namespace` is the namespace of an
/// OverridePolicy, empty for a ClusterOverridePolicy.
pub fn validate_override_spec(spec: &OverrideSpec, policy_namespace: &str) -> Vec<FieldError> {
    let spec_path = FieldPath::new("spec");
    let mut errs = Vec::new();
    if spec.target_cluster.is_some() {
        errs.extend(validate_cluster_affinity(
            spec.target_cluster.as_ref(),
            &spec_path.child("targetCluster"),
        ));
    }
    if spec.target_cluster.is_some() && !spec.override_rules.is_empty() {
        errs.push(FieldError::invalid_struct(
            spec_path.child("targetCluster"),
            &spec.target_cluster,
            "overrideRules and targetCluster can't co-exist",
        ));
    }
    if !spec.overriders.is_empty() && !spec.override_rules.is_empty() {
        errs.push(FieldError::invalid_struct(
            spec_path.child("overriders"),
            &spec.overriders,
            "overrideRules and overriders can't co-exist",
        ));
    }
    errs.extend(validate_override_rules(spec, &spec_path));
    errs.extend(validate_resource_selectors(
        &spec.resource_selectors,
        policy_namespace,
        &spec_path.child("resourceSelectors"),
    ));
    errs
}

/// The message Go's jsonpointer returns for a pointer that is neither empty nor starts with '/'.
const JSON_POINTER_START_ERROR: &str =
    "JSON pointer must be empty or start with a \"/\nJSON pointer error";

fn check_json_pointer(pointer: &str) -> Option<&'static str> {
    (!pointer.is_empty() && !pointer.starts_with('/')).then_some(JSON_POINTER_START_ERROR)
}

fn validate_override_rules(spec: &OverrideSpec, spec_path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (r, rule) in spec.override_rules.iter().enumerate() {
        let rule_path = spec_path.child("overrideRules").index(r);
        let overriders_path = rule_path.child("overriders");
        for (i, o) in rule.overriders.annotations_overrider.iter().enumerate() {
            let p = overriders_path
                .child("annotationsOverrider")
                .index(i)
                .child("value");
            errs.extend(validate_annotations(&o.value, p.as_str()));
        }
        for (i, o) in rule.overriders.labels_overrider.iter().enumerate() {
            let p = overriders_path
                .child("labelsOverrider")
                .index(i)
                .child("value");
            errs.extend(validate_labels(&o.value, p.as_str()));
        }
        for (i, o) in rule.overriders.image_overrider.iter().enumerate() {
            if let Some(predicate) = &o.predicate
                && let Some(msg) = check_json_pointer(&predicate.path)
            {
                errs.push(FieldError::invalid(
                    overriders_path
                        .child("imageOverrider")
                        .index(i)
                        .child("predicate")
                        .child("path"),
                    predicate.path.as_str(),
                    msg,
                ));
            }
        }
        for (i, f) in rule.overriders.field_overrider.iter().enumerate() {
            let field_path = overriders_path.child("fieldOverrider").index(i);
            if !f.yaml.is_empty() && !f.json.is_empty() {
                errs.push(FieldError::invalid_struct(
                    &field_path,
                    &f,
                    "FieldOverrider has both YAML and JSON set. Only one is allowed",
                ));
            }
            if f.yaml.is_empty() && f.json.is_empty() {
                errs.push(FieldError::required(
                    &field_path,
                    "FieldOverrider must have either JSON or YAML set",
                ));
            }
            if let Some(msg) = check_json_pointer(&f.field_path) {
                errs.push(FieldError::invalid(
                    field_path.child("fieldPath"),
                    f.field_path.as_str(),
                    msg,
                ));
            }
            errs.extend(validate_patch_operations(
                f.json.iter().map(JsonOrYaml::from_json),
                &field_path.child("json"),
            ));
            errs.extend(validate_patch_operations(
                f.yaml.iter().map(JsonOrYaml::from_yaml),
                &field_path.child("yaml"),
            ));
        }
        errs.extend(validate_cluster_affinity(
            rule.target_cluster.as_ref(),
            &rule_path.child("targetCluster"),
        ));
    }
    errs
}

/// The fields JSON and YAML patch operations share.
struct JsonOrYaml<'a> {
    sub_path: &'a str,
    operator: OverriderOperator,
    value: Option<&'a Value>,
}

impl<'a> JsonOrYaml<'a> {
    fn from_json(op: &'a JsonPatchOperation) -> Self {
        JsonOrYaml {
            sub_path: &op.sub_path,
            operator: op.operator,
            value: op.value.as_ref(),
        }
    }

    fn from_yaml(op: &'a YamlPatchOperation) -> Self {
        JsonOrYaml {
            sub_path: &op.sub_path,
            operator: op.operator,
            value: op.value.as_ref(),
        }
    }
}

fn validate_patch_operations<'a>(
    ops: impl Iterator<Item = JsonOrYaml<'a>>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, op) in ops.enumerate() {
        let op_path = path.index(i);
        if let Some(msg) = check_json_pointer(op.sub_path) {
            errs.push(FieldError::invalid(
                op_path.child("subPath"),
                op.sub_path,
                msg,
            ));
        }
        // apiextensions JSON prints as its raw bytes, and as null when absent.
        let shown = op.value.cloned().unwrap_or(Value::Null);
        match op.operator {
            OverriderOperator::Add | OverriderOperator::Replace if op.value.is_none() => {
                errs.push(FieldError::invalid(
                    op_path.child("value"),
                    shown,
                    "value is required for add or replace operation",
                ));
            }
            OverriderOperator::Remove if op.value.is_some() => {
                errs.push(FieldError::invalid(
                    op_path.child("value"),
                    shown,
                    "value is not allowed for remove operation",
                ));
            }
            _ => {}
        }
    }
    errs
}
