//! Field paths and sets of field paths, and their `FieldsV1` encoding in `managedFields`
//! (`sigs.k8s.io/structured-merge-diff/fieldpath`).

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use super::schema::{ATOMIC, NodeId, Schema};
use super::value::{go_json, value_cmp, write_go_string};

/// One step of a field path.
#[derive(Debug, Clone)]
pub(crate) enum PathElement {
    /// A field of an object: `f:name`.
    Field(String),
    /// An associative list item by its key fields, sorted by name: `k:{"name":"x"}`.
    Key(Vec<(String, Value)>),
    /// A set item by value: `v:"x"`.
    Value(Value),
    /// A list item by position (never produced here, understood when decoding): `i:3`.
    Index(i64),
}

impl PathElement {
    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }

    /// The `FieldsV1` key of this element.
    fn serialize(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let mut out = String::from("k:{");
                for (i, (name, value)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_go_string(&mut out, name);
                    out.push(':');
                    out.push_str(&go_json(value));
                }
                out.push('}');
                out
            }
            PathElement::Value(value) => format!("v:{}", go_json(value)),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `FieldsV1` key; `Ok(None)` for an element type this version does not know.
    fn deserialize(s: &str) -> Result<Option<PathElement>, String> {
        let mut chars = s.chars();
        let (Some(kind), Some(sep)) = (chars.next(), chars.next()) else {
            return Err("key must be 2 characters long".to_string());
        };
        if sep != ':' {
            return Err(format!("missing colon: {s}"));
        }
        let rest = &s[kind.len_utf8() + 1..];
        match kind {
            'f' => Ok(Some(PathElement::Field(rest.to_string()))),
            'v' => serde_json::from_str(rest)
                .map(|v| Some(PathElement::Value(v)))
                .map_err(|e| e.to_string()),
            'k' => {
                let map: Map<String, Value> =
                    serde_json::from_str(rest).map_err(|e| e.to_string())?;
                let mut fields: Vec<(String, Value)> = map.into_iter().collect();
                fields.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Some(PathElement::Key(fields)))
            }
            'i' => rest
                .parse::<i64>()
                .map(|i| Some(PathElement::Index(i)))
                .map_err(|e| e.to_string()),
            _ => Ok(None),
        }
    }
}

impl Ord for PathElement {
    /// Fields, then keys, then values, then indices (`PathElement.Compare`).
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b) {
                    let c = an.cmp(bn).then_with(|| value_cmp(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (PathElement::Value(a), PathElement::Value(b)) => value_cmp(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// `value.ToString` of structured-merge-diff.
fn value_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(value_string).collect::<Vec<_>>().join(",")
        ),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| format!("{k}={}", value_string(v)))
            .collect::<Vec<_>>()
            .join(""),
    }
}

impl fmt::Display for PathElement {
    /// `.name`, `[name="x",protocol="TCP"]`, `[="x"]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

/// A path of elements from the object's root.
pub(crate) type Path = Vec<PathElement>;

/// `.spec.containers[name="app"].image`.
pub(crate) fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of field paths, stored as a tree. A node is a member when its own path is in the set;
/// it can also have children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Set {
    nodes: BTreeMap<PathElement, SetNode>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SetNode {
    member: bool,
    children: Set,
}

impl SetNode {
    fn is_empty(&self) -> bool {
        !self.member && self.children.is_empty()
    }
}

impl Set {
    pub(crate) fn new() -> Set {
        Set::default()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.nodes.values().all(SetNode::is_empty)
    }

    /// Adds a path; the empty path is ignored.
    pub(crate) fn insert(&mut self, path: &[PathElement]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        // An element is cloned only when its node is missing: most inserts share their
        // parents with earlier ones.
        let mut set = self;
        for pe in parents {
            if !set.nodes.contains_key(pe) {
                set.nodes.insert(pe.clone(), SetNode::default());
            }
            set = match set.nodes.get_mut(pe) {
                Some(node) => &mut node.children,
                None => return,
            };
        }
        match set.nodes.get_mut(last) {
            Some(node) => node.member = true,
            None => {
                set.nodes.insert(
                    last.clone(),
                    SetNode {
                        member: true,
                        ..SetNode::default()
                    },
                );
            }
        }
    }

    pub(crate) fn has(&self, path: &[PathElement]) -> bool {
        let Some((last, parents)) = path.split_last() else {
            return false;
        };
        let mut set = self;
        for pe in parents {
            match set.nodes.get(pe) {
                Some(node) => set = &node.children,
                None => return false,
            }
        }
        set.nodes.get(last).is_some_and(|n| n.member)
    }

    /// The subset below one element (`WithPrefix`).
    pub(crate) fn with_prefix(&self, pe: &PathElement) -> Option<&Set> {
        self.nodes
            .get(pe)
            .map(|n| &n.children)
            .filter(|s| !s.is_empty())
    }

