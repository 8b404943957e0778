//! End to end: karmadactl's commands as `karmada-rs` runs them — `get` across the fleet,
//! `api-resources`, `api-versions`, `completion`, the kubectl plugin name, `cordon` and
//! `uncordon` (the `cluster.karmada.io/unschedulable:NoSchedule` taint, which keeps new
//! workloads off the cluster) and `taint clusters NAME KEY[=VALUE]:EFFECT[-]`, with
//! karmadactl's output and refusals.

mod propagation_env;
mod support;

use std::process::{Command, Output};

use propagation_env::{Env, deployment_with_policy};
use serde_json::Value;

fn karmada_rs(env: &Env, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
        .args(args)
        .arg("--kubeconfig")
        .arg(&env.cp.kubeconfig)
        .output()
        .expect("run karmada-rs")
}

fn ok(env: &Env, args: &[&str]) -> String {
    let out = karmada_rs(env, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn refused(env: &Env, args: &[&str]) -> String {
    let out = karmada_rs(env, args);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The (key, value, effect) of a Cluster's taints.
fn taints(env: &Env, cluster: &str) -> Vec<(String, String, String)> {
    let c: Value = env.cp.get_json(&["cluster", cluster]);
    c["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|t| {
            let s = |k: &str| t[k].as_str().unwrap_or("").to_string();
            (s("key"), s("value"), s("effect"))
        })
        .collect()
}

fn taint(key: &str, value: &str, effect: &str) -> (String, String, String) {
    (key.into(), value.into(), effect.into())
}

#[test]
fn cordon_keeps_new_workloads_off_a_cluster_and_taint_edits_its_taints() {
    let env = Env::start(2);
    assert_eq!(
        ok(&env, &["cordon", "member1"]),
        "member1 cluster cordoned\n"
    );
    assert_eq!(
        ok(&env, &["cordon", "member1"]),
        "member1 cluster already cordoned\n"
    );
    assert!(
        taints(&env, "member1").contains(&taint(
            "cluster.karmada.io/unschedulable",
            "",
            "NoSchedule"
        )),
        "{:?}",
        taints(&env, "member1")
    );

    // A Deployment placed on both members goes to the schedulable one only.
    env.apply(&deployment_with_policy("web", 2, &["member1", "member2"]));
    env.wait_member_object("member2", &["deployment", "web", "-n", "default"]);
    env.barrier("member2");
    assert!(
        env.member("member1")
            .get_json(&["deployment", "web", "-n", "default"])
            .is_none(),
        "the cordoned member got the Deployment"
    );

    assert_eq!(
        ok(&env, &["uncordon", "member1", "--dry-run"]),
        "member1 cluster uncordoned\n"
    );
    assert_eq!(
        taints(&env, "member1").len(),
        1,
        "a dry run changes nothing"
    );
    assert_eq!(
        ok(&env, &["uncordon", "member1"]),
        "member1 cluster uncordoned\n"
    );
    assert_eq!(
        ok(&env, &["uncordon", "member1"]),
        "member1 cluster already uncordoned\n"
    );
    assert!(taints(&env, "member1").is_empty());

    assert_eq!(
        ok(
            &env,
            &["taint", "clusters", "member2", "dedicated=ops:NoSchedule"]
        ),
        "cluster/member2 tainted\n"
    );
    assert_eq!(
        taints(&env, "member2"),
        [taint("dedicated", "ops", "NoSchedule")]
    );
    let err = refused(
        &env,
        &["taint", "clusters", "member2", "dedicated=dev:NoSchedule"],
    );
    assert!(
        err.contains(
            "cluster member2 already has dedicated taint(s) with same effect(s) and --overwrite is false"
        ),
        "{err}"
    );
    assert_eq!(
        ok(
            &env,
            &[
                "taint",
                "cluster",
                "member2",
                "dedicated=dev:NoSchedule",
                "--overwrite"
            ]
        ),
        "cluster/member2 modified\n"
    );
    assert_eq!(
        taints(&env, "member2"),
        [taint("dedicated", "dev", "NoSchedule")]
    );
    assert_eq!(
        ok(&env, &["taint", "clusters", "member2", "dedicated-"]),
        "cluster/member2 untainted\n"
    );
    assert!(taints(&env, "member2").is_empty());
    let err = refused(&env, &["taint", "clusters", "member2", "dedicated-"]);
    assert!(err.contains("taint \"dedicated\" not found"), "{err}");
    let err = refused(&env, &["taint", "nodes", "n1", "a:NoSchedule"]);
    assert!(
        err.contains("invalid resource type nodes, only [\"cluster\" \"clusters\"] are supported"),
        "{err}"
    );
    let err = refused(&env, &["cordon", "member9"]);
    assert!(err.contains("member9"), "{err}");
    assert!(err.contains("not found"), "{err}");
}

/// The whitespace-separated cells of each line (the tables here have no spaces in cells).
fn cells(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| l.split_whitespace().map(str::to_owned).collect())
        .collect()
}

/// Runs the binary with the control plane's kubeconfig in `KUBECONFIG`, as a person does.
fn run_with_kubeconfig(env: &Env, program: &std::path::Path, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .env("KUBECONFIG", &env.cp.kubeconfig)
        .output()
        .expect("run")
}

#[test]
fn get_lists_the_fleet_with_karmadactls_columns_and_formats() {
    let env = Env::start(2);
    env.apply(&deployment_with_policy("web", 2, &["member1", "member2"]));
    env.wait_member_object("member1", &["deployment", "web", "-n", "default"]);
    env.wait_member_object("member2", &["deployment", "web", "-n", "default"]);
    env.member("member1")
        .kubectl_ok(&["create", "configmap", "local", "-n", "default"]);

    // The template and both members' copies: CLUSTER after the name, ADOPTION last.
    let all = cells(&ok(&env, &["get", "deploy", "--operation-scope", "all"]));
    assert_eq!(
        all[0],
        [
            "NAME",
            "CLUSTER",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "AGE",
            "ADOPTION"
        ]
    );
    let rows: Vec<(&str, &str, &str)> = all[1..]
        .iter()
        .map(|r| (r[0].as_str(), r[1].as_str(), r[6].as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("web", "Karmada", "-"),
            ("web", "member1", "Y"),
            ("web", "member2", "Y")
        ]
    );
    // The control plane alone by default; a member's own object is not adopted.
    let karmada = cells(&ok(&env, &["get", "deploy"]));
    assert_eq!(karmada.len(), 2, "{karmada:?}");
    let local = cells(&ok(
        &env,
        &["get", "cm", "local", "-s", "members", "-C", "member1"],
    ));
    assert_eq!(
        local[1],
        ["local", "member1", "0", local[1][3].as_str(), "N"]
    );

    // -A adds the namespace; -o wide the wide columns; kinds are named when mixed.
    let wide = cells(&ok(
        &env,
        &[
            "get",
            "deploy,cm",
            "-A",
            "-s",
            "members",
            "-C",
            "member1",
            "-o",
            "wide",
        ],
    ));
    assert_eq!(
        wide[0][..3],
        ["NAMESPACE".to_owned(), "NAME".into(), "CLUSTER".into()]
    );
    // One table per kind, sorted as karmadactl sorts them, a blank line between.
    assert!(wide[2].is_empty(), "{wide:?}");
    assert!(wide[3].contains(&"IMAGES".to_owned()), "{wide:?}");
    assert!(
        wide.iter()
            .any(|r| r.len() > 2 && r[1] == "deployment.apps/web" && r[2] == "member1"),
        "{wide:?}"
    );
    assert!(
        wide.iter()
            .any(|r| r.len() > 2 && r[1] == "configmap/local" && r[0] == "default"),
        "{wide:?}"
    );

    // Object formats print each cluster's objects: one object when one was named.
    assert_eq!(
        ok(&env, &["get", "deploy", "web", "-s", "all", "-o", "name"]),
        "deployment.apps/web\n".repeat(3)
    );
    let json = ok(
        &env,
        &[
            "get",
            "deploy/web",
            "-s",
            "members",
            "-C",
            "member1",
            "-o",
            "json",
        ],
    );
    let object: Value = serde_json::from_str(&json).expect("one JSON object");
    assert_eq!(object["metadata"]["labels"]["karmada.io/managed"], "true");
    let list: Value = serde_yaml::from_str(&ok(
        &env,
        &[
            "get", "deploy", "-s", "members", "-C", "member2", "-o", "yaml",
        ],
    ))
    .expect("yaml");
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["kind"], "Deployment");
    assert_eq!(
        ok(
            &env,
            &[
                "get",
                "deploy",
                "-s",
                "all",
                "-o",
                r#"jsonpath={range .items[*]}{.metadata.name}={.spec.replicas}{"\n"}{end}"#
            ]
        ),
        // Duplicated: every member runs the template's replicas.
        "web=2\nweb=2\nweb=2\n"
    );

    // Refusals name the cluster, as karmadactl's do.
    let err = refused(&env, &["get", "deploy", "nope", "-s", "members"]);
    assert_eq!(
        err,
        "error: [cluster(member1): deployments.apps \"nope\" not found, cluster(member2): deployments.apps \"nope\" not found]\n"
    );
    assert_eq!(
        ok(
            &env,
            &["get", "deploy", "nope", "-s", "all", "--ignore-not-found"]
        ),
        ""
    );
    assert_eq!(
        refused(&env, &["get", "deploy", "-s", "members", "-C", "member9"]),
        "error: clusters don't exist: member9\n"
    );
    assert_eq!(
        refused(&env, &["get", "widgets"]),
        "error: cluster(Karmada): the server doesn't have a resource type \"widgets\"\n"
    );
    let out = karmada_rs(&env, &["get", "deploy", "-n", "empty"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "No resources found in empty namespace.\n"
    );

    // Run as `kubectl karmada`: the binary on PATH as kubectl-karmada.
    let plugin_dir = tempfile::tempdir().expect("temp dir");
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_karmada-rs"),
        plugin_dir.path().join("kubectl-karmada"),
    )
    .expect("symlink");
    let path = format!(
        "{}:{}",
        plugin_dir.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let plugin = Command::new("kubectl")
        .args(["karmada", "get", "deploy", "-s", "all", "-o", "name"])
        .env("PATH", path)
        .env("KUBECONFIG", &env.cp.kubeconfig)
        .output()
        .expect("kubectl karmada");
    assert!(
        plugin.status.success(),
        "{}",
        String::from_utf8_lossy(&plugin.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&plugin.stdout),
        "deployment.apps/web\n".repeat(3)
    );
    let completion = run_with_kubeconfig(
        &env,
        &plugin_dir.path().join("kubectl-karmada"),
        &["completion", "bash"],
    );
    let script = String::from_utf8_lossy(&completion.stdout);
    assert!(
        script.contains("-o default kubectl-karmada"),
        "completes the plugin name: {script}"
    );
    assert!(script.contains("api-resources"), "{script}");
}

#[test]
fn api_resources_and_versions_answer_as_kubectl_for_the_control_plane_and_a_member() {
    let env = Env::start(1);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_karmada-rs"));
    let same = |ours: &[&str], kubectl: &[&str], kubeconfig: &std::path::Path| {
        let mine = run_with_kubeconfig(&env, bin, ours);
        assert!(
            mine.status.success(),
            "{ours:?}: {}",
            String::from_utf8_lossy(&mine.stderr)
        );
        let theirs = Command::new("kubectl")
            .args(kubectl)
            .env("KUBECONFIG", kubeconfig)
            .output()
            .expect("kubectl");
        assert_eq!(
            String::from_utf8_lossy(&mine.stdout),
            String::from_utf8_lossy(&theirs.stdout),
            "{ours:?} against kubectl {kubectl:?}"
        );
    };
    let cp = env.cp.kubeconfig.clone();
    same(&["api-resources"], &["api-resources"], &cp);
    same(
        &["api-resources", "-o", "wide"],
        &["api-resources", "-o", "wide"],
        &cp,
    );
    same(
        &["api-resources", "--namespaced=false", "--sort-by=kind"],
        &["api-resources", "--namespaced=false", "--sort-by=kind"],
        &cp,
    );
    same(
        &[
            "api-resources",
            "--api-group",
            "policy.karmada.io",
            "-o",
            "name",
        ],
        &[
            "api-resources",
            "--api-group",
            "policy.karmada.io",
            "-o",
            "name",
        ],
        &cp,
    );
    same(&["api-versions"], &["api-versions"], &cp);
    let member = env.member("member1").kubeconfig.clone();
    same(
        &["api-resources", "-s", "members", "--cluster", "member1"],
        &["api-resources"],
        &member,
    );
    same(
        &[
            "api-versions",
            "--operation-scope",
            "members",
            "--cluster",
            "member1",
        ],
        &["api-versions"],
        &member,
    );
    assert_eq!(
        refused(&env, &["api-resources", "-s", "members"]),
        "error: must specify a member cluster\n"
    );
    assert_eq!(
        refused(&env, &["api-resources", "-o", "json"]),
        "error: --output json is not available\n"
    );
    assert_eq!(
        refused(&env, &["api-versions", "-s", "all"]),
        "error: not support operation scope: all\n"
    );
}

#[test]
fn promote_adopts_a_members_object_and_its_dependencies_without_recreating_them() {
    let env = Env::start(2);
    let member = env.member("member1");
    member.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: v1
kind: ConfigMap
metadata: {name: legacy-config, namespace: default}
data: {a: '1'}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: legacy, namespace: default}
spec:
  replicas: 1
  selector: {matchLabels: {app: legacy}}
  template:
    metadata: {labels: {app: legacy}}
    spec:
      containers:
      - {name: c, image: nginx, envFrom: [{configMapRef: {name: legacy-config}}]}
",
    );
    let uid = |m: &propagation_env::Member| {
        m.get_json(&["deployment", "legacy", "-n", "default"])
            .map(|d| d["metadata"]["uid"].as_str().unwrap_or_default().to_owned())
    };
    let before = uid(member).expect("the member's Deployment");

    // -o prints the template and the policy without creating anything.
    let printed = ok(
        &env,
        &[
            "promote",
            "deployment",
            "legacy",
            "-C",
            "member1",
            "-o",
            "json",
        ],
    );
    let docs: Vec<Value> = serde_json::Deserializer::from_str(&printed)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .expect("two JSON objects");
    assert_eq!(docs.len(), 2, "{printed}");
    assert_eq!(
        docs[0]["metadata"]["annotations"]["work.karmada.io/conflict-resolution"],
        "overwrite"
    );
    assert!(docs[0]["status"].is_null() && docs[0]["metadata"]["uid"].is_null());
    assert_eq!(docs[1]["kind"], "PropagationPolicy");
    assert_eq!(docs[1]["spec"]["conflictResolution"], "Overwrite");
    assert_eq!(
        docs[1]["spec"]["placement"]["clusterAffinity"]["clusterNames"],
        serde_json::json!(["member1"])
    );
    assert!(
        !env.cp
            .kubectl(&["get", "deployment", "legacy"])
            .status
            .success(),
        "-o creates nothing"
    );

    let out = ok(
        &env,
        &[
            "promote",
            "deployment",
            "legacy",
            "-n",
            "default",
            "-C",
            "member1",
            "-d",
        ],
    );
    let policy = docs[1]["metadata"]["name"].as_str().expect("policy name");
    assert_eq!(
        out,
        format!(
            "Dependency resource \"v1, Resource=configmaps\"(default/legacy-config) is promoted successfully\n\
             ResourceTemplate (default/legacy) is created successfully\n\
             PropagationPolicy (default/{policy}) is created successfully\n\
             Resource \"apps/v1, Resource=deployments\"(default/legacy) is promoted successfully\n"
        )
    );
    // Karmada takes the member's object over: same object, now managed, and the template's
    // status comes from it; the dependency follows through propagateDeps.
    env.wait("the member's Deployment managed by Karmada", || {
        member
            .get_json(&["deployment", "legacy", "-n", "default"])
            .filter(|d| d["metadata"]["labels"]["karmada.io/managed"] == "true")
    });
    assert_eq!(uid(member).as_deref(), Some(before.as_str()));
    env.wait("the ConfigMap managed by Karmada", || {
        member
            .get_json(&["configmap", "legacy-config", "-n", "default"])
            .filter(|c| c["metadata"]["labels"]["karmada.io/managed"] == "true")
    });
    assert!(
        env.member("member2")
            .get_json(&["deployment", "legacy", "-n", "default"])
            .is_none(),
        "only the cluster it came from runs it"
    );

    // Again: the control plane has it already.
    let again = karmada_rs(&env, &["promote", "deployment", "legacy", "-C", "member1"]);
    assert!(again.status.success());
    assert_eq!(
        String::from_utf8_lossy(&again.stderr),
        "Resource \"apps/v1, Resource=deployments\"(default/legacy) already exist in karmada control plane, you can edit PropagationPolicy and OverridePolicy to propagate it\n"
    );
    assert_eq!(
        refused(&env, &["promote", "deployment", "nope", "-C", "member1"]),
        "error: failed to get resource in cluster(member1). err: the deployment or nope don't exist in cluster(member1)\n"
    );
    assert_eq!(
        refused(&env, &["promote", "deployment", "legacy"]),
        "error: the cluster cannot be empty\n"
    );
    assert_eq!(
        refused(
            &env,
            &[
                "promote",
                "deployment",
                "legacy",
                "-C",
                "member1",
                "-o",
                "wide"
            ]
        ),
        "error: invalid output format: supported formats are json and yaml\n"
    );
}

