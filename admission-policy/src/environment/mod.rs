//! kube's CEL environment for admission (k8s.io/apiserver pkg/cel/environment and
//! pkg/admission/plugin/cel): the `cel` crate's standard library, optional types and strings
//! extension, `cel.bind`, the sets extension and kube's libraries; the admission variables;
//! compiling (parse, check, output type) and evaluating under kube's cost limits.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::common::ast::operators;
use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue,
};
use cel::common::types::{CelBool, CelInt, DYN_TYPE};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::parser::Macro;
use cel::{Context, Env, ExecutionError};

use crate::checker::{self, format_at, types::Ty};
use crate::{cost, value};

/// Equality that holds whichever side is JSON-backed (see `value::equal`).
const EQUALS: &str = "@k8s_equals";
const NOT_EQUALS: &str = "@k8s_not_equals";
const IN: &str = "@k8s_in";

/// The environment, built once.
pub fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(build().unwrap_or_else(|e| panic!("kube's CEL environment: {e}"))))
}

fn build() -> Result<Env, cel::DeclarationError> {
    let mut env = Env::stdlib();
    cel::extensions::strings(&mut env)?;
    crate::library::register(&mut env)?;
    env.add_overload(
        cost::COST_FUNCTION,
        "cost_int_dyn",
        vec![cel::common::types::INT_TYPE, DYN_TYPE],
        cost::cost_function,
    )?;
    env.add_overload(EQUALS, "k8s_equals", vec![DYN_TYPE, DYN_TYPE], |a| {
        Ok(CowVal::owned(CelBool::from(value::equal(
            a[0].as_ref(),
            a[1].as_ref(),
        ))))
    })?;
    env.add_overload(
        NOT_EQUALS,
        "k8s_not_equals",
        vec![DYN_TYPE, DYN_TYPE],
        |a| {
            Ok(CowVal::owned(CelBool::from(!value::equal(
                a[0].as_ref(),
                a[1].as_ref(),
            ))))
        },
    )?;
    env.add_overload(IN, "k8s_in", vec![DYN_TYPE, DYN_TYPE], contains)?;
    env.add_macro(Macro::receiver("bind", 3, bind_macro))?;
    Ok(env)
}

/// `x in container`: a list by CEL equality, a map by key.
fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (x, c) = (args[0].as_ref(), args[1].as_ref());
    let found = match c.get_type().kind() {
        cel::common::types::Kind::List => {
            let mut it = c.as_iterable().ok_or_else(no_overload)?.iter();
            let mut found = false;
            while let Some(v) = it.next() {
                if value::equal(v, x) {
                    found = true;
                    break;
                }
            }
            found
        }
        _ => c.as_container().ok_or_else(no_overload)?.contains(x)?,
    };
    Ok(CowVal::owned(CelBool::from(found)))
}

fn no_overload() -> ExecutionError {
    ExecutionError::function_error("@in", "no such overload")
}

/// `cel.bind(name, init, expr)`, as cel-go's bindings extension expands it: a comprehension
/// over nothing whose accumulator is `name`.
fn bind_macro(
    helper: &mut cel::parser::MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, cel::ParseError> {
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
        return Ok(None);
    }
    let name = match &args[0].expr {
        Expr::Ident(n) => n.clone(),
        _ => {
            return Err(helper.new_error(
                args[0].id,
                "cel.bind() variable names must be simple identifiers",
            ));
        }
    };
    let body = args.pop().unwrap_or_default();
    let init = args.pop().unwrap_or_default();
    let empty = helper.next_expr(Expr::List(ListExpr::default()));
    let cond = helper.next_expr(Expr::Literal(LiteralValue::Boolean(CelBool::from(false))));
    let step = helper.next_expr(Expr::Ident(name.clone()));
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(
        ComprehensionExpr {
            iter_range: empty,
            iter_var: "#unused".into(),
            iter_var2: None,
            accu_var: name,
            accu_init: init,
            loop_cond: cond,
            loop_step: step,
            result: body,
        },
    )))))
}

/// A compiled expression: checked, with its output type, rewritten for evaluation.
#[derive(Debug)]
pub struct Compiled {
    pub source: String,
    pub output: Ty,
    expr: IdedExpr,
    base_cost: u64,
}

/// Parses and checks `source` against `vars`; the error is cel-go's issue text.
pub fn compile(source: &str, vars: &HashMap<String, Ty>) -> Result<Compiled, String> {
    let program = env()
        .compile(source)
        .map_err(|errs| parse_errors(source, &errs))?;
    let checked = checker::check(program.expression(), vars);
    if !checked.issues.is_empty() {
        return Err(checker::format_issues(
            &checked.issues,
            program.source_info(),
        ));
    }
    let mut expr = program.expression().clone();
    let base_cost = rewrite(&mut expr);
    Ok(Compiled {
        source: source.to_owned(),
        output: checked.output,
        expr,
        base_cost,
    })
}

/// Only the checker's issues, for type checking against schemas.
pub fn check_issues(source: &str, vars: &HashMap<String, Ty>) -> Result<Ty, String> {
    let program = env()
        .compile(source)
        .map_err(|errs| parse_errors(source, &errs))?;
    let checked = checker::check(program.expression(), vars);
    if checked.issues.is_empty() {
        Ok(checked.output)
    } else {
        Err(checker::format_issues(
            &checked.issues,
            program.source_info(),
        ))
    }
}

