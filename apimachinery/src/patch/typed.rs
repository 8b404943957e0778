//! Schema-aware walks over objects for server-side apply: field sets, comparison, merge and item
//! removal (`sigs.k8s.io/structured-merge-diff/typed`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::fieldpath::{Path, PathElement, Set};
use super::schema::{ListType, NodeId, ObjectType, Schema};
use super::value::json_eq;

static NULL: Value = Value::Null;

/// How a value at a schema node is walked.
enum Shape<'s> {
    /// Compared and replaced as a whole.
    Leaf,
    /// An object whose keys are tracked one by one.
    Object,
    /// A set or associative list whose items are tracked one by one.
    List(&'s ListType),
}

/// The shape of the non-null value among `values` (the last one wins, as the right-hand side
/// decides in upstream); differing kinds are compared as leaves.
fn shape<'s>(schema: &'s Schema, node: NodeId, values: [Option<&Value>; 2]) -> Shape<'s> {
    let present: Vec<&Value> = values
        .into_iter()
        .flatten()
        .filter(|v| !v.is_null())
        .collect();
    let Some(last) = present.last() else {
        return Shape::Leaf;
    };
    if present
        .iter()
        .any(|v| std::mem::discriminant(*v) != std::mem::discriminant(*last))
    {
        return Shape::Leaf;
    }
    match last {
        Value::Object(_) => match schema.object_type(node) {
            ObjectType::Granular => Shape::Object,
            ObjectType::Atomic => Shape::Leaf,
        },
        Value::Array(_) => match schema.list_type(node) {
            ListType::Atomic => Shape::Leaf,
            other => Shape::List(other),
        },
        _ => Shape::Leaf,
    }
}

