//! The authenticator chain, in kube-apiserver's order and with its union semantics
//! (k8s.io/apiserver/pkg/authentication/request/union and the anonymous fallback built with
//! `NewFailOnError`): the in-process identity, the x509 client certificate, then bearer
//! tokens (static tokens, then service-account JWTs). The first success wins; credentials
//! that were presented but failed make the request 401 even when anonymous access is on; a
//! request with no credentials at all is anonymous when [`Anonymous`] allows its path, else
//! 401.

use std::sync::Arc;

use http::header::AUTHORIZATION;

use super::service_account::{self, ServiceAccountTokens};
use super::token_cache::TokenCache;
use super::token_file::StaticTokens;
use super::x509::ClientCertAuth;
use super::{Anonymous, InProcessIdentity, PeerCertificates, UserInfo};
use crate::error::ApiError;
use crate::state::ApiState;

/// Authenticates requests.
#[derive(Debug)]
pub struct Authenticator {
    x509: ClientCertAuth,
    static_tokens: StaticTokens,
    tokens: Arc<ServiceAccountTokens>,
    anonymous: Anonymous,
    cache: TokenCache,
}

/// The outcome of authenticating a bearer token (TokenReview reports it as is).
#[derive(Debug)]
pub struct TokenOutcome {
    /// The user, when the token authenticated.
    pub user: Option<UserInfo>,
    /// The audiences the token was accepted for.
    pub audiences: Vec<String>,
    /// Why it did not authenticate.
    pub error: String,
}

impl Authenticator {
    /// Assembles the chain.
    pub fn new(
        x509: ClientCertAuth,
        static_tokens: StaticTokens,
        tokens: Arc<ServiceAccountTokens>,
        anonymous: Anonymous,
    ) -> Authenticator {
        Authenticator {
            x509,
            static_tokens,
            tokens,
            anonymous,
            cache: TokenCache::default(),
        }
    }

    /// Which requests without credentials are served as `system:anonymous`.
    pub fn anonymous(&self) -> Anonymous {
        self.anonymous
    }

    /// Authenticates a request; a successful bearer token is removed from the headers (kube
    /// does so before anything can proxy the request onwards).
    pub async fn authenticate(
        &self,
        state: &ApiState,
        parts: &mut http::request::Parts,
    ) -> Result<UserInfo, ApiError> {
        if let Some(InProcessIdentity(u)) = parts.extensions.get::<InProcessIdentity>() {
            return Ok(with_authenticated_group((**u).clone()));
        }
        let mut failures: Vec<String> = Vec::new();
        if let Some(peer) = parts.extensions.get::<PeerCertificates>() {
            match self.x509.authenticate(peer) {
                Ok(Some(u)) => return Ok(with_authenticated_group(u)),
                Ok(None) => {}
                Err(e) => failures.push(e),
            }
        }
        // Other schemes (Basic, ...) are not ours: no opinion, as kube's bearer
        // authenticator has none for them.
        if let Some(token) = parts
            .headers
            .get(AUTHORIZATION)
            .and_then(|v| bearer_token(v.as_bytes()))
        {
            let outcome = self.authenticate_token(state, token, &[]).await;
            if let Some(u) = outcome.user {
                parts.headers.remove(AUTHORIZATION);
                return Ok(with_authenticated_group(u));
            }
            failures.push(outcome.error);
        }
        if !failures.is_empty() {
            tracing::debug!(errors = ?failures, "authentication failed");
            return Err(ApiError::unauthorized());
        }
        if self.anonymous.allows(parts.uri.path()) {
            return Ok(UserInfo::anonymous());
        }
        Err(ApiError::unauthorized())
    }

