//! End-to-end: RBAC privilege-escalation prevention, the `bind` and `escalate` verbs,
//! impersonation, ClusterRole aggregation and the in-process controllers' identity, through
//! kubectl as the users themselves.

mod support;

use std::path::Path;

use support::{DEADLINE, Server, wait_for};

fn stderr_of(s: &Server, kc: &Path, args: &[&str]) -> String {
    let out = s.kubectl_as(kc, args);
    assert!(
        !out.status.success(),
        "kubectl {} unexpectedly succeeded: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn yaml(s: &Server, kc: &Path, doc: &str) -> std::process::Output {
    support::run_stdin(
        s.kubectl_as_cmd(kc)
            .args(["create", "--validate=false", "-f", "-"]),
        doc,
    )
}

fn can_i(s: &Server, kc: &Path, args: &[&str]) -> bool {
    let mut a = vec!["auth", "can-i"];
    a.extend_from_slice(args);
    let out = s.kubectl_as(kc, &a);
    match String::from_utf8_lossy(&out.stdout).trim() {
        "yes" => true,
        "no" => false,
        other => panic!(
            "can-i {}: {other} {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

#[test]
fn escalation_is_refused() {
    let s = Server::start();
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["create", "namespace", "other"]);
    // alice administers namespace team.
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "alice-admin",
        "--clusterrole=admin",
        "--user=alice",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "node-reader",
        "--verb=get,list",
        "--resource=nodes",
    ]);
    let alice = s.cert_kubeconfig("alice", None);
    wait_for("alice's binding", DEADLINE, || {
        can_i(&s, &alice, &["create", "roles", "-n", "team"]).then_some(())
    });

    // Within her permissions: allowed.
    s.kubectl_as_ok(
        &alice,
        &[
            "-n",
            "team",
            "create",
            "role",
            "pod-reader",
            "--verb=get,list",
            "--resource=pods",
        ],
    );
    s.kubectl_as_ok(
        &alice,
        &[
            "-n",
            "team",
            "create",
            "rolebinding",
            "bob-edit",
            "--clusterrole=edit",
            "--user=bob",
        ],
    );

    // Beyond them: a Role with a permission she lacks, a `*` verb, a binding to cluster-admin.
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "team",
            "create",
            "role",
            "nodes",
            "--verb=get",
            "--resource=nodes",
        ],
    );
    assert!(
        err.contains(r#"roles.rbac.authorization.k8s.io "nodes" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:"#)
            && err.contains(r#"{APIGroups:[""], Resources:["nodes"], Verbs:["get"]}"#),
        "{err}"
    );
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "team",
            "create",
            "role",
            "all-secrets",
            "--verb=*",
            "--resource=secrets",
        ],
    );
    assert!(
        err.contains(r#"Resources:["secrets"], Verbs:["*"]"#),
        "{err}"
    );
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "team",
            "create",
            "rolebinding",
            "root",
            "--clusterrole=cluster-admin",
            "--user=alice",
        ],
    );
    assert!(
        err.contains(r#"rolebindings.rbac.authorization.k8s.io "root" is forbidden: user "alice""#)
            && err.contains("attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
    // Updating her own role to grant more is refused as well.
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "team",
            "patch",
            "role",
            "pod-reader",
            "--type=json",
            "-p",
            r#"[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["nodes"],"verbs":["get"]}}]"#,
        ],
    );
    assert!(
        err.contains("attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
    // A binding to a role that does not exist cannot be checked: refused.
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "team",
            "create",
            "rolebinding",
            "ghost",
            "--role=ghost",
            "--user=bob",
        ],
    );
    assert!(
        err.contains(r#"role.rbac.authorization.k8s.io "ghost" not found"#),
        "{err}"
    );
    // Outside her namespace she may not even try.
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "other",
            "create",
            "rolebinding",
            "x",
            "--clusterrole=view",
            "--user=bob",
        ],
    );
    assert!(err.contains(r#"User "alice" cannot create resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "other""#), "{err}");
    let err = stderr_of(
        &s,
        &alice,
        &[
            "create",
            "clusterrolebinding",
            "x",
            "--clusterrole=view",
            "--user=alice",
        ],
    );
    assert!(err.contains("at the cluster scope"), "{err}");
    // An aggregated ClusterRole needs every permission.
    assert!(!yaml(&s, &alice, "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: agg}\naggregationRule: {clusterRoleSelectors: [{matchLabels: {x: y}}]}\n").status.success());

    // `bind` on a role lets her bind it without holding it; `escalate` lets her write it.
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "binder",
        "--verb=bind",
        "--resource=clusterroles",
        "--resource-name=node-reader",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "alice-binder",
        "--clusterrole=binder",
        "--user=alice",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "role",
        "escalator",
        "--verb=escalate",
        "--resource=roles",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "alice-escalator",
        "--role=escalator",
        "--user=alice",
    ]);
    wait_for("alice's bind and escalate grants", DEADLINE, || {
        (can_i(
            &s,
            &alice,
            &["bind", "clusterroles/node-reader", "-n", "team"],
        ) && can_i(&s, &alice, &["escalate", "roles", "-n", "team"]))
        .then_some(())
    });
    s.kubectl_as_ok(
        &alice,
        &[
            "-n",
            "team",
            "create",
            "rolebinding",
            "nodes-for-bob",
            "--clusterrole=node-reader",
            "--user=bob",
        ],
    );
    s.kubectl_as_ok(
        &alice,
        &[
            "-n",
            "team",
            "create",
            "role",
            "nodes",
            "--verb=get",
            "--resource=nodes",
        ],
    );
    // `bind` is per role: cluster-admin is still refused.
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "team",
            "create",
            "rolebinding",
            "root",
            "--clusterrole=cluster-admin",
            "--user=alice",
        ],
    );
    assert!(err.contains("not currently held"), "{err}");

    // The in-process controllers' identity: broad, but it cannot escalate either.
    let cm = [
        "--as=system:karmada:controller-manager",
        "--as-group=system:karmada:controllers",
    ];
    let admin = s.kubeconfig.clone();
    let mut args = vec!["list", "deployments.apps", "--all-namespaces"];
    args.extend_from_slice(&cm);
    assert!(can_i(&s, &admin, &args));
    let mut args = vec![
        "update",
        "works.work.karmada.io",
        "-n",
        "karmada-es-member1",
    ];
    args.extend_from_slice(&cm);
    assert!(can_i(&s, &admin, &args));
    let mut args = vec!["impersonate", "users"];
    args.extend_from_slice(&cm);
    assert!(!can_i(&s, &admin, &args));
    let mut args = vec![
        "create",
        "clusterrolebinding",
        "evil",
        "--clusterrole=cluster-admin",
        "--user=evil",
    ];
    args.extend_from_slice(&cm);
    let err = stderr_of(&s, &admin, &args);
    assert!(
        err.contains(r#"user "system:karmada:controller-manager""#)
            && err.contains("not currently held"),
        "{err}"
    );
}

