//! The parts of Go's `net/url.Parse` that Karmada's Cluster validation depends on, with Go's
//! error messages (so `apiEndpoint` and `proxyURL` are accepted and rejected alike).

use crate::field::go_quote;

/// The pieces of a parsed URL the validation looks at.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GoUrl {
    pub(crate) scheme: String,
    pub(crate) host: String,
    pub(crate) user: Option<String>,
    pub(crate) raw_query: String,
    pub(crate) fragment: String,
}

/// Parses like `url.Parse`; the error text is what Go's `*url.Error` prints.
pub(crate) fn parse(raw: &str) -> Result<GoUrl, String> {
    let (without_fragment, fragment) = match raw.split_once('#') {
        Some((u, f)) => (u, Some(f)),
        None => (raw, None),
    };
    let mut url = parse_without_fragment(without_fragment)
        .map_err(|e| format!("parse {}: {e}", go_quote(without_fragment)))?;
    if let Some(f) = fragment {
        url.fragment = unescape(f).map_err(|e| format!("parse {}: {e}", go_quote(raw)))?;
    }
    Ok(url)
}

fn parse_without_fragment(raw: &str) -> Result<GoUrl, String> {
    if raw.bytes().any(|b| b < 0x20 || b == 0x7f) {
        return Err("net/url: invalid control character in URL".to_owned());
    }
    let mut url = GoUrl::default();
    if raw == "*" {
        return Ok(url);
    }
    let (scheme, rest) = scheme_of(raw)?;
    url.scheme = scheme.to_ascii_lowercase();
    let rest = if rest.ends_with('?') && rest.matches('?').count() == 1 {
        &rest[..rest.len() - 1]
    } else {
        match rest.split_once('?') {
            Some((r, q)) => {
                url.raw_query = q.to_owned();
                r
            }
            None => rest,
        }
    };
    if !rest.starts_with('/') {
        if !url.scheme.is_empty() {
            // An opaque URL such as "host:6443" parsed as scheme "host": no host.
            return Ok(url);
        }
        let first_segment = rest.split('/').next().unwrap_or("");
        if first_segment.contains(':') {
            return Err("first path segment in URL cannot contain colon".to_owned());
        }
    }
    let mut path = rest;
    if (!url.scheme.is_empty() || !rest.starts_with("///")) && rest.starts_with("//") {
        let authority_and_path = &rest[2..];
        let (authority, p) = match authority_and_path.find('/') {
            Some(i) => authority_and_path.split_at(i),
            None => (authority_and_path, ""),
        };
        let (user, host) = parse_authority(authority)?;
        url.user = user;
        url.host = host;
        path = p;
    }
    unescape(path)?;
    Ok(url)
}

fn scheme_of(raw: &str) -> Result<(&str, &str), String> {
    for (i, c) in raw.bytes().enumerate() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {}
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                if i == 0 {
                    return Ok(("", raw));
                }
            }
            b':' => {
                if i == 0 {
                    return Err("missing protocol scheme".to_owned());
                }
                return Ok((&raw[..i], &raw[i + 1..]));
            }
            _ => return Ok(("", raw)),
        }
    }
    Ok(("", raw))
}

fn parse_authority(authority: &str) -> Result<(Option<String>, String), String> {
    let (user, host_part) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let host = parse_host(host_part)?;
    if let Some(user) = user
        && !user.bytes().all(valid_userinfo_byte)
    {
        return Err("net/url: invalid userinfo".to_owned());
    }
    Ok((user.map(str::to_owned), host))
}

fn valid_userinfo_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b':'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b'%'
                | b'@'
        )
}

fn parse_host(host: &str) -> Result<String, String> {
    let port_part = if host.starts_with('[') {
        let Some(close) = host.rfind(']') else {
            return Err("missing ']' in host".to_owned());
        };
        &host[close + 1..]
    } else {
        match host.rfind(':') {
            Some(i) => &host[i..],
            None => "",
        }
    };
    if !valid_optional_port(port_part) {
        return Err(format!("invalid port {} after host", go_quote(port_part)));
    }
    unescape(host)
}

fn valid_optional_port(port: &str) -> bool {
    match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => digits.bytes().all(|b| b.is_ascii_digit()),
    }
}

/// Percent-decodes, failing on a malformed escape as Go does.
fn unescape(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3);
            let decoded = hex.and_then(|h| std::str::from_utf8(h).ok()).and_then(|h| {
                if h.bytes().all(|b| b.is_ascii_hexdigit()) {
                    u8::from_str_radix(h, 16).ok()
                } else {
                    None
                }
            });
            match decoded {
                Some(b) => {
                    out.push(b);
                    i += 3;
                }
                None => {
                    let end = (i + 3).min(bytes.len());
                    let bad = String::from_utf8_lossy(&bytes[i..end]);
                    return Err(format!("invalid URL escape {}", go_quote(&bad)));
                }
            }
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_like_go() {
        let cases: Vec<(&str, Result<GoUrl, &str>)> = vec![
            (
                "https://10.0.0.1:6443",
                Ok(GoUrl {
                    scheme: "https".into(),
                    host: "10.0.0.1:6443".into(),
                    ..Default::default()
                }),
            ),
            (
                "HTTPS://u:p@h/path?q=1#f%20g",
                Ok(GoUrl {
                    scheme: "https".into(),
                    host: "h".into(),
                    user: Some("u:p".into()),
                    raw_query: "q=1".into(),
                    fragment: "f g".into(),
                }),
            ),
            (
                "https://[fd00::1]:6443",
                Ok(GoUrl {
                    scheme: "https".into(),
                    host: "[fd00::1]:6443".into(),
                    ..Default::default()
                }),
            ),
            ("host", Ok(GoUrl::default())),
            (
                "host:6443",
                Ok(GoUrl {
                    scheme: "host".into(),
                    ..Default::default()
                }),
            ),
            (
                "//host:1/x",
                Ok(GoUrl {
                    host: "host:1".into(),
                    ..Default::default()
                }),
            ),
            ("*", Ok(GoUrl::default())),
            (
                "1.2.3.4:6443",
                Err(r#"parse "1.2.3.4:6443": first path segment in URL cannot contain colon"#),
            ),
            (":6443", Err(r#"parse ":6443": missing protocol scheme"#)),
            (
                "https://h:x1",
                Err(r#"parse "https://h:x1": invalid port ":x1" after host"#),
            ),
            (
                "https://[::1",
                Err(r#"parse "https://[::1": missing ']' in host"#),
            ),
            (
                "https://h\n",
                Err(r#"parse "https://h\n": net/url: invalid control character in URL"#),
            ),
            (
                "https://h/%zz",
                Err(r#"parse "https://h/%zz": invalid URL escape "%zz""#),
            ),
            (
                "https://h/#%g",
                Err(r#"parse "https://h/#%g": invalid URL escape "%g""#),
            ),
            (
                "https://a b@h",
                Err(r#"parse "https://a b@h": net/url: invalid userinfo"#),
            ),
        ];
        for (raw, expected) in cases {
            assert_eq!(parse(raw), expected.map_err(str::to_owned), "{raw:?}");
        }
    }
}
