//! Strategic merge patch as kube-apiserver applies it
//! (`StrategicMergeMapPatch` in `k8s.io/apimachinery/pkg/util/strategicpatch`, with
//! `MergeParallelList` and `IgnoreUnmatchedNulls` set, as on the server).
//!
//! Maps merge recursively and `null` deletes a key. Lists tagged `patchStrategy:"merge"` merge by
//! their `patchMergeKey` (or as sets, for scalars); other lists are replaced. Directives:
//! `$patch: replace|delete` in maps and list items, `$setElementOrder/<list>`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<list>`.
//!
//! kube-apiserver decodes the merged map into the Go type afterwards, which silently drops nulls
//! and unknown `$...` keys that a patch smuggles into new values; this server keeps JSON, so those
//! are dropped here instead.

use serde_json::{Map, Value};

use super::PatchError;
use super::schema::{GroupVersionKindRef, NodeId, Schema, SmpList};
use super::value::{Kind, json_eq, kind};

const DIRECTIVE_MARKER: &str = "$patch";
const DELETE_DIRECTIVE: &str = "delete";
const REPLACE_DIRECTIVE: &str = "replace";
const MERGE_DIRECTIVE: &str = "merge";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder";

/// Applies a strategic merge patch (`application/strategic-merge-patch+json`) to an object of a
/// built-in kind.
///
/// A kind without a merge table is [`PatchError::UnsupportedMediaType`] (415); a patch that is
/// not a JSON object or has a malformed directive is [`PatchError::BadRequest`]; a list of lists
/// is [`PatchError::Invalid`]; other merge failures (an item without its merge key, an unknown
/// `$patch` value) are [`PatchError::Internal`], as kube-apiserver passes them through.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    gvk: &GroupVersionKindRef<'_>,
) -> Result<Value, PatchError> {
    let schema =
        Schema::builtin(gvk).ok_or_else(|| PatchError::UnsupportedMediaType(gvk.to_string()))?;
    strategic_merge_patch_with(&schema, original, patch)
}

/// [`strategic_merge_patch`] with an explicit schema.
pub(crate) fn strategic_merge_patch_with(
    schema: &Schema,
    original: &Value,
    patch: &Value,
) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        other => {
            return Err(PatchError::BadRequest(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                go_type(other)
            )));
        }
    };
    let original = match original {
        Value::Object(map) => map.clone(),
        _ => Map::new(),
    };
    merge_map(schema, schema.root, original, patch).map(Value::Object)
}

fn go_type(v: &Value) -> &'static str {
    match kind(v) {
        Kind::Null => "null",
        Kind::Bool => "bool",
        Kind::Number => "number",
        Kind::String => "string",
        Kind::Array => "array",
        Kind::Object => "object",
    }
}

fn bad_arg(expected: &str, actual: &Value) -> PatchError {
    PatchError::Internal(format!(
        "expected a {expected}, but received a {}",
        go_type(actual)
    ))
}

fn no_merge_key(item: &Value, key: &str) -> PatchError {
    PatchError::Internal(format!(
        "map: {item} does not contain declared merge key: {key}"
    ))
}

