//! The scheduler (karmada-scheduler): fills `spec.clusters` and the `Scheduled` condition of
//! bindings. The decisions are the `karmada-scheduler` crate's pure functions; [`controller`] is
//! the loop around them.

pub mod controller;

pub use controller::start;
