//! Parser for the Kubernetes JSONPath template dialect (client-go `util/jsonpath/parser.go`).
//!
//! A template is text with `{...}` actions; CRD printer columns wrap their path in braces, so a
//! column path parses to a single action node.

/// One step of a parsed template.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node {
    /// A sequence of steps applied one after another (an action, or a sub-expression).
    List(Vec<Node>),
    /// Literal text (outside actions, or a quoted string inside one).
    Text(String),
    /// `.name`: a key of an object.
    Field(String),
    /// `[i]`, `[a:b:c]`, `[*]`: index or slice of an array.
    Array([SliceParam; 3]),
    /// `[?(left op right)]` or `[?(path)]` (operator `exists`).
    Filter {
        left: Vec<Node>,
        right: Vec<Node>,
        op: String,
    },
    Int(i64),
    Float(f64),
    Bool(bool),
    /// `.*`: every value of an object or array.
    Wildcard,
    /// `..`: the value and all of its descendants.
    Recursive,
    /// `[a,b]`: several sub-expressions.
    Union(Vec<Vec<Node>>),
    /// A bare word such as `range` or `end`.
    Identifier(String),
}

/// One of the three numbers of a slice expression.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct SliceParam {
    pub value: i64,
    pub known: bool,
    pub derived: bool,
}

type ParseResult<T> = Result<T, String>;

struct Parser<'a> {
    input: &'a str,
    pos: usize,
    start: usize,
    width: usize,
}

fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || is_digit(c)
}

/// Parses a whole template into its top-level nodes (text and actions).
pub(crate) fn parse(text: &str) -> ParseResult<Vec<Node>> {
    Parser {
        input: text,
        pos: 0,
        start: 0,
        width: 0,
    }
    .parse_template()
}

/// Parses the inside of one action (`parseAction` upstream): the steps of `{text}`.
fn parse_action(text: &str) -> ParseResult<Vec<Node>> {
    let mut nodes = parse(&format!("{{{text}}}"))?;
    match nodes.first_mut() {
        Some(Node::List(list)) => Ok(std::mem::take(list)),
        _ => Err(format!("invalid action {text}")),
    }
}

impl<'a> Parser<'a> {
    fn rest(&self) -> &'a str {
        &self.input[self.pos..]
    }

    fn consume(&mut self) -> &'a str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    fn next(&mut self) -> Option<char> {
        match self.rest().chars().next() {
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
            None => {
                self.width = 0;
                None
            }
        }
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    /// The byte two positions back, used (as upstream does) to spot an escaped quote.
    fn escaped_before_last(&self) -> bool {
        self.pos >= 2 && self.input.as_bytes()[self.pos - 2] == b'\\'
    }

    fn parse_template(&mut self) -> ParseResult<Vec<Node>> {
        let mut root = Vec::new();
        loop {
            // Text up to the next action.
            loop {
                if self.rest().starts_with('{') {
                    break;
                }
                if self.next().is_none() {
                    if self.pos > self.start {
                        root.push(Node::Text(self.consume().to_string()));
                    }
                    return Ok(root);
                }
            }
            if self.pos > self.start {
                root.push(Node::Text(self.consume().to_string()));
            }
            self.pos += 1;
            self.consume();
            let mut action = Vec::new();
            self.parse_inside_action(&mut action)?;
            root.push(Node::List(action));
        }
    }

    /// Parses steps until the closing `}` (consumed).
    fn parse_inside_action(&mut self, cur: &mut Vec<Node>) -> ParseResult<()> {
        loop {
            let rest = self.rest();
            if rest.starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(());
            }
            if rest.starts_with("[?(") {
                self.parse_filter(cur)?;
                continue;
            }
            if rest.starts_with("..") {
                self.parse_recursive(cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return Err("unclosed action".into()),
                Some(' ' | '@' | '$') => {
                    self.consume();
                }
                Some('[') => self.parse_array(cur)?,
                Some(q @ ('"' | '\'')) => self.parse_quote(cur, q)?,
                Some('.') => self.parse_field(cur),
                Some(c) if c == '+' || c == '-' || is_digit(c) => {
                    self.backup();
                    self.parse_number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.parse_identifier(cur);
                }
                Some(c) => {
                    return Err(format!(
                        "unrecognized character in action: U+{:04X} '{c}'",
                        c as u32
                    ));
                }
            }
        }
    }

    fn parse_identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let c = self.next();
            if is_terminator(c) {
                self.backup();
                break;
            }
        }
        let value = self.consume();
        cur.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            other => Node::Identifier(other.to_string()),
        });
    }

    fn parse_recursive(&mut self, cur: &mut Vec<Node>) -> ParseResult<()> {
        if matches!(cur.last(), Some(Node::Recursive)) {
            return Err("invalid multiple recursive descent".into());
        }
        self.pos += 2;
        self.consume();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.parse_field(cur);
        }
        Ok(())
    }

    fn parse_number(&mut self, cur: &mut Vec<Node>) -> ParseResult<()> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || is_digit(c) => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume();
        if let Ok(i) = value.parse::<i64>() {
            cur.push(Node::Int(i));
        } else if let Ok(f) = value.parse::<f64>() {
            cur.push(Node::Float(f));
        } else {
            return Err(format!("cannot parse number {value}"));
        }
        Ok(())
    }

    fn parse_array(&mut self, cur: &mut Vec<Node>) -> ParseResult<()> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated array".into()),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let text = self.consume();
        let mut text = &text[1..text.len() - 1];
        if text == "*" {
            text = ":";
        }

        let parts: Vec<&str> = text.split(',').collect();
        if parts.len() > 1 {
            let mut union = Vec::with_capacity(parts.len());
            for part in parts {
                union.push(parse_action(&format!("[{}]", part.trim_matches(' ')))?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }

        // ['key'] is the same as .key (so dots in the key must be escaped).
        if text.len() >= 2
            && text.starts_with('\'')
            && text.ends_with('\'')
            && !text[1..text.len() - 1].contains('\'')
        {
            cur.extend(parse_action(&format!(".{}", &text[1..text.len() - 1]))?);
            return Ok(());
        }

        cur.push(Node::Array(parse_slice(text)?));
        Ok(())
    }

    fn parse_filter(&mut self, cur: &mut Vec<Node>) -> ParseResult<()> {
        self.pos += 3;
        self.consume();
        let mut begin = false;
        let mut end = false;
        let mut pair = '\0';
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated filter".into()),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if !self.escaped_before_last() && q == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err("unclosed array expect ]".into());
        }
        let text = self.consume();
        let text = &text[..text.len() - 2];
        match split_comparison(text) {
            Some((left, op, right)) => cur.push(Node::Filter {
                left: parse_action(left)?,
                right: parse_action(right)?,
                op: op.to_string(),
            }),
            None => cur.push(Node::Filter {
                left: parse_action(text)?,
                right: Vec::new(),
                op: "exists".to_string(),
            }),
        }
        Ok(())
    }

    fn parse_quote(&mut self, cur: &mut Vec<Node>, end: char) -> ParseResult<()> {
        loop {
            match self.next() {
                None | Some('\n') => return Err("unterminated quoted string".into()),
                Some(c) if c == end && !self.escaped_before_last() => break,
                Some(_) => {}
            }
        }
        let value = self.consume();
        let text = unquote_extend(value)
            .ok_or_else(|| format!("unquote string {value} error invalid syntax"))?;
        cur.push(Node::Text(text));
        Ok(())
    }

    fn parse_field(&mut self, cur: &mut Vec<Node>) {
        self.consume();
        loop {
            match self.next() {
                Some('\\') => {
                    self.next();
                }
                c if is_terminator(c) => {
                    self.backup();
                    break;
                }
                _ => {}
            }
        }
        let value = self.consume();
        cur.push(if value == "*" {
            Node::Wildcard
        } else {
            Node::Field(value.replace('\\', ""))
        });
    }
}

