//! End-to-end: bearer-token authentication — service-account tokens from `kubectl create
//! token` (TokenRequest), the static token file, and the ways a credential stops working:
//! deleted or replaced service account, deleted bound object, expiry, tampering, another CA.

mod support;

use std::path::Path;

use apiserver::auth::ServiceAccountTokens;
use apiserver::auth::service_account::Claims;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use support::{DEADLINE, Server, wait_for};

/// `Some(true)` when the request authenticated (whatever authorization said), `Some(false)`
/// on 401.
fn authenticates(s: &Server, kubeconfig: &Path) -> bool {
    let out = s.kubectl_as(kubeconfig, &["get", "--raw", "/api"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || stderr.contains("Forbidden") || stderr.contains("forbidden") {
        return true;
    }
    assert!(
        stderr.contains("Unauthorized"),
        "neither authenticated nor 401: {stderr}"
    );
    false
}

fn create_token(s: &Server, ns: &str, sa: &str, extra: &[&str]) -> String {
    let mut args = vec!["-n", ns, "create", "token", sa];
    args.extend_from_slice(extra);
    let token = s.kubectl_ok(&args).trim().to_string();
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
    token
}

fn decode_claims(token: &str) -> serde_json::Value {
    let payload = token.split('.').nth(1).expect("payload");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64")).expect("json")
}

#[test]
fn service_account_tokens() {
    let s = Server::start();
    s.kubectl_ok(&["create", "namespace", "team"]);
    s.kubectl_ok(&["-n", "team", "create", "serviceaccount", "robot"]);
    let sa = s.get_json(&["-n", "team", "serviceaccount", "robot"]);
    let uid = sa["metadata"]["uid"].as_str().unwrap().to_string();

    let token = create_token(&s, "team", "robot", &[]);
    let claims = decode_claims(&token);
    assert_eq!(claims["sub"], "system:serviceaccount:team:robot");
    assert_eq!(
        claims["iss"],
        "https://kubernetes.default.svc.cluster.local"
    );
    assert_eq!(
        claims["kubernetes.io"]["serviceaccount"]["uid"],
        uid.as_str()
    );
    let lifetime = claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap();
    assert_eq!(lifetime, 3600, "kube's default expiration");
    let kc = s.token_kubeconfig("robot", &token);
    assert!(authenticates(&s, &kc));

    // A longer duration and other audiences are honoured.
    let long = create_token(&s, "team", "robot", &["--duration=2h"]);
    let c = decode_claims(&long);
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        7200
    );
    let vault = create_token(&s, "team", "robot", &["--audience=vault"]);
    assert_eq!(decode_claims(&vault)["aud"], serde_json::json!(["vault"]));
    assert!(
        !authenticates(&s, &s.token_kubeconfig("vault", &vault)),
        "a token for another audience is not accepted by the API"
    );

    // TokenReview: what an aggregated server or webhook asks.
    let review = |token: &str, audiences: &[&str]| -> serde_json::Value {
        let body = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token, "audiences": audiences},
        });
        let out = s.kubectl_stdin_ok(
            &["create", "--validate=false", "-f", "-", "-o", "json"],
            &body.to_string(),
        );
        serde_json::from_str(&out).unwrap()
    };
    let ok = review(&token, &[]);
    assert_eq!(ok["status"]["authenticated"], true);
    assert_eq!(
        ok["status"]["user"]["username"],
        "system:serviceaccount:team:robot"
    );
    assert_eq!(ok["status"]["user"]["uid"], uid.as_str());
    let for_vault = review(&vault, &["vault"]);
    assert_eq!(for_vault["status"]["authenticated"], true);
    assert_eq!(
        for_vault["status"]["audiences"],
        serde_json::json!(["vault"])
    );
    let bad = review("not-a-token", &[]);
    assert_ne!(bad["status"]["authenticated"], true);
    assert!(
        bad["status"]["error"]
            .as_str()
            .is_some_and(|e| !e.is_empty())
    );

    // Validation and missing accounts.
    let err = s.kubectl_err(&["-n", "team", "create", "token", "robot", "--duration=1m"]);
    assert!(
        err.contains("10 minutes") || err.contains("duration"),
        "{err}"
    );
    let err = s.kubectl_err(&["-n", "team", "create", "token", "ghost"]);
    assert!(err.contains("serviceaccounts \"ghost\" not found"), "{err}");

    // A tampered token: the payload names another account, the signature no longer fits.
    let mut parts: Vec<String> = token.split('.').map(str::to_string).collect();
    let mut forged = decode_claims(&token);
    forged["sub"] = "system:serviceaccount:kube-system:admin".into();
    forged["kubernetes.io"]["namespace"] = "kube-system".into();
    forged["kubernetes.io"]["serviceaccount"]["name"] = "admin".into();
    parts[1] = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&forged).unwrap());
    assert!(!authenticates(
        &s,
        &s.token_kubeconfig("forged", &parts.join("."))
    ));
    let mut sig = token.clone();
    let last = sig.pop().unwrap();
    sig.push(if last == 'A' { 'B' } else { 'A' });
    assert!(!authenticates(&s, &s.token_kubeconfig("badsig", &sig)));
    assert!(!authenticates(
        &s,
        &s.token_kubeconfig("garbage", "not-a-token")
    ));

    // An expired token signed with the server's own key.
    let key = std::fs::read_to_string(s.data_path("pki/sa.key")).unwrap();
    let issuer = "https://kubernetes.default.svc.cluster.local".to_string();
    let tokens = ServiceAccountTokens::new(&key, issuer.clone(), vec![issuer]).unwrap();
    let mut old: Claims = serde_json::from_value(decode_claims(&token)).unwrap();
    old.iat -= 7200;
    old.nbf -= 7200;
    old.exp = old.iat + 3600;
    let expired = tokens.sign(&old).unwrap();
    assert!(!authenticates(&s, &s.token_kubeconfig("expired", &expired)));
    // The same claims with a valid expiry do authenticate: only the expiry was wrong.
    old.exp = old.iat + 3 * 7200;
    assert!(authenticates(
        &s,
        &s.token_kubeconfig("resigned", &tokens.sign(&old).unwrap())
    ));

    // A token bound to a secret dies with the secret.
    s.kubectl_ok(&["-n", "team", "create", "secret", "generic", "holder"]);
    let bound = create_token(
        &s,
        "team",
        "robot",
        &["--bound-object-kind=Secret", "--bound-object-name=holder"],
    );
    assert_eq!(
        decode_claims(&bound)["kubernetes.io"]["secret"]["name"],
        "holder"
    );
    let bound_kc = s.token_kubeconfig("bound", &bound);
    assert!(authenticates(&s, &bound_kc));
    s.kubectl_ok(&["-n", "team", "delete", "secret", "holder"]);
    wait_for("the bound token to stop working", DEADLINE, || {
        (!authenticates(&s, &bound_kc)).then_some(())
    });

    // Deleting the service account invalidates its tokens, and so does recreating it
    // (a new uid).
    s.kubectl_ok(&["-n", "team", "delete", "serviceaccount", "robot"]);
    wait_for(
        "the deleted account's token to stop working",
        DEADLINE,
        || (!authenticates(&s, &kc)).then_some(()),
    );
    s.kubectl_ok(&["-n", "team", "create", "serviceaccount", "robot"]);
    assert!(!authenticates(&s, &kc), "a recreated account has a new uid");
    let fresh = create_token(&s, "team", "robot", &[]);
    assert!(authenticates(&s, &s.token_kubeconfig("fresh", &fresh)));
}

