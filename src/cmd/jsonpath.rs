//! kubectl's `-o jsonpath=TEMPLATE` (k8s.io/client-go/util/jsonpath): text with `{...}`
//! actions — field paths (`.a.b`, `..a`, `[n]`, `[a:b]`, `[*]`, `['key']`, `[?(@.x == "y")]`),
//! `range PATH` ... `end`, and string literals such as `{"\n"}` — with missing keys printing
//! nothing, as kubectl's `--allow-missing-template-keys` default does.

use anyhow::{Context, bail};
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    /// `..name`: the field at any depth.
    Recursive(String),
    All,
    Index(i64),
    Slice(Option<i64>, Option<i64>),
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Vec<Step>,
    /// Operator and right side; `None` tests that the left side exists.
    compare: Option<(String, Operand)>,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Path(Vec<Step>),
    Literal(Value),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Path(Vec<Step>),
    Range(Vec<Step>, Vec<Node>),
}

/// Runs a template over an object and returns what kubectl prints.
pub fn execute(template: &str, object: &Value) -> anyhow::Result<String> {
    let nodes = parse(template)?;
    let mut out = String::new();
    run(&nodes, object, &mut out)?;
    Ok(out)
}

fn run(nodes: &[Node], current: &Value, out: &mut String) -> anyhow::Result<()> {
    for node in nodes {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Path(steps) => {
                let results = eval(steps, current);
                let texts: Vec<String> = results.iter().map(|v| text(v)).collect();
                out.push_str(&texts.join(" "));
            }
            Node::Range(steps, body) => {
                let results = eval(steps, current);
                let items: Vec<&Value> = match results.as_slice() {
                    [Value::Array(items)] => items.iter().collect(),
                    _ => results,
                };
                for item in items {
                    run(body, item, out)?;
                }
            }
        }
    }
    Ok(())
}

/// PrintResults: maps and lists as compact JSON, scalars as Go's fmt prints them.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        Value::Array(_) | Value::Object(_) => v
            .to_string()
            .replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026"),
        other => other.to_string(),
    }
}

fn eval<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut set = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for v in set {
            apply(step, v, &mut next);
        }
        set = next;
    }
    set
}

fn apply<'a>(step: &Step, v: &'a Value, next: &mut Vec<&'a Value>) {
    match step {
        Step::Field(name) => {
            if let Some(f) = v.get(name.as_str()) {
                next.push(f);
            }
        }
        Step::Recursive(name) => descend(name, v, next),
        Step::All => match v {
            Value::Array(items) => next.extend(items.iter()),
            Value::Object(map) => next.extend(map.values()),
            _ => {}
        },
        Step::Index(i) => {
            if let Some(items) = v.as_array() {
                let at = if *i < 0 { items.len() as i64 + i } else { *i };
                if let Some(item) = usize::try_from(at).ok().and_then(|at| items.get(at)) {
                    next.push(item);
                }
            }
        }
        Step::Slice(from, to) => {
            if let Some(items) = v.as_array() {
                let len = items.len() as i64;
                let clamp = |i: i64| (if i < 0 { len + i } else { i }).clamp(0, len) as usize;
                let (a, b) = (clamp(from.unwrap_or(0)), clamp(to.unwrap_or(len)));
                if a < b {
                    next.extend(items[a..b].iter());
                }
            }
        }
        Step::Filter(filter) => {
            let candidates: Vec<&Value> = match v {
                Value::Array(items) => items.iter().collect(),
                other => vec![other],
            };
            next.extend(candidates.into_iter().filter(|c| matches(filter, c)));
        }
    }
}

fn descend<'a>(name: &str, v: &'a Value, next: &mut Vec<&'a Value>) {
    match v {
        Value::Object(map) => {
            if let Some(f) = map.get(name) {
                next.push(f);
            }
            for child in map.values() {
                descend(name, child, next);
            }
        }
        Value::Array(items) => items.iter().for_each(|c| descend(name, c, next)),
        _ => {}
    }
}

