//! Outbound HTTP(S) transport shared by the cluster proxy and the aggregator: TCP, optionally
//! through a Cluster's `proxyURL` (HTTP or HTTPS CONNECT with its `proxyHeader`, or SOCKS5:
//! [`netproxy`]), then rustls; wrapped in a pooled hyper client, one per destination so that
//! each keeps its own connection pool.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::Uri;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use netproxy::{MaybeTls, ProxySource, ProxyStream};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio_rustls::TlsConnector;

/// How long establishing a connection (TCP, tunnel and TLS) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an idle pooled connection is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Why a transport could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A CA bundle holds no usable certificate.
    #[error("{0}")]
    Ca(String),
    /// A client certificate or key is unusable.
    #[error("client certificate: {0}")]
    ClientCert(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Tls(#[from] rustls::Error),
}

/// TLS settings of one destination.
#[derive(Clone, Debug, Default)]
pub struct TlsSettings {
    /// CA certificates trusted for the server (PEM or DER); empty: none.
    pub ca_bundle: Vec<u8>,
    /// Skip server certificate verification.
    pub insecure: bool,
    /// Client certificate chain and key (PEM) presented to the server.
    pub client_cert: Option<(String, String)>,
    /// Accept only TLS 1.3 (Karmada's cluster proxy sets `MinVersion: tls.VersionTLS13`).
    pub tls13_only: bool,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Parses a CA bundle given as PEM, or as one DER certificate.
pub fn parse_ca_bundle(bundle: &[u8]) -> Result<Vec<CertificateDer<'static>>, TransportError> {
    let pem: Vec<_> = CertificateDer::pem_slice_iter(bundle)
        .filter_map(Result::ok)
        .collect();
    if !pem.is_empty() {
        return Ok(pem);
    }
    if x509_parser::parse_x509_certificate(bundle).is_ok() {
        return Ok(vec![CertificateDer::from(bundle.to_vec())]);
    }
    Err(TransportError::Ca(
        "the CA bundle holds no PEM or DER certificate".into(),
    ))
}

/// Builds a rustls client configuration (ALPN `http/1.1`: upgrades need HTTP/1.1, and each
/// long-running stream then owns its connection).
pub fn client_config(s: &TlsSettings) -> Result<Arc<rustls::ClientConfig>, TransportError> {
    let versions: &[&rustls::SupportedProtocolVersion] = if s.tls13_only {
        &[&rustls::version::TLS13]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let builder =
        rustls::ClientConfig::builder_with_provider(provider()).with_protocol_versions(versions)?;
    let builder = if s.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerification(provider())))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        if !s.ca_bundle.is_empty() {
            for c in parse_ca_bundle(&s.ca_bundle)? {
                roots
                    .add(c)
                    .map_err(|e| TransportError::Ca(format!("bad CA certificate: {e}")))?;
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &s.client_cert {
        Some((cert_pem, key_pem)) => {
            let chain: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(cert_pem.as_bytes())
                    .collect::<Result<_, _>>()
                    .map_err(|e| TransportError::ClientCert(e.to_string()))?;
            if chain.is_empty() {
                return Err(TransportError::ClientCert("no certificate in PEM".into()));
            }
            let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes())
                .map_err(|e| TransportError::ClientCert(e.to_string()))?;
            builder.with_client_auth_cert(chain, key)?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts any server certificate (`insecureSkipTLSVerification`) but still checks the
/// handshake signatures, as Go's `InsecureSkipVerify` does.
#[derive(Debug)]
struct NoVerification(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn format_authority(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Dials destinations: TCP (through a proxy when configured), then TLS for `https` URIs.
#[derive(Clone)]
pub struct Dialer {
    tls: TlsConnector,
    /// Verify the server as this name instead of the URI's host (the aggregator verifies a
    /// Service's `<name>.<namespace>.svc`).
    server_name: Option<ServerName<'static>>,
    proxy: ProxySource,
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dialer")
            .field("server_name", &self.server_name)
            .field("proxy", &self.proxy)
            .finish_non_exhaustive()
    }
}

impl Dialer {
    /// A dialer with the given TLS configuration (also used with an `https://` proxy, as Go's
    /// transport does), server-name override and proxy.
    pub fn new(
        tls: Arc<rustls::ClientConfig>,
        server_name: Option<ServerName<'static>>,
        proxy: ProxySource,
    ) -> Dialer {
        Dialer {
            tls: TlsConnector::from(tls),
            server_name,
            proxy,
        }
    }

    /// Opens a connection to `uri`'s authority.
    pub async fn dial(&self, uri: &Uri) -> std::io::Result<Stream> {
        let https = match uri.scheme_str() {
            Some("https") | None => true,
            Some("http") => false,
            Some(other) => {
                return Err(io_error(format!("unsupported scheme {other:?}")));
            }
        };
        let host = uri
            .host()
            .ok_or_else(|| io_error(format!("no host in {uri}")))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        let target = format_authority(host, port);
        let work = async {
            let tcp = self.proxy.connect(host, port, Some(&self.tls)).await?;
            if !https {
                return Ok(Stream::Plain(tcp));
            }
            let name = match &self.server_name {
                Some(n) => n.clone(),
                None => ServerName::try_from(host.to_string())
                    .map_err(|e| io_error(format!("bad server name {host:?}: {e}")))?,
            };
            let tls = self.tls.connect(name, tcp).await?;
            Ok(Stream::Tls(Box::new(tls)))
        };
        tokio::time::timeout(CONNECT_TIMEOUT, work)
            .await
            .map_err(|_| {
                std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("dial {target}: timed out"),
                )
            })?
    }
}

fn io_error(msg: String) -> std::io::Error {
    std::io::Error::other(msg)
}

/// A plain or TLS connection (over TCP, or through a proxy).
pub type Stream = MaybeTls<ProxyStream>;

impl tower::Service<Uri> for Dialer {
    type Response = TokioIo<Stream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<TokioIo<Stream>>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let dialer = self.clone();
        Box::pin(async move { dialer.dial(&uri).await.map(TokioIo::new) })
    }
}

/// The request body type of [`HttpClient`].
pub use axum::body::Body;

/// A pooled HTTP/1.1 client over a [`Dialer`].
pub type HttpClient = Client<Dialer, axum::body::Body>;

/// Builds a pooled client for one destination.
pub fn http_client(dialer: Dialer) -> HttpClient {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_timer(TokioTimer::new())
        .build(dialer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ca_bundles() {
        let ca = certs::Ca::generate().unwrap();
        let pem = ca.cert_pem().as_bytes().to_vec();
        assert_eq!(parse_ca_bundle(&pem).unwrap().len(), 1);
        let der = parse_ca_bundle(&pem).unwrap()[0].to_vec();
        assert_eq!(parse_ca_bundle(&der).unwrap().len(), 1);
        assert!(parse_ca_bundle(b"not a certificate").is_err());
    }
}