#[test]
fn static_tokens_and_foreign_certificates() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tokens.csv");
    std::fs::write(
        &file,
        "st4tic-t0ken-alice,alice,1001,\"dev\"\nst4tic-t0ken-bob,bob,1002\n",
    )
    .unwrap();
    let s = Server::start_with(
        support::Backend::Embedded,
        &["--token-auth-file", file.to_str().unwrap()],
    );
    assert!(authenticates(
        &s,
        &s.token_kubeconfig("alice", "st4tic-t0ken-alice")
    ));
    assert!(authenticates(
        &s,
        &s.token_kubeconfig("bob", "st4tic-t0ken-bob")
    ));
    assert!(!authenticates(
        &s,
        &s.token_kubeconfig("mallory", "st4tic-t0ken-eve")
    ));

    // Client certificates from the server's CA authenticate; from another CA they do not,
    // even claiming system:masters.
    assert!(authenticates(&s, &s.cert_kubeconfig("carol", Some("dev"))));
    let foreign = s.foreign_cert_kubeconfig("admin", Some("system:masters"));
    assert!(!authenticates(&s, &foreign));
    // No credentials at all: only the public-info paths are served (to system:anonymous).
    assert_eq!(s.anonymous_request("GET", "/version").0, 200);
    assert_eq!(s.anonymous_request("GET", "/api/v1/namespaces").0, 401);
}

