//! End to end: karmadactl's cluster commands as `karmada-rs` runs them — `cordon` and
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
