//! Node and resource summaries of a member cluster, as Karmada's cluster-status controller
//! computes them (getNodeSummary, getResourceSummary, getAllocatableModelings in
//! pkg/controllers/status/cluster_status_controller.go and pkg/modeling).

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::cluster::v1alpha1::{
    AllocatableModeling, NodeSummary, ResourceModel, ResourceSummary,
};

use super::resources::{Parsed, QuantitySum, Resource};

/// Whether a node's Ready condition is True (helper.NodeReady).
pub fn node_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// Total and ready node counts.
pub fn node_summary<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> NodeSummary {
    let mut s = NodeSummary::default();
    for n in nodes {
        s.total_num = s.total_num.saturating_add(1);
        if node_ready(n) {
            s.ready_num = s.ready_num.saturating_add(1);
        }
    }
    s
}

fn pod_node(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .unwrap_or("")
}

fn pod_terminated(pod: &Pod) -> bool {
    matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Allocatable (sum over nodes), allocating (requests of unscheduled pods) and allocated
/// (requests of scheduled, non-terminated pods), each with its pod count.
pub fn resource_summary(nodes: &[&Node], pods: &[&Pod]) -> ResourceSummary {
    let mut allocatable = QuantitySum::default();
    for n in nodes {
        if let Some(a) = n.status.as_ref().and_then(|s| s.allocatable.as_ref()) {
            allocatable.add(a);
        }
    }
    let mut allocating = Resource::default();
    let mut allocated = Resource::default();
    let (mut pending, mut running) = (0i64, 0i64);
    for p in pods {
        let Some(spec) = p.spec.as_ref() else {
            continue;
        };
        if pod_node(p).is_empty() {
            allocating.add_pod_request(spec);
            pending += 1;
        } else if !pod_terminated(p) {
            allocated.add_pod_request(spec);
            running += 1;
        }
    }
    allocating.pods = allocating.pods.saturating_add(pending);
    allocated.pods = allocated.pods.saturating_add(running);
    ResourceSummary {
        allocatable: allocatable.into_list(),
        allocating: allocating.to_list().unwrap_or_default(),
        allocated: allocated.to_list().unwrap_or_default(),
        allocatable_modelings: Vec::new(),
    }
}

/// How many nodes fall in each resource grade, by what is still free on them
/// (getAllocatableModelings). Empty when the cluster has no resource models.
pub fn allocatable_modelings(
    models: &[ResourceModel],
    nodes: &[&Node],
    pods: &[&Pod],
) -> Vec<AllocatableModeling> {
    let Some(first) = models.first() else {
        return Vec::new();
    };
    // InitSummary: the resource names come from the first model, the grade minimums from
    // every model in order.
    let names: Vec<&str> = first.ranges.iter().map(|r| r.name.as_str()).collect();
    if models.iter().any(|m| m.ranges.len() != names.len()) {
        return Vec::new();
    }
    let mins: Vec<Vec<i128>> = names
        .iter()
        .map(|name| {
            models
                .iter()
                .map(|m| {
                    m.ranges
                        .iter()
                        .find(|r| r.name == *name)
                        .and_then(|r| Parsed::parse(&r.min.0))
                        .map_or(0, |p| p.nanos)
                })
                .collect()
        })
        .collect();

    let mut per_node: HashMap<&str, Resource> = HashMap::new();
    for p in pods {
        let (node, Some(spec)) = (pod_node(p), p.spec.as_ref()) else {
            continue;
        };
        if node.is_empty() || pod_terminated(p) {
            continue;
        }
        let r = per_node.entry(node).or_default();
        r.add_pod_request(spec);
        r.pods = r.pods.saturating_add(1);
    }

    let mut counts = vec![0i64; models.len()];
    for n in nodes {
        let name = n.metadata.name.as_deref().unwrap_or("");
        let allocatable = n
            .status
            .as_ref()
            .and_then(|s| s.allocatable.clone())
            .unwrap_or_default();
        // A node with no room for another pod ends the walk, as in Karmada.
        let Some(available) = node_available(allocatable, per_node.get(name)) else {
            break;
        };
        let grade = names
            .iter()
            .zip(&mins)
            .map(|(name, grade_mins)| {
                let have = available
                    .get(*name)
                    .and_then(|q| Parsed::parse(&q.0))
                    .map_or(0, |p| p.nanos);
                last_not_greater(grade_mins, have)
            })
            .min();
        if let Some(Some(g)) = grade {
            counts[g] += 1;
        }
    }
    models
        .iter()
        .zip(counts)
        .map(|(m, count)| AllocatableModeling {
            grade: m.grade,
            count,
        })
        .collect()
}

/// The index of the last minimum not above `target` (searchLastLessElement); `None` when
/// every minimum is above it.
fn last_not_greater(mins: &[i128], target: i128) -> Option<usize> {
    mins.iter().rposition(|m| *m <= target)
}

/// getNodeAvailable: allocatable minus what scheduled pods request; `None` when the node has
/// no room for another pod.
fn node_available(
    mut allocatable: BTreeMap<String, Quantity>,
    used: Option<&Resource>,
) -> Option<BTreeMap<String, Quantity>> {
    let Some(used) = used else {
        return Some(allocatable);
    };
    let Some(used_list) = used.to_list() else {
        return Some(allocatable);
    };
    let allowed_pods = allocatable
        .get("pods")
        .and_then(|q| Parsed::parse(&q.0))
        .map_or(0, Parsed::value)
        - used.pods;
    if allowed_pods <= 0 {
        return None;
    }
    for (name, q) in used_list {
        if let Some(have) = allocatable.get_mut(&name)
            && let (Some(h), Some(u)) = (Parsed::parse(&have.0), Parsed::parse(&q.0))
        {
            *have = Quantity(super::resources::format_nanos(h.nanos - u.nanos, h.binary));
        }
    }
    Some(allocatable)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, ready: bool, cpu: &str, mem: &str, pods: &str) -> Node {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "status": {
                "allocatable": {"cpu": cpu, "memory": mem, "pods": pods},
                "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]
            }
        }))
        .unwrap()
    }

    fn pod(node: &str, phase: &str, cpu: &str, mem: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p"},
            "spec": {"nodeName": node, "containers": [
                {"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}
            ]},
            "status": {"phase": phase}
        }))
        .unwrap()
    }

    fn models() -> Vec<ResourceModel> {
        // Grades: cpu [0,1) [1,2) [2,∞); memory [0,4Gi) [4Gi,16Gi) [16Gi,∞).
        serde_json::from_value(json!([
            {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "1"}, {"name": "memory", "min": "0", "max": "4Gi"}]},
            {"grade": 1, "ranges": [{"name": "cpu", "min": "1", "max": "2"}, {"name": "memory", "min": "4Gi", "max": "16Gi"}]},
            {"grade": 2, "ranges": [{"name": "cpu", "min": "2", "max": "9223372036854775807"}, {"name": "memory", "min": "16Gi", "max": "9223372036854775807"}]}
        ]))
        .unwrap()
    }

    #[test]
    fn summaries() {
        let nodes = [
            node("n1", true, "4", "16Gi", "110"),
            node("n2", true, "4", "16Gi", "110"),
            node("n3", false, "4", "16Gi", "110"),
        ];
        let pods = [
            pod("n1", "Running", "500m", "1Gi"),
            pod("n1", "Succeeded", "1", "1Gi"),
            pod("", "Pending", "250m", "256Mi"),
        ];
        let ns: Vec<&Node> = nodes.iter().collect();
        let ps: Vec<&Pod> = pods.iter().collect();
        assert_eq!(
            node_summary(ns.iter().copied()),
            NodeSummary {
                total_num: 3,
                ready_num: 2
            }
        );
        let r = resource_summary(&ns, &ps);
        let s = |m: &BTreeMap<String, Quantity>, k: &str| m.get(k).map(|q| q.0.clone());
        assert_eq!(s(&r.allocatable, "cpu").as_deref(), Some("12"));
        assert_eq!(s(&r.allocatable, "memory").as_deref(), Some("48Gi"));
        assert_eq!(s(&r.allocatable, "pods").as_deref(), Some("330"));
        assert_eq!(s(&r.allocated, "cpu").as_deref(), Some("500m"));
        assert_eq!(s(&r.allocated, "memory").as_deref(), Some("1Gi"));
        assert_eq!(s(&r.allocated, "pods").as_deref(), Some("1"));
        assert_eq!(s(&r.allocating, "cpu").as_deref(), Some("250m"));
        assert_eq!(s(&r.allocating, "pods").as_deref(), Some("1"));

        let empty = resource_summary(&ns, &[]);
        assert!(empty.allocated.is_empty() && empty.allocating.is_empty());
    }

    #[test]
    fn modelings() {
        let cases: Vec<(Vec<Node>, Vec<Pod>, Vec<i64>)> = vec![
            // Big nodes land in the top grade.
            (
                vec![
                    node("a", true, "4", "32Gi", "110"),
                    node("b", true, "8", "64Gi", "110"),
                ],
                vec![],
                vec![0, 0, 2],
            ),
            // The lower of the per-resource grades wins.
            (
                vec![node("a", true, "4", "8Gi", "110")],
                vec![],
                vec![0, 1, 0],
            ),
            // Requests of running pods are subtracted.
            (
                vec![node("a", true, "4", "32Gi", "110")],
                vec![pod("a", "Running", "3500m", "1Gi")],
                vec![1, 0, 0],
            ),
            // A full node stops the walk.
            (
                vec![
                    node("a", true, "4", "32Gi", "1"),
                    node("b", true, "4", "32Gi", "110"),
                ],
                vec![pod("a", "Running", "100m", "1Mi")],
                vec![0, 0, 0],
            ),
        ];
        for (i, (nodes, pods, want)) in cases.into_iter().enumerate() {
            let ns: Vec<&Node> = nodes.iter().collect();
            let ps: Vec<&Pod> = pods.iter().collect();
            let got: Vec<i64> = allocatable_modelings(&models(), &ns, &ps)
                .into_iter()
                .map(|m| m.count)
                .collect();
            assert_eq!(got, want, "case {i}");
        }
        assert!(allocatable_modelings(&[], &[], &[]).is_empty());
    }
}
