//! The pool of sandboxed states that runs scripts, with the bounds of every call and the
//! per-state cache of compiled scripts.
//!
//! A [`Script`] is compiled once per state and kept while the script is alive; callers keep a
//! script for as long as its source is in force (one per customization generation), so a
//! changed customization is a new script and takes effect at its next call. Each call runs the
//! script's chunk (which defines its functions, as Karmada runs the whole script every call),
//! then the operation's function, under a deadline and the state's memory limit.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use mlua::chunk::ChunkMode;
use mlua::{Function, MultiValue, Table, Value as LuaValue};
use serde_json::Value;

use crate::convert::{from_lua, to_lua, to_lua_projected};
use crate::error::{LuaError, message};
use crate::kube::PodLibrary;
use crate::projection::{self, Projection};
use crate::sandbox::{PrintSink, Sandbox};
use crate::tables;

/// The bounds of every call.
#[derive(Clone, Debug)]
pub struct Limits {
    /// How long one call may run (Karmada: one second).
    pub timeout: Duration,
    /// How much memory one Lua state may hold, scripts and their data together.
    pub memory: usize,
    /// After this many calls in a row that hit a bound, a script is suspended (its calls fail
    /// at once) until it is replaced: a script that always loops costs this many timeouts,
    /// not one per object.
    pub strikes: u32,
    /// How many idle states the pool keeps.
    pub idle_states: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(1),
            memory: 64 * 1024 * 1024,
            strikes: 5,
            idle_states: 16,
        }
    }
}

static NEXT_SCRIPT: AtomicU64 = AtomicU64::new(1);

struct ScriptInner {
    id: u64,
    source: String,
    function: String,
    strikes: AtomicU32,
    last_limit: Mutex<String>,
    /// What each argument's conversion keeps, by parameter position.
    params: Vec<Projection>,
}

/// A script and the global function its operation calls. Cheap to clone; every clone is the
/// same compiled script.
#[derive(Clone)]
pub struct Script(Arc<ScriptInner>);

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script")
            .field("function", &self.0.function)
            .finish_non_exhaustive()
    }
}

impl Script {
    /// A script whose operation calls the global function `function`.
    pub fn new(source: impl Into<String>, function: impl Into<String>) -> Script {
        let (source, function) = (source.into(), function.into());
        let params = projection::of_params(&source, &function);
        Script(Arc::new(ScriptInner {
            id: NEXT_SCRIPT.fetch_add(1, Ordering::Relaxed),
            source,
            function,
            strikes: AtomicU32::new(0),
            last_limit: Mutex::new(String::new()),
            params,
        }))
    }

    /// The source text.
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// The function the operation calls.
    pub fn function(&self) -> &str {
        &self.0.function
    }
}

/// An argument of a call.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// A JSON value (an object, a list of status items).
    Json(&'a Value),
    /// A number (a replica count).
    Number(f64),
}

/// A value a script returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Returned {
    /// nil (or nothing).
    Nil,
    /// A boolean.
    Bool(bool),
    /// A number.
    Number(f64),
    /// A string.
    String(String),
    /// A table, encoded as JSON (an empty table is `[]`).
    Table(Value),
    /// A function or userdata.
    Other(&'static str),
}

impl Returned {
    /// The Lua type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Returned::Nil => "nil",
            Returned::Bool(_) => "boolean",
            Returned::Number(_) => "number",
            Returned::String(_) => "string",
            Returned::Table(_) => "table",
            Returned::Other(t) => t,
        }
    }
}

struct Compiled {
    script: Weak<ScriptInner>,
    chunk: Function,
    env: Table,
}

struct Vm {
    sandbox: Sandbox,
    compiled: HashMap<u64, Compiled>,
}

struct Inner {
    idle: Mutex<Vec<Vm>>,
    limits: Limits,
    pods: Arc<dyn PodLibrary>,
    print: PrintSink,
}

/// The pool of sandboxed Lua states shared by every caller; cheap to clone.
#[derive(Clone)]
pub struct Runtime(Arc<Inner>);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// States whose scripts all went are swept when their cache grows past this.
const SWEEP_AT: usize = 64;

impl Runtime {
    /// A runtime whose kube library answers pod questions with `pods`; `print` goes to the
    /// debug log.
    pub fn new(pods: Arc<dyn PodLibrary>, limits: Limits) -> Runtime {
        Runtime::with_print(
            pods,
            limits,
            Arc::new(|line: &str| tracing::debug!(target: "lua", "{line}")),
        )
    }

