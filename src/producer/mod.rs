//! The producer: batching, partitioning, compression and durability, as
//! Kafka's `KafkaProducer` does them, over a local store.

mod accumulator;
mod future;
mod partitioner;

pub use future::{SendAsync, SendFuture};

pub use partitioner::{murmur2, partition_for_key, DefaultPartitioner, Partitioner};

use crate::error::{Error, Result};
use crate::log::Durability;
use crate::record::{Compression, Header};
use crate::store::Store;
use accumulator::{BatchCompletion, PartitionQueue};
use bytes::Bytes;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Producer settings, with Kafka's names. Each field's doc ends with its
/// default.
#[derive(Clone)]
#[non_exhaustive]
pub struct ProducerConfig {
    /// `batch.size`: a partition's batch is sealed once it holds this many
    /// (uncompressed) bytes. Default: 16 KiB.
    pub batch_size: usize,
    /// `linger.ms`: how long a batch waits for more records before it is
    /// appended. Default: 5 ms (Kafka 4.0's default).
    pub linger: Duration,
    /// `buffer.memory`: bytes of records waiting to be appended; `send`
    /// blocks when it is used up. Default: 32 MiB.
    pub buffer_memory: usize,
    /// `max.block.ms`: how long `send` blocks on a full buffer before it
    /// fails with [`Error::BufferExhausted`]. Default: 60 s.
    pub max_block: Duration,
    /// `compression.type`. Default: none.
    pub compression: Compression,
    /// The level for codecs that have one: `compression.gzip.level` (1 to
    /// 9) for gzip, `compression.zstd.level` (−131072 to 22) for zstd.
    /// Default: `None`, Kafka's default level (gzip 6, zstd 3).
    pub compression_level: Option<i32>,
    /// The `acks` analog: what a record has reached when its handle
    /// completes. Default: [`Durability::Written`].
    pub durability: Durability,
    /// `partitioner.ignore.keys`: keyed records are spread like keyless
    /// ones. Default: false.
    pub partitioner_ignore_keys: bool,
    /// A custom partitioner (`partitioner.class`). Default: Kafka's built-in
    /// murmur2 / uniform sticky partitioner.
    pub partitioner: Option<Arc<dyn Partitioner>>,
}

impl std::fmt::Debug for ProducerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProducerConfig")
            .field("batch_size", &self.batch_size)
            .field("linger", &self.linger)
            .field("buffer_memory", &self.buffer_memory)
            .field("max_block", &self.max_block)
            .field("compression", &self.compression)
            .field("compression_level", &self.compression_level)
            .field("durability", &self.durability)
            .field("partitioner_ignore_keys", &self.partitioner_ignore_keys)
            .field("custom_partitioner", &self.partitioner.is_some())
            .finish()
    }
}

impl Default for ProducerConfig {
    fn default() -> Self {
        ProducerConfig {
            batch_size: 16 * 1024,
            linger: Duration::from_millis(5),
            buffer_memory: 32 << 20,
            max_block: Duration::from_secs(60),
            compression: Compression::None,
            compression_level: None,
            durability: Durability::Written,
            partitioner_ignore_keys: false,
            partitioner: None,
        }
    }
}

/// A record to send: a topic, an optional partition, and the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProducerRecord {
    /// The topic.
    pub topic: String,
    /// An explicit partition; `None` lets the partitioner choose.
    pub partition: Option<u32>,
    /// Milliseconds since the epoch; `None` uses the current time.
    pub timestamp: Option<i64>,
    /// The key; `None` is null.
    pub key: Option<Bytes>,
    /// The value; `None` is null (a tombstone on compacted topics).
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

impl ProducerRecord {
    /// A record with a value for `topic`.
    pub fn new(topic: impl Into<String>, value: impl Into<Bytes>) -> Self {
        ProducerRecord {
            topic: topic.into(),
            partition: None,
            timestamp: None,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
        }
    }

    /// Sets the key.
    #[must_use]
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets an explicit partition.
    #[must_use]
    pub fn partition(mut self, partition: u32) -> Self {
        self.partition = Some(partition);
        self
    }

