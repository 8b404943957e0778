//! Evaluation of parsed JSONPath nodes over JSON values (client-go `util/jsonpath/jsonpath.go`).

use std::borrow::Cow;
use std::cmp::Ordering;

use serde_json::Value;

use super::parser::{Node, SliceParam};

/// The values a step produced: references into the object, or literals from the path.
pub(crate) type Values<'a> = Vec<Cow<'a, Value>>;

/// A failed step. Upstream returns some values along with the error (often the step's input),
/// and the `exists` filter looks at them, so they are kept.
pub(crate) struct Failure<'a> {
    pub values: Values<'a>,
    pub message: String,
}

type Step<'a> = Result<Values<'a>, Failure<'a>>;

fn fail<'a>(values: Values<'a>, message: impl Into<String>) -> Step<'a> {
    Err(Failure {
        values,
        message: message.into(),
    })
}

pub(crate) struct Evaluator {
    pub allow_missing_keys: bool,
}

/// Go's reflect kinds as far as comparisons care.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Scalar<'v> {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'v str),
}

fn scalar(value: &Value) -> Option<Scalar<'_>> {
    match value {
        Value::Bool(b) => Some(Scalar::Bool(*b)),
        // Unstructured JSON holds integers as int64 and anything else as float64.
        Value::Number(n) => Some(match n.as_i64() {
            Some(i) => Scalar::Int(i),
            None => Scalar::Float(n.as_f64().unwrap_or(f64::NAN)),
        }),
        Value::String(s) => Some(Scalar::Str(s)),
        _ => None,
    }
}

const BAD_TYPE: &str = "invalid type for comparison";
const INCOMPATIBLE: &str = "incompatible types for comparison";

/// `template.Equal` of text/template (forked into client-go).
fn equal(a: &Value, b: &Value) -> Result<bool, &'static str> {
    match (scalar(a).ok_or(BAD_TYPE)?, scalar(b).ok_or(BAD_TYPE)?) {
        (Scalar::Bool(x), Scalar::Bool(y)) => Ok(x == y),
        (Scalar::Int(x), Scalar::Int(y)) => Ok(x == y),
        (Scalar::Float(x), Scalar::Float(y)) => Ok(x == y),
        (Scalar::Str(x), Scalar::Str(y)) => Ok(x == y),
        _ => Err(INCOMPATIBLE),
    }
}

/// `template.Less`.
fn less(a: &Value, b: &Value) -> Result<bool, &'static str> {
    match (scalar(a).ok_or(BAD_TYPE)?, scalar(b).ok_or(BAD_TYPE)?) {
        (Scalar::Bool(_), Scalar::Bool(_)) => Err(BAD_TYPE),
        (Scalar::Int(x), Scalar::Int(y)) => Ok(x < y),
        (Scalar::Float(x), Scalar::Float(y)) => Ok(x.partial_cmp(&y) == Some(Ordering::Less)),
        (Scalar::Str(x), Scalar::Str(y)) => Ok(x < y),
        _ => Err(INCOMPATIBLE),
    }
}

fn compare(op: &str, left: &Value, right: &Value) -> Result<bool, String> {
    let result = match op {
        "==" => equal(left, right),
        "!=" => equal(left, right).map(|e| !e),
        "<" => less(left, right),
        "<=" => less(left, right).and_then(|l| if l { Ok(true) } else { equal(left, right) }),
        ">" => less(left, right).and_then(|l| {
            if l {
                Ok(false)
            } else {
                equal(left, right).map(|e| !e)
            }
        }),
        ">=" => less(left, right).map(|l| !l),
        other => return Err(format!("unrecognized filter operator {other}")),
    };
    result.map_err(str::to_string)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// The children `.*` and `..` visit: object values, array items, or the bytes of a string.
fn children<'a>(value: &Cow<'a, Value>) -> Values<'a> {
    match value {
        Cow::Borrowed(v) => match v {
            Value::Object(map) => map.values().map(Cow::Borrowed).collect(),
            Value::Array(items) => items.iter().map(Cow::Borrowed).collect(),
            Value::String(s) => s.bytes().map(|b| Cow::Owned(Value::from(b))).collect(),
            _ => Vec::new(),
        },
        Cow::Owned(v) => match v {
            Value::Object(map) => map.values().cloned().map(Cow::Owned).collect(),
            Value::Array(items) => items.iter().cloned().map(Cow::Owned).collect(),
            Value::String(s) => s.bytes().map(|b| Cow::Owned(Value::from(b))).collect(),
            _ => Vec::new(),
        },
    }
}

fn field<'a>(value: &Cow<'a, Value>, name: &str) -> Option<Cow<'a, Value>> {
    match value {
        Cow::Borrowed(v) => v.get(name).map(Cow::Borrowed),
        Cow::Owned(v) => v.get(name).cloned().map(Cow::Owned),
    }
}

fn index<'a>(value: &Cow<'a, Value>, i: usize) -> Option<Cow<'a, Value>> {
    match value {
        Cow::Borrowed(v) => v.get(i).map(Cow::Borrowed),
        Cow::Owned(v) => v.get(i).cloned().map(Cow::Owned),
    }
}