fn as_object(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn as_list(v: Option<&Value>) -> &[Value] {
    v.and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

/// The path element identifying a list item (`listItemToPathElement`).
pub(crate) fn item_path_element(list: &ListType, item: &Value) -> Result<PathElement, String> {
    match list {
        ListType::Map { keys, defaults } => {
            let map = match item {
                Value::Object(map) => map,
                Value::Null => {
                    return Err(
                        "associative list with keys may not have a null element".to_string()
                    );
                }
                _ => {
                    return Err(
                        "associative list with keys may not have non-map elements".to_string()
                    );
                }
            };
            let mut fields: Vec<(String, Value)> = Vec::with_capacity(keys.len());
            for key in keys {
                if let Some(v) = map.get(key) {
                    fields.push((key.clone(), v.clone()));
                } else if let Some(default) = defaults.get(key) {
                    fields.push((key.clone(), default.clone()));
                }
            }
            if !keys.is_empty() && fields.is_empty() {
                return Err(format!(
                    "associative list with keys has an element that omits all key fields {keys:?} (and doesn't have default values for any key fields)"
                ));
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(PathElement::Key(fields))
        }
        ListType::Set => match item {
            Value::Object(_) => {
                Err("associative list without keys has an element that's a map type".to_string())
            }
            Value::Array(_) => {
                Err("not supported: associative list with lists as elements".to_string())
            }
            Value::Null => Err(
                "associative list without keys has an element that's an explicit null".to_string(),
            ),
            scalar => Ok(PathElement::Value(scalar.clone())),
        },
        ListType::Atomic => Err("invalid indexing of non-associative list".to_string()),
    }
}

fn with(path: &Path, pe: PathElement) -> Path {
    let mut out = path.clone();
    out.push(pe);
    out
}

/// Prefixes an error with the path it happened at, as upstream validation errors read.
fn at(path: &Path, err: String) -> String {
    if path.is_empty() {
        err
    } else {
        format!("{}: {err}", super::fieldpath::path_string(path))
    }
}

/// The set of fields present in `value` (`TypedValue.ToFieldSet`): leaves, list items and map
/// entries that are not named struct fields.
pub(crate) fn to_field_set(schema: &Schema, value: &Value) -> Result<Set, String> {
    let mut set = Set::new();
    field_set_walk(schema, schema.root, &mut Vec::new(), value, &mut set)?;
    Ok(set)
}

/// `path` is the walk's position, extended and restored around each step (one element
/// allocated per step instead of a whole path per step).
fn field_set_walk(
    schema: &Schema,
    node: NodeId,
    path: &mut Path,
    value: &Value,
    set: &mut Set,
) -> Result<(), String> {
    match (shape(schema, node, [Some(value), None]), value) {
        (Shape::Object, Value::Object(map)) => {
            for (key, child_value) in map {
                let (child, named) = schema.field(node, key);
                path.push(PathElement::Field(key.clone()));
                let walked = field_set_walk(schema, child, path, child_value, set);
                let empty_object = child_value.as_object().is_some_and(Map::is_empty);
                if walked.is_ok() && (child_value.is_null() || empty_object || !named) {
                    set.insert(path);
                }
                path.pop();
                walked?;
            }
        }
        (Shape::List(list), Value::Array(items)) => {
            let elem = schema.elem(node);
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            let mut pes = Vec::with_capacity(items.len());
            for item in items {
                let pe = item_path_element(list, item).map_err(|e| at(path, e))?;
                if !seen.insert(pe.clone()) && duplicates.insert(pe.clone()) {
                    set.insert(&with(path, pe.clone()));
                }
                pes.push(pe);
            }
            for (item, pe) in items.iter().zip(pes) {
                if duplicates.contains(&pe) {
                    continue;
                }
                path.push(pe);
                let walked = field_set_walk(schema, elem, path, item, set);
                if walked.is_ok() {
                    set.insert(path);
                }
                path.pop();
                walked?;
            }
        }
        // Null entries of granular objects are added by their parent; a null at an atomic
        // node is a leaf like any other.
        _ => set.insert(path),
    }
    Ok(())
}

/// Fields added, modified and removed between two objects (`typed.Comparison`).
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: Set,
    pub(crate) modified: Set,
    pub(crate) removed: Set,
}

impl Comparison {
    /// Drops the paths under the reset (ignored) fields (`Comparison.FilterFields`).
    pub(crate) fn exclude(self, ignored: &Set) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

/// Compares two objects (`TypedValue.Compare`).
pub(crate) fn compare(schema: &Schema, lhs: &Value, rhs: &Value) -> Result<Comparison, String> {
    let mut out = Comparison::default();
    compare_walk(
        schema,
        schema.root,
        &mut Vec::new(),
        Some(lhs),
        Some(rhs),
        &mut out,
    )?;
    Ok(out)
}

/// `path` is the walk's position, extended and restored around each step.
fn compare_walk(
    schema: &Schema,
    node: NodeId,
    path: &mut Path,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    out: &mut Comparison,
) -> Result<(), String> {
    // An unchanged subtree adds, removes and modifies nothing: skip it without building a
    // path for each of its fields (most writes change a few fields of a large object).
    if let (Some(l), Some(r)) = (lhs, rhs)
        && json_eq(l, r)
    {
        return Ok(());
    }
    let mut in_leaf = false;
    match shape(schema, node, [lhs, rhs]) {
        Shape::Object => {
            let l = as_object(lhs);
            let r = as_object(rhs);
            if l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty) {
                in_leaf = true;
                compare_leaf(path, lhs, rhs, out);
            } else {
                let keys: BTreeSet<&String> = l
                    .into_iter()
                    .flat_map(Map::keys)
                    .chain(r.into_iter().flat_map(Map::keys))
                    .collect();
                for key in keys {
                    // managedFields are bookkeeping, never fields anybody owns.
                    if key == "managedFields" && is_metadata(path) {
                        continue;
                    }
                    let child = schema.field(node, key).0;
                    path.push(PathElement::Field(key.clone()));
                    let walked = compare_walk(
                        schema,
                        child,
                        path,
                        l.and_then(|m| m.get(key)),
                        r.and_then(|m| m.get(key)),
                        out,
                    );
                    path.pop();
                    walked?;
                }
            }
        }
        Shape::List(list) => {
            let l = as_list(lhs);
            let r = as_list(rhs);
            if l.is_empty() && r.is_empty() {
                in_leaf = true;
                compare_leaf(path, lhs, rhs, out);
            } else {
                compare_list_items(schema, node, list, path, l, r, out)?;
            }
        }
        Shape::Leaf => {
            in_leaf = true;
            compare_leaf(path, lhs, rhs, out);
        }
    }
    if !in_leaf {
        if lhs.is_none() {
            out.added.insert(path);
        } else if rhs.is_none() {
            out.removed.insert(path);
        }
    }
    Ok(())
}

fn is_metadata(path: &Path) -> bool {
    matches!(path.as_slice(), [PathElement::Field(f)] if f == "metadata")
}

fn compare_leaf(path: &Path, lhs: Option<&Value>, rhs: Option<&Value>, out: &mut Comparison) {
    match (lhs, rhs) {
        (None, _) => out.added.insert(path),
        (_, None) => out.removed.insert(path),
        (Some(l), Some(r)) if !json_eq(l, r) => out.modified.insert(path),
        _ => {}
    }
}

/// Items of two associative lists, grouped by path element in first-seen order.
fn group_items<'v>(
    list: &ListType,
    path: &Path,
    items: &'v [Value],
    order: &mut Vec<PathElement>,
    known: Option<&BTreeMap<PathElement, Vec<&'v Value>>>,
) -> Result<BTreeMap<PathElement, Vec<&'v Value>>, String> {
    let mut grouped: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
    for item in items {
        let pe = item_path_element(list, item).map_err(|e| at(path, e))?;
        let entry = grouped.entry(pe.clone()).or_default();
        if entry.is_empty() && known.is_none_or(|k| !k.contains_key(&pe)) {
            order.push(pe);
        }
        entry.push(item);
    }
    Ok(grouped)
}

