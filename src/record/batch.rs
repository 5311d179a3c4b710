//! Decoding record batches v2 (Kafka's `DefaultRecordBatch` / `DefaultRecord`).
//!
//! ```text
//!  off size field                      off size field
//!    0  8  base offset  i64             35  8  max timestamp   i64
//!    8  4  batch length i32 (size-12)   43  8  producer id     i64
//!   12  4  partition leader epoch       51  2  producer epoch  i16
//!   16  1  magic = 2                    53  4  base sequence   i32
//!   17  4  crc32c over [21, end)        57  4  records count   i32
//!   21  2  attributes                   61  …  records (raw, or one
//!   23  4  last offset delta                   compressed stream)
//!   27  8  base timestamp
//! ```
//!
//! Decoding never panics and never allocates by an unchecked length field:
//! every length is bounded by the bytes actually present.

use super::error::{DecodeError, Result};
use super::varint::{unzig, varint_raw_at, zigzag_at, Reader};
use super::{codec, Compression, ControlRecord, Header, LogRecord, RecordPositions, TimestampType};
use crate::error::Error;
use bytes::Bytes;
use std::sync::Arc;

/// Size of the batch header, `DefaultRecordBatch.RECORD_BATCH_OVERHEAD`.
pub const HEADER_SIZE: usize = 61;
/// Bytes before the length field's coverage starts (base offset + length).
pub const LOG_OVERHEAD: usize = 12;
/// Bytes a reader needs to see the magic byte.
pub const HEADER_SIZE_UP_TO_MAGIC: usize = 17;
pub(crate) const CRC_OFFSET: usize = 17;
pub(crate) const ATTRIBUTES_OFFSET: usize = 21;
const MAGIC_OFFSET: usize = 16;
pub(crate) const RECORDS_COUNT_OFFSET: usize = 57;
/// Smallest possible encoded record: length, attributes, timestamp delta,
/// offset delta, key length, value length, header count, one byte each.
const MIN_RECORD_SIZE: usize = 7;

const CODEC_MASK: i16 = 0x07;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
pub(super) const TRANSACTIONAL_BIT: i16 = 0x10;
pub(super) const CONTROL_BIT: i16 = 0x20;

/// The `N` bytes at `at`; all zeros when `buf` ends before them.
pub(super) fn be<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(src) = buf.get(at..at + N) {
        out.copy_from_slice(src);
    }
    out
}

/// The fixed 61-byte header of a record batch, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchHeader {
    /// Offset of the first record.
    pub base_offset: i64,
    /// Bytes after the length field (the batch's size − 12).
    pub batch_length: i32,
    /// The leader epoch the broker stamped, −1 for none. Outside the CRC.
    pub partition_leader_epoch: i32,
    /// The CRC-32C stored in the header.
    pub crc: u32,
    /// Attribute bits (codec, timestamp type, transactional, control).
    pub attributes: i16,
    /// Last offset − base offset.
    pub last_offset_delta: i32,
    /// Timestamp of the first record.
    pub base_timestamp: i64,
    /// The largest record timestamp.
    pub max_timestamp: i64,
    /// Idempotent producer id, −1 for none.
    pub producer_id: i64,
    /// Idempotent producer epoch, −1 for none.
    pub producer_epoch: i16,
    /// Sequence number of the first record, −1 for none.
    pub base_sequence: i32,
    /// Number of records in the batch.
    pub records_count: i32,
}

impl BatchHeader {
    /// Decodes the header at the start of `buf`, checking the magic byte and
    /// that the batch length is at least a header's. Does not check the CRC
    /// or that the whole batch is present.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`] when fewer than 61 bytes (17 to see the magic) are
    /// given, [`DecodeError::BadMagic`], [`DecodeError::LengthOutOfBounds`].
    pub fn parse(buf: &[u8]) -> Result<BatchHeader> {
        if buf.len() < HEADER_SIZE_UP_TO_MAGIC {
            return Err(DecodeError::Truncated {
                what: "batch header",
                needed: HEADER_SIZE_UP_TO_MAGIC,
                available: buf.len(),
            });
        }
        let batch_length = i32::from_be_bytes(be(buf, 8));
        let magic = i8::from_be_bytes(be(buf, MAGIC_OFFSET));
        if magic != 2 {
            return Err(DecodeError::BadMagic { found: magic });
        }
        if (batch_length as i64) < (HEADER_SIZE - LOG_OVERHEAD) as i64 {
            return Err(DecodeError::LengthOutOfBounds {
                what: "batch",
                length: batch_length.into(),
                min: (HEADER_SIZE - LOG_OVERHEAD) as i64,
                max: i32::MAX.into(),
            });
        }
        if buf.len() < HEADER_SIZE {
            return Err(DecodeError::Truncated {
                what: "batch header",
                needed: HEADER_SIZE,
                available: buf.len(),
            });
        }
        Ok(BatchHeader {
            base_offset: i64::from_be_bytes(be(buf, 0)),
            batch_length,
            partition_leader_epoch: i32::from_be_bytes(be(buf, 12)),
            crc: u32::from_be_bytes(be(buf, CRC_OFFSET)),
            attributes: i16::from_be_bytes(be(buf, ATTRIBUTES_OFFSET)),
            last_offset_delta: i32::from_be_bytes(be(buf, 23)),
            base_timestamp: i64::from_be_bytes(be(buf, 27)),
            max_timestamp: i64::from_be_bytes(be(buf, 35)),
            producer_id: i64::from_be_bytes(be(buf, 43)),
            producer_epoch: i16::from_be_bytes(be(buf, 51)),
            base_sequence: i32::from_be_bytes(be(buf, 53)),
            records_count: i32::from_be_bytes(be(buf, RECORDS_COUNT_OFFSET)),
        })
    }

