//! Which parts of its object arguments a script can read, found once per script from its
//! source, so a call converts only those into Lua.
//!
//! Converting a whole object into Lua tables is most of a call's cost (every string interned,
//! every table allocated, and all of it garbage after the call), yet a script usually reads a
//! few fields: `GetReplicas(obj)` reads `obj.spec.replicas` and `obj.spec.template`, and never
//! `obj.status`. When every use of the operation function's parameter in the source is a chain
//! of constant field names (`obj.spec.template`) or a test that cannot tell a pruned table from
//! the whole one (`obj == nil`, `not obj`, `if obj then`), only the subtrees at the ends of those
//! chains are converted, each whole. Any other use — passing the object on, indexing it with
//! `[...]`, iterating it, returning it, a second definition of the function, `_G` — converts the
//! whole argument, so a script can never observe the difference.

use std::collections::BTreeMap;

use crate::lex::{Token, tokens};

/// What of one argument is converted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Projection {
    /// The whole value.
    All,
    /// Only these fields of an object (each with its own projection); any other value whole.
    Fields(BTreeMap<String, Projection>),
}

impl Projection {
    /// Adds the subtree at `path` (converted whole).
    fn include(&mut self, path: &[&str]) {
        let Projection::Fields(fields) = self else {
            return;
        };
        let Some((first, rest)) = path.split_first() else {
            *self = Projection::All;
            return;
        };
        let child = fields
            .entry((*first).to_string())
            .or_insert_with(|| Projection::Fields(BTreeMap::new()));
        if rest.is_empty() {
            *child = Projection::All;
        } else {
            child.include(rest);
        }
    }
}

/// The projections of the parameters of the global function `function` defined in `source`,
/// by position; a position past the end (or a script the analysis cannot follow) is
/// [`Projection::All`].
pub(crate) fn of_params(source: &str, function: &str) -> Vec<Projection> {
    let Some(toks) = tokens(source) else {
        return Vec::new();
    };
    if toks.contains(&Token::Name("_G")) {
        return Vec::new();
    }
    let Some(params) = definition(&toks, function) else {
        return Vec::new();
    };
    params
        .iter()
        .map(|&(name, at)| {
            let duplicate = params.iter().filter(|(n, _)| *n == name).count() > 1;
            if duplicate || name == "..." {
                Projection::All
            } else {
                uses(&toks, name, at)
            }
        })
        .collect()
}

/// The parameters (name, token index) of the one definition of the global `function`, or None
/// when it is not defined exactly once in a recognised form or its name is used otherwise.
fn definition<'a>(toks: &[Token<'a>], function: &str) -> Option<Vec<(&'a str, usize)>> {
    let mut open = None;
    for (i, t) in toks.iter().enumerate() {
        if *t != Token::Name(function) {
            continue;
        }
        let prev = i.checked_sub(1).map(|p| toks[p]);
        let paren = match prev {
            // `function NAME(`
            Some(Token::Name("function"))
                if toks.get(i + 1) == Some(&Token::Symbol("("))
                    && (i < 2 || toks[i - 2] != Token::Name("local")) =>
            {
                Some(i + 1)
            }
            Some(Token::Symbol("." | ":")) => continue,
            // `NAME = function(`
            _ if toks.get(i + 1) == Some(&Token::Symbol("="))
                && toks.get(i + 2) == Some(&Token::Name("function"))
                && toks.get(i + 3) == Some(&Token::Symbol("("))
                && prev != Some(Token::Name("local"))
                && prev != Some(Token::Symbol(",")) =>
            {
                Some(i + 3)
            }
            _ => None,
        };
        // A second definition, or any other use of the name: the called function may not be
        // the one read here.
        if paren.is_none() || open.is_some() {
            return None;
        }
        open = paren;
    }
    let mut i = open? + 1;
    let mut params = Vec::new();
    loop {
        match toks.get(i)? {
            Token::Symbol(")") => return Some(params),
            Token::Name(n) => params.push((*n, i)),
            Token::Symbol("...") => params.push(("...", i)),
            _ => return None,
        }
        i += 1;
        match toks.get(i)? {
            Token::Symbol(",") => i += 1,
            Token::Symbol(")") => return Some(params),
            _ => return None,
        }
    }
}

