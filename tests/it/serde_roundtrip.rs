//! serde (feature `serde`): the public data types round-trip through JSON,
//! durations as integers with their unit in the name, enums as Kafka's
//! lowercase names, and bad input is refused.

use kafkalite::{
    CleanupPolicy, Compression, Consumer, ConsumerConfig, Durability, GroupDescription, LogConfig,
    OffsetAndMetadata, OffsetReset, ReadMode, Record, RecordMetadata, Store, StoreMetrics,
    StoreOptions, TopicConfig, TopicDescription, TopicPartition,
};
use serde_json::{json, Value};
use std::time::Duration;

fn roundtrip<T>(v: &T) -> (T, Value)
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    let text = serde_json::to_string(v).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    (serde_json::from_str(&text).unwrap(), value)
}

/// A store with a compacted topic, fsynced appends (latencies) and a
/// group member that committed everything; the member stays in the group.
fn busy_store() -> (tempfile::TempDir, Store, Consumer) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut cfg = TopicConfig::default();
    cfg.cleanup_policy = CleanupPolicy::CompactDelete;
    cfg.retention = None;
    cfg.log.flush_max_age = Some(Duration::from_millis(250));
    cfg.retain_for_groups = vec!["billing".into()];
    s.create_topic("events", 2, cfg).unwrap();
    for p in 0..2 {
        let recs: Vec<Record> = (0..10)
            .map(|i| Record::new(format!("{i}")).key("k"))
            .collect();
        s.append("events", p, &recs, Durability::Fsync).unwrap();
    }
    let mut cc = ConsumerConfig::with_group("billing");
    cc.auto_offset_reset = OffsetReset::Earliest;
    cc.enable_auto_commit = false;
    let mut c = Consumer::new(&s, cc).unwrap();
    c.subscribe(&["events"]).unwrap();
    let mut n = 0;
    while n < 20 {
        n += c.poll(Duration::from_secs(1)).unwrap().len();
    }
    c.commit_sync().unwrap();
    (d, s, c)
}

#[test]
fn a_topic_config_round_trips_with_kafka_names_and_millisecond_durations() {
    let mut cfg = TopicConfig::default();
    cfg.cleanup_policy = CleanupPolicy::CompactDelete;
    cfg.compression = Compression::Zstd;
    cfg.retention = None;
    cfg.log.flush_max_age = Some(Duration::from_millis(1500));
    cfg.retain_for_groups = vec!["g".into()];
    let (back, v) = roundtrip(&cfg);
    assert_eq!(back, cfg);
    assert_eq!(v["cleanup_policy"], "compact,delete");
    assert_eq!(v["compression"], "zstd");
    assert_eq!(v["retention_ms"], Value::Null);
    assert_eq!(v["flush_ms"], 1500);
    assert_eq!(v["delete_retention_ms"], 24 * 3600 * 1000);
    assert_eq!(v["segment_ms"], 7 * 24 * 3600 * 1000);
}

#[test]
fn a_partial_topic_config_takes_the_defaults_for_the_rest() {
    let cfg: TopicConfig =
        serde_json::from_value(json!({"retention_ms": 60000, "cleanup_policy": "compact"}))
            .unwrap();
    let mut want = TopicConfig::default();
    want.retention = Some(Duration::from_secs(60));
    want.cleanup_policy = CleanupPolicy::Compact;
    assert_eq!(cfg, want);
}

#[test]
fn a_topic_config_with_an_unknown_key_or_a_wrong_type_is_refused() {
    let unknown = serde_json::from_value::<TopicConfig>(json!({"retention.ms": 1}));
    assert!(unknown.unwrap_err().to_string().contains("unknown field"));
    let wrong = serde_json::from_value::<TopicConfig>(json!({"segment_bytes": "big"}));
    assert!(wrong.is_err());
    let negative = serde_json::from_value::<TopicConfig>(json!({"flush_ms": -1}));
    assert!(negative.is_err());
    let policy = serde_json::from_value::<TopicConfig>(json!({"cleanup_policy": "shred"}));
    assert!(policy.is_err());
}

#[test]
fn a_topic_config_is_one_flat_map_with_kafkas_millisecond_names() {
    let mut cfg = TopicConfig::default();
    cfg.log.segment_bytes = 4096;
    cfg.log.segment_max_age = Duration::from_secs(60);
    cfg.min_dirty_percent = 30;
    let v = serde_json::to_value(&cfg).unwrap();
    assert!(v.get("log").is_none(), "{v}");
    assert_eq!(v["segment_bytes"], 4096);
    assert_eq!(v["segment_ms"], 60_000);
    assert_eq!(v["min_dirty_percent"], 30);
    for unit_free in [
        "retention",
        "segment_max_age",
        "flush_max_age",
        "delete_retention",
    ] {
        assert!(v.get(unit_free).is_none(), "{unit_free}");
    }
    // The ratio's earlier JSON name still reads.
    let old: TopicConfig =
        serde_json::from_value(json!({"min_cleanable_dirty_ratio_percent": 30, "segment_bytes": 4096, "segment_ms": 60_000}))
            .unwrap();
    assert_eq!(old, cfg);
    // Unknown keys are refused beside the flattened log settings too.
    let unknown =
        serde_json::from_value::<TopicConfig>(json!({"segment_bytes": 4096, "segment.ms": 1}));
    assert!(unknown.unwrap_err().to_string().contains("unknown field"));
    let unknown = serde_json::from_value::<LogConfig>(json!({"retention_ms": 1}));
    assert!(unknown.unwrap_err().to_string().contains("unknown field"));
}