fn parse_errors(source: &str, errs: &cel::ParseErrors) -> String {
    errs.errors
        .iter()
        .map(|e| {
            let (line, col) = e.pos;
            let offset = byte_offset(source, line, col);
            format_at(source, offset, &format!("Syntax error: {}", e.msg))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The byte offset of a 1-based line and a 0-based column (in characters).
fn byte_offset(source: &str, line: isize, col: isize) -> Option<usize> {
    let mut offset = 0;
    for (i, l) in source.split_inclusive('\n').enumerate() {
        if i as isize + 1 == line {
            let extra: usize = l
                .chars()
                .take(col.max(0) as usize)
                .map(char::len_utf8)
                .sum();
            return Some(offset + extra);
        }
        offset += l.len();
    }
    None
}

/// Rewrites equality and `in` to the JSON-aware functions and wraps each loop step in
/// `@cost`; returns the cost of one evaluation outside loops.
fn rewrite(e: &mut IdedExpr) -> u64 {
    match &mut e.expr {
        Expr::Call(call) => {
            match call.func_name.as_str() {
                operators::EQUALS => call.func_name = EQUALS.into(),
                operators::NOT_EQUALS => call.func_name = NOT_EQUALS.into(),
                operators::IN => call.func_name = IN.into(),
                _ => {}
            }
            let mut n = 1;
            if let Some(t) = &mut call.target {
                n += rewrite(t);
            }
            for a in &mut call.args {
                n += rewrite(a);
            }
            n
        }
        Expr::Select(s) => 1 + rewrite(&mut s.operand),
        Expr::Ident(_) => 1,
        Expr::List(l) => 1 + l.elements.iter_mut().map(rewrite).sum::<u64>(),
        Expr::Map(m) => {
            1 + m
                .entries
                .iter_mut()
                .map(|entry| match &mut entry.expr {
                    EntryExpr::MapEntry(me) => rewrite(&mut me.key) + rewrite(&mut me.value),
                    EntryExpr::StructField(f) => rewrite(&mut f.value),
                })
                .sum::<u64>()
        }
        Expr::Comprehension(c) => {
            let per_iteration = rewrite(&mut c.loop_cond) + rewrite(&mut c.loop_step) + 1;
            let step = std::mem::take(&mut c.loop_step);
            c.loop_step = IdedExpr {
                id: step.id,
                expr: Expr::Call(CallExpr {
                    func_name: cost::COST_FUNCTION.into(),
                    target: None,
                    args: vec![
                        IdedExpr {
                            id: step.id,
                            expr: Expr::Literal(LiteralValue::Int(CelInt::from(
                                per_iteration as i64,
                            ))),
                        },
                        step,
                    ],
                }),
            };
            rewrite(&mut c.iter_range) + rewrite(&mut c.accu_init) + rewrite(&mut c.result)
        }
        Expr::Struct(s) => s
            .entries
            .iter_mut()
            .map(|entry| match &mut entry.expr {
                EntryExpr::MapEntry(me) => rewrite(&mut me.key) + rewrite(&mut me.value),
                EntryExpr::StructField(f) => rewrite(&mut f.value),
            })
            .sum(),
        Expr::Literal(_) | Expr::Unspecified => 0,
    }
}

/// Why an evaluation failed.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// The expression failed: cel-go's message.
    Failed(String),
    /// It ran past its own cost limit or the remaining budget.
    OutOfBudget,
}

impl Compiled {
    /// Evaluates against `activation` with at most `budget` to spend (and never more than
    /// the per-expression limit); `read` turns the result into what the caller keeps.
    pub fn evaluate<T>(
        &self,
        activation: &dyn VariableResolver,
        budget: u64,
        read: impl FnOnce(&dyn Val) -> T,
    ) -> (Result<T, EvalError>, u64) {
        let limit = budget.min(cost::PER_CALL_LIMIT);
        let (out, spent) = cost::metered(limit, || {
            cost::charge(self.base_cost).map_err(|e| classify(&e, budget))?;
            let mut ctx = Context::with_env(Arc::clone(env()));
            ctx.set_variable_resolver(activation);
            let v = cel::Value::resolve_val(&self.expr, &ctx).map_err(|e| classify(&e, budget))?;
            Ok(read(v.as_ref()))
        });
        (out, spent)
    }
}

impl Compiled {
    /// Evaluates inside another evaluation (a variable reached from an expression): its cost
    /// is the outer expression's.
    pub fn evaluate_nested<T>(
        &self,
        activation: &dyn VariableResolver,
        read: impl FnOnce(&dyn Val) -> T,
    ) -> Result<T, String> {
        cost::charge(self.base_cost).map_err(|e| error_text(&e))?;
        let mut ctx = Context::with_env(Arc::clone(env()));
        ctx.set_variable_resolver(activation);
        let v = cel::Value::resolve_val(&self.expr, &ctx).map_err(|e| error_text(&e))?;
        Ok(read(v.as_ref()))
    }
}

fn classify(e: &ExecutionError, budget: u64) -> EvalError {
    match e {
        ExecutionError::FunctionError { message, .. }
            if message == cost::LIMIT_EXCEEDED && budget < cost::PER_CALL_LIMIT =>
        {
            EvalError::OutOfBudget
        }
        e => EvalError::Failed(error_text(e)),
    }
}

/// cel-go's wording of a runtime error.
pub fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::NoSuchOverload(_) | ExecutionError::UnsupportedBinaryOperator(..) => {
            "no such overload".into()
        }
        ExecutionError::UndeclaredReference(n) => format!("no such attribute(s): {n}"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {i:?}"),
        e => e.to_string(),
    }
}

#[cfg(test)]
mod tests;
