//! Damaged files: flip, truncate or zero bytes, then reopen and check what
//! the log made of it. The rules (see `src/log/open.rs`): after a crash, a
//! torn tail above the recovery point is cut (in a sealed segment, together
//! with every later segment); damage below the recovery point, or in any
//! segment after a clean shutdown, is `Error::Corrupt` naming the file;
//! indexes that fail their checks are rebuilt.

use super::log_basic::{rec, small_config};
use bytes::Bytes;
use kafkalite::{BatchHeader, Compression, Durability, Error, LogConfig, PartitionLog, ReadMode};
use std::path::{Path, PathBuf};

fn seg(dir: &Path, base: i64, ext: &str) -> PathBuf {
    dir.join(format!("{base:020}.{ext}"))
}

fn values(range: std::ops::Range<u64>) -> Vec<(i64, Option<Bytes>)> {
    range.map(|i| (i as i64, rec(i).value)).collect()
}

/// Reads from 0 until the end or the first error.
fn read_until_error(log: &PartitionLog) -> (Vec<(i64, Option<Bytes>)>, Option<Error>) {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    loop {
        match log.read(at, 2000) {
            Ok(r) if r.is_empty() => return (out, None),
            Ok(r) => {
                for x in r.records() {
                    match x {
                        Ok(x) => out.push((x.offset, x.value)),
                        Err(e) => return (out, Some(e)),
                    }
                }
                at = r.next_offset();
            }
            Err(e) => return (out, Some(e)),
        }
    }
}

fn read_ok(log: &PartitionLog) -> Vec<(i64, Option<Bytes>)> {
    let (got, err) = read_until_error(log);
    assert!(err.is_none(), "{err:?}");
    got
}

/// Appends `n` records in batches of 10; returns the sizes of the batches.
fn fill(dir: &Path, config: &LogConfig, n: u64) -> Vec<usize> {
    let log = PartitionLog::open(dir, config.clone()).unwrap();
    let mut i = 0;
    while i < n {
        let batch: Vec<_> = (i..(i + 10).min(n)).map(rec).collect();
        log.append_records(&batch, Compression::None, Durability::Written)
            .unwrap();
        i += batch.len() as u64;
    }
    let sizes = log
        .read(0, usize::MAX)
        .map(|r| r.batches().iter().map(|b| b.size()).collect())
        .unwrap();
    drop(log); // a crash: no close
    sizes
}

/// (base offset, paths) of every segment, oldest first.
fn segments(dir: &Path) -> Vec<i64> {
    let mut v: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| p.file_stem().unwrap().to_str().unwrap().parse().unwrap())
        .collect();
    v.sort();
    v
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

fn set_len(p: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(p)
        .unwrap()
        .set_len(len)
        .unwrap();
}

fn flip(p: &Path, at: usize, mask: u8) {
    let mut b = std::fs::read(p).unwrap();
    b[at] ^= mask;
    std::fs::write(p, b).unwrap();
}

fn assert_corrupt_in(result: Result<impl std::fmt::Debug, Error>, file: &Path) {
    match result {
        Err(Error::Corrupt { path, .. }) => assert_eq!(path, file),
        other => panic!("expected corrupt data in {}, got {other:?}", file.display()),
    }
}

#[test]
fn a_flipped_byte_in_the_active_segments_last_batch_is_cut_after_a_crash() {
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let mut c = LogConfig::default();
        c.read_mode = mode;
        let sizes = fill(&dir, &c, 100);
        let f = seg(&dir, 0, "log");
        let full: usize = sizes.iter().sum();
        let last = sizes[sizes.len() - 1];
        // A byte inside the records (CRC-covered) of the last batch.
        flip(&f, full - last / 2, 0x01);
        let log = PartitionLog::open(&dir, c).unwrap();
        assert_eq!(log.log_end_offset(), 90);
        assert_eq!(file_len(&f) as usize, full - last);
        assert_eq!(read_ok(&log), values(0..90));
        // The cut-back log takes appends at the recovered end.
        let info = log
            .append_records(&[rec(90)], Compression::Lz4, Durability::Fsync)
            .unwrap();
        assert_eq!(info.base_offset, 90);
        assert_eq!(read_ok(&log), values(0..91));
    }
}

