//! One segment: a `.log` of record batches with its `.index` and `.timeindex`,
//! all named by the 20-digit base offset.
//!
//! Invariants:
//! - `size` is the published length of the `.log`: every byte below it is a
//!   whole, CRC-checked batch (written by this process or recovered), and
//!   readers never look past it.
//! - Only the partition's writer (holding the log's writer lock) appends,
//!   truncates or rolls a segment.
//! - Index entries only point at batch starts below `size`.
//!
//! Open files are bounded: a sealed segment found at open keeps only its base
//! offset and size, and opens, checks and maps its files on first use. Opened
//! segments sit in a process-wide cache of a configured number of entries
//! ([`set_open_limit`], `StoreOptions::max_open_segments`; second-chance
//! eviction); an evicted segment drops its descriptors and maps, while bytes
//! already handed to readers keep their own mapping alive. A writable active
//! segment is in the cache too, so an idle partition holds no descriptor and
//! no map: it is evicted only while nobody uses its files, after an
//! fdatasync of what it has not synced yet (a failure is kept and reported
//! by the segment's next sync, never retried) and with its indexes trimmed
//! to their entries; its next use reopens it for appends. The active segment
//! of a read-only handle (whose indexes may live in memory only) is pinned.

use super::config::{LogConfig, ReadMode};
use super::index::{IndexFile, OffsetIndex, TimeIndex, TimestampOffset};
use crate::error::{Error, Result};
use crate::io::{mmap, FileSystem, FsHandle, OpenMode};
use crate::record::{BatchHeader, RecordBatch, HEADER_SIZE, LOG_OVERHEAD};
use bytes::{Bytes, BytesMut};
use parking_lot::{Mutex, RwLock};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// How many segments may be open at once by default, process-wide. A sealed
/// one holds one descriptor (its `.log`) and up to three maps, an active one
/// three descriptors and three maps.
pub(crate) const OPEN_SEGMENTS_DEFAULT: usize = 128;

static OPEN_LIMIT: std::sync::atomic::AtomicUsize =
    std::sync::atomic::AtomicUsize::new(OPEN_SEGMENTS_DEFAULT);

/// Sets how many segments may be open at once, process-wide (at least 1).
pub(crate) fn set_open_limit(n: usize) {
    OPEN_LIMIT.store(n.max(1), Ordering::Release);
}

/// Kafka's file name for a base offset: 20 digits, zero-padded.
pub(crate) fn file_name(base_offset: i64, ext: &str) -> String {
    format!("{base_offset:020}{ext}")
}

/// Removes whichever of the three files of the segment at `base_offset` in
/// `dir` exist. Tries all three; returns the first failure.
pub(crate) fn remove_files(fs: &dyn FileSystem, dir: &Path, base_offset: i64) -> Result<()> {
    let mut first_error = Ok(());
    for ext in [".log", ".index", ".timeindex"] {
        let path = dir.join(file_name(base_offset, ext));
        match fs.remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                if first_error.is_ok() {
                    first_error = Err(Error::io("remove segment file", &path, e));
                }
            }
        }
    }
    first_error
}

/// Writer-side bookkeeping for index building.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IndexCursor {
    pub(crate) bytes_since_last_entry: u64,
}

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
    /// A sealed segment's indexes are only read: keep their maps, close
    /// their descriptors.
    fn release_index_files(&self) {
        self.offset_index.write().file.release_file();
        self.time_index.write().file.release_file();
    }
}

/// The evictable part of a segment, shared with the open-segment cache.
struct Slot {
    files: RwLock<Option<Arc<Files>>>,
    /// Serialises opening the files.
    opening: Mutex<()>,
    /// Used since the cache hand last passed (second chance).
    referenced: AtomicBool,
    /// Never evicted (the active segment of a read-only handle).
    pinned: AtomicBool,
    /// Listed in the cache.
    cached: AtomicBool,
    /// For the fdatasync before an active segment is evicted.
    fs: FsHandle,
    log_path: PathBuf,
    /// Appends written to the `.log`, and how many of them an fdatasync
    /// covered: an evicted segment first syncs what it has not.
    written: AtomicU64,
    synced: AtomicU64,
    /// An fdatasync at eviction failed (errno): reported by the next sync,
    /// never retried, and the segment is no longer evicted.
    sync_error: Mutex<Option<i32>>,
}

impl Slot {
    /// Evicts the files if nobody else holds them: unsynced appends are
    /// fdatasynced first and writable indexes trimmed to their entries (what
    /// a reopen reads back). Returns false (files kept) when they are in
    /// use, or the sync or trim failed.
    fn evict(&self) -> bool {
        let _opening = self.opening.lock();
        let mut slot = self.files.write();
        let Some(files) = slot.take() else {
            return true;
        };
        let mut files = match Arc::try_unwrap(files) {
            Ok(f) => f,
            Err(shared) => {
                *slot = Some(shared);
                return false;
            }
        };
        let written = self.written.load(Ordering::Acquire);
        if written != self.synced.load(Ordering::Acquire) {
            if let Err(e) = self.fs.sync_data(&files.file, &self.log_path) {
                *self.sync_error.lock() = Some(e.raw_os_error().unwrap_or(libc::EIO));
                self.pinned.store(true, Ordering::Release);
                *slot = Some(Arc::new(files));
                return false;
            }
            self.synced.fetch_max(written, Ordering::AcqRel);
        }
        let trimmed = files
            .offset_index
            .get_mut()
            .file
            .close_writable()
            .and_then(|()| files.time_index.get_mut().file.close_writable());
        if trimmed.is_err() {
            *slot = Some(Arc::new(files));
            return false;
        }
        true
    }
}

/// The process-wide cache of opened sealed segments (a clock).
struct OpenCache {
    slots: Vec<Weak<Slot>>,
    hand: usize,
}

static OPEN_CACHE: Mutex<OpenCache> = Mutex::new(OpenCache {
    slots: Vec::new(),
    hand: 0,
});

