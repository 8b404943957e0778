//! Resource quota rules (Kubernetes' pkg/apis/core/validation, as Karmada lifts them in
//! pkg/util/lifted) and karmada-webhook's FederatedResourceQuota checks
//! (pkg/webhook/federatedresourcequota).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::names::{is_qualified_name, validate_cluster_name};
use crate::field::{FieldError, FieldPath};
use crate::policy::v1alpha1::{
    ClusterQuotaStatus, FederatedResourceQuota, FederatedResourceQuotaSpec,
    FederatedResourceQuotaStatus, StaticClusterAssignment,
};
use crate::quantity::ParsedQuantity;

/// Resource names a ResourceQuota may carry without a domain (standardQuotaResources).
pub const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resource names known without a domain (standardResources).
const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

/// Resources counted in whole units (integerResources).
const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

fn is_quota_huge_page(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

/// IsExtendedResourceName: a domain-qualified name outside kubernetes.io that stays a
/// qualified name with `requests.` in front.
fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}")).is_empty()
}

fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource_name(name)
}

/// ValidateResourceQuotaResourceName.
pub fn validate_quota_resource_name(name: &str, path: &FieldPath) -> Vec<FieldError> {
    let problems = is_qualified_name(name);
    if !problems.is_empty() {
        return problems
            .into_iter()
            .map(|m| FieldError::invalid(path.as_str(), name, m))
            .collect();
    }
    let mut errors = Vec::new();
    if !name.contains('/') {
        if !STANDARD_RESOURCES.contains(&name) && !is_quota_huge_page(name) {
            errors.push(FieldError::invalid(
                path.as_str(),
                name,
                "must be a standard resource type or fully qualified",
            ));
        }
        if !STANDARD_QUOTA_RESOURCES.contains(&name) && !is_quota_huge_page(name) {
            errors.push(FieldError::invalid(
                path.as_str(),
                name,
                "must be a standard resource for quota",
            ));
        }
    }
    errors
}

/// ValidateResourceQuantityValue: not negative, and whole for integer resources.
pub fn validate_quantity_value(name: &str, q: &Quantity, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Ok(parsed) = ParsedQuantity::parse(&q.0) else {
        errors.push(FieldError::invalid(
            path.as_str(),
            q.0.clone(),
            crate::quantity::QuantityError.to_string(),
        ));
        return errors;
    };
    if parsed.nanos() < 0 {
        errors.push(FieldError::invalid(
            path.as_str(),
            canonical(q),
            "must be greater than or equal to 0",
        ));
    }
    if is_integer_resource(name) && parsed.milli_value() % 1000 != 0 {
        errors.push(FieldError::invalid(
            path.as_str(),
            canonical(q),
            "must be an integer",
        ));
    }
    errors
}

fn canonical(q: &Quantity) -> String {
    apimachinery::quantity::Quantity::parse(&q.0)
        .map(|p| p.canonical())
        .unwrap_or_else(|_| q.0.clone())
}

/// A resource list's names and quantities (validateResourceList).
pub fn validate_resource_list(
    list: &BTreeMap<String, Quantity>,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (name, q) in list {
        let p = path.key(name);
        errors.extend(validate_quota_resource_name(name, &p));
        errors.extend(validate_quantity_value(name, q, &p));
    }
    errors
}

fn nanos(q: &Quantity) -> i128 {
    ParsedQuantity::parse(&q.0).map(|p| p.nanos()).unwrap_or(0)
}

fn validate_cluster(name: &str, path: &FieldPath) -> Option<FieldError> {
    let problems = validate_cluster_name(name);
    (!problems.is_empty()).then(|| FieldError::invalid(path.as_str(), name, problems.join(",")))
}

fn validate_assignment(a: &StaticClusterAssignment, path: &FieldPath) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = validate_cluster(&a.cluster_name, &path.child("clusterName"))
        .into_iter()
        .collect();
    errors.extend(validate_resource_list(&a.hard, &path.child("hard")));
    errors
}

/// validateOverallAndAssignments: the assignments of a resource together stay within its
/// overall limit, and every assigned resource has an overall limit.
fn validate_overall_and_assignments(
    spec: &FederatedResourceQuotaSpec,
    path: &FieldPath,
) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let overall = path.child("overall");
    for (name, limit) in &spec.overall {
        let assigned: i128 = spec
            .static_assignments
            .iter()
            .filter_map(|a| a.hard.get(name))
            .map(nanos)
            .sum();
        if nanos(limit) < assigned {
            errors.push(FieldError::invalid(
                overall.key(name).as_str(),
                canonical(limit),
                "overall is less than assignments",
            ));
        }
    }
    let assignments = path.child("staticAssignments");
    for (i, a) in spec.static_assignments.iter().enumerate() {
        let hard = assignments.index(i).child("hard");
        for name in a.hard.keys() {
            if !spec.overall.contains_key(name) {
                errors.push(FieldError::invalid(
                    hard.key(name).as_str(),
                    name.as_str(),
                    "assignment resourceName is not exist in overall",
                ));
            }
        }
    }
    errors
}

fn validate_spec(spec: &FederatedResourceQuotaSpec, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = validate_resource_list(&spec.overall, &path.child("overall"));
    let assignments = path.child("staticAssignments");
    for (i, a) in spec.static_assignments.iter().enumerate() {
        errors.extend(validate_assignment(a, &assignments.index(i)));
    }
    errors.extend(validate_overall_and_assignments(spec, path));
    errors
}

