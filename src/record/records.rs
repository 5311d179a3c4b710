//! [`Records`], the lazy iterator over one batch's records (owned
//! [`LogRecord`]s or borrowed [`RecordView`]s, see `view.rs`), and skipping
//! to an offset without decoding the records passed over.

use super::error::{DecodeError, Result};
use super::parse::{parse_record, short_parsed};
use super::varint::{varint_raw_at, zigzag_at, Reader};
use super::view::{RecordSpans, RecordView};
use super::{Header, LogRecord, RecordPositions};
use bytes::Bytes;
use std::sync::Arc;

/// Smallest possible encoded record: length, attributes, timestamp delta,
/// offset delta, key length, value length, header count, one byte each.
const MIN_RECORD_SIZE: usize = 7;

/// A lazy iterator over the records of one batch, yielding
/// `Result<LogRecord>`. It stops after the first error.
#[derive(Debug)]
pub struct Records {
    pub(super) data: Bytes,
    /// Where every stride-th record starts, when known.
    pub(super) positions: Option<Arc<RecordPositions>>,
    pub(super) pos: usize,
    pub(super) index: i32,
    pub(super) count: i32,
    pub(super) base_offset: i64,
    pub(super) base_timestamp: i64,
    pub(super) append_time: Option<i64>,
    /// The header says offset deltas run 0, 1, 2, … (see `skip_dense`).
    pub(super) dense: bool,
    /// Where the read-ahead has reached (see [`Records::read_ahead`]);
    /// `usize::MAX` turns it off (a point read wants one record).
    pub(super) ahead: usize,
}

/// How far ahead of the record being decoded the iteration asks for the
/// batch's bytes: far enough that each record's lines arrive from memory
/// before the walk gets there. With 2 KiB (five 376-byte records, some
/// 60-85 ns of decoding) the last byte of each record (its header count)
/// still missed; with 8 KiB, over 2,000,000 records read from the page
/// cache, `Consumer::poll` took 13.8 ns a record without checksumming the
/// values against 17.8 ns, and `for_each_record` 10.6 against 11.6 ns
/// (16 and 32 KiB gained nothing more in the same run).
const READ_AHEAD: usize = 8192;

/// Asks the CPU to bring the cache line holding `data[at]` into its caches,
/// without waiting for it (a hint: no effect on what the program computes).
#[inline(always)]
#[allow(
    unsafe_code,
    reason = "the prefetch intrinsic; measured: sequential owned reads ~15-25 % faster"
)]
fn prefetch_line(data: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = data.get(at) {
        // SAFETY: a prefetch reads nothing the program sees and cannot
        // fault (any address is allowed); its one requirement, SSE, is part
        // of every x86_64 target. The pointer comes from a live reference.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                (b as *const u8).cast::<i8>(),
            );
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (data, at);
}

/// Touches every cache line of `data` from `pos` over the estimated span of
/// `skip` of the `left` remaining records (plus one average record), so the
/// walk over their length varints, which is a chain of dependent loads (each
/// record's start comes from the previous one's length), finds them cached:
/// these loads are independent and run in parallel.
#[inline]
fn prefetch(data: &[u8], pos: usize, skip: i64, left: i64) {
    const LINE: usize = 64;
    let Some(rest) = data.get(pos..) else { return };
    if left <= 0 || skip <= 0 {
        return;
    }
    let avg = rest.len() as i64 / left;
    let span = ((skip + 1) * avg).clamp(0, rest.len() as i64) as usize;
    let mut acc = 0u8;
    for b in rest.iter().take(span).step_by(LINE) {
        acc ^= *b;
    }
    std::hint::black_box(acc);
}

impl Records {
    /// Walking records one by one is a chain of dependent loads (each
    /// record starts where the previous one's length says), and a batch read
    /// from the page cache is mostly not in the CPU's caches: left alone,
    /// every record waits a full memory round trip for its first line.
    /// Requesting the lines up to [`READ_AHEAD`] bytes past the current
    /// record turns those waits into one stream, as a caller that reads
    /// every byte (a checksum) gets from the hardware prefetcher anyway.
    #[inline(always)]
    fn read_ahead(&mut self) {
        const LINE: usize = 64;
        let until = (self.pos + READ_AHEAD).min(self.data.len());
        let mut at = self.ahead.max(self.pos);
        while at < until {
            prefetch_line(&self.data, at);
            at += LINE;
        }
        self.ahead = at;
    }

    /// Moves past the records with offsets below `offset`, reading only
    /// their length and offset delta (no key, value or header decoding).
    /// A malformed record stops the skip; the next call to `next` reports it.
    pub fn skip_to(&mut self, offset: i64) {
        if self.dense && self.skip_dense(offset) {
            return;
        }
        self.skip_scan(offset);
    }

