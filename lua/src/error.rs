//! The one error type of the crate.

use std::time::Duration;

use crate::convert::EncodeError;

/// Why running a script failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LuaError {
    /// The script does not compile; the message has the line (`<string>:3: ...`).
    #[error("{0}")]
    Compile(String),
    /// The script raised an error or misused a value while running.
    #[error("{0}")]
    Runtime(String),
    /// The call ran past its deadline (an endless loop, or too much work).
    #[error("the script did not finish within {}s (it may loop forever)", .0.as_secs_f64())]
    Timeout(Duration),
    /// The call allocated past the state's memory limit.
    #[error("the script exceeded its memory limit of {} MiB", .0 / (1024 * 1024))]
    Memory(usize),
    /// The script hit its limits on several calls in a row and is not run again until it
    /// changes.
    #[error(
        "the script is suspended after exceeding its limits on {strikes} calls in a row, until its customization changes; last failure: {last}"
    )]
    Suspended {
        /// How many calls failed in a row.
        strikes: u32,
        /// The last of those failures.
        last: String,
    },
    /// The script does not define the function its operation calls.
    #[error("not found function {0}")]
    FunctionNotFound(String),
    /// The name the operation calls is not a function.
    #[error("{0} is not a function: {1}")]
    NotAFunction(String, &'static str),
    /// A returned value cannot be encoded as JSON.
    #[error("encode lua result to json failed: {0}")]
    Encode(#[from] EncodeError),
    /// A returned value has the wrong type or shape for the operation.
    #[error("{0}")]
    Result(String),
    /// A Lua state could not be created.
    #[error("cannot create a Lua state: {0}")]
    Vm(String),
}

impl LuaError {
    /// Whether the failure is a sandbox bound (time or memory), which counts against the
    /// script.
    pub fn is_limit(&self) -> bool {
        matches!(self, LuaError::Timeout(_) | LuaError::Memory(_))
    }
}

/// The message of an mlua error without the Rust-side wrapping and Lua's stack traceback.
pub(crate) fn message(e: &mlua::Error) -> String {
    let text = match e {
        mlua::Error::CallbackError { cause, .. } => return message(cause),
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m.clone(),
        mlua::Error::MemoryError(m) => m.clone(),
        mlua::Error::WithContext { cause, .. } => return message(cause),
        other => other.to_string(),
    };
    match text.find("\nstack traceback:") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}
