//! Karmada's controllers for karmada-rs.
pub mod binding;
pub mod detector;
pub mod pending;
pub mod runtime;
pub mod scheduler;
