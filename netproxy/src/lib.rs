//! Outbound connections to member clusters through a Cluster's `spec.proxyURL`, as Go's
//! `http.Transport` makes them for Karmada (pkg/util/membercluster_client.go and
//! pkg/util/proxy: `Proxy: http.ProxyURL(...)`, `ProxyConnectHeader` from `proxyHeader`):
//!
//! - `http://` proxies: a TCP connection to the proxy and an HTTP `CONNECT` to the target;
//! - `https://` proxies: the same inside TLS to the proxy (verified with the caller's TLS
//!   settings, the member's, as Go's transport does);
//! - `socks5://` proxies: RFC 1928 `CONNECT` with the target's host name resolved by the
//!   proxy, and RFC 1929 user/password authentication from the URL's user info.
//!
//! `CONNECT` requests carry `Proxy-Authorization: Basic` from the URL's user info and the
//! `proxyHeader` entries, each value a comma-separated list (`ParseProxyHeaders`). SOCKS5 has
//! no headers: `proxyHeader` does not apply to it, as in Go.
//!
//! [`connect`] gives a TCP-level stream to the target (through the proxy when there is one);
//! TLS to the target is the caller's. [`ProxySource`] is where a client's connections take
//! their proxy from: none, a fixed one, or settings read as each connection is made (a
//! Cluster's current ones). [`Connector`] connects as its source says, as a hyper connector.
//! [`testing`] has forward proxies that tests put between karmada-rs and a member.
//! [`splice()`] joins two upgraded HTTP connections (exec, attach, port-forward), and
//! [`HOP_BY_HOP`] names the headers a proxy never forwards.
//!
//! Must not depend on Kubernetes or Karmada types, nor on any other crate of this workspace.

pub mod headers;
mod http_connect;
mod socks5;
pub mod source;
pub mod splice;
pub mod testing;

pub use headers::HOP_BY_HOP;
pub use source::{ProxySettings, ProxySource};
pub use splice::splice;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use base64::Engine;
use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Why a proxy URL or its headers are unusable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ProxyError {
    /// The URL does not parse or names no host.
    #[error("proxy URL {url:?}: {why}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The scheme is not http, https or socks5.
    #[error("proxy URL {url:?}: unsupported scheme {scheme:?}, must be http, https, or socks5")]
    Scheme {
        /// The URL as given.
        url: String,
        /// Its scheme.
        scheme: String,
    },
    /// A proxyHeader name or value cannot be sent.
    #[error("proxy header {name:?}: {why}")]
    Header {
        /// The header name.
        name: String,
        /// What is wrong with it.
        why: String,
    },
}

/// How a proxy is spoken to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProxyScheme {
    /// HTTP `CONNECT` over TCP.
    Http,
    /// HTTP `CONNECT` over TLS.
    Https,
    /// SOCKS5.
    Socks5,
}

