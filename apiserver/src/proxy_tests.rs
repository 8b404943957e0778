//! The proxy's forwarding mechanics against small HTTPS backends started by the test: what
//! reaches the member (path, query, body, credentials), streaming, upgrades, CONNECT tunnels,
//! credential rotation and the `*` cluster. End-to-end tests with real member API servers
//! and kubectl live in the repository's `tests/proxy.rs`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use base64::Engine;
use http::{HeaderValue, Method, Request, StatusCode, header};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Notify;

use crate::auth::UserInfo;
use crate::launch::{Running, ServeOptions, StoreChoice};
use crate::proxy::transport::{self, Dialer, HttpClient, TlsSettings};
use crate::state::Flavor;

pub(crate) const DEADLINE: Duration = Duration::from_secs(20);

/// What a backend saw of one request.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    method: String,
    pub(crate) path_and_query: String,
    pub(crate) headers: http::HeaderMap,
    body_len: usize,
}

/// A small HTTPS server standing in for a member's API endpoint: it records requests,
/// answers fixed JSON for known paths, streams `/stream` chunk by chunk on demand, and echoes
/// bytes after upgrading `/upgrade`.
pub(crate) struct Backend {
    pub(crate) addr: SocketAddr,
    pub(crate) ca_pem: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    release: Arc<Notify>,
    _serving: crate::server::Serving,
}

#[derive(Clone)]
struct BackendState {
    objects: Arc<BTreeMap<String, Value>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    release: Arc<Notify>,
}

async fn backend_handler(
    axum::extract::State(st): axum::extract::State<BackendState>,
    req: Request<Body>,
) -> Response {
    let (mut parts, body) = req.into_parts();
    let pq = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_default();
    let path = parts.uri.path().to_string();
    if path == "/stream" {
        st.seen.lock().unwrap().push(Seen {
            method: parts.method.to_string(),
            path_and_query: pq,
            headers: parts.headers.clone(),
            body_len: 0,
        });
        let release = st.release.clone();
        let stream = async_stream(release);
        return Response::new(Body::from_stream(stream));
    }
    if path == "/upgrade" {
        let on = parts
            .extensions
            .remove::<hyper::upgrade::OnUpgrade>()
            .unwrap();
        tokio::spawn(async move {
            let up = on.await.unwrap();
            let mut io = TokioIo::new(up);
            let mut buf = [0u8; 64];
            loop {
                let n = io.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    break;
                }
                io.write_all(&buf[..n]).await.unwrap();
            }
        });
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        r.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        r.headers_mut()
            .insert(header::UPGRADE, HeaderValue::from_static("echo"));
        return r;
    }
    let bytes = body.collect().await.unwrap().to_bytes();
    st.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        path_and_query: pq,
        headers: parts.headers.clone(),
        body_len: bytes.len(),
    });
    match st.objects.get(&path) {
        Some(v) => {
            let mut r = Response::new(Body::from(v.to_string()));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            r
        }
        None if path.starts_with("/echo") => {
            Response::new(Body::from(format!("{} {}", parts.method, bytes.len())))
        }
        None => {
            let mut r = Response::new(Body::from("{}"));
            *r.status_mut() = StatusCode::NOT_FOUND;
            r
        }
    }
}

/// Two chunks; the second only after the test releases it.
fn async_stream(
    release: Arc<Notify>,
) -> impl futures::Stream<Item = Result<bytes::Bytes, std::io::Error>> + Send {
    futures::stream::unfold(0u8, move |i| {
        let release = release.clone();
        async move {
            match i {
                0 => Some((Ok(bytes::Bytes::from_static(b"first\n")), 1)),
                1 => {
                    release.notified().await;
                    Some((Ok(bytes::Bytes::from_static(b"second\n")), 2))
                }
                _ => None,
            }
        }
    })
}

impl Backend {
    pub(crate) async fn start(objects: BTreeMap<String, Value>) -> Backend {
        let ca = certs::Ca::generate().unwrap();
        let serving = ca
            .issue_serving(
                "member",
                &["127.0.0.1".to_string(), "localhost".to_string()],
            )
            .unwrap();
        let tls = crate::server::server_config(&crate::server::TlsFiles {
            cert_pem: serving.cert_pem,
            key_pem: serving.key_pem,
            client_ca_pems: vec![],
        })
        .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let release = Arc::new(Notify::new());
        let st = BackendState {
            objects: Arc::new(objects),
            seen: seen.clone(),
            release: release.clone(),
        };
        let app = axum::Router::new().fallback(backend_handler).with_state(st);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let serving = crate::server::serve(listener, tls, app).unwrap();
        Backend {
            addr: serving.addr,
            ca_pem: ca.cert_pem().to_string(),
            seen,
            release,
            _serving: serving,
        }
    }

