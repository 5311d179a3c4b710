//! The `metrics` feature: the snapshot through the `metrics` facade, read
//! back with metrics-util's debugging recorder.

use kafkalite::{
    describe_metrics, Consumer, ConsumerConfig, Durability, Error, MetricsPublisher,
    OffsetAndMetadata, Record, Store, StoreOptions, TopicConfig, TopicPartition,
};
use metrics::Unit;
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

type Key = (String, Vec<(String, String)>);

fn read(s: &Snapshotter) -> BTreeMap<Key, (Option<Unit>, DebugValue)> {
    s.snapshot()
        .into_vec()
        .into_iter()
        .map(|(k, unit, _, v)| {
            let key = k.key();
            let mut labels: Vec<(String, String)> = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            labels.sort();
            ((key.name().to_owned(), labels), (unit, v))
        })
        .collect()
}

fn key(name: &str, labels: &[(&str, &str)]) -> Key {
    let mut l: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    l.sort();
    (name.to_owned(), l)
}

fn gauge(m: &BTreeMap<Key, (Option<Unit>, DebugValue)>, k: &Key) -> f64 {
    match m.get(k) {
        Some((_, DebugValue::Gauge(v))) => v.into_inner(),
        other => panic!("{k:?}: {other:?}"),
    }
}

fn counter(m: &BTreeMap<Key, (Option<Unit>, DebugValue)>, k: &Key) -> u64 {
    match m.get(k) {
        Some((_, DebugValue::Counter(v))) => *v,
        other => panic!("{k:?}: {other:?}"),
    }
}

fn store() -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("events", 2, TopicConfig::default()).unwrap();
    let recs: Vec<Record> = (0..10).map(|i| Record::new(format!("{i}"))).collect();
    s.append("events", 0, &recs, Durability::Fsync).unwrap();
    let mut c = Consumer::new(&s, ConsumerConfig::with_group("billing")).unwrap();
    c.assign(&[TopicPartition::new("events", 0)]).unwrap();
    c.commit_offsets(&[(TopicPartition::new("events", 0), OffsetAndMetadata::new(4))])
        .unwrap();
    (d, s)
}

#[test]
fn publish_sets_partition_gauges_counters_latency_quantiles_and_group_lag() {
    let (_d, s) = store();
    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        describe_metrics();
        s.metrics().publish();
    });
    let m = read(&snap);
    let p0 = [("topic", "events"), ("partition", "0")];
    let p1 = [("topic", "events"), ("partition", "1")];
    assert_eq!(
        gauge(&m, &key("kafkalite_partition_log_end_offset", &p0)),
        10.0
    );
    assert_eq!(
        gauge(&m, &key("kafkalite_partition_high_watermark", &p0)),
        10.0
    );
    assert_eq!(
        gauge(&m, &key("kafkalite_partition_log_end_offset", &p1)),
        0.0
    );
    assert_eq!(gauge(&m, &key("kafkalite_partition_segments", &p0)), 1.0);
    let size = key("kafkalite_partition_size_bytes", &p0);
    assert!(gauge(&m, &size) > 0.0);
    assert_eq!(m[&size].0, Some(Unit::Bytes));
    assert_eq!(
        counter(&m, &key("kafkalite_partition_appends_total", &p0)),
        1
    );
    assert!(counter(&m, &key("kafkalite_partition_fsyncs_total", &p0)) >= 1);
    assert_eq!(
        counter(&m, &key("kafkalite_partition_appends_total", &p1)),
        0
    );
    let q99 = [
        ("topic", "events"),
        ("partition", "0"),
        ("quantile", "0.99"),
    ];
    let fsync_p99 = key("kafkalite_partition_fsync_latency_seconds", &q99);
    assert!(gauge(&m, &fsync_p99) > 0.0);
    assert_eq!(m[&fsync_p99].0, Some(Unit::Seconds));
    let g = [
        ("group", "billing"),
        ("topic", "events"),
        ("partition", "0"),
    ];
    assert_eq!(gauge(&m, &key("kafkalite_group_committed_offset", &g)), 4.0);
    assert_eq!(gauge(&m, &key("kafkalite_group_lag", &g)), 6.0);
}

#[test]
fn the_background_publisher_follows_the_store_and_stops_when_told() {
    let (_d, s) = store();
    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    // The only test that installs the global recorder.
    recorder.install().unwrap();
    let publisher = MetricsPublisher::start(&s, Duration::from_millis(20)).unwrap();
    let end = key(
        "kafkalite_partition_log_end_offset",
        &[("topic", "events"), ("partition", "1")],
    );
    s.append(
        "events",
        1,
        &[Record::new("x"), Record::new("y")],
        Durability::Written,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while read(&snap).get(&end).map(|(_, v)| v) != Some(&DebugValue::Gauge(2.0.into())) {
        assert!(
            Instant::now() < deadline,
            "the publisher never published the append"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    publisher.stop();
    // The debugging recorder's snapshot takes the values out (gauges read
    // 0 until set again): after this one, nothing may set them.
    let _ = read(&snap);
    s.append("events", 1, &[Record::new("z")], Durability::Written)
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(gauge(&read(&snap), &end), 0.0, "published after stop");
}

#[test]
fn a_zero_publish_interval_is_refused() {
    let (_d, s) = store();
    let r = MetricsPublisher::start(&s, Duration::ZERO);
    assert!(matches!(r, Err(Error::InvalidConfig { .. })), "{r:?}");
}
