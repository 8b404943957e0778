//! Runtime cost as kube bounds it (k8s.io/apiserver pkg/apis/cel/config.go): each expression
//! may cost at most `PER_CALL_LIMIT`, and one policy evaluation (a binding and a param) at
//! most `RUNTIME_BUDGET`. The `cel` crate has no cost hook, so the cost is counted here: one
//! unit per evaluated node outside loops, each comprehension iteration its body's nodes (the
//! compiler wraps loop steps in `@cost`), and the libraries' size-proportional prices.

use std::cell::Cell;

use cel::ExecutionError;
use cel::common::types::CelInt;
use cel::common::value::CowVal;

/// cel-go's per-expression limit as kube sets it (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// The budget of one policy evaluation (`RuntimeCELCostBudget`).
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// The budget of a policy's match conditions (`RuntimeCELCostBudgetMatchConditions`).
pub const MATCH_CONDITIONS_BUDGET: u64 = 1_000_000;

/// cel-go's message when an expression exceeds its limit.
pub const LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// The name of the internal function that charges a loop iteration.
pub const COST_FUNCTION: &str = "@cost";

thread_local! {
    /// (spent, limit) of the expression being evaluated on this thread.
    static METER: Cell<(u64, u64)> = const { Cell::new((0, u64::MAX)) };
}

/// Charges `n` to the running expression; fails once past its limit.
pub fn charge(n: u64) -> Result<(), ExecutionError> {
    METER.with(|m| {
        let (spent, limit) = m.get();
        let spent = spent.saturating_add(n);
        m.set((spent, limit));
        if spent > limit {
            Err(ExecutionError::FunctionError {
                function: String::new(),
                message: LIMIT_EXCEEDED.to_owned(),
            })
        } else {
            Ok(())
        }
    })
}

/// Runs `f` with a fresh meter limited to `limit`; returns its result and the cost spent.
pub fn metered<T>(limit: u64, f: impl FnOnce() -> T) -> (T, u64) {
    let saved = METER.with(|m| m.replace((0, limit)));
    let out = f();
    let (spent, _) = METER.with(|m| m.replace(saved));
    (out, spent)
}

/// `@cost(n, value)`: charges `n` and hands `value` back.
pub fn cost_function<'b, 'v>(
    mut args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let n = args
        .first()
        .and_then(|a| a.downcast_ref::<CelInt>())
        .map_or(1, |n| (*n.inner()).max(0) as u64);
    charge(n)?;
    args.pop()
        .ok_or_else(|| ExecutionError::function_error(COST_FUNCTION, "missing value"))
}
