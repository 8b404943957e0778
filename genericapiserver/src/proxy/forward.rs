//! Forwarding one request to a backend and streaming the answer back, as kube's
//! `UpgradeAwareHandler` (k8s.io/apimachinery/pkg/util/proxy/upgradeaware.go) does: bodies
//! stream both ways without being collected, hop-by-hop headers are dropped, the caller's
//! credentials are removed before the backend's are added, and upgrade requests (exec,
//! attach, port-forward over SPDY or WebSocket) become a byte tunnel after the backend's
//! `101 Switching Protocols`.

use axum::body::Body;
use axum::response::Response;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, StatusCode, Uri, Version};

use super::transport::HttpClient;
use crate::auth::UserInfo;
use crate::error::ApiError;

/// Impersonation headers a caller may send (`Impersonate-User`, `-Group`, `-Uid`,
/// `-Extra-*`).
const IMPERSONATE_PREFIX: &str = "impersonate-";
/// Front-proxy identity headers (`X-Remote-User`, `-Group`, `-Uid`, `-Extra-*`).
const REMOTE_PREFIX: &str = "x-remote-";

/// Groups never impersonated: every user gets them again on the member (Karmada's
/// `proxy.SkipGroup`).
pub fn skip_group(group: &str) -> bool {
    group == crate::auth::AUTHENTICATED_GROUP || group == "system:unauthenticated"
}

/// True when the request asks for a protocol upgrade (`Connection: Upgrade` + `Upgrade`).
pub fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

fn is_credential(name: &HeaderName) -> bool {
    let n = name.as_str();
    name == header::AUTHORIZATION
        || n.starts_with(IMPERSONATE_PREFIX)
        || n.starts_with(REMOTE_PREFIX)
}

/// Copies the end-to-end headers of a message: drops hop-by-hop headers, those named by
/// `Connection`, and (requests only) every caller credential.
pub fn end_to_end(headers: &HeaderMap, request: bool) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (k, v) in headers {
        let n = k.as_str();
        if netproxy::HOP_BY_HOP.contains(&n) || named.iter().any(|c| c == n) {
            continue;
        }
        if request && (k == header::HOST || is_credential(k)) {
            continue;
        }
        out.append(k.clone(), v.clone());
    }
    out
}

/// Sets `Impersonate-User` and one `Impersonate-Group` per group of `user` (Karmada's
/// `newProxyHandler`/`setRequestHeader`).
pub fn impersonate(headers: &mut HeaderMap, user: &UserInfo) -> Result<(), ApiError> {
    let v = HeaderValue::from_str(&user.name)
        .map_err(|_| ApiError::bad_request("the user name cannot be sent as a header"))?;
    headers.insert("impersonate-user", v);
    for g in user.groups.iter().filter(|g| !skip_group(g)) {
        let v = HeaderValue::from_str(g)
            .map_err(|_| ApiError::bad_request("a group name cannot be sent as a header"))?;
        headers.append("impersonate-group", v);
    }
    Ok(())
}

/// Sets the front-proxy identity headers kube-aggregator sends to an aggregated API server
/// (client-go `SetAuthProxyHeaders`): `X-Remote-User`, one `X-Remote-Group` per group, and
/// `X-Remote-Extra-<escaped key>` per extra value.
pub fn front_proxy(headers: &mut HeaderMap, user: &UserInfo) -> Result<(), ApiError> {
    let bad = || ApiError::bad_request("the caller's identity cannot be sent as headers");
    headers.insert(
        "x-remote-user",
        HeaderValue::from_str(&user.name).map_err(|_| bad())?,
    );
    for g in &user.groups {
        headers.append(
            "x-remote-group",
            HeaderValue::from_str(g).map_err(|_| bad())?,
        );
    }
    if !user.uid.is_empty() {
        headers.insert(
            "x-remote-uid",
            HeaderValue::from_str(&user.uid).map_err(|_| bad())?,
        );
    }
    for (k, values) in &user.extra {
        let name =
            HeaderName::from_bytes(format!("x-remote-extra-{}", escape_extra_key(k)).as_bytes())
                .map_err(|_| bad())?;
        for v in values {
            headers.append(name.clone(), HeaderValue::from_str(v).map_err(|_| bad())?);
        }
    }
    Ok(())
}

/// Escapes an extra key as client-go's `headerKeyEscape` does: everything but unreserved
/// characters (and `-`, `.`, `_`, `~`) percent-encoded.
pub fn escape_extra_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for b in key.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A request to forward.
pub struct Outbound {
    /// Method.
    pub method: Method,
    /// Absolute backend URI.
    pub uri: Uri,
    /// Headers to send (already rewritten, without hop-by-hop headers).
    pub headers: HeaderMap,
    /// The body, streamed.
    pub body: Body,
    /// The caller's pending upgrade, for upgrade requests.
    pub upgrade: Option<hyper::upgrade::OnUpgrade>,
    /// The `Upgrade` header of an upgrade request.
    pub upgrade_protocol: Option<HeaderValue>,
}

impl Outbound {
    /// Prepares a request from the caller's parts: end-to-end headers only, the pending
    /// upgrade taken out of the extensions.
    pub fn from_parts(parts: &mut http::request::Parts, uri: Uri, body: Body) -> Outbound {
        let upgrading = is_upgrade(&parts.headers);
        let upgrade = if upgrading {
            parts.extensions.remove::<hyper::upgrade::OnUpgrade>()
        } else {
            None
        };
        Outbound {
            method: parts.method.clone(),
            uri,
            headers: end_to_end(&parts.headers, true),
            body,
            upgrade_protocol: if upgrade.is_some() {
                parts.headers.get(header::UPGRADE).cloned()
            } else {
                None
            },
            upgrade,
        }
    }
}

