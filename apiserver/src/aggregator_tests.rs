//! The aggregator against a small metrics-adapter-like HTTPS backend started by the test:
//! routing, the front-proxy identity, discovery merging and the Available condition.
//! End-to-end tests with a real `karmada-rs serve --aggregated` live in `tests/aggregated.rs`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use base64::Engine;
use http::{HeaderValue, Request, StatusCode, header};
use http_body_util::BodyExt;
use serde_json::{Value, json};

use crate::proxy_tests::{ControlPlane, DEADLINE};

/// A request the adapter saw: path, headers, client certificate CN.
type SeenRequest = (String, http::HeaderMap, Option<String>);

#[derive(Clone)]
struct Adapter {
    down: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<SeenRequest>>>,
}

async fn adapter(
    axum::extract::State(st): axum::extract::State<Adapter>,
    req: Request<Body>,
) -> Response {
    let client_cn = req
        .extensions()
        .get::<crate::auth::PeerCertificates>()
        .and_then(|p| p.chain().first().cloned())
        .and_then(|c| crate::auth::user_from_certificate(&c))
        .map(|u| u.name);
    let path = req.uri().path().to_string();
    st.seen
        .lock()
        .unwrap()
        .push((path.clone(), req.headers().clone(), client_cn));
    let json_resp = |v: Value| {
        let mut r = Response::new(Body::from(v.to_string()));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    };
    if st.down.load(Ordering::SeqCst) {
        let mut r = Response::new(Body::from("down"));
        *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
        return r;
    }
    match path.as_str() {
        "/apis/metrics.k8s.io/v1beta1" => json_resp(json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "metrics.k8s.io/v1beta1",
            "resources": [
                {"name": "pods", "singularName": "", "namespaced": true, "kind": "PodMetrics", "verbs": ["get", "list"]},
                {"name": "nodes", "singularName": "", "namespaced": false, "kind": "NodeMetrics", "verbs": ["get", "list"]},
            ],
        })),
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods" => json_resp(json!({
            "kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": [],
        })),
        "/openapi/v2" => json_resp(json!({
            "swagger": "2.0",
            "info": {"title": "metrics-adapter", "version": "v0.1"},
            "paths": {
                "/apis/metrics.k8s.io/v1beta1/nodes/{name}": {"get": {
                    "operationId": "readMetricsV1beta1NodeMetrics",
                    "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics"}}},
                    "x-kubernetes-action": "get",
                    "x-kubernetes-group-version-kind": {"group": "metrics.k8s.io", "kind": "NodeMetrics", "version": "v1beta1"},
                }},
                "/version/": {"get": {"operationId": "getCodeVersion"}},
            },
            "definitions": {
                "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics": {
                    "description": "NodeMetrics sets resource usage metrics of a node.",
                    "type": "object",
                    "properties": {
                        "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
                        "window": {"type": "string", "description": "The sampling window."},
                    },
                    "x-kubernetes-group-version-kind": [{"group": "metrics.k8s.io", "kind": "NodeMetrics", "version": "v1beta1"}],
                },
                "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        })),
        "/openapi/v3" => json_resp(json!({"paths": {"apis/metrics.k8s.io/v1beta1": {
            "serverRelativeURL": "/openapi/v3/apis/metrics.k8s.io/v1beta1?hash=ADAPTER"}}})),
        "/openapi/v3/apis/metrics.k8s.io/v1beta1" => json_resp(json!({
            "openapi": "3.0.0",
            "components": {"schemas": {"io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics": {
                "type": "object", "description": "NodeMetrics sets resource usage metrics of a node.",
                "x-kubernetes-group-version-kind": [{"group": "metrics.k8s.io", "kind": "NodeMetrics", "version": "v1beta1"}],
            }}},
        })),
        _ => {
            let mut r = Response::new(Body::from("{}"));
            *r.status_mut() = StatusCode::NOT_FOUND;
            r
        }
    }
}

