//! Impersonation (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go): `Impersonate-User`,
//! `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>` headers (kubectl's
//! `--as`, `--as-group`, `--as-uid`) switch the request's identity, once the real user has been
//! authorized for the `impersonate` verb on each of them.

use http::HeaderMap;

use super::attributes::Attributes;
use super::rbac::Authorizer;
use super::service_account::split_username;
use super::{
    ANONYMOUS_USER, AUTHENTICATED_GROUP, SERVICE_ACCOUNTS_GROUP, UNAUTHENTICATED_GROUP, UserInfo,
};
use crate::error::ApiError;

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// One thing to impersonate, checked separately.
enum Request {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// Decodes `%XX` escapes of an extra key (kube's `unescapeExtraKey`); a malformed escape
/// keeps the key as sent.
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let decoded = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match decoded {
                Some(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                None => return key.to_string(),
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_string())
}

/// Reads the impersonation requests in kube's order: user, groups, extras, uid.
fn requests(headers: &HeaderMap) -> Result<Vec<Request>, ApiError> {
    let mut out = Vec::new();
    let user = values(headers, USER_HEADER)
        .first()
        .map(|s| s.to_string())
        .filter(|s| !s.is_empty());
    if let Some(u) = &user {
        match split_username(u) {
            Some((ns, name)) => out.push(Request::ServiceAccount {
                namespace: ns.to_string(),
                name: name.to_string(),
            }),
            None => out.push(Request::User(u.clone())),
        }
    }
    let groups = values(headers, GROUP_HEADER);
    for g in &groups {
        out.push(Request::Group(g.to_string()));
    }
    let mut has_extra = false;
    for (name, value) in headers {
        let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) else {
            continue;
        };
        has_extra = true;
        if let Ok(v) = value.to_str() {
            out.push(Request::Extra {
                key: unescape(key).to_lowercase(),
                value: v.to_string(),
            });
        }
    }
    let uid = values(headers, UID_HEADER).first().map(|s| s.to_string());
    if let Some(uid) = &uid {
        out.push(Request::Uid(uid.clone()));
    }
    if user.is_none() && (!groups.is_empty() || has_extra || uid.is_some()) {
        return Err(ApiError::internal(
            "requested impersonation of groups, extras or a uid without impersonating a user",
        ));
    }
    Ok(out)
}

