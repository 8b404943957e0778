//! Table tests of the native interpreter, per kind and operation.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::jiff::Timestamp;
use karmada_api::work::v1alpha1::ResourceHealth;
use karmada_api::work::v1alpha2::{AggregatedStatusItem, TargetCluster};
use serde_json::{Value, json};

use super::*;

fn item(cluster: &str, status: Option<Value>) -> AggregatedStatusItem {
    AggregatedStatusItem {
        cluster_name: cluster.into(),
        status,
        applied: true,
        ..Default::default()
    }
}

fn now() -> Timestamp {
    Timestamp::from_second(1_700_000_000).unwrap()
}

fn deployment(replicas: Option<i64>) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "generation": 2},
        "spec": {"template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}
    });
    if let Some(r) = replicas {
        d["spec"]["replicas"] = json!(r);
    }
    d
}

#[test]
fn replicas_and_requirements() {
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "template": {"spec": {
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}},
                {"name": "b", "resources": {"limits": {"cpu": "1", "memory": "256Mi", "nvidia.com/gpu": "1"},
                                            "requests": {"memory": "64Mi"}}}
            ],
            "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "2", "hugepages-2Mi": "4Mi"}}}],
            "overhead": {"memory": "10Mi"}
        }}}
    });
    let (replicas, req) = get_replicas(&d).unwrap();
    assert_eq!(replicas, 3);
    let req = req.unwrap();
    let q = |name: &str| req.resource_request.get(name).map(|q| q.0.as_str());
    assert_eq!(
        q("cpu"),
        Some("2"),
        "init container maximum wins over the 1100m sum"
    );
    assert_eq!(q("memory"), Some("202Mi"));
    assert_eq!(q("nvidia.com/gpu"), Some("1"));
    assert_eq!(q("hugepages-2Mi"), Some("4Mi"));
    let claim = req.node_claim.unwrap();
    assert_eq!(
        claim.node_selector.get("disk").map(String::as_str),
        Some("ssd")
    );
    assert_eq!(claim.tolerations.len(), 1);
    assert!(claim.hard_node_affinity.is_none());
    assert!(req.namespace.is_empty());

    let affinity_only = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}});
    let r = generate_replica_requirements(&affinity_only)
        .unwrap()
        .unwrap();
    assert!(r.node_claim.unwrap().hard_node_affinity.is_some());
    assert!(r.resource_request.is_empty());

    let job = |parallelism: Option<i64>, completions: Option<i64>| {
        let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]}}}});
        if let Some(p) = parallelism {
            j["spec"]["parallelism"] = json!(p);
        }
        if let Some(c) = completions {
            j["spec"]["completions"] = json!(c);
        }
        j
    };
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}]}});
    let cases: Vec<(&str, Value, i32, bool)> = vec![
        ("deployment without replicas", deployment(None), 0, false),
        ("deployment", deployment(Some(4)), 4, false),
        (
            "statefulset",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": 2}}),
            2,
            false,
        ),
        ("job limited by completions", job(Some(5), Some(3)), 3, true),
        ("job without completions", job(Some(2), None), 2, true),
        ("job defaults", job(None, None), 0, true),
        ("pod", pod, 1, false),
        (
            "service has no replicas",
            json!({"apiVersion": "v1", "kind": "Service"}),
            0,
            false,
        ),
        (
            "old API version has no rule",
            json!({"apiVersion": "apps/v1beta1", "kind": "Deployment", "spec": {"replicas": 3}}),
            0,
            false,
        ),
    ];
    for (name, obj, want, has_requirements) in cases {
        let (got, req) = get_replicas(&obj).unwrap();
        assert_eq!(got, want, "{name}");
        assert_eq!(req.is_some(), has_requirements, "{name}");
    }
    let bad = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "spec": {"replicas": "3"}});
    assert!(get_replicas(&bad).is_err());
}

#[test]
fn revise_replicas_and_job_completions() {
    let cases: Vec<(Value, i64, Value)> = vec![
        (deployment(Some(4)), 3, json!(3)),
        (deployment(None), 3, Value::Null),
        (
            json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4, "completions": 10}}),
            2,
            json!(2),
        ),
        (
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"replicas": 9}}),
            1,
            json!(9),
        ),
    ];
    for (i, (obj, replicas, want)) in cases.into_iter().enumerate() {
        let revised = revise_replica(&obj, replicas).unwrap();
        let field = if str_at(&obj, &["kind"]) == "Job" {
            "parallelism"
        } else {
            "replicas"
        };
        assert_eq!(
            revised["spec"].get(field).cloned().unwrap_or(Value::Null),
            want,
            "case {i}"
        );
    }
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"parallelism": 4, "completions": 10}});
    let targets = [
        TargetCluster {
            name: "member1".into(),
            replicas: 3,
        },
        TargetCluster {
            name: "member2".into(),
            replicas: 1,
        },
    ];
    let divided = divide_job_completions(&job, &targets).unwrap().unwrap();
    assert_eq!(
        divided,
        vec![
            TargetCluster {
                name: "member1".into(),
                replicas: 7
            },
            TargetCluster {
                name: "member2".into(),
                replicas: 3
            },
        ]
    );
    assert_eq!(
        revise_job_completions(&job, 7).unwrap()["spec"]["completions"],
        json!(7)
    );
    let work_queue = json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"parallelism": 4}});
    assert_eq!(divide_job_completions(&work_queue, &targets).unwrap(), None);
    assert!(
        revise_job_completions(&work_queue, 7).unwrap()["spec"]
            .get("completions")
            .is_none()
    );
}

