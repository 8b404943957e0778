//! The shipped customizations: each parses, compiles, defines its functions, and answers
//! every operation it scripts from the project's documented fields; a user's customization
//! of the same kind overrides them operation by operation.

use karmada_api::config::v1alpha1::ResourceInterpreterCustomization;
use karmada_api::work::v1alpha1::ResourceHealth;
use karmada_api::work::v1alpha2::AggregatedStatusItem;
use serde_json::{Value, json};

use super::super::{DependentObjectReference, ResourceInterpreter};
use lua::Operation;

pub(super) fn interpreter() -> ResourceInterpreter {
    ResourceInterpreter::new(None, lua::Limits::default())
}

pub(super) fn items(statuses: &[(&str, Value)]) -> Vec<AggregatedStatusItem> {
    statuses
        .iter()
        .map(|(cluster, status)| {
            serde_json::from_value(
                json!({"clusterName": cluster, "status": status, "applied": true}),
            )
            .expect("status item")
        })
        .collect()
}

pub(super) fn deps(list: &[DependentObjectReference]) -> Vec<String> {
    list.iter()
        .map(|d| format!("{} {} {}/{}", d.api_version, d.kind, d.namespace, d.name))
        .collect()
}

pub(super) fn pod_template() -> Value {
    json!({"metadata": {"labels": {"app": "a"}}, "spec": {
        "serviceAccountName": "runner",
        "containers": [{"name": "c", "image": "nginx",
            "envFrom": [{"configMapRef": {"name": "settings"}}],
            "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]
    }})
}

#[test]
fn every_shipped_customization_parses_compiles_and_defines_its_functions() {
    let files = super::files();
    assert!(files.len() >= 14, "every shipped customization is listed");
    let parsed = super::customizations();
    assert_eq!(parsed.len(), files.len(), "every file parses");
    let rt = lua::Runtime::new(std::sync::Arc::new(lua::NoPods), lua::Limits::default());
    let mut targets = Vec::new();
    for ((file, _), c) in files.iter().zip(&parsed) {
        let target = &c.spec.target;
        assert_eq!(
            *file,
            format!(
                "{}-{}.yaml",
                target.api_version.replace('/', "-"),
                target.kind
            ),
            "files are named after their target"
        );
        let mut scripted = 0;
        for op in Operation::ALL {
            if let Some(source) = c.spec.customizations.script(op) {
                rt.check_defines(&lua::Script::new(source, op.function()))
                    .unwrap_or_else(|e| panic!("{:?} {}: {e}", c.metadata.name, op.name()));
                scripted += 1;
            }
        }
        assert!(
            scripted >= 2,
            "{:?} scripts few operations",
            c.metadata.name
        );
        // Each passes the admission the user's own customizations pass.
        let mut value = serde_json::to_value(c).expect("json");
        karmada_api::admission::admit(
            "ResourceInterpreterCustomization",
            karmada_api::admission::Operation::Create,
            &mut value,
            None,
        )
        .unwrap_or_else(|e| panic!("{:?} refused: {e:?}", c.metadata.name));
        targets.push((
            c.spec.target.api_version.clone(),
            c.spec.target.kind.clone(),
        ));
    }
    targets.sort();
    targets.dedup();
    assert_eq!(targets.len(), parsed.len(), "one customization per kind");
}

fn rollout() -> Value {
    json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
        "metadata": {"name": "r", "namespace": "ns", "generation": 3, "labels": {}},
        "spec": {"replicas": 5, "template": pod_template(),
                 "strategy": {"canary": {"steps": [{"setWeight": 20}]}}},
    })
}

