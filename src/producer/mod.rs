//! The producer: batching, partitioning, compression and durability, as
//! Kafka's `KafkaProducer` does them, over a local store.
//!
//! Files: `config.rs` (the settings), `record.rs` (what is sent and what
//! comes back), `handle.rs` (a send's outcome), `send.rs` (the send path:
//! partition queues, batching, flush), `cache.rs` (each sending thread's
//! cache of topics and their queues), `memory.rs` (`buffer.memory`
//! reservations), `linger.rs` (the thread that appends lingering batches),
//! `accumulator.rs`, `future.rs`, `partitioner.rs`.

mod accumulator;
mod balance;
mod cache;
mod config;
mod future;
mod handle;
mod linger;
mod memory;
mod partitioner;
mod record;
mod send;

pub use config::ProducerConfig;
pub use future::{SendAsync, SendFuture};
pub use handle::SendHandle;
pub use partitioner::{murmur2, partition_for_key, DefaultPartitioner, Partitioner};
pub use record::{ProducerRecord, RecordMetadata};

use crate::error::{Error, Result};
use crate::store::Store;
use accumulator::{BatchCompletion, PartitionQueue};
use handle::HandleInner;
use linger::linger_loop;
use parking_lot::{Condvar, Mutex, RwLock};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

struct Inner {
    store: Store,
    config: ProducerConfig,
    partitioner: Arc<dyn Partitioner>,
    /// With Kafka's built-in partitioner: its `batch.size` and whether it
    /// ignores keys. Keyless records then take the sending thread's own
    /// sticky choice, kept in its topic cache (`cache.rs`).
    builtin: Option<(usize, bool)>,
    queues: RwLock<HashMap<String, Vec<Arc<PartitionQueue>>>>,
    /// Shared by the queues' spare batch buffers (`accumulator/spare.rs`).
    spare_budget: Arc<accumulator::SpareBudget>,
    /// The threads whose cache holds this producer's queues (`cache.rs`).
    senders: Arc<accumulator::Senders>,
    /// Bumped at every change of `queues`: a thread's cached copy of a
    /// topic's queues (`cache.rs`) is good while this is unchanged.
    queues_version: AtomicU64,
    /// Process-unique, to tell producers apart in those caches.
    id: u64,
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
    /// Set (under `space`'s lock) when an async send registers there, and
    /// cleared when they are all woken: never clear while `space` holds a
    /// waker (it may stay set after a send took its waker out). A release
    /// looks at this, not the lock, as it looks at `memory_waiters`
    /// (`memory.rs`).
    space_waiting: AtomicBool,
    closed: AtomicBool,
    /// When the producer was made: `next_due` and `linger_plan` count
    /// nanoseconds from it (`linger.rs`).
    started: Instant,
    /// The earliest deadline of a waiting batch (`linger.rs`).
    next_due: AtomicU64,
    /// When a send last opened or sealed a batch (`linger.rs`).
    last_send: AtomicU64,
    /// When the linger thread means to wake (`linger.rs`).
    linger_plan: AtomicU64,
    /// Held by the thread scanning every queue for due batches.
    scan: Mutex<()>,
    linger_wake: Condvar,
    linger_state: Mutex<LingerState>,
}

#[derive(Default)]
struct LingerState {
    stop: bool,
    /// A send asked the linger thread to scan again.
    kicked: bool,
    /// A send waits for buffer memory: append every sealed batch.
    flush_sealed: bool,
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
/// the last acknowledged one. (Under [`Durability::None`](crate::Durability::None) the error is
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
    /// [`Error::InvalidConfig`](crate::Error::InvalidConfig) for a zero `batch.size` or `buffer.memory`,
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
        let (partitioner, builtin): (Arc<dyn Partitioner>, _) = match config.partitioner.clone() {
            Some(custom) => (custom, None),
            None => {
                let p = DefaultPartitioner::new(config.batch_size, config.partitioner_ignore_keys);
                let builtin = (p.batch_size(), p.ignores_keys());
                (Arc::new(p), Some(builtin))
            }
        };
        let inner = Arc::new(Inner {
            store: store.clone(),
            partitioner,
            builtin,
            queues: RwLock::new(HashMap::new()),
            spare_budget: accumulator::SpareBudget::for_buffer_memory(config.buffer_memory),
            senders: accumulator::Senders::new(),
            queues_version: AtomicU64::new(0),
            id: send::new_producer_id(),
            memory: AtomicUsize::new(0),
            memory_waiters: AtomicUsize::new(0),
            memory_lock: Mutex::new(()),
            memory_freed: Condvar::new(),
            space: Mutex::default(),
            space_waiting: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            started: Instant::now(),
            next_due: AtomicU64::new(linger::NOTHING_DUE),
            last_send: AtomicU64::new(0),
            linger_plan: AtomicU64::new(linger::NOTHING_DUE),
            scan: Mutex::new(()),
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
    /// [`Durability::None`](crate::Durability::None)).
    ///
    /// # Errors
    /// [`Error::UnknownTopic`](crate::Error::UnknownTopic), [`Error::UnknownPartition`](crate::Error::UnknownPartition),
    /// [`Error::RecordTooLarge`](crate::Error::RecordTooLarge), [`Error::BufferExhausted`](crate::Error::BufferExhausted) after
    /// `max.block.ms`, [`Error::Closed`](crate::Error::Closed). Nothing is queued then.
    pub fn send(&self, record: ProducerRecord) -> Result<SendHandle> {
        self.inner.send_with(record, future::Reserve::Block)
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
            .enqueue(
                record,
                Some(accumulator::Callback::new(callback)),
                future::Reserve::Block,
            )
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
                q.seal_due(Instant::now(), Duration::ZERO, true, true);
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
    /// [`Error::Closed`](crate::Error::Closed).
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
        // Sending threads may hold the queues in their caches for a while:
        // not the emptied buffers and lists kept for the next batches.
        for q in self.inner.all_queues() {
            q.drop_spares();
        }
        self.inner.reclaim_credit();
        r
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
