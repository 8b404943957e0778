//! kube's regex library (pkg/cel/library/regex.go): `find` and `findAll` with RE2 syntax
//! (the `regex` crate's, which is RE2's), and CEL's standard `matches` (global and member).
//! Patterns are compiled once per thread and kept, as cel-go compiles a constant pattern once
//! with the program rather than on every evaluation.

use std::cell::RefCell;
use std::collections::HashMap;

use cel::common::types::{CelBool, CelList, CelString, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use super::{charge_len, err, int_arg, str_arg, string_val};

/// Compiled patterns kept per thread; past this many the cache starts over.
const CACHE_LIMIT: usize = 256;

pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    register_matches(env)?;
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_n,
    )?;
    Ok(())
}

/// CEL's standard `matches`: `s.matches(re)` and `matches(s, re)`, true when `re` (RE2)
/// matches anywhere in `s`.
pub fn register_matches(env: &mut Env) -> Result<(), cel::DeclarationError> {
    env.add_overload(
        "matches",
        "matches",
        vec![STRING_TYPE, STRING_TYPE],
        matches,
    )?;
    env.add_member_overload(
        "matches",
        "matches_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        matches,
    )
}

thread_local! {
    static PATTERNS: RefCell<HashMap<String, regex::Regex>> = RefCell::new(HashMap::new());
}

fn with_regex<T>(pattern: &str, f: impl FnOnce(&regex::Regex) -> T) -> Result<T, ExecutionError> {
    PATTERNS.with(|p| {
        let mut p = p.borrow_mut();
        if !p.contains_key(pattern) {
            let re = regex::Regex::new(pattern)
                .map_err(|e| err(format!("error parsing regexp: {e}")))?;
            if p.len() >= CACHE_LIMIT {
                p.clear();
            }
            p.insert(pattern.to_owned(), re);
        }
        Ok(f(&p[pattern]))
    })
}

fn matches<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, pattern) = (str_arg(&args, 0, "matches")?, str_arg(&args, 1, "matches")?);
    charge_len(s.len())?;
    let found = with_regex(pattern, |re| re.is_match(s))?;
    Ok(CowVal::owned(CelBool::from(found)))
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (s, pattern) = (str_arg(&args, 0, "find")?, str_arg(&args, 1, "find")?);
    charge_len(s.len())?;
    let found = with_regex(pattern, |re| re.find(s).map(|m| m.as_str().to_owned()))?;
    Ok(string_val(found.unwrap_or_default()))
}

fn all<'v>(s: &str, pattern: &str, n: i64) -> Result<Vec<Box<dyn Val + 'v>>, ExecutionError> {
    charge_len(s.len())?;
    with_regex(pattern, |re| {
        let limit = if n < 0 { usize::MAX } else { n as usize };
        re.find_iter(s)
            .take(limit)
            .map(|m| Box::new(CelString::from(m.as_str().to_owned())) as Box<dyn Val>)
            .collect()
    })
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let found = all(
        str_arg(&args, 0, "findAll")?,
        str_arg(&args, 1, "findAll")?,
        -1,
    )?;
    Ok(CowVal::owned(CelList::from(found)))
}

fn find_all_n<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let n = int_arg(&args, 2, "findAll")?;
    let found = all(
        str_arg(&args, 0, "findAll")?,
        str_arg(&args, 1, "findAll")?,
        n,
    )?;
    Ok(CowVal::owned(CelList::from(found)))
}