/// Load balancers and probes read /healthz, /livez, /readyz and /version without credentials
/// (kube-apiserver's system:public-info-viewer binding); every other path stays 401 to them,
/// and a credential that fails is 401 even there. `--anonymous-auth=false` closes the probes
/// too (`--anonymous-auth=true`, every path under RBAC, is the authorization matrix's).
#[test]
fn anonymous_requests_reach_only_health_and_version() {
    let s = Server::start();
    for path in ["/healthz", "/livez", "/readyz"] {
        let a = s.raw(false, "GET", path, None, b"").expect("an answer");
        assert_eq!((a.status, a.body.as_str()), (200, "ok"), "{path}");
    }
    for path in ["/version", "/version/"] {
        let v = s.raw(false, "GET", path, None, b"").expect("an answer");
        assert_eq!(v.status, 200, "{path}: {}", v.body);
        let doc: serde_json::Value = serde_json::from_str(&v.body).expect("version JSON");
        assert_eq!(
            (doc["major"].as_str(), doc["minor"].as_str()),
            (Some("1"), Some("32"))
        );
    }
    let unauthorized = |s: &Server, path: &str| {
        let a = s.raw(false, "GET", path, None, b"").expect("an answer");
        assert_eq!(a.status, 401, "{path}: {}", a.body);
        let status: serde_json::Value = serde_json::from_str(&a.body).expect("a Status");
        assert_eq!(
            (&status["kind"], &status["reason"], &status["message"]),
            (
                &"Status".into(),
                &"Unauthorized".into(),
                &"Unauthorized".into()
            ),
            "{path}"
        );
    };
    for path in [
        "/",
        "/api",
        "/apis",
        "/api/v1/namespaces",
        "/apis/cluster.karmada.io/v1alpha1/clusters",
        "/metrics",
        "/openapi/v3",
        "/readyz/etcd",
        "/healthz/ping",
        "/version/x",
    ] {
        unauthorized(&s, path);
    }
    let bad_token = s.token_kubeconfig("nobody", "n0t-a-t0ken");
    let out = s.kubectl_as(&bad_token, &["get", "--raw", "/healthz"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"));

    let closed = Server::start_with(support::Backend::Embedded, &["--anonymous-auth=false"]);
    for path in ["/healthz", "/livez", "/readyz", "/version", "/api"] {
        unauthorized(&closed, path);
    }
    assert!(
        closed
            .kubectl_ok(&["get", "--raw", "/readyz"])
            .contains("ok")
    );
}

#[test]
fn legacy_service_account_token_secrets() {
    // karmada-cluster exists from the start.
    let s = Server::start();
    // As `karmadactl join` does: the Secret first, its account afterwards.
    s.kubectl_stdin_ok(
        &["create", "--validate=false", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token",
            "metadata":{"name":"karmada-member1","namespace":"karmada-cluster",
                        "annotations":{"kubernetes.io/service-account.name":"karmada-member1"}}}"#,
    );
    s.kubectl_ok(&[
        "-n",
        "karmada-cluster",
        "create",
        "serviceaccount",
        "karmada-member1",
    ]);
    let secret = wait_for("the token controller to fill the secret", DEADLINE, || {
        let v = s.get_json(&["-n", "karmada-cluster", "secret", "karmada-member1"]);
        v["data"]["token"].as_str().map(|_| v.clone())
    });
    let decode = |k: &str| {
        String::from_utf8(
            base64::engine::general_purpose::STANDARD
                .decode(secret["data"][k].as_str().unwrap())
                .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(decode("namespace"), "karmada-cluster");
    assert_eq!(decode("ca.crt"), s.ca_pem());
    let sa = s.get_json(&["-n", "karmada-cluster", "serviceaccount", "karmada-member1"]);
    assert_eq!(
        secret["metadata"]["annotations"]["kubernetes.io/service-account.uid"],
        sa["metadata"]["uid"]
    );
    let token = decode("token");
    assert_eq!(decode_claims(&token)["iss"], "kubernetes/serviceaccount");
    let kc = s.token_kubeconfig("legacy", &token);
    let who: serde_json::Value =
        serde_json::from_str(&s.kubectl_as_ok(&kc, &["auth", "whoami", "-o", "json"])).unwrap();
    assert_eq!(
        who["status"]["userInfo"]["username"],
        "system:serviceaccount:karmada-cluster:karmada-member1"
    );
    // The token lives as long as its Secret.
    s.kubectl_ok(&[
        "-n",
        "karmada-cluster",
        "delete",
        "secret",
        "karmada-member1",
    ]);
    wait_for(
        "the deleted secret's token to stop working",
        DEADLINE,
        || (!authenticates(&s, &kc)).then_some(()),
    );
}
