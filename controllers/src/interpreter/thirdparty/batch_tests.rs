//! The shipped customizations of batch and training jobs (Volcano, Kubeflow, Spark, Ray):
//! their components or replicas, reflected and aggregated status, and health.

use karmada_api::work::v1alpha1::ResourceHealth;
use serde_json::{Value, json};

use super::tests::{interpreter, items, pod_template};

fn volcano_job() -> Value {
    json!({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
    "metadata": {"name": "train", "namespace": "ml", "generation": 1},
    "spec": {"minAvailable": 3, "schedulerName": "volcano", "tasks": [
        {"name": "ps", "replicas": 1, "minAvailable": 1, "template": pod_template()},
        {"replicas": 4, "minAvailable": 2, "template": {"spec": {"containers": [
            {"name": "w", "image": "trainer", "resources": {"requests": {"cpu": "2", "nvidia.com/gpu": "1"}}}]}}},
        {"name": "eval", "replicas": 2, "template": pod_template()}
    ]}})
}

#[tokio::test]
async fn volcano_job_components_and_health() {
    let i = interpreter();
    let components = i.get_components(&volcano_job()).await.expect("components");
    let summary: Vec<(String, i32, String)> = components
        .iter()
        .map(|c| {
            let r = &c
                .replica_requirements
                .as_ref()
                .expect("requirements")
                .resource_request;
            (c.name.clone(), c.replicas, r["cpu"].0.clone())
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("ps".to_owned(), 1, "250m".to_owned()),
            ("task-1".to_owned(), 2, "2".to_owned()),
            ("eval".to_owned(), 1, "250m".to_owned()),
        ],
        "sized by minAvailable, unnamed tasks by index"
    );
    let mut observed = volcano_job();
    for (phase, healthy) in [
        ("Running", true),
        ("Pending", true),
        ("Completed", true),
        ("Aborted", true),
        ("Failed", false),
        ("Mystery", false),
    ] {
        observed["status"] = json!({"state": {"phase": phase}});
        let want = if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        };
        assert_eq!(i.interpret_health(&observed).await, Ok(want), "{phase}");
    }
    observed["status"] = json!({"running": 3});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
}

