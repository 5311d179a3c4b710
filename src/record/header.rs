//! The record batch v2 header (Kafka's `DefaultRecordBatch`): its layout
//! constants, [`BatchHeader`] and its parse, and the batch CRC-32C.
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
//! Parsing never panics: a short buffer is [`DecodeError::Truncated`].

use super::error::{DecodeError, Result};
use super::{Compression, TimestampType};

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

pub(super) const CODEC_MASK: i16 = 0x07;
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

    /// The batch-offset sequence rule of a log: whether this batch may
    /// come after a batch whose next offset is `next_offset` (for the first
    /// batch of a segment, the segment's base offset). Its last offset delta
    /// must be non-negative and its base offset above the previous batch's
    /// last offset, that is at least `next_offset`.
    pub fn follows(&self, next_offset: i64) -> bool {
        self.last_offset_delta >= 0 && self.base_offset >= next_offset
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
/// Callers pass a batch whose header they parsed (at least 61 bytes).
pub(crate) fn compute_crc(batch: &[u8]) -> u32 {
    crc32c(batch.get(ATTRIBUTES_OFFSET..).unwrap_or_default())
}

/// CRC-32C (Castagnoli) of `bytes`.
#[inline]
pub(crate) fn crc32c(bytes: &[u8]) -> u32 {
    // The algorithm's width is 32 bits: the value fits a u32.
    crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, bytes) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