#[test]
fn a_flipped_byte_in_the_last_batch_after_a_clean_close_is_corrupt_not_cut() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let c = LogConfig::default();
    let sizes = fill(&dir, &c, 100);
    PartitionLog::open(&dir, c.clone())
        .unwrap()
        .close()
        .unwrap();
    let f = seg(&dir, 0, "log");
    let full: usize = sizes.iter().sum();
    flip(&f, full - 5, 0x01);
    // A clean close fsynced everything: the damage is not a torn tail.
    let log = PartitionLog::open(&dir, c).unwrap();
    assert_eq!(log.log_end_offset(), 100);
    let (got, err) = read_until_error(&log);
    assert!(got.len() <= 90);
    assert_eq!(got, values(0..got.len() as u64));
    assert_corrupt_in(Err::<(), _>(err.unwrap()), &f);
    // The batches before it still read; the damaged one never does.
    let r = log.read(80, 1).unwrap();
    let before: Vec<i64> = r.records().map(|x| x.unwrap().offset).collect();
    assert_eq!(before, (80..90).collect::<Vec<_>>());
    assert_corrupt_in(log.read(90, 1), &f);
    assert_corrupt_in(log.read(99, 1), &f);
    assert_eq!(file_len(&f) as usize, full, "nothing was cut");
}

#[test]
fn a_zero_filled_tail_left_by_preallocation_is_cut() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let c = small_config();
    fill(&dir, &c, 300);
    let last = *segments(&dir).last().unwrap();
    let f = seg(&dir, last, "log");
    let len = file_len(&f);
    set_len(&f, len + 4096);
    let log = PartitionLog::open(&dir, c).unwrap();
    assert_eq!(log.log_end_offset(), 300);
    assert_eq!(file_len(&f), len);
    assert_eq!(read_ok(&log), values(0..300));
}

#[test]
fn a_batch_header_torn_at_every_length_is_cut_back_to_the_previous_batch() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let c = LogConfig::default();
    let sizes = fill(&dir, &c, 50);
    let f = seg(&dir, 0, "log");
    let full: usize = sizes.iter().sum();
    let keep = full - sizes[sizes.len() - 1];
    let image = std::fs::read(&f).unwrap();
    for len in 1..61 {
        std::fs::write(&f, &image[..keep + len]).unwrap();
        let log = PartitionLog::open(&dir, c.clone()).unwrap();
        assert_eq!(log.log_end_offset(), 40, "header torn at {len} bytes");
        assert_eq!(file_len(&f) as usize, keep);
        assert_eq!(read_ok(&log), values(0..40));
    }
}

/// A closed log of several segments and the bytes of its index files.
fn closed_log(dir: &Path, c: &LogConfig) -> Vec<(PathBuf, Vec<u8>)> {
    fill(dir, c, 400);
    PartitionLog::open(dir, c.clone()).unwrap().close().unwrap();
    let mut out = Vec::new();
    for base in segments(dir) {
        for ext in ["index", "timeindex"] {
            let p = seg(dir, base, ext);
            let b = std::fs::read(&p).unwrap();
            out.push((p, b));
        }
    }
    out
}

fn assert_indexes_equal(saved: &[(PathBuf, Vec<u8>)]) {
    for (p, want) in saved {
        assert_eq!(&std::fs::read(p).unwrap(), want, "{}", p.display());
    }
}

