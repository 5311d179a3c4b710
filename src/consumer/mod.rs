//! The high-level consumer: subscribe or assign, poll, seek, commit.
//!
//! Files: `membership.rs` (subscribe, assign, the group's rebalances),
//! `fetch.rs` (poll and the per-partition read-ahead), `commit.rs` (offset
//! commits, sync, async and automatic), `position.rs` (seek, pause, lag),
//! `config.rs`, `iter.rs`, `async_poll.rs`, `stream.rs`.

mod async_poll;
mod commit;
mod config;
mod fetch;
mod iter;
mod membership;
mod position;
mod records;
#[cfg(feature = "stream")]
mod stream;

pub use async_poll::PollFuture;
pub use config::{ConsumerConfig, IsolationLevel, OffsetReset};
pub use iter::RecordIter;
pub use records::{
    ConsumerRecordRef, ConsumerRecords, ConsumerRecordsIntoIter, ConsumerRecordsIter,
};
#[cfg(feature = "stream")]
pub use stream::RecordStream;

use fetch::Buffered;

use crate::error::{Error, Result};
use crate::group::TopicPartition;
use crate::record::Header;
use crate::store::Store;
use bytes::Bytes;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Instant;

/// A record of [`Consumer::poll`], owned (see [`ConsumerRecords`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumerRecord {
    /// The topic.
    pub topic: Arc<str>,
    /// The partition.
    pub partition: u32,
    /// The record's offset.
    pub offset: i64,
    /// Milliseconds since the epoch.
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<Bytes>,
    /// The value; `None` is null.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

/// Callbacks run inside `poll` when a rebalance moves partitions
/// (Kafka's `ConsumerRebalanceListener`). The consumer is passed in, so a
/// listener can commit (e.g. `commit_sync`) before partitions move.
pub trait RebalanceListener: Send {
    /// Before partitions are taken away (all of them: the protocol is eager).
    fn on_partitions_revoked(&mut self, consumer: &mut Consumer, partitions: &[TopicPartition]) {
        let _ = (consumer, partitions);
    }

    /// After partitions were assigned, before records are fetched from them.
    fn on_partitions_assigned(&mut self, consumer: &mut Consumer, partitions: &[TopicPartition]) {
        let _ = (consumer, partitions);
    }
}

type CommitCallback = Box<dyn FnOnce(Result<()>) + Send>;

struct Membership {
    group: Arc<crate::group::Group>,
    member_id: String,
    generation: i32,
    topics: Vec<String>,
}

/// Reads records from a store's topics, alone (`assign`) or as a member of
/// a consumer group (`subscribe`), like Kafka's `KafkaConsumer`.
///
/// A consumer belongs to one thread at a time (`&mut self`), as in Kafka;
/// it is `Send`, so it can move between threads. Dropping it closes it
/// (auto-commit, leave the group).
///
/// ```
/// use kafkalite::*;
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path(), StoreOptions::default())?;
/// store.create_topic("jobs", 2, TopicConfig::default())?;
/// store.append("jobs", 0, &[Record::new("job-1")], Durability::Written)?;
///
/// let mut config = ConsumerConfig::with_group("workers");
/// config.auto_offset_reset = OffsetReset::Earliest;
/// let mut consumer = Consumer::new(&store, config)?;
/// consumer.subscribe(&["jobs"])?;
/// let records = consumer.poll(std::time::Duration::from_secs(1))?;
/// assert_eq!(records.iter().next().and_then(|r| r.value), Some(&b"job-1"[..]));
/// consumer.commit_sync()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Consumer {
    store: Store,
    config: ConsumerConfig,
    membership: Option<Membership>,
    listener: Option<Box<dyn RebalanceListener>>,
    assignment: Vec<TopicPartition>,
    /// Next offset to return per partition; `None` until reset.
    positions: HashMap<TopicPartition, Option<i64>>,
    paused: BTreeSet<TopicPartition>,
    /// Batches read ahead of the position, per partition, decoded one at a
    /// time as records are returned.
    buffered: HashMap<TopicPartition, Buffered>,
    next_partition: usize,
    last_auto_commit: Instant,
    async_results: Vec<(CommitCallback, Result<()>)>,
    closed: bool,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("config", &self.config)
            .field("assignment", &self.assignment)
            .finish()
    }
}

impl Consumer {
    /// A consumer over `store`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for `max.poll.records` of 0;
    /// [`Error::InvalidGroupId`] for a `group.id` that
    /// [`validate_group_id`](crate::validate_group_id) refuses.
    pub fn new(store: &Store, config: ConsumerConfig) -> Result<Consumer> {
        if let Some(group) = &config.group_id {
            crate::group::validate_group_id(group)?;
        }
        if config.max_poll_records == 0 {
            return Err(Error::InvalidConfig {
                key: "max.poll.records",
                reason: "must be positive",
            });
        }
        Ok(Consumer {
            store: store.clone(),
            config,
            membership: None,
            listener: None,
            assignment: Vec::new(),
            positions: HashMap::new(),
            paused: BTreeSet::new(),
            buffered: HashMap::new(),
            next_partition: 0,
            last_auto_commit: Instant::now(),
            async_results: Vec::new(),
            closed: false,
        })
    }

    fn check_open(&self) -> Result<()> {
        if self.closed {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }

    fn group_id(&self) -> Result<&str> {
        self.config.group_id.as_deref().ok_or(Error::InvalidConfig {
            key: "group.id",
            reason: "required for subscribe and commits",
        })
    }

    /// Commits (with auto-commit on), runs pending callbacks and leaves the
    /// group, so its partitions move to other members at once.
    ///
    /// # Errors
    /// The final commit's error; the consumer is closed regardless.
    pub fn close(&mut self) -> Result<()> {
        if self.closed {
            return Ok(());
        }
        self.run_async_callbacks();
        let r = self.unsubscribe();
        self.closed = true;
        r
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
