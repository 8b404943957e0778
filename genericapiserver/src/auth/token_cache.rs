//! Successful bearer-token authentications, remembered for a short time (kube-apiserver's
//! cached token authenticator, `k8s.io/apiserver/pkg/authentication/token/cache`, which it
//! puts in front of its token authenticators with a 10 s success TTL and no failure caching).
//! A service-account token is an ECDSA signature to verify plus lookups of its account: a
//! member cluster serving the control plane's steady stream of requests spent about a tenth
//! of its CPU on them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::UserInfo;

/// How long a success is reused (kube's `TokenSuccessCacheTTL` default).
pub const SUCCESS_TTL: Duration = Duration::from_secs(10);

/// Entries kept at most; a full cache first drops what expired, then everything.
const MAX_ENTRIES: usize = 4_096;

/// A remembered success: who, for which audiences, until when.
#[derive(Clone, Debug)]
pub struct Cached {
    /// The authenticated user.
    pub user: UserInfo,
    /// The audiences the token was accepted for.
    pub audiences: Vec<String>,
    expires: Instant,
}

/// The cache, keyed by a SHA-256 digest of the requested audiences and the token (the token
/// itself is not kept).
#[derive(Debug, Default)]
pub struct TokenCache {
    entries: Mutex<HashMap<[u8; 32], Cached>>,
}

fn key(token: &str, audiences: &[String]) -> [u8; 32] {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for a in audiences {
        ctx.update(a.as_bytes());
        ctx.update(b"\0");
    }
    ctx.update(b"\0");
    ctx.update(token.as_bytes());
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.finish().as_ref());
    out
}

impl TokenCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Cached>> {
        // Entries are inserted whole; a panic elsewhere cannot leave one half-written.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A success for `token` and `audiences` still fresh at `now`.
    pub fn get(&self, token: &str, audiences: &[String], now: Instant) -> Option<Cached> {
        let k = key(token, audiences);
        let mut entries = self.lock();
        match entries.get(&k) {
            Some(c) if c.expires > now => Some(c.clone()),
            Some(_) => {
                entries.remove(&k);
                None
            }
            None => None,
        }
    }

    /// Remembers a success until `now + SUCCESS_TTL`, or until `not_after` when sooner (the
    /// token's own expiry).
    pub fn put(
        &self,
        token: &str,
        requested: &[String],
        user: UserInfo,
        audiences: Vec<String>,
        now: Instant,
        not_after: Option<Instant>,
    ) {
        let mut expires = now + SUCCESS_TTL;
        if let Some(limit) = not_after {
            expires = expires.min(limit);
        }
        if expires <= now {
            return;
        }
        let mut entries = self.lock();
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, c| c.expires > now);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(
            key(token, requested),
            Cached {
                user,
                audiences,
                expires,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str) -> UserInfo {
        UserInfo {
            name: name.to_string(),
            ..UserInfo::default()
        }
    }

    #[test]
    fn successes_are_reused_until_they_expire() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        let aud = vec!["https://kubernetes.default.svc".to_string()];
        cache.put("tok", &[], user("a"), aud.clone(), t0, None);
        let hit = cache
            .get("tok", &[], t0 + Duration::from_secs(9))
            .expect("cached");
        assert_eq!(hit.user.name, "a");
        assert_eq!(hit.audiences, aud);
        // Another token, or the same token asked for other audiences, is not a hit.
        assert!(cache.get("other", &[], t0).is_none());
        assert!(cache.get("tok", &["x".to_string()], t0).is_none());
        assert!(cache.get("tok", &[], t0 + SUCCESS_TTL).is_none());
    }

    #[test]
    fn a_token_expiring_sooner_is_kept_only_that_long() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        let exp = t0 + Duration::from_secs(2);
        cache.put("tok", &[], user("a"), vec![], t0, Some(exp));
        assert!(cache.get("tok", &[], t0 + Duration::from_secs(1)).is_some());
        assert!(cache.get("tok", &[], exp).is_none());
        // Already expired: not remembered at all.
        cache.put("old", &[], user("a"), vec![], t0, Some(t0));
        assert!(cache.get("old", &[], t0).is_none());
    }

    #[test]
    fn a_full_cache_makes_room() {
        let cache = TokenCache::default();
        let t0 = Instant::now();
        for i in 0..MAX_ENTRIES {
            cache.put(&format!("t{i}"), &[], user("a"), vec![], t0, None);
        }
        cache.put("new", &[], user("b"), vec![], t0, None);
        assert!(cache.get("new", &[], t0).is_some());
        assert!(cache.lock().len() <= MAX_ENTRIES);
    }
}
