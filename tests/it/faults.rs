//! Injected I/O failures (feature `failpoints`): whatever fails, the log
//! stays consistent; a failed fsync poisons it until reopen and is never
//! retried; a failed write changes nothing visible.

use kafkalite::failpoints::{inject, FailOp};
use kafkalite::{
    Compression, Durability, Error, LogConfig, PartitionLog, Producer, ProducerConfig,
    ProducerRecord, Record, Store, StoreOptions, TopicConfig,
};
use std::path::Path;

fn rec(i: u32) -> Record {
    Record::new(format!("value-{i:>20}"))
}

fn values(log: &PartitionLog) -> Vec<(i64, String)> {
    let r = log.read(log.log_start_offset(), usize::MAX).unwrap();
    r.records()
        .map(|r| {
            let r = r.unwrap();
            (
                r.offset,
                String::from_utf8(r.value.unwrap().to_vec()).unwrap(),
            )
        })
        .collect()
}

fn expected(n: u32) -> Vec<(i64, String)> {
    (0..n)
        .map(|i| (i64::from(i), format!("value-{i:>20}")))
        .collect()
}

fn append(log: &PartitionLog, i: u32, d: Durability) -> kafkalite::Result<kafkalite::AppendInfo> {
    log.append_records(&[rec(i)], Compression::None, d)
}

fn log_size(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(format!("{:020}.log", 0)))
        .unwrap()
        .len()
}

#[test]
fn a_failed_fsync_poisons_the_log_until_reopen_and_is_not_retried() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    for i in 0..3 {
        append(&log, i, Durability::Fsync).unwrap();
    }
    let fsyncs = log.fsync_count();
    inject(FailOp::Fsync, &dir, 1, libc::EIO);
    assert!(matches!(
        append(&log, 3, Durability::Fsync),
        Err(Error::Io { op: "fsync", .. })
    ));
    // The unsynced record is not visible to readers (high watermark held).
    assert_eq!(log.high_watermark(), 3);
    assert_eq!(values(&log), expected(3));
    // Poisoned: later appends and flushes refuse, without another fsync.
    assert!(matches!(
        append(&log, 4, Durability::Written),
        Err(Error::Poisoned { .. })
    ));
    assert!(matches!(log.flush(), Err(Error::Poisoned { .. })));
    assert_eq!(log.fsync_count(), fsyncs + 1);
    drop(log);
    // Reopening recovers; everything acknowledged is there.
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    let got = values(&log);
    assert_eq!(&got[..3], &expected(3)[..]);
    append(&log, 9, Durability::Fsync).unwrap();
}

#[test]
fn a_failed_write_changes_nothing_visible_and_the_log_keeps_working() {
    for op in [FailOp::Write, FailOp::ShortWrite] {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("t-0");
        let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
        for i in 0..5 {
            append(&log, i, Durability::Written).unwrap();
        }
        let size = log_size(&dir);
        inject(op, &dir, 1, libc::EIO);
        assert!(matches!(
            append(&log, 5, Durability::Written),
            Err(Error::Io { op: "write", .. })
        ));
        assert_eq!(log.log_end_offset(), 5);
        assert_eq!(log.high_watermark(), 5);
        assert_eq!(
            log_size(&dir),
            size,
            "{op:?}: the partial write is cut back"
        );
        assert_eq!(values(&log), expected(5));
        // Not poisoned: the file was cut back to a batch boundary.
        append(&log, 5, Durability::Written).unwrap();
        assert_eq!(values(&log), expected(6));
        drop(log);
        let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
        assert_eq!(values(&log), expected(6));
    }
}

#[test]
fn a_full_disk_is_reported_as_such_and_appends_work_once_space_is_back() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    append(&log, 0, Durability::Written).unwrap();
    inject(FailOp::ShortWrite, &dir, 3, libc::ENOSPC);
    for _ in 0..3 {
        assert!(matches!(
            append(&log, 1, Durability::Written),
            Err(Error::DiskFull { .. })
        ));
    }
    assert_eq!(values(&log), expected(1));
    append(&log, 1, Durability::Fsync).unwrap();
    assert_eq!(values(&log), expected(2));
}

#[test]
fn a_write_whose_cut_back_also_fails_poisons_the_log() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    append(&log, 0, Durability::Written).unwrap();
    inject(FailOp::ShortWrite, &dir, 1, libc::EIO);
    inject(FailOp::CutBack, &dir, 1, libc::EIO);
    assert!(matches!(
        append(&log, 1, Durability::Written),
        Err(Error::Io { .. })
    ));
    // A torn half-batch may sit past the end: no append may follow it.
    assert!(matches!(
        append(&log, 2, Durability::Written),
        Err(Error::Poisoned { .. })
    ));
    assert_eq!(values(&log), expected(1));
    drop(log);
    // Recovery cuts the torn tail.
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(values(&log), expected(1));
    append(&log, 1, Durability::Written).unwrap();
    assert_eq!(values(&log), expected(2));
}

#[test]
fn a_producer_reports_a_failed_fsync_on_every_record_of_the_batch() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = ProducerConfig::default();
    c.durability = Durability::Fsync;
    c.linger = std::time::Duration::from_secs(3600);
    let p = Producer::new(&s, c).unwrap();
    inject(FailOp::Fsync, &d.path().join("t-0"), 1, libc::EIO);
    let handles: Vec<_> = (0..10)
        .map(|i| {
            p.send(ProducerRecord::new("t", format!("{i}")).partition(0))
                .unwrap()
        })
        .collect();
    assert!(p.flush().is_err());
    for h in handles {
        assert!(matches!(h.wait(), Err(Error::SendFailed { .. })));
    }
    assert_eq!(s.partition("t", 0).unwrap().high_watermark(), 0);
}
