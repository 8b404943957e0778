//! Bootstrap tokens as Kubernetes defines them (k8s.io/cluster-bootstrap: token, secret,
//! jws) and the CA pin of token discovery (kubeadm's pubkeypin): what `token create` stores,
//! what the authenticator and the cluster-info signer read, and what `register` verifies.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::Error;

/// Namespace of bootstrap token Secrets.
pub const SECRET_NAMESPACE: &str = "kube-system";
/// Prefix of a bootstrap token Secret's name (followed by the token ID).
pub const SECRET_PREFIX: &str = "bootstrap-token-";
/// Type of bootstrap token Secrets.
pub const SECRET_TYPE: &str = "bootstrap.kubernetes.io/token";
/// Secret key: the token ID.
pub const KEY_ID: &str = "token-id";
/// Secret key: the token secret.
pub const KEY_SECRET: &str = "token-secret";
/// Secret key: when the token expires (RFC 3339).
pub const KEY_EXPIRATION: &str = "expiration";
/// Secret key: the token's description.
pub const KEY_DESCRIPTION: &str = "description";
/// Secret key: extra groups of the token's user (comma-separated).
pub const KEY_EXTRA_GROUPS: &str = "auth-extra-groups";
/// Secret key: the token authenticates requests.
pub const KEY_USAGE_AUTHENTICATION: &str = "usage-bootstrap-authentication";
/// Secret key: the token signs the cluster-info ConfigMap.
pub const KEY_USAGE_SIGNING: &str = "usage-bootstrap-signing";
/// The group every bootstrap token user is in.
pub const BOOTSTRAPPERS_GROUP: &str = "system:bootstrappers";
/// Prefix of a bootstrap token's user name (followed by the token ID).
pub const USER_PREFIX: &str = "system:bootstrap:";
/// The extra group of Karmada's registration tokens.
pub const KARMADA_TOKEN_GROUP: &str = "system:bootstrappers:karmada:default-cluster-token";
/// Namespace of the cluster-info ConfigMap.
pub const CLUSTER_INFO_NAMESPACE: &str = "kube-public";
/// Name of the cluster-info ConfigMap.
pub const CLUSTER_INFO_NAME: &str = "cluster-info";
/// Key of the kubeconfig in cluster-info.
pub const CLUSTER_INFO_KUBECONFIG: &str = "kubeconfig";
/// Prefix of the JWS keys in cluster-info (followed by the token ID).
pub const JWS_KEY_PREFIX: &str = "jws-kubeconfig-";

const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";

/// A bootstrap token `<id>.<secret>`: 6 and 16 characters of `[a-z0-9]`.
#[derive(Clone, PartialEq, Eq)]
pub struct BootstrapToken {
    /// The public part, also the Secret's name suffix.
    pub id: String,
    /// The secret part.
    pub secret: String,
}

impl fmt::Debug for BootstrapToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BootstrapToken({}.<redacted>)", self.id)
    }
}

impl fmt::Display for BootstrapToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.id, self.secret)
    }
}

fn valid_part(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| ALPHABET.contains(&b))
}

/// Whether `id` is a well-formed token ID.
pub fn valid_id(id: &str) -> bool {
    valid_part(id, 6)
}

impl BootstrapToken {
    /// A new random token.
    pub fn generate() -> Result<BootstrapToken, Error> {
        Ok(BootstrapToken {
            id: random_string(6)?,
            secret: random_string(16)?,
        })
    }

    /// Parses `<id>.<secret>` (bootstraputil.ParseToken).
    pub fn parse(s: &str) -> Result<BootstrapToken, Error> {
        match s.split_once('.') {
            Some((id, secret)) if valid_part(id, 6) && valid_part(secret, 16) => {
                Ok(BootstrapToken {
                    id: id.to_owned(),
                    secret: secret.to_owned(),
                })
            }
            _ => Err(Error::Invalid(format!(
                "the bootstrap token {:?} was not of the form \"[a-z0-9]{{6}}.[a-z0-9]{{16}}\"",
                redact(s)
            ))),
        }
    }

    /// The name of this token's Secret in `kube-system`.
    pub fn secret_name(&self) -> String {
        format!("{SECRET_PREFIX}{}", self.id)
    }

    /// The user this token authenticates as.
    pub fn user(&self) -> String {
        format!("{USER_PREFIX}{}", self.id)
    }

    /// The Secret's `stringData` for this token (as kubeadm's `BootstrapTokenToSecret`).
    pub fn secret_data(
        &self,
        expiration: Option<&str>,
        description: &str,
        extra_groups: &[&str],
    ) -> BTreeMap<String, String> {
        let mut data = BTreeMap::from([
            (KEY_ID.to_owned(), self.id.clone()),
            (KEY_SECRET.to_owned(), self.secret.clone()),
            (KEY_USAGE_AUTHENTICATION.to_owned(), "true".to_owned()),
            (KEY_USAGE_SIGNING.to_owned(), "true".to_owned()),
        ]);
        if let Some(e) = expiration {
            data.insert(KEY_EXPIRATION.to_owned(), e.to_owned());
        }
        if !description.is_empty() {
            data.insert(KEY_DESCRIPTION.to_owned(), description.to_owned());
        }
        if !extra_groups.is_empty() {
            data.insert(KEY_EXTRA_GROUPS.to_owned(), extra_groups.join(","));
        }
        data
    }
}

/// A token shown in messages: its ID only.
fn redact(s: &str) -> String {
    match s.split_once('.') {
        Some((id, _)) => format!("{id}.<redacted>"),
        None => "<redacted>".to_owned(),
    }
}

