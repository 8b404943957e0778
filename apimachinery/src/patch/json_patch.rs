//! RFC 6902 JSON patch, with the behaviour of the library kube-apiserver uses
//! (`gopkg.in/evanphx/json-patch.v4`), quirks included: `replace` of a missing object key adds
//! it, `test` of a missing key against `null` passes, negative array indices count from the end,
//! an operation without `value` uses `null`.

use serde_json::{Map, Value};

use super::PatchError;

/// The most operations kube-apiserver accepts in one JSON patch (`maxJSONPatchOperations`).
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Applies an RFC 6902 JSON patch (`application/json-patch+json`) to `original`.
///
/// The patch must be a JSON array of operation objects (`null` is an empty patch). A malformed
/// patch is [`PatchError::BadRequest`], more than [`MAX_JSON_PATCH_OPERATIONS`] operations is
/// [`PatchError::TooManyOperations`], and an operation that does not apply (missing path, failed
/// `test`, unknown `op`) is [`PatchError::Invalid`] carrying the library's error text, e.g.
/// `testing value /metadata/resourceVersion failed: test failed`.
pub fn json_patch(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let operations = decode(patch)?;
    if operations.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            count: operations.len(),
            limit: MAX_JSON_PATCH_OPERATIONS,
        });
    }
    let mut doc = original.clone();
    for op in operations {
        apply_operation(&mut doc, op).map_err(PatchError::Invalid)?;
    }
    Ok(doc)
}

/// Checks the shape kube-apiserver's strict decoding into `[]jsonPatchOp` checks: an array of
/// objects whose `op`, `path` and `from` are strings when present.
fn decode(patch: &Value) -> Result<Vec<&Map<String, Value>>, PatchError> {
    let items = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(PatchError::BadRequest(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                go_json_type(other)
            )));
        }
    };
    let mut operations = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(op) = item else {
            return Err(PatchError::BadRequest(format!(
                "error decoding patch: json: cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                go_json_type(item)
            )));
        };
        for field in ["op", "path", "from"] {
            match op.get(field) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(PatchError::BadRequest(format!(
                        "error decoding patch: json: cannot unmarshal {} into Go struct field jsonPatchOp.{field} of type string",
                        go_json_type(other)
                    )));
                }
            }
        }
        operations.push(op);
    }
    Ok(operations)
}

/// The name `encoding/json` uses for a JSON value's type in its errors.
pub fn go_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

const MISSING: &str = "missing value";
const INVALID_INDEX: &str = "invalid index referenced";

fn apply_operation(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let kind = match op.get("op") {
        Some(Value::String(kind)) => kind.as_str(),
        _ => "unknown",
    };
    match kind {
        "add" => add(doc, op),
        "remove" => remove(doc, op),
        "replace" => replace(doc, op),
        "move" => move_op(doc, op),
        "test" => test(doc, op),
        "copy" => copy(doc, op),
        other => Err(format!("Unexpected kind: {other}")),
    }
}

fn string_field<'a>(op: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    match op.get(name) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

fn path_field(op: &Map<String, Value>) -> Result<&str, String> {
    string_field(op, "path").ok_or_else(|| format!("operation missing path field: {MISSING}"))
}

fn from_field(op: &Map<String, Value>) -> Result<&str, String> {
    string_field(op, "from").ok_or_else(|| format!("operation, missing from field: {MISSING}"))
}

/// The operation's `value`; an absent `value` is `null` for the library.
fn value_field(op: &Map<String, Value>) -> Value {
    op.get("value").cloned().unwrap_or(Value::Null)
}

fn add(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let path =
        path_field(op).map_err(|_| format!("add operation failed to decode path: {MISSING}"))?;
    let (container, key) = find_object(doc, path).ok_or_else(|| {
        format!("add operation does not apply: doc is missing path: \"{path}\": {MISSING}")
    })?;
    container_add(container, &key, value_field(op))
        .map_err(|e| format!("error in add for path: '{path}': {e}"))
}

