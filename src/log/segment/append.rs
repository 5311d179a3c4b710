//! Writing a segment: appends with their index entries, making a reopened
//! segment writable again, sealing (now, or deferred to a background
//! flush), and fdatasync. A failed fdatasync is kept in the segment's slot
//! and reported by every later sync: it is never retried.

use super::{Files, Segment};
use crate::error::{Error, Result};
use crate::io::OpenMode;
use crate::record::BatchHeader;
use std::fs::File;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The most disk [`Segment::append`] reserves past the `.log`'s end.
const RESERVE_AHEAD: u64 = 4 << 20;

/// Reservations end on a multiple of this, and start once a segment holds
/// as much (so the many small partitions of a store reserve nothing).
const RESERVE_STEP: u64 = 1 << 20;

/// The most zeros a durable append writes past its end (see
/// [`Segment::zeros_ahead`]).
const ZERO_AHEAD: u64 = 1 << 20;

/// Zeros written ahead end on a multiple of this (a page).
const ZERO_STEP: u64 = 4096;

/// Only durable appends of at most this many bytes write zeros ahead: each
/// byte is then written twice (zeros, then data), which costs more than
/// the journal commit saved once an append is larger (fdatasynced writes
/// of 11, 38, 49, 64 and 103 KB here: 1.7, 1.3, 1.1, 1.05 and 0.8 × as
/// fast).
const ZERO_AHEAD_APPENDS: u64 = 64 << 10;

/// Writer-side bookkeeping for index building: bytes appended since the
/// last offset-index entry.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IndexCursor {
    pub(crate) bytes_since_last_entry: u64,
}

/// Why [`Segment::append`] failed.
#[derive(Debug)]
pub(crate) enum AppendFailure {
    /// Nothing was appended and the file is as it was.
    Clean(Error),
    /// The write failed and cutting the file back to its published size
    /// failed too: the `.log` may end in a partial batch, and the log must
    /// refuse writes until reopened.
    Torn(Error),
}

impl Segment {
    /// Appends already-validated batches (the concatenation of `parts`) at
    /// the end of the `.log` with one write, then indexes them. On a write
    /// error the file is cut back to the published size. `durable`: the
    /// append is fdatasynced next (see [`reserve_ahead`](Self::reserve_ahead)).
    pub(crate) fn append(
        &self,
        parts: &[&[u8]],
        batches: &[BatchHeader],
        cursor: &mut IndexCursor,
        durable: bool,
    ) -> std::result::Result<(), AppendFailure> {
        let f = self.files().map_err(AppendFailure::Torn)?;
        // Disk for the index entries this append may add, reserved before
        // the log is written: a full disk fails the append here, with
        // nothing written.
        let more = batches.len();
        f.offset_index
            .write()
            .file
            .reserve(more)
            .and_then(|()| f.time_index.write().file.reserve(more))
            .map_err(AppendFailure::Torn)?;
        let start = self.size();
        let log = &self.paths.log;
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let end = start + len;
        let zeroed = self.zeroed_end.load(Ordering::Relaxed);
        let zeros = if durable {
            self.stop_reserving(&f);
            self.zeros_ahead(len, end, zeroed)
        } else {
            self.reserve_ahead(&f, start, end);
            Vec::new()
        };
        let written = match parts {
            [data] => self.fs.write_at(&f.file, log, data, start),
            _ => self.fs.write_parts_at(&f.file, log, parts, start),
        };
        if let Err(e) = written {
            // Cut back whatever part was written (and any zeros past it),
            // so the next append starts at a batch boundary; if even that
            // fails the caller poisons.
            let err = Error::io("write", log, e);
            return Err(match self.fs.set_len(&f.file, log, start) {
                Ok(()) => {
                    if zeroed != u64::MAX {
                        self.zeroed_end.store(0, Ordering::Relaxed);
                    }
                    AppendFailure::Clean(err)
                }
                Err(_) => AppendFailure::Torn(err),
            });
        }
        if !zeros.is_empty() {
            self.write_zeros(&f, end, &zeros);
        } else if end >= zeroed {
            self.zeroed_end.store(0, Ordering::Relaxed);
        }
        self.slot.written.fetch_add(1, Ordering::AcqRel);
        self.write_behind(&f, start, end);
        self.index_batches(&f, start, batches, cursor);
        self.size.store(end, Ordering::Release);
        Ok(())
    }

