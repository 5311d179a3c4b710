//! Segments written by Kafka's transactional producers (the `transactional`
//! vector: producer 1000's transaction committed, producer 2000's aborted,
//! with their COMMIT and ABORT control batches): markers never reach
//! applications, and `read_committed` skips exactly the aborted records.

use bytes::Bytes;
use kafkalite::{
    BatchBuilder, CompactionPolicy, Compression, Consumer, ConsumerConfig, ControlRecordType,
    Durability, IsolationLevel, LogConfig, PartitionLog, Record, Store, StoreOptions, TopicConfig,
    TopicPartition,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const SEGMENT: &str = "00000000000000000000.log";

fn vector() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transactional")
}

fn expected() -> Value {
    serde_json::from_slice(&std::fs::read(vector().join("expected.json")).unwrap()).unwrap()
}

/// Offsets of the data records, all of them or only the committed ones.
fn data_offsets(committed_only: bool) -> Vec<i64> {
    let e = expected();
    let aborted: Vec<i64> = e["aborted_offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    e["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["control"].as_bool().unwrap())
        .map(|r| r["offset"].as_i64().unwrap())
        .filter(|o| !committed_only || !aborted.contains(o))
        .collect()
}

/// A partition directory holding only the vector's segment (recovery
/// rebuilds its indexes on open).
pub(crate) fn partition_with_vector(root: &Path) -> PathBuf {
    let dir = root.join("t-0");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(vector().join(SEGMENT), dir.join(SEGMENT)).unwrap();
    dir
}

/// A store whose topic `t` holds the vector as its one partition.
fn store_with_vector(root: &Path) -> Store {
    let store = Store::open(root, StoreOptions::default()).unwrap();
    store.create_topic("t", 1, TopicConfig::default()).unwrap();
    store.close().unwrap();
    drop(store);
    let dir = root.join("t-0");
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_file() && p.file_name().unwrap() != ".lock" {
            std::fs::remove_file(p).unwrap();
        }
    }
    std::fs::copy(vector().join(SEGMENT), dir.join(SEGMENT)).unwrap();
    Store::open(root, StoreOptions::default()).unwrap()
}

fn consume_all(store: &Store, isolation: IsolationLevel) -> (Vec<i64>, i64) {
    let mut c = ConsumerConfig::default();
    c.isolation_level = isolation;
    c.max_poll_records = 2;
    let mut consumer = Consumer::new(store, c).unwrap();
    let tp = TopicPartition::new("t", 0);
    consumer.assign(std::slice::from_ref(&tp)).unwrap();
    consumer.seek(&tp, 0).unwrap();
    let mut got = Vec::new();
    for _ in 0..50 {
        let polled = consumer.poll(Duration::from_millis(20)).unwrap();
        if polled.is_empty() && consumer.position(&tp).unwrap() >= 13 {
            break;
        }
        got.extend(polled.iter().map(|r| r.offset));
    }
    let position = consumer.position(&tp).unwrap();
    (got, position)
}

#[test]
fn control_records_never_reach_poll_and_their_offsets_are_passed() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_vector(d.path());
    let (got, position) = consume_all(&store, IsolationLevel::ReadUncommitted);
    assert_eq!(got, data_offsets(false));
    assert!(!got.contains(&9) && !got.contains(&11));
    assert_eq!(position, 13);
}

#[test]
fn read_committed_skips_exactly_the_aborted_records() {
    let d = tempfile::tempdir().unwrap();
    let store = store_with_vector(d.path());
    let (got, position) = consume_all(&store, IsolationLevel::ReadCommitted);
    assert_eq!(got, data_offsets(true));
    for aborted in [5, 6, 10] {
        assert!(!got.contains(&aborted), "{aborted}");
    }
    assert_eq!(position, 13);
}

#[test]
fn log_reads_leave_out_control_records_and_read_committed_leaves_out_aborted_ones() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(partition_with_vector(d.path()), LogConfig::default()).unwrap();
    assert_eq!(log.log_end_offset(), 13);
    let offsets = |read: kafkalite::LogRead| -> Vec<i64> {
        read.records().map(|r| r.unwrap().offset).collect()
    };
    assert_eq!(offsets(log.read(0, 1 << 20).unwrap()), data_offsets(false));
    assert_eq!(
        offsets(log.read_committed(0, 1 << 20).unwrap()),
        data_offsets(true)
    );
    // Every start offset, and reads of one batch at a time, agree.
    for from in 0..13 {
        let want: Vec<i64> = data_offsets(true)
            .into_iter()
            .filter(|&o| o >= from)
            .collect();
        let mut got = Vec::new();
        let mut at = from;
        while at < 13 {
            let read = log.read_committed(at, 1).unwrap();
            assert!(
                read.next_offset() > at,
                "read_committed at {at} moved nowhere"
            );
            got.extend(
                read.records()
                    .map(|r| r.unwrap().offset)
                    .filter(|&o| o >= from),
            );
            at = read.next_offset();
        }
        assert_eq!(got, want, "from {from}");
    }
    assert_eq!(log.last_stable_offset().unwrap(), 13);
    let aborted = log.aborted_transactions(0, 13).unwrap();
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (
            aborted[0].producer_id,
            aborted[0].first_offset,
            aborted[0].last_offset
        ),
        (2000, 5, 11)
    );
}