/// Applies the impersonation headers of a request made by `requestor`: `Ok(None)` when there
/// are none, the impersonated identity when every part is authorized, 403 otherwise.
pub fn impersonate(
    authz: &Authorizer,
    requestor: &UserInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    let reqs = requests(headers)?;
    if reqs.is_empty() {
        return Ok(None);
    }
    let groups_specified = reqs.iter().any(|r| matches!(r, Request::Group(_)));
    let mut user = UserInfo::default();
    for r in &reqs {
        let attrs = match r {
            Request::ServiceAccount { namespace, name } => {
                user.name = format!("{}{namespace}:{name}", super::SERVICE_ACCOUNT_PREFIX);
                if !groups_specified {
                    user.groups = vec![
                        SERVICE_ACCOUNTS_GROUP.to_string(),
                        format!("{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
                    ];
                }
                Attributes::resource(
                    requestor,
                    "impersonate",
                    "",
                    "serviceaccounts",
                    "",
                    namespace,
                    name,
                )
            }
            Request::User(name) => {
                user.name = name.clone();
                Attributes::resource(requestor, "impersonate", "", "users", "", "", name)
            }
            Request::Group(g) => {
                user.groups.push(g.clone());
                Attributes::resource(requestor, "impersonate", "", "groups", "", "", g)
            }
            Request::Extra { key, value } => {
                user.extra
                    .entry(key.clone())
                    .or_default()
                    .push(value.clone());
                Attributes::resource(
                    requestor,
                    "impersonate",
                    AUTHENTICATION_GROUP,
                    "userextras",
                    key,
                    "",
                    value,
                )
            }
            Request::Uid(uid) => {
                user.uid = uid.clone();
                Attributes::resource(
                    requestor,
                    "impersonate",
                    AUTHENTICATION_GROUP,
                    "uids",
                    "",
                    "",
                    uid,
                )
            }
        };
        let decision = authz.authorize(&attrs);
        if !decision.allowed {
            return Err(attrs.forbidden(&decision.reason));
        }
    }
    if user.name != ANONYMOUS_USER {
        if !user.in_group(AUTHENTICATED_GROUP) && !user.in_group(UNAUTHENTICATED_GROUP) {
            user.groups.push(AUTHENTICATED_GROUP.to_string());
        }
    } else if !user.in_group(UNAUTHENTICATED_GROUP) {
        user.groups.push(UNAUTHENTICATED_GROUP.to_string());
    }
    Ok(Some(user))
}

/// Removes the impersonation headers once applied (kube does, so they never reach a proxied
/// backend).
pub fn strip_headers(headers: &mut HeaderMap) {
    headers.remove(USER_HEADER);
    headers.remove(GROUP_HEADER);
    headers.remove(UID_HEADER);
    let extras: Vec<http::HeaderName> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
        .cloned()
        .collect();
    for k in extras {
        headers.remove(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::rbac::Index;
    use serde_json::json;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn authz() -> Authorizer {
        let a = Authorizer::new();
        a.set_index(Index::build(
            &[],
            &[json!({"metadata": {"name": "imp"}, "rules": [
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"]},
                {"verbs": ["impersonate"], "apiGroups": [""], "resources": ["groups", "serviceaccounts"]},
                {"verbs": ["impersonate"], "apiGroups": ["authentication.k8s.io"], "resources": ["userextras/scopes", "uids"]}
            ]})],
            &[],
            &[json!({"metadata": {"name": "imp"}, "roleRef": {"kind": "ClusterRole", "name": "imp"}, "subjects": [{"kind": "User", "name": "alice"}]})],
        ));
        a
    }

    #[test]
    fn impersonation_is_checked_per_part() {
        let a = authz();
        let alice = UserInfo::new("alice", vec![]);
        assert_eq!(impersonate(&a, &alice, &HeaderMap::new()).unwrap(), None);

        let u = impersonate(&a, &alice, &headers(&[("impersonate-user", "bob")]))
            .unwrap()
            .unwrap();
        assert_eq!(u.name, "bob");
        assert_eq!(u.groups, vec!["system:authenticated"]);

        let u = impersonate(
            &a,
            &alice,
            &headers(&[
                ("impersonate-user", "bob"),
                ("impersonate-group", "dev"),
                ("impersonate-group", "ops"),
                ("impersonate-extra-scopes", "view"),
                ("impersonate-uid", "1234"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(u.groups, vec!["dev", "ops", "system:authenticated"]);
        assert_eq!(u.extra["scopes"], vec!["view"]);
        assert_eq!(u.uid, "1234");

        let e = impersonate(&a, &alice, &headers(&[("impersonate-user", "carol")])).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            r#"users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        let e = impersonate(
            &a,
            &alice,
            &headers(&[
                ("impersonate-user", "bob"),
                ("impersonate-extra-other", "x"),
            ]),
        )
        .unwrap_err();
        assert!(e.message.contains(r#"cannot impersonate resource "userextras/other" in API group "authentication.k8s.io""#), "{}", e.message);

        let sa = impersonate(
            &a,
            &alice,
            &headers(&[("impersonate-user", "system:serviceaccount:ns1:robot")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            sa.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns1",
                "system:authenticated"
            ]
        );

        let anon = impersonate(
            &a,
            &UserInfo::new("root", vec!["system:masters".into()]),
            &headers(&[("impersonate-user", "system:anonymous")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(anon.groups, vec!["system:unauthenticated"]);

        let e = impersonate(&a, &alice, &headers(&[("impersonate-group", "dev")])).unwrap_err();
        assert_eq!(e.code, 500);
        let bob = UserInfo::new("bob", vec![]);
        assert_eq!(
            impersonate(&a, &bob, &headers(&[("impersonate-user", "bob")]))
                .unwrap_err()
                .code,
            403
        );
    }

    #[test]
    fn extra_keys_and_header_removal() {
        assert_eq!(unescape("example.com%2Fscopes"), "example.com/scopes");
        assert_eq!(unescape("plain"), "plain");
        assert_eq!(unescape("bad%zz"), "bad%zz");
        assert_eq!(unescape("trail%2"), "trail%2");
        let mut h = headers(&[
            ("impersonate-user", "bob"),
            ("impersonate-extra-a", "1"),
            ("accept", "json"),
        ]);
        strip_headers(&mut h);
        assert_eq!(h.len(), 1);
    }
}