impl OpenCache {
    /// Lists an opened, unpinned slot, evicting others beyond the bound.
    fn register(slot: &Arc<Slot>) {
        if slot.pinned.load(Ordering::Acquire) || slot.cached.swap(true, Ordering::AcqRel) {
            return;
        }
        let mut c = OPEN_CACHE.lock();
        c.slots.push(Arc::downgrade(slot));
        let limit = OPEN_LIMIT.load(Ordering::Acquire);
        // Slots in use are passed over; after two rounds without finding a
        // victim the cache stays over its bound until the next register.
        let mut looked = 0;
        while c.slots.len() > limit && looked < 2 * c.slots.len() + 2 {
            looked += 1;
            if c.hand >= c.slots.len() {
                c.hand = 0;
            }
            let hand = c.hand;
            let Some(s) = c.slots.get(hand).and_then(Weak::upgrade) else {
                c.slots.swap_remove(hand);
                continue;
            };
            if s.pinned.load(Ordering::Acquire) {
                s.cached.store(false, Ordering::Release);
                c.slots.swap_remove(hand);
                continue;
            }
            if s.referenced.swap(false, Ordering::AcqRel) {
                c.hand += 1;
                continue;
            }
            if !s.evict() {
                // In use (or its sync failed: pinned, dropped next round).
                c.hand += 1;
                continue;
            }
            s.cached.store(false, Ordering::Release);
            c.slots.swap_remove(hand);
        }
    }
}

