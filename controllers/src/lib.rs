//! Karmada's controllers for karmada-rs.

pub mod cluster;
pub mod interpreter;
pub mod join;
pub mod member_clients;
pub mod overrides;
pub mod scheduler;
pub mod unified_auth;
pub mod simulator;