    /// Before an append of `[start, end)` that would pass the disk
    /// reserved past the `.log`'s end, in a segment of at least
    /// [`RESERVE_STEP`]: reserves more, as much again as the segment will
    /// then hold, up to [`RESERVE_AHEAD`] (and a step's rounding), never
    /// past `segment.bytes`. So a segment holds at most its own size again,
    /// and 5 MiB, of disk past its end, until it is sealed (also while its
    /// partition is idle). A buffered write into blocks already allocated skips
    /// ext4's delayed-allocation bookkeeping for each new page
    /// (`ext4_da_get_block_prep`, `ext4_da_reserve_space`: a fifth of a
    /// one-thread producer's sending time in `perf record`). The file's
    /// size stays what was written; sealing the segment gives the rest
    /// back. If reserving fails (a full disk, a filesystem without it),
    /// what it took is given back and the segment reserves no more:
    /// appends go on as before.
    fn reserve_ahead(&self, f: &Files, start: u64, end: u64) {
        let reserved = self.reserved_end.load(Ordering::Relaxed);
        if end <= reserved || end < RESERVE_STEP || reserved == u64::MAX || !self.writable {
            return;
        }
        let from = reserved.max(start);
        let to = end
            .saturating_add(end.min(RESERVE_AHEAD))
            .next_multiple_of(RESERVE_STEP)
            .min(self.max_bytes.max(end));
        if to <= from {
            return;
        }
        let log = &self.paths.log;
        if self
            .fs
            .reserve_past_end(&f.file, log, from, to - from)
            .is_ok()
        {
            self.reserved_end.store(to, Ordering::Relaxed);
        } else {
            self.reserved_end.store(u64::MAX, Ordering::Relaxed);
            // The file ends at `start`: this only frees blocks past it.
            let _ = self.fs.set_len(&f.file, log, start);
        }
    }

    /// The zeros a durable append of `len` bytes ending at `end` writes
    /// after itself (`write_zeros`; its fdatasync covers both), when it
    /// passes the zeros written before (up to `zeroed`) and is at most
    /// [`ZERO_AHEAD_APPENDS`]: as many as the segment will then hold, up
    /// to [`ZERO_AHEAD`], ending on a page, never past `segment.bytes`.
    /// Later durable appends then overwrite blocks the file already
    /// holds, and their fdatasync writes the data alone: an append that
    /// extends the file also changes its size, which ext4 commits to its
    /// journal at every fdatasync (writes of 10,997 bytes, each
    /// fdatasynced, on this machine's disk: 289–302 µs each extending the
    /// file, 163–174 µs with zeros written ahead).
    /// So a segment holds at most its own size, and 1 MiB, of zeros past
    /// its end until it is sealed; a crash leaves them, and recovery takes
    /// a `.log` ending in zeros as ending there. (Kafka's `preallocate`
    /// leaves its active segments ending in zeros too.)
    fn zeros_ahead(&self, len: u64, end: u64, zeroed: u64) -> Vec<u8> {
        if end <= zeroed || len > ZERO_AHEAD_APPENDS || !self.writable {
            return Vec::new();
        }
        let to = end
            .saturating_add(end.min(ZERO_AHEAD))
            .next_multiple_of(ZERO_STEP)
            .min(self.max_bytes);
        // `vec!` of zeros takes pages the kernel zeroed: nothing is filled.
        vec![0; usize::try_from(to.saturating_sub(end)).unwrap_or(0)]
    }

    /// Writes `zeros` at `end`, the end of the append just written (whose
    /// fdatasync next makes both durable with one journal commit). A write
    /// refused (a full disk, a file-size limit) fails nothing: it is cut
    /// back, and the segment writes no more zeros (`zeroed_end` is then
    /// `u64::MAX`: whatever part was written and could not be cut back is
    /// cut off at sealing).
    fn write_zeros(&self, f: &Files, end: u64, zeros: &[u8]) {
        let log = &self.paths.log;
        let zeroed = match self.fs.write_at(&f.file, log, zeros, end) {
            Ok(()) => end + zeros.len() as u64,
            Err(_) => {
                let _ = self.fs.set_len(&f.file, log, end);
                u64::MAX
            }
        };
        self.zeroed_end.store(zeroed, Ordering::Relaxed);
    }

