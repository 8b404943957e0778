//! Resource-list arithmetic of the quota controllers: Karmada's CalculateResourceUsage
//! (pkg/util/helper/binding.go), calculateUsed (summing the members' usage) and the
//! ResourceBinding webhook's isAllowed check (pkg/webhook/resourcebinding).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::work::v1alpha2::ResourceBindingSpec;

use crate::cluster::resources::{Parsed, format_nanos};

/// A resource list as exact amounts: nano-units, and whether the first quantity summed was
/// written with a binary suffix (Go's Quantity.Add keeps the receiver's format).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Usage(BTreeMap<String, (i128, bool)>);

impl Usage {
    /// Reads a resource list; quantities that do not parse count as zero.
    pub fn of(list: &BTreeMap<String, Quantity>) -> Usage {
        let mut u = Usage::default();
        u.add_list(list, 1);
        u
    }

    /// Adds `times` × each quantity of `list`.
    pub fn add_list(&mut self, list: &BTreeMap<String, Quantity>, times: i64) {
        for (name, q) in list {
            let p = Parsed::parse(&q.0).unwrap_or(Parsed {
                nanos: 0,
                binary: false,
            });
            self.add(name, p.nanos.saturating_mul(i128::from(times)), p.binary);
        }
    }

    /// Adds an amount of one resource.
    pub fn add(&mut self, name: &str, nanos: i128, binary: bool) {
        let e = self.0.entry(name.to_owned()).or_insert((0, binary));
        e.0 = e.0.saturating_add(nanos);
    }

    /// Adds another usage.
    pub fn add_usage(&mut self, other: &Usage) {
        for (name, (nanos, binary)) in &other.0 {
            self.add(name, *nanos, *binary);
        }
    }

    /// The amount of one resource in nano-units (0 when absent).
    pub fn nanos(&self, name: &str) -> i128 {
        self.0.get(name).map_or(0, |e| e.0)
    }

    /// Only the resources `keys` names (filterResourceListByOverall).
    pub fn restricted_to(&self, keys: &BTreeMap<String, Quantity>) -> Usage {
        Usage(
            self.0
                .iter()
                .filter(|(k, _)| keys.contains_key(*k))
                .map(|(k, v)| (k.clone(), *v))
                .collect(),
        )
    }

    /// One amount: nano-units and whether it prints with binary suffixes.
    pub fn get(&self, name: &str) -> Option<(i128, bool)> {
        self.0.get(name).copied()
    }

    /// Every amount.
    pub fn entries(&self) -> impl Iterator<Item = (&str, i128, bool)> {
        self.0.iter().map(|(k, (n, b))| (k.as_str(), *n, *b))
    }

    /// Each amount `times` over.
    pub fn times(&self, times: i64) -> Usage {
        Usage(
            self.0
                .iter()
                .map(|(k, (n, b))| (k.clone(), (n.saturating_mul(i128::from(times)), *b)))
                .collect(),
        )
    }

    /// The larger of each resource's two amounts (Kubernetes' quota.Max).
    pub fn max(&self, other: &Usage) -> Usage {
        let mut out = self.clone();
        for (k, (n, b)) in &other.0 {
            let e = out.0.entry(k.clone()).or_insert((*n, *b));
            if *n > e.0 {
                *e = (*n, *b);
            }
        }
        out
    }

    /// Whether every amount is zero.
    pub fn is_zero(&self) -> bool {
        self.0.values().all(|(n, _)| *n == 0)
    }

    /// The canonical resource list.
    pub fn to_list(&self) -> BTreeMap<String, Quantity> {
        self.0
            .iter()
            .map(|(k, (nanos, binary))| (k.clone(), Quantity(format_nanos(*nanos, *binary))))
            .collect()
    }
}

