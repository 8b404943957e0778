//! The control plane's PKI: one CA that signs the serving certificate and client
//! certificates, kept in `DIR/pki` and reused across restarts.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};
use time::{Duration, OffsetDateTime};

use crate::{Error, io_err};

/// Common name of the CA; the issuer is rebuilt from it and the stored key on restart.
const CA_COMMON_NAME: &str = "karmada-rs-ca";
/// CA validity: long-lived like kubeadm's (10 years).
const CA_VALIDITY_DAYS: i64 = 3650;
/// Leaf validity (1 year, like kubeadm).
const LEAF_VALIDITY_DAYS: i64 = 365;

/// What the PKI must contain.
#[derive(Clone, Debug, Default)]
pub struct PkiOptions {
    /// Extra subject alternative names for the serving certificate (DNS names or IPs),
    /// on top of `localhost` and `127.0.0.1`.
    pub extra_sans: Vec<String>,
}

/// A certificate with its private key, both PEM.
#[derive(Clone, Debug)]
pub struct IssuedCert {
    /// The certificate (PEM).
    pub cert_pem: String,
    /// The private key (PEM, PKCS#8).
    pub key_pem: String,
}

/// A certificate authority able to sign leaves.
pub struct Ca {
    cert_pem: String,
    key: KeyPair,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ca").finish_non_exhaustive()
    }
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, CA_COMMON_NAME);
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    params
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = OffsetDateTime::now_utc();
    // Backdate a little so that clocks slightly behind ours accept the certificate.
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(days);
}

impl Ca {
    /// Creates a new self-signed CA.
    pub fn generate() -> Result<Ca, Error> {
        let key = KeyPair::generate()?;
        let mut params = ca_params();
        validity(&mut params, CA_VALIDITY_DAYS);
        let cert = params.self_signed(&key)?;
        Ok(Ca {
            cert_pem: cert.pem(),
            key,
        })
    }

    /// Loads a CA written by [`Ca::generate`] (certificate and key PEM).
    pub fn from_pem(cert_pem: &str, key_pem: &str) -> Result<Ca, Error> {
        let key = KeyPair::from_pem(key_pem)?;
        Ok(Ca {
            cert_pem: cert_pem.to_string(),
            key,
        })
    }

    /// The CA certificate (PEM).
    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// The CA private key (PEM).
    pub fn key_pem(&self) -> String {
        self.key.serialize_pem()
    }