/// Why a backend could not be reached.
#[derive(Debug, thiserror::Error)]
#[error("error trying to reach {what}: {source}")]
pub struct ForwardError {
    what: String,
    #[source]
    source: hyper_util::client::legacy::Error,
}

impl ForwardError {
    /// The full cause chain, for messages.
    pub fn message(&self) -> String {
        let mut msg = self.to_string();
        let mut src: Option<&(dyn std::error::Error + 'static)> =
            std::error::Error::source(&self.source);
        while let Some(s) = src {
            msg.push_str(": ");
            msg.push_str(&s.to_string());
            src = s.source();
        }
        msg
    }
}

/// Sends `out` with `client` and streams the answer back. `what` names the backend in
/// errors.
pub async fn forward(
    client: &HttpClient,
    out: Outbound,
    what: &str,
) -> Result<Response, ForwardError> {
    let mut req = http::Request::new(out.body);
    *req.method_mut() = out.method;
    *req.uri_mut() = out.uri;
    *req.version_mut() = Version::HTTP_11;
    *req.headers_mut() = out.headers;
    if let Some(p) = &out.upgrade_protocol {
        req.headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        req.headers_mut().insert(header::UPGRADE, p.clone());
    }
    let mut resp = client.request(req).await.map_err(|source| ForwardError {
        what: what.to_string(),
        source,
    })?;
    if resp.status() == StatusCode::SWITCHING_PROTOCOLS
        && let Some(caller) = out.upgrade
    {
        let backend = hyper::upgrade::on(&mut resp);
        let mut answer = Response::new(Body::empty());
        *answer.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        *answer.headers_mut() = end_to_end(resp.headers(), false);
        if let Some(p) = resp.headers().get(header::UPGRADE) {
            answer
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
            answer.headers_mut().insert(header::UPGRADE, p.clone());
        }
        tokio::spawn(netproxy::splice(caller, backend));
        return Ok(answer);
    }
    let (parts, body) = resp.into_parts();
    let mut answer = Response::new(Body::new(body));
    *answer.status_mut() = parts.status;
    *answer.headers_mut() = end_to_end(&parts.headers, false);
    Ok(answer)
}

/// A `text/plain` answer as Go's `http.Error` writes it (Karmada's `*` proxy reports its
/// errors so).
pub fn plain_error(status: StatusCode, message: &str) -> Response {
    let mut resp = Response::new(Body::from(format!("{message}\n")));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp.headers_mut().insert(
        HeaderName::from_static("x-content-type-options"),
        HeaderValue::from_static("nosniff"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn request_headers_lose_credentials_and_hop_by_hop() {
        let h = headers(&[
            ("Authorization", "Bearer caller"),
            ("Impersonate-User", "root"),
            ("Impersonate-Group", "system:masters"),
            ("Impersonate-Extra-Scopes", "x"),
            ("X-Remote-User", "root"),
            ("Connection", "keep-alive, X-Private"),
            ("X-Private", "1"),
            ("Keep-Alive", "timeout=5"),
            ("Transfer-Encoding", "chunked"),
            ("Host", "cp.example"),
            ("Accept", "application/json"),
            ("User-Agent", "kubectl"),
        ]);
        let out = end_to_end(&h, true);
        let mut names: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        names.sort();
        assert_eq!(names, vec!["accept", "user-agent"]);
        // Responses keep their credentials-looking headers but lose hop-by-hop ones.
        let resp = end_to_end(
            &headers(&[("Transfer-Encoding", "chunked"), ("Content-Type", "a/b")]),
            false,
        );
        assert_eq!(
            resp.keys().map(|k| k.as_str()).collect::<Vec<_>>(),
            vec!["content-type"]
        );
    }

    #[test]
    fn impersonation_headers() {
        let user = UserInfo::new("alice", vec!["dev".into(), "system:unauthenticated".into()]);
        let mut h = HeaderMap::new();
        impersonate(&mut h, &user).unwrap();
        assert_eq!(h["impersonate-user"], "alice");
        let groups: Vec<_> = h.get_all("impersonate-group").iter().collect();
        assert_eq!(groups, vec!["dev"]);
    }

    #[test]
    fn front_proxy_headers() {
        let mut user = UserInfo::new("bob", vec!["ops".into()]);
        user.extra.insert(
            "authentication.kubernetes.io/pod-name".into(),
            vec!["p1".into()],
        );
        user.extra
            .insert("Scopes Key".into(), vec!["a".into(), "b".into()]);
        let mut h = HeaderMap::new();
        front_proxy(&mut h, &user).unwrap();
        assert_eq!(h["x-remote-user"], "bob");
        let groups: Vec<_> = h.get_all("x-remote-group").iter().collect();
        assert_eq!(groups, vec!["ops", "system:authenticated"]);
        assert_eq!(
            h["x-remote-extra-authentication.kubernetes.io%2Fpod-name"],
            "p1"
        );
        let scopes: Vec<_> = h.get_all("x-remote-extra-scopes%20key").iter().collect();
        assert_eq!(scopes, vec!["a", "b"]);
    }

    #[test]
    fn upgrade_detection() {
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[("Connection", "Upgrade"), ("Upgrade", "SPDY/3.1")], true),
            (
                &[
                    ("Connection", "keep-alive, upgrade"),
                    ("Upgrade", "websocket"),
                ],
                true,
            ),
            (&[("Upgrade", "websocket")], false),
            (&[("Connection", "Upgrade")], false),
            (&[], false),
        ];
        for (h, want) in cases {
            assert_eq!(is_upgrade(&headers(h)), *want, "{h:?}");
        }
    }
}
