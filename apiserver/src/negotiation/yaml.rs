//! YAML responses, byte for byte as kube-apiserver writes them: its YAML serializer marshals the
//! object to JSON and converts it with `sigs.k8s.io/yaml.JSONToYAML`, which reads the JSON into
//! Go maps and writes them with its goyaml.v2 fork: keys sorted by goyaml's `keyList.Less`,
//! sequences not indented under their key, strings plain unless they would read back as
//! something else (then double-quoted) or the libyaml emitter refuses them plain (then
//! single-quoted), multi-line strings as literal blocks, long lines folded at 80 columns.
//!
//! The emitter below is libyaml's (goyaml.v2 `emitterc.go`) reduced to what a JSON document
//! produces: block mappings and sequences, empty flow collections, and scalars.

use serde_json::{Map, Value};

/// goyaml.v2's defaults: two-space indentation, 80 columns.
const BEST_INDENT: isize = 2;
const BEST_WIDTH: usize = 80;

/// Converts JSON bytes to YAML (`JSONToYAML`).
pub fn from_json(json: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let value: Value = serde_json::from_slice(json)?;
    Ok(to_yaml(&value))
}

/// Writes a JSON value as goyaml.v2 marshals the Go value JSON decodes into.
pub fn to_yaml(value: &Value) -> Vec<u8> {
    let mut e = Emitter {
        out: Vec::new(),
        column: 0,
        whitespace: true,
        indention: true,
        indent: -1,
        indents: Vec::new(),
    };
    e.node(value, Context::ROOT);
    // Document end: an implicit document ends its last line. (goyaml's encoder clears
    // `open_ended` before the stream end, so no `...` ever follows.)
    e.write_indent();
    e.out
}

/// The position of a node (libyaml's `mapping_context` and `simple_key_context`).
#[derive(Clone, Copy)]
struct Context {
    mapping: bool,
    simple_key: bool,
}

