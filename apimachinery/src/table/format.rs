//! Go-compatible text formatting the printers rely on: `%q`, `%v` of floats, `json.Marshal`,
//! `labels.FormatLabels` and `metav1.FormatLabelSelector`.

use serde_json::Value;

pub use crate::gofloat::go_float_v;
pub use crate::strconv::go_quote;

/// Serializes an unstructured value as Go's `json.Marshal` would (sorted keys, HTML escaping,
/// Go float formatting).
pub fn go_json(value: &Value) -> String {
    let mut out = Vec::new();
    // Writing a Value into memory cannot fail.
    let _ = crate::serializer::json::write(&mut out, value);
    String::from_utf8(out).unwrap_or_default()
}

/// `labels.FormatLabels`: `k=v` pairs sorted as strings and joined by `,`; `<none>` when empty.
pub fn format_labels(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.sort();
    pairs.join(",")
}

/// Why a label selector could not be turned into a selector string.
#[derive(Debug, PartialEq, Eq)]
pub struct InvalidSelector;

/// `metav1.LabelSelectorAsSelector(...).String()`: requirements sorted by key, values of
/// `in`/`notin` sorted; the empty string for a nil or empty selector.
pub fn label_selector_string(selector: Option<&Value>) -> Result<String, InvalidSelector> {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return Ok(String::new());
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().unwrap_or_default();
            validate_requirement(key, &[value])?;
            reqs.push((key.clone(), format!("{key}={value}")));
        }
    }
    for expr in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
    {
        let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
        let mut values: Vec<&str> = expr
            .get("values")
            .and_then(Value::as_array)
            .map(|vs| vs.iter().map(|v| v.as_str().unwrap_or_default()).collect())
            .unwrap_or_default();
        validate_requirement(key, &values)?;
        values.sort_unstable();
        let text = match expr
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" if !values.is_empty() => format!("{key} in ({})", values.join(",")),
            "NotIn" if !values.is_empty() => format!("{key} notin ({})", values.join(",")),
            "Exists" if values.is_empty() => key.to_string(),
            "DoesNotExist" if values.is_empty() => format!("!{key}"),
            _ => return Err(InvalidSelector),
        };
        reqs.push((key.to_string(), text));
    }
    // labels.internalSelector.Add sorts requirements by key.
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(reqs
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(","))
}

/// `metav1.FormatLabelSelector`: the selector string, `<none>` when empty, `<error>` when invalid.
pub fn format_label_selector(selector: Option<&Value>) -> String {
    match label_selector_string(selector) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(InvalidSelector) => "<error>".to_string(),
    }
}

/// `labels.NewRequirement`'s key and value validation.
fn validate_requirement(key: &str, values: &[&str]) -> Result<(), InvalidSelector> {
    if !is_qualified_name(key) || !values.iter().all(|v| is_label_value(v)) {
        return Err(InvalidSelector);
    }
    Ok(())
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, at most 63 characters.
fn is_label_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && is_alnum(b[0])
        && is_alnum(b[b.len() - 1])
        && b.iter()
            .all(|c| is_alnum(*c) || matches!(c, b'-' | b'_' | b'.'))
}

/// A label value is empty or a valid name part.
fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_label_name_part(s)
}

/// A DNS-1123 subdomain: dot-separated lowercase labels, at most 253 characters.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && !s.is_empty()
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
                && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        })
}

/// `validation.IsQualifiedName`: `[prefix/]name`.
pub fn is_qualified_name(s: &str) -> bool {
    let parts: Vec<&str> = s.split('/').collect();
    match parts.as_slice() {
        [name] => is_label_name_part(name),
        [prefix, name] => is_dns1123_subdomain(prefix) && is_label_name_part(name),
        _ => false,
    }
}

/// `intstr.IntOrString.String()`.
pub fn int_or_string(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n
            .as_i64()
            .map(|i| i.to_string())
            .unwrap_or_else(|| n.to_string()),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests;
