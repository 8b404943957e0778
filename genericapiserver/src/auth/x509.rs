//! x509 client-certificate authentication (kube's `x509.Authenticator` with
//! `CommonNameUserConversion`): the subject CN is the user, the O values are groups.
//!
//! The TLS handshake only checks that the client holds the key of the certificate it
//! presents; the chain is verified against the client CAs when a request is authenticated, so
//! that a certificate from another CA gets kube's 401 instead of a failed handshake (and a
//! bearer token on the same request can still authenticate, as kube's union authenticator
//! allows).

use std::sync::Arc;

use rustls::DistinguishedName;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, SignatureScheme};

use super::{AuthError, PeerCertificates, UserInfo};

/// The outcome of verifying a connection's chain: the user and the leaf's notAfter (Unix
/// seconds), or why it failed.
pub type Verified = Result<(UserInfo, i64), String>;

/// Verifies client certificates against the configured client CAs.
#[derive(Clone)]
pub struct ClientCertAuth {
    verifier: Option<Arc<dyn ClientCertVerifier>>,
}

impl std::fmt::Debug for ClientCertAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCertAuth")
            .field("enabled", &self.verifier.is_some())
            .finish()
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Parses PEM bundles into a root store.
fn roots(pems: &[String]) -> Result<rustls::RootCertStore, AuthError> {
    let mut roots = rustls::RootCertStore::empty();
    for pem in pems {
        let mut any = false;
        for c in CertificateDer::pem_slice_iter(pem.as_bytes()) {
            let c = c.map_err(|e| AuthError::ClientCa(format!("bad certificate PEM: {e}")))?;
            roots
                .add(c)
                .map_err(|e| AuthError::ClientCa(format!("unusable CA certificate: {e}")))?;
            any = true;
        }
        if !any {
            return Err(AuthError::ClientCa("no certificate found in PEM".into()));
        }
    }
    Ok(roots)
}

fn webpki_verifier(pems: &[String]) -> Result<Option<Arc<dyn ClientCertVerifier>>, AuthError> {
    let roots = roots(pems)?;
    if roots.is_empty() {
        return Ok(None);
    }
    let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .allow_unauthenticated()
        .build()
        .map_err(|e| AuthError::ClientCa(e.to_string()))?;
    Ok(Some(v))
}

impl ClientCertAuth {
    /// From PEM bundles of client CAs (none: client certificates never authenticate).
    pub fn new(client_ca_pems: &[String]) -> Result<ClientCertAuth, AuthError> {
        Ok(ClientCertAuth {
            verifier: webpki_verifier(client_ca_pems)?,
        })
    }

    /// Authenticates a connection's certificate chain: `Ok(None)` when no certificate was
    /// presented, `Err` when one was presented but does not verify.
    pub fn authenticate(&self, peer: &PeerCertificates) -> Result<Option<UserInfo>, String> {
        let Some(leaf) = peer.chain().first() else {
            return Ok(None);
        };
        let verified = peer.verified.get_or_init(|| {
            let Some(v) = &self.verifier else {
                return Err("x509: no client certificate authority is configured".into());
            };
            v.verify_client_cert(leaf, &peer.chain()[1..], UnixTime::now())
                .map_err(|e| format!("x509: certificate verification failed: {e}"))?;
            user_from_certificate(leaf)
                .ok_or_else(|| "x509: the certificate has no common name".to_string())
        });
        let (user, not_after) = verified.clone()?;
        // A connection may outlive its certificate; kube verifies on every request.
        if jiff::Timestamp::now().as_second() > not_after {
            return Err("x509: certificate has expired or is not yet valid".into());
        }
        Ok(Some(user))
    }
}

/// Reads user (CN), groups (O) and notAfter from a certificate.
pub fn user_from_certificate(der: &[u8]) -> Option<(UserInfo, i64)> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some((
        UserInfo::new(name, groups),
        cert.validity().not_after.timestamp(),
    ))
}

/// The TLS-level client verifier: requests (never requires) a certificate, hints the client
/// CAs as kube-apiserver does, checks the handshake signature, and leaves the chain to the
/// per-request authenticator. `None` when no client CA is configured.
pub fn tls_verifier(
    client_ca_pems: &[String],
) -> Result<Option<Arc<dyn ClientCertVerifier>>, AuthError> {
    Ok(webpki_verifier(client_ca_pems)?
        .map(|inner| Arc::new(DeferredChainVerifier { inner }) as Arc<dyn ClientCertVerifier>))
}

#[derive(Debug)]
struct DeferredChainVerifier {
    inner: Arc<dyn ClientCertVerifier>,
}

impl ClientCertVerifier for DeferredChainVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // The chain is verified per request by ClientCertAuth; proof of key possession is
        // still checked below.
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn der(pem: &str) -> CertificateDer<'static> {
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }

    #[test]
    fn verifies_against_the_configured_ca_only() {
        let ca = certs::Ca::generate().unwrap();
        let other = certs::Ca::generate().unwrap();
        let auth = ClientCertAuth::new(&[ca.cert_pem().to_string()]).unwrap();

        let good = ca.issue_client("alice", &["dev"]).unwrap();
        let peer = PeerCertificates::new(vec![der(&good.cert_pem)]);
        let user = auth.authenticate(&peer).unwrap().unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, vec!["dev", "system:authenticated"]);
        // The outcome is kept for the connection.
        assert!(peer.verified.get().is_some());

        let foreign = other.issue_client("mallory", &["system:masters"]).unwrap();
        let err = auth
            .authenticate(&PeerCertificates::new(vec![der(&foreign.cert_pem)]))
            .unwrap_err();
        assert!(err.starts_with("x509:"), "{err}");

        let expired = ca
            .issue_client_valid_for("old", &[], time::Duration::minutes(-5))
            .unwrap();
        assert!(
            auth.authenticate(&PeerCertificates::new(vec![der(&expired.cert_pem)]))
                .is_err()
        );

        assert_eq!(auth.authenticate(&PeerCertificates::new(vec![])), Ok(None));
        let none = ClientCertAuth::new(&[]).unwrap();
        assert!(
            none.authenticate(&PeerCertificates::new(vec![der(&good.cert_pem)]))
                .is_err()
        );
    }

    #[test]
    fn bad_ca_pem_is_refused() {
        assert!(ClientCertAuth::new(&["not a pem".to_string()]).is_err());
        assert!(tls_verifier(&[]).unwrap().is_none());
    }
}