    /// The batch's total size in bytes, header included.
    pub fn size(&self) -> usize {
        self.batch_length as usize + LOG_OVERHEAD
    }

    /// Offset of the last record (base + last offset delta).
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .wrapping_add(i64::from(self.last_offset_delta))
    }

    /// The offset after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// The compression codec.
    ///
    /// # Errors
    /// [`DecodeError::UnsupportedCompression`] for codec numbers 5 to 7, which
    /// Kafka does not define.
    pub fn compression(&self) -> Result<Compression> {
        let codec = (self.attributes & CODEC_MASK) as u8;
        Compression::from_codec(codec).ok_or(DecodeError::UnsupportedCompression {
            codec,
            name: "unknown",
        })
    }

    /// CreateTime or LogAppendTime.
    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    /// Whether the batch belongs to a transaction.
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }

    /// Whether the batch is a control batch (transaction markers).
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }
}

/// Computes the CRC-32C a batch's header should hold: over `[21, end)`.
pub(crate) fn compute_crc(batch: &[u8]) -> u32 {
    crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or_default())
}

/// CRC-32C (Castagnoli) of `bytes`.
#[inline]
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    // The algorithm's width is 32 bits: the value fits a u32.
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, bytes) as u32
}

/// One validated record batch: its header was parsed, the whole batch is
/// present and its CRC-32C matches. Cheap to clone (shares the buffer).
#[derive(Clone, Debug)]
pub struct RecordBatch {
    header: BatchHeader,
    buf: Bytes,
    /// Start positions of every STRIDE-th record, when a point read into
    /// this batch attached them (see `record::positions`).
    pub(crate) positions: Option<Arc<RecordPositions>>,
}

impl RecordBatch {
    /// Validates the batch at the start of `buf` and returns it (sharing
    /// `buf`'s memory). Bytes after the batch are ignored; use
    /// [`RecordBatch::size`] to step to the next one.
    ///
    /// # Errors
    /// [`DecodeError::Truncated`], [`DecodeError::BadMagic`], [`DecodeError::LengthOutOfBounds`],
    /// [`DecodeError::ChecksumMismatch`].
    pub fn decode(buf: &Bytes) -> Result<RecordBatch> {
        let header = RecordBatch::check(buf)?;
        Ok(RecordBatch {
            header,
            buf: buf.slice(..header.size()),
            positions: None,
        })
    }

    /// The checks of [`RecordBatch::decode`] on a plain slice: returns the
    /// header of the valid batch at the start of `buf`.
    pub(crate) fn check(buf: &[u8]) -> Result<BatchHeader> {
        let header = BatchHeader::parse(buf)?;
        let size = header.size();
        let Some(bytes) = buf.get(..size) else {
            return Err(DecodeError::Truncated {
                what: "batch",
                needed: size,
                available: buf.len(),
            });
        };
        let actual = compute_crc(bytes);
        if actual != header.crc {
            return Err(DecodeError::ChecksumMismatch {
                expected: header.crc,
                actual,
            });
        }
        Ok(header)
    }

    /// A batch whose CRC this process already verified over these exact,
    /// immutable bytes: parses the header only.
    pub(crate) fn verified(buf: Bytes) -> Result<RecordBatch> {
        let header = BatchHeader::parse(&buf)?;
        if buf.len() != header.size() {
            return Err(DecodeError::Truncated {
                what: "batch",
                needed: header.size(),
                available: buf.len(),
            });
        }
        Ok(RecordBatch {
            header,
            buf,
            positions: None,
        })
    }

    /// Whether point reads into this batch can use [`RecordPositions`]: an
    /// uncompressed data batch whose offset deltas run 0, 1, 2, …, with
    /// more records than one stride.
    pub(crate) fn wants_positions(&self) -> bool {
        let h = &self.header;
        h.attributes & CODEC_MASK == 0
            && h.records_count > super::positions::STRIDE
            && i64::from(h.records_count) == i64::from(h.last_offset_delta) + 1
    }

    /// Walks this batch's records for their [`RecordPositions`].
    pub(crate) fn build_positions(&self) -> Option<RecordPositions> {
        let data = self.buf.get(HEADER_SIZE..)?;
        RecordPositions::build(data, self.header.records_count)
    }

    /// This batch, with `positions` for its point reads (they must be this
    /// batch's: built by [`build_positions`](Self::build_positions) over
    /// the same bytes).
    pub(crate) fn with_positions(mut self, positions: Arc<RecordPositions>) -> Self {
        self.positions = Some(positions);
        self
    }