/// `mergeMap`: merges `patch` into `original`.
fn merge_map(
    schema: &Schema,
    node: NodeId,
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
        // handleDirectiveInMergeMap
        return match directive.as_str() {
            Some(REPLACE_DIRECTIVE) => {
                patch.remove(DIRECTIVE_MARKER);
                let mut replaced = Value::Object(patch);
                sanitize(&mut replaced);
                match replaced {
                    Value::Object(map) => Ok(map),
                    _ => Ok(Map::new()),
                }
            }
            Some(DELETE_DIRECTIVE) => Ok(Map::new()),
            _ => Err(PatchError::Internal(format!(
                "unknown patch type: {directive} in map: {}",
                Value::Object(patch.clone())
            ))),
        };
    }

    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_order(schema, node, &mut original, &mut patch)?;

    let mut keys: Vec<String> = patch.keys().cloned().collect();
    keys.sort();
    for patch_key in keys {
        let Some(patch_value) = patch.remove(&patch_key) else {
            continue;
        };
        let (key, is_delete_list) = if patch_key.starts_with(DELETE_FROM_PRIMITIVE_LIST) {
            (extract_key(&patch_key, DELETE_FROM_PRIMITIVE_LIST)?, true)
        } else {
            (patch_key, false)
        };

        if patch_value.is_null() {
            original.remove(&key);
            continue;
        }

        let existing = original.remove(&key);
        let merged = match existing {
            Some(Value::Object(current))
                if kind(&patch_value) == Kind::Object
                    && !schema.smp_replaces(schema.field(node, &key).0) =>
            {
                let child = schema.field(node, &key).0;
                let Value::Object(patch_map) = patch_value else {
                    continue;
                };
                Some(Value::Object(merge_map(schema, child, current, patch_map)?))
            }
            Some(Value::Array(current)) if kind(&patch_value) == Kind::Array => {
                let child = schema.field(node, &key).0;
                let Value::Array(patch_list) = patch_value else {
                    continue;
                };
                Some(Value::Array(merge_slice_handler(
                    schema,
                    child,
                    current,
                    patch_list,
                    is_delete_list,
                )?))
            }
            Some(current) if is_delete_list => Some(current),
            None if is_delete_list => None,
            _ => {
                // Not in the original, or of another type: the patch value replaces it.
                let mut value = patch_value;
                discard_null_values(&mut value);
                remove_directives(value)
            }
        };
        if let Some(merged) = merged {
            original.insert(key, merged);
        }
    }
    Ok(original)
}

/// `extractKey`: the list name after `<prefix>/`.
fn extract_key(key: &str, prefix: &str) -> Result<String, PatchError> {
    match key.split_once('/') {
        Some((head, rest)) if head == prefix => Ok(rest.to_string()),
        _ => Err(PatchError::BadRequest(
            if prefix == SET_ELEMENT_ORDER {
                "invalid patch format of setElementOrder list"
            } else {
                "invalid patch format of primitive list"
            }
            .to_string(),
        )),
    }
}

/// `applyRetainKeysDirective`: keeps only the listed keys of the original map.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || PatchError::BadRequest("invalid patch format of retainKeys".to_string());
    let Value::Array(retain) = retain else {
        return Err(bad());
    };
    let retained = |key: &str| retain.iter().any(|v| v.as_str() == Some(key));
    for (key, value) in patch.iter() {
        if value.is_null()
            || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || key.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !retained(key) {
            return Err(bad());
        }
    }
    original.retain(|key, _| retained(key));
    Ok(())
}

