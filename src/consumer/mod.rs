//! The high-level consumer: subscribe or assign, poll, seek, commit.

mod async_poll;
mod config;
mod iter;
#[cfg(feature = "stream")]
mod stream;

pub use async_poll::PollFuture;
pub use config::{ConsumerConfig, IsolationLevel, OffsetReset};
pub use iter::RecordIter;
#[cfg(feature = "stream")]
pub use stream::RecordStream;

use crate::error::{Error, Result};
use crate::group::{MemberView, OffsetAndMetadata, TopicPartition};
use crate::log::Durability;
use crate::record::{Header, LogRecord, RecordBatch, Records};
use crate::store::Store;
use bytes::Bytes;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A record returned by [`Consumer::poll`].
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
/// assert_eq!(records[0].value.as_deref(), Some(&b"job-1"[..]));
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

/// One partition's read-ahead: undecoded batches, and the records of the
/// batch being returned (an lz4 batch is decompressed when reached).
#[derive(Default)]
struct Buffered {
    batches: VecDeque<RecordBatch>,
    current: Option<Records>,
    /// The offset after the last batch taken from `batches`.
    end: i64,
}

impl Buffered {
    fn is_empty(&self) -> bool {
        self.current.is_none() && self.batches.is_empty()
    }

    /// The next record at or after `position`, decoding the next batch when
    /// the current one is done.
    fn next_record(&mut self, position: i64) -> Option<Result<LogRecord>> {
        loop {
            if let Some(records) = &mut self.current {
                match records.next() {
                    Some(Ok(r)) if r.offset < position => continue,
                    Some(r) => return Some(r.map_err(Error::from)),
                    None => self.current = None,
                }
            }
            let batch = self.batches.pop_front()?;
            self.end = self.end.max(batch.last_offset() + 1);
            if batch.header().is_control() {
                // Transaction markers are never returned; their offsets
                // count (the position moves past them with `end`).
                continue;
            }
            match batch.records() {
                Ok(mut records) => {
                    if batch.base_offset() < position {
                        records.skip_to(position);
                    }
                    self.current = Some(records);
                }
                Err(e) => return Some(Err(e.into())),
            }
        }
    }
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

    /// Joins the consumer's group for these topics; partitions are assigned
    /// at the next `poll`. Replaces an earlier subscription or assignment.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] without a `group.id`; [`Error::UnknownTopic`].
    pub fn subscribe(&mut self, topics: &[&str]) -> Result<()> {
        self.check_open()?;
        let group_id = self.group_id()?.to_owned();
        for t in topics {
            self.store.partition_count(t)?;
        }
        self.unsubscribe()?;
        let group = self.store.groups().group(&group_id);
        let member_id = self.store.groups().member_id(&self.config.client_id);
        let topics: Vec<String> = topics.iter().map(|t| (*t).to_owned()).collect();
        group.join(
            member_id.clone(),
            topics.clone(),
            Arc::clone(&self.config.assignor),
            self.config.max_poll_interval,
        );
        self.membership = Some(Membership {
            group,
            member_id,
            generation: 0,
            topics,
        });
        Ok(())
    }

    /// As [`subscribe`](Self::subscribe), with callbacks for rebalances.
    ///
    /// # Errors
    /// As [`subscribe`](Self::subscribe).
    pub fn subscribe_with_listener(
        &mut self,
        topics: &[&str],
        listener: impl RebalanceListener + 'static,
    ) -> Result<()> {
        self.subscribe(topics)?;
        self.listener = Some(Box::new(listener));
        Ok(())
    }

    /// Takes these partitions by hand (no group membership). Replaces an
    /// earlier subscription or assignment.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`].
    pub fn assign(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        self.check_open()?;
        for tp in partitions {
            self.store.partition(&tp.topic, tp.partition)?;
        }
        self.unsubscribe()?;
        self.set_assignment(partitions.to_vec());
        Ok(())
    }

    /// Leaves the group (committing first if auto-commit is on) and drops
    /// the assignment.
    ///
    /// # Errors
    /// The auto-commit's error.
    pub fn unsubscribe(&mut self) -> Result<()> {
        let mut result = Ok(());
        if self.membership.is_some() || !self.assignment.is_empty() {
            result = self.revoke_all();
        }
        if let Some(m) = self.membership.take() {
            m.group.leave(&m.member_id);
        }
        self.set_assignment(Vec::new());
        result
    }