    /// Decodes every batch in `buf`, which must hold whole batches only.
    ///
    /// # Errors
    /// As [`RecordBatch::decode`], for the first bad batch.
    pub fn decode_all(buf: &Bytes) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        let mut rest = buf.clone();
        while !rest.is_empty() {
            let batch = RecordBatch::decode(&rest)?;
            rest = rest.slice(batch.size()..);
            out.push(batch);
        }
        Ok(out)
    }

    /// The decoded header.
    pub fn header(&self) -> &BatchHeader {
        &self.header
    }

    /// The batch's bytes, exactly as stored.
    pub fn as_bytes(&self) -> &Bytes {
        &self.buf
    }

    /// Size in bytes, header included.
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// Offset of the first record.
    pub fn base_offset(&self) -> i64 {
        self.header.base_offset
    }

    /// Offset of the last record.
    pub fn last_offset(&self) -> i64 {
        self.header.last_offset()
    }

    /// The largest record timestamp.
    pub fn max_timestamp(&self) -> i64 {
        self.header.max_timestamp
    }

    /// Number of records, from the header.
    pub fn records_count(&self) -> i32 {
        self.header.records_count
    }

    /// The records, decoded lazily. A compressed batch is decompressed
    /// here, once, to at most
    /// [`MAX_DECOMPRESSED_SIZE`](crate::record::MAX_DECOMPRESSED_SIZE) bytes.
    ///
    /// This is the low-level view: a control batch's marker record is
    /// returned like any other (see [`RecordBatch::control_record`]); the
    /// log's and the consumer's reads leave control batches out.
    ///
    /// # Errors
    /// [`DecodeError::UnsupportedCompression`], [`DecodeError::CodecNotBuilt`],
    /// [`DecodeError::InvalidLz4`], [`DecodeError::InvalidCompressed`],
    /// [`DecodeError::DecompressedTooLarge`], [`DecodeError::NegativeRecordCount`].
    pub fn records(&self) -> Result<Records> {
        let h = &self.header;
        if h.records_count < 0 {
            return Err(DecodeError::NegativeRecordCount {
                count: h.records_count,
            });
        }
        let body = self.buf.slice(HEADER_SIZE..);
        let data = match h.compression()? {
            Compression::None => body,
            c => Bytes::from(codec::decompress(c, &body)?),
        };
        let positions = match h.compression()? {
            Compression::None => self.positions.clone(),
            _ => None,
        };
        Ok(Records {
            data,
            positions,
            pos: 0,
            index: 0,
            count: h.records_count,
            base_offset: h.base_offset,
            base_timestamp: h.base_timestamp,
            append_time: (h.timestamp_type() == TimestampType::LogAppendTime)
                .then_some(h.max_timestamp),
            dense: i64::from(h.records_count) == i64::from(h.last_offset_delta) + 1,
        })
    }

    /// For a control batch, its control record (a transaction marker, or a
    /// KRaft record) parsed; `None` for a batch of data.
    ///
    /// # Errors
    /// As [`RecordBatch::records`]; [`DecodeError::InvalidControlRecord`] for a
    /// control batch without a record or with a malformed one.
    pub fn control_record(&self) -> Result<Option<ControlRecord>> {
        if !self.header.is_control() {
            return Ok(None);
        }
        let record = self
            .records()?
            .next()
            .ok_or(DecodeError::InvalidControlRecord {
                reason: "control batch without a record",
            })??;
        ControlRecord::parse(&record).map(Some)
    }

    /// The record with offset `offset`, if this batch holds it (a point
    /// read): `None` outside the batch's offsets or where compaction removed
    /// the record. An lz4 batch is decompressed only as far as that record
    /// (block by block); other batches are read as [`records`](Self::records)
    /// with [`Records::skip_to`]. Errors are those met on the way to the
    /// record: an lz4 frame is not read, so not checked, past the block that
    /// completes it (the batch CRC, checked on every read, covers it all).
    ///
    /// # Errors
    /// As [`RecordBatch::records`] and the record's decoding.
    pub fn record_at(&self, offset: i64) -> Result<Option<LogRecord>> {
        let h = &self.header;
        if offset < h.base_offset || offset > h.last_offset() {
            return Ok(None);
        }
        if h.compression()? == Compression::Lz4 && h.records_count > 0 {
            // Landing elsewhere (a gap, or offsets out of order in a batch
            // no append accepted) is left to the full path.
            if let Some(r) = self.lz4_record_at(offset)? {
                if r.offset == offset {
                    return Ok(Some(r));
                }
            }
        }
        let mut rs = self.records()?;
        rs.skip_to(offset);
        for r in rs {
            let r = r?;
            if r.offset >= offset {
                return Ok((r.offset == offset).then_some(r));
            }
        }
        Ok(None)
    }

    /// The first record at or after `offset` of an lz4 batch, decompressing
    /// only the blocks up to it; `None` when the whole frame had to be read
    /// without finding it whole (the caller then takes the full path, which
    /// names any error).
    fn lz4_record_at(&self, offset: i64) -> Result<Option<LogRecord>> {
        let h = &self.header;
        let body = self.buf.get(HEADER_SIZE..).unwrap_or_default();
        let (mut at, mut seen, mut found) = (0usize, 0i32, None);
        let (data, early) =
            super::lz4::decompress_until(body, codec::MAX_DECOMPRESSED_SIZE, |data| {
                while seen < h.records_count {
                    // A record cut by the block end does not parse yet.
                    let Ok(p) = parse_record(data, at, |_, _| {}) else {
                        return false;
                    };
                    seen += 1;
                    if h.base_offset.wrapping_add(i64::from(p.offset_delta)) >= offset {
                        found = Some(at);
                        return true;
                    }
                    at = p.end;
                }
                false
            })?;
        let (true, Some(pos)) = (early, found) else {
            return Ok(None);
        };
        let mut rs = Records {
            data: Bytes::from(data),
            positions: None,
            pos,
            index: seen - 1,
            count: h.records_count,
            base_offset: h.base_offset,
            base_timestamp: h.base_timestamp,
            append_time: (h.timestamp_type() == TimestampType::LogAppendTime)
                .then_some(h.max_timestamp),
            dense: false,
        };
        rs.next().transpose()
    }

    /// Decodes all records, checking the count and that no bytes are left over.
    ///
    /// # Errors
    /// Any record decoding error, or [`DecodeError::RecordCountMismatch`].
    pub fn to_records(&self) -> Result<Vec<LogRecord>> {
        let records = self.records()?;
        // The count is bounded by the bytes present, so this cannot over-allocate.
        let mut out = Vec::with_capacity(records.size_hint().0);
        for r in records {
            out.push(r?);
        }
        Ok(out)
    }
}

