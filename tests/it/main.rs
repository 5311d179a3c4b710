#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests: one crate, one module per area.

mod log_basic;
mod log_model;
mod vectors;
