//! Retention, delete_records, compaction and their crash safety. Time is
//! injected (record timestamps and an explicit `now`), never slept.

use bytes::Bytes;
use kafkalite::{
    CleanupPolicy, CompactionPolicy, Compression, Consumer, ConsumerConfig, Durability, Error,
    LogConfig, OffsetAndMetadata, OffsetReset, PartitionLog, ReadMode, Record, RetentionPolicy,
    Store, StoreOptions, TopicConfig, TopicPartition,
};
use std::collections::HashMap;
use std::path::Path;
use std::time::Duration;

const T0: i64 = 1_700_000_000_000;
const HOUR: i64 = 3_600_000;

fn small() -> LogConfig {
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 2048;
    c.settings.segment_index_bytes = 1200;
    c.settings.index_interval_bytes = 256;
    c
}

/// Appends `n` records, record i at time T0 + i hours, 10 per batch.
fn fill(log: &PartitionLog, n: i64) {
    for chunk in (0..n).collect::<Vec<_>>().chunks(10) {
        let recs: Vec<Record> = chunk
            .iter()
            .map(|&i| Record::new(format!("value {i:>40}")).timestamp(T0 + i * HOUR))
            .collect();
        log.append_records(&recs, Compression::None, Durability::Written)
            .unwrap();
    }
}

fn offsets(log: &PartitionLog) -> Vec<i64> {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    loop {
        let r = log.read(at, 1 << 20).unwrap();
        if r.is_empty() {
            return out;
        }
        out.extend(r.records().map(|r| r.unwrap().offset));
        at = r.next_offset();
    }
}

fn policy(ms: Option<i64>, bytes: Option<u64>) -> RetentionPolicy {
    let mut p = RetentionPolicy::default();
    p.retention = ms.map(|m| Duration::from_millis(m as u64));
    p.retention_bytes = bytes;
    p
}

#[test]
fn time_retention_deletes_whole_old_segments_and_advances_the_log_start() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small()).unwrap();
    fill(&log, 200);
    let segments = log.segment_count();
    assert!(segments > 5);
    // Keep 100 hours: records 0..~99 are older.
    let now = T0 + 200 * HOUR;
    let out = log
        .apply_retention(&policy(Some(100 * HOUR), None), now)
        .unwrap();
    assert!(out.segments_deleted > 0);
    let start = log.log_start_offset();
    assert_eq!(start, log.segment_base_offsets()[0]);
    assert!(start > 50 && start <= 100, "start {start}");
    // Every remaining segment's newest record is young enough, but the first
    // remaining one holds an expired record (whole segments only).
    assert_eq!(offsets(&log), (start..200).collect::<Vec<_>>());
    assert!(matches!(
        log.read(start - 1, 100),
        Err(Error::OffsetOutOfRange { .. })
    ));
    // Files of deleted segments are gone, none left renamed.
    let names: Vec<String> = std::fs::read_dir(d.path().join("t-0"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".deleted")));
    assert!(!names.contains(&"00000000000000000000.log".to_owned()));
    // Idempotent.
    assert_eq!(
        log.apply_retention(&policy(Some(100 * HOUR), None), now)
            .unwrap()
            .segments_deleted,
        0
    );
}

#[test]
fn size_retention_keeps_the_partition_under_the_cap() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small()).unwrap();
    fill(&log, 300);
    let limit = 6000;
    log.apply_retention(&policy(None, Some(limit)), T0).unwrap();
    assert!(log.size() <= limit + 2048, "size {}", log.size());
    assert!(log.size() > limit - 2048);
    let start = log.log_start_offset();
    assert_eq!(offsets(&log), (start..300).collect::<Vec<_>>());
}

#[test]
fn an_expired_active_segment_is_rolled_first_so_one_segment_remains() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), LogConfig::default()).unwrap();
    fill(&log, 20);
    assert_eq!(log.segment_count(), 1);
    let out = log
        .apply_retention(&policy(Some(HOUR), None), T0 + 1000 * HOUR)
        .unwrap();
    assert_eq!(out.segments_deleted, 1);
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_start_offset(), 20);
    assert_eq!(log.log_end_offset(), 20);
    assert!(log.read(20, 100).unwrap().is_empty());
    fill(&log, 1);
    assert_eq!(offsets(&log), vec![20]);
}