#[test]
fn retained_fields() {
    type Case = (&'static str, Value, Value, Box<dyn Fn(&Value)>);
    let cases: Vec<Case> = vec![
        (
            "service keeps allocated clusterIP and health check port",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]}}),
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"clusterIP": "10.0.0.7", "healthCheckNodePort": 31000}}),
            Box::new(|r: &Value| {
                assert_eq!(r["spec"]["clusterIP"], "10.0.0.7");
                assert_eq!(r["spec"]["healthCheckNodePort"], 31000);
                assert_eq!(r["spec"]["ports"][0]["port"], 80);
            }),
        ),
        (
            "service keeps allocated clusterIPs and node ports",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "NodePort", "ports": [
                {"name": "http", "port": 80}, {"name": "https", "port": 443, "nodePort": 30443}, {"name": "new", "port": 8080}]}}),
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "NodePort", "clusterIP": "10.0.0.9",
                "clusterIPs": ["10.0.0.9"], "ports": [
                {"name": "http", "port": 80, "nodePort": 30080}, {"name": "https", "port": 443, "nodePort": 30444}]}}),
            Box::new(|r: &Value| {
                assert_eq!(r["spec"]["clusterIPs"], json!(["10.0.0.9"]));
                assert_eq!(r["spec"]["ports"][0]["nodePort"], 30080);
                assert_eq!(
                    r["spec"]["ports"][1]["nodePort"], 30443,
                    "a desired node port is kept"
                );
                assert!(r["spec"]["ports"][2].get("nodePort").is_none());
            }),
        ),
        (
            "deployment replicas kept only with the retain label",
            deployment(Some(2)),
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 7}}),
            Box::new(|r: &Value| assert_eq!(r["spec"]["replicas"], 2)),
        ),
        (
            "deployment replicas retained",
            {
                let mut d = deployment(Some(2));
                d["metadata"]["labels"] =
                    json!({"resourcetemplate.karmada.io/retain-replicas": "true"});
                d
            },
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": 7}}),
            Box::new(|r: &Value| assert_eq!(r["spec"]["replicas"], 7)),
        ),
        (
            "pod keeps node, service account and volumes",
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": "x"}]}}),
            json!({"apiVersion": "v1", "kind": "Pod", "spec": {"nodeName": "node-1", "serviceAccountName": "default",
                "volumes": [{"name": "token"}],
                "containers": [{"name": "c", "volumeMounts": [{"name": "token", "mountPath": "/var/run"}]}]}}),
            Box::new(|r: &Value| {
                assert_eq!(r["spec"]["nodeName"], "node-1");
                assert_eq!(r["spec"]["serviceAccountName"], "default");
                assert_eq!(r["spec"]["volumes"][0]["name"], "token");
                assert_eq!(
                    r["spec"]["containers"][0]["volumeMounts"][0]["name"],
                    "token"
                );
                assert_eq!(r["spec"]["containers"][0]["image"], "x");
            }),
        ),
        (
            "service account merges secrets by name",
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "secrets": [{"name": "a"}]}),
            json!({"apiVersion": "v1", "kind": "ServiceAccount", "secrets": [{"name": "sa-token-x"}, {"name": "a"}],
                "imagePullSecrets": [{"name": "pull"}]}),
            Box::new(|r: &Value| {
                assert_eq!(r["secrets"], json!([{"name": "a"}, {"name": "sa-token-x"}]));
                assert_eq!(r["imagePullSecrets"], json!([{"name": "pull"}]));
            }),
        ),
        (
            "pvc keeps its bound volume",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": {}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "spec": {"volumeName": "pv-1"}}),
            Box::new(|r: &Value| assert_eq!(r["spec"]["volumeName"], "pv-1")),
        ),
        (
            "pv keeps its claim",
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "spec": {}}),
            json!({"apiVersion": "v1", "kind": "PersistentVolume", "spec": {"claimRef": {"name": "c"}}}),
            Box::new(|r: &Value| assert_eq!(r["spec"]["claimRef"]["name"], "c")),
        ),
        (
            "job keeps the controller's selector and template labels",
            json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {"template": {"metadata": {"labels": {"app": "j"}}}}}),
            json!({"apiVersion": "batch/v1", "kind": "Job", "spec": {
                "selector": {"matchLabels": {"controller-uid": "u1"}},
                "template": {"metadata": {"labels": {"app": "j", "controller-uid": "u1"}}}}}),
            Box::new(|r: &Value| {
                assert_eq!(r["spec"]["selector"]["matchLabels"]["controller-uid"], "u1");
                assert_eq!(
                    r["spec"]["template"]["metadata"]["labels"]["controller-uid"],
                    "u1"
                );
            }),
        ),
        (
            "service-account token secrets keep their data",
            json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token"}),
            json!({"apiVersion": "v1", "kind": "Secret", "data": {"token": "dG9r"}}),
            Box::new(|r: &Value| assert_eq!(r["data"]["token"], "dG9r")),
        ),
        (
            "other secrets do not",
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"k": "djE="}}),
            json!({"apiVersion": "v1", "kind": "Secret", "data": {"k": "djI="}}),
            Box::new(|r: &Value| assert_eq!(r["data"]["k"], "djE=")),
        ),
    ];
    for (name, desired, observed, check) in cases {
        let retained = retain(&desired, &observed).unwrap_or_else(|e| panic!("{name}: {e}"));
        check(&retained);
    }
    let mut labelled = deployment(Some(2));
    labelled["metadata"]["labels"] = json!({"resourcetemplate.karmada.io/retain-replicas": "true"});
    assert!(retain(&labelled, &json!({"kind": "Deployment"})).is_err());
}

