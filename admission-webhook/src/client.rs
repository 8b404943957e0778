//! Calling a webhook (k8s.io/apiserver pkg/util/webhook: ClientManager, ServiceResolver): its
//! `clientConfig` names a `url` or a `service`; the connection is TLS verified against the
//! `caBundle` (the system's roots without one), as `<service>.<namespace>.svc` for a Service;
//! HTTP/2 when the webhook offers it, else HTTP/1.1; through `HTTPS_PROXY` unless `NO_PROXY`
//! (names, domain suffixes, IPs and CIDRs, `*`) or a loopback host exempts it, as Go's
//! `ProxyFromEnvironment` with kube's CIDR support decides.
//!
//! A Service resolves as the aggregator resolves an APIService's (kube-apiserver's default
//! ClusterIP service resolver): an ExternalName Service to its external name, another type to
//! its clusterIP, on a port the Service declares. The Service is read from the watch cache.
//! Clients are pooled per destination and kept while their configuration is unchanged.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use base64::Engine as _;
use genericapiserver::aggregator::apiservice::{ServiceRef, resolve};
use genericapiserver::proxy::transport::{self, Body, Dialer, HttpClient, TlsSettings};
use genericapiserver::state::ApiState;
use http_body_util::BodyExt;
use serde_json::Value;

/// kube's limit on a webhook's response body.
const MAX_RESPONSE_BYTES: usize = 3 * 1024 * 1024;

/// Where a webhook is reached, as its configuration says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// Path, `/` by default.
        path: String,
        /// Port (443 by default).
        port: u16,
    },
}

/// A webhook's client configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientConfig {
    /// Where to send reviews.
    pub target: Target,
    /// The PEM CA bundle (decoded from base64); empty: the system's roots.
    pub ca_bundle: Vec<u8>,
}

impl ClientConfig {
    /// Reads `clientConfig` (validated and defaulted on write).
    pub fn from_json(cc: &Value) -> Result<ClientConfig, String> {
        let ca_bundle = match cc.get("caBundle").and_then(Value::as_str) {
            Some(b) => base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| format!("invalid caBundle: {e}"))?,
            None => Vec::new(),
        };
        let target = if let Some(url) = cc.get("url").and_then(Value::as_str) {
            Target::Url(url.to_string())
        } else if let Some(svc) = cc.get("service").filter(|s| s.is_object()) {
            let s = |k: &str| svc.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let path = s("path");
            Target::Service {
                namespace: s("namespace"),
                name: s("name"),
                path: if path.is_empty() { "/".into() } else { path },
                port: svc
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            }
        } else {
            return Err("clientConfig has neither url nor service".into());
        };
        Ok(ClientConfig { target, ca_bundle })
    }
}

/// Why a call did not get an answer (kube's ErrCallingWebhook reasons).
#[derive(Debug, Clone)]
pub struct CallError(pub String);

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The HTTP answer of a webhook.
#[derive(Debug)]
pub struct Answer {
    /// HTTP status.
    pub status: u16,
    /// Body bytes.
    pub body: bytes::Bytes,
}

/// Pooled clients, one per destination and TLS configuration.
#[derive(Default)]
pub struct ClientManager {
    clients: Mutex<HashMap<String, HttpClient>>,
}

impl std::fmt::Debug for ClientManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientManager").finish_non_exhaustive()
    }
}

/// Where one call goes: the URL to post to and how to verify and reach its host.
struct Destination {
    url: String,
    host: String,
    server_name: Option<String>,
}

impl ClientManager {
    fn destination(&self, state: &ApiState, cc: &ClientConfig) -> Result<Destination, CallError> {
        match &cc.target {
            Target::Url(url) => {
                let uri: http::Uri = url
                    .parse()
                    .map_err(|e| CallError(format!("invalid URL {url:?}: {e}")))?;
                let host = uri
                    .host()
                    .unwrap_or_default()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string();
                Ok(Destination {
                    url: url.clone(),
                    host,
                    server_name: None,
                })
            }
            Target::Service {
                namespace,
                name,
                path,
                port,
            } => {
                let service = read_service(state, namespace, name);
                let svc_ref = ServiceRef {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    port: *port,
                };
                let (host, port) = resolve(&svc_ref, service.as_ref())
                    .map_err(|c| CallError(format!("failed to resolve service: {}", c.message)))?;
                let authority = if host.contains(':') {
                    format!("[{host}]:{port}")
                } else {
                    format!("{host}:{port}")
                };
                Ok(Destination {
                    url: format!("https://{authority}{path}"),
                    host,
                    server_name: Some(format!("{name}.{namespace}.svc")),
                })
            }
        }
    }