fn compare_list_items(
    schema: &Schema,
    node: NodeId,
    list: &ListType,
    path: &mut Path,
    lhs: &[Value],
    rhs: &[Value],
    out: &mut Comparison,
) -> Result<(), String> {
    let elem = schema.elem(node);
    let mut order = Vec::new();
    let left = group_items(list, path, lhs, &mut order, None)?;
    let right = group_items(list, path, rhs, &mut order, Some(&left))?;
    for pe in order {
        let l = left.get(&pe).map_or(&[][..], Vec::as_slice);
        let r = right.get(&pe).map_or(&[][..], Vec::as_slice);
        path.push(pe);
        let compared = compare_item(schema, elem, path, l, r, out);
        path.pop();
        compared?;
    }
    Ok(())
}

/// One associative-list item's versions on each side, at `path`.
fn compare_item(
    schema: &Schema,
    elem: NodeId,
    path: &mut Path,
    l: &[&Value],
    r: &[&Value],
    out: &mut Comparison,
) -> Result<(), String> {
    match (l.len(), r.len()) {
        (0, 0) => {}
        (0 | 1, 0 | 1) => {
            compare_walk(
                schema,
                elem,
                path,
                l.first().copied(),
                r.first().copied(),
                out,
            )?;
        }
        (ln, rn) if ln >= 2 && rn >= 2 => {
            let equal = ln == rn && l.iter().zip(r).all(|(a, b)| json_eq(a, b));
            if !equal {
                out.modified.insert(path);
            }
        }
        (ln, _) if ln >= 2 => {
            if let Some(first) = r.first() {
                compare_walk(schema, elem, path, None, Some(first), out)?;
            }
            out.removed.insert(path);
        }
        _ => {
            if let Some(first) = l.first() {
                compare_walk(schema, elem, path, Some(first), None, out)?;
            }
            out.added.insert(path);
        }
    }
    Ok(())
}

/// Merges `rhs` (an applied configuration) into `lhs` (the live object): the right side wins for
/// leaves, objects merge by key, associative lists by item (`TypedValue.Merge`).
pub(crate) fn merge(schema: &Schema, lhs: &Value, rhs: &Value) -> Result<Value, String> {
    Ok(
        merge_walk(schema, schema.root, &Vec::new(), Some(lhs), Some(rhs))?
            .unwrap_or_else(|| Value::Object(Map::new())),
    )
}

