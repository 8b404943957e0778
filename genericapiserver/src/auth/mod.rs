//! Authentication, impersonation and authorization: who is making a request and whether
//! they may.
//!
//! A request passes, in kube-apiserver's order: the authenticator chain ([`authenticator`]:
//! in-process identity, x509 client certificate, bearer tokens, anonymous), impersonation
//! ([`impersonation`]), then the authorizer ([`rbac`], after the `system:masters`
//! short-circuit). [`admit`] runs all three for the request handler.

pub mod attributes;
pub mod authenticator;
pub mod bootstrap_token;
pub mod csr_approval;
pub mod impersonation;
mod jwt_ring;
pub mod rbac;
pub mod service_account;
pub mod token_cache;
pub mod token_file;
pub mod x509;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use rustls_pki_types::CertificateDer;

pub use attributes::Attributes;
pub use authenticator::Authenticator;
pub use rbac::Authorizer;
pub use service_account::ServiceAccountTokens;

/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group of anonymous requests.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The user name of anonymous requests.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group that bypasses authorization.
pub const MASTERS_GROUP: &str = "system:masters";
/// The group of every service account.
pub const SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The user name prefix of service accounts (`system:serviceaccount:NS:NAME`).
pub const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";
/// The identity of the in-process Karmada controllers.
pub const CONTROLLER_MANAGER_USER: &str = "system:karmada:controller-manager";
/// The group of the in-process Karmada controllers.
pub const CONTROLLERS_GROUP: &str = "system:karmada:controllers";
/// The issuer kube-apiserver is usually given, used when none is configured.
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// An authenticated identity (user.Info); serializes as kube's `UserInfo`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct UserInfo {
    /// User name.
    #[serde(rename = "username")]
    pub name: String,
    /// User uid (service accounts).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Groups, including `system:authenticated`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The identity of the server's own bootstrap writes.
pub fn system_user() -> UserInfo {
    UserInfo::new("system:apiserver", vec![MASTERS_GROUP.to_string()])
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

    /// The anonymous user (`system:anonymous` in `system:unauthenticated`).
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: ANONYMOUS_USER.to_string(),
            groups: vec![UNAUTHENTICATED_GROUP.to_string()],
            ..Default::default()
        }
    }

    /// Adds a group once.
    pub fn add_group(&mut self, g: &str) {
        if !self.in_group(g) {
            self.groups.push(g.to_string());
        }
    }

    /// True for members of `system:masters`.
    pub fn is_master(&self) -> bool {
        self.in_group(MASTERS_GROUP)
    }

    /// True when the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// The identity as the `userInfo` JSON of reviews.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// The identity of the in-process Karmada controllers: user `system:karmada:controller-manager`
/// in group `system:karmada:controllers`, bound by the bootstrap policy to the ClusterRole of
/// the same name ([`bootstrap::CONTROLLER_MANAGER_ROLE`]). It is authorized like any other
/// user: no bypass.
pub fn controller_manager_user() -> UserInfo {
    UserInfo::new(CONTROLLER_MANAGER_USER, vec![CONTROLLERS_GROUP.to_string()])
}

/// The client certificate chain of a TLS connection, attached to each request of that
/// connection. The chain is verified against the client CAs on the first request that needs
/// it and the outcome is kept for the connection's later requests.
#[derive(Clone, Debug)]
pub struct PeerCertificates {
    chain: Arc<Vec<CertificateDer<'static>>>,
    verified: Arc<OnceLock<x509::Verified>>,
}

impl PeerCertificates {
    /// Wraps a connection's certificate chain (leaf first).
    pub fn new(chain: Vec<CertificateDer<'static>>) -> PeerCertificates {
        PeerCertificates {
            chain: Arc::new(chain),
            verified: Arc::new(OnceLock::new()),
        }
    }

    /// The chain, leaf first.
    pub fn chain(&self) -> &[CertificateDer<'static>] {
        &self.chain
    }
}

/// The identity of an in-process caller, attached by the loopback client.
#[derive(Clone, Debug)]
pub struct InProcessIdentity(pub Arc<UserInfo>);

