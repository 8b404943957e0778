//! End to end: resource interpreter customizations and interpreter webhooks on a control plane
//! with three simulated members — a custom resource divided by the replicas its Lua script
//! reads, revised per member, its status aggregated into the template's status subresource,
//! its health in the binding, its dependencies propagated, a changed customization taking
//! effect without restart, a script that never ends failing cleanly, and the same operations
//! answered by an HTTPS webhook the test serves itself.

mod propagation_env;
mod support;

use std::sync::{Arc, Mutex};

use propagation_env::Env;
use serde_json::{Value, json};

/// A namespaced CRD with a status subresource whose spec and status take any fields.
fn crd(group: &str, kind: &str, plural: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: {plural}.{group}}}
spec:
  group: {group}
  scope: Namespaced
  names: {{plural: {plural}, singular: {singular}, kind: {kind}, listKind: {kind}List}}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {{status: {{}}}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
          status: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
",
        singular = kind.to_lowercase()
    )
}

const CUSTOMIZATION: &str = r#"apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterCustomization
metadata: {name: workloads}
spec:
  target: {apiVersion: apps.example.io/v1, kind: Workload}
  customizations:
    replicaResource:
      luaScript: |
        local kube = require("kube")
        function GetReplicas(obj)
          return obj.spec.size, kube.accuratePodRequirements(obj.spec.template)
        end
    replicaRevision:
      luaScript: |
        function ReviseReplica(obj, n)
          obj.spec.size = n
          REVISION_MARK
          return obj
        end
    statusReflection:
      luaScript: |
        function ReflectStatus(obj)
          if obj.status == nil then return {} end
          return {readyReplicas = obj.status.readyReplicas, phase = obj.status.phase}
        end
    statusAggregation:
      luaScript: |
        function AggregateStatus(obj, items)
          local ready = 0
          for i = 1, #items do
            if items[i].status ~= nil and items[i].status.readyReplicas ~= nil then
              ready = ready + items[i].status.readyReplicas
            end
          end
          obj.status = {readyReplicas = ready, clusters = #items}
          return obj
        end
    healthInterpretation:
      luaScript: |
        function InterpretHealth(obj)
          HEALTH_BODY
        end
    dependencyInterpretation:
      luaScript: |
        local kube = require("kube")
        function GetDependencies(obj)
          return kube.getPodDependencies(obj.spec.template, obj.metadata.namespace)
        end
"#;

const HEALTHY_UNLESS_BROKEN: &str = r#"return obj.status == nil or obj.status.phase ~= "Broken""#;

fn customization(revision_mark: &str, health: &str) -> String {
    CUSTOMIZATION
        .replace("REVISION_MARK", revision_mark)
        .replace("HEALTH_BODY", health)
}

const WORKLOAD_AND_POLICY: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: default}
data: {mode: fast}
---
apiVersion: apps.example.io/v1
kind: Workload
metadata: {name: w, namespace: default}
spec:
  size: 6
  template:
    spec:
      containers:
      - name: c
        image: nginx
        envFrom: [{configMapRef: {name: settings}}]
        resources: {requests: {cpu: 250m}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: workloads, namespace: default}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apps.example.io/v1, kind: Workload, name: w}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - targetCluster: {clusterNames: [member1, member2, member3]}
          weight: 1
";

const MEMBERS: [&str; 3] = ["member1", "member2", "member3"];

