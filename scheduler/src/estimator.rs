//! How many more replicas a cluster can take, from its reported resource summary and resource
//! models (Karmada's general estimator, `pkg/estimator/client/general.go`).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::cluster::v1alpha1::{Cluster, ResourceSummary};
use karmada_api::work::v1alpha2::ReplicaRequirements;

use super::resource::{self, Resource};

/// Pods a node of a resource-model grade can hold (the Kubernetes default).
const MAX_PODS_PER_NODE: i64 = 110;

/// The estimate for one cluster (`GeneralEstimator.maxAvailableReplicas`).
pub fn max_available_replicas(
    cluster: &Cluster,
    requirements: Option<&ReplicaRequirements>,
) -> i32 {
    let Some(summary) = cluster.status.resource_summary.as_ref() else {
        return 0;
    };
    let mut maximum = allowed_pod_number(summary);
    if maximum <= 0 {
        return 0;
    }
    let Some(requirements) = requirements else {
        return clamp_i32(maximum);
    };
    if !summary.allocatable_modelings.is_empty() {
        // Falls back to the summary when the models cannot be used (none declared, bad counts).
        if let Some(by_models) = maximum_by_resource_models(cluster, summary, requirements) {
            return clamp_i32(maximum.min(by_models));
        }
    }
    maximum = maximum.min(maximum_by_summary(summary, &requirements.resource_request));
    clamp_i32(maximum)
}

fn clamp_i32(v: i64) -> i32 {
    v.clamp(0, i64::from(i32::MAX)) as i32
}

/// Pods still schedulable: allocatable − allocated − allocating (`getAllowedPodNumber`).
fn allowed_pod_number(summary: &ResourceSummary) -> i64 {
    let pods =
        |list: &BTreeMap<String, Quantity>| list.get("pods").map(resource::value).unwrap_or(0);
    let allowed = pods(&summary.allocatable) - pods(&summary.allocated) - pods(&summary.allocating);
    allowed.max(0)
}

/// Replicas that fit in the cluster-wide free resources (`getMaximumReplicasBasedOnClusterSummary`).
fn maximum_by_summary(summary: &ResourceSummary, request: &BTreeMap<String, Quantity>) -> i64 {
    let mut maximum = i64::MAX;
    for (name, q) in request {
        let mut requested = resource::value(q);
        if requested <= 0 {
            continue;
        }
        let Some(allocatable) = summary.allocatable.get(name) else {
            return 0;
        };
        let free = resource::nanos(allocatable)
            - resource::get_nanos(&summary.allocated, name)
            - resource::get_nanos(&summary.allocating, name);
        let mut available = resource::value_of_nanos(free);
        if available <= 0 {
            return 0;
        }
        if name == "cpu" {
            requested = resource::milli_value(q);
            available = resource::milli_of_nanos(free);
        }
        maximum = maximum.min(available / requested);
    }
    maximum
}