    pub(crate) fn union(&self, other: &Set) -> Set {
        let mut out = self.clone();
        for (pe, node) in &other.nodes {
            let entry = out.nodes.entry(pe.clone()).or_default();
            entry.member |= node.member;
            entry.children = entry.children.union(&node.children);
        }
        out.pruned()
    }

    pub(crate) fn intersection(&self, other: &Set) -> Set {
        let mut out = Set::new();
        for (pe, node) in &self.nodes {
            if let Some(theirs) = other.nodes.get(pe) {
                let merged = SetNode {
                    member: node.member && theirs.member,
                    children: node.children.intersection(&theirs.children),
                };
                if !merged.is_empty() {
                    out.nodes.insert(pe.clone(), merged);
                }
            }
        }
        out
    }

    /// Removes the paths of `other`; children of a removed member stay.
    pub(crate) fn difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        for (pe, node) in &self.nodes {
            let reduced = match other.nodes.get(pe) {
                Some(theirs) => SetNode {
                    member: node.member && !theirs.member,
                    children: node.children.difference(&theirs.children),
                },
                None => node.clone(),
            };
            if !reduced.is_empty() {
                out.nodes.insert(pe.clone(), reduced);
            }
        }
        out
    }

    /// Removes the paths of `other` and everything below its members.
    pub(crate) fn recursive_difference(&self, other: &Set) -> Set {
        let mut out = Set::new();
        for (pe, node) in &self.nodes {
            let reduced = match other.nodes.get(pe) {
                Some(theirs) if theirs.member => continue,
                Some(theirs) => SetNode {
                    member: node.member,
                    children: node.children.recursive_difference(&theirs.children),
                },
                None => node.clone(),
            };
            if !reduced.is_empty() {
                out.nodes.insert(pe.clone(), reduced);
            }
        }
        out
    }

    fn pruned(mut self) -> Set {
        self.nodes.retain(|_, n| !n.is_empty());
        self
    }

