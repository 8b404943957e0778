//! Clients for push-mode member clusters, built from a Cluster and the Secret its `secretRef`
//! names (`token`, `caBundle`), as Karmada's `BuildClusterConfig`
//! (pkg/util/membercluster_client.go) does: through the Cluster's `proxyURL` with its
//! `proxyHeader` when it has one ([`kube_client`]). Clients are cached per cluster; the
//! cluster controllers drop an entry when the Cluster's access fields or its secret change.
//! They see a change only after it is made, and a client may be kept (by a watch) or built
//! from an informer's outdated copy of the Cluster; so a client reads the Cluster's proxy
//! settings again for each new connection (one read of the Cluster; pooled connections and
//! requests read nothing): none is opened through a proxy, or with headers, the Cluster no
//! longer names.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Secret;
use karmada_api::cluster::v1alpha1::{Cluster, SECRET_CA_DATA_KEY, SECRET_TOKEN_KEY};
use kube::Api;

/// How long a member connection may take to establish.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why no client could be built for a member cluster.
#[derive(Debug, thiserror::Error)]
pub enum MemberError {
    /// The Cluster does not exist.
    #[error("cluster {0} not found")]
    ClusterNotFound(String),
    /// The Cluster has no API endpoint.
    #[error("the api endpoint of cluster {0} is empty")]
    NoEndpoint(String),
    /// The API endpoint is not a URL.
    #[error("the api endpoint {endpoint:?} of cluster {cluster} is not a valid URL")]
    BadEndpoint {
        /// The cluster.
        cluster: String,
        /// The endpoint as written.
        endpoint: String,
    },
    /// The Cluster has no secretRef (e.g. a pull-mode cluster).
    #[error("cluster {0} does not have a secret")]
    NoSecret(String),
    /// The secret has no token.
    #[error("the secret for cluster {0} is missing a non-empty value for \"token\"")]
    NoToken(String),
    /// The secret has no CA and TLS verification is on.
    #[error("the secret for cluster {0} is missing the CA data key \"caBundle\"")]
    NoCa(String),
    /// The CA bundle holds no certificate.
    #[error("the caBundle of cluster {0} holds no PEM or DER certificate")]
    BadCa(String),
    /// The proxy URL or the proxy headers are unusable.
    #[error("the proxy of cluster {cluster} is unusable: {error}")]
    BadProxy {
        /// The cluster.
        cluster: String,
        /// What is wrong.
        error: netproxy::ProxyError,
    },
    /// Reading the Cluster or its secret from the control plane failed.
    #[error("reading the credentials of cluster {cluster}: {}", brief(error))]
    ControlPlane {
        /// The cluster.
        cluster: String,
        /// The cause.
        error: kube::Error,
    },
    /// The client could not be built (TLS, credentials...).
    #[error("building a client for cluster {cluster}: {}", brief(error))]
    Client {
        /// The cluster.
        cluster: String,
        /// The cause.
        error: kube::Error,
    },
}

/// What a member client was built from; a change means the cached client is stale.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Access {
    endpoint: String,
    insecure: bool,
    proxy_url: String,
    proxy_header: BTreeMap<String, String>,
    token: String,
    ca: Vec<u8>,
}

/// Cached member-cluster clients (cheap to clone; clones share the cache).
#[derive(Clone)]
pub struct MemberClients {
    control_plane: kube::Client,
    /// An agent's own member: its client comes from the agent's kubeconfig, not a Secret.
    pinned: Option<(String, kube::Client)>,
    cache: Arc<Mutex<HashMap<String, (Access, kube::Client)>>>,
}

impl std::fmt::Debug for MemberClients {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberClients").finish_non_exhaustive()
    }
}

impl MemberClients {
    /// A cache reading Clusters and Secrets through `control_plane`.
    pub fn new(control_plane: kube::Client) -> MemberClients {
        MemberClients {
            control_plane,
            pinned: None,
            cache: Arc::default(),
        }
    }

