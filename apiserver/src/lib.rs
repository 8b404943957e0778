//! placeholder
pub mod protobuf;
