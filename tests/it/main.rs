#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests: one crate, one module per area.

mod consumer;
mod log_basic;
mod producer;
mod store;
mod vectors;