#[test]
fn a_missing_index_or_time_index_is_rebuilt_identically() {
    for ext in ["index", "timeindex"] {
        for which in ["sealed", "active"] {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("t-0");
            let c = small_config();
            let saved = closed_log(&dir, &c);
            let bases = segments(&dir);
            assert!(bases.len() >= 3);
            let base = if which == "sealed" {
                bases[1]
            } else {
                bases[bases.len() - 1]
            };
            assert!(
                saved
                    .iter()
                    .any(|(p, b)| *p == seg(&dir, base, ext) && !b.is_empty()),
                "the {which} {ext} had entries"
            );
            std::fs::remove_file(seg(&dir, base, ext)).unwrap();
            let log = PartitionLog::open(&dir, c.clone()).unwrap();
            assert_eq!(read_ok(&log), values(0..400), "{which} {ext}");
            for o in [0, 123, 250, 399] {
                let r = log.read(o, 1).unwrap();
                assert_eq!(r.records().next().unwrap().unwrap().offset, o);
            }
            assert_eq!(
                log.offset_for_timestamp(rec(222).timestamp).unwrap(),
                Some((222, rec(222).timestamp))
            );
            log.close().unwrap();
            assert_indexes_equal(&saved);
        }
    }
}

#[test]
fn a_garbage_or_zero_filled_index_is_rebuilt() {
    let junk: Vec<u8> = (0..800u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for (name, bytes) in [
        ("zeros", vec![0u8; 800]),
        ("garbage", junk.clone()),
        ("odd length", junk[..803.min(junk.len()) - 5].to_vec()),
        ("all ones", vec![0xffu8; 96]),
    ] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let c = small_config();
        let saved = closed_log(&dir, &c);
        let bases = segments(&dir);
        std::fs::write(seg(&dir, bases[1], "index"), &bytes).unwrap();
        std::fs::write(seg(&dir, bases[2], "timeindex"), &bytes).unwrap();
        let log = PartitionLog::open(&dir, c.clone()).unwrap();
        assert_eq!(read_ok(&log), values(0..400), "{name}");
        for o in bases.iter().flat_map(|&b| [b, b + 1, b + 7]) {
            let r = log.read(o, 1).unwrap();
            assert_eq!(r.records().next().unwrap().unwrap().offset, o, "{name}");
        }
        log.close().unwrap();
        assert_indexes_equal(&saved);
    }
}

#[test]
fn an_untrimmed_zero_filled_index_tail_on_a_sealed_segment_is_rebuilt_not_trusted() {
    for ext in ["index", "timeindex"] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let c = small_config();
        let saved = closed_log(&dir, &c);
        let bases = segments(&dir);
        let p = seg(&dir, bases[0], ext);
        let len = file_len(&p);
        assert!(len > 0);
        // As Kafka leaves a preallocated index after a crash before trimming.
        set_len(&p, len + 1200);
        let log = PartitionLog::open(&dir, c.clone()).unwrap();
        assert_eq!(read_ok(&log), values(0..400), "{ext}");
        for o in 0..bases[1] {
            let r = log.read(o, 1).unwrap();
            assert_eq!(r.records().next().unwrap().unwrap().offset, o, "{ext}");
        }
        let ts = rec(bases[1] as u64 - 1).timestamp;
        assert_eq!(
            log.offset_for_timestamp(ts).unwrap(),
            Some((bases[1] - 1, ts))
        );
        log.close().unwrap();
        assert_indexes_equal(&saved);
    }
}

#[test]
fn a_damaged_partition_checkpoint_is_ignored_and_nothing_is_lost() {
    for damage in ["flip", "empty", "garbage"] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let c = small_config();
        fill(&dir, &c, 300);
        let p = dir.join("partition.checkpoint");
        match damage {
            "flip" => {
                let t = std::fs::read_to_string(&p).unwrap();
                std::fs::write(&p, t.replacen("recovery-point ", "recovery-point 9", 1)).unwrap();
            }
            "empty" => std::fs::write(&p, b"").unwrap(),
            _ => std::fs::write(&p, [0xde, 0xad, 0xbe, 0xef, 0x0a]).unwrap(),
        }
        let log = PartitionLog::open(&dir, c).unwrap();
        assert_eq!(log.log_end_offset(), 300, "{damage}");
        assert_eq!(log.log_start_offset(), 0, "{damage}");
        assert_eq!(read_ok(&log), values(0..300), "{damage}");
    }
}

