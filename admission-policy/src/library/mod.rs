//! kube's CEL libraries (k8s.io/apiserver pkg/cel/library) on the `cel` crate: lists, regex,
//! URLs, quantities, IPs and CIDRs, named formats, sets and the authorizer; each function
//! behaves as kube's does and charges its cost as kube's cost estimator prices it (by the
//! size of what it walks). The checker's declarations of them are in `checker::decls`.

pub mod authz;
pub mod cidr;
pub mod format;
pub mod ip;
pub mod lists;
pub mod quantity;
pub mod regex;
pub mod sets;
pub mod urls;

use cel::common::types::{CelInt, CelString};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError};

use crate::cost;

/// Registers every library on `env`.
pub fn register(env: &mut Env) -> Result<(), cel::DeclarationError> {
    lists::register(env)?;
    regex::register(env)?;
    urls::register(env)?;
    quantity::register(env)?;
    ip::register(env)?;
    cidr::register(env)?;
    format::register(env)?;
    sets::register(env)?;
    authz::register(env)?;
    Ok(())
}

/// An owned copy of one of the libraries' values.
pub fn to_static_opaque(v: &dyn Val) -> Option<Box<dyn Val + 'static>> {
    if let Some(q) = v.downcast_ref::<quantity::Quantity>() {
        return Some(Box::new(q.clone()));
    }
    if let Some(u) = v.downcast_ref::<urls::Url>() {
        return Some(Box::new(u.clone()));
    }
    if let Some(i) = v.downcast_ref::<ip::Ip>() {
        return Some(Box::new(*i));
    }
    if let Some(c) = v.downcast_ref::<cidr::Cidr>() {
        return Some(Box::new(*c));
    }
    if let Some(f) = v.downcast_ref::<format::NamedFormat>() {
        return Some(Box::new(*f));
    }
    authz::to_static(v)
}

/// The string argument `i` (the overloads are declared for strings, so this only fails on a
/// declaration mistake).
pub(crate) fn str_arg<'b>(
    args: &'b [CowVal<'_, '_>],
    i: usize,
    f: &str,
) -> Result<&'b str, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelString>())
        .map(|s| s.inner())
        .ok_or_else(|| ExecutionError::function_error(f, "expected a string argument"))
}

/// The int argument `i`.
pub(crate) fn int_arg(args: &[CowVal<'_, '_>], i: usize, f: &str) -> Result<i64, ExecutionError> {
    args.get(i)
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map(|n| *n.inner())
        .ok_or_else(|| ExecutionError::function_error(f, "expected an int argument"))
}

/// The argument `i` as the library type `T`.
pub(crate) fn arg<'b, T: cel::common::value::StaticVal>(
    args: &'b [CowVal<'_, '_>],
    i: usize,
    f: &str,
) -> Result<&'b T, ExecutionError> {
    args.get(i)
        .and_then(|a| a.as_any())
        .and_then(|a| a.downcast_ref::<T>())
        .ok_or_else(|| ExecutionError::function_error(f, "unexpected argument type"))
}

/// An error as cel-go's `types.NewErr` reports it: the message alone.
pub(crate) fn err(message: impl Into<String>) -> ExecutionError {
    ExecutionError::FunctionError {
        function: String::new(),
        message: message.into(),
    }
}

/// Charges the cost of walking a string of `len` bytes (kube prices string traversal at
/// 0.1 per byte, at least 1).
pub(crate) fn charge_len(len: usize) -> Result<(), ExecutionError> {
    cost::charge(1 + (len as u64) / 10)
}

pub(crate) fn string_val<'b, 'v>(s: String) -> CowVal<'b, 'v> {
    CowVal::owned(CelString::from(s))
}

/// Implements `Val` for a `'static` library type with a fixed CEL type, equal by `PartialEq`.
macro_rules! opaque_val {
    ($ty:ty, $cel_type:expr) => {
        impl cel::common::value::Val for $ty {
            fn get_type(&self) -> &cel::common::types::Type {
                $cel_type
            }
            fn cel_type() -> &'static cel::common::types::Type {
                $cel_type
            }
            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other
                    .as_any()
                    .and_then(|o| o.downcast_ref::<$ty>())
                    .is_some_and(|o| o == self)
            }
            fn clone_as_boxed<'w>(&self) -> Box<dyn cel::common::value::Val + 'w> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl cel::common::value::StaticVal for $ty {}
    };
}
pub(crate) use opaque_val;
