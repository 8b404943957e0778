//! The Karmada scheduler: the pure algorithm lives in [`algorithm`].

pub mod algorithm;