#[test]
fn impersonation_and_aggregation() {
    let s = Server::start();
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&[
        "-n",
        "team",
        "create",
        "rolebinding",
        "bob-view",
        "--clusterrole=view",
        "--user=bob",
    ]);
    let alice = s.cert_kubeconfig("alice", None);
    // kubectl discovers as the impersonated user; with a cold cache a refused impersonation
    // fails discovery with client-go's "unknown" before the real request is sent. Discovery
    // as alice herself fills the cache, as it would be in daily use.
    s.kubectl_as_ok(&alice, &["api-resources", "-o", "name"]);

    // Without the impersonate verb.
    let err = stderr_of(&s, &alice, &["-n", "team", "get", "pods", "--as=bob"]);
    assert!(
        err.contains(r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#),
        "{err}"
    );
    // With it, for bob only, and for the group dev.
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "imp-bob",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=bob",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrole",
        "imp-dev",
        "--verb=impersonate",
        "--resource=groups",
        "--resource-name=dev",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "alice-imp-bob",
        "--clusterrole=imp-bob",
        "--user=alice",
    ]);
    s.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "alice-imp-dev",
        "--clusterrole=imp-dev",
        "--user=alice",
    ]);
    wait_for("alice's impersonation grant", DEADLINE, || {
        s.kubectl_as(&alice, &["-n", "team", "get", "pods", "--as=bob"])
            .status
            .success()
            .then_some(())
    });
    let who: serde_json::Value = serde_json::from_str(&s.kubectl_as_ok(
        &alice,
        &["auth", "whoami", "--as=bob", "--as-group=dev", "-o", "json"],
    ))
    .unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "bob");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["dev", "system:authenticated"])
    );
    // As bob, alice has bob's permissions, not hers and not more.
    let err = stderr_of(&s, &alice, &["-n", "team", "get", "secrets", "--as=bob"]);
    assert!(
        err.contains(r#"User "bob" cannot list resource "secrets""#),
        "{err}"
    );
    let err = stderr_of(&s, &alice, &["-n", "team", "get", "pods", "--as=carol"]);
    assert!(err.contains(r#"users "carol" is forbidden"#), "{err}");
    let err = stderr_of(
        &s,
        &alice,
        &[
            "-n",
            "team",
            "get",
            "pods",
            "--as=bob",
            "--as-group=system:masters",
        ],
    );
    assert!(err.contains(r#"groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups""#), "{err}");

    // Aggregation: a ClusterRole labelled for `view` extends what bob can do.
    assert!(!can_i(
        &s,
        &s.kubeconfig,
        &["list", "works.work.karmada.io", "-n", "team", "--as=bob"]
    ));
    s.kubectl_stdin_ok(
        &["create", "--validate=false", "-f", "-"],
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: karmada-works-view\n  labels: {rbac.authorization.k8s.io/aggregate-to-view: \"true\"}\nrules:\n- apiGroups: [work.karmada.io]\n  resources: [works]\n  verbs: [get, list, watch]\n",
    );
    wait_for("view to aggregate the new rules", DEADLINE, || {
        can_i(
            &s,
            &s.kubeconfig,
            &["list", "works.work.karmada.io", "-n", "team", "--as=bob"],
        )
        .then_some(())
    });
    // edit and admin aggregate view, so they follow.
    wait_for("admin to aggregate them too", DEADLINE, || {
        let admin = s.get_json(&["clusterrole", "admin"]);
        admin["rules"]
            .as_array()
            .is_some_and(|r| {
                r.iter()
                    .any(|r| r["resources"] == serde_json::json!(["works"]))
            })
            .then_some(())
    });
    // Removing the label takes the rules away again.
    s.kubectl_ok(&[
        "label",
        "clusterrole",
        "karmada-works-view",
        "rbac.authorization.k8s.io/aggregate-to-view-",
    ]);
    wait_for("view to drop the rules", DEADLINE, || {
        (!can_i(
            &s,
            &s.kubeconfig,
            &["list", "works.work.karmada.io", "-n", "team", "--as=bob"],
        ))
        .then_some(())
    });
}
