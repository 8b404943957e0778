//! ResourceBinding and ClusterResourceBinding at both of Karmada's versions: stored as
//! `v1alpha2`, served as `v1alpha1` too (converted both ways), with discovery preferring
//! `v1alpha2`; driven with the real kubectl and a kube-rs watch.

mod support;

use futures::StreamExt;
use karmada_api::work::conversion::V1ALPHA2_FIELDS;
use karmada_api::work::v1alpha1;
use serde_json::{Value, json};
use support::{DEADLINE, Server, wait_for};

const V1ALPHA1_RB: &str = r#"
apiVersion: work.karmada.io/v1alpha1
kind: ResourceBinding
metadata:
  name: old-style
  namespace: default
spec:
  resource:
    apiVersion: apps/v1
    kind: Deployment
    namespace: default
    name: web
    replicas: 3
    resourcePerReplicas:
      cpu: 250m
  clusters:
    - name: member1
      replicas: 2
    - name: member2
      replicas: 1
"#;

const V1ALPHA2_CRB: &str = r#"
apiVersion: work.karmada.io/v1alpha2
kind: ClusterResourceBinding
metadata:
  name: new-style
spec:
  resource:
    apiVersion: v1
    kind: Namespace
    name: team-a
    uid: 6e0c2b1a-0000-4000-8000-000000000001
  replicas: 0
  clusters:
    - name: member1
  placement:
    clusterAffinity:
      clusterNames: [member1, member2]
  conflictResolution: Overwrite
  preserveResourcesOnDeletion: true
"#;