/// The projection of parameter `name` declared at token `declared`, from every use of the name
/// in the source (a name of another scope only widens it).
fn uses(toks: &[Token<'_>], name: &str, declared: usize) -> Projection {
    let mut p = Projection::Fields(BTreeMap::new());
    for (i, t) in toks.iter().enumerate() {
        if *t != Token::Name(name) || i == declared {
            continue;
        }
        let prev = i.checked_sub(1).map(|p| toks[p]);
        // A field or method of that name belongs to some other table.
        if matches!(prev, Some(Token::Symbol("." | ":"))) {
            continue;
        }
        let mut path = Vec::new();
        let mut k = i + 1;
        while toks.get(k) == Some(&Token::Symbol("."))
            && let Some(Token::Name(field)) = toks.get(k + 1)
        {
            path.push(*field);
            k += 2;
        }
        let next = toks.get(k).copied();
        if !path.is_empty() {
            // The chain's value is used, whatever comes next: its subtree goes whole.
            p.include(&path);
            continue;
        }
        let escapes = match next {
            // Indexed, called or a method taken: anything may be read.
            Some(Token::Symbol("[" | ":" | "(" | "{") | Token::Str) => true,
            // Only compared or tested: a pruned table answers as the whole one.
            _ if matches!(prev, Some(Token::Name("not") | Token::Symbol("==" | "~="))) => false,
            Some(Token::Symbol("==" | "~=") | Token::Name("and" | "then" | "do")) => false,
            _ => true,
        };
        if escapes {
            return Projection::All;
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, Projection)]) -> Projection {
        Projection::Fields(
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    #[test]
    fn field_chains_select_their_subtrees() {
        let src = r#"
local kube = require("kube")
function GetReplicas(obj)
  -- obj.status is never read: "obj.status" in a string or comment does not count
  local s = "obj.status" .. [[ obj.status ]]
  if obj == nil or not obj then return 0 end
  local spec = obj.spec.template.spec
  local r = kube.accuratePodRequirements(obj.spec.template)
  r.namespace = obj.metadata.namespace
  return obj.spec.replicas, r
end
"#;
        assert_eq!(
            of_params(src, "GetReplicas"),
            vec![fields(&[
                ("metadata", fields(&[("namespace", Projection::All)])),
                (
                    "spec",
                    fields(&[("replicas", Projection::All), ("template", Projection::All)])
                ),
            ])]
        );
    }

    #[test]
    fn any_other_use_converts_everything() {
        for body in [
            "return obj",
            "local o = obj return o.spec",
            "return helper(obj)",
            "return obj['spec']",
            "for k, v in pairs(obj) do end",
            "return #obj",
            "return obj or {}",
            "return obj:method()",
            "return {obj = 1}",
        ] {
            let src = format!("function GetReplicas(obj) {body} end");
            assert_eq!(
                of_params(&src, "GetReplicas"),
                vec![Projection::All],
                "{body}"
            );
        }
    }

    #[test]
    fn unusual_definitions_convert_everything() {
        for src in [
            "function GetReplicas(obj) return obj.spec end GetReplicas = nil",
            "function GetReplicas(obj) return obj.spec end function GetReplicas(obj) return obj end",
            "local function GetReplicas(obj) return obj.spec end",
            "function GetReplicas(obj, obj) return obj.spec end",
            "function GetReplicas(...) local obj = ... return obj.spec end",
            "x = 'unterminated",
            "function GetReplicas(obj) return _G.x end",
        ] {
            let p = of_params(src, "GetReplicas");
            assert!(p.iter().all(|p| *p == Projection::All), "{src}: {p:?}");
        }
        // The other form of definition is followed, and positions map to parameters.
        assert_eq!(
            of_params(
                "Retain = function(desired, observed) return observed.status end",
                "Retain"
            ),
            vec![fields(&[]), fields(&[("status", Projection::All)])]
        );
    }

    #[test]
    fn a_whole_field_absorbs_deeper_paths() {
        let src =
            "function InterpretHealth(o) local a = o.status.x local b = o.status return a end";
        assert_eq!(
            of_params(src, "InterpretHealth"),
            vec![fields(&[("status", Projection::All)])]
        );
    }
}
