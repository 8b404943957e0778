//! Authentication: who is making a request.
//!
//! Order as kube-apiserver's union authenticator: x509 client certificate, then bearer
//! tokens; the in-process controller client carries its identity as a request extension
//! (it cannot be set from the network).

use std::collections::BTreeMap;
use std::sync::Arc;

use rustls_pki_types::CertificateDer;

/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group that bypasses authorization.
pub const MASTERS_GROUP: &str = "system:masters";

/// An authenticated identity (user.Info).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// User name.
    pub name: String,
    /// User uid (service accounts).
    pub uid: String,
    /// Groups, including `system:authenticated`.
    pub groups: Vec<String>,
    /// Extra attributes.
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with the given groups, plus `system:authenticated`.
    pub fn new(name: impl Into<String>, groups: Vec<String>) -> UserInfo {
        let mut u = UserInfo {
            name: name.into(),
            groups,
            ..Default::default()
        };
        u.add_group(AUTHENTICATED_GROUP);
        u
    }

    /// Adds a group once.
    pub fn add_group(&mut self, g: &str) {
        if !self.groups.iter().any(|x| x == g) {
            self.groups.push(g.to_string());
        }
    }

    /// True for members of `system:masters`.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS_GROUP)
    }
}

/// The client certificate chain of a TLS connection (verified by rustls against the
/// client CA during the handshake), attached to each request of that connection.
#[derive(Clone, Debug)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

/// The identity of an in-process caller, attached by the loopback client.
#[derive(Clone, Debug)]
pub struct InProcessIdentity(pub Arc<UserInfo>);

/// Reads user (CN) and groups (O) from a client certificate, as kube's
/// `CommonNameUserConversion` does.
pub fn user_from_certificate(der: &[u8]) -> Option<UserInfo> {
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
    Some(UserInfo::new(name, groups))
}

/// Authenticates a request from its extensions and headers; `None` means anonymous.
pub fn authenticate(parts: &http::request::Parts) -> Option<UserInfo> {
    if let Some(InProcessIdentity(u)) = parts.extensions.get::<InProcessIdentity>() {
        return Some((**u).clone());
    }
    if let Some(PeerCertificates(chain)) = parts.extensions.get::<PeerCertificates>()
        && let Some(leaf) = chain.first()
    {
        return user_from_certificate(leaf);
    }
    None
}