    pub(crate) fn last(&self) -> Seen {
        self.seen.lock().unwrap().last().cloned().unwrap()
    }
}

pub(crate) struct ControlPlane {
    _dir: tempfile::TempDir,
    pub(crate) running: Running,
    pub(crate) client: HttpClient,
    pub(crate) admin: kube::Client,
}

impl ControlPlane {
    pub(crate) async fn start() -> ControlPlane {
        let dir = tempfile::tempdir().unwrap();
        let running = crate::launch::start(ServeOptions {
            data_dir: dir.path().to_path_buf(),
            bind: "127.0.0.1:0".parse().unwrap(),
            store: StoreChoice::Embedded,
            tls_sans: vec![],
            flavor: Flavor::ControlPlane,
            kubeconfig_name: "kubeconfig".into(),
            context_name: "cp".into(),
            kcm: Default::default(),
            unsafe_no_fsync: false,
            limits: Default::default(),
            disable_admission_plugins: Vec::new(),
        })
        .await
        .unwrap();
        let tls = transport::client_config(&TlsSettings {
            ca_bundle: running.pki.ca.cert_pem().as_bytes().to_vec(),
            insecure: false,
            client_cert: Some((
                running.pki.admin.cert_pem.clone(),
                running.pki.admin.key_pem.clone(),
            )),
            tls13_only: false,
        })
        .unwrap();
        let client = transport::http_client(Dialer::new(tls, None, netproxy::ProxySource::Direct));
        let admin = running.client(UserInfo::new(
            "test-admin",
            vec![crate::auth::MASTERS_GROUP.into()],
        ));
        ControlPlane {
            _dir: dir,
            running,
            client,
            admin,
        }
    }

    pub(crate) async fn apply(&self, v: Value) {
        let api_version = v["apiVersion"].as_str().unwrap().to_string();
        let kind = v["kind"].as_str().unwrap().to_string();
        let ns = v["metadata"]["namespace"].as_str().map(str::to_string);
        let name = v["metadata"]["name"].as_str().unwrap().to_string();
        let (group, version) = crate::resources::split_api_version(&api_version);
        let plural = format!("{}s", kind.to_lowercase());
        let ar = kube::discovery::ApiResource {
            group: group.into(),
            version: version.into(),
            api_version: api_version.clone(),
            kind: kind.clone(),
            plural,
        };
        let api: kube::Api<kube::api::DynamicObject> = match &ns {
            Some(ns) => kube::Api::namespaced_with(self.admin.clone(), ns, &ar),
            None => kube::Api::all_with(self.admin.clone(), &ar),
        };
        let obj: kube::api::DynamicObject = serde_json::from_value(v).unwrap();
        api.patch(
            &name,
            &kube::api::PatchParams::apply("test").force(),
            &kube::api::Patch::Apply(&obj),
        )
        .await
        .unwrap();
    }

    pub(crate) async fn add_cluster(
        &self,
        name: &str,
        endpoint: &str,
        ca_pem: Option<&str>,
        extra: Value,
    ) {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let mut data = json!({"token": b64("cluster-token")});
        if let Some(ca) = ca_pem {
            data["caBundle"] = json!(b64(ca));
        }
        self.apply(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": name, "namespace": "karmada-cluster"},
            "data": data,
        }))
        .await;
        self.set_impersonator_token(name, &format!("{name}-impersonator-token"))
            .await;
        let mut spec = json!({
            "syncMode": "Push",
            "apiEndpoint": endpoint,
            "secretRef": {"namespace": "karmada-cluster", "name": name},
            "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": format!("{name}-impersonator")},
        });
        if let (Value::Object(s), Value::Object(e)) = (&mut spec, extra) {
            s.extend(e);
        }
        self.apply(json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name},
            "spec": spec,
        }))
        .await;
    }

    /// Merge-patches a Cluster.
    pub(crate) async fn merge_cluster(&self, name: &str, patch: Value) {
        kube::Api::<kube::api::DynamicObject>::all_with(self.admin.clone(), &clusters())
            .patch(
                name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(patch),
            )
            .await
            .unwrap();
    }

    async fn set_impersonator_token(&self, cluster: &str, token: &str) {
        let b64 = base64::engine::general_purpose::STANDARD.encode(token);
        self.apply(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": format!("{cluster}-impersonator"), "namespace": "karmada-cluster"},
            "data": {"token": b64},
        }))
        .await;
    }

    fn url(&self, cluster: &str, rest: &str) -> String {
        format!(
            "{}/apis/cluster.karmada.io/v1alpha1/clusters/{cluster}/proxy{rest}",
            self.running.url
        )
    }

    pub(crate) async fn send(&self, req: Request<Body>) -> Response {
        let resp = tokio::time::timeout(DEADLINE, self.client.request(req))
            .await
            .unwrap()
            .unwrap();
        resp.map(Body::new)
    }

    async fn get(&self, cluster: &str, rest: &str) -> (StatusCode, String) {
        let req = Request::get(self.url(cluster, rest))
            .body(Body::empty())
            .unwrap();
        let resp = self.send(req).await;
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    }
}

