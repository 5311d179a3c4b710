//! kafkalite: Kafka's storage engine as an embeddable library.
//!
//! What SQLite is to a database server, kafkalite is to a Kafka broker. A
//! service links it in and gets topics, partitions, offsets, consumer groups
//! and retention in a local directory, in **Kafka's exact on-disk format**
//! (record batch v2, `.log` / `.index` / `.timeindex` segments), so Kafka's
//! own tools (`kafka-dump-log.sh`) and any Kafka record decoder read the
//! files.
//!
//! # What it is not
//!
//! - **Not a server.** There is no network protocol, no broker, no
//!   ZooKeeper or KRaft. One process owns a store directory at a time: a
//!   second [`Store::open`] of the same directory, from this process or
//!   another, fails with [`Error::Locked`]. Share the [`Store`] handle (it is
//!   `Clone + Send + Sync`) among threads instead.
//! - **No replication.** Kafka's `acks` becomes a choice of how far an
//!   append has gone when it is acknowledged: [`Durability`].
//! - **No transactions** and no idempotent producer ids: there are no
//!   retries over a network to deduplicate. Segments written by Kafka's
//!   transactional producers are read correctly all the same: control
//!   batches (COMMIT/ABORT markers) are never handed to applications, and a
//!   consumer with `isolation.level=read_committed` skips aborted records.
//! - Every Kafka codec is read and written: none, gzip, snappy (xerial
//!   framing), lz4 and zstd.
//!
//! # Example
//!
//! A store in a temporary directory, a topic, a producer, and a consumer
//! group member that polls and commits:
//!
//! ```
//! use kafkalite::{
//!     Consumer, ConsumerConfig, Durability, OffsetReset, Producer, ProducerConfig,
//!     ProducerRecord, Store, StoreOptions, TopicConfig,
//! };
//! use std::time::Duration;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let tmp = tempfile::tempdir()?;
//! # let dir = tmp.path();
//! // `dir` is any directory; the store creates it if needed.
//! let store = Store::open(dir, StoreOptions::default())?;
//! store.create_topic("events", 3, TopicConfig::default())?;
//!
//! // Batches per partition (batch.size, linger.ms); keys are partitioned
//! // with murmur2, as Kafka's default partitioner does.
//! let mut config = ProducerConfig::default();
//! config.durability = Durability::Fsync; // acks=all: on disk when acknowledged
//! let producer = Producer::new(&store, config)?;
//! for i in 0..10 {
//!     let record = ProducerRecord::new("events", format!("event {i}")).key(format!("user-{}", i % 4));
//!     producer.send(record)?; // returns a handle; wait() on it for the offset
//! }
//! producer.flush()?; // every record sent so far is appended (and fsynced)
//!
//! // A member of consumer group "billing", starting from the earliest
//! // offset since the group has committed nothing yet.
//! let mut config = ConsumerConfig::with_group("billing");
//! config.auto_offset_reset = OffsetReset::Earliest;
//! config.enable_auto_commit = false;
//! let mut consumer = Consumer::new(&store, config)?;
//! consumer.subscribe(&["events"])?;
//! let mut seen = 0;
//! while seen < 10 {
//!     let records = consumer.poll(Duration::from_secs(1))?;
//! #   assert!(!records.is_empty(), "poll timed out");
//!     for record in &records {
//!         println!("{}-{}@{}: {:?}", record.topic, record.partition, record.offset, record.value);
//!         seen += 1;
//!     }
//! }
//! consumer.commit_sync()?; // the group resumes here after a restart
//!
//! let group = store.describe_group("billing")?;
//! let committed: i64 = group.offsets.iter().filter_map(|p| p.committed).sum();
//! assert_eq!(committed, 10); // next offsets per partition add up to the 10 records
//! consumer.close()?;
//! store.close()?; // a clean close lets the next open skip recovery
//! # Ok(())
//! # }
//! ```
//!
//! Kafka `.properties` files load as they are:
//! [`StoreOptions::from_properties`], [`TopicConfig::from_properties`],
//! [`ProducerConfig::from_properties`], [`ConsumerConfig::from_properties`]
//! (see [`properties`]).
//!
//! # Contract: don't touch an open store's files
//!
//! While a store is open, nothing outside it may modify, truncate, replace
//! or delete files under its directory. Segments and indexes are
//! memory-mapped: a file truncated underneath a map makes reads fault
//! (`SIGBUS`), and bytes changed underneath can appear in records that were
//! already CRC-checked. This is **undefined behaviour**, as for any memory
//! map, and kafkalite cannot detect it. Reading the files (backups, `cp`,
//! `kafka-dump-log.sh`) is fine, though the active segment may end in a
//! batch being written. [`ReadMode::Pread`] (in [`StoreOptions::read_mode`])
//! reads `.log` files without memory maps, for file systems where maps are
//! unwelcome; indexes are still mapped.
//!
//! # Durability
//!
//! | [`Durability`] | Kafka | acknowledged when | after a process crash | after a power loss |
//! |---|---|---|---|---|
//! | `None` | `acks=0` | in the producer's buffer | lost if not yet appended; else kept | lost if not yet appended; else as `Written` |
//! | `Written` (default) | `acks=1` | written to the OS page cache | kept | records after the last fsync may be lost |
//! | `Fsync` | `acks=all` | `fdatasync` returned | kept | kept |
//!
//! Readers see records below the high watermark only, so no consumer
//! processes a record that a crash can take back. Recovery on open cuts a
//! torn tail; damage below the recovery point is [`Error::Corrupt`].
//!
//! # Module map
//!
//! | area | items |
//! |---|---|
//! | store and topics | [`Store`], [`StoreOptions`], [`TopicConfig`] (its log part [`LogSettings`]), [`CleanupPolicy`], [`TOPIC_KEYS`], [`TopicDescription`], [`validate_topic_name`] |
//! | producing | [`Producer`], [`ProducerConfig`], [`ProducerRecord`], [`SendHandle`], [`RecordMetadata`], [`Partitioner`], [`DefaultPartitioner`], [`murmur2`], [`partition_for_key`] |
//! | consuming and groups | [`Consumer`], [`ConsumerConfig`], [`OffsetReset`], [`ConsumerRecords`], [`ConsumerRecord`], [`ConsumerRecordRef`], [`RebalanceListener`], [`Assignor`], [`RangeAssignor`], [`RoundRobinAssignor`], [`TopicPartition`], [`OffsetAndMetadata`], [`GroupDescription`], [`validate_group_id`] |
//! | partition logs (low level) | [`PartitionLog`], [`LogConfig`] ([`LogSettings`] + read mode and file system), [`Durability`], [`ReadMode`], [`LogRead`], [`AppendInfo`], [`RetentionPolicy`], [`CompactionPolicy`] |
//! | records and the batch codec (pure, no I/O) | [`record`]: [`Record`], [`RecordBatch`], [`BatchBuilder`], [`BatchHeader`], [`Compression`] |
//! | Kafka `.properties` files | [`properties`], [`IgnoredKey`] |
//! | errors | [`Error`], [`Result`], [`DecodeError`] (malformed batches), [`Corruption`] (damage in a file) |
//! | async (any executor, no runtime dependency) | [`Consumer::poll_async`] ([`PollFuture`]), `Consumer::stream` (`RecordStream`, feature `stream`), [`Producer::send_async`] ([`SendAsync`]), [`Producer::try_send`], `SendHandle: IntoFuture` ([`SendFuture`]) |
//! | blocking iteration | [`Consumer::iter`] ([`RecordIter`]) |
//!
//! # Cargo features
//!
//! | feature | default | adds |
//! |---|---|---|
//! | `gzip`, `snappy`, `zstd` | on | the codecs of those batches (without them: [`DecodeError::CodecNotBuilt`]) |
//! | `stream` | off | `Consumer::stream`: a `futures_core::Stream` of records |
//! | `serde` | off | `Serialize`/`Deserialize` for the descriptions, the metrics snapshot, [`TopicConfig`] and its enums, [`RecordMetadata`], [`TopicPartition`], [`OffsetAndMetadata`] |
//! | `metrics` | off | `StoreMetrics::publish` and `MetricsPublisher`: the snapshot through the `metrics` facade |
//! | `tracing` | off | `tracing` spans and events: recovery, compaction, rebalances, rolls, retention; warnings for corruption and failed fsyncs |
//! | `failpoints` | off | `kafkalite::io::SimFs`, the fault-injecting file system the tests use |
//! | `cli` | off | the `kafkalite` binary |
//!
//! The async calls never park the executor's thread on a wait, but file
//! I/O still blocks: opening (recovery), closing, flushing, appends done on
//! the caller's thread, commits (fsync), and reads that fault pages in. Run
//! those with the runtime's `spawn_blocking` (see the README and
//! `examples/async_tasks.rs`).
//!
//! The on-disk format is described in `docs/format.md` and the Kafka
//! settings in `docs/configuration.md` in the repository.

