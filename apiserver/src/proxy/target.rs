//! Where and how to reach a member cluster: its `apiEndpoint`, TLS from the `secretRef`
//! secret's `caBundle` (or `insecureSkipTLSVerification`), `proxyURL`/`proxyHeader`, and
//! the impersonator token — Karmada's `proxy.ConnectCluster`, `GetTLSConfigForCluster` and
//! `Location` (pkg/util/proxy/proxy.go). Targets are cached per cluster with the versions
//! they were built from, so each cluster keeps one connection pool until its Cluster or
//! secrets change. Karmada builds a transport per request from the Cluster it just read; a
//! kept target instead reads the Cluster's `proxyURL` and `proxyHeader` from storage for each
//! new connection ([`StoredProxySettings`]), so none connects with settings that changed since
//! the target was built, or that the watch cache had not caught up with when it was.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};

use http::{HeaderValue, Uri};
use karmada_api::cluster::v1alpha1::{Cluster, SECRET_CA_DATA_KEY, SECRET_TOKEN_KEY};

use super::secrets::SecretSource;
use super::transport::{self, Dialer, HttpClient, TlsSettings};
use crate::error::ApiError;
use crate::state::ApiState;

/// The Cluster resource's group.
pub const CLUSTER_GROUP: &str = "cluster.karmada.io";
/// The Cluster resource's version.
pub const CLUSTER_VERSION: &str = "v1alpha1";

/// Why a cluster cannot be proxied to.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// No such Cluster.
    #[error("cluster {0} not found")]
    NotFound(String),
    /// The Cluster or its secrets are unusable.
    #[error("{0}")]
    Config(String),
}

impl From<TargetError> for ApiError {
    fn from(e: TargetError) -> ApiError {
        match e {
            TargetError::NotFound(name) => ApiError::not_found(CLUSTER_GROUP, "clusters", &name),
            TargetError::Config(m) => ApiError::internal(m),
        }
    }
}

/// A reachable member cluster.
pub struct Target {
    /// The cluster's name.
    pub cluster: String,
    scheme: http::uri::Scheme,
    authority: http::uri::Authority,
    /// The endpoint's path, without a trailing `/` (proxied paths are appended to it).
    path_prefix: String,
    /// `Bearer <impersonator token>`.
    pub authorization: HeaderValue,
    /// The pooled client of this cluster.
    pub client: HttpClient,
    versions: Versions,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("cluster", &self.cluster)
            .field("authority", &self.authority)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// The member URI of a proxied path (starting with `/`, or empty) and raw query.
    pub fn uri(&self, path: &str, query: Option<&str>) -> Result<Uri, ApiError> {
        let mut pq = String::with_capacity(self.path_prefix.len() + path.len() + 1);
        pq.push_str(&self.path_prefix);
        if path.is_empty() {
            if pq.is_empty() {
                pq.push('/');
            }
        } else {
            pq.push_str(path);
        }
        if let Some(q) = query.filter(|q| !q.is_empty()) {
            pq.push('?');
            pq.push_str(q);
        }
        Uri::builder()
            .scheme(self.scheme.clone())
            .authority(self.authority.clone())
            .path_and_query(pq)
            .build()
            .map_err(|e| ApiError::bad_request(format!("invalid proxied path: {e}")))
    }
}

/// The versions of the secrets a target was built from.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Versions {
    secret: Option<String>,
    impersonator: Option<String>,
}

/// The fields of a Cluster a target is built from: a Cluster whose other fields change
/// (status, labels) keeps its target and connection pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Access {
    endpoint: String,
    secret_ref: Option<(String, String)>,
    impersonator_ref: Option<(String, String)>,
    insecure: bool,
    proxy_url: String,
    proxy_header: BTreeMap<String, String>,
}

impl Access {
    fn of(c: &Cluster) -> Access {
        let r = |x: &Option<karmada_api::cluster::v1alpha1::LocalSecretReference>| {
            x.as_ref().map(|x| (x.namespace.clone(), x.name.clone()))
        };
        Access {
            endpoint: c.spec.api_endpoint.clone(),
            secret_ref: r(&c.spec.secret_ref),
            impersonator_ref: r(&c.spec.impersonator_secret_ref),
            insecure: c.spec.insecure_skip_tls_verification,
            proxy_url: c.spec.proxy_url.clone(),
            proxy_header: c.spec.proxy_header.clone(),
        }
    }
}