/// The Cluster resource, for dynamic clients.
pub(crate) fn clusters() -> kube::discovery::ApiResource {
    kube::discovery::ApiResource {
        group: "cluster.karmada.io".into(),
        version: "v1alpha1".into(),
        api_version: "cluster.karmada.io/v1alpha1".into(),
        kind: "Cluster".into(),
        plural: "clusters".into(),
    }
}

/// The forward proxies' host table: `localhost` is 127.0.0.1, where the backends listen.
fn localhost() -> BTreeMap<String, std::net::IpAddr> {
    BTreeMap::from([(
        "localhost".to_string(),
        std::net::IpAddr::from([127, 0, 0, 1]),
    )])
}

async fn with_deadline<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(DEADLINE, f).await.expect("deadline")
}

#[tokio::test]
async fn forwards_as_the_caller_with_the_impersonator_token() {
    let backend = Backend::start(BTreeMap::new()).await;
    let cp = ControlPlane::start().await;
    cp.add_cluster(
        "m1",
        &format!("https://{}", backend.addr),
        Some(&backend.ca_pem),
        json!({}),
    )
    .await;

    // Path, raw query and the caller's identity; front-proxy headers are dropped.
    let req = Request::get(cp.url(
        "m1",
        "/echo/api/v1/namespaces/default/pods?labelSelector=a%3Db&limit=5",
    ))
    .header("X-Remote-User", "someone-else")
    .header("Accept", "application/json")
    .body(Body::empty())
    .unwrap();
    let resp = cp.send(req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let seen = backend.last();
    assert_eq!(
        seen.path_and_query,
        "/echo/api/v1/namespaces/default/pods?labelSelector=a%3Db&limit=5"
    );
    assert_eq!(
        seen.headers["authorization"],
        "Bearer m1-impersonator-token"
    );
    assert_eq!(seen.headers["impersonate-user"], "karmada-admin");
    let groups: Vec<_> = seen.headers.get_all("impersonate-group").iter().collect();
    assert_eq!(groups, vec!["system:masters"]);
    assert!(seen.headers.get("x-remote-user").is_none());
    assert_eq!(seen.headers["accept"], "application/json");

    // Every connect method, with its body.
    for method in [
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
        Method::HEAD,
    ] {
        let body = vec![b'x'; 100_000];
        let req = Request::builder()
            .method(method.clone())
            .uri(cp.url("m1", "/echo/x"))
            .body(Body::from(body))
            .unwrap();
        let resp = cp.send(req).await;
        assert_eq!(resp.status(), StatusCode::OK, "{method}");
        let seen = backend.last();
        assert_eq!(seen.method, method.as_str());
        assert_eq!(seen.body_len, 100_000, "{method}");
    }
    // Methods a connect subresource does not take.
    let req = Request::builder()
        .method("TRACE")
        .uri(cp.url("m1", "/echo/x"))
        .body(Body::empty())
        .unwrap();
    assert_eq!(cp.send(req).await.status(), StatusCode::METHOD_NOT_ALLOWED);

    // A rotated impersonator token is used from the next request on.
    cp.set_impersonator_token("m1", "rotated").await;
    let mut last = String::new();
    for _ in 0..200 {
        cp.get("m1", "/echo/r").await;
        last = backend.last().headers["authorization"]
            .to_str()
            .unwrap()
            .to_string();
        if last == "Bearer rotated" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(last, "Bearer rotated");

    // Errors: unknown clusters and clusters without an impersonator secret.
    let (status, body) = cp.get("nope", "/api").await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    assert!(
        body.contains("clusters.cluster.karmada.io \\\"nope\\\" not found"),
        "{body}"
    );
    cp.apply(json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": "noimp"},
        "spec": {"syncMode": "Push", "apiEndpoint": format!("https://{}", backend.addr)},
    }))
    .await;
    let (status, body) = cp.get("noimp", "/api").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        body.contains("the impersonatorSecretRef of cluster noimp is nil"),
        "{body}"
    );
    cp.running.shutdown().await;
}

