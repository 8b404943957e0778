//! kube's list library (pkg/cel/library/lists.go): `isSorted`, `sum`, `min`, `max`,
//! `indexOf`, `lastIndexOf`.

use std::cmp::Ordering;

use cel::common::types::{CelBool, CelInt, DYN_TYPE, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::err;
use crate::{cost, value::equal};

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_member_overload(
        "isSorted",
        "list_is_sorted_bool",
        LIST_TYPE,
        vec![],
        is_sorted,
    )?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], max)?;
    env.add_member_overload(
        "indexOf",
        "list_a_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_a_last_index_of_int",
        LIST_TYPE,
        vec![DYN_TYPE],
        last_index_of,
    )?;
    Ok(())
}

/// The elements of the list argument, charging one per element (kube's traversal cost).
fn elements<'b, 'v>(list: &'b CowVal<'_, 'v>) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let iterable = list.as_iterable().ok_or_else(|| err("no such overload"))?;
    let mut out = Vec::new();
    let mut it = iterable.iter();
    while let Some(v) = it.next() {
        out.push(v);
    }
    cost::charge(out.len() as u64)?;
    Ok(out)
}

fn compare(a: &dyn Val, b: &dyn Val) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| err("no such overload"))?
        .compare(b)
}

fn is_sorted<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(&args[0])?;
    for pair in items.windows(2) {
        if compare(pair[0], pair[1])? == Ordering::Greater {
            return Ok(CowVal::owned(CelBool::from(false)));
        }
    }
    Ok(CowVal::owned(CelBool::from(true)))
}

fn sum<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(&args[0])?;
    let Some((first, rest)) = items.split_first() else {
        // The checker knows the element type; the interpreter does not: an empty list
        // sums to the int zero.
        return Ok(CowVal::owned(CelInt::from(0)));
    };
    let mut acc: Box<dyn Val + 'v> = first.clone_as_boxed();
    for v in rest {
        let next = acc
            .as_adder()
            .ok_or_else(|| err("no such overload"))?
            .add(*v)?
            .into_owned();
        acc = next;
    }
    Ok(CowVal::Owned(acc))
}

fn extreme<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    name: &str,
    prefer: Ordering,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(&args[0])?;
    let mut best: Option<&(dyn Val + 'v)> = None;
    for v in items {
        best = match best {
            Some(b) if compare(b, v)? != prefer => Some(b),
            _ => Some(v),
        };
    }
    match best {
        Some(b) => Ok(CowVal::Owned(b.clone_as_boxed())),
        None => Err(err(format!("{name} called on empty list"))),
    }
}

fn min<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "min", Ordering::Greater)
}

fn max<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    extreme(args, "max", Ordering::Less)
}

fn index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(&args[0])?;
    let found = items.iter().position(|v| equal(*v, args[1].as_ref()));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}

fn last_index_of<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let items = elements(&args[0])?;
    let found = items.iter().rposition(|v| equal(*v, args[1].as_ref()));
    Ok(CowVal::owned(CelInt::from(found.map_or(-1, |i| i as i64))))
}
