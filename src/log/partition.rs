//! `PartitionLog`: one partition's ordered segments (Kafka's `UnifiedLog`).
//!
//! Locking: one writer mutex serialises appends, rolls and truncation; readers
//! take no lock on the append path, only the segment list's read lock for a
//! moment and the index read locks during lookups. `fsync` runs outside the
//! writer mutex, so appenders keep writing while a group commit is in flight.
//!
//! Offsets: `log_start_offset ≤ high_watermark ≤ log_end_offset`. Readers see
//! batches below the high watermark only.

use super::checkpoint::Checkpoint;
use super::config::{Durability, LogConfig, ReadMode};
use super::notify::Notifier;
use super::open::{self, Loaded};
use super::segment::{IndexCursor, Segment};
use super::LogRead;
use crate::error::{Error, Result};
use crate::io::exists;
use crate::metrics::{Histogram, LatencySnapshot};
use crate::record::{
    set_base_offset, BatchBuilder, BatchHeader, Compression, LogRecord, Record, RecordBatch,
    NO_TIMESTAMP,
};
use bytes::Bytes;
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock};
use std::collections::VecDeque;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How many background flushes of rolled segments may be outstanding before
/// a roll waits for the oldest (the disk falling behind slows appends down
/// rather than letting unsynced segments pile up).
const MAX_PENDING_FLUSHES: usize = 4;

/// How long a group-commit leader waits for `Fsync` appends still being
/// encoded or written before it fsyncs (about one fsync on this class of
/// disk: waiting longer than an fsync takes cannot pay off).
const GATHER_WAIT: Duration = Duration::from_micros(300);

/// Counts one `Fsync` append in [`Durable::appending`] until dropped (once
/// its batch is written, before it waits for the fsync).
pub(crate) struct FsyncAppend<'a>(&'a PartitionLog);

impl Drop for FsyncAppend<'_> {
    fn drop(&mut self) {
        let mut d = self.0.durable.lock();
        d.appending = d.appending.saturating_sub(1);
        if d.appending == 0 && d.gathering {
            self.0.gather_cv.notify_one();
        }
    }
}

/// Where threads wait for the group commit's fsync to end. Every waiter is
/// woken at once when it ends: a condition variable sharing the `Durable`
/// mutex wakes them one by one instead, each after the previous one got the
/// mutex back, a chain of scheduler wake-ups (about 40 µs each here) that
/// held up the next round of appends.
#[derive(Default)]
struct RoundGate {
    /// Bumped when a leader's fsync ends or the log is poisoned; read and
    /// bumped with the `Durable` mutex's state settled (see `wait_past`).
    round: AtomicU64,
    lock: std::sync::Mutex<()>,
    cv: std::sync::Condvar,
}

impl RoundGate {
    /// The current round: read with the `Durable` mutex held, before
    /// releasing it to [`wait_past`](Self::wait_past).
    fn round(&self) -> u64 {
        self.round.load(Ordering::Acquire)
    }

