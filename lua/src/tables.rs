//! Tables as Karmada's VM (gopher-lua) has them, where a script can tell them from Lua 5.1's:
//!
//! - `pairs` and `next` give a table's positive integer keys in ascending order, then its other
//!   keys in the order they were first inserted (gopher-lua keeps them in a list; Lua 5.1 walks
//!   its hash part, whose order depends on hashes and sizes). A script that gathers conditions
//!   by type in a table and lists them with `pairs` returns them in first-seen order in Karmada.
//! - `table.sort` is Go's `sort.Sort` (not stable, with its own order of equal elements), not
//!   Lua's quicksort.
//!
//! Insertion order is recorded by a metatable whose `__newindex` sees every key a script adds
//! (scripts cannot read or change metatables), set on every table: the tables the host passes
//! in (their own keys come first, in no particular order, as Go's map order gives gopher-lua),
//! and the tables scripts build, whose constructors are rewritten to pass through
//! [`NEW_TABLE`] with their keyed fields in source order. The Lua side is `tables.lua`.

use mlua::{Lua, Table};

use crate::lex::{Token, lex};

/// The local the rewritten script calls with each constructed table and its keyed fields.
const NEW_TABLE: &str = "__karmada_table";
/// The local the key of each `[key] = value` field passes through, to be recorded in order.
const KEY: &str = "__karmada_key";
/// The local marking a `[key] = value` field in a constructor's field list.
const DYNAMIC: &str = "__karmada_dynamic";

/// The metatable of tracked tables, kept with the state.
struct Tracked(Table);

/// The Lua side: the tracking metatable, the constructor and key hooks, `next`, `pairs` and
/// `table.sort`.
pub(crate) const LUA: &str = include_str!("tables.lua");

/// The functions `tables.lua` returns, which the sandbox installs.
pub(crate) struct Hooks {
    /// The three values a rewritten chunk takes (`NEW_TABLE`, `KEY`, `DYNAMIC`).
    pub(crate) chunk_args: (mlua::Function, mlua::Function, Table),
    /// Forgets the keys of constructors an error interrupted.
    pub(crate) reset: mlua::Function,
}

/// Loads `tables.lua` into a state: keeps the metatable for [`track`] and returns the module
/// (`next`, `pairs`, `sort` for the script environment) and the hooks.
pub(crate) fn install(lua: &Lua) -> mlua::Result<(Table, Hooks)> {
    let offsets = lua.create_function(|_, length: usize| Ok(break_pattern_offsets(length)))?;
    let module: Table = lua.load(LUA).set_name("=tables").call(offsets)?;
    lua.set_app_data(Tracked(module.get("tracked")?));
    let hooks = Hooks {
        chunk_args: (
            module.get("new_table")?,
            module.get("key")?,
            module.get("dynamic")?,
        ),
        reset: module.get("reset")?,
    };
    Ok((module, hooks))
}

/// The metatable of tracked tables, in a state set up by [`install`].
pub(crate) fn metatable(lua: &Lua) -> Option<Table> {
    lua.app_data_ref::<Tracked>().map(|t| t.0.clone())
}

/// Tracks the keys scripts add to a table the host made (`metatable` from [`metatable`]).
pub(crate) fn track(t: &Table, metatable: Option<&Table>) -> mlua::Result<()> {
    match metatable {
        Some(m) => t.set_metatable(Some(m.clone())),
        None => Ok(()),
    }
}

/// Go's `breakPatterns` positions for a run of `length` elements: the offsets (below `length`)
/// its xorshift generator, seeded with the length, picks for the three elements it swaps.
/// Lua 5.1 has no 64-bit integers, so `tables.lua` asks for them.
fn break_pattern_offsets(length: usize) -> (usize, usize, usize) {
    let mut r = length as u64;
    let mut next = || {
        r ^= r << 13;
        r ^= r >> 7;
        r ^= r << 17;
        r
    };
    // `nextPowerOfTwo`: 1 << bits.Len(length), above the length even when it is a power.
    let modulus = 1usize << (usize::BITS - length.leading_zeros());
    let mut pick = || {
        let mut other = (next() as usize) & (modulus - 1);
        if other >= length {
            other -= length;
        }
        other
    };
    (pick(), pick(), pick())
}