/// `mergePatchIntoOriginal`: merges each list that has a `$setElementOrder/<list>` directive and
/// orders it by the directive.
fn merge_set_element_order(
    schema: &Schema,
    node: NodeId,
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let mut directives: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    directives.sort();
    for directive in directives {
        let Some(order) = patch.remove(&directive) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(bad_arg("[]interface {}", &order));
        };
        let key = extract_key(&directive, SET_ELEMENT_ORDER)?;
        let original_list = match original.get(&key) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg("[]interface {}", other)),
        };
        let patch_list = match patch.get(&key) {
            None => None,
            Some(Value::Array(list)) => Some(list.clone()),
            Some(other) => return Err(bad_arg("[]interface {}", other)),
        };
        let child = schema.field(node, &key).0;
        let merge_key = merge_key_of(schema.smp_list(child));
        validate_patch_with_set_order_list(
            patch_list.as_deref().unwrap_or_default(),
            &order,
            merge_key.as_deref(),
        )?;

        let mut server_order = original_list.clone().unwrap_or_default();
        let merged = match (&original_list, &patch_list) {
            (Some(current), None) => current.clone(),
            (None, Some(added)) => {
                let mut added = Value::Array(added.clone());
                discard_null_values(&mut added);
                match remove_directives(added) {
                    Some(Value::Array(items)) => items,
                    _ => continue,
                }
            }
            (Some(current), Some(patched)) => {
                let (merged, view) = merge_slice_handler_aliased(
                    schema,
                    child,
                    current.clone(),
                    patched.clone(),
                    false,
                )?;
                server_order = view;
                merged
            }
            (None, None) => continue,
        };

        let (patch_items, server_only) = match &merge_key {
            None => partition_primitives(merged, &order),
            Some(key) => partition_maps(merged, &order, key)?,
        };
        let element_kind = slice_element_kind(&[
            original_list.as_deref().unwrap_or_default(),
            patch_list.as_deref().unwrap_or_default(),
        ])?;
        let ordered = normalize_element_order(
            patch_items,
            server_only,
            &order,
            &server_order,
            merge_key.as_deref(),
            element_kind,
        )?;
        original.insert(key.clone(), Value::Array(ordered));
        patch.remove(&key);
    }
    Ok(())
}

fn merge_key_of(strategy: &SmpList) -> Option<String> {
    match strategy {
        SmpList::Merge(key) => key.clone(),
        SmpList::Replace => None,
    }
}