/// What a binding's scheduled replicas request (CalculateResourceUsage): with components,
/// each cluster runs one full set of them; otherwise the replicas scheduled to every cluster
/// times one replica's requests. Zero requests and unscheduled bindings count nothing.
pub fn binding_usage(spec: &ResourceBindingSpec) -> Usage {
    let mut usage = Usage::default();
    if !spec.components.is_empty() {
        let clusters = spec.clusters.len() as i64;
        if clusters == 0 {
            return usage;
        }
        let mut per_set = Usage::default();
        for c in &spec.components {
            let Some(req) = &c.replica_requirements else {
                continue;
            };
            if c.replicas == 0 {
                continue;
            }
            per_set.add_list(&req.resource_request, i64::from(c.replicas));
        }
        for (name, (nanos, binary)) in per_set.0 {
            if nanos != 0 {
                usage.add(&name, nanos.saturating_mul(i128::from(clusters)), binary);
            }
        }
        return usage;
    }
    let Some(req) = &spec.replica_requirements else {
        return usage;
    };
    let replicas: i64 = spec.clusters.iter().map(|c| i64::from(c.replicas)).sum();
    if replicas == 0 {
        return usage;
    }
    for (name, q) in &req.resource_request {
        let Some(p) = Parsed::parse(&q.0) else {
            continue;
        };
        if p.nanos != 0 {
            usage.add(name, p.nanos.saturating_mul(i128::from(replicas)), p.binary);
        }
    }
    usage
}

/// `new - old` per resource, zero differences left out (calculateDelta).
pub fn delta(new: &Usage, old: &Usage) -> Usage {
    let mut out = Usage::default();
    for name in new.0.keys().chain(old.0.keys()) {
        if out.0.contains_key(name) {
            continue;
        }
        let d = new.nanos(name) - old.nanos(name);
        if d != 0 {
            let binary = new.0.get(name).or(old.0.get(name)).is_some_and(|e| e.1);
            out.0.insert(name.clone(), (d, binary));
        }
    }
    out
}

/// Karmada's refusal when `requested` (the quota's usage with a binding's change) goes over
/// one of `overall`'s limits (isAllowed): the first such resource, in name order.
pub fn exceeded(
    namespace: &str,
    name: &str,
    requested: &Usage,
    overall: &BTreeMap<String, Quantity>,
) -> Option<String> {
    for (resource, (nanos, binary)) in &requested.0 {
        if *nanos == 0 {
            continue;
        }
        let Some(limit) = overall.get(resource) else {
            continue;
        };
        let limit_nanos = Parsed::parse(&limit.0).map_or(0, |p| p.nanos);
        if *nanos > limit_nanos {
            return Some(format!(
                "FederatedResourceQuota({namespace}/{name}) exceeded for resource {resource}: requested sum {}, limit {}.",
                format_nanos(*nanos, *binary),
                canonical(&limit.0),
            ));
        }
    }
    None
}

/// Whether some resource of `old` is lower (or gone) in `new`: usage was released.
pub fn lowered(old: &BTreeMap<String, Quantity>, new: &BTreeMap<String, Quantity>) -> bool {
    let (old, new) = (Usage::of(old), Usage::of(new));
    old.0.keys().any(|k| new.nanos(k) < old.nanos(k))
}

/// A resource list as Go prints it (each quantity canonical).
pub fn canonical_list(list: &BTreeMap<String, Quantity>) -> BTreeMap<String, Quantity> {
    list.iter()
        .map(|(k, q)| (k.clone(), Quantity(canonical(&q.0))))
        .collect()
}