#[test]
fn cluster_fields_retention() {
    let desired =
        json!({"metadata": {"name": "x", "labels": {"app": "x"}, "annotations": {"a": "1"}}});
    let observed = json!({"metadata": {
        "name": "x", "resourceVersion": "42", "finalizers": ["f"],
        "labels": {"app": "old", "member-only": "v", "removed": "r"},
        "annotations": {"resourcetemplate.karmada.io/managed-labels": "app,removed", "member": "m"}
    }});
    let r = retain_cluster_fields(&desired, &observed);
    assert_eq!(r["metadata"]["resourceVersion"], "42");
    assert_eq!(r["metadata"]["finalizers"], json!(["f"]));
    assert_eq!(
        r["metadata"]["labels"],
        json!({"app": "x", "member-only": "v"})
    );
    assert_eq!(r["metadata"]["annotations"]["member"], "m");
    assert_eq!(r["metadata"]["annotations"]["a"], "1");
}

#[test]
fn reflected_status() {
    let mut member = deployment(Some(2));
    member["metadata"]["annotations"] = json!({"resourcetemplate.karmada.io/generation": "5"});
    member["status"] = json!({"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
        "observedGeneration": 2, "conditions": [{"type": "Available", "status": "True"}]});
    let cases: Vec<(&str, Value, Option<Value>)> = vec![
        (
            "deployment with generations",
            member,
            Some(
                json!({"generation": 2, "resourceTemplateGeneration": 5, "replicas": 2, "readyReplicas": 2,
                "updatedReplicas": 2, "availableReplicas": 2, "observedGeneration": 2}),
            ),
        ),
        ("deployment without status", deployment(Some(1)), None),
        (
            "empty deployment status is not reported",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": {}}),
            None,
        ),
        (
            "cluster-ip service has nothing",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"}, "status": {"loadBalancer": {}}}),
            None,
        ),
        (
            "load balancer service",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"},
                "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}, "conditions": []}}),
            Some(json!({"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}})),
        ),
        (
            "job",
            json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"active": 1, "ready": 1, "startTime": "2024-01-01T00:00:00Z",
                "uncountedTerminatedPods": {}}}),
            Some(json!({"active": 1, "startTime": "2024-01-01T00:00:00Z"})),
        ),
        (
            "daemonset keeps required zeros",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1},
                "status": {"desiredNumberScheduled": 2, "numberReady": 2, "observedGeneration": 1}}),
            Some(
                json!({"generation": 1, "currentNumberScheduled": 0, "numberMisscheduled": 0,
                "desiredNumberScheduled": 2, "numberReady": 2, "observedGeneration": 1}),
            ),
        ),
        (
            "statefulset leaves out observedGeneration",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "status": {"replicas": 3, "readyReplicas": 3, "observedGeneration": 4}}),
            Some(json!({"replicas": 3, "availableReplicas": 0, "readyReplicas": 3})),
        ),
        (
            "hpa",
            json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "status": {"currentReplicas": 2, "desiredReplicas": 3, "conditions": []}}),
            Some(json!({"currentReplicas": 2, "desiredReplicas": 3})),
        ),
        (
            "pdb",
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "status": {"currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1, "observedGeneration": 1}}),
            Some(
                json!({"currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1}),
            ),
        ),
        (
            "other kinds reflect the whole status",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}}),
            Some(json!({"phase": "Bound", "capacity": {"storage": "1Gi"}})),
        ),
        (
            "no status at all",
            json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {}}),
            None,
        ),
    ];
    for (name, obj, want) in cases {
        assert_eq!(reflect_status(&obj).unwrap(), want, "{name}");
    }
}

