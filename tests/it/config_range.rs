//! Settings at and beyond the edges of their range (issue 17, findings 4 and
//! 6): what `validate()` accepts survives close and reopen unchanged, what it
//! refuses gets a typed error naming the key, and durations beyond Kafka's
//! `LONG` range never wrap into "expire everything".

use kafkalite::{
    CleanupPolicy, Compression, Durability, Error, LogConfig, PartitionLog, Record,
    RetentionPolicy, Store, StoreOptions, TopicConfig, TOPIC_KEYS,
};
use proptest::prelude::*;
use std::time::Duration;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn a_retention_ms_beyond_kafkas_long_range_is_refused_naming_the_key() {
    for key in [
        "retention.ms",
        "segment.ms",
        "delete.retention.ms",
        "flush.ms",
        "retention.bytes",
        "flush.messages",
    ] {
        for value in ["18446744073709551615", "9223372036854775808"] {
            let mut c = TopicConfig::default();
            match c.set(key, value) {
                Err(Error::InvalidConfig { key: k, .. }) => assert_eq!(k, key),
                other => panic!("{key}={value}: {other:?}"),
            }
            assert_eq!(c, TopicConfig::default(), "{key}");
        }
    }
    let mut c = TopicConfig::default();
    c.retention = Some(Duration::from_millis(u64::MAX));
    assert!(matches!(
        c.validate(),
        Err(Error::InvalidConfig {
            key: "retention.ms",
            ..
        })
    ));
}

#[test]
fn a_retention_time_beyond_i64_milliseconds_keeps_every_segment() {
    let d = tempfile::tempdir().unwrap();
    let mut config = LogConfig::default();
    config.settings.segment_bytes = 1024;
    let log = PartitionLog::open(d.path().join("t-0"), config).unwrap();
    let now = now_ms();
    for i in 0..20 {
        let r = Record::new(format!("record {i:>100}")).timestamp(now);
        log.append_records(&[r], Compression::None, Durability::Written)
            .unwrap();
    }
    assert!(log.segment_count() > 2);
    let mut policy = RetentionPolicy::default();
    for huge in [Duration::from_millis(u64::MAX), Duration::MAX] {
        policy.retention = Some(huge);
        let out = log.apply_retention(&policy, now).unwrap();
        assert_eq!(out.segments_deleted, 0, "{huge:?}");
        assert_eq!(log.log_start_offset(), 0);
    }
}

#[test]
fn a_segment_ms_beyond_i64_milliseconds_is_refused_by_validate() {
    for huge in [Duration::from_millis(u64::MAX), Duration::MAX] {
        let mut c = TopicConfig::default();
        c.log.segment_max_age = huge;
        assert!(matches!(
            c.validate(),
            Err(Error::InvalidConfig {
                key: "segment.ms",
                ..
            })
        ));
        let mut l = LogConfig::default();
        l.settings.segment_max_age = huge;
        assert!(matches!(
            l.validate(),
            Err(Error::InvalidConfig {
                key: "segment.ms",
                ..
            })
        ));
    }
}

#[test]
fn a_sub_millisecond_segment_ms_is_refused_instead_of_being_saved_as_zero() {
    let d = tempfile::tempdir().unwrap();
    let store = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut c = TopicConfig::default();
    c.log.segment_max_age = Duration::from_micros(500);
    assert!(matches!(
        store.create_topic("t", 1, c.clone()),
        Err(Error::InvalidConfig {
            key: "segment.ms",
            ..
        })
    ));
    c.log.segment_max_age = Duration::from_micros(1500);
    assert!(matches!(
        c.validate(),
        Err(Error::InvalidConfig {
            key: "segment.ms",
            ..
        })
    ));
    let mut c = TopicConfig::default();
    c.min_dirty_percent = 200;
    assert!(matches!(
        store.create_topic("t", 1, c),
        Err(Error::InvalidConfig {
            key: "min.cleanable.dirty.ratio",
            ..
        })
    ));
    store.close().unwrap();
    drop(store);
    Store::open(d.path(), StoreOptions::default()).unwrap();
}

/// Mostly values in range (so the accepted path is well exercised), and
/// the edges and wild values that used to wrap or be cut.
fn duration_ms() -> impl Strategy<Value = Duration> {
    prop_oneof![
        6 => (1u64..10_000_000_000).prop_map(Duration::from_millis),
        1 => (0u64..=u64::MAX).prop_map(Duration::from_millis),
        1 => (0u64..=u64::MAX, 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
        1 => (0u64..10_000_000).prop_map(Duration::from_micros),
        1 => prop_oneof![
            Just(Duration::MAX),
            Just(Duration::ZERO),
            Just(Duration::from_millis(i64::MAX as u64)),
            Just(Duration::from_millis(i64::MAX as u64 - 1)),
        ],
    ]
}

fn u64_edge() -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => 1u64..1_000_000_000_000,
        1 => 0u64..=u64::MAX,
        1 => prop_oneof![
            Just(0),
            Just(i64::MAX as u64),
            Just(i64::MAX as u64 - 1),
            Just(i64::MAX as u64 + 1),
            Just(u64::MAX),
        ],
    ]
}

