//! cel-go's sets extension, in kube's environment since 1.28: `sets.contains`,
//! `sets.equivalent`, `sets.intersects`.

use cel::common::types::{CelBool, LIST_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::err;
use crate::{cost, value::equal};

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        vec![LIST_TYPE, LIST_TYPE],
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        vec![LIST_TYPE, LIST_TYPE],
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        vec![LIST_TYPE, LIST_TYPE],
        intersects,
    )?;
    Ok(())
}

fn items<'b, 'v>(list: &'b CowVal<'_, 'v>) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let mut out = Vec::new();
    let mut it = list
        .as_iterable()
        .ok_or_else(|| err("no such overload"))?
        .iter();
    while let Some(v) = it.next() {
        out.push(v);
    }
    Ok(out)
}

/// Whether every element of `b` is in `a`.
fn all_in(a: &[&dyn Val], b: &[&dyn Val]) -> Result<bool, ExecutionError> {
    cost::charge((a.len() * b.len()) as u64)?;
    Ok(b.iter().all(|x| a.iter().any(|y| equal(*y, *x))))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = (items(&args[0])?, items(&args[1])?);
    Ok(CowVal::owned(CelBool::from(all_in(&a, &b)?)))
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = (items(&args[0])?, items(&args[1])?);
    Ok(CowVal::owned(CelBool::from(
        all_in(&a, &b)? && all_in(&b, &a)?,
    )))
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (a, b) = (items(&args[0])?, items(&args[1])?);
    cost::charge((a.len() * b.len()) as u64)?;
    Ok(CowVal::owned(CelBool::from(
        b.iter().any(|x| a.iter().any(|y| equal(*y, *x))),
    )))
}
