//! placeholder

pub mod cluster;
pub mod join;
pub mod member_clients;
pub mod simulator;
