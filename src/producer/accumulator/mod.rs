//! Per-partition record accumulators and batch completion.
//!
//! Records go into the partition's open batch. A batch is sealed when full,
//! when it has lingered `linger.ms`, or on `flush`. Sealed batches are
//! appended in seal order by whichever thread holds the partition's drain
//! lock, several at once with one write; compression (`build`) happens
//! there, outside every lock but the partition's own drain lock, so
//! partitions compress in parallel.
//!
//! Write coalescing: a full batch waits up to [`COALESCE_WAIT`] (1 ms,
//! never longer than `linger.ms`) for more full batches of its partition,
//! and the partition's sealed batches are written together with one
//! vectored write once they hold [`WRITE_BYTES`], once one has waited its
//! time, or on `flush`, `send_and_wait`, or when a send waits for buffer
//! memory. The kernel's cost of a buffered write is mostly per page-cache
//! folio, and a folio is no larger than the write that creates it: a
//! 64 KiB write of four batches costs well under four 16 KiB ones. Kafka
//! sends a full batch "immediately regardless of linger.ms"; here it may
//! wait that one millisecond. With `linger.ms` 0 every batch is written at
//! once.
//!
//! Order survives failure (Kafka's idempotent producer): when an append
//! fails, the partition latches the error, and every batch of that
//! partition begun before the application was handed the error (through a
//! handle's `wait`, a callback or `flush`) fails with it, unwritten, so the
//! log stays a prefix of the send order. Batches carry the partition's
//! epoch; the first `push` after the error was handed out starts a new
//! epoch, whose batches are appended again in order.
//!
//! `push.rs` adds a record to a partition's open batch; `drain.rs` appends
//! a partition's sealed batches; `lock.rs` takes a partition's lock, which
//! `state_lock.rs` implements; `completion.rs` holds a batch's outcome,
//! which every handle of its records waits on; `spare.rs` keeps emptied
//! batch buffers for reuse.

mod callback;
mod completion;
mod drain;
mod lock;
mod push;
mod spare;
mod state_lock;
#[cfg(test)]
mod tests;

pub(crate) use completion::{metadata, BatchCompletion, Callback};
use completion::{push_pending, Pending};
pub(crate) use lock::{CountedSender, Senders};
pub(crate) use push::Refused;
pub(crate) use spare::SpareBudget;
use spare::SpareBuffers;
use state_lock::StateLock;

use crate::error::Error;
use crate::log::PartitionLog;
use crate::own_lines::OwnLines;
use crate::producer::ProducerConfig;
use crate::record::{BatchBuilder, Compression};
use parking_lot::Mutex;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct OpenBatch {
    /// The [`thread_token`] of the thread that opened it.
    opener: u64,
    builder: BatchBuilder,
    completion: Arc<BatchCompletion>,
    /// The callbacks given with its records' sends, in send order: kept
    /// here, under the queue's lock the send holds anyway, rather than
    /// under the completion's own.
    callbacks: Vec<Pending>,
    created: Instant,
    reserved: usize,
    epoch: u64,
}

struct SealedBatch {
    builder: BatchBuilder,
    completion: Arc<BatchCompletion>,
    callbacks: Vec<Pending>,
    reserved: usize,
    epoch: u64,
}

/// `PartitionQueue::sealed_by` when the sealed batches waiting were opened
/// by more than one thread.
const MIXED: u64 = u64::MAX;

/// This thread's token, unique in the process (never 0 nor [`MIXED`]).
pub(crate) fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    thread_local! {
        static TOKEN: u64 = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    TOKEN.with(|t| *t)
}

/// Emptied callback lists a partition keeps for its next batches.
const SPARE_CALLBACK_LISTS: usize = 4;

/// Bytes allocated after a partition's name (see `PartitionQueue::new`):
/// two cache lines.
const APART: usize = 128;

/// A partition's sealed batches are written together once they hold this
/// many bytes (uncompressed; see the module docs).
pub(crate) const WRITE_BYTES: usize = 64 << 10;

/// The longest a full batch waits for more of its partition's batches to be
/// written with (see the module docs); `linger.ms` if shorter.
pub(crate) const COALESCE_WAIT: Duration = Duration::from_millis(1);

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
    /// The (uncompressed) bytes of the batches in `sealed`.
    sealed_bytes: usize,
    /// Who opened the batches in `sealed` (see `PartitionQueue::sealed_by`).
    sealed_by: u64,
    /// When the first of `sealed` must be written.
    sealed_due: Option<Instant>,
    /// Emptied callback lists of written batches, their room kept for the
    /// next batches (at most [`SPARE_CALLBACK_LISTS`]): a list freed by
    /// another thread than the one that made it takes that thread's malloc
    /// arena lock, which two sending threads then contend for.
    spare_callbacks: Vec<Vec<Pending>>,
    /// Emptied batch buffers of written batches (`spare.rs`).
    spare_buffers: SpareBuffers,
    /// Sealed batches not yet completed (including those being appended).
    unresolved: Vec<Arc<BatchCompletion>>,
    /// The epoch new batches get (see the module docs).
    epoch: u64,
    failure: Option<Failure>,
    /// Bytes of `buffer.memory` taken for this partition's next records
    /// and not yet theirs (see `push`; `Inner::reserve_credit`).
    credit: usize,
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

