//! The scheduler (karmada-scheduler): fills `spec.clusters` and the `Scheduled` condition of
//! bindings. [`controller`] is the loop around the pure placement algorithm.

pub mod controller;

pub use controller::start;