/// `validatePatchWithSetOrderList`: the non-deleted patch items must appear in the directive, in
/// the same relative order.
fn validate_patch_with_set_order_list(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_deleted = match merge_key {
        Some(_) => extract_to_delete_items(patch_list.to_vec())?.0,
        None => patch_list.to_vec(),
    };
    let (mut patch_index, mut order_index) = (0, 0);
    while patch_index < non_deleted.len() && order_index < order.len() {
        if contains_directive_marker(&non_deleted[patch_index]) {
            patch_index += 1;
            continue;
        }
        if merge_key_value_equal(&non_deleted[patch_index], &order[order_index], merge_key)? {
            patch_index += 1;
        }
        order_index += 1;
    }
    if patch_index < non_deleted.len() && order_index >= order.len() {
        return Err(PatchError::Internal(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER} list:\n{}\n",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

fn contains_directive_marker(item: &Value) -> bool {
    item.as_object()
        .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
}

fn merge_key_value_equal(
    left: &Value,
    right: &Value,
    merge_key: Option<&str>,
) -> Result<bool, PatchError> {
    let Some(key) = merge_key else {
        return Ok(json_eq(left, right));
    };
    let l = left.as_object().ok_or_else(|| bad_arg("map", left))?;
    let r = right.as_object().ok_or_else(|| bad_arg("map", right))?;
    let lv = l.get(key).ok_or_else(|| no_merge_key(left, key))?;
    let rv = r.get(key).ok_or_else(|| no_merge_key(right, key))?;
    Ok(json_eq(lv, rv))
}

/// `mergeSliceHandler`: merge lists tagged for it (and deletion lists), replace the others.
fn merge_slice_handler(
    schema: &Schema,
    node: NodeId,
    original: Vec<Value>,
    patch: Vec<Value>,
    is_delete_list: bool,
) -> Result<Vec<Value>, PatchError> {
    merge_slice_handler_aliased(schema, node, original, patch, is_delete_list)
        .map(|(merged, _)| merged)
}

/// [`merge_slice_handler`], also returning what upstream's variable holding the original list
/// sees afterwards (see [`GoSliceView`]).
fn merge_slice_handler_aliased(
    schema: &Schema,
    node: NodeId,
    original: Vec<Value>,
    patch: Vec<Value>,
    is_delete_list: bool,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    match schema.smp_list(node) {
        SmpList::Merge(key) => merge_slice(
            schema,
            node,
            original,
            patch,
            key.as_deref(),
            is_delete_list,
        ),
        SmpList::Replace if is_delete_list => {
            merge_slice(schema, node, original, patch, None, is_delete_list)
        }
        SmpList::Replace => {
            let mut replaced = Value::Array(patch);
            sanitize(&mut replaced);
            let items = match replaced {
                Value::Array(items) => items,
                _ => Vec::new(),
            };
            Ok((items, original))
        }
    }
}

/// What a Go variable holding the original list sees while upstream edits the list in place.
///
/// `deleteMatchingEntries` removes items with `append(s[:i], s[i+1:]...)`, which shifts the
/// rest left inside the original backing array, and `mergeSliceWithoutSpecialElements` appends
/// new items into the space that frees. `mergePatchIntoOriginal` then orders by the original
/// variable, so those in-place edits decide where server-only items land.
struct GoSliceView {
    view: Vec<Value>,
    len: usize,
    detached: bool,
}

impl GoSliceView {
    fn new(original: &[Value]) -> Self {
        GoSliceView {
            view: original.to_vec(),
            len: original.len(),
            detached: false,
        }
    }

    fn delete(&mut self, index: usize) {
        if self.detached || index >= self.len || self.len > self.view.len() {
            return;
        }
        for i in index..self.len - 1 {
            self.view[i] = self.view[i + 1].clone();
        }
        self.len -= 1;
    }

    fn append(&mut self, item: &Value) {
        if self.detached {
            return;
        }
        if let Some(slot) = self.view.get_mut(self.len) {
            *slot = item.clone();
        }
        self.len += 1;
    }
}

/// `mergeSlice`: returns the merged list and the in-place view of the original.
fn merge_slice(
    schema: &Schema,
    node: NodeId,
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: Option<&str>,
    is_delete_list: bool,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok((original, Vec::new()));
    }
    let element_kind = slice_element_kind(&[&original, &patch])?;
    let mut view = GoSliceView::new(&original);
    let (original, patch, merged) = if element_kind != Kind::Object {
        if is_delete_list {
            let view = original.clone();
            return Ok((delete_from_slice(original, &patch), view));
        }
        let mut both = original.clone();
        both.extend(patch.iter().cloned());
        (original, patch, deduplicate_scalars(both))
    } else {
        let Some(key) = merge_key else {
            return Err(PatchError::Internal(
                "cannot merge lists without merge key".to_string(),
            ));
        };
        let (original, patch) = merge_slice_with_special_elements(original, patch, key, &mut view)?;
        let merged = merge_slice_without_special_elements(
            schema,
            node,
            original.clone(),
            &patch,
            key,
            &mut view,
        )?;
        (original, patch, merged)
    };

    let (patch_items, server_only) = match (element_kind, merge_key) {
        (Kind::Object, Some(key)) => partition_maps(merged, &patch, key)?,
        _ => partition_primitives(merged, &patch),
    };
    let key = if element_kind == Kind::Object {
        merge_key
    } else {
        None
    };
    let ordered = normalize_element_order(
        patch_items,
        server_only,
        &patch,
        &original,
        key,
        element_kind,
    )?;
    Ok((ordered, view.view))
}

/// `mergeSliceWithSpecialElements`: applies `$patch: delete` items to the original and returns
/// the remaining patch items; `$patch: replace` makes them the whole list.
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    view: &mut GoSliceView,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(map) = item.as_object() else {
            return Err(bad_arg("map", &item));
        };
        match map.get(DIRECTIVE_MARKER) {
            None => plain.push(item),
            Some(directive) => match directive.as_str() {
                Some(DELETE_DIRECTIVE) => {
                    let value = map
                        .get(merge_key)
                        .ok_or_else(|| no_merge_key(&item, merge_key))?;
                    while let Some(i) = find_by_key(&original, merge_key, value)? {
                        original.remove(i);
                        view.delete(i);
                    }
                }
                Some(REPLACE_DIRECTIVE) => replace = true,
                Some(MERGE_DIRECTIVE) => {
                    return Err(PatchError::Internal(
                        "merging lists cannot yet be specified in the patch".to_string(),
                    ));
                }
                _ => {
                    return Err(PatchError::Internal(format!(
                        "unknown patch type: {directive} in map: {item}"
                    )));
                }
            },
        }
    }
    if replace {
        view.detached = true;
        let mut replaced = Value::Array(plain);
        sanitize(&mut replaced);
        let items = match replaced {
            Value::Array(items) => items,
            _ => Vec::new(),
        };
        return Ok((items, Vec::new()));
    }
    Ok((original, plain))
}

