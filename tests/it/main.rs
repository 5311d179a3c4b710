//! Integration tests: one crate, one module per area.

mod vectors;
