//! placeholder

pub mod table;