    /// The fast path for a batch whose header says its offset deltas run
    /// 0, 1, 2, … (records count = last offset delta + 1, as every appended
    /// batch is validated to have): the record with offset `offset` is the
    /// one at index `offset - base`, so the records before it are stepped
    /// over by their length varint alone. The record landed on must carry
    /// the expected delta; if it does not (or anything is malformed), the
    /// position is restored and false tells the caller to scan instead.
    fn skip_dense(&mut self, offset: i64) -> bool {
        let (pos, index) = (self.pos, self.index);
        let want = offset.wrapping_sub(self.base_offset);
        if want <= i64::from(index) {
            return true;
        }
        if want >= i64::from(self.count) {
            // Past the last record: nothing to land on and check.
            return false;
        }
        let stop = want as i32;
        let data: &[u8] = &self.data;
        let (mut at, mut i) = (pos, index);
        // Jump to the nearest known record start below the target.
        if let Some((k, start)) = self.positions.as_ref().and_then(|p| p.at_or_below(stop)) {
            if k > i {
                (at, i) = (start, k);
            }
        }
        prefetch(data, at, want - i64::from(i), i64::from(self.count - i));
        while i < stop {
            // The length, raw: odd is negative (malformed), else twice it.
            let Some(len) = varint_raw_at(data, &mut at).filter(|z| z & 1 == 0) else {
                return false;
            };
            at += (len >> 1) as usize;
            i += 1;
        }
        // Check the landed record's offset delta: length, attributes,
        // timestamp delta (a varlong, up to 10 bytes), offset delta (raw:
        // twice `i`).
        let delta = (|| {
            let mut p = at;
            varint_raw_at(data, &mut p)?;
            p += 1;
            zigzag_at(data, &mut p, 10)?;
            varint_raw_at(data, &mut p)
        })();
        if delta != Some(u64::from(i.unsigned_abs()) << 1) {
            return false;
        }
        self.pos = at;
        self.index = i;
        true
    }

    /// The general skip: reads each record's offset delta.
    fn skip_scan(&mut self, offset: i64) {
        while self.index < self.count {
            let Some(rest) = self.data.get(self.pos..) else {
                return;
            };
            let mut r = Reader::new(rest);
            let Ok(len) = r.varint("record length") else {
                return;
            };
            let length_len = r.position();
            let (Ok(_attributes), Ok(_ts), Ok(delta)) = (
                r.u8("record attributes"),
                r.varlong("record timestamp delta"),
                r.varint("record offset delta"),
            ) else {
                return;
            };
            if self.base_offset.wrapping_add(i64::from(delta)) >= offset || len < 0 {
                return;
            }
            let next = self.pos + length_len + len as usize;
            if next > self.data.len() {
                return;
            }
            self.pos = next;
            self.index += 1;
        }
    }

    fn fail(&mut self, e: DecodeError) -> Option<Result<LogRecord>> {
        self.index = self.count;
        self.pos = self.data.len();
        Some(Err(e))
    }

    #[inline(always)]
    fn decode_one(&mut self) -> Result<LogRecord> {
        let data = &self.data;
        let mut headers = Vec::new();
        let p = match short_parsed(data, self.pos) {
            Some(p) => p,
            None => parse_record(data, self.pos, |key, value| {
                headers.push(Header {
                    key: key.to_owned(),
                    value: value.map(|r| data.slice(r)),
                });
            })?,
        };
        self.pos = p.end;
        Ok(LogRecord {
            offset: self.base_offset.wrapping_add(i64::from(p.offset_delta)),
            timestamp: self
                .append_time
                .unwrap_or(self.base_timestamp.wrapping_add(p.ts_delta)),
            key: p.key.range().map(|r| data.slice(r)),
            value: p.value.range().map(|r| data.slice(r)),
            headers,
        })
    }
}