    /// An agent's clients: `cluster` is reached through `member` (the agent runs next to
    /// it); every other cluster is built as in push mode.
    pub fn pinned(
        control_plane: kube::Client,
        cluster: &str,
        member: kube::Client,
    ) -> MemberClients {
        MemberClients {
            pinned: Some((cluster.to_owned(), member)),
            ..MemberClients::new(control_plane)
        }
    }

    fn pinned_for(&self, cluster: &str) -> Option<kube::Client> {
        self.pinned
            .as_ref()
            .filter(|(name, _)| name == cluster)
            .map(|(_, client)| client.clone())
    }

    /// The client of a cluster, from the cache or built from its Cluster and secret.
    pub async fn get(&self, cluster: &str) -> Result<kube::Client, MemberError> {
        if let Some(client) = self.pinned_for(cluster) {
            return Ok(client);
        }
        if let Some(client) = self.cached(cluster) {
            return Ok(client);
        }
        let obj = Api::<Cluster>::all(self.control_plane.clone())
            .get_opt(cluster)
            .await
            .map_err(|error| MemberError::ControlPlane {
                cluster: cluster.to_owned(),
                error,
            })?
            .ok_or_else(|| MemberError::ClusterNotFound(cluster.to_owned()))?;
        self.for_cluster(&obj).await
    }

    /// The client of the given Cluster object: cached unless its access fields or secret
    /// changed since the client was built.
    pub async fn for_cluster(&self, cluster: &Cluster) -> Result<kube::Client, MemberError> {
        Ok(self.for_cluster_keyed(cluster).await?.0)
    }

    /// Like [`MemberClients::for_cluster`], plus a key that changes whenever the client is
    /// rebuilt from different access fields (for caches tied to one client).
    pub async fn for_cluster_keyed(
        &self,
        cluster: &Cluster,
    ) -> Result<(kube::Client, u64), MemberError> {
        let name = cluster.metadata.name.clone().unwrap_or_default();
        if let Some(client) = self.pinned_for(&name) {
            return Ok((client, 0));
        }
        let access = self.access(&name, cluster).await?;
        let key = {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            access.hash(&mut h);
            h.finish()
        };
        if let Ok(cache) = self.cache.lock()
            && let Some((cached, client)) = cache.get(&name)
            && *cached == access
        {
            return Ok((client.clone(), key));
        }
        let client = build_client(&self.control_plane, &name, &access)?;
        if let Ok(mut cache) = self.cache.lock() {
            cache.insert(name, (access, client.clone()));
        }
        Ok((client, key))
    }

    /// Drops the cached client of a cluster.
    pub fn invalidate(&self, cluster: &str) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.remove(cluster);
        }
    }

    fn cached(&self, cluster: &str) -> Option<kube::Client> {
        let cache = self.cache.lock().ok()?;
        cache.get(cluster).map(|(_, c)| c.clone())
    }

    /// Reads the access fields of a cluster (BuildClusterConfig's checks, in its order).
    async fn access(&self, name: &str, cluster: &Cluster) -> Result<Access, MemberError> {
        let spec = &cluster.spec;
        if spec.api_endpoint.is_empty() {
            return Err(MemberError::NoEndpoint(name.to_owned()));
        }
        let secret_ref = spec
            .secret_ref
            .as_ref()
            .ok_or_else(|| MemberError::NoSecret(name.to_owned()))?;
        let secret = Api::<Secret>::namespaced(self.control_plane.clone(), &secret_ref.namespace)
            .get(&secret_ref.name)
            .await
            .map_err(|error| MemberError::ControlPlane {
                cluster: name.to_owned(),
                error,
            })?;
        let data = secret.data.unwrap_or_default();
        let token = data
            .get(SECRET_TOKEN_KEY)
            .map(|t| String::from_utf8_lossy(&t.0).trim().to_owned())
            .filter(|t| !t.is_empty())
            .ok_or_else(|| MemberError::NoToken(name.to_owned()))?;
        let ca = if spec.insecure_skip_tls_verification {
            Vec::new()
        } else {
            data.get(SECRET_CA_DATA_KEY)
                .map(|c| c.0.clone())
                .ok_or_else(|| MemberError::NoCa(name.to_owned()))?
        };
        Ok(Access {
            endpoint: spec.api_endpoint.clone(),
            insecure: spec.insecure_skip_tls_verification,
            proxy_url: spec.proxy_url.clone(),
            proxy_header: spec.proxy_header.clone(),
            token,
            ca,
        })
    }
}

