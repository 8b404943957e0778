//! A static type checker for CEL expressions, in the words of cel-go's checker (which the
//! `cel` crate does not have): undeclared references, undefined fields of typed objects,
//! calls with no matching overload, ranges that cannot be iterated, and the expression's
//! output type. kube compiles every expression with it (`object` and `params` as `dyn`), and
//! checks a policy's expressions again against the schemas of its kinds for the policy's
//! status (k8s.io/apiserver pkg/admission/plugin/policy/validating/typechecking.go).

pub mod decls;
pub mod schema;
pub mod types;

use std::collections::HashMap;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue, SelectExpr};
use cel::common::ast::{SourceInfo, operators};

use self::types::{Subst, Ty};

/// One issue the checker found, at an expression node.
#[derive(Clone, Debug, PartialEq)]
pub struct Issue {
    pub expr_id: u64,
    pub message: String,
}

/// The outcome of checking one expression.
#[derive(Debug)]
pub struct Checked {
    pub output: Ty,
    pub issues: Vec<Issue>,
}

/// Checks `expr` against the declared variables (`object`, `request`, ...).
pub fn check(expr: &IdedExpr, vars: &HashMap<String, Ty>) -> Checked {
    let mut c = Checker {
        vars,
        scopes: Vec::new(),
        subst: Subst::default(),
        issues: Vec::new(),
    };
    let t = c.expr(expr);
    Checked {
        output: c.subst.finish(&t),
        issues: c.issues,
    }
}

/// cel-go's rendering of issues: `ERROR: <input>:L:C: message`, the source line and a caret.
pub fn format_issues(issues: &[Issue], info: &SourceInfo) -> String {
    let mut out = Vec::new();
    for i in issues {
        let start = info.offset_for(i.expr_id).map(|(s, _)| s as usize);
        out.push(format_at(&info.source, start, &i.message));
    }
    out.join("\n")
}

/// One error at a byte offset of `source`, as cel-go prints it.
pub fn format_at(source: &str, offset: Option<usize>, message: &str) -> String {
    let Some(offset) = offset.filter(|o| *o <= source.len()) else {
        return format!("ERROR: <input>:-1:0: {message}");
    };
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let col = source[line_start..offset].chars().count();
    let text = source[line_start..].lines().next().unwrap_or("");
    format!(
        "ERROR: <input>:{line}:{}: {message}\n | {text}\n | {}^",
        col + 1,
        ".".repeat(col)
    )
}

struct Checker<'a> {
    vars: &'a HashMap<String, Ty>,
    scopes: Vec<(String, Ty)>,
    subst: Subst,
    issues: Vec<Issue>,
}

