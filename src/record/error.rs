//! The codec's own error type: everything that can be wrong with bytes that
//! claim to be record batches (and with the codecs' streams inside them).
//!
//! [`crate::Error`] wraps it as [`crate::Error::Decode`]; the codec itself
//! never sees files, so a position or path is added by the layer that read
//! the bytes.

/// What is wrong with bytes being decoded as a record batch.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A batch's stored CRC-32C does not match its contents.
    #[error("batch crc mismatch: stored {expected:#010x}, computed {actual:#010x}")]
    ChecksumMismatch {
        /// The CRC stored in the batch header.
        expected: u32,
        /// The CRC computed over the batch.
        actual: u32,
    },

    /// A batch's offsets do not follow the batch before it in a log: its
    /// last offset delta is negative, or its base offset is not above the
    /// previous batch's last offset (not exactly the next offset, where the
    /// batches must be contiguous). The base offset is outside the CRC, so
    /// this is how a damaged one shows.
    #[error("batch offsets {base_offset}..={last_offset} do not follow offset {previous}")]
    BatchOutOfOrder {
        /// The batch's base offset.
        base_offset: i64,
        /// The batch's last offset (base + last offset delta).
        last_offset: i64,
        /// The last offset of the batch before (one below the first
        /// offset expected).
        previous: i64,
    },

    /// A batch's magic byte is not 2 (only record batch v2 is supported).
    #[error("unsupported record batch magic {found} (expected 2)")]
    BadMagic {
        /// The magic byte found.
        found: i8,
    },

    /// The input ends before the structure being decoded does.
    #[error("truncated {what}: needs {needed} bytes, {available} available")]
    Truncated {
        /// What was being decoded.
        what: &'static str,
        /// Bytes the structure needs.
        needed: usize,
        /// Bytes that were available.
        available: usize,
    },

    /// A length field holds a value outside what the format allows.
    #[error("{what} length {length} out of bounds ({min}..={max})")]
    LengthOutOfBounds {
        /// Which length field.
        what: &'static str,
        /// The value found.
        length: i64,
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },

    /// A batch header's records count is negative.
    #[error("negative records count {count}")]
    NegativeRecordCount {
        /// The count in the batch header.
        count: i32,
    },

    /// A record header's key is null (length −1); Kafka's format has no
    /// null header keys.
    #[error("record header key is null")]
    NullHeaderKey,

    /// A header key is not valid UTF-8.
    #[error("record header key is not valid utf-8")]
    InvalidHeaderKey,

    /// A field of an embedded structure (such as a group offset record)
    /// holds a value the format does not allow.
    #[error("invalid {what}: {value}")]
    InvalidField {
        /// Which field.
        what: &'static str,
        /// The value found.
        value: i64,
    },

    /// The batch uses a compression codec kafkalite does not implement.
    #[error("unsupported compression codec {codec} ({name})")]
    UnsupportedCompression {
        /// The codec number from the batch attributes.
        codec: u8,
        /// Kafka's name for it.
        name: &'static str,
    },

    /// The number of records decoded differs from the batch header's count.
    #[error("record count mismatch: header says {expected}, batch holds {actual}")]
    RecordCountMismatch {
        /// The count in the batch header.
        expected: i32,
        /// The number of records actually present.
        actual: i32,
    },

    /// Bytes are left after the last record a batch's count announces.
    #[error("{bytes} trailing bytes after the {what}")]
    TrailingBytes {
        /// What was being decoded.
        what: &'static str,
        /// How many bytes were left over.
        bytes: usize,
    },

    /// A varint is longer than its type allows.
    #[error("varint overflow in {what}")]
    VarintOverflow {
        /// What was being decoded.
        what: &'static str,
    },

    /// The batch's codec is one Kafka defines, but this build left it out
    /// (its cargo feature is off).
    #[error("compression codec {codec} ({name}) is not built in: enable kafkalite's `{feature}` feature")]
    CodecNotBuilt {
        /// The codec number from the batch attributes.
        codec: u8,
        /// Kafka's name for it.
        name: &'static str,
        /// The cargo feature that builds it.
        feature: &'static str,
    },

    /// A batch's gzip, snappy or zstd stream is malformed.
    #[error("invalid {codec} data in a record batch: {reason}")]
    InvalidCompressed {
        /// The codec's name.
        codec: &'static str,
        /// What the decoder reported.
        reason: String,
    },

    /// A batch's records decompress to more than
    /// [`MAX_DECOMPRESSED_SIZE`](crate::record::MAX_DECOMPRESSED_SIZE) bytes
    /// (a decompression bomb, or a batch no Kafka client writes).
    #[error("{codec} batch decompresses to more than {limit} bytes")]
    DecompressedTooLarge {
        /// The codec's name.
        codec: &'static str,
        /// The limit in bytes.
        limit: usize,
    },

    /// A control record's key or value is malformed.
    #[error("invalid control record: {reason}")]
    InvalidControlRecord {
        /// What is wrong with it.
        reason: &'static str,
    },

    /// An LZ4 frame inside a batch is malformed or uses a feature Kafka rejects.
    #[error("invalid lz4 frame: {reason}")]
    InvalidLz4 {
        /// What is wrong with the frame.
        reason: &'static str,
    },
}

/// The result of a decode.
pub(crate) type Result<T, E = DecodeError> = std::result::Result<T, E>;
