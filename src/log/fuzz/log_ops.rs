//! The stateful harness: fuzz input bytes become a sequence of operations on
//! a [`PartitionLog`] with small segments, mirrored on an in-memory model and
//! compared with it after every step.
//!
//! The model is one slot per offset (`None` once compaction removed the
//! record), the log start offset, and the durable end (everything below it
//! is known to be on disk: acknowledged `Fsync` appends, flushes, closes,
//! sealed segments, recovered data). Rules checked:
//! - offsets: log end = model end = high watermark, log start = model start;
//! - reads return exactly the model's surviving records from the requested
//!   offset on, and out-of-range reads fail with `OffsetOutOfRange`;
//! - a drop without `close` loses nothing; cutting the last `.log` (never
//!   below the durable end) recovers exactly the whole batches before the
//!   cut; every reopen succeeds;
//! - retention and `delete_records` only raise the log start; compaction
//!   removes exactly the records the model says (superseded keys in sealed
//!   segments, tombstones older than the horizon).
//!
//! With feature `failpoints`, the log runs on the simulated file system and
//! an operation byte with bit 4 set arms an I/O fault (EIO or ENOSPC, maybe
//! a short write) on one of the next few file-system calls of an append,
//! close, flush or reopen. A failed call must surface as a typed error, and
//! after a reopen the log holds everything it held before (whatever was
//! written survives a process crash), plus either none or all of the batch
//! that failed.

use super::TempDir;
use crate::log::{
    CompactionPolicy, LogConfig, LogSettings, PartitionLog, ReadMode, RetentionPolicy,
};
use crate::record::{BatchHeader, Compression, LogRecord, Record};
use crate::{Durability, Error};
use bytes::Bytes;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

const MAX_OPS: usize = 48;
const BASE_TS: i64 = 1_700_000_000_000;

/// The input, read a byte at a time; zeros once it runs out.
struct Input<'a>(&'a [u8]);

impl Input<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.byte(), self.byte()])
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Rec {
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

fn same(got: &LogRecord, want: &Rec) -> bool {
    got.timestamp == want.timestamp
        && got.key == want.key
        && got.value == want.value
        && got.headers.is_empty()
}

struct Harness {
    _tmp: TempDir,
    dir: PathBuf,
    config: LogConfig,
    /// The simulated file system the log runs on, for faults.
    #[cfg(feature = "failpoints")]
    sim: std::sync::Arc<crate::io::SimFs>,
    /// A fault is armed for the current operation.
    faulty: bool,
    log: Option<PartitionLog>,
    model: Vec<Option<Rec>>,
    start: i64,
    durable: i64,
    clock: i64,
}

fn config(mode: ReadMode) -> LogConfig {
    LogConfig {
        settings: LogSettings {
            segment_bytes: 1024,
            // 12 offset entries, 8 time entries: full indexes roll too.
            segment_index_bytes: 96,
            index_interval_bytes: 128,
            max_message_bytes: 8192,
            ..LogSettings::default()
        },
        read_mode: mode,
        ..LogConfig::default()
    }
}

/// (end position, next offset) of each whole batch in a `.log` image.
fn batch_ends(bytes: &[u8]) -> Vec<(u64, i64)> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while let Some(h) = bytes.get(pos..).and_then(|b| BatchHeader::parse(b).ok()) {
        if pos + h.size() > bytes.len() {
            break;
        }
        pos += h.size();
        out.push((pos as u64, h.next_offset()));
    }
    out
}

/// The last `.log` file of `dir` and its base offset.
fn last_log_file(dir: &Path) -> Option<(PathBuf, i64)> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let p = logs.pop()?;
    let base = p.file_stem()?.to_str()?.parse().ok()?;
    Some((p, base))
}

impl Harness {
    fn log(&self) -> &PartitionLog {
        match &self.log {
            Some(l) => l,
            None => panic!("log not open"),
        }
    }

    fn end(&self) -> i64 {
        self.model.len() as i64
    }

    fn active_base(&self) -> i64 {
        self.log()
            .segment_base_offsets()
            .last()
            .copied()
            .unwrap_or(0)
    }