#[test]
fn the_enums_serialize_as_lowercase_names() {
    assert_eq!(serde_json::to_value(Durability::Fsync).unwrap(), "fsync");
    assert_eq!(serde_json::to_value(ReadMode::Pread).unwrap(), "pread");
    assert_eq!(serde_json::to_value(Compression::Lz4).unwrap(), "lz4");
    let d: Durability = serde_json::from_value(json!("written")).unwrap();
    assert_eq!(d, Durability::Written);
    assert!(serde_json::from_value::<Durability>(json!("Written")).is_err());
}

#[test]
fn a_topic_description_round_trips() {
    let (_d, s, _member) = busy_store();
    let desc = s.describe_topic("events").unwrap();
    let (back, v): (TopicDescription, _) = roundtrip(&desc);
    assert_eq!(back, desc);
    assert_eq!(v["name"], "events");
    assert_eq!(v["partitions"][1]["log_end_offset"], 10);
    assert_eq!(v["config"]["cleanup_policy"], "compact,delete");
}

#[test]
fn a_group_description_round_trips_with_members_and_lag() {
    let (_d, s, _member) = busy_store();
    let desc = s.describe_group("billing").unwrap();
    let (back, v): (GroupDescription, _) = roundtrip(&desc);
    assert_eq!(back, desc);
    assert_eq!(v["group"], "billing");
    assert_eq!(v["members"].as_array().unwrap().len(), 1);
    assert_eq!(v["offsets"][0]["partition"]["topic"], "events");
    assert_eq!(v["offsets"][0]["committed"], 10);
    assert_eq!(v["offsets"][0]["lag"], 0);
}

#[test]
fn a_metrics_snapshot_round_trips_with_nanosecond_latencies() {
    let (_d, s, _member) = busy_store();
    let m = s.metrics();
    let (back, v): (StoreMetrics, _) = roundtrip(&m);
    assert_eq!(back, m);
    let events: Vec<&Value> = v["partitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["partition"]["topic"] == "events")
        .collect();
    assert_eq!(events.len(), 2);
    let lat = &events[0]["fsync_latency"];
    assert!(lat["count"].as_u64().unwrap() >= 1);
    assert!(lat["p99_ns"].as_u64().unwrap() > 0);
    assert!(lat.get("p99").is_none());
    assert!(v["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["group"] == "billing"));
}

#[test]
fn record_metadata_topic_partition_and_offset_and_metadata_round_trip() {
    let meta = RecordMetadata {
        topic: "events".into(),
        partition: 3,
        offset: 42,
        timestamp: 1_700_000_000_000,
    };
    let (back, v) = roundtrip(&meta);
    assert_eq!(back, meta);
    assert_eq!(
        v,
        json!({"topic": "events", "partition": 3, "offset": 42, "timestamp": 1_700_000_000_000i64})
    );
    let tp = TopicPartition::new("events", 3);
    assert_eq!(roundtrip(&tp).0, tp);
    let om = OffsetAndMetadata::new(17);
    let (back, v) = roundtrip(&om);
    assert_eq!(back, om);
    assert_eq!(v["offset"], 17);
}

#[test]
fn store_options_and_log_config_round_trip_without_their_file_system() {
    let mut o = StoreOptions::default();
    o.auto_create_topics = true;
    o.default_partitions = 3;
    o.retention_check_interval = Duration::from_secs(30);
    o.read_mode = ReadMode::Pread;
    o.default_topic.retention_bytes = Some(1 << 20);
    let (back, v) = roundtrip(&o);
    assert_eq!(back, o);
    assert_eq!(v["retention_check_interval_ms"], 30_000);
    assert_eq!(v["read_mode"], "pread");
    assert_eq!(v["default_topic"]["retention_bytes"], 1 << 20);
    assert!(v.get("file_system").is_none());
    let partial: StoreOptions = serde_json::from_value(json!({"default_partitions": 8})).unwrap();
    assert_eq!(partial.default_partitions, 8);
    assert_eq!(
        partial.flush_check_interval,
        StoreOptions::default().flush_check_interval
    );
    assert!(serde_json::from_value::<StoreOptions>(json!({"file_system": "x"})).is_err());

    let mut c = LogConfig::default();
    c.settings.segment_bytes = 4096;
    c.settings.flush_max_age = Some(Duration::from_millis(20));
    let (back, v) = roundtrip(&c);
    assert_eq!(back, c);
    assert_eq!(v["flush_ms"], 20);
    assert_eq!(v["segment_ms"], 7 * 24 * 3600 * 1000);
}
