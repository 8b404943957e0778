//! The scheduler (karmada-scheduler): fills `spec.clusters` and the `Scheduled` condition of
//! bindings. [`algorithm`] is the pure placement algorithm, [`controller`] the loop around it.

pub mod algorithm;
pub mod controller;

pub use controller::start;