pub(crate) struct Segment {
    /// Process-unique: keys this segment's entries in the record-positions
    /// cache (a rewritten segment is a new object with a new id).
    id: u64,
    base_offset: i64,
    log_path: PathBuf,
    fs: FsHandle,
    read_mode: ReadMode,
    /// Files may be written (false for read-only access).
    writable: bool,
    /// For rebuilding untrusted indexes when the files are first opened.
    index_interval: u64,
    index_bytes: u32,
    size: AtomicU64,
    slot: Arc<Slot>,
    /// Largest record timestamp in the segment, −1 if none; `i64::MIN`
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

/// Slots of the verified-batch cache: [`VERIFIED_SETS`] sets of two
/// (32 KiB per open segment that served reads). Two-way, so that a thousand
/// batches (a 64 MiB segment of ~64 KiB batches) rarely evict each other:
/// a direct-mapped cache of 1,024 slots made a point read re-check a batch
/// CRC (a scan of the whole batch) on a good share of reads.
const VERIFIED_SETS: usize = 2048;
const VERIFIED_SLOTS: usize = 2 * VERIFIED_SETS;
const UNKNOWN_TS: i64 = i64::MIN;

/// What scanning a segment's `.log` found.
#[derive(Debug)]
pub(crate) struct ScanOutcome {
    /// Bytes of whole valid batches from the start.
    pub(crate) valid_size: u64,
    /// Offset after the last valid batch (base offset if none).
    pub(crate) next_offset: i64,
    /// The first invalid batch: its position and what is wrong.
    pub(crate) error: Option<(u64, Error)>,
}

/// Whether an index file exists with a whole number of entries (the checks
/// a lazy open makes without reading it).
fn index_plausible(fs: &FsHandle, path: &Path, entry: usize) -> bool {
    fs.metadata(path)
        .is_ok_and(|m| m.len() % entry as u64 == 0 && m.len() <= u64::from(u32::MAX))
}

impl Segment {
    /// The process-unique id of this segment object.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    fn paths(dir: &Path, base_offset: i64) -> (PathBuf, PathBuf, PathBuf) {
        (
            dir.join(file_name(base_offset, ".log")),
            dir.join(file_name(base_offset, ".index")),
            dir.join(file_name(base_offset, ".timeindex")),
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn with_files(
        base_offset: i64,
        log_path: PathBuf,
        config: &LogConfig,
        writable: bool,
        size: u64,
        files: Option<Files>,
        pinned: bool,
    ) -> Segment {
        Segment {
            id: super::positions_cache::new_segment_id(),
            base_offset,
            log_path: log_path.clone(),
            fs: config.file_system.clone(),
            read_mode: config.read_mode,
            writable,
            index_interval: u64::from(config.settings.index_interval_bytes),
            index_bytes: config.settings.segment_index_bytes,
            size: AtomicU64::new(size),
            slot: Arc::new(Slot {
                files: RwLock::new(files.map(Arc::new)),
                opening: Mutex::new(()),
                referenced: AtomicBool::new(true),
                pinned: AtomicBool::new(pinned),
                cached: AtomicBool::new(false),
                fs: config.file_system.clone(),
                log_path,
                written: AtomicU64::new(0),
                synced: AtomicU64::new(0),
                sync_error: Mutex::new(None),
            }),
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
        let (log, idx, tidx) = Self::paths(dir, base_offset);
        let index_bytes = config.settings.segment_index_bytes;
        let fs = &config.file_system;
        let file = fs
            .open(&log, OpenMode::CreateNew)
            .map_err(|e| Error::io("create segment", &log, e))?;
        let offset_index = OffsetIndex::new(
            IndexFile::create(fs, &idx, OffsetIndex::ENTRY, index_bytes)?,
            base_offset,
        );
        let time_index = TimeIndex::new(
            IndexFile::create(fs, &tidx, TimeIndex::ENTRY, index_bytes)?,
            base_offset,
        );
        let files = Files {
            file,
            verified: OnceLock::new(),
            map: RwLock::new(Bytes::new()),
            offset_index: RwLock::new(offset_index),
            time_index: RwLock::new(time_index),
        };
        let seg = Segment::with_files(base_offset, log, config, true, 0, Some(files), false);
        seg.remap(&*seg.files()?, map_capacity)?;
        seg.active_capacity
            .store(map_capacity as u64, Ordering::Release);
        OpenCache::register(&seg.slot);
        Ok(seg)
    }

    /// Opens an existing segment's files. Indexes that are missing or fail
    /// their checks are reported by `indexes_ok() == false`; the caller
    /// rebuilds them with [`Segment::recover`].
    pub(crate) fn open(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
    ) -> Result<(Segment, bool)> {
        Self::open_with(dir, base_offset, config, true)
    }

    /// As [`Segment::open`]; with `writable` false nothing is ever written:
    /// files open read-only and missing indexes are rebuilt in memory.
    pub(crate) fn open_with(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        writable: bool,
    ) -> Result<(Segment, bool)> {
        let (log, _, _) = Self::paths(dir, base_offset);
        let (files, size, indexes_ok) =
            Self::open_files(&config.file_system, dir, base_offset, writable)?;
        let seg = Segment::with_files(base_offset, log, config, writable, size, Some(files), true);
        seg.remap(&*seg.files()?, size as usize)?;
        seg.load_max_timestamp(&*seg.files()?);
        Ok((seg, indexes_ok))
    }

    /// A sealed segment whose files open on first use. Returns None when
    /// its index files are missing or sized wrong: the caller opens it
    /// eagerly and rebuilds them. Index contents are checked when the files
    /// open, and rebuilt then if they fail.
    pub(crate) fn open_lazy(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
        writable: bool,
    ) -> Result<Option<Segment>> {
        let (log, idx, tidx) = Self::paths(dir, base_offset);
        let fs = &config.file_system;
        if !index_plausible(fs, &idx, OffsetIndex::ENTRY)
            || !index_plausible(fs, &tidx, TimeIndex::ENTRY)
        {
            return Ok(None);
        }
        let size = fs
            .metadata(&log)
            .map_err(|e| Error::io("stat segment", &log, e))?
            .len();
        check_log_size(&log, size)?;
        let seg = Segment::with_files(base_offset, log, config, writable, size, None, false);
        seg.max_timestamp.store(UNKNOWN_TS, Ordering::Relaxed);
        Ok(Some(seg))
    }

    /// Opens the `.log` and both indexes; returns them, the `.log` size and
    /// whether the indexes passed their checks (untrusted ones come back
    /// empty and writable, or in memory when not `writable`).
    fn open_files(
        fs: &FsHandle,
        dir: &Path,
        base_offset: i64,
        writable: bool,
    ) -> Result<(Files, u64, bool)> {
        let (log, idx, tidx) = Self::paths(dir, base_offset);
        let mode = if writable {
            OpenMode::ReadWrite
        } else {
            OpenMode::Read
        };
        let file = fs
            .open(&log, mode)
            .map_err(|e| Error::io("open segment", &log, e))?;
        let size = fs
            .len(&file, &log)
            .map_err(|e| Error::io("stat segment", &log, e))?;
        check_log_size(&log, size)?;
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
        let offset_index = OffsetIndex::new(open_index(&idx, OffsetIndex::ENTRY)?, base_offset);
        let time_index = TimeIndex::new(open_index(&tidx, TimeIndex::ENTRY)?, base_offset);
        if indexes_ok {
            indexes_ok = offset_index.sanity_check(size) && time_index.sanity_check();
        }
        let files = Files {
            file,
            verified: OnceLock::new(),
            map: RwLock::new(Bytes::new()),
            offset_index: RwLock::new(offset_index),
            time_index: RwLock::new(time_index),
        };
        Ok((files, size, indexes_ok))
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
            let dir = crate::io::parent(&self.log_path);
            let (files, size, indexes_ok) =
                Self::open_files(&self.fs, dir, self.base_offset, self.writable)?;
            if size != self.size() {
                return Err(Error::corrupt(
                    &self.log_path,
                    size,
                    Error::InvalidField {
                        what: "sealed segment size changed while open",
                        value: size as i64,
                    },
                ));
            }
            let files = Arc::new(files);
            let active = self.active_capacity.load(Ordering::Acquire);
            if active > 0 && self.writable {
                // An evicted active segment: writable again, as it was. Its
                // timestamps are kept in memory (the time index is sparse).
                if indexes_ok {
                    files
                        .offset_index
                        .write()
                        .file
                        .make_writable(self.index_bytes)?;
                    files
                        .time_index
                        .write()
                        .file
                        .make_writable(self.index_bytes)?;
                } else {
                    let outcome = self.recover_active_in(&files)?;
                    if let Some((position, reason)) = outcome {
                        return Err(Error::corrupt(&self.log_path, position, reason));
                    }
                }
                self.remap(&files, (active as usize).max(size as usize))?;
                *self.slot.files.write() = Some(Arc::clone(&files));
                drop(_opening);
                OpenCache::register(&self.slot);
                return Ok(files);
            }
            self.remap(&files, size as usize)?;
            if indexes_ok {
                self.load_max_timestamp(&files);
            } else {
                // Rebuild the untrusted indexes from the log (on disk when
                // writable, in memory otherwise). Sealed: damage is corruption.
                let outcome = self.recover_in(&files, !self.writable, false)?;
                if let Some((position, reason)) = outcome.error {
                    return Err(Error::corrupt(&self.log_path, position, reason));
                }
                if self.writable {
                    self.seal_in(&files)?;
                }
            }
            files.release_index_files();
            *self.slot.files.write() = Some(Arc::clone(&files));
            files
        };
        OpenCache::register(&self.slot);
        Ok(files)
    }

    /// The active segment stops being pinned open (after a roll): sealed
    /// from here on.
    pub(crate) fn unpin(&self) {
        self.active_capacity.store(0, Ordering::Release);
        self.slot.pinned.store(false, Ordering::Release);
        if let Some(f) = self.slot.files.read().as_ref() {
            f.release_index_files();
        }
        if self.slot.files.read().is_some() {
            OpenCache::register(&self.slot);
        }
    }

    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }

    pub(crate) fn log_path(&self) -> &Path {
        &self.log_path
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

    /// Maps at least `len` bytes of the `.log` (mmap mode only).
    fn remap(&self, f: &Files, len: usize) -> Result<()> {
        if self.read_mode != ReadMode::Mmap {
            return Ok(());
        }
        let map = mmap::map_read(&f.file, len)
            .map_err(|e| Error::io("map segment", &self.log_path, e))?;
        *f.map.write() = map;
        Ok(())
    }
    /// The bytes `[start, end)` of the `.log`, which may lie past the
    /// published size (for scans); the mapping grows to cover them.
    fn raw(&self, f: &Files, start: u64, end: u64) -> Result<Bytes> {
        if self.read_mode == ReadMode::Mmap {
            if f.map.read().len() < end as usize {
                self.remap(f, end as usize)?;
            }
            let map = f.map.read();
            if end as usize <= map.len() {
                return Ok(map.slice(start as usize..end as usize));
            }
        }
        let mut buf = BytesMut::zeroed((end - start) as usize);
        self.fs
            .read_at(&f.file, &self.log_path, &mut buf, start)
            .map_err(|e| Error::io("read segment", &self.log_path, e))?;
        Ok(buf.freeze())
    }

    /// Read-only view: rebuilds the indexes in memory from the whole file
    /// and publishes the valid prefix (another process may be mid-append).
    pub(crate) fn scan_all_read_only(
        &self,
        index_interval: u64,
        cursor: &mut IndexCursor,
        contiguous: bool,
    ) -> Result<ScanOutcome> {
        let f = self.files()?;
        for index in [
            &mut f.offset_index.write().file,
            &mut f.time_index.write().file,
        ] {
            // In-memory indexes: this only copies entries into memory.
            index.make_writable(0)?;
            index.truncate_entries(0);
        }
        let len = self.file_len()?;
        let out = self.scan_in(
            &f,
            0,
            len,
            self.base_offset,
            cursor,
            index_interval,
            contiguous,
        )?;
        self.size.store(out.valid_size, Ordering::Release);
        Ok(out)
    }

    /// Read-only view: scans what another process appended since the last
    /// look and publishes it. Returns the new next offset, or None when
    /// nothing new is whole yet.
    pub(crate) fn catch_up(
        &self,
        next_offset: i64,
        index_interval: u64,
        cursor: &mut IndexCursor,
    ) -> Result<Option<i64>> {
        let (size, len) = (self.size(), self.file_len()?);
        if len <= size {
            return Ok(None);
        }
        // Only the last segment grows, and it is never compacted.
        let out = self.scan(size, len, next_offset, cursor, index_interval, true)?;
        if out.valid_size == size {
            return Ok(None);
        }
        self.size.store(out.valid_size, Ordering::Release);
        Ok(Some(out.next_offset))
    }

    /// The `.log` file's current length on disk.
    pub(crate) fn file_len(&self) -> Result<u64> {
        self.fs
            .len(&self.files()?.file, &self.log_path)
            .map_err(|e| Error::io("stat segment", &self.log_path, e))
    }

    /// The bytes `[start, end)` of the `.log`, which must be below `size`.
    fn bytes_in(&self, f: &Files, start: u64, end: u64) -> Result<Bytes> {
        debug_assert!(start <= end && end <= self.size());
        match self.read_mode {
            ReadMode::Mmap => {
                {
                    let map = f.map.read();
                    if end as usize <= map.len() {
                        return Ok(map.slice(start as usize..end as usize));
                    }
                }
                self.remap(f, self.size() as usize)?;
                let map = f.map.read();
                map.get(start as usize..end as usize)
                    .map(|_| map.slice(start as usize..end as usize))
                    .ok_or_else(|| {
                        Error::io(
                            "map segment",
                            &self.log_path,
                            std::io::ErrorKind::UnexpectedEof.into(),
                        )
                    })
            }
            ReadMode::Pread => {
                let mut buf = BytesMut::zeroed((end - start) as usize);
                self.fs
                    .read_at(&f.file, &self.log_path, &mut buf, start)
                    .map_err(|e| Error::io("read segment", &self.log_path, e))?;
                Ok(buf.freeze())
            }
        }
    }

    /// The batch header at `position`, if a whole header lies below `limit`.
    fn header_at(&self, f: &Files, position: u64, limit: u64) -> Result<Option<BatchHeader>> {
        let end = position + HEADER_SIZE as u64;
        if end > limit {
            return Ok(None);
        }
        if self.read_mode == ReadMode::Mmap {
            let map = f.map.read();
            if let Some(h) = map.get(position as usize..end as usize) {
                return BatchHeader::parse(h).map(Some);
            }
        } else {
            let mut h = [0u8; HEADER_SIZE];
            self.fs
                .read_at(&f.file, &self.log_path, &mut h, position)
                .map_err(|e| Error::io("read segment", &self.log_path, e))?;
            return BatchHeader::parse(&h).map(Some);
        }
        let b = self.bytes_in(f, position, end)?;
        BatchHeader::parse(&b).map(Some)
    }
    /// The set of two slots of the verified-batch cache for `position`,
    /// and which of the two to replace when neither holds it.
    fn verified_set(f: &Files, position: u64) -> Option<(&AtomicU64, &AtomicU64, bool)> {
        let slots = f
            .verified
            .get_or_init(|| (0..VERIFIED_SLOTS).map(|_| AtomicU64::new(0)).collect());
        // Fibonacci hashing spreads batch positions over the sets; the next
        // bit of the hash picks the way to replace.
        let h = position.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let bits = VERIFIED_SETS.trailing_zeros();
        let set = (h >> (64 - bits)) as usize % VERIFIED_SETS;
        Some((
            slots.get(2 * set)?,
            slots.get(2 * set + 1)?,
            (h >> (63 - bits)) & 1 == 1,
        ))
    }

    /// Decodes the batch in `buf` found at `position`, checking its CRC
    /// unless this segment verified the same position before. Bytes below
    /// the published size never change, so a verified batch stays valid.
    fn batch_at(f: &Files, buf: Bytes, position: u64) -> Result<RecordBatch> {
        let key = position + 1;
        let set = Self::verified_set(f, position);
        if set.is_some_and(|(a, b, _)| {
            a.load(Ordering::Relaxed) == key || b.load(Ordering::Relaxed) == key
        }) {
            return RecordBatch::verified(buf);
        }
        let batch = RecordBatch::decode(&buf)?;
        if let Some((a, b, second)) = set {
            let slot = match (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed)) {
                (0, _) => a,
                (_, 0) => b,
                _ if second => b,
                _ => a,
            };
            slot.store(key, Ordering::Relaxed);
        }
        Ok(batch)
    }

    /// The next batch header while walking the segment: its offsets must lie
    /// in the segment and follow `prev_last` (the previous batch's last
    /// offset), since the base offset is outside the CRC.
    fn next_header(
        &self,
        f: &Files,
        position: u64,
        limit: u64,
        prev_last: Option<i64>,
    ) -> Result<Option<BatchHeader>> {
        let h = self
            .header_at(f, position, limit)
            .map_err(|e| Error::corrupt(&self.log_path, position, e))?;
        if let Some(h) = &h {
            let in_order = prev_last.is_none_or(|p| h.base_offset > p);
            if !in_order
                || h.base_offset < self.base_offset
                || h.last_offset_delta < 0
                || h.last_offset() - self.base_offset > i64::from(i32::MAX)
            {
                return Err(Error::corrupt(
                    &self.log_path,
                    position,
                    Error::InvalidField {
                        what: "batch base offset",
                        value: h.base_offset,
                    },
                ));
            }
        }
        Ok(h)
    }