#[tokio::test]
async fn argo_rollout() {
    let i = interpreter();
    let r = rollout();
    let (n, req) = i.get_replicas(&r).await.expect("replicas");
    assert_eq!(n, 5);
    let req = req.expect("requirements");
    assert_eq!(req.resource_request["cpu"].0, "250m");
    assert_eq!(req.namespace, "ns");
    let revised = i.revise_replica(&r, 2).await.expect("revise");
    assert_eq!(revised["spec"]["replicas"], 2);
    assert_eq!(
        revised["metadata"]["labels"],
        json!({}),
        "empty maps stay maps"
    );

    let mut observed = revised.clone();
    observed["spec"]["replicas"] = json!(7);
    observed["status"] = json!({"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2,
        "availableReplicas": 2, "phase": "Healthy", "observedGeneration": "3", "currentPodHash": "x"});
    assert_eq!(
        i.retain(&revised, &observed).await.expect("retain")["spec"]["replicas"],
        2
    );
    let mut labelled = revised.clone();
    labelled["metadata"]["labels"] = json!({"resourcetemplate.karmada.io/retain-replicas": "true"});
    assert_eq!(
        i.retain(&labelled, &observed).await.expect("retain")["spec"]["replicas"],
        7
    );

    let reflected = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["phase"], "Healthy");
    assert_eq!(reflected["generation"], 3);
    assert!(reflected.get("currentPodHash").is_none());
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    observed["status"]["phase"] = json!("Degraded");
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    observed["status"]["phase"] = json!("Progressing");
    observed["status"]["availableReplicas"] = json!(1);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );

    let degraded = json!({"replicas": 3, "updatedReplicas": 1, "readyReplicas": 1,
        "availableReplicas": 1, "phase": "Degraded", "message": "ProgressDeadlineExceeded",
        "observedGeneration": "3", "generation": 3});
    let status = i
        .aggregate_status(&r, &items(&[("m1", reflected.clone()), ("m2", degraded)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["replicas"], 5);
    assert_eq!(status["availableReplicas"], 3);
    assert_eq!(status["phase"], "Degraded");
    assert_eq!(status["message"], "m2: ProgressDeadlineExceeded");
    assert_eq!(status["observedGeneration"], "3");

    let got = i.get_dependencies(&r).await.expect("deps");
    assert_eq!(
        deps(&got),
        ["v1 ConfigMap ns/settings", "v1 ServiceAccount ns/runner"]
    );
    let mut by_ref = r.clone();
    by_ref["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("template");
    by_ref["spec"]["workloadRef"] =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "base"});
    let got = i.get_dependencies(&by_ref).await.expect("deps");
    assert_eq!(deps(&got), ["apps/v1 Deployment ns/base"]);
    let (n, req) = i.get_replicas(&by_ref).await.expect("replicas");
    assert_eq!((n, req), (5, None));
}

