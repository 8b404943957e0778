//! Where a connection takes its proxy from: none, one fixed when the client was built (a
//! kubeconfig's `proxy-url`), or settings read as each connection is made
//! ([`ProxySettings`]: a Cluster's current `proxyURL` and `proxyHeader`).
//!
//! Go's transport reads its `Proxy` function and `ProxyConnectHeader` as it dials, and Karmada
//! builds member clients from the Cluster it has just read; here clients and their connection
//! pools are kept, so a live source is what keeps a kept client (or one built from an outdated
//! copy of the Cluster) from opening a connection with settings that are no longer the
//! Cluster's. The settings are read once per new connection, after the proxy is dialed and
//! just before the `CONNECT` (or SOCKS5 request) is sent, so what the proxy receives is what
//! the settings say at that moment; nothing is read per request.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio_rustls::TlsConnector;

use super::{Proxy, ProxyScheme, ProxyStream, authority, dial_direct};

/// How many times a connection follows a proxy that moved while it was being made.
const MAX_REROUTES: usize = 3;

/// Proxy settings owned elsewhere (a Cluster's `proxyURL` and `proxyHeader`), read for each new
/// connection.
pub trait ProxySettings: Send + Sync {
    /// The proxy a connection made now goes through (`None`: straight to the target). An
    /// error fails the connection: a stale proxy is not used in its place.
    fn current(&self) -> Pin<Box<dyn Future<Output = std::io::Result<Option<Proxy>>> + Send + '_>>;
}

/// Where a connector takes its proxy from.
#[derive(Clone)]
pub enum ProxySource {
    /// Straight to the target.
    Direct,
    /// Through this proxy, for as long as the connector lives.
    Fixed(Arc<Proxy>),
    /// Through whatever proxy the settings name when a connection is made.
    Live(Arc<LiveProxy>),
}

impl std::fmt::Debug for ProxySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProxySource::Direct => f.write_str("Direct"),
            ProxySource::Fixed(p) => f.debug_tuple("Fixed").field(p).finish(),
            ProxySource::Live(_) => f.write_str("Live"),
        }
    }
}

impl From<Option<Proxy>> for ProxySource {
    fn from(proxy: Option<Proxy>) -> ProxySource {
        match proxy {
            Some(p) => ProxySource::Fixed(Arc::new(p)),
            None => ProxySource::Direct,
        }
    }
}

impl ProxySource {
    /// Reads `settings` for each connection; `expected` is what they are believed to be now
    /// (the proxy dialed first, before the settings are read).
    pub fn live(settings: impl ProxySettings + 'static, expected: Option<Proxy>) -> ProxySource {
        ProxySource::Live(Arc::new(LiveProxy {
            settings: Box::new(settings),
            last: Mutex::new(expected.map(Arc::new)),
        }))
    }

    /// Whether a connection may go through an `https://` proxy, and so needs TLS settings.
    pub fn may_use_tls(&self) -> bool {
        match self {
            ProxySource::Direct => false,
            ProxySource::Fixed(p) => p.scheme == ProxyScheme::Https,
            ProxySource::Live(_) => true,
        }
    }

    /// Opens a connection to `host:port` through the proxy, if any; `proxy_tls` secures the
    /// connection to an `https://` proxy.
    pub async fn connect(
        &self,
        host: &str,
        port: u16,
        proxy_tls: Option<&TlsConnector>,
    ) -> std::io::Result<ProxyStream> {
        match self {
            ProxySource::Direct => super::connect(None, host, port, proxy_tls).await,
            ProxySource::Fixed(p) => super::connect(Some(p.as_ref()), host, port, proxy_tls).await,
            ProxySource::Live(live) => {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                live.connect(host, port, proxy_tls).await
            }
        }
    }
}

/// Settings read as each connection is made, with the proxy they named last.
pub struct LiveProxy {
    settings: Box<dyn ProxySettings>,
    /// Dialed first by the next connection: the settings rarely move the proxy itself.
    last: Mutex<Option<Arc<Proxy>>>,
}

impl LiveProxy {
    async fn connect(
        &self,
        host: &str,
        port: u16,
        tls: Option<&TlsConnector>,
    ) -> std::io::Result<ProxyStream> {
        let mut route = self.last.lock().ok().and_then(|l| l.clone());
        for _ in 0..=MAX_REROUTES {
            // Dial, then read the settings: a TLS handshake with the proxy takes a while, and
            // the headers sent must be the ones in force when they are sent.
            let hop = match route.as_deref() {
                Some(p) => p.dial(tls).await,
                None => dial_direct(host, port).await,
            };
            let now = self.settings.current().await?.map(Arc::new);
            let same = match (route.as_deref(), now.as_deref()) {
                (Some(a), Some(b)) => a.same_endpoint(b),
                (None, None) => true,
                _ => false,
            };
            if !same {
                // The proxy moved (or appeared, or went): this hop leads the wrong way.
                route = now;
                continue;
            }
            if let Ok(mut last) = self.last.lock() {
                last.clone_from(&now);
            }
            let mut stream = hop?;
            if let Some(p) = &now {
                p.tunnel(&mut stream, host, port).await?;
            }
            return Ok(stream);
        }
        Err(std::io::Error::other(format!(
            "dial {}: the proxy settings changed {} times while connecting",
            authority(host, port),
            MAX_REROUTES + 1
        )))
    }
}
