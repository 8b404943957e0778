//! Delegated authentication and authorization against the host API server, as an aggregated
//! API server built on k8s.io/apiserver does them: bearer tokens through `TokenReview`
//! (`authenticatorfactory.DelegatingAuthenticatorConfig`) and decisions through
//! `SubjectAccessReview` (`authorizerfactory.DelegatingAuthorizerConfig`), both cached for
//! 10 seconds; `system:masters` and the health paths are allowed without asking.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;

use crate::auth::UserInfo;
use crate::request_info::RequestInfo;

/// How long a TokenReview answer is reused (kube's default `--authentication-token-webhook-cache-ttl`
/// for delegated authentication).
pub const TOKEN_TTL: Duration = Duration::from_secs(10);
/// How long an allow is reused (`--authorization-webhook-cache-authorized-ttl`).
pub const ALLOW_TTL: Duration = Duration::from_secs(10);
/// How long a deny is reused (`--authorization-webhook-cache-unauthorized-ttl`).
pub const DENY_TTL: Duration = Duration::from_secs(10);
/// The largest number of cached answers of each kind before the cache is emptied.
const MAX_CACHED: usize = 10_000;

/// Paths every caller may read (`--authorization-always-allow-paths`).
pub const ALWAYS_ALLOW_PATHS: &[&str] = &["/healthz", "/readyz", "/livez"];

/// True for the always-allowed health paths and their sub-checks.
pub fn always_allowed(path: &str) -> bool {
    ALWAYS_ALLOW_PATHS
        .iter()
        .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
}

/// A delegated decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Allowed.
    pub allowed: bool,
    /// The host's reason (appended to Forbidden messages).
    pub reason: String,
}

type Cache<T> = Mutex<HashMap<String, (Instant, T)>>;

fn cached<T: Clone>(cache: &Cache<T>, key: &str, ttl: impl Fn(&T) -> Duration) -> Option<T> {
    let c = cache.lock().ok()?;
    let (at, v) = c.get(key)?;
    (at.elapsed() < ttl(v)).then(|| v.clone())
}

fn remember<T>(cache: &Cache<T>, key: String, v: T) {
    if let Ok(mut c) = cache.lock() {
        if c.len() >= MAX_CACHED {
            c.clear();
        }
        c.insert(key, (Instant::now(), v));
    }
}

/// Asks the host.
pub struct Delegated {
    authn: kube::Client,
    authz: kube::Client,
    tokens: Cache<Option<UserInfo>>,
    decisions: Cache<Decision>,
}

impl std::fmt::Debug for Delegated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegated").finish_non_exhaustive()
    }
}

impl Delegated {
    /// Token reviews through `authn`, access reviews through `authz`.
    pub fn new(authn: kube::Client, authz: kube::Client) -> Delegated {
        Delegated {
            authn,
            authz,
            tokens: Mutex::default(),
            decisions: Mutex::default(),
        }
    }

    /// Authenticates a bearer token with a TokenReview (`Ok(None)`: the host says no).
    pub async fn review_token(&self, token: &str) -> Result<Option<UserInfo>, String> {
        let key = hash(token);
        if let Some(v) = cached(&self.tokens, &key, |_| TOKEN_TTL) {
            return Ok(v);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        let api: kube::Api<TokenReview> = kube::Api::all(self.authn.clone());
        let answer = api
            .create(&PostParams::default(), &review)
            .await
            .map_err(|e| format!("TokenReview: {e}"))?;
        let status = answer.status.unwrap_or_default();
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(u)) => {
                let mut user = UserInfo {
                    name: u.username.unwrap_or_default(),
                    uid: u.uid.unwrap_or_default(),
                    groups: u.groups.unwrap_or_default(),
                    extra: u.extra.unwrap_or_default().into_iter().collect(),
                };
                user.add_group(crate::auth::AUTHENTICATED_GROUP);
                Some(user).filter(|u| !u.name.is_empty())
            }
            _ => None,
        };
        remember(&self.tokens, key, user.clone());
        Ok(user)
    }

    /// Authorizes a request with a SubjectAccessReview (after the local short-circuits).
    pub async fn authorize(&self, user: &UserInfo, info: &RequestInfo) -> Result<Decision, String> {
        if user.is_master() {
            return Ok(Decision {
                allowed: true,
                reason: String::new(),
            });
        }
        if !info.is_resource_request && always_allowed(&info.path) {
            return Ok(Decision {
                allowed: true,
                reason: String::new(),
            });
        }
        let spec = review_spec(user, info);
        let key = serde_json::to_string(&spec).map_err(|e| e.to_string())?;
        if let Some(d) = cached(&self.decisions, &key, |d: &Decision| {
            if d.allowed { ALLOW_TTL } else { DENY_TTL }
        }) {
            return Ok(d);
        }
        let api: kube::Api<SubjectAccessReview> = kube::Api::all(self.authz.clone());
        let sar = SubjectAccessReview {
            spec,
            ..Default::default()
        };
        let answer = api
            .create(&PostParams::default(), &sar)
            .await
            .map_err(|e| format!("SubjectAccessReview: {e}"))?;
        let status = answer.status.unwrap_or_default();
        let d = Decision {
            allowed: status.allowed && !status.denied.unwrap_or(false),
            reason: status.reason.unwrap_or_default(),
        };
        remember(&self.decisions, key, d.clone());
        Ok(d)
    }
}

