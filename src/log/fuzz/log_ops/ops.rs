//! The operations: each changes the log and the model alike (appends,
//! reopen, faults, retention, compaction, tail cuts).

use super::{assert_typed, batch_ends, last_log_file, Harness, Input, Rec};
use crate::log::{CompactionPolicy, PartitionLog};
use crate::record::{Compression, Record};
use crate::{Durability, Error};
use bytes::Bytes;
use std::collections::HashMap;
use std::time::Duration;

impl Harness {
    pub(super) fn append(&mut self, records: Vec<Rec>, lz4: bool, durability: Durability) {
        let compression = if lz4 {
            Compression::Lz4
        } else {
            Compression::None
        };
        let batch: Vec<Record> = records
            .iter()
            .map(|r| Record {
                timestamp: r.timestamp,
                key: r.key.clone(),
                value: r.value.clone(),
                headers: Vec::new(),
            })
            .collect();
        let info = match self.log().append_records(&batch, compression, durability) {
            Ok(info) => info,
            Err(e) if self.faulty => return self.after_fault(&e, &records),
            Err(e) => panic!("append failed: {e}"),
        };
        assert_eq!(info.base_offset, self.end(), "append base offset");
        assert_eq!(info.last_offset, self.end() + records.len() as i64 - 1);
        self.model.extend(records.into_iter().map(Some));
        if durability == Durability::Fsync {
            self.durable = self.end();
        }
    }

    pub(super) fn reopen(&mut self) {
        let log = match PartitionLog::open(&self.dir, self.config.clone()) {
            Ok(log) => log,
            Err(e) if self.faulty => {
                // The armed fault hit the open: it must be a typed I/O
                // error, and the next open, without it, must work.
                assert_typed(&e);
                self.disarm();
                PartitionLog::open(&self.dir, self.config.clone())
                    .unwrap_or_else(|e| panic!("reopen after a failed one: {e}"))
            }
            Err(e) => panic!("reopen failed: {e}"),
        };
        // A fault armed for this reopen that did not fire is dropped: the
        // checks that follow read without faults.
        self.disarm();
        // A first segment that compaction emptied is gone: the log now
        // starts at the next one. Only removed records may be skipped.
        let start = log.log_start_offset();
        self.advance_start(start, self.start);
        self.log = Some(log);
    }

    /// Arms a fault on one of the next few file-system calls.
    #[cfg(feature = "failpoints")]
    pub(super) fn arm(&mut self, input: &mut Input<'_>) {
        use crate::io::Fault;
        let b = input.byte();
        let errno = if b & 1 == 0 { libc::EIO } else { libc::ENOSPC };
        // Counted from now on.
        let n = u64::from(b >> 2) % 12;
        self.sim.inject(Fault::nth_call(n, errno, b & 2 != 0));
        self.faulty = true;
    }

    #[cfg(not(feature = "failpoints"))]
    pub(super) fn arm(&mut self, input: &mut Input<'_>) {
        let _ = input.byte();
    }

    pub(super) fn disarm(&mut self) {
        #[cfg(feature = "failpoints")]
        self.sim.clear_faults();
        self.faulty = false;
    }

    /// An operation failed on the armed fault: drop the log as a crash
    /// would, reopen it without faults, and check it holds everything it
    /// held plus none or all of `attempted` (the batch that failed).
    pub(super) fn after_fault(&mut self, e: &Error, attempted: &[Rec]) {
        assert_typed(e);
        drop(self.log.take());
        self.disarm();
        self.reopen();
        let end = self.log().log_end_offset();
        let before = self.end();
        assert!(
            end == before || end == before + attempted.len() as i64,
            "after a failed operation the log ends at {end}, not {before} (+{})",
            attempted.len()
        );
        self.model.extend(
            attempted
                .iter()
                .take((end - before) as usize)
                .cloned()
                .map(Some),
        );
        // Recovery synced what it found.
        self.durable = end;
        self.check_all();
    }

    /// Moves the model's log start to `start`; records from `deleted_to`
    /// on that it skips must be ones compaction removed.
    pub(super) fn advance_start(&mut self, start: i64, deleted_to: i64) {
        assert!(start >= self.start, "the log start went down");
        for o in deleted_to.max(self.start)..start.min(self.end()) {
            let slot = usize::try_from(o).ok().and_then(|i| self.model.get(i));
            assert!(
                slot.is_some_and(Option::is_none),
                "the log start skipped record {o}"
            );
        }
        self.start = start;
    }

