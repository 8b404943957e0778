//! End-to-end tests of protobuf decoding.

mod encoding;
mod fidelity;
mod go_json;
mod kubectl;
mod malformed;
mod names;
mod storage;
