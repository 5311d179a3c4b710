//! Readers, appenders, retention and compaction on one log at once: no
//! reader ever sees a corrupt record, a record at the wrong offset, or
//! offsets going backwards; afterwards the log reopens to the same state.

use bytes::Bytes;
use kafkalite::{
    CompactionPolicy, Compression, Durability, Error, LogConfig, PartitionLog, Record,
    RetentionPolicy,
};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[test]
fn concurrent_appends_reads_retention_and_compaction_stay_consistent() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 8192;
    c.settings.segment_index_bytes = 4096;
    c.settings.index_interval_bytes = 512;
    let log = Arc::new(PartitionLog::open(&dir, c.clone()).unwrap());
    let written: Arc<Mutex<HashMap<i64, Bytes>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut threads = Vec::new();
    for t in 0..2u32 {
        let (log, written) = (Arc::clone(&log), Arc::clone(&written));
        threads.push(std::thread::spawn(move || {
            for i in 0..1500u32 {
                let value = Bytes::from(format!("t{t}-{i:>30}"));
                let rec = Record {
                    timestamp: i64::from(i),
                    key: Some(Bytes::from(format!("key-{}", i % 40))),
                    value: Some(value.clone()),
                    headers: Vec::new(),
                };
                let durability = if i % 50 == 0 {
                    Durability::Fsync
                } else {
                    Durability::Written
                };
                let codec = if t == 0 {
                    Compression::Lz4
                } else {
                    Compression::None
                };
                let info = log.append_records(&[rec], codec, durability).unwrap();
                written.lock().insert(info.base_offset, value);
            }
        }));
    }
    let mut readers = Vec::new();
    for _ in 0..2 {
        let (log, written, stop) = (Arc::clone(&log), Arc::clone(&written), Arc::clone(&stop));
        readers.push(std::thread::spawn(move || {
            let mut checked = 0u64;
            while !stop.load(Ordering::Acquire) {
                let mut at = log.log_start_offset();
                loop {
                    let r = match log.read(at, 64 << 10) {
                        Ok(r) => r,
                        // Retention moved the start under us: start again.
                        Err(Error::OffsetOutOfRange { .. }) => break,
                        Err(e) => panic!("read failed: {e}"),
                    };
                    if r.is_empty() {
                        break;
                    }
                    let mut last = at - 1;
                    for rec in r.records() {
                        let rec = rec.unwrap();
                        assert!(rec.offset > last, "offsets go backwards");
                        last = rec.offset;
                        if let Some(v) = written.lock().get(&rec.offset) {
                            assert_eq!(
                                rec.value.as_ref(),
                                Some(v),
                                "wrong record at {}",
                                rec.offset
                            );
                            checked += 1;
                        }
                    }
                    at = r.next_offset();
                }
            }
            checked
        }));
    }
    let cleaner = {
        let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut runs = 0;
            while !stop.load(Ordering::Acquire) {
                let mut p = CompactionPolicy::default();
                p.min_dirty_percent = 0;
                log.compact(&p, 10_000, true).unwrap();
                let mut r = RetentionPolicy::default();
                r.retention_bytes = Some(64 << 10);
                log.apply_retention(&r, 0).unwrap();
                runs += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            runs
        })
    };
    for t in threads {
        t.join().unwrap();
    }
    stop.store(true, Ordering::Release);
    let checked: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
    let runs = cleaner.join().unwrap();
    assert!(
        checked > 0 && runs > 0,
        "checked {checked}, cleaner runs {runs}"
    );
    assert_eq!(log.log_end_offset(), 3000);
    let before: Vec<(i64, Option<Bytes>)> = {
        let r = log.read(log.log_start_offset(), usize::MAX).unwrap();
        r.records()
            .map(|r| r.map(|r| (r.offset, r.value)).unwrap())
            .collect()
    };
    drop(log);
    let log = PartitionLog::open(&dir, c).unwrap();
    let after: Vec<(i64, Option<Bytes>)> = {
        let r = log.read(log.log_start_offset(), usize::MAX).unwrap();
        r.records()
            .map(|r| r.map(|r| (r.offset, r.value)).unwrap())
            .collect()
    };
    assert_eq!(before, after);
}
