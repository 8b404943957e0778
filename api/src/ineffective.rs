//! Fields karmada-rs accepts but whose feature it does not implement (yet): a write that sets
//! one succeeds with an API warning naming it (the `Warning: ...` kubectl prints, as a
//! Kubernetes admission webhook's warnings), so no field a user's YAML sets is silently
//! ignored. README lists the same table.

use serde_json::{Map, Value};

/// A field that is accepted without effect.
#[derive(Clone, Copy, Debug)]
pub struct Ineffective {
    /// The kinds whose objects carry the field.
    pub kinds: &'static [&'static str],
    /// The field, `[*]` standing for every item of a list (e.g.
    /// `spec.resourceSelectors[*].labelSelector`).
    pub field: &'static str,
    /// When a set value has no effect; `None`: whenever it is set (not null, empty or false).
    pub only_when: Option<Condition>,
    /// Why it has no effect, for the warning and README.
    pub reason: &'static str,
}

/// When a set field has no effect.
#[derive(Clone, Copy, Debug)]
pub enum Condition {
    /// When the field has this value.
    Is(&'static str),
    /// When a sibling field (of the same parent object) is set.
    SiblingSet(&'static str),
    /// When a sibling field is not set.
    SiblingUnset(&'static str),
    /// When a sibling field has this value: (sibling, value).
    SiblingIs(&'static str, &'static str),
    /// When a sibling string field starts with this prefix: (sibling, prefix).
    SiblingStartsWith(&'static str, &'static str),
}

const PROPAGATION: &[&str] = &["PropagationPolicy", "ClusterPropagationPolicy"];
const POLICIES: &[&str] = &[
    "PropagationPolicy",
    "ClusterPropagationPolicy",
    "OverridePolicy",
    "ClusterOverridePolicy",
];
const BINDINGS: &[&str] = &["ResourceBinding", "ClusterResourceBinding"];

/// The fields accepted without effect.
pub const OTHERS: &[Ineffective] = &[
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.preemption",
        only_when: Some(Condition::Is("Always")),
        reason: "has no effect unless the control plane runs with --feature-gates=PropagationPolicyPreemption=true (Alpha, off by default, as in Karmada): without it templates claimed by another policy are not taken over",
    },
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.placement.workloadAffinity",
        only_when: None,
        reason: "has no effect: karmada-rs does not implement workload affinity or anti-affinity, so clusters are chosen without regard to other workloads",
    },
    Ineffective {
        kinds: BINDINGS,
        field: "spec.workloadAffinityGroups",
        only_when: None,
        reason: "has no effect: karmada-rs does not implement workload affinity or anti-affinity",
    },
    Ineffective {
        kinds: BINDINGS,
        field: "spec.components",
        only_when: None,
        reason: "has no effect: karmada-rs does not schedule the components of multi-template workloads (MultiplePodTemplatesScheduling)",
    },
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.association",
        only_when: None,
        reason: "has no effect: association is deprecated, use propagateDeps",
    },
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.placement.spreadConstraints[*].spreadByLabel",
        only_when: None,
        reason: "has no effect: spreading by cluster label is not implemented (nor by Karmada's scheduler), use spreadByField",
    },
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.placement.replicaScheduling.replicaDivisionPreference",
        only_when: Some(Condition::SiblingIs("replicaSchedulingType", "Duplicated")),
        reason: "has no effect because replicaSchedulingType is Duplicated",
    },
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.placement.replicaScheduling.weightPreference",
        only_when: Some(Condition::SiblingIs("replicaSchedulingType", "Duplicated")),
        reason: "has no effect because replicaSchedulingType is Duplicated",
    },
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.placement.replicaScheduling.weightPreference",
        only_when: Some(Condition::SiblingIs(
            "replicaDivisionPreference",
            "Aggregated",
        )),
        reason: "has no effect because replicaDivisionPreference is Aggregated",
    },
    Ineffective {
        kinds: PROPAGATION,
        field: "spec.placement.replicaScheduling.weightPreference.staticWeightList",
        only_when: Some(Condition::SiblingSet("dynamicWeight")),
        reason: "has no effect because dynamicWeight is set",
    },
    Ineffective {
        kinds: POLICIES,
        field: "spec.resourceSelectors[*].labelSelector",
        only_when: Some(Condition::SiblingSet("name")),
        reason: "has no effect because name is set",
    },
    Ineffective {
        kinds: &["Cluster"],
        field: "spec.proxyHeader",
        only_when: Some(Condition::SiblingUnset("proxyURL")),
        reason: "has no effect without proxyURL",
    },
    Ineffective {
        kinds: &["Cluster"],
        field: "spec.proxyHeader",
        only_when: Some(Condition::SiblingStartsWith("proxyURL", "socks5:")),
        reason: "has no effect with a socks5 proxyURL: SOCKS5 proxies take no headers",
    },
    Ineffective {
        kinds: &["MultiClusterService"],
        field: "spec.types[*]",
        only_when: Some(Condition::Is("CrossCluster")),
        reason: "has no effect unless the control plane runs with --feature-gates=MultiClusterService=true (Alpha, off by default, as in Karmada): without it the Service is not exposed across clusters",
    },
    Ineffective {
        kinds: &["MultiClusterService"],
        field: "spec.types[*]",
        only_when: Some(Condition::Is("LoadBalancer")),
        reason: "has no effect: no multi-cluster load balancer provider is built in (Karmada relies on an external multicluster-cloud-provider for it)",
    },
    Ineffective {
        kinds: &["MultiClusterService"],
        field: "spec.ports",
        only_when: None,
        reason: "has no effect on CrossCluster exposure, which dispatches every port (as in Karmada)",
    },
    Ineffective {
        kinds: &["MultiClusterService"],
        field: "spec.range",
        only_when: None,
        reason: "has no effect: deprecated in Karmada, use providerClusters and consumerClusters",
    },
    Ineffective {
        kinds: &["MultiClusterService"],
        field: "spec.serviceProvisionClusters",
        only_when: None,
        reason: "has no effect: deprecated in Karmada, use providerClusters",
    },
    Ineffective {
        kinds: &["MultiClusterService"],
        field: "spec.serviceConsumptionClusters",
        only_when: None,
        reason: "has no effect: deprecated in Karmada, use consumerClusters",
    },
    Ineffective {
        kinds: &["MultiClusterIngress"],
        field: "spec",
        only_when: None,
        reason: "has no effect: no multi-cluster ingress provider is built in (Karmada relies on an external multicluster-cloud-provider for it); the object is stored and served for one",
    },
];