#[test]
fn unsynced_fsync_records_above_the_high_watermark_are_never_deleted() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small()).unwrap();
    fill(&log, 50);
    // Size retention of 0 would delete everything below the high watermark
    // only; the log stays readable from its start.
    log.apply_retention(&policy(None, Some(0)), T0).unwrap();
    assert_eq!(log.log_start_offset(), 50);
    assert_eq!(log.log_end_offset(), 50);
    assert!(log.segment_count() >= 1);
}

#[test]
fn delete_records_raises_the_log_start_without_waiting_for_segments() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small()).unwrap();
    fill(&log, 100);
    let segs = log.segment_count();
    assert_eq!(log.delete_records(37).unwrap(), 37);
    assert_eq!(offsets(&log), (37..100).collect::<Vec<_>>());
    assert!(matches!(
        log.read(36, 10),
        Err(Error::OffsetOutOfRange { .. })
    ));
    assert!(log.segment_count() < segs, "segments below 37 are deleted");
    assert!(matches!(
        log.delete_records(101),
        Err(Error::OffsetOutOfRange { .. })
    ));
    // The new start survives a crash (drop without close).
    drop(log);
    let log = PartitionLog::open(d.path().join("t-0"), small()).unwrap();
    assert_eq!(log.log_start_offset(), 37);
}

/// Found by the `log_ops` fuzz target: a power loss that takes unsynced
/// records `delete_records` had already deleted must not lower the log
/// start (it was checkpointed); the log restarts at it, as Kafka's does.
#[test]
fn a_power_loss_below_a_delete_records_point_keeps_the_log_start() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let log = PartitionLog::open(&dir, small()).unwrap();
    fill(&log, 10);
    log.flush().unwrap();
    let active = *log.segment_base_offsets().last().unwrap();
    let path = dir.join(format!("{active:020}.log"));
    let synced_len = std::fs::metadata(&path).unwrap().len();
    log.append_records(
        // Timestamped like `fill`'s records, so it lands in the same segment.
        &[Record::new("unsynced").timestamp(T0 + 10 * HOUR)],
        Compression::None,
        Durability::Written,
    )
    .unwrap();
    assert_eq!(log.delete_records(11).unwrap(), 11);
    drop(log);
    // Power loss: the unsynced batch is gone.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(synced_len).unwrap();
    drop(f);
    let log = PartitionLog::open(&dir, small()).unwrap();
    assert_eq!(log.log_start_offset(), 11);
    assert_eq!(log.log_end_offset(), 11);
    assert!(matches!(
        log.read(10, 100),
        Err(Error::OffsetOutOfRange { .. })
    ));
    let info = log
        .append_records(
            &[Record::new("next")],
            Compression::None,
            Durability::Written,
        )
        .unwrap();
    assert_eq!(info.base_offset, 11);
    assert_eq!(offsets(&log), vec![11]);
    log.apply_retention(&RetentionPolicy::default(), T0)
        .unwrap();
    assert_eq!(log.segment_base_offsets(), vec![11]);
    log.close().unwrap();
    drop(log);
    let log = PartitionLog::open(&dir, small()).unwrap();
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (11, 12));
    assert_eq!(offsets(&log), vec![11]);
}

#[test]
fn a_reader_holding_a_deleted_segments_bytes_keeps_valid_bytes() {
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let d = tempfile::tempdir().unwrap();
        let mut c = small();
        c.read_mode = mode;
        let log = PartitionLog::open(d.path().join("t-0"), c).unwrap();
        fill(&log, 100);
        let held = log.read(0, 1 << 20).unwrap();
        log.delete_records(90).unwrap();
        assert!(log.segment_base_offsets()[0] > 0);
        let values: Vec<Bytes> = held.records().map(|r| r.unwrap().value.unwrap()).collect();
        assert_eq!(values[0], Bytes::from(format!("value {:>40}", 0)));
    }
}

#[test]
fn leftovers_of_an_interrupted_deletion_are_removed_at_open() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    {
        let log = PartitionLog::open(&dir, small()).unwrap();
        fill(&log, 50);
    }
    // A crash after renaming a segment to .deleted, before unlinking it.
    for ext in ["log", "index", "timeindex"] {
        let from = dir.join(format!("{:020}.{ext}", 0));
        std::fs::rename(&from, dir.join(format!("{:020}.{ext}.deleted", 0))).unwrap();
    }
    let log = PartitionLog::open(&dir, small()).unwrap();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".deleted")), "{names:?}");
    let start = log.log_start_offset();
    assert!(start > 0);
    assert_eq!(offsets(&log), (start..50).collect::<Vec<_>>());
}