fn remove(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let path =
        path_field(op).map_err(|_| format!("remove operation failed to decode path: {MISSING}"))?;
    let (container, key) = find_object(doc, path).ok_or_else(|| {
        format!("remove operation does not apply: doc is missing path: \"{path}\": {MISSING}")
    })?;
    container_remove(container, &key)
        .map(drop)
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn replace(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let path =
        path_field(op).map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    if path.is_empty() {
        let value = value_field(op);
        if !matches!(value, Value::Object(_) | Value::Array(_)) {
            return Err("replace operation value must be object or array: %!w(<nil>)".to_string());
        }
        *doc = value;
        return Ok(());
    }
    let (container, key) = find_object(doc, path).ok_or_else(|| {
        format!("replace operation does not apply: doc is missing path: {path}: {MISSING}")
    })?;
    if container_get(container, &key).is_err() {
        return Err(format!(
            "replace operation does not apply: doc is missing key: {path}: {MISSING}"
        ));
    }
    container_set(container, &key, value_field(op))
        .map_err(|e| format!("error in remove for path: '{path}': {e}"))
}

fn move_op(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let from = from_field(op).map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let (container, key) = find_object(doc, from).ok_or_else(|| {
        format!("move operation does not apply: doc is missing from path: {from}: {MISSING}")
    })?;
    container_get(container, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let value = container_remove(container, &key)
        .map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = path_field(op).map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let (container, key) = find_object(doc, path).ok_or_else(|| {
        format!("move operation does not apply: doc is missing destination path: {path}: {MISSING}")
    })?;
    container_add(container, &key, value)
        .map_err(|e| format!("error in move for path: '{path}': {e}"))
}

fn test(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let path = path_field(op).map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || format!("testing value {path} failed: test failed");
    if path.is_empty() {
        return match op.get("value") {
            Some(expected) if expected == doc => Ok(()),
            _ => Err(failed()),
        };
    }
    let (container, key) = find_object(doc, path).ok_or_else(|| {
        format!("test operation does not apply: is missing path: {path}: {MISSING}")
    })?;
    let actual = container_get(container, &key)
        .map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    // The library represents both a missing key and a JSON null as "no node".
    match (actual.filter(|v| !v.is_null()), op.get("value")) {
        (None, None | Some(Value::Null)) => Ok(()),
        (None, Some(_)) | (Some(_), None) => Err(failed()),
        (Some(actual), Some(expected)) if actual == expected => Ok(()),
        (Some(_), Some(_)) => Err(failed()),
    }
}

fn copy(doc: &mut Value, op: &Map<String, Value>) -> Result<(), String> {
    let from = from_field(op).map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let (container, key) = find_object(doc, from).ok_or_else(|| {
        format!("copy operation does not apply: doc is missing from path: {from}: {MISSING}")
    })?;
    // A missing object key copies as null, as in the library.
    let value = container_get(container, &key)
        .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
        .cloned()
        .unwrap_or(Value::Null);
    let path =
        path_field(op).map_err(|_| format!("copy operation failed to decode path: {MISSING}"))?;
    let (container, key) = find_object(doc, path).ok_or_else(|| {
        format!("copy operation does not apply: doc is missing destination path: {path}: {MISSING}")
    })?;
    container_add(container, &key, value)
        .map_err(|e| format!("error while adding value during copy: {e}"))
}

/// Unescapes one JSON pointer token in a single left-to-right pass (`~1` → `/`, `~0` → `~`).
fn decode_token(token: &str) -> String {
    let mut out = String::with_capacity(token.len());
    let mut chars = token.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    chars.next();
                    out.push('/');
                    continue;
                }
                Some('0') => {
                    chars.next();
                    out.push('~');
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// The container holding the last token of `path`, and that token (`findObject` in the
/// library: it ignores the first token, so paths must start with `/`).
fn find_object<'a>(doc: &'a mut Value, path: &str) -> Option<(&'a mut Value, String)> {
    let tokens: Vec<&str> = path.split('/').collect();
    if tokens.len() < 2 {
        return None;
    }
    let key = decode_token(tokens[tokens.len() - 1]);
    let mut current = doc;
    for part in &tokens[1..tokens.len() - 1] {
        let part = decode_token(part);
        let next = container_get_mut(current, &part)?;
        if !matches!(next, Value::Object(_) | Value::Array(_)) {
            return None;
        }
        current = next;
    }
    if !matches!(current, Value::Object(_) | Value::Array(_)) {
        return None;
    }
    Some((current, key))
}

/// `strconv.Atoi` as the library uses it for array indices.
fn atoi(key: &str) -> Result<i64, String> {
    key.parse::<i64>().map_err(|e| {
        let why = if matches!(
            e.kind(),
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow
        ) {
            "value out of range"
        } else {
            "invalid syntax"
        };
        format!("strconv.Atoi: parsing {key:?}: {why}")
    })
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: {INVALID_INDEX}")
}

/// Resolves a possibly negative index against a length; `None` when out of range below.
fn from_end(idx: i64, len: usize) -> Option<usize> {
    let len = i64::try_from(len).ok()?;
    if idx < 0 {
        if idx < -len {
            return None;
        }
        usize::try_from(idx + len).ok()
    } else {
        usize::try_from(idx).ok()
    }
}

fn container_get_mut<'a>(container: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    match container {
        Value::Object(map) => map.get_mut(key),
        Value::Array(items) => {
            let idx = atoi(key).ok()?;
            let idx = from_end(idx, items.len())?;
            items.get_mut(idx)
        }
        _ => None,
    }
}

