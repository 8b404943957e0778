//! End-to-end: the audit log records every request that is not a read, in kube's
//! audit.k8s.io/v1 shape, rotates by size, and neither it nor the server's (debug) log ever
//! contains secret values or credentials.

mod support;

use std::path::Path;

use base64::Engine;
use support::{DEADLINE, Server, wait_for};

const SECRET_VALUE: &str = "s3cr3t-XYZ";
const STATIC_TOKEN: &str = "st4tic-4udit-t0ken-91c2";

fn events(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON event"))
        .collect()
}

fn all_text(dir: &Path) -> String {
    let mut text = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    text
}

#[test]
fn audit_log_and_no_secrets_in_logs() {
    let work = tempfile::tempdir().unwrap();
    let audit_dir = work.path().join("audit");
    let audit = audit_dir.join("audit.log");
    let tokens = work.path().join("tokens.csv");
    std::fs::write(&tokens, format!("{STATIC_TOKEN},auditor,3001\n")).unwrap();
    let s = Server::start_logged(&[
        "--audit-log-path",
        audit.to_str().unwrap(),
        "--audit-log-maxsize",
        "1",
        "--audit-log-maxbackup",
        "2",
        "--token-auth-file",
        tokens.to_str().unwrap(),
    ]);

    s.kubectl_ok(&["create", "namespace", "vault"]);
    let literal = format!("--from-literal=password={SECRET_VALUE}");
    s.kubectl_ok(&["-n", "vault", "create", "secret", "generic", "db", &literal]);
    s.kubectl_ok(&["-n", "vault", "get", "secret", "db", "-o", "yaml"]);
    let value = s.kubectl_ok(&[
        "-n",
        "vault",
        "get",
        "secret",
        "db",
        "-o",
        "jsonpath={.data.password}",
    ]);
    assert_eq!(
        value,
        base64::engine::general_purpose::STANDARD.encode(SECRET_VALUE)
    );
    // An update, a rejected write whose body carries the value, a delete.
    s.kubectl_ok(&[
        "-n",
        "vault",
        "patch",
        "secret",
        "db",
        "--type=merge",
        "-p",
        &format!("{{\"stringData\":{{\"other\":\"{SECRET_VALUE}\"}}}}"),
    ]);
    let bad = work.path().join("bad-secret.json");
    std::fs::write(
        &bad,
        format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{{\"name\":\"bad\"}},\"stringData\":{{\"bad key\":\"{SECRET_VALUE}\"}}}}"
        ),
    )
    .unwrap();
    let err = s.kubectl_err(&[
        "create",
        "--raw",
        "/api/v1/namespaces/vault/secrets",
        "-f",
        bad.to_str().unwrap(),
    ]);
    assert!(err.contains("Invalid") || err.contains("invalid"), "{err}");
    // Credentials in use: a service-account token and a static token.
    s.kubectl_ok(&["-n", "vault", "create", "serviceaccount", "robot"]);
    let sa_token = s
        .kubectl_ok(&["-n", "vault", "create", "token", "robot"])
        .trim()
        .to_string();
    s.kubectl_as_ok(&s.token_kubeconfig("robot", &sa_token), &["auth", "whoami"]);
    let auditor = s.token_kubeconfig("auditor", STATIC_TOKEN);
    s.kubectl_as_ok(&auditor, &["auth", "whoami"]);
    // A forbidden write.
    let err = s.kubectl_as(&auditor, &["-n", "vault", "create", "configmap", "x"]);
    assert!(!err.status.success());
    // A TokenReview of the service-account token.
    let review = format!(
        "{{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenReview\",\"spec\":{{\"token\":\"{sa_token}\"}}}}"
    );
    let out = s.kubectl_stdin_ok(
        &["create", "--validate=false", "-f", "-", "-o", "json"],
        &review,
    );
    let out: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(out["status"]["authenticated"], true);
    assert_eq!(
        out["status"]["user"]["username"],
        "system:serviceaccount:vault:robot"
    );
    assert!(
        out["spec"].get("token").is_none(),
        "the token is not echoed"
    );
    s.kubectl_ok(&["-n", "vault", "delete", "secret", "db"]);

    wait_for("the delete to be audited", DEADLINE, || {
        events(&audit)
            .iter()
            .any(|e| e["verb"] == "delete" && e["objectRef"]["resource"] == "secrets")
            .then_some(())
    });
    let evs = events(&audit);
    for e in &evs {
        assert_eq!(e["kind"], "Event");
        assert_eq!(e["apiVersion"], "audit.k8s.io/v1");
        assert_eq!(e["level"], "Metadata");
        assert_eq!(e["stage"], "ResponseComplete");
        assert!(
            !matches!(e["verb"].as_str(), Some("get" | "list" | "watch")),
            "reads are not audited: {e}"
        );
        assert!(e.get("requestObject").is_none() && e.get("responseObject").is_none());
        assert!(e["auditID"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(e["requestReceivedTimestamp"].as_str().is_some());
        assert!(e["stageTimestamp"].as_str().is_some());
    }
    let created = evs
        .iter()
        .find(|e| {
            e["verb"] == "create"
                && e["objectRef"]["resource"] == "secrets"
                && e["objectRef"]["name"] == "db"
        })
        .expect("the secret's create is audited with its name");
    assert_eq!(created["user"]["username"], "karmada-admin");
    assert_eq!(
        created["user"]["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );
    assert_eq!(created["objectRef"]["namespace"], "vault");
    assert_eq!(created["responseStatus"]["code"], 201);
    assert_eq!(created["sourceIPs"], serde_json::json!(["127.0.0.1"]));
    assert!(
        created["userAgent"]
            .as_str()
            .unwrap()
            .starts_with("kubectl")
    );
    assert!(evs.iter().any(|e| e["verb"] == "patch"
        && e["objectRef"]["name"] == "db"
        && e["responseStatus"]["code"] == 200));
    assert!(evs.iter().any(|e| e["verb"] == "create"
        && e["objectRef"]["resource"] == "secrets"
        && e["responseStatus"]["code"] == 422));
    let forbidden = evs
        .iter()
        .find(|e| e["user"]["username"] == "auditor" && e["objectRef"]["resource"] == "configmaps")
        .expect("the forbidden create is audited");
    assert_eq!(forbidden["responseStatus"]["code"], 403);
    assert_eq!(
        forbidden["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert!(
        evs.iter()
            .any(|e| e["objectRef"]["resource"] == "serviceaccounts"
                && e["objectRef"]["subresource"] == "token")
    );

    // Rotation: enough writes for more than 1 MB of events.
    let client = s.block_on(async {
        kube::Client::try_from(
            kube::Config::from_custom_kubeconfig(
                kube::config::Kubeconfig::read_from(&s.kubeconfig).unwrap(),
                &Default::default(),
            )
            .await
            .unwrap(),
        )
        .unwrap()
    });
    s.block_on(async {
        use k8s_openapi::api::core::v1::ConfigMap;
        let api: kube::Api<ConfigMap> = kube::Api::namespaced(client, "vault");
        for i in 0..1600 {
            let cm: ConfigMap = serde_json::from_value(
                serde_json::json!({"metadata": {"name": format!("cm-{i}")}}),
            )
            .unwrap();
            api.create(&Default::default(), &cm).await.unwrap();
        }
    });
    wait_for("the audit log to rotate", DEADLINE, || {
        let files = std::fs::read_dir(&audit_dir).unwrap().count();
        (files >= 2).then_some(())
    });
    for e in std::fs::read_dir(&audit_dir).unwrap() {
        let p = e.unwrap().path();
        assert!(
            std::fs::metadata(&p).unwrap().len() <= 1024 * 1024,
            "{}",
            p.display()
        );
    }
    assert!(
        std::fs::read_dir(&audit_dir).unwrap().count() <= 3,
        "at most 2 backups kept"
    );

    // No secret material anywhere: audit files, the server's debug log, the data directory's
    // other logs.
    let encoded = base64::engine::general_purpose::STANDARD.encode(SECRET_VALUE);
    let server_log = std::fs::read_to_string(s.log_path().unwrap()).unwrap();
    assert!(server_log.contains("request"), "the debug log was written");
    for (what, text) in [
        ("audit log", all_text(&audit_dir)),
        ("server log", server_log),
    ] {
        for needle in [
            SECRET_VALUE,
            encoded.as_str(),
            sa_token.as_str(),
            STATIC_TOKEN,
        ] {
            assert!(
                !text.contains(needle),
                "{what} contains secret material {needle:.12}…"
            );
        }
        // The token's signature alone must not appear either.
        let sig = sa_token.rsplit('.').next().unwrap();
        assert!(!text.contains(sig), "{what} contains a token signature");
    }
}

/// `--audit-policy-file`: the first matching rule of kube's audit.k8s.io/v1 Policy sets each
/// request's level (None, Metadata, Request with the request's object, RequestResponse with the
/// response's too) and stages (RequestReceived unless omitted; a watch's ResponseStarted and
/// ResponseComplete); reads are audited when the policy says so; a Secret at Metadata never
/// shows its value; a policy that does not validate stops the server with kube's message.
#[test]
fn audit_policy_file_sets_levels_and_stages() {
    let work = tempfile::tempdir().unwrap();
    let audit = work.path().join("audit.log");
    let policy = work.path().join("policy.yaml");
    std::fs::write(
        &policy,
        r#"apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/openapi*", "/api", "/apis*"]
- level: Metadata
  resources: [{group: "", resources: ["secrets"]}]
  omitStages: [RequestReceived]
- level: RequestResponse
  resources: [{group: "", resources: ["configmaps"]}]
  omitManagedFields: true
  omitStages: [RequestReceived]
- level: Request
  resources: [{group: "apps", resources: ["deployments"]}]
- level: None
"#,
    )
    .unwrap();
    let s = Server::start_with(
        support::Backend::Embedded,
        &[
            "--audit-log-path",
            audit.to_str().unwrap(),
            "--audit-policy-file",
            policy.to_str().unwrap(),
        ],
    );
    s.kubectl_ok(&["create", "configmap", "cm1", "--from-literal=k=v"]);
    s.kubectl_ok(&["get", "configmap", "cm1"]);
    let literal = format!("--from-literal=password={SECRET_VALUE}");
    s.kubectl_ok(&["create", "secret", "generic", "db", &literal]);
    s.kubectl_ok(&["create", "deployment", "web", "--image=nginx"]);
    let watch = s
        .raw(
            true,
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1",
            None,
            b"",
        )
        .expect("a watch");
    assert_eq!(watch.status, 200);
    s.kubectl_ok(&["delete", "configmap", "cm1"]);

    wait_for(
        "the configmap's delete and the watch's end to be audited",
        DEADLINE,
        || {
            let evs = events(&audit);
            (evs.iter()
                .any(|e| e["verb"] == "delete" && e["objectRef"]["resource"] == "configmaps")
                && evs
                    .iter()
                    .any(|e| e["verb"] == "watch" && e["stage"] == "ResponseComplete"))
            .then_some(())
        },
    );
    let evs = events(&audit);
    let text = std::fs::read_to_string(&audit).unwrap();
    let find = |verb: &str, resource: &str, stage: &str| {
        evs.iter()
            .filter(|e| {
                e["verb"] == verb
                    && e["objectRef"]["resource"] == resource
                    && e["objectRef"]["namespace"] == "default"
                    && e["stage"] == stage
            })
            .collect::<Vec<_>>()
    };
    // ConfigMaps (the test's, in `default`; the controllers write others): RequestResponse,
    // without managedFields, reads included, no RequestReceived.
    let created = find("create", "configmaps", "ResponseComplete");
    assert_eq!(created.len(), 1, "{created:?}");
    assert_eq!(created[0]["level"], "RequestResponse");
    assert_eq!(created[0]["requestObject"]["data"]["k"], "v");
    assert_eq!(created[0]["responseObject"]["metadata"]["name"], "cm1");
    assert!(
        created[0]["responseObject"]["metadata"]
            .get("managedFields")
            .is_none()
    );
    assert_eq!(created[0]["objectRef"]["name"], "cm1");
    assert!(find("create", "configmaps", "RequestReceived").is_empty());
    // Reads: kubectl's get (and the controllers' and kubectl delete's own reads).
    let got = find("get", "configmaps", "ResponseComplete");
    assert!(
        got.iter().any(|e| e["responseStatus"]["code"] == 200
            && e["responseObject"].is_object()
            && e["userAgent"]
                .as_str()
                .is_some_and(|a| a.starts_with("kubectl"))),
        "{got:?}"
    );
    // A watch: started, then complete when it ended.
    assert_eq!(find("watch", "configmaps", "ResponseStarted").len(), 1);
    assert_eq!(find("watch", "configmaps", "ResponseComplete").len(), 1);
    // Secrets at Metadata: no objects, no value anywhere in the log.
    let secret = find("create", "secrets", "ResponseComplete");
    assert_eq!(secret.len(), 1);
    assert_eq!(secret[0]["level"], "Metadata");
    assert!(secret[0].get("requestObject").is_none() && secret[0].get("responseObject").is_none());
    assert!(!text.contains(SECRET_VALUE));
    assert!(!text.contains(&base64::engine::general_purpose::STANDARD.encode(SECRET_VALUE)));
    // Deployments at Request: RequestReceived then ResponseComplete, the request's object only.
    let received = find("create", "deployments", "RequestReceived");
    let complete = find("create", "deployments", "ResponseComplete");
    assert_eq!((received.len(), complete.len()), (1, 1));
    assert_eq!(received[0]["auditID"], complete[0]["auditID"]);
    assert!(received[0].get("responseStatus").is_none());
    assert_eq!(complete[0]["level"], "Request");
    assert_eq!(complete[0]["requestObject"]["metadata"]["name"], "web");
    assert!(complete[0].get("responseObject").is_none());
    // The catch-all None: nothing else (no discovery, no namespaces, no probes).
    assert!(
        evs.iter().all(|e| ["configmaps", "secrets", "deployments"]
            .contains(&e["objectRef"]["resource"].as_str().unwrap_or(""))),
        "only the policy's resources are audited"
    );

    // A policy that does not validate, or one without a log to write to, stops the server.
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Verbose\n",
    )
    .unwrap();
    for (args, want) in [
        (
            vec![
                "--audit-log-path",
                audit.to_str().unwrap(),
                "--audit-policy-file",
                policy.to_str().unwrap(),
            ],
            r#"rules[0].level: Unsupported value: "Verbose""#,
        ),
        (
            vec!["--audit-policy-file", policy.to_str().unwrap()],
            "--audit-policy-file needs --audit-log-path",
        ),
    ] {
        let data = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_karmada-rs"))
            .args(["serve", "--bind", "127.0.0.1:0", "--data-dir"])
            .arg(data.path())
            .args(&args)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let status = wait_for("the server to refuse the policy", DEADLINE, || {
            child.try_wait().unwrap()
        });
        let mut err = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
        assert!(!status.success());
        assert!(err.contains(want), "{err}");
    }
}