/// Index of the first map in `list` whose `key` equals `value` (`findMapInSliceBasedOnKeyValue`).
fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, PatchError> {
    for (i, item) in list.iter().enumerate() {
        let map = item
            .as_object()
            .ok_or_else(|| PatchError::Internal(format!("value for key {i} is not a map")))?;
        if map.get(key).is_some_and(|v| json_eq(v, value)) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `mergeSliceWithoutSpecialElements`: merges patch items into original items with the same key,
/// appends the others.
fn merge_slice_without_special_elements(
    schema: &Schema,
    node: NodeId,
    mut original: Vec<Value>,
    patch: &[Value],
    merge_key: &str,
    view: &mut GoSliceView,
) -> Result<Vec<Value>, PatchError> {
    let elem = schema.elem(node);
    for item in patch {
        let Some(patch_map) = item.as_object() else {
            return Err(bad_arg("map", item));
        };
        let value = patch_map
            .get(merge_key)
            .ok_or_else(|| no_merge_key(item, merge_key))?;
        match find_by_key(&original, merge_key, value)? {
            Some(i) => {
                let current = match std::mem::take(&mut original[i]) {
                    Value::Object(map) => map,
                    _ => Map::new(),
                };
                let merged = merge_map(schema, elem, current, patch_map.clone())?;
                original[i] = Value::Object(merged);
            }
            None => {
                let mut added = item.clone();
                sanitize(&mut added);
                view.append(&added);
                original.push(added);
            }
        }
    }
    Ok(original)
}

fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Vec<Value> {
    current
        .into_iter()
        .filter(|v| !to_delete.iter().any(|d| json_eq(d, v)))
        .collect()
}

fn deduplicate_scalars(items: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(items.len());
    for item in items {
        if !out.iter().any(|seen| json_eq(seen, &item)) {
            out.push(item);
        }
    }
    out
}

/// `sliceElementType`: the common kind of the items of all lists.
fn slice_element_kind(lists: &[&[Value]]) -> Result<Kind, PatchError> {
    let mut found: Option<Kind> = None;
    for item in lists.iter().flat_map(|list| list.iter()) {
        let item_kind = kind(item);
        match found {
            None => {
                if item_kind == Kind::Array {
                    return Err(PatchError::Invalid(
                        "lists of lists are not supported".to_string(),
                    ));
                }
                if item_kind == Kind::Null {
                    return Err(PatchError::Internal("list element is null".to_string()));
                }
                found = Some(item_kind);
            }
            Some(previous) if previous != item_kind => {
                return Err(PatchError::Internal(format!(
                    "list element types are not identical: {}",
                    Value::Array(lists.iter().map(|l| Value::Array(l.to_vec())).collect())
                )));
            }
            Some(_) => {}
        }
    }
    found.ok_or_else(|| PatchError::Internal("no elements in any of the given slices".to_string()))
}

fn partition_primitives(merged: Vec<Value>, by: &[Value]) -> (Vec<Value>, Vec<Value>) {
    merged
        .into_iter()
        .partition(|v| by.iter().any(|b| json_eq(b, v)))
}

fn partition_maps(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut in_patch = Vec::with_capacity(merged.len());
    let mut server_only = Vec::with_capacity(merged.len());
    for item in merged {
        let value = item
            .as_object()
            .ok_or_else(|| bad_arg("map", &item))?
            .get(merge_key)
            .ok_or_else(|| no_merge_key(&item, merge_key))?;
        if find_by_key(by, merge_key, value)?.is_some() {
            in_patch.push(item);
        } else {
            server_only.push(item);
        }
    }
    Ok((in_patch, server_only))
}

/// `normalizeElementOrder`: sorts patch items by the patch order and server-only items by the
/// server order, then interleaves them.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
    element_kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, element_kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, element_kind)?;
    Ok(merge_sorted_slice(
        server_only,
        patch,
        server_order,
        merge_key,
        element_kind,
    ))
}

