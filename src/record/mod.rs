//! Records and Kafka's record batch v2 codec. Pure: no I/O, no clocks.
//!
//! A batch on disk is a 61-byte big-endian header followed by the records,
//! raw or as one compressed stream (see [`RecordBatch`] for the layout).

mod batch;
mod builder;
mod fuzz;
mod lz4;
mod varint;

pub(crate) use batch::{check_uncompressed_records, compute_crc};
pub use batch::{BatchHeader, RecordBatch, Records, HEADER_SIZE, LOG_OVERHEAD};
pub(crate) use builder::set_base_offset;
pub use builder::BatchBuilder;
#[doc(hidden)]
pub use fuzz::fuzz_decode_batch;

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Compression {
    /// No compression (codec 0).
    #[default]
    None,
    /// LZ4 frame format, as Kafka writes it (codec 3).
    Lz4,
}

impl Compression {
    /// Kafka's codec number.
    pub fn codec(self) -> u8 {
        match self {
            Compression::None => 0,
            Compression::Lz4 => 3,
        }
    }

    /// Kafka's name (`compression.type`).
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Lz4 => "lz4",
        }
    }
}

impl std::str::FromStr for Compression {
    type Err = crate::Error;

    fn from_str(s: &str) -> crate::Result<Self> {
        match s {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            _ => Err(crate::Error::InvalidConfig {
                key: "compression.type",
                reason: "expected none or lz4",
            }),
        }
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