#[tokio::test]
async fn tls_verification_and_endpoint_paths() {
    let backend = Backend::start(BTreeMap::new()).await;
    let cp = ControlPlane::start().await;
    // No CA and verification on: the member's certificate is refused.
    cp.add_cluster(
        "noca",
        &format!("https://{}", backend.addr),
        None,
        json!({}),
    )
    .await;
    let (status, body) = cp.get("noca", "/echo").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        body.contains("error trying to reach cluster noca"),
        "{body}"
    );
    // insecureSkipTLSVerification accepts it.
    cp.add_cluster(
        "insecure",
        &format!("https://{}", backend.addr),
        None,
        json!({"insecureSkipTLSVerification": true}),
    )
    .await;
    let (status, body) = cp.get("insecure", "/echo").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // An endpoint with a path: proxied paths are appended to it.
    cp.add_cluster(
        "prefixed",
        &format!("https://{}/echo/prefix/", backend.addr),
        Some(&backend.ca_pem),
        json!({}),
    )
    .await;
    let (status, _) = cp.get("prefixed", "/api/v1/nodes?watch=true").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        backend.last().path_and_query,
        "/echo/prefix/api/v1/nodes?watch=true"
    );
    cp.running.shutdown().await;
}

#[tokio::test]
async fn responses_stream_and_upgrades_tunnel() {
    let backend = Backend::start(BTreeMap::new()).await;
    let cp = ControlPlane::start().await;
    cp.add_cluster(
        "m1",
        &format!("https://{}", backend.addr),
        Some(&backend.ca_pem),
        json!({}),
    )
    .await;

    // The first chunk arrives while the member still holds the second back.
    let req = Request::get(cp.url("m1", "/stream"))
        .body(Body::empty())
        .unwrap();
    let resp = cp.send(req).await;
    assert_eq!(resp.status(), StatusCode::OK);
    let mut body = resp.into_body();
    let first = with_deadline(body.frame()).await.unwrap().unwrap();
    assert_eq!(first.into_data().unwrap(), "first\n");
    backend.release.notify_one();
    let second = with_deadline(body.frame()).await.unwrap().unwrap();
    assert_eq!(second.into_data().unwrap(), "second\n");

    // An upgrade becomes a tunnel to the member.
    let req = Request::get(cp.url("m1", "/upgrade"))
        .header(header::CONNECTION, "Upgrade")
        .header(header::UPGRADE, "echo")
        .body(Body::empty())
        .unwrap();
    let mut resp = cp.send(req).await;
    assert_eq!(resp.status(), StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(resp.headers()[header::UPGRADE], "echo");
    let upgraded = with_deadline(hyper::upgrade::on(&mut resp)).await.unwrap();
    let mut io = TokioIo::new(upgraded);
    for msg in [&b"ping"[..], b"exec stdin"] {
        io.write_all(msg).await.unwrap();
        let mut buf = vec![0u8; msg.len()];
        with_deadline(io.read_exact(&mut buf)).await.unwrap();
        assert_eq!(buf, msg);
    }
    cp.running.shutdown().await;
}

#[tokio::test]
async fn proxy_url_tunnels_with_proxy_headers() {
    let backend = Backend::start(BTreeMap::new()).await;
    let proxy = netproxy::testing::ForwardProxy::http(localhost())
        .await
        .unwrap();
    let proxy_addr = proxy.addr();
    let cp = ControlPlane::start().await;
    cp.add_cluster(
        "behind-proxy",
        &format!("https://localhost:{}", backend.addr.port()),
        Some(&backend.ca_pem),
        json!({
            "proxyURL": format!("http://u:p@{proxy_addr}"),
            "proxyHeader": {"X-Tenant": "t1,t2"},
        }),
    )
    .await;
    let (status, body) = cp.get("behind-proxy", "/echo/via").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(backend.last().path_and_query, "/echo/via");
    let heads = proxy.log().heads;
    assert_eq!(heads.len(), 1, "one pooled tunnel: {heads:?}");
    let head = &heads[0];
    assert!(
        head.starts_with(&format!(
            "CONNECT localhost:{} HTTP/1.1",
            backend.addr.port()
        )),
        "{head}"
    );
    assert!(head.contains("proxy-authorization: Basic dTpw"), "{head}");
    assert!(
        head.contains("x-tenant: t1\r\n") && head.contains("x-tenant: t2\r\n"),
        "{head}"
    );

    // A change to other fields of the Cluster (labels, status) keeps its connection pool.
    cp.merge_cluster(
        "behind-proxy",
        json!({"metadata": {"labels": {"tier": "gold"}}}),
    )
    .await;
    let state = cp.running.state.clone();
    let labelled = || {
        let def = state
            .catalog
            .snapshot()
            .get("cluster.karmada.io", "v1alpha1", "clusters")
            .unwrap()
            .clone();
        let o = state
            .cache(&def)
            .unwrap()
            .get(&def.key("", "behind-proxy").unwrap());
        o.is_some_and(|o| o.labels.get("tier").is_some_and(|t| t == "gold"))
    };
    let start = std::time::Instant::now();
    while !labelled() {
        assert!(start.elapsed() < DEADLINE, "the cache never saw the label");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (status, _) = cp.get("behind-proxy", "/echo/again").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(backend.last().path_and_query, "/echo/again");
    assert_eq!(proxy.log().heads.len(), 1, "the pooled tunnel was reused");
    cp.running.shutdown().await;
}

#[tokio::test]
async fn a_kept_target_connects_with_the_proxy_header_the_cluster_has_now() {
    let backend = Backend::start(BTreeMap::new()).await;
    let proxy = netproxy::testing::ForwardProxy::http(localhost())
        .await
        .unwrap();
    let cp = ControlPlane::start().await;
    cp.add_cluster(
        "kept",
        &format!("https://localhost:{}", backend.addr.port()),
        Some(&backend.ca_pem),
        json!({"proxyURL": proxy.url()}),
    )
    .await;
    // A target built before the Cluster changes, and still in use after (a request that read
    // the Cluster just before, or from a watch cache that had not seen the change yet).
    let state = cp.running.state.clone();
    let targets = crate::proxy::Targets::default();
    let target = with_deadline(targets.get(&state, &Default::default(), "kept"))
        .await
        .unwrap();
    cp.merge_cluster(
        "kept",
        json!({"spec": {"proxyHeader": {"X-Tenant": "t1,t2"}}}),
    )
    .await;
    let req = Request::get(target.uri("/echo/kept", None).unwrap())
        .header(header::AUTHORIZATION, target.authorization.clone())
        .body(Body::empty())
        .unwrap();
    let resp = with_deadline(target.client.request(req)).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(backend.last().path_and_query, "/echo/kept");
    let heads = proxy.log().heads;
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0].contains("x-tenant: t1\r\n") && heads[0].contains("x-tenant: t2\r\n"),
        "{}",
        heads[0]
    );
    cp.running.shutdown().await;
}