/// `get` of the library's containers: a missing object key is `Ok(None)`, a bad array index an
/// error.
fn container_get<'a>(container: &'a Value, key: &str) -> Result<Option<&'a Value>, String> {
    match container {
        Value::Object(map) => Ok(map.get(key)),
        Value::Array(items) => {
            let idx = atoi(key)?;
            let resolved = from_end(idx, items.len()).ok_or_else(|| invalid_index(idx))?;
            items
                .get(resolved)
                .map(Some)
                .ok_or_else(|| invalid_index(idx))
        }
        _ => Err("unknown object type".to_string()),
    }
}

fn container_add(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            if key == "-" {
                items.push(value);
                return Ok(());
            }
            let idx = atoi(key)
                .map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
            let new_len = items.len() + 1;
            if idx >= 0 && usize::try_from(idx).is_ok_and(|i| i >= new_len) {
                return Err(invalid_index(idx));
            }
            let at = from_end(idx, new_len).ok_or_else(|| invalid_index(idx))?;
            items.insert(at, value);
            Ok(())
        }
        _ => Err("unknown object type".to_string()),
    }
}

fn container_set(container: &mut Value, key: &str, value: Value) -> Result<(), String> {
    match container {
        Value::Object(map) => {
            map.insert(key.to_string(), value);
            Ok(())
        }
        Value::Array(items) => {
            let idx = atoi(key)?;
            let at = from_end(idx, items.len()).ok_or_else(|| invalid_index(idx))?;
            let slot = items.get_mut(at).ok_or_else(|| invalid_index(idx))?;
            *slot = value;
            Ok(())
        }
        _ => Err("unknown object type".to_string()),
    }
}

fn container_remove(container: &mut Value, key: &str) -> Result<Value, String> {
    match container {
        Value::Object(map) => map
            .remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: {MISSING}")),
        Value::Array(items) => {
            let idx = atoi(key)?;
            if idx >= 0 && usize::try_from(idx).is_ok_and(|i| i >= items.len()) {
                return Err(invalid_index(idx));
            }
            let at = from_end(idx, items.len()).ok_or_else(|| invalid_index(idx))?;
            Ok(items.remove(at))
        }
        _ => Err("unknown object type".to_string()),
    }
}

#[cfg(test)]
mod tests;
