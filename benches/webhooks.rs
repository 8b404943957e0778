//! Admission webhook benchmark: what one validating webhook on loopback adds to a create, and
//! what the webhook plugins cost a write no webhook takes. Starts the real `karmada-rs serve`
//! on the embedded store (`--unsafe-no-fsync`, so that disk syncs do not hide fractions of a
//! millisecond), serves an HTTPS webhook in the bench process (HTTP/2, allowing everything),
//! and creates 1 KiB ConfigMaps one at a time from one client. Run:
//! `cargo bench --bench webhooks` (prints a Markdown table; `WEBHOOK_BENCH_CREATES` sets the
//! creates per phase, 2,000 by default).
//!
//! Phases, in this order, each in its own namespace: the webhook plugins disabled
//! (`--disable-admission-plugins`, a second server: the path before the plugins existed); the
//! plugins on with no configuration; a configuration that takes Deployments only (ConfigMaps
//! do not match); one validating webhook taking every ConfigMap create; the configuration
//! removed again (drift check); a ValidatingAdmissionPolicy with 5 CEL validations bound to
//! every ConfigMap create (creates/s compared with the phases without it, target ≥ 0.9x).

mod support;

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::{Duration, Instant};

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};
use support::{client, env_or, ms, percentile};

fn configmap(name: &str) -> ConfigMap {
    let mut data = BTreeMap::new();
    data.insert("payload".to_string(), "x".repeat(1024));
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.to_string()),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// Serial creates in a fresh namespace; the sorted latencies.
async fn creates(c: &kube::Client, ns: &str, n: usize) -> Vec<Duration> {
    let nss: Api<Namespace> = Api::all(c.clone());
    let namespace: Namespace =
        serde_json::from_value(json!({"metadata": {"name": ns}})).expect("namespace");
    nss.create(&PostParams::default(), &namespace)
        .await
        .expect("namespace");
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), ns);
    // Warm the connection and the namespace's caches.
    for i in 0..50 {
        api.create(&PostParams::default(), &configmap(&format!("warm-{i}")))
            .await
            .expect("create");
    }
    let mut lat = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        api.create(&PostParams::default(), &configmap(&format!("cm-{i}")))
            .await
            .expect("create");
        lat.push(t.elapsed());
    }
    lat.sort();
    lat
}

/// An HTTPS webhook on a free loopback port answering every review `allowed`.
async fn serve_webhook(cert: &certs::IssuedCert) -> u16 {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .expect("cert");
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes()).expect("key");
    let mut config = rustls::ServerConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("versions")
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .expect("server config");
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    |req: http::Request<hyper::body::Incoming>| async {
                        let body = req
                            .into_body()
                            .collect()
                            .await
                            .map(|b| b.to_bytes())
                            .unwrap_or_default();
                        let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                        let out = json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                         "response": {"uid": review["request"]["uid"], "allowed": true}});
                        Ok::<_, Infallible>(http::Response::new(Full::new(bytes::Bytes::from(
                            out.to_string(),
                        ))))
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                )
                .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                .await;
            });
        }
    });
    port
}

fn configuration(name: &str, resources: &str, port: u16, ca: &certs::Ca) -> Value {
    let (group, resource) = resources.split_once('/').unwrap_or(("", resources));
    json!({
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            "name": format!("{name}.bench.example.com"),
            "clientConfig": {
                "url": format!("https://127.0.0.1:{port}/validate"),
                "caBundle": base64::engine::general_purpose::STANDARD.encode(ca.cert_pem()),
            },
            "rules": [{"operations": ["CREATE"], "apiGroups": [group], "apiVersions": ["v1"], "resources": [resource]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    })
}

/// A policy with five validations of every ConfigMap create, and its Deny binding.
fn policy() -> (Value, Value) {
    let validations: Vec<Value> = [
        "object.metadata.name.size() < 64",
        "has(object.data) && object.data.size() <= 8",
        "object.data.all(k, k.matches('^[a-z]+$'))",
        "!has(object.metadata.labels) || !('forbidden' in object.metadata.labels)",
        "object.data.payload.size() <= 4096",
    ]
    .iter()
    .map(|e| json!({"expression": e}))
    .collect();
    (
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "configmaps"},
            "spec": {
                "matchConstraints": {"resourceRules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                "validations": validations,
            },
        }),
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "configmaps"},
            "spec": {"policyName": "configmaps", "validationActions": ["Deny"]},
        }),
    )
}