    /// Blocks until the round is past `seen`. A round ended after `seen`
    /// was read is never missed: `advance` bumps the round, then takes the
    /// lock this check runs under before notifying.
    fn wait_past(&self, seen: u64) {
        let mut g = self.lock.lock().unwrap_or_else(PoisonError::into_inner);
        while self.round.load(Ordering::Acquire) == seen {
            g = self.cv.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Ends a round (after the state it announces is in `Durable`): wakes
    /// every waiter.
    fn advance(&self) {
        self.round.fetch_add(1, Ordering::AcqRel);
        drop(self.lock.lock().unwrap_or_else(PoisonError::into_inner));
        self.cv.notify_all();
    }
}

/// Rolls write the checkpoint at most this often.
const ROLL_CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

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

pub(super) struct Writer {
    cursor: IndexCursor,
    poisoned: bool,
    /// When a roll last wrote the checkpoint.
    roll_checkpoint_at: Option<Instant>,
}

/// Durability bookkeeping shared by appenders and the group-commit leader.
struct Durable {
    /// Everything below this offset is on disk.
    synced: i64,
    /// End (exclusive) of the latest `Fsync` append.
    fsync_wanted: i64,
    /// A leader is running fsync now.
    syncing: bool,
    /// That leader took background flushes of rolled segments and is
    /// waiting for them (it no longer needs the writer lock).
    holding_flushes: bool,
    /// `Fsync` appends between the start of their encoding and the end of
    /// their write: a leader about to fsync waits briefly for them, so that
    /// one fsync covers them too (see [`FsyncAppend`]).
    appending: usize,
    /// `Fsync` appends written since the last leader took its snapshot.
    fsync_written: usize,
    /// How many `Fsync` appends the last fsync covered: a leader waits
    /// (briefly) until as many are written, or none is left in flight.
    last_round: usize,
    /// A leader is waiting for appends to gather.
    gathering: bool,
    /// An fsync failed: the log is poisoned.
    failed: bool,
    /// Number of fsyncs run (for tests and metrics).
    fsyncs: u64,
    /// When the oldest unsynced append happened (for `flush.ms`).
    unsynced_since: Option<Instant>,
}

/// One partition's log: append batches, read them back by offset.
///
/// `PartitionLog` is `Send + Sync`: many threads may append and read at once.
/// Call [`close`](PartitionLog::close) for a clean shutdown; dropping it
/// without closing is treated like a crash (the next open runs recovery, and
/// loses nothing that was acknowledged).
pub struct PartitionLog {
    pub(super) dir: PathBuf,
    config: LogConfig,
    pub(super) segments: RwLock<Vec<Arc<Segment>>>,
    pub(super) writer: Mutex<Writer>,
    /// Serialises retention and compaction (both replace sealed segments).
    pub(super) maintenance: Mutex<()>,
    /// Serialises checkpoint writes (they share one temporary file) and
    /// holds the recovery point last written, which never goes back:
    /// recovery deletes segments after a short one above it.
    checkpointed: Mutex<i64>,
    /// Read-only handles: the checkpoint file last seen (inode, mtime, size).
    /// The writer rewrites it after retention and compaction, so a change
    /// means sealed segments may have been rewritten or removed.
    seen_checkpoint: Mutex<Option<(u64, i64, u64)>>,
    /// Compaction has cleaned every sealed segment below this offset.
    pub(super) cleaned_up_to: AtomicI64,
    /// Transactions seen in the log, for `read_committed` reads (built on
    /// first use).
    pub(super) txn: Mutex<super::txn::TxnIndex>,
    durable: Mutex<Durable>,
    /// Waiters for an fsync: woken all at once when one ends (or the log is
    /// poisoned).
    round_end: RoundGate,
    /// The group-commit leader's wait for appends to gather: its only
    /// waiter, so the appends it waits for wake it alone.
    gather_cv: Condvar,
    /// Background flushes of rolled segments, oldest first: each with the
    /// end (exclusive) of the segment it makes durable.
    pending_flush: Mutex<VecDeque<(i64, JoinHandle<Result<()>>)>>,
    data: Notifier,
    /// A store-wide notifier, told too when the high watermark moves.
    listener: OnceLock<Arc<Notifier>>,
    pub(super) log_start: AtomicI64,
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
        for (_, job) in self.pending_flush.get_mut().drain(..) {
            let _ = job.join();
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
        let (segments, log_start, log_end, cursor) = open::load_read_only(&dir, &config)?;
        let mut log = Self::assemble(dir, config, segments, log_start, log_end, None);
        log.read_only = true;
        log.writer.lock().cursor = cursor;
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
            dir,
            segments: RwLock::new(segments),
            writer: Mutex::new(Writer {
                cursor: IndexCursor::default(),
                poisoned: false,
                roll_checkpoint_at: None,
            }),
            maintenance: Mutex::new(()),
            // Opening wrote a checkpoint with the log end.
            checkpointed: Mutex::new(log_end),
            seen_checkpoint: Mutex::new(None),
            cleaned_up_to: AtomicI64::new(i64::MIN),
            txn: Mutex::new(super::txn::TxnIndex::default()),
            durable: Mutex::new(Durable {
                synced: log_end,
                fsync_wanted: log_end,
                syncing: false,
                holding_flushes: false,
                appending: 0,
                fsync_written: 0,
                last_round: 0,
                gathering: false,
                failed: false,
                fsyncs: 0,
                unsynced_since: None,
            }),
            round_end: RoundGate::default(),
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

    /// Whether this handle was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Read-only handles: takes in what the writing process appended,
    /// rolled or deleted since the last look. A no-op for the writer.
    ///
    /// # Errors
    /// I/O errors reading the directory or segments.
    pub fn refresh(&self) -> Result<()> {
        if !self.read_only {
            return Ok(());
        }
        let interval = u64::from(self.config.index_interval_bytes);
        let mut w = self.writer.lock();
        loop {
            let active = self.active();
            if let Some(next) = active.catch_up(self.log_end_offset(), interval, &mut w.cursor)? {
                self.log_end.store(next, Ordering::Release);
                self.high_watermark.fetch_max(next, Ordering::AcqRel);
            }
            // A roll creates the next segment named by the current end.
            let end = self.log_end_offset();
            if end <= active.base_offset()
                || !exists(
                    &*self.config.file_system,
                    &self.dir.join(super::segment::file_name(end, ".log")),
                )?
            {
                break;
            }
            let (seg, _) = Segment::open_with(&self.dir, end, &self.config, false)?;
            active.unpin();
            w.cursor = IndexCursor::default();
            let out = seg.scan_all_read_only(interval, &mut w.cursor, true)?;
            self.segments.write().push(Arc::new(seg));
            self.log_end
                .store(out.next_offset.max(end), Ordering::Release);
            self.high_watermark
                .fetch_max(out.next_offset.max(end), Ordering::AcqRel);
        }
        // Retention or compaction in the writer: drop segments whose files
        // are gone, and follow the checkpointed log start.
        let fs = &*self.config.file_system;
        let first = self.segments.read().first().cloned();
        if let Some(first) = first {
            if !exists(fs, first.log_path())? {
                let segs = self.segments.read().clone();
                let keep_last = segs.len().saturating_sub(1);
                let mut kept = Vec::with_capacity(segs.len());
                for (i, s) in segs.into_iter().enumerate() {
                    if i >= keep_last || exists(fs, s.log_path())? {
                        kept.push(s);
                    }
                }
                *self.segments.write() = kept;
            }
        }
        let ckpt = fs
            .metadata(&self.dir.join(super::checkpoint::FILE_NAME))
            .ok()
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.ino(), m.mtime_nsec(), m.len())
            });
        let changed = {
            let mut seen = self.seen_checkpoint.lock();
            let changed = *seen != ckpt;
            *seen = ckpt;
            changed
        };
        if changed {
            self.reload_rewritten_segments()?;
        }
        let first = self.segments.read().first().map_or(0, |s| s.base_offset());
        let checkpointed =
            Checkpoint::read_trusted(fs, &self.dir)?.map_or(first, |c| c.log_start_offset);
        let start = first.max(checkpointed).min(self.log_end_offset());
        self.log_start.fetch_max(start, Ordering::AcqRel);
        Ok(())
    }

