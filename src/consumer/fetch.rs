//! Fetching: `poll`, the per-partition read-ahead of undecoded batches,
//! and where a partition's position starts when it has none.

use super::{Consumer, ConsumerRecords, IsolationLevel, OffsetReset};
use crate::error::{Error, Result};
use crate::group::TopicPartition;
use crate::record::{RecordBatch, Records};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// One partition's read-ahead: undecoded batches, and the records of the
/// batch being returned (an lz4 batch is decompressed when reached).
#[derive(Default)]
pub(super) struct Buffered {
    batches: VecDeque<RecordBatch>,
    current: Option<Records>,
    /// The offset after the last batch taken from `batches`.
    end: i64,
}

impl Buffered {
    fn is_empty(&self) -> bool {
        self.current.is_none() && self.batches.is_empty()
    }

    /// Moves the records at or after `*position` into `out` (`tp`'s run),
    /// until `out` holds `limit`, decoding each batch when reached;
    /// `*position` ends one past the last record taken.
    fn take(&mut self, position: &mut i64, limit: usize, out: &mut ConsumerRecords) -> Result<()> {
        while out.len() < limit {
            if let Some(records) = &mut self.current {
                let full = take_records(records, position, limit, out)?;
                if full {
                    return Ok(());
                }
                self.current = None;
            }
            let Some(batch) = self.batches.pop_front() else {
                return Ok(());
            };
            self.end = self.end.max(batch.last_offset() + 1);
            if batch.header().is_control() {
                // Transaction markers are never returned; their offsets
                // count (the position moves past them with `end`).
                continue;
            }
            let mut records = batch.records()?;
            if batch.base_offset() < *position {
                records.skip_to(*position);
            }
            self.current = Some(records);
        }
        Ok(())
    }
}

/// Moves `records`' records at or after `*position` into `out` until it
/// holds `limit`: true when it does, false when the batch ran out first.
/// `*position` ends one past the last record taken, and `out`'s run
/// counts every record taken, on an error too.
#[inline(always)]
fn take_records(
    records: &mut Records,
    position: &mut i64,
    limit: usize,
    out: &mut ConsumerRecords,
) -> Result<bool> {
    let room = limit.saturating_sub(out.len());
    let mut pos = *position;
    let mut taken = 0;
    // The batch's bytes join `out` with its first record taken.
    let mut buf = None;
    let ended = loop {
        if taken == room {
            break Ok(true);
        }
        let s = match records.next_spans() {
            Some(Ok(s)) if s.offset < pos => continue,
            Some(Ok(s)) => s,
            Some(Err(e)) => break Err(e),
            None => break Ok(false),
        };
        let b = match buf {
            Some(b) => b,
            None => match out.add_buf(records.data()) {
                Ok(b) => *buf.insert(b),
                Err(e) => break Err(e),
            },
        };
        pos = s.offset + 1;
        out.push(b, s);
        taken += 1;
    };
    *position = pos;
    out.end_run();
    Ok(ended?)
}

impl Consumer {
    /// Returns records (at most `max.poll.records`), blocking up to
    /// `timeout` until some arrive. Takes part in rebalances, auto-commits
    /// and runs finished async-commit callbacks. Records come in offset
    /// order per partition; partitions take turns.
    ///
    /// # Errors
    /// [`Error::NoOffsetForPartition`] / [`Error::OffsetOutOfRange`] under
    /// `auto.offset.reset=none`; [`Error::Corrupt`]; [`Error::Closed`].
    pub fn poll(&mut self, timeout: Duration) -> Result<ConsumerRecords> {
        self.check_open()?;
        // A closed store: Closed, not an empty poll (the metadata lookups
        // below would see every topic gone).
        self.store.check_open()?;
        let deadline = crate::deadline_after(timeout);
        self.run_async_callbacks();
        loop {
            self.ensure_assignment(deadline)?;
            self.maybe_auto_commit();
            let store = self.store.clone();
            let notifier = store.notifier();
            let seen = notifier.seq();
            let records = self.fetch()?;
            if !records.is_empty() {
                return Ok(records);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(records);
            }
            // Appends and group changes notify; wake at least every 100 ms
            // to keep the group's liveness checks going.
            notifier.wait_past(seen, deadline.min(now + Duration::from_millis(100)));
        }
    }

    pub(super) fn resolve_position(&mut self, tp: &TopicPartition) -> Result<i64> {
        if let Some(Some(p)) = self.positions.get(tp) {
            return Ok(*p);
        }
        let log = self.store.partition(&tp.topic, tp.partition)?;
        let p = match self.config.auto_offset_reset {
            OffsetReset::Earliest => log.log_start_offset(),
            OffsetReset::Latest => log.high_watermark(),
            OffsetReset::None => {
                return Err(Error::NoOffsetForPartition {
                    topic: tp.topic.to_string(),
                    partition: tp.partition,
                })
            }
        };
        self.positions.insert(tp.clone(), Some(p));
        Ok(p)
    }

