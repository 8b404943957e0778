//! The bootstrap-token authenticator (plugin/pkg/auth/authenticator/token/bootstrap): a
//! bearer token `<id>.<secret>` is `system:bootstrap:<id>` in `system:bootstrappers` (plus the
//! Secret's extra groups) while its Secret `kube-system/bootstrap-token-<id>` exists, is not
//! being deleted, has not expired, matches the secret and allows authentication. Tokens are
//! looked up on every request (not cached), so a deleted or expired token stops at once.

use base64::Engine;
use certs::bootstrap_token::{self as bt, BootstrapToken};
use serde_json::Value;

use super::UserInfo;
use crate::object;
use crate::state::ApiState;

/// Extra groups must stay under `system:bootstrappers:` (bootstrapapi.BootstrapGroupPattern).
fn valid_group(g: &str) -> bool {
    g.strip_prefix("system:bootstrappers:").is_some_and(|rest| {
        !rest.is_empty()
            && rest.len() <= 256
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b':' || b == b'-')
            && rest
                .bytes()
                .last()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

/// Compares two secrets without an early exit on the first difference.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A data value of a stored Secret.
fn data(secret: &Value, key: &str) -> Option<String> {
    let b64 = secret.get("data")?.get(key)?.as_str()?;
    let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
    String::from_utf8(bytes).ok()
}

/// Whether an RFC 3339 expiration lies in the past (an unreadable one counts as expired, as
/// kube's `isSecretExpired`).
pub fn expired(expiration: Option<&str>, now: jiff::Timestamp) -> bool {
    match expiration {
        None => false,
        Some(e) => e.parse::<jiff::Timestamp>().map_or(true, |t| t <= now),
    }
}

/// Authenticates `token` when it has the bootstrap form; `None` leaves it to the other
/// authenticators. Errors say why (logged, never sent: the client gets 401).
pub async fn authenticate(state: &ApiState, token: &str) -> Option<Result<UserInfo, String>> {
    let token = BootstrapToken::parse(token).ok()?;
    Some(check(state, &token).await)
}

async fn check(state: &ApiState, token: &BootstrapToken) -> Result<UserInfo, String> {
    let name = token.secret_name();
    let secret = super::service_account::lookup(state, "secrets", bt::SECRET_NAMESPACE, &name)
        .await?
        .ok_or_else(|| {
            format!(
                "no secret by name {name} in namespace {}",
                bt::SECRET_NAMESPACE
            )
        })?;
    if object::is_terminating(&secret) {
        return Err(format!("secret {name} is being deleted"));
    }
    if secret.get("type").and_then(Value::as_str) != Some(bt::SECRET_TYPE) {
        return Err(format!("secret {name} is not of type {}", bt::SECRET_TYPE));
    }
    let stored = data(&secret, bt::KEY_SECRET).unwrap_or_default();
    if !constant_time_eq(stored.as_bytes(), token.secret.as_bytes()) {
        return Err(format!(
            "bootstrap token {} does not match its secret",
            token.id
        ));
    }
    if data(&secret, bt::KEY_ID).as_deref() != Some(token.id.as_str()) {
        return Err(format!("secret {name} holds another token id"));
    }
    if expired(
        data(&secret, bt::KEY_EXPIRATION).as_deref(),
        jiff::Timestamp::now(),
    ) {
        return Err(format!("bootstrap token {} has expired", token.id));
    }
    if data(&secret, bt::KEY_USAGE_AUTHENTICATION).as_deref() != Some("true") {
        return Err(format!(
            "bootstrap token {} is not usable for authentication",
            token.id
        ));
    }
    let mut groups = vec![bt::BOOTSTRAPPERS_GROUP.to_owned()];
    for g in data(&secret, bt::KEY_EXTRA_GROUPS)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|g| !g.is_empty())
    {
        if !valid_group(g) {
            return Err(format!(
                "bootstrap token {} has an invalid extra group {g:?}",
                token.id
            ));
        }
        groups.push(g.to_owned());
    }
    // kube's AuthenticatedGroupAdder puts every authenticated user in system:authenticated:
    // API Priority and Fairness and RBAC bindings of that group count bootstrap users too.
    Ok(super::authenticator::with_authenticated_group(UserInfo {
        name: token.user(),
        groups,
        ..Default::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_expiry() {
        assert!(valid_group(bt::KARMADA_TOKEN_GROUP));
        assert!(!valid_group("system:masters"));
        assert!(!valid_group("system:bootstrappers:"));
        assert!(!valid_group("system:bootstrappers:x-"));
        let now: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        assert!(!expired(None, now));
        assert!(!expired(Some("2026-01-02T00:00:00Z"), now));
        assert!(expired(Some("2025-12-31T00:00:00Z"), now));
        assert!(expired(Some("garbage"), now));
    }
}
