//! Front-proxy ("request header") authentication, as kube's
//! `headerrequest.requestHeaderAuthRequestHandler` behind an x509 verifier
//! (k8s.io/apiserver/pkg/authentication/request/headerrequest/requestheader.go, x509.go):
//! the identity headers are trusted only when the connection's client certificate chains to
//! the request-header CA and, when a list of allowed names is configured, its common name is
//! in it.

use std::sync::Arc;

use http::HeaderMap;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::ClientCertVerifier;

use crate::auth::UserInfo;

/// A client-certificate chain verifier against one CA bundle.
#[derive(Clone)]
pub struct ChainVerifier(Arc<dyn ClientCertVerifier>);

impl std::fmt::Debug for ChainVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChainVerifier")
    }
}

impl ChainVerifier {
    /// From a PEM bundle of CA certificates.
    pub fn from_pem(pem: &str) -> Result<ChainVerifier, String> {
        let mut roots = rustls::RootCertStore::empty();
        let certs = crate::server::parse_certs(pem).map_err(|e| e.to_string())?;
        for c in certs {
            roots
                .add(c)
                .map_err(|e| format!("unusable CA certificate: {e}"))?;
        }
        let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .map_err(|e| e.to_string())?;
        Ok(ChainVerifier(v))
    }

    /// Verifies a chain (leaf first) for client authentication, now.
    pub fn verify(&self, chain: &[CertificateDer<'static>]) -> Result<(), String> {
        let leaf = chain.first().ok_or("no client certificate")?;
        self.0
            .verify_client_cert(leaf, &chain[1..], UnixTime::now())
            .map(|_| ())
            .map_err(|e| format!("x509: {e}"))
    }
}

/// Request-header authentication settings (kube's `RequestHeaderConfig`).
#[derive(Clone, Debug)]
pub struct RequestHeader {
    /// Verifies the front proxy's client certificate.
    pub verifier: ChainVerifier,
    /// Accepted common names; empty: any certificate from the CA.
    pub allowed_names: Vec<String>,
    /// Headers carrying the user name, first non-empty wins (`X-Remote-User`).
    pub username_headers: Vec<String>,
    /// Headers carrying groups, every value of each (`X-Remote-Group`).
    pub group_headers: Vec<String>,
    /// Prefixes of headers carrying extra attributes (`X-Remote-Extra-`).
    pub extra_prefixes: Vec<String>,
}

/// The outcome of request-header authentication.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The headers named a user and the certificate is trusted.
    User(UserInfo),
    /// Not a front-proxy request (no certificate, or no user header): other authenticators
    /// decide.
    NotApplicable,
    /// A certificate was presented but is not trusted for request headers.
    Rejected(String),
}

