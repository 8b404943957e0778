//! kube's format library (pkg/cel/library/format.go): named formats of apimachinery's
//! validation (`format.dns1123Label()`, `format.named('dns1123Label')`, ...) and
//! `validate`, which is `optional.none()` for a valid value and the list of apimachinery's
//! messages otherwise. The `uri`, `uuid`, `byte`, `date` and `datetime` formats are not here.

use cel::common::types::{CelList, CelOptional, CelString, STRING_TYPE, Type};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::{arg, charge_len, opaque_val, str_arg};

pub static FORMAT_TYPE: Type = Type::new_unspecified_type("kubernetes.NamedFormat");

/// One of apimachinery's name formats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NamedFormat {
    Dns1123Label,
    Dns1123Subdomain,
    Dns1035Label,
    QualifiedName,
    Dns1123LabelPrefix,
    Dns1123SubdomainPrefix,
    Dns1035LabelPrefix,
    LabelValue,
}
opaque_val!(NamedFormat, &FORMAT_TYPE);

const NAMES: &[(&str, NamedFormat)] = &[
    ("dns1123Label", NamedFormat::Dns1123Label),
    ("dns1123Subdomain", NamedFormat::Dns1123Subdomain),
    ("dns1035Label", NamedFormat::Dns1035Label),
    ("qualifiedName", NamedFormat::QualifiedName),
    ("dns1123LabelPrefix", NamedFormat::Dns1123LabelPrefix),
    (
        "dns1123SubdomainPrefix",
        NamedFormat::Dns1123SubdomainPrefix,
    ),
    ("dns1035LabelPrefix", NamedFormat::Dns1035LabelPrefix),
    ("labelValue", NamedFormat::LabelValue),
];

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_overload("format.named", "format_named", vec![STRING_TYPE], named)?;
    env.add_overload(
        "format.dns1123Label",
        "format_dns1123_label",
        vec![],
        |_| Ok(CowVal::owned(NamedFormat::Dns1123Label)),
    )?;
    env.add_overload(
        "format.dns1123Subdomain",
        "format_dns1123_subdomain",
        vec![],
        |_| Ok(CowVal::owned(NamedFormat::Dns1123Subdomain)),
    )?;
    env.add_overload(
        "format.dns1035Label",
        "format_dns1035_label",
        vec![],
        |_| Ok(CowVal::owned(NamedFormat::Dns1035Label)),
    )?;
    env.add_overload(
        "format.qualifiedName",
        "format_qualified_name",
        vec![],
        |_| Ok(CowVal::owned(NamedFormat::QualifiedName)),
    )?;
    env.add_overload(
        "format.dns1123LabelPrefix",
        "format_dns1123_label_prefix",
        vec![],
        |_| Ok(CowVal::owned(NamedFormat::Dns1123LabelPrefix)),
    )?;
    env.add_overload(
        "format.dns1123SubdomainPrefix",
        "format_dns1123_subdomain_prefix",
        vec![],
        |_| Ok(CowVal::owned(NamedFormat::Dns1123SubdomainPrefix)),
    )?;
    env.add_overload(
        "format.dns1035LabelPrefix",
        "format_dns1035_label_prefix",
        vec![],
        |_| Ok(CowVal::owned(NamedFormat::Dns1035LabelPrefix)),
    )?;
    env.add_overload("format.labelValue", "format_label_value", vec![], |_| {
        Ok(CowVal::owned(NamedFormat::LabelValue))
    })?;
    env.add_member_overload(
        "validate",
        "format_validate",
        FORMAT_TYPE.to_owned(),
        vec![STRING_TYPE],
        validate,
    )?;
    Ok(())
}

fn named<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let name = str_arg(&args, 0, "format.named")?;
    let found = NAMES.iter().find(|(n, _)| *n == name).map(|(_, f)| *f);
    Ok(CowVal::owned(match found {
        Some(f) => CelOptional::of(Box::new(f)),
        None => CelOptional::none(),
    }))
}

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// apimachinery's `RegexError`: the message, examples and the pattern.
fn regex_error(msg: &str, pattern: &str, examples: &[&str]) -> String {
    let mut out = msg.to_owned();
    if !examples.is_empty() {
        out.push_str(" (e.g. '");
        out.push_str(&examples.join("',  or '"));
        out.push_str("', ");
    } else {
        out.push_str(" (");
    }
    out.push_str(&format!("regex used for validation is '{pattern}')"));
    out
}

fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

fn is_dns1035_label(s: &str) -> bool {
    is_dns1123_label(s) && s.as_bytes()[0].is_ascii_lowercase()
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(is_dns1123_label)
}

fn is_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || b"-_.".contains(c))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

const DNS1123_LABEL_RE: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_SUBDOMAIN_RE: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1035_LABEL_RE: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";

fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !is_dns1123_label(s) {
        errs.push(regex_error(
            DNS1123_LABEL_MSG,
            DNS1123_LABEL_RE,
            &["my-name", "123-abc"],
        ));
    }
    errs
}

fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !is_dns1123_subdomain(s) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_MSG,
            DNS1123_SUBDOMAIN_RE,
            &["example.com"],
        ));
    }
    errs
}

fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !is_dns1035_label(s) {
        errs.push(regex_error(
            DNS1035_LABEL_MSG,
            DNS1035_LABEL_RE,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !s.is_empty() && !is_name_part(s) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?",
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// apimachinery's `IsQualifiedName`.
fn qualified_name(s: &str) -> Vec<String> {
    let parts: Vec<&str> = s.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![
                regex_error(
                    &format!("a qualified name {QUALIFIED_NAME_MSG}"),
                    "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]",
                    &["MyName", "my.name", "123-abc"],
                ) + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
            ];
        }
    };
    let mut errs = Vec::new();
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            errs.push("prefix part must be non-empty".to_owned());
        } else {
            errs.extend(
                dns1123_subdomain(prefix)
                    .into_iter()
                    .map(|e| format!("prefix part {e}")),
            );
        }
    }
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(63)));
    }
    if !name.is_empty() && !is_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_MSG,
                "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]",
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// A prefix (for generateName) is valid when it is valid with a character appended.
fn prefixed(s: &str, f: fn(&str) -> Vec<String>) -> Vec<String> {
    let s = if s.ends_with('-') {
        format!("{s}a")
    } else {
        s.to_owned()
    };
    f(&s)
}

impl NamedFormat {
    fn validate(self, s: &str) -> Vec<String> {
        match self {
            NamedFormat::Dns1123Label => dns1123_label(s),
            NamedFormat::Dns1123Subdomain => dns1123_subdomain(s),
            NamedFormat::Dns1035Label => dns1035_label(s),
            NamedFormat::QualifiedName => qualified_name(s),
            NamedFormat::Dns1123LabelPrefix => prefixed(s, dns1123_label),
            NamedFormat::Dns1123SubdomainPrefix => prefixed(s, dns1123_subdomain),
            NamedFormat::Dns1035LabelPrefix => prefixed(s, dns1035_label),
            NamedFormat::LabelValue => label_value(s),
        }
    }
}

fn validate<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let f = *arg::<NamedFormat>(&args, 0, "validate")?;
    let s = str_arg(&args, 1, "validate")?;
    charge_len(s.len())?;
    let errs = f.validate(s);
    Ok(CowVal::owned(if errs.is_empty() {
        CelOptional::none()
    } else {
        let list: Vec<Box<dyn Val + 'v>> = errs
            .into_iter()
            .map(|e| Box::new(CelString::from(e)) as Box<dyn Val + 'v>)
            .collect();
        CelOptional::of(Box::new(CelList::from(list)))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_validate_as_apimachinery() {
        assert!(NamedFormat::Dns1123Label.validate("my-name").is_empty());
        assert_eq!(
            NamedFormat::Dns1123Label.validate("My_Name"),
            vec![format!(
                "{DNS1123_LABEL_MSG} (e.g. 'my-name',  or '123-abc', regex used for validation is '{DNS1123_LABEL_RE}')"
            )]
        );
        assert_eq!(
            NamedFormat::Dns1123Label.validate(&"a".repeat(64))[0],
            "must be no more than 63 characters"
        );
        assert!(
            NamedFormat::Dns1123Subdomain
                .validate("example.com")
                .is_empty()
        );
        assert!(!NamedFormat::Dns1035Label.validate("1abc").is_empty());
        assert!(
            NamedFormat::QualifiedName
                .validate("example.com/MyName")
                .is_empty()
        );
        assert!(!NamedFormat::QualifiedName.validate("a/b/c").is_empty());
        assert!(NamedFormat::LabelValue.validate("").is_empty());
        assert!(NamedFormat::Dns1123LabelPrefix.validate("web-").is_empty());
    }
}
