//! Reads: whole batches from an offset, point reads of one record, time
//! lookups, and waiting for new data. Readers take no lock on the append
//! path: the segment list's read lock for a moment, then the segment's own
//! (lock-free for mapped bytes).

use super::PartitionLog;
use crate::error::{Corruption, Error, Result};
use crate::log::segment::Segment;
use crate::log::LogRead;
use crate::record::LogRecord;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

impl PartitionLog {
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
        self.read_located(offset, max_bytes).map(|(read, _)| read)
    }

    /// [`read`](Self::read), with the id of the segment its batches come
    /// from (`None` when there are none).
    fn read_located(&self, offset: i64, max_bytes: usize) -> Result<(LogRead, Option<u64>)> {
        self.refresh()?;
        match self.read_segments(offset, max_bytes) {
            // The writer may have rewritten a segment between the refresh
            // and this read: look again once before calling it damage.
            Err(Error::Corrupt { .. }) if self.read_only => {
                self.reload_after_rewrite()?;
                self.read_segments(offset, max_bytes)
            }
            other => other,
        }
    }

    fn read_segments(&self, offset: i64, max_bytes: usize) -> Result<(LogRead, Option<u64>)> {
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
        let mut from = None;
        if offset < hw {
            // Walk segments from the one holding `offset`, looking each up
            // by base offset (retention may drop older ones meanwhile).
            let mut after = None;
            loop {
                let Some((seg, next_base)) = self.segment_for(offset, after) else {
                    break;
                };
                after = Some(seg.base_offset());
                let limit = seg.size();
                // The base offset is outside the CRC: a batch claiming
                // offsets past its segment is damaged, not "later".
                let seg_end = next_base.unwrap_or_else(|| self.log_end_offset());
                let found = seg.read_from(offset, max_bytes, limit, hw, |pos, h| {
                    if h.last_offset() >= seg_end {
                        let kind = Corruption::BatchOffsets {
                            base_offset: h.base_offset,
                            last_offset: h.last_offset(),
                            rule: "run past the next segment's base offset",
                        };
                        return Err(Error::corrupt(seg.log_path(), pos, kind));
                    }
                    Ok(())
                })?;
                if let Some(mut b) = found {
                    // A read landing inside a batch (a point read) gets the
                    // batch's record positions, so it need not walk every
                    // record before its target.
                    if let Some(first) = b.first_mut() {
                        if first.base_offset() < offset {
                            *first = crate::log::positions_cache::attach(seg.id(), first.clone());
                        }
                    }
                    if let Some(last) = b.last() {
                        self.read_ahead(&seg, offset, last.last_offset() + 1, hw);
                    }
                    batches = b;
                    from = Some(seg.id());
                }
                if !batches.is_empty() || seg.base_offset() >= hw {
                    break;
                }
            }
        }
        Ok((LogRead::new(offset, batches, hw, start), from))
    }

    /// After a read of `[offset, next)` from `seg`: when it began where the
    /// log's last read ended, has the segment's batches after it checked
    /// ahead on a spare core (see `read_ahead`), up to `hw`.
    fn read_ahead(&self, seg: &Arc<Segment>, offset: i64, next: i64, hw: i64) {
        if self.config.read_mode != crate::ReadMode::Mmap
            || !self.sequential.follows(offset, next)
            || next >= hw
            || self.sequential.checked_well_ahead(offset, next)
        {
            return;
        }
        let (seg, checked_to) = (Arc::clone(seg), self.sequential.checked_to());
        crate::log::read_ahead::submit(Box::new(move || {
            // The check leaves its mark in the segment's verified set; a
            // batch that fails it is the read's to report when it gets
            // there.
            let from = next.max(checked_to.load(Ordering::Relaxed));
            let ahead = crate::log::read_ahead::AHEAD_BYTES;
            if let Some(to) = seg.check_ahead(from, next, ahead, hw) {
                checked_to.fetch_max(to, Ordering::Relaxed);
            }
        }));
    }

    /// The segment holding `offset` (`after` None), or the one after the
    /// segment based at `after`; with the next segment's base offset.
    fn segment_for(&self, offset: i64, after: Option<i64>) -> Option<(Arc<Segment>, Option<i64>)> {
        let all = self.segments.read();
        let i = match after {
            None => all
                .partition_point(|s| s.base_offset() <= offset)
                .saturating_sub(1),
            Some(b) => all.partition_point(|s| s.base_offset() <= b),
        };
        let seg = all.get(i)?;
        Some((Arc::clone(seg), all.get(i + 1).map(|n| n.base_offset())))
    }

    /// The record at `offset` (a point read): `None` at the high
    /// watermark, for a control record, or where compaction removed it. The
    /// batch holding it is read as by [`read`](Self::read) (CRC-checked once
    /// per process); an uncompressed batch is entered at the nearest known
    /// record start, an lz4 batch decompressed from the block holding the
    /// record's start as far as the record (the first point read into it
    /// past its first record decodes all its blocks but the last, for its
    /// block map).
    ///
    /// # Errors
    /// As [`PartitionLog::read`], and the record's decoding.
    pub fn read_record(&self, offset: i64) -> Result<Option<LogRecord>> {
        let (read, segment) = self.read_located(offset, 1)?;
        let (Some(b), Some(segment)) = (read.batches().first(), segment) else {
            return Ok(None);
        };
        if b.header().is_control() {
            return Ok(None);
        }
        // The first point read into an lz4 batch builds its block map from
        // the decode that finds the record.
        let (record, map) = b.record_at_building(offset)?;
        if let Some(map) = map {
            crate::log::positions_cache::insert(segment, b.base_offset(), map);
        }
        Ok(record)
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
        for seg in self.segments_snapshot() {
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
}
