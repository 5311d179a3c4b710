//! Read-only handles ([`PartitionLog::open_read_only`]): following another
//! process's writer. Each read first catches up with what the writer
//! appended, rolled, deleted or rewrote since the last look; nothing here
//! ever writes, and files another process owns are never memory-mapped.

use super::PartitionLog;
use crate::error::{Error, Result};
use crate::io::exists;
use crate::log::checkpoint::Checkpoint;
use crate::log::files;
use crate::log::segment::{IndexCursor, Open, Segment};
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl PartitionLog {
    /// Whether this handle was opened read-only.
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Read-only handles: takes in what the writing process appended,
    /// rolled or deleted since the last look. A no-op for the writer.
    ///
    /// # Errors
    /// I/O errors reading the directory or segments.
    pub fn refresh(&self) -> Result<()> {
        if !self.read_only {
            return Ok(());
        }
        let fs = &*self.config.file_system;
        let mut w = self.writer.lock();
        loop {
            let active = self.active();
            if let Some(next) = active.catch_up(self.log_end_offset(), &mut w.cursor)? {
                self.log_end.store(next, Ordering::Release);
                self.high_watermark.fetch_max(next, Ordering::AcqRel);
            }
            // A roll creates the next segment named by the current end.
            let end = self.log_end_offset();
            if end <= active.base_offset()
                || !exists(fs, &self.dir.join(files::file_name(end, files::LOG)))?
            {
                break;
            }
            let seg = open_read_only(self, end)?;
            active.unpin();
            w.cursor = IndexCursor::default();
            let out = seg.scan_all_read_only(&mut w.cursor, true)?;
            self.segments.write().push(Arc::new(seg));
            let end = out.next_offset.max(end);
            self.log_end.store(end, Ordering::Release);
            self.high_watermark.fetch_max(end, Ordering::AcqRel);
        }
        // Retention or compaction in the writer: drop segments whose files
        // are gone, and follow the checkpointed log start.
        let first = self.segments.read().first().cloned();
        if let Some(first) = first {
            if !exists(fs, first.log_path())? {
                let segs = self.segments_snapshot();
                let keep_last = segs.len().saturating_sub(1);
                let mut kept = Vec::with_capacity(segs.len());
                for (i, s) in segs.into_iter().enumerate() {
                    if i >= keep_last || exists(fs, s.log_path())? {
                        kept.push(s);
                    }
                }
                *self.segments.write() = kept;
            }
        }
        let ckpt = fs
            .metadata(&self.dir.join(files::CHECKPOINT))
            .ok()
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.ino(), m.mtime_nsec(), m.len())
            });
        let changed = {
            let mut seen = self.seen_checkpoint.lock();
            let changed = *seen != ckpt;
            *seen = ckpt;
            changed
        };
        if changed {
            self.reload_rewritten_segments()?;
        }
        let first = self.segments.read().first().map_or(0, |s| s.base_offset());
        let checkpointed =
            Checkpoint::read_trusted(fs, &self.dir)?.map_or(first, |c| c.log_start_offset);
        let start = first.max(checkpointed).min(self.log_end_offset());
        self.log_start.fetch_max(start, Ordering::AcqRel);
        Ok(())
    }

    /// After a read found damage: the writer may have rewritten a segment
    /// since the last refresh. Takes the rewrite in (the caller reads once
    /// more before calling it damage).
    pub(super) fn reload_after_rewrite(&self) -> Result<()> {
        let _w = self.writer.lock();
        self.reload_rewritten_segments()
    }

    /// Read-only handles: follows the writer's compaction and retention.
    /// A sealed segment whose `.log` is gone is dropped; one whose size
    /// changed (compaction rewrote it: a rewrite removes records, so the
    /// size changes) is replaced by a handle on the new file. Readers
    /// holding the old one keep valid bytes.
    fn reload_rewritten_segments(&self) -> Result<()> {
        let fs = &*self.config.file_system;
        let segs = self.segments_snapshot();
        let last = segs.len().saturating_sub(1);
        let mut kept = Vec::with_capacity(segs.len());
        let mut changed = false;
        for (i, seg) in segs.into_iter().enumerate() {
            if i == last {
                kept.push(seg);
                continue;
            }
            let size = match fs.metadata(seg.log_path()) {
                Ok(m) => m.len(),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    changed = true;
                    continue;
                }
                Err(e) => return Err(Error::io("stat segment", seg.log_path(), e)),
            };
            if size == seg.size() {
                kept.push(seg);
                continue;
            }
            changed = true;
            let base = seg.base_offset();
            let lazy = Open::Lazy { writable: false };
            let fresh = Segment::open(&self.dir, base, &self.config, lazy)?.segment;
            // Opened now when its indexes needed rebuilding: sealed all the same.
            fresh.unpin();
            kept.push(Arc::new(fresh));
        }
        if changed {
            *self.segments.write() = kept;
        }
        Ok(())
    }
}

/// Opens the segment at `base` of `log`'s directory read-only, now.
fn open_read_only(log: &PartitionLog, base: i64) -> Result<Segment> {
    Segment::open(&log.dir, base, &log.config, Open::ReadOnly).map(|o| o.segment)
}