/// Installs a CRD on the control plane and every member (as an operator's chart would) and
/// waits until all serve it.
fn install_crd(env: &Env, group: &str, kind: &str, plural: &str) {
    let yaml = crd(group, kind, plural);
    env.apply(&yaml);
    for m in &env.members {
        m.kubectl_stdin_ok(&["apply", "-f", "-"], &yaml);
    }
    for m in &env.members {
        env.wait("the CRD served on the member", || {
            m.kubectl(&["get", plural, "-A"])
                .status
                .success()
                .then_some(())
        });
    }
    env.wait("the CRD served on the control plane", || {
        env.cp
            .kubectl(&["get", plural, "-A"])
            .status
            .success()
            .then_some(())
    });
    // The scheduler's APIEnablement filter reads each Cluster's collected status, which the
    // cluster-status controller refreshes on its own period. A binding scheduled before every
    // member lists the kind is divided among fewer members, and keeps that placement when the
    // rest catch up (as Karmada does), so wait until all of them list it.
    let group_version = format!("{group}/v1");
    for m in &env.members {
        let name = m.name.clone();
        env.wait(
            &format!("{name} lists {plural} in its apiEnablements"),
            || {
                let c = env.cp.get_json(&["cluster", &name]);
                c["status"]["apiEnablements"]
                    .as_array()?
                    .iter()
                    .any(|e| {
                        e["groupVersion"] == group_version.as_str()
                            && e["resources"]
                                .as_array()
                                .is_some_and(|r| r.iter().any(|r| r["name"] == plural))
                    })
                    .then_some(())
            },
        );
    }
}

fn size(v: &Value) -> i64 {
    v["spec"]["size"].as_i64().unwrap_or(-1)
}

fn health_of(env: &Env, binding: &str, cluster: &str) -> Option<String> {
    let rb = env.cp.get_json(&["rb", binding]);
    rb["status"]["aggregatedStatus"]
        .as_array()?
        .iter()
        .find(|i| i["clusterName"] == cluster)
        .and_then(|i| i["health"].as_str())
        .map(str::to_owned)
}

fn set_member_status(env: &Env, member: &str, kind: &str, status: Value) {
    env.member(member).kubectl_ok(&[
        "patch",
        kind,
        "w",
        "-n",
        "default",
        "--subresource=status",
        "--type=merge",
        "-p",
        &json!({ "status": status }).to_string(),
    ]);
}

#[test]
fn custom_resources_follow_their_customization_on_three_members() {
    let env = Env::start(3);
    install_crd(&env, "apps.example.io", "Workload", "workloads");

    // A script that does not compile is refused at admission with Lua's message and line.
    let broken = customization("", HEALTHY_UNLESS_BROKEN)
        .replace("return obj.spec.size, kube", "return obj.spec.size +, kube");
    let out = env.cp.kubectl_stdin(&["apply", "-f", "-"], &broken);
    assert!(
        !out.status.success(),
        "a script that does not compile was accepted"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("InterpreterOperation(InterpretReplica)") && err.contains("<string>:3:"),
        "{err}"
    );

    env.apply(&customization("", HEALTHY_UNLESS_BROKEN));
    env.apply(WORKLOAD_AND_POLICY);

    // GetReplicas divides 6 replicas 2/2/2; ReviseReplica writes each member's share.
    for m in MEMBERS {
        let w = env.wait_member_object(m, &["workload", "w", "-n", "default"]);
        assert_eq!(size(&w), 2, "{m}");
        // GetDependencies + propagateDeps: the ConfigMap the pod template reads follows.
        let cm = env.wait_member_object(m, &["configmap", "settings", "-n", "default"]);
        assert_eq!(cm["data"]["mode"], "fast");
    }
    let rb = env.cp.get_json(&["rb", "w-workload"]);
    assert_eq!(rb["spec"]["replicas"], 6);
    assert_eq!(
        rb["spec"]["replicaRequirements"]["resourceRequest"]["cpu"],
        "250m"
    );
    let mut placed: Vec<(String, i64)> = rb["spec"]["clusters"]
        .as_array()
        .expect("clusters")
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or("").to_owned(),
                c["replicas"].as_i64().unwrap_or(-1),
            )
        })
        .collect();
    placed.sort();
    assert_eq!(
        placed,
        [
            ("member1".into(), 2),
            ("member2".into(), 2),
            ("member3".into(), 2)
        ]
    );

    // ReflectStatus + AggregateStatus: the members' status reaches the template's status.
    for m in MEMBERS {
        set_member_status(
            &env,
            m,
            "workload",
            json!({"readyReplicas": 2, "phase": "Running"}),
        );
    }
    env.wait("the template's status aggregated", || {
        let t = env.cp.get_json(&["workload", "w"]);
        (t["status"] == json!({"readyReplicas": 6, "clusters": 3})).then_some(())
    });
    for m in MEMBERS {
        env.wait(&format!("{m} healthy"), || {
            (health_of(&env, "w-workload", m).as_deref() == Some("Healthy")).then_some(())
        });
    }

    // InterpretHealth: a broken member object is Unhealthy in the binding.
    set_member_status(
        &env,
        "member3",
        "workload",
        json!({"readyReplicas": 0, "phase": "Broken"}),
    );
    env.wait("member3 unhealthy", || {
        (health_of(&env, "w-workload", "member3").as_deref() == Some("Unhealthy")).then_some(())
    });
    assert_eq!(
        health_of(&env, "w-workload", "member1").as_deref(),
        Some("Healthy")
    );

    // A changed customization takes effect without restart.
    env.apply(&customization(
        r#"obj.metadata.labels = {revised = "v2"}"#,
        HEALTHY_UNLESS_BROKEN,
    ));
    env.cp.kubectl_ok(&[
        "patch",
        "workload",
        "w",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":9}}"#,
    ]);
    for m in MEMBERS {
        env.wait(&format!("{m} revised by the new script"), || {
            let w = env
                .member(m)
                .get_json(&["workload", "w", "-n", "default"])?;
            (size(&w) == 3 && w["metadata"]["labels"]["revised"] == "v2").then_some(())
        });
    }

    // A script that never ends fails that object's health (Unknown, with an Event) and
    // stalls nothing: the next change still propagates.
    env.apply(&customization(
        r#"obj.metadata.labels = {revised = "v2"}"#,
        "while true do end",
    ));
    // The member object's status changes, so its health is interpreted again.
    set_member_status(
        &env,
        "member1",
        "workload",
        json!({"readyReplicas": 1, "phase": "Running"}),
    );
    env.wait("member1's health unknown", || {
        (health_of(&env, "w-workload", "member1").as_deref() == Some("Unknown")).then_some(())
    });
    let events = env.cp.get_json(&["events", "-A"]);
    let failed: Vec<&Value> = events["items"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["reason"] == "InterpretHealthFailed")
        .collect();
    assert!(!failed.is_empty(), "no InterpretHealthFailed event");
    let message = failed[0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("ResourceInterpreterCustomization(workloads)"),
        "{message}"
    );
    env.cp.kubectl_ok(&[
        "patch",
        "workload",
        "w",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":3}}"#,
    ]);
    for m in MEMBERS {
        env.wait(&format!("{m} scaled while a script loops"), || {
            let w = env
                .member(m)
                .get_json(&["workload", "w", "-n", "default"])?;
            (size(&w) == 1).then_some(())
        });
    }
}

