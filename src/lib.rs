//! kafkalite: Kafka's storage engine as an embeddable library.
//!
//! A service links kafkalite in and gets Kafka's log layer in a local
//! directory: partition logs of segmented files in Kafka's exact on-disk
//! format (record batch v2, `.log` / `.index` / `.timeindex`), durable appends
//! with group commit, zero-copy reads and crash recovery. There is no broker
//! and no network; one process owns a store directory.
//!
//! # Contract
//! Files of an open log must not be modified from outside: segments and
//! indexes are memory-mapped, and changing them underneath is undefined
//! behaviour (as for any memory map).

mod error;
mod io;
mod log;
pub mod record;

pub use error::{Error, Result};
/// Fuzz harnesses shared by `fuzz/` and the corpus replay test; not API.
#[doc(hidden)]
pub use log::fuzz as log_fuzz;
pub use log::{AppendInfo, Durability, LogConfig, LogRead, PartitionLog, ReadMode};
pub use record::{
    BatchBuilder, BatchHeader, Compression, Header, LogRecord, Record, RecordBatch, Records,
    TimestampType,
};