fn merge_walk(
    schema: &Schema,
    node: NodeId,
    path: &Path,
    lhs: Option<&Value>,
    rhs: Option<&Value>,
) -> Result<Option<Value>, String> {
    let keep_rhs = || rhs.or(lhs).cloned();
    match shape(schema, node, [lhs, rhs]) {
        Shape::Object => {
            let l = as_object(lhs);
            let r = as_object(rhs);
            if l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty) {
                return Ok(keep_rhs());
            }
            let mut out = Map::new();
            let keys: BTreeSet<&String> = l
                .into_iter()
                .flat_map(Map::keys)
                .chain(r.into_iter().flat_map(Map::keys))
                .collect();
            for key in keys {
                let child = schema.field(node, key).0;
                let merged = merge_walk(
                    schema,
                    child,
                    &with(path, PathElement::Field(key.clone())),
                    l.and_then(|m| m.get(key)),
                    r.and_then(|m| m.get(key)),
                )?;
                if let Some(merged) = merged {
                    out.insert(key.clone(), merged);
                }
            }
            Ok((!out.is_empty()).then_some(Value::Object(out)))
        }
        Shape::List(list) => {
            let l = as_list(lhs);
            let r = as_list(rhs);
            if l.is_empty() && r.is_empty() {
                return Ok(keep_rhs());
            }
            merge_list_items(schema, node, list, path, l, r)
        }
        Shape::Leaf => Ok(keep_rhs()),
    }
}

/// Indexes list items by path element; duplicates are an error unless allowed, then they are
/// merged as null.
fn index_items<'v>(
    list: &ListType,
    path: &Path,
    items: &'v [Value],
    allow_duplicates: bool,
) -> Result<(Vec<PathElement>, BTreeMap<PathElement, &'v Value>), String> {
    let mut pes = Vec::with_capacity(items.len());
    let mut observed: BTreeMap<PathElement, &Value> = BTreeMap::new();
    for item in items {
        let pe = item_path_element(list, item).map_err(|e| at(path, e))?;
        if observed.contains_key(&pe) {
            if !allow_duplicates {
                return Err(at(path, format!("duplicate entries for key {pe}")));
            }
            observed.insert(pe.clone(), &NULL);
        } else {
            observed.insert(pe.clone(), item);
        }
        pes.push(pe);
    }
    Ok((pes, observed))
}