#[test]
fn an_open_transaction_holds_read_committed_at_its_first_offset_until_its_marker() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(partition_with_vector(d.path()), LogConfig::default()).unwrap();
    // Producer 4000 opens a transaction at 13; a plain batch follows at 14.
    let mut b = BatchBuilder::new(Compression::Zstd)
        .producer(4000, 0, 0)
        .transactional(true);
    b.push(&Record::new("open").timestamp(1));
    log.append(&mut b.build().to_vec(), Durability::Written)
        .unwrap();
    let mut b = BatchBuilder::new(Compression::None);
    b.push(&Record::new("plain").timestamp(2));
    log.append(&mut b.build().to_vec(), Durability::Written)
        .unwrap();
    assert_eq!(log.last_stable_offset().unwrap(), 13);
    let read = log.read_committed(13, 1 << 20).unwrap();
    assert_eq!(read.records().count(), 0);
    assert_eq!(read.next_offset(), 13);
    // Uncommitted reads see both.
    assert_eq!(log.read(13, 1 << 20).unwrap().records().count(), 2);
    let mut marker =
        BatchBuilder::end_transaction_marker(0, 4000, 0, ControlRecordType::Commit, 1, 3).to_vec();
    log.append(&mut marker, Durability::Written).unwrap();
    assert_eq!(log.last_stable_offset().unwrap(), 16);
    let got: Vec<Bytes> = log
        .read_committed(13, 1 << 20)
        .unwrap()
        .records()
        .map(|r| r.unwrap().value.unwrap())
        .collect();
    assert_eq!(got, vec![Bytes::from("open"), Bytes::from("plain")]);
}

#[test]
fn compaction_keeps_markers_and_committed_data_and_removes_aborted_data() {
    let d = tempfile::tempdir().unwrap();
    let mut config = LogConfig::default();
    config.settings.segment_bytes = 1024;
    let log = PartitionLog::open(partition_with_vector(d.path()), config).unwrap();
    // Roll past the vector's segment so compaction may clean it.
    let mut b = BatchBuilder::new(Compression::None);
    b.push(&Record::new(vec![b'x'; 400]).key("filler").timestamp(1));
    log.append(&mut b.build().to_vec(), Durability::Written)
        .unwrap();
    assert_eq!(log.segment_count(), 2);
    let before = log.read_committed(0, 1 << 20).unwrap();
    let committed: Vec<i64> = before.records().map(|r| r.unwrap().offset).collect();
    let outcome = log.compact(&CompactionPolicy::default(), 0, true).unwrap();
    assert_eq!(
        outcome.records_removed, 3,
        "the aborted transaction's records"
    );
    let after: Vec<i64> = log
        .read(0, 1 << 20)
        .unwrap()
        .records()
        .map(|r| r.unwrap().offset)
        .collect();
    assert_eq!(
        after, committed,
        "uncommitted reads no longer see aborted data"
    );
    let markers: Vec<_> = log
        .read(0, 1 << 20)
        .unwrap()
        .batches()
        .iter()
        .filter_map(|b| b.control_record().unwrap())
        .map(|m| (m.offset, m.kind))
        .collect();
    assert_eq!(
        markers,
        vec![
            (9, ControlRecordType::Commit),
            (11, ControlRecordType::Abort)
        ]
    );
    log.close().unwrap();
}

#[test]
fn for_each_record_sees_what_records_returns_from_every_offset() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(partition_with_vector(d.path()), LogConfig::default()).unwrap();
    for from in 0..13 {
        let read = log.read(from, 1 << 20).unwrap();
        let owned: Vec<kafkalite::LogRecord> = read.records().map(|r| r.unwrap()).collect();
        let mut viewed = Vec::new();
        let n = read
            .for_each_record(|v| viewed.push(v.to_log_record()))
            .unwrap();
        assert_eq!(n, owned.len());
        assert_eq!(viewed, owned, "from {from}");
    }
}
