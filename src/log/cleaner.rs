//! Key compaction (Kafka's `LogCleaner`, `cleanup.policy=compact`).
//!
//! The sealed segments are scanned for the latest offset of every key; each
//! sealed segment is then rewritten keeping only records that are the latest
//! for their key (records without a key are kept), dropping tombstones older
//! than `delete.retention.ms`. Batches keep their base and last offsets, and
//! records keep theirs, so consumers see gaps, never renumbering. The active
//! segment is never touched.
//!
//! Crash safety, as Kafka: the new segment is written as `<base>.log.cleaned`
//! and fsynced, renamed to `.log.swap` (the commit point), the old indexes are
//! removed, and the swap file is renamed over `<base>.log`. Open deletes
//! `.cleaned` leftovers and completes an interrupted swap; missing indexes
//! are rebuilt.

use super::files::{self, compaction_paths};
use super::partition::PartitionLog;
use super::segment::{Open, Segment};
use super::txn::{is_aborted, AbortedTransaction, TxnIndex};
use crate::error::{Error, Result};
use crate::io::{fsync_dir, write_synced};
use crate::record::{BatchBuilder, DecodeError, Header, RecordBatch};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// What compaction keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionPolicy {
    /// `delete.retention.ms`: tombstones younger than this are kept, so
    /// consumers can see the delete.
    pub delete_retention: Duration,
    /// `min.cleanable.dirty.ratio` in percent: compact only when at least
    /// this share of the sealed bytes was written since the last compaction
    /// (0 always compacts).
    pub min_dirty_percent: u8,
}

impl Default for CompactionPolicy {
    fn default() -> Self {
        CompactionPolicy {
            delete_retention: Duration::from_secs(24 * 3600),
            min_dirty_percent: 50,
        }
    }
}

/// What one compaction run did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactionOutcome {
    /// Segments rewritten (or removed when nothing in them survived).
    pub segments_cleaned: usize,
    /// Records dropped.
    pub records_removed: u64,
    /// `.log` bytes before and after, over the rewritten segments.
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
}

impl PartitionLog {
    /// The share (percent) of sealed bytes written since the last compaction.
    pub fn dirty_percent(&self) -> u8 {
        let (sealed, _) = self.sealed_segments();
        let cleaned_to = self.cleaned_up_to();
        let (mut total, mut dirty) = (0u64, 0u64);
        for s in &sealed {
            total += s.size();
            if s.base_offset() >= cleaned_to {
                dirty += s.size();
            }
        }
        (dirty * 100).checked_div(total).map_or(0, |p| p as u8)
    }

    /// Compacts the sealed segments if the dirty share reached the policy's
    /// threshold (or always with `force`), judging tombstone ages against
    /// `now_ms`.
    ///
    /// # Errors
    /// I/O errors and [`Error::Corrupt`]; a segment is replaced only once its
    /// cleaned copy is durable, so an error leaves the log readable.
    pub fn compact(
        &self,
        policy: &CompactionPolicy,
        now_ms: i64,
        force: bool,
    ) -> Result<CompactionOutcome> {
        self.check_writable()?;
        let _span = crate::span!("kafkalite.compaction", dir = self.dir().display());
        let _m = self.maintenance();
        let mut outcome = CompactionOutcome::default();
        if !force && (self.dirty_percent() == 0 || self.dirty_percent() < policy.min_dirty_percent)
        {
            return Ok(outcome);
        }
        let (sealed, end) = self.sealed_segments();
        // Rolled segments are flushed in the background: make every sealed
        // one durable and below the recovery point first, so recovery never
        // scans a rewritten segment (whose records may legitimately end
        // before the next segment's base) as if it could be torn.
        self.sync_sealed()?;
        // Transactions in the sealed part: aborted data is removed (as
        // Kafka's cleaner removes it), data of a transaction still open is
        // kept as it is, and control batches are never compacted.
        let mut txns = TxnIndex::default();
        for seg in &sealed {
            for batch in seg.read_batches(0, usize::MAX, seg.size(), i64::MAX)? {
                txns.observe(&batch);
            }
        }
        let aborted = txns.aborted_in(i64::MIN, i64::MAX);
        let txns = Txns {
            index: txns,
            aborted,
        };
        // The latest offset of every key in the sealed part of the log.
        let mut latest: HashMap<Bytes, i64> = HashMap::new();
        for seg in &sealed {
            for batch in seg.read_batches(0, usize::MAX, seg.size(), i64::MAX)? {
                if txns.verbatim(&batch) || txns.removed(&batch) {
                    continue;
                }
                let damaged = |e| Error::corrupt(seg.log_path(), 0, e);
                for r in batch.records().map_err(damaged)? {
                    let r = r.map_err(damaged)?;
                    if let Some(k) = r.key {
                        latest.insert(k, r.offset);
                    }
                }
            }
        }
        let horizon = now_ms.saturating_sub(super::millis_i64(policy.delete_retention));
        for seg in &sealed {
            let (data, removed) = rewrite(seg, &latest, horizon, &txns)?;
            if removed == 0 {
                continue;
            }
            outcome.segments_cleaned += 1;
            outcome.records_removed += removed;
            outcome.bytes_before += seg.size();
            outcome.bytes_after += data.len() as u64;
            self.swap_in(seg, &data)?;
        }
        self.mark_cleaned_up_to(end);
        if outcome.segments_cleaned > 0 {
            // A new checkpoint tells read-only handles (tailers in other
            // processes) to look for rewritten segments.
            self.checkpoint()?;
        }
        crate::event!(
            "compacted {}: {} segment(s), {} records removed, {} -> {} bytes",
            self.dir().display(),
            outcome.segments_cleaned,
            outcome.records_removed,
            outcome.bytes_before,
            outcome.bytes_after
        );
        Ok(outcome)
    }