/// A cached target and what it was last checked against.
struct Entry {
    target: Arc<Target>,
    cluster_version: String,
    access: Access,
}

/// Cached targets, one per cluster.
#[derive(Default)]
pub struct Targets {
    entries: Mutex<HashMap<String, Arc<Entry>>>,
}

impl std::fmt::Debug for Targets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Targets").finish_non_exhaustive()
    }
}

/// A Cluster as stored: name, resourceVersion and JSON, parsed only when needed.
#[derive(Clone, Debug)]
pub struct ClusterRecord {
    /// Name.
    pub name: String,
    /// resourceVersion.
    pub version: String,
    source: RecordSource,
}

/// Where a record's JSON comes from: the watch cache writes it out only when the record is
/// parsed (a request whose Cluster is unchanged never is).
#[derive(Clone, Debug)]
enum RecordSource {
    Cached(Arc<crate::watch_cache::CachedObject>),
    Json(bytes::Bytes),
}

impl ClusterRecord {
    /// Parses the Cluster.
    pub fn parse(&self) -> Result<Cluster, TargetError> {
        let parsed = match &self.source {
            RecordSource::Cached(o) => serde_json::from_slice(&o.json()),
            RecordSource::Json(json) => serde_json::from_slice(json),
        };
        parsed.map_err(|e| TargetError::Config(format!("cannot read the Cluster: {e}")))
    }
}

fn cluster_def(state: &ApiState) -> Option<Arc<crate::resources::ResourceDef>> {
    state
        .catalog
        .snapshot()
        .get(CLUSTER_GROUP, CLUSTER_VERSION, "clusters")
        .cloned()
}

fn record(o: Arc<crate::watch_cache::CachedObject>) -> ClusterRecord {
    ClusterRecord {
        name: o.name().to_owned(),
        version: o.rv.to_string(),
        source: RecordSource::Cached(o),
    }
}

/// Reads a Cluster: from the watch cache, or from storage when the cache has not seen it yet.
pub async fn read_cluster(state: &ApiState, name: &str) -> Result<ClusterRecord, TargetError> {
    let def = cluster_def(state).ok_or_else(|| TargetError::NotFound(name.to_string()))?;
    if let Some(key) = def.key("", name)
        && let Ok(cache) = state.cache(&def)
        && let Some(o) = cache.get(&key)
    {
        return Ok(record(o));
    }
    match crate::registry::Registry::new(state, def)
        .get("", name)
        .await
    {
        Ok(v) => {
            let version = v
                .pointer("/metadata/resourceVersion")
                .and_then(|r| r.as_str())
                .unwrap_or_default()
                .to_string();
            let bytes = serde_json::to_vec(&v).map_err(|e| TargetError::Config(e.to_string()))?;
            Ok(ClusterRecord {
                name: name.to_string(),
                version,
                source: RecordSource::Json(bytes.into()),
            })
        }
        Err(e) if e.code == 404 => Err(TargetError::NotFound(name.to_string())),
        Err(e) => Err(TargetError::Config(e.message)),
    }
}

