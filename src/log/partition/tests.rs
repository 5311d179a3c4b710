//! The group commit's races, driven from inside; read-ahead's marks.

use super::*;
use crate::log::config::Durability;
use crate::{Compression, Record};

/// A log poisoned while a group-commit leader gathers appends (say, a
/// rolled segment's background flush failed) acknowledges nothing, even
/// though the leader's own fsync succeeds.
#[test]
fn a_leader_poisoned_while_gathering_acknowledges_nothing() {
    // The leader gathers for at most `GATHER_WAIT`: on a loaded machine
    // this thread may not see it gathering in time. Such an attempt (the
    // leader fsyncs and returns unpoisoned) is retried on a fresh log.
    for attempt in 1.. {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
        let records = [Record::new("v")];
        log.append_records(&records, Compression::None, Durability::Written)
            .unwrap();
        // An `Fsync` append in flight: the leader waits for it to gather.
        log.durable.lock().appending = 1;
        let poisoned = std::thread::scope(|s| {
            let leader = s.spawn(|| log.sync_to(log.log_end_offset()));
            // Seen gathering and poisoned under one lock: the leader
            // cannot leave its gather wait in between.
            let poisoned = loop {
                let d = log.durable.lock();
                if d.gathering {
                    log.poisoned.store(true, Ordering::Release);
                    break true;
                }
                if leader.is_finished() {
                    break false;
                }
                drop(d);
                std::thread::yield_now();
            };
            log.round_end.notify();
            log.gather_cv.notify_all();
            let result = leader.join().unwrap();
            if poisoned {
                assert!(matches!(result, Err(Error::Poisoned { .. })), "{result:?}");
            } else {
                assert!(result.is_ok(), "{result:?}");
            }
            poisoned
        });
        if !poisoned {
            assert!(attempt < 1000, "never saw the leader gathering");
            continue;
        }
        let d = log.durable.lock();
        assert_eq!(d.synced, 0, "nothing acknowledged as durable");
        assert_eq!(d.fsyncs, 1, "the leader's fsync ran");
        return;
    }
}

/// Followers waiting on a leader are all woken when its round ends, and
/// every one of their appends is durable when they return.
#[test]
fn every_follower_returns_with_its_append_durable() {
    let dir = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
    let records = [Record::new("v"), Record::new("w")];
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..50 {
                    let info = log
                        .append_records(&records, Compression::None, Durability::Fsync)
                        .unwrap();
                    assert!(log.durable.lock().synced > info.last_offset);
                }
            });
        }
    });
    assert_eq!(log.log_end_offset(), 800);
    // 400 appends shared their fsyncs.
    assert!(log.fsync_count() < 400, "{} fsyncs", log.fsync_count());
}

/// A log of 64 batches of 100 ~160-byte records (about 1 MiB).
fn log_of_batches(dir: &std::path::Path, read_mode: crate::ReadMode) -> PartitionLog {
    let config = LogConfig {
        read_mode,
        ..LogConfig::default()
    };
    let log = PartitionLog::open(dir.join("t-0"), config).unwrap();
    for b in 0..64 {
        let records: Vec<Record> = (0..100)
            .map(|i| Record::new(format!("{b}:{i}:{}", "x".repeat(150))))
            .collect();
        log.append_records(&records, Compression::None, Durability::Written)
            .unwrap();
    }
    log
}

/// Waits (at most 30 s: the read-ahead thread runs only on a free core)
/// until the log's one segment has `want` batches verified; returns how
/// many it has.
fn verified_within(log: &PartitionLog, want: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let n = log.segments_snapshot()[0].verified_batches();
        if n >= want || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// A read that starts where the last one ended has the batches after it
/// checked on the read-ahead thread: the next reads find them verified.
#[test]
fn a_sequential_read_has_the_batches_after_it_verified_ahead() {
    let dir = tempfile::tempdir().unwrap();
    let log = log_of_batches(dir.path(), crate::ReadMode::Mmap);
    // A fresh handle on the same files: nothing verified yet.
    drop(log);
    let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
    let first = log.read(0, 32 << 10).unwrap();
    let read = first.batches().len();
    assert!((1..8).contains(&read), "{read} batches");
    assert_eq!(log.segments_snapshot()[0].verified_batches(), read);
    let second = log.read(first.next_offset(), 32 << 10).unwrap();
    let read = read + second.batches().len();
    // Everything after the second read is within 4 MiB: all 64.
    assert_eq!(verified_within(&log, 64), 64, "{read} read");
    // What a read returns is unchanged.
    let all = crate::log::LogRead::records(&log.read(0, 2 << 20).unwrap())
        .map(|r| r.unwrap().offset)
        .collect::<Vec<_>>();
    assert_eq!(all, (0..6400).collect::<Vec<i64>>());
}

/// Reads that do not follow one another, and reads by `pread`, have
/// nothing read ahead.
#[test]
fn only_sequential_mapped_reads_are_read_ahead() {
    let dir = tempfile::tempdir().unwrap();
    drop(log_of_batches(dir.path(), crate::ReadMode::Mmap));
    let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
    for offset in [0, 3000, 1000, 5000] {
        log.read(offset, 1).unwrap();
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(log.segments_snapshot()[0].verified_batches(), 4);
    drop(log);
    let config = LogConfig {
        read_mode: crate::ReadMode::Pread,
        ..LogConfig::default()
    };
    let log = PartitionLog::open(dir.path().join("t-0"), config).unwrap();
    let first = log.read(0, 32 << 10).unwrap();
    let second = log.read(first.next_offset(), 32 << 10).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        log.segments_snapshot()[0].verified_batches(),
        first.batches().len() + second.batches().len()
    );
}

/// A damaged batch ahead is not marked verified by read-ahead: the
/// sequential read that reaches it reports it, after every record before
/// it.
#[test]
fn read_ahead_never_hides_a_damaged_batch() {
    let dir = tempfile::tempdir().unwrap();
    // Closed cleanly: the open after the damage does not scan (and cut)
    // the segment's tail.
    log_of_batches(dir.path(), crate::ReadMode::Mmap)
        .close()
        .unwrap();
    let path = std::fs::read_dir(dir.path().join("t-0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "log"))
        .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(6)
        .position(|w| w == b"40:50:")
        .expect("batch 40's 50th record");
    bytes[at + 10] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let log = PartitionLog::open(dir.path().join("t-0"), LogConfig::default()).unwrap();
    let mut at = 0;
    let err = loop {
        match log.read(at, 32 << 10) {
            Ok(read) => {
                assert!(!read.is_empty(), "read past the damage at {at}");
                at = read.next_offset();
                // Give the read-ahead thread its turn before the next read.
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => break e,
        }
    };
    assert_eq!(at, 4000, "every batch before the damaged one");
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
}