    fn issuer(&self) -> Issuer<'_, &KeyPair> {
        // The issuer's name and key identifier are derived from the fixed CA name and the
        // key, so they match the stored CA certificate without parsing it.
        Issuer::new(ca_params(), &self.key)
    }

    /// Issues a TLS serving certificate for the given DNS names and IP addresses.
    pub fn issue_serving(&self, common_name: &str, sans: &[String]) -> Result<IssuedCert, Error> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, common_name);
        params.distinguished_name = dn;
        params.subject_alt_names = sans
            .iter()
            .map(|s| match s.parse::<std::net::IpAddr>() {
                Ok(ip) => Ok(SanType::IpAddress(ip)),
                Err(_) => s
                    .as_str()
                    .try_into()
                    .map(SanType::DnsName)
                    .map_err(Error::Generate),
            })
            .collect::<Result<_, _>>()?;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        validity(&mut params, LEAF_VALIDITY_DAYS);
        let cert = params.signed_by(&key, &self.issuer())?;
        Ok(IssuedCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// Issues a client certificate: the common name is the user, the organization is the
    /// group (as kube-apiserver's x509 authenticator reads them). At most one group: rcgen's
    /// distinguished name holds one value per attribute type, so more are refused rather than
    /// silently dropped.
    /// Signs a PKCS#10 request (PEM) as kube's `kubernetes.io/kube-apiserver-client` signer
    /// does: the request's subject, a client-auth certificate valid for `valid_for` (capped
    /// by the CA's own expiry is left to the caller), with the requested key usages. The
    /// request's own signature is verified first.
    pub fn sign_client_request(
        &self,
        request_pem: &str,
        valid_for: std::time::Duration,
        key_encipherment: bool,
    ) -> Result<String, Error> {
        let valid_for = Duration::try_from(valid_for)
            .map_err(|_| Error::Invalid("the certificate duration is too long".into()))?;
        let csr = rcgen::CertificateSigningRequestParams::from_pem(request_pem)?;
        let mut params = CertificateParams::default();
        params.distinguished_name = csr.params.distinguished_name.clone();
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        if key_encipherment {
            params.key_usages.push(KeyUsagePurpose::KeyEncipherment);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let now = OffsetDateTime::now_utc();
        // kube's signer backdates by 5 minutes for clock skew.
        params.not_before = now - Duration::minutes(5);
        params.not_after = now + valid_for;
        let cert = params.signed_by(&csr.public_key, &self.issuer())?;
        Ok(cert.pem())
    }

    pub fn issue_client(&self, user: &str, groups: &[&str]) -> Result<IssuedCert, Error> {
        self.issue_client_valid_for(user, groups, Duration::days(LEAF_VALIDITY_DAYS))
    }

    /// Like [`Ca::issue_client`] with an explicit validity (tests issue expired ones).
    pub fn issue_client_valid_for(
        &self,
        user: &str,
        groups: &[&str],
        valid_for: Duration,
    ) -> Result<IssuedCert, Error> {
        if groups.len() > 1 {
            return Err(Error::Invalid(format!(
                "a client certificate can carry one group, not {}",
                groups.len()
            )));
        }
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::default();
        let mut dn = DistinguishedName::new();
        for group in groups {
            dn.push(DnType::OrganizationName, *group);
        }
        dn.push(DnType::CommonName, user);
        params.distinguished_name = dn;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let now = OffsetDateTime::now_utc();
        params.not_before = now - Duration::hours(1);
        params.not_after = now + valid_for;
        let cert = params.signed_by(&key, &self.issuer())?;
        Ok(IssuedCert {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// The files of a control plane's PKI, under `DIR/pki`.
#[derive(Debug)]
pub struct Pki {
    /// The directory holding the files.
    pub dir: PathBuf,
    /// The CA that signs serving and client certificates.
    pub ca: Ca,
    /// The serving certificate and key.
    pub serving: IssuedCert,
    /// The admin client certificate (user `karmada-admin`, group `system:masters`).
    pub admin: IssuedCert,
    /// The service-account token signing key (PEM, PKCS#8).
    pub service_account_key_pem: String,
}

/// User name of the admin client certificate.
pub const ADMIN_USER: &str = "karmada-admin";
/// Group of the admin client certificate: the privileged group that bypasses RBAC.
pub const ADMIN_GROUP: &str = "system:masters";

impl Pki {
    /// Loads the PKI from `dir`, creating whatever is missing. The serving certificate is
    /// re-issued when the wanted SANs changed.
    pub fn ensure(dir: &Path, opts: &PkiOptions) -> Result<Pki, Error> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let ca_crt = dir.join("ca.crt");
        let ca_key = dir.join("ca.key");
        let ca = match (read_opt(&ca_crt)?, read_opt(&ca_key)?) {
            (Some(cert), Some(key)) => Ca::from_pem(&cert, &key)?,
            _ => {
                let ca = Ca::generate()?;
                write_private(&ca_key, &ca.key_pem())?;
                write_public(&ca_crt, ca.cert_pem())?;
                tracing::info!(dir = %dir.display(), "created a new certificate authority");
                ca
            }
        };

        let mut sans = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        for san in &opts.extra_sans {
            if !sans.contains(san) {
                sans.push(san.clone());
            }
        }
        let sans_file = dir.join("apiserver.sans");
        let wanted_sans = sans.join("\n");
        let serving = match (
            read_opt(&dir.join("apiserver.crt"))?,
            read_opt(&dir.join("apiserver.key"))?,
            read_opt(&sans_file)?,
        ) {
            (Some(cert_pem), Some(key_pem), Some(old)) if old == wanted_sans => {
                IssuedCert { cert_pem, key_pem }
            }
            _ => {
                let cert = ca.issue_serving("karmada-apiserver", &sans)?;
                write_private(&dir.join("apiserver.key"), &cert.key_pem)?;
                write_public(&dir.join("apiserver.crt"), &cert.cert_pem)?;
                write_public(&sans_file, &wanted_sans)?;
                cert
            }
        };

        let admin = match (
            read_opt(&dir.join("admin.crt"))?,
            read_opt(&dir.join("admin.key"))?,
        ) {
            (Some(cert_pem), Some(key_pem)) => IssuedCert { cert_pem, key_pem },
            _ => {
                let cert = ca.issue_client(ADMIN_USER, &[ADMIN_GROUP])?;
                write_private(&dir.join("admin.key"), &cert.key_pem)?;
                write_public(&dir.join("admin.crt"), &cert.cert_pem)?;
                cert
            }
        };

        let sa_path = dir.join("sa.key");
        let service_account_key_pem = match read_opt(&sa_path)? {
            Some(pem) => pem,
            None => {
                let key = KeyPair::generate()?;
                let pem = key.serialize_pem();
                write_private(&sa_path, &pem)?;
                pem
            }
        };

        Ok(Pki {
            dir: dir.to_path_buf(),
            ca,
            serving,
            admin,
            service_account_key_pem,
        })
    }
}

fn read_opt(path: &Path) -> Result<Option<String>, Error> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Writes a file readable only by its owner (private keys, credentials).
pub(crate) fn write_private(path: &Path, contents: &str) -> Result<(), Error> {
    write_with_mode(path, contents, 0o600)
}

fn write_public(path: &Path, contents: &str) -> Result<(), Error> {
    write_with_mode(path, contents, 0o644)
}

fn write_with_mode(path: &Path, contents: &str, mode: u32) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::fs::PermissionsExt;
    // Write to a temporary file first so a crash never leaves a half-written key behind.
    let tmp = path.with_extension("tmp");
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(io_err(&tmp))?;
    // The mode given at creation is filtered by the umask; set it explicitly.
    f.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(io_err(&tmp))?;
    f.write_all(contents.as_bytes()).map_err(io_err(&tmp))?;
    f.sync_all().map_err(io_err(&tmp))?;
    fs::rename(&tmp, path).map_err(io_err(path))?;
    Ok(())
}

/// The subject of a PKCS#10 request (PEM): its common name and organizations, after
/// verifying the request's signature.
pub fn request_subject(request_pem: &str) -> Result<(String, Vec<String>), Error> {
    let csr = rcgen::CertificateSigningRequestParams::from_pem(request_pem)?;
    let mut cn = String::new();
    let mut orgs = Vec::new();
    for (ty, value) in csr.params.distinguished_name.iter() {
        let text = dn_text(value);
        match ty {
            DnType::CommonName => cn = text,
            DnType::OrganizationName => orgs.push(text),
            _ => {}
        }
    }
    Ok((cn, orgs))
}

fn dn_text(v: &rcgen::DnValue) -> String {
    match v {
        rcgen::DnValue::Utf8String(s) => s.clone(),
        rcgen::DnValue::PrintableString(s) => s.as_str().to_owned(),
        rcgen::DnValue::Ia5String(s) => s.as_str().to_owned(),
        rcgen::DnValue::TeletexString(s) => s.as_str().to_owned(),
        // Requests from kube's and our clients use UTF-8 or printable strings.
        _ => String::new(),
    }
}

/// A new key and its PKCS#10 request (PEM) for a client certificate of `user` in `group`.
pub fn client_request(user: &str, group: &str) -> Result<IssuedCert, Error> {
    let key = KeyPair::generate()?;
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::OrganizationName, group);
    dn.push(DnType::CommonName, user);
    params.distinguished_name = dn;
    let csr = params.serialize_request(&key)?;
    Ok(IssuedCert {
        cert_pem: csr.pem()?,
        key_pem: key.serialize_pem(),
    })
}

/// The validity window of the first certificate in a PEM bundle, as Unix seconds
/// (notBefore, notAfter).
pub fn validity_window(cert_pem: &str) -> Result<(i64, i64), Error> {
    use x509_parser::prelude::FromDer;
    let der = crate::bootstrap_token::pem_certificates(cert_pem)
        .into_iter()
        .next()
        .ok_or_else(|| Error::Invalid("no certificate in PEM".into()))?;
    let (_, cert) = x509_parser::certificate::X509Certificate::from_der(&der)
        .map_err(|e| Error::Invalid(format!("parsing the certificate: {e}")))?;
    let v = cert.validity();
    Ok((v.not_before.timestamp(), v.not_after.timestamp()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_requests_are_signed_with_their_subject() {
        let ca = Ca::generate().unwrap();
        let req = client_request("system:karmada:agent:m1", "system:karmada:agents").unwrap();
        let (cn, orgs) = request_subject(&req.cert_pem).unwrap();
        assert_eq!(cn, "system:karmada:agent:m1");
        assert_eq!(orgs, vec!["system:karmada:agents".to_owned()]);
        let cert = ca
            .sign_client_request(&req.cert_pem, std::time::Duration::from_secs(3600), true)
            .unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        // A tampered request fails its signature check.
        assert!(
            request_subject(
                "-----BEGIN CERTIFICATE REQUEST-----\nAAAA\n-----END CERTIFICATE REQUEST-----\n"
            )
            .is_err()
        );
    }
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn ensure_creates_then_reuses() {
        let dir = tempfile::tempdir().unwrap();
        let opts = PkiOptions::default();
        let first = Pki::ensure(dir.path(), &opts).unwrap();
        let second = Pki::ensure(dir.path(), &opts).unwrap();
        assert_eq!(first.ca.cert_pem(), second.ca.cert_pem());
        assert_eq!(first.serving.cert_pem, second.serving.cert_pem);
        assert_eq!(first.admin.cert_pem, second.admin.cert_pem);
        for key in ["ca.key", "apiserver.key", "admin.key", "sa.key"] {
            let mode = fs::metadata(dir.path().join(key))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{key}");
        }
        // New SANs re-issue the serving certificate, keeping the CA.
        let third = Pki::ensure(
            dir.path(),
            &PkiOptions {
                extra_sans: vec!["example.internal".into()],
            },
        )
        .unwrap();
        assert_eq!(first.ca.cert_pem(), third.ca.cert_pem());
        assert_ne!(first.serving.cert_pem, third.serving.cert_pem);
    }
}