// Every index into a buffer is checked, or proven in bounds where it is
// written (an `#[expect]` with the reason), crate-wide (fjall's guard). Tests
// index known-good buffers.
#![cfg_attr(not(test), warn(clippy::indexing_slicing))]

/// Emits a `tracing` info event (feature `tracing`); compiles to nothing
/// else, but still type-checks its format arguments.
macro_rules! event {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::info!($($arg)*);
        #[cfg(not(feature = "tracing"))]
        let _ = format_args!($($arg)*);
    }};
}
pub(crate) use event;

/// `Instant::now() + d`, or a time about a century away when that would
/// overflow: a huge timeout means "wait as long as it takes", never a panic.
pub(crate) fn deadline_after(d: std::time::Duration) -> std::time::Instant {
    let now = std::time::Instant::now();
    now.checked_add(d)
        .or_else(|| now.checked_add(std::time::Duration::from_secs(100 * 365 * 24 * 3600)))
        .unwrap_or(now)
}

/// Emits a `tracing` warn event (feature `tracing`); as [`event!`]
/// otherwise.
macro_rules! warn_event {
    ($($arg:tt)*) => {{
        #[cfg(feature = "tracing")]
        ::tracing::warn!($($arg)*);
        #[cfg(not(feature = "tracing"))]
        let _ = format_args!($($arg)*);
    }};
}
pub(crate) use warn_event;