fn noise(n: usize, seed: u32) -> Vec<u8> {
    (0..n as u32)
        .map(|i| ((i ^ seed).wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect()
}

/// Appends as [`fill`], then flushes and checkpoints (the recovery point
/// moves to the log end, past every sealed segment) before the crash.
fn fill_flushed(dir: &Path, config: &LogConfig, n: u64) {
    fill(dir, config, n);
    let log = PartitionLog::open(dir, config.clone()).unwrap();
    log.flush().unwrap();
    log.checkpoint().unwrap();
    drop(log); // a crash: no close
}

#[test]
fn a_sealed_segment_that_is_not_a_log_is_corrupt_naming_the_file() {
    // After a clean shutdown, or below the recovery point after a crash.
    for clean in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let c = small_config();
        fill_flushed(&dir, &c, 300);
        if clean {
            PartitionLog::open(&dir, c.clone())
                .unwrap()
                .close()
                .unwrap();
        }
        let f = seg(&dir, 0, "log");
        std::fs::write(&f, noise(file_len(&f) as usize, 7)).unwrap();
        match PartitionLog::open(&dir, c) {
            Err(e) => assert_corrupt_in(Err::<(), _>(e), &f),
            Ok(log) => {
                assert_eq!(log.log_end_offset(), 300);
                assert_corrupt_in(log.read(0, 100), &f);
                assert_corrupt_in(log.read(1, 100), &f);
                let (got, err) = read_until_error(&log);
                assert!(got.is_empty());
                assert_corrupt_in(Err::<(), _>(err.unwrap()), &f);
            }
        }
        // The bad segment is still there: nothing was dropped.
        assert!(f.exists());
    }
}

/// A valid checkpoint file with recovery point `rp` and log start 0.
fn write_checkpoint(dir: &Path, rp: i64) {
    let body = format!("kafkalite-checkpoint 1\nrecovery-point {rp}\nlog-start-offset 0\n");
    let text = format!("{body}crc32 {:08x}\n", crc32fast::hash(body.as_bytes()));
    std::fs::write(dir.join("partition.checkpoint"), text).unwrap();
}

#[test]
fn without_a_checkpoint_a_bad_sealed_batch_is_corrupt_and_nothing_is_cut() {
    // No recovery point to go by: a bad batch in a sealed segment may be
    // damage to synced data, so it is reported, never cut away with the
    // segments after it.
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let c = small_config();
    fill(&dir, &c, 300);
    std::fs::remove_file(dir.join("partition.checkpoint")).unwrap();
    let bases = segments(&dir);
    assert!(bases.len() >= 4, "{bases:?}");
    let f = seg(&dir, bases[1], "log");
    let len = file_len(&f) as usize;
    flip(&f, len - 20, 0xff);
    assert_corrupt_in(PartitionLog::open(&dir, c), &f);
    assert_eq!(segments(&dir), bases, "nothing deleted");
}

/// Rolled segments are flushed in the background: after a crash, a sealed
/// segment above the recovery point may have lost its unsynced tail. It is
/// cut at the first bad batch (or where whole batches are missing) and every
/// later segment is dropped, as Kafka's recovery does; the same damage below
/// the recovery point is corruption and nothing is cut.
#[test]
fn a_torn_sealed_segment_above_the_recovery_point_is_cut_and_later_segments_dropped() {
    for (damage, flushed) in [
        ("noise", false),
        ("short", false),
        ("noise", true),
        ("short", true),
    ] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let c = small_config();
        fill(&dir, &c, 300);
        if flushed {
            fill_flushed(&dir, &c, 0);
        } else {
            // Recovery point 0: every segment is above it.
            write_checkpoint(&dir, 0);
        }
        let bases = segments(&dir);
        assert!(bases.len() >= 4, "{bases:?}");
        // Damage the last batch (10 records) of the second segment.
        let (k, next) = (bases[1], bases[2]);
        let f = seg(&dir, k, "log");
        let last_batch_at = {
            let data = std::fs::read(&f).unwrap();
            let mut at = 0usize;
            loop {
                let h = BatchHeader::parse(&data[at..]).unwrap();
                if at + h.size() == data.len() {
                    break at;
                }
                at += h.size();
            }
        };
        match damage {
            "noise" => {
                let mut data = std::fs::read(&f).unwrap();
                let n = data.len() - last_batch_at - 30;
                data[last_batch_at + 30..].copy_from_slice(&noise(n, 5));
                std::fs::write(&f, data).unwrap();
            }
            _ => set_len(&f, last_batch_at as u64),
        }
        let result = PartitionLog::open(&dir, c.clone());
        if flushed {
            let log = result.unwrap();
            assert_eq!(log.log_end_offset(), 300, "{damage}");
            let (got, err) = read_until_error(&log);
            if damage == "noise" {
                // Reads return every batch before the bad one (those in the
                // same read too); the read that starts at it reports it.
                assert_eq!(got.len(), (next - 10) as usize, "{damage}");
                assert_eq!(got, values(0..got.len() as u64), "{damage}");
                assert_corrupt_in(Err::<(), _>(err.unwrap()), &f);
            } else {
                // Whole batches missing below the recovery point: the read
                // steps over the gap as over a compacted one (the records are
                // gone, nothing was cut, nothing else is lost).
                assert!(got.len() < 300, "{damage}");
                assert!(err.is_none(), "{damage}: {err:?}");
                let mut want = values(0..next as u64 - 10);
                want.extend(values(next as u64..300));
                assert_eq!(got, want, "{damage}");
            }
            for b in &bases {
                assert!(seg(&dir, *b, "log").exists(), "{damage}: nothing dropped");
            }
            continue;
        }
        let log = result.unwrap();
        assert_eq!(log.log_end_offset(), next - 10, "{damage}");
        assert_eq!(file_len(&f), last_batch_at as u64, "{damage}");
        assert_eq!(read_ok(&log), values(0..next as u64 - 10), "{damage}");
        for b in &bases[2..] {
            for ext in ["log", "index", "timeindex"] {
                assert!(!seg(&dir, *b, ext).exists(), "{damage}: {b}.{ext} kept");
            }
        }
        // Appends continue from the cut, in the cut segment.
        log.append_records(
            &[rec(next as u64 - 10)],
            Compression::None,
            Durability::Fsync,
        )
        .unwrap();
        assert_eq!(log.segment_base_offsets(), bases[..2].to_vec());
        log.close().unwrap();
        drop(log);
        let log = PartitionLog::open(&dir, c).unwrap();
        assert_eq!(read_ok(&log), values(0..next as u64 - 9), "{damage}");
    }
}

