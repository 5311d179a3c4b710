//! Per-partition record accumulators and batch completion.
//!
//! Records go into the partition's open batch. A batch is sealed when full,
//! when it has lingered `linger.ms`, or on `flush`. Sealed batches are
//! appended in seal order by whichever thread holds the partition's drain
//! lock, several at once with one write; compression (`build`) happens
//! there, outside every lock but the partition's own drain lock, so
//! partitions compress in parallel.
//!
//! Order survives failure (Kafka's idempotent producer): when an append
//! fails, the partition latches the error, and every batch of that
//! partition begun before the application was handed the error (through a
//! handle's `wait`, a callback or `flush`) fails with it, unwritten, so the
//! log stays a prefix of the send order. Batches carry the partition's
//! epoch; the first `push` after the error was handed out starts a new
//! epoch, whose batches are appended again in order.
//!
//! `completion.rs` holds a batch's outcome, which every handle of its
//! records waits on.

mod completion;

pub(crate) use completion::{metadata, BatchCompletion};

use crate::error::Error;
use crate::log::{Durability, PartitionLog};
use crate::record::{BatchBuilder, Compression};
use bytes::BytesMut;
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

struct OpenBatch {
    builder: BatchBuilder,
    completion: Arc<BatchCompletion>,
    created: Instant,
    reserved: usize,
    epoch: u64,
}

struct SealedBatch {
    builder: BatchBuilder,
    completion: Arc<BatchCompletion>,
    reserved: usize,
    epoch: u64,
}

/// The latched failure of an append to this partition.
struct Failure {
    error: Arc<Error>,
    /// Batches of this epoch or earlier fail with `error`, unwritten.
    epoch: u64,
    /// Set once `error` was handed to the application.
    seen: Arc<AtomicBool>,
}

struct QueueState {
    open: Option<OpenBatch>,
    sealed: VecDeque<SealedBatch>,
    /// Sealed batches not yet completed (including those being appended).
    unresolved: Vec<Arc<BatchCompletion>>,
    /// The epoch new batches get (see the module docs).
    epoch: u64,
    failure: Option<Failure>,
}

impl QueueState {
    /// Starts a new epoch if the latched failure was handed out: batches
    /// begun from now on are appended again.
    fn start_again_if_seen(&mut self) {
        if let Some(f) = &self.failure {
            if f.epoch == self.epoch && f.seen.load(Ordering::Acquire) {
                self.epoch += 1;
            }
        }
    }

    /// Latches `error` for every batch begun so far.
    fn latch(&mut self, error: &Arc<Error>) -> Arc<AtomicBool> {
        let seen = Arc::new(AtomicBool::new(false));
        self.failure = Some(Failure {
            error: Arc::clone(error),
            epoch: self.epoch,
            seen: Arc::clone(&seen),
        });
        seen
    }
}

/// What `push` tells the caller to do next.
pub(crate) struct Pushed {
    pub(crate) completion: Arc<BatchCompletion>,
    pub(crate) index: u32,
    /// A batch is ready to append: drain now.
    pub(crate) drain: bool,
    /// This record started a new batch (the linger clock started).
    pub(crate) started_batch: bool,
}

/// The accumulator of one partition.
pub(crate) struct PartitionQueue {
    pub(crate) topic: Arc<str>,
    pub(crate) partition: u32,
    log: Arc<PartitionLog>,
    compression: Compression,
    level: Option<i32>,
    batch_limit: usize,
    state: Mutex<QueueState>,
    drain: Mutex<()>,
}

impl PartitionQueue {
    pub(crate) fn new(
        topic: Arc<str>,
        partition: u32,
        log: Arc<PartitionLog>,
        compression: Compression,
        level: Option<i32>,
        batch_size: usize,
    ) -> Self {
        let max = log.config().settings.max_message_bytes as usize;
        PartitionQueue {
            topic,
            partition,
            log,
            compression,
            level,
            batch_limit: batch_size.min(max).max(1),
            state: Mutex::new(QueueState {
                open: None,
                sealed: VecDeque::new(),
                unresolved: Vec::new(),
                epoch: 0,
                failure: None,
            }),
            drain: Mutex::new(()),
        }
    }

    /// Whether the partition's log was closed (its topic deleted): the
    /// producer then looks the topic up again.
    pub(crate) fn is_stale(&self) -> bool {
        self.log.is_closed()
    }

    /// The log's `max.message.bytes`.
    pub(crate) fn max_batch_bytes(&self) -> usize {
        self.log.config().settings.max_message_bytes as usize
    }

    fn seal(st: &mut QueueState) {
        if let Some(open) = st.open.take() {
            st.unresolved.retain(|c| !c.is_done());
            st.unresolved.push(Arc::clone(&open.completion));
            st.sealed.push_back(SealedBatch {
                builder: open.builder,
                completion: open.completion,
                reserved: open.reserved,
                epoch: open.epoch,
            });
        }
    }