    fn set_assignment(&mut self, partitions: Vec<TopicPartition>) {
        self.positions = partitions.iter().map(|tp| (tp.clone(), None)).collect();
        self.buffered.clear();
        self.paused.retain(|tp| partitions.contains(tp));
        self.assignment = partitions;
        for tp in self.assignment.clone() {
            let committed = self
                .config
                .group_id
                .as_deref()
                .and_then(|g| self.store.offsets().get(g, &tp));
            if let Some(c) = committed {
                self.positions.insert(tp, Some(c.offset));
            }
        }
    }

    /// Auto-commits (when on) and runs the revoke callback for everything
    /// assigned.
    fn revoke_all(&mut self) -> Result<()> {
        let mut result = Ok(());
        if self.config.enable_auto_commit && self.config.group_id.is_some() {
            result = self.commit(self.consumed_offsets(), Durability::Fsync);
        }
        let revoked = self.assignment.clone();
        if let Some(mut l) = self.listener.take() {
            if self.membership.is_some() {
                l.on_partitions_revoked(self, &revoked);
            }
            self.listener = Some(l);
        }
        result
    }

    /// The partitions currently assigned.
    pub fn assignment(&self) -> &[TopicPartition] {
        &self.assignment
    }

    /// The subscribed topics (empty with manual assignment).
    pub fn subscription(&self) -> Vec<String> {
        self.membership
            .as_ref()
            .map(|m| m.topics.clone())
            .unwrap_or_default()
    }

    /// The member id in the group, when subscribed.
    pub fn member_id(&self) -> Option<&str> {
        self.membership.as_ref().map(|m| m.member_id.as_str())
    }

    /// The group generation this consumer's assignment belongs to.
    pub fn generation(&self) -> Option<i32> {
        self.membership.as_ref().map(|m| m.generation)
    }

    /// Returns records (at most `max.poll.records`), blocking up to
    /// `timeout` until some arrive. Takes part in rebalances, auto-commits
    /// and runs finished async-commit callbacks. Records come in offset
    /// order per partition; partitions take turns.
    ///
    /// # Errors
    /// [`Error::NoOffsetForPartition`] / [`Error::OffsetOutOfRange`] under
    /// `auto.offset.reset=none`; [`Error::Corrupt`]; [`Error::Closed`].
    pub fn poll(&mut self, timeout: Duration) -> Result<Vec<ConsumerRecord>> {
        self.check_open()?;
        // A closed store: Closed, not an empty poll (the metadata lookups
        // below would see every topic gone).
        self.store.check_open()?;
        let deadline = crate::deadline_after(timeout);
        self.run_async_callbacks();
        loop {
            self.ensure_assignment(deadline)?;
            self.maybe_auto_commit();
            let store = self.store.clone();
            let notifier = store.notifier();
            let seen = notifier.seq();
            let records = self.fetch()?;
            if !records.is_empty() {
                return Ok(records);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(records);
            }
            // Appends and group changes notify; wake at least every 100 ms
            // to keep the group's liveness checks going.
            notifier.wait_past(seen, deadline.min(now + Duration::from_millis(100)));
        }
    }

    fn ensure_assignment(&mut self, deadline: Instant) -> Result<()> {
        loop {
            let Some(m) = &self.membership else {
                return Ok(());
            };
            let (group, member_id) = (Arc::clone(&m.group), m.member_id.clone());
            let metadata: Vec<(String, Option<u32>)> = m
                .topics
                .iter()
                .map(|t| (t.clone(), self.store.existing_partition_count(t)))
                .collect();
            match group.poll(&member_id, &metadata) {
                MemberView::Stable(generation, parts) => {
                    if generation != m.generation {
                        if let Some(m) = &mut self.membership {
                            m.generation = generation;
                        }
                        self.set_assignment(parts.clone());
                        if let Some(mut l) = self.listener.take() {
                            l.on_partitions_assigned(self, &parts);
                            self.listener = Some(l);
                        }
                    }
                    return Ok(());
                }
                MemberView::MustRejoin => {
                    // Commit failures here mean the generation moved on;
                    // the records will be processed again (at least once).
                    let _ = self.revoke_all();
                    self.set_assignment(Vec::new());
                    let store = self.store.clone();
                    group.rejoin(&member_id, &|t| store.existing_partition_count(t));
                }
                MemberView::Waiting => {
                    let store = self.store.clone();
                    group.try_complete(&|t| store.existing_partition_count(t));
                    let now = Instant::now();
                    if now >= deadline {
                        return Ok(());
                    }
                    group.wait(deadline.min(now + Duration::from_millis(50)));
                }
                MemberView::Removed => {
                    // Missed max.poll.interval.ms: the partitions are gone
                    // already. Join again as a new member.
                    let topics = m.topics.clone();
                    self.set_assignment(Vec::new());
                    let member_id = self.store.groups().member_id(&self.config.client_id);
                    group.join(
                        member_id.clone(),
                        topics,
                        Arc::clone(&self.config.assignor),
                        self.config.max_poll_interval,
                    );
                    if let Some(m) = &mut self.membership {
                        m.member_id = member_id;
                        m.generation = 0;
                    }
                }
            }
        }
    }