/// `index`: position of `item` in `list`, comparing merge key values for maps.
fn index_of(
    list: &[Value],
    item: &Value,
    merge_key: Option<&str>,
    element_kind: Kind,
) -> Option<usize> {
    let get = |v: &Value| -> Option<Value> {
        if element_kind == Kind::Object {
            v.as_object()
                .and_then(|m| m.get(merge_key.unwrap_or_default()))
                .cloned()
        } else {
            Some(v.clone())
        }
    };
    let wanted = get(item);
    list.iter()
        .position(|candidate| match (&wanted, get(candidate)) {
            (Some(a), Some(b)) => json_eq(a, &b),
            (None, None) => true,
            _ => false,
        })
}

/// `normalizeSliceOrder`: stable sort of `to_sort` by the positions in `order`, deletions last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: Option<&str>,
    element_kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let (mut to_sort, to_delete) = if element_kind == Kind::Object {
        let key = merge_key.unwrap_or_default();
        for item in to_sort.iter().chain(order) {
            let map = item.as_object().ok_or_else(|| bad_arg("map", item))?;
            if !map.contains_key(key) {
                return Err(no_merge_key(item, key));
            }
        }
        extract_to_delete_items(to_sort)?
    } else {
        (to_sort, Vec::new())
    };
    let positions: Vec<Option<usize>> = to_sort
        .iter()
        .map(|item| index_of(order, item, merge_key, element_kind))
        .collect();
    let mut idx: Vec<usize> = (0..to_sort.len()).collect();
    go_stable_sort(&mut idx, |a, b| match (positions[*a], positions[*b]) {
        (Some(pa), Some(pb)) => pa < pb,
        _ => true,
    });
    let mut taken: Vec<Option<Value>> = to_sort.drain(..).map(Some).collect();
    let mut sorted: Vec<Value> = idx.into_iter().filter_map(|i| taken[i].take()).collect();
    sorted.extend(to_delete);
    Ok(sorted)
}

/// `extractToDeleteItems`: splits out the items marked `$patch: delete`.
fn extract_to_delete_items(items: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut keep = Vec::with_capacity(items.len());
    let mut delete = Vec::new();
    for item in items {
        let map = item.as_object().ok_or_else(|| bad_arg("map", &item))?;
        if map.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE) {
            delete.push(item);
        } else {
            keep.push(item);
        }
    }
    Ok((keep, delete))
}

