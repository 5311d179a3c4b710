//! `PartitionLog`: one partition's ordered segments (Kafka's `UnifiedLog`).
//!
//! Locking: one writer mutex serialises appends, rolls and truncation; readers
//! take no lock on the append path, only the segment list's read lock for a
//! moment and the index read locks during lookups. `fsync` runs outside the
//! writer mutex, so appenders keep writing while a group commit is in flight.
//!
//! Offsets: `log_start_offset ≤ high_watermark ≤ log_end_offset`. Readers see
//! batches below the high watermark only.
//!
//! The capabilities live in: `append` (appends and rolls), `commit` (group
//! commit, the poison latch, rolled-segment flushes), `flusher` (the
//! background flush worker), `read` (reads, point reads, time lookups),
//! `tail` (read-only handles following another process). Retention, the
//! cleaner and transactions (sibling modules) reach the segment list
//! through the methods at the end of this file.

mod append;
mod commit;
mod flusher;
mod read;
mod tail;
#[cfg(test)]
mod tests;

pub(crate) use append::parse_headers;

use super::checkpoint::Checkpoint;
use super::config::{LogConfig, ReadMode};
use super::notify::Notifier;
use super::open::{self, Loaded};
use super::segment::{IndexCursor, Segment};
use super::txn::TxnIndex;
use crate::error::{Error, Result};
use crate::metrics::{Histogram, LatencySnapshot};
use commit::Durable;
use flusher::{FlushTicket, Flusher};
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

/// What an append assigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AppendInfo {
    /// Offset of the first record appended.
    pub base_offset: i64,
    /// Offset of the last record appended.
    pub last_offset: i64,
    /// The largest record timestamp appended.
    pub max_timestamp: i64,
    /// Number of batches written.
    pub batches: usize,
}

/// The writer's state, under the writer mutex.
pub(crate) struct Writer {
    cursor: IndexCursor,
    /// When a roll last wrote the checkpoint.
    roll_checkpoint_at: Option<Instant>,
}

/// One partition's log: append batches, read them back by offset.
///
/// `PartitionLog` is `Send + Sync`: many threads may append and read at once.
/// Call [`close`](PartitionLog::close) for a clean shutdown; dropping it
/// without closing is treated like a crash (the next open runs recovery, and
/// loses nothing that was acknowledged).
pub struct PartitionLog {
    dir: PathBuf,
    config: LogConfig,
    segments: RwLock<Vec<Arc<Segment>>>,
    writer: Mutex<Writer>,
    /// Serialises retention and compaction (both replace sealed segments).
    maintenance: Mutex<()>,
    /// Serialises checkpoint writes (they share one temporary file) and
    /// holds the recovery point last written, which never goes back:
    /// recovery deletes segments after a short one above it.
    checkpointed: Mutex<i64>,
    /// Read-only handles: the checkpoint file last seen (inode, mtime, size).
    /// The writer rewrites it after retention and compaction, so a change
    /// means sealed segments may have been rewritten or removed.
    seen_checkpoint: Mutex<Option<(u64, i64, u64)>>,
    /// Compaction has cleaned every sealed segment below this offset.
    cleaned_up_to: AtomicI64,
    /// Where the last read ended: a read that starts there has the batches
    /// after it checked ahead (`read_ahead`).
    sequential: crate::log::read_ahead::Sequential,
    /// Transactions seen in the log, for `read_committed` reads (built on
    /// first use).
    txn: Mutex<TxnIndex>,
    /// The poison latch (see [`commit`]): set once, by `poison`, never reset.
    poisoned: AtomicBool,
    durable: Mutex<Durable>,
    /// Waiters for an fsync: woken all at once when one ends (or the log is
    /// poisoned). A condition variable sharing the `Durable` mutex would
    /// wake them one by one instead, each after the previous one got the
    /// mutex back: a chain of scheduler wake-ups (about 40 µs each here)
    /// that held up the next round of appends.
    round_end: Notifier,
    /// The group-commit leader's wait for appends to gather: its only
    /// waiter, so the appends it waits for wake it alone.
    gather_cv: Condvar,
    /// Background flushes of rolled segments, oldest first: each with the
    /// end (exclusive) of the segment it makes durable.
    pending_flush: Mutex<VecDeque<(i64, FlushTicket)>>,
    flusher: Flusher,
    data: Notifier,
    /// A store-wide notifier, told too when the high watermark moves.
    listener: OnceLock<Arc<Notifier>>,
    log_start: AtomicI64,
    log_end: AtomicI64,
    high_watermark: AtomicI64,
    closed: AtomicBool,
    /// Opened with [`PartitionLog::open_read_only`]: never writes; reads
    /// catch up with another process's appends.
    read_only: bool,
    append_latency: Histogram,
    fsync_latency: Histogram,
    /// The directory lock: held until a successful [`close`](Self::close)
    /// or the drop of the last handle.
    lock: Mutex<Option<File>>,
}