#[tokio::test]
async fn volcano_job_status() {
    let i = interpreter();
    let job = volcano_job();
    let member = |phase: &str, running: i64, duration: &str, conditions: Value| {
        json!({"state": {"phase": phase}, "minAvailable": 3, "running": running, "pending": 0,
               "succeeded": 0, "failed": 0, "version": running, "retryCount": 1,
               "runningDuration": duration,
               "taskStatusCount": {"ps": {"phase": {"Running": 1}}, "task-1": {"phase": {"Running": running - 1}}},
               "controlledResources": {"plugin-svc": "svc"},
               "conditions": conditions})
    };
    let cond = |status: &str, at: &str| json!({"status": status, "lastTransitionTime": at});
    let mut observed = job.clone();
    observed["status"] = member(
        "Running",
        3,
        "1m30s",
        json!([cond("Pending", "2026-03-01T10:00:00Z")]),
    );
    observed["status"]["extra"] = json!("dropped");
    let reflected = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert!(reflected.get("extra").is_none());
    assert_eq!(reflected["runningDuration"], "1m30s");
    assert_eq!(reflected["taskStatusCount"]["ps"]["phase"]["Running"], 1);

    let one = i
        .aggregate_status(&job, &items(&[("m1", reflected.clone())]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(one, reflected, "one member's status is the job's");

    let m2 = member(
        "Running",
        2,
        "2h1m",
        json!([
            cond("Pending", "2026-03-01T10:05:00Z"),
            cond("Running", "2026-03-01T10:06:00Z")
        ]),
    );
    let status = i
        .aggregate_status(
            &job,
            &items(&[("m1", reflected.clone()), ("m2", m2.clone())]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["running"], 5);
    assert_eq!(status["minAvailable"], 6);
    assert_eq!(status["retryCount"], 2);
    assert_eq!(status["version"], 3, "the highest");
    assert_eq!(status["runningDuration"], "2h1m", "the longest");
    assert_eq!(
        status["taskStatusCount"],
        json!({"ps": {"phase": {"Running": 2}}, "task-1": {"phase": {"Running": 3}}})
    );
    assert!(status.get("pending").is_none(), "zero counts are left out");
    assert!(status.get("state").is_none(), "no member finished");
    assert_eq!(
        status["conditions"],
        json!([
            cond("Pending", "2026-03-01T10:05:00Z"),
            cond("Running", "2026-03-01T10:06:00Z")
        ]),
        "the latest condition of each phase"
    );

    let failed = member(
        "Failed",
        0,
        "5s",
        json!([
            cond("Running", "2026-03-01T10:01:00Z"),
            cond("Failed", "2026-03-01T10:02:00Z")
        ]),
    );
    let status = i
        .aggregate_status(
            &job,
            &items(&[
                ("m1", reflected.clone()),
                ("m2", failed.clone()),
                ("m3", failed.clone()),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["state"]["phase"], "Failed");
    assert_eq!(status["state"]["reason"], "VolcanoJobFailed");
    assert_eq!(status["state"]["message"], "Job failed in clusters: m2,m3");
    assert_eq!(
        status["conditions"], failed["conditions"],
        "the failing member's"
    );

    let done = member("Completed", 1, "3m", json!([]));
    let status = i
        .aggregate_status(&job, &items(&[("m1", done.clone()), ("m2", done)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["state"]["phase"], "Completed");
    assert_eq!(status["state"]["message"], "Job completed successfully");
}

fn training_job(kind: &str, api_version: &str, field: &str, specs: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": "mnist", "namespace": "ml", "generation": 1},
           "spec": {field: specs}})
}

fn replica(count: Value) -> Value {
    json!({"replicas": count, "template": pod_template()})
}

/// (name, replicas, cpu) of each component.
async fn component_summary(job: &Value) -> Vec<(String, i32, String)> {
    interpreter()
        .get_components(job)
        .await
        .expect("components")
        .iter()
        .map(|c| {
            let cpu = c
                .replica_requirements
                .as_ref()
                .and_then(|r| r.resource_request.get("cpu"))
                .map(|q| q.0.clone())
                .unwrap_or_default();
            (c.name.clone(), c.replicas, cpu)
        })
        .collect()
}

fn cond(kind: &str, status: &str, at: &str) -> Value {
    json!({"type": kind, "status": status, "lastUpdateTime": at, "lastTransitionTime": at})
}

/// Health from conditions, shared by the Kubeflow training jobs.
async fn training_health(job: &Value) {
    let i = interpreter();
    let mut o = job.clone();
    o["status"] =
        json!({"conditions": [cond("Created", "True", "t1"), cond("Running", "True", "t2")]});
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Healthy));
    o["status"]["conditions"] =
        json!([cond("Running", "False", "t2"), cond("Failed", "True", "t3")]);
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));
    o["status"] = json!({});
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));
}

fn training_status(replica_type: &str, active: i64, start: &str, conditions: Value) -> Value {
    json!({"startTime": start, "completionTime": format!("{start}-done"), "lastReconcileTime": start,
           "replicaStatuses": {replica_type: {"active": active, "succeeded": 1}},
           "conditions": conditions})
}

