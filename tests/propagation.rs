//! End-to-end propagation: the binary's control plane with simulated members, driven by
//! kubectl — templates, policies, bindings, Works and member objects as Karmada shows them.

mod propagation_env;
mod support;

use propagation_env::Env;
use serde_json::Value;
use support::{Backend, metric};

const DEPLOY: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
  labels: {app: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx:1.25}]
";

fn pp(name: &str, selector: &str, placement: &str) -> String {
    format!(
        "apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {{name: {name}, namespace: default}}
spec:
  resourceSelectors:
{selector}
  placement:
{placement}
"
    )
}

const ALL_MEMBERS: &str = "    clusterAffinity: {clusterNames: [member1, member2, member3]}";

fn replicas(v: &Value) -> i64 {
    v["spec"]["replicas"].as_i64().unwrap_or(-1)
}

fn samples_propagate_as_their_comments_say(env: &Env) {
    env.apply_sample("nginx-deployment.yaml");
    env.apply_sample("propagationpolicy-duplicated.yaml");
    // "Every member gets the full Deployment (4 replicas each) and its ConfigMap."
    for m in ["member1", "member2"] {
        let d = env.wait_member_object(m, &["deploy", "nginx", "-n", "default"]);
        assert_eq!(replicas(&d), 4);
        env.wait_member_object(m, &["configmap", "nginx-config", "-n", "default"]);
        env.wait_member_object(m, &["service", "nginx", "-n", "default"]);
        let labels = &d["metadata"]["labels"];
        assert_eq!(labels["karmada.io/managed"], "true");
        assert!(labels["work.karmada.io/permanent-id"].is_string());
        let ann = &d["metadata"]["annotations"];
        assert_eq!(ann["work.karmada.io/namespace"], format!("karmada-es-{m}"));
        assert_eq!(ann["resourcebinding.karmada.io/name"], "nginx-deployment");
        assert_eq!(
            ann["propagationpolicy.karmada.io/name"],
            "nginx-propagation"
        );
    }
    // The template is claimed and its binding scheduled and fully applied.
    let t = env.cp.get_json(&["deploy", "nginx"]);
    assert!(t["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"].is_string());
    env.wait("binding fully applied", || {
        let out = env.cp.kubectl_ok(&["get", "rb", "nginx-deployment"]);
        out.lines()
            .nth(1)
            .filter(|l| {
                l.split_whitespace().nth(1) == Some("True")
                    && l.split_whitespace().nth(2) == Some("True")
            })
            .map(|_| ())
    });
    // Once the binding is fully applied its placement is settled: member3 is not in it, so
    // it has no Work and no Deployment.
    let rb = env.cp.get_json(&["rb", "nginx-deployment"]);
    let targets: Vec<&str> = rb["spec"]["clusters"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(targets, vec!["member1", "member2"], "{rb}");
    // Every execution space also holds the unifiedAuth controller's karmada-impersonator
    // Works (as in Karmada); none other belongs in member3's.
    let works = env
        .cp
        .kubectl_ok(&["get", "work", "-n", "karmada-es-member3", "-o", "name"]);
    let workloads: Vec<&str> = works
        .lines()
        .filter(|w| !w.starts_with("work.work.karmada.io/karmada-impersonator-"))
        .collect();
    assert!(
        workloads.is_empty(),
        "member3 is not in the policy: {works}"
    );
    assert!(
        env.member("member3")
            .get_json(&["deploy", "nginx", "-n", "default"])
            .is_none(),
        "member3 is not in the policy"
    );
    let table = env.cp.kubectl_ok(&["get", "rb,work", "-A"]);
    assert!(
        table.contains("SCHEDULED") && table.contains("FULLYAPPLIED"),
        "{table}"
    );
    assert!(
        table.contains("WORKLOAD-KIND") && table.contains("APPLIED"),
        "{table}"
    );
    assert!(
        table.contains("karmada-es-member1") && table.contains("Deployment"),
        "{table}"
    );
    // The template's status is the members' summed.
    env.wait("template readyReplicas 8", || {
        let t = env.cp.get_json(&["deploy", "nginx"]);
        (t["status"]["readyReplicas"] == 8).then_some(())
    });
    let work = env.cp.kubectl_ok(&[
        "get",
        "work",
        "-n",
        "karmada-es-member1",
        "-o",
        "jsonpath={.items[?(@.spec.workload.manifests[0].kind==\"Deployment\")].metadata.name}",
    ]);
    env.wait("SyncSucceed event on the Work", || {
        let d = env
            .cp
            .kubectl_ok(&["describe", "work", "-n", "karmada-es-member1", work.trim()]);
        (d.contains("SyncSucceed") && d.contains("Applied")).then_some(())
    });
    // The controllers write under Karmada's name: field managers say karmada-controller-manager
    // on the Work (spec and status) and on the member object (the simulated member's own
    // status writes name its simulator).
    let managers = |out: String| -> Vec<String> {
        let mut m: Vec<String> = out.split_whitespace().map(str::to_owned).collect();
        m.sort();
        m.dedup();
        m
    };
    let work_managers = managers(env.cp.kubectl_ok(&[
        "get",
        "work",
        "-n",
        "karmada-es-member1",
        work.trim(),
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]));
    assert_eq!(work_managers, ["karmada-controller-manager"]);
    let member_managers = managers(env.member("member1").kubectl_ok(&[
        "get",
        "deploy",
        "nginx",
        "-n",
        "default",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ]));
    assert_eq!(
        member_managers,
        ["karmada-controller-manager", "karmada-rs-simulator"]
    );
}

#[test]
fn samples_embedded() {
    let env = Env::start(3);
    samples_propagate_as_their_comments_say(&env);
}

#[test]
fn samples_etcd() {
    let env = Env::start_with(Backend::Etcd, 3);
    samples_propagate_as_their_comments_say(&env);
}

#[test]
fn divided_three_to_one_with_override_on_one_cluster() {
    let env = Env::start(2);
    env.apply_sample("nginx-deployment.yaml");
    env.apply_sample("overridepolicy.yaml");
    env.apply_sample("propagationpolicy-divided.yaml");
    let d1 = env.wait_member_object("member1", &["deploy", "nginx", "-n", "default"]);
    let d2 = env.wait_member_object("member2", &["deploy", "nginx", "-n", "default"]);
    assert_eq!((replicas(&d1), replicas(&d2)), (3, 1));
    let c1 = &d1["spec"]["template"]["spec"]["containers"][0];
    let c2 = &d2["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c1["image"], "nginx:1.25", "member1 is not overridden");
    assert_eq!(c2["image"], "mirror.example.com/nginx:1.25");
    assert_eq!(c2["ports"][0]["containerPort"], 8080);
    assert_eq!(d2["metadata"]["labels"]["region"], "backup");
    assert!(d1["metadata"]["labels"].get("region").is_none());
    env.wait("template shows readyReplicas 4", || {
        let t = env.cp.get_json(&["deploy", "nginx"]);
        (t["status"]["readyReplicas"] == 4).then_some(())
    });
    let rb = env.cp.get_json(&["rb", "nginx-deployment"]);
    let clusters: Vec<(String, i64)> = rb["spec"]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_owned(),
                c["replicas"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(clusters, vec![("member1".into(), 3), ("member2".into(), 1)]);
}

#[test]
fn policy_after_template_label_change_and_policy_deletion() {
    let env = Env::start(2);
    env.apply(DEPLOY);
    // A policy created after the template picks it up.
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, labelSelector: {matchLabels: {tier: front}}}",
        ALL_MEMBERS,
    ));
    env.barrier("member1");
    assert!(
        env.member("member1")
            .get_json(&["deploy", "web", "-n", "default"])
            .is_none(),
        "the label does not match yet"
    );
    // A label change makes it match.
    env.cp.kubectl_ok(&["label", "deploy", "web", "tier=front"]);
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    env.wait_member_object("member2", &["deploy", "web", "-n", "default"]);
    // Deleting the policy leaves what is propagated but stops further changes.
    env.cp.kubectl_ok(&["delete", "pp", "web"]);
    env.wait("the template released", || {
        let t = env.cp.get_json(&["deploy", "web"]);
        t["metadata"]["labels"]
            .get("propagationpolicy.karmada.io/permanent-id")
            .is_none()
            .then_some(())
    });
    env.cp
        .kubectl_ok(&["scale", "deploy", "web", "--replicas=5"]);
    env.barrier("member1");
    let d = env
        .member("member1")
        .get_json(&["deploy", "web", "-n", "default"])
        .expect("still there");
    assert_eq!(
        replicas(&d),
        2,
        "changes after the policy is gone are not propagated"
    );
    assert!(
        env.cp.get_json(&["rb", "web-deployment"])["spec"].is_object(),
        "the binding stays"
    );
}