    /// Sets the timestamp.
    #[must_use]
    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = Some(ts);
        self
    }

    /// Appends a header.
    #[must_use]
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(Header::new(key, value));
        self
    }

    /// Encoded size of the record in a batch, an upper bound.
    fn encoded_size(&self) -> usize {
        let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
        crate::record::estimated_size(len(&self.key), len(&self.value), &self.headers)
    }
}

/// Where a sent record landed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct RecordMetadata {
    /// The topic.
    pub topic: Arc<str>,
    /// The partition.
    pub partition: u32,
    /// The record's offset; −1 under [`Durability::None`], whose handles
    /// complete before the append (Kafka's `acks=0`).
    pub offset: i64,
    /// The record's timestamp.
    pub timestamp: i64,
}

/// A handle to one sent record's outcome.
pub struct SendHandle {
    inner: HandleInner,
}

enum HandleInner {
    Pending {
        completion: Arc<BatchCompletion>,
        topic: Arc<str>,
        partition: u32,
        index: u32,
        timestamp: i64,
    },
    Done(RecordMetadata),
}

impl std::fmt::Debug for SendHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendHandle")
            .field("done", &self.is_done())
            .finish()
    }
}

impl SendHandle {
    /// Whether the outcome is known.
    pub fn is_done(&self) -> bool {
        match &self.inner {
            HandleInner::Pending { completion, .. } => completion.is_done(),
            HandleInner::Done(_) => true,
        }
    }

    /// Blocks until the record reached the producer's durability level.
    ///
    /// # Errors
    /// [`Error::SendFailed`] with the append's error.
    pub fn wait(self) -> Result<RecordMetadata> {
        self.wait_until(None).unwrap_or(Err(Error::Closed))
    }

    /// As [`wait`](Self::wait), giving up after `timeout` (`None` then).
    pub fn wait_timeout(self, timeout: Duration) -> Option<Result<RecordMetadata>> {
        self.wait_until(Some(crate::deadline_after(timeout)))
    }

    fn wait_until(self, deadline: Option<Instant>) -> Option<Result<RecordMetadata>> {
        match self.inner {
            HandleInner::Done(m) => Some(Ok(m)),
            HandleInner::Pending {
                completion,
                topic,
                partition,
                index,
                timestamp,
            } => completion
                .wait(deadline)
                .map(|r| accumulator::metadata(&topic, partition, &r, index, timestamp)),
        }
    }
}

struct Inner {
    store: Store,
    config: ProducerConfig,
    partitioner: Arc<dyn Partitioner>,
    queues: RwLock<HashMap<String, Vec<Arc<PartitionQueue>>>>,
    /// Bytes of records reserved (`buffer.memory`): taken and given back
    /// with atomic adds, so concurrent senders do not queue on a lock;
    /// the lock below serves only senders that must wait.
    memory: AtomicUsize,
    /// Senders waiting for buffer memory.
    memory_waiters: AtomicUsize,
    memory_lock: Mutex<()>,
    memory_freed: Condvar,
    /// Async sends waiting for buffer space (`future.rs`).
    space: Mutex<crate::asynk::wakers::WakerSet>,
    closed: AtomicBool,
    linger_wake: Condvar,
    linger_state: Mutex<LingerState>,
}

#[derive(Default)]
struct LingerState {
    stop: bool,
    /// A send started a batch since the linger thread last looked.
    kicked: bool,
}

/// Sends records to a store's topics, batching per partition like Kafka's
/// producer. `Send + Sync`: share one producer among threads; records from
/// one thread to one partition keep their order.
///
/// Order survives failure, as with Kafka's idempotent producer: when an
/// append to a partition fails (a full disk, say), every record sent to that
/// partition before the application was handed the error (by a handle's
/// [`wait`](SendHandle::wait), a callback, or [`flush`](Producer::flush))
/// fails with it, unwritten, so a partition's log is always a prefix of what
/// was sent to it. Records sent after that are appended again, right after
/// the last acknowledged one. (Under [`Durability::None`] the error is
/// handed out only by callbacks and `flush`.)
///
/// ```
/// use kafkalite::{Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig};
/// let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path(), StoreOptions::default())?;
/// store.create_topic("clicks", 4, TopicConfig::default())?;
/// let producer = Producer::new(&store, ProducerConfig::default())?;
/// let handle = producer.send(ProducerRecord::new("clicks", "page=/").key("user-7"))?;
/// let meta = handle.wait()?;
/// assert_eq!(meta.partition, kafkalite::partition_for_key(b"user-7", 4));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Producer {
    inner: Arc<Inner>,
    linger_thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("config", &self.inner.config)
            .finish()
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