fn validate_cluster_status(s: &ClusterQuotaStatus, path: &FieldPath) -> Vec<FieldError> {
    let mut errors: Vec<FieldError> = validate_cluster(&s.cluster_name, &path.child("clusterName"))
        .into_iter()
        .collect();
    errors.extend(validate_resource_list(&s.hard, &path.child("hard")));
    errors.extend(validate_resource_list(&s.used, &path.child("used")));
    errors
}

fn validate_status(status: &FederatedResourceQuotaStatus, path: &FieldPath) -> Vec<FieldError> {
    let mut errors = validate_resource_list(&status.overall, &path.child("overall"));
    errors.extend(validate_resource_list(
        &status.overall_used,
        &path.child("overallUsed"),
    ));
    let aggregated = path.child("aggregatedStatus");
    for (i, s) in status.aggregated_status.iter().enumerate() {
        errors.extend(validate_cluster_status(s, &aggregated.index(i)));
    }
    errors
}

/// validateFederatedResourceQuota: the name fits a label value (the Works carry it), the spec
/// and the status hold valid resource lists, and the static assignments stay within
/// `overall`.
pub fn validate_federated_resource_quota(q: &FederatedResourceQuota) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = q.metadata.name.as_deref().unwrap_or_default();
    if name.len() > 63 {
        errors.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be no more than 63 characters",
        ));
    }
    errors.extend(validate_spec(&q.spec, &FieldPath::new("spec")));
    errors.extend(validate_status(&q.status, &FieldPath::new("status")));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::v1alpha1::StaticClusterAssignment;

    fn list(items: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    }

    fn frq(
        overall: &[(&str, &str)],
        assignments: &[(&str, &[(&str, &str)])],
    ) -> FederatedResourceQuota {
        FederatedResourceQuota {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("q".into()),
                ..Default::default()
            },
            spec: FederatedResourceQuotaSpec {
                overall: list(overall),
                static_assignments: assignments
                    .iter()
                    .map(|(c, h)| StaticClusterAssignment {
                        cluster_name: (*c).into(),
                        hard: list(h),
                    })
                    .collect(),
            },
            ..Default::default()
        }
    }

    #[test]
    fn karmada_rules() {
        let cases: Vec<(&str, FederatedResourceQuota, Vec<&str>)> = vec![
            (
                "valid",
                frq(
                    &[("cpu", "2"), ("memory", "4Gi")],
                    &[
                        ("m1", &[("cpu", "1")]),
                        ("m2", &[("cpu", "1000m"), ("memory", "4096Mi")]),
                    ],
                ),
                vec![],
            ),
            (
                "assignments above overall",
                frq(
                    &[("cpu", "1")],
                    &[("m1", &[("cpu", "600m")]), ("m2", &[("cpu", "500m")])],
                ),
                vec!["spec.overall[cpu]: Invalid value: \"1\": overall is less than assignments"],
            ),
            (
                "assigned resource missing from overall",
                frq(&[("cpu", "1")], &[("m1", &[("memory", "1Gi")])]),
                vec![
                    "spec.staticAssignments[0].hard[memory]: Invalid value: \"memory\": assignment resourceName is not exist in overall",
                ],
            ),
            (
                "negative quantity",
                frq(&[("cpu", "-1")], &[]),
                // Below the (empty) assignments' zero as well, as Karmada reports it.
                vec![
                    "spec.overall[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
                    "spec.overall[cpu]: Invalid value: \"-1\": overall is less than assignments",
                ],
            ),
            (
                "fractional pods",
                frq(&[("pods", "1500m")], &[]),
                vec!["spec.overall[pods]: Invalid value: \"1500m\": must be an integer"],
            ),
            (
                "not a quota resource",
                frq(&[("storage", "1Gi")], &[]),
                vec![
                    "spec.overall[storage]: Invalid value: \"storage\": must be a standard resource for quota",
                ],
            ),
            (
                "unknown bare name",
                frq(&[("gpu", "1")], &[]),
                vec![
                    "spec.overall[gpu]: Invalid value: \"gpu\": must be a standard resource type or fully qualified",
                    "spec.overall[gpu]: Invalid value: \"gpu\": must be a standard resource for quota",
                ],
            ),
            (
                "extended resources and counts are fine",
                frq(
                    &[("nvidia.com/gpu", "2"), ("count/deployments.apps", "3")],
                    &[],
                ),
                vec![],
            ),
            (
                "fractional extended resource",
                frq(&[("nvidia.com/gpu", "500m")], &[]),
                vec!["spec.overall[nvidia.com/gpu]: Invalid value: \"500m\": must be an integer"],
            ),
            (
                "bad cluster name",
                frq(&[("cpu", "1")], &[("Member_1", &[("cpu", "1")])]),
                vec!["spec.staticAssignments[0].clusterName: Invalid value: \"Member_1\""],
            ),
        ];
        for (name, q, want) in cases {
            let got: Vec<String> = validate_federated_resource_quota(&q)
                .iter()
                .map(|e| e.to_string())
                .collect();
            assert_eq!(got.len(), want.len(), "{name}: {got:?}");
            for (g, w) in got.iter().zip(&want) {
                assert!(g.starts_with(w), "{name}: {g} does not start with {w}");
            }
        }
    }

    #[test]
    fn long_names_are_refused() {
        let mut q = frq(&[("cpu", "1")], &[]);
        q.metadata.name = Some("a".repeat(64));
        let got = validate_federated_resource_quota(&q);
        assert_eq!(got.len(), 1);
        assert!(
            got[0]
                .to_string()
                .contains("must be no more than 63 characters")
        );
    }
}
