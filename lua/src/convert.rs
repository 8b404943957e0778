//! Values between JSON and Lua as Karmada's VM passes them (gopher-json's `Decode` and
//! `Encode`, `ConvertLuaResultInto`): objects become tables, `null` becomes nil (so it vanishes
//! from tables and arrays), numbers become Lua numbers; a returned table becomes a JSON array
//! when its keys are 1..n, an object when they are strings, and `[]` when it is empty — which
//! [`repair_empty_tables`] then corrects from the inputs.

use std::collections::HashSet;

use mlua::{Lua, Table, Value as LuaValue};
use serde_json::{Map, Number, Value};

use crate::projection::Projection;
use crate::tables;

/// Tables nested deeper than this are refused (a script building a chain of tables must not
/// overflow the converter's stack).
const MAX_DEPTH: usize = 512;

/// A JSON value as a Lua value. In a sandboxed state its tables record the keys scripts add
/// (see `tables`).
pub fn to_lua(lua: &Lua, value: &Value) -> mlua::Result<LuaValue> {
    to_lua_tracked(lua, value, tables::metatable(lua).as_ref())
}

fn to_lua_tracked(lua: &Lua, value: &Value, tracked: Option<&Table>) -> mlua::Result<LuaValue> {
    Ok(match value {
        Value::Null => LuaValue::Nil,
        Value::Bool(b) => LuaValue::Boolean(*b),
        Value::Number(n) => LuaValue::Number(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => LuaValue::String(lua.create_string(s)?),
        Value::Array(items) => {
            let t = lua.create_table_with_capacity(items.len(), 0)?;
            // gopher-lua's Append skips nil: nulls leave no hole in the sequence.
            let mut i = 0;
            for item in items {
                if item.is_null() {
                    continue;
                }
                i += 1;
                set(lua, &t, i, item, tracked)?;
            }
            tables::track(&t, tracked)?;
            LuaValue::Table(t)
        }
        Value::Object(map) => {
            let t = lua.create_table_with_capacity(0, map.len())?;
            for (k, v) in map {
                if !v.is_null() {
                    set(lua, &t, k.as_str(), v, tracked)?;
                }
            }
            tables::track(&t, tracked)?;
            LuaValue::Table(t)
        }
    })
}

/// The parts of a JSON value that `projection` selects, as a Lua value: an object keeps only
/// the selected fields; anything else, and every subtree selected whole, is converted in full.
pub(crate) fn to_lua_projected(
    lua: &Lua,
    value: &Value,
    projection: &Projection,
) -> mlua::Result<LuaValue> {
    projected(lua, value, projection, tables::metatable(lua).as_ref())
}

fn projected(
    lua: &Lua,
    value: &Value,
    projection: &Projection,
    tracked: Option<&Table>,
) -> mlua::Result<LuaValue> {
    let (Projection::Fields(fields), Value::Object(map)) = (projection, value) else {
        return to_lua_tracked(lua, value, tracked);
    };
    let t = lua.create_table_with_capacity(0, fields.len())?;
    for (k, p) in fields {
        match map.get(k) {
            None | Some(Value::Null) => {}
            Some(v @ Value::Object(_)) => t.raw_set(k.as_str(), projected(lua, v, p, tracked)?)?,
            Some(v) => set(lua, &t, k.as_str(), v, tracked)?,
        }
    }
    tables::track(&t, tracked)?;
    Ok(LuaValue::Table(t))
}

/// Sets one field of a table being built. Scalars are pushed straight onto the Lua stack: a
/// string made with `create_string` first would take and release a registry slot, which is
/// most of the cost of converting an object.
fn set<K: mlua::IntoLua>(
    lua: &Lua,
    t: &Table,
    key: K,
    value: &Value,
    tracked: Option<&Table>,
) -> mlua::Result<()> {
    match value {
        Value::String(s) => t.raw_set(key, s.as_str()),
        Value::Bool(b) => t.raw_set(key, *b),
        Value::Number(n) => t.raw_set(key, n.as_f64().unwrap_or(0.0)),
        other => t.raw_set(key, to_lua_tracked(lua, other, tracked)?),
    }
}

/// Why a Lua value cannot be encoded as JSON (gopher-json's errors).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A table mixes string and number keys, or has keys of another type.
    #[error("cannot encode mixed or invalid key types")]
    InvalidKeys,
    /// A table's number keys are not 1..n.
    #[error("cannot encode sparse array")]
    SparseArray,
    /// A table contains itself.
    #[error("cannot encode recursively nested tables to JSON")]
    Nested,
    /// Tables nested beyond the converter's depth limit.
    #[error("cannot encode tables nested more than {MAX_DEPTH} deep to JSON")]
    TooDeep,
    /// A function, userdata or thread.
    #[error("cannot encode {0} to JSON")]
    InvalidType(&'static str),
    /// NaN or an infinity.
    #[error("json: unsupported value: {0}")]
    UnsupportedNumber(String),
    /// Reading the table failed.
    #[error("{0}")]
    Lua(String),
}

/// A Lua value as JSON.
pub fn from_lua(value: &LuaValue) -> Result<Value, EncodeError> {
    let mut visiting = HashSet::new();
    encode(value, &mut visiting, 0)
}

/// A JSON number for a Lua number: integral values as integers, as Go's encoder prints them.
pub fn number(n: f64) -> Result<Value, EncodeError> {
    if !n.is_finite() {
        let text = if n.is_nan() {
            "NaN".to_string()
        } else if n > 0.0 {
            "+Inf".to_string()
        } else {
            "-Inf".to_string()
        };
        return Err(EncodeError::UnsupportedNumber(text));
    }
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        return Ok(Value::from(n as i64));
    }
    Ok(Number::from_f64(n)
        .map(Value::Number)
        .unwrap_or(Value::Null))
}