    fn maybe_auto_commit(&mut self) {
        if !self.config.enable_auto_commit
            || self.config.group_id.is_none()
            || self.last_auto_commit.elapsed() < self.config.auto_commit_interval
        {
            return;
        }
        // Failures are retried at the next interval, as Kafka does.
        let _ = self.commit(self.consumed_offsets(), Durability::Written);
    }

    fn resolve_position(&mut self, tp: &TopicPartition) -> Result<i64> {
        if let Some(Some(p)) = self.positions.get(tp) {
            return Ok(*p);
        }
        let log = self.store.partition(&tp.topic, tp.partition)?;
        let p = match self.config.auto_offset_reset {
            OffsetReset::Earliest => log.log_start_offset(),
            OffsetReset::Latest => log.high_watermark(),
            OffsetReset::None => {
                return Err(Error::NoOffsetForPartition {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                })
            }
        };
        self.positions.insert(tp.clone(), Some(p));
        Ok(p)
    }

    fn fetch(&mut self) -> Result<Vec<ConsumerRecord>> {
        // Sized for a typical poll up front (at most 1,024 records' worth,
        // whatever max.poll.records says), not grown record by record.
        let mut out = Vec::with_capacity(self.config.max_poll_records.min(1024));
        let parts: Vec<TopicPartition> = self
            .assignment
            .iter()
            .filter(|tp| !self.paused.contains(*tp))
            // A group member skips a partition whose topic was deleted (or
            // shrank by re-creation) until the next poll rebalances.
            .filter(|tp| self.membership.is_none() || self.partition_exists(tp))
            .cloned()
            .collect();
        if parts.is_empty() {
            return Ok(out);
        }
        let mut bytes_left = self.config.fetch_max_bytes;
        let start = self.next_partition % parts.len();
        self.next_partition = self.next_partition.wrapping_add(1);
        for i in 0..parts.len() {
            if out.len() >= self.config.max_poll_records || bytes_left == 0 {
                break;
            }
            let tp = &parts[(start + i) % parts.len()];
            let mut position = self.resolve_position(tp)?;
            // Take what is buffered; when that runs dry without a read in
            // this pass, read the log again at once: returning nothing would
            // make `poll` wait for a wake-up although records are readable.
            let mut read_now = false;
            loop {
                if self.buffered.get(tp).is_none_or(Buffered::is_empty) {
                    read_now = true;
                    let log = self.store.partition(&tp.topic, tp.partition)?;
                    let max_bytes = self.config.max_partition_fetch_bytes.min(bytes_left);
                    let isolation = self.config.isolation_level;
                    let read_at = |position| match isolation {
                        IsolationLevel::ReadUncommitted => log.read(position, max_bytes),
                        IsolationLevel::ReadCommitted => log.read_committed(position, max_bytes),
                    };
                    let read = match read_at(position) {
                        Ok(r) => r,
                        Err(Error::OffsetOutOfRange { .. })
                            if self.config.auto_offset_reset != OffsetReset::None =>
                        {
                            self.positions.insert(tp.clone(), None);
                            position = self.resolve_position(tp)?;
                            read_at(position)?
                        }
                        Err(e) => return Err(e),
                    };
                    bytes_left = bytes_left.saturating_sub(read.size());
                    if read.batches().is_empty() && read.next_offset() > position {
                        // Only compacted-away offsets: move past the gap.
                        position = read.next_offset();
                        self.positions.insert(tp.clone(), Some(position));
                    }
                    let buf = Buffered {
                        batches: read.batches().iter().cloned().collect(),
                        current: None,
                        // Past batches the read left out (aborted ones under
                        // read_committed) once the kept ones are consumed.
                        end: read.next_offset().max(position),
                    };
                    self.buffered.insert(tp.clone(), buf);
                }
                let Some(buf) = self.buffered.get_mut(tp) else {
                    break;
                };
                while out.len() < self.config.max_poll_records {
                    let Some(r) = buf.next_record(position) else {
                        break;
                    };
                    let r = match r {
                        Ok(r) => r,
                        Err(e) => {
                            self.buffered.remove(tp);
                            self.positions.insert(tp.clone(), Some(position));
                            return Err(e);
                        }
                    };
                    position = r.offset + 1;
                    out.push(ConsumerRecord {
                        topic: Arc::clone(&tp.topic),
                        partition: tp.partition,
                        offset: r.offset,
                        timestamp: r.timestamp,
                        key: r.key,
                        value: r.value,
                        headers: r.headers,
                    });
                }
                if buf.is_empty() {
                    // A batch whose records were all compacted away (or skipped)
                    // still moves the position past its offsets.
                    position = position.max(buf.end);
                }
                self.positions.insert(tp.clone(), Some(position));
                let dry = self.buffered.get(tp).is_none_or(Buffered::is_empty);
                if read_now || !dry || out.len() >= self.config.max_poll_records || bytes_left == 0
                {
                    break;
                }
            }
        }
        Ok(out)
    }

