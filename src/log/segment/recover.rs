//! Recovery scans: checking what is on disk batch by batch (header, CRC,
//! offsets) and rebuilding the indexes from it, for recovery at open, for
//! indexes that fail their checks, and for a read-only handle following
//! another process's appends. A scan only reads the `.log`; cutting a torn
//! tail is the caller's decision ([`Segment::truncate`]).

use super::{Files, IndexCursor, Segment};
use crate::error::{Corruption, Error, Result};
use crate::record::{BatchScan, DecodeError, OffsetOrder, HEADER_SIZE, LOG_OVERHEAD};
use std::path::Path;
use std::sync::atomic::Ordering;

/// What scanning a segment's `.log` found.
#[derive(Debug)]
pub(crate) struct ScanOutcome {
    /// Bytes of whole valid batches from the start.
    pub(crate) valid_size: u64,
    /// Offset after the last valid batch (base offset if none).
    pub(crate) next_offset: i64,
    /// The first invalid batch: its position and what is wrong.
    pub(crate) error: Option<(u64, Corruption)>,
    /// The scan stopped at zeros that run to the end of the file: what
    /// durable appends write ahead of themselves (see
    /// [`Segment::append`]), never part of a batch. Recovery takes them
    /// as the end of the segment, not as damage.
    pub(crate) zero_tail: bool,
}

impl ScanOutcome {
    /// The outcome, or the damage it found as [`Error::Corrupt`] in `path`
    /// (where no damage may be cut: a sealed segment).
    pub(crate) fn into_result(self, path: &Path) -> Result<ScanOutcome> {
        match self.error {
            Some((position, kind)) => Err(Error::corrupt(path, position, kind)),
            None => Ok(self),
        }
    }
}

impl Segment {
    /// Scans the `.log` from the start, checking every batch (header, CRC,
    /// offsets increasing and ≥ the base), rebuilding both indexes as it goes.
    /// Stops at the first invalid batch. Touches nothing on disk except the
    /// index files; the caller decides whether to truncate. With
    /// `contiguous` (the last segment, which compaction never touches) each
    /// batch must start right after the previous one: the base offset is
    /// outside the CRC, so a damaged one must not move the log end.
    pub(crate) fn recover(&self, contiguous: bool) -> Result<ScanOutcome> {
        let f = self.files()?;
        self.recover_in(&f, !self.writable, contiguous)
    }

    /// [`recover`](Self::recover) with the files open; the indexes are
    /// rebuilt in memory when `in_memory`.
    pub(super) fn recover_in(
        &self,
        f: &Files,
        in_memory: bool,
        contiguous: bool,
    ) -> Result<ScanOutcome> {
        let index_bytes = if in_memory { 0 } else { self.index_bytes };
        for index in [
            &mut f.offset_index.write().file,
            &mut f.time_index.write().file,
        ] {
            index.make_writable(index_bytes)?;
            index.truncate_entries(0);
        }
        self.max_timestamp.store(-1, Ordering::Release);
        self.offset_of_max_timestamp
            .store(self.base_offset, Ordering::Release);
        self.first_batch_timestamp.store(-1, Ordering::Release);
        let mut cursor = IndexCursor::default();
        let size = self.size();
        self.scan_in(f, 0..size, self.base_offset, &mut cursor, contiguous)
    }

    /// A sealed segment opened with stale or missing indexes: rebuilt from
    /// the `.log` (damage is corruption: sealed segments are never cut),
    /// trimmed and synced, and the segment unpinned.
    pub(super) fn rebuild_sealed(&self) -> Result<()> {
        self.recover(false)?.into_result(&self.paths.log)?;
        self.seal()?;
        self.unpin();
        Ok(())
    }

    /// Read-only view: rebuilds the indexes in memory from the whole file
    /// and publishes the valid prefix (another process may be mid-append).
    pub(crate) fn scan_all_read_only(
        &self,
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
        let out = self.scan_in(&f, 0..len, self.base_offset, cursor, contiguous)?;
        self.size.store(out.valid_size, Ordering::Release);
        Ok(out)
    }

    /// Read-only view: scans what another process appended since the last
    /// look and publishes it. Returns the new next offset, or None when
    /// nothing new is whole yet.
    pub(crate) fn catch_up(
        &self,
        next_offset: i64,
        cursor: &mut IndexCursor,
    ) -> Result<Option<i64>> {
        let (size, len) = (self.size(), self.file_len()?);
        if len <= size {
            return Ok(None);
        }
        // Only the last segment grows, and it is never compacted.
        let f = self.files()?;
        // Zeros where the next batch would start: the writer's zeros
        // written ahead of its appends, with nothing appended over them
        // yet (a batch starts with its offset and a length of at least a
        // header). Not scanned again at every look.
        let head = self.raw(&f, size, len.min(size + LOG_OVERHEAD as u64))?;
        if all_zero(&head) {
            return Ok(None);
        }
        let out = self.scan_in(&f, size..len, next_offset, cursor, true)?;
        if out.valid_size == size {
            return Ok(None);
        }
        self.size.store(out.valid_size, Ordering::Release);
        Ok(Some(out.next_offset))
    }

