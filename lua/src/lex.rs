//! A lexer of Lua 5.1 source, as far as the analyses of scripts need one: names, symbols,
//! string and number literals, with comments and whitespace skipped.

use std::ops::Range;

/// One token of Lua 5.1 source, as far as the analyses need to tell them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    /// A name or a keyword.
    Name(&'a str),
    /// An operator or punctuation, longest match (`...`, `..`, `.`, `==`, `~=`, ...).
    Symbol(&'a str),
    /// A string literal (short or long).
    Str,
    /// A numeral.
    Number,
}

/// The tokens of `source`, or None where the source does not lex (a script that does not
/// compile gets no analysis; it fails before anything depends on one).
pub(crate) fn tokens(source: &str) -> Option<Vec<Token<'_>>> {
    Some(lex(source)?.into_iter().map(|(t, _)| t).collect())
}

/// The tokens of `source` with the byte range each covers.
pub(crate) fn lex(source: &str) -> Option<Vec<(Token<'_>, Range<usize>)>> {
    let b = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\r' | b'\n' | 0x0b | 0x0c => i += 1,
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i += 2;
                if let Some(end) = long_bracket(b, i) {
                    i = end;
                } else {
                    while i < b.len() && b[i] != b'\n' {
                        i += 1;
                    }
                }
            }
            b'[' if matches!(b.get(i + 1), Some(b'[' | b'=')) => {
                i = long_bracket(b, i)?;
                out.push((Token::Str, start..i));
            }
            b'"' | b'\'' => {
                i += 1;
                loop {
                    match b.get(i)? {
                        b'\\' => i += 2,
                        b'\n' => return None,
                        q if *q == c => break,
                        _ => i += 1,
                    }
                }
                i += 1;
                out.push((Token::Str, start..i));
            }
            b'0'..=b'9' => {
                i = numeral_end(b, i);
                out.push((Token::Number, start..i));
            }
            b'.' if b.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = numeral_end(b, i);
                out.push((Token::Number, start..i));
            }
            c if c == b'_' || c.is_ascii_alphabetic() => {
                while i < b.len() && (b[i] == b'_' || b[i].is_ascii_alphanumeric()) {
                    i += 1;
                }
                out.push((Token::Name(&source[start..i]), start..i));
            }
            _ => {
                let rest = &source[i..];
                let len = ["...", "..", "==", "~=", "<=", ">="]
                    .iter()
                    .find(|s| rest.starts_with(**s))
                    .map_or(1, |s| s.len());
                if !rest.is_char_boundary(len) {
                    return None;
                }
                i += len;
                out.push((Token::Symbol(&rest[..len]), start..i));
            }
        }
    }
    Some(out)
}

/// The end of a numeral starting at `i` (Lua 5.1's `read_numeral`: digits, dots, letters and
/// an exponent's sign).
fn numeral_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        let c = b[i];
        let exponent_sign = (c == b'+' || c == b'-') && matches!(b[i - 1], b'e' | b'E');
        if !(c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || exponent_sign) {
            break;
        }
        i += 1;
    }
    i
}

/// When a long bracket (`[[`, `[==[`) opens at `i`, the index after its closing bracket.
fn long_bracket(b: &[u8], i: usize) -> Option<usize> {
    if b.get(i) != Some(&b'[') {
        return None;
    }
    let mut j = i + 1;
    while b.get(j) == Some(&b'=') {
        j += 1;
    }
    if b.get(j) != Some(&b'[') {
        return None;
    }
    let level = j - i - 1;
    let mut k = j + 1;
    while k < b.len() {
        if b[k] == b']' {
            let mut e = k + 1;
            while b.get(e) == Some(&b'=') {
                e += 1;
            }
            if e - k - 1 == level && b.get(e) == Some(&b']') {
                return Some(e + 1);
            }
        }
        k += 1;
    }
    None
}