    /// Replaces a sealed segment with `data` (its cleaned batches), or
    /// removes it when nothing survived, unless it is the first segment:
    /// that one stays, empty, so the log start (which the first segment's
    /// base offset bounds at open) does not move, as in Kafka, whose cleaner
    /// keeps an emptied segment too.
    fn swap_in(&self, old: &Arc<Segment>, data: &[u8]) -> Result<()> {
        if data.is_empty() && !self.is_first_segment(old) {
            self.unlist_segment(old);
            // Unlisted before its files go, so open does not take the
            // removal for damage.
            self.checkpoint()?;
            return old.delete_files();
        }
        let paths = old.paths();
        let (cleaned, swap) = compaction_paths(&paths.log);
        let dir = self.dir();
        let fs = &*self.config().file_system;
        write_synced(fs, &cleaned, data)?;
        fsync_dir(fs, dir)?;
        fs.rename(&cleaned, &swap)
            .map_err(|e| Error::io("rename", &cleaned, e))?;
        fsync_dir(fs, dir)?;
        files::finish_swap(fs, &swap, paths)?;
        fsync_dir(fs, dir)?;
        let fresh = Segment::open(dir, old.base_offset(), self.config(), Open::Rebuilt)?;
        self.replace_segment(old, Arc::new(fresh.segment));
        Ok(())
    }
}

/// What compaction knows of the transactions in the part it cleans.
struct Txns {
    index: TxnIndex,
    aborted: Vec<AbortedTransaction>,
}

impl Txns {
    /// Control batches and data of open transactions: copied as they are.
    fn verbatim(&self, batch: &RecordBatch) -> bool {
        batch.header().is_control() || self.index.is_open(batch)
    }

    /// Data of aborted transactions: removed whole.
    fn removed(&self, batch: &RecordBatch) -> bool {
        is_aborted(batch, &self.aborted)
    }
}

/// The segment's batches with superseded records, expired tombstones and
/// aborted transactions' data removed, and how many records were removed.
fn rewrite(
    seg: &Segment,
    latest: &HashMap<Bytes, i64>,
    horizon: i64,
    txns: &Txns,
) -> Result<(Vec<u8>, u64)> {
    let mut out = Vec::with_capacity(seg.size() as usize);
    let mut removed = 0u64;
    for batch in seg.read_batches(0, usize::MAX, seg.size(), i64::MAX)? {
        if txns.verbatim(&batch) {
            out.extend_from_slice(batch.as_bytes());
            continue;
        }
        if txns.removed(&batch) {
            removed += u64::try_from(batch.records_count()).unwrap_or(0);
            continue;
        }
        let (kept, dropped) = clean_batch(&batch, latest, horizon)
            .map_err(|e| Error::corrupt(seg.log_path(), 0, e))?;
        removed += dropped;
        match (kept, dropped) {
            (_, 0) => out.extend_from_slice(batch.as_bytes()),
            (Some(cleaned), _) => out.extend_from_slice(&cleaned),
            (None, _) => {}
        }
    }
    Ok((out, removed))
}

/// One batch, cleaned: `None` when no record survives.
fn clean_batch(
    batch: &RecordBatch,
    latest: &HashMap<Bytes, i64>,
    horizon: i64,
) -> Result<(Option<Bytes>, u64), DecodeError> {
    let h = batch.header();
    let mut b = BatchBuilder::new(h.compression()?)
        .base_offset(h.base_offset)
        .partition_leader_epoch(h.partition_leader_epoch)
        .producer(h.producer_id, h.producer_epoch, h.base_sequence)
        .transactional(h.is_transactional())
        .last_offset_delta(h.last_offset_delta);
    let mut dropped = 0u64;
    for r in batch.records()? {
        let r = r?;
        let keep = match &r.key {
            None => true,
            Some(k) => {
                latest.get(k) == Some(&r.offset) && (r.value.is_some() || r.timestamp >= horizon)
            }
        };
        if keep {
            let headers: &[Header] = &r.headers;
            b.push_parts_at(
                (r.offset - h.base_offset) as i32,
                r.timestamp,
                r.key.as_deref(),
                r.value.as_deref(),
                headers,
            );
        } else {
            dropped += 1;
        }
    }
    if b.is_empty() {
        return Ok((None, dropped));
    }
    Ok((Some(b.build()), dropped))
}
