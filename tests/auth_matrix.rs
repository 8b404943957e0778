//! End-to-end: the authorization matrix. Users of every kind (system:masters by client
//! certificate, a namespace `view` user and a namespace `edit` user by client certificate, a
//! user bound only to `clusters/proxy` of one cluster by static token, a service account by
//! TokenRequest token, anonymous) × verbs × resources. For each combination the real request's
//! outcome (through kubectl with the user's own kubeconfig) must equal `kubectl auth can-i`'s
//! answer, and both must equal what Kubernetes' RBAC rules give, written down in the table.

mod support;

use std::path::{Path, PathBuf};

use support::{DEADLINE, Server, wait_for};

/// One request: what `kubectl auth can-i` is asked, and the raw request kubectl sends.
struct Check {
    /// Arguments after `kubectl auth can-i`.
    can_i: &'static [&'static str],
    /// The same question as SubjectAccessReview attributes (anonymous cannot ask itself).
    sar: &'static str,
    /// HTTP method of the raw request.
    method: &'static str,
    /// Path and query of the raw request.
    path: &'static str,
    /// Request body for POST/PUT.
    body: &'static str,
    /// The forbidden message kube-apiserver gives (minus the user name), as
    /// (prefix before `User "<name>"`, suffix after it).
    forbidden: (&'static str, &'static str),
}

const CM: &str =
    r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"probe"},"data":{"k":"v"}}"#;