#[tokio::test]
async fn kubeflow_tf_job() {
    let i = interpreter();
    let job = training_job(
        "TFJob",
        "kubeflow.org/v1",
        "tfReplicaSpecs",
        json!({"Worker": replica(json!(4)), "PS": replica(json!("2")), "Evaluator": replica(Value::Null)}),
    );
    assert_eq!(
        component_summary(&job).await,
        [
            ("ps".to_owned(), 2, "250m".to_owned()),
            ("worker".to_owned(), 4, "250m".to_owned()),
            ("evaluator".to_owned(), 1, "250m".to_owned()),
        ]
    );
    let got = super::tests::deps(&i.get_dependencies(&job).await.expect("deps"));
    assert_eq!(
        got,
        ["v1 ConfigMap ml/settings", "v1 ServiceAccount ml/runner"]
    );
    training_health(&job).await;

    let running = training_status(
        "Worker",
        2,
        "2026-03-01T10:00:00Z",
        json!([cond("Running", "True", "t")]),
    );
    let done = training_status(
        "Worker",
        0,
        "2026-03-01T09:00:00Z",
        json!([cond("Succeeded", "True", "t")]),
    );
    let failed = training_status(
        "PS",
        1,
        "2026-03-01T11:00:00Z",
        json!([cond("Failed", "True", "t")]),
    );
    let status = i
        .aggregate_status(
            &job,
            &items(&[
                ("m1", running.clone()),
                ("m2", done.clone()),
                ("m3", failed),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["startTime"], "2026-03-01T09:00:00Z");
    assert_eq!(status["lastReconcileTime"], "2026-03-01T11:00:00Z");
    assert_eq!(
        status["replicaStatuses"],
        json!({"Worker": {"active": 2, "succeeded": 2}, "PS": {"active": 1, "succeeded": 1}}),
        "zero counts and empty types are left out"
    );
    assert!(
        status.get("completionTime").is_none(),
        "not finished everywhere"
    );
    let conditions = status["conditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 1);
    assert_eq!(conditions[0]["type"], "Failed");
    assert_eq!(conditions[0]["reason"], "TFJobFailed");
    assert_eq!(
        conditions[0]["message"],
        "TFJob executed failed in member clusters: m3"
    );
    let status = i
        .aggregate_status(&job, &items(&[("m1", done.clone()), ("m2", done)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["conditions"][0]["type"], "Succeeded");
    assert_eq!(
        status["conditions"][0]["message"],
        "TFJob completed successfully"
    );
    assert_eq!(status["completionTime"], "2026-03-01T09:00:00Z-done");
}

#[tokio::test]
async fn kubeflow_pytorch_job() {
    let i = interpreter();
    let job = training_job(
        "PyTorchJob",
        "kubeflow.org/v1",
        "pytorchReplicaSpecs",
        json!({"Master": replica(json!(1)), "Worker": replica(json!(3))}),
    );
    assert_eq!(
        component_summary(&job).await,
        [
            ("master".to_owned(), 1, "250m".to_owned()),
            ("worker".to_owned(), 3, "250m".to_owned()),
        ]
    );
    let got = super::tests::deps(&i.get_dependencies(&job).await.expect("deps"));
    assert_eq!(
        got,
        ["v1 ConfigMap ml/settings", "v1 ServiceAccount ml/runner"]
    );
    training_health(&job).await;

    let running = training_status(
        "Worker",
        3,
        "2026-03-01T10:00:00Z",
        json!([cond("Created", "True", "c1"), cond("Running", "True", "r1")]),
    );
    let status = i
        .aggregate_status(
            &job,
            &items(&[("m1", running.clone()), ("m2", running.clone())]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    let summary: Vec<(&str, &str, &str)> = status["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("Created", "True", "PyTorchJobCreated"),
            ("Running", "True", "PyTorchJobRunning")
        ]
    );
    assert_eq!(
        status["conditions"][0]["lastTransitionTime"],
        "2026-03-01T10:00:00Z"
    );
    assert_eq!(status["conditions"][1]["lastTransitionTime"], "r1");
    assert_eq!(
        status["replicaStatuses"]["Worker"],
        json!({"active": 6, "succeeded": 2})
    );

    let failed = training_status(
        "Master",
        0,
        "2026-03-01T10:30:00Z",
        json!([cond("Running", "False", "r2"), cond("Failed", "True", "f")]),
    );
    let status = i
        .aggregate_status(&job, &items(&[("m1", running), ("m2", failed)]))
        .await
        .expect("aggregate")
        .expect("changed");
    let conditions = status["conditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 3);
    assert_eq!(
        conditions[1]["status"], "False",
        "no longer running once failed"
    );
    assert_eq!(conditions[2]["type"], "Failed");
    assert_eq!(
        conditions[2]["message"],
        "PyTorchJob executed failed in member clusters: m2"
    );
    assert_eq!(
        conditions[2]["lastTransitionTime"],
        "2026-03-01T10:30:00Z-done"
    );
}

#[tokio::test]
async fn kubeflow_mpi_job() {
    let i = interpreter();
    let job = training_job(
        "MPIJob",
        "kubeflow.org/v2beta1",
        "mpiReplicaSpecs",
        json!({"Worker": {"template": pod_template()}, "Launcher": replica(json!(1)), "Other": {"replicas": 2}}),
    );
    assert_eq!(
        component_summary(&job).await,
        [
            ("Launcher".to_owned(), 1, "250m".to_owned()),
            ("Worker".to_owned(), 0, "250m".to_owned()),
        ],
        "Workers default to none; types without a template are skipped"
    );
    training_health(&job).await;
    let mut o = job.clone();
    o["status"] = json!({"conditions": []});
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));

    o["status"] = json!({"replicaStatuses": {"Launcher": {"active": 1, "selector": "x", "extra": 1}},
        "startTime": "2026-03-01T10:00:00Z", "conditions": [cond("Running", "True", "2026-03-01T10:01:00Z")]});
    let reflected = i
        .reflect_status(&o)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(
        reflected["replicaStatuses"],
        json!({"Launcher": {"active": 1, "selector": "x"}})
    );
    let mut second = reflected.clone();
    second["startTime"] = json!("2026-03-01T09:00:00Z");
    second["replicaStatuses"]["Worker"] = json!({"active": 2, "failed": 0});
    second["conditions"] = json!([
        cond("Running", "False", "2026-03-01T10:05:00Z"),
        cond("Created", "True", "2026-03-01T09:00:00Z")
    ]);
    let status = i
        .aggregate_status(&job, &items(&[("m1", reflected.clone()), ("m2", second)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["startTime"], "2026-03-01T09:00:00Z");
    assert_eq!(
        status["replicaStatuses"],
        json!({"Launcher": {"active": 2, "succeeded": 0, "failed": 0}, "Worker": {"active": 2, "succeeded": 0, "failed": 0}})
    );
    assert_eq!(
        status["conditions"],
        json!([
            cond("Running", "False", "2026-03-01T10:05:00Z"),
            cond("Created", "True", "2026-03-01T09:00:00Z")
        ]),
        "each type from the member where it changed last"
    );
    let one = i
        .aggregate_status(&job, &items(&[("m1", reflected.clone())]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(one, reflected);
}

#[tokio::test]
async fn kubeflow_notebook() {
    let i = interpreter();
    let nb = json!({"apiVersion": "kubeflow.org/v1", "kind": "Notebook",
        "metadata": {"name": "lab", "namespace": "ml"}, "spec": {"template": pod_template()}});
    let (n, req) = i.get_replicas(&nb).await.expect("replicas");
    assert_eq!(n, 1);
    assert_eq!(
        req.expect("requirements").resource_request["memory"].0,
        "64Mi"
    );
    let mut o = nb.clone();
    for (state, healthy) in [
        (json!({"running": {"startedAt": "t"}}), true),
        (json!({"waiting": {"reason": "ContainerCreating"}}), true),
        (json!({"waiting": {"reason": "ImagePullBackOff"}}), false),
        (
            json!({"terminated": {"reason": "Completed", "exitCode": 0}}),
            true,
        ),
        (
            json!({"terminated": {"reason": "Completed", "exitCode": 2}}),
            false,
        ),
        (
            json!({"terminated": {"reason": "OOMKilled", "exitCode": 0}}),
            false,
        ),
        (json!({}), false),
    ] {
        o["status"] = json!({"containerState": state, "readyReplicas": 1});
        let want = if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        };
        assert_eq!(i.interpret_health(&o).await, Ok(want), "{state}");
    }
    o["status"] = json!({"containerState": {"running": {"startedAt": "2026-03-01T10:00:00Z"}}, "readyReplicas": 1, "extra": 2});
    let reflected = i
        .reflect_status(&o)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(
        reflected,
        json!({"readyReplicas": 1, "containerState": {"running": {"startedAt": "2026-03-01T10:00:00Z"}}})
    );
    let mut later = reflected.clone();
    later["containerState"]["running"]["startedAt"] = json!("2026-03-01T11:00:00Z");
    let status = i
        .aggregate_status(&nb, &items(&[("m1", reflected.clone()), ("m2", later)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["readyReplicas"], 2);
    assert_eq!(
        status["containerState"]["running"]["startedAt"],
        "2026-03-01T11:00:00Z"
    );
    assert_eq!(status["conditions"][0]["type"], "Ready");
    assert_eq!(
        status["conditions"][0]["message"],
        "All notebooks are ready"
    );
    let pending = json!({"readyReplicas": 0, "containerState": {}});
    let status = i
        .aggregate_status(&nb, &items(&[("m1", reflected), ("m2", pending)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status["containerState"],
        json!({"waiting": {"reason": "Unschedulable"}})
    );
    assert_eq!(status["conditions"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        status["conditions"][0]["message"],
        "Notebook executed failed in member clusters: m2"
    );
}

fn spark(spec: Value) -> Value {
    json!({"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
           "metadata": {"name": "pi", "namespace": "spark"}, "spec": spec})
}

/// (name, replicas, cpu, memory) of each component.
async fn spark_summary(app: &Value) -> Vec<(String, i32, String, String)> {
    interpreter()
        .get_components(app)
        .await
        .expect("components")
        .iter()
        .map(|c| {
            let r = &c
                .replica_requirements
                .as_ref()
                .expect("requirements")
                .resource_request;
            (
                c.name.clone(),
                c.replicas,
                r["cpu"].0.clone(),
                r["memory"].0.clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn spark_application_components() {
    let s = |name: &str, n: i32, cpu: &str, memory: &str| {
        (name.to_owned(), n, cpu.to_owned(), memory.to_owned())
    };
    // A JVM job: 10% overhead, at least 384Mi.
    assert_eq!(
        spark_summary(&spark(
            json!({"type": "Scala", "driver": {"cores": 2}, "executor": {"instances": 3}})
        ))
        .await,
        [
            s("driver", 1, "2", "1408Mi"),
            s("executor", 3, "1", "1408Mi")
        ]
    );
    // Other languages: 40%; an explicit overhead is added as given.
    let python = spark(json!({"type": "Python",
        "executor": {"instances": 2, "memory": "2g", "memoryOverhead": "512m"}}));
    let got = spark_summary(&python).await;
    assert_eq!(got[1], s("executor", 2, "1", "2560Mi"));
    // 1Gi plus 40% is 1433.6Mi, in canonical form.
    assert_eq!(got[0], s("driver", 1, "1", "1503238553600m"));
    // Dynamic allocation raises the executors to its initial and minimum counts.
    let dynamic = spark(json!({"type": "Java", "executor": {"instances": 1},
        "dynamicAllocation": {"enabled": true, "initialExecutors": 4, "minExecutors": 2}}));
    assert_eq!(spark_summary(&dynamic).await[1].1, 4);
    let mut disabled = dynamic.clone();
    disabled["spec"]["dynamicAllocation"]["enabled"] = json!(false);
    assert_eq!(spark_summary(&disabled).await[1].1, 1);

    let placed = spark(
        json!({"type": "Java", "driver": {"nodeSelector": {"disk": "ssd"},
        "tolerations": [{"key": "spark", "operator": "Exists"}], "gpu": {"name": "nvidia.com/gpu", "quantity": 2},
        "priorityClassName": "batch"}}),
    );
    let components = interpreter()
        .get_components(&placed)
        .await
        .expect("components");
    let driver = components[0]
        .replica_requirements
        .as_ref()
        .expect("requirements");
    assert_eq!(driver.resource_request["nvidia.com/gpu"].0, "2");
    let claim = driver.node_claim.as_ref().expect("node claim");
    assert_eq!(claim.node_selector["disk"], "ssd");
    assert_eq!(claim.tolerations.len(), 1);
    assert_eq!(driver.priority_class_name, "batch");
    assert!(
        components[1]
            .replica_requirements
            .as_ref()
            .expect("requirements")
            .node_claim
            .is_none()
    );

    let bad = spark(json!({"type": "Java", "driver": {"memory": "lots"}}));
    assert!(
        interpreter().get_components(&bad).await.is_err(),
        "bad memory sizes are errors"
    );
}

#[tokio::test]
async fn spark_application_status() {
    let i = interpreter();
    let app = spark(json!({"type": "Java"}));
    let member = |state: &str, attempts: i64, at: &str, executors: Value| {
        json!({"applicationState": {"state": state}, "executionAttempts": attempts, "submissionAttempts": 1,
               "lastSubmissionAttemptTime": at, "terminationTime": at, "executorState": executors,
               "sparkApplicationId": "spark-1", "driverInfo": {"podName": "pi-driver"}})
    };
    let mut o = app.clone();
    o["status"] = member(
        "RUNNING",
        1,
        "2026-03-01T10:00:00Z",
        json!({"pi-exec-1": "RUNNING"}),
    );
    o["status"]["extra"] = json!(1);
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Healthy));
    let reflected = i
        .reflect_status(&o)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["driverInfo"]["podName"], "pi-driver");
    assert!(reflected.get("extra").is_none());
    o["status"]["applicationState"]["state"] = json!("FAILED");
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));
    o["status"] = json!({});
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));

    let status = i
        .aggregate_status(
            &app,
            &items(&[
                (
                    "m1",
                    member(
                        "RUNNING",
                        1,
                        "2026-03-01T10:00:00Z",
                        json!({"pi-exec-1": "RUNNING"}),
                    ),
                ),
                (
                    "m2",
                    member(
                        "FAILING",
                        2,
                        "2026-03-01T11:00:00Z",
                        json!({"pi-exec-2": "FAILED"}),
                    ),
                ),
                (
                    "m3",
                    member("COMPLETED", 1, "2026-03-01T09:00:00Z", json!({})),
                ),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status["applicationState"]["state"], "FAILING",
        "the worst state"
    );
    assert_eq!(status["executionAttempts"], 4);
    assert_eq!(status["submissionAttempts"], 3);
    assert_eq!(status["lastSubmissionAttemptTime"], "2026-03-01T11:00:00Z");
    assert_eq!(
        status["executorState"],
        json!({"pi-exec-1": "RUNNING", "pi-exec-2": "FAILED"})
    );
    let single = member("SUBMITTED", 1, "t", json!({"pi-exec-1": "PENDING"}));
    let status = i
        .aggregate_status(&app, &items(&[("m1", single.clone())]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status, single);
}

fn pod(cpu: &str, memory: &str) -> Value {
    json!({"spec": {"serviceAccountName": "ray", "containers": [{"name": "ray", "image": "rayproject/ray",
        "envFrom": [{"secretRef": {"name": "ray-token"}}],
        "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}})
}

fn ray_cluster_spec() -> Value {
    json!({"headGroupSpec": {"template": pod("1", "4Gi")},
           "workerGroupSpecs": [{"groupName": "gpu", "replicas": 2, "template": pod("4", "2Gi")},
                                {"replicas": 3, "template": pod("500m", "8Gi")}]})
}

fn ray(kind: &str, spec: Value) -> Value {
    json!({"apiVersion": "ray.io/v1", "kind": kind,
           "metadata": {"name": "serve", "namespace": "ray"}, "spec": spec})
}

#[tokio::test]
async fn ray_cluster() {
    let i = interpreter();
    let cluster = ray("RayCluster", ray_cluster_spec());
    assert_eq!(
        component_summary(&cluster).await,
        [
            ("ray-head".to_owned(), 1, "1".to_owned()),
            ("gpu".to_owned(), 2, "4".to_owned()),
            ("worker-2".to_owned(), 3, "500m".to_owned()),
        ]
    );
    let mut o = cluster.clone();
    let c = |t: &str, s: &str| json!({"type": t, "status": s});
    o["status"] =
        json!({"conditions": [c("HeadPodReady", "True"), c("RayClusterProvisioned", "True")]});
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Healthy));
    o["status"]["conditions"] = json!([
        c("HeadPodReady", "True"),
        c("RayClusterProvisioned", "True"),
        c("RayClusterReplicaFailure", "True")
    ]);
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));
    o["status"]["conditions"] = json!([
        c("HeadPodReady", "True"),
        c("RayClusterProvisioned", "False")
    ]);
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));

    let member = |ready: i64, cpu: &str, gpu: &str, head: &str| {
        json!({"conditions": [c("HeadPodReady", "True")], "readyWorkerReplicas": ready, "desiredWorkerReplicas": 5,
               "desiredCPU": cpu, "desiredMemory": "30Gi", "desiredGPU": gpu, "lastUpdateTime": format!("2026-03-01T10:0{ready}:00Z"),
               "head": {"podIP": head}, "state": "ready"})
    };
    let status = i
        .aggregate_status(
            &cluster,
            &items(&[
                ("m1", member(3, "9500m", "2", "10.0.0.1")),
                ("m2", member(5, "1", "0", "10.0.0.2")),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["readyWorkerReplicas"], 8);
    assert_eq!(status["desiredWorkerReplicas"], 10);
    assert_eq!(status["desiredCPU"], "10500m");
    assert_eq!(status["desiredMemory"], "60Gi");
    assert_eq!(status["desiredGPU"], "2");
    assert_eq!(status["desiredTPU"], "0");
    assert_eq!(status["lastUpdateTime"], "2026-03-01T10:05:00Z");
    assert_eq!(status["head"]["podIP"], "10.0.0.1", "the first member's");
    assert_eq!(
        status["conditions"].as_array().map(Vec::len),
        Some(2),
        "every member's"
    );
    let one = member(1, "1", "0", "h");
    let status = i
        .aggregate_status(&cluster, &items(&[("m1", one.clone())]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status, one);
}

#[tokio::test]
async fn ray_job() {
    let i = interpreter();
    let job = ray(
        "RayJob",
        json!({"entrypoint": "python train.py", "rayClusterSpec": ray_cluster_spec(),
               "submitterPodTemplate": {"spec": {"containers": [{"name": "submit", "image": "ray",
                   "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "submit-conf", "key": "x"}}}]}]}}}),
    );
    assert_eq!(component_summary(&job).await.len(), 3);
    assert_eq!(
        super::tests::deps(&i.get_dependencies(&job).await.expect("deps")),
        [
            "v1 ConfigMap ray/submit-conf",
            "v1 Secret ray/ray-token",
            "v1 ServiceAccount ray/ray"
        ]
    );
    let mut o = job.clone();
    for (deployment, job_status, healthy) in [
        ("Running", "RUNNING", true),
        ("Complete", "SUCCEEDED", true),
        ("Complete", "FAILED", false),
        ("Failed", "FAILED", false),
        ("Initializing", "", false),
    ] {
        o["status"] = json!({"jobDeploymentStatus": deployment, "jobStatus": job_status});
        let want = if healthy {
            ResourceHealth::Healthy
        } else {
            ResourceHealth::Unhealthy
        };
        assert_eq!(
            i.interpret_health(&o).await,
            Ok(want),
            "{deployment} {job_status}"
        );
    }
    let member = |d: &str, j: &str, reason: &str| json!({"jobDeploymentStatus": d, "jobStatus": j, "reason": reason, "message": format!("{reason} happened")});
    let status = i
        .aggregate_status(
            &job,
            &items(&[
                ("m1", member("Running", "RUNNING", "")),
                ("m2", member("Failed", "STOPPED", "DeadlineExceeded")),
                ("m3", member("Complete", "FAILED", "AppFailed")),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["jobDeploymentStatus"], "Failed");
    assert_eq!(status["reason"], "DeadlineExceeded");
    assert_eq!(status["message"], "DeadlineExceeded happened");
    assert_eq!(status["jobStatus"], "FAILED");
}

#[tokio::test]
async fn ray_service() {
    let i = interpreter();
    let service = ray(
        "RayService",
        json!({"serveConfigV2": "applications: []", "rayClusterConfig": ray_cluster_spec()}),
    );
    let (n, req) = i.get_replicas(&service).await.expect("replicas");
    assert_eq!(n, 6, "the head and five workers");
    let req = req.expect("requirements");
    assert_eq!(
        req.resource_request["cpu"].0, "4",
        "the largest CPU request"
    );
    assert_eq!(
        req.resource_request["memory"].0, "8Gi",
        "the largest memory request"
    );
    assert_eq!(
        super::tests::deps(&i.get_dependencies(&service).await.expect("deps")),
        ["v1 Secret ray/ray-token", "v1 ServiceAccount ray/ray"]
    );

    let workers = |revised: &Value| -> Vec<i64> {
        revised["spec"]["rayClusterConfig"]["workerGroupSpecs"]
            .as_array()
            .expect("groups")
            .iter()
            .map(|g| g["replicas"].as_i64().unwrap_or(-1))
            .collect()
    };
    assert_eq!(
        workers(&i.revise_replica(&service, 11).await.expect("revise")),
        [4, 6],
        "in proportion 2:3"
    );
    assert_eq!(
        workers(&i.revise_replica(&service, 1).await.expect("revise")),
        [0, 0]
    );
    let mut idle = service.clone();
    idle["spec"]["rayClusterConfig"]["workerGroupSpecs"][0]["replicas"] = json!(0);
    idle["spec"]["rayClusterConfig"]["workerGroupSpecs"][1]["replicas"] = json!(0);
    assert_eq!(
        workers(&i.revise_replica(&idle, 6).await.expect("revise")),
        [3, 2],
        "evenly from zero"
    );
    let mut single = service.clone();
    single["spec"]["rayClusterConfig"]["workerGroupSpecs"] =
        json!([{"groupName": "only", "replicas": 1, "template": pod("1", "1Gi")}]);
    assert_eq!(
        workers(&i.revise_replica(&single, 8).await.expect("revise")),
        [7]
    );

    let mut o = service.clone();
    o["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Healthy));
    o["status"] = json!({"conditions": [{"type": "UpgradeInProgress", "status": "True"}]});
    assert_eq!(i.interpret_health(&o).await, Ok(ResourceHealth::Unhealthy));

    let member = |app: &str, endpoints: i64, generation: i64| {
        json!({"conditions": [{"type": "Ready", "status": "True"}], "numServeEndpoints": endpoints,
               "observedGeneration": generation, "serviceStatus": "Running",
               "activeServiceStatus": {"rayClusterName": format!("c{generation}"),
                   "applicationStatuses": {"app": {"status": app}}}})
    };
    let mut unhealthy = member("UNHEALTHY", 1, 2);
    unhealthy["serviceStatus"] = json!("");
    let status = i
        .aggregate_status(
            &service,
            &items(&[("m1", member("RUNNING", 2, 3)), ("m2", unhealthy)]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["numServeEndpoints"], 3);
    assert_eq!(status["observedGeneration"], 3);
    assert_eq!(status["serviceStatus"], "");
    assert_eq!(
        status["activeServiceStatus"]["rayClusterName"], "c3",
        "the first member's"
    );
    assert_eq!(
        status["activeServiceStatus"]["applicationStatuses"]["app"]["status"],
        "UNHEALTHY"
    );
    assert_eq!(status["conditions"].as_array().map(Vec::len), Some(2));
}
