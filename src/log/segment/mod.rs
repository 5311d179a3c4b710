//! One segment: a `.log` of record batches with its `.index` and
//! `.timeindex`, all named by the 20-digit base offset
//! ([`files`](super::files) owns the names).
//!
//! Invariants:
//! - `size` is the published length of the `.log`: every byte below it is a
//!   whole, CRC-checked batch (written by this process or recovered), and
//!   readers never look past it. Bytes below it never change.
//! - Only the partition's writer (holding the log's writer lock) appends,
//!   truncates or rolls a segment.
//! - Index entries only point at batch starts below `size`.
//! - The `.log` ends at `size`, except the active segment of a writer
//!   that makes durable appends: it may end in zeros written ahead of
//!   them (up to `zeroed_end`), which sealing cuts off and recovery after
//!   a crash recognises as the end (see `Segment::append`).
//!
//! Open files are bounded: a sealed segment found at open keeps only its base
//! offset and size, and opens, checks and maps its files on first use.
//! Opened segments sit in the store's [`SegmentCache`]; an evicted segment
//! drops its descriptors and maps, while bytes already handed to readers
//! keep their own mapping alive. A writable active segment is in the cache
//! too, so an idle partition holds no descriptor and no map: it is evicted
//! only while nobody uses its files, after an fdatasync of what it has not
//! synced yet (a failure is kept and reported by the segment's next sync,
//! never retried) and with its indexes trimmed to their entries; its next
//! use reopens it for appends. The active segment of a read-only handle
//! (whose indexes may live in memory only) is pinned.
//!
//! The jobs live in: `open` (creating and opening, and the files' first
//! use), `cache` (the open-segment cache), `read` (batches by
//! position and offset, time lookups), `verified` (batches whose CRC was
//! checked), `append` (writes, indexing, sealing and syncing), `recover`
//! (scans that check and index what is on disk).

mod append;
mod cache;
mod open;
mod read;
mod read_buffer;
mod recover;
mod verified;
mod writeback;

pub(crate) use append::{AppendFailure, IndexCursor};
pub(crate) use cache::{SegmentCache, OPEN_SEGMENTS_DEFAULT};

use super::config::{LogConfig, ReadMode};
use super::files::SegmentPaths;
use super::index::{OffsetIndex, TimeIndex};
use crate::error::{Corruption, Error, Result};
use crate::io::FsHandle;
use bytes::Bytes;
use cache::Slot;
use parking_lot::RwLock;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// A segment's open files: the `.log` and its two indexes.
struct Files {
    file: File,
    /// Positions of batches whose CRC was verified, so no read re-checks
    /// one. Held with the files, so an evicted segment frees it; all sets
    /// together stay within `verified::BUDGET`.
    verified: verified::Verified,
    /// The `.log` mapped (mmap mode), possibly past `size` for the active
    /// segment so appends need no remap.
    map: RwLock<Bytes>,
    offset_index: RwLock<OffsetIndex>,
    time_index: RwLock<TimeIndex>,
}

impl Files {
    fn new(file: File, offset_index: OffsetIndex, time_index: TimeIndex) -> Files {
        Files {
            file,
            verified: verified::Verified::default(),
            map: RwLock::new(Bytes::new()),
            offset_index: RwLock::new(offset_index),
            time_index: RwLock::new(time_index),
        }
    }

    /// A sealed segment's indexes are only read: keep their maps, close
    /// their descriptors.
    fn release_index_files(&self) {
        self.offset_index.write().file.release_file();
        self.time_index.write().file.release_file();
    }
}

/// How [`Segment::open`] opens an existing segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Open {
    /// Files opened now, writable (the caller may recover and append).
    /// Indexes that are missing or fail their checks are reported by
    /// [`Opened::indexes_ok`]; the caller rebuilds them.
    Eager,
    /// Files opened now, read-only; nothing is ever written, and missing
    /// indexes are rebuilt in memory.
    ReadOnly,
    /// A sealed segment whose files open on first use (writable or not).
    /// When its index files are missing or sized wrong it is opened now
    /// instead (as `Eager` or `ReadOnly`), for the caller to rebuild them.
    /// Index contents are checked when the files open, and rebuilt then if
    /// they fail.
    Lazy {
        /// Whether the files may be written when they open.
        writable: bool,
    },
    /// A sealed segment whose indexes are missing or stale (a compacted
    /// copy): rebuilt, trimmed and synced now. A damaged batch is
    /// corruption (sealed segments are never cut).
    Rebuilt,
}

/// An opened segment.
pub(crate) struct Opened {
    pub(crate) segment: Segment,
    /// Its indexes passed their checks (true for a deferred open: they are
    /// checked when the files open).
    pub(crate) indexes_ok: bool,
    /// A lazy open: the files open on first use.
    pub(crate) deferred: bool,
}