/// A quantity as Go's Quantity.String() prints it.
pub fn canonical(q: &str) -> String {
    apimachinery::quantity::Quantity::parse(q)
        .map(|p| p.canonical())
        .unwrap_or_else(|_| q.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use karmada_api::work::v1alpha2::{
        Component, ComponentReplicaRequirements, ReplicaRequirements, TargetCluster,
    };

    /// A resource list written out.
    type Pairs = &'static [(&'static str, &'static str)];

    fn list(items: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        items
            .iter()
            .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
            .collect()
    }

    fn spec(request: &[(&str, &str)], clusters: &[i32]) -> ResourceBindingSpec {
        ResourceBindingSpec {
            replica_requirements: Some(ReplicaRequirements {
                resource_request: list(request),
                ..Default::default()
            }),
            clusters: clusters
                .iter()
                .enumerate()
                .map(|(i, r)| TargetCluster {
                    name: format!("m{i}"),
                    replicas: *r,
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn binding_usage_multiplies_requests_by_scheduled_replicas() {
        let cases: &[(&str, ResourceBindingSpec, Pairs)] = &[
            (
                "two clusters",
                spec(&[("cpu", "500m"), ("memory", "256Mi")], &[2, 1]),
                &[("cpu", "1500m"), ("memory", "768Mi")],
            ),
            ("unscheduled", spec(&[("cpu", "1")], &[]), &[]),
            ("zero replicas", spec(&[("cpu", "1")], &[0, 0]), &[]),
            (
                "zero request left out",
                spec(&[("cpu", "0"), ("memory", "1Gi")], &[4]),
                &[("memory", "4Gi")],
            ),
            (
                "whole cpus",
                spec(&[("cpu", "250m")], &[4]),
                &[("cpu", "1")],
            ),
            (
                "no requirements",
                ResourceBindingSpec {
                    clusters: vec![TargetCluster {
                        name: "m".into(),
                        replicas: 3,
                    }],
                    ..Default::default()
                },
                &[],
            ),
        ];
        for (name, s, want) in cases {
            assert_eq!(binding_usage(s).to_list(), list(want), "{name}");
        }
    }

    #[test]
    fn components_count_one_set_per_cluster() {
        let component = |replicas, cpu: &str| Component {
            name: format!("c{replicas}"),
            replicas,
            replica_requirements: Some(ComponentReplicaRequirements {
                resource_request: list(&[("cpu", cpu)]),
                ..Default::default()
            }),
        };
        let s = ResourceBindingSpec {
            components: vec![component(2, "100m"), component(1, "1")],
            clusters: vec![
                TargetCluster {
                    name: "a".into(),
                    replicas: 0,
                },
                TargetCluster {
                    name: "b".into(),
                    replicas: 0,
                },
            ],
            ..Default::default()
        };
        assert_eq!(binding_usage(&s).to_list(), list(&[("cpu", "2400m")]));
    }

    #[test]
    fn delta_and_limits() {
        let old = binding_usage(&spec(&[("cpu", "1")], &[2]));
        let new = binding_usage(&spec(&[("cpu", "1")], &[3]));
        let d = delta(&new, &old);
        assert_eq!(d.to_list(), list(&[("cpu", "1")]));
        assert!(delta(&old, &old).is_zero());

        let overall = list(&[("cpu", "4"), ("memory", "1Gi")]);
        let cases: &[(Pairs, Option<&str>)] = &[
            (&[("cpu", "4")], None),
            (
                &[("cpu", "4001m")],
                Some(
                    "FederatedResourceQuota(ns/q) exceeded for resource cpu: requested sum 4001m, limit 4.",
                ),
            ),
            (
                &[("memory", "2Gi")],
                Some(
                    "FederatedResourceQuota(ns/q) exceeded for resource memory: requested sum 2Gi, limit 1Gi.",
                ),
            ),
            // Resources the quota does not limit are not checked.
            (&[("nvidia.com/gpu", "8")], None),
        ];
        for (requested, want) in cases {
            let got = exceeded("ns", "q", &Usage::of(&list(requested)), &overall);
            assert_eq!(got.as_deref(), *want, "{requested:?}");
        }
    }

    #[test]
    fn sums_keep_the_first_format() {
        let mut u = Usage::of(&list(&[("memory", "1Gi"), ("cpu", "500m")]));
        u.add_usage(&Usage::of(&list(&[
            ("memory", "512Mi"),
            ("cpu", "1500m"),
            ("pods", "2"),
        ])));
        assert_eq!(
            u.to_list(),
            list(&[("cpu", "2"), ("memory", "1536Mi"), ("pods", "2")])
        );
        assert_eq!(
            u.restricted_to(&list(&[("cpu", "1")])).to_list(),
            list(&[("cpu", "2")])
        );
    }
}