#[test]
fn deleted_or_drifted_member_object_comes_back_and_template_deletion_cleans_up() {
    let env = Env::start(2);
    env.apply(DEPLOY);
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        ALL_MEMBERS,
    ));
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    let m1 = env.member("member1");
    m1.kubectl_ok(&["delete", "deploy", "web", "-n", "default"]);
    env.wait("the deleted object recreated", || {
        m1.get_json(&["deploy", "web", "-n", "default"]).map(|_| ())
    });
    m1.kubectl_ok(&["scale", "deploy", "web", "-n", "default", "--replicas=7"]);
    env.wait("drift reverted", || {
        m1.get_json(&["deploy", "web", "-n", "default"])
            .filter(|d| replicas(d) == 2)
            .map(|_| ())
    });
    // A Work deleted behind the binding's back is written again, and applied again.
    let work_of = |ns: &str| {
        env.cp
            .kubectl_ok(&["get", "work", "-n", ns, "-o", "name"])
            .lines()
            .find(|l| l.contains("web-"))
            .map(str::to_owned)
    };
    let es2 = "karmada-es-member2";
    let work = work_of(es2).expect("a Work for member2");
    let uid = |w: &str| {
        let out = env
            .cp
            .kubectl(&["get", w, "-n", es2, "-o", "jsonpath={.metadata.uid}"]);
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
            .filter(|u| !u.is_empty())
    };
    let old_uid = uid(&work).expect("the Work's uid");
    // Without waiting: the binding controller writes the Work again as soon as it is gone,
    // and kubectl's wait for a deletion (a GET, then a list and watch by name) hangs on the
    // new Work when that happens between its GET and its list, against kube-apiserver as here.
    env.cp
        .kubectl_ok(&["delete", &work, "-n", es2, "--wait=false"]);
    env.wait("the deleted Work written again", || {
        uid(&work).filter(|u| *u != old_uid).map(|_| ())
    });
    env.wait_member_object("member2", &["deploy", "web", "-n", "default"]);
    // Deleting the template removes binding, Works and member objects.
    env.cp.kubectl_ok(&["delete", "deploy", "web"]);
    env.wait_member_absent("member1", &["deploy", "web", "-n", "default"]);
    env.wait_member_absent("member2", &["deploy", "web", "-n", "default"]);
    env.wait("binding and works gone", || {
        let rb = env.cp.kubectl(&["get", "rb", "web-deployment"]);
        let works = env.cp.kubectl_ok(&["get", "work", "-A", "--no-headers"]);
        (!rb.status.success() && !works.contains("web-")).then_some(())
    });
}