/// A lazy iterator over the records of one batch, yielding
/// `Result<LogRecord>`. It stops after the first error.
#[derive(Debug)]
pub struct Records {
    data: Bytes,
    /// Where every STRIDE-th record starts, when known.
    positions: Option<Arc<RecordPositions>>,
    pos: usize,
    index: i32,
    count: i32,
    base_offset: i64,
    base_timestamp: i64,
    append_time: Option<i64>,
    /// The header says offset deltas run 0, 1, 2, … (see `skip_dense`).
    dense: bool,
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
    for b in rest.get(..span).unwrap_or_default().iter().step_by(LINE) {
        acc ^= *b;
    }
    std::hint::black_box(acc);
}

impl Records {
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
            key: p.key.map(|r| data.slice(r)),
            value: p.value.map(|r| data.slice(r)),
            headers,
        })
    }
}

/// One record's fields, parsed in place: ranges of the records data.
struct Parsed {
    ts_delta: i64,
    offset_delta: i32,
    key: Option<std::ops::Range<usize>>,
    value: Option<std::ops::Range<usize>>,
    /// The headers' bytes (after the count) and how many there are.
    headers: std::ops::Range<usize>,
    header_count: i32,
    /// Where the next record starts.
    end: usize,
}

/// Parses the record at `pos` of `data` (a batch's records, decompressed),
/// handing each header to `header` (its key checked to be UTF-8) and
/// building nothing else.
fn parse_record(
    data: &[u8],
    pos: usize,
    mut header: impl FnMut(&str, Option<std::ops::Range<usize>>),
) -> Result<Parsed> {
    let mut r = Reader::new(data.get(pos..).unwrap_or_default());
    let len = r.varint("record length")?;
    if len < 0 || len as usize > r.remaining() {
        return Err(DecodeError::LengthOutOfBounds {
            what: "record",
            length: len.into(),
            min: 0,
            max: r.remaining() as i64,
        });
    }
    let start = pos + r.position();
    let end = start + len as usize;
    let body = data.get(start..end).unwrap_or_default();
    let mut r = Reader::new(body);
    let _attributes = r.u8("record attributes")?;
    let ts_delta = r.varlong("record timestamp delta")?;
    let offset_delta = r.varint("record offset delta")?;
    let field = |r: &mut Reader<'_>, what| -> Result<Option<std::ops::Range<usize>>> {
        let n = r.varint(what)?;
        if n < -1 || n as i64 > r.remaining() as i64 {
            return Err(DecodeError::LengthOutOfBounds {
                what,
                length: n.into(),
                min: -1,
                max: r.remaining() as i64,
            });
        }
        if n == -1 {
            return Ok(None);
        }
        let range = r.take(n as usize, what)?;
        Ok(Some(start + range.start..start + range.end))
    };
    let key = field(&mut r, "record key")?;
    let value = field(&mut r, "record value")?;
    let n_headers = r.varint("header count")?;
    // Each header takes at least two bytes.
    if n_headers < 0 || n_headers as usize > r.remaining() / 2 {
        return Err(DecodeError::LengthOutOfBounds {
            what: "header count",
            length: n_headers.into(),
            min: 0,
            max: (r.remaining() / 2) as i64,
        });
    }
    let headers_start = start + r.position();
    for _ in 0..n_headers {
        let Some(k) = field(&mut r, "header key")? else {
            return Err(DecodeError::NullHeaderKey);
        };
        let k = std::str::from_utf8(data.get(k).unwrap_or_default())
            .map_err(|_| DecodeError::InvalidHeaderKey)?;
        let v = field(&mut r, "header value")?;
        header(k, v);
    }
    if r.remaining() != 0 {
        return Err(DecodeError::LengthOutOfBounds {
            what: "record",
            length: len.into(),
            min: r.position() as i64,
            max: r.position() as i64,
        });
    }
    Ok(Parsed {
        ts_delta,
        offset_delta,
        key,
        value,
        headers: headers_start..end,
        header_count: n_headers,
        end,
    })
}