/// The accumulator of one partition.
pub(crate) struct PartitionQueue {
    /// The topic's name, this partition's own copy (see `new`).
    pub(crate) topic: Arc<str>,
    /// Allocated right after `topic`, and kept: the next partition's name
    /// cannot be allocated beside this one.
    _apart: Box<[u8]>,
    pub(crate) partition: u32,
    log: Arc<PartitionLog>,
    compression: Compression,
    level: Option<i32>,
    batch_limit: usize,
    /// How long a full batch waits to be written with others:
    /// [`COALESCE_WAIT`], or `linger.ms` if shorter.
    coalesce: Duration,
    /// On lines of its own: every send writes the lock, and the fields
    /// the next send reads before it (`log`, to see it is open) must not
    /// miss after another thread sent here (`own_lines.rs`).
    state: OwnLines<StateLock<QueueState>>,
    /// The producer's sending threads (see `lock_state`).
    senders: Arc<Senders>,
    /// How many times `lock_state` got the lock by spinning.
    #[cfg(test)]
    spun: std::sync::atomic::AtomicUsize,
    drain: Mutex<()>,
    /// A copy of the state's `sealed_by`, read without its lock: the
    /// [`thread_token`] of the thread that opened every sealed batch waiting
    /// to be written, 0 if none waits, [`MIXED`] if several threads did.
    /// The sticky partitioner moves a thread on to a partition where no
    /// other thread's batches wait, so that the thread writing them (the
    /// one that seals the last) is mostly their maker, which then also runs
    /// their callbacks on its own core.
    sealed_by: AtomicU64,
    /// The [`thread_token`] of the thread that opened the latest batch, 0
    /// before the first.
    opened_by: AtomicU64,
    /// The [`thread_token`] of the thread whose batch is open now, 0 while
    /// none is: the sticky partitioner's switch ranks a partition another
    /// thread is filling below free ones (both would write its batch, in
    /// turn, from two cores).
    filling: AtomicU64,
    /// Bytes of the batches sealed here (this producer's), for the sticky
    /// partitioner's balance; raised by it when far behind (see
    /// `catch_up_to`).
    sealed_total: AtomicU64,
}

impl PartitionQueue {
    pub(crate) fn new(
        topic: &str,
        partition: u32,
        log: Arc<PartitionLog>,
        config: &ProducerConfig,
        spare_budget: &Arc<SpareBudget>,
        senders: &Arc<Senders>,
    ) -> Self {
        let max = log.config().settings.max_message_bytes as usize;
        // Each record's metadata clones the name, and the callback drops
        // it: a name of its own per partition, on a cache line no other
        // partition's shares (two short names allocated one after the other
        // share one), so threads sending to different partitions do not
        // bounce its reference count between their cores.
        let topic: Arc<str> = Arc::from(topic);
        let apart = vec![0u8; APART].into_boxed_slice();
        let batch_limit = config.batch_size.min(max).max(1);
        PartitionQueue {
            topic,
            _apart: apart,
            partition,
            log,
            compression: config.compression,
            level: config.compression_level,
            batch_limit,
            coalesce: config.linger.min(COALESCE_WAIT),
            state: OwnLines(StateLock::new(QueueState {
                open: None,
                sealed: VecDeque::new(),
                sealed_bytes: 0,
                sealed_by: 0,
                sealed_due: None,
                spare_callbacks: Vec::new(),
                spare_buffers: SpareBuffers::new(
                    Arc::clone(spare_budget),
                    batch_limit,
                    config.compression != Compression::None,
                ),
                unresolved: Vec::new(),
                epoch: 0,
                failure: None,
                credit: 0,
            })),
            senders: Arc::clone(senders),
            #[cfg(test)]
            spun: std::sync::atomic::AtomicUsize::new(0),
            drain: Mutex::new(()),
            sealed_by: AtomicU64::new(0),
            opened_by: AtomicU64::new(0),
            filling: AtomicU64::new(0),
            sealed_total: AtomicU64::new(0),
        }
    }

    /// `batch.size`, as this partition's batches are bounded.
    pub(crate) fn batch_limit(&self) -> usize {
        self.batch_limit
    }

    /// Whether the latest batch here was opened by `me` (a
    /// [`thread_token`]), or none was yet.
    pub(crate) fn last_opened_by(&self, me: u64) -> bool {
        let by = self.opened_by.load(Ordering::Relaxed);
        by == 0 || by == me
    }