#[test]
fn preserve_resources_on_deletion_keeps_member_objects() {
    let env = Env::start(1);
    env.apply(DEPLOY);
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        "    clusterAffinity: {clusterNames: [member1]}\n  preserveResourcesOnDeletion: true",
    ));
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    env.cp.kubectl_ok(&["delete", "deploy", "web"]);
    env.wait("works gone", || {
        let works = env.cp.kubectl_ok(&["get", "work", "-A", "--no-headers"]);
        (!works.contains("web-")).then_some(())
    });
    let d = env
        .member("member1")
        .get_json(&["deploy", "web", "-n", "default"])
        .expect("preserved");
    assert!(
        d["metadata"]["labels"].get("karmada.io/managed").is_none(),
        "released from Karmada"
    );
}

#[test]
fn conflict_with_an_existing_member_object_is_reported_and_respected() {
    let env = Env::start(1);
    let m1 = env.member("member1");
    m1.kubectl_stdin_ok(&["apply", "-f", "-"], "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: default}\ndata: {owner: member}\n");
    env.apply("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: default}\ndata: {owner: karmada}\n");
    env.apply(&pp(
        "cfg",
        "    - {apiVersion: v1, kind: ConfigMap, name: cfg}",
        "    clusterAffinity: {clusterNames: [member1]}",
    ));
    env.wait("Applied False with the conflict", || {
        let w = env.cp.get_json(&["work", "-n", "karmada-es-member1"]);
        w["items"].as_array()?.iter().find_map(|w| {
            let c = w["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Applied")?;
            (c["status"] == "False" && c["message"].as_str()?.contains("already exists"))
                .then_some(())
        })
    });
    let cm = m1.get_json(&["configmap", "cfg", "-n", "default"]).unwrap();
    assert_eq!(
        cm["data"]["owner"], "member",
        "Abort leaves the member's object alone"
    );
    // Overwrite takes it over.
    env.apply(&pp(
        "cfg",
        "    - {apiVersion: v1, kind: ConfigMap, name: cfg}",
        "    clusterAffinity: {clusterNames: [member1]}\n  conflictResolution: Overwrite",
    ));
    env.wait("taken over", || {
        m1.get_json(&["configmap", "cfg", "-n", "default"])
            .filter(|c| {
                c["data"]["owner"] == "karmada"
                    && c["metadata"]["labels"]["karmada.io/managed"] == "true"
            })
            .map(|_| ())
    });
}

#[test]
fn suspended_dispatching_stops_applying_without_deleting() {
    let env = Env::start(1);
    env.apply(DEPLOY);
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        "    clusterAffinity: {clusterNames: [member1]}",
    ));
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        "    clusterAffinity: {clusterNames: [member1]}\n  suspension: {dispatching: true}",
    ));
    env.wait("Dispatching False", || {
        let w = env.cp.get_json(&["work", "-n", "karmada-es-member1"]);
        w["items"].as_array()?.iter().find_map(|w| {
            let c = w["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "Dispatching")?;
            (c["status"] == "False" && c["reason"] == "SuspendDispatching").then_some(())
        })
    });
    env.cp
        .kubectl_ok(&["scale", "deploy", "web", "--replicas=3"]);
    env.barrier("member1");
    let d = env
        .member("member1")
        .get_json(&["deploy", "web", "-n", "default"])
        .expect("not deleted");
    assert_eq!(replicas(&d), 2, "nothing is applied while suspended");
}