impl Producer {
    /// A producer over `store`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a zero `batch.size` or `buffer.memory`,
    /// a codec this build left out, or a compression level outside the
    /// codec's range; I/O if its linger thread cannot start.
    pub fn new(store: &Store, config: ProducerConfig) -> Result<Producer> {
        crate::record::check_compression(config.compression, config.compression_level)?;
        if config.batch_size == 0 {
            return Err(Error::InvalidConfig {
                key: "batch.size",
                reason: "must be positive",
            });
        }
        if config.buffer_memory == 0 {
            return Err(Error::InvalidConfig {
                key: "buffer.memory",
                reason: "must be positive",
            });
        }
        let partitioner = config.partitioner.clone().unwrap_or_else(|| {
            Arc::new(DefaultPartitioner::new(
                config.batch_size,
                config.partitioner_ignore_keys,
            ))
        });
        let inner = Arc::new(Inner {
            store: store.clone(),
            partitioner,
            queues: RwLock::new(HashMap::new()),
            memory: AtomicUsize::new(0),
            memory_waiters: AtomicUsize::new(0),
            memory_lock: Mutex::new(()),
            memory_freed: Condvar::new(),
            space: Mutex::default(),
            closed: AtomicBool::new(false),
            linger_wake: Condvar::new(),
            linger_state: Mutex::new(LingerState::default()),
            config,
        });
        let linger_thread = if inner.config.linger.is_zero() {
            None
        } else {
            let weak = Arc::downgrade(&inner);
            Some(
                std::thread::Builder::new()
                    .name("kafkalite-linger".into())
                    .spawn(move || linger_loop(weak))
                    .map_err(|e| Error::io("spawn linger thread", store.path(), e))?,
            )
        };
        Ok(Producer {
            inner,
            linger_thread,
        })
    }

    /// The producer's settings.
    pub fn config(&self) -> &ProducerConfig {
        &self.inner.config
    }