const CM_C1: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c1","namespace":"team-a"},"data":{"k":"v2"}}"#;
const DEPLOY: &str = r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"probe"},"spec":{"selector":{"matchLabels":{"app":"p"}},"template":{"metadata":{"labels":{"app":"p"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}"#;
const RB: &str = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":"probe"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"User","name":"someone"}]}"#;
const TOKEN_REQUEST: &str =
    r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}"#;

const CHECKS: &[Check] = &[
    Check {
        can_i: &["get", "configmaps/c1", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"get","resource":"configmaps","namespace":"team-a","name":"c1"}}"#,
        method: "GET",
        path: "/api/v1/namespaces/team-a/configmaps/c1",
        body: "",
        forbidden: (
            "configmaps \"c1\" is forbidden: ",
            " cannot get resource \"configmaps\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["list", "configmaps", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"list","resource":"configmaps","namespace":"team-a"}}"#,
        method: "GET",
        path: "/api/v1/namespaces/team-a/configmaps",
        body: "",
        forbidden: (
            "configmaps is forbidden: ",
            " cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["watch", "configmaps", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"watch","resource":"configmaps","namespace":"team-a"}}"#,
        method: "GET",
        path: "/api/v1/namespaces/team-a/configmaps?watch=1&timeoutSeconds=1",
        body: "",
        forbidden: (
            "configmaps is forbidden: ",
            " cannot watch resource \"configmaps\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["create", "configmaps", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"create","resource":"configmaps","namespace":"team-a"}}"#,
        method: "POST",
        path: "/api/v1/namespaces/team-a/configmaps?dryRun=All",
        body: CM,
        forbidden: (
            "configmaps is forbidden: ",
            " cannot create resource \"configmaps\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["update", "configmaps/c1", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"update","resource":"configmaps","namespace":"team-a","name":"c1"}}"#,
        method: "PUT",
        path: "/api/v1/namespaces/team-a/configmaps/c1?dryRun=All",
        body: CM_C1,
        forbidden: (
            "configmaps \"c1\" is forbidden: ",
            " cannot update resource \"configmaps\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["delete", "configmaps/c1", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"delete","resource":"configmaps","namespace":"team-a","name":"c1"}}"#,
        method: "DELETE",
        path: "/api/v1/namespaces/team-a/configmaps/c1?dryRun=All",
        body: "",
        forbidden: (
            "configmaps \"c1\" is forbidden: ",
            " cannot delete resource \"configmaps\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["get", "secrets/s1", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"get","resource":"secrets","namespace":"team-a","name":"s1"}}"#,
        method: "GET",
        path: "/api/v1/namespaces/team-a/secrets/s1",
        body: "",
        forbidden: (
            "secrets \"s1\" is forbidden: ",
            " cannot get resource \"secrets\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["list", "configmaps", "-n", "team-b"],
        sar: r#"{"resourceAttributes":{"verb":"list","resource":"configmaps","namespace":"team-b"}}"#,
        method: "GET",
        path: "/api/v1/namespaces/team-b/configmaps",
        body: "",
        forbidden: (
            "configmaps is forbidden: ",
            " cannot list resource \"configmaps\" in API group \"\" in the namespace \"team-b\"",
        ),
    },
    Check {
        can_i: &["list", "pods", "--all-namespaces"],
        sar: r#"{"resourceAttributes":{"verb":"list","resource":"pods"}}"#,
        method: "GET",
        path: "/api/v1/pods",
        body: "",
        forbidden: (
            "pods is forbidden: ",
            " cannot list resource \"pods\" in API group \"\" at the cluster scope",
        ),
    },
    Check {
        can_i: &["list", "deployments.apps", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"list","group":"apps","resource":"deployments","namespace":"team-a"}}"#,
        method: "GET",
        path: "/apis/apps/v1/namespaces/team-a/deployments",
        body: "",
        forbidden: (
            "deployments.apps is forbidden: ",
            " cannot list resource \"deployments\" in API group \"apps\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["create", "deployments.apps", "-n", "team-a"],
        sar: r#"{"resourceAttributes":{"verb":"create","group":"apps","resource":"deployments","namespace":"team-a"}}"#,
        method: "POST",
        path: "/apis/apps/v1/namespaces/team-a/deployments?dryRun=All",
        body: DEPLOY,
        forbidden: (
            "deployments.apps is forbidden: ",
            " cannot create resource \"deployments\" in API group \"apps\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &[
            "get",
            "clusters.cluster.karmada.io/member1",
            "--subresource=proxy",
        ],
        sar: r#"{"resourceAttributes":{"verb":"get","group":"cluster.karmada.io","resource":"clusters","subresource":"proxy","name":"member1"}}"#,
        method: "GET",
        path: "/apis/cluster.karmada.io/v1alpha1/clusters/member1/proxy/api",
        body: "",
        forbidden: (
            "clusters.cluster.karmada.io \"member1\" is forbidden: ",
            " cannot get resource \"clusters/proxy\" in API group \"cluster.karmada.io\" at the cluster scope",
        ),
    },
    Check {
        can_i: &[
            "get",
            "clusters.cluster.karmada.io/member2",
            "--subresource=proxy",
        ],
        sar: r#"{"resourceAttributes":{"verb":"get","group":"cluster.karmada.io","resource":"clusters","subresource":"proxy","name":"member2"}}"#,
        method: "GET",
        path: "/apis/cluster.karmada.io/v1alpha1/clusters/member2/proxy/api",
        body: "",
        forbidden: (
            "clusters.cluster.karmada.io \"member2\" is forbidden: ",
            " cannot get resource \"clusters/proxy\" in API group \"cluster.karmada.io\" at the cluster scope",
        ),
    },
    Check {
        can_i: &["list", "clusters.cluster.karmada.io"],
        sar: r#"{"resourceAttributes":{"verb":"list","group":"cluster.karmada.io","resource":"clusters"}}"#,
        method: "GET",
        path: "/apis/cluster.karmada.io/v1alpha1/clusters",
        body: "",
        forbidden: (
            "clusters.cluster.karmada.io is forbidden: ",
            " cannot list resource \"clusters\" in API group \"cluster.karmada.io\" at the cluster scope",
        ),
    },
    Check {
        can_i: &["list", "works.work.karmada.io", "-n", "karmada-es-member1"],
        sar: r#"{"resourceAttributes":{"verb":"list","group":"work.karmada.io","resource":"works","namespace":"karmada-es-member1"}}"#,
        method: "GET",
        path: "/apis/work.karmada.io/v1alpha1/namespaces/karmada-es-member1/works",
        body: "",
        forbidden: (
            "works.work.karmada.io is forbidden: ",
            " cannot list resource \"works\" in API group \"work.karmada.io\" in the namespace \"karmada-es-member1\"",
        ),
    },
    Check {
        can_i: &[
            "create",
            "rolebindings.rbac.authorization.k8s.io",
            "-n",
            "team-a",
        ],
        sar: r#"{"resourceAttributes":{"verb":"create","group":"rbac.authorization.k8s.io","resource":"rolebindings","namespace":"team-a"}}"#,
        method: "POST",
        path: "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings?dryRun=All",
        body: RB,
        forbidden: (
            "rolebindings.rbac.authorization.k8s.io is forbidden: ",
            " cannot create resource \"rolebindings\" in API group \"rbac.authorization.k8s.io\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &[
            "create",
            "serviceaccounts/robot",
            "--subresource=token",
            "-n",
            "team-a",
        ],
        sar: r#"{"resourceAttributes":{"verb":"create","resource":"serviceaccounts","subresource":"token","namespace":"team-a","name":"robot"}}"#,
        method: "POST",
        path: "/api/v1/namespaces/team-a/serviceaccounts/robot/token",
        body: TOKEN_REQUEST,
        forbidden: (
            "serviceaccounts \"robot\" is forbidden: ",
            " cannot create resource \"serviceaccounts/token\" in API group \"\" in the namespace \"team-a\"",
        ),
    },
    Check {
        can_i: &["get", "/healthz"],
        sar: r#"{"nonResourceAttributes":{"verb":"get","path":"/healthz"}}"#,
        method: "GET",
        path: "/healthz",
        body: "",
        forbidden: ("forbidden: ", " cannot get path \"/healthz\""),
    },
    Check {
        can_i: &["get", "/metrics"],
        sar: r#"{"nonResourceAttributes":{"verb":"get","path":"/metrics"}}"#,
        method: "GET",
        path: "/metrics",
        body: "",
        forbidden: ("forbidden: ", " cannot get path \"/metrics\""),
    },
];

/// What Kubernetes' RBAC gives each user, one letter per check in CHECKS order
/// (Y: allowed, n: forbidden).
const EXPECTED: &[(&str, &str)] = &[
    // The system:masters certificate: everything.
    ("admin", "YYYYYYYYYYYYYYYYYYY"),
    // `view` in team-a: reads of non-secret namespaced resources there; discovery and health.
    ("viewer", "YYYnnnnnnYnnnnnnnYn"),
    // `edit` in team-a: reads and writes there, secrets and token requests included; no RBAC.
    ("editor", "YYYYYYYnnYYnnnnnYYn"),
    // Bound to clusters/proxy of member1 only.
    ("proxier", "nnnnnnnnnnnYnnnnnYn"),
    // Service account team-a/robot with a Role reading configmaps in team-a.
    ("robot", "YYYnnnnnnnnnnnnnnYn"),
    // Anonymous: only what system:public-info-viewer grants.
    ("anonymous", "nnnnnnnnnnnnnnnnnYn"),
];

struct User {
    name: &'static str,
    /// The name kube reports in messages.
    identity: String,
    kubeconfig: PathBuf,
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Outcome {
    Allowed,
    Forbidden,
}

fn can_i(s: &Server, admin: &Path, user: &User, check: &Check, dir: &std::path::Path) -> Outcome {
    if user.name == "anonymous" {
        return subject_access_review(s, admin, check, dir);
    }
    let mut args: Vec<&str> = vec!["auth", "can-i"];
    args.extend_from_slice(check.can_i);
    let out = s.kubectl_as(&user.kubeconfig, &args);
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_string();
    match (out.status.code(), stdout.as_str()) {
        (Some(0), "yes") => Outcome::Allowed,
        (Some(1), "no") => Outcome::Forbidden,
        _ => panic!(
            "{}: kubectl auth can-i {}: {stdout} {}",
            user.name,
            check.can_i.join(" "),
            String::from_utf8_lossy(&out.stderr)
        ),
    }
}

/// Anonymous requests may not create SelfSubjectAccessReviews (system:basic-user is for
/// authenticated users), so the admin asks about `system:anonymous` with a
/// SubjectAccessReview, which is what `kubectl auth can-i` evaluates server-side.
fn subject_access_review(s: &Server, admin: &Path, check: &Check, dir: &Path) -> Outcome {
    let attrs: serde_json::Value = serde_json::from_str(check.sar).unwrap();
    let mut spec = attrs.clone();
    spec["user"] = "system:anonymous".into();
    spec["groups"] = serde_json::json!(["system:unauthenticated"]);
    let sar = serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": spec,
    });
    let file = dir.join(format!(
        "sar-{}.json",
        check.can_i.join("_").replace('/', "_")
    ));
    std::fs::write(&file, sar.to_string()).unwrap();
    let out = s.kubectl_as_ok(
        admin,
        &[
            "create",
            "--raw",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
            "-f",
            file.to_str().unwrap(),
        ],
    );
    let review: serde_json::Value = serde_json::from_str(&out).unwrap();
    if review["status"]["allowed"] == true {
        Outcome::Allowed
    } else {
        Outcome::Forbidden
    }
}

fn request(s: &Server, user: &User, check: &Check, body_dir: &Path) -> Outcome {
    let args: Vec<String> = match check.method {
        "GET" => vec!["get".into(), "--raw".into(), check.path.into()],
        "DELETE" => vec!["delete".into(), "--raw".into(), check.path.into()],
        "POST" | "PUT" => {
            let file = body_dir.join(format!("{}.json", check.can_i.join("_").replace('/', "_")));
            std::fs::write(&file, check.body).unwrap();
            let verb = if check.method == "POST" {
                "create"
            } else {
                "replace"
            };
            vec![
                verb.into(),
                "--raw".into(),
                check.path.into(),
                "-f".into(),
                file.to_string_lossy().into_owned(),
            ]
        }
        m => panic!("method {m}"),
    };
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = s.kubectl_as(&user.kubeconfig, &argv);
    if out.status.success() {
        return Outcome::Allowed;
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("(Forbidden)") {
        let (prefix, suffix) = check.forbidden;
        let want = format!("{prefix}User \"{}\"{suffix}", user.identity);
        assert!(
            stderr.contains(&want),
            "{} {} {}: kube's message\n  want: {want}\n  got:  {stderr}",
            user.name,
            check.method,
            check.path
        );
        return Outcome::Forbidden;
    }
    assert!(
        stderr.contains("Error from server") && !stderr.contains("Unauthorized"),
        "{} {} {}: not an authorization outcome: {stderr}",
        user.name,
        check.method,
        check.path
    );
    // Authorized; the server answered something else (404 for a cluster that does not exist,
    // 422, ...).
    Outcome::Allowed
}

#[test]
fn authorization_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "pr0xy-t0ken-7f3a,proxier,2001\n").unwrap();
    let s = Server::start_with(
        support::Backend::Embedded,
        &[
            "--anonymous-auth",
            "--token-auth-file",
            tokens.to_str().unwrap(),
        ],
    );

    for ns in ["team-a", "team-b", "karmada-es-member1"] {
        s.kubectl_ok(&["create", "namespace", ns]);
    }
    s.kubectl_ok(&[
        "-n",
        "team-a",
        "create",
        "configmap",
        "c1",
        "--from-literal=a=1",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team-b",
        "create",
        "configmap",
        "c1",
        "--from-literal=a=1",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team-a",
        "create",
        "secret",
        "generic",
        "s1",
        "--from-literal=k=v",
    ]);
    s.kubectl_ok(&["-n", "team-a", "create", "serviceaccount", "robot"]);
    s.kubectl_ok(&[
        "-n",
        "team-a",
        "create",
        "rolebinding",
        "viewer",
        "--clusterrole=view",
        "--user=viewer",
    ]);
    s.kubectl_ok(&[
        "-n",
        "team-a",
        "create",
        "rolebinding",
        "editor",
        "--clusterrole=edit",
        "--user=editor",
    ]);
    s.kubectl_stdin_ok(
        &["create", "--validate=false", "-f", "-"],
        r#"
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: member1-proxy}
rules:
- apiGroups: [cluster.karmada.io]
  resources: [clusters/proxy]
  resourceNames: [member1]
  verbs: ["*"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: member1-proxy}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: member1-proxy}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: proxier}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: team-a}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cm-reader, namespace: team-a}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects:
- {kind: ServiceAccount, name: robot}
"#,
    );
    let robot_token = s
        .kubectl_ok(&["-n", "team-a", "create", "token", "robot"])
        .trim()
        .to_string();

    let admin = s.kubeconfig.clone();
    let users = [
        User {
            name: "admin",
            identity: "karmada-admin".into(),
            kubeconfig: admin.clone(),
        },
        User {
            name: "viewer",
            identity: "viewer".into(),
            kubeconfig: s.cert_kubeconfig("viewer", None),
        },
        User {
            name: "editor",
            identity: "editor".into(),
            kubeconfig: s.cert_kubeconfig("editor", Some("dev")),
        },
        User {
            name: "proxier",
            identity: "proxier".into(),
            kubeconfig: s.token_kubeconfig("proxier", "pr0xy-t0ken-7f3a"),
        },
        User {
            name: "robot",
            identity: "system:serviceaccount:team-a:robot".into(),
            kubeconfig: s.token_kubeconfig("robot", &robot_token),
        },
        User {
            name: "anonymous",
            identity: "system:anonymous".into(),
            kubeconfig: s.anonymous_kubeconfig(),
        },
    ];

    // The bindings above are in effect once the authorizer's index has caught up.
    wait_for("the RBAC bindings to take effect", DEADLINE, || {
        (can_i(&s, &admin, &users[4], &CHECKS[0], dir.path()) == Outcome::Allowed
            && can_i(&s, &admin, &users[3], &CHECKS[11], dir.path()) == Outcome::Allowed
            && can_i(&s, &admin, &users[2], &CHECKS[3], dir.path()) == Outcome::Allowed)
            .then_some(())
    });

    let bodies = dir.path().join("bodies");
    std::fs::create_dir_all(&bodies).unwrap();
    let mismatches: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = users
            .iter()
            .map(|user| {
                let (s, admin, bodies) = (&s, &admin, &bodies);
                scope.spawn(move || {
                    let expected = EXPECTED
                        .iter()
                        .find(|(n, _)| *n == user.name)
                        .map(|(_, e)| e.as_bytes())
                        .unwrap();
                    let mut bad = Vec::new();
                    let user_bodies = bodies.join(user.name);
                    std::fs::create_dir_all(&user_bodies).unwrap();
                    for (i, check) in CHECKS.iter().enumerate() {
                        let want = if expected[i] == b'Y' {
                            Outcome::Allowed
                        } else {
                            Outcome::Forbidden
                        };
                        let answer = can_i(s, admin, user, check, &user_bodies);
                        let observed = request(s, user, check, &user_bodies);
                        if answer != want || observed != want {
                            bad.push(format!(
                                "{} {}: RBAC {want:?}, can-i {answer:?}, request {observed:?}",
                                user.name,
                                check.can_i.join(" ")
                            ));
                        }
                    }
                    bad
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert_eq!(CHECKS.len() * users.len(), 114, "at least 60 combinations");
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );

    // A LocalSubjectAccessReview (what namespace admins may ask) about the viewer.
    let lsar = |ns: &str, verb: &str, resource: &str| -> serde_json::Value {
        let body = serde_json::json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "LocalSubjectAccessReview",
            "metadata": {"namespace": ns},
            "spec": {"user": "viewer", "resourceAttributes": {"namespace": "team-a", "verb": verb, "resource": resource}},
        });
        let file = dir.path().join(format!("lsar-{ns}-{verb}-{resource}.json"));
        std::fs::write(&file, body.to_string()).unwrap();
        let path =
            format!("/apis/authorization.k8s.io/v1/namespaces/{ns}/localsubjectaccessreviews");
        let out = s.kubectl(&["create", "--raw", &path, "-f", file.to_str().unwrap()]);
        if out.status.success() {
            serde_json::from_slice(&out.stdout).unwrap()
        } else {
            serde_json::json!({"error": String::from_utf8_lossy(&out.stderr)})
        }
    };
    assert_eq!(
        lsar("team-a", "list", "configmaps")["status"]["allowed"],
        true
    );
    assert_eq!(
        lsar("team-a", "list", "configmaps")["status"]["reason"],
        r#"RBAC: allowed by RoleBinding "viewer/team-a" of ClusterRole "view" to User "viewer""#
    );
    assert_ne!(lsar("team-a", "list", "secrets")["status"]["allowed"], true);
    let mismatch = lsar("team-b", "list", "configmaps");
    assert!(
        mismatch["error"]
            .as_str()
            .is_some_and(|e| e.contains("must match metadata.namespace")),
        "{mismatch}"
    );

    // Anonymous requests reach exactly what system:public-info-viewer grants.
    for path in ["/healthz", "/livez", "/readyz", "/version"] {
        assert_eq!(s.anonymous_request("GET", path).0, 200, "{path}");
    }
    for path in ["/api", "/apis", "/openapi/v3", "/metrics"] {
        let (code, msg) = s.anonymous_request("GET", path);
        assert_eq!(code, 403, "{path}: {msg}");
        assert_eq!(
            msg,
            format!("forbidden: User \"system:anonymous\" cannot get path \"{path}\"")
        );
    }
    let (code, msg) = s.anonymous_request("GET", "/api/v1/namespaces/team-a/configmaps");
    assert_eq!(code, 403);
    assert_eq!(
        msg,
        r#"configmaps is forbidden: User "system:anonymous" cannot list resource "configmaps" in API group "" in the namespace "team-a""#
    );

    // Typed kubectl as the users sees the same decisions.
    let viewer = &users[1].kubeconfig;
    let pods = s.kubectl_as_ok(viewer, &["-n", "team-a", "get", "configmaps", "-o", "name"]);
    assert!(pods.contains("configmap/c1"), "{pods}");
    let err = s.kubectl_as(viewer, &["-n", "team-a", "get", "secrets"]);
    assert!(String::from_utf8_lossy(&err.stderr).contains(
        r#"Error from server (Forbidden): secrets is forbidden: User "viewer" cannot list resource "secrets" in API group "" in the namespace "team-a""#
    ));
    let whoami = s.kubectl_as_ok(&users[4].kubeconfig, &["auth", "whoami", "-o", "json"]);
    let who: serde_json::Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:team-a:robot"
    );
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team-a",
            "system:authenticated"
        ])
    );
    let list = s.kubectl_as_ok(viewer, &["auth", "can-i", "--list", "-n", "team-a"]);
    assert!(
        list.lines()
            .any(|l| l.starts_with("configmaps ") && l.contains("[get list watch]")),
        "{list}"
    );
    assert!(!list.lines().any(|l| l.starts_with("secrets ")), "{list}");
}
