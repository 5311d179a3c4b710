//! The checks: the log compared with the model (reads, offsets, time
//! lookups), and the typed errors a fault may cause.

use super::{same, Harness, Rec};
use crate::record::LogRecord;
use crate::Error;

impl Harness {
    pub(super) fn check_read(&self, offset: i64, max_bytes: usize) {
        let (start, end) = (self.start, self.end());
        let result = self.log().read(offset, max_bytes);
        if offset < start || offset > end {
            assert!(
                matches!(result, Err(Error::OffsetOutOfRange { requested, .. }) if requested == offset),
                "read({offset}) outside {start}..{end}: {result:?}"
            );
            return;
        }
        let r = result.unwrap_or_else(|e| panic!("read({offset}) failed: {e}"));
        assert_eq!(r.high_watermark(), end);
        // Compaction keeps a batch's offset range: a read may return only
        // batches whose surviving records are all below `offset`, and then
        // advances past them. Every surviving record up to the next offset
        // must be there.
        let next = r.next_offset();
        let want: Vec<(i64, &Rec)> = self
            .surviving_from(offset)
            .into_iter()
            .filter(|(o, _)| r.is_empty() || *o < next)
            .collect();
        if r.is_empty() {
            assert!(want.is_empty(), "read({offset}) empty with records left");
            return;
        }
        assert!(next > offset, "read({offset}) did not advance");
        let got: Vec<LogRecord> = r
            .records()
            .map(|x| x.unwrap_or_else(|e| panic!("record at {offset}: {e}")))
            .collect();
        assert_eq!(got.len(), want.len(), "read({offset}) record count");
        for (g, (o, w)) in got.iter().zip(&want) {
            assert_eq!(g.offset, *o, "read({offset}): wrong offset");
            assert!(same(g, w), "offset {o}: got {g:?}, want {w:?}");
        }
    }

    /// Reads everything from the log start and compares it with the model.
    pub(super) fn check_all(&self) {
        let mut at = self.start;
        let mut got = Vec::new();
        while at < self.end() {
            let r = self
                .log()
                .read(at, 1500)
                .unwrap_or_else(|e| panic!("read({at}) failed: {e}"));
            if r.is_empty() {
                break;
            }
            for rec in r.records() {
                got.push(rec.unwrap_or_else(|e| panic!("record after {at}: {e}")));
            }
            assert!(r.next_offset() > at, "read did not advance");
            at = r.next_offset();
        }
        let want = self.surviving_from(self.start);
        assert_eq!(got.len(), want.len(), "record count from {}", self.start);
        for (g, (o, w)) in got.iter().zip(&want) {
            assert_eq!(g.offset, *o);
            assert!(same(g, w), "offset {o}: got {g:?}, want {w:?}");
        }
    }

    pub(super) fn check_offsets(&mut self) {
        let log = self.log();
        assert_eq!(log.log_end_offset(), self.end(), "log end offset");
        assert_eq!(log.high_watermark(), self.end(), "high watermark");
        assert_eq!(log.log_start_offset(), self.start, "log start offset");
        let bases = log.segment_base_offsets();
        assert!(bases.windows(2).all(|w| w[0] < w[1]), "segment order");
        assert!(bases.last().is_some_and(|&b| b <= self.end()));
        // Sealed segments were fsynced when they rolled.
        self.durable = self.durable.max(self.active_base());
    }

    pub(super) fn check_offset_for_timestamp(&self, target: i64) {
        let got = self
            .log()
            .offset_for_timestamp(target)
            .unwrap_or_else(|e| panic!("offset_for_timestamp({target}): {e}"));
        let want = self
            .surviving_from(self.start)
            .into_iter()
            .find(|(_, r)| r.timestamp >= target)
            .map(|(o, r)| (o, r.timestamp));
        assert_eq!(got, want, "offset_for_timestamp({target})");
    }
}

/// A failure an injected fault may cause: an I/O error (or the disk-full
/// report), or the poisoned state a failed fsync leaves.
pub(super) fn assert_typed(e: &Error) {
    assert!(
        matches!(
            e,
            Error::Io { .. } | Error::DiskFull { .. } | Error::Poisoned { .. }
        ),
        "an injected I/O fault surfaced as {e:?}"
    );
}