    /// Queues a record and returns a handle to its outcome. The record is
    /// appended when its batch fills or lingers; the handle completes once
    /// it reached the configured durability (at once under
    /// [`Durability::None`]).
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`],
    /// [`Error::RecordTooLarge`], [`Error::BufferExhausted`] after
    /// `max.block.ms`, [`Error::Closed`]. Nothing is queued then.
    pub fn send(&self, record: ProducerRecord) -> Result<SendHandle> {
        self.inner.send_with(record, None, future::Reserve::Block)
    }

    /// As [`send`](Self::send), and runs `callback` with the outcome on the
    /// thread that completes the batch.
    ///
    /// # Errors
    /// As [`send`](Self::send); the callback then never runs.
    pub fn send_with_callback(
        &self,
        record: ProducerRecord,
        callback: impl FnOnce(Result<RecordMetadata>) + Send + 'static,
    ) -> Result<()> {
        self.inner
            .send_with(record, Some(Box::new(callback)), future::Reserve::Block)
            .map(|_| ())
    }

    /// Sends a record and waits for its outcome.
    ///
    /// # Errors
    /// As [`send`](Self::send) and [`SendHandle::wait`].
    pub fn send_and_wait(&self, record: ProducerRecord) -> Result<RecordMetadata> {
        let h = self.send(record)?;
        // Don't linger for a caller who is waiting.
        if let HandleInner::Pending {
            topic, partition, ..
        } = &h.inner
        {
            if let Some(q) = self.inner.queue_if_exists(topic, *partition) {
                q.seal_due(Instant::now(), Duration::ZERO, true);
                self.inner
                    .release(q.drain(self.inner.config.durability, false));
            }
        }
        h.wait()
    }

    /// Appends every queued record now and waits until all records sent
    /// before this call completed.
    ///
    /// # Errors
    /// The first failed batch's error.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// Flushes and stops the producer; later sends fail with
    /// [`Error::Closed`].
    ///
    /// # Errors
    /// As [`flush`](Self::flush).
    pub fn close(&mut self) -> Result<()> {
        let r = self.inner.flush();
        self.inner.closed.store(true, Ordering::Release);
        self.inner.linger_state.lock().stop = true;
        self.inner.linger_wake.notify_all();
        if let Some(t) = self.linger_thread.take() {
            let _ = t.join();
        }
        r
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

impl Inner {
    fn queue_if_exists(&self, topic: &str, partition: u32) -> Option<Arc<PartitionQueue>> {
        self.queues
            .read()
            .get(topic)
            .and_then(|v| v.get(partition as usize))
            .cloned()
    }

    fn queue(&self, topic: &str, partition: u32) -> Result<Arc<PartitionQueue>> {
        if let Some(q) = self.queue_if_exists(topic, partition) {
            if !q.is_stale() {
                return Ok(q);
            }
            self.forget_deleted_topic(topic);
        }
        let t = self.store.topic(topic)?;
        let count = t.partition_count();
        let mut map = self.queues.write();
        let name: Arc<str> = Arc::from(topic);
        let v = map.entry(topic.to_owned()).or_default();
        for p in v.len() as u32..count {
            v.push(Arc::new(PartitionQueue::new(
                Arc::clone(&name),
                p,
                t.partition(p)?,
                self.config.compression,
                self.config.compression_level,
                self.config.batch_size,
            )));
        }
        v.get(partition as usize)
            .cloned()
            .ok_or_else(|| Error::UnknownPartition {
                topic: topic.to_owned(),
                partition,
                partitions: count,
            })
    }

    /// Drops the queues of a topic whose logs were closed (the topic was
    /// deleted, and perhaps created again): what they still hold fails with
    /// [`Error::Closed`], and the next send looks the topic up afresh.
    fn forget_deleted_topic(&self, topic: &str) {
        let old = {
            let mut map = self.queues.write();
            match map.get(topic) {
                Some(v) if v.iter().any(|q| q.is_stale()) => map.remove(topic),
                _ => None,
            }
        };
        for q in old.into_iter().flatten() {
            q.seal_and_pending();
            self.release(q.drain(self.config.durability, false));
        }
    }

    /// Takes `bytes` of buffer memory if they fit (a record larger than the
    /// whole buffer fits an empty one).
    pub(super) fn try_reserve(&self, bytes: usize) -> bool {
        let limit = self.config.buffer_memory;
        // SeqCst with the release's update and the waiter count: a waiter
        // that counted itself and then saw the buffer full cannot miss a
        // release that saw no waiter.
        let mut used = self.memory.load(Ordering::SeqCst);
        loop {
            if used > 0 && used.saturating_add(bytes) > limit {
                return false;
            }
            match self.memory.compare_exchange_weak(
                used,
                used + bytes,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    fn reserve(&self, bytes: usize) -> Result<()> {
        if self.try_reserve(bytes) {
            return Ok(());
        }
        let deadline = crate::deadline_after(self.config.max_block);
        let mut guard = self.memory_lock.lock();
        // Counted before the check under the lock: a release that saw no
        // waiter happened before it, so the check sees its bytes freed.
        self.memory_waiters.fetch_add(1, Ordering::SeqCst);
        let result = loop {
            if self.try_reserve(bytes) {
                break Ok(());
            }
            if self
                .memory_freed
                .wait_until(&mut guard, deadline)
                .timed_out()
            {
                break if self.try_reserve(bytes) {
                    Ok(())
                } else {
                    Err(Error::BufferExhausted {
                        waited_ms: self.config.max_block.as_millis() as u64,
                        buffer_memory: self.config.buffer_memory,
                    })
                };
            }
        };
        self.memory_waiters.fetch_sub(1, Ordering::SeqCst);
        result
    }

    fn release(&self, bytes: usize) {
        if bytes > 0 {
            // Never below zero: a release matches bytes reserved before.
            let _ = self
                .memory
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                    Some(u.saturating_sub(bytes))
                });
            if self.memory_waiters.load(Ordering::SeqCst) > 0 {
                // Taking the lock orders this wake after a waiter's check.
                drop(self.memory_lock.lock());
                self.memory_freed.notify_all();
            }
            // Async sends waiting for space (see future.rs): registered
            // under this lock before their second try, so none is missed.
            crate::asynk::wakers::wake_all(self.space.lock().take());
        }
    }

    fn send_with(
        &self,
        record: ProducerRecord,
        callback: Option<Box<dyn FnOnce(Result<RecordMetadata>) + Send>>,
        reserve: future::Reserve,
    ) -> Result<SendHandle> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let size = record.encoded_size();
        let partition = match record.partition {
            Some(p) => p,
            None => {
                let count = self.store.partition_count(&record.topic)?;
                self.partitioner.partition(
                    &record.topic,
                    record.key.as_deref(),
                    record.value.as_deref(),
                    size,
                    count,
                )
            }
        };
        let queue = self.queue(&record.topic, partition)?;
        let max = queue.max_batch_bytes();
        if size + crate::record::HEADER_SIZE > max {
            return Err(Error::RecordTooLarge {
                size: size + crate::record::HEADER_SIZE,
                max,
            });
        }
        self.reserve_as(size, reserve)?;
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let linger_zero = self.config.linger.is_zero();
        let pushed = queue.push(
            timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
            size,
            linger_zero,
        );
        if let Some(cb) = callback {
            pushed
                .completion
                .on_complete(&queue.topic, partition, pushed.index, timestamp, cb);
        }
        if pushed.drain && reserve.offloads_appends() && !linger_zero {
            // An async send never appends (nor fsyncs) on the executor's
            // thread: the linger thread appends the full batch now.
            self.linger_state.lock().kicked = true;
            self.linger_wake.notify_one();
        } else if pushed.drain {
            self.release(queue.drain(self.config.durability, linger_zero));
        } else if pushed.started_batch {
            self.linger_state.lock().kicked = true;
            self.linger_wake.notify_one();
        }
        let inner = if self.config.durability == Durability::None {
            HandleInner::Done(RecordMetadata {
                topic: Arc::clone(&queue.topic),
                partition,
                offset: -1,
                timestamp,
            })
        } else {
            HandleInner::Pending {
                completion: pushed.completion,
                topic: Arc::clone(&queue.topic),
                partition,
                index: pushed.index,
                timestamp,
            }
        };
        Ok(SendHandle { inner })
    }

    fn all_queues(&self) -> Vec<Arc<PartitionQueue>> {
        self.queues.read().values().flatten().cloned().collect()
    }

    fn flush(&self) -> Result<()> {
        let mut pending = Vec::new();
        for q in self.all_queues() {
            let p = q.seal_and_pending();
            self.release(q.drain(self.config.durability, false));
            pending.extend(p);
        }
        let mut first_err = None;
        for c in pending {
            if let Some(Err(e)) = c.wait(None) {
                first_err.get_or_insert(Error::SendFailed { source: e });
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// Appends batches whose linger time passed. Sleeps until the next batch
/// is due, or until a send starts a batch.
fn linger_loop(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let linger = inner.config.linger;
        let now = Instant::now();
        let mut next_due: Option<Instant> = None;
        for q in inner.all_queues() {
            let (ready, due) = q.seal_due(now, linger, false);
            if ready {
                inner.release(q.drain(inner.config.durability, false));
            }
            if let Some(d) = due {
                next_due = Some(next_due.map_or(d, |n: Instant| n.min(d)));
            }
        }
        let mut st = inner.linger_state.lock();
        if st.stop {
            return;
        }
        if !std::mem::take(&mut st.kicked) {
            let wait = next_due.map_or(Duration::from_secs(1), |d| {
                d.saturating_duration_since(Instant::now())
            });
            if !wait.is_zero() {
                inner.linger_wake.wait_for(&mut st, wait);
            }
            st.kicked = false;
        }
        if st.stop {
            return;
        }
    }
}
