//! Point reads into lz4 batches.
//!
//! - With the batch's block map: the frame is decoded from the block
//!   holding the record's start, and only as far as the record. The decode
//!   pauses where the record likely ends (from the records' average
//!   length), and again, a record at a time, until the record is whole
//!   ([`lz4::decompress_from`]).
//! - The first point read into a batch (past its first record) decodes the
//!   frame once, every block but the last whole and the last only as far
//!   as the map or the record needs: it builds the block map from those
//!   bytes and takes its record from them too, rather than decoding it a
//!   second time. A frame of one block gets no map: its record is read
//!   from the start, as far as the record.

use super::error::Result;
use super::header::HEADER_SIZE;
use super::lz4;
use super::parse::parse_record;
use super::positions::{Lz4Block, Lz4MapWalk};
use super::varint::varint_raw_at;
use super::{codec, BatchHeader, LogRecord, RecordBatch, RecordPositions, Records, TimestampType};
use bytes::Bytes;
use std::ops::Range;

/// A walk over an lz4 batch's records, decoded so far, to the first at or
/// after `offset`. Positions count from the first byte decoded.
struct Seek<'a> {
    header: &'a BatchHeader,
    offset: i64,
    /// The record's index in the batch, where offsets run 0, 1, 2, ….
    target: i32,
    /// Offset deltas 0, 1, 2, …: the records before the target are stepped
    /// over by their length alone (the landed one is parsed and its delta
    /// checked, as every record is otherwise).
    dense: bool,
    /// The next record's start, and its index.
    at: usize,
    seen: i32,
    /// Where the walk began, for the average length of the records walked.
    from: (usize, i32),
    /// The records' average length, from the block map.
    average: Option<usize>,
    /// The record found.
    found: Option<Range<usize>>,
}

impl<'a> Seek<'a> {
    /// From the start of the block `block` holding the record (with the
    /// block after it) when there is a map, else from the batch's first
    /// record; the bytes decoded start at `origin` of the batch's data.
    fn new(
        header: &'a BatchHeader,
        offset: i64,
        block: Option<(Lz4Block, Option<Lz4Block>)>,
        origin: usize,
    ) -> Seek<'a> {
        let (at, seen) = block.map_or((0, 0), |(b, _)| {
            (
                (b.first_pos as usize).saturating_sub(origin),
                b.first_record,
            )
        });
        let index = offset.wrapping_sub(header.base_offset);
        Seek {
            header,
            offset,
            target: i32::try_from(index).unwrap_or(i32::MAX),
            dense: i64::from(header.records_count) == i64::from(header.last_offset_delta) + 1,
            at,
            seen,
            from: (at, seen),
            average: block.and_then(|(b, next)| average_record(b, next)),
            found: None,
        }
    }

    /// Walks on over `data` (the bytes decoded so far, which only grow
    /// between calls): `None` once the record is found, else how many bytes
    /// it needs decoded to go on (`usize::MAX`: all of them, when every
    /// record was walked without finding it, or one is malformed; the full
    /// path then names any error).
    fn wants(&mut self, data: &[u8]) -> Option<usize> {
        if self.found.is_some() {
            return None;
        }
        while self.dense && self.seen < self.target {
            // The length, raw: odd is negative (malformed). None: cut by the
            // end of what is decoded so far, or malformed.
            let mut p = self.at;
            let Some(z) = varint_raw_at(data, &mut p).filter(|z| z & 1 == 0) else {
                return Some(self.need(data));
            };
            self.at = p.saturating_add((z >> 1) as usize);
            self.seen += 1;
        }
        while self.seen < self.header.records_count {
            // A record cut by the end of what is decoded does not parse yet.
            let Ok(p) = parse_record(data, self.at, |_, _| {}) else {
                return Some(self.need(data));
            };
            self.seen += 1;
            let delta = i64::from(p.offset_delta);
            if self.header.base_offset.wrapping_add(delta) >= self.offset {
                self.found = Some(self.at..p.end);
                return None;
            }
            self.at = p.end;
        }
        Some(usize::MAX)
    }

    /// How many decoded bytes the walk, standing at `at` of `data`, asks
    /// for next: as many records on as it is short of the one it wants (at
    /// their average length: from the map, else of the records walked), and
    /// at least the record's end once its length can be read (exactly its
    /// end for the record wanted). All the rest (`usize::MAX`) when that
    /// length is negative, or the record lies whole in `data` although it
    /// did not parse: it is malformed.
    fn need(&self, data: &[u8]) -> usize {
        let remaining = usize::try_from(self.target - self.seen).unwrap_or(0) + 1;
        let walked = usize::try_from(self.seen - self.from.1).unwrap_or(0);
        let average = self
            .average
            .or_else(|| (self.at.saturating_sub(self.from.0)).checked_div(walked))
            .unwrap_or(256)
            .max(1);
        let guess = self.at.saturating_add(remaining.saturating_mul(average));
        let mut p = self.at;
        let Some(z) = varint_raw_at(data, &mut p) else {
            return guess;
        };
        let end = p.saturating_add(usize::try_from(z >> 1).unwrap_or(usize::MAX));
        if z & 1 == 1 || end <= data.len() {
            return usize::MAX;
        }
        if remaining <= 1 {
            end
        } else {
            end.max(guess)
        }
    }

    /// The record found, copied out of `data` (the bytes it was found in)
    /// on its own, so what it holds is its bytes, not the block's; with its
    /// index.
    fn take(&self, data: &[u8]) -> Option<(Bytes, i32)> {
        let record = data.get(self.found.clone()?)?;
        Some((Bytes::copy_from_slice(record), self.seen - 1))
    }
}