    /// Finds the position of the first batch whose last offset is ≥ `target`,
    /// scanning forward from the offset index's entry. None if no such batch
    /// lies below `limit`.
    fn find_position_in(
        &self,
        f: &Files,
        target: i64,
        limit: u64,
    ) -> Result<Option<(u64, BatchHeader)>> {
        let entry = f.offset_index.read().lookup(target);
        let mut pos = u64::from(entry.position);
        if pos > 0 {
            // The batch an entry points at holds the entry's offset or an
            // earlier one. A damaged entry that fails this would skip
            // records: scan from the start instead.
            match self.header_at(f, pos, limit) {
                Ok(Some(h)) if h.base_offset <= entry.offset => {}
                _ => pos = 0,
            }
        }
        let mut prev = None;
        while let Some(h) = self.next_header(f, pos, limit, prev)? {
            if h.last_offset() >= target {
                return Ok(Some((pos, h)));
            }
            prev = Some(h.last_offset());
            pos += h.size() as u64;
        }
        Ok(None)
    }

    /// Reads whole, CRC-checked batches starting at `position`, up to
    /// `max_bytes` (but always at least one batch), stopping before `limit`
    /// (a byte position) and before any batch at or beyond `max_offset`.
    pub(crate) fn read_batches(
        &self,
        position: u64,
        max_bytes: usize,
        limit: u64,
        max_offset: i64,
    ) -> Result<Vec<RecordBatch>> {
        let f = self.files()?;
        self.read_batches_in(&f, position, max_bytes, limit, max_offset, None)
    }

    /// Finds the batch holding `offset` and reads from it, as
    /// [`Segment::find_position`] then [`Segment::read_batches`], opening the
    /// files once. `check` sees the first batch's position and header before
    /// anything is read.
    pub(crate) fn read_from(
        &self,
        offset: i64,
        max_bytes: usize,
        limit: u64,
        max_offset: i64,
        check: impl FnOnce(u64, &BatchHeader) -> Result<()>,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let f = self.files()?;
        let Some((pos, h)) = self.find_position_in(&f, offset, limit)? else {
            return Ok(None);
        };
        check(pos, &h)?;
        self.read_batches_in(&f, pos, max_bytes, limit, max_offset, Some(h))
            .map(Some)
    }

    fn read_batches_in(
        &self,
        f: &Files,
        position: u64,
        max_bytes: usize,
        limit: u64,
        max_offset: i64,
        first: Option<BatchHeader>,
    ) -> Result<Vec<RecordBatch>> {
        // Find how far to read by walking headers, then take one slice.
        let mut end = position;
        let mut sizes: smallvec_lite::Sizes = smallvec_lite::Sizes::new();
        let mut prev = None;
        let mut known = first;
        loop {
            if !sizes.is_empty() && (end - position) as usize >= max_bytes {
                // Full: the next batch cannot fit, so its header (a likely
                // cache miss for a point read) need not be read.
                break;
            }
            let h = match known.take() {
                Some(h) => Some(h),
                None => self.next_header(f, end, limit, prev)?,
            };
            let Some(h) = h else { break };
            if h.last_offset() >= max_offset {
                if h.base_offset < max_offset {
                    // No batch straddles the high watermark (it only ever
                    // sits at batch boundaries): this header is damaged.
                    // Report it rather than skip its records.
                    let to = (end + h.size() as u64).min(limit);
                    RecordBatch::decode(&self.bytes_in(f, end, to)?)
                        .map_err(|e| Error::corrupt(&self.log_path, end, e))?;
                }
                break;
            }
            prev = Some(h.last_offset());
            let next = end + h.size() as u64;
            if next > limit || (!sizes.is_empty() && (next - position) as usize > max_bytes) {
                break;
            }
            sizes.push(h.size());
            end = next;
        }
        if sizes.is_empty() {
            return Ok(Vec::new());
        }
        let buf = self.bytes_in(f, position, end)?;
        let mut out = Vec::with_capacity(sizes.len());
        let mut at = 0usize;
        for &size in sizes.as_slice() {
            let here = position + at as u64;
            let b = Self::batch_at(f, buf.slice(at..at + size), here)
                .map_err(|e| Error::corrupt(&self.log_path, here, e))?;
            at += size;
            out.push(b);
        }
        Ok(out)
    }

    /// Appends already-validated batches at the end of the `.log` with one
    /// write, then indexes them. On a write error the file is cut back to the
    /// published size; `Err` from the cut-back is returned as the second
    /// element so the caller can poison the log.
    pub(crate) fn append(
        &self,
        data: &[u8],
        batches: &[BatchHeader],
        cursor: &mut IndexCursor,
        index_interval: u64,
    ) -> std::result::Result<(), (Error, bool)> {
        let f = self.files().map_err(|e| (e, true))?;
        // Disk for the index entries this append may add, reserved before
        // the log is written: a full disk fails the append here, with
        // nothing written.
        let more = batches.len();
        f.offset_index
            .write()
            .file
            .reserve(more)
            .and_then(|()| f.time_index.write().file.reserve(more))
            .map_err(|e| (e, true))?;
        let start = self.size();
        if let Err(e) = self.fs.write_at(&f.file, &self.log_path, data, start) {
            // Cut back whatever part was written, so the next append starts
            // at a batch boundary; if even that fails the caller poisons.
            let err = Error::io("write", &self.log_path, e);
            let cut_ok = self.fs.set_len(&f.file, &self.log_path, start).is_ok();
            return Err((err, cut_ok));
        }
        self.slot.written.fetch_add(1, Ordering::AcqRel);
        self.index_batches(&f, start, batches, cursor, index_interval);
        self.size
            .store(start + data.len() as u64, Ordering::Release);
        Ok(())
    }

