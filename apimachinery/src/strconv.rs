//! Go's `strconv.Quote` (`%q`): how Kubernetes prints a string value in messages (field
//! errors, printer errors).

use std::fmt::Write as _;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        let cases = [
            ("foo", r#""foo""#),
            ("", r#""""#),
            (r#"a"b\c"#, r#""a\"b\\c""#),
            ("tab\there\nnl", r#""tab\there\nnl""#),
            ("\u{1}\u{7f}", r#""\x01\x7f""#),
            ("héllo", "\"héllo\""),
            ("\u{2028}", r#""\u2028""#),
        ];
        for (input, want) in cases {
            assert_eq!(go_quote(input), want, "go_quote({input:?})");
        }
    }
}