/// Replicas that fit on the virtual nodes described by the cluster's resource models, each grade
/// contributing `count` nodes with the grade's minimum amounts (`getMaximumReplicasBasedOnResourceModels`).
/// Placing one replica at a time first-fit, as upstream simulates, fills each node to its
/// quotient, so the total is the sum of per-node quotients. `None` when the models are unusable.
fn maximum_by_resource_models(
    cluster: &Cluster,
    summary: &ResourceSummary,
    requirements: &ReplicaRequirements,
) -> Option<i64> {
    if cluster.spec.resource_models.is_empty() {
        return None;
    }
    let mut capacity_by_grade: BTreeMap<u64, Resource> = BTreeMap::new();
    for model in &cluster.spec.resource_models {
        let mut template: BTreeMap<String, Quantity> = model
            .ranges
            .iter()
            .map(|r| (r.name.clone(), r.min.clone()))
            .collect();
        template.insert("pods".into(), Quantity(MAX_PODS_PER_NODE.to_string()));
        let mut node = Resource::default();
        node.add(&template);
        capacity_by_grade.insert(model.grade, node);
    }
    let mut count_by_grade: BTreeMap<u64, i64> = BTreeMap::new();
    for modeling in &summary.allocatable_modelings {
        if modeling.count < 0 {
            return None;
        }
        *count_by_grade.entry(modeling.grade).or_insert(0) += modeling.count;
    }
    let mut per_replica = Resource::default();
    per_replica.add(&requirements.resource_request);
    per_replica.allowed_pod_number = 1;

    let mut total: i64 = 0;
    for (grade, node) in &capacity_by_grade {
        let count = count_by_grade.get(grade).copied().unwrap_or(0);
        if count == 0 {
            continue;
        }
        let per_node = node.max_divided(&per_replica);
        total = total.saturating_add(per_node.saturating_mul(count));
        if total >= i64::from(i32::MAX) {
            return Some(i64::from(i32::MAX));
        }
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use karmada_api::cluster::v1alpha1::{AllocatableModeling, ResourceModel, ResourceModelRange};

    fn list(pairs: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    fn cluster_with(summary: Option<ResourceSummary>) -> Cluster {
        let mut c = Cluster::default();
        c.metadata.name = Some("member1".into());
        c.status.resource_summary = summary;
        c
    }

    fn requirements(pairs: &[(&str, &str)]) -> ReplicaRequirements {
        ReplicaRequirements {
            resource_request: list(pairs),
            ..Default::default()
        }
    }

    #[test]
    fn summary_estimates() {
        let summary = ResourceSummary {
            allocatable: list(&[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")]),
            allocated: list(&[("cpu", "2500m"), ("memory", "4Gi"), ("pods", "10")]),
            allocating: list(&[("cpu", "500m"), ("pods", "2")]),
            ..Default::default()
        };
        let c = cluster_with(Some(summary));
        let cases = [
            (None, 98),
            (Some(requirements(&[("cpu", "1")])), 5),
            (Some(requirements(&[("cpu", "300m")])), 16),
            (Some(requirements(&[("memory", "1Gi")])), 12),
            (Some(requirements(&[("cpu", "100m"), ("memory", "2Gi")])), 6),
            (Some(requirements(&[("nvidia.com/gpu", "1")])), 0),
            (Some(requirements(&[("cpu", "0")])), 98),
        ];
        for (i, (req, want)) in cases.iter().enumerate() {
            assert_eq!(max_available_replicas(&c, req.as_ref()), *want, "case {i}");
        }
        assert_eq!(max_available_replicas(&cluster_with(None), None), 0);
        let full = ResourceSummary {
            allocatable: list(&[("pods", "10")]),
            allocated: list(&[("pods", "12")]),
            ..Default::default()
        };
        assert_eq!(max_available_replicas(&cluster_with(Some(full)), None), 0);
    }

    #[test]
    fn resource_model_estimates() {
        let range = |name: &str, min: &str, max: &str| ResourceModelRange {
            name: name.into(),
            min: Quantity(min.into()),
            max: Quantity(max.into()),
        };
        let mut c = cluster_with(Some(ResourceSummary {
            allocatable: list(&[("cpu", "100"), ("memory", "100Gi"), ("pods", "1000")]),
            allocatable_modelings: vec![
                AllocatableModeling { grade: 0, count: 5 },
                AllocatableModeling { grade: 1, count: 2 },
                AllocatableModeling { grade: 2, count: 1 },
            ],
            ..Default::default()
        }));
        c.spec.resource_models = vec![
            ResourceModel {
                grade: 0,
                ranges: vec![range("cpu", "0", "1"), range("memory", "0", "4Gi")],
            },
            ResourceModel {
                grade: 1,
                ranges: vec![range("cpu", "1", "2"), range("memory", "4Gi", "16Gi")],
            },
            ResourceModel {
                grade: 2,
                ranges: vec![range("cpu", "2", "4"), range("memory", "16Gi", "32Gi")],
            },
        ];
        // 1 cpu each: grade 1 nodes hold 1, the grade 2 node holds 2.
        assert_eq!(
            max_available_replicas(&c, Some(&requirements(&[("cpu", "1")]))),
            4
        );
        // Memory-bound: 2Gi fits twice per grade-1 node and 8 times on the grade-2 node.
        assert_eq!(
            max_available_replicas(&c, Some(&requirements(&[("memory", "2Gi")]))),
            12
        );
        // Without models declared the summary is used instead.
        c.spec.resource_models.clear();
        assert_eq!(
            max_available_replicas(&c, Some(&requirements(&[("cpu", "1")]))),
            100
        );
    }
}