/// Every Cluster, by name.
pub fn list_clusters(state: &ApiState) -> Vec<ClusterRecord> {
    let Some(def) = cluster_def(state) else {
        return vec![];
    };
    let Ok(cache) = state.cache(&def) else {
        return vec![];
    };
    let mut out: Vec<ClusterRecord> = cache.all().into_iter().map(record).collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

impl Targets {
    /// The target of a cluster by name.
    pub async fn get(
        &self,
        state: &Arc<ApiState>,
        secrets: &SecretSource,
        name: &str,
    ) -> Result<Arc<Target>, TargetError> {
        let rec = read_cluster(state, name).await?;
        self.for_cluster(state, secrets, &rec).await
    }

    /// The target of a Cluster, reusing the cached one while its access fields and secrets
    /// are unchanged. An unchanged resourceVersion skips even parsing the Cluster.
    pub async fn for_cluster(
        &self,
        state: &Arc<ApiState>,
        secrets: &SecretSource,
        rec: &ClusterRecord,
    ) -> Result<Arc<Target>, TargetError> {
        let entry = self
            .entries
            .lock()
            .ok()
            .and_then(|m| m.get(&rec.name).cloned());
        let fresh = match &entry {
            Some(e) if e.cluster_version == rec.version => None,
            _ => Some(Access::of(&rec.parse()?)),
        };
        if let Some(e) = &entry {
            let access = fresh.as_ref().unwrap_or(&e.access);
            if *access == e.access {
                let secret = match &access.secret_ref {
                    Some((ns, n)) => secret_version(state, secrets, ns, n).await?,
                    None => None,
                };
                let impersonator = match &access.impersonator_ref {
                    Some((ns, n)) => secret_version(state, secrets, ns, n).await?,
                    None => None,
                };
                if e.target.versions.secret == secret
                    && e.target.versions.impersonator == impersonator
                {
                    if e.cluster_version != rec.version {
                        self.remember(
                            &rec.name,
                            e.target.clone(),
                            rec.version.clone(),
                            access.clone(),
                        );
                    }
                    return Ok(e.target.clone());
                }
            }
        }
        let access = match (fresh, entry) {
            (Some(a), _) => a,
            (None, Some(e)) => e.access.clone(),
            (None, None) => Access::of(&rec.parse()?),
        };
        let target = Arc::new(build(state, secrets, &rec.name, &access).await?);
        self.remember(&rec.name, target.clone(), rec.version.clone(), access);
        Ok(target)
    }

    fn remember(&self, name: &str, target: Arc<Target>, cluster_version: String, access: Access) {
        if let Ok(mut m) = self.entries.lock() {
            m.insert(
                name.to_string(),
                Arc::new(Entry {
                    target,
                    cluster_version,
                    access,
                }),
            );
        }
    }
}

async fn secret_version(
    state: &ApiState,
    secrets: &SecretSource,
    ns: &str,
    name: &str,
) -> Result<Option<String>, TargetError> {
    secrets
        .version(state, ns, name)
        .await
        .map_err(|e| TargetError::Config(e.to_string()))
}

/// Parses a Cluster's `apiEndpoint` (a URL, or `host[:port]` meaning HTTPS).
pub fn parse_endpoint(cluster: &str, endpoint: &str) -> Result<Uri, TargetError> {
    if endpoint.is_empty() {
        return Err(TargetError::Config(format!(
            "API endpoint of cluster {cluster} should not be empty"
        )));
    }
    let with_scheme = if endpoint.contains("://") {
        endpoint.to_string()
    } else {
        format!("https://{endpoint}")
    };
    let uri: Uri = with_scheme.parse().map_err(|e| {
        TargetError::Config(format!("failed to parse api endpoint {endpoint}: {e}"))
    })?;
    match uri.scheme_str() {
        Some("https") | Some("http") if uri.authority().is_some() => Ok(uri),
        _ => Err(TargetError::Config(format!(
            "failed to parse api endpoint {endpoint}: not an http(s) URL"
        ))),
    }
}

async fn build(
    state: &Arc<ApiState>,
    secrets: &SecretSource,
    name: &str,
    access: &Access,
) -> Result<Target, TargetError> {
    let endpoint = parse_endpoint(name, &access.endpoint)?;
    let read = |ns: String, n: String| async move {
        secrets
            .get(state, &ns, &n)
            .await
            .map_err(|e| TargetError::Config(e.to_string()))?
            .ok_or_else(|| TargetError::Config(format!("secrets \"{n}\" not found")))
    };
    // A pull-mode cluster may have no secret: then no CA is set (GetTLSConfigForCluster).
    let (ca_bundle, secret_version) = match &access.secret_ref {
        Some((ns, n)) => {
            let s = read(ns.clone(), n.clone()).await?;
            (
                s.data.get(SECRET_CA_DATA_KEY).cloned().unwrap_or_default(),
                Some(s.version.clone()),
            )
        }
        None => (Vec::new(), None),
    };
    let (imp_ns, imp_name) = access.impersonator_ref.as_ref().ok_or_else(|| {
        TargetError::Config(format!(
            "the impersonatorSecretRef of cluster {name} is nil"
        ))
    })?;
    let imp = read(imp_ns.clone(), imp_name.clone()).await?;
    let token = imp
        .data
        .get(SECRET_TOKEN_KEY)
        .map(|t| String::from_utf8_lossy(t).trim().to_string())
        .filter(|t| !t.is_empty())
        .ok_or_else(|| {
            TargetError::Config(format!(
                "failed to get impersonateToken for cluster {name}: the impersonate token of cluster {name} is empty"
            ))
        })?;
    let authorization = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
        TargetError::Config(format!(
            "the impersonate token of cluster {name} is malformed"
        ))
    })?;
    let tls = transport::client_config(&TlsSettings {
        ca_bundle,
        insecure: access.insecure,
        client_cert: None,
        tls13_only: true,
    })
    .map_err(|e| TargetError::Config(format!("cluster {name}: {e}")))?;
    let expected = proxy_of(name, &access.proxy_url, &access.proxy_header)
        .map_err(|e| TargetError::Config(e.to_string()))?;
    let settings = StoredProxySettings {
        state: Arc::downgrade(state),
        cluster: name.to_owned(),
    };
    let proxy = netproxy::ProxySource::live(settings, expected);
    let client = transport::http_client(Dialer::new(tls, None, proxy));
    let scheme = endpoint
        .scheme()
        .cloned()
        .unwrap_or(http::uri::Scheme::HTTPS);
    let authority = endpoint.authority().cloned().ok_or_else(|| {
        TargetError::Config(format!("api endpoint of cluster {name} has no host"))
    })?;
    Ok(Target {
        cluster: name.to_string(),
        scheme,
        authority,
        path_prefix: endpoint.path().trim_end_matches('/').to_string(),
        authorization,
        client,
        versions: Versions {
            secret: secret_version,
            impersonator: Some(imp.version.clone()),
        },
    })
}