impl Evaluator {
    pub(crate) fn walk<'a>(&self, input: Values<'a>, node: &Node) -> Step<'a> {
        match node {
            Node::List(nodes) => self.eval_list(input, nodes),
            Node::Text(text) => Ok(vec![Cow::Owned(Value::String(text.clone()))]),
            Node::Field(name) => self.eval_field(input, name),
            Node::Array(params) => eval_array(input, params),
            Node::Filter { left, right, op } => self.eval_filter(input, left, right, op),
            Node::Int(i) => Ok(literal(&input, Value::from(*i))),
            Node::Float(f) => Ok(literal(&input, Value::from(*f))),
            Node::Bool(b) => Ok(literal(&input, Value::Bool(*b))),
            Node::Wildcard => Ok(eval_wildcard(input)),
            Node::Recursive => Ok(eval_recursive(input)),
            Node::Union(lists) => self.eval_union(input, lists),
            Node::Identifier(name) => fail(
                input,
                format!("unsupported identifier {name} (range/end are not supported here)"),
            ),
        }
    }

    pub(crate) fn eval_list<'a>(&self, input: Values<'a>, nodes: &[Node]) -> Step<'a> {
        let mut current = input;
        for node in nodes {
            current = self.walk(current, node)?;
        }
        Ok(current)
    }

    fn eval_field<'a>(&self, input: Values<'a>, name: &str) -> Step<'a> {
        if input.is_empty() {
            return Ok(input);
        }
        let results: Values<'a> = input
            .iter()
            .filter(|v| !v.is_null())
            .filter_map(|v| field(v, name))
            .collect();
        if results.is_empty() && !self.allow_missing_keys {
            return fail(results, format!("{name} is not found"));
        }
        Ok(results)
    }

    fn eval_union<'a>(&self, input: Values<'a>, lists: &[Vec<Node>]) -> Step<'a> {
        let mut results = Vec::new();
        for list in lists {
            match self.eval_list(input.clone(), list) {
                Ok(values) => results.extend(values),
                Err(failure) => return fail(input, failure.message),
            }
        }
        Ok(results)
    }

    fn eval_filter<'a>(
        &self,
        input: Values<'a>,
        left: &[Node],
        right: &[Node],
        op: &str,
    ) -> Step<'a> {
        let mut results = Vec::new();
        for value in &input {
            if !value.is_array() {
                let message = format!(
                    "{} is not array or slice and cannot be filtered",
                    type_name(value)
                );
                return fail(input, message);
            }
            for item in children(value) {
                let lefts = self.eval_list(vec![item.clone()], left);
                if op == "exists" {
                    // Upstream checks the returned values even when the step failed.
                    let found = match &lefts {
                        Ok(values) => !values.is_empty(),
                        Err(failure) => !failure.values.is_empty(),
                    };
                    if found {
                        results.push(item);
                    }
                    continue;
                }
                let lefts = match lefts {
                    Ok(values) => values,
                    Err(failure) => return fail(input, failure.message),
                };
                let left_value = match lefts.as_slice() {
                    [] => continue,
                    [one] => one.clone(),
                    _ => return fail(input, "can only compare one element at a time"),
                };
                let rights = match self.eval_list(vec![item.clone()], right) {
                    Ok(values) => values,
                    Err(failure) => return fail(input, failure.message),
                };
                let right_value = match rights.as_slice() {
                    [] => continue,
                    [one] => one.clone(),
                    _ => return fail(input, "can only compare one element at a time"),
                };
                match compare(op, &left_value, &right_value) {
                    Ok(true) => results.push(item),
                    Ok(false) => {}
                    Err(message) => return fail(results, message),
                }
            }
        }
        Ok(results)
    }
}

fn literal<'a>(input: &Values<'a>, value: Value) -> Values<'a> {
    input.iter().map(|_| Cow::Owned(value.clone())).collect()
}

fn eval_array<'a>(input: Values<'a>, node_params: &[SliceParam; 3]) -> Step<'a> {
    let mut results = Vec::new();
    for value in &input {
        if value.is_null() {
            continue;
        }
        let Some(len) = value.as_array().map(|a| a.len() as i64) else {
            let message = format!("{} is not array or slice", type_name(value));
            return fail(input, message);
        };
        let mut p = *node_params;
        if !p[0].known {
            p[0].value = 0;
        }
        if p[0].value < 0 {
            p[0].value = p[0].value.saturating_add(len);
        }
        if !p[1].known {
            p[1].value = len;
        }
        if p[1].value < 0 || (p[1].value == 0 && p[1].derived) {
            p[1].value = p[1].value.saturating_add(len);
        }
        if p[1].value == p[0].value {
            // An empty selection ends the whole step, as upstream returns here.
            return Ok(results);
        }
        if p[0].value >= len || p[0].value < 0 {
            let message = format!(
                "array index out of bounds: index {}, length {len}",
                p[0].value
            );
            return fail(input, message);
        }
        if p[1].value > len || p[1].value < 0 {
            let message = format!(
                "array index out of bounds: index {}, length {len}",
                p[1].value - 1
            );
            return fail(input, message);
        }
        if p[0].value > p[1].value {
            let message = format!(
                "starting index {} is greater than ending index {}",
                p[0].value, p[1].value
            );
            return fail(input, message);
        }
        let step = if p[2].known {
            if p[2].value <= 0 {
                return fail(input, "step must be > 0");
            }
            p[2].value as usize
        } else {
            1
        };
        let (start, end) = (p[0].value as usize, p[1].value as usize);
        for i in (start..end).step_by(step) {
            if let Some(item) = index(value, i) {
                results.push(item);
            }
        }
    }
    Ok(results)
}

fn eval_wildcard(input: Values<'_>) -> Values<'_> {
    input
        .iter()
        .filter(|v| !v.is_null())
        .flat_map(children)
        .collect()
}

fn eval_recursive(input: Values<'_>) -> Values<'_> {
    let mut results = Vec::new();
    for value in input {
        if value.is_null() {
            continue;
        }
        let kids = children(&value);
        if !kids.is_empty() {
            results.push(value);
            results.extend(eval_recursive(kids));
        }
    }
    results
}