    /// Authenticates a bearer token for the given audiences (empty: the server's).
    pub async fn authenticate_token(
        &self,
        state: &ApiState,
        token: &str,
        audiences: &[String],
    ) -> TokenOutcome {
        let fail = |error: String| TokenOutcome {
            user: None,
            audiences: vec![],
            error,
        };
        if token.is_empty() {
            return fail("invalid bearer token".into());
        }
        // Static tokens carry no audience: kube treats them as valid for the API's own.
        if let Some(u) = self.static_tokens.get(token) {
            let accepted = audiences.is_empty()
                || audiences
                    .iter()
                    .any(|a| self.tokens.audiences().contains(a));
            if !accepted {
                return fail("token audiences are not accepted".into());
            }
            return TokenOutcome {
                user: Some(u.clone()),
                audiences: if audiences.is_empty() {
                    self.tokens.audiences().to_vec()
                } else {
                    audiences
                        .iter()
                        .filter(|a| self.tokens.audiences().contains(a))
                        .cloned()
                        .collect()
                },
                error: String::new(),
            };
        }
        // Bootstrap tokens are not cached: deleting or expiring one takes effect at once.
        if let Some(result) = super::bootstrap_token::authenticate(state, token).await {
            return match result {
                Ok(user) if audiences.is_empty() => TokenOutcome {
                    user: Some(user),
                    audiences: self.tokens.audiences().to_vec(),
                    error: String::new(),
                },
                Ok(_) => fail("token audiences are not accepted".into()),
                Err(e) => fail(e),
            };
        }
        let now = std::time::Instant::now();
        if let Some(hit) = self.cache.get(token, audiences, now) {
            return TokenOutcome {
                user: Some(hit.user),
                audiences: hit.audiences,
                error: String::new(),
            };
        }
        match self.verify_token(state, token, audiences).await {
            Ok(ok) => {
                self.cache.put(
                    token,
                    audiences,
                    ok.user.clone(),
                    ok.audiences.clone(),
                    now,
                    ok.not_after,
                );
                TokenOutcome {
                    user: Some(ok.user),
                    audiences: ok.audiences,
                    error: String::new(),
                }
            }
            Err(error) => fail(error),
        }
    }

    /// Verifies a service-account token (legacy or bound) and looks its account up.
    async fn verify_token(
        &self,
        state: &ApiState,
        token: &str,
        audiences: &[String],
    ) -> Result<Verified, String> {
        // Legacy Secret tokens carry no audience; kube accepts them for the API's own.
        if service_account::unverified_issuer(token).as_deref()
            == Some(service_account::LEGACY_ISSUER)
        {
            if !audiences.is_empty()
                && !audiences
                    .iter()
                    .any(|a| self.tokens.audiences().contains(a))
            {
                return Err("token audiences are not accepted".into());
            }
            let claims = self.tokens.validate_legacy(token)?;
            return Ok(Verified {
                user: service_account::legacy_user_for(state, token, &claims).await?,
                audiences: self.tokens.audiences().to_vec(),
                not_after: None,
            });
        }
        let (claims, matched) = self.tokens.validate(token, audiences)?;
        let user = service_account::user_for(state, &claims).await?;
        let left = claims.exp - jiff::Timestamp::now().as_second();
        Ok(Verified {
            user,
            audiences: matched,
            not_after: Some(
                std::time::Instant::now()
                    + std::time::Duration::from_secs(u64::try_from(left).unwrap_or(0)),
            ),
        })
    }
}

/// A verified service-account token.
struct Verified {
    user: UserInfo,
    audiences: Vec<String>,
    /// The token's own expiry (legacy tokens have none).
    not_after: Option<std::time::Instant>,
}

/// kube's `AuthenticatedGroupAdder`: every authenticated user is in `system:authenticated`,
/// unless it already names that group or `system:unauthenticated`.
pub fn with_authenticated_group(mut user: UserInfo) -> UserInfo {
    if !user.in_group(super::AUTHENTICATED_GROUP) && !user.in_group(super::UNAUTHENTICATED_GROUP) {
        user.groups.push(super::AUTHENTICATED_GROUP.to_string());
    }
    user
}

/// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive, as
/// kube's bearertoken authenticator reads it); a header without a token has none.
pub fn bearer_token(value: &[u8]) -> Option<&str> {
    let value = std::str::from_utf8(value).ok()?.trim();
    let mut parts = value.splitn(3, ' ');
    let scheme = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    parts.next().filter(|t| !t.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_header() {
        let cases: &[(&str, Option<&str>)] = &[
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("BEARER abc extra", Some("abc")),
            ("Bearer", None),
            ("Bearer  abc", None),
            ("Basic dXNlcjpwYXNz", None),
            ("", None),
        ];
        for (h, want) in cases {
            assert_eq!(bearer_token(h.as_bytes()), *want, "{h:?}");
        }
    }
}
