//! Retention (Kafka's `UnifiedLog.deleteOldSegments`) and `delete_records`.
//!
//! Only whole segments go, oldest first, stopping at the first one that must
//! stay. Nothing at or above the high watermark is deleted. When every
//! segment, the active one included, is deletable, the active segment is
//! rolled first so the log always keeps one. Deletion is crash-safe: the
//! log start offset moves first (in memory and in the checkpoint), then the
//! files are renamed to `.deleted`, the directory fsynced, and the files
//! unlinked; leftovers are removed at the next open. Readers holding a
//! deleted segment's bytes keep valid bytes (the map or descriptor outlives
//! the name).

use super::partition::PartitionLog;
use super::segment::Segment;
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::Duration;

/// What retention may delete, for one run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionPolicy {
    /// `retention.ms`: delete segments whose newest record is older.
    pub retention: Option<Duration>,
    /// `retention.bytes`: delete oldest segments while the log is larger.
    pub retention_bytes: Option<u64>,
    /// Time retention never deletes offsets at or above this (the lowest
    /// offset some consumer group still needs); size retention ignores it.
    pub time_retention_floor: Option<i64>,
}

/// What one retention run deleted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionOutcome {
    /// Segments deleted.
    pub segments_deleted: usize,
    /// Bytes of `.log` files deleted.
    pub bytes_deleted: u64,
    /// The log start offset after the run.
    pub log_start_offset: i64,
}

impl PartitionLog {
    /// Deletes old segments by `policy`, judging ages against `now_ms`
    /// (milliseconds since the epoch; pass the current time, or a fixed one
    /// in tests).
    ///
    /// # Errors
    /// I/O errors; segments already removed stay removed, and the next open
    /// finishes an interrupted deletion.
    pub fn apply_retention(
        &self,
        policy: &RetentionPolicy,
        now_ms: i64,
    ) -> Result<RetentionOutcome> {
        self.check_writable()?;
        let _m = self.maintenance();
        // Offsets read under the writer lock, with the list: no append or
        // roll moves them meanwhile.
        let mut log_start = self.log_start_offset();
        let doomed = self.take_oldest_segments(|segs| {
            log_start = self.log_start_offset();
            let offsets = (log_start, self.high_watermark(), self.log_end_offset());
            deletable(segs, policy, now_ms, offsets)
        })?;
        if doomed.is_empty() {
            return Ok(RetentionOutcome {
                log_start_offset: log_start,
                ..RetentionOutcome::default()
            });
        }
        self.checkpoint()?;
        let mut bytes = 0;
        for seg in &doomed {
            bytes += seg.size();
            seg.delete_files()?;
        }
        crate::event!(
            "retention deleted {} segment(s), {bytes} bytes, in {}; log start now {}",
            doomed.len(),
            self.dir().display(),
            self.log_start_offset()
        );
        Ok(RetentionOutcome {
            segments_deleted: doomed.len(),
            bytes_deleted: bytes,
            log_start_offset: self.log_start_offset(),
        })
    }

    /// Raises the log start offset to `before` (Kafka's `DeleteRecords`):
    /// reads below it fail with [`Error::OffsetOutOfRange`] at once, and
    /// segments wholly below it are deleted. Returns the new log start.
    ///
    /// # Errors
    /// [`Error::OffsetOutOfRange`] when `before` is above the high watermark;
    /// I/O errors.
    pub fn delete_records(&self, before: i64) -> Result<i64> {
        self.check_writable()?;
        let hw = self.high_watermark();
        if before > hw || before < 0 {
            return Err(Error::OffsetOutOfRange {
                requested: before,
                start: self.log_start_offset(),
                end: hw,
            });
        }
        if before <= self.log_start_offset() {
            return Ok(self.log_start_offset());
        }
        self.raise_log_start(before);
        // Durable before any file goes, so a crash cannot bring records back.
        self.checkpoint()?;
        self.apply_retention(&RetentionPolicy::default(), 0)?;
        Ok(self.log_start_offset())
    }
}

/// How many of the oldest segments `policy` deletes, given the log's start,
/// high watermark and end offsets: stopping at the first that must stay,
/// never at or above the high watermark.
fn deletable(
    segs: &[Arc<Segment>],
    policy: &RetentionPolicy,
    now_ms: i64,
    (log_start, hw, log_end): (i64, i64, i64),
) -> usize {
    let mut total: u64 = segs.iter().map(|s| s.size()).sum();
    let mut deletable = 0usize;
    for (i, seg) in segs.iter().enumerate() {
        let is_active = i + 1 == segs.len();
        let end = segs.get(i + 1).map_or(log_end, |n| n.base_offset());
        if end > hw || (is_active && seg.size() == 0) {
            break;
        }
        let by_start = !is_active && end <= log_start;
        let by_size = policy
            .retention_bytes
            .is_some_and(|limit| total.saturating_sub(limit) >= seg.size() && seg.size() > 0);
        let by_time = policy.retention.is_some_and(|limit| {
            let newest = match seg.max_timestamp() {
                ts if ts >= 0 => ts,
                _ => seg.mtime_ms(),
            };
            now_ms.saturating_sub(newest) > super::millis_i64(limit)
                && policy.time_retention_floor.is_none_or(|floor| end <= floor)
        });
        if !(by_start || by_size || by_time) {
            break;
        }
        total -= seg.size();
        deletable += 1;
    }
    deletable
}
