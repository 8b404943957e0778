//! An aggregated server behind an in-process host: registration through an APIService,
//! Clusters served through the host, the proxy through both, and who gets refused.
//! (Non-master callers need the host's SubjectAccessReview API: see `tests/aggregated.rs`.)

use std::time::Duration;

use axum::body::Body;
use base64::Engine;
use http::{Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::AuthnFlags;
use crate::launch::StoreChoice;
use crate::launch::aggregated::AggregatedOptions;
use crate::proxy::transport::{self, Dialer, TlsSettings};
use crate::proxy_tests::{ControlPlane, DEADLINE};

const SVC: &str = "karmada-aggregated-apiserver";

async fn status_of(
    client: &transport::HttpClient,
    url: &str,
    headers: &[(&str, &str)],
) -> Result<(StatusCode, String), String> {
    let mut req = Request::get(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = tokio::time::timeout(DEADLINE, client.request(req.body(Body::empty()).unwrap()))
        .await
        .map_err(|_| "timeout".to_string())?
        .map_err(|e| format!("{e:?}"))?;
    let status = resp.status();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn client_with(ca_pem: &str, cert: Option<(String, String)>) -> transport::HttpClient {
    let tls = transport::client_config(&TlsSettings {
        ca_bundle: ca_pem.as_bytes().to_vec(),
        insecure: false,
        client_cert: cert,
        tls13_only: false,
    })
    .unwrap();
    transport::http_client(Dialer::new(tls, None, netproxy::ProxySource::Direct))
}

#[tokio::test]
async fn behind_a_host_aggregator() {
    let host = ControlPlane::start_with(true).await;
    host.running
        .chain
        .aggregator
        .set_recheck_interval(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let agg = crate::launch::aggregated::start(AggregatedOptions {
        data_dir: dir.path().to_path_buf(),
        bind: "127.0.0.1:0".parse().unwrap(),
        store: StoreChoice::Embedded,
        etcd_prefix: crate::launch::DEFAULT_ETCD_PREFIX.into(),
        tls_sans: vec![format!("{SVC}.karmada-system.svc")],
        tls_cert_file: None,
        tls_private_key_file: None,
        kubeconfig: Some(host.running.kubeconfig.clone()),
        authentication_kubeconfig: None,
        authorization_kubeconfig: None,
        authn: AuthnFlags::default(),
        authn_refresh: Duration::from_secs(30),
    })
    .await
    .unwrap();

    // Register it.
    host.apply(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": SVC, "namespace": "karmada-system"},
        "spec": {"type": "ExternalName", "externalName": "localhost"},
    }))
    .await;
    host.apply(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1alpha1.cluster.karmada.io"},
        "spec": {
            "group": "cluster.karmada.io", "version": "v1alpha1",
            "service": {"namespace": "karmada-system", "name": SVC, "port": agg.addr.port()},
            "caBundle": base64::engine::general_purpose::STANDARD.encode(&agg.serving_ca_pem),
            "groupPriorityMinimum": 2000, "versionPriority": 10,
        },
    }))
    .await;
    let start = std::time::Instant::now();
    loop {
        let t = host.running.chain.aggregator.table();
        if t.values().any(|b| b.available) {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "APIService never became available"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Clusters written through the host live in the aggregated server.
    host.apply(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "m1"},
        "spec": {"syncMode": "Push", "apiEndpoint": "https://127.0.0.1:1"},
    }))
    .await;
    let in_agg = crate::registry::Registry::new(
        &agg.state,
        agg.state
            .catalog
            .snapshot()
            .get("cluster.karmada.io", "v1alpha1", "clusters")
            .unwrap()
            .clone(),
    )
    .get("", "m1")
    .await
    .unwrap();
    assert_eq!(in_agg["spec"]["apiEndpoint"], "https://127.0.0.1:1");
    let local = crate::registry::Registry::new(
        &host.running.state,
        host.running
            .state
            .catalog
            .snapshot()
            .get("cluster.karmada.io", "v1alpha1", "clusters")
            .unwrap()
            .clone(),
    )
    .get("", "m1")
    .await;
    assert_eq!(
        local.unwrap_err().code,
        404,
        "the host's own clusters are not used"
    );

    // The aggregated server's discovery is its group only.
    let admin = (
        host.running.pki.admin.cert_pem.clone(),
        host.running.pki.admin.key_pem.clone(),
    );
    let direct_admin = client_with(&agg.serving_ca_pem, Some(admin));
    let (status, body) = status_of(&direct_admin, &format!("{}/apis", agg.url), &[])
        .await
        .unwrap();
    assert_eq!(status, StatusCode::OK);
    let groups: Vec<String> = serde_json::from_str::<Value>(&body).unwrap()["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(groups, vec!["cluster.karmada.io"]);
    let (status, _) = status_of(&direct_admin, &format!("{}/api", agg.url), &[])
        .await
        .unwrap();
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Who is refused: no credentials (but probes pass), front-proxy headers without the
    // front-proxy certificate, a front-proxy-CA certificate with another name, another CA.
    let anonymous = client_with(&agg.serving_ca_pem, None);
    let clusters = format!("{}/apis/cluster.karmada.io/v1alpha1/clusters", agg.url);
    let (status, _) = status_of(&anonymous, &clusters, &[]).await.unwrap();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = status_of(
        &anonymous,
        &clusters,
        &[
            ("X-Remote-User", "admin"),
            ("X-Remote-Group", "system:masters"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, body) = status_of(&anonymous, &format!("{}/readyz", agg.url), &[])
        .await
        .unwrap();
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));

    let pki = host.running.pki.dir.clone();
    let fp_ca = certs::Ca::from_pem(
        &std::fs::read_to_string(pki.join("front-proxy-ca.crt")).unwrap(),
        &std::fs::read_to_string(pki.join("front-proxy-ca.key")).unwrap(),
    )
    .unwrap();
    let wrong_cn = fp_ca.issue_client("not-the-front-proxy", &[]).unwrap();
    let c = client_with(
        &agg.serving_ca_pem,
        Some((wrong_cn.cert_pem, wrong_cn.key_pem)),
    );
    let (status, _) = status_of(
        &c,
        &clusters,
        &[
            ("X-Remote-User", "admin"),
            ("X-Remote-Group", "system:masters"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let right_cn = fp_ca.issue_client("front-proxy-client", &[]).unwrap();
    let c = client_with(
        &agg.serving_ca_pem,
        Some((right_cn.cert_pem, right_cn.key_pem)),
    );
    let (status, _) = status_of(
        &c,
        &clusters,
        &[
            ("X-Remote-User", "admin"),
            ("X-Remote-Group", "system:masters"),
        ],
    )
    .await
    .unwrap();
    assert_eq!(status, StatusCode::OK);
    let other = certs::Ca::generate().unwrap();
    let foreign = other.issue_client("front-proxy-client", &[]).unwrap();
    let c = client_with(
        &agg.serving_ca_pem,
        Some((foreign.cert_pem, foreign.key_pem)),
    );
    // Refused during the handshake, or with 401 when chains are checked per request.
    if let Ok((status, _)) = status_of(
        &c,
        &clusters,
        &[
            ("X-Remote-User", "admin"),
            ("X-Remote-Group", "system:masters"),
        ],
    )
    .await
    {
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }

    // Through the host: list and proxy.
    let req = Request::get(format!(
        "{}/apis/cluster.karmada.io/v1alpha1/clusters",
        host.running.url
    ))
    .header(header::ACCEPT, "application/json")
    .body(Body::empty())
    .unwrap();
    let resp = host.send(req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    let list: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(list["items"][0]["metadata"]["name"], "m1");

    // The proxy, through the host and the aggregated server, with credentials from the
    // host's Secrets.
    let member = crate::proxy_tests::Backend::start(Default::default()).await;
    host.add_cluster(
        "m2",
        &format!("https://{}", member.addr),
        Some(&member.ca_pem),
        json!({}),
    )
    .await;
    let req = Request::get(format!(
        "{}/apis/cluster.karmada.io/v1alpha1/clusters/m2/proxy/echo/api/v1/pods?limit=1",
        host.running.url
    ))
    .body(Body::empty())
    .unwrap();
    let resp = host.send(req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let seen = member.last();
    assert_eq!(seen.path_and_query, "/echo/api/v1/pods?limit=1");
    assert_eq!(
        seen.headers["authorization"],
        "Bearer m2-impersonator-token"
    );
    assert_eq!(seen.headers["impersonate-user"], "karmada-admin");
    assert!(seen.headers.get("x-remote-user").is_none());

    // The host's garbage collector finds owners in the aggregated server: a ConfigMap owned
    // by Cluster m1 stays while m1 exists (a sentinel with a missing owner shows that the
    // collector ran), and goes with it.
    let m1_uid = in_agg["metadata"]["uid"].as_str().unwrap().to_string();
    let owned_by = |name: &str, api_version: &str, kind: &str, owner: &str, uid: &str| {
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {
                "name": name, "namespace": "default",
                "ownerReferences": [{"apiVersion": api_version, "kind": kind, "name": owner, "uid": uid}],
            },
        })
    };
    host.apply(owned_by(
        "of-m1",
        "cluster.karmada.io/v1alpha1",
        "Cluster",
        "m1",
        &m1_uid,
    ))
    .await;
    host.apply(owned_by(
        "orphan",
        "v1",
        "ConfigMap",
        "gone",
        "00000000-0000-0000-0000-000000000000",
    ))
    .await;
    let cms: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(host.admin.clone(), "default");
    let start = std::time::Instant::now();
    while cms.get_opt("orphan").await.unwrap().is_some() {
        assert!(start.elapsed() < DEADLINE, "the collector never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        cms.get_opt("of-m1").await.unwrap().is_some(),
        "a live remote owner kept it"
    );
    let clusters: kube::Api<kube::api::DynamicObject> =
        kube::Api::all_with(host.admin.clone(), &crate::proxy_tests::clusters());
    clusters
        .delete("m1", &kube::api::DeleteParams::default())
        .await
        .unwrap();
    let start = std::time::Instant::now();
    while cms.get_opt("of-m1").await.unwrap().is_some() {
        assert!(
            start.elapsed() < DEADLINE,
            "the dependent of a deleted remote owner stayed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    drop(dir);
    agg.shutdown().await;
    host.running.shutdown().await;
}