#[test]
fn the_only_segment_full_of_noise_after_a_crash_is_cut_to_empty() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let c = LogConfig::default();
    fill(&dir, &c, 50);
    // The checkpoint's recovery point is 0 (nothing was flushed), so the
    // whole segment is an unsynced tail: recovery may cut all of it.
    let f = seg(&dir, 0, "log");
    std::fs::write(&f, noise(5000, 3)).unwrap();
    let log = PartitionLog::open(&dir, c).unwrap();
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(file_len(&f), 0);
    assert!(log.read(0, 100).unwrap().is_empty());
    log.append_records(&[rec(0)], Compression::None, Durability::Written)
        .unwrap();
    assert_eq!(read_ok(&log), values(0..1));
}

#[test]
fn noise_below_the_checkpointed_recovery_point_of_the_active_segment_is_corrupt() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let c = LogConfig::default();
    {
        let log = PartitionLog::open(&dir, c.clone()).unwrap();
        for i in 0..50 {
            log.append_records(&[rec(i)], Compression::None, Durability::Fsync)
                .unwrap();
        }
        log.checkpoint().unwrap();
    }
    let f = seg(&dir, 0, "log");
    let len = file_len(&f) as usize;
    std::fs::write(&f, noise(len, 5)).unwrap();
    assert_corrupt_in(PartitionLog::open(&dir, c), &f);
    assert_eq!(file_len(&f) as usize, len, "nothing was cut");
}

