//! Kubernetes JSON as CEL values, read in place: a map or list is not converted until an
//! expression reaches into it, and strings borrow the request's bytes. This is what kube's
//! `UnstructuredToVal` does for schemaless objects (k8s.io/apiserver pkg/cel/common/values.go):
//! JSON integers are `int`, other numbers `double`, objects `map(string, dyn)`, arrays
//! `list(dyn)`, and a missing field is an error ("no such key") that `has()` reads as false.

use std::sync::OnceLock;

use cel::ExecutionError;
use cel::common::traits::{self, Adder, Container, Indexer, Iterable, Sizer, Zeroer};
use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelNull, CelString, CelUInt, Kind, LIST_TYPE, MAP_TYPE,
    Type,
};
use cel::common::value::{CowVal, Val};
use serde_json::{Map, Value};

/// The CEL value of a JSON value, borrowing it.
pub fn json_to_val<'v>(v: &'v Value) -> Box<dyn Val + 'v> {
    match v {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Box::new(CelInt::from(i))
            } else {
                // Go's JSON decoder makes a float64 of anything that is not an int64.
                Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN)))
            }
        }
        Value::String(s) => Box::new(CelString::from(s.as_str())),
        Value::Array(items) => Box::new(JsonList::new(items)),
        Value::Object(map) => Box::new(JsonMap::new(map)),
    }
}

/// A JSON object as a CEL `map(string, dyn)`.
pub struct JsonMap<'v> {
    map: &'v Map<String, Value>,
    /// The keys as CEL strings, made on the first iteration (iterators hand out references).
    keys: OnceLock<Box<[CelString<'v>]>>,
}

impl<'v> JsonMap<'v> {
    pub fn new(map: &'v Map<String, Value>) -> JsonMap<'v> {
        JsonMap {
            map,
            keys: OnceLock::new(),
        }
    }

    fn lookup(&self, key: &dyn Val) -> Result<&'v Value, ExecutionError> {
        match key.downcast_ref::<CelString>() {
            Some(k) => self
                .map
                .get(k.inner())
                .ok_or_else(|| ExecutionError::no_such_key(k.inner())),
            None => Err(ExecutionError::no_such_key(&debug_key(key))),
        }
    }
}

fn debug_key(key: &dyn Val) -> String {
    if let Some(i) = key.downcast_ref::<CelInt>() {
        i.inner().to_string()
    } else if let Some(u) = key.downcast_ref::<CelUInt>() {
        u.inner().to_string()
    } else if let Some(b) = key.downcast_ref::<CelBool>() {
        b.inner().to_string()
    } else {
        format!("{key:?}")
    }
}

impl std::fmt::Debug for JsonMap<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", Value::Object(self.map.clone()))
    }
}

impl<'v> Val for JsonMap<'v> {
    fn get_type(&self) -> &Type {
        &MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &MAP_TYPE
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        Some(self)
    }

    fn equals(&self, other: &dyn Val) -> bool {
        maps_equal(self, other)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(JsonMap::new(self.map))
    }
}

impl Container for JsonMap<'_> {
    fn contains(&self, key: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(key
            .downcast_ref::<CelString>()
            .is_some_and(|k| self.map.contains_key(k.inner())))
    }
}

impl<'v> Indexer for JsonMap<'v> {
    fn get<'b, 'w>(&'b self, key: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        Ok(CowVal::Owned(json_to_val(self.lookup(key)?)))
    }

    fn steal<'w>(self: Box<Self>, key: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        Ok(json_to_val(self.lookup(key)?))
    }
}

impl<'v> Iterable for JsonMap<'v> {
    fn iter<'b, 'w>(&'b self) -> Box<dyn traits::Iterator<'b, 'w> + 'b>
    where
        Self: 'w,
    {
        let keys = self.keys.get_or_init(|| {
            self.map
                .keys()
                .map(|k| CelString::from(k.as_str()))
                .collect()
        });
        Box::new(ValIter(keys.iter().map(|k| k as &dyn Val)))
    }
}

impl Sizer for JsonMap<'_> {
    fn size(&self) -> CelInt {
        CelInt::from(self.map.len() as i64)
    }
}

impl Zeroer for JsonMap<'_> {
    fn is_zero_value(&self) -> bool {
        self.map.is_empty()
    }
}

/// A JSON array as a CEL `list(dyn)`.
pub struct JsonList<'v> {
    items: &'v [Value],
    /// The elements as CEL values, made on the first iteration.
    vals: OnceLock<Box<[Box<dyn Val + 'v>]>>,
}

impl<'v> JsonList<'v> {
    pub fn new(items: &'v [Value]) -> JsonList<'v> {
        JsonList {
            items,
            vals: OnceLock::new(),
        }
    }

    fn vals(&self) -> &[Box<dyn Val + 'v>] {
        self.vals
            .get_or_init(|| self.items.iter().map(json_to_val).collect())
    }
}

impl std::fmt::Debug for JsonList<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", Value::Array(self.items.to_vec()))
    }
}