#[test]
fn namespaces_are_propagated_except_skipped_ones() {
    let env = Env::start(2);
    env.cp.kubectl_ok(&["create", "namespace", "shop"]);
    env.apply("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: quiet\n  labels: {namespace.karmada.io/skip-auto-propagation: \"true\"}\n");
    env.cp.kubectl_ok(&["create", "namespace", "kube-extra"]);
    env.wait_member_object("member1", &["namespace", "shop"]);
    env.wait_member_object("member2", &["namespace", "shop"]);
    // Namespaces are synced in order: once a later one arrives, the skipped ones were decided.
    env.cp.kubectl_ok(&["create", "namespace", "later"]);
    env.wait_member_object("member1", &["namespace", "later"]);
    for ns in ["quiet", "kube-extra"] {
        assert!(
            env.member("member1").get_json(&["namespace", ns]).is_none(),
            "{ns} is skipped"
        );
    }
}

#[test]
fn controller_manager_flags_are_checked_and_skip_the_namespaces_they_name() {
    for (flag, why) in [
        (
            "--feature-gates=WorkloadAffinity=true",
            "cannot set feature gate WorkloadAffinity to true, feature is locked to false",
        ),
        (
            "--feature-gates=NoSuchGate=true",
            "unrecognized feature gate: NoSuchGate",
        ),
        (
            "--skipped-propagating-namespaces=team-(a",
            "is not a valid regular expression",
        ),
        ("--concurrent-work-syncs=0", "must be at least 1"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
            .arg(dir.path())
            .arg(flag)
            .env("KARMADA_RS_LOG", "error")
            .output()
            .expect("run karmada-rs serve");
        assert!(!out.status.success(), "{flag} started");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{flag}: {err}");
    }

    // The flag replaces the default `kube-.*`.
    let env = Env::start_with_flags(
        Backend::Embedded,
        1,
        &[
            "--skipped-propagating-namespaces=team-.*,quiet",
            "--feature-gates=Failover=true,PriorityBasedScheduling=false",
            "--concurrent-namespace-syncs=1",
            "--concurrent-resourcebinding-syncs=1",
        ],
    );
    for ns in ["team-a", "quiet", "kube-extra", "quieter"] {
        env.cp.kubectl_ok(&["create", "namespace", ns]);
    }
    // One namespace worker syncs them in order: once the last arrives, the others were decided.
    env.wait_member_object("member1", &["namespace", "quieter"]);
    env.wait_member_object("member1", &["namespace", "kube-extra"]);
    for ns in ["team-a", "quiet"] {
        assert!(
            env.member("member1").get_json(&["namespace", ns]).is_none(),
            "{ns} is skipped"
        );
    }
    env.apply(&DEPLOY.replace("namespace: default", "namespace: team-a"));
    env.apply(&DEPLOY.replace("namespace: default", "namespace: quieter"));
    for ns in ["team-a", "quieter"] {
        env.apply(
            &pp(
                "web",
                "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
                "    clusterAffinity: {clusterNames: [member1]}",
            )
            .replace("namespace: default", &format!("namespace: {ns}")),
        );
    }
    env.wait_member_object("member1", &["deploy", "web", "-n", "quieter"]);
    let err = env
        .cp
        .kubectl_err(&["get", "rb", "web-deployment", "-n", "team-a"]);
    assert!(
        err.contains("NotFound"),
        "a template in a skipped namespace gets no binding: {err}"
    );
}

#[test]
fn empty_workload_propagation_keeps_a_workload_scaled_to_zero_on_its_clusters() {
    let env = Env::start_with_flags(
        Backend::Embedded,
        2,
        &["--enable-empty-workload-propagation"],
    );
    // Requests make it a workload to the scheduler at 0 replicas too (ResourceBindingSpec.IsWorkload).
    env.apply(&DEPLOY.replace(
        "image: nginx:1.25}",
        "image: nginx:1.25, resources: {requests: {cpu: 10m}}}",
    ));
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        "    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference:
        staticWeightList:
        - {targetCluster: {clusterNames: [member1]}, weight: 1}
        - {targetCluster: {clusterNames: [member2]}, weight: 1}",
    ));
    for m in ["member1", "member2"] {
        let d = env.wait_member_object(m, &["deploy", "web", "-n", "default"]);
        assert_eq!(replicas(&d), 1, "{m}");
    }
    env.cp
        .kubectl_ok(&["scale", "deploy", "web", "--replicas=0"]);
    for m in ["member1", "member2"] {
        env.wait(&format!("{m}'s copy scaled to 0"), || {
            let d = env
                .member(m)
                .get_json(&["deploy", "web", "-n", "default"])?;
            (replicas(&d) == 0).then_some(())
        });
    }
    let rb = env.cp.get_json(&["rb", "web-deployment"]);
    let names: Vec<&str> = rb["spec"]["clusters"]
        .as_array()
        .expect("spec.clusters")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["member1", "member2"], "{rb}");
}