impl Drop for PartitionLog {
    /// Waits for the background flushes of rolled segments, so none
    /// outlives the log (and its directory lock, released after this). A
    /// failure is not reported here: without `close` the next open recovers
    /// as after a crash.
    fn drop(&mut self) {
        for (_, ticket) in self.pending_flush.get_mut().drain(..) {
            let _ = ticket.wait();
        }
    }
}

impl std::fmt::Debug for PartitionLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionLog")
            .field("dir", &self.dir)
            .field("log_start_offset", &self.log_start_offset())
            .field("high_watermark", &self.high_watermark())
            .field("log_end_offset", &self.log_end_offset())
            .finish()
    }
}

impl PartitionLog {
    /// Opens (creating if needed) the partition log in `dir`, recovering it
    /// if it was not closed cleanly.
    ///
    /// # Errors
    /// [`Error::Locked`] if another handle has it open, [`Error::Corrupt`]
    /// when a batch before the recovery point or in a sealed segment is
    /// damaged (nothing is truncated then), [`Error::InvalidConfig`], I/O.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig) -> Result<PartitionLog> {
        config.validate()?;
        let dir = dir.as_ref().to_owned();
        let _span = crate::span!("kafkalite.recovery", dir = dir.display());
        let Loaded {
            lock,
            segments,
            log_start,
            log_end,
            cursor: _,
        } = open::load(&dir, &config)?;
        let log = Self::assemble(dir, config, segments, log_start, log_end, lock);
        log.writer.lock().cursor = log.active().index_cursor_after_open();
        Ok(log)
    }

    /// Opens a partition log for reading only, while another process (or
    /// handle) may be writing it: takes no lock, writes nothing, and each
    /// read first catches up with what the writer appended (tailing). It
    /// sees what the writer wrote to the page cache, including records an
    /// `Fsync` writer has not yet acknowledged. Reads use
    /// [`ReadMode::Pread`] whatever `config` says: files another process
    /// owns are never memory-mapped.
    ///
    /// # Errors
    /// I/O errors; [`Error::InvalidConfig`] when `dir` holds no segment.
    pub fn open_read_only(dir: impl AsRef<Path>, mut config: LogConfig) -> Result<PartitionLog> {
        config.validate()?;
        // The owning process may shrink files it owns (a torn tail cut at its
        // open, a failed write cut back): a map of them could lose pages
        // under a reader (SIGBUS). Read-only handles use `pread` instead.
        config.read_mode = ReadMode::Pread;
        let dir = dir.as_ref().to_owned();
        let loaded = open::load_read_only(&dir, &config)?;
        let (segments, log_start, log_end) = (loaded.segments, loaded.log_start, loaded.log_end);
        let mut log = Self::assemble(dir, config, segments, log_start, log_end, None);
        log.read_only = true;
        log.writer.lock().cursor = loaded.cursor;
        Ok(log)
    }

    fn assemble(
        dir: PathBuf,
        config: LogConfig,
        segments: Vec<Arc<Segment>>,
        log_start: i64,
        log_end: i64,
        lock: Option<File>,
    ) -> PartitionLog {
        PartitionLog {
            flusher: Flusher::new(dir.clone()),
            dir,
            segments: RwLock::new(segments),
            writer: Mutex::new(Writer {
                cursor: IndexCursor::default(),
                roll_checkpoint_at: None,
            }),
            maintenance: Mutex::new(()),
            // Opening wrote a checkpoint with the log end.
            checkpointed: Mutex::new(log_end),
            seen_checkpoint: Mutex::new(None),
            cleaned_up_to: AtomicI64::new(i64::MIN),
            sequential: Default::default(),
            txn: Mutex::new(TxnIndex::default()),
            poisoned: AtomicBool::new(false),
            durable: Mutex::new(Durable::new(log_end)),
            round_end: Notifier::new(),
            gather_cv: Condvar::new(),
            pending_flush: Mutex::new(VecDeque::new()),
            data: Notifier::new(),
            listener: OnceLock::new(),
            log_start: AtomicI64::new(log_start),
            log_end: AtomicI64::new(log_end),
            high_watermark: AtomicI64::new(log_end),
            closed: AtomicBool::new(false),
            read_only: false,
            append_latency: Histogram::default(),
            fsync_latency: Histogram::default(),
            lock: Mutex::new(lock),
            config,
        }
    }

    pub(super) fn check_writable(&self) -> Result<()> {
        if self.read_only {
            Err(Error::ReadOnly)
        } else {
            Ok(())
        }
    }

    /// The directory holding the segments.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The log's configuration.
    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// The first readable offset.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start.load(Ordering::Acquire)
    }

    /// The offset the next appended record gets.
    pub fn log_end_offset(&self) -> i64 {
        self.log_end.load(Ordering::Acquire)
    }

    /// Readers see offsets below this: the log end, except that records from
    /// an `Fsync` append whose fsync has not completed are held back.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark.load(Ordering::Acquire)
    }

    /// Total bytes of all segments' `.log` files.
    pub fn size(&self) -> u64 {
        self.segments.read().iter().map(|s| s.size()).sum()
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.segments.read().len()
    }

    /// Base offsets of the segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments
            .read()
            .iter()
            .map(|s| s.base_offset())
            .collect()
    }

    /// Latency of appends since open (writing and indexing, not waiting
    /// for fsync).
    pub fn append_latency(&self) -> LatencySnapshot {
        self.append_latency.snapshot()
    }

    /// Latency of the fsyncs run since open.
    pub fn fsync_latency(&self) -> LatencySnapshot {
        self.fsync_latency.snapshot()
    }

    fn active(&self) -> Arc<Segment> {
        let segs = self.segments.read();
        match segs.last() {
            Some(s) => Arc::clone(s),
            None => unreachable_no_segment(),
        }
    }

    /// Writes the partition checkpoint (recovery point = what is synced).
    ///
    /// # Errors
    /// I/O errors writing the checkpoint.
    pub fn checkpoint(&self) -> Result<()> {
        self.check_writable()?;
        self.write_checkpoint(None)
    }

    fn checkpoint_with(&self, recovery_point: i64) -> Result<()> {
        self.write_checkpoint(Some(recovery_point))
    }

    /// Writes the checkpoint with `recovery_point` (the synced offset when
    /// `None`, read under the checkpoint lock), never below the one last
    /// written: a writer that read an older synced offset must not move the
    /// recovery point back behind segments that are durable (and perhaps
    /// compacted, so legitimately short).
    fn write_checkpoint(&self, recovery_point: Option<i64>) -> Result<()> {
        let mut last = self.checkpointed.lock();
        let rp = recovery_point.unwrap_or_else(|| self.synced()).max(*last);
        Checkpoint {
            recovery_point: rp,
            log_start_offset: self.log_start_offset(),
            segments: Some(self.segment_base_offsets()),
        }
        .write(&*self.config.file_system, &self.dir)?;
        *last = rp;
        Ok(())
    }

    /// Whether [`close`](Self::close) was called (also by a topic deletion).
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Shuts the log down cleanly: fsyncs everything, trims the active
    /// segment's indexes, writes the checkpoint and the clean-shutdown
    /// marker, so the next open skips recovery, and releases the directory
    /// lock, so the log can be opened again while this handle lives. Later
    /// appends fail with [`Error::Closed`]; reads keep working.
    ///
    /// # Errors
    /// I/O errors; the log is then left as after a crash (recovery runs at
    /// the next open and loses nothing acknowledged).
    pub fn close(&self) -> Result<()> {
        if self.read_only {
            self.closed.store(true, Ordering::Release);
            return Ok(());
        }
        let w = self.writer.lock();
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        self.notify_readers();
        self.check_poisoned()?;
        self.settle_rolled(true, i64::MIN)?;
        // A group-commit leader may still wait for flushes it took.
        self.wait_for_leader_flushes()?;
        let active = self.active();
        {
            let _hold = active.hold()?;
            active.seal()?;
            // Sealed for good: a later reopen of its files (by a reader) is
            // read-only.
            active.unpin();
        }
        self.note_synced(self.log_end_offset());
        self.checkpoint_with(self.log_end_offset())?;
        super::files::write_clean_shutdown_marker(&*self.config.file_system, &self.dir)?;
        // Nothing writes through this handle any more: the directory can be
        // opened again while others still hold it (their reads keep working;
        // a new handle never cuts a file below what this one showed).
        drop(w);
        self.lock.lock().take();
        Ok(())
    }
}

