//! RFC 6902 add/remove/replace over JSON documents whose object keys keep their order, with the
//! rules of `github.com/evanphx/json-patch/v5` as Karmada applies it (missing parents, keys and
//! indexes are errors; `-` appends; negative indexes count from the end).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;

/// A JSON value whose objects keep their keys in document order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl Node {
    pub(crate) fn from_value(v: &Value) -> Node {
        match v {
            Value::Null => Node::Null,
            Value::Bool(b) => Node::Bool(*b),
            Value::Number(n) => Node::Number(n.clone()),
            Value::String(s) => Node::String(s.clone()),
            Value::Array(a) => Node::Array(a.iter().map(Node::from_value).collect()),
            Value::Object(o) => Node::Object(
                o.iter()
                    .map(|(k, v)| (k.clone(), Node::from_value(v)))
                    .collect(),
            ),
        }
    }

    pub(crate) fn into_value(self) -> Value {
        match self {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(b),
            Node::Number(n) => Value::Number(n),
            Node::String(s) => Value::String(s),
            Node::Array(a) => Value::Array(a.into_iter().map(Node::into_value).collect()),
            Node::Object(o) => {
                Value::Object(o.into_iter().map(|(k, v)| (k, v.into_value())).collect())
            }
        }
    }

    fn child_mut(&mut self, token: &str) -> Result<&mut Node, String> {
        match self {
            Node::Object(entries) => entries
                .iter_mut()
                .find(|(k, _)| k == token)
                .map(|(_, v)| v)
                .ok_or_else(|| format!("doc is missing path: key {token:?} not found")),
            Node::Array(items) => {
                let idx = array_index(token, items.len(), false)?;
                Ok(&mut items[idx])
            }
            _ => Err(format!(
                "doc is missing path: {token:?} is not in a container"
            )),
        }
    }
}

