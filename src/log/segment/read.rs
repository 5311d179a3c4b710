//! Reading a segment: bytes by position (a map slice, or one `pread`),
//! batch headers while walking, the batch holding an offset (through the
//! offset index), whole CRC-checked batches, and time lookups.
//!
//! Every walk checks each header's offsets before trusting its length: the
//! base offset lies outside the CRC, so a damaged one is reported as
//! corruption, never taken for a later batch.

use super::read_buffer;
use super::{verified, Files, Segment};
use crate::error::{Corruption, Error, Result};
use crate::io::mmap;
use crate::log::config::ReadMode;
use crate::record::{BatchHeader, DecodeError, RecordBatch, HEADER_SIZE};
use bytes::Bytes;

impl Segment {
    /// Maps at least `len` bytes of the `.log` (mmap mode only).
    pub(super) fn remap(&self, f: &Files, len: usize) -> Result<()> {
        if self.read_mode != ReadMode::Mmap {
            return Ok(());
        }
        let map = mmap::map_read(&f.file, len)
            .map_err(|e| Error::io("map segment", &self.paths.log, e))?;
        *f.map.write() = map;
        Ok(())
    }

    /// The bytes `[start, end)` of the `.log` by `pread`, into one of the
    /// thread's last read buffers when nothing else holds it any more
    /// (`read_buffer.rs`).
    fn pread(&self, f: &Files, start: u64, end: u64) -> Result<Bytes> {
        let mut buf = read_buffer::take((end - start) as usize);
        self.fs
            .read_at(&f.file, &self.paths.log, &mut buf, start)
            .map_err(|e| Error::io("read segment", &self.paths.log, e))?;
        Ok(read_buffer::keep(buf))
    }

    /// The bytes `[start, end)` of the `.log`, which may lie past the
    /// published size (for scans); the mapping grows to cover them.
    pub(super) fn raw(&self, f: &Files, start: u64, end: u64) -> Result<Bytes> {
        if self.read_mode == ReadMode::Mmap {
            if f.map.read().len() < end as usize {
                self.remap(f, end as usize)?;
            }
            let map = f.map.read();
            if end as usize <= map.len() {
                return Ok(map.slice(start as usize..end as usize));
            }
        }
        self.pread(f, start, end)
    }

