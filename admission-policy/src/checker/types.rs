//! The static types of the checker, named as cel-go prints them in its messages.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A CEL type as the checker sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    /// An object of known fields: a schema's object, `request`, `namespaceObject`,
    /// `variables`.
    Object(Arc<ObjectType>),
    /// A library's own type (`kubernetes.Quantity`), or `optional_type(T)`.
    Opaque(&'static str, Vec<Ty>),
    /// The type of a type value: `type(int)`.
    Type(Box<Ty>),
    /// A type parameter of a declaration (`A`), instantiated per call.
    Param(&'static str),
    /// A type variable of one check, bound by unification.
    Var(u32),
}

/// An object type: its name and fields.
#[derive(Debug, PartialEq)]
pub struct ObjectType {
    pub name: String,
    pub fields: BTreeMap<String, Ty>,
}

impl Ty {
    pub fn list(t: Ty) -> Ty {
        Ty::List(Box::new(t))
    }

    pub fn map(k: Ty, v: Ty) -> Ty {
        Ty::Map(Box::new(k), Box::new(v))
    }

    pub fn opaque(name: &'static str) -> Ty {
        Ty::Opaque(name, Vec::new())
    }

    pub fn optional(t: Ty) -> Ty {
        Ty::Opaque("optional_type", vec![t])
    }

    pub fn object(name: impl Into<String>, fields: BTreeMap<String, Ty>) -> Ty {
        Ty::Object(Arc::new(ObjectType {
            name: name.into(),
            fields,
        }))
    }
}

impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ty::Dyn => f.write_str("dyn"),
            Ty::Null => f.write_str("null_type"),
            Ty::Bool => f.write_str("bool"),
            Ty::Int => f.write_str("int"),
            Ty::Uint => f.write_str("uint"),
            Ty::Double => f.write_str("double"),
            Ty::String => f.write_str("string"),
            Ty::Bytes => f.write_str("bytes"),
            Ty::Duration => f.write_str("google.protobuf.Duration"),
            Ty::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Ty::List(e) => write!(f, "list({e})"),
            Ty::Map(k, v) => write!(f, "map({k}, {v})"),
            Ty::Object(o) => f.write_str(&o.name),
            Ty::Opaque(name, params) if params.is_empty() => f.write_str(name),
            Ty::Opaque(name, params) => {
                write!(f, "{name}(")?;
                for (i, p) in params.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{p}")?;
                }
                f.write_str(")")
            }
            Ty::Type(t) => write!(f, "type({t})"),
            Ty::Param(p) => f.write_str(p),
            Ty::Var(n) => write!(f, "_var{n}"),
        }
    }
}

/// Type variable bindings of one check.
#[derive(Clone, Default)]
pub struct Subst {
    bound: BTreeMap<u32, Ty>,
    next: u32,
}

impl Subst {
    pub fn fresh(&mut self) -> Ty {
        self.next += 1;
        Ty::Var(self.next)
    }

    /// `t` with its bound variables replaced, recursively.
    pub fn resolve(&self, t: &Ty) -> Ty {
        match t {
            Ty::Var(n) => match self.bound.get(n) {
                Some(b) => self.resolve(b),
                None => Ty::Var(*n),
            },
            Ty::List(e) => Ty::list(self.resolve(e)),
            Ty::Map(k, v) => Ty::map(self.resolve(k), self.resolve(v)),
            Ty::Opaque(n, ps) => Ty::Opaque(n, ps.iter().map(|p| self.resolve(p)).collect()),
            Ty::Type(t) => Ty::Type(Box::new(self.resolve(t))),
            t => t.clone(),
        }
    }

    /// `t` resolved, with its unbound variables as `dyn` (what cel-go reports for them).
    pub fn finish(&self, t: &Ty) -> Ty {
        match self.resolve(t) {
            Ty::Var(_) => Ty::Dyn,
            Ty::List(e) => Ty::list(self.finish(&e)),
            Ty::Map(k, v) => Ty::map(self.finish(&k), self.finish(&v)),
            Ty::Opaque(n, ps) => Ty::Opaque(n, ps.iter().map(|p| self.finish(p)).collect()),
            Ty::Type(t) => Ty::Type(Box::new(self.finish(&t))),
            t => t,
        }
    }

    fn occurs(&self, n: u32, t: &Ty) -> bool {
        match self.resolve(t) {
            Ty::Var(m) => m == n,
            Ty::List(e) => self.occurs(n, &e),
            Ty::Map(k, v) => self.occurs(n, &k) || self.occurs(n, &v),
            Ty::Opaque(_, ps) => ps.iter().any(|p| self.occurs(n, p)),
            Ty::Type(t) => self.occurs(n, &t),
            _ => false,
        }
    }

    /// Whether a value of type `from` may be used where `to` is expected, binding variables
    /// as needed (cel-go's isAssignable); on failure the bindings are left as they were.
    pub fn assignable(&mut self, to: &Ty, from: &Ty) -> bool {
        let saved = self.bound.clone();
        let ok = self.unify(to, from);
        if !ok {
            self.bound = saved;
        }
        ok
    }

    fn unify(&mut self, to: &Ty, from: &Ty) -> bool {
        let (to, from) = (self.resolve(to), self.resolve(from));
        match (&to, &from) {
            (Ty::Var(a), Ty::Var(b)) if a == b => true,
            (Ty::Var(a), t) | (t, Ty::Var(a)) => {
                if self.occurs(*a, t) {
                    return false;
                }
                self.bound.insert(*a, t.clone());
                true
            }
            (Ty::Dyn, _) | (_, Ty::Dyn) => true,
            // null converts to the nullable kinds, as cel-go's wrappers and messages.
            (Ty::Object(_) | Ty::Opaque(..) | Ty::Timestamp | Ty::Duration, Ty::Null) => true,
            (Ty::List(a), Ty::List(b)) => self.unify(a, b),
            (Ty::Map(ak, av), Ty::Map(bk, bv)) => self.unify(ak, bk) && self.unify(av, bv),
            (Ty::Opaque(a, ap), Ty::Opaque(b, bp)) => {
                a == b && ap.len() == bp.len() && ap.iter().zip(bp).all(|(x, y)| self.unify(x, y))
            }
            (Ty::Type(a), Ty::Type(b)) => self.unify(a, b),
            (Ty::Object(a), Ty::Object(b)) => a.name == b.name,
            (a, b) => a == b,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_cel_gos() {
        assert_eq!(
            Ty::map(Ty::String, Ty::list(Ty::Int)).to_string(),
            "map(string, list(int))"
        );
        assert_eq!(Ty::optional(Ty::Dyn).to_string(), "optional_type(dyn)");
        assert_eq!(Ty::Timestamp.to_string(), "google.protobuf.Timestamp");
    }

    #[test]
    fn unification_binds_variables() {
        let mut s = Subst::default();
        let v = s.fresh();
        assert!(s.assignable(&Ty::list(v.clone()), &Ty::list(Ty::Int)));
        assert_eq!(s.resolve(&v), Ty::Int);
        assert!(!s.assignable(&Ty::list(v.clone()), &Ty::list(Ty::String)));
        assert!(s.assignable(&Ty::Dyn, &Ty::String));
        assert!(!s.assignable(&Ty::Int, &Ty::String));
        assert_eq!(
            s.finish(&Ty::list(s.clone_fresh_for_test())),
            Ty::list(Ty::Dyn)
        );
    }

    impl Subst {
        fn clone_fresh_for_test(&self) -> Ty {
            Ty::Var(self.next + 100)
        }
    }
}