/// Enters a `tracing` info span named `$name` with `Display` fields
/// (feature `tracing`) until the returned guard drops; without the feature
/// the fields are evaluated (borrowed) and nothing else happens.
macro_rules! span {
    ($name:literal $(, $field:ident = $value:expr)* $(,)?) => {{
        #[cfg(feature = "tracing")]
        let guard = ::tracing::info_span!(
            $name $(, $field = ::tracing::field::display(&$value))*
        )
        .entered();
        #[cfg(not(feature = "tracing"))]
        let guard = {
            $(let _ = &$value;)*
            crate::NoSpan
        };
        guard
    }};
}
pub(crate) use span;

/// What [`span!`] returns without the `tracing` feature.
#[cfg(not(feature = "tracing"))]
pub(crate) struct NoSpan;

mod asynk;
mod config;
mod consumer;
mod error;
mod group;
pub mod io;
mod log;
mod metrics;
#[cfg(feature = "metrics")]
mod metrics_export;
mod own_lines;
mod producer;
pub mod properties;
pub mod record;
// Sample workload data for benches, examples and the CLI; in the library for
// its own unit test only, not API.
#[cfg(test)]
mod sample;
#[cfg(feature = "serde")]
mod serde_impls;
mod store;
mod topic;

pub use config::{CleanupPolicy, StoreOptions, TopicConfig};
#[cfg(feature = "stream")]
pub use consumer::RecordStream;
pub use consumer::{
    Consumer, ConsumerConfig, ConsumerRecord, ConsumerRecordRef, ConsumerRecords,
    ConsumerRecordsIntoIter, ConsumerRecordsIter, IsolationLevel, OffsetReset, PollFuture,
    RebalanceListener, RecordIter,
};
pub use error::{Corruption, Error, Result};
pub use group::{
    validate_group_id, Assignor, GroupMembers, OffsetAndMetadata, RangeAssignor,
    RoundRobinAssignor, TopicPartition, OFFSET_METADATA_MAX_BYTES,
};
/// The file names of a partition directory and how they parse (Kafka's
/// `LogFileUtils`), for tools that read a store's files.
pub use log::files;
/// Fuzz harnesses for `fuzz/` (built only under cargo-fuzz's `--cfg fuzzing`);
/// not API.
#[cfg(fuzzing)]
#[doc(hidden)]
pub use log::fuzz as log_fuzz;
pub use log::{
    AbortedTransaction, AppendInfo, CompactionOutcome, CompactionPolicy, Durability, LogConfig,
    LogRead, LogSettings, PartitionLog, ReadMode, RetentionOutcome, RetentionPolicy,
};
pub use metrics::{GroupLag, LatencySnapshot, PartitionMetrics, StoreMetrics};
#[cfg(feature = "metrics")]
pub use metrics_export::{describe_metrics, MetricsPublisher};
pub use producer::{
    murmur2, partition_for_key, DefaultPartitioner, Partitioner, Producer, ProducerConfig,
    ProducerRecord, RecordMetadata, SendAsync, SendFuture, SendHandle,
};
pub use properties::{IgnoredKey, TOPIC_KEYS};
pub use record::{
    BatchBuilder, BatchHeader, Compression, ControlRecord, ControlRecordType, DecodeError, Header,
    LogRecord, Record, RecordBatch, RecordView, Records, TimestampType, NO_TIMESTAMP,
};
pub use store::{
    GroupDescription, GroupPartitionOffset, PartitionCleaning, PartitionDescription, ResetTo,
    RetentionReport, Store, TopicDescription,
};
pub use topic::validate_topic_name;