    fn partition_exists(&self, tp: &TopicPartition) -> bool {
        self.store
            .existing_partition_count(&tp.topic)
            .is_some_and(|n| tp.partition < n)
    }

    /// Positions of the assigned partitions (the next offsets to read);
    /// partitions of deleted topics have none to commit.
    fn consumed_offsets(&self) -> Vec<(TopicPartition, OffsetAndMetadata)> {
        self.assignment
            .iter()
            .filter(|tp| self.partition_exists(tp))
            .filter_map(|tp| {
                self.positions
                    .get(tp)
                    .copied()
                    .flatten()
                    .map(|p| (tp.clone(), OffsetAndMetadata::new(p)))
            })
            .collect()
    }

    fn commit(
        &mut self,
        offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
        durability: Durability,
    ) -> Result<()> {
        let group = self.group_id()?.to_owned();
        if offsets.is_empty() {
            // Nothing to commit (as Kafka): not an error, whatever the
            // generation, e.g. in the revoke callback of a member that
            // owned nothing.
            return Ok(());
        }
        match &self.membership {
            Some(m) => m.group.check_commit(Some(&m.member_id), m.generation)?,
            None => {
                if let Some(g) = self.store.groups().existing(&group) {
                    g.check_commit(None, -1)?;
                }
            }
        }
        self.store.offsets().commit(&group, &offsets, durability)?;
        self.last_auto_commit = Instant::now();
        Ok(())
    }

    /// Commits the positions of all assigned partitions; durable (fsynced)
    /// when it returns.
    ///
    /// # Errors
    /// [`Error::IllegalGeneration`] when a rebalance moved the partitions
    /// away; [`Error::InvalidConfig`] without a `group.id`; I/O errors.
    pub fn commit_sync(&mut self) -> Result<()> {
        self.check_open()?;
        self.run_async_callbacks();
        self.commit(self.consumed_offsets(), Durability::Fsync)
    }