    /// Read-only handles: follows the writer's compaction and retention.
    /// A sealed segment whose `.log` is gone is dropped; one whose size
    /// changed (compaction rewrote it: a rewrite removes records, so the
    /// size changes) is replaced by a handle on the new file. Readers
    /// holding the old one keep valid bytes.
    fn reload_rewritten_segments(&self) -> Result<()> {
        let fs = &*self.config.file_system;
        let segs = self.segments.read().clone();
        let last = segs.len().saturating_sub(1);
        let mut kept = Vec::with_capacity(segs.len());
        let mut changed = false;
        for (i, seg) in segs.into_iter().enumerate() {
            if i == last {
                kept.push(seg);
                continue;
            }
            let size = match fs.metadata(seg.log_path()) {
                Ok(m) => m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    changed = true;
                    continue;
                }
                Err(e) => return Err(Error::io("stat segment", seg.log_path(), e)),
            };
            if size == seg.size() {
                kept.push(seg);
                continue;
            }
            changed = true;
            let base = seg.base_offset();
            let fresh = match Segment::open_lazy(&self.dir, base, &self.config, false)? {
                Some(s) => s,
                None => {
                    let (s, _) = Segment::open_with(&self.dir, base, &self.config, false)?;
                    s.unpin();
                    s
                }
            };
            kept.push(Arc::new(fresh));
        }
        if changed {
            *self.segments.write() = kept;
        }
        Ok(())
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

    /// Number of fsyncs the group commit has run since open.
    pub fn fsync_count(&self) -> u64 {
        self.durable.lock().fsyncs
    }

    pub(super) fn active(&self) -> Arc<Segment> {
        let segs = self.segments.read();
        match segs.last() {
            Some(s) => Arc::clone(s),
            None => unreachable_no_segment(),
        }
    }

    /// Encodes `records` as one batch and appends it.
    ///
    /// # Errors
    /// As [`PartitionLog::append`].
    pub fn append_records(
        &self,
        records: &[Record],
        compression: Compression,
        durability: Durability,
    ) -> Result<AppendInfo> {
        if records.is_empty() {
            return Err(Error::InvalidBatch {
                reason: "no records",
            });
        }
        // Records without a timestamp get the append time (Kafka's producer
        // stamps "now" at send); copies are made only when some need it.
        let stamped: Vec<Record>;
        let records = if records.iter().any(|r| r.timestamp == NO_TIMESTAMP) {
            let now = super::now_ms();
            stamped = records
                .iter()
                .map(|r| {
                    let mut r = r.clone();
                    if r.timestamp == NO_TIMESTAMP {
                        r.timestamp = now;
                    }
                    r
                })
                .collect();
            &stamped[..]
        } else {
            records
        };
        let appending = self.fsync_append(durability);
        // Sized up front: growing a large batch's buffer re-copies it.
        let estimate: usize = records
            .iter()
            .map(|r| {
                let len = |b: &Option<Bytes>| b.as_ref().map_or(0, Bytes::len);
                let headers: usize = r
                    .headers
                    .iter()
                    .map(|h| h.key.len() + len(&h.value) + 10)
                    .sum();
                len(&r.key) + len(&r.value) + headers + 24
            })
            .sum();
        let mut b = BatchBuilder::with_capacity(compression, estimate);
        for r in records {
            b.push(r);
        }
        self.append_built(b, durability, appending)
    }

    /// Appends the batch `batch` builds, assigning its offsets: the fast way
    /// to append records from borrowed parts ([`BatchBuilder::push_parts`]).
    /// The batch is built (records copied once, CRC computed once) and
    /// written; since this crate built it, it is not parsed, CRC-checked or
    /// walked again, as [`append`](Self::append) does with bytes from outside.
    ///
    /// # Errors
    /// [`Error::InvalidBatch`] for an empty builder; otherwise as
    /// [`PartitionLog::append`].
    pub fn append_batch(&self, batch: BatchBuilder, durability: Durability) -> Result<AppendInfo> {
        if batch.is_empty() {
            return Err(Error::InvalidBatch {
                reason: "no records",
            });
        }
        let appending = self.fsync_append(durability);
        self.append_built(batch, durability, appending)
    }

    fn append_built(
        &self,
        batch: BatchBuilder,
        durability: Durability,
        appending: Option<FsyncAppend<'_>>,
    ) -> Result<AppendInfo> {
        let bytes = batch.build();
        let mut buf = bytes.try_into_mut().unwrap_or_else(|b| b.as_ref().into());
        let headers = parse_headers(&buf, self.config.max_message_bytes, false)?;
        self.append_validated(&mut buf, &headers, durability, appending)
    }