#[tokio::test]
async fn https_and_socks5_proxy_urls() {
    use netproxy::testing::ForwardProxy;
    let backend = Backend::start(BTreeMap::new()).await;
    let hosts = localhost();
    // The cluster's caBundle trusts the HTTPS proxy too: TLS to the proxy uses the cluster's
    // TLS settings, as Go's transport does.
    let proxy_ca = certs::Ca::generate().unwrap();
    let proxy_cert = proxy_ca
        .issue_serving("proxy", &["localhost".to_string()])
        .unwrap();
    let https = ForwardProxy::https(hosts.clone(), &proxy_cert.cert_pem, &proxy_cert.key_pem)
        .await
        .unwrap();
    let socks = ForwardProxy::socks5(hosts, Some(("u".into(), "p@ss".into())))
        .await
        .unwrap();
    let cp = ControlPlane::start().await;
    let endpoint = format!("https://localhost:{}", backend.addr.port());
    let bundle = format!("{}{}", backend.ca_pem, proxy_ca.cert_pem());
    cp.add_cluster(
        "via-https",
        &endpoint,
        Some(&bundle),
        json!({
            "proxyURL": format!("https://localhost:{}", https.addr().port()),
            "proxyHeader": {"X-Tenant": "t1"},
        }),
    )
    .await;
    cp.add_cluster(
        "via-socks",
        &endpoint,
        Some(&backend.ca_pem),
        json!({"proxyURL": format!("socks5://u:p%40ss@{}", socks.addr())}),
    )
    .await;
    let (status, body) = cp.get("via-https", "/echo/https").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(backend.last().path_and_query, "/echo/https");
    let log = https.log();
    assert_eq!(log.relayed, 1, "{log:?}");
    assert!(log.heads[0].contains("x-tenant: t1\r\n"), "{log:?}");
    let (status, body) = cp.get("via-socks", "/echo/socks").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(backend.last().path_and_query, "/echo/socks");
    assert_eq!(
        socks.log().targets,
        [format!("localhost:{}", backend.addr.port())]
    );

    // A proxy whose certificate the cluster does not trust: the error names the handshake.
    cp.add_cluster(
        "untrusted-proxy",
        &endpoint,
        Some(&backend.ca_pem),
        json!({"proxyURL": format!("https://localhost:{}", https.addr().port())}),
    )
    .await;
    let (status, body) = cp.get("untrusted-proxy", "/echo/nope").await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{body}");
    assert!(
        body.contains("TLS handshake with proxy localhost"),
        "{body}"
    );
    cp.running.shutdown().await;
}

