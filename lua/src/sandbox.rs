//! One sandboxed Lua 5.1 state, set up as Karmada's VM is (`luavm.NewLuaState` and
//! `pkg/util/lifted/lua`): the base functions scripts need, `table`, `math`, a string library
//! without `rep`, `gsub` and `dump`, `os` with only `time` and `date`, and a `require` that
//! serves only the `kube` library. There is no `io`, no file or module loading, no `debug`.
//!
//! Each script runs in an environment of its own ([`Sandbox::new_env`]): what it defines, and
//! any change it makes to a library table, stays in its environment. Tables iterate and sort
//! as gopher-lua's do (`tables`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, VmState};

use crate::kube::{self, PodLibrary};
use crate::tables;

/// Base functions replaced by functions that raise Karmada's error.
const DISABLED: &[&str] = &[
    "collectgarbage",
    "dofile",
    "getfenv",
    "getmetatable",
    "load",
    "loadfile",
    "loadstring",
    "rawequal",
    "rawget",
    "rawset",
    "setfenv",
    "setmetatable",
    "module",
    "newproxy",
];

/// The longest string the pattern functions accept (Karmada's `maxInputStringParamsLen`):
/// Lua's matcher runs in C, outside the instruction hook, so its input is bounded instead.
const MAX_PATTERN_INPUT: usize = 1_000_000;

/// How often the hook checks the deadline, in VM instructions.
const HOOK_INSTRUCTIONS: u32 = 1000;

/// Trusted setup, run once per state in its real globals: returns the function that makes a
/// script environment.
const SETUP: &str = r#"
local unsupported, kube_loader, print_fn, limit, expired, deadline_message, tables = ...
local stringlib, tablelib, mathlib = string, table, math
local os_time, os_date = os.time, os.date

for _, name in ipairs({"rep", "gsub", "dump"}) do
  stringlib[name] = unsupported("The Lua function string." .. name .. " is not supported by Karmada. If you believe this function is essential for your use case, please submit an issue to let us know why you need it.")