#[test]
fn health_rules() {
    let dep = |generation: i64, observed: i64, replicas: i64, updated: i64, available: i64| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"generation": generation},
            "spec": {"replicas": replicas},
            "status": {"observedGeneration": observed, "updatedReplicas": updated, "availableReplicas": available}})
    };
    let pod = |phase: &str, ready: &str| json!({"apiVersion": "v1", "kind": "Pod", "status": {"phase": phase, "conditions": [{"type": "Ready", "status": ready}]}});
    use ResourceHealth::*;
    let cases: Vec<(&str, Value, ResourceHealth)> = vec![
        ("deployment rolled out", dep(2, 2, 3, 3, 3), Healthy),
        (
            "deployment generation not observed",
            dep(3, 2, 3, 3, 3),
            Unhealthy,
        ),
        ("deployment not updated", dep(2, 2, 3, 2, 2), Unhealthy),
        ("deployment not available", dep(2, 2, 3, 3, 1), Unhealthy),
        (
            "statefulset",
            json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 1}, "spec": {"replicas": 1},
                "status": {"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 1}}),
            Healthy,
        ),
        (
            "replicaset short",
            json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"generation": 1}, "spec": {"replicas": 2},
                "status": {"observedGeneration": 1, "availableReplicas": 1}}),
            Unhealthy,
        ),
        (
            "daemonset",
            json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1},
                "status": {"observedGeneration": 1, "desiredNumberScheduled": 2, "updatedNumberScheduled": 2, "numberAvailable": 2}}),
            Healthy,
        ),
        (
            "cluster-ip service",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "ClusterIP"}}),
            Healthy,
        ),
        (
            "pending load balancer",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"}}),
            Unhealthy,
        ),
        (
            "ready load balancer",
            json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": "LoadBalancer"},
                "status": {"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}}),
            Healthy,
        ),
        (
            "ingress without address",
            json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "status": {}}),
            Unhealthy,
        ),
        (
            "bound pvc",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Bound"}}),
            Healthy,
        ),
        (
            "pending pvc",
            json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Pending"}}),
            Unhealthy,
        ),
        ("running ready pod", pod("Running", "True"), Healthy),
        ("running unready pod", pod("Running", "False"), Unhealthy),
        ("succeeded pod", pod("Succeeded", "False"), Healthy),
        (
            "pdb",
            json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "status": {"currentHealthy": 1, "desiredHealthy": 2}}),
            Unhealthy,
        ),
        (
            "job has no rule",
            json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"failed": 3}}),
            Healthy,
        ),
        (
            "configmap has no rule",
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            Healthy,
        ),
        (
            "malformed is unknown",
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "status": {"observedGeneration": "x"}}),
            Unknown,
        ),
    ];
    for (name, obj, want) in cases {
        assert_eq!(interpret_health(&obj), want, "{name}");
    }
}

fn dep_status(
    generation: i64,
    template_generation: i64,
    observed: i64,
    replicas: i64,
    ready: i64,
) -> Value {
    json!({"generation": generation, "resourceTemplateGeneration": template_generation, "observedGeneration": observed,
        "replicas": replicas, "readyReplicas": ready, "updatedReplicas": replicas, "availableReplicas": ready,
        "unavailableReplicas": replicas - ready})
}

#[test]
fn deployment_aggregation() {
    let mut template = deployment(Some(4));
    template["status"] = json!({"observedGeneration": 1, "conditions": [{"type": "Available"}]});
    let caught_up = [
        item("member1", Some(dep_status(3, 2, 3, 3, 3))),
        item("member2", Some(dep_status(1, 2, 1, 1, 0))),
    ];
    let status = aggregate_status(&template, &caught_up, now())
        .unwrap()
        .unwrap();
    assert_eq!(
        status,
        json!({"observedGeneration": 2, "replicas": 4, "readyReplicas": 3, "updatedReplicas": 4,
            "availableReplicas": 3, "unavailableReplicas": 1, "conditions": [{"type": "Available"}]})
    );
    // A member still on the previous template keeps the old observedGeneration.
    let lagging = [
        item("member1", Some(dep_status(3, 2, 3, 3, 3))),
        item("member2", Some(dep_status(1, 1, 1, 1, 1))),
    ];
    let status = aggregate_status(&template, &lagging, now())
        .unwrap()
        .unwrap();
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["replicas"], 4);
    // So does a member that has not reported.
    let missing = [
        item("member1", Some(dep_status(3, 2, 3, 3, 3))),
        item("member2", None),
    ];
    let status = aggregate_status(&template, &missing, now())
        .unwrap()
        .unwrap();
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["replicas"], 3);
    // Up to date: nothing to write.
    let mut current = template.clone();
    current["status"] = aggregate_status(&template, &caught_up, now())
        .unwrap()
        .unwrap();
    assert_eq!(aggregate_status(&current, &caught_up, now()).unwrap(), None);
}