    /// Records of the model from `offset` on, with their offsets.
    fn surviving_from(&self, offset: i64) -> Vec<(i64, &Rec)> {
        let from = usize::try_from(offset.max(0)).unwrap_or(0);
        self.model
            .iter()
            .enumerate()
            .skip(from)
            .filter_map(|(o, r)| r.as_ref().map(|r| (o as i64, r)))
            .collect()
    }

    fn append(&mut self, records: Vec<Rec>, lz4: bool, durability: Durability) {
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

    fn reopen(&mut self) {
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
    fn arm(&mut self, input: &mut Input<'_>) {
        use crate::io::Fault;
        let b = input.byte();
        let errno = if b & 1 == 0 { libc::EIO } else { libc::ENOSPC };
        // Counted from now on.
        let n = u64::from(b >> 2) % 12;
        self.sim.inject(Fault::nth_call(n, errno, b & 2 != 0));
        self.faulty = true;
    }

    #[cfg(not(feature = "failpoints"))]
    fn arm(&mut self, input: &mut Input<'_>) {
        let _ = input.byte();
    }

    fn disarm(&mut self) {
        #[cfg(feature = "failpoints")]
        self.sim.clear_faults();
        self.faulty = false;
    }

    /// An operation failed on the armed fault: drop the log as a crash
    /// would, reopen it without faults, and check it holds everything it
    /// held plus none or all of `attempted` (the batch that failed).
    fn after_fault(&mut self, e: &Error, attempted: &[Rec]) {
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
    fn advance_start(&mut self, start: i64, deleted_to: i64) {
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
    fn crash_recovered(&mut self, expected: i64) {
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

    fn check_read(&self, offset: i64, max_bytes: usize) {
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
    fn check_all(&self) {
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

    fn check_offsets(&mut self) {
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

    fn records(&mut self, input: &mut Input<'_>, n: usize, big: bool) -> Vec<Rec> {
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

    fn compact(&mut self, input: &mut Input<'_>) {
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

    fn cut_tail(&mut self, cut: u16) {
        drop(self.log.take());
        let Some((path, base)) = last_log_file(&self.dir) else {
            panic!("no .log file");
        };
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("read .log: {e}"));
        let ends = batch_ends(&bytes);
        assert_eq!(ends.last().map_or(0, |e| e.0), bytes.len() as u64);
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

    fn step(&mut self, input: &mut Input<'_>) {
        let op = input.byte();
        if op & 0x10 != 0 && matches!(op % 16, 0..=4 | 7 | 8 | 14) {
            self.arm(input);
        }
        let durability = match op >> 6 {
            0 => Durability::None,
            1 | 2 => Durability::Written,
            _ => Durability::Fsync,
        };
        let lz4 = op & 0x20 != 0;
        self.trace(op % 16);
        match op % 16 {
            0..=3 => {
                let n = 1 + usize::from(input.byte() % 8);
                let records = self.records(input, n, false);
                self.append(records, lz4, durability);
            }
            4 => {
                let n = 1 + usize::from(input.byte() % 3);
                let records = self.records(input, n, true);
                self.append(records, lz4, durability);
            }
            5 | 6 => {
                let span = self.end() - self.start + 5;
                let offset = self.start - 2 + i64::from(input.u16()) % span;
                let max_bytes = match input.byte() {
                    0 => usize::MAX,
                    b => usize::from(b) * 16,
                };
                self.check_read(offset, max_bytes);
            }
            7 => {
                if let Some(log) = self.log.take() {
                    match log.close() {
                        Ok(()) => {}
                        Err(e) if self.faulty => {
                            // Reopens the log.
                            self.log = Some(log);
                            self.after_fault(&e, &[]);
                        }
                        Err(e) => panic!("close failed: {e}"),
                    }
                }
                if self.log.is_none() {
                    self.reopen();
                }
                self.durable = self.end();
                self.check_all();
            }
            8 => {
                drop(self.log.take());
                let end = self.end();
                self.crash_recovered(end);
                self.check_all();
            }
            9 => {
                let cut = input.u16();
                self.cut_tail(cut);
                self.check_all();
            }
            10 => {
                let policy = RetentionPolicy {
                    retention_bytes: Some(u64::from(input.u16()) % 8192),
                    ..RetentionPolicy::default()
                };
                let out = self
                    .log()
                    .apply_retention(&policy, self.clock)
                    .unwrap_or_else(|e| panic!("retention failed: {e}"));
                self.advance_start(out.log_start_offset, out.log_start_offset);
                self.check_all();
            }
            11 => {
                let before =
                    self.start - 1 + i64::from(input.u16()) % (self.end() - self.start + 3);
                let result = self.log().delete_records(before);
                if before < 0 || before > self.end() {
                    assert!(
                        matches!(result, Err(Error::OffsetOutOfRange { .. })),
                        "delete_records({before}): {result:?}"
                    );
                } else {
                    let start = result.unwrap_or_else(|e| panic!("delete_records({before}): {e}"));
                    self.advance_start(start, before);
                }
                self.check_all();
            }
            12 | 13 => {
                self.compact(input);
                self.check_all();
            }
            14 => match self.log().flush() {
                Ok(()) => self.durable = self.end(),
                Err(e) if self.faulty => self.after_fault(&e, &[]),
                Err(e) => panic!("flush failed: {e}"),
            },
            _ => {
                let target = BASE_TS - 8 + i64::from(input.u16()) % (self.clock - BASE_TS + 24);
                self.check_offset_for_timestamp(target);
            }
        }
        // Rolled segments are flushed in the background: a fault armed for
        // this operation may have hit one of those flushes, whose failure
        // would otherwise surface in a later operation. Settle them now and
        // treat a failure as this operation's.
        if self.faulty {
            if let Some(Err(e)) = self.log.as_ref().map(PartitionLog::wait_for_rolled_flushes) {
                self.after_fault(&e, &[]);
            }
        }
        // A fault that did not fire (or was absorbed) is dropped here.
        self.disarm();
        self.check_offsets();
    }

    /// With `LOG_OPS_TRACE` set, prints each operation and the model state
    /// before it (for reading a fuzz finding).
    fn trace(&self, op: u8) {
        if std::env::var_os("LOG_OPS_TRACE").is_none() {
            return;
        }
        let model: Vec<_> = self
            .model
            .iter()
            .map(|r| {
                r.as_ref()
                    .map(|r| (r.key.clone(), r.value.as_ref().map(Bytes::len), r.timestamp))
            })
            .collect();
        eprintln!(
            "op {op}: start {} end {} durable {} segments {:?} model {model:?}",
            self.start,
            self.end(),
            self.durable,
            self.log().segment_base_offsets(),
        );
    }

    fn check_offset_for_timestamp(&self, target: i64) {
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
fn assert_typed(e: &Error) {
    assert!(
        matches!(
            e,
            Error::Io { .. } | Error::DiskFull { .. } | Error::Poisoned { .. }
        ),
        "an injected I/O fault surfaced as {e:?}"
    );
}

/// Runs the operations encoded in `data` (byte 0: bit 0 selects `pread`
/// reads) against a fresh log and the model.
///
/// # Panics
/// When the log disagrees with the model or breaks a rule in the module docs.
pub fn log_ops(data: &[u8]) {
    let mut input = Input(data);
    let mode = if input.byte() & 1 == 0 {
        ReadMode::Mmap
    } else {
        ReadMode::Pread
    };
    let Ok(tmp) = TempDir::new() else { return };
    let dir = tmp.0.join("t-0");
    #[allow(unused_mut)]
    let mut config = config(mode);
    #[cfg(feature = "failpoints")]
    let Ok(sim) = crate::io::SimFs::new(&tmp.0) else {
        return;
    };
    #[cfg(feature = "failpoints")]
    {
        config.file_system = std::sync::Arc::clone(&sim).into();
    }
    let log = PartitionLog::open(&dir, config.clone())
        .unwrap_or_else(|e| panic!("first open failed: {e}"));
    let mut h = Harness {
        _tmp: tmp,
        dir,
        config,
        #[cfg(feature = "failpoints")]
        sim,
        faulty: false,
        log: Some(log),
        model: Vec::new(),
        start: 0,
        durable: 0,
        clock: BASE_TS,
    };
    for _ in 0..MAX_OPS {
        if input.0.is_empty() {
            break;
        }
        h.step(&mut input);
    }
    h.check_all();
    if let Some(log) = h.log.take() {
        log.close()
            .unwrap_or_else(|e| panic!("final close failed: {e}"));
    }
    h.reopen();
    h.check_offsets();
    h.check_all();
}