    /// Counts an `Fsync` append for group commit until the guard drops.
    pub(crate) fn fsync_append(&self, durability: Durability) -> Option<FsyncAppend<'_>> {
        (durability == Durability::Fsync).then(|| {
            self.durable.lock().appending += 1;
            FsyncAppend(self)
        })
    }

    /// Appends one or more whole record batches (concatenated in `batches`),
    /// assigning offsets: the log overwrites each batch's base offset (a field
    /// outside the CRC). Everything is written with one `write`.
    ///
    /// Each batch is checked first: header, CRC, size against
    /// `max.message.bytes`, codec, and every record decodes with offset
    /// deltas 0, 1, 2, …. A refused append changes nothing.
    ///
    /// # Errors
    /// [`Error::RecordTooLarge`], [`Error::InvalidBatch`], decode errors for
    /// a malformed batch; [`Error::Poisoned`] after an earlier fsync failure;
    /// [`Error::DiskFull`] or [`Error::Io`] when the write fails (the file is
    /// cut back and nothing is appended); [`Error::Closed`].
    pub fn append(&self, batches: &mut [u8], durability: Durability) -> Result<AppendInfo> {
        let appending = self.fsync_append(durability);
        let headers = parse_headers(batches, self.config.max_message_bytes, true)?;
        let mut pos = 0usize;
        for h in &headers {
            let bytes = batches.get(pos..pos + h.size()).unwrap_or_default();
            if h.compression()? == Compression::None {
                // In place, building no record.
                crate::record::check_uncompressed_records(bytes, h)?;
            } else {
                // parse_headers checked the CRC: decompress and decode the
                // records without computing it a second time.
                validate_records(&RecordBatch::verified(Bytes::copy_from_slice(bytes))?)?;
            }
            pos += h.size();
        }
        self.append_validated(batches, &headers, durability, appending)
    }

    /// Appends batches the caller has validated (headers parsed, CRC checked),
    /// waiting for the durability asked for.
    pub(crate) fn append_validated(
        &self,
        batches: &mut [u8],
        headers: &[BatchHeader],
        durability: Durability,
        appending: Option<FsyncAppend<'_>>,
    ) -> Result<AppendInfo> {
        let written = self.write_validated(batches, headers, durability);
        drop(appending);
        let (info, sync) = written?;
        if sync {
            self.sync_to(info.last_offset + 1)?;
        }
        Ok(info)
    }

    /// Writes validated batches; returns whether the caller must then
    /// [`sync_to`](Self::sync_to) the end of the append (for `Fsync`, or
    /// because `flush.messages` was reached). Splitting the two lets a caller
    /// release its own locks before waiting for the group commit.
    pub(crate) fn write_validated(
        &self,
        batches: &mut [u8],
        headers: &[BatchHeader],
        durability: Durability,
    ) -> Result<(AppendInfo, bool)> {
        self.check_writable()?;
        let started = Instant::now();
        let mut w = self.writer.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        if w.poisoned || self.durable.lock().failed {
            return Err(Error::Poisoned {
                path: self.dir.clone(),
            });
        }
        let base = self.log_end.load(Ordering::Acquire);
        let span: i64 = headers
            .iter()
            .map(|h| i64::from(h.last_offset_delta) + 1)
            .sum();
        let max_ts = headers.iter().map(|h| h.max_timestamp).max().unwrap_or(-1);
        let mut active = self.active();
        if self.should_roll(&active, batches.len() as u64, max_ts, base + span - 1) {
            active = self.roll(&mut w, base)?;
        }
        let mut next = base;
        let mut pos = 0usize;
        for h in headers {
            if let Some(b) = batches.get_mut(pos..pos + h.size()) {
                set_base_offset(b, next);
            }
            next += i64::from(h.last_offset_delta) + 1;
            pos += h.size();
        }
        let stamped: Vec<BatchHeader> = {
            let mut o = base;
            headers
                .iter()
                .map(|h| {
                    let mut h = *h;
                    h.base_offset = o;
                    o += i64::from(h.last_offset_delta) + 1;
                    h
                })
                .collect()
        };
        if let Err((err, cut_ok)) = active.append(
            batches,
            &stamped,
            &mut w.cursor,
            u64::from(self.config.index_interval_bytes),
        ) {
            if !cut_ok {
                w.poisoned = true;
            }
            return Err(err);
        }
        self.log_end.store(next, Ordering::Release);
        let flush_now = {
            let mut d = self.durable.lock();
            if durability == Durability::Fsync {
                d.fsync_wanted = next;
                d.fsync_written += 1;
                if d.gathering && d.fsync_written >= d.last_round {
                    self.gather_cv.notify_one();
                }
            }
            d.unsynced_since.get_or_insert_with(Instant::now);
            self.publish_high_watermark(&d);
            // flush.messages: offsets are messages, so the unsynced count is
            // the distance from the synced point.
            self.config
                .flush_messages
                .is_some_and(|n| (next - d.synced) as u64 >= n)
        };
        drop(w);
        self.append_latency.record(started.elapsed());
        let info = AppendInfo {
            base_offset: base,
            last_offset: next - 1,
            max_timestamp: max_ts,
            batches: headers.len(),
        };
        Ok((info, durability == Durability::Fsync || flush_now))
    }

    fn should_roll(&self, active: &Segment, incoming: u64, max_ts: i64, last_offset: i64) -> bool {
        let size = active.size();
        if size == 0 {
            return false;
        }
        let c = &self.config;
        size + incoming > u64::from(c.segment_bytes)
            || (active.first_batch_timestamp() >= 0
                && max_ts.saturating_sub(active.first_batch_timestamp())
                    > super::millis_i64(c.segment_ms))
            || active.index_full()
            || last_offset - active.base_offset() > i64::from(i32::MAX)
    }

    /// Seals the active segment (indexes trimmed) and starts a new one at
    /// `base`. The sealed segment is made durable in the background (Kafka
    /// flushes a rolled segment asynchronously too); until then it lies
    /// above the recovery point, so recovery after a crash scans it and cuts
    /// a torn tail there. `Fsync` appends wait for that flush (see
    /// [`sync_to`](Self::sync_to)).
    pub(super) fn roll(&self, w: &mut Writer, base: i64) -> Result<Arc<Segment>> {
        if w.poisoned {
            // A failed roll may have sealed the active segment already.
            return Err(Error::Poisoned {
                path: self.dir.clone(),
            });
        }
        let old = self.active();
        // Kept open through the roll: not evicted between sealing it and
        // marking it sealed.
        let _hold = match old.hold() {
            Ok(h) => h,
            Err(e) => {
                self.poison(w);
                return Err(e);
            }
        };
        let durable_to = match self.settle_rolled(false, old.base_offset()) {
            Ok(durable_to) => durable_to,
            Err(e) => {
                self.poison(w);
                return Err(e);
            }
        };
        let flush = match old.seal_deferred() {
            Ok(flush) => flush,
            Err(e) => {
                self.poison(w);
                return Err(e);
            }
        };
        let seg = match Segment::create(&self.dir, base, &self.config, self.map_capacity()) {
            Ok(seg) => Arc::new(seg),
            Err(e) => {
                // Nothing named by `base` is part of the log yet: remove what
                // the failed create left. Left behind, it would fail every
                // later roll.
                if super::segment::remove_files(&*self.config.file_system, &self.dir, base).is_err()
                {
                    self.poison(w);
                }
                return Err(e);
            }
        };
        match std::thread::Builder::new()
            .name("kafkalite-flush".into())
            .spawn(flush)
        {
            Ok(job) => self.pending_flush.lock().push_back((base, job)),
            Err(_) => {
                // No thread: flush here (the job was dropped unrun).
                let flushed = old
                    .seal()
                    .and_then(|()| crate::io::fsync_dir(&*self.config.file_system, &self.dir));
                if let Err(e) = flushed {
                    self.poison(w);
                    return Err(e);
                }
            }
        }
        old.unpin();
        self.segments.write().push(Arc::clone(&seg));
        w.cursor = IndexCursor::default();
        let recovery_point = {
            let mut d = self.durable.lock();
            let before = d.synced;
            if let Some(to) = durable_to {
                d.synced = d.synced.max(to);
            }
            self.publish_high_watermark(&d);
            (d.synced > before).then_some(d.synced)
        };
        // The recovery point moved: checkpoint it, at most once a second
        // from rolls (Kafka checkpoints it on a timer). A later one only
        // means recovery scans a little more after a crash.
        if let Some(rp) = recovery_point {
            if w.roll_checkpoint_at
                .is_none_or(|t| t.elapsed() >= ROLL_CHECKPOINT_INTERVAL)
            {
                self.checkpoint_with(rp)?;
                w.roll_checkpoint_at = Some(Instant::now());
            }
        }
        crate::event!(
            "rolled segment in {}: new segment at offset {base}, sealed {} bytes",
            self.dir.display(),
            old.size()
        );
        Ok(seg)
    }

    /// After a failed fsync (or a step that may have left the log unsafe to
    /// extend): appends and fsyncs fail until the log is reopened, and
    /// waiting `Fsync` appenders are woken to fail too.
    fn poison(&self, w: &mut Writer) {
        w.poisoned = true;
        self.fail();
    }

    /// Marks the log failed (poisoned) and wakes every thread waiting on
    /// the group commit, to fail too.
    fn fail(&self) {
        crate::warn_event!("log {} poisoned until reopened", self.dir.display());
        self.durable.lock().failed = true;
        self.round_end.advance();
        self.gather_cv.notify_all();
    }

    /// Releases `d` until the group commit's current round ends (or the log
    /// is poisoned), then takes it back.
    fn wait_round_end<'a>(&'a self, d: MutexGuard<'a, Durable>) -> MutexGuard<'a, Durable> {
        let seen = self.round_end.round();
        drop(d);
        self.round_end.wait_past(seen);
        self.durable.lock()
    }

    /// With the writer lock held: joins the background flushes of rolled
    /// segments that have finished, oldest first (all of them when `all`;
    /// the oldest ones, waiting, while more than [`MAX_PENDING_FLUSHES`] are
    /// outstanding). Returns how far the log is then known to be durable:
    /// to the end of the last segment joined, or to `active_base` once none
    /// is pending; `None` when nothing new is known (or a group-commit
    /// leader holds older flushes).
    fn settle_rolled(&self, all: bool, active_base: i64) -> Result<Option<i64>> {
        let mut pending = self.pending_flush.lock();
        let mut joined = None;
        while let Some((_, job)) = pending.front() {
            if !(all || job.is_finished() || pending.len() > MAX_PENDING_FLUSHES) {
                break;
            }
            let Some((end, job)) = pending.pop_front() else {
                break;
            };
            self.join_flush(job)?;
            joined = Some(end);
        }
        let d = self.durable.lock();
        if d.holding_flushes || d.failed {
            return Ok(None);
        }
        Ok(if pending.is_empty() {
            Some(active_base)
        } else {
            joined
        })
    }

    /// Makes every sealed segment durable (waiting for the background
    /// flushes of rolled ones) and writes a checkpoint whose recovery point
    /// covers them all. Compaction calls this before rewriting them.
    pub(super) fn sync_sealed(&self) -> Result<()> {
        let settled = {
            let _w = self.writer.lock();
            let base = self.active().base_offset();
            let settled = self.settle_rolled(true, base)?;
            if let Some(to) = settled {
                let mut d = self.durable.lock();
                d.synced = d.synced.max(to);
                self.publish_high_watermark(&d);
            }
            settled.is_some()
        };
        if !settled {
            // A group-commit leader holds older flushes: sync everything.
            self.flush()?;
        }
        self.checkpoint()
    }

    /// Waits for every background flush of a rolled segment (for the fuzz
    /// harness, which attributes a flush's injected failure to the operation
    /// that armed it).
    #[cfg(any(test, fuzzing))]
    pub(crate) fn wait_for_rolled_flushes(&self) -> Result<()> {
        let _w = self.writer.lock();
        let base = self.active().base_offset();
        self.settle_rolled(true, base).map(|_| ())
    }

    /// Waits for a background flush of a rolled segment. A failure poisons
    /// the log: a failed fsync is never retried.
    fn join_flush(&self, job: JoinHandle<Result<()>>) -> Result<()> {
        let result = job.join().unwrap_or_else(|_| {
            Err(Error::io(
                "fsync",
                &self.dir,
                std::io::Error::other("segment flush thread panicked"),
            ))
        });
        if result.is_err() {
            self.fail();
        }
        result
    }

    fn map_capacity(&self) -> usize {
        self.config.segment_bytes as usize + self.config.max_message_bytes as usize
    }

    fn publish_high_watermark(&self, d: &Durable) {
        let end = self.log_end.load(Ordering::Acquire);
        let hw = if d.fsync_wanted > d.synced {
            d.synced
        } else {
            end
        };
        let prev = self.high_watermark.fetch_max(hw, Ordering::AcqRel);
        if hw > prev {
            self.notify_readers();
        }
    }

    fn notify_readers(&self) {
        self.data.notify();
        if let Some(l) = self.listener.get() {
            l.notify();
        }
    }

    /// Also notify `listener` whenever new data becomes readable (one
    /// listener per log; later calls are ignored).
    pub(crate) fn set_listener(&self, listener: Arc<Notifier>) {
        let _ = self.listener.set(listener);
    }

    /// Blocks until every record below `target` is on disk, sharing one
    /// fsync among all threads waiting at the same time (group commit).
    pub(crate) fn sync_to(&self, target: i64) -> Result<()> {
        self.check_writable()?;
        let mut d = self.durable.lock();
        loop {
            if d.failed {
                return Err(Error::Poisoned {
                    path: self.dir.clone(),
                });
            }
            if d.synced >= target {
                return Ok(());
            }
            if !d.syncing {
                break;
            }
            d = self.wait_round_end(d);
        }
        d.syncing = true;
        // Group commit: appends still being encoded or written want this
        // fsync too, and so, most likely, do as many appenders as the last
        // fsync covered. Give them a moment (at most about one fsync), so
        // that one fsync covers them all.
        let gather = |d: &Durable| !d.failed && (d.appending > 0 || d.fsync_written < d.last_round);
        if gather(&d) {
            d.gathering = true;
            let deadline = Instant::now() + GATHER_WAIT;
            while gather(&d) && !self.gather_cv.wait_until(&mut d, deadline).timed_out() {}
            d.gathering = false;
        }
        drop(d);
        // Everything written so far is covered by this fsync and the
        // background flushes of rolled segments still pending (every earlier
        // one was joined, and a failure poisoned the log).
        let (segment, end, rolled) = {
            let _w = self.writer.lock();
            (self.active(), self.log_end.load(Ordering::Acquire), {
                let taken = std::mem::take(&mut *self.pending_flush.lock());
                let mut d = self.durable.lock();
                d.holding_flushes = !taken.is_empty();
                d.last_round = std::mem::take(&mut d.fsync_written);
                taken
            })
        };
        let fsync_started = Instant::now();
        let result = rolled
            .into_iter()
            .try_for_each(|(_, job)| self.join_flush(job))
            .and_then(|()| segment.sync());
        self.fsync_latency.record(fsync_started.elapsed());
        let mut d = self.durable.lock();
        d.syncing = false;
        d.holding_flushes = false;
        d.fsyncs += 1;
        let out = match result {
            // Poisoned meanwhile (say, a rolled segment's flush failed while
            // this leader gathered): what this fsync covers may not all be
            // durable. Acknowledge nothing.
            Ok(()) if d.failed => Err(Error::Poisoned {
                path: self.dir.clone(),
            }),
            Ok(()) => {
                d.synced = d.synced.max(end);
                if d.synced >= self.log_end_offset() {
                    d.unsynced_since = None;
                }
                self.publish_high_watermark(&d);
                Ok(())
            }
            Err(e) => {
                // Never retry a failed fsync: the page cache may have dropped
                // the dirty pages (fsyncgate). Poison until reopen.
                d.failed = true;
                crate::warn_event!(
                    "fsync of {} failed, log poisoned until reopened: {e}",
                    self.dir.display()
                );
                Err(e)
            }
        };
        drop(d);
        self.round_end.advance();
        out
    }

    /// fsyncs everything appended so far.
    ///
    /// # Errors
    /// [`Error::Poisoned`] or the fsync's error (which poisons the log).
    pub fn flush(&self) -> Result<()> {
        self.sync_to(self.log_end_offset())
    }

    /// Runs the `flush.ms` policy: fsyncs if unsynced data is older than it.
    /// Returns whether it flushed. The store's background thread calls this.
    ///
    /// # Errors
    /// As [`PartitionLog::flush`].
    pub fn flush_if_due(&self, now: Instant) -> Result<bool> {
        let Some(limit) = self.config.flush_ms else {
            return Ok(false);
        };
        let due = self
            .durable
            .lock()
            .unsynced_since
            .is_some_and(|t| now.saturating_duration_since(t) >= limit);
        if due {
            self.flush()?;
        }
        Ok(due)
    }

    /// Reads whole batches starting with the one holding `offset`, up to
    /// about `max_bytes` (at least one batch if any is available), below the
    /// high watermark. An empty result means `offset` is at the high
    /// watermark. Batches are zero-copy slices of the mapped segment (or one
    /// `pread` copy in [`ReadMode::Pread`](crate::ReadMode::Pread)), each
    /// CRC-checked; the bytes stay valid after the segment is deleted.
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] below the log start or past the log end;
    /// [`Error::Corrupt`] when a stored batch fails its checks.
    pub fn read(&self, offset: i64, max_bytes: usize) -> Result<LogRead> {
        self.refresh()?;
        match self.read_segments(offset, max_bytes) {
            // The writer may have rewritten a segment between the refresh
            // and this read: look again once before calling it damage.
            Err(Error::Corrupt { .. }) if self.read_only => {
                {
                    let _w = self.writer.lock();
                    self.reload_rewritten_segments()?;
                }
                self.read_segments(offset, max_bytes)
            }
            other => other,
        }
    }

    fn read_segments(&self, offset: i64, max_bytes: usize) -> Result<LogRead> {
        let hw = self.high_watermark();
        let start = self.log_start_offset();
        let end = self.log_end_offset();
        if offset < start || offset > end {
            return Err(Error::OffsetOutOfRange {
                requested: offset,
                start,
                end,
            });
        }
        let mut batches = Vec::new();
        if offset < hw {
            // Walk segments from the one holding `offset`, looking each up
            // by base offset (retention may drop older ones meanwhile).
            let mut after = None;
            loop {
                let (seg, next_base) = {
                    let all = self.segments.read();
                    let i = match after {
                        None => all
                            .partition_point(|s| s.base_offset() <= offset)
                            .saturating_sub(1),
                        Some(b) => all.partition_point(|s| s.base_offset() <= b),
                    };
                    let Some(seg) = all.get(i) else { break };
                    (Arc::clone(seg), all.get(i + 1).map(|n| n.base_offset()))
                };
                after = Some(seg.base_offset());
                let limit = seg.size();
                // The base offset is outside the CRC: a batch claiming
                // offsets past its segment is damaged, not "later".
                let seg_end = next_base.unwrap_or_else(|| self.log_end_offset());
                let found = seg.read_from(offset, max_bytes, limit, hw, |pos, h| {
                    if h.last_offset() >= seg_end {
                        return Err(Error::corrupt(
                            seg.log_path(),
                            pos,
                            Error::InvalidField {
                                what: "batch base offset",
                                value: h.base_offset,
                            },
                        ));
                    }
                    Ok(())
                })?;
                if let Some(mut b) = found {
                    // A read landing inside a batch (a point read) gets the
                    // batch's record positions, so it need not walk every
                    // record before its target.
                    if let Some(first) = b.first_mut() {
                        if first.base_offset() < offset {
                            *first = super::positions_cache::attach(seg.id(), first.clone());
                        }
                    }
                    batches = b;
                }
                if !batches.is_empty() || seg.base_offset() >= hw {
                    break;
                }
            }
        }
        Ok(LogRead::new(offset, batches, hw, start))
    }

    /// The record at `offset` (a point read): `None` at the high
    /// watermark, for a control record, or where compaction removed it. The
    /// batch holding it is read as by [`read`](Self::read) (CRC-checked once
    /// per process); an uncompressed batch is entered at the nearest known
    /// record start, an lz4 batch decompressed only as far as the record.
    ///
    /// # Errors
    /// As [`PartitionLog::read`], and the record's decoding.
    pub fn read_record(&self, offset: i64) -> Result<Option<LogRecord>> {
        let read = self.read(offset, 1)?;
        match read.batches().first() {
            Some(b) if !b.header().is_control() => b.record_at(offset),
            _ => Ok(None),
        }
    }

    /// The earliest record whose timestamp is ≥ `timestamp`, as
    /// `(offset, timestamp)`, below the high watermark (Kafka's
    /// `offsetsForTimes`). `None` when every record is older.
    ///
    /// # Errors
    /// [`Error::Corrupt`] when a stored batch fails its checks.
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>> {
        let hw = self.high_watermark();
        let start = self.log_start_offset();
        let segs: Vec<Arc<Segment>> = self.segments.read().clone();
        for seg in segs {
            if seg.max_timestamp() < timestamp && seg.base_offset() < hw {
                // The active segment's max timestamp is exact; sealed ones
                // come from their time index's last entry.
                continue;
            }
            if let Some(found) = seg.find_offset_by_timestamp(timestamp, start, hw)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// Blocks until the high watermark passes `offset` or `timeout` elapses;
    /// returns whether it did. Appends wake waiters (no polling).
    pub fn wait_for(&self, offset: i64, timeout: Duration) -> bool {
        let deadline = crate::deadline_after(timeout);
        loop {
            let seen = self.data.seq();
            if self.high_watermark() > offset {
                return true;
            }
            if self.closed.load(Ordering::Acquire) || !self.data.wait_past(seen, deadline) {
                return self.high_watermark() > offset;
            }
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

    pub(super) fn checkpoint_with(&self, recovery_point: i64) -> Result<()> {
        self.write_checkpoint(Some(recovery_point))
    }

    /// Writes the checkpoint with `recovery_point` (the synced offset when
    /// `None`, read under the checkpoint lock), never below the one last
    /// written: a writer that read an older synced offset must not move the
    /// recovery point back behind segments that are durable (and perhaps
    /// compacted, so legitimately short).
    fn write_checkpoint(&self, recovery_point: Option<i64>) -> Result<()> {
        let mut last = self.checkpointed.lock();
        let rp = recovery_point
            .unwrap_or_else(|| self.durable.lock().synced)
            .max(*last);
        Checkpoint {
            recovery_point: rp,
            log_start_offset: self.log_start_offset(),
            segments: Some(
                self.segments
                    .read()
                    .iter()
                    .map(|s| s.base_offset())
                    .collect(),
            ),
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
        if w.poisoned || self.durable.lock().failed {
            return Err(Error::Poisoned {
                path: self.dir.clone(),
            });
        }
        self.settle_rolled(true, i64::MIN)?;
        {
            // A group-commit leader may still wait for flushes it took.
            let mut d = self.durable.lock();
            while d.holding_flushes {
                d = self.wait_round_end(d);
            }
            if d.failed {
                return Err(Error::Poisoned {
                    path: self.dir.clone(),
                });
            }
        }
        let active = self.active();
        {
            let _hold = active.hold()?;
            active.seal()?;
            // Sealed for good: a later reopen of its files (by a reader) is
            // read-only.
            active.unpin();
        }
        {
            let mut d = self.durable.lock();
            d.synced = d.synced.max(self.log_end_offset());
            self.publish_high_watermark(&d);
        }
        self.checkpoint_with(self.log_end_offset())?;
        open::write_clean_shutdown_marker(&*self.config.file_system, &self.dir)?;
        // Nothing writes through this handle any more: the directory can be
        // opened again while others still hold it (their reads keep working;
        // a new handle never cuts a file below what this one showed).
        drop(w);
        self.lock.lock().take();
        Ok(())
    }
}

/// The segment list is never empty: open creates one and retention keeps one.
#[cold]
fn unreachable_no_segment() -> ! {
    panic!("partition log without segments")
}

/// Parses the headers of the concatenated batches in `buf`, checking sizes,
/// codecs, counts and (when `check_crc`; batches this crate just built are
/// known good) CRCs.
pub(crate) fn parse_headers(
    buf: &[u8],
    max_message_bytes: u32,
    check_crc: bool,
) -> Result<Vec<BatchHeader>> {
    if buf.is_empty() {
        return Err(Error::InvalidBatch {
            reason: "no batches",
        });
    }
    let mut out = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let h = BatchHeader::parse(rest)?;
        let size = h.size();
        if size > max_message_bytes as usize {
            return Err(Error::RecordTooLarge {
                size,
                max: max_message_bytes as usize,
            });
        }
        let bytes = rest.get(..size).ok_or(Error::Truncated {
            what: "batch",
            needed: size,
            available: rest.len(),
        })?;
        let actual = if check_crc {
            crate::record::compute_crc(bytes)
        } else {
            h.crc
        };
        if actual != h.crc {
            return Err(Error::ChecksumMismatch {
                expected: h.crc,
                actual,
            });
        }
        h.compression()?;
        if h.records_count < 1
            || h.last_offset_delta < 0
            || h.last_offset_delta != h.records_count - 1
        {
            return Err(Error::InvalidBatch {
                reason: "records count must be positive and equal last offset delta + 1",
            });
        }
        out.push(h);
        rest = rest.get(size..).unwrap_or_default();
    }
    Ok(out)
}

/// Decodes every record of `batch`, checking offset deltas run 0, 1, 2, ….
fn validate_records(batch: &RecordBatch) -> Result<()> {
    for (expected, r) in (batch.base_offset()..).zip(batch.records()?) {
        if r?.offset != expected {
            return Err(Error::InvalidBatch {
                reason: "record offset deltas must run 0, 1, 2, ...",
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Compression, Record};

    /// A log poisoned while a group-commit leader gathers appends (say, a
    /// rolled segment's background flush failed) acknowledges nothing, even
    /// though the leader's own fsync succeeds.
    #[test]
    fn a_leader_poisoned_while_gathering_acknowledges_nothing() {
        // The leader gathers for at most `GATHER_WAIT`: on a loaded machine
        // this thread may not see it gathering in time. Such an attempt (the
        // leader fsyncs and returns unpoisoned) is retried on a fresh log.
        for attempt in 1.. {
            let dir = tempfile::tempdir().unwrap();
            let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
            let records = [Record::new("v")];
            log.append_records(&records, Compression::None, Durability::Written)
                .unwrap();
            // An `Fsync` append in flight: the leader waits for it to gather.
            log.durable.lock().appending = 1;
            let poisoned = std::thread::scope(|s| {
                let leader = s.spawn(|| log.sync_to(log.log_end_offset()));
                // Seen gathering and poisoned under one lock: the leader
                // cannot leave its gather wait in between.
                let poisoned = loop {
                    let mut d = log.durable.lock();
                    if d.gathering {
                        d.failed = true;
                        break true;
                    }
                    if leader.is_finished() {
                        break false;
                    }
                    drop(d);
                    std::thread::yield_now();
                };
                log.round_end.advance();
                log.gather_cv.notify_all();
                let result = leader.join().unwrap();
                if poisoned {
                    assert!(matches!(result, Err(Error::Poisoned { .. })), "{result:?}");
                } else {
                    assert!(result.is_ok(), "{result:?}");
                }
                poisoned
            });
            if !poisoned {
                assert!(attempt < 1000, "never saw the leader gathering");
                continue;
            }
            let d = log.durable.lock();
            assert_eq!(d.synced, 0, "nothing acknowledged as durable");
            assert_eq!(d.fsyncs, 1, "the leader's fsync ran");
            return;
        }
    }

    /// Followers waiting on a leader are all woken when its round ends, and
    /// every one of their appends is durable when they return.
    #[test]
    fn every_follower_returns_with_its_append_durable() {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
        let records = [Record::new("v"), Record::new("w")];
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    for _ in 0..50 {
                        let info = log
                            .append_records(&records, Compression::None, Durability::Fsync)
                            .unwrap();
                        assert!(log.durable.lock().synced > info.last_offset);
                    }
                });
            }
        });
        assert_eq!(log.log_end_offset(), 800);
        // 400 appends shared their fsyncs.
        assert!(log.fsync_count() < 400, "{} fsyncs", log.fsync_count());
    }
}