    /// Adds index entries for batches that start at `start`, Kafka's way: an
    /// entry when more than `index_interval` bytes were appended since the
    /// last one, counted before the batch.
    fn index_batches(
        &self,
        f: &Files,
        start: u64,
        batches: &[BatchHeader],
        cursor: &mut IndexCursor,
        index_interval: u64,
    ) {
        let mut pos = start;
        for h in batches {
            if self.first_batch_timestamp.load(Ordering::Relaxed) < 0 {
                // Kafka's rollingBasedTimestamp: the first batch's max timestamp.
                self.first_batch_timestamp
                    .store(h.max_timestamp.max(0), Ordering::Release);
            }
            if h.max_timestamp > self.max_timestamp.load(Ordering::Relaxed) {
                self.max_timestamp.store(h.max_timestamp, Ordering::Release);
                self.offset_of_max_timestamp
                    .store(h.last_offset(), Ordering::Release);
            }
            if cursor.bytes_since_last_entry > index_interval {
                f.offset_index.write().append(h.last_offset(), pos as u32);
                f.time_index.write().maybe_append(
                    self.max_timestamp.load(Ordering::Relaxed),
                    self.offset_of_max_timestamp.load(Ordering::Relaxed),
                );
                cursor.bytes_since_last_entry = 0;
            }
            cursor.bytes_since_last_entry += h.size() as u64;
            pos += h.size() as u64;
        }
    }

    /// The index cursor for appending after a reopen: bytes appended since
    /// the last offset-index entry's batch started.
    pub(crate) fn index_cursor_after_open(&self) -> IndexCursor {
        let last = self.files().ok().and_then(|f| f.offset_index.read().last());
        IndexCursor {
            bytes_since_last_entry: self
                .size()
                .saturating_sub(last.map_or(0, |e| u64::from(e.position))),
        }
    }

    /// Whether either index has no room for another entry.
    pub(crate) fn index_full(&self) -> bool {
        self.files().is_ok_and(|f| {
            f.offset_index.read().file.is_full() || f.time_index.read().file.is_full()
        })
    }

    /// Prepares a reopened last segment for appends: indexes writable again.
    pub(crate) fn make_active(&self, index_bytes: u32, map_capacity: usize) -> Result<()> {
        // Pinned while it is made writable, so it is not evicted half-way.
        self.slot.pinned.store(true, Ordering::Release);
        let f = self.files()?;
        f.offset_index.write().file.make_writable(index_bytes)?;
        f.time_index.write().file.make_writable(index_bytes)?;
        let capacity = map_capacity.max(self.size() as usize);
        self.remap(&f, capacity)?;
        if self.writable {
            self.active_capacity
                .store(capacity as u64, Ordering::Release);
            self.slot.pinned.store(false, Ordering::Release);
            OpenCache::register(&self.slot);
        }
        Ok(())
    }

    /// Keeps the files open (not evicted) while the returned handle lives.
    pub(crate) fn hold(&self) -> Result<impl Sized> {
        self.files()
    }

    /// Seals the segment: final time-index entry, indexes trimmed and
    /// fsynced, and the `.log` fsynced.
    pub(crate) fn seal(&self) -> Result<()> {
        let f = self.files()?;
        self.seal_in(&f)
    }

    fn seal_in(&self, f: &Files) -> Result<()> {
        self.trim_indexes(f, true)?;
        self.sync_file(&f.file)
    }

    /// Final time-index entry, indexes trimmed to their entries (and
    /// fsynced when `sync`).
    fn trim_indexes(&self, f: &Files, sync: bool) -> Result<()> {
        {
            let mut t = f.time_index.write();
            let ts = self.max_timestamp.load(Ordering::Acquire);
            if ts >= 0 || self.size() > 0 {
                t.maybe_append(ts, self.offset_of_max_timestamp.load(Ordering::Acquire));
            }
            t.file.trim(sync)?;
        }
        f.offset_index.write().file.trim(sync)
    }

    /// Seals the segment at a roll without waiting for the disk: indexes
    /// trimmed, nothing fsynced. Returns the job that makes it durable
    /// (fdatasync of the `.log`, fsync of both indexes, then of the
    /// directory, which by then also holds the next segment), which the log runs
    /// in the background, as Kafka flushes a rolled segment asynchronously.
    /// Until that job has succeeded the segment lies above the recovery
    /// point, and recovery scans it.
    pub(crate) fn seal_deferred(&self) -> Result<impl FnOnce() -> Result<()> + Send + 'static> {
        let f = self.files()?;
        self.trim_indexes(&f, false)?;
        let fs = self.fs.clone();
        let [log, idx, tidx] = self.file_paths();
        let dir = crate::io::parent(&log).to_owned();
        let slot = Arc::clone(&self.slot);
        let written = slot.written.load(Ordering::Acquire);
        Ok(move || {
            if let Err(e) = fs.sync_data(&f.file, &log) {
                // Never retried, not even by an eviction.
                *slot.sync_error.lock() = Some(e.raw_os_error().unwrap_or(libc::EIO));
                return Err(Error::io("fsync", &log, e));
            }
            slot.synced.fetch_max(written, Ordering::AcqRel);
            for path in [idx, tidx] {
                // Retention may have deleted the segment meanwhile: nothing
                // left to make durable then.
                let file = match fs.open(&path, OpenMode::Read) {
                    Ok(file) => file,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(Error::io("open index", &path, e)),
                };
                fs.sync_all(&file, &path)
                    .map_err(|e| Error::io("fsync index", &path, e))?;
            }
            // The roll created the next segment before this runs: its
            // directory entry is durable from here on too.
            crate::io::fsync_dir(&*fs, &dir)
        })
    }

    /// fdatasync of the `.log`.
    pub(crate) fn sync(&self) -> Result<()> {
        self.sync_file(&self.files()?.file)
    }

    /// fdatasync of this segment's `.log` through an already open handle
    /// (also while the segment is being loaded, when `files()` would wait on
    /// the load itself). An fdatasync that failed when the segment was
    /// evicted is reported here, and never retried.
    fn sync_file(&self, file: &File) -> Result<()> {
        if let Some(errno) = *self.slot.sync_error.lock() {
            return Err(Error::io(
                "fsync",
                &self.log_path,
                std::io::Error::from_raw_os_error(errno),
            ));
        }
        let written = self.slot.written.load(Ordering::Acquire);
        self.fs
            .sync_data(file, &self.log_path)
            .map_err(|e| Error::io("fsync", &self.log_path, e))?;
        self.slot.synced.fetch_max(written, Ordering::AcqRel);
        Ok(())
    }