fn keyed(key: &str, value: Option<&str>, ts: i64) -> Record {
    Record {
        timestamp: ts,
        key: Some(Bytes::copy_from_slice(key.as_bytes())),
        value: value.map(|v| Bytes::copy_from_slice(v.as_bytes())),
        headers: Vec::new(),
    }
}

fn latest_values(log: &PartitionLog) -> HashMap<String, (i64, Option<Bytes>)> {
    let mut m = HashMap::new();
    let mut at = log.log_start_offset();
    loop {
        let r = log.read(at, 1 << 20).unwrap();
        if r.is_empty() {
            return m;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            let k = String::from_utf8(rec.key.unwrap().to_vec()).unwrap();
            m.insert(k, (rec.offset, rec.value));
        }
        at = r.next_offset();
    }
}

#[test]
fn compaction_keeps_the_latest_value_per_key_and_offsets_unchanged() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let log = PartitionLog::open(&dir, small()).unwrap();
    let mut model: HashMap<String, (i64, Option<Bytes>)> = HashMap::new();
    for i in 0..400i64 {
        let key = format!("k{}", i % 13);
        let value = if i % 29 == 0 {
            None
        } else {
            Some(format!("v{i:>30}"))
        };
        let codec = if i % 2 == 0 {
            Compression::Lz4
        } else {
            Compression::None
        };
        let info = log
            .append_records(
                &[keyed(&key, value.as_deref(), T0 + i)],
                codec,
                Durability::Written,
            )
            .unwrap();
        model.insert(key, (info.base_offset, value.map(Bytes::from)));
    }
    let before = log.size();
    let active_base = *log.segment_base_offsets().last().unwrap();
    let mut p = CompactionPolicy::default();
    p.delete_retention = Duration::from_millis(u64::MAX / 4);
    let out = log.compact(&p, T0 + 400, true).unwrap();
    assert!(out.records_removed > 300, "{out:?}");
    assert!(log.size() < before / 4, "{} -> {}", before, log.size());
    assert_eq!(*log.segment_base_offsets().last().unwrap(), active_base);
    // Every key's latest value is what the model says, at its original offset.
    assert_eq!(latest_values(&log), model);
    let offs = offsets(&log);
    assert!(offs.windows(2).all(|w| w[0] < w[1]));
    // Survives a reopen (indexes rebuilt and trimmed).
    log.close().unwrap();
    drop(log);
    let log = PartitionLog::open(&dir, small()).unwrap();
    assert_eq!(latest_values(&log), model);
    assert_eq!(offsets(&log), offs);
}

#[test]
fn tombstones_are_removed_once_older_than_delete_retention() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small()).unwrap();
    for i in 0..200i64 {
        let value = if (100..110).contains(&i) {
            None
        } else {
            Some("x".repeat(40))
        };
        let key = if (100..110).contains(&i) {
            format!("k{}", i - 100)
        } else {
            format!("k{i}")
        };
        log.append_records(
            &[keyed(&key, value.as_deref(), T0 + i)],
            Compression::None,
            Durability::Written,
        )
        .unwrap();
    }
    let mut p = CompactionPolicy::default();
    p.delete_retention = Duration::from_millis(1000);
    // At T0 + 500 the tombstones (T0+100..110) are younger than 1 s: kept.
    log.compact(&p, T0 + 500, true).unwrap();
    let m = latest_values(&log);
    assert_eq!(m.get("k3").map(|v| v.1.clone()), Some(None));
    // Later they are older than delete.retention.ms: removed with their key.
    log.compact(&p, T0 + 100_000, true).unwrap();
    let m = latest_values(&log);
    assert!(!m.contains_key("k3"));
    assert!(m.contains_key("k50"));
}

