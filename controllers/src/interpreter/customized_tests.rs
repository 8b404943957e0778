//! The resource interpreter's layers: customizations before the built-in interpreter, the
//! kube library answering as the built-in interpreter does, reloads, results made typed.

use karmada_api::config::v1alpha1::ResourceInterpreterCustomization;
use karmada_api::work::v1alpha1::ResourceHealth;
use karmada_api::work::v1alpha2::AggregatedStatusItem;
use serde_json::{Value, json};

use super::{ResourceInterpreter, generate_replica_requirements, get_dependencies};
use lua::Operation;

fn customization(
    name: &str,
    api_version: &str,
    kind: &str,
    rules: Value,
) -> ResourceInterpreterCustomization {
    serde_json::from_value(json!({
        "apiVersion": "config.karmada.io/v1alpha1",
        "kind": "ResourceInterpreterCustomization",
        "metadata": {"name": name},
        "spec": {"target": {"apiVersion": api_version, "kind": kind}, "customizations": rules}
    }))
    .expect("customization")
}

fn script(source: &str) -> Value {
    json!({"luaScript": source})
}

fn interpreter() -> ResourceInterpreter {
    ResourceInterpreter::new(None, lua::Limits::default())
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "generation": 1},
        "spec": {
            "replicas": 4,
            "template": {"spec": {
                "nodeSelector": {"disk": "ssd"},
                "serviceAccountName": "runner",
                "containers": [{"name": "c", "image": "nginx",
                    "envFrom": [{"configMapRef": {"name": "settings"}}],
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
                    {"name": "d", "image": "nginx", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
                "volumes": [{"name": "s", "secret": {"secretName": "creds"}}]
            }}
        },
        "status": {"observedGeneration": 1, "updatedReplicas": 4, "availableReplicas": 4}
    })
}

fn workload() -> Value {
    json!({
        "apiVersion": "apps.example.io/v1", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"size": 3, "template": deployment()["spec"]["template"].clone()},
        "status": {"ready": 1}
    })
}

#[tokio::test]
async fn customizations_come_before_the_built_in_interpreter() {
    let i = interpreter();
    assert_eq!(
        i.interpret_health(&deployment()).await,
        Ok(ResourceHealth::Healthy)
    );
    i.load_customizations(&[customization(
        "deploy-health",
        "apps/v1",
        "Deployment",
        json!({"healthInterpretation": script("function InterpretHealth(o) return o.spec.replicas > 10 end")}),
    )]);
    assert_eq!(
        i.interpret_health(&deployment()).await,
        Ok(ResourceHealth::Unhealthy)
    );
    // Other operations of the kind stay built in.
    assert!(i.is_native("apps/v1", "Deployment", Operation::InterpretReplica));
    assert_eq!(i.get_replicas(&deployment()).await.map(|r| r.0), Ok(4));
    // Removing the customization restores the built-in rule.
    i.load_customizations(&[]);
    assert_eq!(
        i.interpret_health(&deployment()).await,
        Ok(ResourceHealth::Healthy)
    );
}

#[tokio::test]
async fn kinds_nothing_interprets_are_healthy_and_have_no_replicas() {
    let i = interpreter();
    assert!(!i.hook_enabled(
        "apps.example.io/v1",
        "Workload",
        Operation::InterpretReplica
    ));
    assert_eq!(
        i.interpret_health(&workload()).await,
        Ok(ResourceHealth::Healthy)
    );
    assert_eq!(i.get_replicas(&workload()).await, Ok((0, None)));
    assert_eq!(
        i.reflect_status(&workload()).await,
        Ok(Some(json!({"ready": 1}))),
        "the whole status is reflected"
    );
}