fn random_string(len: usize) -> Result<String, Error> {
    use ring::rand::SecureRandom;
    let rng = ring::rand::SystemRandom::new();
    let mut out = String::with_capacity(len);
    // Rejection sampling keeps every character equally likely.
    while out.len() < len {
        let mut b = [0u8; 16];
        rng.fill(&mut b)
            .map_err(|_| Error::Invalid("no randomness available".into()))?;
        for x in b {
            if out.len() < len && usize::from(x) < 252 {
                out.push(char::from(ALPHABET[usize::from(x) % ALPHABET.len()]));
            }
        }
    }
    Ok(out)
}

/// The detached JWS (HS256, `kid` = token ID, key = token secret) of `content`, as
/// k8s.io/cluster-bootstrap/token/jws `ComputeDetachedSignature`: `header..signature`.
pub fn detached_jws(content: &str, token: &BootstrapToken) -> String {
    let header = URL_SAFE_NO_PAD.encode(format!(r#"{{"alg":"HS256","kid":"{}"}}"#, token.id));
    let payload = URL_SAFE_NO_PAD.encode(content);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token.secret.as_bytes());
    let tag = ring::hmac::sign(&key, format!("{header}.{payload}").as_bytes());
    format!("{header}..{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
}

/// DetachedTokenIsValid: whether `jws` is the detached signature of `content` by `token`.
pub fn verify_detached_jws(jws: &str, content: &str, token: &BootstrapToken) -> bool {
    let Some((header, signature)) = jws.split_once("..") else {
        return false;
    };
    let Ok(signature) = URL_SAFE_NO_PAD.decode(signature) else {
        return false;
    };
    let payload = URL_SAFE_NO_PAD.encode(content);
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token.secret.as_bytes());
    // The header must name this token and HS256; the tag is compared in constant time.
    let header_ok = URL_SAFE_NO_PAD
        .decode(header)
        .ok()
        .and_then(|h| serde_yaml::from_slice::<BTreeMap<String, String>>(&h).ok())
        .is_some_and(|h| {
            h.get("alg").map(String::as_str) == Some("HS256") && h.get("kid") == Some(&token.id)
        });
    header_ok
        && ring::hmac::verify(&key, format!("{header}.{payload}").as_bytes(), &signature).is_ok()
}

/// The CA pin `sha256:<hex>`: SHA-256 of the certificate's DER SubjectPublicKeyInfo
/// (kubeadm's pubkeypin.Hash).
pub fn ca_cert_hash(cert_der: &[u8]) -> Result<String, Error> {
    use x509_parser::prelude::FromDer;
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(cert_der)
        .map_err(|e| Error::Invalid(format!("parsing the CA certificate: {e}")))?;
    let digest = ring::digest::digest(&ring::digest::SHA256, cert.tbs_certificate.subject_pki.raw);
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("sha256:{hex}"))
}

/// The DER certificates of a PEM bundle.
pub fn pem_certificates(pem: &str) -> Vec<Vec<u8>> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .filter_map(Result::ok)
        .map(|c| c.to_vec())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_and_print() {
        let t = BootstrapToken::generate().unwrap();
        assert_eq!(BootstrapToken::parse(&t.to_string()).unwrap(), t);
        assert_eq!(t.id.len(), 6);
        assert_eq!(t.secret.len(), 16);
        for bad in [
            "abcdef",
            "abcdef.0123456789abcde",
            "ABCDEF.0123456789abcdef",
            "abcdef.0123456789abcdef0",
            "",
        ] {
            let e = BootstrapToken::parse(bad).unwrap_err().to_string();
            assert!(e.contains("was not of the form"), "{bad}: {e}");
            assert!(!e.contains("0123456789"), "the secret is not shown: {e}");
        }
    }

    #[test]
    fn jws_round_trip_and_forgery() {
        let t = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let sig = detached_jws("content", &t);
        assert!(sig.contains(".."));
        assert!(verify_detached_jws(&sig, "content", &t));
        assert!(!verify_detached_jws(&sig, "other content", &t));
        let forged = BootstrapToken::parse("abcdef.0123456789abcdee").unwrap();
        assert!(!verify_detached_jws(&sig, "content", &forged));
        let other_id = BootstrapToken::parse("abcdeg.0123456789abcdef").unwrap();
        assert!(!verify_detached_jws(&sig, "content", &other_id));
    }

    #[test]
    fn jws_matches_go_jose() {
        // The header go-jose writes for HS256 with a kid, and HMAC-SHA256 over
        // `header.payload` with the token secret as key.
        let t = BootstrapToken::parse("abcdef.0123456789abcdef").unwrap();
        let sig = detached_jws("x", &t);
        let header = sig.split("..").next().unwrap();
        assert_eq!(
            String::from_utf8(URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap(),
            r#"{"alg":"HS256","kid":"abcdef"}"#
        );
    }

    #[test]
    fn ca_hash_is_of_the_public_key() {
        let ca = crate::Ca::generate().unwrap();
        let der = pem_certificates(ca.cert_pem());
        let h = ca_cert_hash(&der[0]).unwrap();
        assert!(h.starts_with("sha256:") && h.len() == 7 + 64, "{h}");
        assert_eq!(ca_cert_hash(&der[0]).unwrap(), h);
        let other = crate::Ca::generate().unwrap();
        assert_ne!(
            ca_cert_hash(&pem_certificates(other.cert_pem())[0]).unwrap(),
            h
        );
    }
}