#[test]
fn apply_all_clusters_propagates_with_a_generated_policy_and_applies_as_kubectl() {
    let env = Env::start(2);
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("app.yaml");
    let manifest = |labels: &str, replicas: u32| {
        format!(
            "apiVersion: apps/v1
kind: Deployment
metadata: {{name: applied, labels: {{{labels}}}}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: applied}}}}
  template:
    metadata: {{labels: {{app: applied}}}}
    spec:
      containers: [{{name: c, image: nginx:1.25}}]
---
apiVersion: v1
kind: Namespace
metadata: {{name: team-a}}
"
        )
    };
    let f = file.to_str().expect("utf-8 path");
    std::fs::write(&file, manifest("app: applied, tier: web", 2)).expect("write");
    // The generated policy of an object (`NAME-HASH`, as karmadactl's GeneratePolicyName).
    let generated = |name: &str| {
        env.cp
            .kubectl_ok(&[
                "get",
                "propagationpolicies,clusterpropagationpolicies",
                "-A",
                "-o",
                "name",
            ])
            .lines()
            .find(|l| l.contains(&format!("/{name}-")))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no policy generated for {name}"))
    };
    let out = ok(&env, &["apply", "-f", f, "--all-clusters"]);
    let (pp, cpp) = (generated("applied"), generated("team-a"));
    assert!(
        pp.starts_with("propagationpolicy.policy.karmada.io/"),
        "{pp}"
    );
    assert!(
        cpp.starts_with("clusterpropagationpolicy.policy.karmada.io/"),
        "{cpp}"
    );
    assert_eq!(
        out,
        format!(
            "deployment.apps/applied created\n{pp} created\nnamespace/team-a created\n{cpp} created\n"
        )
    );
    let spec = &env.cp.get_json(&[&pp])["spec"];
    assert_eq!(spec["placement"]["clusterAffinity"], serde_json::json!({}));
    assert_eq!(
        spec["resourceSelectors"][0],
        serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "applied",
            "namespace": "default"})
    );
    for member in ["member1", "member2"] {
        env.wait_member_object(member, &["deployment", "applied", "-n", "default"]);
        env.wait_member_object(member, &["namespace", "team-a"]);
    }
    assert_eq!(
        ok(&env, &["apply", "-f", f, "--all-clusters"]),
        format!(
            "deployment.apps/applied unchanged\n{pp} unchanged\nnamespace/team-a unchanged\n{cpp} unchanged\n"
        )
    );
    // kubectl reads the last-applied configuration as its own.
    assert_eq!(
        env.cp.kubectl_ok(&["apply", "-f", f]),
        "deployment.apps/applied unchanged\nnamespace/team-a unchanged\n"
    );

    // A label someone else set stays; one the file no longer sets goes.
    env.cp
        .kubectl_ok(&["label", "deployment", "applied", "owner=ops"]);
    std::fs::write(&file, manifest("app: applied", 3)).expect("write");
    assert!(
        ok(&env, &["apply", "-f", f, "--all-clusters"])
            .starts_with("deployment.apps/applied configured\n")
    );
    let live = env.cp.get_json(&["deployment", "applied"]);
    let labels = &live["metadata"]["labels"];
    assert_eq!(labels["owner"], "ops");
    assert!(labels["tier"].is_null(), "{labels}");
    assert_eq!(live["spec"]["replicas"], 3);
    env.wait("member1 runs 3 replicas", || {
        env.member("member1")
            .get_json(&["deployment", "applied", "-n", "default"])
            .filter(|d| d["spec"]["replicas"] == 3)
    });

    assert_eq!(
        refused(&env, &["apply", "-f", f, "-C", "member9,member1"]),
        "error: cluster member9 does not exist\n"
    );
    assert_eq!(
        refused(&env, &["apply", "-f", f, "--all-clusters", "-C", "member1"]),
        "error: --all-clusters and --cluster cannot be used together\n"
    );
    assert_eq!(
        refused(&env, &["apply"]),
        "error: must specify one of -f and -k\n"
    );
}