#[test]
fn an_interrupted_compaction_is_finished_or_discarded_at_open() {
    let d = tempfile::tempdir().unwrap();
    let a = d.path().join("a-0");
    let b = d.path().join("b-0");
    {
        let log = PartitionLog::open(&a, small()).unwrap();
        for i in 0..300i64 {
            log.append_records(
                &[keyed(
                    &format!("k{}", i % 7),
                    Some(&format!("v{i:>20}")),
                    T0 + i,
                )],
                Compression::None,
                Durability::Written,
            )
            .unwrap();
        }
        log.close().unwrap();
    }
    copy_dir(&a, &b);
    let first = {
        let log = PartitionLog::open(&a, small()).unwrap();
        log.compact(&CompactionPolicy::default(), T0, true).unwrap();
        log.close().unwrap();
        // Segments whose records were all superseded are gone; the first
        // remaining one was rewritten.
        format!("{:020}.log", log.segment_base_offsets()[0])
    };
    assert_ne!(
        std::fs::read(a.join(&first)).unwrap(),
        std::fs::read(b.join(&first)).unwrap()
    );
    // b: a crash after the cleaned copy was committed as .swap.
    std::fs::copy(a.join(&first), b.join(format!("{first}.swap"))).unwrap();
    std::fs::write(b.join(format!("{first}.cleaned")), b"half-written").unwrap();
    let la = PartitionLog::open(&a, small()).unwrap();
    let lb = PartitionLog::open(&b, small()).unwrap();
    let names: Vec<String> = std::fs::read_dir(&b)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.ends_with(".swap") || n.ends_with(".cleaned")),
        "{names:?}"
    );
    assert_eq!(
        std::fs::read(a.join(&first)).unwrap(),
        std::fs::read(b.join(&first)).unwrap()
    );
    assert_eq!(latest_values(&la), latest_values(&lb));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() != ".lock" {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Random keyed appends and tombstones, compaction at random points:
    /// every key's latest value matches a HashMap model, offsets increase,
    /// and nothing live is lost.
    #[test]
    fn compaction_matches_a_hashmap_model(
        ops in proptest::collection::vec((0u8..20, proptest::option::weighted(0.85, 0u16..500), proptest::bool::ANY), 1..300),
        compact_every in 20usize..120,
    ) {
        let d = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(d.path().join("t-0"), small()).unwrap();
        let mut model: HashMap<String, (i64, Option<Bytes>)> = HashMap::new();
        let mut p = CompactionPolicy::default();
        p.delete_retention = Duration::from_millis(1_000_000);
        for (i, (k, v, lz4)) in ops.iter().enumerate() {
            let key = format!("key-{k}");
            let value = v.map(|v| format!("value-{v}-{}", "p".repeat(usize::from(v % 50))));
            let codec = if *lz4 { Compression::Lz4 } else { Compression::None };
            let info = log.append_records(&[keyed(&key, value.as_deref(), T0 + i as i64)], codec, Durability::Written).unwrap();
            model.insert(key, (info.base_offset, value.map(Bytes::from)));
            if i % compact_every == compact_every - 1 {
                log.compact(&p, T0 + i as i64, true).unwrap();
                proptest::prop_assert_eq!(&latest_values(&log), &model);
            }
        }
        log.compact(&p, T0, true).unwrap();
        proptest::prop_assert_eq!(&latest_values(&log), &model);
        let offs = offsets(&log);
        proptest::prop_assert!(offs.windows(2).all(|w| w[0] < w[1]));
    }
}

#[test]
fn store_retention_applies_topic_configs_and_consumers_reset_after_it() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut c = TopicConfig::default();
    c.log.segment_bytes = 2048;
    c.retention = Some(Duration::from_millis(10 * HOUR as u64));
    s.create_topic("t", 1, c).unwrap();
    for i in 0..100i64 {
        s.append(
            "t",
            0,
            &[Record::new(format!("v{i:>40}")).timestamp(T0 + i * HOUR)],
            Durability::Written,
        )
        .unwrap();
    }
    // A consumer that committed offset 5 before retention ran.
    let mut cfg = ConsumerConfig::with_group("g");
    cfg.auto_offset_reset = OffsetReset::Earliest;
    cfg.enable_auto_commit = false;
    let mut consumer = Consumer::new(&s, cfg).unwrap();
    consumer.assign(&[TopicPartition::new("t", 0)]).unwrap();
    consumer
        .commit_offsets(&[(TopicPartition::new("t", 0), OffsetAndMetadata::new(5))])
        .unwrap();
    let report = s.apply_retention_at(None, T0 + 100 * HOUR, false).unwrap();
    assert!(report.segments_deleted() > 0);
    let start = s.describe_topic("t").unwrap().partitions[0].log_start_offset;
    assert!(start > 5);
    // The committed offset fell below the log start: earliest applies.
    let mut cfg = ConsumerConfig::with_group("g");
    cfg.auto_offset_reset = OffsetReset::Earliest;
    let mut consumer = Consumer::new(&s, cfg).unwrap();
    consumer.subscribe(&["t"]).unwrap();
    let recs = consumer.poll(Duration::from_secs(5)).unwrap();
    assert_eq!(recs.get(0).unwrap().offset, start);
}