/// A record borrowed from its batch, as [`Records::next_view`] returns it:
/// the key, value and headers are slices of the batch's (decompressed)
/// bytes, so reading one allocates nothing and counts no references. Its
/// fields were checked exactly as [`Records::next`] checks them.
#[derive(Clone, Copy, Debug)]
pub struct RecordView<'a> {
    /// The record's offset in its partition.
    pub offset: i64,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<&'a [u8]>,
    /// The value; `None` is null.
    pub value: Option<&'a [u8]>,
    headers: &'a [u8],
    header_count: i32,
}

impl<'a> RecordView<'a> {
    /// The headers, in order: key (UTF-8) and value (`None` is null).
    pub fn headers(&self) -> impl Iterator<Item = (&'a str, Option<&'a [u8]>)> + 'a {
        let buf = self.headers;
        let mut r = Reader::new(buf);
        let bytes = move |r: &mut Reader<'a>| -> Option<Option<&'a [u8]>> {
            let n = r.varint("header").ok()?;
            if n < 0 {
                return Some(None);
            }
            let range = r.take(n as usize, "header").ok()?;
            Some(buf.get(range))
        };
        (0..self.header_count).map_while(move |_| {
            let key = bytes(&mut r)??;
            let value = bytes(&mut r)?;
            Some((std::str::from_utf8(key).ok()?, value))
        })
    }

    /// How many headers the record has.
    pub fn header_count(&self) -> usize {
        self.header_count.max(0) as usize
    }

    /// An owned copy, as [`Records::next`] would have returned it.
    pub fn to_log_record(&self) -> LogRecord {
        LogRecord {
            offset: self.offset,
            timestamp: self.timestamp,
            key: self.key.map(Bytes::copy_from_slice),
            value: self.value.map(Bytes::copy_from_slice),
            headers: self
                .headers()
                .map(|(k, v)| Header {
                    key: k.to_owned(),
                    value: v.map(Bytes::copy_from_slice),
                })
                .collect(),
        }
    }
}

/// Checks an uncompressed batch's records in place, building none of them:
/// exactly the header's count of well-formed records fill the batch, with
/// offset deltas 0, 1, 2, … (what a log append requires). The same errors
/// as decoding them one by one.
pub(crate) fn check_uncompressed_records(batch: &[u8], h: &BatchHeader) -> crate::Result<()> {
    if h.records_count < 0 {
        return Err(DecodeError::NegativeRecordCount {
            count: h.records_count,
        }
        .into());
    }
    let data = batch.get(HEADER_SIZE..).unwrap_or_default();
    if records_well_formed(data, h.records_count) {
        return Ok(());
    }
    // Something is wrong: find it, with the decoder's error.
    walk_records(data, h.records_count)
}

/// Walks `count` records with the decoder, building none: the first error.
pub(super) fn walk_records(data: &[u8], count: i32) -> crate::Result<()> {
    let mut pos = 0;
    for i in 0..count {
        if pos >= data.len() {
            return Err(DecodeError::RecordCountMismatch {
                expected: count,
                actual: i,
            }
            .into());
        }
        let p = parse_record(data, pos, |_, _| {})?;
        if p.offset_delta != i {
            return Err(Error::InvalidBatch {
                reason: "record offset deltas must run 0, 1, 2, ...",
            });
        }
        pos = p.end;
    }
    if pos < data.len() {
        return Err(DecodeError::TrailingBytes {
            what: "batch records",
            bytes: data.len() - pos,
        }
        .into());
    }
    Ok(())
}

/// The fast, error-free form of [`check_uncompressed_records`]'s walk: true
/// when exactly `count` well-formed records with offset deltas 0, 1, 2, …
/// fill `data`. It accepts nothing the decoder refuses (a unit test and the
/// `decode_batch` fuzz target hold the two to the same verdict); on false
/// the caller re-walks with the decoder to name the error.
pub(super) fn records_well_formed(data: &[u8], count: i32) -> bool {
    walk_fast(data, count).is_some()
}

/// [`records_well_formed`] with `?`: record after record, each taken by
/// [`short_record`] when it has the common short form and by
/// [`any_record`] otherwise (or when `short_record` cannot tell).
fn walk_fast(data: &[u8], count: i32) -> Option<()> {
    let mut at = 0usize;
    let mut last = LastLength::default();
    for n in 0..count {
        let n = n.unsigned_abs();
        at = match short_record(data, at, n, &mut last) {
            Some(end) => end,
            None => any_record(data, at, n)?,
        };
    }
    (at == data.len()).then_some(())
}

