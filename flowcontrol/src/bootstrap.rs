//! The configuration objects every server starts with (k8s.io/apiserver
//! pkg/apis/flowcontrol/bootstrap): the mandatory ones, which the server restores whenever they
//! are changed or deleted, and the suggested ones, kept up to date unless their
//! `apf.kubernetes.io/autoupdate-spec` annotation says `"false"`. Besides kube 1.32's, two
//! suggested FlowSchemas place Karmada's own clients where kube places its counterparts: the
//! pull-mode agents at the `system` level, as kube's nodes, and the in-process controllers
//! (group `system:karmada:controllers`) exempt, as Karmada's controller-manager and scheduler,
//! which reach their API server as `system:masters`.

use serde_json::{Value, json};

/// The annotation saying whether the server keeps an object's spec up to date.
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";

/// The mandatory exempt level's and FlowSchema's name.
pub const EXEMPT: &str = "exempt";
/// The mandatory catch-all level's and FlowSchema's name.
pub const CATCH_ALL: &str = "catch-all";

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1",
        "kind": kind,
        "metadata": {"name": name, "annotations": {AUTO_UPDATE_ANNOTATION: "true"}},
        "spec": spec,
    })
}

fn queued(name: &str, shares: u32, lendable: u32, queues: u32, hand_size: u32) -> Value {
    object(
        "PriorityLevelConfiguration",
        name,
        json!({
            "type": "Limited",
            "limited": {
                "nominalConcurrencyShares": shares,
                "lendablePercent": lendable,
                "limitResponse": {
                    "type": "Queue",
                    "queuing": {"queues": queues, "handSize": hand_size, "queueLengthLimit": 50},
                },
            },
        }),
    )
}

fn groups(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "Group", "group": {"name": n}}))
        .collect()
}

fn users(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "User", "user": {"name": n}}))
        .collect()
}

fn kube_system_service_accounts(names: &[&str]) -> Vec<Value> {
    names
        .iter()
        .map(|n| json!({"kind": "ServiceAccount", "serviceAccount": {"name": n, "namespace": "kube-system"}}))
        .collect()
}

fn resource_rule(
    verbs: &[&str],
    groups: &[&str],
    resources: &[&str],
    cluster_scope: bool,
) -> Value {
    let mut rule = json!({
        "verbs": verbs, "apiGroups": groups, "resources": resources, "namespaces": ["*"],
    });
    if cluster_scope {
        rule["clusterScope"] = json!(true);
    }
    rule
}

fn flow_schema(
    name: &str,
    level: &str,
    precedence: i32,
    distinguisher: Option<&str>,
    rules: Value,
) -> Value {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rules],
    });
    if let Some(d) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": d});
    }
    object("FlowSchema", name, spec)
}

/// A FlowSchema of every request of these subjects.
fn everything(
    name: &str,
    level: &str,
    precedence: i32,
    distinguisher: Option<&str>,
    subjects: Vec<Value>,
) -> Value {
    flow_schema(
        name,
        level,
        precedence,
        distinguisher,
        json!({
            "subjects": subjects,
            "resourceRules": [resource_rule(&["*"], &["*"], &["*"], true)],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
        }),
    )
}

/// The mandatory PriorityLevelConfigurations.
pub fn mandatory_priority_levels() -> Vec<Value> {
    vec![
        object(
            "PriorityLevelConfiguration",
            EXEMPT,
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
        ),
        object(
            "PriorityLevelConfiguration",
            CATCH_ALL,
            json!({"type": "Limited", "limited": {
                "nominalConcurrencyShares": 5,
                "lendablePercent": 0,
                "limitResponse": {"type": "Reject"},
            }}),
        ),
    ]
}

/// The mandatory FlowSchemas.
pub fn mandatory_flow_schemas() -> Vec<Value> {
    vec![
        everything(EXEMPT, EXEMPT, 1, None, groups(&["system:masters"])),
        everything(
            CATCH_ALL,
            CATCH_ALL,
            10000,
            Some("ByUser"),
            groups(&["system:unauthenticated", "system:authenticated"]),
        ),
    ]
}