fn matches(filter: &Filter, item: &Value) -> bool {
    let left = eval(&filter.left, item);
    let Some((op, right)) = &filter.compare else {
        return !left.is_empty();
    };
    let right: Vec<&Value> = match right {
        Operand::Path(p) => eval(p, item),
        Operand::Literal(v) => vec![v],
    };
    let (Some(l), Some(r)) = (left.first(), right.first()) else {
        return false;
    };
    let order = match (l.as_f64(), r.as_f64()) {
        (Some(a), Some(b)) => a.partial_cmp(&b),
        _ => match (l.as_str(), r.as_str()) {
            (Some(a), Some(b)) => Some(a.cmp(b)),
            _ => (l == r).then_some(std::cmp::Ordering::Equal),
        },
    };
    use std::cmp::Ordering::*;
    match op.as_str() {
        "==" => order == Some(Equal),
        "!=" => order != Some(Equal),
        "<" => order == Some(Less),
        "<=" => matches!(order, Some(Less | Equal)),
        ">" => order == Some(Greater),
        ">=" => matches!(order, Some(Greater | Equal)),
        _ => false,
    }
}

fn parse(template: &str) -> anyhow::Result<Vec<Node>> {
    // The innermost open `range` collects its body; the bottom frame is the template.
    let mut stack: Vec<(Option<Vec<Step>>, Vec<Node>)> = vec![(None, Vec::new())];
    let mut rest = template;
    while !rest.is_empty() {
        let Some(open) = rest.find('{') else {
            push(&mut stack, Node::Text(rest.to_owned()));
            break;
        };
        if open > 0 {
            push(&mut stack, Node::Text(rest[..open].to_owned()));
        }
        let close = closing_brace(&rest[open..]).context("unclosed action")?;
        let action = rest[open + 1..open + close].trim();
        rest = &rest[open + close + 1..];
        if let Some(path) = action.strip_prefix("range ") {
            stack.push((Some(parse_path(path.trim())?), Vec::new()));
        } else if action == "end" {
            if stack.len() < 2 {
                bail!("not in range, nothing to end");
            }
            let (steps, body) = stack.pop().unwrap_or_default();
            push(&mut stack, Node::Range(steps.unwrap_or_default(), body));
        } else if action.starts_with('"') {
            let lit: String = serde_json::from_str(action)
                .with_context(|| format!("unrecognized string literal {action}"))?;
            push(&mut stack, Node::Text(lit));
        } else {
            push(&mut stack, Node::Path(parse_path(action)?));
        }
    }
    if stack.len() > 1 {
        bail!("unexpected EOF: a range has no end");
    }
    Ok(stack.pop().map(|(_, nodes)| nodes).unwrap_or_default())
}

fn push(stack: &mut [(Option<Vec<Step>>, Vec<Node>)], node: Node) {
    if let Some((_, nodes)) = stack.last_mut() {
        nodes.push(node);
    }
}

/// The offset of the `}` closing the action at the start of `s`, past quoted strings.
fn closing_brace(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (Some(_), '\\') if !escaped => {
                escaped = true;
                continue;
            }
            (Some(q), c) if c == q && !escaped => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, '}') => return Some(i),
            _ => {}
        }
        escaped = false;
    }
    None
}

fn parse_path(path: &str) -> anyhow::Result<Vec<Step>> {
    let mut steps = Vec::new();
    let chars: Vec<char> = path.chars().collect();
    let mut i = 0;
    if matches!(chars.first(), Some('@' | '$')) {
        i = 1;
    }
    while i < chars.len() {
        match chars[i] {
            '.' if chars.get(i + 1) == Some(&'.') => {
                let (name, end) = field_name(&chars, i + 2);
                if name.is_empty() {
                    bail!("invalid recursive descent in {path:?}");
                }
                steps.push(Step::Recursive(name));
                i = end;
            }
            '.' if chars.get(i + 1) == Some(&'*') => {
                steps.push(Step::All);
                i += 2;
            }
            '.' => {
                let (name, end) = field_name(&chars, i + 1);
                if !name.is_empty() {
                    steps.push(Step::Field(name));
                }
                i = end;
            }
            '[' => {
                let close = bracket_end(&chars, i)
                    .with_context(|| format!("unterminated array in {path:?}"))?;
                let inner: String = chars[i + 1..close].iter().collect();
                steps.push(bracket(inner.trim(), path)?);
                i = close + 1;
            }
            c => bail!("unrecognized character in action: {c:?} in {path:?}"),
        }
    }
    Ok(steps)
}