    /// Scans the `.log` from the start, checking every batch (header, CRC,
    /// offsets increasing and ≥ the base), rebuilding both indexes as it goes.
    /// Stops at the first invalid batch. Touches nothing on disk except the
    /// index files; the caller decides whether to truncate. With
    /// `contiguous` (the last segment, which compaction never touches) each
    /// batch must start right after the previous one: the base offset is
    /// outside the CRC, so a damaged one must not move the log end.
    pub(crate) fn recover(
        &self,
        index_interval: u64,
        index_bytes: u32,
        contiguous: bool,
    ) -> Result<ScanOutcome> {
        debug_assert_eq!(
            (index_interval, index_bytes),
            (self.index_interval, self.index_bytes)
        );
        let f = self.files()?;
        self.recover_in(&f, !self.writable, contiguous)
    }

    /// Rebuilds the indexes of an evicted active segment that failed their
    /// checks on reopen, from its `.log`; the first invalid batch, if any.
    fn recover_active_in(&self, f: &Files) -> Result<Option<(u64, Error)>> {
        Ok(self.recover_in(f, false, true)?.error)
    }

    fn recover_in(&self, f: &Files, in_memory: bool, contiguous: bool) -> Result<ScanOutcome> {
        let index_bytes = if in_memory { 0 } else { self.index_bytes };
        f.offset_index.write().file.make_writable(index_bytes)?;
        f.time_index.write().file.make_writable(index_bytes)?;
        f.offset_index.write().file.truncate_entries(0);
        f.time_index.write().file.truncate_entries(0);
        self.max_timestamp.store(-1, Ordering::Release);
        self.offset_of_max_timestamp
            .store(self.base_offset, Ordering::Release);
        self.first_batch_timestamp.store(-1, Ordering::Release);
        let mut cursor = IndexCursor::default();
        self.scan_in(
            f,
            0,
            self.size(),
            self.base_offset,
            &mut cursor,
            self.index_interval,
            contiguous,
        )
    }