end
local function check(s)
  if type(s) == "string" and #s > limit then
    error("string length " .. #s .. " exceeds the maximum allowed input string length " .. limit .. " in Karmada lua string lib, please check your lua script.", 3)
  end
end
for _, name in ipairs({"find", "match", "gmatch"}) do
  local f = stringlib[name]
  stringlib[name] = function(s, p, ...)
    check(s)
    check(p)
    return f(s, p, ...)
  end
end

-- A call stopped by its deadline stays stopped: pcall and xpcall do not return once it passed.
local raw_pcall, raw_xpcall = pcall, xpcall
local function finish(...)
  if expired() then error(deadline_message, 0) end
  return ...
end

local base = {
  assert = assert, error = error, ipairs = ipairs, next = tables.next, pairs = tables.pairs,
  pcall = function(f, ...) return finish(raw_pcall(f, ...)) end,
  select = select, tonumber = tonumber, tostring = tostring, type = type, unpack = unpack,
  xpcall = function(f, h) return finish(raw_xpcall(f, h)) end,
  print = print_fn, _VERSION = _VERSION,
}
for _, name in ipairs({ DISABLED_NAMES }) do
  base[name] = unsupported("call function " .. name .. " is not supported in karmada customized resourceinterpreter.")
end

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

return function()
  local env = copy(base)
  env.string = copy(stringlib)
  env.table = copy(tablelib)
  -- gopher-lua's table library: Go's sort, and no foreach, foreachi or setn.
  env.table.sort = tables.sort
  env.table.foreach, env.table.foreachi, env.table.setn = nil, nil, nil
  env.math = copy(mathlib)
  env.os = {time = os_time, date = os_date}
  local package = {preload = {kube = kube_loader}, loaded = {}}
  env.package = package
  env.require = function(name)
    local loaded = package.loaded[name]
    if loaded ~= nil then return loaded end
    local loader = package.preload[name]
    if loader == nil then
      error("module '" .. tostring(name) .. "' not found:\n\tno field package.preload['" .. tostring(name) .. "']", 2)
    end
    local m = loader(name)
    if m == nil then m = true end
    package.loaded[name] = m
    return m
  end
  env._G = env
  return env
end
"#;

/// Where `print` writes.
pub type PrintSink = Arc<dyn Fn(&str) + Send + Sync>;

/// A sandboxed state and its call bounds.
pub(crate) struct Sandbox {
    pub(crate) lua: Lua,
    make_env: Function,
    /// What a script's chunk is called with, and what forgets unfinished constructors.
    pub(crate) tables: tables::Hooks,
    epoch: Instant,
    /// Nanoseconds after `epoch` at which the running call must stop; 0 when none runs.
    deadline: Arc<AtomicU64>,
    /// Set by the hook when it stopped a call.
    expired: Arc<AtomicBool>,
}

/// The message the hook raises; scripts that catch it with pcall are stopped again at the
/// next check.
pub(crate) const DEADLINE_MESSAGE: &str = "script deadline exceeded";

impl Sandbox {
    /// Creates a state with the sandboxed libraries and a memory limit.
    pub(crate) fn new(
        pods: &Arc<dyn PodLibrary>,
        print: &PrintSink,
        memory_limit: usize,
    ) -> mlua::Result<Sandbox> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH | StdLib::OS,
            LuaOptions::default(),
        )?;
        let unsupported = lua.create_function(|lua, message: String| {
            lua.create_function(move |_, _: MultiValue| -> mlua::Result<()> {
                Err(mlua::Error::runtime(message.clone()))
            })
        })?;
        let p = pods.clone();
        let kube_loader = lua.create_function(move |lua, _: MultiValue| kube::module(lua, &p))?;
        let sink = print.clone();
        let tostring: Function = lua.globals().get("tostring")?;
        let print_fn = lua.create_function(move |_, args: MultiValue| {
            let mut line = String::new();
            for (i, a) in args.into_iter().enumerate() {
                if i > 0 {
                    line.push('\t');
                }
                let s: mlua::LuaString = tostring.call(a)?;
                line.push_str(&s.to_string_lossy());
            }
            sink(&line);
            Ok(())
        })?;
        let expired = Arc::new(AtomicBool::new(false));
        let x = expired.clone();
        let expired_fn = lua.create_function(move |_, ()| Ok(x.load(Ordering::Relaxed)))?;
        let (table_functions, hooks) = tables::install(&lua)?;
        let disabled: Vec<String> = DISABLED.iter().map(|n| format!("{n:?}")).collect();
        let setup = SETUP.replace("DISABLED_NAMES", &disabled.join(", "));
        let make_env: Function = lua.load(setup).set_name("=setup").call((
            unsupported,
            kube_loader,
            print_fn,
            MAX_PATTERN_INPUT,
            expired_fn,
            DEADLINE_MESSAGE,
            table_functions,
        ))?;
        let epoch = Instant::now();
        let deadline = Arc::new(AtomicU64::new(0));
        let (d, x) = (deadline.clone(), expired.clone());
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(HOOK_INSTRUCTIONS),
            move |_, _| {
                let at = d.load(Ordering::Relaxed);
                if at != 0 && epoch.elapsed().as_nanos() as u64 >= at {
                    x.store(true, Ordering::Relaxed);
                    return Err(mlua::Error::runtime(DEADLINE_MESSAGE));
                }
                Ok(VmState::Continue)
            },
        )?;
        lua.set_memory_limit(memory_limit)?;
        Ok(Sandbox {
            lua,
            make_env,
            tables: hooks,
            epoch,
            deadline,
            expired,
        })
    }

    /// A fresh script environment.
    pub(crate) fn new_env(&self) -> mlua::Result<Table> {
        self.make_env.call(())
    }

    /// After a failed call: forgets the keys of table constructors the error interrupted.
    pub(crate) fn forget_unfinished(&self) {
        if let Err(e) = self.tables.reset.call::<()>(()) {
            tracing::warn!(error = %e, "resetting the table constructors of a Lua state failed");
        }
    }

    /// Starts the clock of a call.
    pub(crate) fn arm(&self, timeout: std::time::Duration) {
        self.expired.store(false, Ordering::Relaxed);
        let at = (self.epoch.elapsed() + timeout).as_nanos() as u64;
        self.deadline.store(at.max(1), Ordering::Relaxed);
    }

    /// Whether the running call has been stopped by its deadline.
    pub(crate) fn expired(&self) -> bool {
        self.expired.load(Ordering::Relaxed)
    }

    /// Stops the clock; true when the call ran out of time.
    pub(crate) fn disarm(&self) -> bool {
        self.deadline.store(0, Ordering::Relaxed);
        self.expired.load(Ordering::Relaxed)
    }
}
