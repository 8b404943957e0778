//! Forward proxies for tests, on 127.0.0.1: an HTTP `CONNECT` proxy (plain or TLS) and a
//! SOCKS5 proxy. Each counts its connections and records what it was asked, so a test can
//! prove a member was reached through it (and with which headers). Host names are resolved
//! from a fixed table first, so a test can name a member that only the proxy can reach.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What a proxy saw.
#[derive(Clone, Debug, Default)]
pub struct ProxyLog {
    /// Connections accepted.
    pub connections: usize,
    /// The `CONNECT` request heads (HTTP proxies), as received.
    pub heads: Vec<String>,
    /// The `host:port` targets asked for, in order.
    pub targets: Vec<String>,
    /// Targets the proxy relayed to (resolved and connected).
    pub relayed: usize,
}

/// Which protocol a [`ForwardProxy`] speaks.
#[derive(Clone)]
enum Kind {
    Http,
    Https(Arc<rustls::ServerConfig>),
    Socks5 { auth: Option<(String, String)> },
}

/// A running forward proxy.
pub struct ForwardProxy {
    addr: SocketAddr,
    scheme: &'static str,
    log: Arc<Mutex<ProxyLog>>,
    task: JoinHandle<()>,
}

impl Drop for ForwardProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl ForwardProxy {
    /// An HTTP `CONNECT` proxy; `hosts` maps names to addresses before the system resolver.
    pub async fn http(hosts: BTreeMap<String, IpAddr>) -> std::io::Result<ForwardProxy> {
        Self::start(Kind::Http, "http", hosts).await
    }

    /// An HTTP `CONNECT` proxy behind TLS, serving the given certificate chain and key (PEM).
    pub async fn https(
        hosts: BTreeMap<String, IpAddr>,
        cert_pem: &str,
        key_pem: &str,
    ) -> std::io::Result<ForwardProxy> {
        use rustls_pki_types::pem::PemObject;
        use rustls_pki_types::{CertificateDer, PrivateKeyDer};
        let chain: Vec<CertificateDer<'static>> =
            CertificateDer::pem_slice_iter(cert_pem.as_bytes())
                .collect::<Result<_, _>>()
                .map_err(std::io::Error::other)?;
        let key =
            PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(std::io::Error::other)?;
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(std::io::Error::other)?;
        Self::start(Kind::Https(Arc::new(config)), "https", hosts).await
    }

    /// A SOCKS5 proxy, requiring the user name and password when given.
    pub async fn socks5(
        hosts: BTreeMap<String, IpAddr>,
        auth: Option<(String, String)>,
    ) -> std::io::Result<ForwardProxy> {
        Self::start(Kind::Socks5 { auth }, "socks5", hosts).await
    }