#[test]
fn discovery_prefers_v1alpha2_and_serves_both() {
    let s = Server::start();
    let group: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/apis/work.karmada.io"])).unwrap();
    assert_eq!(
        group["preferredVersion"]["groupVersion"],
        "work.karmada.io/v1alpha2"
    );
    let versions = s.kubectl_ok(&["api-versions"]);
    assert!(
        versions.contains("work.karmada.io/v1alpha1\n"),
        "{versions}"
    );
    assert!(
        versions.contains("work.karmada.io/v1alpha2\n"),
        "{versions}"
    );
    // kubectl resolves the short name through the preferred version.
    let resources = s.kubectl_ok(&["api-resources", "--api-group=work.karmada.io"]);
    let rb = resources
        .lines()
        .find(|l| l.starts_with("resourcebindings"))
        .unwrap_or_default();
    assert!(rb.contains("work.karmada.io/v1alpha2"), "{resources}");
    let v1: Value =
        serde_json::from_str(&s.kubectl_ok(&["get", "--raw", "/apis/work.karmada.io/v1alpha1"]))
            .unwrap();
    let names: Vec<&str> = v1["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"resourcebindings"), "{names:?}");
    assert!(
        names.contains(&"clusterresourcebindings/status"),
        "{names:?}"
    );
    // OpenAPI documents both versions with their own shapes.
    let doc: Value = serde_json::from_str(&s.kubectl_ok(&[
        "get",
        "--raw",
        "/openapi/v3/apis/work.karmada.io/v1alpha1",
    ]))
    .unwrap();
    let rb = &doc["components"]["schemas"]["io.karmada.work.v1alpha1.ResourceBinding"];
    assert!(
        rb["properties"]["spec"]["properties"]["resource"]["properties"]
            .get("resourcePerReplicas")
            .is_some(),
        "{rb}"
    );
    let out = s.kubectl_ok(&[
        "explain",
        "resourcebindings.spec.resource",
        "--api-version=work.karmada.io/v1alpha1",
    ]);
    assert!(out.contains("resourcePerReplicas"), "{out}");
}

#[test]
fn written_at_one_version_read_at_the_other() {
    let s = Server::start();

    // Created at v1alpha1, stored (and read by kubectl's default) as v1alpha2.
    s.kubectl_stdin_ok(&["create", "-f", "-"], V1ALPHA1_RB);
    let rb = s.get_json(&["rb", "old-style"]);
    assert_eq!(rb["apiVersion"], "work.karmada.io/v1alpha2");
    assert_eq!(rb["spec"]["replicas"], 3);
    assert_eq!(
        rb["spec"]["replicaRequirements"],
        json!({"resourceRequest": {"cpu": "250m"}})
    );
    assert_eq!(
        rb["spec"]["resource"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"})
    );
    assert_eq!(
        rb["spec"]["clusters"][0],
        json!({"name": "member1", "replicas": 2})
    );
    // Admission ran as for any binding: Karmada's webhook labelled it.
    assert!(
        rb["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"].is_string(),
        "{rb}"
    );
    // And back at v1alpha1, as written.
    let old = s.get_json(&["resourcebindings.v1alpha1.work.karmada.io", "old-style"]);
    assert_eq!(old["apiVersion"], "work.karmada.io/v1alpha1");
    assert_eq!(old["spec"]["resource"]["replicas"], 3);
    assert_eq!(
        old["spec"]["resource"]["resourcePerReplicas"]["cpu"],
        "250m"
    );
    assert_eq!(
        old["metadata"]["resourceVersion"],
        rb["metadata"]["resourceVersion"]
    );
    // v1alpha2's schema defaulted conflictResolution, which v1alpha1 has no field for.
    assert_eq!(
        old["metadata"]["annotations"],
        json!({V1ALPHA2_FIELDS: r#"{"spec":{"conflictResolution":"Abort"}}"#}),
        "{old}"
    );

    // Created at v1alpha2 with fields v1alpha1 lacks: they ride in an annotation at v1alpha1
    // and survive a v1alpha1 client's replace.
    s.kubectl_stdin_ok(&["create", "-f", "-"], V1ALPHA2_CRB);
    let mut old = s.get_json(&[
        "clusterresourcebindings.v1alpha1.work.karmada.io",
        "new-style",
    ]);
    assert_eq!(old["apiVersion"], "work.karmada.io/v1alpha1");
    assert!(old["spec"].get("placement").is_none(), "{old}");
    let preserved: Value = serde_json::from_str(
        old["metadata"]["annotations"][V1ALPHA2_FIELDS]
            .as_str()
            .expect("annotation"),
    )
    .unwrap();
    assert_eq!(
        preserved["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["member1", "member2"])
    );
    old["spec"]["clusters"] = json!([{"name": "member2", "replicas": 0}]);
    let out = s.kubectl_stdin_ok(&["replace", "-f", "-"], &old.to_string());
    assert!(
        out.contains("clusterresourcebinding.work.karmada.io/new-style replaced"),
        "{out}"
    );
    let crb = s.get_json(&["crb", "new-style"]);
    assert_eq!(crb["apiVersion"], "work.karmada.io/v1alpha2");
    assert_eq!(
        crb["spec"]["clusters"],
        json!([{"name": "member2", "replicas": 0}])
    );
    assert_eq!(
        crb["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        json!(["member1", "member2"])
    );
    assert_eq!(crb["spec"]["conflictResolution"], "Overwrite");
    assert_eq!(crb["spec"]["preserveResourcesOnDeletion"], true);
    assert_eq!(
        crb["spec"]["resource"]["uid"],
        "6e0c2b1a-0000-4000-8000-000000000001"
    );
    // The annotation is a v1alpha1 view only: never stored.
    assert!(
        crb["metadata"]
            .get("annotations")
            .and_then(|a| a.get(V1ALPHA2_FIELDS))
            .is_none(),
        "{crb}"
    );
    // The generation moved with the spec change made through v1alpha1.
    assert_eq!(crb["metadata"]["generation"], 2);

    // Patches at v1alpha1 (merge and JSON) apply to the v1alpha1 shape.
    s.kubectl_ok(&[
        "patch",
        "resourcebindings.v1alpha1.work.karmada.io",
        "old-style",
        "--type=merge",
        "-p",
        r#"{"spec":{"resource":{"replicas":5}}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "resourcebindings.v1alpha1.work.karmada.io",
        "old-style",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/spec/resource/resourcePerReplicas"}]"#,
    ]);
    let rb = s.get_json(&["rb", "old-style"]);
    assert_eq!(rb["spec"]["replicas"], 5);
    assert!(rb["spec"].get("replicaRequirements").is_none(), "{rb}");

    // The status subresource at v1alpha1 keeps v1alpha2's per-cluster health.
    s.kubectl_ok(&[
        "patch",
        "rb",
        "old-style",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"aggregatedStatus":[{"clusterName":"member1","applied":true,"health":"Healthy"}]}}"#,
    ]);
    s.kubectl_ok(&[
        "patch",
        "resourcebindings.v1alpha1.work.karmada.io",
        "old-style",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Scheduled","status":"True","reason":"Success","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#,
    ]);
    let rb = s.get_json(&["rb", "old-style"]);
    assert_eq!(
        rb["status"]["aggregatedStatus"],
        json!([{"clusterName": "member1", "applied": true, "health": "Healthy"}])
    );
    assert_eq!(rb["status"]["conditions"][0]["type"], "Scheduled");

    // Server-side printing per version: v1alpha2 has Karmada's columns, v1alpha1 none.
    let table = s.kubectl_ok(&["get", "rb", "-A"]);
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.contains("SCHEDULED") && header.contains("FULLYAPPLIED"),
        "{table}"
    );
    let header = |table: &str| -> Vec<String> {
        let first = table.lines().next().unwrap_or_default();
        first.split_whitespace().map(str::to_owned).collect()
    };
    let table = s.kubectl_ok(&["get", "resourcebindings.v1alpha1.work.karmada.io", "-A"]);
    assert_eq!(header(&table), ["NAMESPACE", "NAME", "AGE"], "{table}");
    assert!(table.contains("old-style"), "{table}");
    // kubectl expands a short name to group and resource only (client-go's
    // shortcutExpander), so `rb.v1alpha1.work.karmada.io` reads the preferred version, as
    // against Karmada.
    let table = s.kubectl_ok(&["get", "rb.v1alpha1.work.karmada.io", "-A"]);
    assert_eq!(
        header(&table),
        ["NAMESPACE", "NAME", "SCHEDULED", "FULLYAPPLIED", "AGE"],
        "{table}"
    );

    // Refusals speak v1alpha1: its schema, its paths.
    let err = s.kubectl_stdin(
        &["create", "-f", "-"],
        &V1ALPHA1_RB
            .replace("old-style", "bad")
            .replace("replicas: 3", "replicas: three"),
    );
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(!err.status.success());
    assert!(stderr.contains("spec.resource.replicas"), "{stderr}");
    let err = s.kubectl_stdin(
        &["create", "--validate=strict", "-f", "-"],
        &V1ALPHA1_RB
            .replace("old-style", "strict")
            .replace("  clusters:\n", "  placement: {}\n  clusters:\n"),
    );
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(!err.status.success());
    assert!(
        stderr.contains("unknown field \"spec.placement\""),
        "{stderr}"
    );
    let mut tampered = s.get_json(&[
        "clusterresourcebindings.v1alpha1.work.karmada.io",
        "new-style",
    ]);
    tampered["metadata"]["annotations"][V1ALPHA2_FIELDS] = json!("{not json");
    let err = s.kubectl_stdin(&["replace", "-f", "-"], &tampered.to_string());
    let stderr = String::from_utf8_lossy(&err.stderr);
    assert!(!err.status.success());
    assert!(
        stderr.contains("metadata.annotations[work.karmada.io/v1alpha2-fields]"),
        "{stderr}"
    );

    // Deleting at v1alpha1 deletes the stored object.
    s.kubectl_ok(&[
        "delete",
        "clusterresourcebindings.v1alpha1.work.karmada.io",
        "new-style",
    ]);
    assert!(!s.kubectl(&["get", "crb", "new-style"]).status.success());
}

#[test]
fn v1alpha1_lists_and_watches_convert() {
    let s = Server::start();
    let client = s.block_on(async {
        let config = kube::Config::from_custom_kubeconfig(
            kube::config::Kubeconfig::read_from(&s.kubeconfig).unwrap(),
            &Default::default(),
        )
        .await
        .unwrap();
        kube::Client::try_from(config).unwrap()
    });
    let api: kube::Api<v1alpha1::ResourceBinding> = kube::Api::namespaced(client, "default");
    let (tx, rx) = std::sync::mpsc::channel::<(String, v1alpha1::ResourceBinding)>();
    let watch_api = api.clone();
    let mut stream = s.block_on(async move {
        let list = watch_api.list(&Default::default()).await.unwrap();
        let rv = list.metadata.resource_version.unwrap_or_default();
        watch_api
            .watch(&kube::api::WatchParams::default().timeout(60), &rv)
            .await
            .unwrap()
            .boxed()
    });
    let runtime = s.block_on(async { tokio::runtime::Handle::current() });
    let handle = runtime.spawn(async move {
        while let Some(Ok(event)) = stream.next().await {
            let sent = match event {
                kube::api::WatchEvent::Added(o) => tx.send(("ADDED".into(), o)),
                kube::api::WatchEvent::Modified(o) => tx.send(("MODIFIED".into(), o)),
                kube::api::WatchEvent::Deleted(o) => tx.send(("DELETED".into(), o)),
                _ => Ok(()),
            };
            if sent.is_err() {
                break;
            }
        }
    });

    // Written at v1alpha2 (as the controllers write), watched and listed at v1alpha1.
    let v2 = V1ALPHA1_RB
        .replace("work.karmada.io/v1alpha1", "work.karmada.io/v1alpha2")
        .replace(
            "    replicas: 3\n    resourcePerReplicas:\n      cpu: 250m\n",
            "",
        )
        .replace("  clusters:\n", "  replicas: 4\n  clusters:\n");
    s.kubectl_stdin_ok(&["create", "-f", "-"], &v2);
    let next = || {
        rx.recv_timeout(DEADLINE)
            .expect("a watch event within the deadline")
    };
    let (kind, added) = next();
    assert_eq!(kind, "ADDED");
    assert_eq!(added.spec.resource.replicas, 4);
    assert_eq!(added.spec.clusters.len(), 2);
    s.kubectl_ok(&[
        "patch",
        "rb",
        "old-style",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":6}}"#,
    ]);
    let (kind, modified) = next();
    assert_eq!(kind, "MODIFIED");
    assert_eq!(modified.spec.resource.replicas, 6);
    let listed = s.block_on(api.list(&Default::default())).unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].spec.resource.replicas, 6);
    assert_eq!(
        listed.items[0].metadata.resource_version,
        modified.metadata.resource_version
    );
    s.kubectl_ok(&["delete", "rb", "old-style"]);
    let (kind, deleted) = next();
    assert_eq!(kind, "DELETED");
    assert_eq!(deleted.spec.resource.replicas, 6);
    handle.abort();

    // The bindings the controllers make are served at v1alpha1 too.
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &std::fs::read_to_string("samples/nginx-deployment.yaml").unwrap(),
    );
    s.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &std::fs::read_to_string("samples/propagationpolicy-duplicated.yaml").unwrap(),
    );
    let out = wait_for("the detector's binding at v1alpha1", DEADLINE, || {
        let out = s.kubectl_ok(&["get", "resourcebindings.v1alpha1.work.karmada.io", "-A"]);
        out.contains("nginx-deployment").then_some(out)
    });
    assert!(out.starts_with("NAMESPACE"), "{out}");
    let old = s.get_json(&[
        "resourcebindings.v1alpha1.work.karmada.io",
        "nginx-deployment",
    ]);
    assert_eq!(old["spec"]["resource"]["name"], "nginx");
    assert!(
        old["metadata"]["annotations"][V1ALPHA2_FIELDS]
            .as_str()
            .is_some_and(|a| a.contains("placement")),
        "{old}"
    );
}