impl RequestHeader {
    /// Authenticates a request by its headers and the connection's certificate chain; the
    /// identity headers are removed either way, so that nothing downstream trusts them.
    pub fn authenticate(
        &self,
        chain: Option<&[CertificateDer<'static>]>,
        headers: &mut HeaderMap,
    ) -> Outcome {
        let outcome = self.decide(chain, headers);
        self.clear(headers);
        outcome
    }

    fn decide(&self, chain: Option<&[CertificateDer<'static>]>, headers: &HeaderMap) -> Outcome {
        let Some(chain) = chain.filter(|c| !c.is_empty()) else {
            return Outcome::NotApplicable;
        };
        if let Err(e) = self.verifier.verify(chain) {
            return Outcome::Rejected(e);
        }
        if !self.allowed_names.is_empty() {
            let cn = crate::auth::user_from_certificate(&chain[0])
                .map(|u| u.name)
                .unwrap_or_default();
            if !self.allowed_names.contains(&cn) {
                return Outcome::Rejected(format!(
                    "x509: subject with cn={cn} is not in the allowed list"
                ));
            }
        }
        let name = self
            .username_headers
            .iter()
            .filter_map(|h| headers.get(h.as_str()))
            .filter_map(|v| v.to_str().ok())
            .map(str::trim)
            .find(|v| !v.is_empty());
        let Some(name) = name else {
            return Outcome::NotApplicable;
        };
        let mut user = UserInfo {
            name: name.to_string(),
            ..Default::default()
        };
        for h in &self.group_headers {
            for v in headers.get_all(h.as_str()) {
                if let Ok(g) = v.to_str() {
                    user.add_group(g);
                }
            }
        }
        for (k, v) in headers {
            let n = k.as_str();
            for prefix in &self.extra_prefixes {
                let p = prefix.to_ascii_lowercase();
                if let Some(suffix) = n.strip_prefix(&p)
                    && !suffix.is_empty()
                    && let Ok(val) = v.to_str()
                {
                    user.extra
                        .entry(crate::proxy::percent_decode(suffix).to_lowercase())
                        .or_default()
                        .push(val.to_string());
                }
            }
        }
        user.add_group(crate::auth::AUTHENTICATED_GROUP);
        Outcome::User(user)
    }

    fn clear(&self, headers: &mut HeaderMap) {
        for h in self.username_headers.iter().chain(&self.group_headers) {
            headers.remove(h.as_str());
        }
        let prefixes: Vec<String> = self
            .extra_prefixes
            .iter()
            .map(|p| p.to_ascii_lowercase())
            .collect();
        let extra: Vec<http::HeaderName> = headers
            .keys()
            .filter(|k| prefixes.iter().any(|p| k.as_str().starts_with(p.as_str())))
            .cloned()
            .collect();
        for k in extra {
            headers.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn chain(pem: &str) -> Vec<CertificateDer<'static>> {
        crate::server::parse_certs(pem).unwrap()
    }

    #[test]
    fn table() {
        let fp_ca = certs::Ca::generate().unwrap();
        let other_ca = certs::Ca::generate().unwrap();
        let rh = RequestHeader {
            verifier: ChainVerifier::from_pem(fp_ca.cert_pem()).unwrap(),
            allowed_names: vec!["front-proxy-client".into()],
            username_headers: vec!["X-Remote-User".into()],
            group_headers: vec!["X-Remote-Group".into()],
            extra_prefixes: vec!["X-Remote-Extra-".into()],
        };
        let good = chain(
            &fp_ca
                .issue_client("front-proxy-client", &[])
                .unwrap()
                .cert_pem,
        );
        let other_cn = chain(&fp_ca.issue_client("someone", &[]).unwrap().cert_pem);
        let other_ca_cert = chain(
            &other_ca
                .issue_client("front-proxy-client", &[])
                .unwrap()
                .cert_pem,
        );
        let mut h = HeaderMap::new();
        h.insert("x-remote-user", HeaderValue::from_static("alice"));
        h.append("x-remote-group", HeaderValue::from_static("dev"));
        h.append(
            "x-remote-group",
            HeaderValue::from_static("system:authenticated"),
        );
        h.append("x-remote-extra-scopes", HeaderValue::from_static("a"));
        h.append("x-remote-extra-scopes", HeaderValue::from_static("b"));
        h.append(
            "x-remote-extra-authentication.kubernetes.io%2fpod-name",
            HeaderValue::from_static("p1"),
        );
        h.insert("accept", HeaderValue::from_static("application/json"));

        let mut hh = h.clone();
        match rh.authenticate(Some(&good), &mut hh) {
            Outcome::User(u) => {
                assert_eq!(u.name, "alice");
                assert_eq!(u.groups, vec!["dev", "system:authenticated"]);
                assert_eq!(u.extra["scopes"], vec!["a", "b"]);
                assert_eq!(u.extra["authentication.kubernetes.io/pod-name"], vec!["p1"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(hh.len(), 1, "identity headers are cleared: {hh:?}");

        let cases: Vec<(Option<&[CertificateDer<'static>]>, &str)> = vec![
            (None, "not applicable"),
            (Some(&other_cn), "not in the allowed list"),
            (Some(&other_ca_cert), "x509"),
        ];
        for (c, want) in cases {
            let mut hh = h.clone();
            let got = rh.authenticate(c, &mut hh);
            match (&got, want) {
                (Outcome::NotApplicable, "not applicable") => {}
                (Outcome::Rejected(m), w) if m.contains(w) => {}
                _ => panic!("{want}: {got:?}"),
            }
            assert!(hh.get("x-remote-user").is_none());
        }
        // A trusted certificate without a user header is not a front-proxy request.
        let mut none = HeaderMap::new();
        assert_eq!(
            rh.authenticate(Some(&good), &mut none),
            Outcome::NotApplicable
        );
    }
}