impl Records {
    /// The next record, borrowed from the batch (see [`RecordView`]): what
    /// [`next`](Iterator::next) returns, without allocating or counting
    /// references. Like `next`, it stops after the first error.
    #[allow(
        clippy::should_implement_trait,
        reason = "a lending iterator: the view borrows self"
    )]
    #[inline]
    pub fn next_view(&mut self) -> Option<Result<RecordView<'_>>> {
        match self.next_spans()? {
            Ok(s) => Some(Ok(s.view(&self.data))),
            Err(e) => Some(Err(e)),
        }
    }

    /// The next record as spans of [`data`](Self::data), checked as
    /// [`next_view`](Self::next_view) checks it: for a caller that keeps
    /// the batch's bytes and slices them later.
    #[inline(always)]
    pub(crate) fn next_spans(&mut self) -> Option<Result<RecordSpans>> {
        if let Some(e) = self.end_check() {
            return Some(Err(e));
        }
        if self.index >= self.count {
            return None;
        }
        self.index += 1;
        self.read_ahead();
        let parsed = match short_parsed(&self.data, self.pos) {
            Some(p) => Ok(p),
            None => parse_record(&self.data, self.pos, |_, _| {}),
        };
        match parsed {
            Ok(p) => {
                self.pos = p.end;
                Some(Ok(RecordSpans {
                    offset: self.base_offset.wrapping_add(i64::from(p.offset_delta)),
                    timestamp: self
                        .append_time
                        .unwrap_or(self.base_timestamp.wrapping_add(p.ts_delta)),
                    key: p.key,
                    value: p.value,
                    headers: p.headers,
                    header_count: p.header_count,
                }))
            }
            Err(e) => {
                self.index = self.count;
                self.pos = self.data.len();
                Some(Err(e))
            }
        }
    }

    /// The batch's records bytes (decompressed), which the spans of
    /// [`next_spans`](Self::next_spans) index.
    pub(crate) fn data(&self) -> &Bytes {
        &self.data
    }

    /// The error that ends the records here, if any: bytes left after the
    /// count, or the count not reached at the end of the bytes. Ends the
    /// iteration when it reports one.
    fn end_check(&mut self) -> Option<DecodeError> {
        let e = if self.index >= self.count && self.pos < self.data.len() {
            DecodeError::TrailingBytes {
                what: "batch records",
                bytes: self.data.len() - self.pos,
            }
        } else if self.index < self.count && self.pos >= self.data.len() {
            DecodeError::RecordCountMismatch {
                expected: self.count,
                actual: self.index,
            }
        } else {
            return None;
        };
        self.index = self.count;
        self.pos = self.data.len();
        Some(e)
    }
}

impl Iterator for Records {
    type Item = Result<LogRecord>;

    // Inlined into the callers' adapters (the error conversion of
    // `LogRead::records`): one call per record, not two, and the record is
    // built where the caller wants it rather than moved into it.
    #[inline(always)]
    fn next(&mut self) -> Option<Result<LogRecord>> {
        if self.index >= self.count {
            if self.pos < self.data.len() {
                let bytes = self.data.len() - self.pos;
                return self.fail(DecodeError::TrailingBytes {
                    what: "batch records",
                    bytes,
                });
            }
            return None;
        }
        if self.pos >= self.data.len() {
            let actual = self.index;
            return self.fail(DecodeError::RecordCountMismatch {
                expected: self.count,
                actual,
            });
        }
        self.index += 1;
        self.read_ahead();
        match self.decode_one() {
            Ok(r) => Some(Ok(r)),
            Err(e) => self.fail(e),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = (self.count - self.index).max(0) as usize;
        let bound = (self.data.len() - self.pos) / MIN_RECORD_SIZE;
        (left.min(bound), Some(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BatchBuilder, Compression, RecordBatch};

    /// `skip_to` (fast path where it applies) must land exactly where the
    /// plain scan does, for every target offset.
    fn check_skips(bytes: &Bytes) {
        let batch = RecordBatch::decode(bytes).unwrap();
        let (base, last) = (batch.base_offset(), batch.last_offset());
        for target in base - 1..=last + 2 {
            let mut fast = batch.records().unwrap();
            fast.skip_to(target);
            let mut slow = batch.records().unwrap();
            slow.skip_scan(target);
            assert_eq!((fast.pos, fast.index), (slow.pos, slow.index), "{target}");
            let a: Vec<i64> = fast.map(|r| r.unwrap().offset).collect();
            let b: Vec<i64> = slow.map(|r| r.unwrap().offset).collect();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn dense_skip_matches_the_scan() {
        let mut b = BatchBuilder::new(Compression::None).base_offset(1000);
        for i in 0..300usize {
            // 1-, 2- and 3-byte length varints.
            let value = vec![b'x'; [3, 200, 20_000][i % 3]];
            b.push_parts(1_700_000_000_000 + (i as i64) * 7, None, Some(&value), &[]);
        }
        check_skips(&b.build());
    }

    #[test]
    fn sparse_and_mislabelled_batches_fall_back_to_the_scan() {
        // Compacted: deltas skip, count < last delta + 1.
        let mut b = BatchBuilder::new(Compression::None).base_offset(50);
        for (i, d) in [0, 3, 4, 9].into_iter().enumerate() {
            b.push_parts_at(d, i as i64, None, Some(b"v"), &[]);
        }
        check_skips(&b.build());
        // Count = last delta + 1, yet the deltas are not 0, 1, 2.
        let mut b = BatchBuilder::new(Compression::None)
            .base_offset(50)
            .last_offset_delta(2);
        for (i, d) in [0, 2, 3].into_iter().enumerate() {
            b.push_parts_at(d, i as i64, None, Some(b"v"), &[]);
        }
        check_skips(&b.build());
    }
}
