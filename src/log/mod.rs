//! The partition log: segments, indexes, reads, durability and recovery.
//!
//! On disk, a partition is a directory of segments named by their base
//! offset, exactly as Kafka lays them out:
//!
//! ```text
//! <topic>-<partition>/
//!   00000000000000000000.log        record batches v2, back to back
//!   00000000000000000000.index      8-byte entries: relative offset, position
//!   00000000000000000000.timeindex  12-byte entries: timestamp, relative offset
//!   00000000000000004096.log        the next segment ...
//!   partition.checkpoint            recovery point + log start offset (CRC-guarded)
//!   .kafka_cleanshutdown            present only while closed cleanly
//!   .lock                           held while open
//! ```

mod checkpoint;
mod cleaner;
mod config;
pub mod files;
// Test code: built for the unit tests and under cargo-fuzz only.
#[cfg(any(test, fuzzing))]
#[doc(hidden)]
pub mod fuzz;
mod index;
pub(crate) mod limits;
mod notify;
mod open;
mod partition;
mod positions_cache;
mod read_ahead;
mod retention;
mod segment;
mod txn;

pub use cleaner::{CompactionOutcome, CompactionPolicy};
pub(crate) use config::WRITEBACK_DEFAULT;
pub use config::{Durability, LogConfig, LogSettings, ReadMode};
pub(crate) use notify::Notifier;
pub(crate) use partition::parse_headers;
pub use partition::{AppendInfo, PartitionLog};
pub use retention::{RetentionOutcome, RetentionPolicy};
pub(crate) use segment::{SegmentCache, OPEN_SEGMENTS_DEFAULT};
pub use txn::AbortedTransaction;

/// The wall clock in milliseconds since the Unix epoch (0 before it).
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, millis_i64)
}

/// `d` in whole milliseconds, saturating at `i64::MAX` (Kafka's `LONG`):
/// a longer duration means "never", not a negative age that expires all.
pub(crate) fn millis_i64(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

use crate::error::Result;
use crate::record::{LogRecord, RecordBatch, RecordView};

/// The result of [`PartitionLog::read`]: whole batches, plus the log's
/// offsets at the time of the read.
#[derive(Clone, Debug)]
pub struct LogRead {
    offset: i64,
    batches: Vec<RecordBatch>,
    /// Set when batches read were left out (aborted ones, under
    /// `read_committed`): the offset after the last one read.
    next: Option<i64>,
    high_watermark: i64,
    log_start_offset: i64,
}

impl LogRead {
    pub(crate) fn new(
        offset: i64,
        batches: Vec<RecordBatch>,
        high_watermark: i64,
        log_start_offset: i64,
    ) -> Self {
        LogRead {
            offset,
            batches,
            next: None,
            high_watermark,
            log_start_offset,
        }
    }

    /// The same read, with the offset to read next set explicitly.
    pub(crate) fn with_next_offset(mut self, next: i64) -> Self {
        self.next = Some(next);
        self
    }

    /// The whole batches read, as stored. The first may start before the
    /// requested offset (batches are never split).
    pub fn batches(&self) -> &[RecordBatch] {
        &self.batches
    }

    /// Whether nothing was read.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Total bytes of the batches.
    pub fn size(&self) -> usize {
        self.batches.iter().map(RecordBatch::size).sum()
    }

    /// The high watermark when the read happened.
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// The log start offset when the read happened.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The offset to read next: after the last batch, or the requested
    /// offset when nothing was read.
    pub fn next_offset(&self) -> i64 {
        self.next.unwrap_or_else(|| {
            self.batches
                .last()
                .map_or(self.offset, |b| b.last_offset() + 1)
        })
    }

    /// The records at or after the requested offset, decoded lazily.
    /// Control batches (transaction markers) are left out, as Kafka's
    /// consumer leaves them out: their offsets are skipped.
    pub fn records(&self) -> impl Iterator<Item = Result<LogRecord>> + '_ {
        let from = self.offset;
        self.batches
            .iter()
            .filter(|b| !b.header().is_control())
            .flat_map(move |b| match b.records() {
                Ok(mut rs) => {
                    // Point reads land mid-batch: skip without decoding.
                    if b.base_offset() < from {
                        rs.skip_to(from);
                    }
                    Box::new(rs.map(|r| r.map_err(crate::Error::from)))
                        as Box<dyn Iterator<Item = Result<LogRecord>>>
                }
                Err(e) => Box::new(std::iter::once(Err(e.into()))),
            })
            .filter(move |r| r.as_ref().map_or(true, |r| r.offset >= from))
    }

    /// Calls `f` with each record at or after the requested offset, in
    /// order, borrowed from its batch ([`RecordView`]: no allocation and no
    /// reference counting per record, the fastest way to read). Control
    /// batches are left out, as by [`records`](Self::records). Returns how
    /// many records `f` saw.
    ///
    /// # Errors
    /// The first decoding error, after `f` saw every record before it.
    pub fn for_each_record(&self, mut f: impl FnMut(RecordView<'_>)) -> Result<usize> {
        let from = self.offset;
        let mut n = 0;
        for b in self.batches.iter().filter(|b| !b.header().is_control()) {
            let mut rs = b.records()?;
            if b.base_offset() < from {
                rs.skip_to(from);
            }
            while let Some(r) = rs.next_view() {
                let r = r?;
                if r.offset >= from {
                    f(r);
                    n += 1;
                }
            }
        }
        Ok(n)
    }
}