    async fn start(
        kind: Kind,
        scheme: &'static str,
        hosts: BTreeMap<String, IpAddr>,
    ) -> std::io::Result<ForwardProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let log = Arc::new(Mutex::new(ProxyLog::default()));
        let hosts = Arc::new(hosts);
        let task_log = log.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                if let Ok(mut l) = task_log.lock() {
                    l.connections += 1;
                }
                let (kind, log, hosts) = (kind.clone(), task_log.clone(), hosts.clone());
                tokio::spawn(async move {
                    let _ = serve(conn, kind, log, hosts).await;
                });
            }
        });
        Ok(ForwardProxy {
            addr,
            scheme,
            log,
            task,
        })
    }

    /// The proxy's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `scheme://127.0.0.1:port`.
    pub fn url(&self) -> String {
        format!("{}://{}", self.scheme, self.addr)
    }

    /// What the proxy saw so far.
    pub fn log(&self) -> ProxyLog {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

async fn serve(
    conn: TcpStream,
    kind: Kind,
    log: Arc<Mutex<ProxyLog>>,
    hosts: Arc<BTreeMap<String, IpAddr>>,
) -> std::io::Result<()> {
    match kind {
        Kind::Http => serve_connect(conn, &log, &hosts).await,
        Kind::Https(config) => {
            let tls = tokio_rustls::TlsAcceptor::from(config).accept(conn).await?;
            serve_connect(tls, &log, &hosts).await
        }
        Kind::Socks5 { auth } => serve_socks5(conn, auth, &log, &hosts).await,
    }
}

/// Connects to `host:port`, resolving `host` from the table first.
async fn dial(
    hosts: &BTreeMap<String, IpAddr>,
    host: &str,
    port: u16,
) -> std::io::Result<TcpStream> {
    match hosts.get(host) {
        Some(ip) => TcpStream::connect(SocketAddr::new(*ip, port)).await,
        None => TcpStream::connect(super::authority(host, port)).await,
    }
}

fn record(log: &Mutex<ProxyLog>, f: impl FnOnce(&mut ProxyLog)) {
    if let Ok(mut l) = log.lock() {
        f(&mut l);
    }
}

async fn relay<S: AsyncRead + AsyncWrite + Unpin>(
    mut client: S,
    mut upstream: TcpStream,
) -> std::io::Result<()> {
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

async fn serve_connect<S: AsyncRead + AsyncWrite + Unpin>(
    mut conn: S,
    log: &Mutex<ProxyLog>,
    hosts: &BTreeMap<String, IpAddr>,
) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if conn.read(&mut byte).await? == 0 {
            return Ok(());
        }
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head
        .strip_prefix("CONNECT ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default()
        .to_owned();
    record(log, |l| {
        l.heads.push(head.clone());
        l.targets.push(target.clone());
    });
    let parsed = target.rsplit_once(':').and_then(|(h, p)| {
        Some((
            h.trim_matches(['[', ']']).to_owned(),
            p.parse::<u16>().ok()?,
        ))
    });
    let Some((host, port)) = parsed else {
        conn.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await?;
        return Ok(());
    };
    match dial(hosts, &host, port).await {
        Ok(upstream) => {
            record(log, |l| l.relayed += 1);
            conn.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await?;
            relay(conn, upstream).await
        }
        Err(_) => {
            conn.write_all(b"HTTP/1.1 502 Bad Gateway\r\n\r\n").await?;
            Ok(())
        }
    }
}

async fn serve_socks5(
    mut conn: TcpStream,
    auth: Option<(String, String)>,
    log: &Mutex<ProxyLog>,
    hosts: &BTreeMap<String, IpAddr>,
) -> std::io::Result<()> {
    let mut greeting = [0u8; 2];
    conn.read_exact(&mut greeting).await?;
    let mut methods = vec![0u8; usize::from(greeting[1])];
    conn.read_exact(&mut methods).await?;
    match &auth {
        None => conn.write_all(&[5, 0]).await?,
        Some((user, password)) => {
            if !methods.contains(&2) {
                conn.write_all(&[5, 0xff]).await?;
                return Ok(());
            }
            conn.write_all(&[5, 2]).await?;
            let mut ver_len = [0u8; 2];
            conn.read_exact(&mut ver_len).await?;
            let mut u = vec![0u8; usize::from(ver_len[1])];
            conn.read_exact(&mut u).await?;
            let mut plen = [0u8; 1];
            conn.read_exact(&mut plen).await?;
            let mut p = vec![0u8; usize::from(plen[0])];
            conn.read_exact(&mut p).await?;
            let ok = u == user.as_bytes() && p == password.as_bytes();
            conn.write_all(&[1, if ok { 0 } else { 1 }]).await?;
            if !ok {
                return Ok(());
            }
        }
    }
    let mut req = [0u8; 4];
    conn.read_exact(&mut req).await?;
    let host = match req[3] {
        1 => {
            let mut ip = [0u8; 4];
            conn.read_exact(&mut ip).await?;
            IpAddr::from(ip).to_string()
        }
        4 => {
            let mut ip = [0u8; 16];
            conn.read_exact(&mut ip).await?;
            IpAddr::from(ip).to_string()
        }
        3 => {
            let mut n = [0u8; 1];
            conn.read_exact(&mut n).await?;
            let mut name = vec![0u8; usize::from(n[0])];
            conn.read_exact(&mut name).await?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => return Ok(()),
    };
    let mut port = [0u8; 2];
    conn.read_exact(&mut port).await?;
    let port = u16::from_be_bytes(port);
    record(log, |l| l.targets.push(super::authority(&host, port)));
    match dial(hosts, &host, port).await {
        Ok(upstream) => {
            record(log, |l| l.relayed += 1);
            conn.write_all(&[5, 0, 0, 1, 127, 0, 0, 1, 0, 0]).await?;
            relay(conn, upstream).await
        }
        Err(_) => {
            // Reply 4: host unreachable.
            conn.write_all(&[5, 4, 0, 1, 0, 0, 0, 0, 0, 0]).await?;
            Ok(())
        }
    }
}