/// The last short record's length varint, as the 16 bits that hold it (a
/// two-byte varint, or a one-byte one and the byte after it), with what
/// they decode to.
/// Records of one size repeat these bits, and reusing the decoded span
/// then keeps the next record's start off the wait for this record's
/// bytes: the only check left is a branch the CPU predicts.
struct LastLength {
    /// The 16 bits; `u64::MAX` (no 16-bit value) before the first record.
    bits: u64,
    /// Bytes of the varint (1 or 2).
    varint: usize,
    /// Bytes of the record with its length varint.
    span: usize,
}

impl Default for LastLength {
    fn default() -> Self {
        LastLength {
            bits: u64::MAX,
            varint: 0,
            span: 0,
        }
    }
}

/// The 8 bytes at `at` as a little-endian word; `None` when fewer remain.
/// Little-endian on purpose: the word's low byte is the byte at `at`, so a
/// varint's bytes read from the low bits up, in the order they come.
#[allow(clippy::little_endian_bytes)]
#[inline(always)]
fn word_at(data: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = data.get(at..)?.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// The varint at the start of the little-endian word `w` when it takes one
/// or two bytes: its raw (zigzag-encoded) value and its length.
#[inline(always)]
fn short_varint(w: u64) -> Option<(u64, usize)> {
    if w & 0x80 == 0 {
        Some((w & 0x7f, 1))
    } else if w & 0x8000 == 0 {
        // The second byte's 7 bits land at bits 7..14.
        Some(((w & 0x7f) | ((w >> 1) & 0x3f80), 2))
    } else {
        None
    }
}

/// A record length at the start of the little-endian word `w` when it is a
/// non-negative (even raw) varint of one or two bytes: the length and the
/// varint's size (a function of the word's low 16 bits alone).
#[inline(always)]
fn short_length(w: u64) -> Option<(u64, usize)> {
    if w & 0x81 == 0 {
        Some(((w >> 1) & 0x3f, 1))
    } else if w & 0x8081 == 0x80 {
        Some((((w >> 1) & 0x3f) | ((w >> 2) & 0x1fc0), 2))
    } else {
        None
    }
}

/// Record `n` at `at`, when it has the form nearly every record has (every
/// varint of one or two bytes, no headers, at least 8 bytes of `data` from
/// each word read): where it ends if it is well formed. `None` decides
/// nothing: [`any_record`] then walks it. It reads words from `data` past
/// fields' ends, but it accepts a record only when the positions it reached
/// (which only grow) end exactly at the record's end, so every byte it
/// consumed lies inside the record, as the decoder requires. `last` holds
/// the previous short record's length, decoded.
#[inline(always)]
fn short_record(data: &[u8], at: usize, n: u32, last: &mut LastLength) -> Option<usize> {
    // The length: a non-negative (even raw) varint of one or two bytes, a
    // function of the word's low 16 bits alone.
    let w = word_at(data, at)?;
    if w & 0xffff != last.bits {
        let (len, l) = short_length(w)?;
        *last = LastLength {
            bits: w & 0xffff,
            varint: l,
            span: l + len as usize,
        };
    }
    let (l, end) = (last.varint, at + last.span);
    // After the attributes byte: timestamp delta, offset delta, key length
    // (at most 6 of the word's 8 bytes).
    let mut i = at + l + 1;
    let w = word_at(data, i)?;
    let (_, ts) = short_varint(w)?;
    let w = w >> (8 * ts);
    let (delta, od) = short_varint(w)?;
    if delta != u64::from(n) << 1 {
        return None;
    }
    let (key, kl) = short_varint(w >> (8 * od))?;
    i += ts + od + kl;
    // Raw 1 is a null field; any other odd raw value is negative.
    match key {
        1 => {}
        k if k & 1 == 0 => i += (k >> 1) as usize,
        _ => return None,
    }
    let (value, vl) = short_varint(word_at(data, i)?)?;
    i += vl;
    match value {
        1 => {}
        v if v & 1 == 0 => i += (v >> 1) as usize,
        _ => return None,
    }
    // No headers: a count of 0, the record's last byte.
    (*data.get(i)? == 0 && i + 1 == end).then_some(end)
}

/// The record at `at` parsed from 8-byte words, when it has the short form
/// [`short_record`] reads (every varint of one or two bytes, no headers):
/// the fields [`parse_record`] would return. `None` decides nothing (the
/// caller then parses it with `parse_record`, which names any error); a
/// record is accepted only when the positions reached end exactly at its
/// end, so every byte read lies inside it.
#[inline(always)]
fn short_parsed(data: &[u8], at: usize) -> Option<Parsed> {
    let (len, l) = short_length(word_at(data, at)?)?;
    let end = at + l + len as usize;
    let mut i = at + l + 1;
    let w = word_at(data, i)?;
    let (ts, tl) = short_varint(w)?;
    let w = w >> (8 * tl);
    let (delta, dl) = short_varint(w)?;
    let (key, kl) = short_varint(w >> (8 * dl))?;
    i += tl + dl + kl;
    let field = |raw: u64, i: &mut usize| -> Option<Option<std::ops::Range<usize>>> {
        match raw {
            1 => Some(None),
            r if r & 1 == 0 => {
                let start = *i;
                *i += (r >> 1) as usize;
                Some(Some(start..*i))
            }
            _ => None,
        }
    };
    let key = field(key, &mut i)?;
    let (value, vl) = short_varint(word_at(data, i)?)?;
    i += vl;
    let value = field(value, &mut i)?;
    // No headers: a count of 0, the record's last byte.
    if *data.get(i)? != 0 || i + 1 != end {
        return None;
    }
    Some(Parsed {
        ts_delta: unzig(ts),
        offset_delta: i32::try_from(unzig(delta)).ok()?,
        key,
        value,
        headers: end..end,
        header_count: 0,
        end,
    })
}

/// For the fuzz harness: at every record start the full parse reaches in
/// `data`, the short-form parse, where it accepts the record, gives exactly
/// what the full parse gives.
pub(super) fn short_parse_agrees(data: &[u8]) -> bool {
    let mut at = 0;
    while let Ok(full) = parse_record(data, at, |_, _| {}) {
        if let Some(short) = short_parsed(data, at) {
            let same = (
                short.ts_delta,
                short.offset_delta,
                &short.key,
                &short.value,
                short.end,
            ) == (
                full.ts_delta,
                full.offset_delta,
                &full.key,
                &full.value,
                full.end,
            ) && full.header_count == 0;
            if !same {
                return false;
            }
        }
        if full.end <= at {
            break;
        }
        at = full.end;
    }
    // And where the full parse fails, the short one accepts nothing.
    short_parsed(data, at).is_none() || parse_record(data, at, |_, _| {}).is_ok()
}

/// Record `n` at `at`, any form: where it ends if it is well formed.
fn any_record(data: &[u8], at: usize, n: u32) -> Option<usize> {
    // A non-negative length; `None` for null when `nullable`.
    #[inline(always)]
    fn length(z: u64, nullable: bool) -> Option<Option<usize>> {
        match z {
            1 if nullable => Some(None),
            z if z & 1 == 0 => usize::try_from(z >> 1).ok().map(Some),
            _ => None,
        }
    }
    // Skips a length-prefixed field, returning its bytes' range.
    #[inline(always)]
    fn skip(record: &[u8], i: &mut usize, nullable: bool) -> Option<std::ops::Range<usize>> {
        let start = *i;
        match length(varint_raw_at(record, i)?, nullable)? {
            None => Some(start..start),
            Some(n) => {
                let end = i.checked_add(n).filter(|&end| end <= record.len())?;
                let field = *i..end;
                *i = end;
                Some(field)
            }
        }
    }
    let rest = data.get(at..)?;
    let mut i = 0;
    let len = length(varint_raw_at(rest, &mut i)?, false)??;
    let end = i.checked_add(len)?;
    let record = rest.get(i..end)?;
    // Attributes, then the timestamp delta.
    let mut i = 1;
    if record.is_empty() {
        return None;
    }
    zigzag_at(record, &mut i, 10)?;
    // The offset delta must be `n` (zigzag: twice `n`).
    if varint_raw_at(record, &mut i)? != u64::from(n) << 1 {
        return None;
    }
    skip(record, &mut i, true)?;
    skip(record, &mut i, true)?;
    let headers = length(varint_raw_at(record, &mut i)?, false)??;
    // Each header takes at least two bytes.
    if headers > (record.len() - i) / 2 {
        return None;
    }
    for _ in 0..headers {
        let key = skip(record, &mut i, false)?;
        std::str::from_utf8(record.get(key)?).ok()?;
        skip(record, &mut i, true)?;
    }
    (i == record.len()).then_some(at + end)
}

impl Records {
    /// The next record, borrowed from the batch (see [`RecordView`]): what
    /// [`next`](Iterator::next) returns, without allocating or counting
    /// references. Like `next`, it stops after the first error.
    #[allow(
        clippy::should_implement_trait,
        reason = "a lending iterator: the view borrows self"
    )]
    pub fn next_view(&mut self) -> Option<Result<RecordView<'_>>> {
        if let Some(e) = self.end_check() {
            return Some(Err(e));
        }
        if self.index >= self.count {
            return None;
        }
        self.index += 1;
        let parsed = match short_parsed(&self.data, self.pos) {
            Some(p) => Ok(p),
            None => parse_record(&self.data, self.pos, |_, _| {}),
        };
        match parsed {
            Ok(p) => {
                self.pos = p.end;
                let data: &[u8] = &self.data;
                let get = |r: std::ops::Range<usize>| data.get(r).unwrap_or_default();
                Some(Ok(RecordView {
                    offset: self.base_offset.wrapping_add(i64::from(p.offset_delta)),
                    timestamp: self
                        .append_time
                        .unwrap_or(self.base_timestamp.wrapping_add(p.ts_delta)),
                    key: p.key.map(get),
                    value: p.value.map(get),
                    headers: get(p.headers),
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
    use crate::record::{BatchBuilder, Compression};

    /// Checks that the fast record walk and the decoder's agree on `batch`
    /// (which both accept) and on every mutation of it: one byte changed
    /// (`per_byte` times), one cut, one inserted, and a wrong record count.
    /// Most mutations must be refused, or this checks little.
    ///
    /// Returns how many of `batch`'s records the short form took, and how
    /// many of those reused the record before's decoded length.
    fn walks_agree_on_mutations(batch: &[u8], count: i32, per_byte: usize) -> (i32, i32) {
        let data = &batch[HEADER_SIZE..];
        assert!(records_well_formed(data, count));
        let (mut at, mut short, mut reused, mut last) = (0, 0, 0, LastLength::default());
        for n in 0..count.unsigned_abs() {
            let before = last.bits;
            at = match short_record(data, at, n, &mut last) {
                Some(end) => {
                    short += 1;
                    reused += i32::from(word_at(data, at).map(|w| w & 0xffff) == Some(before));
                    end
                }
                None => any_record(data, at, n).unwrap(),
            };
        }
        let agree = |d: &[u8], count: i32| {
            let fast = records_well_formed(d, count);
            let slow = walk_records(d, count);
            assert_eq!(fast, slow.is_ok(), "count {count}, decoder said {slow:?}");
            fast
        };
        let mut refused = 0;
        for c in [0, 1, count - 1, count + 1] {
            refused += usize::from(!agree(data, c));
        }
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for at in 0..data.len() {
            for _ in 0..per_byte {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let mut d = data.to_vec();
                d[at] = rng as u8;
                refused += usize::from(!agree(&d, count));
            }
            refused += usize::from(!agree(&data[..at], count));
            let mut d = data.to_vec();
            d.insert(at, rng as u8 & 0x7f);
            refused += usize::from(!agree(&d, count));
        }
        assert!(refused > data.len() * 2, "only {refused} refused");
        (short, reused)
    }

    /// The fast record walk and the decoder's agree on every mutation of
    /// batches with keys, null keys, headers and many records.
    #[test]
    fn fast_record_check_agrees_with_the_decoder() {
        let mut b = BatchBuilder::new(Compression::None);
        for i in 0..40u32 {
            let mut r = crate::Record::new(vec![b'v'; (i * 7 % 200) as usize]);
            if i % 3 != 0 {
                r = r.key(vec![b'k'; (i % 5) as usize]);
            }
            if i % 4 == 1 {
                r = r.header("h\u{e9}", vec![1u8; 3]);
                r.headers.push(crate::record::Header {
                    key: "n".into(),
                    value: None,
                });
            }
            b.push(&r);
        }
        let (short, _) = walks_agree_on_mutations(&b.build(), 40, 4);
        assert!(short > 0 && short < 40, "{short} of 40 in short form");
    }

    /// The same, on records that take the short form's every branch and
    /// leave it: one-, two- and three-byte lengths (the last record's
    /// 8-byte word runs past the batch), timestamp and offset deltas of one,
    /// two and three bytes, keys with two-byte lengths, empty and null
    /// values, headers, and records that change form one after another.
    #[test]
    fn fast_record_check_agrees_with_the_decoder_across_forms() {
        let mut b = BatchBuilder::new(Compression::None);
        let long = vec![b'x'; 9_000];
        let key = [b'k'; 70];
        let mut n = 0;
        for i in 0..200usize {
            let ts = 1_700_000_000_000 + [0, 5, 100, 70_000][i % 4];
            let value: Option<&[u8]> = match i % 5 {
                0 => None,
                1 => Some(&[]),
                2 => Some(&long[..40]),
                3 => Some(&long[..(i * 13) % 300]),
                _ => Some(&long[..if i == 104 { 9_000 } else { 7 }]),
            };
            let k = (i % 7 == 0).then_some(&key[..]);
            let headers = if i % 11 == 3 {
                vec![crate::record::Header {
                    key: "h".into(),
                    value: Some(Bytes::from_static(b"v")),
                }]
            } else {
                vec![]
            };
            b.push_parts(ts, k, value, &headers);
            n += 1;
        }
        // A run of one size (two-byte lengths), as fixed-size records come.
        for _ in 0..30 {
            b.push_parts(1_700_000_000_000, None, Some(&long[..100]), &[]);
            n += 1;
        }
        // A last record too short for an 8-byte word.
        b.push_parts(1_700_000_000_000, None, Some(b"z"), &[]);
        n += 1;
        let (short, reused) = walks_agree_on_mutations(&b.build(), n, 1);
        assert!(short > 0 && short < n, "{short} of {n} in short form");
        assert!(reused >= 29, "{reused} reused a decoded length");
    }

    /// Our CRC-32C (SIMD folding) against an independent implementation, on
    /// every length around the SIMD block sizes at several alignments, and
    /// on batch-sized inputs (the long folding loop).
    #[test]
    fn crc32c_matches_an_independent_implementation() {
        let data: Vec<u8> = (0..(1u32 << 20) + 64)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        assert_eq!(crc32c(b"123456789"), 0xe306_9283, "the CRC-32C check value");
        let long = [1023, 1024, 1025, 4095, 4096, 4097, 8191, 8192, 65_537];
        for len in (0..600).chain(long).chain([(1 << 20) + 7]) {
            for start in 0..8 {
                let bytes = &data[start..start + len];
                assert_eq!(crc32c(bytes), crc32c::crc32c(bytes), "len {len} at {start}");
            }
        }
    }

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