/// `visitListItems` of the merging walker: keeps the live order, placing applied items where
/// they sit relative to the items both sides share.
fn merge_list_items(
    schema: &Schema,
    node: NodeId,
    list: &ListType,
    path: &Path,
    lhs: &[Value],
    rhs: &[Value],
) -> Result<Option<Value>, String> {
    let elem = schema.elem(node);
    let (rhs_pes, observed_rhs) = index_items(list, path, rhs, false)?;
    let (lhs_pes, observed_lhs) = index_items(list, path, lhs, true)?;

    let mut shared = rhs_pes
        .iter()
        .filter(|pe| observed_lhs.contains_key(*pe))
        .cloned()
        .collect::<Vec<_>>()
        .into_iter();
    let mut next_shared = shared.next();
    let mut merged_rhs: BTreeSet<PathElement> = BTreeSet::new();
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let mut push = |item: Option<Value>| out.extend(item);

    let (mut li, mut ri) = (0, 0);
    while li < lhs_pes.len() || ri < rhs_pes.len() {
        if li < lhs_pes.len() && ri < rhs_pes.len() {
            let pe = &lhs_pes[li];
            if *pe == rhs_pes[ri] {
                merged_rhs.insert(pe.clone());
                let item_path = with(path, pe.clone());
                push(merge_walk(
                    schema,
                    elem,
                    &item_path,
                    observed_lhs.get(pe).copied(),
                    observed_rhs.get(pe).copied(),
                )?);
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            if observed_rhs.contains_key(pe) && next_shared.as_ref().is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs_pes.len() {
            let pe = &lhs_pes[li];
            if !observed_rhs.contains_key(pe) {
                let item_path = with(path, pe.clone());
                push(merge_walk(schema, elem, &item_path, Some(&lhs[li]), None)?);
                li += 1;
                continue;
            } else if merged_rhs.contains(pe) {
                li += 1;
            }
        }
        if ri < rhs_pes.len() {
            let pe = &rhs_pes[ri];
            merged_rhs.insert(pe.clone());
            let item_path = with(path, pe.clone());
            push(merge_walk(
                schema,
                elem,
                &item_path,
                observed_lhs.get(pe).copied(),
                observed_rhs.get(pe).copied(),
            )?);
            ri += 1;
            if next_shared.as_ref() == Some(pe) {
                next_shared = shared.next();
            }
        }
    }
    Ok((!out.is_empty()).then_some(Value::Array(out)))
}

/// Removes the fields of `set` from `value` (`TypedValue.RemoveItems`). As upstream, an object or
/// list emptied by the removal becomes `null`; [`drop_new_nulls`] cleans the final object.
pub(crate) fn remove_items(schema: &Schema, value: &Value, set: &Set) -> Value {
    remove_walk(schema, schema.root, value, set)
}

fn remove_walk(schema: &Schema, node: NodeId, value: &Value, set: &Set) -> Value {
    match value {
        Value::Object(map) => {
            if matches!(schema.object_type(node), ObjectType::Atomic) || map.is_empty() {
                return Value::Null;
            }
            let mut out = Map::new();
            for (key, child_value) in map {
                let pe = PathElement::Field(key.clone());
                if set.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                let kept = match set.with_prefix(&pe) {
                    Some(subset) => {
                        remove_walk(schema, schema.field(node, key).0, child_value, subset)
                    }
                    None => child_value.clone(),
                };
                out.insert(key.clone(), kept);
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Object(out)
            }
        }
        Value::Array(items) => {
            let list = schema.list_type(node);
            if matches!(list, ListType::Atomic) || items.is_empty() {
                return Value::Null;
            }
            let elem = schema.elem(node);
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                let Ok(pe) = item_path_element(list, item) else {
                    out.push(item.clone());
                    continue;
                };
                if set.has(std::slice::from_ref(&pe)) {
                    continue;
                }
                match set.with_prefix(&pe) {
                    Some(subset) => out.push(remove_walk(schema, elem, item, subset)),
                    None => out.push(item.clone()),
                }
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Array(out)
            }
        }
        other => other.clone(),
    }
}

/// Drops the nulls an apply left in `result` that `live` did not have at the same place (fields
/// emptied by pruning, nulls in the applied configuration): kube-apiserver's conversion to the Go
/// type drops them for built-in kinds, and so does its pruning of non-nullable fields for custom
/// resources. Null items of associative lists, which cannot be valid, go too.
pub(crate) fn drop_new_nulls(schema: &Schema, result: &mut Value, live: Option<&Value>) {
    drop_walk(schema, schema.root, result, live);
}

fn drop_walk(schema: &Schema, node: NodeId, value: &mut Value, live: Option<&Value>) {
    match value {
        Value::Object(map) => {
            let live_map = as_object(live);
            map.retain(|key, v| {
                !v.is_null()
                    || live_map
                        .and_then(|m| m.get(key))
                        .is_some_and(Value::is_null)
            });
            for (key, child) in map.iter_mut() {
                let child_node = schema.field(node, key).0;
                drop_walk(schema, child_node, child, live_map.and_then(|m| m.get(key)));
            }
        }
        Value::Array(items) if !matches!(schema.list_type(node), ListType::Atomic) => {
            items.retain(|item| !item.is_null());
            let elem = schema.elem(node);
            for item in items.iter_mut() {
                drop_walk(schema, elem, item, None);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::schema::GroupVersionKindRef;
    use super::*;

    fn deployment() -> Schema {
        Schema::builtin(&GroupVersionKindRef::from_api_version(
            "apps/v1",
            "Deployment",
        ))
        .unwrap()
    }

    #[test]
    fn field_sets_follow_the_schema() {
        let schema = deployment();
        let obj = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"app": "web"}},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {"spec": {"containers": [
                    {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}
                ]}},
            },
        });
        let set = to_field_set(&schema, &obj).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({
                "f:apiVersion": {},
                "f:kind": {},
                "f:metadata": {"f:labels": {"f:app": {}}, "f:name": {}},
                "f:spec": {
                    "f:replicas": {},
                    "f:selector": {},
                    "f:template": {"f:spec": {"f:containers": {
                        "k:{\"name\":\"app\"}": {
                            ".": {},
                            "f:image": {},
                            "f:name": {},
                            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {
                                ".": {},
                                "f:containerPort": {},
                            }},
                        },
                    }}},
                },
            })
        );
    }

    #[test]
    fn untyped_objects_track_map_entries() {
        let schema = Schema::untyped();
        let set = to_field_set(&schema, &json!({"spec": {"a": {"b": 1}, "l": [1, 2]}})).unwrap();
        assert_eq!(
            set.to_fields_v1(),
            json!({"f:spec": {".": {}, "f:a": {".": {}, "f:b": {}}, "f:l": {}}})
        );
    }

    #[test]
    fn duplicate_keys() {
        let schema = deployment();
        let containers = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "x"}, {"name": "a", "image": "y"}
        ]}}}});
        let set = to_field_set(&schema, &containers).unwrap();
        assert_eq!(
            set.to_fields_v1()["f:spec"]["f:template"]["f:spec"]["f:containers"],
            json!({"k:{\"name\":\"a\"}": {}})
        );
        let err = merge(&schema, &json!({}), &containers).unwrap_err();
        assert!(
            err.contains("duplicate entries for key [name=\"a\"]"),
            "{err}"
        );
        let err = to_field_set(
            &schema,
            &json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
        )
        .unwrap_err();
        assert!(err.contains("omits all key fields"), "{err}");
    }

    #[test]
    fn comparison() {
        let schema = deployment();
        let old = json!({"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"replicas": 1}});
        let new = json!({"metadata": {"labels": {"a": "1", "c": "3"}, "annotations": {"x": "y"}}, "spec": {"replicas": 2}});
        let cmp = compare(&schema, &old, &new).unwrap();
        assert_eq!(
            cmp.added.to_fields_v1(),
            json!({"f:metadata": {"f:annotations": {".": {}, "f:x": {}}, "f:labels": {"f:c": {}}}})
        );
        assert_eq!(
            cmp.modified.to_fields_v1(),
            json!({"f:spec": {"f:replicas": {}}})
        );
        assert_eq!(
            cmp.removed.to_fields_v1(),
            json!({"f:metadata": {"f:labels": {"f:b": {}}}})
        );
    }

    #[test]
    fn merge_keeps_live_order_and_places_new_items() {
        let schema = deployment();
        let containers = |names: &[&str]| {
            let items: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
            json!({"spec": {"template": {"spec": {"containers": items}}}})
        };
        let names = |v: &Value| -> Vec<String> {
            v["spec"]["template"]["spec"]["containers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["name"].as_str().unwrap().to_string())
                .collect()
        };
        let cases: [(&[&str], &[&str], &[&str]); 5] = [
            (&["a", "b"], &["c"], &["a", "b", "c"]),
            (&["a", "b", "c"], &["b", "x"], &["a", "b", "c", "x"]),
            (&["a", "b", "c"], &["x", "b"], &["a", "x", "b", "c"]),
            (&["a", "b"], &["b", "a"], &["b", "a"]),
            (&["a"], &["x", "a", "y"], &["x", "a", "y"]),
        ];
        for (live, applied, want) in cases {
            let merged = merge(&schema, &containers(live), &containers(applied)).unwrap();
            assert_eq!(names(&merged), want, "{live:?} + {applied:?}");
        }
    }

    #[test]
    fn removal_empties_parents_to_null() {
        let schema = deployment();
        let obj = json!({"metadata": {"name": "d", "labels": {"a": "1"}}, "spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "x"}, {"name": "b", "image": "y"}
        ]}}}});
        let mut set = Set::new();
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("labels".into()),
            PathElement::Field("a".into()),
        ]);
        set.insert(&[
            PathElement::Field("spec".into()),
            PathElement::Field("template".into()),
            PathElement::Field("spec".into()),
            PathElement::Field("containers".into()),
            PathElement::Key(vec![("name".into(), json!("a"))]),
        ]);
        let mut removed = remove_items(&schema, &obj, &set);
        assert_eq!(
            removed,
            json!({"metadata": {"name": "d", "labels": null}, "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "y"}]}}}})
        );
        drop_new_nulls(&schema, &mut removed, Some(&obj));
        assert_eq!(
            removed,
            json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "y"}]}}}})
        );
    }
}