/// What the test's interpreter webhook saw: the operations asked, in order.
#[derive(Default, Clone)]
struct Seen(Arc<Mutex<Vec<String>>>);

/// The test's interpreter webhook: replicas from `spec.count`, revised by a JSON patch,
/// health from `status.ok`, the reflected status marked, the aggregation counting members.
/// A custom resource whose customization's InterpretHealth calls it Unhealthy on its member
/// longer than the policy's application failover tolerates is moved to another cluster (the
/// health path the Deployments' application failover takes, fed by a Lua script).
#[test]
fn a_custom_resource_unhealthy_by_its_script_fails_over() {
    let env = Env::start(3);
    install_crd(&env, "apps.example.io", "Workload", "workloads");
    env.apply(&customization("", HEALTHY_UNLESS_BROKEN));
    env.apply(
        "apiVersion: apps.example.io/v1
kind: Workload
metadata: {name: w, namespace: default}
spec:
  size: 2
  template: {spec: {containers: [{name: c, image: nginx}]}}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: workloads, namespace: default}
spec:
  propagateDeps: true
  resourceSelectors: [{apiVersion: apps.example.io/v1, kind: Workload, name: w}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    spreadConstraints: [{spreadByField: cluster, maxGroups: 1, minGroups: 1}]
    replicaScheduling: {replicaSchedulingType: Duplicated}
  failover:
    application:
      decisionConditions: {tolerationSeconds: 2}
      purgeMode: Directly
",
    );
    let clusters = |rb: &Value| -> Vec<String> {
        rb["spec"]["clusters"]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let victim = env.wait("w healthy on one cluster", || {
        let c = clusters(&env.cp.get_json(&["rb", "w-workload"]));
        (c.len() == 1 && health_of(&env, "w-workload", &c[0]).as_deref() == Some("Healthy"))
            .then(|| c[0].clone())
    });
    let target = if victim == "member1" {
        "member2"
    } else {
        "member1"
    };
    // The script reads the member's status: Broken is Unhealthy.
    set_member_status(&env, &victim, "workload", json!({"phase": "Broken"}));
    env.wait("w moved to the other cluster", || {
        (clusters(&env.cp.get_json(&["rb", "w-workload"])) == [target.to_owned()]).then_some(())
    });
    env.wait("w healthy on the new cluster", || {
        (health_of(&env, "w-workload", target).as_deref() == Some("Healthy")).then_some(())
    });
    // The old copy went at once (Directly).
    env.wait_member_absent(&victim, &["workload", "w", "-n", "default"]);
    let events = env.cp.kubectl_ok(&[
        "get",
        "events",
        "-n",
        "default",
        "--field-selector",
        "involvedObject.kind=ResourceBinding,involvedObject.name=w-workload",
        "-o",
        "custom-columns=REASON:.reason",
    ]);
    assert!(
        events.contains("EvictWorkloadFromClusterSucceed"),
        "{events}"
    );
}

fn answer(context: &Value) -> Value {
    let req = &context["request"];
    let op = req["operation"].as_str().unwrap_or("");
    let obj = &req["object"];
    let mut response = json!({"uid": req["uid"], "successful": true});
    match op {
        "InterpretReplica" => {
            response["replicas"] = obj["spec"]["count"].clone();
            response["replicaRequirements"] = json!({"resourceRequest": {"cpu": "100m"}});
        }
        "ReviseReplica" => {
            let patch = json!([
                {"op": "replace", "path": "/spec/count", "value": req["replicas"]},
                {"op": "add", "path": "/spec/revisedBy", "value": "webhook"},
            ]);
            response["patch"] = json!(base64_encode(patch.to_string().as_bytes()));
            response["patchType"] = json!("JSONPatch");
        }
        "InterpretStatus" => {
            response["rawStatus"] = json!({"ok": obj["status"]["ok"], "via": "webhook"});
        }
        "InterpretHealth" => {
            response["healthy"] = json!(obj["status"]["ok"] != json!(false));
        }
        "AggregateStatus" => {
            let items = req["aggregatedStatus"].as_array().map_or(0, Vec::len);
            let ok = req["aggregatedStatus"].as_array().map_or(0, |a| {
                a.iter().filter(|i| i["status"]["ok"] == true).count()
            });
            let patch = json!([{"op": "add", "path": "/status",
                                "value": {"members": items, "ok": ok}}]);
            response["patch"] = json!(base64_encode(patch.to_string().as_bytes()));
            response["patchType"] = json!("JSONPatch");
        }
        _ => {
            response["successful"] = json!(false);
            response["status"] = json!({"code": 400, "message": format!("unexpected {op}")});
        }
    }
    json!({"apiVersion": "config.karmada.io/v1alpha1", "kind": "ResourceInterpreterContext",
           "response": response})
}

fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Serves the webhook over HTTPS on a free loopback port (HTTP/1.1, keep-alive) until the
/// returned runtime is dropped.
fn serve_webhook(
    cert: &certs::IssuedCert,
    seen: Seen,
) -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    let acceptor = support::https_acceptor(cert);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    rt.spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else { return };
                let mut conn = BufReader::new(tls);
                loop {
                    let mut length = 0usize;
                    let mut line = String::new();
                    // Request line and headers.
                    let mut first = true;
                    loop {
                        line.clear();
                        match conn.read_line(&mut line).await {
                            Ok(0) | Err(_) => return,
                            Ok(_) => {}
                        }
                        if first {
                            first = false;
                            continue;
                        }
                        let l = line.trim_end();
                        if l.is_empty() {
                            break;
                        }
                        if let Some((k, v)) = l.split_once(':')
                            && k.eq_ignore_ascii_case("content-length")
                        {
                            length = v.trim().parse().unwrap_or(0);
                        }
                    }
                    let mut body = vec![0; length];
                    if conn.read_exact(&mut body).await.is_err() {
                        return;
                    }
                    let context: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    if let Ok(mut s) = seen.0.lock() {
                        s.push(context["request"]["operation"].as_str().unwrap_or("").to_owned());
                    }
                    let out = answer(&context).to_string();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        out.len()
                    );
                    let w = conn.get_mut();
                    if w.write_all(head.as_bytes()).await.is_err()
                        || w.write_all(out.as_bytes()).await.is_err()
                        || w.flush().await.is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (rt, addr)
}