#[test]
fn member_restart_loses_and_duplicates_nothing() {
    let mut env = Env::start(2);
    env.apply(DEPLOY);
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        ALL_MEMBERS,
    ));
    let before = env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    env.members[0].stop();
    env.wait_ready("member1", "False");
    env.members[0].restart();
    env.wait_ready("member1", "True");
    let after = env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    assert_eq!(
        before["metadata"]["uid"], after["metadata"]["uid"],
        "not recreated"
    );
    // Works re-apply: a change made while the member was away arrives.
    env.cp
        .kubectl_ok(&["scale", "deploy", "web", "--replicas=3"]);
    env.wait("the change reaches the restarted member", || {
        env.member("member1")
            .get_json(&["deploy", "web", "-n", "default"])
            .filter(|d| replicas(d) == 3)
            .map(|_| ())
    });
    let list =
        env.member("member1")
            .kubectl_ok(&["get", "deploy", "-n", "default", "--no-headers"]);
    assert_eq!(list.lines().filter(|l| l.starts_with("web ")).count(), 1);
}

#[test]
fn unjoin_removes_everything() {
    let env = Env::start(2);
    env.apply(DEPLOY);
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        ALL_MEMBERS,
    ));
    env.wait_member_object("member2", &["deploy", "web", "-n", "default"]);
    env.unjoin(env.member("member2"));
    env.wait_member_absent("member2", &["deploy", "web", "-n", "default"]);
    env.wait("member2's works and cluster gone", || {
        let works = env.cp.kubectl_ok(&["get", "work", "-A", "--no-headers"]);
        let cl = env.cp.kubectl(&["get", "cluster", "member2"]);
        (!works.contains("karmada-es-member2") && !cl.status.success()).then_some(())
    });
    let d = env
        .member("member1")
        .get_json(&["deploy", "web", "-n", "default"]);
    assert!(d.is_some(), "member1 keeps its copy");
}

#[test]
fn propagate_deps_sends_dependencies_along() {
    let env = Env::start(2);
    env.apply("apiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: default}\nstringData: {k: v}\n");
    env.apply(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: runner, namespace: default}\n",
    );
    env.apply(
        "apiVersion: apps/v1
kind: Deployment
metadata: {name: deps, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: deps}}
  template:
    metadata: {labels: {app: deps}}
    spec:
      serviceAccountName: runner
      containers: [{name: c, image: busybox, envFrom: [{secretRef: {name: creds}}]}]
",
    );
    env.apply(&pp(
        "deps",
        "    - {apiVersion: apps/v1, kind: Deployment, name: deps}",
        "    clusterAffinity: {clusterNames: [member2]}\n  propagateDeps: true",
    ));
    env.wait_member_object("member2", &["secret", "creds", "-n", "default"]);
    env.wait_member_object("member2", &["serviceaccount", "runner", "-n", "default"]);
    let rb = env.cp.get_json(&["rb", "creds-secret"]);
    assert_eq!(rb["spec"]["requiredBy"][0]["name"], "deps-deployment");
    // The attached binding follows its parent to member2 only (Karmada leaves its own
    // spec.clusters empty: its targets are those of requiredBy).
    let targets: Vec<&str> = rb["spec"]["requiredBy"][0]["clusters"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(targets, vec!["member2"], "{rb}");
    env.barrier("member1");
    assert!(
        env.member("member1")
            .get_json(&["secret", "creds", "-n", "default"])
            .is_none()
    );
}

