//! What `read_committed` needs to know of a partition's transactions: the
//! aborted ones (producer id, first and last offset) and the last stable
//! offset (LSO), the first offset of a transaction still open.
//!
//! kafkalite's own producer is not transactional; this serves segments a
//! Kafka cluster wrote (copied in, or imported). Kafka keeps the aborted
//! ranges in a `.txnindex` beside each segment; kafkalite rebuilds them in
//! memory instead, the first time a `read_committed` read needs them, from
//! the batch headers and the control batches' markers, then follows the log
//! forward from where that scan stopped.
//!
//! Memory: one entry per aborted transaction whose marker is at or above the
//! log start offset (older ones are dropped as retention moves the start),
//! plus one per producer with a transaction open; nothing at all for a
//! partition no `read_committed` reader touches.
//!
//! A transaction's records belong to its producer id until that producer's
//! next COMMIT or ABORT marker (Kafka's rule). A transaction with no marker
//! holds the LSO where it started, so `read_committed` readers stop there,
//! as Kafka's do until the coordinator ends the transaction.

use super::{LogRead, PartitionLog};
use crate::error::Result;
use crate::record::{ControlRecordType, RecordBatch};
use std::collections::HashMap;

/// How much one step of the catch-up scan reads.
const SCAN_BYTES: usize = 1 << 20;

/// One aborted transaction: the records of `producer_id` from
/// `first_offset` to `last_offset` (its ABORT marker) are not committed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AbortedTransaction {
    /// The transactional producer's id.
    pub producer_id: i64,
    /// The offset of the transaction's first batch.
    pub first_offset: i64,
    /// The offset of its ABORT marker.
    pub last_offset: i64,
}

/// The transaction state of one partition, built from its batches in order.
#[derive(Debug, Default)]
pub(super) struct TxnIndex {
    /// The offset the next scanned batch starts at (everything below was
    /// seen); `None` before the first scan.
    pub(super) scanned_to: Option<i64>,
    /// Open transactions: producer id → offset of its first batch.
    open: HashMap<i64, i64>,
    /// Aborted transactions, in marker order.
    aborted: Vec<AbortedTransaction>,
}

impl TxnIndex {
    /// Takes one batch into account (batches must come in offset order).
    /// A malformed marker is not a reason to fail a read: like a data batch,
    /// it is reported when its records are read; here it ends nothing.
    pub(super) fn observe(&mut self, batch: &RecordBatch) {
        let h = batch.header();
        self.scanned_to = Some(h.next_offset());
        if !h.is_transactional() || h.producer_id < 0 {
            return;
        }
        if !h.is_control() {
            self.open.entry(h.producer_id).or_insert(h.base_offset);
            return;
        }
        let marker = match batch.control_record() {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(e) => {
                // The transaction stays open (read_committed stops at its
                // start) until a marker that parses ends it.
                crate::warn_event!(
                    "malformed control record at offset {} left producer {}'s transaction open: {e}",
                    h.base_offset,
                    h.producer_id
                );
                return;
            }
        };
        // Only COMMIT and ABORT end a transaction (Kafka's
        // EndTransactionMarker refuses other types); a KRaft or unknown
        // control record leaves it open.
        if !marker.kind.is_end_transaction() {
            return;
        }
        let first = self.open.remove(&h.producer_id);
        if marker.kind == ControlRecordType::Abort {
            self.aborted.push(AbortedTransaction {
                producer_id: h.producer_id,
                first_offset: first.unwrap_or(marker.offset),
                last_offset: marker.offset,
            });
        }
    }

    /// Whether `batch` is data of a transaction that has no marker yet.
    pub(super) fn is_open(&self, batch: &RecordBatch) -> bool {
        let h = batch.header();
        h.is_transactional()
            && !h.is_control()
            && self
                .open
                .get(&h.producer_id)
                .is_some_and(|&first| first <= h.base_offset)
    }

    /// Forgets aborted transactions wholly below `log_start`.
    pub(super) fn prune(&mut self, log_start: i64) {
        self.aborted.retain(|a| a.last_offset >= log_start);
    }

    /// The last stable offset, given that everything below `scanned_to` was
    /// observed.
    pub(super) fn last_stable_offset(&self) -> i64 {
        let scanned = self.scanned_to.unwrap_or(0);
        self.open
            .values()
            .copied()
            .min()
            .map_or(scanned, |o| o.min(scanned))
    }

    /// The aborted transactions that may cover a batch in `[from, to)`.
    pub(super) fn aborted_in(&self, from: i64, to: i64) -> Vec<AbortedTransaction> {
        // In marker order, so sorted by last offset: skip those ending below.
        let skip = self.aborted.partition_point(|a| a.last_offset < from);
        self.aborted
            .iter()
            .skip(skip)
            .filter(|a| a.first_offset < to)
            .copied()
            .collect()
    }
}

impl PartitionLog {
    /// The last stable offset: the first offset of a transaction that has
    /// no COMMIT or ABORT marker yet, or the high watermark when none is
    /// open. `read_committed` reads stop there.
    ///
    /// The first call scans the partition's batch headers from the log
    /// start (and parses each control batch's marker); later calls scan
    /// only what was appended since.
    ///
    /// # Errors
    /// As [`PartitionLog::read`].
    pub fn last_stable_offset(&self) -> Result<i64> {
        Ok(self.catch_up_transactions()?.0)
    }

    /// The transactions aborted between `from` and `to` (exclusive), by
    /// their ABORT markers, after catching up as
    /// [`last_stable_offset`](Self::last_stable_offset) does.
    ///
    /// # Errors
    /// As [`PartitionLog::read`].
    pub fn aborted_transactions(&self, from: i64, to: i64) -> Result<Vec<AbortedTransaction>> {
        let (_, t) = self.catch_up_transactions()?;
        Ok(t.aborted_in(from, to))
    }