/// `mergeSortedSlice`: inserts each `left` (server-only) item before the first `right` (patch)
/// item that comes after it in the server order, keeping both lists' own order.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: Option<&str>,
    element_kind: Kind,
) -> Vec<Value> {
    let left_before = |l: &Value, r: &Value| -> bool {
        match (
            index_of(server_order, l, merge_key, element_kind),
            index_of(server_order, r, merge_key, element_kind),
        ) {
            (Some(li), Some(ri)) => li < ri,
            _ => false,
        }
    };
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => left_before(l, r),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Go's `sort.SliceStable` (insertion sort of blocks of 20, then in-place symmetric merges),
/// reproduced because upstream sorts with a comparator that is not a strict order when items are
/// missing from the ordering list, which makes the result depend on the algorithm.
fn go_stable_sort<T>(data: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let n = data.len();
    let mut block = 20;
    let (mut a, mut b) = (0, block);
    while b <= n {
        insertion_sort(data, a, b, &less);
        a = b;
        b += block;
    }
    insertion_sort(data, a, n, &less);
    while block < n {
        let (mut a, mut b) = (0, 2 * block);
        while b <= n {
            sym_merge(data, a, a + block, b, &less);
            a = b;
            b += 2 * block;
        }
        let m = a + block;
        if m < n {
            sym_merge(data, a, m, n, &less);
        }
        block *= 2;
    }
}

fn insertion_sort<T>(data: &mut [T], a: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    for i in a + 1..b {
        let mut j = i;
        while j > a && less(&data[j], &data[j - 1]) {
            data.swap(j, j - 1);
            j -= 1;
        }
    }
}

fn sym_merge<T>(data: &mut [T], a: usize, m: usize, b: usize, less: &impl Fn(&T, &T) -> bool) {
    if m - a == 1 {
        let (mut i, mut j) = (m, b);
        while i < j {
            let h = (i + j) / 2;
            if less(&data[h], &data[a]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        for k in a..i.saturating_sub(1) {
            data.swap(k, k + 1);
        }
        return;
    }
    if b - m == 1 {
        let (mut i, mut j) = (a, m);
        while i < j {
            let h = (i + j) / 2;
            if !less(&data[m], &data[h]) {
                i = h + 1;
            } else {
                j = h;
            }
        }
        let mut k = m;
        while k > i {
            data.swap(k, k - 1);
            k -= 1;
        }
        return;
    }
    let mid = (a + b) / 2;
    let n = mid + m;
    let (mut start, mut r) = if m > mid { (n - b, mid) } else { (a, m) };
    let p = n - 1;
    while start < r {
        let c = (start + r) / 2;
        if !less(&data[p - c], &data[c]) {
            start = c + 1;
        } else {
            r = c;
        }
    }
    let end = n - start;
    if start < m && m < end {
        rotate(data, start, m, end);
    }
    if a < start && start < mid {
        sym_merge(data, a, start, mid, less);
    }
    if mid < end && end < b {
        sym_merge(data, mid, end, b, less);
    }
}

/// Swaps the blocks `[a, m)` and `[m, b)` the way Go's `rotate` does.
fn rotate<T>(data: &mut [T], a: usize, m: usize, b: usize) {
    let mut i = m - a;
    let mut j = b - m;
    while i != j {
        if i > j {
            swap_range(data, m - i, m, j);
            i -= j;
        } else {
            swap_range(data, m - i, m + j - i, i);
            j -= i;
        }
    }
    swap_range(data, m - i, m, i);
}

fn swap_range<T>(data: &mut [T], a: usize, b: usize, n: usize) {
    for k in 0..n {
        data.swap(a + k, b + k);
    }
}

/// `discardNullValuesFromPatch`: drops null members of objects, recursively.
fn discard_null_values(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_null_values);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_null_values),
        _ => {}
    }
}

fn is_directive_key(key: &str) -> bool {
    key == DIRECTIVE_MARKER
        || key == RETAIN_KEYS
        || key.starts_with(SET_ELEMENT_ORDER)
        || key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
}

/// `removeDirectives`: drops maps carrying `$patch` (returning `None` for the value itself) and,
/// beyond upstream, the other directive keys that typed decoding would drop.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            let cleaned = map
                .into_iter()
                .filter(|(k, _)| !is_directive_key(k))
                .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                .collect();
            Some(Value::Object(cleaned))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// Drops nulls and directive keys from a value that is stored as the patch gave it (replaced
/// lists, appended list items, `$patch: replace` maps), as typed decoding would.
fn sanitize(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|k, v| !v.is_null() && !is_directive_key(k));
            map.values_mut().for_each(sanitize);
        }
        Value::Array(items) => items.iter_mut().for_each(sanitize),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