/// The segment list, for retention, the cleaner and transactions.
impl PartitionLog {
    /// The segments, oldest first, as they are now.
    pub(super) fn segments_snapshot(&self) -> Vec<Arc<Segment>> {
        self.segments.read().clone()
    }

    /// The sealed segments (all but the active one), oldest first, and the
    /// active segment's base offset.
    pub(super) fn sealed_segments(&self) -> (Vec<Arc<Segment>>, i64) {
        let segs = self.segments.read();
        let sealed = segs.len().saturating_sub(1);
        let active_base = segs.last().map_or(0, |s| s.base_offset());
        (segs.iter().take(sealed).cloned().collect(), active_base)
    }

    /// Holds off other retention and compaction runs while it lives.
    pub(super) fn maintenance(&self) -> MutexGuard<'_, ()> {
        self.maintenance.lock()
    }

    /// Takes the oldest segments off the log, as many as `decide` says
    /// after looking at the list (under the writer lock, so no roll changes
    /// it meanwhile). When that is every segment the active one is rolled
    /// first, so the log keeps one. The log start moves to the first
    /// segment left. Returns the segments taken off; their files are the
    /// caller's to delete.
    pub(super) fn take_oldest_segments(
        &self,
        decide: impl FnOnce(&[Arc<Segment>]) -> usize,
    ) -> Result<Vec<Arc<Segment>>> {
        let mut w = self.writer.lock();
        let segs = self.segments_snapshot();
        let count = decide(&segs).min(segs.len());
        if count == 0 {
            return Ok(Vec::new());
        }
        if count == segs.len() {
            let base = self.log_end_offset();
            self.roll(&mut w, base)?;
        }
        let doomed: Vec<Arc<Segment>> = self.segments.write().drain(..count).collect();
        let new_start = self
            .segments
            .read()
            .first()
            .map_or(self.log_end_offset(), |s| s.base_offset());
        self.log_start.fetch_max(new_start, Ordering::AcqRel);
        Ok(doomed)
    }

    /// Raises the log start offset to at least `to`.
    pub(super) fn raise_log_start(&self, to: i64) {
        self.log_start.fetch_max(to, Ordering::AcqRel);
    }

    /// Whether `seg` is the log's first segment.
    pub(super) fn is_first_segment(&self, seg: &Arc<Segment>) -> bool {
        self.segments
            .read()
            .first()
            .is_some_and(|s| Arc::ptr_eq(s, seg))
    }

    /// Puts `fresh` in `old`'s place in the list (a rewritten segment).
    pub(super) fn replace_segment(&self, old: &Arc<Segment>, fresh: Arc<Segment>) {
        let mut segs = self.segments.write();
        if let Some(slot) = segs.iter_mut().find(|s| Arc::ptr_eq(s, old)) {
            *slot = fresh;
        }
    }

    /// Takes `old` off the list (a segment compaction emptied).
    pub(super) fn unlist_segment(&self, old: &Arc<Segment>) {
        self.segments.write().retain(|s| !Arc::ptr_eq(s, old));
    }

    /// Compaction has cleaned every sealed segment below this offset.
    pub(super) fn cleaned_up_to(&self) -> i64 {
        self.cleaned_up_to.load(Ordering::Acquire)
    }

    /// Records that compaction cleaned everything below `end`.
    pub(super) fn mark_cleaned_up_to(&self, end: i64) {
        self.cleaned_up_to.fetch_max(end, Ordering::AcqRel);
    }

    /// The transaction index (see [`super::txn`]).
    pub(super) fn txn_index(&self) -> MutexGuard<'_, TxnIndex> {
        self.txn.lock()
    }
}

/// The segment list is never empty: open creates one and retention keeps one.
#[cold]
fn unreachable_no_segment() -> ! {
    panic!("partition log without segments")
}