/// A one-line description of a client error: an API error's message and code, or the chain
/// of causes of a transport error.
pub fn brief(e: &kube::Error) -> String {
    if let kube::Error::Api(s) = e {
        let what = if s.message.is_empty() {
            &s.reason
        } else {
            &s.message
        };
        return format!("{what} ({})", s.code);
    }
    let mut parts: Vec<String> = vec![e.to_string()];
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cause = c.source();
    }
    parts.join(": ")
}

/// Normalises an apiEndpoint (`host`, `host:port` or a URL) to an HTTPS URL, as client-go's
/// `rest.Config.Host` defaulting does.
pub fn endpoint_url(endpoint: &str) -> Option<http::Uri> {
    let with_scheme = if endpoint.contains("://") {
        endpoint.to_owned()
    } else {
        format!("https://{endpoint}")
    };
    let uri: http::Uri = with_scheme.parse().ok()?;
    (uri.scheme().is_some() && uri.host().is_some_and(|h| !h.is_empty())).then_some(uri)
}

/// Splits a CA bundle into DER certificates: PEM blocks, or the bytes themselves when they
/// are not PEM.
pub fn ca_certificates(bundle: &[u8]) -> Vec<Vec<u8>> {
    use base64::Engine;
    let text = String::from_utf8_lossy(bundle);
    if !text.contains("-----BEGIN") {
        return if bundle.is_empty() {
            Vec::new()
        } else {
            vec![bundle.to_vec()]
        };
    }
    let mut certs = Vec::new();
    let mut body: Option<String> = None;
    for line in text.lines().map(str::trim) {
        if line.starts_with("-----BEGIN CERTIFICATE") {
            body = Some(String::new());
        } else if line.starts_with("-----END") {
            if let Some(b) = body.take()
                && let Ok(der) = base64::engine::general_purpose::STANDARD.decode(b)
            {
                certs.push(der);
            }
        } else if let Some(b) = body.as_mut() {
            b.push_str(line);
        }
    }
    certs
}

/// Builds a bearer-token client for an endpoint; its connections go through the proxy the
/// Cluster names when each is made, read through `control_plane`.
fn build_client(
    control_plane: &kube::Client,
    name: &str,
    access: &Access,
) -> Result<kube::Client, MemberError> {
    let url = endpoint_url(&access.endpoint).ok_or_else(|| MemberError::BadEndpoint {
        cluster: name.to_owned(),
        endpoint: access.endpoint.clone(),
    })?;
    let mut config = kube::Config::new(url);
    config.connect_timeout = Some(CONNECT_TIMEOUT);
    config.accept_invalid_certs = access.insecure;
    if !access.insecure {
        let roots = ca_certificates(&access.ca);
        if roots.is_empty() {
            return Err(MemberError::BadCa(name.to_owned()));
        }
        config.root_cert = Some(roots);
    }
    let expected = cluster_proxy(&access.proxy_url, &access.proxy_header).map_err(|error| {
        MemberError::BadProxy {
            cluster: name.to_owned(),
            error,
        }
    })?;
    let settings = ClusterProxySettings {
        control_plane: control_plane.clone(),
        cluster: name.to_owned(),
        kubeconfig: None,
    };
    config.auth_info = token_auth(&access.token);
    config.headers.push((
        http::header::USER_AGENT,
        http::HeaderValue::from_static(crate::USER_AGENT),
    ));
    kube_client(config, netproxy::ProxySource::live(settings, expected)).map_err(|error| {
        MemberError::Client {
            cluster: name.to_owned(),
            error,
        }
    })
}

/// The proxy a Cluster's `proxyURL` and `proxyHeader` name (`None`: no proxy).
fn cluster_proxy(
    url: &str,
    header: &BTreeMap<String, String>,
) -> Result<Option<netproxy::Proxy>, netproxy::ProxyError> {
    (!url.is_empty())
        .then(|| netproxy::Proxy::parse(url, header))
        .transpose()
}