/// Positions inside the CRC-covered part of a batch: attributes, last offset
/// delta, timestamps, records count, a record byte, and the CRC itself.
const CRC_COVERED: [usize; 7] = [18, 22, 24, 30, 40, 58, 70];

#[test]
fn a_flipped_byte_in_a_sealed_segment_is_corrupt_at_open_or_read_never_dropped() {
    for at in CRC_COVERED {
        for clean in [true, false] {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("t-0");
            let c = small_config();
            // Flushed: the sealed segments lie below the recovery point.
            fill_flushed(&dir, &c, 300);
            if clean {
                PartitionLog::open(&dir, c.clone())
                    .unwrap()
                    .close()
                    .unwrap();
            }
            let bases = segments(&dir);
            let f = seg(&dir, bases[1], "log");
            // Damage the third batch of the second segment.
            let image = std::fs::read(&f).unwrap();
            let h0 = BatchHeader::parse(&image).unwrap();
            let h1 = BatchHeader::parse(&image[h0.size()..]).unwrap();
            let third = h0.size() + h1.size();
            let damaged_base = BatchHeader::parse(&image[third..]).unwrap().base_offset;
            flip(&f, third + at, 0x80);
            match PartitionLog::open(&dir, c) {
                Err(e) => assert_corrupt_in(Err::<(), _>(e), &f),
                Ok(log) => {
                    assert_eq!(log.log_end_offset(), 300, "byte {at} clean {clean}");
                    let (got, err) = read_until_error(&log);
                    assert!(
                        matches!(&err, Some(Error::Corrupt { path, .. }) if *path == f),
                        "byte {at} clean {clean}: {err:?}"
                    );
                    assert!(got.len() as i64 <= damaged_base);
                    assert_eq!(got, values(0..got.len() as u64));
                }
            }
        }
    }
}

#[test]
fn batches_held_by_a_reader_stay_valid_after_the_log_and_its_directory_are_gone() {
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let mut c = small_config();
        c.read_mode = mode;
        let log = PartitionLog::open(&dir, c).unwrap();
        for i in 0..200 {
            log.append_records(&[rec(i)], Compression::None, Durability::Written)
                .unwrap();
        }
        let held: Vec<_> = (0..200)
            .step_by(37)
            .map(|o| log.read(o, 3000).unwrap())
            .collect();
        let copies: Vec<Vec<Vec<u8>>> = held
            .iter()
            .map(|r| r.batches().iter().map(|b| b.as_bytes().to_vec()).collect())
            .collect();
        log.close().unwrap();
        drop(log);
        std::fs::remove_dir_all(&dir).unwrap();
        drop(d);
        for (r, copy) in held.iter().zip(&copies) {
            let now: Vec<Vec<u8>> = r.batches().iter().map(|b| b.as_bytes().to_vec()).collect();
            assert_eq!(&now, copy);
            for x in r.records() {
                let x = x.unwrap();
                assert_eq!(x.value, rec(x.offset as u64).value);
            }
        }
    }
}

/// A clean-closed single segment with several offset-index entries.
fn closed_indexed_log(dir: &Path) -> (LogConfig, Vec<u8>) {
    let mut c = LogConfig::default();
    c.settings.index_interval_bytes = 300;
    fill(dir, &c, 100);
    PartitionLog::open(dir, c.clone()).unwrap().close().unwrap();
    let index = std::fs::read(seg(dir, 0, "index")).unwrap();
    assert!(index.len() >= 24, "several entries");
    (c, index)
}

