//! String format checks with kube's exact messages (k8s.io/apimachinery/pkg/util/validation and
//! pkg/api/validation/path). Each returns the list of problems; empty means valid.

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_MSG: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";
const HTTP_HEADER_FMT: &str = "[-A-Za-z0-9]+";
const HTTP_HEADER_MSG: &str = "a valid HTTP header must consist of alphanumeric characters or '-'";

/// DNS-1123 label maximum length.
pub(crate) const DNS1123_LABEL_MAX: usize = 63;
/// DNS-1123 subdomain maximum length.
pub(crate) const DNS1123_SUBDOMAIN_MAX: usize = 253;

/// validation.MaxLenError.
pub(crate) fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} characters")
}

/// validation.RegexError.
pub(crate) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let ex: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        ex.join(" or ")
    )
}

/// validation.InclusiveRangeError.
pub(crate) fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

fn is_lower_alnum(c: char) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn matches_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
        && s.starts_with(is_lower_alnum)
        && s.ends_with(is_lower_alnum)
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(matches_dns1123_label)
}

/// True for a valid RFC 1123 label (at most 63 characters).
pub fn is_dns1123_label(s: &str) -> bool {
    dns1123_label(s).is_empty()
}

/// True for a valid RFC 1123 subdomain (at most 253 characters).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    dns1123_subdomain(s).is_empty()
}

/// validation.IsDNS1123Label.
pub(crate) fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !matches_dns1123_label(s) {
        if matches_dns1123_subdomain(s) {
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// validation.IsDNS1123Subdomain.
pub(crate) fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    if !matches_dns1123_subdomain(s) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// validation.IsDNS1035Label.
pub(crate) fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    let ok = !s.is_empty()
        && s.chars().all(|c| is_lower_alnum(c) || c == '-')
        && s.starts_with(|c: char| c.is_ascii_lowercase())
        && s.ends_with(is_lower_alnum);
    if !ok {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

fn matches_qualified_name_part(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// validation.IsQualifiedName: `[prefix/]name`.
pub(crate) fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                for m in dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > DNS1123_LABEL_MAX {
        errs.push(format!("name part {}", max_len_error(DNS1123_LABEL_MAX)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// validation.IsValidLabelValue.
pub(crate) fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_LABEL_MAX {
        errs.push(max_len_error(DNS1123_LABEL_MAX));
    }
    if !s.is_empty() && !matches_qualified_name_part(s) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// validation.IsConfigMapKey (also used for Secret keys).
pub(crate) fn config_map_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > DNS1123_SUBDOMAIN_MAX {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX));
    }
    let ok = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
    if !ok {
        errs.push(regex_error(
            CONFIG_MAP_KEY_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    if s == "." {
        errs.push("must not be '.'".to_string());
    } else if s == ".." {
        errs.push("must not be '..'".to_string());
    } else if s.starts_with("..") {
        errs.push("must not start with '..'".to_string());
    }
    errs
}

/// validation.IsValidPortName (IANA service names).
pub(crate) fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push(max_len_error(15));
    }
    if s.is_empty() || !s.chars().all(|c| is_lower_alnum(c) || c == '-') {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !s.chars().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// validation.IsValidPortNum.
pub(crate) fn port_num(p: i64) -> Vec<String> {
    if (1..=65535).contains(&p) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// validation.IsValidPercent.
pub(crate) fn percent(s: &str) -> Vec<String> {
    let ok =
        s.len() >= 2 && s.ends_with('%') && s[..s.len() - 1].bytes().all(|b| b.is_ascii_digit());
    if ok {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_MSG, PERCENT_FMT, &["1%", "93%"])]
    }
}

/// validation.IsHTTPHeaderName.
pub(crate) fn http_header_name(s: &str) -> Vec<String> {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        Vec::new()
    } else {
        vec![regex_error(
            HTTP_HEADER_MSG,
            HTTP_HEADER_FMT,
            &["X-Header-Name"],
        )]
    }
}

/// validation.IsRelaxedEnvVarName (RelaxedEnvironmentVariableValidation is on in 1.32).
pub(crate) fn relaxed_env_var_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.is_empty() {
        errs.push("environment variable name must be non-empty".to_string());
    }
    if s.chars().any(|c| !(' '..='~').contains(&c) || c == '=') {
        errs.push(
            "a valid environment variable name must consist only of printable ASCII characters other than '='"
                .to_string(),
        );
    }
    errs
}

/// path.IsValidPathSegmentName / IsValidPathSegmentPrefix.
pub(crate) fn path_segment_name(s: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        for bad in [".", ".."] {
            if s == bad {
                return vec![format!("may not be '{bad}'")];
            }
        }
    }
    ["/", "%"]
        .iter()
        .filter(|bad| s.contains(*bad))
        .map(|bad| format!("may not contain '{bad}'"))
        .collect()
}

/// Masks a trailing dash of a generateName prefix (apimachinery maskTrailingDash), so that
/// `web-` validates as a name. kube cuts the last two bytes and appends `a`: the dash and the
/// byte before it. When that byte is the end of a multi-byte character, kube's string keeps
/// the character's first bytes (invalid UTF-8 that no name pattern matches); here each kept
/// byte of the cut character becomes `_`, which no name pattern matches either, so the
/// verdicts and the length are kube's.
fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        let cut = s.len() - 2;
        let mut boundary = cut;
        while !s.is_char_boundary(boundary) {
            boundary -= 1;
        }
        let mut out = String::with_capacity(cut + 1);
        out.push_str(&s[..boundary]);
        out.extend(std::iter::repeat_n('_', cut - boundary));
        out.push('a');
        out
    } else {
        s.to_string()
    }
}

/// NameIsDNSSubdomain.
pub(crate) fn name_is_dns_subdomain(s: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1123_subdomain(&mask_trailing_dash(s))
    } else {
        dns1123_subdomain(s)
    }
}