/// A Cluster's proxy settings as the control plane has them (a consistent read), read by its
/// client for each new connection: a client kept from before a change, or built from an
/// outdated copy of the Cluster (an informer's, before the change reached it), still opens
/// its connections as the Cluster says now.
struct ClusterProxySettings {
    control_plane: kube::Client,
    cluster: String,
    /// Set when the member is reached as its kubeconfig says (join, unjoin).
    kubeconfig: Option<KubeconfigProxy>,
}

/// A kubeconfig's `proxy-url`, used instead of the Cluster's `proxyURL`; the Cluster, when
/// it names the same proxy, adds its `proxyHeader`.
struct KubeconfigProxy {
    /// As written.
    url: String,
    proxy: netproxy::Proxy,
    /// The header the Cluster last gave: unjoin cleans the member up once the Cluster is gone.
    last_header: Mutex<BTreeMap<String, String>>,
}

impl ClusterProxySettings {
    async fn read(&self) -> std::io::Result<Option<netproxy::Proxy>> {
        let fail = |why: String| {
            std::io::Error::other(format!(
                "reading the proxy settings of cluster {}: {why}",
                self.cluster
            ))
        };
        let cluster = Api::<Cluster>::all(self.control_plane.clone())
            .get_opt(&self.cluster)
            .await
            .map_err(|e| fail(brief(&e)))?;
        let Some(kubeconfig) = &self.kubeconfig else {
            let cluster = cluster.ok_or_else(|| fail("the cluster is not found".into()))?;
            return cluster_proxy(&cluster.spec.proxy_url, &cluster.spec.proxy_header)
                .map_err(|e| fail(e.to_string()));
        };
        let mut last = kubeconfig
            .last_header
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(c) = cluster {
            let same = cluster_proxy(&c.spec.proxy_url, &BTreeMap::new())
                .ok()
                .flatten()
                .is_some_and(|p| p.same_endpoint(&kubeconfig.proxy));
            *last = if same {
                c.spec.proxy_header
            } else {
                BTreeMap::new()
            };
        }
        netproxy::Proxy::parse(&kubeconfig.url, &last)
            .map(Some)
            .map_err(|e| fail(e.to_string()))
    }
}

impl netproxy::ProxySettings for ClusterProxySettings {
    fn current(
        &self,
    ) -> std::pin::Pin<Box<dyn Future<Output = std::io::Result<Option<netproxy::Proxy>>> + Send + '_>>
    {
        Box::pin(self.read())
    }
}

/// The proxy a kubeconfig-derived configuration names (its `proxy-url`), taken out of it for
/// [`kube_client`]; kubeconfigs have no proxy headers.
pub fn take_proxy(
    config: &mut kube::Config,
) -> Result<Option<netproxy::Proxy>, netproxy::ProxyError> {
    config
        .proxy_url
        .take()
        .map(|uri| netproxy::Proxy::parse(&uri.to_string(), &BTreeMap::new()))
        .transpose()
}

/// Like [`take_proxy`], for a member registered (or being registered) as Cluster `cluster`:
/// its connections go through the kubeconfig's proxy with the Cluster's `proxyHeader` when
/// the Cluster names that proxy, read through `control_plane` for each connection (once the
/// Cluster is deleted, with the header it had last).
pub fn take_member_proxy(
    config: &mut kube::Config,
    control_plane: &kube::Client,
    cluster: &str,
) -> Result<netproxy::ProxySource, netproxy::ProxyError> {
    let Some(uri) = config.proxy_url.take() else {
        return Ok(netproxy::ProxySource::Direct);
    };
    let url = uri.to_string();
    let proxy = netproxy::Proxy::parse(&url, &BTreeMap::new())?;
    let settings = ClusterProxySettings {
        control_plane: control_plane.clone(),
        cluster: cluster.to_owned(),
        kubeconfig: Some(KubeconfigProxy {
            url,
            proxy: proxy.clone(),
            last_header: Mutex::default(),
        }),
    };
    Ok(netproxy::ProxySource::live(settings, Some(proxy)))
}