/// The remote address of a network connection, attached to each of its requests.
#[derive(Clone, Copy, Debug)]
pub struct RemoteAddr(pub SocketAddr);

/// Reads user (CN) and groups (O) from a client certificate, as kube's
/// `CommonNameUserConversion` does.
pub fn user_from_certificate(der: &[u8]) -> Option<UserInfo> {
    x509::user_from_certificate(der).map(|(u, _)| u)
}

/// Why the security configuration could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A token file line is malformed.
    #[error("token file {path}: {message}")]
    TokenFile {
        /// The file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// The service-account signing key is unusable.
    #[error("service-account key: {0}")]
    ServiceAccountKey(String),
    /// A client CA is unusable.
    #[error("client CA: {0}")]
    ClientCa(String),
}

/// The paths of kube's `system:public-info-viewer` ClusterRole: health and version, which
/// load balancers, probes and `kubectl version` read without credentials.
pub const PUBLIC_INFO_PATHS: &[&str] = &["/livez", "/readyz", "/healthz", "/version", "/version/"];

/// The cluster-info ConfigMap that bootstrap-token discovery reads anonymously (kubeadm's
/// anonymous configuration allows it besides the probes; RBAC then lets anonymous read just
/// that object).
pub const CLUSTER_INFO_PATH: &str = "/api/v1/namespaces/kube-public/configmaps/cluster-info";

/// Which requests without credentials are served as `system:anonymous` (RBAC then decides
/// what they may do); the others are 401.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Anonymous {
    /// None (kube's `--anonymous-auth=false`).
    Disabled,
    /// Only those to [`PUBLIC_INFO_PATHS`]: what kube 1.32 serves with an
    /// AuthenticationConfiguration whose `anonymous` section is enabled with one condition per
    /// path (AnonymousAuthConfigurableEndpoints). Probes work; any other path stays 401.
    #[default]
    PublicInfo,
    /// All of them (kube's default `--anonymous-auth=true`): other paths get RBAC's 403.
    Enabled,
}

impl Anonymous {
    /// kube's `--anonymous-auth`: unset keeps the default ([`Anonymous::PublicInfo`]).
    pub fn from_flag(flag: Option<bool>) -> Anonymous {
        match flag {
            None => Anonymous::PublicInfo,
            Some(true) => Anonymous::Enabled,
            Some(false) => Anonymous::Disabled,
        }
    }

    /// Whether a request to `path` without credentials is anonymous (else 401). Conditions
    /// compare whole paths, as kube's do: `/readyz/etcd` is not `/readyz`.
    pub fn allows(self, path: &str) -> bool {
        match self {
            Anonymous::Disabled => false,
            Anonymous::PublicInfo => PUBLIC_INFO_PATHS.contains(&path) || path == CLUSTER_INFO_PATH,
            Anonymous::Enabled => true,
        }
    }
}

/// How requests are authenticated.
#[derive(Clone, Debug, Default)]
pub struct AuthOptions {
    /// Which requests without credentials are `system:anonymous`.
    pub anonymous: Anonymous,
    /// A static token file (kube's `--token-auth-file`, CSV `token,user,uid[,"group1,group2"]`).
    pub token_auth_file: Option<PathBuf>,
    /// CAs whose client certificates authenticate users (PEM bundles).
    pub client_ca_pems: Vec<String>,
    /// The service-account token signing key (PKCS#8 PEM, ECDSA P-256).
    pub service_account_key_pem: String,
    /// The issuer of service-account tokens (kube's `--service-account-issuer`; empty: the
    /// default issuer).
    pub service_account_issuer: String,
    /// The audiences the server accepts in tokens (kube's `--api-audiences`; default: the
    /// issuer).
    pub api_audiences: Vec<String>,
    /// The CA bundle clients verify this server with (kube's `--root-ca-file`): the
    /// service-account token controller writes it beside each token as `ca.crt`.
    pub root_ca_pem: String,
}