/// Every entry.
pub fn table() -> impl Iterator<Item = &'static Ineffective> {
    OTHERS.iter()
}

/// Whether a value counts as set: not null, empty or false.
fn is_set(v: &Value) -> bool {
    match v {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Bool(true) | Value::Number(_) => true,
    }
}

/// The warnings for a written object of `kind` (its storage version): one per set field
/// without effect, `<path>: <reason>`, in table order.
pub fn warnings(kind: &str, obj: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for entry in table().filter(|e| e.kinds.contains(&kind)) {
        let mut found = Vec::new();
        walk(obj, entry.field, String::new(), &mut found);
        for (path, parent, value) in found {
            let applies = match entry.only_when {
                None => true,
                Some(Condition::Is(want)) => value.as_str() == Some(want),
                Some(Condition::SiblingSet(s)) => parent.get(s).is_some_and(is_set),
                Some(Condition::SiblingUnset(s)) => !parent.get(s).is_some_and(is_set),
                Some(Condition::SiblingIs(s, want)) => {
                    parent.get(s).and_then(Value::as_str) == Some(want)
                }
                Some(Condition::SiblingStartsWith(s, prefix)) => parent
                    .get(s)
                    .and_then(Value::as_str)
                    .is_some_and(|v| v.starts_with(prefix)),
            };
            if applies {
                out.push(format!("{path}: {}", entry.reason));
            }
        }
    }
    out
}

