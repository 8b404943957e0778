//! End-to-end tests of protobuf decoding.

mod fidelity;
mod kubectl;
mod malformed;
mod names;
