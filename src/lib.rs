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

mod config;
mod consumer;
mod error;
mod group;
mod io;
mod log;
mod producer;
pub mod properties;
pub mod record;
pub mod sample;
mod store;
mod topic;

pub use config::{CleanupPolicy, StoreOptions, TopicConfig, TOPIC_KEYS};
pub use consumer::{Consumer, ConsumerConfig, ConsumerRecord, OffsetReset, RebalanceListener};
pub use error::{Error, Result};
pub use group::{
    Assignor, GroupMembers, OffsetAndMetadata, RangeAssignor, RoundRobinAssignor, TopicPartition,
};
pub use log::{
    AppendInfo, CompactionOutcome, CompactionPolicy, Durability, LogConfig, LogRead, PartitionLog,
    ReadMode, RetentionOutcome, RetentionPolicy,
};
pub use properties::IgnoredKey;
pub use producer::{
    murmur2, partition_for_key, DefaultPartitioner, Partitioner, Producer, ProducerConfig,
    ProducerRecord, RecordMetadata, SendHandle,
};
pub use record::{
    BatchBuilder, BatchHeader, Compression, Header, LogRecord, Record, RecordBatch, Records,
    TimestampType,
};
pub use store::{
    GroupDescription, GroupPartitionOffset, PartitionCleaning, PartitionDescription, ResetTo,
    RetentionReport, Store, TopicDescription,
};
pub use topic::validate_topic_name;