/// The proxy a Cluster's `proxyURL` and `proxyHeader` name (`None`: no proxy).
fn proxy_of(
    cluster: &str,
    url: &str,
    header: &BTreeMap<String, String>,
) -> Result<Option<netproxy::Proxy>, std::io::Error> {
    if url.is_empty() {
        return Ok(None);
    }
    netproxy::Proxy::parse(url, header)
        .map(Some)
        .map_err(|e| std::io::Error::other(format!("cluster {cluster}: {e}")))
}

/// A Cluster's proxy settings as stored (a consistent read, as kube's GET without a
/// resourceVersion), read by its target for each new connection.
struct StoredProxySettings {
    /// Weak: the targets belong to the server whose state this is.
    state: Weak<ApiState>,
    cluster: String,
}

impl StoredProxySettings {
    async fn read(&self) -> Result<Option<netproxy::Proxy>, std::io::Error> {
        let fail = |why: String| {
            std::io::Error::other(format!(
                "reading the proxy settings of cluster {}: {why}",
                self.cluster
            ))
        };
        let state = self
            .state
            .upgrade()
            .ok_or_else(|| fail("the server is shutting down".into()))?;
        let def = cluster_def(&state).ok_or_else(|| fail("clusters are not served".into()))?;
        let cluster = crate::registry::Registry::new(&state, def)
            .get("", &self.cluster)
            .await
            .map_err(|e| fail(e.message))?;
        let url = cluster
            .pointer("/spec/proxyURL")
            .and_then(|u| u.as_str())
            .unwrap_or_default();
        let header: BTreeMap<String, String> = match cluster.pointer("/spec/proxyHeader") {
            Some(h) if !h.is_null() => {
                serde_json::from_value(h.clone()).map_err(|e| fail(format!("proxyHeader: {e}")))?
            }
            _ => BTreeMap::new(),
        };
        proxy_of(&self.cluster, url, &header)
    }
}

impl netproxy::ProxySettings for StoredProxySettings {
    fn current(
        &self,
    ) -> std::pin::Pin<Box<dyn Future<Output = std::io::Result<Option<netproxy::Proxy>>> + Send + '_>>
    {
        Box::pin(self.read())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let cases: &[(&str, Option<&str>)] = &[
            ("https://10.0.0.1:6443", Some("https://10.0.0.1:6443/")),
            ("10.0.0.1:6443", Some("https://10.0.0.1:6443/")),
            ("member.example", Some("https://member.example/")),
            (
                "https://gw.example/k8s/member1/",
                Some("https://gw.example/k8s/member1/"),
            ),
            ("http://127.0.0.1:8080", Some("http://127.0.0.1:8080/")),
            ("", None),
            ("ftp://x", None),
            ("https://", None),
        ];
        for (input, want) in cases {
            let got = parse_endpoint("m", input).ok().map(|u| u.to_string());
            assert_eq!(got.as_deref(), *want, "{input}");
        }
    }
}
