//! Label and field selectors, parsed and matched as k8s.io/apimachinery/pkg/labels and
//! pkg/fields do.

use std::collections::BTreeMap;

/// A parse error; the API answers 400 with this message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

/// The operator of one label requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LabelOp {
    /// `k=v`, `k==v`, `k in (a,b)`.
    In(Vec<String>),
    /// `k!=v`, `k notin (a,b)`.
    NotIn(Vec<String>),
    /// `k`.
    Exists,
    /// `!k`.
    DoesNotExist,
    /// `k>5`.
    Gt(i64),
    /// `k<5`.
    Lt(i64),
}

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// Label key.
    pub key: String,
    /// Operator and values.
    pub op: LabelOp,
}

/// A parsed label selector: all requirements must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements (ANDed).
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses kube's label selector syntax.
    pub fn parse(s: &str) -> Result<LabelSelector, SelectorError> {
        let mut p = Lexer {
            chars: s.chars().collect(),
            pos: 0,
        };
        let mut requirements = Vec::new();
        p.skip_ws();
        if p.eof() {
            return Ok(LabelSelector::default());
        }
        loop {
            requirements.push(p.requirement()?);
            p.skip_ws();
            if p.eof() {
                break;
            }
            if !p.eat(',') {
                return Err(SelectorError(format!(
                    "unable to parse requirement: found '{}', expected: ','",
                    p.rest()
                )));
            }
        }
        Ok(LabelSelector { requirements })
    }

    /// True when it selects everything.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Does the label set match?
    pub fn matches(&self, labels: &impl LabelSet) -> bool {
        self.requirements.iter().all(|r| {
            let v = labels.label(&r.key);
            match &r.op {
                LabelOp::In(vals) => v.is_some_and(|v| vals.iter().any(|x| x == v)),
                LabelOp::NotIn(vals) => v.is_none_or(|v| vals.iter().all(|x| x != v)),
                LabelOp::Exists => v.is_some(),
                LabelOp::DoesNotExist => v.is_none(),
                LabelOp::Gt(n) => v
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|x| x > *n),
                LabelOp::Lt(n) => v
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|x| x < *n),
            }
        })
    }
}

/// Labels a selector can be matched against.
pub trait LabelSet {
    /// The value of the label `key`.
    fn label(&self, key: &str) -> Option<&str>;
}

impl LabelSet for BTreeMap<String, String> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// An immutable label set in two allocations: the keys and values back to back in one string,
/// and where each ends. The watch cache keeps one per object version; a `BTreeMap` allocates
/// room for eleven pairs in its first node, about 540 bytes for the usual two or three labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Labels {
    text: Box<str>,
    /// End offsets in `text`: key, value, key, value, ...
    ends: Box<[u32]>,
}

impl Labels {
    /// The labels, keys sorted.
    pub fn new(labels: &BTreeMap<String, String>) -> Labels {
        let mut text = String::with_capacity(labels.iter().map(|(k, v)| k.len() + v.len()).sum());
        let mut ends = Vec::with_capacity(labels.len() * 2);
        for (k, v) in labels {
            for piece in [k, v] {
                text.push_str(piece);
                // Labels are bounded well below 4 GiB (an object is at most a few MiB).
                ends.push(u32::try_from(text.len()).unwrap_or(u32::MAX));
            }
        }
        Labels {
            text: text.into_boxed_str(),
            ends: ends.into_boxed_slice(),
        }
    }

    /// The (key, value) pairs, keys sorted.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let piece = |i: usize| {
            let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
            self.text
                .get(start..self.ends[i] as usize)
                .unwrap_or_default()
        };
        (0..self.ends.len() / 2).map(move |i| (piece(2 * i), piece(2 * i + 1)))
    }

    /// The value of the label `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.ends.len() / 2
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