    /// A runtime whose scripts' `print` goes to `print`.
    pub fn with_print(pods: Arc<dyn PodLibrary>, limits: Limits, print: PrintSink) -> Runtime {
        Runtime(Arc::new(Inner {
            idle: Mutex::new(Vec::new()),
            limits,
            pods,
            print,
        }))
    }

    /// The bounds of every call.
    pub fn limits(&self) -> &Limits {
        &self.0.limits
    }

    fn take(&self) -> Result<Vm, LuaError> {
        if let Some(vm) = lock(&self.0.idle).pop() {
            return Ok(vm);
        }
        let sandbox = Sandbox::new(&self.0.pods, &self.0.print, self.0.limits.memory)
            .map_err(|e| LuaError::Vm(message(&e)))?;
        Ok(Vm {
            sandbox,
            compiled: HashMap::new(),
        })
    }

    fn give_back(&self, mut vm: Vm) {
        if vm.compiled.len() > SWEEP_AT {
            vm.compiled.retain(|_, c| c.script.strong_count() > 0);
        }
        // A state holding much garbage after a call is collected before reuse.
        if vm.sandbox.lua.used_memory() > self.0.limits.memory / 2 {
            let _ = vm.sandbox.lua.gc_collect();
        }
        let mut idle = lock(&self.0.idle);
        if idle.len() < self.0.limits.idle_states {
            idle.push(vm);
        }
    }

    /// Checks that a script compiles, without running it.
    pub fn check_syntax(&self, source: &str) -> Result<(), LuaError> {
        let vm = self.take()?;
        let res = vm
            .sandbox
            .lua
            .load(source)
            .set_name("=<string>")
            .set_mode(ChunkMode::Text)
            .into_function()
            .map(|_| ())
            .map_err(|e| LuaError::Compile(message(&e)));
        self.give_back(vm);
        res
    }

    /// Checks that a script compiles and that running it defines its function.
    pub fn check_defines(&self, script: &Script) -> Result<(), LuaError> {
        let mut vm = self.take()?;
        let res = self.function_of(&mut vm, script).map(|_| ());
        let expired = vm.sandbox.disarm();
        match res {
            Err(e) if e.is_limit() || expired => Err(e),
            other => {
                if other.is_err() {
                    vm.sandbox.forget_unfinished();
                }
                self.give_back(vm);
                other
            }
        }
    }

