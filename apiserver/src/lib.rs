//! placeholder
pub mod patch;
