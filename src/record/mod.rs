//! Records and Kafka's record batch v2 codec. Pure: no I/O, no clocks.
//!
//! A batch on disk is a 61-byte big-endian header followed by the records,
//! raw or as one compressed stream (see [`RecordBatch`] for the layout).

mod batch;
mod builder;
mod codec;
mod control;
mod error;
#[cfg(any(test, fuzzing))]
mod fuzz;
#[cfg(feature = "gzip")]
mod gzip;
mod header;
mod lz4;
mod lz4_point;
mod parse;
mod positions;
mod records;
mod scan;
#[cfg(feature = "snappy")]
mod snappy;
mod validation;
mod varint;
mod view;
#[cfg(feature = "zstd")]
mod zstandard;

pub use batch::RecordBatch;
pub use builder::BatchBuilder;
pub(crate) use builder::{estimated_size, set_base_offset};
pub(crate) use codec::check_compression;
pub use codec::{is_built, MAX_DECOMPRESSED_SIZE};
pub use control::{ControlRecord, ControlRecordType};
pub use error::DecodeError;
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub use fuzz::{fuzz_decode_batch, fuzz_lz4_round_trip};
pub(crate) use header::compute_crc;
pub use header::{BatchHeader, HEADER_SIZE, LOG_OVERHEAD};
pub(crate) use positions::RecordPositions;
pub use records::Records;
pub use scan::{BatchScan, OffsetOrder, ScanEnd, ScannedBatch};
pub(crate) use validation::check_uncompressed_records;
pub use view::RecordView;
pub(crate) use view::{RecordSpans, Span};

use bytes::Bytes;

/// One record header: a UTF-8 key and an optional value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The header key (never null in Kafka's format).
    pub key: String,
    /// The header value; `None` is Kafka's null.
    pub value: Option<Bytes>,
}

impl Header {
    /// A header with a value.
    pub fn new(key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        Header {
            key: key.into(),
            value: Some(value.into()),
        }
    }
}

/// Kafka's `RecordBatch.NO_TIMESTAMP`: a record without a timestamp. The
/// partition log stamps such records with the append time, as Kafka's
/// producer stamps "now" at send.
pub const NO_TIMESTAMP: i64 = -1;

/// A record to append: what a producer sends.
///
/// Keys, values and header values may be null (`None`); a null value is a
/// tombstone for compacted topics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Milliseconds since the Unix epoch (Kafka's CreateTime);
    /// [`NO_TIMESTAMP`] (the default) is stamped with the append time by
    /// [`PartitionLog::append_records`](crate::PartitionLog::append_records)
    /// and [`Store::append`](crate::Store::append). A [`BatchBuilder`] used
    /// on its own writes what it is given.
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<Bytes>,
    /// The value; `None` is null.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

impl Default for Record {
    /// No timestamp ([`NO_TIMESTAMP`]), key, value or headers.
    fn default() -> Self {
        Record {
            timestamp: NO_TIMESTAMP,
            key: None,
            value: None,
            headers: Vec::new(),
        }
    }
}

impl Record {
    /// A record with a value, no key, no headers and no timestamp
    /// ([`NO_TIMESTAMP`]: the append time is used).
    pub fn new(value: impl Into<Bytes>) -> Self {
        Record {
            value: Some(value.into()),
            ..Record::default()
        }
    }

    /// Sets the key.
    #[must_use]
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Sets the timestamp (milliseconds since the Unix epoch).
    #[must_use]
    pub fn timestamp(mut self, ts: i64) -> Self {
        self.timestamp = ts;
        self
    }

    /// Appends a header.
    #[must_use]
    pub fn header(mut self, key: impl Into<String>, value: impl Into<Bytes>) -> Self {
        self.headers.push(Header::new(key, value));
        self
    }
}

/// A record read back from a batch, with its offset.
///
/// For uncompressed batches the key, value and header values are slices of
/// the batch's buffer (no copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogRecord {
    /// The record's offset in its partition.
    pub offset: i64,
    /// Milliseconds since the Unix epoch.
    pub timestamp: i64,
    /// The key; `None` is null.
    pub key: Option<Bytes>,
    /// The value; `None` is null.
    pub value: Option<Bytes>,
    /// Headers, in order.
    pub headers: Vec<Header>,
}

impl LogRecord {
    /// Drops the offset, giving a record that can be appended again.
    pub fn into_record(self) -> Record {
        Record {
            timestamp: self.timestamp,
            key: self.key,
            value: self.value,
            headers: self.headers,
        }
    }
}

/// A batch's compression codec (attributes bits 0–2).
///
/// Every codec Kafka defines is read. Each of gzip, snappy and zstd is
/// behind a cargo feature of the same name (all in `default`); a build
/// without one reports [`DecodeError::CodecNotBuilt`]
/// for its batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum Compression {
    /// No compression (codec 0).
    #[default]
    None,
    /// gzip (codec 1): one or more gzip members, as Java's `GZIPOutputStream`
    /// writes them.
    Gzip,
    /// Snappy (codec 2) in xerial's `SnappyOutputStream` framing, as Kafka's
    /// Java client writes it; a plain snappy block is read too.
    Snappy,
    /// LZ4 frame format, as Kafka writes it (codec 3).
    Lz4,
    /// Zstandard frames (codec 4).
    Zstd,
}

impl Compression {
    /// Every codec, in codec-number order.
    pub const ALL: [Compression; 5] = [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ];

    /// Kafka's codec number.
    pub fn codec(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Gzip => 1,
            Compression::Snappy => 2,
            Compression::Lz4 => 3,
            Compression::Zstd => 4,
        }
    }

    /// The codec with Kafka's number `codec`, if there is one.
    pub fn from_codec(codec: u8) -> Option<Compression> {
        Compression::ALL.get(usize::from(codec)).copied()
    }

    /// Kafka's name (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Snappy => "snappy",
            Compression::Lz4 => "lz4",
            Compression::Zstd => "zstd",
        }
    }

    /// The compression levels the codec takes, as Kafka defines them
    /// (`compression.gzip.level`: 1 to 9; `compression.zstd.level`: −131072
    /// to 22), with Kafka's default; `None` for codecs without levels here.
    pub fn levels(self) -> Option<(std::ops::RangeInclusive<i32>, i32)> {
        match self {
            Compression::Gzip => Some((codec::GZIP_LEVELS, codec::GZIP_DEFAULT_LEVEL)),
            Compression::Zstd => Some((codec::ZSTD_LEVELS, codec::ZSTD_DEFAULT_LEVEL)),
            Compression::None | Compression::Snappy | Compression::Lz4 => None,
        }
    }
}

impl std::str::FromStr for Compression {
    type Err = crate::Error;

    fn from_str(s: &str) -> crate::Result<Self> {
        Compression::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or(crate::Error::InvalidConfig {
                key: "compression.type",
                reason: "expected none, gzip, snappy, lz4 or zstd",
            })
    }
}

/// A batch's timestamp type (attributes bit 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// Timestamps set by the producer.
    CreateTime,
    /// Timestamps set when the batch was appended.
    LogAppendTime,
}