#[tokio::test]
async fn kruise_cloneset() {
    let i = interpreter();
    let c = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
        "metadata": {"name": "c", "namespace": "ns", "generation": 2},
        "spec": {"replicas": 4, "template": pod_template(),
                 "updateStrategy": {"partition": 2}},
    });
    let (n, req) = i.get_replicas(&c).await.expect("replicas");
    assert_eq!(n, 4);
    let req = req.expect("requirements");
    assert_eq!(req.resource_request["cpu"].0, "250m");
    assert_eq!(req.namespace, "ns");
    let mut bare = c.clone();
    bare["spec"]["template"] = json!({"spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    assert_eq!(
        i.get_replicas(&bare).await,
        Ok((4, None)),
        "pods that request nothing have no requirements"
    );
    assert_eq!(
        i.revise_replica(&c, 1).await.expect("revise")["spec"]["replicas"],
        1
    );

    let mut observed = c.clone();
    observed["metadata"]["annotations"] = json!({"resourcetemplate.karmada.io/generation": "2"});
    observed["status"] = json!({"replicas": 4, "readyReplicas": 4, "availableReplicas": 4,
        "updatedReplicas": 4, "updatedReadyReplicas": 4, "expectedUpdatedReplicas": 4,
        "observedGeneration": 2, "updateRevision": "c-7f", "currentRevision": "c-6d",
        "labelSelector": "app=a", "collisionCount": 0});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    let reflected = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(
        reflected,
        json!({"replicas": 4, "readyReplicas": 4, "availableReplicas": 4,
            "updatedReplicas": 4, "updatedReadyReplicas": 4, "expectedUpdatedReplicas": 4,
            "observedGeneration": 2, "updateRevision": "c-7f", "currentRevision": "c-6d",
            "labelSelector": "app=a", "generation": 2, "resourceTemplateGeneration": 2})
    );
    // A partitioned update leaves old pods: not every wanted pod runs the latest revision.
    observed["status"]["updatedReplicas"] = json!(2);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    observed["status"]["updatedReplicas"] = json!(4);
    observed["status"]["availableReplicas"] = json!(3);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy),
        "an updated pod is not available"
    );
    observed["status"]["availableReplicas"] = json!(4);
    observed["status"]["observedGeneration"] = json!(1);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );

    let mut other = reflected.clone();
    other["currentRevision"] = json!("c-other");
    other["readyReplicas"] = json!(1);
    let status = i
        .aggregate_status(&c, &items(&[("m1", reflected.clone()), ("m2", other)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status,
        json!({"replicas": 8, "readyReplicas": 5, "availableReplicas": 8,
            "updatedReplicas": 8, "updatedReadyReplicas": 8, "expectedUpdatedReplicas": 8,
            "observedGeneration": 2, "updateRevision": "c-7f", "currentRevision": "c-other",
            "labelSelector": "app=a"}),
        "counts add up; the last member's revision names and selector are shown"
    );
    // A member still applying an older template keeps the template's observedGeneration.
    let mut stale = reflected.clone();
    stale["resourceTemplateGeneration"] = json!(1);
    let mut template = c.clone();
    template["status"] = json!({"observedGeneration": 1});
    let status = i
        .aggregate_status(
            &template,
            &items(&[("m1", reflected.clone()), ("m2", stale)]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["observedGeneration"], 1);
    assert_eq!(status["replicas"], 8);
    let mut lagging = reflected;
    lagging
        .as_object_mut()
        .expect("object")
        .retain(|k, _| k == "replicas");
    let status = i
        .aggregate_status(&template, &items(&[("m1", lagging)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status,
        json!({"replicas": 4, "readyReplicas": 0, "availableReplicas": 0,
            "updatedReplicas": 0, "updatedReadyReplicas": 0, "expectedUpdatedReplicas": 0,
            "observedGeneration": 1, "updateRevision": "", "currentRevision": "",
            "labelSelector": ""}),
        "a member that reports no generations has not caught up"
    );
    // Propagated nowhere: zero replicas, and the latest spec observed.
    let status = i
        .aggregate_status(&c, &[])
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["replicas"], 0);
    assert_eq!(status["observedGeneration"], 2);

    let got = i.get_dependencies(&c).await.expect("deps");
    assert_eq!(
        deps(&got),
        ["v1 ConfigMap ns/settings", "v1 ServiceAccount ns/runner"]
    );
}

#[tokio::test]
async fn flux_helm_release() {
    let i = interpreter();
    let hr = json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": "podinfo", "namespace": "apps", "generation": 4},
        "spec": {
            "interval": "10m",
            "chart": {"spec": {"chart": "podinfo", "sourceRef": {"kind": "HelmRepository", "name": "charts", "namespace": "flux-system"}}},
            "valuesFrom": [{"kind": "ConfigMap", "name": "values"}, {"kind": "Secret", "name": "secret-values"}],
            "serviceAccountName": "deployer",
        }
    });
    let got = i.get_dependencies(&hr).await.expect("deps");
    assert_eq!(
        deps(&got),
        [
            "source.toolkit.fluxcd.io/v1 HelmRepository flux-system/charts",
            "v1 ConfigMap apps/values",
            "v1 Secret apps/secret-values",
            "v1 ServiceAccount apps/deployer",
        ]
    );
    let ready = |status: &str, message: &str| {
        json!({"type": "Ready", "status": status, "reason": if status == "True" {"InstallSucceeded"} else {"InstallFailed"},
               "message": message, "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };
    let mut observed = hr.clone();
    observed["status"] = json!({"observedGeneration": 4, "conditions": [ready("True", "installed")],
        "lastAttemptedRevision": "6.5.0", "history": [{"name": "podinfo"}]});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    let good = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert!(good.get("history").is_none());
    observed["status"]["conditions"] = json!([ready("False", "chart not found")]);
    observed["status"]["installFailures"] = json!(2);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    let bad = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    let status = i
        .aggregate_status(&hr, &items(&[("m1", good.clone()), ("m2", bad)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["conditions"][0]["status"], "False");
    assert_eq!(status["conditions"][0]["reason"], "InstallFailed");
    assert_eq!(
        status["conditions"][0]["message"],
        "m1: installed; m2: chart not found"
    );
    assert_eq!(status["installFailures"], 2);
    assert_eq!(status["observedGeneration"], 4);
    let status = i
        .aggregate_status(&hr, &items(&[("m1", good)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["conditions"][0]["status"], "True");
    // No replicas: a HelmRelease is copied whole.
    assert_eq!(i.get_replicas(&hr).await, Ok((0, None)));
}

#[tokio::test]
async fn kyverno_cluster_policy() {
    let i = interpreter();
    let p = json!({
        "apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "require-labels", "generation": 1},
        "spec": {"rules": [
            {"name": "a", "context": [{"name": "dict", "configMap": {"name": "allowed", "namespace": "kyverno"}}]},
            {"name": "b", "context": [{"name": "per-ns", "configMap": {"name": "{{request.namespace}}", "namespace": "kyverno"}},
                                      {"name": "again", "configMap": {"name": "allowed", "namespace": "kyverno"}}]},
            {"name": "c"}
        ]}
    });
    let got = i.get_dependencies(&p).await.expect("deps");
    assert_eq!(deps(&got), ["v1 ConfigMap kyverno/allowed"]);

    let ready = |status: &str, reason: &str, message: &str| {
        json!({"type": "Ready", "status": status, "reason": reason, "message": message,
               "lastTransitionTime": "2026-01-01T00:00:00Z"})
    };
    let rulecount = json!({"validate": 3, "generate": 1, "mutate": 0, "verifyimages": 0});
    let mut observed = p.clone();
    observed["status"] = json!({"conditions": [ready("True", "Succeeded", "Ready")],
        "rulecount": rulecount, "autogen": {"rules": [{"name": "autogen-a"}]}, "validatingadmissionpolicy": {}});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    let good = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(good["autogen"]["rules"][0]["name"], "autogen-a");
    assert!(good.get("validatingadmissionpolicy").is_none());
    // Ready is not enough: the policy must have been processed successfully.
    observed["status"]["conditions"] = json!([ready("True", "Progressing", "")]);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    observed["status"]["conditions"] = json!([]);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    // Older releases' boolean decides when present, whatever the conditions say.
    observed["status"] = json!({"ready": false, "conditions": [ready("True", "Succeeded", "")]});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    observed["status"] = json!({"ready": true});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    let mut unobserved = p.clone();
    unobserved.as_object_mut().expect("object").remove("status");
    assert_eq!(
        i.interpret_health(&unobserved).await,
        Ok(ResourceHealth::Unhealthy)
    );

    let failed = json!({"conditions": [ready("False", "Failed", "webhook not ready")],
        "rulecount": {"validate": 3, "generate": 0, "mutate": 2, "verifyimages": 0}});
    let mut also_good = good.clone();
    also_good["conditions"][0]["message"] = json!("");
    let status = i
        .aggregate_status(
            &p,
            &items(&[("m1", good.clone()), ("m2", failed), ("m3", also_good)]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status["conditions"],
        json!([
            ready("True", "Succeeded", "m1=Ready, m3="),
            ready("False", "Failed", "m2=webhook not ready"),
        ]),
        "members with the same condition share one entry"
    );
    assert_eq!(
        status["rulecount"],
        json!({"validate": 9, "generate": 2, "mutate": 2, "verifyimages": 0})
    );
    assert_eq!(status["autogen"], good["autogen"]);
    assert!(
        status.get("ready").is_none(),
        "no member reports the boolean"
    );
    let status = i
        .aggregate_status(
            &p,
            &items(&[
                ("m1", json!({"ready": true})),
                ("m2", json!({"ready": false})),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["ready"], false, "the last member's boolean");
    assert_eq!(status["rulecount"]["validate"], 0);
    // The members' own transition times are kept, so the status settles.
    let mut template = p.clone();
    let first = i
        .aggregate_status(&template, &items(&[("m1", good.clone())]))
        .await
        .expect("aggregate")
        .expect("changed");
    template["status"] = first;
    assert_eq!(
        i.aggregate_status(&template, &items(&[("m1", good)])).await,
        Ok(None),
        "unchanged"
    );
}

#[tokio::test]
async fn flink_deployment() {
    let i = interpreter();
    let f = json!({
        "apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
        "metadata": {"name": "job", "namespace": "flink", "generation": 1},
        "spec": {
            "flinkConfiguration": {"taskmanager.numberOfTaskSlots": "2"},
            "serviceAccount": "flink",
            "jobManager": {"resource": {"cpu": 1, "memory": "1024m"}},
            "taskManager": {"resource": {"cpu": 0.5, "memory": "4Gi"},
                            "podTemplate": {"spec": {"containers": [{"name": "flink-main-container",
                                "envFrom": [{"secretRef": {"name": "s3"}}]}]}}},
            "podTemplate": {"spec": {"nodeSelector": {"disk": "ssd"}, "priorityClassName": "batch",
                "tolerations": [{"key": "flink", "operator": "Exists", "effect": "NoSchedule"}]}},
            "job": {"jarURI": "local:///opt/flink/job.jar", "parallelism": 5},
        }
    });
    // One JobManager (default) and ceil(5 / 2) = 3 TaskManagers; sizes are read as
    // Kubernetes quantities, and the shared pod template places every pod.
    let components = i.get_components(&f).await.expect("components");
    let summary: Vec<(String, i32, String, String)> = components
        .iter()
        .map(|c| {
            let r = c.replica_requirements.as_ref().expect("requirements");
            assert_eq!(r.priority_class_name, "batch");
            let claim = r.node_claim.as_ref().expect("node claim");
            assert_eq!(claim.node_selector["disk"], "ssd");
            assert_eq!(claim.tolerations.len(), 1);
            (
                c.name.clone(),
                c.replicas,
                r.resource_request["cpu"].0.clone(),
                r.resource_request["memory"].0.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "jobmanager".to_owned(),
                1,
                "1".to_owned(),
                "1024m".to_owned()
            ),
            (
                "taskmanager".to_owned(),
                3,
                "500m".to_owned(),
                "4Gi".to_owned()
            ),
        ]
    );
    // Every pod is a replica, each needing the larger cpu and the larger memory.
    let (n, req) = i.get_replicas(&f).await.expect("replicas");
    assert_eq!(n, 4);
    let req = req.expect("requirements");
    assert_eq!(req.resource_request["cpu"].0, "1");
    assert_eq!(req.resource_request["memory"].0, "4Gi");
    assert_eq!(req.namespace, "flink");
    assert_eq!(req.priority_class_name, "batch");
    let mut sized = f.clone();
    sized["spec"]["taskManager"]["replicas"] = json!(2);
    sized["spec"]["jobManager"]["replicas"] = json!(2);
    // Forms only Flink reads use its binary units.
    sized["spec"]["jobManager"]["resource"]["memory"] = json!("8g");
    assert_eq!(
        i.get_replicas(&sized).await.expect("replicas").0,
        4,
        "spec.taskManager.replicas wins over parallelism"
    );
    let (_, req) = i.get_replicas(&sized).await.expect("replicas");
    assert_eq!(
        req.expect("requirements").resource_request["memory"].0,
        "8Gi"
    );
    let mut no_slots = f.clone();
    no_slots["spec"]["flinkConfiguration"] = json!({"taskmanager.numberOfTaskSlots": "0"});
    assert_eq!(
        i.get_replicas(&no_slots).await.expect("replicas").0,
        2,
        "without a usable slot count, one TaskManager"
    );
    let mut odd = f.clone();
    odd["spec"]["jobManager"]["resource"]["memory"] = json!("2 parsecs");
    assert!(
        i.get_replicas(&odd).await.is_err(),
        "bad memory sizes are errors"
    );
    let got = i.get_dependencies(&f).await.expect("deps");
    assert_eq!(
        deps(&got),
        ["v1 Secret flink/s3", "v1 ServiceAccount flink/flink"]
    );

    for (status, want) in [
        (
            json!({"jobStatus": {"state": "RUNNING"}}),
            ResourceHealth::Healthy,
        ),
        // Finished for good, or on the way there: nothing to reschedule.
        (
            json!({"jobStatus": {"state": "FAILED"}, "error": "job failed"}),
            ResourceHealth::Healthy,
        ),
        (
            json!({"jobStatus": {"state": "RESTARTING"}}),
            ResourceHealth::Healthy,
        ),
        (
            json!({"jobStatus": {"state": "INITIALIZING"}}),
            ResourceHealth::Unhealthy,
        ),
        (
            json!({"jobStatus": {"state": "CREATED"}, "error": "Back-off: CrashLoopBackOff"}),
            ResourceHealth::Healthy,
        ),
        (
            json!({"jobStatus": {"state": "RECONCILING"}, "error": "quota exceeded"}),
            ResourceHealth::Unhealthy,
        ),
        (
            json!({"jobStatus": {"state": "SOMETHING_NEW"}}),
            ResourceHealth::Unhealthy,
        ),
        (
            json!({"jobManagerDeploymentStatus": "READY", "lifecycleState": "STABLE"}),
            ResourceHealth::Healthy,
        ),
        (
            json!({"jobManagerDeploymentStatus": "READY", "lifecycleState": "DEPLOYED"}),
            ResourceHealth::Unhealthy,
        ),
    ] {
        let mut observed = f.clone();
        observed["status"] = status.clone();
        assert_eq!(i.interpret_health(&observed).await, Ok(want), "{status}");
    }

    let mut observed = f.clone();
    observed["status"] = json!({"jobManagerDeploymentStatus": "READY", "lifecycleState": "STABLE",
        "jobStatus": {"state": "RUNNING", "jobName": "job"}, "clusterInfo": {"flink-version": "1.19"},
        "taskManager": {"replicas": 3}, "observedGeneration": 1, "unknown": true});
    let first = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(first["clusterInfo"]["flink-version"], "1.19");
    assert!(first.get("unknown").is_none());
    let mut second = first.clone();
    second["jobStatus"]["state"] = json!("FINISHED");
    second["taskManager"]["replicas"] = json!(1);
    let status = i
        .aggregate_status(&f, &items(&[("m1", first), ("m2", second.clone())]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status, second,
        "the last member reporting speaks for the job"
    );
}

#[tokio::test]
async fn a_users_customization_overrides_a_shipped_one_operation_by_operation() {
    let i = interpreter();
    let r = rollout();
    assert!(!i.is_native(
        "argoproj.io/v1alpha1",
        "Rollout",
        Operation::InterpretHealth
    ));
    let user: ResourceInterpreterCustomization = serde_json::from_value(json!({
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": "mine"},
        "spec": {"target": {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout"},
                 "customizations": {"replicaResource": {"luaScript": "function GetReplicas(o) return 42 end"}}}
    }))
    .expect("customization");
    i.load_customizations(&[user]);
    assert_eq!(i.get_replicas(&r).await, Ok((42, None)));
    // The shipped script still answers what the user's does not script.
    assert_eq!(
        i.revise_replica(&r, 3).await.expect("revise")["spec"]["replicas"],
        3
    );
    i.load_customizations(&[]);
    assert_eq!(i.get_replicas(&r).await.expect("replicas").0, 5);
}

#[tokio::test]
async fn kyverno_policy() {
    let i = interpreter();
    let p = json!({
        "apiVersion": "kyverno.io/v1", "kind": "Policy",
        "metadata": {"name": "require-probes", "namespace": "shop", "generation": 2},
        "spec": {"rules": [{"name": "probes", "validate": {"message": "probes required"}}]}
    });
    let ready = |reason: &str, message: &str| json!({"type": "Ready", "status": "True", "reason": reason, "message": message});
    let mut observed = p.clone();
    observed["status"] = json!({"conditions": [ready("Succeeded", "Ready")], "autogen": {"rules": []},
        "rulecount": {"validate": 1, "generate": 0, "mutate": 0, "verifyimages": 0}, "validatingadmissionpolicy": {}});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    observed["status"]["ready"] = json!(false);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy),
        "the ready field wins where present"
    );
    observed["status"]
        .as_object_mut()
        .expect("status")
        .remove("ready");
    observed["status"]["conditions"] = json!([ready("Pending", "")]);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    observed["status"]["conditions"] = json!([ready("Succeeded", "Ready")]);
    let reflected = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert!(reflected.get("validatingadmissionpolicy").is_none());
    assert_eq!(reflected["rulecount"]["validate"], 1);
    let mut second = reflected.clone();
    second["ready"] = json!(true);
    second["rulecount"]["mutate"] = json!(2);
    let status = i
        .aggregate_status(&p, &items(&[("m1", reflected), ("m2", second)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status["rulecount"],
        json!({"validate": 2, "generate": 0, "mutate": 2, "verifyimages": 0})
    );
    assert_eq!(status["ready"], true);
    assert_eq!(
        status["conditions"],
        json!([ready("Succeeded", "m1=Ready, m2=Ready")])
    );
    // Kyverno Policies have no dependencies or replicas to interpret.
    assert!(i.get_dependencies(&p).await.expect("deps").is_empty());
}

#[tokio::test]
async fn argo_workflow() {
    let i = interpreter();
    let wf = json!({
        "apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
        "metadata": {"name": "build", "namespace": "ci", "generation": 1},
        "spec": {
            "entrypoint": "main", "parallelism": 2,
            "nodeSelector": {"pool": "build"},
            "tolerations": [{"key": "ci", "operator": "Exists"}],
            "serviceAccountName": "builder", "executor": {"serviceAccountName": "executor"},
            "imagePullSecrets": [{"name": "registry"}],
            "volumeClaimTemplates": [{"metadata": {"name": "workdir"}, "spec": {}}],
            "volumes": [
                {"name": "a", "configMap": {"name": "build-conf"}},
                {"name": "b", "secret": {"secretName": "signing"}},
                {"name": "c", "projected": {"sources": [{"configMap": {"name": "more-conf"}}, {"secret": {"name": "more-secret"}}]}},
                {"name": "d", "cephfs": {"monitors": ["m"], "secretRef": {"name": "ceph"}}},
                {"name": "e", "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-creds"}}},
                {"name": "f", "azureFile": {"secretName": "azure", "shareName": "s"}},
                {"name": "g", "persistentVolumeClaim": {"claimName": "cache"}}
            ],
            "templates": [{"name": "main", "container": {"image": "golang"}}]
        }
    });
    let (n, req) = i.get_replicas(&wf).await.expect("replicas");
    assert_eq!(n, 2);
    let req = req.expect("requirements");
    let claim = req.node_claim.expect("node claim");
    assert_eq!(claim.node_selector["pool"], "build");
    assert_eq!(claim.tolerations.len(), 1);
    assert_eq!(
        req.namespace, "",
        "placement only, as a pod template without metadata"
    );
    let mut serial = wf.clone();
    serial["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("parallelism");
    assert_eq!(i.get_replicas(&serial).await.expect("replicas").0, 1);
    assert_eq!(
        i.revise_replica(&wf, 1).await.expect("revise")["spec"]["parallelism"],
        1
    );
    assert_eq!(
        deps(&i.get_dependencies(&wf).await.expect("deps")),
        [
            "v1 ConfigMap ci/build-conf",
            "v1 ConfigMap ci/more-conf",
            "v1 PersistentVolumeClaim ci/cache",
            "v1 PersistentVolumeClaim ci/workdir",
            "v1 Secret ci/azure",
            "v1 Secret ci/ceph",
            "v1 Secret ci/csi-creds",
            "v1 Secret ci/more-secret",
            "v1 Secret ci/registry",
            "v1 Secret ci/signing",
            "v1 ServiceAccount ci/builder",
            "v1 ServiceAccount ci/executor",
        ]
    );
    let mut default_sa = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
        "metadata": {"name": "w", "namespace": "ci"}, "spec": {"serviceAccountName": "default"}});
    assert!(
        i.get_dependencies(&default_sa)
            .await
            .expect("deps")
            .is_empty()
    );

    let mut observed = wf.clone();
    observed["spec"]["suspend"] = json!(true);
    observed["status"] = json!({"phase": "Running", "progress": "1/3"});
    let retained = i.retain(&wf, &observed).await.expect("retain");
    assert_eq!(retained["spec"]["suspend"], true);
    assert_eq!(
        retained["status"]["progress"], "1/3",
        "the member's progress is kept"
    );
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    for phase in ["Failed", "Error", ""] {
        observed["status"]["phase"] = json!(phase);
        assert_eq!(
            i.interpret_health(&observed).await,
            Ok(ResourceHealth::Unhealthy),
            "{phase}"
        );
    }
    default_sa["status"] = json!({});
    assert_eq!(
        i.interpret_health(&default_sa).await,
        Ok(ResourceHealth::Unhealthy)
    );
}
