//! Karmada's controllers for karmada-rs.

pub mod interpreter;
pub mod overrides;
pub mod scheduler;
pub mod unified_auth;