/// The security stack of one API server: authenticators, the RBAC authorizer and the
/// service-account token issuer (the audit log is the handler chain's, beside it).
pub struct Auth {
    /// The authenticator chain.
    pub authenticator: Authenticator,
    /// The authorizer (RBAC over an index fed by the RBAC watch caches).
    pub authorizer: Arc<Authorizer>,
    /// Service-account token issuance and validation.
    pub tokens: Arc<ServiceAccountTokens>,
    /// See [`AuthOptions::root_ca_pem`].
    pub root_ca_pem: String,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auth").finish_non_exhaustive()
    }
}

impl Auth {
    /// Builds the stack from options (reads the token file).
    pub fn new(opts: &AuthOptions) -> Result<Auth, AuthError> {
        let issuer = if opts.service_account_issuer.is_empty() {
            DEFAULT_ISSUER.to_string()
        } else {
            opts.service_account_issuer.clone()
        };
        let audiences = if opts.api_audiences.is_empty() {
            vec![issuer.clone()]
        } else {
            opts.api_audiences.clone()
        };
        let tokens = Arc::new(ServiceAccountTokens::new(
            &opts.service_account_key_pem,
            issuer,
            audiences,
        )?);
        let static_tokens = match &opts.token_auth_file {
            Some(p) => token_file::load(p)?,
            None => Default::default(),
        };
        let authenticator = Authenticator::new(
            x509::ClientCertAuth::new(&opts.client_ca_pems)?,
            static_tokens,
            tokens.clone(),
            opts.anonymous,
        );
        Ok(Auth {
            authenticator,
            authorizer: Arc::new(Authorizer::new()),
            tokens,
            root_ca_pem: opts.root_ca_pem.clone(),
        })
    }
}

tokio::task_local! {
    static CURRENT_USER: Arc<UserInfo>;
}

/// Runs `fut` with `user` as the request's identity, readable by [`current_user`] from the
/// storage layer (RBAC escalation checks run there, as in kube's policy-based storage).
pub async fn scope<F: std::future::Future>(user: Arc<UserInfo>, fut: F) -> F::Output {
    CURRENT_USER.scope(user, fut).await
}

/// The identity of the API request being served, if any. Work the server does on its own
/// behalf (bootstrap, controllers inside the server) runs outside any request and has none.
pub fn current_user() -> Option<Arc<UserInfo>> {
    CURRENT_USER.try_with(|u| u.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_and_authenticated_groups() {
        let a = UserInfo::anonymous();
        assert_eq!(a.name, "system:anonymous");
        assert_eq!(a.groups, vec!["system:unauthenticated"]);
        let u = UserInfo::new("alice", vec!["dev".into(), AUTHENTICATED_GROUP.into()]);
        assert_eq!(u.groups, vec!["dev", "system:authenticated"]);
        assert!(!u.is_master());
        let cm = controller_manager_user();
        assert!(cm.in_group(CONTROLLERS_GROUP) && cm.in_group(AUTHENTICATED_GROUP));
        assert!(!cm.is_master(), "the controllers must not bypass RBAC");
    }

    #[test]
    fn anonymous_modes() {
        assert_eq!(Anonymous::from_flag(None), Anonymous::PublicInfo);
        assert_eq!(Anonymous::from_flag(Some(true)), Anonymous::Enabled);
        assert_eq!(Anonymous::from_flag(Some(false)), Anonymous::Disabled);
        for path in ["/healthz", "/livez", "/readyz", "/version", "/version/"] {
            assert!(Anonymous::PublicInfo.allows(path), "{path}");
            assert!(Anonymous::Enabled.allows(path), "{path}");
            assert!(!Anonymous::Disabled.allows(path), "{path}");
        }
        for path in [
            "/",
            "/api",
            "/apis",
            "/metrics",
            "/openapi/v2",
            "/readyz/etcd",
            "/healthzz",
            "/api/v1/namespaces",
            "/version/x",
        ] {
            assert!(!Anonymous::PublicInfo.allows(path), "{path}");
            assert!(Anonymous::Enabled.allows(path), "{path}");
        }
    }
}