#[tokio::test]
async fn the_kube_library_answers_as_the_built_in_interpreter() {
    let i = interpreter();
    i.load_customizations(&[customization(
        "workloads",
        "apps.example.io/v1",
        "Workload",
        json!({
            "replicaResource": script(r#"
                local kube = require("kube")
                function GetReplicas(obj)
                  return obj.spec.size, kube.accuratePodRequirements(obj.spec.template)
                end"#),
            "dependencyInterpretation": script(r#"
                local kube = require("kube")
                function GetDependencies(obj)
                  return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)
                end"#),
        }),
    )]);
    let (n, req) = i.get_replicas(&workload()).await.expect("replicas");
    assert_eq!(n, 3);
    let native =
        generate_replica_requirements(&deployment()["spec"]["template"]["spec"]).expect("native");
    assert_eq!(req, native);
    let req = req.expect("requirements");
    assert_eq!(req.resource_request["cpu"].0, "1250m");
    assert_eq!(req.resource_request["memory"].0, "1088Mi");

    let deps = i.get_dependencies(&workload()).await.expect("deps");
    assert_eq!(deps, get_dependencies(&deployment()).expect("native deps"));
    let names: Vec<_> = deps
        .iter()
        .map(|d| format!("{}/{}", d.kind, d.name))
        .collect();
    assert_eq!(
        names,
        [
            "ConfigMap/settings",
            "Secret/creds",
            "ServiceAccount/runner"
        ]
    );
}

#[tokio::test]
async fn results_are_made_typed_and_checked() {
    let i = interpreter();
    i.load_customizations(&[
        customization(
            "a",
            "apps.example.io/v1",
            "Workload",
            json!({
                "replicaResource": script("function GetReplicas(o) return 2, {resourceRequest = {cpu = 1, memory = '1024Mi'}} end"),
                "dependencyInterpretation": script("function GetDependencies(o) return {{apiVersion = 'v1', kind = 'Secret', namespace = 'ns', name = 'b'}} end"),
            }),
        ),
        customization(
            "b",
            "apps.example.io/v1",
            "Workload",
            json!({
                "dependencyInterpretation": script("function GetDependencies(o) return {{apiVersion = 'v1', kind = 'ConfigMap', namespace = 'ns', name = 'a'}, {apiVersion = 'v1', kind = 'Secret', namespace = 'ns', name = 'b'}} end"),
            }),
        ),
    ]);
    let (_, req) = i.get_replicas(&workload()).await.expect("replicas");
    let req = req.expect("requirements");
    assert_eq!(req.resource_request["cpu"].0, "1");
    assert_eq!(req.resource_request["memory"].0, "1Gi");
    // Dependency scripts of every customization add up, sorted, without duplicates.
    let deps = i.get_dependencies(&workload()).await.expect("deps");
    let names: Vec<_> = deps
        .iter()
        .map(|d| format!("{}/{}", d.kind, d.name))
        .collect();
    assert_eq!(names, ["ConfigMap/a", "Secret/b"]);

    i.load_customizations(&[customization(
        "bad",
        "apps.example.io/v1",
        "Workload",
        json!({
            "dependencyInterpretation": script("function GetDependencies(o) return {{kind = 'Secret'}} end"),
            "replicaResource": script("function GetReplicas(o) return 1, {resourceRequest = {cpu = 'lots'}} end"),
        }),
    )]);
    let err = i.get_dependencies(&workload()).await.expect_err("invalid");
    assert_eq!(
        err.to_string(),
        "InterpretDependency of ResourceInterpreterCustomization(bad) failed: [dependencies[0].apiVersion: Invalid value: \"\": missing required apiVersion, dependencies[0]: Invalid value: {\"apiVersion\":\"\",\"kind\":\"Secret\"}: dependency can not leave name and labelSelector all empty]"
    );
    let err = i
        .get_replicas(&workload())
        .await
        .expect_err("invalid quantity");
    assert!(
        err.to_string().starts_with(
            "InterpretReplica of ResourceInterpreterCustomization(bad) failed: resourceRequest.cpu: quantities must match"
        ),
        "{err}"
    );
}

#[tokio::test]
async fn a_changed_customization_takes_effect_at_the_next_call() {
    let i = interpreter();
    let with = |expr: &str| {
        customization(
            "health",
            "apps.example.io/v1",
            "Workload",
            json!({"healthInterpretation": script(&format!("function InterpretHealth(o) return {expr} end"))}),
        )
    };
    i.load_customizations(&[with("o.status.ready >= 1")]);
    assert_eq!(
        i.interpret_health(&workload()).await,
        Ok(ResourceHealth::Healthy)
    );
    i.load_customizations(&[with("o.status.ready >= 2")]);
    assert_eq!(
        i.interpret_health(&workload()).await,
        Ok(ResourceHealth::Unhealthy)
    );
    assert_eq!(
        i.interpret_health_now(&workload()),
        Some(ResourceHealth::Unhealthy)
    );
}

#[tokio::test]
async fn aggregation_revision_and_retention_use_the_scripts() {
    let i = interpreter();
    i.load_customizations(&[customization(
        "workloads",
        "apps.example.io/v1",
        "Workload",
        json!({
            "replicaRevision": script("function ReviseReplica(o, n) o.spec.size = n return o end"),
            "retention": script("function Retain(d, o) d.spec.paused = o.spec.paused return d end"),
            "statusAggregation": script(r#"
                function AggregateStatus(desired, items)
                  local ready = 0
                  for i = 1, #items do
                    if items[i].status ~= nil then ready = ready + items[i].status.ready end
                  end
                  desired.status = {ready = ready, members = #items}
                  return desired
                end"#),
        }),
    )]);
    let revised = i.revise_replica(&workload(), 2).await.expect("revise");
    assert_eq!(revised["spec"]["size"], json!(2));
    let mut observed = workload();
    observed["spec"]["paused"] = json!(true);
    let retained = i.retain(&workload(), &observed).await.expect("retain");
    assert_eq!(retained["spec"]["paused"], json!(true));
    let item = |cluster: &str, ready: i64| AggregatedStatusItem {
        cluster_name: cluster.into(),
        status: Some(json!({"ready": ready})),
        applied: true,
        applied_message: String::new(),
        health: Some(ResourceHealth::Healthy),
    };
    let items = [item("member1", 1), item("member2", 2)];
    assert_eq!(
        i.aggregate_status(&workload(), &items).await,
        Ok(Some(json!({"ready": 3, "members": 2})))
    );
    let mut current = workload();
    current["status"] = json!({"ready": 3, "members": 2});
    assert_eq!(
        i.aggregate_status(&current, &items).await,
        Ok(None),
        "unchanged"
    );
}

#[tokio::test]
async fn a_script_that_loops_fails_the_call_with_a_clear_error() {
    let i = ResourceInterpreter::new(
        None,
        lua::Limits {
            timeout: std::time::Duration::from_millis(100),
            ..lua::Limits::default()
        },
    );
    i.load_customizations(&[customization(
        "loop",
        "apps.example.io/v1",
        "Workload",
        json!({"healthInterpretation": script("function InterpretHealth(o) while true do end end")}),
    )]);
    let err = i.interpret_health(&workload()).await.expect_err("loop");
    assert_eq!(
        err.to_string(),
        "InterpretHealth of ResourceInterpreterCustomization(loop) failed: the script did not finish within 0.1s (it may loop forever)"
    );
    assert_eq!(
        i.interpret_health_now(&workload()),
        Some(ResourceHealth::Unknown)
    );
}

#[test]
fn webhook_patches_apply_as_rfc_6902() {
    use super::webhook::apply_json_patch;
    let obj = json!({"spec": {"replicas": 1, "a": {"b": 1}}, "list": [1, 2]});
    let patch = br#"[
        {"op": "replace", "path": "/spec/replicas", "value": 3},
        {"op": "add", "path": "/list/-", "value": 3},
        {"op": "move", "from": "/spec/a", "path": "/moved"},
        {"op": "copy", "from": "/list/0", "path": "/first"},
        {"op": "test", "path": "/first", "value": 1},
        {"op": "remove", "path": "/list/0"}
    ]"#;
    assert_eq!(
        apply_json_patch(&obj, patch),
        Ok(json!({"spec": {"replicas": 3}, "list": [2, 3], "moved": {"b": 1}, "first": 1}))
    );
    assert!(
        apply_json_patch(
            &obj,
            br#"[{"op": "test", "path": "/spec/replicas", "value": 2}]"#
        )
        .is_err()
    );
    assert!(
        apply_json_patch(&obj, br#"[{"op": "replace", "path": "/nope", "value": 2}]"#).is_err()
    );
}

/// What AggregateStatus scripts receive as `statusItems`: the controllers pass the list they
/// assembled (empty, never nil, as Karmada's binding-status controller), items decoded as
/// leniently as Go decodes them; `karmada-rs interpret` without a status file passes nil.
#[tokio::test]
async fn status_items_reach_the_script_as_karmada_passes_them() {
    let i = interpreter();
    i.load_customizations(&[customization(
        "echo",
        "apps.example.io/v1",
        "Workload",
        json!({"statusAggregation": script(
            r#"function AggregateStatus(desired, statusItems)
              if statusItems == nil then
                desired.status = {items = "nil"}
                return desired
              end
              local seen = {}
              for _, item in ipairs(statusItems) do
                local keys = {}
                for k in pairs(item) do keys[#keys + 1] = k end
                table.sort(keys)
                seen[#seen + 1] = item.clusterName .. "=" .. table.concat(keys, "+")
              end
              desired.status = {items = table.concat(seen, ","), count = #statusItems}
              return desired
            end"#,
        )}),
    )]);
    let decoded = |v: Value| -> Vec<AggregatedStatusItem> {
        serde_json::from_value(v).expect("items decode as Go decodes them")
    };
    let cases = [
        (
            "no Work reports",
            Vec::new(),
            json!({"items": "", "count": 0}),
        ),
        (
            "an item without clusterName, one with unknown and null fields, a null item",
            decoded(json!([
                {"status": {"ready": 1}, "applied": true, "extra": {"ignored": true}},
                {"clusterName": "m2", "applied": null, "appliedMessage": null, "health": "", "status": null},
                null
            ])),
            json!({"items": "=applied+clusterName+status,m2=clusterName,=clusterName", "count": 3}),
        ),
    ];
    for (name, items, want) in cases {
        let got = i.aggregate_status(&workload(), &items).await;
        assert_eq!(got, Ok(Some(want)), "{name}");
    }
    assert_eq!(
        i.aggregate_customized(&workload(), Value::Null)
            .await
            .map(|o| o.map(|v| v["status"].clone())),
        Ok(Some(json!({"items": "nil"}))),
        "no status items at all"
    );
}
