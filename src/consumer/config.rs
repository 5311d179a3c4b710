//! Consumer settings, with Kafka's names.

use crate::group::{Assignor, RangeAssignor};
use std::sync::Arc;
use std::time::Duration;

/// Where a consumer starts when it has no valid committed offset
/// (`auto.offset.reset`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum OffsetReset {
    /// The log start offset.
    Earliest,
    /// The log end (the high watermark): only new records. Kafka's default.
    #[default]
    Latest,
    /// Fail with [`Error::NoOffsetForPartition`](crate::Error::NoOffsetForPartition)
    /// or [`Error::OffsetOutOfRange`](crate::Error::OffsetOutOfRange).
    None,
}

/// Which records of transactions a consumer reads (`isolation.level`).
///
/// kafkalite's own producer writes no transactions; this matters for
/// segments a Kafka cluster's transactional producers wrote. Control
/// batches (the COMMIT and ABORT markers) are never returned at either
/// level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum IsolationLevel {
    /// Every data record below the high watermark, aborted ones included.
    /// Kafka's default.
    #[default]
    ReadUncommitted,
    /// Records of aborted transactions are skipped, and reads stop at the
    /// last stable offset (the start of a transaction not yet ended).
    ReadCommitted,
}

/// Consumer settings. Each field's doc ends with its default.
#[derive(Clone)]
#[non_exhaustive]
pub struct ConsumerConfig {
    /// `group.id`: needed for `subscribe` and commits. Default: none.
    pub group_id: Option<String>,
    /// `client.id`, the prefix of member ids. Default: `consumer`.
    pub client_id: String,
    /// `enable.auto.commit`: commit positions every
    /// `auto.commit.interval.ms`, inside `poll` and at `close`. Default: true.
    pub enable_auto_commit: bool,
    /// `auto.commit.interval.ms`. Default: 5 s.
    pub auto_commit_interval: Duration,
    /// `auto.offset.reset`. Default: latest.
    pub auto_offset_reset: OffsetReset,
    /// `max.poll.records`: most records one `poll` returns. Default: 500.
    pub max_poll_records: usize,
    /// `fetch.max.bytes`: most bytes one `poll` reads. Default: 50 MiB.
    pub fetch_max_bytes: usize,
    /// `max.partition.fetch.bytes`: most bytes read from one partition per
    /// `poll` (at least one batch is always read). Default: 1 MiB.
    pub max_partition_fetch_bytes: usize,
    /// `max.poll.interval.ms`: a member that does not poll for this long is
    /// removed from its group, and its partitions move. Default: 5 minutes.
    pub max_poll_interval: Duration,
    /// `partition.assignment.strategy`. Default: range.
    pub assignor: Arc<dyn Assignor>,
    /// `isolation.level`. Default: read_uncommitted.
    pub isolation_level: IsolationLevel,
}

impl std::fmt::Debug for ConsumerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsumerConfig")
            .field("group_id", &self.group_id)
            .field("client_id", &self.client_id)
            .field("enable_auto_commit", &self.enable_auto_commit)
            .field("auto_commit_interval", &self.auto_commit_interval)
            .field("auto_offset_reset", &self.auto_offset_reset)
            .field("max_poll_records", &self.max_poll_records)
            .field("fetch_max_bytes", &self.fetch_max_bytes)
            .field("max_partition_fetch_bytes", &self.max_partition_fetch_bytes)
            .field("max_poll_interval", &self.max_poll_interval)
            .field("assignor", &self.assignor.name())
            .field("isolation_level", &self.isolation_level)
            .finish()
    }
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        ConsumerConfig {
            group_id: None,
            client_id: "consumer".to_owned(),
            enable_auto_commit: true,
            auto_commit_interval: Duration::from_secs(5),
            auto_offset_reset: OffsetReset::Latest,
            max_poll_records: 500,
            fetch_max_bytes: 50 << 20,
            max_partition_fetch_bytes: 1 << 20,
            max_poll_interval: Duration::from_secs(300),
            assignor: Arc::new(RangeAssignor),
            isolation_level: IsolationLevel::ReadUncommitted,
        }
    }
}

impl ConsumerConfig {
    /// A config with `group.id` set and the other defaults.
    pub fn with_group(group_id: impl Into<String>) -> Self {
        ConsumerConfig {
            group_id: Some(group_id.into()),
            ..ConsumerConfig::default()
        }
    }
}