    fn fetch(&mut self) -> Result<ConsumerRecords> {
        // Sized for a typical poll up front (at most 1,024 records' worth,
        // whatever max.poll.records says), not grown record by record.
        let mut out = ConsumerRecords::with_capacity(self.config.max_poll_records.min(1024));
        let parts: Vec<TopicPartition> = self
            .assignment
            .iter()
            .filter(|tp| !self.paused.contains(*tp))
            // A group member skips a partition whose topic was deleted (or
            // shrank by re-creation) until the next poll rebalances.
            .filter(|tp| self.membership.is_none() || self.partition_exists(tp))
            .cloned()
            .collect();
        if parts.is_empty() {
            return Ok(out);
        }
        let mut bytes_left = self.config.fetch_max_bytes;
        let start = self.next_partition % parts.len();
        self.next_partition = self.next_partition.wrapping_add(1);
        // Every partition once, starting at `start` (round robin).
        for (i, tp) in parts
            .iter()
            .enumerate()
            .cycle()
            .skip(start)
            .take(parts.len())
        {
            if out.len() >= self.config.max_poll_records || bytes_left == 0 {
                break;
            }
            if let Err(e) = self.fetch_partition(tp, &mut out, &mut bytes_left) {
                if out.is_empty() {
                    return Err(e);
                }
                // Return what this poll took, and start the next one at
                // this partition so the error comes first there (the records
                // of other partitions are neither lost nor held back).
                self.next_partition = i;
                return Ok(out);
            }
        }
        Ok(out)
    }

    /// `tp`'s share of a poll: its buffered records, read again from the log
    /// when they run dry.
    fn fetch_partition(
        &mut self,
        tp: &TopicPartition,
        out: &mut ConsumerRecords,
        bytes_left: &mut usize,
    ) -> Result<()> {
        let mut position = self.resolve_position(tp)?;
        out.begin_partition(tp);
        // Take what is buffered; when that runs dry without a read in this
        // pass, read the log again at once: returning nothing would make
        // `poll` wait for a wake-up although records are readable.
        let mut read_now = false;
        loop {
            if self.buffered.get(tp).is_none_or(Buffered::is_empty) {
                read_now = true;
                let log = self.store.partition(&tp.topic, tp.partition)?;
                let max_bytes = self.config.max_partition_fetch_bytes.min(*bytes_left);
                let isolation = self.config.isolation_level;
                let read_at = |position| match isolation {
                    IsolationLevel::ReadUncommitted => log.read(position, max_bytes),
                    IsolationLevel::ReadCommitted => log.read_committed(position, max_bytes),
                };
                let read = match read_at(position) {
                    Ok(r) => r,
                    Err(Error::OffsetOutOfRange { .. })
                        if self.config.auto_offset_reset != OffsetReset::None =>
                    {
                        self.positions.insert(tp.clone(), None);
                        position = self.resolve_position(tp)?;
                        read_at(position)?
                    }
                    Err(e) => return Err(e),
                };
                *bytes_left = bytes_left.saturating_sub(read.size());
                if read.batches().is_empty() && read.next_offset() > position {
                    // Only compacted-away offsets: move past the gap.
                    position = read.next_offset();
                    self.positions.insert(tp.clone(), Some(position));
                }
                let buf = Buffered {
                    batches: read.batches().iter().cloned().collect(),
                    current: None,
                    // Past batches the read left out (aborted ones under
                    // read_committed) once the kept ones are consumed.
                    end: read.next_offset().max(position),
                };
                self.buffered.insert(tp.clone(), buf);
            }
            let Some(buf) = self.buffered.get_mut(tp) else {
                return Ok(());
            };
            if let Err(e) = buf.take(&mut position, self.config.max_poll_records, out) {
                // The records before the bad one are returned; the position
                // stays at it, and a new read there reports it again.
                self.buffered.remove(tp);
                self.positions.insert(tp.clone(), Some(position));
                return Err(e);
            }
            if buf.is_empty() {
                // A batch whose records were all compacted away (or skipped)
                // still moves the position past its offsets.
                position = position.max(buf.end);
            }
            self.positions.insert(tp.clone(), Some(position));
            let dry = self.buffered.get(tp).is_none_or(Buffered::is_empty);
            if read_now || !dry || out.len() >= self.config.max_poll_records || *bytes_left == 0 {
                return Ok(());
            }
        }
    }

    pub(super) fn partition_exists(&self, tp: &TopicPartition) -> bool {
        self.store
            .existing_partition_count(&tp.topic)
            .is_some_and(|n| tp.partition < n)
    }
}
