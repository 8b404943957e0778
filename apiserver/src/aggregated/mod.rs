//! `karmada-rs serve --aggregated`: only `cluster.karmada.io` (clusters, status, proxy),
//! served for a host kube-apiserver through an APIService, as karmada-aggregated-apiserver
//! is. Requests are authenticated from the front proxy's headers (request-header CA and
//! allowed names), client certificates of the host's client CA, or bearer tokens reviewed by
//! the host; they are authorized by the host with SubjectAccessReviews. Member credentials
//! are read from the host's Secrets.

pub mod authn_config;
pub mod delegated;
pub mod requestheader;

use std::sync::{Arc, RwLock};

use http::header::AUTHORIZATION;
use rustls::pki_types::CertificateDer;

use crate::auth::{InProcessIdentity, PeerCertificates, UserInfo};
use crate::error::ApiError;
use crate::request_info::RequestInfo;
pub use authn_config::{AuthnConfig, AuthnFlags};
pub use delegated::Delegated;
use requestheader::Outcome;

/// The security stack of an aggregated server.
#[derive(Debug)]
pub struct DelegatedAuth {
    config: RwLock<Arc<AuthnConfig>>,
    delegated: Delegated,
}

/// The certificate chain of the request's connection, leaf first.
fn peer_chain(parts: &http::request::Parts) -> Option<&[CertificateDer<'static>]> {
    parts
        .extensions
        .get::<PeerCertificates>()
        .map(|p| p.chain())
        .filter(|c| !c.is_empty())
}

/// kube's Forbidden for request attributes (`forbiddenMessage` + `NewForbidden`).
pub fn forbidden(user: &UserInfo, info: &RequestInfo, reason: &str) -> ApiError {
    let mut detail = if info.is_resource_request {
        let resource = if info.subresource.is_empty() {
            info.resource.clone()
        } else {
            format!("{}/{}", info.resource, info.subresource)
        };
        let scope = if info.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace {:?}", info.namespace)
        };
        format!(
            "User {:?} cannot {} resource {:?} in API group {:?} {scope}",
            user.name, info.verb, resource, info.api_group
        )
    } else {
        format!(
            "User {:?} cannot {} path {:?}",
            user.name, info.verb, info.path
        )
    };
    if !reason.is_empty() {
        detail.push_str(": ");
        detail.push_str(reason);
    }
    let (group, resource, name) = if info.is_resource_request {
        (
            info.api_group.as_str(),
            info.resource.as_str(),
            info.name.as_str(),
        )
    } else {
        ("", "", "")
    };
    let message = if resource.is_empty() {
        format!("forbidden: {detail}")
    } else {
        let q = crate::error::qualified_resource(group, resource);
        if name.is_empty() {
            format!("{q} is forbidden: {detail}")
        } else {
            format!("{q} {name:?} is forbidden: {detail}")
        }
    };
    ApiError::forbidden_message(group, resource, name, message)
}

impl DelegatedAuth {
    /// A stack with the given trust, asking the host through `delegated`.
    pub fn new(config: AuthnConfig, delegated: Delegated) -> DelegatedAuth {
        DelegatedAuth {
            config: RwLock::new(Arc::new(config)),
            delegated,
        }
    }

    /// The trust in effect.
    pub fn config(&self) -> Arc<AuthnConfig> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Replaces the trust (after the host's ConfigMap changed).
    pub fn set_config(&self, c: AuthnConfig) {
        let c = Arc::new(c);
        match self.config.write() {
            Ok(mut g) => *g = c,
            Err(p) => *p.into_inner() = c,
        }
    }

    /// Authenticates a request: front-proxy headers, then a client certificate, then a
    /// bearer token; requests without credentials are anonymous only on the health paths.
    pub async fn authenticate(
        &self,
        parts: &mut http::request::Parts,
    ) -> Result<UserInfo, ApiError> {
        if let Some(InProcessIdentity(u)) = parts.extensions.get::<InProcessIdentity>() {
            return Ok((**u).clone());
        }
        let cfg = self.config();
        let chain: Option<Vec<CertificateDer<'static>>> = peer_chain(parts).map(<[_]>::to_vec);
        let mut failures: Vec<String> = Vec::new();
        if let Some(rh) = &cfg.requestheader {
            match rh.authenticate(chain.as_deref(), &mut parts.headers) {
                Outcome::User(u) => return Ok(u),
                Outcome::Rejected(e) => failures.push(e),
                Outcome::NotApplicable => {}
            }
        }
        if let Some(chain) = &chain {
            match &cfg.client_ca {
                Some(v) => match v.verify(chain) {
                    Ok(()) => {
                        if let Some(u) = crate::auth::user_from_certificate(&chain[0]) {
                            return Ok(u);
                        }
                        failures.push("x509: the certificate has no common name".into());
                    }
                    Err(e) => failures.push(e),
                },
                None => failures.push("x509: no client CA".into()),
            }
        }
        let token = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, t) = v.trim().split_once(' ')?;
                scheme
                    .eq_ignore_ascii_case("bearer")
                    .then(|| t.trim().to_string())
            })
            .filter(|t| !t.is_empty());
        if let Some(token) = token {
            match self.delegated.review_token(&token).await {
                Ok(Some(u)) => {
                    parts.headers.remove(AUTHORIZATION);
                    return Ok(u);
                }
                Ok(None) => failures.push("invalid bearer token".into()),
                Err(e) => failures.push(e),
            }
        }
        if failures.is_empty() && delegated::always_allowed(parts.uri.path()) {
            return Ok(UserInfo {
                name: "system:anonymous".into(),
                groups: vec!["system:unauthenticated".into()],
                ..Default::default()
            });
        }
        tracing::debug!(errors = ?failures, path = %parts.uri.path(), "unauthenticated request refused");
        Err(ApiError::unauthorized())
    }

    /// Authenticates and authorizes a request; returns the caller.
    pub async fn admit(
        &self,
        parts: &mut http::request::Parts,
        info: &mut RequestInfo,
        query: &std::collections::HashMap<String, Vec<String>>,
    ) -> Result<UserInfo, ApiError> {
        let user = self.authenticate(parts).await?;
        // The caller's field selector is read only once the caller is known.
        crate::request_info::add_selector_name(info, query);
        let d = self
            .delegated
            .authorize(&user, &*info)
            .await
            .map_err(ApiError::internal)?;
        if !d.allowed {
            return Err(forbidden(&user, info, &d.reason));
        }
        Ok(user)
    }
}

#[cfg(test)]
mod tests;
