//! Headers that belong to one connection and are never forwarded by a proxy.

/// Headers that describe one connection, not the message (RFC 9110 §7.6.1), plus the
/// obsolete ones Go's reverse proxy also drops (`hopHeaders` in net/http/httputil).
pub const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];