/// A client for `config` whose connections go through the proxy `proxy` names, if any (HTTP
/// or HTTPS CONNECT with the Cluster's `proxyHeader`, or SOCKS5: [`netproxy`]), with kube's
/// TLS, credentials, timeouts and retries on top, stacked as kube's own client builder stacks
/// them (its proxy support cannot send `proxyHeader`). `config.proxy_url` is not used.
pub fn kube_client(
    config: kube::Config,
    proxy: netproxy::ProxySource,
) -> Result<kube::Client, kube::Error> {
    use hyper_util::rt::TokioExecutor;
    use kube::client::ConfigExt;
    use tower::ServiceBuilder;
    use tower::retry::RetryLayer;
    // An HTTPS proxy is verified with the member's TLS settings, as Go's transport does.
    let proxy_tls = if proxy.may_use_tls() {
        Some(Arc::new(config.rustls_client_config()?))
    } else {
        None
    };
    let connector = netproxy::Connector::new(proxy, proxy_tls, config.connect_timeout);
    let https = config.rustls_https_connector_with_connector(connector)?;
    let mut timeouts = hyper_timeout::TimeoutConnector::new(https);
    timeouts.set_read_timeout(config.read_timeout);
    timeouts.set_write_timeout(config.write_timeout);
    timeouts.set_reset_reader_on_write(config.reset_reader_on_write);
    let http = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build::<_, kube::client::Body>(timeouts);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| RetryLayer::new(kube::client::retry::RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(tower::BoxError::from)
        .service(http);
    Ok(kube::Client::new(service, config.default_namespace))
}

/// A kubeconfig user carrying a bearer token.
pub(crate) fn token_auth(token: &str) -> kube::config::AuthInfo {
    // AuthInfo's token field is a secrecy type; going through serde keeps that crate out of
    // our dependencies.
    serde_json::from_value(serde_json::json!({ "token": token })).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let cases = [
            ("https://10.0.0.1:6443", Some("https://10.0.0.1:6443/")),
            ("10.0.0.1:6443", Some("https://10.0.0.1:6443/")),
            ("member.example.com", Some("https://member.example.com/")),
            ("http://127.0.0.1:8080", Some("http://127.0.0.1:8080/")),
            ("", None),
            ("https://", None),
            ("not a url", None),
        ];
        for (input, want) in cases {
            let got = endpoint_url(input).map(|u| u.to_string());
            assert_eq!(got.as_deref(), want, "{input}");
        }
    }

    #[test]
    fn ca_bundles() {
        use base64::Engine;
        let der1 = vec![1u8, 2, 3, 4];
        let der2 = vec![9u8; 100];
        let b64 = |d: &[u8]| base64::engine::general_purpose::STANDARD.encode(d);
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n\
             -----BEGIN CERTIFICATE-----\n{}\n{}\n-----END CERTIFICATE-----\n",
            b64(&der1),
            &b64(&der2)[..64],
            &b64(&der2)[64..]
        );
        assert_eq!(ca_certificates(pem.as_bytes()), vec![der1.clone(), der2]);
        assert_eq!(ca_certificates(&der1), vec![der1]);
        assert!(ca_certificates(b"").is_empty());
        assert!(
            ca_certificates(b"-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----")
                .is_empty()
        );
    }

    #[test]
    fn token_auth_carries_the_token() {
        let auth = token_auth("abc");
        assert!(auth.token.is_some());
    }

    /// A control plane holding one Cluster, `m`, whose spec a test changes at will, and its
    /// secret; it counts the reads of the Cluster.
    #[derive(Clone)]
    struct ControlPlane {
        cluster: Arc<Mutex<Option<Cluster>>>,
        reads: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl ControlPlane {
        fn new(spec: karmada_api::cluster::v1alpha1::ClusterSpec) -> ControlPlane {
            let cluster = Cluster {
                metadata: kube::api::ObjectMeta {
                    name: Some("m".into()),
                    resource_version: Some("1".into()),
                    ..Default::default()
                },
                spec,
                status: Default::default(),
            };
            ControlPlane {
                cluster: Arc::new(Mutex::new(Some(cluster))),
                reads: Arc::default(),
            }
        }

        fn cluster(&self) -> Option<Cluster> {
            self.cluster.lock().unwrap().clone()
        }

        fn change(&self, f: impl FnOnce(&mut karmada_api::cluster::v1alpha1::ClusterSpec)) {
            if let Some(c) = self.cluster.lock().unwrap().as_mut() {
                f(&mut c.spec);
            }
        }

        fn client(&self) -> kube::Client {
            let this = self.clone();
            let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
                let this = this.clone();
                async move {
                    let (status, body) = this.answer(req.method(), req.uri().path());
                    let resp = http::Response::builder()
                        .status(status)
                        .header("content-type", "application/json")
                        .body(http_body_util::Full::new(bytes::Bytes::from(
                            body.to_string(),
                        )))?;
                    Ok::<_, http::Error>(resp)
                }
            });
            kube::Client::new(service, "default")
        }

        fn answer(&self, method: &http::Method, path: &str) -> (u16, serde_json::Value) {
            use base64::Engine;
            let not_found = serde_json::json!({
                "kind": "Status", "apiVersion": "v1", "status": "Failure",
                "reason": "NotFound", "code": 404, "message": format!("{path} not found"),
            });
            if method != http::Method::GET {
                return (405, not_found);
            }
            match path {
                "/apis/cluster.karmada.io/v1alpha1/clusters/m" => {
                    self.reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    match self.cluster() {
                        Some(c) => (200, serde_json::to_value(c).unwrap()),
                        None => (404, not_found),
                    }
                }
                "/api/v1/namespaces/karmada-cluster/secrets/m" => (
                    200,
                    serde_json::json!({
                        "apiVersion": "v1", "kind": "Secret",
                        "metadata": {"name": "m", "namespace": "karmada-cluster"},
                        "data": {"token": base64::engine::general_purpose::STANDARD.encode("t")},
                    }),
                ),
                _ => (404, not_found),
            }
        }
    }

    /// A member known only to the proxies as `m.invalid`: it accepts connections and closes
    /// them, so every request opens a new connection through the proxy.
    async fn member() -> (u16, BTreeMap<String, std::net::IpAddr>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                drop(conn);
            }
        });
        let hosts = BTreeMap::from([(
            "m.invalid".to_string(),
            std::net::IpAddr::from([127, 0, 0, 1]),
        )]);
        (port, hosts)
    }

    /// Sends one request through `client`; the member hangs up, so only the proxy's log of
    /// the connection counts.
    async fn request(client: &kube::Client) -> String {
        let attempt = client.apiserver_version();
        match tokio::time::timeout(Duration::from_secs(20), attempt).await {
            Ok(Ok(_)) => panic!("the member never answers"),
            Ok(Err(e)) => brief(&e),
            Err(_) => panic!("the request hung"),
        }
    }

    fn spec(port: u16, proxy_url: String) -> karmada_api::cluster::v1alpha1::ClusterSpec {
        karmada_api::cluster::v1alpha1::ClusterSpec {
            api_endpoint: format!("https://m.invalid:{port}"),
            secret_ref: Some(karmada_api::cluster::v1alpha1::LocalSecretReference {
                namespace: "karmada-cluster".into(),
                name: "m".into(),
            }),
            insecure_skip_tls_verification: true,
            proxy_url,
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_client_connects_with_the_proxy_header_the_cluster_has_now() {
        use netproxy::testing::ForwardProxy;
        let (port, hosts) = member().await;
        let proxy = ForwardProxy::http(hosts).await.unwrap();
        let cp = ControlPlane::new(spec(port, proxy.url()));
        let members = MemberClients::new(cp.client());
        let client = members.get("m").await.unwrap();
        let stale = cp.cluster().unwrap();
        request(&client).await;
        assert_eq!(proxy.log().heads.len(), 1);
        assert!(!proxy.log().heads[0].contains("x-karmada-tenant"));

        // The Cluster gains a proxyHeader; nothing has told the clients yet.
        cp.change(|s| {
            s.proxy_header = BTreeMap::from([("X-Karmada-Tenant".into(), "blue,green".into())]);
        });
        let kept = members.get("m").await.unwrap();
        let built_from_stale = members.for_cluster(&stale).await.unwrap();
        members.invalidate("m");
        let rebuilt_from_stale = members.for_cluster(&stale).await.unwrap();
        for c in [&client, &kept, &built_from_stale, &rebuilt_from_stale] {
            request(c).await;
        }
        let heads = proxy.log().heads;
        assert_eq!(heads.len(), 5, "{heads:?}");
        for head in &heads[1..] {
            assert!(
                head.contains("x-karmada-tenant: blue\r\n")
                    && head.contains("x-karmada-tenant: green\r\n"),
                "{head}"
            );
        }
        // The Cluster was read once per connection (after the client's own first read).
        assert_eq!(
            cp.reads.load(std::sync::atomic::Ordering::SeqCst),
            1 + heads.len()
        );
    }

    #[tokio::test]
    async fn a_kubeconfig_client_of_a_cluster_carries_its_proxy_header() {
        use netproxy::testing::ForwardProxy;
        let (port, hosts) = member().await;
        let proxy = ForwardProxy::http(hosts.clone()).await.unwrap();
        let other = ForwardProxy::http(hosts).await.unwrap();
        let cp = ControlPlane::new(spec(port, proxy.url()));
        cp.change(|s| {
            s.proxy_header = BTreeMap::from([("X-Karmada-Tenant".into(), "blue".into())]);
        });
        // The member's kubeconfig, through the proxy the Cluster names (credentials aside).
        let mut config = kube::Config::new(format!("https://m.invalid:{port}").parse().unwrap());
        config.accept_invalid_certs = true;
        config.proxy_url = Some(format!("http://u:p@{}", proxy.addr()).parse().unwrap());
        let source = take_member_proxy(&mut config, &cp.client(), "m").unwrap();
        let client = kube_client(config, source).unwrap();
        let tenant = |n: usize| proxy.log().heads[n].contains("x-karmada-tenant: blue\r\n");
        request(&client).await;
        assert!(tenant(0), "{:?}", proxy.log());
        assert!(proxy.log().heads[0].contains("proxy-authorization: Basic dTpw"));
        // Deleted (unjoin cleans the member up after): the header it had last.
        let kept = cp.cluster.lock().unwrap().take();
        request(&client).await;
        assert!(tenant(1), "{:?}", proxy.log());
        // Naming another proxy: its header goes with it, not to this one.
        *cp.cluster.lock().unwrap() = kept;
        cp.change(|s| s.proxy_url = other.url());
        request(&client).await;
        *cp.cluster.lock().unwrap() = None;
        request(&client).await;
        assert_eq!(proxy.log().heads.len(), 4);
        assert!(!tenant(2) && !tenant(3), "{:?}", proxy.log());
        assert!(other.log().heads.is_empty());
    }

    #[tokio::test]
    async fn a_client_follows_the_cluster_to_another_proxy_or_none() {
        use netproxy::testing::ForwardProxy;
        let (port, hosts) = member().await;
        let first = ForwardProxy::http(hosts.clone()).await.unwrap();
        let second = ForwardProxy::socks5(hosts, None).await.unwrap();
        let cp = ControlPlane::new(spec(port, first.url()));
        let members = MemberClients::new(cp.client());
        let client = members.get("m").await.unwrap();
        cp.change(|s| s.proxy_url = second.url());
        request(&client).await;
        assert!(first.log().targets.is_empty(), "{:?}", first.log());
        assert_eq!(second.log().targets, [format!("m.invalid:{port}")]);

        // An unusable proxy, or a Cluster gone, fails the connection with the reason; the
        // proxy named before is not used in its place.
        cp.change(|s| s.proxy_url = "ftp://proxy".into());
        let err = request(&client).await;
        assert!(
            err.contains("reading the proxy settings of cluster m: proxy URL \"ftp://proxy\": unsupported scheme"),
            "{err}"
        );
        *cp.cluster.lock().unwrap() = None;
        let err = request(&client).await;
        assert!(
            err.contains("reading the proxy settings of cluster m: the cluster is not found"),
            "{err}"
        );
        assert_eq!(second.log().targets.len(), 1);
    }
}