impl<'v> Val for JsonList<'v> {
    fn get_type(&self) -> &Type {
        &LIST_TYPE
    }

    fn cel_type() -> &'static Type {
        &LIST_TYPE
    }

    fn as_adder<'b, 'w>(&'b self) -> Option<&'b (dyn Adder + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_indexer<'b, 'w>(&'b self) -> Option<&'b (dyn Indexer + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_iterable<'b, 'w>(&'b self) -> Option<&'b (dyn Iterable + 'w)>
    where
        Self: 'w,
    {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn as_zeroer(&self) -> Option<&dyn Zeroer> {
        Some(self)
    }

    fn equals(&self, other: &dyn Val) -> bool {
        lists_equal(self, other)
    }

    fn clone_as_boxed<'w>(&self) -> Box<dyn Val + 'w>
    where
        Self: 'w,
    {
        Box::new(JsonList::new(self.items))
    }
}

impl<'v> Adder for JsonList<'v> {
    fn add<'b, 'w>(&'b self, rhs: &(dyn Val + 'w)) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let Some(other) = rhs
            .as_iterable()
            .filter(|_| rhs.get_type().kind() == Kind::List)
        else {
            return Err(ExecutionError::no_such_overload(
                "_+_",
                vec!["list".into(), rhs.get_type().name().to_owned()],
            ));
        };
        let mut out: Vec<Box<dyn Val + 'w>> = self.items.iter().map(json_to_val).collect();
        let mut it = other.iter();
        while let Some(v) = it.next() {
            out.push(v.clone_as_boxed());
        }
        Ok(CowVal::owned(CelList::from(out)))
    }
}

impl Container for JsonList<'_> {
    fn contains(&self, value: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(self.vals().iter().any(|v| equal(v.as_ref(), value)))
    }
}

impl<'v> Indexer for JsonList<'v> {
    fn get<'b, 'w>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let i = list_index(idx, self.items.len())?;
        Ok(CowVal::Owned(json_to_val(&self.items[i])))
    }

    fn steal<'w>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'w>, ExecutionError>
    where
        Self: 'w,
    {
        let i = list_index(idx, self.items.len())?;
        Ok(json_to_val(&self.items[i]))
    }
}

/// An index into a list of `len` elements: an int, a uint, or a double without a fraction.
fn list_index(idx: &dyn Val, len: usize) -> Result<usize, ExecutionError> {
    let i: i128 = if let Some(i) = idx.downcast_ref::<CelInt>() {
        i128::from(*i.inner())
    } else if let Some(u) = idx.downcast_ref::<CelUInt>() {
        i128::from(*u.inner())
    } else if let Some(d) = idx
        .downcast_ref::<CelDouble>()
        .filter(|d| d.inner().fract() == 0.0)
    {
        *d.inner() as i128
    } else {
        return Err(ExecutionError::UnexpectedType {
            got: idx.get_type().name().to_owned(),
            want: "int".to_owned(),
        });
    };
    if i < 0 || i >= len as i128 {
        // cel-go's words for a list index outside the list.
        return Err(ExecutionError::FunctionError {
            function: String::new(),
            message: format!("index '{i}' out of range in list size '{len}'"),
        });
    }
    Ok(i as usize)
}

impl<'v> Iterable for JsonList<'v> {
    fn iter<'b, 'w>(&'b self) -> Box<dyn traits::Iterator<'b, 'w> + 'b>
    where
        Self: 'w,
    {
        Box::new(ValIter(self.vals().iter().map(|v| v.as_ref() as &dyn Val)))
    }
}

impl Sizer for JsonList<'_> {
    fn size(&self) -> CelInt {
        CelInt::from(self.items.len() as i64)
    }
}

impl Zeroer for JsonList<'_> {
    fn is_zero_value(&self) -> bool {
        self.items.is_empty()
    }
}

/// An iterator over values a container keeps.
struct ValIter<I>(I);

impl<'b, 'v, 'w, I> traits::Iterator<'b, 'w> for ValIter<I>
where
    I: std::iter::Iterator<Item = &'b (dyn Val + 'v)>,
    'v: 'b,
    'v: 'w,
{
    fn next(&mut self) -> Option<&'b (dyn Val + 'w)> {
        self.0.next().map(|v| v as &(dyn Val + 'w))
    }
}

fn is_json_container(v: &dyn Val) -> bool {
    // Only our own containers need this: the built-in ones compare by downcasting, so the
    // JSON side has to be the one that compares.
    matches!(v.get_type().kind(), Kind::Map | Kind::List)
}

/// CEL's heterogeneous equality on any two values: containers compare element by element
/// through their traits, whichever side is JSON-backed; scalars by the left value's rules.
pub fn equal(a: &dyn Val, b: &dyn Val) -> bool {
    match (a.get_type().kind(), b.get_type().kind()) {
        (Kind::Map, Kind::Map) => maps_equal(a, b),
        (Kind::List, Kind::List) => lists_equal(a, b),
        _ if is_json_container(a) || is_json_container(b) => false,
        _ => a.equals(b),
    }
}

fn size_of(v: &dyn Val) -> Option<i64> {
    v.as_sizer().map(|s| *s.size().inner())
}

fn lists_equal(a: &dyn Val, b: &dyn Val) -> bool {
    if b.get_type().kind() != Kind::List || size_of(a) != size_of(b) {
        return false;
    }
    let (Some(ai), Some(bi)) = (a.as_iterable(), b.as_iterable()) else {
        return false;
    };
    let (mut ai, mut bi) = (ai.iter(), bi.iter());
    loop {
        match (ai.next(), bi.next()) {
            (None, None) => return true,
            (Some(x), Some(y)) if equal(x, y) => {}
            _ => return false,
        }
    }
}

fn maps_equal(a: &dyn Val, b: &dyn Val) -> bool {
    if b.get_type().kind() != Kind::Map || size_of(a) != size_of(b) {
        return false;
    }
    let (Some(keys), Some(ai), Some(bi)) = (a.as_iterable(), a.as_indexer(), b.as_indexer()) else {
        return false;
    };
    let mut keys = keys.iter();
    while let Some(k) = keys.next() {
        match (ai.get(k), bi.get(k)) {
            (Ok(x), Ok(y)) if equal(x.as_ref(), y.as_ref()) => {}
            _ => return false,
        }
    }
    true
}

/// A CEL value as JSON, for results that leave the evaluation (messages, audit values).
pub fn val_to_json(v: &dyn Val) -> Option<Value> {
    Some(match v.get_type().kind() {
        Kind::NullType => Value::Null,
        Kind::Boolean => Value::Bool(*v.downcast_ref::<CelBool>()?.inner()),
        Kind::Int => Value::from(*v.downcast_ref::<CelInt>()?.inner()),
        Kind::UInt => Value::from(*v.downcast_ref::<CelUInt>()?.inner()),
        Kind::Double => Value::from(*v.downcast_ref::<CelDouble>()?.inner()),
        Kind::String => Value::String(v.downcast_ref::<CelString>()?.inner().to_owned()),
        Kind::List => {
            let mut out = Vec::new();
            let mut it = v.as_iterable()?.iter();
            while let Some(x) = it.next() {
                out.push(val_to_json(x)?);
            }
            Value::Array(out)
        }
        Kind::Map => {
            let mut out = Map::new();
            let idx = v.as_indexer()?;
            let mut it = v.as_iterable()?.iter();
            while let Some(k) = it.next() {
                let key = k.downcast_ref::<CelString>()?.inner().to_owned();
                out.insert(key, val_to_json(idx.get(k).ok()?.as_ref())?);
            }
            Value::Object(out)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_types_are_kubes() {
        let v = json!({"i": 1, "f": 1.5, "big": 18446744073709551615u64, "s": "x", "n": null, "b": true, "l": [1], "m": {}});
        let m = json_to_val(&v);
        let idx = m.as_indexer().unwrap();
        let kind = |k: &str| idx.get(&CelString::from(k)).unwrap().get_type().kind();
        assert_eq!(kind("i"), Kind::Int);
        assert_eq!(kind("f"), Kind::Double);
        assert_eq!(kind("big"), Kind::Double);
        assert_eq!(kind("s"), Kind::String);
        assert_eq!(kind("n"), Kind::NullType);
        assert_eq!(kind("b"), Kind::Boolean);
        assert_eq!(kind("l"), Kind::List);
        assert_eq!(kind("m"), Kind::Map);
        assert!(matches!(
            idx.get(&CelString::from("missing")),
            Err(ExecutionError::NoSuchKey(_))
        ));
    }

    #[test]
    fn equality_is_symmetric_with_builtin_containers() {
        let v = json!({"a": [1, "x"], "b": {"c": 2}});
        let m = json_to_val(&v);
        let built: Box<dyn Val> = cel::Value::from(std::collections::HashMap::from([
            (
                "a",
                cel::Value::List(vec![cel::Value::Int(1), "x".into()].into()),
            ),
            (
                "b",
                cel::Value::from(std::collections::HashMap::from([("c", 2i64)])),
            ),
        ]))
        .try_into()
        .unwrap();
        assert!(equal(m.as_ref(), built.as_ref()));
        assert!(equal(built.as_ref(), m.as_ref()));
        let other = json!({"a": [1, "y"], "b": {"c": 2}});
        assert!(!equal(json_to_val(&other).as_ref(), built.as_ref()));
        assert!(!equal(built.as_ref(), json_to_val(&other).as_ref()));
    }

    #[test]
    fn results_round_trip_to_json() {
        let v = json!({"a": [1, 2.5, "x", null, true], "b": {"c": "d"}});
        assert_eq!(val_to_json(json_to_val(&v).as_ref()), Some(v.clone()));
        let owned = crate::validator::to_static(json_to_val(&v).as_ref()).unwrap();
        assert_eq!(val_to_json(owned.as_ref()), Some(v));
    }
}