    /// Adds one record to the open batch, sealing the batch first if the
    /// record would overflow it. `linger_zero` makes the batch ready at once.
    pub(crate) fn push(
        &self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[crate::record::Header],
        reserved: usize,
        linger_zero: bool,
    ) -> Pushed {
        let mut st = self.state.lock();
        st.start_again_if_seen();
        if let Some(open) = &st.open {
            if open.epoch != st.epoch
                || (!open.builder.is_empty() && open.builder.size() + reserved > self.batch_limit)
            {
                Self::seal(&mut st);
            }
        }
        let started_batch = st.open.is_none();
        let epoch = st.epoch;
        let open = st.open.get_or_insert_with(|| OpenBatch {
            builder: match self.level {
                Some(level) => BatchBuilder::with_capacity(self.compression, self.batch_limit)
                    .compression_level(level),
                None => BatchBuilder::with_capacity(self.compression, self.batch_limit),
            },
            completion: BatchCompletion::new(),
            created: Instant::now(),
            reserved: 0,
            epoch,
        });
        let index = open.builder.len() as u32;
        open.builder.push_parts(timestamp, key, value, headers);
        open.reserved += reserved;
        let completion = Arc::clone(&open.completion);
        let full = open.builder.size() >= self.batch_limit;
        if full {
            Self::seal(&mut st);
        }
        Pushed {
            completion,
            index,
            drain: full || linger_zero || !st.sealed.is_empty(),
            started_batch,
        }
    }

    /// Seals the open batch if it is at least `linger` old (or `force`), and
    /// returns whether anything waits to be appended, plus when the open
    /// batch (if any) becomes due.
    pub(crate) fn seal_due(
        &self,
        now: Instant,
        linger: std::time::Duration,
        force: bool,
    ) -> (bool, Option<Instant>) {
        let mut st = self.state.lock();
        let due = st
            .open
            .as_ref()
            .is_some_and(|o| force || now.saturating_duration_since(o.created) >= linger);
        if due {
            Self::seal(&mut st);
        }
        // A linger too long to add to an instant never comes due.
        let next = st.open.as_ref().and_then(|o| o.created.checked_add(linger));
        (!st.sealed.is_empty(), next)
    }

    /// Completions of every batch not yet completed, sealing the open one.
    pub(crate) fn seal_and_pending(&self) -> Vec<Arc<BatchCompletion>> {
        let mut st = self.state.lock();
        Self::seal(&mut st);
        st.unresolved.retain(|c| !c.is_done());
        st.unresolved.clone()
    }

    /// Appends every sealed batch, in order. Returns the bytes of buffer
    /// memory released. Safe to call from any thread; if another thread is
    /// draining, it picks up what this one would have appended.
    pub(crate) fn drain(&self, durability: Durability, linger_zero: bool) -> usize {
        let mut released = 0;
        loop {
            let Some(guard) = self.drain.try_lock() else {
                return released;
            };
            let (doomed, taken): (Vec<SealedBatch>, Vec<SealedBatch>) = {
                let mut st = self.state.lock();
                if linger_zero {
                    Self::seal(&mut st);
                }
                let failed_epoch = st.failure.as_ref().map(|f| f.epoch);
                // Epochs rise in seal order: the doomed batches come first.
                st.sealed
                    .drain(..)
                    .partition(|b| failed_epoch.is_some_and(|e| b.epoch <= e))
            };
            if !doomed.is_empty() {
                let failure = {
                    let st = self.state.lock();
                    st.failure
                        .as_ref()
                        .map(|f| (Arc::clone(&f.error), Arc::clone(&f.seen)))
                };
                if let Some((error, seen)) = failure {
                    for b in doomed {
                        released += b.reserved;
                        b.completion.complete(
                            &self.topic,
                            self.partition,
                            Err(Arc::clone(&error)),
                            Some(&seen),
                        );
                    }
                }
            }
            if taken.is_empty() {
                drop(guard);
                // Re-check: a batch sealed after our look but before our
                // unlock found the lock taken and left it to us.
                if self.state.lock().sealed.is_empty() {
                    return released;
                }
                continue;
            }
            // Group commit: count this append until it is written.
            let appending = self.log.fsync_append(durability);
            let mut completions = Vec::with_capacity(taken.len());
            let mut buf = BytesMut::new();
            for b in taken {
                released += b.reserved;
                let bytes = b.builder.build();
                if buf.is_empty() {
                    buf = bytes
                        .try_into_mut()
                        .unwrap_or_else(|b| BytesMut::from(&b[..]));
                } else {
                    buf.extend_from_slice(&bytes);
                }
                completions.push(b.completion);
            }
            let write_durability = match durability {
                Durability::Fsync => Durability::Fsync,
                _ => Durability::Written,
            };
            let written = crate::log::parse_headers(
                &buf,
                self.log.config().settings.max_message_bytes,
                false,
            )
            .and_then(|headers| {
                self.log
                    .write_validated(&mut buf, &headers, write_durability)
                    .map(|(info, sync)| (info, sync, headers))
            });
            drop(appending);
            // A failed write latches before the next drainer can look, so
            // no batch sealed behind these is written after the gap.
            let written = written.map_err(|e| {
                let e = Arc::new(e);
                let seen = self.state.lock().latch(&e);
                (e, seen)
            });
            drop(guard);
            let result = written.and_then(|(info, sync, headers)| {
                if sync {
                    if let Err(e) = self.log.sync_to(info.last_offset + 1) {
                        let e = Arc::new(e);
                        let seen = self.state.lock().latch(&e);
                        return Err((e, seen));
                    }
                }
                Ok((info, headers))
            });
            match result {
                Ok((info, headers)) => {
                    let mut base = info.base_offset;
                    for (c, h) in completions.iter().zip(&headers) {
                        c.complete(&self.topic, self.partition, Ok(base), None);
                        base += i64::from(h.last_offset_delta) + 1;
                    }
                }
                Err((e, seen)) => {
                    for c in &completions {
                        c.complete(
                            &self.topic,
                            self.partition,
                            Err(Arc::clone(&e)),
                            Some(&seen),
                        );
                    }
                }
            }
            if self.state.lock().sealed.is_empty() {
                return released;
            }
        }
    }
}