impl Checker<'_> {
    fn error(&mut self, id: u64, message: String) -> Ty {
        self.issues.push(Issue {
            expr_id: id,
            message,
        });
        Ty::Dyn
    }

    fn lookup(&self, name: &str) -> Option<Ty> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        if let Some(t) = self.vars.get(name) {
            return Some(t.clone());
        }
        decls::type_ident(name).map(|t| Ty::Type(Box::new(t)))
    }

    fn in_scope(&self, name: &str) -> bool {
        self.scopes.iter().any(|(n, _)| n == name)
    }

    fn expr(&mut self, e: &IdedExpr) -> Ty {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => Ty::Bool,
                LiteralValue::Bytes(_) => Ty::Bytes,
                LiteralValue::Double(_) => Ty::Double,
                LiteralValue::Int(_) => Ty::Int,
                LiteralValue::Null => Ty::Null,
                LiteralValue::String(_) => Ty::String,
                LiteralValue::UInt(_) => Ty::Uint,
            },
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                None => self.error(
                    e.id,
                    format!("undeclared reference to '{name}' (in container '')"),
                ),
            },
            Expr::Select(s) => self.select(e.id, s),
            Expr::Call(call) => {
                if call.func_name == operators::OPT_SELECT && call.args.len() == 2 {
                    let operand = self.expr(&call.args[0]);
                    let field = match &call.args[1].expr {
                        Expr::Literal(LiteralValue::String(s)) => s.inner().to_owned(),
                        _ => {
                            return self.error(e.id, "unsupported optional field selection".into());
                        }
                    };
                    // `a.?b` on an optional selects inside it: the result is not nested.
                    let operand = match self.subst.resolve(&operand) {
                        Ty::Opaque("optional_type", ps) => ps.into_iter().next().unwrap_or(Ty::Dyn),
                        other => other,
                    };
                    let t = self.field_of(e.id, &operand, &field);
                    return Ty::optional(t);
                }
                if let Some(target) = &call.target
                    && let Some(qualified) = qualified_name(target)
                    && !self.in_scope(qualified.split('.').next().unwrap_or_default())
                {
                    let name = format!("{qualified}.{}", call.func_name);
                    if decls::functions().contains_key(&name) {
                        let args: Vec<Ty> = call.args.iter().map(|a| self.expr(a)).collect();
                        return self.call(e.id, &name, false, args);
                    }
                }
                let mut args = Vec::new();
                if let Some(target) = &call.target {
                    args.push(self.expr(target));
                }
                args.extend(call.args.iter().map(|a| self.expr(a)));
                self.call(e.id, &call.func_name, call.target.is_some(), args)
            }
            Expr::List(list) => {
                let elem = self.subst.fresh();
                let mut joined = true;
                for item in &list.elements {
                    let t = self.expr(item);
                    if joined && !self.subst.assignable(&elem, &t) {
                        joined = false;
                    }
                }
                if joined {
                    Ty::list(elem)
                } else {
                    Ty::list(Ty::Dyn)
                }
            }
            Expr::Map(map) => {
                let (k, v) = (self.subst.fresh(), self.subst.fresh());
                let (mut kj, mut vj) = (true, true);
                for entry in &map.entries {
                    if let EntryExpr::MapEntry(m) = &entry.expr {
                        let kt = self.expr(&m.key);
                        let vt = self.expr(&m.value);
                        if kj && !self.subst.assignable(&k, &kt) {
                            kj = false;
                        }
                        if vj && !self.subst.assignable(&v, &vt) {
                            vj = false;
                        }
                    }
                }
                Ty::map(if kj { k } else { Ty::Dyn }, if vj { v } else { Ty::Dyn })
            }
            Expr::Struct(s) => self.error(
                e.id,
                format!(
                    "undeclared reference to '{}' (in container '')",
                    s.type_name
                ),
            ),
            Expr::Comprehension(c) => {
                let range = self.expr(&c.iter_range);
                let (first, second) = match self.subst.resolve(&range) {
                    Ty::List(el) => match c.iter_var2 {
                        Some(_) => (Ty::Int, *el),
                        None => (*el, Ty::Dyn),
                    },
                    Ty::Map(k, v) => (*k, *v),
                    Ty::Dyn | Ty::Var(_) => (Ty::Dyn, Ty::Dyn),
                    other => {
                        let other = self.subst.finish(&other);
                        self.error(
                            c.iter_range.id,
                            format!(
                                "expression of type '{other}' cannot be range of a comprehension (must be list, map, or dynamic)"
                            ),
                        );
                        (Ty::Dyn, Ty::Dyn)
                    }
                };
                let accu = self.expr(&c.accu_init);
                self.scopes.push((c.accu_var.clone(), accu.clone()));
                self.scopes.push((c.iter_var.clone(), first));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), second));
                }
                self.expr(&c.loop_cond);
                let step = self.expr(&c.loop_step);
                if !self.subst.assignable(&accu, &step) {
                    let (a, s) = (self.subst.finish(&accu), self.subst.finish(&step));
                    self.error(
                        c.loop_step.id,
                        format!("found no matching overload for '_=_' applied to '({a}, {s})'"),
                    );
                }
                if c.iter_var2.is_some() {
                    self.scopes.pop();
                }
                self.scopes.pop();
                let result = self.expr(&c.result);
                self.scopes.pop();
                result
            }
            Expr::Unspecified => Ty::Dyn,
        }
    }

    fn select(&mut self, id: u64, s: &SelectExpr) -> Ty {
        // `authorizer.requestResource`: a variable whose name is qualified.
        if let Some(q) = qualified_name(&s.operand)
            && !self.in_scope(q.split('.').next().unwrap_or_default())
        {
            let name = format!("{q}.{}", s.field);
            if let Some(t) = self.vars.get(&name) {
                return t.clone();
            }
        }
        let operand = self.expr(&s.operand);
        let t = self.field_of(id, &operand, &s.field);
        if s.test { Ty::Bool } else { t }
    }

    fn field_of(&mut self, id: u64, operand: &Ty, field: &str) -> Ty {
        match self.subst.resolve(operand) {
            Ty::Dyn | Ty::Var(_) => Ty::Dyn,
            Ty::Map(_, v) => *v,
            Ty::Object(o) => match o.fields.get(field) {
                Some(t) => t.clone(),
                None => self.error(id, format!("undefined field '{field}'")),
            },
            Ty::Opaque("optional_type", params) => {
                // A field of an optional is the optional of the field (cel-go's optional
                // chaining `a.?b.c`).
                let inner = params.first().cloned().unwrap_or(Ty::Dyn);
                Ty::optional(self.field_of(id, &inner, field))
            }
            other => {
                let other = self.subst.finish(&other);
                self.error(
                    id,
                    format!("type '{other}' does not support field selection"),
                )
            }
        }
    }

    fn call(&mut self, id: u64, name: &str, member: bool, args: Vec<Ty>) -> Ty {
        let Some(overloads) = decls::functions().get(name) else {
            return self.error(
                id,
                format!("undeclared reference to '{name}' (in container '')"),
            );
        };
        let mut results: Vec<Ty> = Vec::new();
        for o in overloads
            .iter()
            .filter(|o| o.member == member && o.params.len() == args.len())
        {
            let mut params: HashMap<&'static str, Ty> = HashMap::new();
            let want: Vec<Ty> = o
                .params
                .iter()
                .map(|p| instantiate(p, &mut params, &mut self.subst))
                .collect();
            let result = instantiate(&o.result, &mut params, &mut self.subst);
            let saved = self.subst.clone();
            if want
                .iter()
                .zip(&args)
                .all(|(w, a)| self.subst.assignable(w, a))
            {
                results.push(self.subst.resolve(&result));
            } else {
                self.subst = saved;
            }
        }
        match results.len() {
            0 => {
                let finished: Vec<String> = args
                    .iter()
                    .map(|a| self.subst.finish(a).to_string())
                    .collect();
                let applied = if member {
                    format!("{}.({})", finished[0], finished[1..].join(", "))
                } else {
                    format!("({})", finished.join(", "))
                };
                self.error(
                    id,
                    format!("found no matching overload for '{name}' applied to '{applied}'"),
                )
            }
            _ => {
                let first = results[0].clone();
                if results.iter().all(|r| *r == first) {
                    first
                } else {
                    Ty::Dyn
                }
            }
        }
    }
}

/// `t` with its type parameters replaced by fresh variables, one per parameter name.
fn instantiate(t: &Ty, params: &mut HashMap<&'static str, Ty>, s: &mut Subst) -> Ty {
    match t {
        Ty::Param(p) => params.entry(p).or_insert_with(|| s.fresh()).clone(),
        Ty::List(e) => Ty::list(instantiate(e, params, s)),
        Ty::Map(k, v) => Ty::map(instantiate(k, params, s), instantiate(v, params, s)),
        Ty::Opaque(n, ps) => Ty::Opaque(n, ps.iter().map(|p| instantiate(p, params, s)).collect()),
        Ty::Type(t) => Ty::Type(Box::new(instantiate(t, params, s))),
        t => t.clone(),
    }
}

/// `a.b.c` when the expression is only identifiers and field selections.
fn qualified_name(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Ident(n) => Some(n.clone()),
        Expr::Select(s) if !s.test => Some(format!("{}.{}", qualified_name(&s.operand)?, s.field)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