impl Serialize for Node {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Number(n) => n.serialize(s),
            Node::String(v) => s.serialize_str(v),
            Node::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Node::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        struct NodeVisitor;
        impl<'de> Visitor<'de> for NodeVisitor {
            type Value = Node;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_none<E>(self) -> Result<Node, E> {
                Ok(Node::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Node, E> {
                Ok(Node::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Node, E> {
                Ok(Node::Number(v.into()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Node, E> {
                Ok(Node::Number(v.into()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Node, E> {
                serde_json::Number::from_f64(v)
                    .map(Node::Number)
                    .ok_or_else(|| E::custom("number out of range"))
            }
            fn visit_str<E>(self, v: &str) -> Result<Node, E> {
                Ok(Node::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Node, E> {
                Ok(Node::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Node::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
                let mut entries: Vec<(String, Node)> = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Node>()? {
                    match entries.iter_mut().find(|(key, _)| *key == k) {
                        Some(entry) => entry.1 = v,
                        None => entries.push((k, v)),
                    }
                }
                Ok(Node::Object(entries))
            }
        }
        d.deserialize_any(NodeVisitor)
    }
}

/// A patch operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Remove,
    Replace,
}

/// One operation of a patch.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PatchOp {
    pub op: Op,
    pub path: String,
    /// The value to add or replace with; JSON null when absent, as upstream.
    pub value: Value,
}

/// Splits an RFC 6901 pointer into unescaped tokens.
pub(crate) fn pointer_tokens(path: &str) -> Result<Vec<String>, String> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(format!(
            "JSON pointer must be empty or start with a \"/\": {path:?}"
        ));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

/// Resolves an array index token; `allow_end` admits `len` (insertion at the end).
fn array_index(token: &str, len: usize, allow_end: bool) -> Result<usize, String> {
    let idx: i64 = token
        .parse()
        .map_err(|_| format!("invalid array index {token:?}"))?;
    let len_i = len as i64;
    let idx = if idx < 0 {
        if idx < -len_i {
            return Err(format!("index {idx} out of bounds"));
        }
        idx + len_i
    } else {
        idx
    };
    let max = if allow_end { len_i } else { len_i - 1 };
    if idx > max {
        return Err(format!("index {idx} out of bounds"));
    }
    Ok(idx as usize)
}

/// Applies operations in order to a document.
pub(crate) fn apply(doc: &mut Node, ops: &[PatchOp]) -> Result<(), String> {
    for op in ops {
        apply_one(doc, op)?;
    }
    Ok(())
}

fn apply_one(doc: &mut Node, op: &PatchOp) -> Result<(), String> {
    let tokens = pointer_tokens(&op.path)?;
    let Some((key, parents)) = tokens.split_last() else {
        return match op.op {
            Op::Add | Op::Replace => {
                *doc = Node::from_value(&op.value);
                Ok(())
            }
            Op::Remove => Err("unable to remove the whole document".into()),
        };
    };
    let mut container = &mut *doc;
    for token in parents {
        container = container.child_mut(token)?;
    }
    let value = Node::from_value(&op.value);
    match (op.op, container) {
        (Op::Add, Node::Object(entries)) => {
            match entries.iter_mut().find(|(k, _)| k == key) {
                Some(entry) => entry.1 = value,
                None => entries.push((key.clone(), value)),
            }
            Ok(())
        }
        (Op::Add, Node::Array(items)) => {
            if key == "-" {
                items.push(value);
            } else {
                let idx = array_index(key, items.len(), true)?;
                items.insert(idx, value);
            }
            Ok(())
        }
        (Op::Replace, Node::Object(entries)) => match entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => {
                entry.1 = value;
                Ok(())
            }
            None => Err(format!(
                "replace operation does not apply: doc is missing key: {}",
                op.path
            )),
        },
        (Op::Replace, Node::Array(items)) => {
            let idx = array_index(key, items.len(), false)?;
            items[idx] = value;
            Ok(())
        }
        (Op::Remove, Node::Object(entries)) => match entries.iter().position(|(k, _)| k == key) {
            Some(pos) => {
                entries.remove(pos);
                Ok(())
            }
            None => Err(format!(
                "unable to remove nonexistent key: {key}: missing value"
            )),
        },
        (Op::Remove, Node::Array(items)) => {
            let idx = array_index(key, items.len(), false)?;
            items.remove(idx);
            Ok(())
        }
        (_, _) => Err(format!("doc is missing path: {}", op.path)),
    }
}

/// Applies a patch to a JSON value.
pub(crate) fn apply_to_value(value: &mut Value, ops: &[PatchOp]) -> Result<(), String> {
    if ops.is_empty() {
        return Ok(());
    }
    let mut doc = Node::from_value(value);
    apply(&mut doc, ops)?;
    *value = doc.into_value();
    Ok(())
}

/// Compact JSON with `<`, `>`, `&`, U+2028 and U+2029 escaped, as Go's `json.Marshal` writes it.
/// These characters only occur inside strings, so escaping the text is safe.
pub(crate) fn go_json<T: Serialize>(v: &T) -> Result<String, String> {
    let s = serde_json::to_string(v).map_err(|e| e.to_string())?;
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn op(op: Op, path: &str, value: Value) -> PatchOp {
        PatchOp {
            op,
            path: path.into(),
            value,
        }
    }

    #[test]
    fn patch_table() {
        let doc = json!({"a": {"b": 1}, "list": [1, 2, 3], "k/x": {"t~": 0}});
        let cases: Vec<(PatchOp, Result<Value, ()>)> = vec![
            (
                op(Op::Add, "/a/c", json!(2)),
                Ok(json!({"a": {"b": 1, "c": 2}, "list": [1, 2, 3], "k/x": {"t~": 0}})),
            ),
            (
                op(Op::Add, "/a/b", json!(5)),
                Ok(json!({"a": {"b": 5}, "list": [1, 2, 3], "k/x": {"t~": 0}})),
            ),
            (
                op(Op::Add, "/list/-", json!(4)),
                Ok(json!({"a": {"b": 1}, "list": [1, 2, 3, 4], "k/x": {"t~": 0}})),
            ),
            (
                op(Op::Add, "/list/0", json!(0)),
                Ok(json!({"a": {"b": 1}, "list": [0, 1, 2, 3], "k/x": {"t~": 0}})),
            ),
            (
                op(Op::Add, "/list/3", json!(9)),
                Ok(json!({"a": {"b": 1}, "list": [1, 2, 3, 9], "k/x": {"t~": 0}})),
            ),
            (op(Op::Add, "/list/4", json!(9)), Err(())),
            (op(Op::Add, "/missing/x", json!(1)), Err(())),
            (
                op(Op::Replace, "/a/b", json!("x")),
                Ok(json!({"a": {"b": "x"}, "list": [1, 2, 3], "k/x": {"t~": 0}})),
            ),
            (op(Op::Replace, "/a/zz", json!(1)), Err(())),
            (
                op(Op::Replace, "/list/-1", json!(7)),
                Ok(json!({"a": {"b": 1}, "list": [1, 2, 7], "k/x": {"t~": 0}})),
            ),
            (
                op(Op::Replace, "/k~1x/t~0", json!(1)),
                Ok(json!({"a": {"b": 1}, "list": [1, 2, 3], "k/x": {"t~": 1}})),
            ),
            (
                op(Op::Remove, "/list/1", Value::Null),
                Ok(json!({"a": {"b": 1}, "list": [1, 3], "k/x": {"t~": 0}})),
            ),
            (op(Op::Remove, "/a/zz", Value::Null), Err(())),
            (op(Op::Remove, "/list/3", Value::Null), Err(())),
            (op(Op::Add, "a", json!(1)), Err(())),
            (op(Op::Add, "/list/x", json!(1)), Err(())),
        ];
        for (i, (o, want)) in cases.into_iter().enumerate() {
            let mut v = doc.clone();
            let got = apply_to_value(&mut v, std::slice::from_ref(&o)).map(|_| v);
            match want {
                Ok(w) => assert_eq!(got, Ok(w), "case {i}: {o:?}"),
                Err(()) => assert!(got.is_err(), "case {i}: {o:?} gave {got:?}"),
            }
        }
    }

    #[test]
    fn key_order_is_kept() {
        let mut doc: Node =
            serde_json::from_str(r#"{"zeta": 1, "alpha": {"y": 1, "b": 2}}"#).unwrap();
        apply(
            &mut doc,
            &[
                op(Op::Add, "/alpha/a", json!(true)),
                op(Op::Replace, "/zeta", json!("<&>")),
            ],
        )
        .unwrap();
        assert_eq!(
            go_json(&doc).unwrap(),
            r#"{"zeta":"\u003c\u0026\u003e","alpha":{"y":1,"b":2,"a":true}}"#
        );
    }
}