#[test]
fn a_trusted_index_entry_pointing_inside_a_batch_is_rebuilt_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let (c, mut index) = closed_indexed_log(&dir);
    // The last entry's position moves 3 bytes into its batch: still
    // increasing and inside the log, so the load-time checks pass.
    let n = index.len();
    let pos = u32::from_be_bytes(index[n - 4..].try_into().unwrap()) + 3;
    index[n - 4..].copy_from_slice(&pos.to_be_bytes());
    std::fs::write(seg(&dir, 0, "index"), &index).unwrap();
    let log = PartitionLog::open(&dir, c).unwrap();
    assert_eq!(log.log_end_offset(), 100);
    assert_eq!(read_ok(&log), values(0..100));
    for o in 0..100 {
        let r = log.read(o, 1).unwrap();
        assert_eq!(r.records().next().unwrap().unwrap().offset, o);
    }
}

#[test]
fn an_index_entry_pointing_at_a_later_batch_never_makes_a_read_skip_records() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let (c, mut index) = closed_indexed_log(&dir);
    // The first entry claims a smaller offset for its batch: lookups of the
    // offsets in between would land after them.
    let rel = u32::from_be_bytes(index[..4].try_into().unwrap());
    assert!(rel >= 15);
    index[..4].copy_from_slice(&(rel - 15).to_be_bytes());
    std::fs::write(seg(&dir, 0, "index"), &index).unwrap();
    let log = PartitionLog::open(&dir, c).unwrap();
    for o in 0..100 {
        let r = log.read(o, 1).unwrap();
        assert_eq!(r.records().next().unwrap().unwrap().offset, o, "read({o})");
    }
    assert_eq!(read_ok(&log), values(0..100));
}

#[test]
fn without_a_trusted_checkpoint_a_compacted_segment_is_not_taken_for_a_torn_one() {
    // Compaction leaves a sealed segment ending before the next segment's
    // base. After a crash whose checkpoint is damaged (or missing), recovery
    // has no recovery point to tell that from a torn tail: it must keep
    // every segment, never cut and delete what follows.
    use kafkalite::{CompactionPolicy, Record};
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 300;
    let log = PartitionLog::open(&dir, c.clone()).unwrap();
    // One keyed record per batch (key k<offset>); then the key of each
    // sealed segment's last batch again, so compaction drops the batch at
    // the end of every old segment (and keeps the others).
    let put = |k: i64| {
        let r = Record::new(format!("v-{k}")).key(format!("k{k}"));
        log.append_records(&[r], Compression::None, Durability::Written)
            .unwrap();
    };
    for k in 0..12 {
        put(k);
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() > 2, "several segments: {bases:?}");
    for w in bases.windows(2) {
        put(w[1] - 1);
    }
    // Keyless filler, so those rewrites land in sealed segments too (only
    // sealed ones are compacted).
    for _ in 0..8 {
        log.append_records(
            &[Record::new("filler")],
            Compression::None,
            Durability::Written,
        )
        .unwrap();
    }
    let mut policy = CompactionPolicy::default();
    policy.delete_retention = std::time::Duration::ZERO;
    policy.min_dirty_percent = 0;
    let out = log.compact(&policy, 0, true).unwrap();
    assert!(out.records_removed > 0);
    for i in 0..5 {
        let r = Record::new(format!("tail-{i}")).key("t");
        log.append_records(&[r], Compression::None, Durability::Fsync)
            .unwrap();
    }
    let end = log.log_end_offset();
    let before = read_ok(&log);
    // The case this test is about: a sealed segment that now ends before the
    // next segment's base offset.
    let compacted = log.segment_base_offsets();
    let short = compacted.windows(2).any(|w| {
        before
            .iter()
            .map(|(o, _)| *o)
            .filter(|o| (w[0]..w[1]).contains(o))
            .max()
            .is_none_or(|last| last + 1 < w[1])
    });
    assert!(short, "no sealed segment ends short: {compacted:?}");
    drop(log); // a crash
    for damage in [Some(b"garbage".as_slice()), None] {
        let cp = dir.join("partition.checkpoint");
        match damage {
            Some(junk) => std::fs::write(&cp, junk).unwrap(),
            None => {
                let _ = std::fs::remove_file(&cp);
            }
        }
        let log = PartitionLog::open(&dir, c.clone()).unwrap();
        assert_eq!(log.log_end_offset(), end, "{damage:?}");
        assert_eq!(read_ok(&log), before, "{damage:?}");
        drop(log);
    }
}