async fn wait_condition(cp: &ControlPlane, name: &str, status: &str) -> Value {
    let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(
        cp.admin.clone(),
        &kube::discovery::ApiResource {
            group: "apiregistration.k8s.io".into(),
            version: "v1".into(),
            api_version: "apiregistration.k8s.io/v1".into(),
            kind: "APIService".into(),
            plural: "apiservices".into(),
        },
    );
    let start = std::time::Instant::now();
    loop {
        let o = api.get(name).await.unwrap();
        let v = serde_json::to_value(&o).unwrap();
        let cond = v["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Available").cloned());
        if let Some(c) = cond
            && c["status"] == status
        {
            return c;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{name} never became Available={status}: {v}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn get(cp: &ControlPlane, path: &str, accept: &str) -> (StatusCode, String) {
    let req = Request::get(format!("{}{path}", cp.running.url))
        .header(header::ACCEPT, accept)
        .body(Body::empty())
        .unwrap();
    let resp = cp.send(req).await;
    let status = resp.status();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// `/openapi/v2` once `done` holds for it.
async fn wait_for_v2(cp: &ControlPlane, done: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let (status, body) = get(cp, "/openapi/v2", "application/json").await;
        assert_eq!(status, StatusCode::OK);
        let v2: Value = serde_json::from_str(&body).unwrap();
        if done(&v2) {
            return v2;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "/openapi/v2 never changed as expected"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `path` until it answers `want`: discovery follows an APIService's availability through
/// the aggregator's own watch of it, a moment after the condition is written.
async fn wait_for_status(cp: &ControlPlane, path: &str, want: StatusCode) {
    let start = std::time::Instant::now();
    loop {
        let (status, _) = get(cp, path, "application/json").await;
        if status == want {
            return;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "{path} answered {status}, never {want}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn routes_to_available_backends_as_the_front_proxy() {
    let cp = ControlPlane::start().await;
    cp.running
        .chain
        .aggregator
        .set_recheck_interval(Duration::from_millis(300));
    // The backend trusts the host's front-proxy CA, published like kube-apiserver does.
    let cm: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(cp.admin.clone(), "kube-system");
    let auth_cm = cm.get("extension-apiserver-authentication").await.unwrap();
    let data = auth_cm.data.unwrap();
    assert_eq!(
        data["requestheader-allowed-names"],
        "[\"front-proxy-client\"]"
    );
    let fp_ca = data["requestheader-client-ca-file"].clone();

    let ca = certs::Ca::generate().unwrap();
    let serving = ca
        .issue_serving("metrics", &["metrics-server.kube-system.svc".to_string()])
        .unwrap();
    let tls = crate::server::server_config(&crate::server::TlsFiles {
        cert_pem: serving.cert_pem,
        key_pem: serving.key_pem,
        client_ca_pems: vec![fp_ca],
    })
    .unwrap();
    let st = Adapter {
        down: Arc::default(),
        seen: Arc::default(),
    };
    let app = axum::Router::new().fallback(adapter).with_state(st.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let serving = crate::server::serve(listener, tls, app).unwrap();
    let port = serving.addr.port();

    cp.apply(json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "metrics-server", "namespace": "kube-system"},
        "spec": {"type": "ExternalName", "externalName": "localhost"},
    }))
    .await;
    let ca_b64 = base64::engine::general_purpose::STANDARD.encode(ca.cert_pem());
    cp.apply(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io"},
        "spec": {
            "group": "metrics.k8s.io", "version": "v1beta1",
            "service": {"namespace": "kube-system", "name": "metrics-server", "port": port},
            "caBundle": ca_b64, "groupPriorityMinimum": 100, "versionPriority": 100,
        },
    }))
    .await;
    let c = wait_condition(&cp, "v1beta1.metrics.k8s.io", "True").await;
    assert_eq!(c["reason"], "Passed");
    assert_eq!(c["message"], "all checks passed");
    // The checks came as system:kube-aggregator with the front-proxy certificate.
    {
        let seen = st.seen.lock().unwrap();
        let (path, h, cn) = seen.first().unwrap();
        assert_eq!(path, "/apis/metrics.k8s.io/v1beta1");
        assert_eq!(h["x-remote-user"], "system:kube-aggregator");
        assert_eq!(cn.as_deref(), Some("front-proxy-client"));
    }

    // Requests are proxied as the caller.
    let (status, body) = get(
        &cp,
        "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?limit=3",
        "application/json",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["kind"],
        "PodMetricsList"
    );
    {
        let seen = st.seen.lock().unwrap();
        let (path, h, cn) = seen.last().unwrap();
        assert_eq!(path, "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods");
        assert_eq!(h["x-remote-user"], "karmada-admin");
        let groups: Vec<_> = h.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, vec!["system:masters", "system:authenticated"]);
        assert!(h.get("authorization").is_none());
        assert_eq!(cn.as_deref(), Some("front-proxy-client"));
    }

    // Discovery: legacy, per group, and aggregated.
    wait_for_status(&cp, "/apis/metrics.k8s.io", StatusCode::OK).await;
    let (_, apis) = get(&cp, "/apis", "application/json").await;
    let apis: Value = serde_json::from_str(&apis).unwrap();
    assert!(
        apis["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "metrics.k8s.io"),
        "{apis}"
    );
    let (status, group) = get(&cp, "/apis/metrics.k8s.io", "application/json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&group).unwrap()["preferredVersion"]["groupVersion"],
        "metrics.k8s.io/v1beta1"
    );
    let (_, agg) = get(
        &cp,
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
    )
    .await;
    let agg: Value = serde_json::from_str(&agg).unwrap();
    let metrics = agg["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "metrics.k8s.io")
        .unwrap();
    let resources: Vec<&str> = metrics["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["resource"].as_str().unwrap())
        .collect();
    assert_eq!(resources, vec!["pods", "nodes"]);

    // OpenAPI: the backend's documents join the server's (kube-aggregator's OpenAPI
    // aggregation): its /apis/ paths and their definitions in v2 (the ObjectMeta it
    // carries is not ours, so it is renamed), its group-version's document in v3.
    let node_metrics = "io.k8s.metrics.pkg.apis.metrics.v1beta1.NodeMetrics";
    let v2 = wait_for_v2(&cp, |v2| v2["definitions"].get(node_metrics).is_some()).await;
    assert!(v2["paths"]["/apis/metrics.k8s.io/v1beta1/nodes/{name}"]["get"].is_object());
    assert!(v2["paths"].get("/version/").is_none());
    assert_eq!(
        v2["definitions"][node_metrics]["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta_v2"
    );
    assert!(v2["definitions"]["io.k8s.api.apps.v1.Deployment"].is_object());
    let (_, root) = get(&cp, "/openapi/v3", "application/json").await;
    let root: Value = serde_json::from_str(&root).unwrap();
    let url = root["paths"]["apis/metrics.k8s.io/v1beta1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        url.starts_with("/openapi/v3/apis/metrics.k8s.io/v1beta1?hash="),
        "{url}"
    );
    assert!(root["paths"]["apis/apps/v1"].is_object());
    let (status, doc) = get(&cp, &url, "application/json").await;
    assert_eq!(status, StatusCode::OK);
    let doc: Value = serde_json::from_str(&doc).unwrap();
    assert_eq!(
        doc["components"]["schemas"][node_metrics]["description"],
        "NodeMetrics sets resource usage metrics of a node."
    );

    // A failing backend turns unavailable; requests then get 503 and discovery drops it.
    st.down.store(true, Ordering::SeqCst);
    let c = wait_condition(&cp, "v1beta1.metrics.k8s.io", "False").await;
    assert_eq!(c["reason"], "FailedDiscoveryCheck");
    assert!(
        c["message"].as_str().unwrap().contains(&format!(
            "bad status from https://localhost:{port}/apis/metrics.k8s.io/v1beta1: 503"
        )),
        "{c}"
    );
    // Until the routing table follows the condition, the request still reaches the backend,
    // which answers its own 503; then the aggregator answers without asking it.
    let start = std::time::Instant::now();
    loop {
        let (status, body) = get(
            &cp,
            "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods",
            "application/json",
        )
        .await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        if body == "service unavailable\n" {
            break;
        }
        assert!(
            start.elapsed() < DEADLINE,
            "the backend still answers: {body}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    wait_for_status(&cp, "/apis/metrics.k8s.io", StatusCode::NOT_FOUND).await;
    wait_for_v2(&cp, |v2| v2["definitions"].get(node_metrics).is_none()).await;
    let (_, root) = get(&cp, "/openapi/v3", "application/json").await;
    let root: Value = serde_json::from_str(&root).unwrap();
    assert!(root["paths"].get("apis/metrics.k8s.io/v1beta1").is_none());
    st.down.store(false, Ordering::SeqCst);
    wait_condition(&cp, "v1beta1.metrics.k8s.io", "True").await;

    // A missing Service, and local APIServices.
    cp.apply(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1alpha1.search.karmada.io"},
        "spec": {
            "group": "search.karmada.io", "version": "v1alpha1",
            "service": {"namespace": "karmada-system", "name": "karmada-search"},
            "insecureSkipTLSVerify": true, "groupPriorityMinimum": 2000, "versionPriority": 10,
        },
    }))
    .await;
    let c = wait_condition(&cp, "v1alpha1.search.karmada.io", "False").await;
    assert_eq!(c["reason"], "ServiceNotFound");
    assert_eq!(
        c["message"],
        "service/karmada-search in \"karmada-system\" is not present"
    );
    cp.apply(json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1.apps"},
        "spec": {"group": "apps", "version": "v1", "groupPriorityMinimum": 17800, "versionPriority": 15},
    }))
    .await;
    let c = wait_condition(&cp, "v1.apps", "True").await;
    assert_eq!(c["reason"], "Local");
    let (status, _) = get(&cp, "/apis/apps/v1", "application/json").await;
    assert_eq!(status, StatusCode::OK);
    drop(serving);
    cp.running.shutdown().await;
}

#[tokio::test]
async fn a_registered_group_takes_over_from_local_watches() {
    let cp = ControlPlane::start().await;
    // A group served from a CRD: an APIService takes it over, as in kube-aggregator.
    cp.apply(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .await;
    let widgets = format!("{}/apis/example.com/v1/widgets?watch=true", cp.running.url);
    let start = std::time::Instant::now();
    let resp = loop {
        let resp = cp
            .send(Request::get(&widgets).body(Body::empty()).unwrap())
            .await;
        if resp.status() == StatusCode::OK {
            break resp;
        }
        assert!(start.elapsed() < DEADLINE, "the CRD is never served");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut watch = resp.into_body();
    let cms = cp
        .send(
            Request::get(format!(
                "{}/api/v1/namespaces/default/configmaps?watch=true",
                cp.running.url
            ))
            .body(Body::empty())
            .unwrap(),
        )
        .await;
    let mut cms = cms.into_body();
    // An APIService for a group this server serves itself (Karmada's for Clusters, as a
    // Karmada control plane's etcd holds it) is not routed: Clusters stay served here.
    for (group, name) in [
        ("cluster.karmada.io", "v1alpha1.cluster.karmada.io"),
        ("example.com", "v1.example.com"),
    ] {
        let version = name.split('.').next().unwrap();
        cp.apply(json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name},
            "spec": {
                "group": group, "version": version,
                "service": {"namespace": "karmada-system", "name": "not-there"},
                "groupPriorityMinimum": 2000, "versionPriority": 10,
            },
        }))
        .await;
    }
    // The local watch ends with 410 Expired: its client lists again, now through the
    // APIService (whose resourceVersions come from another store).
    let mut last = String::new();
    loop {
        match tokio::time::timeout(DEADLINE, watch.frame()).await {
            Ok(None) => break,
            Ok(Some(Ok(f))) => {
                if let Some(d) = f.data_ref() {
                    last = String::from_utf8_lossy(d).into_owned();
                }
            }
            Ok(Some(Err(e))) => panic!("watch failed: {e}"),
            Err(_) => panic!("the local watch was not ended"),
        }
    }
    let ev: Value = serde_json::from_str(last.trim()).unwrap();
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(ev["object"]["code"], 410);
    assert_eq!(ev["object"]["reason"], "Expired");
    let (status, body) = get(&cp, "/apis/example.com/v1/widgets", "application/json").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(body, "service unavailable\n");
    let (status, _) = get(
        &cp,
        "/apis/cluster.karmada.io/v1alpha1/clusters",
        "application/json",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "Clusters are served here");
    // Other groups' watches go on.
    cp.apply(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "after", "namespace": "default"},
    }))
    .await;
    loop {
        let f = tokio::time::timeout(DEADLINE, cms.frame())
            .await
            .expect("the configmap watch went quiet")
            .expect("the configmap watch ended")
            .unwrap();
        if f.data_ref()
            .is_some_and(|d| String::from_utf8_lossy(d).contains("\"after\""))
        {
            break;
        }
    }
    cp.running.shutdown().await;
}