    /// After a crash: the log must end at `expected`, not below the durable end.
    /// A cut below the log start (records `delete_records` deleted before
    /// they were synced) restarts the log at the start.
    pub(super) fn crash_recovered(&mut self, expected: i64) {
        self.reopen();
        let end = self.log().log_end_offset();
        assert_eq!(end, expected.max(self.start), "recovered log end");
        assert!(end >= self.durable, "recovery lost durable data");
        let kept = usize::try_from(expected).unwrap_or(0);
        self.model.truncate(kept);
        self.model
            .resize(usize::try_from(end).unwrap_or(kept), None);
        self.durable = end;
    }

    pub(super) fn records(&mut self, input: &mut Input<'_>, n: usize, big: bool) -> Vec<Rec> {
        self.clock += i64::from(input.byte() % 64);
        (0..n)
            .map(|_| {
                let b = input.byte();
                let len = if big {
                    300 + usize::from(input.byte()) * 2
                } else {
                    usize::from(b % 4) * usize::from(input.byte() % 64)
                };
                let key = (b & 0x30 != 0).then(|| Bytes::from(format!("k{}", b % 7)));
                let value = (b & 0xc0 != 0 || key.is_none()).then(|| {
                    let o = self.model.len() as u8;
                    Bytes::from((0..len).map(|i| o ^ (i as u8)).collect::<Vec<u8>>())
                });
                Rec {
                    timestamp: self.clock + i64::from(b % 16),
                    key,
                    value,
                }
            })
            .collect()
    }

    pub(super) fn compact(&mut self, input: &mut Input<'_>) {
        let b = input.byte();
        let force = b & 1 != 0;
        let min_dirty_percent = b & 0x7e;
        let now_ms = match b >> 7 {
            0 => 0,
            _ => self.clock - i64::from(input.byte() % 64),
        };
        let dirty = self.log().dirty_percent();
        let runs = force || (dirty != 0 && dirty >= min_dirty_percent);
        let bases = self.log().segment_base_offsets();
        let (first, active) = (
            bases.first().copied().unwrap_or(0),
            bases.last().copied().unwrap_or(0),
        );
        let policy = CompactionPolicy {
            delete_retention: Duration::ZERO,
            min_dirty_percent,
        };
        let outcome = self
            .log()
            .compact(&policy, now_ms, force)
            .unwrap_or_else(|e| panic!("compaction failed: {e}"));
        if !runs || first >= active {
            assert_eq!(outcome.records_removed, 0, "compaction should not run");
            return;
        }
        let range = usize::try_from(first).unwrap_or(0)..usize::try_from(active).unwrap_or(0);
        let mut latest: HashMap<Bytes, usize> = HashMap::new();
        for (o, r) in self
            .model
            .iter()
            .enumerate()
            .take(range.end)
            .skip(range.start)
        {
            if let Some(k) = r.as_ref().and_then(|r| r.key.clone()) {
                latest.insert(k, o);
            }
        }
        let mut removed = 0u64;
        for o in range {
            let Some(slot) = self.model.get_mut(o) else {
                break;
            };
            let keep = match slot {
                None => true,
                Some(Rec { key: None, .. }) => true,
                Some(r) => {
                    r.key.as_ref().and_then(|k| latest.get(k)) == Some(&o)
                        && (r.value.is_some() || r.timestamp >= now_ms)
                }
            };
            if !keep {
                *slot = None;
                removed += 1;
            }
        }
        assert_eq!(outcome.records_removed, removed, "records compacted away");
    }

    pub(super) fn cut_tail(&mut self, cut: u16) {
        drop(self.log.take());
        let Some((path, base)) = last_log_file(&self.dir) else {
            panic!("no .log file");
        };
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read .log: {e}"));
        let ends = batch_ends(&bytes);
        // Past the last batch, only the zeros durable appends wrote ahead
        // of themselves (the cut may land in them).
        let data_end = ends.last().map_or(0, |e| e.0);
        let tail = usize::try_from(data_end)
            .ok()
            .and_then(|at| bytes.get(at..))
            .unwrap_or_default();
        assert!(tail.iter().all(|&b| b == 0), "not zeros after the batches");
        let lo = if self.durable <= base {
            0
        } else {
            match ends.iter().find(|e| e.1 == self.durable) {
                Some(e) => e.0,
                None => panic!("no batch ends at the durable end {}", self.durable),
            }
        };
        let len = bytes.len() as u64;
        let at = len.saturating_sub(u64::from(cut)).max(lo);
        let truncated = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len(at));
        if let Err(e) = truncated {
            panic!("cut .log: {e}");
        }
        let expected = ends
            .iter()
            .take_while(|e| e.0 <= at)
            .last()
            .map_or(base, |e| e.1);
        self.crash_recovered(expected);
    }
}
