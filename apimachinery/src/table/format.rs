//! Go-compatible text formatting the printers rely on: `%q`, `%v` of floats, `json.Marshal`,
//! `labels.FormatLabels` and `metav1.FormatLabelSelector`.

use std::fmt::Write as _;

use serde_json::Value;

/// Quotes a string as Go's `strconv.Quote` (`%q`) does.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The shortest decimal digits of `|f|` and the position of the decimal point
/// (value = 0.DIGITS × 10^point), as Go's `strconv` computes them.
fn shortest_digits(f: f64) -> (String, i32) {
    // Rust's `{:e}` prints the shortest round-tripping digits, like Go's shortest mode.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let exp: i32 = exp.parse().unwrap_or(0);
    (digits, exp + 1)
}

fn fixed_notation(digits: &str, point: i32) -> String {
    let nd = digits.len() as i32;
    if point <= 0 {
        format!("0.{}{}", "0".repeat((-point) as usize), digits)
    } else if point >= nd {
        format!("{}{}", digits, "0".repeat((point - nd) as usize))
    } else {
        let (int, frac) = digits.split_at(point as usize);
        format!("{int}.{frac}")
    }
}

fn exponent_notation(digits: &str, point: i32, min_exp_digits: usize) -> String {
    let exp = point - 1;
    let (first, rest) = digits.split_at(1);
    let mut out = first.to_string();
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let _ = write!(
        out,
        "{:0width$}",
        exp.unsigned_abs(),
        width = min_exp_digits
    );
    out
}

fn non_finite(f: f64) -> Option<String> {
    if f.is_nan() {
        Some("NaN".into())
    } else if f.is_infinite() {
        Some(if f > 0.0 { "+Inf" } else { "-Inf" }.into())
    } else {
        None
    }
}

/// Formats a float as Go's `fmt.Print` (`%v`, i.e. `strconv.FormatFloat(f, 'g', -1, 64)`):
/// `1`, `0.5`, `123456`, `1.234567e+06`, `1e-05`.
pub fn go_float_v(f: f64) -> String {
    if let Some(s) = non_finite(f) {
        return s;
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (digits, point) = shortest_digits(f);
    let exp = point - 1;
    // strconv's 'g' with shortest precision switches to %e at exponent < -4 or >= 6... (eprec 6).
    let body = if !(-4..6).contains(&exp) {
        exponent_notation(&digits, point, 2)
    } else {
        fixed_notation(&digits, point)
    };
    format!("{sign}{body}")
}

/// Formats a float as Go's `encoding/json` does (`floatEncoder`): fixed notation between 1e-6
/// and 1e21, otherwise exponent notation with `e-7` rather than `e-07`.
pub fn go_json_float(f: f64) -> String {
    if let Some(s) = non_finite(f) {
        return s;
    }
    let sign = if f.is_sign_negative() { "-" } else { "" };
    if f == 0.0 {
        return format!("{sign}0");
    }
    let (digits, point) = shortest_digits(f);
    let abs = f.abs();
    let body = if !(1e-6..1e21).contains(&abs) {
        let s = exponent_notation(&digits, point, 2);
        let n = s.len();
        // floatEncoder cleans "e-09" up to "e-9".
        if n >= 4 && &s[n - 4..n - 1] == "e-0" {
            format!("{}{}", &s[..n - 2], &s[n - 1..])
        } else {
            s
        }
    } else {
        fixed_notation(&digits, point)
    };
    format!("{sign}{body}")
}

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