#[test]
fn an_interpreter_webhook_answers_for_its_kind() {
    let ca = certs::Ca::generate().expect("ca");
    let cert = ca
        .issue_serving("interpreter-webhook", &["127.0.0.1".to_owned()])
        .expect("serving cert");
    let seen = Seen::default();
    let (_rt, addr) = serve_webhook(&cert, seen.clone());

    let env = Env::start(3);
    install_crd(&env, "hooks.example.io", "Batch", "batches");
    env.apply(&format!(
        "apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata: {{name: batches}}
webhooks:
- name: batches.hooks.example.io
  rules:
  - operations: [InterpretReplica, ReviseReplica, InterpretStatus, InterpretHealth, AggregateStatus]
    apiGroups: [hooks.example.io]
    apiVersions: [v1]
    kinds: [Batch]
  clientConfig:
    url: https://{addr}/interpret
    caBundle: {}
  interpreterContextVersions: [v1alpha1]
  timeoutSeconds: 5
",
        base64_encode(ca.cert_pem().as_bytes())
    ));
    env.apply(
        "apiVersion: hooks.example.io/v1
kind: Batch
metadata: {name: w, namespace: default}
spec: {count: 9}
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: batches, namespace: default}
spec:
  resourceSelectors: [{apiVersion: hooks.example.io/v1, kind: Batch, name: w}]
  placement:
    clusterAffinity: {clusterNames: [member1, member2, member3]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - targetCluster: {clusterNames: [member1, member2, member3]}
          weight: 1
",
    );
    // InterpretReplica and ReviseReplica from the webhook: 9 replicas, 3 per member, patched.
    for m in MEMBERS {
        let b = env.wait_member_object(m, &["batch", "w", "-n", "default"]);
        assert_eq!(b["spec"]["count"], 3, "{m}");
        assert_eq!(b["spec"]["revisedBy"], "webhook", "{m}");
    }
    let rb = env.cp.get_json(&["rb", "w-batch"]);
    assert_eq!(rb["spec"]["replicas"], 9);
    assert_eq!(
        rb["spec"]["replicaRequirements"]["resourceRequest"]["cpu"],
        "100m"
    );

    // InterpretStatus, InterpretHealth and AggregateStatus from the webhook.
    for m in MEMBERS {
        set_member_status(&env, m, "batch", json!({"ok": m != "member2"}));
    }
    env.wait("member2 unhealthy by the webhook", || {
        (health_of(&env, "w-batch", "member2").as_deref() == Some("Unhealthy")).then_some(())
    });
    assert_eq!(
        health_of(&env, "w-batch", "member1").as_deref(),
        Some("Healthy")
    );
    let rb = env.cp.get_json(&["rb", "w-batch"]);
    let reflected = rb["status"]["aggregatedStatus"]
        .as_array()
        .expect("aggregated")
        .iter()
        .find(|i| i["clusterName"] == "member1")
        .map(|i| i["status"].clone());
    assert_eq!(reflected, Some(json!({"ok": true, "via": "webhook"})));
    env.wait("the template's status aggregated by the webhook", || {
        let t = env.cp.get_json(&["batch", "w"]);
        (t["status"] == json!({"members": 3, "ok": 2})).then_some(())
    });
    let ops = seen.0.lock().map(|s| s.clone()).unwrap_or_default();
    for op in [
        "InterpretReplica",
        "ReviseReplica",
        "InterpretStatus",
        "InterpretHealth",
        "AggregateStatus",
    ] {
        assert!(
            ops.iter().any(|o| o == op),
            "the webhook was not asked {op}: {ops:?}"
        );
    }
}