impl LabelSet for Labels {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

struct Lexer {
    chars: Vec<char>,
    pos: usize,
}

impl Lexer {
    fn eof(&self) -> bool {
        self.pos >= self.chars.len()
    }
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn rest(&self) -> String {
        self.chars[self.pos.min(self.chars.len())..]
            .iter()
            .collect()
    }
    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }
    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn eat_str(&mut self, s: &str) -> bool {
        let n = s.chars().count();
        if self.chars[self.pos..].iter().take(n).copied().eq(s.chars()) {
            self.pos += n;
            true
        } else {
            false
        }
    }
    fn word(&mut self) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || matches!(c, ',' | '=' | '!' | '(' | ')' | '<' | '>') {
                break;
            }
            self.pos += 1;
        }
        self.chars[start..self.pos].iter().collect()
    }
    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        self.skip_ws();
        if self.eat('!') {
            self.skip_ws();
            let key = self.word();
            validate_key(&key)?;
            return Ok(Requirement {
                key,
                op: LabelOp::DoesNotExist,
            });
        }
        let key = self.word();
        if key.is_empty() {
            return Err(SelectorError(format!(
                "unable to parse requirement: found '{}', expected: identifier",
                self.rest()
            )));
        }
        validate_key(&key)?;
        self.skip_ws();
        if self.eof() || self.peek() == Some(',') {
            return Ok(Requirement {
                key,
                op: LabelOp::Exists,
            });
        }
        let op = if self.eat_str("==") || self.eat('=') {
            LabelOp::In(vec![self.value()?])
        } else if self.eat_str("!=") {
            LabelOp::NotIn(vec![self.value()?])
        } else if self.eat('>') {
            LabelOp::Gt(self.number()?)
        } else if self.eat('<') {
            LabelOp::Lt(self.number()?)
        } else {
            let w = self.word();
            match w.as_str() {
                "in" => LabelOp::In(self.set()?),
                "notin" => LabelOp::NotIn(self.set()?),
                other => {
                    return Err(SelectorError(format!(
                        "unable to parse requirement: found '{other}', expected: in, notin, =, ==, !=, gt, lt"
                    )));
                }
            }
        };
        Ok(Requirement { key, op })
    }
    fn value(&mut self) -> Result<String, SelectorError> {
        self.skip_ws();
        let v = self.word();
        validate_value(&v)?;
        Ok(v)
    }
    fn number(&mut self) -> Result<i64, SelectorError> {
        self.skip_ws();
        let w = self.word();
        w.parse::<i64>().map_err(|_| {
            SelectorError(format!(
                "unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {w}"
            ))
        })
    }
    fn set(&mut self) -> Result<Vec<String>, SelectorError> {
        self.skip_ws();
        if !self.eat('(') {
            return Err(SelectorError(format!(
                "unable to parse requirement: found '{}', expected: '('",
                self.rest()
            )));
        }
        let mut vals = Vec::new();
        loop {
            self.skip_ws();
            if self.eat(')') {
                break;
            }
            let v = self.word();
            validate_value(&v)?;
            vals.push(v);
            self.skip_ws();
            if self.eat(',') {
                continue;
            }
            if self.eat(')') {
                break;
            }
            return Err(SelectorError(format!(
                "unable to parse requirement: found '{}', expected: ',', ')'",
                self.rest()
            )));
        }
        if vals.is_empty() {
            vals.push(String::new());
        }
        Ok(vals)
    }
}