fn encode(
    value: &LuaValue,
    visiting: &mut HashSet<usize>,
    depth: usize,
) -> Result<Value, EncodeError> {
    Ok(match value {
        LuaValue::Nil => Value::Null,
        LuaValue::Boolean(b) => Value::Bool(*b),
        LuaValue::Integer(i) => Value::from(*i),
        LuaValue::Number(n) => number(*n)?,
        LuaValue::String(s) => Value::String(String::from_utf8_lossy(&s.as_bytes()).into_owned()),
        LuaValue::Table(t) => {
            if depth >= MAX_DEPTH {
                return Err(EncodeError::TooDeep);
            }
            let id = t.to_pointer() as usize;
            if !visiting.insert(id) {
                return Err(EncodeError::Nested);
            }
            let out = encode_table(t, visiting, depth)?;
            visiting.remove(&id);
            out
        }
        other => return Err(EncodeError::InvalidType(other.type_name())),
    })
}

fn encode_table(
    t: &Table,
    visiting: &mut HashSet<usize>,
    depth: usize,
) -> Result<Value, EncodeError> {
    let lua_err = |e: mlua::Error| EncodeError::Lua(e.to_string());
    let mut strings: Vec<(String, LuaValue)> = Vec::new();
    let mut numbers: Vec<(f64, LuaValue)> = Vec::new();
    for pair in t.pairs::<LuaValue, LuaValue>() {
        let (k, v) = pair.map_err(lua_err)?;
        match k {
            LuaValue::String(s) => {
                if !numbers.is_empty() {
                    return Err(EncodeError::InvalidKeys);
                }
                strings.push((String::from_utf8_lossy(&s.as_bytes()).into_owned(), v));
            }
            LuaValue::Integer(i) if strings.is_empty() => numbers.push((i as f64, v)),
            LuaValue::Number(n) if strings.is_empty() => numbers.push((n, v)),
            _ => return Err(EncodeError::InvalidKeys),
        }
    }
    if !strings.is_empty() {
        let mut map = Map::new();
        for (k, v) in strings {
            map.insert(k, encode(&v, visiting, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    // Keys must be exactly 1..n (in whatever order the table yields them).
    numbers.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut items = Vec::with_capacity(numbers.len());
    for (i, (k, v)) in numbers.iter().enumerate() {
        if *k != (i + 1) as f64 {
            return Err(EncodeError::SparseArray);
        }
        items.push(encode(v, visiting, depth + 1)?);
    }
    Ok(Value::Array(items))
}

/// A field path without array indexes: `spec.rules.ports` for `spec.rules[2].ports`, as
/// Karmada's repair compares them.
type Path = Vec<String>;

fn collect_empty(
    v: &Value,
    path: &mut Path,
    arrays: &mut HashSet<Path>,
    objects: &mut HashSet<Path>,
) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                path.push(k.clone());
                match child {
                    Value::Array(a) if a.is_empty() => {
                        arrays.insert(path.clone());
                    }
                    Value::Object(o) if o.is_empty() => {
                        objects.insert(path.clone());
                    }
                    _ => collect_empty(child, path, arrays, objects),
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            for child in items {
                match child {
                    Value::Array(a) if a.is_empty() => {
                        arrays.insert(path.clone());
                    }
                    Value::Object(o) if o.is_empty() => {
                        objects.insert(path.clone());
                    }
                    _ => collect_empty(child, path, arrays, objects),
                }
            }
        }
        _ => {}
    }
}

/// Whether an empty table result at a path should become `{}`, stay `[]`, or go.
enum Repair {
    Object,
    Keep,
    Remove,
}

fn decide(path: &Path, arrays: &HashSet<Path>, objects: &HashSet<Path>) -> Repair {
    if objects.contains(path) {
        Repair::Object
    } else if arrays.contains(path) {
        Repair::Keep
    } else {
        Repair::Remove
    }
}

fn repair(v: &mut Value, path: &mut Path, arrays: &HashSet<Path>, objects: &HashSet<Path>) {
    match v {
        Value::Object(map) => {
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                path.push(k.clone());
                let empty = matches!(map.get(&k), Some(Value::Array(a)) if a.is_empty());
                if empty {
                    match decide(path, arrays, objects) {
                        Repair::Object => {
                            map.insert(k, Value::Object(Map::new()));
                        }
                        Repair::Keep => {}
                        Repair::Remove => {
                            map.remove(&k);
                        }
                    }
                } else if let Some(child) = map.get_mut(&k) {
                    repair(child, path, arrays, objects);
                }
                path.pop();
            }
        }
        Value::Array(items) => {
            let mut i = 0;
            while i < items.len() {
                let empty = matches!(&items[i], Value::Array(a) if a.is_empty());
                if empty {
                    match decide(path, arrays, objects) {
                        Repair::Object => items[i] = Value::Object(Map::new()),
                        Repair::Keep => {}
                        Repair::Remove => {
                            items.remove(i);
                            continue;
                        }
                    }
                } else {
                    repair(&mut items[i], path, arrays, objects);
                }
                i += 1;
            }
        }
        _ => {}
    }
}

/// Whether an empty list occurs anywhere inside `v` (not counting `v` itself).
fn has_empty_list(v: &Value) -> bool {
    let empty_within =
        |c: &Value| matches!(c, Value::Array(a) if a.is_empty()) || has_empty_list(c);
    match v {
        Value::Object(map) => map.values().any(empty_within),
        Value::Array(items) => items.iter().any(empty_within),
        _ => false,
    }
}

/// Puts back the empty maps Lua turned into `[]` (Karmada's
/// `convertEmptySliceToEmptyStructPartly`): an empty list in the result becomes `{}` where the
/// `references` (the operation's inputs) have an empty map at that field path, stays `[]` where
/// they have an empty list, and is removed where they have neither. A result that is itself
/// empty becomes `{}` when an object is expected (`want_object`).
pub fn repair_empty_tables(result: &mut Value, want_object: bool, references: &[&Value]) {
    if matches!(result, Value::Array(a) if a.is_empty()) {
        if want_object {
            *result = Value::Object(Map::new());
        }
        return;
    }
    // Only empty lists are ever changed: a result without one (the usual case) is left as it
    // is without walking the references.
    if !has_empty_list(result) {
        return;
    }
    let mut arrays = HashSet::new();
    let mut objects = HashSet::new();
    for r in references {
        collect_empty(r, &mut Vec::new(), &mut arrays, &mut objects);
    }
    repair(result, &mut Vec::new(), &arrays, &objects);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roundtrip(lua: &Lua, code: &str) -> Result<Value, EncodeError> {
        let v: LuaValue = lua.load(code).eval().expect("eval");
        from_lua(&v)
    }

    #[test]
    fn tables_encode_as_gopher_json_does() {
        let lua = Lua::new();
        assert_eq!(roundtrip(&lua, "return {}"), Ok(json!([])));
        assert_eq!(
            roundtrip(&lua, "return {1, 'a', true}"),
            Ok(json!([1, "a", true]))
        );
        assert_eq!(
            roundtrip(&lua, "return {a = 1.5, b = {c = 'x'}}"),
            Ok(json!({"a": 1.5, "b": {"c": "x"}}))
        );
        assert_eq!(
            roundtrip(
                &lua,
                "local t = {} t[3] = 'c' t[1] = 'a' t[2] = 'b' return t"
            ),
            Ok(json!(["a", "b", "c"]))
        );
        assert_eq!(
            roundtrip(&lua, "return {1, 2, x = 3}"),
            Err(EncodeError::InvalidKeys)
        );
        assert_eq!(
            roundtrip(&lua, "return {[1] = 1, [3] = 3}"),
            Err(EncodeError::SparseArray)
        );
        assert_eq!(
            roundtrip(&lua, "return {[true] = 1}"),
            Err(EncodeError::InvalidKeys)
        );
        assert_eq!(
            roundtrip(&lua, "local t = {} t.self = t return t"),
            Err(EncodeError::Nested)
        );
        // The same table twice, not inside itself, is fine.
        assert_eq!(
            roundtrip(&lua, "local s = {1} return {a = s, b = s}"),
            Ok(json!({"a": [1], "b": [1]}))
        );
        assert_eq!(
            roundtrip(&lua, "return {f = print}"),
            Err(EncodeError::InvalidType("function"))
        );
        assert_eq!(
            roundtrip(&lua, "return {n = 0/0}"),
            Err(EncodeError::UnsupportedNumber("NaN".into()))
        );
        assert_eq!(roundtrip(&lua, "return 3"), Ok(json!(3)));
        assert_eq!(
            roundtrip(&lua, "return 2^53 + 2"),
            Ok(json!(9007199254740994i64))
        );
    }

    #[test]
    fn json_decodes_with_nulls_dropped() {
        let lua = Lua::new();
        let v = to_lua(
            &lua,
            &json!({"a": null, "b": [1, null, 2], "c": {}, "d": "x"}),
        )
        .expect("to lua");
        lua.globals().set("v", v).expect("set");
        let (a, n, d): (LuaValue, i64, String) =
            lua.load("return v.a, #v.b, v.d").eval().expect("eval");
        assert!(a.is_nil());
        assert_eq!(n, 2);
        assert_eq!(d, "x");
    }

    #[test]
    fn empty_tables_are_repaired_from_the_references() {
        let desired = json!({"spec": {"selector": {}, "ports": [], "rules": [{"hosts": []}]}});
        let mut result = json!({"spec": {"selector": [], "ports": [], "extra": [], "rules": [{"hosts": [], "paths": []}]}});
        repair_empty_tables(&mut result, true, &[&desired]);
        assert_eq!(
            result,
            json!({"spec": {"selector": {}, "ports": [], "rules": [{"hosts": []}]}})
        );
        let mut empty = json!([]);
        repair_empty_tables(&mut empty, true, &[]);
        assert_eq!(empty, json!({}));
        let mut list = json!([]);
        repair_empty_tables(&mut list, false, &[]);
        assert_eq!(list, json!([]));
        let mut nested = json!({"a": [[], [1]]});
        repair_empty_tables(&mut nested, true, &[]);
        assert_eq!(nested, json!({"a": [[1]]}));
        // Without an empty list in the result nothing changes, whatever the references hold.
        let mut full = json!({"spec": {"selector": {"a": "b"}, "ports": [1], "n": null}});
        let before = full.clone();
        repair_empty_tables(&mut full, true, &[&desired]);
        assert_eq!(full, before);
        // An empty list deep inside an array is found.
        let mut deep = json!({"spec": {"rules": [{"hosts": [1]}, {"hosts": [{"x": []}]}]}});
        repair_empty_tables(&mut deep, true, &[]);
        assert_eq!(
            deep,
            json!({"spec": {"rules": [{"hosts": [1]}, {"hosts": [{}]}]}})
        );
    }
}