/// Waits (with a deadline) until the policy denies a ConfigMap it forbids.
async fn policy_in_force(c: &kube::Client) {
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let mut bad = configmap("forbidden");
    bad.metadata.labels = Some([("forbidden".to_string(), "yes".to_string())].into());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let dry = PostParams {
            dry_run: true,
            ..Default::default()
        };
        if api.create(&dry, &bad).await.is_err() {
            return;
        }
        assert!(Instant::now() < deadline, "the policy never took effect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Creates per second of serial creates.
fn rate(lat: &[Duration]) -> f64 {
    lat.len() as f64 / lat.iter().map(Duration::as_secs_f64).sum::<f64>()
}

async fn apply(c: &kube::Client, obj: &Value) {
    let plural = match obj["kind"].as_str() {
        Some("ValidatingAdmissionPolicy") => "validatingadmissionpolicies",
        Some("ValidatingAdmissionPolicyBinding") => "validatingadmissionpolicybindings",
        _ => "validatingwebhookconfigurations",
    };
    let req = http::Request::post(format!("/apis/admissionregistration.k8s.io/v1/{plural}"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(obj).expect("json"))
        .expect("request");
    c.request_text(req).await.expect("create configuration");
}

async fn delete(c: &kube::Client, name: &str) {
    let api: Api<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration> =
        Api::all(c.clone());
    api.delete(name, &DeleteParams::default())
        .await
        .expect("delete configuration");
}

fn row(rows: &mut Vec<(String, String)>, what: &str, lat: &[Duration]) -> Duration {
    let p50 = percentile(lat, 0.5);
    rows.push((
        what.to_string(),
        format!("p50 {}, p99 {}", ms(p50), ms(percentile(lat, 0.99))),
    ));
    p50
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n = env_or("WEBHOOK_BENCH_CREATES", 2000);
    let ca = certs::Ca::generate().expect("ca");
    let cert = ca
        .issue_serving("bench-webhook", &["127.0.0.1".to_owned()])
        .expect("cert");
    let port = serve_webhook(&cert).await;
    let mut rows = Vec::new();

    let disabled = support::spawn(
        &[
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--unsafe-no-fsync",
            "--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook",
        ],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let c = client(&disabled.kubeconfig).await;
    let before = row(
        &mut rows,
        "webhook plugins disabled",
        &creates(&c, "disabled", n).await,
    );
    drop(c);
    drop(disabled);

    let server = support::spawn(
        &["serve", "--bind", "127.0.0.1:0", "--unsafe-no-fsync"],
        "karmada-rs control plane serving at",
        "karmada.kubeconfig",
        None,
    );
    let c = client(&server.kubeconfig).await;
    let plain = row(
        &mut rows,
        "webhook plugins on, no configuration",
        &creates(&c, "plain", n).await,
    );
    apply(&c, &configuration("other", "apps/deployments", port, &ca)).await;
    let unmatched = row(
        &mut rows,
        "a webhook for Deployments configured (ConfigMaps not matched)",
        &creates(&c, "unmatched", n).await,
    );
    delete(&c, "other").await;
    apply(&c, &configuration("hook", "configmaps", port, &ca)).await;
    let hooked = row(
        &mut rows,
        "one validating webhook on loopback takes each create",
        &creates(&c, "hooked", n).await,
    );
    delete(&c, "hook").await;
    let after_lat = creates(&c, "after", n).await;
    let after = row(&mut rows, "configuration removed again", &after_lat);
    let (vap, vap_binding) = policy();
    apply(&c, &vap).await;
    apply(&c, &vap_binding).await;
    policy_in_force(&c).await;
    let policy_lat = creates(&c, "policy", n).await;
    row(
        &mut rows,
        "a ValidatingAdmissionPolicy with 5 validations takes each create",
        &policy_lat,
    );
    let baseline = (plain + after) / 2;
    println!("{n} serial creates of 1 KiB ConfigMaps per phase, one client\n");
    println!("| phase | create latency |\n|---|---|");
    for (m, r) in &rows {
        println!("| {m} | {r} |");
    }
    println!(
        "\nadded at p50 by the webhook: {} (target ≤ 1 ms); plugins on without configuration vs disabled: {}; unmatched configuration vs none: {}",
        signed_ms(hooked, baseline),
        signed_ms(plain, before),
        signed_ms(unmatched, plain),
    );
    println!(
        "creates/s with the policy: {:.0}, without (configuration removed again): {:.0}, ratio {:.2}x (target ≥ 0.9x)",
        rate(&policy_lat),
        rate(&after_lat),
        rate(&policy_lat) / rate(&after_lat),
    );
    drop(server);
}

fn signed_ms(a: Duration, b: Duration) -> String {
    let d = a.as_secs_f64() - b.as_secs_f64();
    format!("{:+.3} ms", d * 1000.0)
}