    fn client(&self, cc: &ClientConfig, dest: &Destination) -> Result<HttpClient, CallError> {
        let proxy = env_proxy(&dest.host);
        let key = format!(
            "{}|{}|{}|{}",
            dest.host,
            dest.server_name.as_deref().unwrap_or(""),
            base64::engine::general_purpose::STANDARD.encode(&cc.ca_bundle),
            proxy.as_deref().unwrap_or("")
        );
        let mut clients = self.clients.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = clients.get(&key) {
            return Ok(c.clone());
        }
        let tls = tls_config(&cc.ca_bundle)?;
        let server_name = dest
            .server_name
            .as_ref()
            .map(|n| rustls::pki_types::ServerName::try_from(n.clone()))
            .transpose()
            .map_err(|e| CallError(format!("invalid server name: {e}")))?;
        let proxy_source = match &proxy {
            Some(url) => netproxy::Proxy::parse(url, &BTreeMap::new())
                .map(|p| netproxy::ProxySource::Fixed(std::sync::Arc::new(p)))
                .map_err(|e| CallError(format!("invalid proxy {url:?}: {e}")))?,
            None => netproxy::ProxySource::Direct,
        };
        let client = transport::http_client(Dialer::new(tls, server_name, proxy_source));
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// Posts `body` (an AdmissionReview) to the webhook, answering within `timeout`.
    pub async fn call(
        &self,
        state: &ApiState,
        cc: &ClientConfig,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Answer, CallError> {
        let dest = self.destination(state, cc)?;
        let client = self.client(cc, &dest)?;
        // kube's REST client passes the deadline on as `timeout=` (Go's duration form).
        let sep = if dest.url.contains('?') { '&' } else { '?' };
        let url = format!("{}{sep}timeout={}s", dest.url, timeout.as_secs());
        let req = http::Request::post(&url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json, */*")
            .body(Body::from(body))
            .map_err(|e| CallError(format!("invalid request to {url}: {e}")))?;
        let work = async {
            let resp = client
                .request(req)
                .await
                .map_err(|e| CallError(format!("Post {url:?}: {}", error_chain(&e))))?;
            let status = resp.status().as_u16();
            let limited = http_body_util::Limited::new(resp.into_body(), MAX_RESPONSE_BYTES);
            let body = limited
                .collect()
                .await
                .map_err(|e| CallError(format!("Post {url:?}: reading the response: {e}")))?
                .to_bytes();
            Ok(Answer { status, body })
        };
        match tokio::time::timeout(timeout, work).await {
            Ok(r) => r.map_err(|e: CallError| CallError(format!("failed to call webhook: {e}"))),
            Err(_) => Err(CallError(format!(
                "failed to call webhook: Post {url:?}: context deadline exceeded"
            ))),
        }
    }
}

/// The webhook's Service from the watch cache.
fn read_service(state: &ApiState, namespace: &str, name: &str) -> Option<Value> {
    let snapshot = state.catalog.snapshot();
    let def = snapshot.get("", "v1", "services")?;
    let cache = state.cache(def).ok()?;
    cache.get(&def.key(namespace, name)?).map(|o| o.value())
}

/// TLS towards a webhook: its caBundle, or the system's roots; HTTP/2 or HTTP/1.1 by ALPN.
fn tls_config(ca_bundle: &[u8]) -> Result<std::sync::Arc<rustls::ClientConfig>, CallError> {
    let bundle = if ca_bundle.is_empty() {
        system_roots_pem()
    } else {
        ca_bundle.to_vec()
    };
    let settings = TlsSettings {
        ca_bundle: bundle,
        ..Default::default()
    };
    let config = transport::client_config(&settings)
        .map_err(|e| CallError(format!("invalid caBundle: {e}")))?;
    let mut config = (*config).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(std::sync::Arc::new(config))
}

/// The system's trusted roots as PEM (Go's default pool), from the usual Debian and Red Hat
/// bundle files or `SSL_CERT_FILE`.
fn system_roots_pem() -> Vec<u8> {
    let mut candidates: Vec<String> = std::env::var("SSL_CERT_FILE").into_iter().collect();
    candidates.extend(
        [
            "/etc/ssl/certs/ca-certificates.crt",
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/cert.pem",
        ]
        .map(String::from),
    );
    candidates
        .iter()
        .find_map(|p| std::fs::read(p).ok())
        .unwrap_or_default()
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let msg = s.to_string();
        if !out.contains(&msg) {
            out.push_str(": ");
            out.push_str(&msg);
        }
        source = s.source();
    }
    out
}

/// The proxy for an `https` request to `host` from `HTTPS_PROXY`/`https_proxy`, unless
/// `NO_PROXY`/`no_proxy` or a loopback host exempts it.
pub fn env_proxy(host: &str) -> Option<String> {
    let var = |upper: &str, lower: &str| {
        std::env::var(upper)
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| std::env::var(lower).ok().filter(|v| !v.is_empty()))
    };
    let proxy = var("HTTPS_PROXY", "https_proxy")?;
    let no_proxy = var("NO_PROXY", "no_proxy").unwrap_or_default();
    if exempt(host, &no_proxy) {
        return None;
    }
    Some(if proxy.contains("://") {
        proxy
    } else {
        format!("http://{proxy}")
    })
}

/// Go's `useProxy` with kube's NO_PROXY CIDRs.
fn exempt(host: &str, no_proxy: &str) -> bool {
    let ip = host.parse::<IpAddr>().ok();
    if host.eq_ignore_ascii_case("localhost") || ip.is_some_and(|i| i.is_loopback()) {
        return true;
    }
    for entry in no_proxy.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        if entry == "*" {
            return true;
        }
        if let (Some(ip), Some((net, bits))) = (ip, entry.split_once('/'))
            && let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>())
            && in_cidr(ip, net, bits)
        {
            return true;
        }
        let name = match entry.rsplit_once(':') {
            Some((n, port)) if port.chars().all(|c| c.is_ascii_digit()) => n,
            _ => entry,
        };
        if let (Some(ip), Ok(e)) = (ip, name.parse::<IpAddr>())
            && ip == e
        {
            return true;
        }
        let domain = name.trim_start_matches("*.").trim_start_matches('.');
        if host.eq_ignore_ascii_case(domain)
            || host
                .to_ascii_lowercase()
                .ends_with(&format!(".{}", domain.to_ascii_lowercase()))
        {
            return true;
        }
    }
    false
}

fn in_cidr(ip: IpAddr, net: IpAddr, bits: u32) -> bool {
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn no_proxy_rules() {
        assert!(exempt("127.0.0.1", ""));
        assert!(exempt("localhost", ""));
        assert!(!exempt("hooks.example.com", ""));
        assert!(exempt("hooks.example.com", "example.com"));
        assert!(exempt("hooks.example.com", ".example.com"));
        assert!(!exempt("example.org", "example.com"));
        assert!(exempt("10.1.2.3", "10.0.0.0/8"));
        assert!(!exempt("11.1.2.3", "10.0.0.0/8"));
        assert!(exempt("10.1.2.3", "10.1.2.3"));
        assert!(exempt("anything", "*"));
        assert!(exempt("hooks.svc", "hooks.svc:443"));
    }

    #[test]
    fn client_configs() {
        let cc = ClientConfig::from_json(&json!({"service": {"namespace": "ns", "name": "hook"}}))
            .unwrap();
        assert_eq!(
            cc.target,
            Target::Service {
                namespace: "ns".into(),
                name: "hook".into(),
                path: "/".into(),
                port: 443
            }
        );
        let cc =
            ClientConfig::from_json(&json!({"url": "https://h:1/x", "caBundle": "YWJj"})).unwrap();
        assert_eq!(cc.ca_bundle, b"abc");
        assert!(ClientConfig::from_json(&json!({})).is_err());
    }
}