/// A field name up to the next `.` or `[`, with `\.` standing for a dot in the name.
fn field_name(chars: &[char], mut i: usize) -> (String, usize) {
    let mut name = String::new();
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1) == Some(&'.') => {
                name.push('.');
                i += 2;
                continue;
            }
            '.' | '[' => break,
            c => name.push(c),
        }
        i += 1;
    }
    (name, i)
}

fn bracket_end(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    for (i, &c) in chars.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

fn bracket(inner: &str, path: &str) -> anyhow::Result<Step> {
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        return Ok(Step::Filter(Box::new(parse_filter(f.trim())?)));
    }
    if let Some(key) = quoted(inner) {
        return Ok(Step::Field(key));
    }
    let int = |s: &str| -> anyhow::Result<Option<i64>> {
        let s = s.trim();
        if s.is_empty() {
            return Ok(None);
        }
        s.parse()
            .map(Some)
            .with_context(|| format!("invalid array index {s:?} in {path:?}"))
    };
    match inner.split(':').collect::<Vec<_>>().as_slice() {
        [one] => Ok(Step::Index(int(one)?.unwrap_or(0))),
        [from, to] | [from, to, _] => Ok(Step::Slice(int(from)?, int(to)?)),
        _ => bail!("invalid array index {inner:?} in {path:?}"),
    }
}

fn quoted(s: &str) -> Option<String> {
    let q = s.chars().next()?;
    if (q == '\'' || q == '"') && s.len() >= 2 && s.ends_with(q) {
        Some(s[1..s.len() - 1].to_owned())
    } else {
        None
    }
}

fn parse_filter(f: &str) -> anyhow::Result<Filter> {
    for op in ["==", "!=", "<=", ">=", "<", ">"] {
        if let Some((l, r)) = f.split_once(op) {
            let (l, r) = (l.trim(), r.trim());
            let right = if let Some(s) = quoted(r) {
                Operand::Literal(Value::String(s))
            } else if r.starts_with('@') || r.starts_with('$') {
                Operand::Path(parse_path(r)?)
            } else {
                Operand::Literal(
                    serde_json::from_str(r)
                        .with_context(|| format!("unrecognized filter operand {r:?}"))?,
                )
            };
            return Ok(Filter {
                left: parse_path(l)?,
                compare: Some((op.to_owned(), right)),
            });
        }
    }
    Ok(Filter {
        left: parse_path(f)?,
        compare: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pods() -> Value {
        json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web"}},
             "status": {"phase": "Running", "restarts": 2}},
            {"metadata": {"name": "b"}, "status": {"phase": "Pending", "restarts": 0}},
        ]})
    }

    #[test]
    fn templates_print_as_kubectl_prints_them() {
        let run = |t: &str| execute(t, &pods()).expect(t);
        assert_eq!(run("{.items[*].metadata.name}"), "a b");
        assert_eq!(
            run(r#"{range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end}"#),
            "a\tRunning\nb\tPending\n"
        );
        assert_eq!(
            run("{.items[0].status}"),
            r#"{"phase":"Running","restarts":2}"#
        );
        assert_eq!(run("{.items[-1].metadata.name}"), "b");
        assert_eq!(run("{.items[0:1].metadata.name}"), "a");
        assert_eq!(run("{..phase}"), "Running Pending");
        assert_eq!(
            run(r#"{.items[?(@.status.phase=="Pending")].metadata.name}"#),
            "b"
        );
        assert_eq!(run("{.items[?(@.status.restarts > 1)].metadata.name}"), "a");
        assert_eq!(run("{.items[?(@.metadata.labels)].metadata.name}"), "a");
        assert_eq!(
            run(r"{.items[0].metadata.labels.app\.kubernetes\.io/name}"),
            "web"
        );
        assert_eq!(
            run("{.items[0].metadata.labels['app.kubernetes.io/name']}"),
            "web"
        );
        assert_eq!(run("names: {.items[*].missing}!"), "names: !");
        assert_eq!(run("{.kind}"), "List");
    }

    #[test]
    fn bad_templates_are_refused() {
        assert!(execute("{.items", &pods()).is_err());
        assert!(execute("{range .items[*]}{.metadata.name}", &pods()).is_err());
        assert!(execute("{end}", &pods()).is_err());
        assert!(execute("{.items[x]}", &pods()).is_err());
    }
}