    /// Every path, members of a level before the paths below it (`Set.Iterate`).
    pub(crate) fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for (pe, node) in &self.nodes {
            if node.member {
                let mut path = prefix.clone();
                path.push(pe.clone());
                out.push(path);
            }
        }
        for (pe, node) in &self.nodes {
            if !node.children.is_empty() {
                prefix.push(pe.clone());
                node.children.collect_paths(prefix, out);
                prefix.pop();
            }
        }
    }

    /// Makes every named field that has children a member too, so that removing the set removes
    /// the field (`EnsureNamedFieldsAreMembers`).
    pub(crate) fn ensure_named_fields_are_members(&self, schema: &Schema, node: NodeId) -> Set {
        let mut out = Set::new();
        for (pe, n) in &self.nodes {
            let (child, named) = match pe {
                PathElement::Field(name) => schema.field(node, name),
                PathElement::Key(_) => (schema.elem(node), false),
                _ => (ATOMIC, false),
            };
            let children = n.children.ensure_named_fields_are_members(schema, child);
            let member = n.member || (named && !children.is_empty());
            out.nodes.insert(pe.clone(), SetNode { member, children });
        }
        out
    }

    /// Whether removing this set's paths from the set `fields` encodes (`FieldsV1` JSON, as
    /// `to_fields_v1` writes it) may change it; `false` only when it surely does not, so a
    /// caller can leave `fields` encoded. Element keys are matched as `to_fields_v1` writes them.
    pub(crate) fn may_take_from_fields_v1(&self, fields: &Value) -> bool {
        let Value::Object(map) = fields else {
            return true;
        };
        self.nodes
            .iter()
            .any(|(pe, node)| match map.get(&pe.serialize()) {
                None => false,
                Some(_) if node.member => true,
                Some(child) => node.children.may_take_from_fields_v1(child),
            })
    }

    /// The `FieldsV1` JSON of this set.
    pub(crate) fn to_fields_v1(&self) -> Value {
        Value::Object(self.fields_v1_contents(false))
    }

    fn fields_v1_contents(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self && !self.is_empty() {
            out.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (pe, node) in &self.nodes {
            if node.is_empty() {
                continue;
            }
            let value = if node.children.is_empty() {
                Map::new()
            } else {
                node.children.fields_v1_contents(node.member)
            };
            out.insert(pe.serialize(), Value::Object(value));
        }
        out
    }

    /// Parses `FieldsV1` JSON (`Set.FromJSON`).
    pub(crate) fn from_fields_v1(v: &Value) -> Result<Set, String> {
        let Value::Object(map) = v else {
            return Err("FieldsV1 must be a JSON object".to_string());
        };
        Ok(Self::read_fields_v1(map)?.0)
    }

    /// The set below one `FieldsV1` object and whether the object marks its own path (`.` or no
    /// children).
    fn read_fields_v1(map: &Map<String, Value>) -> Result<(Set, bool), String> {
        let mut set = Set::new();
        let mut is_member = false;
        let mut has_children = false;
        for (key, value) in map {
            if key == "." {
                is_member = true;
                continue;
            }
            let Some(pe) = PathElement::deserialize(key)? else {
                continue;
            };
            let Value::Object(child) = value else {
                return Err(format!("value of {key} must be a JSON object"));
            };
            let (children, member) = Self::read_fields_v1(child)?;
            has_children = true;
            set.nodes.insert(pe, SetNode { member, children });
        }
        let member = is_member || !has_children;
        Ok((set.pruned(), member))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    fn k(name: &str, value: Value) -> PathElement {
        PathElement::Key(vec![(name.to_string(), value)])
    }

    #[test]
    fn fields_v1_round_trip() {
        let cases = [
            json!({"f:data": {"f:a": {}, "f:b": {}}}),
            json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}),
            json!({"f:spec": {"f:containers": {
                "k:{\"name\":\"app\"}": {".": {}, "f:image": {}, "f:name": {}},
                "k:{\"name\":\"side\"}": {".": {}, "f:name": {}},
            }}}),
            json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"a\"": {}, "v:\"b\"": {}}}}),
            json!({"f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}}}),
            json!({}),
        ];
        for case in cases {
            let set = Set::from_fields_v1(&case).unwrap();
            assert_eq!(set.to_fields_v1(), case);
        }
    }

    #[test]
    fn decoding_understands_index_and_ignores_unknown_elements() {
        let set = Set::from_fields_v1(&json!({"f:a": {"i:2": {}}, "z:x": {"f:b": {}}})).unwrap();
        assert!(set.has(&[f("a"), PathElement::Index(2)]));
        assert_eq!(set.paths().len(), 1);
        assert!(Set::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(Set::from_fields_v1(&json!({"x": {}})).is_err());
    }

    #[test]
    fn key_elements_sort_and_print() {
        let pe = PathElement::deserialize("k:{\"protocol\":\"TCP\",\"port\":80}")
            .unwrap()
            .unwrap();
        assert_eq!(pe.serialize(), "k:{\"port\":80,\"protocol\":\"TCP\"}");
        let path = vec![f("spec"), f("ports"), pe, f("name")];
        assert_eq!(
            path_string(&path),
            ".spec.ports[port=80,protocol=\"TCP\"].name"
        );
        assert_eq!(
            path_string(&[
                f("metadata"),
                f("finalizers"),
                PathElement::Value(json!("x"))
            ]),
            ".metadata.finalizers[=\"x\"]"
        );
    }

    #[test]
    fn overlap_with_encoded_sets() {
        let mut owned = Set::new();
        owned.insert(&[f("spec"), f("replicas")]);
        owned.insert(&[f("status"), f("conditions"), k("type", json!("Applied"))]);
        let encoded = owned.to_fields_v1();
        let mut touched = Set::new();
        touched.insert(&[f("status"), f("observedGeneration")]);
        assert!(!touched.may_take_from_fields_v1(&encoded));
        assert_eq!(owned.difference(&touched), owned);
        touched.insert(&[f("status"), f("conditions"), k("type", json!("Applied"))]);
        assert!(touched.may_take_from_fields_v1(&encoded));
        assert_ne!(owned.difference(&touched), owned);
        // A parent of an owned path is not itself owned: removing it leaves the children.
        let mut parent = Set::new();
        parent.insert(&[f("status")]);
        assert!(parent.may_take_from_fields_v1(&encoded));
        assert!(Set::new().may_take_from_fields_v1(&json!([])));
        assert!(!Set::new().may_take_from_fields_v1(&encoded));
    }

    #[test]
    fn set_algebra() {
        let mut a = Set::new();
        a.insert(&[f("data"), f("a")]);
        a.insert(&[f("data"), f("b")]);
        a.insert(&[f("data")]);
        let mut b = Set::new();
        b.insert(&[f("data"), f("a")]);
        b.insert(&[f("spec")]);

        let u = a.union(&b);
        assert!(u.has(&[f("spec")]) && u.has(&[f("data"), f("b")]));
        let i = a.intersection(&b);
        assert_eq!(i.paths(), vec![vec![f("data"), f("a")]]);
        let d = a.difference(&b);
        assert!(d.has(&[f("data")]) && d.has(&[f("data"), f("b")]) && !d.has(&[f("data"), f("a")]));

        let mut data_only = Set::new();
        data_only.insert(&[f("data")]);
        assert_eq!(
            a.difference(&data_only).paths().len(),
            2,
            "children of a removed member stay"
        );
        assert!(a.recursive_difference(&data_only).is_empty());
        assert!(Set::new().is_empty() && !a.is_empty());
        assert_eq!(
            a.paths(),
            vec![
                vec![f("data")],
                vec![f("data"), f("a")],
                vec![f("data"), f("b")]
            ]
        );
        let mut c = Set::new();
        c.insert(&[
            f("spec"),
            f("containers"),
            k("name", json!("x")),
            f("image"),
        ]);
        assert!(c.with_prefix(&f("spec")).is_some());
        assert!(c.with_prefix(&f("status")).is_none());
    }
}