/// A store with topic `t` of `segments`+ segments in partition 0, closed.
fn closed_store_with_segments(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let store = kafkalite::Store::open(dir, kafkalite::StoreOptions::default()).unwrap();
    let mut config = kafkalite::TopicConfig::default();
    config.log.segment_bytes = 1024;
    store.create_topic("t", 1, config).unwrap();
    for i in 0..40 {
        store
            .append(
                "t",
                0,
                &[kafkalite::Record::new(format!("record {i:>100}"))],
                Durability::Written,
            )
            .unwrap();
    }
    store.close().unwrap();
    let mut logs: Vec<_> = std::fs::read_dir(dir.join("t-0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    logs.sort();
    assert!(logs.len() > 3);
    logs
}

fn open_fails_naming(dir: &std::path::Path, named: &std::path::Path) {
    for read_only in [false, true] {
        let r = if read_only {
            kafkalite::Store::open_read_only(dir, kafkalite::StoreOptions::default())
        } else {
            kafkalite::Store::open(dir, kafkalite::StoreOptions::default())
        };
        match r {
            Err(Error::Corrupt { path, .. }) => assert_eq!(path, named, "read_only={read_only}"),
            other => panic!("read_only={read_only}: {other:?}"),
        }
    }
}

/// Issue 17, finding 11: a middle segment deleted while the store was closed
/// (its `.log`, or all three files) was skipped silently by open and reads.
#[test]
fn a_middle_segment_deleted_while_closed_is_corruption_naming_it() {
    for all_three in [false, true] {
        let d = tempfile::tempdir().unwrap();
        let logs = closed_store_with_segments(d.path());
        let victim = &logs[1];
        std::fs::remove_file(victim).unwrap();
        if all_three {
            for ext in ["index", "timeindex"] {
                let _ = std::fs::remove_file(victim.with_extension(ext));
            }
        }
        open_fails_naming(d.path(), victim);
    }
}

/// Issue 17, finding 11: a partition directory deleted while the store was
/// closed was re-created empty.
#[test]
fn a_partition_directory_deleted_while_closed_is_corruption_naming_it() {
    let d = tempfile::tempdir().unwrap();
    closed_store_with_segments(d.path());
    std::fs::remove_dir_all(d.path().join("t-0")).unwrap();
    open_fails_naming(d.path(), &d.path().join("t-0"));
    assert!(!d.path().join("t-0").exists(), "nothing re-created");
}

/// What retention, `delete_records` and compaction remove is not damage.
#[test]
fn segments_removed_by_retention_or_delete_records_reopen_without_error() {
    let d = tempfile::tempdir().unwrap();
    closed_store_with_segments(d.path());
    let store = kafkalite::Store::open(d.path(), kafkalite::StoreOptions::default()).unwrap();
    let start = store.delete_records("t", 0, 20).unwrap();
    assert_eq!(start, 20);
    store.close().unwrap();
    drop(store);
    let store = kafkalite::Store::open(d.path(), kafkalite::StoreOptions::default()).unwrap();
    assert_eq!(
        store.describe_topic("t").unwrap().partitions[0].log_start_offset,
        20
    );
    store.close().unwrap();
    drop(store);
    kafkalite::Store::open_read_only(d.path(), kafkalite::StoreOptions::default()).unwrap();
}