/// The SubjectAccessReview spec of a request (kube's `subjectAccessReviewSpec` of the
/// webhook authorizer).
pub fn review_spec(user: &UserInfo, info: &RequestInfo) -> SubjectAccessReviewSpec {
    let mut spec = SubjectAccessReviewSpec {
        user: Some(user.name.clone()),
        groups: Some(user.groups.clone()).filter(|g| !g.is_empty()),
        uid: Some(user.uid.clone()).filter(|u| !u.is_empty()),
        extra: Some(user.extra.clone().into_iter().collect())
            .filter(|e: &std::collections::BTreeMap<_, _>| !e.is_empty()),
        ..Default::default()
    };
    if info.is_resource_request {
        spec.resource_attributes = Some(ResourceAttributes {
            namespace: Some(info.namespace.clone()),
            verb: Some(info.verb.clone()),
            group: Some(info.api_group.clone()),
            version: Some(info.api_version.clone()),
            resource: Some(info.resource.clone()),
            subresource: Some(info.subresource.clone()),
            name: Some(info.name.clone()),
            ..Default::default()
        });
    } else {
        spec.non_resource_attributes = Some(NonResourceAttributes {
            path: Some(info.path.clone()),
            verb: Some(info.verb.clone()),
        });
    }
    spec
}

fn hash(token: &str) -> String {
    use std::hash::{Hash, Hasher};
    // Tokens are not kept in memory as cache keys; a 64-bit hash with the length keeps
    // accidental collisions out of reach for a 10-second cache.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    token.hash(&mut h);
    format!("{:x}-{}", h.finish(), token.len())
}

/// Shared handle.
pub type SharedDelegated = Arc<Delegated>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_paths() {
        for (p, want) in [
            ("/healthz", true),
            ("/readyz/etcd", true),
            ("/livez", true),
            ("/healthzz", false),
            ("/apis", false),
        ] {
            assert_eq!(always_allowed(p), want, "{p}");
        }
    }

    #[test]
    fn review_specs() {
        let user = UserInfo::new("alice", vec!["dev".into()]);
        let info = crate::request_info::request_info(
            &http::Method::GET,
            "/apis/cluster.karmada.io/v1alpha1/clusters/m1/proxy/api/v1/pods",
            &Default::default(),
        );
        let spec = serde_json::to_value(review_spec(&user, &info)).unwrap();
        assert_eq!(
            spec,
            serde_json::json!({
                "user": "alice",
                "groups": ["dev", "system:authenticated"],
                "resourceAttributes": {
                    "namespace": "", "verb": "get", "group": "cluster.karmada.io",
                    "version": "v1alpha1", "resource": "clusters", "subresource": "proxy", "name": "m1",
                },
            })
        );
        let info = crate::request_info::request_info(
            &http::Method::GET,
            "/openapi/v2",
            &Default::default(),
        );
        let spec = serde_json::to_value(review_spec(&user, &info)).unwrap();
        assert_eq!(
            spec["nonResourceAttributes"],
            serde_json::json!({"path": "/openapi/v2", "verb": "get"})
        );
    }
}