#[test]
fn workload_aggregation_other_kinds() {
    let sts =
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"generation": 1}});
    let items = [
        // Reflected StatefulSet statuses carry no observedGeneration, so as upstream the template's
        // observedGeneration does not advance.
        item(
            "a",
            Some(
                json!({"generation": 1, "resourceTemplateGeneration": 1, "replicas": 2, "availableReplicas": 2,
            "readyReplicas": 2, "currentReplicas": 2, "updatedReplicas": 2}),
            ),
        ),
        item(
            "b",
            Some(
                json!({"generation": 1, "resourceTemplateGeneration": 1, "replicas": 1, "availableReplicas": 0, "readyReplicas": 0}),
            ),
        ),
    ];
    let status = aggregate_status(&sts, &items, now()).unwrap().unwrap();
    assert_eq!(
        status,
        json!({"replicas": 3, "availableReplicas": 2, "readyReplicas": 2, "currentReplicas": 2, "updatedReplicas": 2})
    );
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"generation": 1}});
    let items = [
        item(
            "a",
            Some(
                json!({"generation": 1, "resourceTemplateGeneration": 1, "observedGeneration": 1,
            "currentNumberScheduled": 2, "desiredNumberScheduled": 2, "numberReady": 2, "numberAvailable": 2,
            "updatedNumberScheduled": 2, "numberMisscheduled": 0}),
            ),
        ),
        item(
            "b",
            Some(
                json!({"generation": 1, "resourceTemplateGeneration": 1, "observedGeneration": 1,
            "currentNumberScheduled": 3, "desiredNumberScheduled": 3, "numberReady": 1, "numberUnavailable": 2}),
            ),
        ),
    ];
    let status = aggregate_status(&ds, &items, now()).unwrap().unwrap();
    assert_eq!(
        status,
        json!({"observedGeneration": 1, "currentNumberScheduled": 5, "desiredNumberScheduled": 5, "numberReady": 3,
            "numberAvailable": 2, "updatedNumberScheduled": 2, "numberMisscheduled": 0, "numberUnavailable": 2})
    );
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"generation": 1}});
    let items = [item(
        "a",
        Some(
            json!({"replicas": 2, "readyReplicas": 1, "availableReplicas": 1, "generation": 1, "resourceTemplateGeneration": 1, "observedGeneration": 1}),
        ),
    )];
    assert_eq!(
        aggregate_status(&rs, &items, now()).unwrap().unwrap(),
        json!({"observedGeneration": 1, "replicas": 2, "readyReplicas": 1, "availableReplicas": 1})
    );
}

fn job_status(
    active: i64,
    succeeded: i64,
    failed: i64,
    conditions: &[(&str, &str)],
    start: Option<&str>,
    completion: Option<&str>,
) -> Value {
    let mut s = json!({"active": active, "succeeded": succeeded, "failed": failed,
        "conditions": conditions.iter().map(|(t, st)| json!({"type": t, "status": st})).collect::<Vec<_>>()});
    if let Some(t) = start {
        s["startTime"] = json!(t);
    }
    if let Some(t) = completion {
        s["completionTime"] = json!(t);
    }
    s
}

