//! Kubernetes' name, label and annotation rules (k8s.io/apimachinery util/validation and
//! api/validate/content), with their exact messages.

use std::collections::BTreeMap;

use crate::field::FieldError;

/// Longest DNS-1123 label.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest label value, and longest name part of a qualified name.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// Total size limit of an object's annotations (keys plus values), in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Appends the example list and regex the way `RegexError` does.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let examples: Vec<String> = examples.iter().map(|e| format!("'{e}', ")).collect();
    format!(
        "{msg} (e.g. {}regex used for validation is '{fmt}')",
        examples.join(" or ")
    )
}

fn is_label_shape(
    s: &str,
    allowed_middle: impl Fn(u8) -> bool,
    allowed_ends: impl Fn(u8) -> bool,
) -> bool {
    let b = s.as_bytes();
    match b {
        [] => false,
        [only] => allowed_ends(*only),
        [first, middle @ .., last] => {
            allowed_ends(*first) && allowed_ends(*last) && middle.iter().all(|c| allowed_middle(*c))
        }
    }
}

fn lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

fn matches_dns1123_label(s: &str) -> bool {
    is_label_shape(s, |c| lower_alnum(c) || c == b'-', lower_alnum)
}

fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

fn matches_qualified_name_part(s: &str) -> bool {
    is_label_shape(
        s,
        |c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'),
        |c| c.is_ascii_alphanumeric(),
    )
}

/// Checks a DNS-1123 label (e.g. a namespace or cluster name); returns the problems found.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";

/// Checks a DNS-1035 label (`validation.IsDNS1035Label`); returns the problems found.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_LABEL_MAX_LENGTH} characters"
        ));
    }
    let shaped = is_label_shape(value, |c| lower_alnum(c) || c == b'-', lower_alnum);
    if !shaped || !value.as_bytes()[0].is_ascii_lowercase() {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Checks a DNS-1123 subdomain (the rule for most object names); returns the problems found.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} characters"
        ));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// Checks a qualified name such as a label key (`[prefix/]name`); returns the problems found.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = value.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_owned());
            } else {
                // The prefix is checked with the content package's subdomain rule, whose
                // length message counts bytes.
                if prefix.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
                    errs.push(format!(
                        "prefix part must be no more than {DNS1123_SUBDOMAIN_MAX_LENGTH} bytes"
                    ));
                }
                if !matches_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_ERR,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!(
            "name part must be no more than {LABEL_VALUE_MAX_LENGTH} bytes"
        ));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Checks a label value; returns the problems found.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!(
            "must be no more than {LABEL_VALUE_MAX_LENGTH} bytes"
        ));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Field errors for a label key (ValidateLabelName).
pub fn validate_label_name(key: &str, field: &str) -> Vec<FieldError> {
    is_qualified_name(key)
        .into_iter()
        .map(|msg| FieldError::invalid(field, key, msg))
        .collect()
}

/// Field errors for a label map (ValidateLabels): every key and value.
pub fn validate_labels(labels: &BTreeMap<String, String>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, value) in labels {
        errs.extend(validate_label_name(key, field));
        for msg in is_valid_label_value(value) {
            errs.push(FieldError::invalid(field, value.as_str(), msg));
        }
    }
    errs
}

/// Field errors for an annotation map (ValidateAnnotations): keys are qualified names in any
/// case, and keys plus values may total at most 256 KiB.
pub fn validate_annotations(
    annotations: &BTreeMap<String, String>,
    field: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (key, value) in annotations {
        for msg in is_qualified_name(&key.to_lowercase()) {
            errs.push(FieldError::invalid(field, key.as_str(), msg));
        }
        total += key.len() + value.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// Longest cluster name: the execution namespace `karmada-es-<name>` must stay a valid label.
pub const CLUSTER_NAME_MAX_LENGTH: usize = 48;

/// Karmada's rule for Cluster names (ValidateClusterName): a DNS-1123 label of at most 48
/// characters.
pub fn validate_cluster_name(name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec!["must be not empty".to_owned()];
    }
    if name.len() > CLUSTER_NAME_MAX_LENGTH {
        return vec![format!(
            "must be no more than {CLUSTER_NAME_MAX_LENGTH} characters"
        )];
    }
    is_dns1123_label(name)
}