    /// Commits explicit offsets (the next offset to read per partition), for
    /// processing that finishes out of order. Durable when it returns.
    ///
    /// # Errors
    /// As [`commit_sync`](Self::commit_sync); [`Error::UnknownTopic`] /
    /// [`Error::UnknownPartition`] for a partition that does not exist (as
    /// Kafka); [`Error::OffsetOutOfRange`] for an offset below 0 or beyond
    /// the partition's log end. Nothing is committed then.
    pub fn commit_offsets(
        &mut self,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<()> {
        self.check_open()?;
        for (tp, o) in offsets {
            // Looked up without auto-creation: a commit creates nothing.
            if self.store.existing_partition_count(&tp.topic).is_none() {
                return Err(Error::UnknownTopic {
                    topic: tp.topic.to_string(),
                });
            }
            let log = self.store.partition(&tp.topic, tp.partition)?;
            let (start, end) = (log.log_start_offset(), log.log_end_offset());
            if o.offset < 0 || o.offset > end {
                return Err(Error::OffsetOutOfRange {
                    requested: o.offset,
                    start,
                    end,
                });
            }
        }
        self.commit(offsets.to_vec(), Durability::Fsync)
    }

    /// Commits the positions without waiting for the fsync; `callback` runs
    /// with the outcome at the next `poll`, `commit_sync` or `close` (as in
    /// Kafka, on the consumer's thread).
    pub fn commit_async(&mut self, callback: impl FnOnce(Result<()>) + Send + 'static) {
        let r = self
            .check_open()
            .and_then(|()| self.commit(self.consumed_offsets(), Durability::Written));
        self.async_results.push((Box::new(callback), r));
    }

    fn run_async_callbacks(&mut self) {
        for (cb, r) in self.async_results.drain(..) {
            cb(r);
        }
    }

    /// The committed offset of a partition for this consumer's group.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] without a `group.id`.
    pub fn committed(&self, tp: &TopicPartition) -> Result<Option<OffsetAndMetadata>> {
        Ok(self.store.offsets().get(self.group_id()?, tp))
    }

    fn check_assigned(&self, tp: &TopicPartition) -> Result<()> {
        if self.assignment.contains(tp) {
            Ok(())
        } else {
            Err(Error::NotAssigned {
                topic: tp.topic.to_string(),
                partition: tp.partition,
            })
        }
    }

    /// The next offset `poll` returns for an assigned partition (applying
    /// `auto.offset.reset` if there is none yet).
    ///
    /// # Errors
    /// [`Error::NotAssigned`], [`Error::NoOffsetForPartition`].
    pub fn position(&mut self, tp: &TopicPartition) -> Result<i64> {
        self.check_assigned(tp)?;
        self.resolve_position(tp)
    }

    /// Sets the next offset `poll` returns for an assigned partition. An
    /// offset out of range is handled by `auto.offset.reset` at the next poll.
    ///
    /// # Errors
    /// [`Error::NotAssigned`]; [`Error::OffsetOutOfRange`] for a negative
    /// offset (as Kafka's `seek`), the position then unchanged.
    pub fn seek(&mut self, tp: &TopicPartition, offset: i64) -> Result<()> {
        self.check_assigned(tp)?;
        if offset < 0 {
            // Kafka: "seek offset must not be a negative number".
            let log = self.store.partition(&tp.topic, tp.partition)?;
            return Err(Error::OffsetOutOfRange {
                requested: offset,
                start: log.log_start_offset(),
                end: log.high_watermark(),
            });
        }
        self.buffered.remove(tp);
        self.positions.insert(tp.clone(), Some(offset));
        Ok(())
    }

    /// Seeks to the log start of each partition.
    ///
    /// # Errors
    /// [`Error::NotAssigned`].
    pub fn seek_to_beginning(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        for tp in partitions {
            let start = self
                .store
                .partition(&tp.topic, tp.partition)?
                .log_start_offset();
            self.seek(tp, start)?;
        }
        Ok(())
    }

    /// Seeks to the end (the high watermark) of each partition.
    ///
    /// # Errors
    /// [`Error::NotAssigned`].
    pub fn seek_to_end(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        for tp in partitions {
            let end = self
                .store
                .partition(&tp.topic, tp.partition)?
                .high_watermark();
            self.seek(tp, end)?;
        }
        Ok(())
    }

    /// Seeks each partition to the earliest record with a timestamp ≥ `ts`
    /// (Kafka's `offsetsForTimes` + `seek`); to the end when there is none.
    ///
    /// # Errors
    /// [`Error::NotAssigned`], [`Error::Corrupt`].
    pub fn seek_to_timestamp(&mut self, partitions: &[TopicPartition], ts: i64) -> Result<()> {
        for tp in partitions {
            let log = self.store.partition(&tp.topic, tp.partition)?;
            let offset = log
                .offset_for_timestamp(ts)?
                .map_or(log.high_watermark(), |(o, _)| o);
            self.seek(tp, offset)?;
        }
        Ok(())
    }

    /// Stops returning records from these partitions until resumed.
    pub fn pause(&mut self, partitions: &[TopicPartition]) {
        self.paused.extend(partitions.iter().cloned());
    }

    /// Resumes paused partitions.
    pub fn resume(&mut self, partitions: &[TopicPartition]) {
        for tp in partitions {
            self.paused.remove(tp);
        }
    }

    /// The paused partitions.
    pub fn paused(&self) -> Vec<TopicPartition> {
        self.paused.iter().cloned().collect()
    }

    /// Lag per assigned partition: high watermark − position.
    pub fn lag(&self) -> BTreeMap<TopicPartition, i64> {
        self.assignment
            .iter()
            .filter_map(|tp| {
                let log = self.store.partition(&tp.topic, tp.partition).ok()?;
                let pos = self.positions.get(tp).copied().flatten()?;
                Some((tp.clone(), (log.high_watermark() - pos).max(0)))
            })
            .collect()
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