    /// The bytes `[start, end)` of the `.log`, which must be below `size`.
    pub(super) fn bytes_in(&self, f: &Files, start: u64, end: u64) -> Result<Bytes> {
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
                if end as usize > map.len() {
                    let eof = std::io::ErrorKind::UnexpectedEof.into();
                    return Err(Error::io("map segment", &self.paths.log, eof));
                }
                Ok(map.slice(start as usize..end as usize))
            }
            ReadMode::Pread => self.pread(f, start, end),
        }
    }

    /// The batch header at `position`, if a whole header lies below `limit`.
    pub(super) fn header_at(
        &self,
        f: &Files,
        position: u64,
        limit: u64,
    ) -> Result<Option<BatchHeader>> {
        let end = position + HEADER_SIZE as u64;
        if end > limit {
            return Ok(None);
        }
        let parsed = if self.read_mode == ReadMode::Mmap {
            let map = f.map.read();
            match map.get(position as usize..end as usize) {
                Some(h) => BatchHeader::parse(h),
                None => {
                    drop(map);
                    BatchHeader::parse(&self.bytes_in(f, position, end)?)
                }
            }
        } else {
            let mut h = [0u8; HEADER_SIZE];
            self.fs
                .read_at(&f.file, &self.paths.log, &mut h, position)
                .map_err(|e| Error::io("read segment", &self.paths.log, e))?;
            BatchHeader::parse(&h)
        };
        parsed
            .map(Some)
            .map_err(|e| Error::corrupt(&self.paths.log, position, e))
    }

    /// Checks a batch header's offsets while walking the segment: after
    /// `prev_last` (the previous batch's last offset) or, for the first
    /// batch walked, at or after the segment's base offset
    /// ([`BatchHeader::follows`]), and near enough the base that relative
    /// offsets fit 32 bits.
    pub(super) fn check_offsets(
        &self,
        h: &BatchHeader,
        prev_last: Option<i64>,
    ) -> std::result::Result<(), Corruption> {
        let next = prev_last.map_or(self.base_offset, |p| p.saturating_add(1));
        if !h.follows(next) {
            return Err(Corruption::Batch(DecodeError::BatchOutOfOrder {
                base_offset: h.base_offset,
                last_offset: h.last_offset(),
                previous: next.saturating_sub(1),
            }));
        }
        if h.last_offset() - self.base_offset > i64::from(i32::MAX) {
            return Err(Corruption::BatchOffsets {
                base_offset: h.base_offset,
                last_offset: h.last_offset(),
                rule: "lie more than 2^31 offsets past their segment's base",
            });
        }
        Ok(())
    }

    /// The next batch header while walking the segment, its offsets checked
    /// against the segment and `prev_last` (the previous batch's last
    /// offset).
    fn next_header(
        &self,
        f: &Files,
        position: u64,
        limit: u64,
        prev_last: Option<i64>,
    ) -> Result<Option<BatchHeader>> {
        let h = self.header_at(f, position, limit)?;
        if let Some(h) = &h {
            self.check_offsets(h, prev_last)
                .map_err(|kind| Error::corrupt(&self.paths.log, position, kind))?;
        }
        Ok(h)
    }

    /// Finds the position of the first batch whose last offset is ≥ `target`:
    /// the batch the offset index's next entry points at when it holds
    /// `target`, else by scanning forward from the entry found. None if no
    /// such batch lies below `limit`.
    fn find_position_in(
        &self,
        f: &Files,
        target: i64,
        limit: u64,
    ) -> Result<Option<(u64, BatchHeader)>> {
        let (entry, next) = f.offset_index.read().lookup(target);
        // Entries are (a batch's last offset, its position). Unless the
        // entry found ends at `target`, its batch ends before it, and the
        // batch the next entry points at is the one holding `target` when
        // it starts at or before it (batches in a segment are in offset
        // order): one header read instead of the found batch's and then
        // the next one's. Anything else scans, as below.
        if let Some(n) = next.filter(|_| entry.offset < target) {
            let position = u64::from(n.position);
            if let Ok(Some(h)) = self.next_header(f, position, limit, None) {
                if h.base_offset <= target && h.last_offset() == n.offset {
                    return Ok(Some((position, h)));
                }
            }
        }
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
    /// [`read_batches`](Self::read_batches) does, opening the files once.
    /// `check` sees the first batch's position and header before anything
    /// is read.
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

    /// Checks the batches from the one holding `from` on, below
    /// `max_offset` and up to `max_bytes` past the batch holding `next`, as
    /// a read does (each batch once per process, marked in the verified
    /// set), and drops them: a read-ahead (`log::read_ahead`). Returns the
    /// offset after the last batch checked (`None`: none was). Only while
    /// the segment's files are open: it never opens them, nor counts as a
    /// use of them.
    pub(crate) fn check_ahead(
        &self,
        from: i64,
        next: i64,
        max_bytes: usize,
        max_offset: i64,
    ) -> Option<i64> {
        let f = self.slot.files.read().clone()?;
        let limit = self.size();
        let (ahead_of, at_next) = self.find_position_in(&f, next, limit).ok()??;
        let (pos, h) = if from == next {
            (ahead_of, at_next)
        } else {
            self.find_position_in(&f, from, limit).ok()??
        };
        let room = (ahead_of + max_bytes as u64).checked_sub(pos)?;
        let room = usize::try_from(room).ok().filter(|&r| r > 0)?;
        let batches = self
            .read_batches_in(&f, pos, room, limit, max_offset, Some(h))
            .ok()?;
        Some(batches.last()?.last_offset() + 1)
    }

    /// How many of the segment's batches this process has verified.
    #[cfg(test)]
    pub(crate) fn verified_batches(&self) -> usize {
        self.files().map_or(0, |f| f.verified.len())
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
        let mut count = 0usize;
        let mut prev = None;
        let mut known = first;
        loop {
            if count > 0 && (end - position) as usize >= max_bytes {
                // Full: the next batch cannot fit, so its header (a likely
                // cache miss for a point read) need not be read.
                break;
            }
            let h = match known.take() {
                Some(h) => Some(h),
                None => match self.next_header(f, end, limit, prev) {
                    Ok(h) => h,
                    // The batches before a damaged one are returned; a read
                    // from its offset reports it (as a Kafka fetch stops at
                    // a corrupt batch and the consumer fails there).
                    Err(_) if count > 0 => break,
                    Err(e) => return Err(e),
                },
            };
            let Some(h) = h else { break };
            if h.last_offset() >= max_offset {
                if h.base_offset < max_offset {
                    // No batch straddles the high watermark (it only ever
                    // sits at batch boundaries): this header is damaged.
                    // Report it rather than skip its records.
                    let to = (end + h.size() as u64).min(limit);
                    RecordBatch::decode(&self.bytes_in(f, end, to)?)
                        .map_err(|e| Error::corrupt(&self.paths.log, end, e))?;
                }
                break;
            }
            prev = Some(h.last_offset());
            let next = end + h.size() as u64;
            if next > limit || (count > 0 && (next - position) as usize > max_bytes) {
                break;
            }
            count += 1;
            end = next;
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let buf = self.bytes_in(f, position, end)?;
        let mut out = Vec::with_capacity(count);
        let mut at = 0usize;
        while at < buf.len() {
            let here = position + at as u64;
            let damaged = |e| Error::corrupt(&self.paths.log, here, e);
            // The walk above parsed each of these headers: their lengths
            // tile `buf` exactly.
            let checked = BatchHeader::parse(&buf.slice(at..)).and_then(|h| {
                let size = h.size();
                Ok((
                    verified::batch_at(&f.verified, buf.slice(at..at + size), here)?,
                    size,
                ))
            });
            match checked {
                Ok((b, size)) => {
                    at += size;
                    out.push(b);
                }
                // As above: the good batches first, the damage on the read
                // that starts at it.
                Err(_) if !out.is_empty() => break,
                Err(e) => return Err(damaged(e)),
            }
        }
        Ok(out)
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
            .map_or(self.base_offset, |e| e.offset)
            .max(min_offset);
        let limit = self.size();
        let Some((mut pos, _)) = self.find_position_in(&f, from, limit)? else {
            return Ok(None);
        };
        while let Some(h) = self.header_at(&f, pos, limit)? {
            if h.last_offset() >= max_offset {
                break;
            }
            if h.max_timestamp >= ts {
                let damaged = |e| Error::corrupt(&self.paths.log, pos, e);
                for b in &self.read_batches_in(&f, pos, 0, limit, max_offset, None)? {
                    for r in b.records().map_err(damaged)? {
                        let r = r.map_err(damaged)?;
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