/// Splits `left op right` the way upstream's `^([^!<>=]+)([!<>=]+)(.+?)$` does.
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let after = &text[op_start..];
    let mut op_len = after.find(|c: char| !is_op(c)).unwrap_or(after.len());
    if op_len == after.len() {
        // The operator run reaches the end: the regexp gives its last character to `right`.
        op_len -= 1;
    }
    if op_len == 0 || text[op_start + op_len..].contains('\n') {
        return None;
    }
    Some((
        &text[..op_start],
        &after[..op_len],
        &text[op_start + op_len..],
    ))
}

/// Parses `[start:end:step]` (`^(-?\d*)(:-?\d*)?(:-?\d*)?$` upstream) into slice parameters.
fn parse_slice(text: &str) -> ParseResult<[SliceParam; 3]> {
    let invalid = || format!("invalid array index {text}");
    let mut groups = ["", "", ""];
    let mut rest = text;
    for (i, group) in groups.iter_mut().enumerate() {
        let bytes = rest.as_bytes();
        let mut len = 0;
        if i > 0 {
            if bytes.first() != Some(&b':') {
                break;
            }
            len = 1;
        }
        if bytes.get(len) == Some(&b'-') {
            len += 1;
        }
        while bytes.get(len).is_some_and(u8::is_ascii_digit) {
            len += 1;
        }
        *group = &rest[..len];
        rest = &rest[len..];
    }
    if !rest.is_empty() {
        return Err(invalid());
    }

    let mut params = [SliceParam::default(); 3];
    for i in 0..3 {
        let mut value = groups[i];
        if !value.is_empty() {
            if i > 0 {
                value = &value[1..];
            }
            if i > 0 && value.is_empty() {
                params[i].known = false;
            } else {
                params[i].known = true;
                params[i].value = value
                    .parse()
                    .map_err(|_| format!("array index {value} is not a number"))?;
            }
        } else if i == 1 {
            params[i] = SliceParam {
                value: params[0].value.saturating_add(1),
                known: true,
                derived: true,
            };
        }
    }
    Ok(params)
}

/// Unquotes a single- or double-quoted string with Go escapes (`UnquoteExtend` upstream).
fn unquote_extend(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    if s.len() < 2 || !s.ends_with(quote) || !matches!(quote, '"' | '\'') {
        return None;
    }
    let inner = &s[1..s.len() - 1];
    if !inner.contains('\\') && !inner.contains(quote) {
        return Some(inner.to_string());
    }
    let mut out: Vec<u8> = Vec::with_capacity(inner.len());
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let esc = chars.next()?;
        let simple = match esc {
            'a' => Some(b'\x07'),
            'b' => Some(b'\x08'),
            'f' => Some(b'\x0c'),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(b'\x0b'),
            '\\' => Some(b'\\'),
            '\'' | '"' if esc == quote => Some(esc as u8),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            continue;
        }
        match esc {
            'x' | 'u' | 'U' => {
                let n = match esc {
                    'x' => 2,
                    'u' => 4,
                    _ => 8,
                };
                let mut v: u32 = 0;
                for _ in 0..n {
                    v = v * 16 + chars.next()?.to_digit(16)?;
                }
                if esc == 'x' {
                    out.push(v as u8);
                } else {
                    let c = char::from_u32(v)?;
                    let mut buf = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                }
            }
            '0'..='7' => {
                let mut v = esc.to_digit(8)?;
                for _ in 0..2 {
                    v = v * 8 + chars.next()?.to_digit(8)?;
                }
                out.push(u8::try_from(v).ok()?);
            }
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}
