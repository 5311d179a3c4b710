#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Integration tests: one crate, one module per area.

mod fuzz_log_corpus;
mod log_basic;
mod log_corruption;
mod log_model;
mod vectors;