/// NameIsDNSLabel.
pub(crate) fn name_is_dns_label(s: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1123_label(&mask_trailing_dash(s))
    } else {
        dns1123_label(s)
    }
}

/// NameIsDNS1035Label.
pub(crate) fn name_is_dns1035_label(s: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1035_label(&mask_trailing_dash(s))
    } else {
        dns1035_label(s)
    }
}

/// netutils.ParseIPSloppy: IPv4 (leading zeros allowed) or IPv6.
pub(crate) fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    if s.contains(':') {
        return s
            .parse::<std::net::Ipv6Addr>()
            .ok()
            .map(std::net::IpAddr::V6);
    }
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut octets = [0u8; 4];
    for (o, p) in octets.iter_mut().zip(parts) {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *o = p.parse::<u8>().ok()?;
    }
    Some(std::net::IpAddr::V4(std::net::Ipv4Addr::from(octets)))
}

/// netutils.ParseCIDRSloppy succeeds.
pub(crate) fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Some(addr) = parse_ip(ip) else {
        return false;
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        let cases: &[(&str, bool, bool, bool)] = &[
            // value, label, subdomain, 1035 label
            ("nginx", true, true, true),
            ("my-app-1", true, true, true),
            ("1abc", true, true, false),
            ("a.b", false, true, false),
            ("Bad_Name", false, false, false),
            ("-a", false, false, false),
            ("a-", false, false, false),
            ("", false, false, false),
        ];
        for (v, label, sub, l1035) in cases {
            assert_eq!(dns1123_label(v).is_empty(), *label, "label {v}");
            assert_eq!(dns1123_subdomain(v).is_empty(), *sub, "subdomain {v}");
            assert_eq!(dns1035_label(v).is_empty(), *l1035, "1035 {v}");
        }
        assert_eq!(dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            dns1123_subdomain("Bad_Name"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        assert_eq!(
            dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
    }

    #[test]
    fn qualified_names_and_values() {
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert!(qualified_name("app").is_empty());
        assert_eq!(
            qualified_name("/x"),
            vec!["prefix part must be non-empty".to_string()]
        );
        assert_eq!(
            qualified_name("a/b/c"),
            vec!["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".to_string()]
        );
        assert_eq!(qualified_name("bad key!").len(), 1);
        assert!(label_value("").is_empty());
        assert!(label_value("v1.2_3").is_empty());
        assert_eq!(label_value("-x").len(), 1);
    }

    #[test]
    fn misc_formats() {
        assert!(config_map_key("key.name").is_empty());
        assert_eq!(config_map_key("..a"), vec!["must not start with '..'"]);
        assert_eq!(config_map_key("a b").len(), 1);
        assert!(port_name("http").is_empty());
        assert_eq!(port_name("HTTP").len(), 2);
        assert_eq!(port_num(0), vec!["must be between 1 and 65535, inclusive"]);
        assert!(percent("25%").is_empty());
        assert_eq!(percent("25").len(), 1);
        assert_eq!(path_segment_name("..", false), vec!["may not be '..'"]);
        assert_eq!(
            path_segment_name("a/b%", false),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert!(parse_ip("010.0.0.1").is_some());
        assert!(parse_ip("::1").is_some());
        assert!(parse_ip("1.2.3").is_none());
        assert!(is_cidr("10.0.0.0/8"));
        assert!(!is_cidr("10.0.0.0/33"));
        assert!(relaxed_env_var_name("MY VAR").is_empty());
        assert_eq!(relaxed_env_var_name("A=B").len(), 1);
    }

    /// Any text, multi-byte characters included: an answer, never a panic; a name with a
    /// character that is not ASCII is never valid (prefix or not); a masked prefix is one byte
    /// shorter, as kube's.
    #[test]
    fn arbitrary_text_names() {
        use crate::arbitrary_text::{CASES, TextGen};
        let mut g = TextGen::new(0x0004_a3e5);
        for _ in 0..CASES {
            let s = g.text(&['-', '.', '_', 'a', '0', '/', '%'], 70);
            for prefix in [false, true] {
                let verdicts = [
                    name_is_dns_subdomain(&s, prefix),
                    name_is_dns_label(&s, prefix),
                    name_is_dns1035_label(&s, prefix),
                ];
                let _ = path_segment_name(&s, prefix);
                if !s.is_ascii() {
                    assert!(verdicts.iter().all(|v| !v.is_empty()), "{s:?} {prefix}");
                }
            }
            for check in [
                qualified_name,
                label_value,
                config_map_key,
                port_name,
                percent,
                http_header_name,
                relaxed_env_var_name,
            ] {
                let _ = check(&s);
            }
            let _ = (parse_ip(&s), is_cidr(&s));
            if s.len() > 1 && s.ends_with('-') {
                assert_eq!(mask_trailing_dash(&s).len(), s.len() - 1, "{s:?}");
            }
        }
    }

    /// `generateName: "é-"` used to panic: the cut fell inside the `é`.
    #[test]
    fn generate_name_prefixes_with_multi_byte_characters() {
        assert_eq!(mask_trailing_dash("web-"), "wea");
        assert_eq!(mask_trailing_dash("é-"), "_a");
        assert_eq!(mask_trailing_dash("a中-"), "a__a");
        assert_eq!(mask_trailing_dash("中a-"), "中a");
        for prefix in ["é-", "中-", "a😀-", "-é-"] {
            assert_eq!(name_is_dns_subdomain(prefix, true).len(), 1, "{prefix}");
            assert_eq!(name_is_dns_label(prefix, true).len(), 1, "{prefix}");
        }
        assert!(name_is_dns_subdomain("web-", true).is_empty());
    }
}