/// What the rewrite knows of an open bracket.
enum Open {
    /// A table constructor: whether it is a call's argument (`f{...}`, rewritten `f(...)`),
    /// its keyed fields so far, and whether the next token starts a field.
    Table {
        call: bool,
        fields: Vec<Field>,
        at_field: bool,
    },
    /// `[` of a `[key] = value` field.
    Key,
    /// Parentheses or an index's brackets, with the symbol that closes them.
    Group(&'static str),
    /// `function`, `do`, `if` or `repeat` up to its `end` or `until`.
    Block,
}

/// A keyed field of a constructor, in source order.
enum Field {
    /// `name = value`.
    Name(String),
    /// `[key] = value`.
    Dynamic,
}

const KEYWORDS: &[&str] = &[
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in", "local",
    "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
];

/// `source` with every table constructor passed to the tracking hooks, or None when the source
/// does not lex or nest as the rewrite expects (it then runs as written, and fails to compile
/// if it is wrong). Nothing is added on a line of its own, so the lines of error messages stay.
pub(crate) fn rewrite(source: &str) -> Option<String> {
    let toks = lex(source)?;
    let mut out = format!("local {NEW_TABLE}, {KEY}, {DYNAMIC} = ...; ");
    out.reserve(source.len() + source.len() / 4);
    let mut copied = 0;
    let mut stack: Vec<Open> = Vec::new();
    let mut prev: Option<Token<'_>> = None;
    for (i, (tok, span)) in toks.iter().enumerate() {
        let mut key_field = false;
        if let Some(Open::Table {
            fields, at_field, ..
        }) = stack.last_mut()
            && *at_field
        {
            *at_field = false;
            match tok {
                Token::Name(n)
                    if !KEYWORDS.contains(n)
                        && matches!(toks.get(i + 1), Some((Token::Symbol("="), _))) =>
                {
                    fields.push(Field::Name((*n).to_owned()));
                }
                Token::Symbol("[") => {
                    fields.push(Field::Dynamic);
                    key_field = true;
                }
                _ => {}
            }
        }
        match tok {
            Token::Symbol("{") => {
                // After what ends a prefix expression, `{` is a call's argument.
                let call = match prev {
                    Some(Token::Name(n)) => !KEYWORDS.contains(&n),
                    Some(Token::Symbol(")" | "]" | "}") | Token::Str) => true,
                    _ => false,
                };
                out.push_str(&source[copied..span.start]);
                if call {
                    out.push('(');
                }
                out.push_str(NEW_TABLE);
                out.push_str("({");
                copied = span.end;
                stack.push(Open::Table {
                    call,
                    fields: Vec::new(),
                    at_field: true,
                });
            }
            Token::Symbol("}") => {
                let Some(Open::Table { call, fields, .. }) = stack.pop() else {
                    return None;
                };
                out.push_str(&source[copied..span.end]);
                for f in fields {
                    match f {
                        Field::Name(n) => {
                            out.push_str(", \"");
                            out.push_str(&n);
                            out.push('"');
                        }
                        Field::Dynamic => {
                            out.push_str(", ");
                            out.push_str(DYNAMIC);
                        }
                    }
                }
                out.push(')');
                if call {
                    out.push(')');
                }
                copied = span.end;
            }
            Token::Symbol("," | ";") => {
                if let Some(Open::Table { at_field, .. }) = stack.last_mut() {
                    *at_field = true;
                }
            }
            Token::Symbol("[") if key_field => {
                out.push_str(&source[copied..span.end]);
                out.push_str(KEY);
                out.push('(');
                copied = span.end;
                stack.push(Open::Key);
            }
            Token::Symbol("(") => stack.push(Open::Group(")")),
            Token::Symbol("[") => stack.push(Open::Group("]")),
            Token::Symbol(close @ (")" | "]")) => match stack.pop()? {
                Open::Key if *close == "]" => {
                    out.push_str(&source[copied..span.start]);
                    out.push(')');
                    copied = span.start;
                }
                Open::Group(c) if c == *close => {}
                _ => return None,
            },
            Token::Name("function" | "do" | "if" | "repeat") => stack.push(Open::Block),
            Token::Name("end" | "until") => {
                let Some(Open::Block) = stack.pop() else {
                    return None;
                };
            }
            _ => {}
        }
        prev = Some(*tok);
    }
    if !stack.is_empty() {
        return None;
    }
    out.push_str(&source[copied..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(rewritten: &str) -> &str {
        rewritten
            .split_once("...; ")
            .map(|(_, b)| b)
            .unwrap_or(rewritten)
    }

    #[test]
    fn constructors_pass_through_the_hook_with_their_keyed_fields() {
        let cases = [
            ("local t = {}", "local t = __karmada_table({})"),
            (
                "return {b = 1, 2, a = {c = 3}}",
                r#"return __karmada_table({b = 1, 2, a = __karmada_table({c = 3}, "c")}, "b", "a")"#,
            ),
            (
                "t = {[k] = 1; x = 2, [f(a, b)] = {}}",
                r#"t = __karmada_table({[__karmada_key(k)] = 1; x = 2, [__karmada_key(f(a, b))] = __karmada_table({})}, __karmada_dynamic, "x", __karmada_dynamic)"#,
            ),
            // A call's table argument keeps being the argument.
            ("f{a = 1}", r#"f(__karmada_table({a = 1}, "a"))"#),
            (
                "o:m{1}{2}",
                "o:m(__karmada_table({1}))(__karmada_table({2}))",
            ),
            // Braces in strings and comments, `==` and names in a function body are no fields.
            (
                "x = {'{', a == b, f = function(y) local z = 1 end} -- {",
                r#"x = __karmada_table({'{', a == b, f = function(y) local z = 1 end}, "f") -- {"#,
            ),
            ("return {[[ } ]]}", "return __karmada_table({[[ } ]]})"),
        ];
        for (source, want) in cases {
            let got = rewrite(source).expect(source);
            assert_eq!(body(&got), want, "{source}");
        }
    }

    #[test]
    fn lines_stay_where_they_were() {
        let source = "local t = {\n  a = 1,\n}\nerror('x')\n";
        let got = rewrite(source).unwrap();
        assert_eq!(got.lines().count(), source.lines().count());
        assert!(got.lines().nth(3).unwrap().contains("error"));
    }

    #[test]
    fn what_does_not_nest_is_left_alone() {
        for source in ["x = {", "x = }", "f(]", "if x then", "end", "x = 'open"] {
            assert_eq!(rewrite(source), None, "{source}");
        }
    }

    #[test]
    fn break_patterns_picks_as_go() {
        // xorshift(length) stepped three times (shifts 13, 7, 17), each masked below the
        // power of two above the length and folded below the length.
        assert_eq!(break_pattern_offsets(13), (0, 11, 5));
        assert_eq!(break_pattern_offsets(16), (0, 8, 0));
        assert_eq!(break_pattern_offsets(100), (0, 86, 68));
    }
}