fn validate_key(key: &str) -> Result<(), SelectorError> {
    if is_qualified_name(key) {
        Ok(())
    } else {
        Err(SelectorError(format!(
            "unable to parse requirement: invalid label key \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )))
    }
}

fn validate_value(v: &str) -> Result<(), SelectorError> {
    if is_label_value(v) {
        Ok(())
    } else {
        Err(SelectorError(format!(
            "unable to parse requirement: invalid label value: \"{v}\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )))
    }
}

fn is_name_part(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

/// kube's IsQualifiedName: `[prefix/]name`.
pub fn is_qualified_name(s: &str) -> bool {
    match s.split_once('/') {
        Some((prefix, name)) => {
            !prefix.is_empty()
                && prefix.len() <= 253
                && prefix.split('.').all(|l| {
                    !l.is_empty()
                        && l.chars()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                })
                && is_name_part(name)
        }
        None => is_name_part(s),
    }
}

/// kube's IsValidLabelValue.
pub fn is_label_value(s: &str) -> bool {
    s.is_empty() || is_name_part(s)
}

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldTerm {
    /// e.g. `metadata.name`.
    pub field: String,
    /// The value compared.
    pub value: String,
    /// True for `!=`.
    pub negated: bool,
}

/// A parsed field selector: all terms must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// The terms (ANDed).
    pub terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses `f=v,f2!=v2` with kube's `\` escaping.
    pub fn parse(s: &str) -> Result<FieldSelector, SelectorError> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector::default());
        }
        for part in split_unescaped(s, ',') {
            let (field, value, negated) = if let Some(i) = find_unescaped(&part, "!=") {
                (&part[..i], &part[i + 2..], true)
            } else if let Some(i) = find_unescaped(&part, "==") {
                (&part[..i], &part[i + 2..], false)
            } else if let Some(i) = find_unescaped(&part, "=") {
                (&part[..i], &part[i + 1..], false)
            } else {
                return Err(SelectorError(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            terms.push(FieldTerm {
                field: field.trim().to_string(),
                value: unescape(value),
                negated,
            });
        }
        Ok(FieldSelector { terms })
    }

    /// True when it selects everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The name this selector pins with `metadata.name=X`, if any.
    pub fn exact_name(&self) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| t.field == "metadata.name" && !t.negated)
            .map(|t| t.value.as_str())
    }

    /// Does the object match, given a getter for field values? A missing field compares as "".
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| {
            let v = get(&t.field).unwrap_or_default();
            (v == t.value) != t.negated
        })
    }
}

fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// The byte offset of the first `pat` (ASCII) not preceded by a `\\` escape. Compared as
/// bytes: an escape followed by a multi-byte character skips into that character, where no
/// ASCII byte can match, so the offset found is always a character boundary.
fn find_unescaped(s: &str, pat: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let pat = pat.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i..].starts_with(pat) {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn unescape(s: &str) -> String {
    let mut out = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn compact_labels_keep_every_pair() {
        let l = labels(&[("app", "web"), ("a", ""), ("example.com/tier", "front")]);
        let compact = Labels::new(&l);
        assert_eq!(compact.len(), 3);
        assert_eq!(compact.get("app"), Some("web"));
        assert_eq!(compact.get("a"), Some(""));
        assert_eq!(compact.get("example.com/tier"), Some("front"));
        assert_eq!(compact.get("ap"), None);
        let pairs: Vec<(&str, &str)> = compact.iter().collect();
        assert_eq!(
            pairs,
            [("a", ""), ("app", "web"), ("example.com/tier", "front")]
        );
        assert_eq!(compact, Labels::new(&l.clone()));
        assert_ne!(compact, Labels::new(&labels(&[("app", "web")])));
        assert!(Labels::new(&BTreeMap::new()).is_empty());
    }

    #[test]
    fn label_selectors() {
        let l = labels(&[("app", "web"), ("tier", "front"), ("n", "7")]);
        let cases = [
            ("", true),
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app in (web,db)", true),
            ("app notin (web)", false),
            ("app", true),
            ("!app", false),
            ("!missing", true),
            ("missing!=x", true),
            ("app=web,tier=back", false),
            ("app=web, tier=front", true),
            ("n>5", true),
            ("n<5", false),
            ("example.com/key", false),
        ];
        let compact = Labels::new(&l);
        for (sel, want) in cases {
            let s = LabelSelector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
            assert_eq!(s.matches(&l), want, "{sel}");
            assert_eq!(s.matches(&compact), want, "{sel} (compact labels)");
        }
        for bad in [
            "app=",
            "=x",
            "app in web",
            "app in (a",
            "Bad_key!",
            "a b",
            "app=we b",
            "k=-x-",
        ] {
            // "app=" is valid (empty value) in kube; everything else must fail.
            let r = LabelSelector::parse(bad);
            if bad == "app=" {
                assert!(r.is_ok());
            } else {
                assert!(r.is_err(), "{bad} should fail");
            }
        }
    }

    #[test]
    fn field_selectors() {
        let s = FieldSelector::parse("metadata.name=c1,metadata.namespace!=kube-system").unwrap();
        assert_eq!(s.exact_name(), Some("c1"));
        let get = |f: &str| match f {
            "metadata.name" => Some("c1".to_string()),
            "metadata.namespace" => Some("default".to_string()),
            _ => None,
        };
        assert!(s.matches(get));
        let esc = FieldSelector::parse(r"metadata.name=a\,b").unwrap();
        assert_eq!(esc.terms[0].value, "a,b");
        assert!(FieldSelector::parse("metadata.name").is_err());
        assert!(
            FieldSelector::parse("involvedObject.namespace=")
                .unwrap()
                .terms[0]
                .value
                .is_empty()
        );
    }

    /// kube's fields.EscapeValue.
    fn escape_value(v: &str) -> String {
        v.replace('\\', "\\\\")
            .replace(',', "\\,")
            .replace('=', "\\=")
    }

    /// Any text, with multi-byte characters anywhere (next to `=`, `!`, `\\`, `,`): an answer,
    /// never a panic; a label selector that parses holds only valid keys and values; any value
    /// escaped as kube escapes it comes back from a field selector exactly.
    #[test]
    fn arbitrary_text() {
        use crate::arbitrary_text::{CASES, TextGen};
        let special = [
            '=', '!', ',', '\\', '(', ')', '<', '>', ' ', '.', '-', '/', 'n', 'i',
        ];
        let mut g = TextGen::new(0x5e1e_c702);
        for _ in 0..CASES {
            let s = g.text(&special, 24);
            if let Ok(sel) = LabelSelector::parse(&s) {
                for r in &sel.requirements {
                    assert!(is_qualified_name(&r.key), "{s:?}: key {:?}", r.key);
                    if let LabelOp::In(values) | LabelOp::NotIn(values) = &r.op {
                        assert!(values.iter().all(|v| is_label_value(v)), "{s:?}");
                    }
                }
            }
            let _ = FieldSelector::parse(&s);

            let escaped = escape_value(&s);
            let sel = FieldSelector::parse(&format!("metadata.name={escaped}"))
                .unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(sel.exact_name(), Some(s.as_str()), "{escaped:?}");
            let sel = FieldSelector::parse(&format!("spec.nodeName!={escaped},a=b"))
                .unwrap_or_else(|e| panic!("{s:?}: {e}"));
            assert_eq!(
                sel.terms,
                vec![
                    FieldTerm {
                        field: "spec.nodeName".into(),
                        value: s.clone(),
                        negated: true
                    },
                    FieldTerm {
                        field: "a".into(),
                        value: "b".into(),
                        negated: false
                    }
                ],
                "{escaped:?}"
            );
        }
    }

    /// The inputs that panicked before: an escape or an operator search landing inside a
    /// multi-byte character.
    #[test]
    fn multi_byte_characters_next_to_operators() {
        for s in [
            "é",
            "\\é",
            "é=",
            "\\é=x",
            "a=é",
            "é!=é",
            "中==文",
            "\\😀!=1",
            "x=\\",
        ] {
            let _ = FieldSelector::parse(s);
            let _ = LabelSelector::parse(s);
        }
        assert_eq!(
            FieldSelector::parse("\\é=x").unwrap().terms[0].field,
            "\\é",
            "the escape is kept in the field, as kube keeps it"
        );
        assert_eq!(
            FieldSelector::parse("a=é").unwrap().exact_name(),
            None,
            "no metadata.name term"
        );
        assert!(FieldSelector::parse("é").is_err());
        assert!(LabelSelector::parse("é=1").is_err());
        assert!(LabelSelector::parse("a=é").is_err());
    }
}