/// The average length of the records starting in the lz4 block `b`
/// (`next` being the block after), or for the last block of those before
/// it; `None` when there are none to average.
fn average_record(b: Lz4Block, next: Option<Lz4Block>) -> Option<usize> {
    let (bytes, records) = match next {
        Some(next) => (
            next.first_pos.checked_sub(b.first_pos)?,
            next.first_record.checked_sub(b.first_record)?,
        ),
        None => (b.first_pos, b.first_record),
    };
    let average = bytes.checked_div(u32::try_from(records).ok()?)?;
    usize::try_from(average).ok().filter(|&a| a > 0)
}

impl RecordBatch {
    /// The lz4 frame: everything after the header.
    fn frame(&self) -> &[u8] {
        self.as_bytes().get(HEADER_SIZE..).unwrap_or_default()
    }

    /// The first record at or after `offset` of an lz4 batch, decompressing
    /// only as far as it (from the block holding its start, when the
    /// batch's block map is attached); `None` when the whole frame had to be
    /// read without finding it whole (the caller then takes the full path,
    /// which names any error).
    pub(super) fn lz4_record_at(&self, offset: i64) -> Result<Option<LogRecord>> {
        let h = self.header();
        let frame = self.frame();
        let index = offset.wrapping_sub(h.base_offset);
        let block = i32::try_from(index)
            .ok()
            .and_then(|i| self.positions.as_ref()?.lz4_block_for(i));
        let origin = block.map_or(0, |(b, _)| b.start.out_start as usize);
        let mut seek = Seek::new(h, offset, block, origin);
        let limit = codec::MAX_DECOMPRESSED_SIZE.saturating_sub(origin);
        // Decoded into the thread's scratch.
        let found = lz4::with_scratch(|out| -> Result<Option<(Bytes, i32)>> {
            let wants = |data: &[u8]| seek.wants(data);
            let (n, early) = match block {
                Some((b, _)) => {
                    let from = b.start.frame_pos as usize;
                    lz4::decompress_from(frame, from, limit, wants, out)?
                }
                None => lz4::decompress_until(frame, limit, wants, out)?,
            };
            Ok(out.get(..n).filter(|_| early).and_then(|d| seek.take(d)))
        })?;
        self.lz4_one_record(found)
    }

    /// As [`lz4_record_at`](Self::lz4_record_at), for a batch with no block
    /// map yet: decodes the frame into the thread's scratch, builds the map
    /// from those bytes, and finds the record in them. Every block but the
    /// last is decoded whole (the map's walk needs them); the last only as
    /// far as its first record's start, or the record (a frame of one block:
    /// only as far as the record). The map is `None` for a frame of one
    /// block, or one that does not decode or whose records' lengths are
    /// malformed; the record is `None` where it was not found (the caller
    /// then reads it another way, which names any error).
    pub(super) fn lz4_record_at_mapping(
        &self,
        offset: i64,
    ) -> Result<(Option<LogRecord>, Option<RecordPositions>)> {
        let (found, map) = self.lz4_mapping(Some(offset));
        Ok((self.lz4_one_record(found)?, map))
    }

    /// This lz4 batch's block map, decoded for as the first point read
    /// decodes for it (see [`lz4_record_at_mapping`](Self::lz4_record_at_mapping)).
    pub(super) fn lz4_map(&self) -> Option<RecordPositions> {
        self.lz4_mapping(None).1
    }

    /// The block map, and the record at `offset` (its bytes and index) when
    /// one is wanted and found.
    fn lz4_mapping(&self, offset: Option<i64>) -> (Option<(Bytes, i32)>, Option<RecordPositions>) {
        let h = self.header();
        let frame = self.frame();
        let limit = codec::MAX_DECOMPRESSED_SIZE;
        lz4::with_scratch(|out| {
            let Ok((kept, blocks)) = lz4::decompress_mapped_but_last(frame, limit, out) else {
                return (None, None);
            };
            let Some(last) = blocks.last() else {
                return (None, None);
            };
            let mut walk = Lz4MapWalk::new(h.records_count);
            // A frame of one block: no map, the record read from its start.
            let mut mapped = blocks.len() < 2;
            let mut seek: Option<Seek<'_>> = None;
            let mut wants = |data: &[u8]| -> Option<usize> {
                if !mapped {
                    if let Some(more) = walk.walk(data, &blocks) {
                        return Some(more);
                    }
                    mapped = true;
                }
                let offset = offset?;
                // From the block holding the record's start, now mapped.
                let target = i32::try_from(offset.wrapping_sub(h.base_offset)).unwrap_or(i32::MAX);
                let block = walk.block_for(target);
                seek.get_or_insert_with(|| Seek::new(h, offset, block, 0))
                    .wants(data)
            };
            let from = last.frame_pos as usize;
            let decoded = lz4::decompress_on(frame, from, kept, limit, &mut wants, out);
            let found = match decoded {
                Ok((n, true)) => out.get(..n).zip(seek).and_then(|(d, s)| s.take(d)),
                _ => None,
            };
            (found, walk.finish(mapped, &blocks))
        })
    }

    /// The one record `found` (its bytes, and its index in this batch),
    /// decoded.
    fn lz4_one_record(&self, found: Option<(Bytes, i32)>) -> Result<Option<LogRecord>> {
        let Some((data, index)) = found else {
            return Ok(None);
        };
        let h = self.header();
        let mut rs = Records {
            data,
            positions: None,
            pos: 0,
            index,
            count: h.records_count,
            base_offset: h.base_offset,
            base_timestamp: h.base_timestamp,
            append_time: (h.timestamp_type() == TimestampType::LogAppendTime)
                .then_some(h.max_timestamp),
            dense: false,
            // One record is wanted: no read-ahead past it.
            ahead: usize::MAX,
        };
        rs.next().transpose()
    }
}
