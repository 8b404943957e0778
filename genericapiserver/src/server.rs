//! HTTPS serving: rustls (TLS 1.2+, HTTP/1.1 and HTTP/2 by ALPN), client certificates
//! requested (not required) and verified against the client CA, then handed to the router
//! as a request extension. Connections hyper ends before the client did close lingering
//! ([`crate::lingering_close`]), so early refusals reach the client.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::auth::{PeerCertificates, RemoteAddr};
use crate::lingering_close::LingeringClose;

/// Why TLS could not be configured.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM input holds no usable certificate or key.
    #[error("{0}")]
    Pem(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Rustls(#[from] rustls::Error),
}

/// PEM inputs of the serving TLS configuration.
#[derive(Clone, Debug)]
pub struct TlsFiles {
    /// Serving certificate chain (PEM).
    pub cert_pem: String,
    /// Serving private key (PEM).
    pub key_pem: String,
    /// CAs whose client certificates are accepted (PEM); none: no client certificates.
    pub client_ca_pems: Vec<String>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Parses PEM certificates.
pub fn parse_certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_slice_iter(pem.as_bytes()).collect();
    let certs = certs.map_err(|e| TlsError::Pem(format!("bad certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(TlsError::Pem("no certificate found in PEM".into()));
    }
    Ok(certs)
}

/// Builds the rustls server configuration.
pub fn server_config(files: &TlsFiles) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs = parse_certs(&files.cert_pem)?;
    let key = PrivateKeyDer::from_pem_slice(files.key_pem.as_bytes())
        .map_err(|e| TlsError::Pem(format!("bad private key PEM: {e}")))?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])?;
    // Client certificates are requested, not required (bearer tokens and anonymous requests
    // have none); their chains are verified per request by the x509 authenticator.
    let verifier = crate::auth::x509::tls_verifier(&files.client_ca_pems)
        .map_err(|e| TlsError::Pem(e.to_string()))?;
    let mut config = match verifier {
        None => builder.with_no_client_auth().with_single_cert(certs, key)?,
        Some(v) => builder
            .with_client_cert_verifier(v)
            .with_single_cert(certs, key)?,
    };
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A running HTTPS server.
pub struct Serving {
    /// The bound address.
    pub addr: SocketAddr,
    /// Set to the grace period when the server stops.
    shutdown: watch::Sender<Option<Duration>>,
    task: tokio::task::JoinHandle<()>,
}

impl Serving {
    /// Stops accepting, lets open requests finish for up to `grace`, then returns.
    pub async fn shutdown(self, grace: Duration) {
        let _ = self.shutdown.send(Some(grace));
        let _ = tokio::time::timeout(grace + Duration::from_secs(1), self.task).await;
    }
}

/// Serves `app` over TLS on `listener` until shut down.
pub fn serve(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
) -> std::io::Result<Serving> {
    let addr = listener.local_addr()?;
    let (shutdown, mut stop) = watch::channel(None);
    let acceptor = TlsAcceptor::from(tls);
    let task = tokio::spawn(async move {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        loop {
            let (tcp, peer) = tokio::select! {
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = stop.changed() => break,
            };
            let _ = tcp.set_nodelay(true);
            let acceptor = acceptor.clone();
            let app = app.clone();
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                let tls = match tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp))
                    .await
                {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                };
                let certs = tls.get_ref().1.peer_certificates().map(|chain| {
                    PeerCertificates::new(chain.iter().map(|c| c.clone().into_owned()).collect())
                });
                let svc = tower::ServiceExt::map_request(
                    app,
                    move |mut req: http::Request<hyper::body::Incoming>| {
                        if let Some(c) = &certs {
                            req.extensions_mut().insert(c.clone());
                        }
                        req.extensions_mut().insert(RemoteAddr(peer));
                        req
                    },
                );
                let conn_builder = auto::Builder::new(TokioExecutor::new());
                let conn = conn_builder.serve_connection_with_upgrades(
                    TokioIo::new(LingeringClose::new(tls)),
                    TowerToHyperService::new(svc),
                );
                if let Err(e) = watcher.watch(conn.into_owned()).await {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
            });
        }
        let grace = stop.borrow().unwrap_or(Duration::from_secs(5));
        let _ = tokio::time::timeout(grace, graceful.shutdown()).await;
    });
    Ok(Serving {
        addr,
        shutdown,
        task,
    })
}