#[test]
fn describe_lays_objects_out_as_kubectl_and_shows_where_a_template_runs() {
    let env = Env::start(2);
    env.apply(&deployment_with_policy("web", 2, &["member1", "member2"]));
    env.wait_member_object("member1", &["deployment", "web", "-n", "default"]);
    env.wait_member_object("member2", &["deployment", "web", "-n", "default"]);

    // Karmada's kinds go through kubectl's generic describer: the same text.
    for args in [&["propagationpolicy", "web"][..], &["cluster", "member1"]] {
        let mut describe = vec!["describe"];
        describe.extend_from_slice(args);
        assert_eq!(
            ok(&env, &describe),
            env.cp.kubectl_ok(&describe),
            "{args:?}"
        );
    }

    // A template shows its policy, binding and each cluster's replicas and state.
    let text = env.wait("both clusters healthy in the placement", || {
        let text = ok(&env, &["describe", "deployment", "web"]);
        (text.matches(" Healthy ").count() == 2).then_some(text)
    });
    let placement: Vec<Vec<String>> = cells(
        text.split("Placement:\n")
            .nth(1)
            .and_then(|t| t.split("Events:").next())
            .expect("a Placement section"),
    );
    assert_eq!(
        placement[0][..3],
        [
            "Policy:".to_owned(),
            "PropagationPolicy".into(),
            "default/web".into()
        ]
    );
    assert_eq!(
        placement[1][..3],
        [
            "Binding:".to_owned(),
            "ResourceBinding".into(),
            "default/web-deployment".into()
        ]
    );
    assert_eq!(
        placement[4..],
        [
            ["Cluster", "Replicas", "Applied", "Health", "Ready"],
            ["-------", "--------", "-------", "------", "-----"],
            ["member1", "2", "true", "Healthy", "2"],
            ["member2", "2", "true", "Healthy", "2"]
        ]
    );
    assert!(text.contains("ScheduleBindingSucceed"), "{text}");

    // A member's copy has no placement; a name prefix describes every match.
    let member = ok(
        &env,
        &["describe", "deploy", "we", "-s", "members", "-C", "member1"],
    );
    assert!(member.starts_with("Name:         web\n"), "{member}");
    assert!(!member.contains("Placement:"), "{member}");
    assert_eq!(
        refused(&env, &["describe", "deploy", "nope"]),
        "error: Error from server (NotFound): deployments.apps \"nope\" not found\n"
    );
    assert_eq!(
        refused(&env, &["describe", "deploy", "web", "-s", "members"]),
        "error: must specify a member cluster\n"
    );
}