#[test]
fn job_aggregation() {
    let template = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"}});
    let t1 = "2024-01-01T00:00:00Z";
    let t2 = "2024-01-01T00:05:00Z";
    let t3 = "2024-01-01T00:10:00Z";
    let stamp = "2023-11-14T22:13:20Z";

    // One member done, one still running: sums, no completion yet, earliest start time.
    let running = [
        item(
            "member1",
            Some(job_status(
                0,
                3,
                0,
                &[("Complete", "True")],
                Some(t2),
                Some(t3),
            )),
        ),
        item("member2", Some(job_status(1, 1, 0, &[], Some(t1), None))),
    ];
    assert_eq!(
        aggregate_status(&template, &running, now())
            .unwrap()
            .unwrap(),
        json!({"active": 1, "succeeded": 4, "startTime": t1})
    );

    // Both done: Complete, latest completion time.
    let done = [
        item(
            "member1",
            Some(job_status(
                0,
                3,
                0,
                &[("Complete", "True")],
                Some(t2),
                Some(t3),
            )),
        ),
        item(
            "member2",
            Some(job_status(
                0,
                2,
                1,
                &[("SuccessCriteriaMet", "True"), ("Complete", "True")],
                Some(t1),
                Some(t2),
            )),
        ),
    ];
    assert_eq!(
        aggregate_status(&template, &done, now()).unwrap().unwrap(),
        json!({"succeeded": 5, "failed": 1, "startTime": t1, "completionTime": t3,
            "conditions": [{"type": "Complete", "status": "True", "reason": "Completed", "message": "Job completed",
                "lastProbeTime": stamp, "lastTransitionTime": stamp}]})
    );

    // A failed member is named in a Failed condition; Complete needs every member.
    let failed = [
        item(
            "member1",
            Some(job_status(0, 0, 6, &[("Failed", "True")], Some(t1), None)),
        ),
        item(
            "member2",
            Some(job_status(
                0,
                3,
                0,
                &[("Complete", "True")],
                Some(t1),
                Some(t2),
            )),
        ),
        item(
            "member3",
            Some(job_status(0, 0, 2, &[("Failed", "True")], Some(t1), None)),
        ),
    ];
    let status = aggregate_status(&template, &failed, now())
        .unwrap()
        .unwrap();
    assert_eq!(status["conditions"].as_array().unwrap().len(), 1);
    assert_eq!(status["conditions"][0]["type"], "Failed");
    assert_eq!(status["conditions"][0]["reason"], "JobFailed");
    assert_eq!(
        status["conditions"][0]["message"],
        "Job executed failed in member clusters member1,member3"
    );
    assert!(status.get("completionTime").is_none());

    // No member has reported: nothing completes.
    let empty: [AggregatedStatusItem; 0] = [];
    assert_eq!(aggregate_status(&template, &empty, now()).unwrap(), None);

    // A finished Job is never updated again.
    let mut finished = template.clone();
    finished["status"] =
        json!({"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 5});
    assert_eq!(aggregate_status(&finished, &running, now()).unwrap(), None);
    // The template's own start time is kept.
    let mut started = template.clone();
    started["status"] = json!({"startTime": t2});
    assert_eq!(
        aggregate_status(&started, &running, now())
            .unwrap()
            .unwrap()["startTime"],
        t2
    );
}

#[test]
fn network_aggregation() {
    let svc = |t: &str| json!({"apiVersion": "v1", "kind": "Service", "spec": {"type": t}});
    let lb = |ingress: Value| Some(json!({"loadBalancer": {"ingress": ingress}}));
    let items = [
        item(
            "member1",
            lb(json!([{"ip": "10.0.0.2"}, {"hostname": "b.example.com"}])),
        ),
        item(
            "member2",
            lb(
                json!([{"ip": "10.0.0.1", "ports": [{"port": 443, "protocol": "TCP"}]},
            {"hostname": "a.example.com"}]),
            ),
        ),
        item(
            "member3",
            lb(
                json!([{"ip": "10.0.0.1", "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}]}]),
            ),
        ),
        item("member4", None),
    ];
    assert_eq!(
        aggregate_status(&svc("LoadBalancer"), &items, now())
            .unwrap()
            .unwrap(),
        json!({"loadBalancer": {"ingress": [
            {"hostname": "a.example.com"},
            {"hostname": "b.example.com"},
            {"ip": "10.0.0.1", "ports": [{"port": 80, "protocol": "TCP"}, {"port": 443, "protocol": "TCP"}]},
            {"ip": "10.0.0.2"}
        ]}})
    );
    assert_eq!(
        aggregate_status(&svc("ClusterIP"), &items, now()).unwrap(),
        None
    );
    let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"});
    assert_eq!(
        aggregate_status(&ingress, &items[..2], now())
            .unwrap()
            .unwrap()["loadBalancer"]["ingress"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn phase_aggregation() {
    let phase = |p: &str| Some(json!({"phase": p}));
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "status": {"phase": "Pending"}});
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume"});
    let pod = json!({"apiVersion": "v1", "kind": "Pod"});
    type Case = (
        &'static str,
        Value,
        Vec<AggregatedStatusItem>,
        Option<Value>,
    );
    let cases: Vec<Case> = vec![
        (
            "pvc all bound",
            pvc.clone(),
            vec![item("a", phase("Bound")), item("b", phase("Bound"))],
            Some(json!({"phase": "Bound"})),
        ),
        (
            "pvc one pending",
            pvc.clone(),
            vec![item("a", phase("Bound")), item("b", phase("Pending"))],
            None,
        ),
        (
            "pvc lost wins",
            pvc.clone(),
            vec![item("a", phase("Lost")), item("b", phase("Pending"))],
            Some(json!({"phase": "Lost"})),
        ),
        (
            "pv failed first",
            pv.clone(),
            vec![item("a", phase("Bound")), item("b", phase("Failed"))],
            Some(json!({"phase": "Failed"})),
        ),
        (
            "pv unreported is pending",
            pv.clone(),
            vec![item("a", phase("Available")), item("b", None)],
            Some(json!({"phase": "Pending"})),
        ),
        (
            "pv released last",
            pv.clone(),
            vec![item("a", phase("Released")), item("b", phase("Bound"))],
            Some(json!({"phase": "Bound"})),
        ),
        (
            "pod pending beats running",
            pod.clone(),
            vec![item("a", phase("Running")), item("b", phase("Pending"))],
            Some(json!({"phase": "Pending"})),
        ),
        (
            "pod failed beats all",
            pod.clone(),
            vec![item("a", phase("Succeeded")), item("b", phase("Failed"))],
            Some(json!({"phase": "Failed"})),
        ),
        (
            "pod running beats succeeded",
            pod.clone(),
            vec![item("a", phase("Succeeded")), item("b", phase("Running"))],
            Some(json!({"phase": "Running"})),
        ),
        ("pod without members", pod.clone(), vec![], None),
    ];
    for (name, template, items, want) in cases {
        assert_eq!(
            aggregate_status(&template, &items, now()).unwrap(),
            want,
            "{name}"
        );
    }
    let with_containers = [item(
        "a",
        Some(
            json!({"phase": "Running", "containerStatuses": [{"name": "c", "ready": true, "state": {"running": {}}, "restartCount": 3}]}),
        ),
    )];
    let status = aggregate_status(&pod, &with_containers, now())
        .unwrap()
        .unwrap();
    assert_eq!(status["containerStatuses"][0]["ready"], true);
    assert_eq!(
        status["containerStatuses"][0]["state"],
        json!({"running": {}})
    );
    assert_eq!(status["containerStatuses"][0]["restartCount"], 0);
}

#[test]
fn counter_aggregation() {
    let pdb = json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget"});
    let items = [
        item(
            "a",
            Some(
                json!({"currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 2, "disruptionsAllowed": 1,
            "disruptedPods": {"p1": "2024-01-01T00:00:00Z"}}),
            ),
        ),
        item(
            "b",
            Some(
                json!({"currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1, "disruptionsAllowed": 0}),
            ),
        ),
    ];
    assert_eq!(
        aggregate_status(&pdb, &items, now()).unwrap().unwrap(),
        json!({"currentHealthy": 3, "desiredHealthy": 2, "expectedPods": 3, "disruptionsAllowed": 1,
            "disruptedPods": {"a/p1": "2024-01-01T00:00:00Z"}})
    );
    let hpa = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler"});
    let items = [
        item(
            "a",
            Some(json!({"currentReplicas": 2, "desiredReplicas": 3})),
        ),
        item(
            "b",
            Some(json!({"currentReplicas": 1, "desiredReplicas": 1})),
        ),
    ];
    assert_eq!(
        aggregate_status(&hpa, &items, now()).unwrap().unwrap(),
        json!({"currentReplicas": 3, "desiredReplicas": 4})
    );
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob"});
    let items = [
        item(
            "a",
            Some(json!({"active": [{"name": "j1"}], "lastScheduleTime": "2024-01-01T00:00:00Z"})),
        ),
        item(
            "b",
            Some(
                json!({"active": [{"name": "j2"}], "lastScheduleTime": "2024-01-02T00:00:00Z",
            "lastSuccessfulTime": "2024-01-01T12:00:00Z"}),
            ),
        ),
    ];
    assert_eq!(
        aggregate_status(&cron, &items, now()).unwrap().unwrap(),
        json!({"active": [{"name": "j1"}, {"name": "j2"}], "lastScheduleTime": "2024-01-02T00:00:00Z",
            "lastSuccessfulTime": "2024-01-01T12:00:00Z"})
    );
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap"});
    assert_eq!(aggregate_status(&cm, &items, now()).unwrap(), None);
    let bad = [item("a", Some(json!({"currentReplicas": "two"})))];
    assert!(aggregate_status(&hpa, &bad, now()).is_err());
}

#[test]
fn dependencies_of_workloads() {
    let names = |deps: &[DependentObjectReference]| -> Vec<String> {
        deps.iter()
            .map(|d| format!("{}/{}/{}", d.kind, d.namespace, d.name))
            .collect()
    };
    let pod_spec = json!({
        "serviceAccountName": "runner",
        "imagePullSecrets": [{"name": "pull"}],
        "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-secret"}}]}],
        "containers": [{"name": "c",
            "envFrom": [{"configMapRef": {"name": "nginx-config"}}],
            "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm-key", "key": "k"}}},
                    {"name": "B", "valueFrom": {"secretKeyRef": {"name": "secret-key", "key": "k"}}},
                    {"name": "C", "value": "plain"}]}],
        "volumes": [
            {"name": "v1", "configMap": {"name": "cm-vol"}},
            {"name": "v2", "secret": {"secretName": "secret-vol"}},
            {"name": "v3", "projected": {"sources": [{"configMap": {"name": "cm-proj"}}, {"secret": {"name": "secret-proj"}}]}},
            {"name": "v4", "persistentVolumeClaim": {"claimName": "data"}},
            {"name": "v5", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-secret"}}},
            {"name": "v6", "emptyDir": {}}
        ]
    });
    let deploy = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"spec": pod_spec.clone()}}});
    assert_eq!(
        names(&get_dependencies(&deploy).unwrap()),
        vec![
            "ConfigMap/ns/cm-key",
            "ConfigMap/ns/cm-proj",
            "ConfigMap/ns/cm-vol",
            "ConfigMap/ns/nginx-config",
            "Secret/ns/csi-secret",
            "Secret/ns/init-secret",
            "Secret/ns/pull",
            "Secret/ns/secret-key",
            "Secret/ns/secret-proj",
            "Secret/ns/secret-vol",
            "ServiceAccount/ns/runner",
            "PersistentVolumeClaim/ns/data",
        ]
    );
    let cron = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"jobTemplate": {"spec": {"template": {"spec": {"serviceAccountName": "default",
            "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cfg"}}]}]}}}}}});
    assert_eq!(
        names(&get_dependencies(&cron).unwrap()),
        vec!["ConfigMap/ns/cfg"]
    );
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s", "namespace": "ns"},
        "spec": {"volumeClaimTemplates": [{"metadata": {"name": "www"}}],
            "template": {"spec": {"containers": [{"name": "c"}], "volumes": [
                {"name": "a", "persistentVolumeClaim": {"claimName": "www"}},
                {"name": "b", "persistentVolumeClaim": {"claimName": "shared"}}]}}}});
    assert_eq!(
        names(&get_dependencies(&sts).unwrap()),
        vec!["PersistentVolumeClaim/ns/shared"]
    );
    let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i", "namespace": "ns"},
        "spec": {"tls": [{"secretName": "tls-a"}, {"hosts": ["x"], "secretName": "tls-b"}]}});
    assert_eq!(
        names(&get_dependencies(&ingress).unwrap()),
        vec!["Secret/ns/tls-a", "Secret/ns/tls-b"]
    );
    let bad_ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
        "spec": {"tls": [{"hosts": ["x"]}]}});
    assert!(get_dependencies(&bad_ingress).is_err());
    let import = json!({"apiVersion": "multicluster.x-k8s.io/v1alpha1", "kind": "ServiceImport", "metadata": {"name": "web", "namespace": "ns"}});
    let deps = get_dependencies(&import).unwrap();
    assert_eq!(deps[0].name, "derived-web");
    assert_eq!(
        serde_json::to_value(&deps[1]).unwrap(),
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "namespace": "ns",
            "labelSelector": {"matchLabels": {"kubernetes.io/service-name": "derived-web"}}})
    );
    let svc = json!({"apiVersion": "v1", "kind": "Service"});
    assert!(get_dependencies(&svc).unwrap().is_empty());
}

#[test]
fn hooks() {
    let cases = [
        ("apps/v1", "Deployment", Operation::InterpretReplica, true),
        ("apps/v1", "DaemonSet", Operation::InterpretReplica, false),
        ("batch/v1", "Job", Operation::ReviseReplica, true),
        ("v1", "Pod", Operation::ReviseReplica, false),
        ("v1", "Service", Operation::Retain, true),
        ("apps/v1", "StatefulSet", Operation::Retain, false),
        ("batch/v1", "CronJob", Operation::AggregateStatus, true),
        ("v1", "Secret", Operation::AggregateStatus, false),
        ("v1", "ConfigMap", Operation::InterpretStatus, true),
        ("batch/v1", "Job", Operation::InterpretHealth, false),
        (
            "policy/v1",
            "PodDisruptionBudget",
            Operation::InterpretHealth,
            true,
        ),
        (
            "networking.k8s.io/v1",
            "Ingress",
            Operation::InterpretDependency,
            true,
        ),
        ("v1", "ConfigMap", Operation::InterpretDependency, false),
    ];
    for (api_version, kind, op, want) in cases {
        assert_eq!(hook_enabled(api_version, kind, op), want, "{kind} {op:?}");
    }
    let _ = Quantity::default();
}