    fn catch_up_transactions(&self) -> Result<(i64, parking_lot::MutexGuard<'_, TxnIndex>)> {
        let mut t = self.txn_index();
        let start = self.log_start_offset();
        let hw = self.high_watermark();
        let mut at = t.scanned_to.unwrap_or(start).max(start);
        while at < hw {
            let read = self.read(at, SCAN_BYTES)?;
            if read.is_empty() {
                // Nothing but compacted-away offsets up to the watermark.
                t.scanned_to = Some(hw);
                break;
            }
            for b in read.batches() {
                if b.last_offset() >= at {
                    t.observe(b);
                }
            }
            at = read.next_offset();
        }
        t.prune(start);
        // A transaction opened below the log start holds the LSO at the
        // log start at most (Kafka's firstUnstableOffset is never below it).
        Ok((t.last_stable_offset().max(start), t))
    }

    /// [`read`](Self::read) for `isolation.level=read_committed`: only
    /// batches below the [last stable offset](Self::last_stable_offset),
    /// without the data of aborted transactions. Control batches stay in
    /// [`LogRead::batches`] (their offsets count) and, as with every read,
    /// are left out of [`LogRead::records`].
    ///
    /// # Errors
    /// As [`PartitionLog::read`].
    pub fn read_committed(&self, offset: i64, max_bytes: usize) -> Result<LogRead> {
        let (lso, t) = self.catch_up_transactions()?;
        let aborted = t.aborted_in(offset, lso);
        drop(t);
        let read = self.read(offset, max_bytes)?;
        let mut kept = Vec::with_capacity(read.batches().len());
        let mut next = offset;
        for b in read.batches() {
            if b.base_offset() >= lso {
                break;
            }
            next = b.header().next_offset();
            if !is_aborted(b, &aborted) {
                kept.push(b.clone());
            }
        }
        Ok(
            LogRead::new(offset, kept, read.high_watermark(), read.log_start_offset())
                .with_next_offset(next),
        )
    }
}

/// Whether `batch` is data of one of the `aborted` transactions.
pub(super) fn is_aborted(batch: &RecordBatch, aborted: &[AbortedTransaction]) -> bool {
    let h = batch.header();
    h.is_transactional()
        && !h.is_control()
        && aborted.iter().any(|a| {
            a.producer_id == h.producer_id
                && a.first_offset <= h.base_offset
                && h.base_offset <= a.last_offset
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BatchBuilder, Compression};

    fn data(base: i64, pid: i64, transactional: bool) -> RecordBatch {
        let mut b = BatchBuilder::new(Compression::None)
            .base_offset(base)
            .producer(pid, 0, 0)
            .transactional(transactional);
        b.push_parts(0, None, Some(b"v"), &[]);
        RecordBatch::decode(&b.build()).unwrap()
    }

    fn marker(offset: i64, pid: i64, kind: ControlRecordType) -> RecordBatch {
        RecordBatch::decode(&BatchBuilder::end_transaction_marker(
            offset, pid, 0, kind, 5, 0,
        ))
        .unwrap()
    }

    #[test]
    fn aborted_ranges_and_the_last_stable_offset_follow_the_markers() {
        let mut t = TxnIndex::default();
        t.observe(&data(0, 7, true));
        t.observe(&data(1, 8, true));
        assert_eq!(t.last_stable_offset(), 0);
        t.observe(&marker(2, 7, ControlRecordType::Commit));
        assert_eq!(t.last_stable_offset(), 1);
        t.observe(&data(3, 7, true));
        t.observe(&marker(4, 8, ControlRecordType::Abort));
        assert_eq!(t.last_stable_offset(), 3);
        t.observe(&data(5, 9, false));
        // A control record that is not a marker ends nothing.
        let mut leader = BatchBuilder::new(Compression::None)
            .base_offset(6)
            .producer(7, 0, -1)
            .transactional(true);
        leader.push_parts(0, Some(&[0, 0, 0, 2]), Some(b""), &[]);
        let mut leader = leader.build().to_vec();
        leader[21..23].copy_from_slice(&0x30i16.to_be_bytes());
        let crc = crate::record::compute_crc(&leader);
        leader[17..21].copy_from_slice(&crc.to_be_bytes());
        let leader = RecordBatch::decode(&bytes::Bytes::from(leader)).unwrap();
        assert_eq!(
            leader.control_record().unwrap().unwrap().kind,
            ControlRecordType::LeaderChange
        );
        t.observe(&leader);
        assert_eq!(
            t.last_stable_offset(),
            3,
            "producer 7's transaction is still open"
        );
        t.observe(&marker(7, 7, ControlRecordType::Abort));
        assert_eq!(t.last_stable_offset(), 8);
        let all = t.aborted_in(0, 8);
        assert_eq!(
            all,
            vec![
                AbortedTransaction {
                    producer_id: 8,
                    first_offset: 1,
                    last_offset: 4
                },
                AbortedTransaction {
                    producer_id: 7,
                    first_offset: 3,
                    last_offset: 7
                },
            ]
        );
        assert!(is_aborted(&data(1, 8, true), &all));
        assert!(!is_aborted(&data(0, 7, true), &all));
        assert!(!is_aborted(&data(1, 8, false), &all));
        assert_eq!(t.aborted_in(5, 6).len(), 1);
        t.prune(5);
        assert_eq!(t.aborted_in(0, 8).len(), 1);
    }
}