    /// Whether a batch another thread than `me` (a [`thread_token`])
    /// opened is open here now.
    pub(crate) fn filled_by_another(&self, me: u64) -> bool {
        let by = self.filling.load(Ordering::Relaxed);
        by != 0 && by != me
    }

    /// Bytes of the batches sealed here so far.
    pub(crate) fn sealed_total(&self) -> u64 {
        self.sealed_total.load(Ordering::Relaxed)
    }

    /// Counts this partition as having had at least `floor` bytes sealed,
    /// so one far behind the others (new, or long left out) takes a
    /// bounded share of catching up, not every keyless record until it has.
    pub(crate) fn catch_up_to(&self, floor: u64) {
        self.sealed_total.fetch_max(floor, Ordering::Relaxed);
    }

    /// Whether sealed batches another thread than `me` (a [`thread_token`])
    /// opened wait to be written here.
    pub(crate) fn holds_others_batches(&self, me: u64) -> bool {
        let by = self.sealed_by.load(Ordering::Relaxed);
        by != 0 && by != me
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

    /// Seals the open batch, to be written by `due` at the latest.
    fn seal(&self, st: &mut QueueState, due: Instant) {
        if let Some(open) = st.open.take() {
            self.filling.store(0, Ordering::Relaxed);
            let by = match st.sealed_by {
                0 => open.opener,
                by if by == open.opener => by,
                _ => MIXED,
            };
            if by != st.sealed_by {
                st.sealed_by = by;
                self.sealed_by.store(by, Ordering::Relaxed);
            }
            st.unresolved.retain(|c| !c.is_done());
            st.unresolved.push(Arc::clone(&open.completion));
            st.sealed_bytes += open.builder.size();
            self.sealed_total
                .fetch_add(open.builder.size() as u64, Ordering::Relaxed);
            st.sealed_due = Some(st.sealed_due.map_or(due, |d| d.min(due)));
            st.sealed.push_back(SealedBatch {
                builder: open.builder,
                completion: open.completion,
                callbacks: open.callbacks,
                reserved: open.reserved,
                epoch: open.epoch,
            });
        }
    }

    /// Seals the open batch if it is at least `linger` old (or `force`), and
    /// returns whether sealed batches are ready to append (they hold
    /// [`WRITE_BYTES`], one has waited its time, `force`, or
    /// `flush_sealed`), plus when the next of its batches comes due.
    pub(crate) fn seal_due(
        &self,
        now: Instant,
        linger: std::time::Duration,
        force: bool,
        flush_sealed: bool,
    ) -> (bool, Option<Instant>) {
        let mut st = self.lock_state();
        let lingered = |created: Instant| now.saturating_duration_since(created) >= linger;
        if st
            .open
            .as_ref()
            .is_some_and(|o| force || lingered(o.created))
        {
            self.seal(&mut st, now);
        }
        let ready = !st.sealed.is_empty()
            && (force
                || flush_sealed
                || st.sealed_bytes >= WRITE_BYTES
                || st.sealed_due.is_some_and(|d| d <= now));
        (ready, Self::first_deadline(&st, linger))
    }

    /// When the first batch waiting must be written: the sealed ones by
    /// their due time, the open one when it has lingered (a linger too long
    /// to add to an instant never comes due).
    fn first_deadline(st: &QueueState, linger: Duration) -> Option<Instant> {
        let open = st.open.as_ref().and_then(|o| o.created.checked_add(linger));
        match (st.sealed_due, open) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// When this partition's oldest waiting batch comes due, after a drain
    /// at `now`: sealed batches still due then are another drainer's, and
    /// only the open batch counts.
    pub(crate) fn next_deadline(
        &self,
        linger: std::time::Duration,
        now: Instant,
    ) -> Option<Instant> {
        let st = self.lock_state();
        match Self::first_deadline(&st, linger) {
            Some(d) if d <= now => st.open.as_ref().and_then(|o| o.created.checked_add(linger)),
            d => d,
        }
    }

    /// Takes the partition's unused credit of `buffer.memory` (to give it
    /// back: a send waits for memory, the producer closes, the topic is
    /// gone).
    pub(crate) fn take_credit(&self) -> usize {
        std::mem::take(&mut self.lock_state().credit)
    }

    /// Frees the emptied buffers and callback lists kept for the next
    /// batches (the producer closed, or the topic is gone).
    pub(crate) fn drop_spares(&self) {
        let mut st = self.lock_state();
        st.spare_buffers.clear();
        st.spare_callbacks = Vec::new();
    }

    /// Completions of every batch not yet completed, sealing the open one.
    pub(crate) fn seal_and_pending(&self) -> Vec<Arc<BatchCompletion>> {
        let mut st = self.lock_state();
        self.seal(&mut st, Instant::now());
        st.unresolved.retain(|c| !c.is_done());
        st.unresolved.clone()
    }
}