/// Finds the set values at `pattern` under `at` (`path` is the path of `at`), with their
/// parent objects.
fn walk<'a>(
    at: &'a Value,
    pattern: &str,
    path: String,
    found: &mut Vec<(String, &'a Map<String, Value>, &'a Value)>,
) {
    let Some(parent) = at.as_object() else {
        return;
    };
    let (segment, rest) = match pattern.split_once('.') {
        Some((s, r)) => (s, Some(r)),
        None => (pattern, None),
    };
    let (name, each) = match segment.strip_suffix("[*]") {
        Some(n) => (n, true),
        None => (segment, false),
    };
    let Some(value) = parent.get(name) else {
        return;
    };
    let here = if path.is_empty() {
        name.to_owned()
    } else {
        format!("{path}.{name}")
    };
    match (each, rest) {
        (false, None) => {
            if is_set(value) {
                found.push((here, parent, value));
            }
        }
        (false, Some(rest)) => walk(value, rest, here, found),
        (true, rest) => {
            for (i, item) in value.as_array().into_iter().flatten().enumerate() {
                let item_path = format!("{here}[{i}]");
                match rest {
                    Some(rest) => walk(item, rest, item_path, found),
                    None if is_set(item) => found.push((item_path, parent, item)),
                    None => {}
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn multi_cluster_service_fields_without_effect() {
        let mcs = json!({"spec": {"types": ["LoadBalancer"], "ports": [{"port": 80}],
                                  "range": {"clusterNames": ["m1"]}, "providerClusters": [{"name": "m1"}]}});
        let paths: Vec<String> = warnings("MultiClusterService", &mcs)
            .iter()
            .map(|w| w.split(':').next().unwrap().to_owned())
            .collect();
        assert_eq!(paths, ["spec.types[0]", "spec.ports", "spec.range"]);
        let cross = json!({"spec": {"types": ["CrossCluster"]}});
        assert_eq!(
            warnings("MultiClusterService", &cross),
            [
                "spec.types[0]: has no effect unless the control plane runs with --feature-gates=MultiClusterService=true (Alpha, off by default, as in Karmada): without it the Service is not exposed across clusters"
            ]
        );
    }

    #[test]
    fn propagation_policy_fields_without_effect() {
        let pp = json!({"spec": {
            "resourceSelectors": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a", "labelSelector": {"matchLabels": {"x": "y"}}},
                {"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"x": "y"}}}
            ],
            "preemption": "Always",
            "activationPreference": "Lazy",
            "schedulePriority": {"priorityClassSource": "KubePriorityClass", "priorityClassName": "high"},
            "placement": {"workloadAffinity": {"affinity": {"groupByLabelKey": "app"}},
                          "clusterTolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule"},
                                                 {"key": "b", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
                          "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2},
                                                {"spreadByLabel": "zone", "maxGroups": 1}]},
            "failover": {"application": {"decisionConditions": {"tolerationSeconds": 60},
                                         "statePreservation": {"rules": [{"aliasLabelName": "a", "jsonPath": "{.x}"}]}},
                         "cluster": {"statePreservation": {"rules": [{"aliasLabelName": "b", "jsonPath": "{.y}"}]}}},
            "association": true,
            "conflictResolution": "Overwrite"
        }});
        let paths: Vec<String> = warnings("PropagationPolicy", &pp)
            .iter()
            .map(|w| w.split(':').next().unwrap().to_owned())
            .collect();
        assert_eq!(
            paths,
            [
                "spec.preemption",
                "spec.placement.workloadAffinity",
                "spec.association",
                "spec.placement.spreadConstraints[1].spreadByLabel",
                "spec.resourceSelectors[0].labelSelector",
            ]
        );
        assert_eq!(warnings("ClusterPropagationPolicy", &pp).len(), paths.len());
        assert_eq!(
            warnings("PropagationPolicy", &pp)[0],
            "spec.preemption: has no effect unless the control plane runs with --feature-gates=PropagationPolicyPreemption=true (Alpha, off by default, as in Karmada): without it templates claimed by another policy are not taken over"
        );
    }

    #[test]
    fn defaults_and_effective_values_do_not_warn() {
        let pp = json!({"spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c"}],
            "preemption": "Never",
            "activationPreference": "",
            "association": false,
            "failover": {},
            "placement": {"clusterAffinity": {"clusterNames": ["m"]}, "spreadConstraints": [{"spreadByField": "region"}]}
        }});
        assert_eq!(warnings("PropagationPolicy", &pp), Vec::<String>::new());
        // A field of another kind's table does not warn here.
        let work = json!({"spec": {"failover": {"application": {}}}});
        assert!(warnings("Work", &work).is_empty());
        assert!(warnings("ConfigMap", &pp).is_empty());
        // Odd shapes: nothing to walk.
        assert!(warnings("PropagationPolicy", &json!({"spec": 3})).is_empty());
        assert!(
            warnings(
                "PropagationPolicy",
                &json!({"spec": {"resourceSelectors": "x"}})
            )
            .is_empty()
        );
    }

    #[test]
    fn replica_scheduling_settings_that_do_not_apply() {
        let pp = |rs: Value| {
            warnings(
                "PropagationPolicy",
                &json!({"spec": {"placement": {"replicaScheduling": rs}}}),
            )
        };
        let w = pp(
            json!({"replicaSchedulingType": "Duplicated", "replicaDivisionPreference": "Weighted",
                          "weightPreference": {"dynamicWeight": "AvailableReplicas"}}),
        );
        assert_eq!(
            w,
            [
                "spec.placement.replicaScheduling.replicaDivisionPreference: has no effect because replicaSchedulingType is Duplicated",
                "spec.placement.replicaScheduling.weightPreference: has no effect because replicaSchedulingType is Duplicated",
            ]
        );
        let w = pp(
            json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated",
                          "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["a"]}, "weight": 1}],
                                               "dynamicWeight": "AvailableReplicas"}}),
        );
        assert_eq!(
            w,
            [
                "spec.placement.replicaScheduling.weightPreference: has no effect because replicaDivisionPreference is Aggregated",
                "spec.placement.replicaScheduling.weightPreference.staticWeightList: has no effect because dynamicWeight is set",
            ]
        );
        assert!(pp(json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                          "weightPreference": {"staticWeightList": [{"targetCluster": {}, "weight": 1}]}}))
        .is_empty());
    }

    #[test]
    fn override_policy_selectors() {
        let op = json!({"spec": {
            "resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "c",
                                   "labelSelector": {"matchLabels": {"a": "b"}}}],
            "overrideRules": [{"overriders": {"plaintext": []}}]
        }});
        assert_eq!(
            warnings("ClusterOverridePolicy", &op),
            ["spec.resourceSelectors[0].labelSelector: has no effect because name is set"]
        );
        // The deprecated targetCluster/overriders are refused beside overrideRules (by
        // validation), and effective without them: never a warning.
        let legacy = json!({"spec": {"targetCluster": {"clusterNames": ["m"]}, "overriders": {"plaintext": [{"path": "/a", "operator": "remove"}]}}});
        assert!(warnings("OverridePolicy", &legacy).is_empty());
    }

    #[test]
    fn bindings_and_clusters() {
        let rb = json!({"spec": {
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"},
            "gracefulEvictionTasks": [{"fromCluster": "m", "reason": "X", "producer": "p"}],
            "workloadAffinityGroups": {"affinityGroup": "g"},
            "components": [{"name": "a", "replicas": 1}],
            "clusters": [{"name": "m"}]
        }});
        let w = warnings("ResourceBinding", &rb);
        let paths: Vec<&str> = w.iter().map(|w| w.split(':').next().unwrap()).collect();
        assert_eq!(paths, ["spec.workloadAffinityGroups", "spec.components"]);
        let headers = |url: &str| {
            let mut spec = json!({"proxyHeader": {"X-A": "1"}});
            if !url.is_empty() {
                spec["proxyURL"] = json!(url);
            }
            warnings("Cluster", &json!({"spec": spec}))
        };
        assert_eq!(
            headers(""),
            ["spec.proxyHeader: has no effect without proxyURL"]
        );
        assert_eq!(headers("socks5://p:1080").len(), 1);
        assert!(headers("socks5://p:1080")[0].contains("SOCKS5 proxies take no headers"));
        assert!(headers("http://p:3128").is_empty());
        assert!(headers("https://p").is_empty());
    }

    #[test]
    fn every_entry_names_known_kinds_and_fields() {
        for e in table() {
            for k in e.kinds {
                let info = crate::catalog::kind_info(k).unwrap_or_else(|| panic!("{k}"));
                let schema = crate::schema::openapi_schema(info.kind).unwrap();
                // The field exists in the kind's schema.
                let mut at = schema;
                for segment in e.field.split('.') {
                    let name = segment.trim_end_matches("[*]");
                    at = at
                        .pointer(&format!("/properties/{name}"))
                        .unwrap_or_else(|| panic!("{k} {}", e.field));
                    if segment.ends_with("[*]") {
                        at = &at["items"];
                    }
                }
            }
        }
    }
}
