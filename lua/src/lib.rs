//! The Lua runtime of Karmada's resource interpreter customizations, shared by the controllers
//! and `karmada-rs interpret`. No I/O.
//!
//! - [`Runtime`]: a pool of sandboxed Lua 5.1 states (Karmada's VM is gopher-lua, i.e. Lua 5.1)
//!   that runs a [`Script`]'s function with a deadline and a memory limit per call, caching each
//!   compiled script per state.
//! - [`operations`]: the interpreter operations (GetReplicas, ReviseReplica, Retain,
//!   ReflectStatus, AggregateStatus, InterpretHealth, GetDependencies, GetComponents) on JSON
//!   objects, with Karmada's result checks and empty-table repair.
//! - [`kube`]: the `kube` library scripts `require`; [`quantity`]: its quantity arithmetic.
//! - [`convert`]: JSON to Lua and back, as Karmada's VM converts.

pub mod convert;
mod error;
pub mod kube;
mod lex;
pub mod operations;
mod projection;
pub mod quantity;
mod runtime;
mod sandbox;
mod tables;

pub use error::LuaError;
pub use kube::{NoPods, PodLibrary};
pub use operations::Operation;
pub use runtime::{Arg, Limits, Returned, Runtime, Script};
pub use sandbox::PrintSink;

#[cfg(test)]
mod tests;