/// A parsed proxy: where it is and what to send it.
#[derive(Clone)]
pub struct Proxy {
    scheme: ProxyScheme,
    host: String,
    port: u16,
    /// `CONNECT` headers: `Proxy-Authorization` and the proxyHeader entries.
    connect_headers: HeaderMap,
    /// SOCKS5 user name and password.
    socks_auth: Option<(String, String)>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Credentials stay out of logs.
        f.debug_struct("Proxy")
            .field("scheme", &self.scheme)
            .field("host", &self.host)
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// Parses a proxy URL (`scheme://[user[:password]@]host[:port]`) and a Cluster's
    /// `proxyHeader` (each value a comma-separated list of values).
    pub fn parse(url: &str, proxy_header: &BTreeMap<String, String>) -> Result<Proxy, ProxyError> {
        let bad = |why: &str| ProxyError::Url {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
        let scheme = match uri.scheme_str() {
            Some("http") => ProxyScheme::Http,
            Some("https") => ProxyScheme::Https,
            Some("socks5") => ProxyScheme::Socks5,
            Some(other) => {
                return Err(ProxyError::Scheme {
                    url: url.to_owned(),
                    scheme: other.to_owned(),
                });
            }
            None => return Err(bad("no scheme")),
        };
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = authority.port_u16().unwrap_or(match scheme {
            ProxyScheme::Http => 80,
            ProxyScheme::Https => 443,
            ProxyScheme::Socks5 => 1080,
        });
        let userinfo = authority.as_str().rsplit_once('@').map(|(u, _)| u);
        let mut connect_headers = HeaderMap::new();
        let mut socks_auth = None;
        if let Some(userinfo) = userinfo {
            let (user, password) = match userinfo.split_once(':') {
                Some((u, p)) => (percent_decode(u), percent_decode(p)),
                None => (percent_decode(userinfo), String::new()),
            };
            match scheme {
                ProxyScheme::Socks5 => socks_auth = Some((user, password)),
                ProxyScheme::Http | ProxyScheme::Https => {
                    let credentials = base64::engine::general_purpose::STANDARD
                        .encode(format!("{user}:{password}"));
                    let mut value = HeaderValue::from_str(&format!("Basic {credentials}"))
                        .map_err(|_| bad("bad user info"))?;
                    value.set_sensitive(true);
                    connect_headers.insert(http::header::PROXY_AUTHORIZATION, value);
                }
            }
        }
        for (name, values) in proxy_header {
            let header =
                HeaderName::from_bytes(name.as_bytes()).map_err(|_| ProxyError::Header {
                    name: name.clone(),
                    why: "not a valid header name".into(),
                })?;
            for v in values.split(',') {
                let value = HeaderValue::from_str(v).map_err(|_| ProxyError::Header {
                    name: name.clone(),
                    why: format!("{v:?} is not a valid header value"),
                })?;
                connect_headers.append(header.clone(), value);
            }
        }
        Ok(Proxy {
            scheme,
            host,
            port,
            connect_headers,
            socks_auth,
        })
    }

    /// How the proxy is spoken to.
    pub fn scheme(&self) -> ProxyScheme {
        self.scheme
    }

    /// `host:port` of the proxy.
    pub fn authority(&self) -> String {
        authority(&self.host, self.port)
    }

    /// Whether connections through `other` start the same way: the same scheme, host and port
    /// (credentials and headers, sent once connected, may differ).
    pub fn same_endpoint(&self, other: &Proxy) -> bool {
        self.scheme == other.scheme && self.host == other.host && self.port == other.port
    }

    /// Opens a connection to `host:port` through the proxy; `tls` secures the connection to
    /// an `https://` proxy.
    async fn connect(
        &self,
        host: &str,
        port: u16,
        tls: Option<&TlsConnector>,
    ) -> std::io::Result<ProxyStream> {
        let mut stream = self.dial(tls).await?;
        self.tunnel(&mut stream, host, port).await?;
        Ok(stream)
    }

    /// Connects to the proxy itself: TCP, inside TLS for an `https://` proxy (`tls`).
    async fn dial(&self, tls: Option<&TlsConnector>) -> std::io::Result<ProxyStream> {
        let tcp = TcpStream::connect(self.authority())
            .await
            .map_err(|e| with_context(e, format!("dial proxy {}", self.authority())))?;
        let _ = tcp.set_nodelay(true);
        if self.scheme != ProxyScheme::Https {
            return Ok(MaybeTls::Plain(tcp));
        }
        let tls = tls.ok_or_else(|| {
            std::io::Error::other(format!(
                "https proxy {} needs TLS settings",
                self.authority()
            ))
        })?;
        let name = ServerName::try_from(self.host.clone())
            .map_err(|e| std::io::Error::other(format!("bad proxy host {:?}: {e}", self.host)))?;
        let stream = tls.connect(name, tcp).await.map_err(|e| {
            with_context(e, format!("TLS handshake with proxy {}", self.authority()))
        })?;
        Ok(MaybeTls::Tls(Box::new(stream)))
    }

    /// Asks the proxy at the other end of `stream` (from [`Proxy::dial`]) for a connection to
    /// `host:port`, with this proxy's headers or SOCKS5 credentials.
    async fn tunnel(&self, stream: &mut ProxyStream, host: &str, port: u16) -> std::io::Result<()> {
        match self.scheme {
            ProxyScheme::Http | ProxyScheme::Https => {
                http_connect::tunnel(stream, &self.connect_headers, host, port).await
            }
            ProxyScheme::Socks5 => {
                socks5::connect(
                    stream,
                    &self.authority(),
                    self.socks_auth.as_ref(),
                    host,
                    port,
                )
                .await
            }
        }
    }
}

/// Opens a connection to `host:port`, through `proxy` when there is one; `proxy_tls`
/// secures the connection to an `https://` proxy.
pub async fn connect(
    proxy: Option<&Proxy>,
    host: &str,
    port: u16,
    proxy_tls: Option<&TlsConnector>,
) -> std::io::Result<ProxyStream> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match proxy {
        Some(p) => p.connect(host, port, proxy_tls).await,
        None => dial_direct(host, port).await,
    }
}

