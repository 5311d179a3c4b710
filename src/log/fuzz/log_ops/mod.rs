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
//!
//! Files: `ops.rs` (the operations on log and model), `step.rs` (an
//! operation byte decoded and run), `check.rs` (the comparisons with the
//! model).

mod check;
mod ops;
mod step;

use check::assert_typed;

use super::TempDir;
use crate::log::{LogConfig, LogSettings, PartitionLog, ReadMode};
use crate::record::{BatchHeader, LogRecord};
use bytes::Bytes;
use std::path::{Path, PathBuf};

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
    #[cfg_attr(
        not(feature = "failpoints"),
        expect(unused_mut, reason = "only the failpoints build sets the file system")
    )]
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
