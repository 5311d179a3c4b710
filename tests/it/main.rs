//! Integration tests: one crate, one module per area.

// A failed unwrap is a failed test; clippy's allow-unwrap-in-tests does not
// reach the helper functions of an integration-test crate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api;
mod async_api;
mod codec_roundtrip;
mod config_range;
mod consumer;
mod consumer_records;
mod corruption_sweep;
mod crash_sigkill;
mod decode_errors;
mod disk_full;
#[cfg(feature = "failpoints")]
mod faults;
mod hostile_metadata;
mod kafka_protocol_interop;
mod log_basic;
mod log_corruption;
mod log_model;
mod many_segments;
#[cfg(feature = "metrics")]
mod metrics_export;
mod os_probe;
mod partitioner;
#[cfg(feature = "failpoints")]
mod power_loss;
mod producer;
mod properties;
mod read_only;
mod reserve;
mod retention;
#[cfg(feature = "serde")]
mod serde_roundtrip;
mod store;
mod stress;
#[cfg(feature = "tracing")]
mod tracing_events;
mod transactions;
mod vectors;
mod write_failures;
mod writeback;
mod zeros_ahead;