#[test]
fn group_floor_retention_keeps_unconsumed_segments_but_size_still_caps() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut c = TopicConfig::default();
    c.log.segment_bytes = 2048;
    c.retention = Some(Duration::from_millis(HOUR as u64));
    c.retain_for_groups = vec!["billing".into()];
    s.create_topic("q", 1, c.clone()).unwrap();
    for i in 0..100i64 {
        s.append(
            "q",
            0,
            &[Record::new(format!("job {i:>40}")).timestamp(T0 + i)],
            Durability::Written,
        )
        .unwrap();
    }
    let late = T0 + 1000 * HOUR;
    // Nothing consumed yet: time retention deletes nothing.
    assert_eq!(
        s.apply_retention_at(None, late, false)
            .unwrap()
            .segments_deleted(),
        0
    );
    s.reset_group_offsets("billing", "q", kafkalite::ResetTo::Offset(60))
        .unwrap();
    s.apply_retention_at(None, late, false).unwrap();
    let start = s.describe_topic("q").unwrap().partitions[0].log_start_offset;
    assert!(start > 0 && start <= 60, "start {start}");
    // retention.bytes still caps the size even though billing lags.
    c.retention_bytes = Some(2048);
    s.alter_topic_config("q", c).unwrap();
    s.apply_retention_at(None, late, false).unwrap();
    let p = &s.describe_topic("q").unwrap().partitions[0];
    assert!(p.log_start_offset > 60);
    assert!(p.size <= 4096);
}

#[test]
fn a_compacted_topic_and_the_offset_store_stay_small() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut c = TopicConfig::default();
    c.log.segment_bytes = 4096;
    c.cleanup_policy = CleanupPolicy::Compact;
    s.create_topic("kv", 1, c).unwrap();
    for i in 0..2000i64 {
        s.append(
            "kv",
            0,
            &[keyed(&format!("k{}", i % 10), Some("value"), T0 + i)],
            Durability::Written,
        )
        .unwrap();
    }
    let before = s.describe_topic("kv").unwrap().partitions[0].size;
    let report = s.apply_retention(Some("kv")).unwrap();
    assert!(report.bytes_freed() > 0);
    let after = s.describe_topic("kv").unwrap().partitions[0].size;
    assert!(after < before / 5, "{before} -> {after}");
}

/// Issue 17, finding 7: `Record::new` used to stamp timestamp 0, so default
/// retention (7 days) deleted records appended with `Fsync` a moment ago.
#[test]
fn a_record_without_a_timestamp_gets_the_append_time_and_survives_default_retention() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut config = TopicConfig::default();
    config.log.segment_bytes = 1024;
    store.create_topic("t", 1, config).unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for i in 0..20 {
        store
            .append(
                "t",
                0,
                &[Record::new(format!("record {i:>100}"))],
                Durability::Fsync,
            )
            .unwrap();
    }
    let log = store.partition("t", 0).unwrap();
    assert!(log.segment_count() > 2);
    let report = store.apply_retention(None).unwrap();
    assert_eq!(report.segments_deleted(), 0);
    assert_eq!(log.log_start_offset(), 0);
    let read = store.fetch("t", 0, 0, 1 << 20).unwrap();
    let first = read.records().next().unwrap().unwrap();
    assert_eq!(first.offset, 0);
    assert!(first.timestamp >= before, "{} < {before}", first.timestamp);
    // An explicit timestamp is kept as given.
    let info = store
        .append(
            "t",
            0,
            &[Record::new("old").timestamp(T0)],
            Durability::Written,
        )
        .unwrap();
    let read = store.fetch("t", 0, info.base_offset, 1 << 20).unwrap();
    assert_eq!(read.records().next().unwrap().unwrap().timestamp, T0);
}