    fn compiled<'v>(vm: &'v mut Vm, script: &Script) -> Result<&'v Compiled, LuaError> {
        if !vm.compiled.contains_key(&script.0.id) {
            let env = vm
                .sandbox
                .new_env()
                .map_err(|e| LuaError::Vm(message(&e)))?;
            let load = |source: &str| {
                vm.sandbox
                    .lua
                    .load(source)
                    .set_name("=<string>")
                    .set_mode(ChunkMode::Text)
                    .set_environment(env.clone())
                    .into_function()
            };
            // The script with its table constructors tracked; a script that does not compile
            // is reported as written.
            let chunk = tables::rewrite(script.source())
                .and_then(|tracked| load(&tracked).ok())
                .map_or_else(|| load(script.source()), Ok)
                .map_err(|e| LuaError::Compile(message(&e)))?;
            vm.compiled.insert(
                script.0.id,
                Compiled {
                    script: Arc::downgrade(&script.0),
                    chunk,
                    env,
                },
            );
        }
        vm.compiled
            .get(&script.0.id)
            .ok_or_else(|| LuaError::Vm("compiled script vanished".into()))
    }

    /// Runs the chunk (defining the script's functions) under the deadline and returns the
    /// operation's function. Leaves the clock running.
    fn function_of(&self, vm: &mut Vm, script: &Script) -> Result<Function, LuaError> {
        let timeout = self.0.limits.timeout;
        let memory = self.0.limits.memory;
        // A call may have left the state unlimited (see `call_in`).
        set_limit(&vm.sandbox.lua, memory)?;
        let compiled = Self::compiled(vm, script)?;
        let (chunk, env) = (compiled.chunk.clone(), compiled.env.clone());
        vm.sandbox.arm(timeout);
        chunk
            .call::<()>(vm.sandbox.tables.chunk_args.clone())
            .map_err(|e| classify(&vm.sandbox, &e, timeout, memory))?;
        match env.raw_get::<LuaValue>(script.function()) {
            Ok(LuaValue::Function(f)) => Ok(f),
            Ok(LuaValue::Nil) => Err(LuaError::FunctionNotFound(script.function().to_owned())),
            Ok(other) => Err(LuaError::NotAFunction(
                script.function().to_owned(),
                crate::kube::lua_type(&other),
            )),
            Err(e) => Err(LuaError::Runtime(message(&e))),
        }
    }

    /// Calls the script's function with `args` and returns its first `results` values.
    pub fn call(
        &self,
        script: &Script,
        args: &[Arg<'_>],
        results: usize,
    ) -> Result<Vec<Returned>, LuaError> {
        let strikes = script.0.strikes.load(Ordering::Relaxed);
        if strikes >= self.0.limits.strikes {
            return Err(LuaError::Suspended {
                strikes,
                last: lock(&script.0.last_limit).clone(),
            });
        }
        let mut vm = self.take()?;
        let res = self.call_in(&mut vm, script, args, results);
        let expired = vm.sandbox.disarm();
        let res = match res {
            Err(e) if expired && !e.is_limit() => Err(LuaError::Timeout(self.0.limits.timeout)),
            other => other,
        };
        match &res {
            Err(e) if e.is_limit() => {
                // A state stopped mid-call is dropped rather than reused.
                script.0.strikes.fetch_add(1, Ordering::Relaxed);
                *lock(&script.0.last_limit) = e.to_string();
            }
            _ => {
                script.0.strikes.store(0, Ordering::Relaxed);
                if res.is_err() {
                    vm.sandbox.forget_unfinished();
                }
                self.give_back(vm);
            }
        }
        res
    }

    fn call_in(
        &self,
        vm: &mut Vm,
        script: &Script,
        args: &[Arg<'_>],
        results: usize,
    ) -> Result<Vec<Returned>, LuaError> {
        let timeout = self.0.limits.timeout;
        let memory = self.0.limits.memory;
        let f = self.function_of(vm, script)?;
        let lua = &vm.sandbox.lua;
        // Arguments and results are converted without the memory limit: with a limit, mlua
        // guards every table read and write with a protected call (a closure allocated per
        // field), which made up most of a call's time. Arguments are bounded by the objects'
        // size (the store's limit) and count against the limit once the script runs; results
        // were built within it. Each object argument is converted only as far as the script can
        // read it (see `projection`).
        set_limit(lua, 0)?;
        let mut values = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let v = match a {
                Arg::Json(j) => match script.0.params.get(i) {
                    Some(p) => to_lua_projected(lua, j, p),
                    None => to_lua(lua, j),
                },
                Arg::Number(n) => Ok(LuaValue::Number(*n)),
            }
            .map_err(|e| classify(&vm.sandbox, &e, timeout, memory))?;
            values.push(v);
        }
        set_limit(lua, memory)?;
        let out: MultiValue = f
            .call(MultiValue::from_vec(values))
            .map_err(|e| classify(&vm.sandbox, &e, timeout, memory))?;
        set_limit(lua, 0)?;
        let mut returned = Vec::with_capacity(results);
        let mut it = out.into_iter();
        for _ in 0..results {
            returned.push(match it.next().unwrap_or(LuaValue::Nil) {
                LuaValue::Nil => Returned::Nil,
                LuaValue::Boolean(b) => Returned::Bool(b),
                LuaValue::Integer(i) => Returned::Number(i as f64),
                LuaValue::Number(n) => Returned::Number(n),
                LuaValue::String(s) => Returned::String(s.to_string_lossy()),
                t @ LuaValue::Table(_) => Returned::Table(from_lua(&t)?),
                other => Returned::Other(crate::kube::lua_type(&other)),
            });
        }
        Ok(returned)
    }
}

/// Sets a state's memory limit (0: none).
fn set_limit(lua: &mlua::Lua, bytes: usize) -> Result<(), LuaError> {
    lua.set_memory_limit(bytes)
        .map(|_| ())
        .map_err(|e| LuaError::Vm(message(&e)))
}

/// Sorts an mlua error into a bound that was hit or the script's own error.
fn classify(sandbox: &Sandbox, e: &mlua::Error, timeout: Duration, memory: usize) -> LuaError {
    if sandbox.expired() {
        return LuaError::Timeout(timeout);
    }
    if is_memory(e) {
        return LuaError::Memory(memory);
    }
    LuaError::Runtime(message(e))
}

fn is_memory(e: &mlua::Error) -> bool {
    match e {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => {
            is_memory(cause)
        }
        mlua::Error::RuntimeError(m) => m.starts_with("not enough memory"),
        _ => false,
    }
}