/// A TCP connection straight to `host:port`.
async fn dial_direct(host: &str, port: u16) -> std::io::Result<ProxyStream> {
    let tcp = TcpStream::connect(authority(host, port)).await?;
    let _ = tcp.set_nodelay(true);
    Ok(MaybeTls::Plain(tcp))
}

/// `host:port`, with brackets around an IPv6 host.
fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn with_context(e: std::io::Error, what: String) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// Decodes `%XX` escapes (of a URL's user info, a path segment...); other bytes are kept.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (
                (b[i + 1] as char).to_digit(16),
                (b[i + 2] as char).to_digit(16),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A connection, plain or inside TLS: to the target ([`ProxyStream`]: TCP, direct or
/// tunnelled, or a tunnel inside TLS to an HTTPS proxy), or to whatever `S` reaches.
#[derive(Debug)]
pub enum MaybeTls<S> {
    /// Cleartext.
    Plain(S),
    /// TLS over `S`.
    Tls(Box<TlsStream<S>>),
}

/// A connection to the target through a proxy or not: TCP (direct, or tunnelled through an
/// HTTP or SOCKS5 proxy), or a tunnel inside TLS to an HTTPS proxy.
pub type ProxyStream = MaybeTls<TcpStream>;

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for MaybeTls<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_read(cx, buf),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for MaybeTls<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_write(cx, buf),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_flush(cx),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_shutdown(cx),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            MaybeTls::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            MaybeTls::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            MaybeTls::Plain(s) => s.is_write_vectored(),
            MaybeTls::Tls(s) => s.is_write_vectored(),
        }
    }
}

impl<S> Connection for MaybeTls<S> {
    /// HTTP/2 when TLS negotiated it (ALPN `h2`), so that a pooled client speaks it.
    fn connected(&self) -> Connected {
        match self {
            MaybeTls::Tls(t) if t.get_ref().1.alpn_protocol() == Some(b"h2") => {
                Connected::new().negotiated_h2()
            }
            _ => Connected::new(),
        }
    }
}

/// A hyper connector opening TCP-level connections (TLS to the target is left to a wrapping
/// connector), through a proxy when configured.
#[derive(Clone)]
pub struct Connector {
    proxy: ProxySource,
    proxy_tls: Option<TlsConnector>,
    connect_timeout: Option<Duration>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("proxy", &self.proxy)
            .field("connect_timeout", &self.connect_timeout)
            .finish_non_exhaustive()
    }
}

impl Connector {
    /// A connector through the proxy `proxy` names, if any; `proxy_tls` secures the
    /// connection to an `https://` proxy; `connect_timeout` bounds establishing a connection.
    pub fn new(
        proxy: ProxySource,
        proxy_tls: Option<Arc<rustls::ClientConfig>>,
        connect_timeout: Option<Duration>,
    ) -> Connector {
        Connector {
            proxy,
            proxy_tls: proxy_tls.map(TlsConnector::from),
            connect_timeout,
        }
    }
}

impl tower::Service<Uri> for Connector {
    type Response = TokioIo<ProxyStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<TokioIo<ProxyStream>>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let this = self.clone();
        Box::pin(async move {
            let host = uri
                .host()
                .ok_or_else(|| std::io::Error::other(format!("no host in {uri}")))?
                .to_owned();
            let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
                Some("http") => 80,
                _ => 443,
            });
            let work = this.proxy.connect(&host, port, this.proxy_tls.as_ref());
            let stream = match this.connect_timeout {
                Some(limit) => tokio::time::timeout(limit, work).await.map_err(|_| {
                    std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("dial {}: timed out after {limit:?}", authority(&host, port)),
                    )
                })??,
                None => work.await?,
            };
            Ok(TokioIo::new(stream))
        })
    }
}

#[cfg(test)]
mod tests;
