//! The keyed control with the order as references (`--control-keys K
//! --control-refs`, [`run_refs`]): the least a push can share and still
//! keep Kafka's order. Under the partition's lock a push only adds a
//! 16-byte reference to its record (which key, which payload, the
//! timestamp) to the partition's list and the record's size to the open
//! batch's; the batches are built from the records (copied, checksummed)
//! by the thread that writes them, outside the lock, and their built size
//! is checked against the bytes reserved for them. So what a thread taking
//! a partition over from the other moves between the cores is the lock's
//! line and the line of the list's end.

use crate::control::{
    checked, key_table, on_threads, partition_files, payloads, Outcome, SpinLock, Written, BATCH,
    PARTITIONS, WRITE,
};
use kafkalite::record::{BatchBuilder, Compression};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Instant;

/// A keyed record in `--control-refs`: which key and payload, and its
/// timestamp; the bytes stay where they are until the batch is built.
#[derive(Clone, Copy)]
struct Ref {
    key: u32,
    value: u32,
    timestamp: i64,
}

/// A partition in `--control-refs`: its order is a list of references,
/// and only what the batch's size needs is computed under the lock.
struct RefPartition {
    open: Vec<Ref>,
    /// The open batch's size once built, and its first timestamp.
    open_bytes: usize,
    first_ts: i64,
    waiting: Vec<Vec<Ref>>,
    waiting_bytes: usize,
    reserved: u64,
}

/// Bytes of a zigzag varint.
fn varint_len(v: i64) -> usize {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    (64 - (z | 1).leading_zeros() as usize).div_ceil(7)
}

/// A record's bytes in a batch (Kafka's v2 record, no headers).
fn record_len(ts_delta: i64, offset_delta: usize, key: usize, value: usize) -> usize {
    let body = 1
        + varint_len(ts_delta)
        + varint_len(offset_delta as i64)
        + varint_len(key as i64)
        + key
        + varint_len(value as i64)
        + value
        + 1;
    varint_len(body as i64) + body
}

/// A batch's references at most (a 16 KiB batch holds ~50 records).
const REFS: usize = 64;

/// Batches to write: their references, the offset reserved for them, and
/// their size once built.
type RefsOut = Option<(Vec<Vec<Ref>>, u64, u64)>;

impl RefPartition {
    fn new() -> Self {
        RefPartition {
            open: Vec::with_capacity(REFS),
            open_bytes: 0,
            first_ts: 0,
            waiting: Vec::new(),
            waiting_bytes: 0,
            reserved: 0,
        }
    }

    /// Adds `r` (its key and value `k` and `v` bytes long), sealing the
    /// open batch first if it would overflow; returns the batches to write
    /// once `WRITE` bytes wait.
    fn push(&mut self, r: Ref, k: usize, v: usize) -> RefsOut {
        let mut len = record_len(r.timestamp - self.first_ts, self.open.len(), k, v);
        if !self.open.is_empty() && self.open_bytes + len > BATCH {
            self.seal();
        }
        if self.open.is_empty() {
            // The batch's first record: its deltas are 0.
            self.first_ts = r.timestamp;
            self.open_bytes = kafkalite::record::HEADER_SIZE;
            len = record_len(0, 0, k, v);
        }
        self.open_bytes += len;
        self.open.push(r);
        (self.waiting_bytes >= WRITE).then(|| self.take())
    }

    /// Seals the open batch and returns every batch waiting (at the end).
    fn finish(&mut self) -> RefsOut {
        if !self.open.is_empty() {
            self.seal();
        }
        (!self.waiting.is_empty()).then(|| self.take())
    }

    fn seal(&mut self) {
        self.waiting_bytes += self.open_bytes;
        let full = std::mem::replace(&mut self.open, Vec::with_capacity(REFS));
        self.waiting.push(full);
        self.open_bytes = 0;
    }

    /// The waiting batches, and the offset reserved for them.
    fn take(&mut self) -> (Vec<Vec<Ref>>, u64, u64) {
        let (at, len) = (self.reserved, self.waiting_bytes as u64);
        self.reserved += len;
        self.waiting_bytes = 0;
        (std::mem::take(&mut self.waiting), at, len)
    }
}

/// Builds the batches of `refs` from the keys and payloads and writes them
/// to `file` at `at`; the built size must be what was reserved.
fn write_refs(
    file: &File,
    batches: Vec<Vec<Ref>>,
    at: u64,
    keys: &[(Vec<u8>, usize)],
    pool: &[Vec<u8>],
    len: u64,
) -> std::io::Result<Written> {
    let mut out = Vec::with_capacity(WRITE + BATCH);
    let mut records = 0;
    for refs in batches {
        let mut b = BatchBuilder::with_capacity(Compression::None, BATCH);
        for r in &refs {
            let key = &keys[r.key as usize].0;
            b.push_parts(r.timestamp, Some(key), Some(&pool[r.value as usize]), &[]);
        }
        records += refs.len() as u64;
        out.extend_from_slice(&b.build());
    }
    if out.len() as u64 != len {
        return Err(std::io::Error::other(format!(
            "built {} bytes, {len} reserved",
            out.len()
        )));
    }
    file.write_all_at(&out, at)?;
    Ok(Written {
        bytes: out.len() as u64,
        records,
    })
}

/// Runs `--control-refs`: as the keyed control, but a push only adds a
/// reference to the record (and the batch's size) to the partition's list
/// under its lock; the batch is built from the records when written.
pub fn run_refs(dir: &Path, threads: usize, records: u64, keys: usize) -> Result<Outcome, String> {
    let files = partition_files(dir)?;
    let partitions: Vec<SpinLock<RefPartition>> = (0..PARTITIONS)
        .map(|_| SpinLock::new(RefPartition::new()))
        .collect();
    let pool = payloads();
    let keys = key_table(keys);
    let start = Instant::now();
    let mut written = on_threads(
        threads,
        records,
        |_| (),
        |(), i, written| {
            let v = (i % pool.len() as u64) as usize;
            let k = (i % keys.len() as u64) as usize;
            let (key, p) = &keys[k];
            let r = Ref {
                key: k as u32,
                value: v as u32,
                timestamp: i as i64,
            };
            let out = partitions[*p].lock().push(r, key.len(), pool[v].len());
            if let Some((batches, at, len)) = out {
                *written += write_refs(&files[*p], batches, at, &keys, &pool, len)?;
            }
            Ok(())
        },
    )?;
    for (p, part) in partitions.iter().enumerate() {
        let out = part.lock().finish();
        if let Some((batches, at, len)) = out {
            written += write_refs(&files[p], batches, at, &keys, &pool, len)
                .map_err(|e| format!("control write: {e}"))?;
        }
    }
    checked(dir, &files, &written, records, start.elapsed())
}
