//! [`RecordBatch`]: one whole, CRC-checked batch sharing its buffer, and
//! the ways into its records (all, a point read, the control record).
//!
//! Decoding never panics and never allocates by an unchecked length field:
//! every length is bounded by the bytes actually present.

use super::error::{DecodeError, Result};
use super::header::{compute_crc, CODEC_MASK, HEADER_SIZE};
use super::{
    codec, BatchHeader, Compression, ControlRecord, LogRecord, RecordPositions, Records,
    TimestampType,
};
use bytes::Bytes;
use std::sync::Arc;

/// One validated record batch: its header was parsed, the whole batch is
/// present and its CRC-32C matches. Cheap to clone (shares the buffer).
#[derive(Clone, Debug)]
pub struct RecordBatch {
    header: BatchHeader,
    buf: Bytes,
    /// Start positions of every stride-th record, when a point read into
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
    /// uncompressed or lz4 data batch whose offset deltas run 0, 1, 2, …,
    /// with more than [`STRIDE`](super::positions::STRIDE) records.
    pub(crate) fn wants_positions(&self) -> bool {
        let h = &self.header;
        let codec = h.attributes & CODEC_MASK;
        (codec == 0 || codec == Compression::Lz4 as i16)
            && h.records_count > super::positions::STRIDE
            && i64::from(h.records_count) == i64::from(h.last_offset_delta) + 1
    }

    /// Walks this batch's records for their [`RecordPositions`] (an lz4
    /// batch is decompressed for it as its first point read does: every
    /// block but the last).
    pub(crate) fn build_positions(&self) -> Option<RecordPositions> {
        match self.header.compression().ok()? {
            Compression::None => RecordPositions::build(self.body(), self.header.records_count),
            Compression::Lz4 => self.lz4_map(),
            _ => None,
        }
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

    /// The records' bytes, raw or compressed: everything after the header.
    #[expect(
        clippy::indexing_slicing,
        reason = "a RecordBatch holds one whole batch, whose parsed length is at least a header's"
    )]
    fn body(&self) -> &[u8] {
        &self.buf[HEADER_SIZE..]
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
            ahead: 0,
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
        self.full_record_at(offset)
    }

    /// As [`record_at`](Self::record_at), for an lz4 batch whose point
    /// reads would use a block map ([`RecordPositions`]) not attached yet:
    /// with the map, built from the same decode the record is taken from
    /// (`None` where it does not apply). Other batches get their
    /// positions built eagerly ([`build_positions`](Self::build_positions)),
    /// and a read of a batch's first record needs none: for them this is
    /// `record_at`, and no positions.
    pub(crate) fn record_at_building(
        &self,
        offset: i64,
    ) -> Result<(Option<LogRecord>, Option<RecordPositions>)> {
        let h = &self.header;
        // The first record is read from the frame's start, map or none.
        let inside = offset > h.base_offset && offset <= h.last_offset();
        let lz4 = h.compression()? == Compression::Lz4;
        if !inside || !lz4 || !self.wants_positions() || self.positions.is_some() {
            return Ok((self.record_at(offset)?, None));
        }
        let (found, map) = self.lz4_record_at_mapping(offset)?;
        match found {
            Some(r) if r.offset == offset => Ok((Some(r), map)),
            _ => Ok((self.record_at(offset)?, map)),
        }
    }

    /// [`record_at`](Self::record_at) by way of
    /// [`records`](Self::records).
    fn full_record_at(&self, offset: i64) -> Result<Option<LogRecord>> {
        let mut rs = self.records()?;
        rs.skip_to(offset);
        // One record is wanted: no read-ahead past it.
        rs.ahead = usize::MAX;
        for r in rs {
            let r = r?;
            if r.offset >= offset {
                return Ok((r.offset == offset).then_some(r));
            }
        }
        Ok(None)
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
