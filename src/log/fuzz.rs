//! Harnesses shared by the fuzz targets (`fuzz/`) and the unit tests that
//! replay their corpora on stable (`corpus.rs`). Built only for tests and
//! under cargo-fuzz (`--cfg fuzzing`): not part of the API.
//!
//! Each harness writes its input as files of a partition directory in a
//! fresh temporary directory, opens a [`PartitionLog`] on it, exercises it,
//! and removes the directory. It panics only when kafkalite breaks a rule:
//! - opening never panics, whatever the files hold;
//! - after an unclean open (recovery ran), every batch below the log end
//!   reads back without error, offsets strictly increasing;
//! - a read never returns a record below the requested offset, and a point
//!   read through a trusted index returns the right record or an error, never
//!   a later one.

#[cfg(test)]
mod corpus;
mod log_ops;

pub use log_ops::log_ops;

use super::{LogConfig, LogSettings, PartitionLog};
use crate::record::{compute_crc, BatchBuilder, Compression, Record, HEADER_SIZE};
use crate::Error;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> std::io::Result<TempDir> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!(
            "kafkalite-fuzz-{}-{n}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        ));
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn config() -> LogConfig {
    LogConfig::from(LogSettings {
        segment_bytes: 1 << 16,
        segment_index_bytes: 4096,
        index_interval_bytes: 64,
        max_message_bytes: 1 << 16,
        ..LogSettings::default()
    })
}

const SEGMENT: &str = "00000000000000000000";

/// Gives every batch-shaped chunk of `log` magic 2 and a correct CRC-32C, so
/// fuzzed inputs get past the checksum into the offset and record checks.
fn fix_crcs(log: &mut [u8]) {
    let mut pos = 0usize;
    while let Some(head) = log.get(pos..pos + HEADER_SIZE) {
        let len = i32::from_be_bytes([head[8], head[9], head[10], head[11]]);
        let Some(end) = usize::try_from(len)
            .ok()
            .filter(|&l| l >= HEADER_SIZE - 12)
            .map(|l| pos + 12 + l)
            .filter(|&e| e <= log.len())
        else {
            return;
        };
        if let Some(m) = log.get_mut(pos + 16) {
            *m = 2;
        }
        let crc = log.get(pos..end).map_or(0, compute_crc);
        if let Some(dst) = log.get_mut(pos + 17..pos + 21) {
            dst.copy_from_slice(&crc.to_be_bytes());
        }
        pos = end;
    }
}

/// Reads the whole log from its start. With `must_succeed`, any read error
/// is a bug (recovery validated every batch).
fn read_everything(log: &PartitionLog, must_succeed: bool) {
    let mut at = log.log_start_offset();
    let end = log.log_end_offset();
    while at < end {
        let r = match log.read(at, 1 << 14) {
            Ok(r) => r,
            Err(e) if must_succeed => panic!("read({at}) after recovery failed: {e}"),
            Err(_) => return,
        };
        if r.is_empty() {
            assert!(!must_succeed, "read({at}) below the log end {end} is empty");
            return;
        }
        let mut prev = i64::MIN;
        for b in r.batches() {
            assert!(b.base_offset() > prev || prev == i64::MIN);
            assert!(b.last_offset() >= at, "batch before the requested offset");
            prev = b.last_offset();
        }
        for rec in r.records() {
            match rec {
                Ok(rec) => assert!(rec.offset >= at, "record below the requested offset"),
                // Records inside a CRC-valid batch may still be malformed
                // (Kafka's recovery checks the CRC only): an error, no panic.
                Err(_) => break,
            }
        }
        let next = r.next_offset();
        assert!(next > at, "read did not advance");
        at = next;
    }
    let _ = log.offset_for_timestamp(i64::MIN);
    let _ = log.offset_for_timestamp(0);
    let _ = log.offset_for_timestamp(i64::MAX);
}

fn write(dir: &Path, ext: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::write(dir.join(format!("{SEGMENT}{ext}")), bytes)
}

/// Writes `log` and `index` as the only segment of a partition, opens it
/// (after a crash, or with a clean-shutdown marker when `clean`), reads
/// everything, appends, closes and reopens.
///
/// # Panics
/// When kafkalite breaks one of the rules in the module docs.
pub fn recover_segment(log: &[u8], index: &[u8], clean: bool) {
    let Ok(tmp) = TempDir::new() else { return };
    let dir = tmp.0.join("t-0");
    if std::fs::create_dir_all(&dir).is_err()
        || write(&dir, ".log", log).is_err()
        || write(&dir, ".index", index).is_err()
        || (clean && std::fs::write(dir.join(".kafka_cleanshutdown"), b"").is_err())
    {
        return;
    }
    let Ok(plog) = PartitionLog::open(&dir, config()) else {
        return;
    };
    read_everything(&plog, !clean);
    let appended = plog.append_records(
        &[Record::new("after").timestamp(7)],
        Compression::None,
        crate::Durability::Written,
    );
    let end = plog.log_end_offset();
    let _ = plog.close();
    drop(plog);
    if let Ok(again) = PartitionLog::open(&dir, config()) {
        if appended.is_ok() {
            assert_eq!(again.log_end_offset(), end, "clean reopen changed the end");
        }
        read_everything(&again, false);
    }
}

/// Splits one fuzz input into [`recover_segment`]'s arguments: byte 0 holds
/// flags (bit 0 clean, bit 1 fix CRCs), bytes 1–2 the index length.
pub fn recover_segment_input(data: &[u8]) {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (n, rest) = match rest {
        [a, b, rest @ ..] => (usize::from(u16::from_be_bytes([*a, *b])), rest),
        _ => (0, rest),
    };
    let n = n.min(rest.len());
    let (index, log) = rest.split_at(n);
    let mut log = log.to_vec();
    if flags & 2 != 0 {
        fix_crcs(&mut log);
    }
    recover_segment(&log, index, flags & 1 != 0);
}

/// A valid segment of 40 records in batches of 1–4, uncompressed and lz4.
fn valid_segment() -> (Vec<u8>, Vec<(i64, i64)>) {
    let mut out = Vec::new();
    let mut records = Vec::new();
    let mut offset = 0i64;
    for (i, n) in [1, 3, 2, 4, 1, 1, 4, 3, 2, 1, 4, 4, 3, 2, 1, 4]
        .into_iter()
        .enumerate()
    {
        let codec = if i % 3 == 0 {
            Compression::Lz4
        } else {
            Compression::None
        };
        let mut b = BatchBuilder::new(codec).base_offset(offset);
        for j in 0..n {
            let o = offset + j;
            let ts = 1000 + (o * 37) % 50;
            b.push(&Record::new(format!("value-{o}")).timestamp(ts));
            records.push((o, ts));
        }
        out.extend_from_slice(&b.build());
        offset += n;
    }
    (out, records)
}

/// Index files from a fuzz input. Byte 0 bit 0 set: the rest is split in
/// half, raw bytes for `.index` and `.timeindex`. Otherwise entries are
/// built from deltas (3 bytes each: offset delta, position delta, timestamp
/// delta) so most inputs look plausible and get past the load-time checks.
fn index_files(data: &[u8], log_len: usize) -> (Vec<u8>, Vec<u8>) {
    let Some((&mode, rest)) = data.split_first() else {
        return (Vec::new(), Vec::new());
    };
    if mode & 1 != 0 {
        let (a, b) = rest.split_at(rest.len() / 2);
        return (a.to_vec(), b.to_vec());
    }
    let (mut index, mut time_index) = (Vec::new(), Vec::new());
    let (mut rel, mut pos, mut ts) = (0u32, 0u32, 990i64);
    let span = u32::try_from(log_len).unwrap_or(u32::MAX).max(1);
    for (i, c) in rest.chunks_exact(3).enumerate() {
        rel = rel.wrapping_add(u32::from(c[0] % 8));
        if i % 2 == 0 || mode & 2 != 0 {
            pos = pos.wrapping_add(u32::from(c[1]) * 4) % span;
            index.extend_from_slice(&rel.to_be_bytes());
            index.extend_from_slice(&pos.to_be_bytes());
        }
        if i % 2 == 1 || mode & 4 != 0 {
            ts += i64::from(c[2] % 16);
            time_index.extend_from_slice(&ts.to_be_bytes());
            time_index.extend_from_slice(&rel.to_be_bytes());
        }
    }
    (index, time_index)
}

/// Opens a valid segment with index files made from `data` (see
/// `index_files`), trusted under a clean-shutdown marker, then reads every
/// offset and looks up timestamps.
///
/// # Panics
/// When a point read returns a wrong record, or on any panic inside.
pub fn index_loader(data: &[u8]) {
    let Ok(tmp) = TempDir::new() else { return };
    let dir = tmp.0.join("t-0");
    let (log, records) = valid_segment();
    let (index, time_index) = index_files(data, log.len());
    if std::fs::create_dir_all(&dir).is_err()
        || write(&dir, ".log", &log).is_err()
        || write(&dir, ".index", &index).is_err()
        || write(&dir, ".timeindex", &time_index).is_err()
        || std::fs::write(dir.join(".kafka_cleanshutdown"), b"").is_err()
    {
        return;
    }
    let plog = match PartitionLog::open(&dir, config()) {
        Ok(l) => l,
        Err(Error::Corrupt { .. }) => return,
        Err(e) => panic!("open of a valid log with a damaged index failed: {e}"),
    };
    assert_eq!(plog.log_end_offset(), records.len() as i64);
    for &(o, _) in &records {
        match plog.read(o, 1) {
            Ok(r) => {
                let first = r.records().next();
                match first {
                    Some(Ok(rec)) => assert_eq!(rec.offset, o, "point read of {o}"),
                    other => panic!("point read of {o} gave {other:?}"),
                }
            }
            Err(Error::Corrupt { .. }) => {}
            Err(e) => panic!("point read of {o}: {e}"),
        }
    }
    for ts in [i64::MIN, 0, 999, 1000, 1013, 1025, 1049, 1050, i64::MAX] {
        if let Ok(Some((o, t))) = plog.offset_for_timestamp(ts) {
            assert!(t >= ts, "offset_for_timestamp({ts}) gave an older record");
            assert!(records.contains(&(o, t)), "no record ({o}, {t})");
        }
    }
    read_everything(&plog, false);
}