    /// Checks and indexes the batches in `range` of the `.log`, which may
    /// lie past the published size (recovery, or a read-only view catching
    /// up with another process's appends), with the one batch scanner.
    /// Stops at the first invalid batch; `contiguous` as for
    /// [`Segment::recover`].
    fn scan_in(
        &self,
        f: &Files,
        range: std::ops::Range<u64>,
        next_offset: i64,
        cursor: &mut IndexCursor,
        contiguous: bool,
    ) -> Result<ScanOutcome> {
        let bytes = self.raw(f, range.start, range.end)?;
        let order = if contiguous {
            OffsetOrder::Contiguous
        } else {
            OffsetOrder::Increasing
        };
        let mut scan = BatchScan::new(&bytes, range.start).offsets(order, next_offset);
        let mut outcome = ScanOutcome {
            valid_size: range.start,
            next_offset,
            error: None,
            zero_tail: false,
        };
        for batch in scan.by_ref() {
            let h = batch.header;
            let refused = self.check_offsets(&h, None).err().or_else(|| {
                let full =
                    f.offset_index.read().file.is_full() || f.time_index.read().file.is_full();
                full.then_some(Corruption::IndexOverflow {
                    offset: h.base_offset,
                })
            });
            if let Some(kind) = refused {
                outcome.error = Some((batch.position, kind));
                return Ok(outcome);
            }
            self.index_batches(f, batch.position, &[h], cursor);
            outcome.valid_size = batch.end();
            outcome.next_offset = h.next_offset();
        }
        if let Some(end) = scan.end() {
            if let (Some(position), Some(e)) = (end.position(), end.error()) {
                outcome.error = Some((position, Corruption::Batch(e.clone())));
                let rest = usize::try_from(position.saturating_sub(range.start)).ok();
                outcome.zero_tail = rest.and_then(|at| bytes.get(at..)).is_some_and(all_zero);
            }
        }
        Ok(outcome)
    }

    /// Where the zeros end a sealed segment's `.log`, if it ends in zeros
    /// durable appends wrote ahead of themselves whose cut at its roll
    /// had not reached the disk: the batch headers are followed from the
    /// last offset-index entry (or the start) to where one is all zeros
    /// and so is the rest of the file. `None` when the batches run to the
    /// end, or stop at anything else (the segment's reads report that).
    pub(crate) fn zeros_after_batches(&self) -> Result<Option<u64>> {
        let f = self.files()?;
        let size = self.size();
        let last = f.offset_index.read().last();
        let mut pos = last.map_or(0, |e| u64::from(e.position));
        while pos < size {
            match self.header_at(&f, pos, size) {
                Ok(Some(h)) if h.size() > 0 => pos += h.size() as u64,
                Err(e @ Error::Io { .. }) => return Err(e),
                // No batch starts here: zeros to the end, or damage.
                _ => return Ok(all_zero(&self.raw(&f, pos, size)?).then_some(pos)),
            }
        }
        Ok(None)
    }

    /// Cuts the `.log` to `size` bytes (recovery of a torn tail). Must not be
    /// called below a size readers may have seen.
    pub(crate) fn truncate(&self, size: u64) -> Result<()> {
        self.fs
            .set_len(&self.files()?.file, &self.paths.log, size)
            .map_err(|e| Error::io("truncate", &self.paths.log, e))?;
        self.zeroed_end.store(0, Ordering::Relaxed);
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
        let damaged = |pos, kind: Corruption| Error::corrupt(&self.paths.log, pos, kind);
        while let Some(h) = self.header_at(&f, pos, size)? {
            let contiguous = match expected_last.take() {
                Some(last) => h.last_offset() == last,
                None => h.base_offset == next,
            };
            if !contiguous || h.last_offset_delta < 0 {
                let kind = Corruption::BatchOffsets {
                    base_offset: h.base_offset,
                    last_offset: h.last_offset(),
                    rule: "do not continue the last segment's offsets",
                };
                return Err(damaged(pos, kind));
            }
            if pos + h.size() as u64 > size {
                return Err(damaged(pos, truncated(h.size(), size - pos)));
            }
            next = h.next_offset();
            pos += h.size() as u64;
        }
        if pos != size {
            let needed = LOG_OVERHEAD.max(HEADER_SIZE);
            return Err(damaged(pos, truncated(needed, size.saturating_sub(pos))));
        }
        Ok(next)
    }
}

/// Whether `bytes` are all zeros (what durable appends write ahead of
/// themselves).
fn all_zero(bytes: &[u8]) -> bool {
    bytes.iter().all(|&b| b == 0)
}

/// A batch cut short by the end of the segment.
fn truncated(needed: usize, available: u64) -> Corruption {
    Corruption::Batch(DecodeError::Truncated {
        what: "batch",
        needed,
        available: available as usize,
    })
}