    /// Cuts off the zeros durable appends wrote past the `.log`'s end
    /// (sealing, or a truncation). A failure is reported: a sealed segment
    /// must end at its last batch.
    fn trim_zeros(&self, f: &Files) -> Result<()> {
        if self.zeroed_end.load(Ordering::Relaxed) == 0 {
            return Ok(());
        }
        let log = &self.paths.log;
        self.fs
            .set_len(&f.file, log, self.size())
            .map_err(|e| Error::io("truncate", log, e))?;
        self.zeroed_end.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// A durable append: this segment reserves no more, and gives back what
    /// it holds. An fdatasync after a write into reserved blocks also
    /// records them as written (ext4 keeps them as unwritten extents until
    /// then), which made durable appends of 100 records ~19 % slower (the
    /// peer bench's S2 child, 8 rounds alternately: 374 k against 461 k
    /// records/s).
    fn stop_reserving(&self, f: &Files) {
        self.release_reserved(f);
        self.reserved_end.store(u64::MAX, Ordering::Relaxed);
    }

    /// Gives back the disk this segment reserved past the `.log`'s end
    /// (it takes no more appends): a truncation to the file's own length,
    /// made only if it reserved some, as the truncation also sets the
    /// file's modification time, which time retention reads for segments
    /// without timestamps (a segment reserves only through appends, so
    /// only a writable one has). A failure leaves the blocks reserved until
    /// the segment is deleted, nothing else.
    fn release_reserved(&self, f: &Files) {
        let reserved = self.reserved_end.swap(0, Ordering::Relaxed);
        if reserved != 0 && reserved != u64::MAX {
            self.truncate_to_own_length(f);
        }
    }

    /// What a crash left reserved past the end of a reopened last segment:
    /// given back if the file holds disk past its end (Linux's block count
    /// says so), left alone otherwise.
    fn release_left_reserved(&self, f: &Files) {
        self.reserved_end.store(0, Ordering::Relaxed);
        if self.writable && self.holds_disk_past_end() {
            self.truncate_to_own_length(f);
        }
    }

    #[cfg(target_os = "linux")]
    fn holds_disk_past_end(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        self.fs
            .metadata(&self.paths.log)
            .is_ok_and(|m| m.blocks().saturating_mul(512) > m.len().next_multiple_of(RESERVE_STEP))
    }

    #[cfg(not(target_os = "linux"))]
    fn holds_disk_past_end(&self) -> bool {
        false
    }

    fn truncate_to_own_length(&self, f: &Files) {
        if let Ok(len) = self.fs.len(&f.file, &self.paths.log) {
            let _ = self.fs.set_len(&f.file, &self.paths.log, len);
        }
    }

    /// After an append of `[start, end)`: when it crossed a multiple of
    /// `writeback_bytes`, has the disk writes of the whole steps before
    /// the last one crossed (those since the previous crossing) started, so
    /// buffered appends stream to disk as they go and a later flush waits
    /// for the last step only. Each byte is handed over once: consecutive
    /// appends' ranges do not overlap. The system call runs on a
    /// write-behind thread (it maps and submits the pages, work the
    /// appending thread need not wait for; see `writeback`).
    fn write_behind(&self, f: &Arc<Files>, start: u64, end: u64) {
        let step = self.writeback_bytes;
        if step == 0 || end / step == start / step {
            return;
        }
        let (from, to) = (start / step * step, end / step * step);
        let (f, fs, path) = (Arc::clone(f), self.fs.clone(), self.paths.log.clone());
        super::writeback::submit(
            to - from,
            Box::new(move || {
                // A hint: the writes it starts report their errors to the
                // next fdatasync, which poisons the log if one failed;
                // failing to start them changes nothing that was promised.
                let _ = fs.start_writeback(&f.file, &path, from, to - from);
            }),
        );
    }

    /// Adds index entries for batches that start at `start`, Kafka's way: an
    /// entry when more than `index.interval.bytes` were appended since the
    /// last one, counted before the batch.
    pub(super) fn index_batches(
        &self,
        f: &Files,
        start: u64,
        batches: &[BatchHeader],
        cursor: &mut IndexCursor,
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
            if cursor.bytes_since_last_entry > self.index_interval {
                // Positions fit 32 bits: a segment is at most 2 GiB.
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

    /// Prepares a reopened last segment for appends: indexes writable again,
    /// the map sized for appends.
    pub(crate) fn make_active(&self, map_capacity: usize) -> Result<()> {
        // Pinned while it is made writable, so it is not evicted half-way.
        self.slot.pinned.store(true, Ordering::Release);
        let f = self.files()?;
        self.release_left_reserved(&f);
        f.offset_index
            .write()
            .file
            .make_writable(self.index_bytes)?;
        f.time_index.write().file.make_writable(self.index_bytes)?;
        let capacity = map_capacity.max(self.size() as usize);
        self.remap(&f, capacity)?;
        if self.writable {
            self.active_capacity
                .store(capacity as u64, Ordering::Release);
            self.slot.pinned.store(false, Ordering::Release);
            self.cache.register(&self.slot);
        }
        Ok(())
    }

    /// Keeps the files open (not evicted) while the returned handle lives.
    pub(crate) fn hold(&self) -> Result<impl Sized> {
        self.files()
    }

    /// Seals the segment: zeros past its end cut off, final time-index
    /// entry, indexes trimmed and fsynced, and the `.log` fsynced.
    pub(crate) fn seal(&self) -> Result<()> {
        let f = self.files()?;
        self.seal_in(&f)
    }

    pub(super) fn seal_in(&self, f: &Files) -> Result<()> {
        self.release_reserved(f);
        self.trim_zeros(f)?;
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

    /// Seals the segment at a roll without waiting for the disk: zeros past
    /// its end cut off, indexes trimmed, nothing fsynced. Returns the job
    /// that makes it durable (fdatasync of the `.log`, which also makes the
    /// cut durable, fsync of both indexes, then of the directory, which by
    /// then also holds the next segment), which the log runs in the
    /// background, as Kafka flushes a rolled segment asynchronously. Until
    /// that job has succeeded the segment lies above the recovery point,
    /// and recovery scans it.
    pub(crate) fn seal_deferred(&self) -> Result<impl FnOnce() -> Result<()> + Send + 'static> {
        let f = self.files()?;
        self.release_reserved(&f);
        self.trim_zeros(&f)?;
        self.trim_indexes(&f, false)?;
        let fs = self.fs.clone();
        let paths = self.paths.clone();
        let slot = Arc::clone(&self.slot);
        let written = slot.written.load(Ordering::Acquire);
        Ok(move || {
            if let Err(e) = fs.sync_data(&f.file, &paths.log) {
                // Never retried, not even by an eviction.
                *slot.sync_error.lock() = Some(e.raw_os_error().unwrap_or(libc::EIO));
                return Err(Error::io("fsync", &paths.log, e));
            }
            slot.synced.fetch_max(written, Ordering::AcqRel);
            for path in [&paths.index, &paths.time_index] {
                // Retention may have deleted the segment meanwhile: nothing
                // left to make durable then.
                let file = match fs.open(path, OpenMode::Read) {
                    Ok(file) => file,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(Error::io("open index", path, e)),
                };
                fs.sync_all(&file, path)
                    .map_err(|e| Error::io("fsync index", path, e))?;
            }
            // The roll created the next segment before this runs: its
            // directory entry is durable from here on too.
            crate::io::fsync_dir(&*fs, crate::io::parent(&paths.log))
        })
    }

    /// fdatasync of the `.log`.
    pub(crate) fn sync(&self) -> Result<()> {
        self.sync_file(&self.files()?.file)
    }

    /// fdatasync of this segment's `.log` through an already open handle
    /// (also while the segment is being loaded, when `files()` would wait on
    /// the load itself). An fdatasync that failed at an eviction or in a
    /// background flush is reported here, and never retried.
    fn sync_file(&self, file: &File) -> Result<()> {
        let log = &self.paths.log;
        if let Some(errno) = *self.slot.sync_error.lock() {
            let failed = std::io::Error::from_raw_os_error(errno);
            return Err(Error::io("fsync", log, failed));
        }
        let written = self.slot.written.load(Ordering::Acquire);
        self.fs
            .sync_data(file, log)
            .map_err(|e| Error::io("fsync", log, e))?;
        self.slot.synced.fetch_max(written, Ordering::AcqRel);
        Ok(())
    }
}