    /// Checks and indexes the batches in `[start, end)` of the `.log`, which
    /// may lie past the published size (recovery, or a read-only view
    /// catching up with another process's appends). Stops at the first
    /// invalid batch; `contiguous` as for [`Segment::recover`].
    pub(crate) fn scan(
        &self,
        start: u64,
        end: u64,
        next_offset: i64,
        cursor: &mut IndexCursor,
        index_interval: u64,
        contiguous: bool,
    ) -> Result<ScanOutcome> {
        let f = self.files()?;
        self.scan_in(
            &f,
            start,
            end,
            next_offset,
            cursor,
            index_interval,
            contiguous,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn scan_in(
        &self,
        f: &Files,
        start: u64,
        end: u64,
        mut next_offset: i64,
        cursor: &mut IndexCursor,
        index_interval: u64,
        contiguous: bool,
    ) -> Result<ScanOutcome> {
        let size = end;
        let data = self.raw(f, 0, end)?;
        let mut pos = start;
        let mut error = None;
        while pos < size {
            let rest = data.get(pos as usize..).unwrap_or_default();
            let h = match RecordBatch::check(rest) {
                Ok(h) => h,
                Err(e) => {
                    error = Some((pos, e));
                    break;
                }
            };
            let bad_offsets = h.base_offset < next_offset
                || (contiguous && h.base_offset != next_offset)
                || h.last_offset_delta < 0
                || h.last_offset() - self.base_offset > i64::from(i32::MAX);
            if bad_offsets {
                error = Some((
                    pos,
                    Error::InvalidField {
                        what: "batch base offset",
                        value: h.base_offset,
                    },
                ));
                break;
            }
            if f.offset_index.read().file.is_full() || f.time_index.read().file.is_full() {
                error = Some((
                    pos,
                    Error::InvalidField {
                        what: "index entries beyond segment.index.bytes at offset",
                        value: h.base_offset,
                    },
                ));
                break;
            }
            self.index_batches(f, pos, &[h], cursor, index_interval);
            next_offset = h.next_offset();
            pos += h.size() as u64;
        }
        Ok(ScanOutcome {
            valid_size: pos,
            next_offset,
            error,
        })
    }

    /// Cuts the `.log` to `size` bytes (recovery of a torn tail). Must not be
    /// called below a size readers may have seen.
    pub(crate) fn truncate(&self, size: u64) -> Result<()> {
        self.fs
            .set_len(&self.files()?.file, &self.log_path, size)
            .map_err(|e| Error::io("truncate", &self.log_path, e))?;
        self.size.store(size, Ordering::Release);
        Ok(())
    }

    /// The offset after the last batch, found from the last index entry
    /// (trusted indexes only). Only for the last segment, which is only ever
    /// appended to, so its batches are contiguous: a base offset that breaks
    /// the sequence (the field is outside the CRC) is corruption, never a
    /// new log end.
    pub(crate) fn next_offset_from_index(&self) -> Result<i64> {
        let f = self.files()?;
        let size = self.size();
        let last = f.offset_index.read().last();
        // The entry indexes the last offset of the batch at its position.
        let (mut pos, mut expected_last) = match last {
            Some(e) => (u64::from(e.position), Some(e.offset)),
            None => (0, None),
        };
        let mut next = self.base_offset;
        while let Some(h) = self
            .header_at(&f, pos, size)
            .map_err(|e| Error::corrupt(&self.log_path, pos, e))?
        {
            let contiguous = match expected_last.take() {
                Some(last) => h.last_offset() == last,
                None => h.base_offset == next,
            };
            if !contiguous || h.last_offset_delta < 0 {
                return Err(Error::corrupt(
                    &self.log_path,
                    pos,
                    Error::InvalidField {
                        what: "batch base offset",
                        value: h.base_offset,
                    },
                ));
            }
            if pos + h.size() as u64 > size {
                return Err(Error::corrupt(
                    &self.log_path,
                    pos,
                    Error::Truncated {
                        what: "batch",
                        needed: h.size(),
                        available: (size - pos) as usize,
                    },
                ));
            }
            next = h.next_offset();
            pos += h.size() as u64;
        }
        if pos != size {
            return Err(Error::corrupt(
                &self.log_path,
                pos,
                Error::Truncated {
                    what: "batch",
                    needed: LOG_OVERHEAD.max(HEADER_SIZE),
                    available: size.saturating_sub(pos) as usize,
                },
            ));
        }
        Ok(next)
    }

    /// The first record in `[min_offset, max_offset)` whose timestamp is ≥ `ts`:
    /// the time index gives a starting offset, the offset index its
    /// position, then batches are scanned (Kafka's `findOffsetByTimestamp`).
    pub(crate) fn find_offset_by_timestamp(
        &self,
        ts: i64,
        min_offset: i64,
        max_offset: i64,
    ) -> Result<Option<(i64, i64)>> {
        let f = self.files()?;
        let from = f
            .time_index
            .read()
            .lookup(ts)
            .map_or(self.base_offset, |e: TimestampOffset| e.offset)
            .max(min_offset);
        let limit = self.size();
        let Some((mut pos, _)) = self.find_position_in(&f, from, limit)? else {
            return Ok(None);
        };
        while let Some(h) = self
            .header_at(&f, pos, limit)
            .map_err(|e| Error::corrupt(&self.log_path, pos, e))?
        {
            if h.last_offset() >= max_offset {
                break;
            }
            if h.max_timestamp >= ts {
                let batch = self.read_batches_in(&f, pos, 0, limit, max_offset, None)?;
                for b in &batch {
                    for r in b
                        .records()
                        .map_err(|e| Error::corrupt(&self.log_path, pos, e))?
                    {
                        let r = r.map_err(|e| Error::corrupt(&self.log_path, pos, e))?;
                        if r.timestamp >= ts && r.offset >= min_offset {
                            return Ok(Some((r.offset, r.timestamp)));
                        }
                    }
                }
            }
            pos += h.size() as u64;
        }
        Ok(None)
    }
}

/// A `.log` over 2 GiB cannot be a Kafka segment (positions are 32-bit).
fn check_log_size(log: &Path, size: u64) -> Result<()> {
    if size > i32::MAX as u64 {
        return Err(Error::corrupt(
            log,
            0,
            Error::InvalidField {
                what: "segment size",
                value: size as i64,
            },
        ));
    }
    Ok(())
}

/// A tiny inline list of batch sizes: a read of a few batches (the common
/// point read is one) allocates nothing for its walk.
mod smallvec_lite {
    const INLINE: usize = 8;

    pub(super) enum Sizes {
        Inline([usize; INLINE], usize),
        Heap(Vec<usize>),
    }

    impl Sizes {
        pub(super) fn new() -> Sizes {
            Sizes::Inline([0; INLINE], 0)
        }

        pub(super) fn push(&mut self, v: usize) {
            match self {
                Sizes::Inline(a, n) if *n < INLINE => {
                    if let Some(slot) = a.get_mut(*n) {
                        *slot = v;
                    }
                    *n += 1;
                }
                Sizes::Inline(a, n) => {
                    let mut v2 = Vec::with_capacity(INLINE * 4);
                    v2.extend_from_slice(a.get(..*n).unwrap_or_default());
                    v2.push(v);
                    *self = Sizes::Heap(v2);
                }
                Sizes::Heap(h) => h.push(v),
            }
        }

        pub(super) fn is_empty(&self) -> bool {
            self.as_slice().is_empty()
        }

        pub(super) fn len(&self) -> usize {
            self.as_slice().len()
        }

        pub(super) fn as_slice(&self) -> &[usize] {
            match self {
                Sizes::Inline(a, n) => a.get(..*n).unwrap_or_default(),
                Sizes::Heap(h) => h,
            }
        }
    }
}

impl Segment {
    /// Last modification time of the `.log`, in ms since the epoch (retention
    /// falls back to it when the segment has no record timestamps); when it
    /// cannot be read, `i64::MAX`, so time retention keeps the segment.
    pub(crate) fn mtime_ms(&self) -> i64 {
        self.fs
            .metadata(&self.log_path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(i64::MAX, super::millis_i64)
    }
    /// The segment's three files.
    pub(crate) fn file_paths(&self) -> [PathBuf; 3] {
        let dir = crate::io::parent(&self.log_path);
        let (log, idx, tidx) = Self::paths(dir, self.base_offset);
        [log, idx, tidx]
    }

    /// Deletes the segment's files crash-safely: rename each to `.deleted`,
    /// fsync the directory, unlink. Open maps and descriptors stay valid, so
    /// readers holding this segment's bytes are unaffected.
    pub(crate) fn delete_files(&self) -> Result<()> {
        let dir = crate::io::parent(&self.log_path).to_owned();
        let mut renamed = Vec::new();
        for p in self.file_paths() {
            let gone = crate::io::with_suffix(&p, ".deleted");
            match self.fs.rename(&p, &gone) {
                Ok(()) => renamed.push(gone),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io("rename", &p, e)),
            }
        }
        crate::io::fsync_dir(&*self.fs, &dir)?;
        for p in renamed {
            self.fs
                .remove_file(&p)
                .map_err(|e| Error::io("delete", &p, e))?;
        }
        crate::io::fsync_dir(&*self.fs, &dir)
    }
}

impl Segment {
    /// Opens a sealed segment whose indexes are missing or stale, rebuilding
    /// and trimming them. A damaged batch is corruption (sealed segments are
    /// never cut).
    pub(crate) fn open_rebuilt(
        dir: &Path,
        base_offset: i64,
        config: &LogConfig,
    ) -> Result<Segment> {
        let (seg, _) = Segment::open(dir, base_offset, config)?;
        let outcome = seg.recover(
            u64::from(config.settings.index_interval_bytes),
            config.settings.segment_index_bytes,
            false,
        )?;
        if let Some((position, reason)) = outcome.error {
            return Err(Error::corrupt(seg.log_path(), position, reason));
        }
        seg.seal()?;
        seg.unpin();
        Ok(seg)
    }
}