impl Context {
    const ROOT: Context = Context {
        mapping: false,
        simple_key: false,
    };
    const ITEM: Context = Context::ROOT;
    const KEY: Context = Context {
        mapping: true,
        simple_key: true,
    };
    const VALUE: Context = Context {
        mapping: true,
        simple_key: false,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

struct Emitter {
    out: Vec<u8>,
    column: usize,
    whitespace: bool,
    indention: bool,
    indent: isize,
    indents: Vec<isize>,
}

impl Emitter {
    fn node(&mut self, value: &Value, ctx: Context) {
        match value {
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Number(n) => self.scalar(&number(n), Style::Plain, ctx),
            Value::String(s) => self.scalar(s, string_style(s), ctx),
            Value::Array(items) if items.is_empty() => self.empty_flow("[", "]"),
            Value::Object(map) if map.is_empty() => self.empty_flow("{", "}"),
            Value::Array(items) => self.sequence(items, ctx),
            Value::Object(map) => self.mapping(map),
        }
    }

    /// `yaml_emitter_increase_indent`.
    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        self.indents.push(self.indent);
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn pop_indent(&mut self) {
        self.indent = self.indents.pop().unwrap_or(-1);
    }

    /// An empty collection, which libyaml writes in flow style.
    fn empty_flow(&mut self, open: &str, close: &str) {
        self.write_indicator(open, true, true, false);
        self.increase_indent(true, false);
        self.pop_indent();
        self.write_indicator(close, false, false, false);
    }

    fn sequence(&mut self, items: &[Value], ctx: Context) {
        // A sequence that is a mapping's value stays at the key's indentation.
        self.increase_indent(false, ctx.mapping && !self.indention);
        for item in items {
            self.write_indent();
            self.write_indicator("-", true, false, true);
            self.node(item, Context::ITEM);
        }
        self.pop_indent();
    }

    fn mapping(&mut self, map: &Map<String, Value>) {
        self.increase_indent(false, false);
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by(|a, b| {
            if key_less(a, b) {
                std::cmp::Ordering::Less
            } else if key_less(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        for key in keys {
            let value = &map[key];
            self.write_indent();
            let analysis = analyze(key);
            if !analysis.multiline && key.len() <= 128 {
                self.scalar(key, string_style(key), Context::KEY);
                self.write_indicator(":", false, false, false);
            } else {
                // A complex key: `? key` then `: value` on its own line.
                self.write_indicator("?", true, false, true);
                self.scalar(key, string_style(key), Context::VALUE);
                self.write_indent();
                self.write_indicator(":", true, false, true);
            }
            self.node(value, Context::VALUE);
        }
        self.pop_indent();
    }

    /// `yaml_emitter_emit_scalar` with `yaml_emitter_select_scalar_style`.
    fn scalar(&mut self, value: &str, requested: Style, ctx: Context) {
        let a = analyze(value);
        let mut style = requested;
        if ctx.simple_key && a.multiline {
            style = Style::DoubleQuoted;
        }
        if style == Style::Plain && (!a.block_plain_allowed || (value.is_empty() && ctx.simple_key))
        {
            style = Style::SingleQuoted;
        }
        if style == Style::SingleQuoted && !a.single_quoted_allowed {
            style = Style::DoubleQuoted;
        }
        if style == Style::Literal && (!a.block_allowed || ctx.simple_key) {
            style = Style::DoubleQuoted;
        }
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.plain_or_single_quoted(value, allow_breaks, false),
            Style::SingleQuoted => self.plain_or_single_quoted(value, allow_breaks, true),
            Style::DoubleQuoted => self.double_quoted(value, allow_breaks),
            Style::Literal => self.literal(value),
        }
        self.pop_indent();
    }

    fn put(&mut self, b: u8) {
        self.out.push(b);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push(b'\n');
        self.column = 0;
    }

    /// Copies one character (a column, whatever its width).
    fn write_char(&mut self, c: char) {
        let mut buf = [0u8; 4];
        self.out
            .extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        self.column += 1;
    }

    /// `write_break`: a line break in a value.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.write_char(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(b' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn write_indicator(
        &mut self,
        indicator: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(b' ');
        }
        for c in indicator.chars() {
            self.write_char(c);
        }
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
    }

    /// `yaml_emitter_write_plain_scalar` and `..._single_quoted_scalar`, which differ only in
    /// the quotes (doubled inside) and in folding never at the value's ends, where a plain
    /// scalar has no spaces anyway.
    fn plain_or_single_quoted(&mut self, value: &str, allow_breaks: bool, quoted: bool) {
        if quoted {
            self.write_indicator("'", true, false, false);
        } else if !self.whitespace {
            self.put(b' ');
        }
        let bytes = value.as_bytes();
        let mut spaces = false;
        let mut breaks = false;
        for (i, c) in value.char_indices() {
            if c == ' ' {
                let next_is_space = bytes.get(i + 1) == Some(&b' ');
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < bytes.len()
                    && !next_is_space
                {
                    self.write_indent();
                } else {
                    self.write_char(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if quoted && c == '\'' {
                    self.put(b'\'');
                }
                self.write_char(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        if quoted {
            self.write_indicator("'", false, false, false);
        }
        self.whitespace = false;
        self.indention = false;
    }

    fn double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.write_indicator("\"", true, false, false);
        let bytes = value.as_bytes();
        // libyaml's is_bom looks at the start of the value, whatever the position.
        let starts_with_bom = value.starts_with('\u{feff}');
        let mut spaces = false;
        for (i, c) in value.char_indices() {
            if !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\' {
                self.put(b'\\');
                match c {
                    '\0' => self.put(b'0'),
                    '\u{7}' => self.put(b'a'),
                    '\u{8}' => self.put(b'b'),
                    '\t' => self.put(b't'),
                    '\n' => self.put(b'n'),
                    '\u{b}' => self.put(b'v'),
                    '\u{c}' => self.put(b'f'),
                    '\r' => self.put(b'r'),
                    '\u{1b}' => self.put(b'e'),
                    '"' => self.put(b'"'),
                    '\\' => self.put(b'\\'),
                    '\u{85}' => self.put(b'N'),
                    '\u{a0}' => self.put(b'_'),
                    '\u{2028}' => self.put(b'L'),
                    '\u{2029}' => self.put(b'P'),
                    other => {
                        let v = u32::from(other);
                        let (letter, digits) = if v <= 0xFF {
                            (b'x', 2)
                        } else if v <= 0xFFFF {
                            (b'u', 4)
                        } else {
                            (b'U', 8)
                        };
                        self.put(letter);
                        for k in (0..digits).rev() {
                            let digit = ((v >> (k * 4)) & 0xF) as u8;
                            self.put(if digit < 10 {
                                b'0' + digit
                            } else {
                                b'A' + digit - 10
                            });
                        }
                    }
                }
                spaces = false;
            } else if c == ' ' {
                if allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i + 1 < bytes.len()
                {
                    self.write_indent();
                    if bytes.get(i + 1) == Some(&b' ') {
                        self.put(b'\\');
                    }
                } else {
                    self.write_char(c);
                }
                spaces = true;
            } else {
                self.write_char(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn literal(&mut self, value: &str) {
        self.write_indicator("|", true, false, false);
        // yaml_emitter_write_block_scalar_hints.
        if value.starts_with(' ') || value.chars().next().is_some_and(is_break) {
            self.write_indicator("2", false, false, false);
        }
        // Strip (`-`) without a final break, keep (`+`) with more than one, clip otherwise.
        let mut rev = value.chars().rev();
        let chomp = match (rev.next(), rev.next()) {
            (None, _) => Some("-"),
            (Some(last), _) if !is_break(last) => Some("-"),
            (Some(_), None) => Some("+"),
            (Some(_), Some(before)) if is_break(before) => Some("+"),
            _ => None,
        };
        if let Some(chomp) = chomp {
            self.write_indicator(chomp, false, false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.write_char(c);
                self.indention = false;
                breaks = false;
            }
        }
    }
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

/// libyaml's `is_printable`, which works on the UTF-8 bytes: characters beyond the Basic
/// Multilingual Plane (four-byte sequences, emoji among them) are not printable.
fn is_printable(c: char) -> bool {
    match u32::from(c) {
        0x0A => true,
        0x20..=0x7E => true,
        0xA0..=0xD7FF => true,
        0xE000..=0xFFFD => c != '\u{feff}',
        _ => false,
    }
}

/// What `yaml_emitter_analyze_scalar` learns about a value.
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let bytes = value.as_bytes();
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let (mut previous_space, mut previous_break) = (false, false);
    for (i, c) in value.char_indices() {
        let next = i + c.len_utf8();
        let followed_by_whitespace = next >= bytes.len() || matches!(bytes[next], b' ' | b'\t');
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= next == bytes.len();
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= next == bytes.len();
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = matches!(c, ' ' | '\t' | '\0') || is_break(c);
    }
    let mut a = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain_allowed = false;
    }
    if trailing_space {
        a.block_allowed = false;
    }
    if break_space {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        a.block_plain_allowed = false;
        a.single_quoted_allowed = false;
        a.block_allowed = false;
    }
    if line_breaks || block_indicators {
        a.block_plain_allowed = false;
    }
    a
}

/// goyaml.v2's `stringv`: multi-line strings are literal blocks; strings that would read back
/// as another type are double-quoted; the rest are plain.
fn string_style(s: &str) -> Style {
    if s.contains('\n') {
        Style::Literal
    } else if resolves_to_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::DoubleQuoted
    }
}

/// Whether a plain scalar reads back as a string (goyaml.v2 `resolve("", s)`).
fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    match s.as_bytes().first() {
        Some(b'.') => !is_go_decimal_float(s),
        Some(b'+' | b'-' | b'0'..=b'9') => {
            if is_yaml_timestamp(s) {
                return false;
            }
            let plain = s.replace('_', "");
            !(is_go_int(&plain) || is_yaml_float(&plain))
        }
        _ => true,
    }
}

/// `strconv.ParseFloat` of a string starting with `.`: `.5`, `.5e3`.
fn is_go_decimal_float(s: &str) -> bool {
    let Some(rest) = s.strip_prefix('.') else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && is_exponent_or_empty(&rest[digits..])
}

fn is_exponent_or_empty(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    let Some(rest) = s.strip_prefix(['e', 'E']) else {
        return false;
    };
    let rest = rest.strip_prefix(['+', '-']).unwrap_or(rest);
    !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit())
}

/// goyaml's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
fn is_yaml_float(s: &str) -> bool {
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    if s.starts_with('.') {
        return is_go_decimal_float(s);
    }
    let int = s.bytes().take_while(u8::is_ascii_digit).count();
    if int == 0 {
        return false;
    }
    let mut rest = &s[int..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        rest = &frac[n..];
    }
    is_exponent_or_empty(rest)
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint` syntax (range aside: an integer that overflows
/// is still a number, read as a float): a sign, then decimal, `0x`, `0o`, `0b` or leading-zero
/// octal digits.
fn is_go_int(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (digits, radix) = if let Some(d) = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        (d, 16)
    } else if let Some(d) = unsigned
        .strip_prefix("0o")
        .or_else(|| unsigned.strip_prefix("0O"))
    {
        (d, 8)
    } else if let Some(d) = unsigned
        .strip_prefix("0b")
        .or_else(|| unsigned.strip_prefix("0B"))
    {
        (d, 2)
    } else if unsigned.len() > 1 && unsigned.starts_with('0') {
        (&unsigned[1..], 8)
    } else {
        (unsigned, 10)
    };
    !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix))
}

/// goyaml's `parseTimestamp`: `2006-1-2`, `2006-1-2T15:4:5.999999999Z07:00` (or with `t`), or
/// `2006-1-2 15:4:5.999999999`, as Go's `time.Parse` accepts them.
fn is_yaml_timestamp(s: &str) -> bool {
    fn number(s: &str, max_digits: usize) -> Option<(u32, &str)> {
        let n = s
            .bytes()
            .take(max_digits)
            .take_while(u8::is_ascii_digit)
            .count();
        if n == 0 {
            return None;
        }
        Some((s[..n].parse().ok()?, &s[n..]))
    }
    let bytes = s.as_bytes();
    if bytes.len() < 5 || !bytes[..4].iter().all(u8::is_ascii_digit) || bytes[4] != b'-' {
        return false;
    }
    let Ok(year) = s[..4].parse::<i32>() else {
        return false;
    };
    let Some((month, rest)) = number(&s[5..], 2) else {
        return false;
    };
    let Some(rest) = rest.strip_prefix('-') else {
        return false;
    };
    let Some((day, rest)) = number(rest, 2) else {
        return false;
    };
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return false;
    }
    if rest.is_empty() {
        return true;
    }
    let (zoned, rest) = match rest.as_bytes()[0] {
        b'T' | b't' => (true, &rest[1..]),
        b' ' => (false, &rest[1..]),
        _ => return false,
    };
    let Some((hour, rest)) = number(rest, 2) else {
        return false;
    };
    let Some((minute, rest)) = rest.strip_prefix(':').and_then(|r| number(r, 2)) else {
        return false;
    };
    let Some((second, mut rest)) = rest.strip_prefix(':').and_then(|r| number(r, 2)) else {
        return false;
    };
    if hour > 23 || minute > 59 || second > 59 {
        return false;
    }
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    if !zoned {
        return rest.is_empty();
    }
    if rest == "Z" {
        return true;
    }
    let b = rest.as_bytes();
    b.len() == 6
        && matches!(b[0], b'+' | b'-')
        && b[1].is_ascii_digit()
        && b[2].is_ascii_digit()
        && b[3] == b':'
        && b[4].is_ascii_digit()
        && b[5].is_ascii_digit()
        && rest[1..3].parse::<u32>().is_ok_and(|h| h < 24)
        && rest[4..6].parse::<u32>().is_ok_and(|m| m < 60)
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// goyaml's `isBase60Float`: `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60_float(s: &str) -> bool {
    if !s.contains(':') {
        return false;
    }
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let mut parts = s.split(':');
    let head = parts.next().unwrap_or("");
    if !head.starts_with(|c: char| c.is_ascii_digit())
        || !head.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    let parts: Vec<&str> = parts.collect();
    for (i, part) in parts.iter().enumerate() {
        // The last part may carry the fraction.
        let sexagesimal = if i + 1 == parts.len() {
            match part.split_once('.') {
                Some((digits, frac)) => {
                    if !frac.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
                        return false;
                    }
                    digits
                }
                None => part,
            }
        } else {
            part
        };
        let b = sexagesimal.as_bytes();
        let ok = match b {
            [d] => d.is_ascii_digit(),
            [a, d] => (b'0'..=b'5').contains(a) && d.is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    !parts.is_empty()
}

/// A JSON number as goyaml.v2 writes the Go value it decodes to: integers as such, other
/// numbers as `strconv.FormatFloat(f, 'g', -1, 64)`.
fn number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    go_float(f)
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest digits, in `%e` form when the exponent
/// is below -4 or at least 6 (Go's precision for the shortest form).
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            ".inf".into()
        } else {
            "-.inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde±x`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if f < 0.0 { "-" } else { "" };
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exp_sign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{exp_sign}{:02}", exp.abs());
    }
    let dp = exp + 1;
    let out = if dp <= 0 {
        format!("0.{}{digits}", "0".repeat(dp.unsigned_abs() as usize))
    } else if dp as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(dp as usize - digits.len()))
    } else {
        let (int, frac) = digits.split_at(dp as usize);
        format!("{int}.{frac}")
    };
    format!("{sign}{out}")
}

/// goyaml.v2's `keyList.Less` for string keys: letters after other characters, runs of digits
/// compared as numbers.
fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(u32::from(ar[ai]) - u32::from('0')));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(u32::from(br[bi]) - u32::from('0')));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

#[cfg(test)]
mod tests;
