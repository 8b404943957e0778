//! String formats kube's CRD validation checks (kube-openapi's strfmt registry, restricted
//! to apiextensions' supported list). `isbn*` and `creditcard` are checked by shape only.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use base64::Engine;
use regex::Regex;

fn re(cell: &'static OnceLock<Option<Regex>>, pattern: &str) -> Option<&'static Regex> {
    cell.get_or_init(|| Regex::new(pattern).ok()).as_ref()
}

fn matches(cell: &'static OnceLock<Option<Regex>>, pattern: &str, s: &str) -> bool {
    re(cell, pattern).is_some_and(|r| r.is_match(s))
}

/// Whether `s` is a valid value of `format` (names compare without `-`, as go-openapi does).
/// Unknown formats accept everything.
pub fn valid(format: &str, s: &str) -> bool {
    static UUID: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID3: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID4: OnceLock<Option<Regex>> = OnceLock::new();
    static UUID5: OnceLock<Option<Regex>> = OnceLock::new();
    static HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();
    static EMAIL: OnceLock<Option<Regex>> = OnceLock::new();
    static HEXCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
    static RGBCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
    static SSN: OnceLock<Option<Regex>> = OnceLock::new();
    static BSON: OnceLock<Option<Regex>> = OnceLock::new();
    static MAC: OnceLock<Option<Regex>> = OnceLock::new();
    static DURATION: OnceLock<Option<Regex>> = OnceLock::new();
    static ISBN10: OnceLock<Option<Regex>> = OnceLock::new();
    static ISBN13: OnceLock<Option<Regex>> = OnceLock::new();
    static CREDITCARD: OnceLock<Option<Regex>> = OnceLock::new();
    match format.replace('-', "").as_str() {
        "datetime" => date_time(s),
        "date" => date(s),
        "byte" => base64::engine::general_purpose::STANDARD.decode(s).is_ok(),
        "password" => true,
        "uuid" => matches(
            &UUID,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            s,
        ),
        "uuid3" => matches(
            &UUID3,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$",
            s,
        ),
        "uuid4" => matches(
            &UUID4,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
            s,
        ),
        "uuid5" => matches(
            &UUID5,
            r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$",
            s,
        ),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "cidr" => cidr(s),
        "mac" => matches(
            &MAC,
            r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}$",
            s,
        ),
        "hostname" => {
            s.len() <= 255
                && matches(
                    &HOSTNAME,
                    r"^([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9])(\.([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9\-]{0,61}[a-zA-Z0-9]))*\.?$",
                    s,
                )
        }
        "email" => matches(&EMAIL, r"^[^@\s]+@[^@\s]+$", s),
        "uri" => uri(s),
        "hexcolor" => matches(&HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s),
        "rgbcolor" => matches(
            &RGBCOLOR,
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
            s,
        ),
        "ssn" => matches(&SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", s),
        "bsonobjectid" => matches(&BSON, r"^[0-9a-fA-F]{24}$", s),
        "duration" => matches(
            &DURATION,
            r"^(([-+]?(\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|0|[-+]?\d+\s*(ns|us|ms|s|m|h|d|w|nanos?|nanoseconds?|micros?|microseconds?|millis?|milliseconds?|seconds?|minutes?|hours?|days?|weeks?))$",
            s,
        ),
        "isbn10" => matches(
            &ISBN10,
            r"^(?:[0-9]{9}X|[0-9]{10})$",
            &s.replace(['-', ' '], ""),
        ),
        "isbn13" => matches(&ISBN13, r"^[0-9]{13}$", &s.replace(['-', ' '], "")),
        "isbn" => valid("isbn10", s) || valid("isbn13", s),
        "creditcard" => matches(
            &CREDITCARD,
            r"^[0-9]{12,19}$",
            &s.replace(|c: char| !c.is_ascii_digit(), ""),
        ),
        _ => true,
    }
}

fn date(s: &str) -> bool {
    s.len() == 10 && jiff::civil::Date::strptime("%Y-%m-%d", s).is_ok()
}

/// strfmt.ParseDateTime: RFC 3339 with or without fractional seconds and zone (or a
/// space instead of `T`).
fn date_time(s: &str) -> bool {
    static RFC3339: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = re(
        &RFC3339,
        r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$",
    ) else {
        return false;
    };
    let Some(c) = re.captures(s) else {
        return false;
    };
    let num = |i: usize| {
        c.get(i)
            .and_then(|m| m.as_str().parse::<i16>().ok())
            .unwrap_or(-1)
    };
    jiff::civil::Date::new(num(1), num(2) as i8, num(3) as i8).is_ok()
        && (0..24).contains(&num(4))
        && (0..60).contains(&num(5))
        && (0..61).contains(&num(6))
}

fn cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Go's url.ParseRequestURI: an absolute URI with a scheme or an absolute path.
fn uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => {
            !scheme.is_empty()
                && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_table() {
        let cases = [
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123+02:00", true),
            ("date-time", "2024-13-02T03:04:05Z", false),
            ("date-time", "yesterday", false),
            ("date", "2024-02-29", true),
            ("date", "2023-02-29", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "xyz", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0.256", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("hostname", "example.com", true),
            ("hostname", "-bad", false),
            ("email", "a@b.c", true),
            ("email", "nope", false),
            ("uri", "https://example.com/x", true),
            ("uri", "/abs/path", true),
            ("uri", "relative", false),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("password", "anything", true),
            ("int32", "whatever", true),
        ];
        for (f, s, ok) in cases {
            assert_eq!(valid(f, s), ok, "{f} {s}");
        }
    }
}
