//! kube's URL library (pkg/cel/library/urls.go): `url`, `isURL` and the accessors, with Go's
//! `url.Parse` reading of the string; kube accepts only absolute URIs and absolute paths.

use std::collections::BTreeMap;

use cel::common::types::{CelBool, CelList, CelMap, CelMapKey, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::{arg, charge_len, err, opaque_val, str_arg, string_val};

pub static URL_TYPE: Type = Type::new_unspecified_type("net.URL");

/// A parsed URL.
#[derive(Clone, Debug, PartialEq)]
pub struct Url {
    scheme: String,
    host: String,
    path: String,
    raw_query: String,
}
opaque_val!(Url, &URL_TYPE);

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    env.add_member_overload(
        "getScheme",
        "url_get_scheme",
        URL_TYPE.to_owned(),
        vec![],
        get_scheme,
    )?;
    env.add_member_overload(
        "getHost",
        "url_get_host",
        URL_TYPE.to_owned(),
        vec![],
        get_host,
    )?;
    env.add_member_overload(
        "getHostname",
        "url_get_hostname",
        URL_TYPE.to_owned(),
        vec![],
        get_hostname,
    )?;
    env.add_member_overload(
        "getPort",
        "url_get_port",
        URL_TYPE.to_owned(),
        vec![],
        get_port,
    )?;
    env.add_member_overload(
        "getEscapedPath",
        "url_get_escaped_path",
        URL_TYPE.to_owned(),
        vec![],
        get_escaped_path,
    )?;
    env.add_member_overload(
        "getQuery",
        "url_get_query",
        URL_TYPE.to_owned(),
        vec![],
        get_query,
    )?;
    Ok(())
}

/// Go's `url.Parse`, restricted as kube's `url()` is: an absolute URI or an absolute path.
pub fn parse(s: &str) -> Result<Url, String> {
    let bad = || {
        format!(
            "URL parse error during conversion from string: parse \"{s}\": invalid URI for request"
        )
    };
    if s.chars().any(|c| c.is_control() || c == ' ') {
        return Err(format!(
            "URL parse error during conversion from string: parse \"{s}\": invalid character in URL"
        ));
    }
    let rest = s.split('#').next().unwrap_or_default();
    let (rest, raw_query) = match rest.split_once('?') {
        Some((r, q)) => (r, q.to_owned()),
        None => (rest, String::new()),
    };
    let scheme_end = rest.find(':').filter(|i| {
        let scheme = &rest[..*i];
        !scheme.is_empty()
            && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    let (scheme, rest) = match scheme_end {
        Some(i) => (rest[..i].to_ascii_lowercase(), &rest[i + 1..]),
        None if rest.starts_with('/') => (String::new(), rest),
        None => return Err(bad()),
    };
    let (host, path) = match rest.strip_prefix("//") {
        Some(authority) => {
            let end = authority.find('/').unwrap_or(authority.len());
            let host = &authority[..end];
            let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
            (host.to_owned(), authority[end..].to_owned())
        }
        None if scheme.is_empty() || rest.starts_with('/') => (String::new(), rest.to_owned()),
        // An opaque URI (`mailto:x`) has no host nor path kube reads.
        None => (String::new(), String::new()),
    };
    if host.starts_with('[') && !host.contains(']') {
        return Err(format!(
            "URL parse error during conversion from string: parse \"{s}\": missing ']' in host"
        ));
    }
    Ok(Url {
        scheme,
        host,
        path,
        raw_query,
    })
}

impl Url {
    fn split_host(&self) -> (&str, &str) {
        let h = self.host.as_str();
        if let Some(rest) = h.strip_prefix('[') {
            let (ip, after) = rest.split_once(']').unwrap_or((rest, ""));
            return (ip, after.strip_prefix(':').unwrap_or(""));
        }
        match h.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => (name, port),
            _ => (h, ""),
        }
    }
}

fn url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "url")?;
    charge_len(s.len())?;
    parse(s).map(CowVal::owned).map_err(err)
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let s = str_arg(&args, 0, "isURL")?;
    charge_len(s.len())?;
    Ok(CowVal::owned(CelBool::from(parse(s).is_ok())))
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(
        arg::<Url>(&args, 0, "getScheme")?.scheme.clone(),
    ))
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(arg::<Url>(&args, 0, "getHost")?.host.clone()))
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(
        arg::<Url>(&args, 0, "getHostname")?
            .split_host()
            .0
            .to_owned(),
    ))
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(
        arg::<Url>(&args, 0, "getPort")?.split_host().1.to_owned(),
    ))
}

fn get_escaped_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(string_val(
        arg::<Url>(&args, 0, "getEscapedPath")?.path.clone(),
    ))
}

/// `%XX` and `+` decoded, as Go's `url.QueryUnescape`.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                Ok(v) => {
                    out.push(v);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let u = arg::<Url>(&args, 0, "getQuery")?;
    let mut query: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pair in u.raw_query.split(['&', ';']).filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        query.entry(unescape(k)).or_default().push(unescape(v));
    }
    let map: std::collections::HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = query
        .into_iter()
        .map(|(k, vs)| {
            let list: Vec<Box<dyn Val + 'v>> = vs
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val + 'v>)
                .collect();
            (
                CelMapKey::from(k),
                Box::new(CelList::from(list)) as Box<dyn Val + 'v>,
            )
        })
        .collect();
    Ok(CowVal::owned(CelMap::from(map)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_go() {
        let u = parse("https://user@example.com:8080/a%20b/c?x=1&x=2&y=z%21#frag").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8080");
        assert_eq!(u.split_host(), ("example.com", "8080"));
        assert_eq!(u.path, "/a%20b/c");
        let v6 = parse("https://[::1]:80/").unwrap();
        assert_eq!(v6.split_host(), ("::1", "80"));
        assert!(parse("/absolute/path").is_ok());
        assert!(parse("relative/path").is_err());
        assert!(parse("https://[::1/").is_err());
        assert_eq!(unescape("a%21+b"), "a! b");
    }
}