pub(crate) struct Segment {
    /// Process-unique: keys this segment's entries in the record-positions
    /// cache (a rewritten segment is a new object with a new id).
    id: u64,
    base_offset: i64,
    paths: SegmentPaths,
    fs: FsHandle,
    read_mode: ReadMode,
    /// Files may be written (false for read-only access).
    writable: bool,
    /// For indexing appends and rebuilding untrusted indexes.
    index_interval: u64,
    index_bytes: u32,
    /// Start disk writes in the background every this many appended bytes
    /// (0: never); see `LogConfig::writeback_bytes`.
    writeback_bytes: u64,
    size: AtomicU64,
    /// Where the `.log`'s disk blocks reserved past its end stop
    /// (`reserve_ahead`; 0 when none is known, `u64::MAX` when reserving
    /// failed and is not tried again for this segment). Written by appends,
    /// which the log's writer lock serialises.
    reserved_end: AtomicU64,
    /// Where the zeros that durable appends wrote past the `.log`'s
    /// published end stop (the file's length then), 0 when the file ends
    /// at `size`, `u64::MAX` when writing them failed and is not tried
    /// again for this segment (`Segment::zeros_ahead`). Written by
    /// appends, which the log's writer lock serialises, and by truncations
    /// and seals.
    zeroed_end: AtomicU64,
    /// `segment.bytes`: no reservation or zeros reach past it.
    max_bytes: u64,
    slot: Arc<Slot>,
    cache: SegmentCache,
    /// Largest record timestamp in the segment, −1 if none; `UNKNOWN_TS`
    /// until known (a lazily opened sealed segment).
    max_timestamp: AtomicI64,
    /// Last offset of the batch holding `max_timestamp`.
    offset_of_max_timestamp: AtomicI64,
    /// Timestamp of the first batch (for `segment.ms`), −1 if empty.
    first_batch_timestamp: AtomicI64,
    /// A writable active segment: the `.log` map capacity to reopen it with
    /// for appends after an eviction; 0 for a sealed one.
    active_capacity: AtomicU64,
}

const UNKNOWN_TS: i64 = i64::MIN;

impl Segment {
    fn with_files(
        base_offset: i64,
        paths: SegmentPaths,
        config: &LogConfig,
        (writable, pinned): (bool, bool),
        size: u64,
        files: Option<Files>,
    ) -> Segment {
        let slot = Slot::new(config.file_system.clone(), paths.log.clone(), files, pinned);
        Segment {
            id: super::positions_cache::new_segment_id(),
            base_offset,
            paths,
            fs: config.file_system.clone(),
            read_mode: config.read_mode,
            writable,
            index_interval: u64::from(config.settings.index_interval_bytes),
            index_bytes: config.settings.segment_index_bytes,
            writeback_bytes: config.writeback_bytes,
            size: AtomicU64::new(size),
            reserved_end: AtomicU64::new(0),
            zeroed_end: AtomicU64::new(0),
            max_bytes: u64::from(config.settings.segment_bytes),
            slot: Arc::new(slot),
            cache: config.open_cache.clone(),
            active_capacity: AtomicU64::new(0),
            max_timestamp: AtomicI64::new(-1),
            offset_of_max_timestamp: AtomicI64::new(base_offset),
            first_batch_timestamp: AtomicI64::new(-1),
        }
    }

    /// The active segment stops being pinned open (after a roll, or once a
    /// sealed segment is opened): sealed from here on.
    pub(crate) fn unpin(&self) {
        self.active_capacity.store(0, Ordering::Release);
        self.slot.pinned.store(false, Ordering::Release);
        if let Some(f) = self.slot.files.read().as_ref() {
            f.release_index_files();
        }
        if self.slot.files.read().is_some() {
            self.cache.register(&self.slot);
        }
    }

    /// The process-unique id of this segment object.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub(crate) fn log_path(&self) -> &Path {
        &self.paths.log
    }

    /// The segment's three files.
    pub(crate) fn paths(&self) -> &SegmentPaths {
        &self.paths
    }

    pub(crate) fn size(&self) -> u64 {
        self.size.load(Ordering::Acquire)
    }

    /// Largest record timestamp, −1 if none. For a sealed segment not opened
    /// yet this opens it; if that fails, `i64::MAX` (never "old").
    pub(crate) fn max_timestamp(&self) -> i64 {
        let ts = self.max_timestamp.load(Ordering::Acquire);
        if ts != UNKNOWN_TS {
            return ts;
        }
        match self.files() {
            Ok(_) => self.max_timestamp.load(Ordering::Acquire),
            Err(_) => i64::MAX,
        }
    }

    pub(crate) fn first_batch_timestamp(&self) -> i64 {
        self.first_batch_timestamp.load(Ordering::Acquire)
    }

    /// Last modification time of the `.log`, in ms since the epoch (retention
    /// falls back to it when the segment has no record timestamps); when it
    /// cannot be read, `i64::MAX`, so time retention keeps the segment.
    pub(crate) fn mtime_ms(&self) -> i64 {
        self.fs
            .metadata(&self.paths.log)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(i64::MAX, super::millis_i64)
    }

    /// The `.log` file's current length on disk.
    pub(crate) fn file_len(&self) -> Result<u64> {
        self.fs
            .len(&self.files()?.file, &self.paths.log)
            .map_err(|e| Error::io("stat segment", &self.paths.log, e))
    }

    /// Deletes the segment's files crash-safely (see
    /// [`files::delete_segment`](super::files::delete_segment)).
    pub(crate) fn delete_files(&self) -> Result<()> {
        super::files::delete_segment(&*self.fs, &self.paths)
    }
}

/// A `.log` over 2 GiB cannot be a Kafka segment (positions are 32-bit).
fn check_log_size(log: &Path, size: u64) -> Result<()> {
    if size > i32::MAX as u64 {
        return Err(Error::corrupt(log, 0, Corruption::SegmentTooLarge { size }));
    }
    Ok(())
}
