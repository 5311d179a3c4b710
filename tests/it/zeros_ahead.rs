//! Zeros written ahead of durable appends: an `Fsync` append that passes
//! the file's end also writes zeros after itself (as much again as the
//! segment holds, up to 1 MiB, never past `segment.bytes`), so the next
//! ones overwrite blocks the file holds. Sealing and closing cut them off;
//! a crash leaves them, and recovery takes them as the end of the segment,
//! of the last one as of a sealed one whose cut had not reached the disk.

use kafkalite::{Durability, Record, Store, StoreOptions, TopicConfig};
use std::path::{Path, PathBuf};

fn store(dir: &Path, segment_bytes: u32) -> Store {
    let s = Store::open(dir, StoreOptions::default()).unwrap();
    if !s.list_topics().contains(&"t".to_string()) {
        let mut t = TopicConfig::default();
        t.log.segment_bytes = segment_bytes;
        s.create_topic("t", 1, t).unwrap();
    }
    s
}

/// Appends `batches` synced batches of 100 records of ~100 bytes from
/// record `first` on.
fn append(s: &Store, first: usize, batches: usize, durability: Durability) {
    for b in 0..batches {
        let recs: Vec<Record> = (0..100)
            .map(|i| Record::new(format!("{}:{}", first + b * 100 + i, "z".repeat(90))))
            .collect();
        s.append("t", 0, &recs, durability).unwrap();
    }
}

/// Every record reads back, in order, as `append` wrote it.
fn check_all(s: &Store, n: usize) {
    let log = s.partition("t", 0).unwrap();
    let all = crate::log_basic::read_all(&log, 0);
    assert_eq!(all.len(), n);
    for (i, (o, v)) in all.iter().enumerate() {
        assert_eq!(*o, i as i64);
        let v = v.as_deref().unwrap();
        assert!(v.starts_with(format!("{i}:").as_bytes()), "record {i}");
    }
}

/// The `.log` files of `dir`'s partition, oldest first.
fn logs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("t-0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    v
}

/// Where the batches of the `.log` at `path` end (see [`batches_end`]).
pub(crate) fn data_len(path: &Path) -> u64 {
    batches_end(&std::fs::read(path).unwrap()) as u64
}

/// Where the batches of a `.log` end: each starts with its base offset and
/// length (Kafka's log overhead), and the next starts right after it.
/// Stops at a length of 0 (zeros) or at the end of the file.
fn batches_end(bytes: &[u8]) -> usize {
    let mut pos = 0;
    while let Some(head) = bytes.get(pos..pos + 12) {
        let len = i32::from_be_bytes(head[8..12].try_into().unwrap());
        if len <= 0 {
            break;
        }
        pos += 12 + len as usize;
    }
    pos
}

#[test]
fn durable_appends_write_zeros_ahead_and_sealing_cuts_them() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), 8 << 20);
    append(&s, 0, 20, Durability::Fsync);
    let log = logs(d.path()).pop().unwrap();
    let bytes = std::fs::read(&log).unwrap();
    let end = batches_end(&bytes);
    // ~200 KB of batches, then as much again of zeros, to a page.
    assert!(end > 150_000, "{end}");
    assert!(bytes.len() > end, "no zeros past {end}");
    assert!(
        bytes.len() <= (2 * end).next_multiple_of(4096),
        "{}",
        bytes.len()
    );
    assert_eq!(bytes.len() % 4096, 0);
    assert!(bytes[end..].iter().all(|&b| b == 0));
    check_all(&s, 2000);
    // Buffered appends write over the zeros too, and past them.
    append(&s, 2000, 30, Durability::Written);
    check_all(&s, 5000);
    s.close().unwrap();
    let bytes = std::fs::read(&log).unwrap();
    assert_eq!(batches_end(&bytes), bytes.len(), "closed with zeros left");
    let s = store(d.path(), 8 << 20);
    check_all(&s, 5000);
    append(&s, 5000, 5, Durability::Fsync);
    check_all(&s, 5500);
    s.close().unwrap();
}