fn u32_edge(low: u32) -> impl Strategy<Value = u32> {
    prop_oneof![
        6 => low..1 << 20,
        1 => 0u32..=u32::MAX,
        1 => prop_oneof![Just(0), Just(low.saturating_sub(1)), Just(i32::MAX as u32), Just(i32::MAX as u32 + 1)],
    ]
}

fn group_name() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-z0-9._-]{1,12}",
        1 => ".{0,12}",
        1 => prop_oneof![
            Just(" lead".to_owned()),
            Just("a,b".to_owned()),
            Just("x\ny".to_owned()),
            Just(String::new()),
        ],
    ]
}

prop_compose! {
    fn any_config()(
        segment_bytes in u32_edge(128),
        segment_max_age in duration_ms(),
        // Index files are mapped to this size, but disk is reserved in
        // small steps: any size costs a case little.
        segment_index_bytes in u32_edge(24),
        index_interval_bytes in u32_edge(0),
        retention in proptest::option::of(duration_ms()),
        retention_bytes in proptest::option::of(u64_edge()),
        max_message_bytes in u32_edge(61),
        cleanup in 0u8..3,
        flush_messages in proptest::option::of(u64_edge()),
        flush_max_age in proptest::option::of(duration_ms()),
        delete_retention in duration_ms(),
        ratio in prop_oneof![6 => 0u8..=100, 1 => 0u8..=u8::MAX],
        groups in proptest::collection::vec(group_name(), 0..3),
    ) -> TopicConfig {
        let mut c = TopicConfig::default();
        c.log.segment_bytes = segment_bytes;
        c.log.segment_max_age = segment_max_age;
        c.log.segment_index_bytes = segment_index_bytes;
        c.log.index_interval_bytes = index_interval_bytes;
        c.retention = retention;
        c.retention_bytes = retention_bytes;
        c.log.max_message_bytes = max_message_bytes;
        c.cleanup_policy = [CleanupPolicy::Delete, CleanupPolicy::Compact, CleanupPolicy::CompactDelete][cleanup as usize];
        c.log.flush_messages = flush_messages;
        c.log.flush_max_age = flush_max_age;
        c.delete_retention = delete_retention;
        c.min_dirty_percent = ratio;
        c.retain_for_groups = groups;
        c
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]

    /// Every setting value `validate()` accepts survives close and reopen
    /// unchanged; every value it refuses is a typed error naming the key, and
    /// `create_topic` then changes nothing.
    #[test]
    fn every_setting_validate_accepts_survives_close_and_reopen_unchanged(config in any_config()) {
        let d = tempfile::tempdir().unwrap();
        let store = Store::open(d.path(), StoreOptions::default()).unwrap();
        match config.validate() {
            Ok(()) => {
                store.create_topic("t", 1, config.clone()).unwrap();
                store.close().unwrap();
                drop(store);
                let store = Store::open(d.path(), StoreOptions::default()).unwrap();
                prop_assert_eq!(&store.describe_topic("t").unwrap().config, &config);
                store.close().unwrap();
                drop(store);
                let ro = Store::open_read_only(d.path(), StoreOptions::default()).unwrap();
                prop_assert_eq!(&ro.describe_topic("t").unwrap().config, &config);
            }
            Err(Error::InvalidConfig { key, .. }) => {
                prop_assert!(TOPIC_KEYS.contains(&key), "{}", key);
                let refused = store.create_topic("t", 1, config.clone());
                prop_assert!(
                    matches!(&refused, Err(Error::InvalidConfig { key: k, .. }) if *k == key),
                    "{:?}", refused
                );
                prop_assert!(store.list_topics().is_empty());
            }
            Err(other) => prop_assert!(false, "untyped refusal: {other:?}"),
        }
    }

    /// Text values: what `set` accepts and `validate` then accepts reads back
    /// the same through `to_properties`.
    #[test]
    fn every_text_value_set_accepts_reads_back_the_same(
        key in proptest::sample::select(TOPIC_KEYS),
        value in prop_oneof![
            "-?[0-9]{1,20}",
            "[0-9]\\.[0-9]{1,4}",
            Just("compact,delete".to_owned()),
            ".{0,16}",
        ],
    ) {
        let mut c = TopicConfig::default();
        match c.set(key, &value) {
            Ok(()) => {
                if c.validate().is_ok() {
                    let mut d = TopicConfig::default();
                    for (k, v) in c.to_properties() {
                        d.set(k, &v).unwrap();
                    }
                    prop_assert_eq!(c, d);
                }
            }
            Err(Error::InvalidConfig { key: k, .. }) => {
                prop_assert_eq!(k, key);
                prop_assert_eq!(c, TopicConfig::default());
            }
            Err(other) => prop_assert!(false, "{key}={value:?}: {other:?}"),
        }
    }
}
