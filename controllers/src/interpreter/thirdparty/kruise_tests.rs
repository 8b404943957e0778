//! The shipped customizations of OpenKruise's workloads besides CloneSet: replicas and their
//! requirements, revision, retention, reflected and aggregated status, health and the pod
//! template's dependencies.

use karmada_api::work::v1alpha1::ResourceHealth;
use serde_json::{Value, json};

use super::tests::{deps, interpreter, items, pod_template};

fn workload(api_version: &str, kind: &str, spec: Value) -> Value {
    json!({"apiVersion": api_version, "kind": kind,
           "metadata": {"name": "web", "namespace": "shop", "generation": 5},
           "spec": spec})
}

/// A member's copy of the template, applied from template generation 5, with a status.
fn member(template: &Value, status: Value) -> Value {
    let mut o = template.clone();
    o["metadata"]["generation"] = json!(2);
    o["metadata"]["annotations"] = json!({"resourcetemplate.karmada.io/generation": "5"});
    o["status"] = status;
    o
}

const TEMPLATE_DEPS: [&str; 2] = [
    "v1 ConfigMap shop/settings",
    "v1 ServiceAccount shop/runner",
];

#[tokio::test]
async fn kruise_advanced_cron_job() {
    let i = interpreter();
    let job_template = json!({"spec": {"template": pod_template()}});
    let cron = workload(
        "apps.kruise.io/v1alpha1",
        "AdvancedCronJob",
        json!({"schedule": "*/5 * * * *", "template": {"jobTemplate": job_template}}),
    );
    assert_eq!(
        deps(&i.get_dependencies(&cron).await.expect("deps")),
        TEMPLATE_DEPS
    );
    let broadcast = workload(
        "apps.kruise.io/v1alpha1",
        "AdvancedCronJob",
        json!({"schedule": "@hourly", "template": {"broadcastJobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "busybox", "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "token", "key": "k"}}}]}]}}}}}}),
    );
    assert_eq!(
        deps(&i.get_dependencies(&broadcast).await.expect("deps")),
        ["v1 Secret shop/token"]
    );
    let status = i
        .aggregate_status(
            &cron,
            &items(&[
                ("m1", json!({"active": [{"kind": "Job", "name": "web-1"}], "type": "Job",
                              "lastScheduleTime": "2026-03-01T10:00:00Z"})),
                ("m2", json!({"active": [{"kind": "Job", "name": "web-2"}, {"kind": "Job", "name": "web-3"}],
                              "type": "Job", "lastScheduleTime": "2026-03-01T10:05:00Z"})),
                ("m3", json!({})),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    let names: Vec<&str> = status["active"]
        .as_array()
        .expect("active")
        .iter()
        .map(|a| a["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["web-1", "web-2", "web-3"]);
    assert_eq!(status["type"], "Job");
    assert_eq!(status["lastScheduleTime"], "2026-03-01T10:05:00Z");
    // Without replicas of its own, a schedule is copied whole.
    assert_eq!(i.get_replicas(&cron).await, Ok((0, None)));
}

#[tokio::test]
async fn kruise_broadcast_job() {
    let i = interpreter();
    let job = workload(
        "apps.kruise.io/v1alpha1",
        "BroadcastJob",
        json!({"parallelism": 3, "template": pod_template(), "completionPolicy": {"type": "Always"}}),
    );
    let (n, req) = i.get_replicas(&job).await.expect("replicas");
    assert_eq!(n, 3);
    assert_eq!(req.expect("requirements").resource_request["cpu"].0, "250m");
    let mut unbounded = job.clone();
    unbounded["spec"]
        .as_object_mut()
        .expect("spec")
        .remove("parallelism");
    assert_eq!(i.get_replicas(&unbounded).await.expect("replicas").0, 1);
    assert_eq!(
        i.revise_replica(&job, 2).await.expect("revise")["spec"]["parallelism"],
        2
    );
    let mut observed = job.clone();
    observed["spec"]["template"]["metadata"]["labels"] =
        json!({"app": "a", "controller-uid": "u1"});
    let retained = i.retain(&job, &observed).await.expect("retain");
    assert_eq!(
        retained["spec"]["template"]["metadata"]["labels"]["controller-uid"],
        "u1"
    );
    assert_eq!(
        deps(&i.get_dependencies(&job).await.expect("deps")),
        TEMPLATE_DEPS
    );

    let health = |status: Value| {
        let o = member(&job, status);
        let i = &i;
        async move { i.interpret_health(&o).await }
    };
    let running =
        json!({"desired": 3, "active": 2, "succeeded": 1, "failed": 0, "phase": "running"});
    assert_eq!(health(running.clone()).await, Ok(ResourceHealth::Healthy));
    assert_eq!(
        health(json!({"desired": 3, "active": 2, "succeeded": 0, "failed": 1})).await,
        Ok(ResourceHealth::Unhealthy)
    );
    assert_eq!(
        health(json!({"desired": 0, "active": 0, "succeeded": 0, "failed": 0})).await,
        Ok(ResourceHealth::Unhealthy)
    );
    assert_eq!(
        health(json!({"desired": 2, "active": 0, "succeeded": 0, "failed": 0})).await,
        Ok(ResourceHealth::Unhealthy)
    );

    let reflected = i
        .reflect_status(&member(&job, json!({"desired": 3, "active": 0, "succeeded": 3, "failed": 0,
            "phase": "completed", "startTime": "2026-03-01T10:00:00Z", "completionTime": "2026-03-01T10:02:00Z",
            "conditions": [{"type": "Complete", "status": "True"}], "extra": 1})))
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["completionTime"], "2026-03-01T10:02:00Z");
    assert!(reflected.get("extra").is_none());
    let failed = json!({"desired": 2, "active": 0, "succeeded": 1, "failed": 1, "phase": "failed",
        "conditions": [{"type": "Failed", "status": "True"}]});
    let status = i
        .aggregate_status(
            &job,
            &items(&[
                ("m1", reflected.clone()),
                ("m2", failed.clone()),
                ("m3", failed),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["desired"], 7);
    assert_eq!(status["succeeded"], 5);
    assert_eq!(status["failed"], 2);
    assert_eq!(status["phase"], "failed");
    assert_eq!(
        status["conditions"],
        json!([{"type": "Failed", "status": "True", "reason": "JobFailed",
                "message": "Job executed failed in member clusters: m2, m3"}])
    );
    let status = i
        .aggregate_status(
            &job,
            &items(&[("m1", reflected.clone()), ("m2", reflected)]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Completed", "message": "Job completed"}])
    );
}

/// The generation bookkeeping of StatefulSet, UnitedDeployment and DaemonSet aggregation.
async fn observed_generation_follows_members(template: &Value, reflected: &Value) {
    let i = interpreter();
    let mut t = template.clone();
    t["status"] = json!({"observedGeneration": 4});
    let status = i
        .aggregate_status(
            &t,
            &items(&[("m1", reflected.clone()), ("m2", reflected.clone())]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["observedGeneration"], 5, "every member caught up");
    let mut behind = reflected.clone();
    behind["resourceTemplateGeneration"] = json!(4);
    let status = i
        .aggregate_status(&t, &items(&[("m1", reflected.clone()), ("m2", behind)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["observedGeneration"], 4, "one member behind");
}

#[tokio::test]
async fn kruise_advanced_stateful_set() {
    let i = interpreter();
    let sts = workload(
        "apps.kruise.io/v1beta1",
        "StatefulSet",
        json!({"replicas": 4, "serviceName": "web", "template": pod_template()}),
    );
    let (n, req) = i.get_replicas(&sts).await.expect("replicas");
    assert_eq!(n, 4);
    assert_eq!(
        req.expect("requirements").resource_request["memory"].0,
        "64Mi"
    );
    assert_eq!(
        i.revise_replica(&sts, 1).await.expect("revise")["spec"]["replicas"],
        1
    );
    assert_eq!(
        deps(&i.get_dependencies(&sts).await.expect("deps")),
        TEMPLATE_DEPS
    );
    let status = json!({"observedGeneration": 2, "replicas": 4, "readyReplicas": 4, "currentReplicas": 4,
        "updatedReplicas": 4, "availableReplicas": 4, "updatedReadyReplicas": 4,
        "updateRevision": "web-2", "currentRevision": "web-1", "collisionCount": 0});
    let observed = member(&sts, status);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    let mut stale = observed.clone();
    stale["status"]["observedGeneration"] = json!(1);
    assert_eq!(
        i.interpret_health(&stale).await,
        Ok(ResourceHealth::Unhealthy)
    );
    let mut rolling = observed.clone();
    rolling["status"]["updatedReplicas"] = json!(3);
    assert_eq!(
        i.interpret_health(&rolling).await,
        Ok(ResourceHealth::Unhealthy)
    );
    let mut unavailable = observed.clone();
    unavailable["status"]["availableReplicas"] = json!(3);
    assert_eq!(
        i.interpret_health(&unavailable).await,
        Ok(ResourceHealth::Unhealthy)
    );

    let reflected = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert!(reflected.get("collisionCount").is_none());
    assert_eq!(reflected["generation"], 2);
    assert_eq!(reflected["resourceTemplateGeneration"], 5);
    let mut other = reflected.clone();
    other["updateRevision"] = json!("");
    other["readyReplicas"] = json!(1);
    let status = i
        .aggregate_status(&sts, &items(&[("m1", reflected.clone()), ("m2", other)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["replicas"], 8);
    assert_eq!(status["readyReplicas"], 5);
    assert_eq!(status["updatedReadyReplicas"], 8);
    assert_eq!(status["updateRevision"], "web-2", "the last one reported");
    assert_eq!(status["currentRevision"], "web-1");
    observed_generation_follows_members(&sts, &reflected).await;
}

#[tokio::test]
async fn kruise_united_deployment() {
    let i = interpreter();
    let ud = workload(
        "apps.kruise.io/v1alpha1",
        "UnitedDeployment",
        json!({"replicas": 6, "template": pod_template(),
               "topology": {"subsets": [{"name": "a"}, {"name": "b"}]}}),
    );
    assert_eq!(i.get_replicas(&ud).await.expect("replicas").0, 6);
    assert_eq!(
        i.revise_replica(&ud, 2).await.expect("revise")["spec"]["replicas"],
        2
    );
    assert_eq!(
        deps(&i.get_dependencies(&ud).await.expect("deps")),
        TEMPLATE_DEPS
    );
    let observed = member(
        &ud,
        json!({"observedGeneration": 2, "replicas": 6, "updatedReplicas": 6, "readyReplicas": 6,
               "availableReplicas": 6, "unavailableReplicas": 0,
               "conditions": [{"type": "SubsetProvisioned", "status": "True"}]}),
    );
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    let mut short = observed.clone();
    short["status"]["updatedReplicas"] = json!(5);
    short["status"]["availableReplicas"] = json!(5);
    assert_eq!(
        i.interpret_health(&short).await,
        Ok(ResourceHealth::Unhealthy)
    );
    let reflected = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    let mut second = reflected.clone();
    second["unavailableReplicas"] = json!(2);
    second["conditions"] = json!([{"type": "SubsetProvisioned", "status": "False", "reason": "Quota"},
                                  {"type": "SubsetUpdated", "status": "True"}]);
    let status = i
        .aggregate_status(&ud, &items(&[("m1", reflected.clone()), ("m2", second)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["replicas"], 12);
    assert_eq!(status["unavailableReplicas"], 2);
    assert_eq!(
        status["conditions"],
        json!([{"type": "SubsetProvisioned", "status": "False", "reason": "Quota"},
               {"type": "SubsetUpdated", "status": "True"}]),
        "one condition per type, the last member's"
    );
    observed_generation_follows_members(&ud, &reflected).await;
}

#[tokio::test]
async fn kruise_advanced_daemon_set() {
    let i = interpreter();
    let ds = workload(
        "apps.kruise.io/v1alpha1",
        "DaemonSet",
        json!({"template": pod_template(), "updateStrategy": {"type": "RollingUpdate"}}),
    );
    assert_eq!(i.get_replicas(&ds).await, Ok((0, None)), "not divided");
    assert_eq!(
        deps(&i.get_dependencies(&ds).await.expect("deps")),
        TEMPLATE_DEPS
    );
    let observed = member(
        &ds,
        json!({"observedGeneration": 2, "currentNumberScheduled": 3, "numberMisscheduled": 0,
               "desiredNumberScheduled": 3, "numberReady": 3, "updatedNumberScheduled": 3,
               "numberAvailable": 3, "numberUnavailable": 0, "daemonSetHash": "5d8f"}),
    );
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy)
    );
    let mut rolling = observed.clone();
    rolling["status"]["updatedNumberScheduled"] = json!(2);
    assert_eq!(
        i.interpret_health(&rolling).await,
        Ok(ResourceHealth::Unhealthy)
    );
    let mut down = observed.clone();
    down["status"]["numberAvailable"] = json!(2);
    assert_eq!(
        i.interpret_health(&down).await,
        Ok(ResourceHealth::Unhealthy)
    );
    let reflected = i
        .reflect_status(&observed)
        .await
        .expect("reflect")
        .expect("status");
    assert_eq!(reflected["daemonSetHash"], "5d8f");
    let mut small = reflected.clone();
    small["desiredNumberScheduled"] = json!(1);
    small["daemonSetHash"] = json!("");
    let status = i
        .aggregate_status(&ds, &items(&[("m1", reflected.clone()), ("m2", small)]))
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(status["desiredNumberScheduled"], 4);
    assert_eq!(status["numberReady"], 6);
    assert_eq!(status["daemonSetHash"], "5d8f");
    observed_generation_follows_members(&ds, &reflected).await;
}

#[tokio::test]
async fn kruise_sidecar_set() {
    let i = interpreter();
    let sidecars = json!({
        "apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
        "metadata": {"name": "logging", "namespace": "shop", "generation": 1},
        "spec": {"selector": {"matchLabels": {"app": "web"}},
            "containers": [{"name": "fluent", "image": "fluent-bit",
                "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "fluent-conf", "key": "a"}}},
                        {"name": "B", "valueFrom": {"secretKeyRef": {"name": "es-auth", "key": "b"}}},
                        {"name": "C", "value": "plain"}],
                "envFrom": [{"secretRef": {"name": "es-auth"}}]}],
            "volumes": [{"name": "conf", "configMap": {"name": "fluent-conf"}},
                        {"name": "certs", "secret": {"secretName": "es-ca"}},
                        {"name": "both", "projected": {"sources": [{"configMap": {"name": "extra"}}, {"secret": {"name": "extra-secret"}}]}}]}
    });
    assert_eq!(
        deps(&i.get_dependencies(&sidecars).await.expect("deps")),
        [
            "v1 ConfigMap shop/extra",
            "v1 ConfigMap shop/fluent-conf",
            "v1 Secret shop/es-auth",
            "v1 Secret shop/es-ca",
            "v1 Secret shop/extra-secret"
        ]
    );
    let mut bare = sidecars.clone();
    bare["spec"] = json!({"selector": {}});
    assert!(i.get_dependencies(&bare).await.expect("deps").is_empty());
    assert_eq!(i.get_replicas(&sidecars).await, Ok((0, None)));
    let mut observed = sidecars.clone();
    observed["spec"]["containers"][0]["image"] = json!("changed-in-member");
    assert_eq!(
        i.retain(&sidecars, &observed).await.expect("retain"),
        sidecars
    );

    observed["status"] =
        json!({"matchedPods": 4, "updatedPods": 4, "readyPods": 3, "observedGeneration": 1});
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
        json!({"matchedPods": 4, "updatedPods": 4, "readyPods": 3})
    );
    observed["status"]["updatedPods"] = json!(2);
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Unhealthy)
    );
    observed["status"] = json!({});
    assert_eq!(
        i.interpret_health(&observed).await,
        Ok(ResourceHealth::Healthy),
        "no matched pods: nothing to update"
    );
    let status = i
        .aggregate_status(
            &sidecars,
            &items(&[
                ("m1", reflected),
                ("m2", json!({"matchedPods": 1})),
                ("m3", json!(null)),
            ]),
        )
        .await
        .expect("aggregate")
        .expect("changed");
    assert_eq!(
        status,
        json!({"matchedPods": 5, "updatedPods": 4, "readyPods": 3})
    );
}