#[tokio::test]
async fn all_clusters() {
    let pod = |n: &str| json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": n, "namespace": "default"}});
    let list = |items: Vec<Value>| json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "1"}, "items": items});
    let a = Backend::start(BTreeMap::from([
        (
            "/api/v1/namespaces/default/pods".to_string(),
            list(vec![pod("a1"), pod("shared")]),
        ),
        ("/api/v1/namespaces/default/pods/a1".to_string(), pod("a1")),
        (
            "/api/v1/namespaces/default/pods/shared".to_string(),
            pod("shared"),
        ),
    ]))
    .await;
    let b = Backend::start(BTreeMap::from([
        (
            "/api/v1/namespaces/default/pods".to_string(),
            list(vec![pod("b1"), pod("shared")]),
        ),
        ("/api/v1/namespaces/default/pods/b1".to_string(), pod("b1")),
        (
            "/api/v1/namespaces/default/pods/shared".to_string(),
            pod("shared"),
        ),
    ]))
    .await;
    let cp = ControlPlane::start().await;
    for (name, be) in [("ca", &a), ("cb", &b)] {
        cp.add_cluster(
            name,
            &format!("https://{}", be.addr),
            Some(&be.ca_pem),
            json!({}),
        )
        .await;
    }
    // Both clusters must be visible to the proxy's cluster list (the watch cache).
    let mut merged = Value::Null;
    for _ in 0..200 {
        let (status, body) = cp.get("*", "/api/v1/namespaces/default/pods").await;
        if status == StatusCode::OK {
            merged = serde_json::from_str(&body).unwrap();
            if merged["items"].as_array().map(Vec::len) == Some(4) {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let mut names: Vec<&str> = merged["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, vec!["a1", "b1", "shared", "shared"]);

    let (status, body) = cp.get("*", "/api/v1/namespaces/default/pods/b1").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["metadata"]["name"],
        "b1"
    );
    let seen = b.last();
    assert_eq!(seen.path_and_query, "/api/v1/namespaces/default/pods/b1");
    assert_eq!(seen.headers["impersonate-user"], "karmada-admin");

    let (status, body) = cp.get("*", "/api/v1/namespaces/default/pods/shared").await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(
        body,
        "conflict resource, exist in more than one cluster: ca,cb\n"
    );
    let (status, body) = cp.get("*", "/api/v1/namespaces/default/pods/none").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        "resource not found or don't have permission to get it\n"
    );
    let req = Request::post(cp.url("*", "/api/v1/namespaces/default/pods"))
        .body(Body::from("{}"))
        .unwrap();
    let resp = cp.send(req).await;
    assert_eq!(resp.status(), StatusCode::METHOD_NOT_ALLOWED);
    // kubectl escapes the name.
    let (status, body) = cp.get("%2A", "/api/v1/namespaces/default/pods/a1").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // Non-resource requests are the control plane's own.
    let (status, body) = cp.get("*", "/version").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["minor"], "32");
    cp.running.shutdown().await;
}

/// Compile-time check: the proxy's future can run on the multi-threaded runtime (axum needs
/// handlers to be `Send`).
#[allow(dead_code)]
fn serve_future_is_send<'a>(
    state: &'a Arc<crate::state::ApiState>,
    proxy: &'a crate::proxy::ClusterProxy,
    parts: http::request::Parts,
    info: &'a crate::request_info::RequestInfo,
) -> impl std::future::Future<Output = Result<Response, crate::error::ApiError>> + Send + 'a {
    crate::proxy::serve(
        state,
        proxy,
        parts,
        Body::empty(),
        UserInfo::default(),
        info,
    )
}