#[test]
fn zeros_stop_at_a_mib_ahead_and_at_segment_bytes_and_rolls_cut_them() {
    let d = tempfile::tempdir().unwrap();
    // Segments of 1.5 MiB, each appended to in ~11 KB steps.
    let s = store(d.path(), 3 << 19);
    let mut most_ahead = 0;
    let mut batches = 0;
    while logs(d.path()).len() < 3 {
        append(&s, batches * 100, 1, Durability::Fsync);
        batches += 1;
        let active = logs(d.path()).pop().unwrap();
        let bytes = std::fs::read(&active).unwrap();
        let end = batches_end(&bytes);
        assert!(bytes.len() <= 3 << 19, "{} past segment.bytes", bytes.len());
        assert!(bytes[end..].iter().all(|&b| b == 0));
        most_ahead = most_ahead.max(bytes.len() - end);
    }
    assert!(most_ahead > 512 << 10, "{most_ahead}");
    assert!(most_ahead <= (1 << 20) + 4096, "{most_ahead}");
    // Every sealed segment ends at its last batch.
    let all = logs(d.path());
    for sealed in &all[..all.len() - 1] {
        let bytes = std::fs::read(sealed).unwrap();
        assert_eq!(batches_end(&bytes), bytes.len(), "{sealed:?}");
    }
    check_all(&s, batches * 100);
    s.close().unwrap();
}

#[test]
fn a_crash_with_zeros_ahead_recovers_every_synced_record() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), 8 << 20);
    append(&s, 0, 20, Durability::Fsync);
    // What a power loss now leaves: everything was synced, zeros included.
    let image = tempfile::tempdir().unwrap();
    crate::corruption_sweep::copy_dir(d.path(), image.path());
    s.close().unwrap();
    let log = logs(image.path()).pop().unwrap();
    let before = std::fs::read(&log).unwrap();
    let end = batches_end(&before);
    assert!(before.len() > end);
    let r = store(image.path(), 8 << 20);
    check_all(&r, 2000);
    assert_eq!(std::fs::metadata(&log).unwrap().len(), end as u64);
    append(&r, 2000, 3, Durability::Fsync);
    check_all(&r, 2300);
    r.close().unwrap();
}

#[test]
fn a_sealed_segment_whose_cut_was_lost_keeps_the_later_segments() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), 1 << 20);
    let mut batches = 0;
    while logs(d.path()).len() < 2 {
        append(&s, batches * 100, 1, Durability::Fsync);
        batches += 1;
    }
    append(&s, batches * 100, 5, Durability::Fsync);
    batches += 5;
    let image = tempfile::tempdir().unwrap();
    crate::corruption_sweep::copy_dir(d.path(), image.path());
    s.close().unwrap();
    // The roll's cut of the first segment did not reach the disk, nor did
    // a checkpoint: recovery scans every segment.
    let first = logs(image.path()).remove(0);
    let mut bytes = std::fs::read(&first).unwrap();
    let end = bytes.len();
    bytes.resize(end + 40_000, 0);
    std::fs::write(&first, &bytes).unwrap();
    let checkpoint = image.path().join("t-0").join("partition.checkpoint");
    if checkpoint.exists() {
        std::fs::remove_file(checkpoint).unwrap();
    }
    let r = store(image.path(), 1 << 20);
    check_all(&r, batches * 100);
    assert_eq!(std::fs::metadata(&first).unwrap().len(), end as u64);
    assert_eq!(logs(image.path()).len(), 2);
    r.close().unwrap();
}

#[test]
fn a_segment_rolled_at_the_recovery_point_whose_cut_was_lost_is_cut_at_open() {
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), 1 << 20);
    append(&s, 0, 20, Durability::Fsync);
    // The recovery point reaches the end of the first segment's durable
    // appends, whose zeros are still there.
    s.partition("t", 0).unwrap().checkpoint().unwrap();
    let image = tempfile::tempdir().unwrap();
    crate::corruption_sweep::copy_dir(d.path(), image.path());
    // The next append rolls (it does not fit the segment): the roll cuts
    // the zeros, which a power loss now takes back, while the next
    // segment's files survive.
    let big: Vec<Record> = (0..100)
        .map(|i| Record::new(format!("{}:{}", 2000 + i, "b".repeat(9000))))
        .collect();
    s.append("t", 0, &big, Durability::Fsync).unwrap();
    let all = logs(d.path());
    assert_eq!(all.len(), 2);
    let second = all[1].file_name().unwrap().to_owned();
    assert_eq!(second, "00000000000000002000.log");
    for ext in ["log", "index", "timeindex"] {
        let name = format!("00000000000000002000.{ext}");
        std::fs::copy(
            d.path().join("t-0").join(&name),
            image.path().join("t-0").join(&name),
        )
        .unwrap();
    }
    s.close().unwrap();
    let first = logs(image.path()).remove(0);
    let bytes = std::fs::read(&first).unwrap();
    let end = batches_end(&bytes);
    assert!(bytes.len() > end, "the image's first segment ends in zeros");
    let r = store(image.path(), 1 << 20);
    assert_eq!(std::fs::metadata(&first).unwrap().len(), end as u64);
    check_all(&r, 2100);
    r.close().unwrap();
}