#[test]
fn controllers_report_karmada_and_workqueue_metrics() {
    let env = Env::start(2);
    env.apply_sample("nginx-deployment.yaml");
    env.apply_sample("propagationpolicy-divided.yaml");
    env.wait_member_object("member1", &["deploy", "nginx", "-n", "default"]);
    env.wait_member_object("member2", &["deploy", "nginx", "-n", "default"]);
    let at_least_one = [
        r#"karmada_scheduler_schedule_attempts_total{result="scheduled",schedule_type="ReconcileSchedule"}"#,
        r#"karmada_scheduler_e2e_scheduling_duration_seconds_count{result="scheduled",schedule_type="ReconcileSchedule"}"#,
        r#"karmada_scheduler_scheduling_algorithm_duration_seconds_count{schedule_step="Filter"}"#,
        r#"karmada_scheduler_scheduling_algorithm_duration_seconds_count{schedule_step="AssignReplicas"}"#,
        r#"karmada_scheduler_queue_incoming_bindings_total{event="BindingAdd"}"#,
        r#"policy_apply_attempts_total{result="success"}"#,
        r#"resource_apply_policy_duration_seconds_count{result="success"}"#,
        "resource_match_policy_duration_seconds_count",
        r#"binding_sync_work_duration_seconds_count{result="success"}"#,
        r#"work_sync_workload_duration_seconds_count{result="success"}"#,
        r#"workqueue_adds_total{name="scheduler"}"#,
        r#"workqueue_adds_total{name="execution"}"#,
        r#"workqueue_work_duration_seconds_count{name="binding"}"#,
        r#"workqueue_queue_duration_seconds_count{name="resource-detector"}"#,
        // controller-runtime's series, under the names of Karmada's controllers.
        r#"controller_runtime_reconcile_total{controller="binding-controller",result="success"}"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="binding-controller"}"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="execution-controller"}"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="resource-binding-status-controller"}"#,
        r#"controller_runtime_reconcile_time_seconds_count{controller="work-status-controller"}"#,
        r#"cluster_ready_state{member_cluster="member1"}"#,
        r#"cluster_ready_state{member_cluster="member2"}"#,
        r#"cluster_node_number{member_cluster="member1"}"#,
        r#"cluster_sync_status_duration_seconds_count{member_cluster="member2"}"#,
        // kube-apiserver's storage series, by operation and group-resource.
        r#"etcd_requests_total{operation="create",type="deployments.apps"}"#,
        r#"etcd_requests_total{operation="update",type="works.work.karmada.io"}"#,
        r#"etcd_request_duration_seconds_count{operation="create",type="resourcebindings.work.karmada.io"}"#,
    ];
    let text = env.wait("every controller series recorded", || {
        let text = env.cp.kubectl_ok(&["get", "--raw", "/metrics"]);
        at_least_one
            .iter()
            .all(|s| metric(&text, s).is_some_and(|v| v >= 1.0))
            .then_some(text)
    });
    assert_eq!(
        metric(&text, r#"cluster_ready_state{member_cluster="member1"}"#),
        Some(1.0)
    );
    assert!(
        text.contains("# HELP workqueue_depth [BETA] Current depth of workqueue\n# TYPE workqueue_depth gauge\n"),
        "client-go's help and type lines"
    );
    assert!(
        text.contains(r#"karmada_scheduler_e2e_scheduling_duration_seconds_bucket{result="scheduled",schedule_type="ReconcileSchedule",le="0.001"} "#),
        "Karmada's buckets"
    );
    assert_eq!(
        metric(
            &text,
            r#"controller_runtime_reconcile_errors_total{controller="cluster-resource-binding-controller"}"#
        ),
        Some(0.0),
        "a controller's series start at zero, before its first reconcile"
    );
    assert!(
        text.contains(r#"controller_runtime_reconcile_time_seconds_bucket{controller="binding-controller",le="0.005"} "#),
        "controller-runtime's buckets"
    );
    // The API server's own series are still there.
    assert!(
        metric(
            &text,
            "apiserver_current_inflight_requests{request_kind=\"readOnly\"}"
        )
        .is_some()
    );
    // Writes to the members, counted as Karmada's execution controller counts them.
    assert!(
        metric(
            &text,
            r#"create_resource_to_cluster{result="success",apiversion="apps/v1",kind="Deployment",member_cluster="member1",recreate="false"}"#
        )
        .is_some_and(|v| v >= 1.0),
        "the creates in member1 are counted"
    );
    env.cp
        .kubectl_ok(&["scale", "deploy", "nginx", "-n", "default", "--replicas=6"]);
    let deleted = std::cell::Cell::new(false);
    env.wait("the update and the delete counted", || {
        let text = env.cp.kubectl_ok(&["get", "--raw", "/metrics"]);
        let updated = metric(
            &text,
            r#"update_resource_to_cluster{result="success",apiversion="apps/v1",kind="Deployment",member_cluster="member2",operationResult="updated"}"#,
        )
        .is_some_and(|v| v >= 1.0);
        // Deleted once the update is seen, so that both are counted.
        if updated && !deleted.replace(true) {
            env.cp.kubectl_ok(&["delete", "deploy", "nginx", "-n", "default", "--wait=false"]);
        }
        metric(
            &text,
            r#"delete_resource_from_cluster{result="success",apiversion="apps/v1",kind="Deployment",member_cluster="member1"}"#,
        )
        .is_some_and(|v| v >= 1.0)
        .then_some(())
    });
}

/// A chart's worth of kinds applied with stock kubectl (IngressClass, RuntimeClass, the CSI
/// objects, a CRD and its custom resource, a ServiceAccount with its Role and RoleBinding, a
/// Secret, ConfigMap, Deployment with its HPA and PodDisruptionBudget, NetworkPolicy, Service,
/// EndpointSlice, Ingress, PodTemplate and ReplicationController) all reach both members
/// through one ClusterPropagationPolicy, as Karmada propagates any kind it serves.
#[test]
fn a_chart_bundle_of_every_kind_propagates() {
    let env = Env::start(2);
    env.apply_sample("chart-bundle.yaml");
    // Helm installs a chart's CRDs before its resources; the custom resource follows once
    // the CRD is served.
    env.wait("the Cart CRD to be established", || {
        let out = env.cp.kubectl(&[
            "get",
            "crd",
            "carts.shop.example.com",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"Established\")].status}",
        ]);
        (String::from_utf8_lossy(&out.stdout).trim() == "True").then_some(())
    });
    env.apply(
        "apiVersion: shop.example.com/v1
kind: Cart
metadata: {name: default-cart, namespace: default, labels: {app.kubernetes.io/part-of: shop}}
spec: {currency: EUR, maxItems: 50}
",
    );
    let objects: &[&[&str]] = &[
        &["ingressclass", "shop-nginx"],
        &["runtimeclass", "shop-gvisor"],
        &["csidriver", "shop.csi.example.com"],
        &["csinode", "shop-node-1"],
        &["volumeattachment", "shop-data-attachment"],
        &["crd", "carts.shop.example.com"],
        &[
            "csistoragecapacity",
            "shop-capacity-zone-a",
            "-n",
            "default",
        ],
        &["serviceaccount", "shop-web", "-n", "default"],
        &["secret", "shop-credentials", "-n", "default"],
        &["role", "shop-web", "-n", "default"],
        &["rolebinding", "shop-web", "-n", "default"],
        &["configmap", "shop-config", "-n", "default"],
        &["deployment", "shop-web", "-n", "default"],
        &["hpa", "shop-web", "-n", "default"],
        &["pdb", "shop-web", "-n", "default"],
        &["networkpolicy", "shop-web", "-n", "default"],
        &["service", "shop-web", "-n", "default"],
        &["endpointslice", "shop-web-external", "-n", "default"],
        &["ingress", "shop-web", "-n", "default"],
        &["podtemplate", "shop-worker-template", "-n", "default"],
        &["rc", "shop-legacy", "-n", "default"],
        &["cart", "default-cart", "-n", "default"],
    ];
    for m in ["member1", "member2"] {
        for args in objects {
            let obj = env.wait_member_object(m, args);
            assert_eq!(
                obj["metadata"]["labels"]["karmada.io/managed"], "true",
                "{m} {args:?}: {obj}"
            );
        }
        // What the members hold is the template, defaulted there as kube defaults it.
        let rc = env.wait_member_object(m, &["rc", "shop-legacy", "-n", "default"]);
        assert_eq!(rc["spec"]["replicas"], 1, "{rc}");
        let driver = env.wait_member_object(m, &["csidriver", "shop.csi.example.com"]);
        assert_eq!(driver["spec"]["attachRequired"], false, "{driver}");
        assert_eq!(
            driver["spec"]["volumeLifecycleModes"],
            serde_json::json!(["Persistent", "Ephemeral"])
        );
        let slice =
            env.wait_member_object(m, &["endpointslice", "shop-web-external", "-n", "default"]);
        assert_eq!(slice["endpoints"][0]["addresses"][0], "10.1.2.3", "{slice}");
        let cart = env.wait_member_object(m, &["cart", "default-cart", "-n", "default"]);
        assert_eq!(cart["spec"]["maxItems"], 50, "{cart}");
        let secret = env.wait_member_object(m, &["secret", "shop-credentials", "-n", "default"]);
        assert_eq!(
            secret["data"]["PAYMENT_API_KEY"], "bm90LWEtcmVhbC1rZXk=",
            "{secret}"
        );
        let hpa = env.wait_member_object(m, &["hpa", "shop-web", "-n", "default"]);
        assert_eq!(hpa["spec"]["maxReplicas"], 5, "{hpa}");
    }
    // Every template has its binding, scheduled to both members.
    for rb in [
        "shop-legacy-replicationcontroller",
        "shop-worker-template-podtemplate",
        "shop-web-external-endpointslice",
        "shop-capacity-zone-a-csistoragecapacity",
    ] {
        let b = env.cp.get_json(&["rb", rb, "-n", "default"]);
        let clusters: Vec<&str> = b["spec"]["clusters"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(clusters, ["member1", "member2"], "{b}");
    }
    for crb in [
        "shop-nginx-ingressclass",
        "shop-gvisor-runtimeclass",
        "shop.csi.example.com-csidriver",
        "shop-node-1-csinode",
        "shop-data-attachment-volumeattachment",
    ] {
        env.cp.get_json(&["crb", crb]);
    }
}

#[test]
fn a_lazy_policy_change_waits_for_the_next_template_change() {
    let env = Env::start(2);
    let lazy = |cluster: &str| {
        pp(
            "web",
            "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
            &format!(
                "    clusterAffinity: {{clusterNames: [{cluster}]}}\n  activationPreference: Lazy"
            ),
        )
    };
    // A template created under a Lazy policy is propagated at once: its creation is its own
    // change.
    env.apply(&lazy("member1"));
    env.apply(DEPLOY);
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    env.barrier("member1");
    let applied = || {
        let text = env.cp.kubectl_ok(&["get", "--raw", "/metrics"]);
        metric(&text, r#"policy_apply_attempts_total{result="success"}"#).unwrap_or(0.0)
    };
    let before = applied();

    // The policy now names member2: the detector goes over the template again, and leaves
    // its binding as it was.
    env.apply(&lazy("member2"));
    env.wait("the policy change gone over", || {
        (applied() > before).then_some(())
    });
    let clusters = |rb: &Value| rb["spec"]["clusters"].clone();
    let rb = env.cp.get_json(&["rb", "web-deployment"]);
    assert_eq!(
        clusters(&rb),
        serde_json::json!([{"name": "member1", "replicas": 2}])
    );
    assert_eq!(
        rb["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        serde_json::json!(["member1"])
    );

    // A change to the template brings the new placement along.
    env.cp.kubectl_ok(&["label", "deploy", "web", "tier=front"]);
    env.wait_member_object("member2", &["deploy", "web", "-n", "default"]);
    env.wait_member_absent("member1", &["deploy", "web", "-n", "default"]);
}

#[test]
fn bindings_carry_their_policy_priority_class_value() {
    let env = Env::start(1);
    let policy = |class: &str| {
        pp(
            "web",
            "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
            &format!(
                "    clusterAffinity: {{clusterNames: [member1]}}\n  schedulePriority: {{priorityClassSource: KubePriorityClass, priorityClassName: {class}}}"
            ),
        )
    };
    env.apply(
        "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
",
    );
    env.apply(&policy("high"));
    env.apply(DEPLOY);
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    let rb = env.cp.get_json(&["rb", "web-deployment"]);
    assert_eq!(
        rb["spec"]["schedulePriority"],
        serde_json::json!({"priority": 1000})
    );

    // A class that does not exist fails the policy's application, with the reason.
    env.apply(&policy("missing"));
    env.cp.kubectl_ok(&["label", "deploy", "web", "tier=front"]);
    env.wait("the failure reported", || {
        env.cp
            .kubectl_ok(&[
                "get",
                "events",
                "--field-selector",
                "reason=ApplyPolicyFailed,involvedObject.name=web",
                "-o",
                "jsonpath={.items[*].message}",
            ])
            .contains(r#"Apply policy(default/web) failed: priorityclasses.scheduling.k8s.io "missing" not found"#)
            .then_some(())
    });
}

#[test]
fn priority_based_scheduling_can_be_switched_off() {
    let env = Env::start_with_flags(
        support::Backend::Embedded,
        1,
        &["--feature-gates=PriorityBasedScheduling=false"],
    );
    env.apply(&pp(
        "web",
        "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
        "    clusterAffinity: {clusterNames: [member1]}\n  schedulePriority: {priorityClassSource: KubePriorityClass, priorityClassName: missing}",
    ));
    env.apply(DEPLOY);
    // The priority is not looked up, so the missing class fails nothing.
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
    let rb = env.cp.get_json(&["rb", "web-deployment"]);
    assert!(rb["spec"]["schedulePriority"].is_null(), "{rb}");
}

#[test]
fn a_preempting_policy_takes_a_template_over_from_a_lower_priority_one() {
    let env = Env::start_with_flags(
        Backend::Embedded,
        2,
        &["--feature-gates=PropagationPolicyPreemption=true"],
    );
    let policy = |name: &str, cluster: &str, priority: i32, preemption: &str| {
        pp(
            name,
            "    - {apiVersion: apps/v1, kind: Deployment, name: web}",
            &format!(
                "    clusterAffinity: {{clusterNames: [{cluster}]}}\n  priority: {priority}\n  preemption: {preemption}"
            ),
        )
    };
    env.apply(&policy("low", "member1", 1, "Never"));
    env.apply(DEPLOY);
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);

    // A higher-priority policy with `preemption: Always` takes the template over, and the
    // placement follows.
    env.apply(&policy("high", "member2", 5, "Always"));
    env.wait_member_object("member2", &["deploy", "web", "-n", "default"]);
    env.wait_member_absent("member1", &["deploy", "web", "-n", "default"]);
    let t = env.cp.get_json(&["deploy", "web"]);
    assert_eq!(
        t["metadata"]["annotations"]["propagationpolicy.karmada.io/name"],
        "high"
    );
    env.wait("the preemption Event", || {
        env.cp
            .kubectl_ok(&[
                "get",
                "events",
                "--field-selector",
                "reason=PreemptPolicySucceed",
                "-o",
                "jsonpath={.items[*].message}",
            ])
            .contains("Propagation policy(default/high) preempted propagation policy(default/low) successfully")
            .then_some(())
    });

    // A lower-priority preempting policy cannot take it back.
    env.apply(&policy("lower", "member1", 3, "Always"));
    env.barrier("member1");
    let t = env.cp.get_json(&["deploy", "web"]);
    assert_eq!(
        t["metadata"]["annotations"]["propagationpolicy.karmada.io/name"],
        "high"
    );
    // Once `high` drops below it, it does.
    env.apply(&policy("high", "member2", 2, "Always"));
    env.wait("the template claimed by `lower`", || {
        let t = env.cp.get_json(&["deploy", "web"]);
        (t["metadata"]["annotations"]["propagationpolicy.karmada.io/name"] == "lower").then_some(())
    });
    env.wait_member_object("member1", &["deploy", "web", "-n", "default"]);
}