/// The suggested PriorityLevelConfigurations.
pub fn suggested_priority_levels() -> Vec<Value> {
    vec![
        queued("system", 30, 33, 64, 6),
        queued("node-high", 40, 25, 64, 6),
        queued("leader-election", 10, 0, 16, 4),
        queued("workload-high", 40, 50, 128, 6),
        queued("workload-low", 100, 90, 128, 6),
        queued("global-default", 20, 50, 128, 6),
    ]
}

/// The suggested FlowSchemas.
pub fn suggested_flow_schemas() -> Vec<Value> {
    let leases = resource_rule(
        &["get", "create", "update"],
        &["coordination.k8s.io"],
        &["leases"],
        false,
    );
    let mut leader_election_subjects =
        users(&["system:kube-controller-manager", "system:kube-scheduler"]);
    leader_election_subjects.extend(kube_system_service_accounts(&["*"]));
    let mut endpoint_subjects = users(&["system:kube-controller-manager"]);
    endpoint_subjects.extend(kube_system_service_accounts(&[
        "endpoint-controller",
        "endpointslicemirroring-controller",
    ]));
    vec![
        flow_schema(
            "probes",
            EXEMPT,
            2,
            None,
            json!({
                "subjects": groups(&["system:unauthenticated", "system:authenticated"]),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            }),
        ),
        everything(
            "karmada-controllers",
            EXEMPT,
            3,
            None,
            groups(&["system:karmada:controllers"]),
        ),
        flow_schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({"subjects": leader_election_subjects, "resourceRules": [leases]}),
        ),
        flow_schema(
            "endpoint-controller",
            "workload-high",
            150,
            Some("ByUser"),
            json!({
                "subjects": endpoint_subjects,
                "resourceRules": [resource_rule(&["get", "create", "update"], &[""], &["endpoints"], false)],
            }),
        ),
        flow_schema(
            "workload-leader-election",
            "leader-election",
            200,
            Some("ByUser"),
            json!({
                "subjects": kube_system_service_accounts(&["*"]),
                "resourceRules": [
                    resource_rule(&["get", "create", "update"], &[""], &["endpoints", "configmaps"], false),
                    leases,
                ],
            }),
        ),
        flow_schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({
                "subjects": groups(&["system:nodes"]),
                "resourceRules": [
                    resource_rule(&["*"], &[""], &["nodes", "nodes/status"], true),
                    resource_rule(&["*"], &["coordination.k8s.io"], &["leases"], false),
                ],
            }),
        ),
        everything(
            "system-nodes",
            "system",
            500,
            Some("ByUser"),
            groups(&["system:nodes"]),
        ),
        everything(
            "karmada-agents",
            "system",
            510,
            Some("ByUser"),
            groups(&["system:karmada:agents"]),
        ),
        everything(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            users(&["system:kube-controller-manager"]),
        ),
        everything(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            users(&["system:kube-scheduler"]),
        ),
        everything(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            kube_system_service_accounts(&["*"]),
        ),
        everything(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            groups(&["system:serviceaccounts"]),
        ),
        everything(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            groups(&["system:unauthenticated", "system:authenticated"]),
        ),
    ]
}

/// The configuration of all the bootstrap objects, which the server runs on until it has read
/// the objects themselves.
pub fn configuration() -> crate::Configuration {
    let schemas: Vec<Value> = mandatory_flow_schemas()
        .into_iter()
        .chain(suggested_flow_schemas())
        .collect();
    let levels: Vec<Value> = mandatory_priority_levels()
        .into_iter()
        .chain(suggested_priority_levels())
        .collect();
    crate::Configuration::from_objects(&schemas, &levels)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_names_a_bootstrap_level() {
        let cfg = configuration();
        assert_eq!(cfg.priority_levels.len(), 8);
        for s in &cfg.flow_schemas {
            assert!(
                cfg.priority_levels
                    .iter()
                    .any(|l| l.name == s.priority_level),
                "{}",
                s.name
            );
        }
        // kube's shares: 30 + 40 + 10 + 40 + 100 + 20 + 5 (exempt: 0).
        let total: u64 = cfg.priority_levels.iter().map(|l| l.shares).sum();
        assert_eq!(total, 245);
    }
}
