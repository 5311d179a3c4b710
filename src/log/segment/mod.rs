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
//! The jobs live in: `cache` (the open-segment cache), `read` (batches by
//! position and offset, time lookups), `verified` (batches whose CRC was
//! checked), `append` (writes, indexing, sealing and syncing), `recover`
//! (scans that check and index what is on disk).

mod append;
mod cache;
mod read;
mod recover;
mod verified;

pub(crate) use append::{AppendFailure, IndexCursor};
pub(crate) use cache::{SegmentCache, OPEN_SEGMENTS_DEFAULT};

use super::config::{LogConfig, ReadMode};
use super::files::SegmentPaths;
use super::index::{IndexFile, OffsetIndex, TimeIndex};
use crate::error::{Corruption, Error, Result};
use crate::io::{FsHandle, OpenMode};
use bytes::Bytes;
use cache::Slot;
use parking_lot::RwLock;
use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// A segment's open files: the `.log` and its two indexes.
struct Files {
    file: File,
    /// Positions of batches whose CRC was verified (allocated on first
    /// read), so repeated point reads into a batch do not re-check it. Held
    /// with the files, so an evicted segment frees it: memory stays bounded
    /// by the open-segment cache, whatever the number of segments.
    verified: OnceLock<Box<[AtomicU64]>>,
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
            verified: OnceLock::new(),
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
    size: AtomicU64,
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

/// Whether an index file exists with a whole number of entries (the checks
/// a lazy open makes without reading it).
fn index_plausible(fs: &FsHandle, path: &Path, entry: usize) -> bool {
    fs.metadata(path)
        .is_ok_and(|m| m.len() % entry as u64 == 0 && m.len() <= u64::from(u32::MAX))
}

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
            index_interval: u64::from(config.index_interval_bytes),
            index_bytes: config.segment_index_bytes,
            size: AtomicU64::new(size),
            slot: Arc::new(slot),
            cache: config.open_cache.clone(),
            active_capacity: AtomicU64::new(0),
            max_timestamp: AtomicI64::new(-1),
            offset_of_max_timestamp: AtomicI64::new(base_offset),
            first_batch_timestamp: AtomicI64::new(-1),
        }
    }

    /// Creates a new, empty, active segment. The caller fsyncs the directory.
    pub(crate) fn create(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        map_capacity: usize,
    ) -> Result<Segment> {
        let paths = SegmentPaths::new(dir, base_offset);
        let index_bytes = config.segment_index_bytes;
        let fs = &config.file_system;
        let file = fs
            .open(&paths.log, OpenMode::CreateNew)
            .map_err(|e| Error::io("create segment", &paths.log, e))?;
        let offset_index = OffsetIndex::new(
            IndexFile::create(fs, &paths.index, OffsetIndex::ENTRY, index_bytes)?,
            base_offset,
        );
        let time_index = TimeIndex::new(
            IndexFile::create(fs, &paths.time_index, TimeIndex::ENTRY, index_bytes)?,
            base_offset,
        );
        let files = Files::new(file, offset_index, time_index);
        let seg = Segment::with_files(base_offset, paths, config, (true, false), 0, Some(files));
        seg.remap(&*seg.files()?, map_capacity)?;
        seg.active_capacity
            .store(map_capacity as u64, Ordering::Release);
        seg.cache.register(&seg.slot);
        Ok(seg)
    }

    /// Opens the existing segment at `base_offset` in `dir` as `mode` says.
    pub(crate) fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        mode: Open,
    ) -> Result<Opened> {
        let paths = SegmentPaths::new(dir, base_offset);
        let fs = &config.file_system;
        let writable = match mode {
            Open::Eager | Open::Rebuilt => true,
            Open::ReadOnly => false,
            Open::Lazy { writable } => {
                if index_plausible(fs, &paths.index, OffsetIndex::ENTRY)
                    && index_plausible(fs, &paths.time_index, TimeIndex::ENTRY)
                {
                    let size = fs
                        .metadata(&paths.log)
                        .map_err(|e| Error::io("stat segment", &paths.log, e))?
                        .len();
                    check_log_size(&paths.log, size)?;
                    let seg = Segment::with_files(
                        base_offset,
                        paths,
                        config,
                        (writable, false),
                        size,
                        None,
                    );
                    seg.max_timestamp.store(UNKNOWN_TS, Ordering::Relaxed);
                    return Ok(Opened {
                        segment: seg,
                        indexes_ok: true,
                        deferred: true,
                    });
                }
                // Index files missing or mis-sized: opened now, so the
                // caller rebuilds them.
                writable
            }
        };
        let (files, size, indexes_ok) = Self::open_files(fs, &paths, base_offset, writable)?;
        let seg = Segment::with_files(
            base_offset,
            paths,
            config,
            (writable, true),
            size,
            Some(files),
        );
        seg.remap(&*seg.files()?, size as usize)?;
        seg.load_max_timestamp(&*seg.files()?);
        if mode == Open::Rebuilt {
            seg.rebuild_sealed()?;
        }
        Ok(Opened {
            segment: seg,
            indexes_ok,
            deferred: false,
        })
    }

    /// Opens the `.log` and both indexes; returns them, the `.log` size and
    /// whether the indexes passed their checks (untrusted ones come back
    /// empty and writable, or in memory when not `writable`).
    fn open_files(
        fs: &FsHandle,
        paths: &SegmentPaths,
        base_offset: i64,
        writable: bool,
    ) -> Result<(Files, u64, bool)> {
        let mode = if writable {
            OpenMode::ReadWrite
        } else {
            OpenMode::Read
        };
        let file = fs
            .open(&paths.log, mode)
            .map_err(|e| Error::io("open segment", &paths.log, e))?;
        let size = fs
            .len(&file, &paths.log)
            .map_err(|e| Error::io("stat segment", &paths.log, e))?;
        check_log_size(&paths.log, size)?;
        let mut indexes_ok = true;
        let mut open_index =
            |path: &Path, entry: usize| match IndexFile::open(fs, path, entry, writable) {
                Ok(f) => Ok(f),
                // Out of descriptors or the like: not a reason to rebuild.
                Err(e)
                    if matches!(&e, Error::Io { source, .. }
                        if source.kind() != std::io::ErrorKind::NotFound) =>
                {
                    Err(e)
                }
                Err(_) => {
                    indexes_ok = false;
                    if writable {
                        IndexFile::create(fs, path, entry, 0)
                    } else {
                        Ok(IndexFile::memory(fs, path, entry))
                    }
                }
            };
        let offset_index =
            OffsetIndex::new(open_index(&paths.index, OffsetIndex::ENTRY)?, base_offset);
        let time_index = TimeIndex::new(
            open_index(&paths.time_index, TimeIndex::ENTRY)?,
            base_offset,
        );
        if indexes_ok {
            indexes_ok = offset_index.sanity_check(size) && time_index.sanity_check();
        }
        Ok((Files::new(file, offset_index, time_index), size, indexes_ok))
    }

    fn load_max_timestamp(&self, f: &Files) {
        match f.time_index.read().last() {
            Some(last) => {
                self.offset_of_max_timestamp
                    .store(last.offset, Ordering::Relaxed);
                self.max_timestamp.store(last.timestamp, Ordering::Release);
            }
            None => {
                if self.max_timestamp.load(Ordering::Acquire) == UNKNOWN_TS {
                    self.max_timestamp.store(-1, Ordering::Release);
                }
            }
        }
    }

    /// The segment's files, opening them (and listing them in the cache) if
    /// they are not open.
    fn files(&self) -> Result<Arc<Files>> {
        self.slot.referenced.store(true, Ordering::Relaxed);
        if let Some(f) = self.slot.files.read().as_ref() {
            return Ok(Arc::clone(f));
        }
        self.load()
    }

    #[cold]
    fn load(&self) -> Result<Arc<Files>> {
        let files = {
            let _opening = self.slot.opening.lock();
            if let Some(f) = self.slot.files.read().as_ref() {
                return Ok(Arc::clone(f));
            }
            let (files, size, indexes_ok) =
                Self::open_files(&self.fs, &self.paths, self.base_offset, self.writable)?;
            if size != self.size() {
                return Err(Error::corrupt(
                    &self.paths.log,
                    size,
                    Corruption::SizeChanged {
                        expected: self.size(),
                        found: size,
                    },
                ));
            }
            let files = Arc::new(files);
            let active = self.active_capacity.load(Ordering::Acquire);
            if active > 0 && self.writable {
                // An evicted active segment: writable again, as it was. Its
                // timestamps are kept in memory (the time index is sparse).
                if indexes_ok {
                    for index in [
                        &mut files.offset_index.write().file,
                        &mut files.time_index.write().file,
                    ] {
                        index.make_writable(self.index_bytes)?;
                    }
                } else {
                    self.recover_in(&files, false, true)?
                        .into_result(&self.paths.log)?;
                }
                self.remap(&files, (active as usize).max(size as usize))?;
                *self.slot.files.write() = Some(Arc::clone(&files));
                drop(_opening);
                self.cache.register(&self.slot);
                return Ok(files);
            }
            self.remap(&files, size as usize)?;
            if indexes_ok {
                self.load_max_timestamp(&files);
            } else {
                // Rebuild the untrusted indexes from the log (on disk when
                // writable, in memory otherwise). Sealed: damage is corruption.
                self.recover_in(&files, !self.writable, false)?
                    .into_result(&self.paths.log)?;
                if self.writable {
                    self.seal_in(&files)?;
                }
            }
            files.release_index_files();
            *self.slot.files.write() = Some(Arc::clone(&files));
            files
        };
        self.cache.register(&self.slot);
        Ok(files)
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
