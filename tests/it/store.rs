//! The store: topics, configs, locking, reopen.

use kafkalite::{CleanupPolicy, Durability, Error, Record, Store, StoreOptions, TopicConfig};

fn open(dir: &std::path::Path) -> Store {
    Store::open(dir, StoreOptions::default()).unwrap()
}

#[test]
fn topics_are_created_listed_described_and_deleted() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    s.create_topic("b", 2, TopicConfig::default()).unwrap();
    s.create_topic("a", 3, TopicConfig::default()).unwrap();
    assert_eq!(s.list_topics(), vec!["a", "b"]);
    assert!(d.path().join("a-0").is_dir() && d.path().join("a-2").is_dir());
    s.append(
        "a",
        2,
        &[Record::new("x"), Record::new("y")],
        Durability::Written,
    )
    .unwrap();
    let desc = s.describe_topic("a").unwrap();
    assert_eq!(desc.partitions.len(), 3);
    assert_eq!(desc.partitions[2].log_end_offset, 2);
    assert_eq!(desc.partitions[2].segments, 1);
    assert!(desc.partitions[2].size > 0);
    assert_eq!(desc.partitions[0].log_end_offset, 0);
    s.delete_topic("a").unwrap();
    assert_eq!(s.list_topics(), vec!["b"]);
    assert!(!d.path().join("a-0").exists());
    assert!(matches!(
        s.describe_topic("a"),
        Err(Error::UnknownTopic { .. })
    ));
    // A recreated topic starts empty.
    s.create_topic("a", 1, TopicConfig::default()).unwrap();
    assert_eq!(
        s.describe_topic("a").unwrap().partitions[0].log_end_offset,
        0
    );
}

#[test]
fn bad_topic_requests_get_typed_errors_and_change_nothing() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    for name in ["", ".", "..", "../escape", "a/b", "sp ace"] {
        assert!(
            matches!(
                s.create_topic(name, 1, TopicConfig::default()),
                Err(Error::InvalidTopicName { .. })
            ),
            "{name:?}"
        );
    }
    assert!(matches!(
        s.create_topic("t", 0, TopicConfig::default()),
        Err(Error::InvalidConfig { .. })
    ));
    let mut bad = TopicConfig::default();
    bad.log.segment_bytes = 1;
    assert!(matches!(
        s.create_topic("t", 1, bad),
        Err(Error::InvalidConfig {
            key: "segment.bytes",
            ..
        })
    ));
    assert!(s.list_topics().is_empty());
    s.create_topic("t", 2, TopicConfig::default()).unwrap();
    assert!(matches!(
        s.create_topic("t", 2, TopicConfig::default()),
        Err(Error::TopicExists { .. })
    ));
    assert!(matches!(
        s.append("nope", 0, &[Record::new("x")], Durability::Written),
        Err(Error::UnknownTopic { .. })
    ));
    assert!(matches!(
        s.append("t", 2, &[Record::new("x")], Durability::Written),
        Err(Error::UnknownPartition {
            partition: 2,
            partitions: 2,
            ..
        })
    ));
    assert!(matches!(
        s.add_partitions("t", 2),
        Err(Error::InvalidConfig { .. })
    ));
    assert!(matches!(
        s.delete_topic("nope"),
        Err(Error::UnknownTopic { .. })
    ));
    let entries: Vec<_> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with('.') && n != "topics.meta")
        .collect();
    let mut entries = entries;
    entries.sort();
    assert_eq!(entries, vec!["__consumer_offsets-0", "t-0", "t-1"]);
}

#[test]
fn topics_configs_and_data_survive_close_and_reopen() {
    let d = tempfile::tempdir().unwrap();
    let mut config = TopicConfig::default();
    config.retention_bytes = Some(1 << 20);
    config.cleanup_policy = CleanupPolicy::CompactDelete;
    {
        let s = open(d.path());
        s.create_topic("t", 2, config.clone()).unwrap();
        s.append("t", 1, &[Record::new("x")], Durability::Written)
            .unwrap();
        s.add_partitions("t", 4).unwrap();
        s.append("t", 3, &[Record::new("y")], Durability::Written)
            .unwrap();
        s.close().unwrap();
        assert!(matches!(s.partition_count("t"), Err(Error::Closed)));
    }
    let s = open(d.path());
    let desc = s.describe_topic("t").unwrap();
    assert_eq!(desc.config, config);
    assert_eq!(desc.partitions.len(), 4);
    assert_eq!(desc.partitions[1].log_end_offset, 1);
    assert_eq!(desc.partitions[3].log_end_offset, 1);
}

#[test]
fn data_survives_dropping_the_store_without_close() {
    let d = tempfile::tempdir().unwrap();
    {
        let s = open(d.path());
        s.create_topic("t", 1, TopicConfig::default()).unwrap();
        for i in 0..100 {
            s.append("t", 0, &[Record::new(format!("v{i}"))], Durability::Written)
                .unwrap();
        }
    }
    let s = open(d.path());
    assert_eq!(
        s.describe_topic("t").unwrap().partitions[0].log_end_offset,
        100
    );
    let r = s.fetch("t", 0, 42, 1 << 20).unwrap();
    let first = r.records().next().unwrap().unwrap();
    assert_eq!(first.offset, 42);
    assert_eq!(first.value.as_deref(), Some(&b"v42"[..]));
}

#[test]
fn a_second_open_is_locked_until_the_first_closes() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    assert!(matches!(
        Store::open(d.path(), StoreOptions::default()),
        Err(Error::Locked { .. })
    ));
    s.close().unwrap();
    drop(s);
    open(d.path());
}

#[test]
fn a_second_process_cannot_open_a_locked_store() {
    // flock locks conflict across processes: a child sees Locked.
    if let Ok(dir) = std::env::var("KAFKALITE_LOCK_CHILD") {
        let r = Store::open(&dir, StoreOptions::default());
        std::process::exit(if matches!(r, Err(Error::Locked { .. })) {
            0
        } else {
            1
        });
    }
    let d = tempfile::tempdir().unwrap();
    let _s = open(d.path());
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "store::a_second_process_cannot_open_a_locked_store",
            "--nocapture",
        ])
        .env("KAFKALITE_LOCK_CHILD", d.path())
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn auto_create_is_off_by_default_and_creates_when_enabled() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    assert!(matches!(
        s.append("auto", 0, &[Record::new("x")], Durability::Written),
        Err(Error::UnknownTopic { .. })
    ));
    s.close().unwrap();
    drop(s);
    let mut o = StoreOptions::default();
    o.auto_create_topics = true;
    o.default_partitions = 3;
    let s = Store::open(d.path(), o).unwrap();
    s.append("auto", 2, &[Record::new("x")], Durability::Written)
        .unwrap();
    assert_eq!(s.partition_count("auto").unwrap(), 3);
    assert!(matches!(
        s.append("bad/name", 0, &[Record::new("x")], Durability::Written),
        Err(Error::InvalidTopicName { .. })
    ));
}

#[test]
fn a_damaged_topic_metadata_file_is_reported_not_ignored() {
    let d = tempfile::tempdir().unwrap();
    {
        let s = open(d.path());
        s.create_topic("t", 1, TopicConfig::default()).unwrap();
        s.close().unwrap();
    }
    let p = d.path().join("topics.meta");
    let mut b = std::fs::read(&p).unwrap();
    b[20] ^= 1;
    std::fs::write(&p, b).unwrap();
    assert!(matches!(
        Store::open(d.path(), StoreOptions::default()),
        Err(Error::Corrupt { .. })
    ));
}

#[test]
fn altered_configs_persist() {
    let d = tempfile::tempdir().unwrap();
    {
        let s = open(d.path());
        s.create_topic("t", 1, TopicConfig::default()).unwrap();
        let mut c = s.describe_topic("t").unwrap().config;
        c.set("retention.ms", "1000").unwrap();
        s.alter_topic_config("t", c).unwrap();
    }
    let s = open(d.path());
    assert_eq!(
        s.describe_topic("t").unwrap().config.retention,
        Some(std::time::Duration::from_secs(1))
    );
}

/// Issue 17, finding 14: `close` kept the directory locks while a producer,
/// a consumer or a partition handle was alive, so a reopen in the same
/// process failed with `Locked`. Now close releases them, and the old
/// handles' calls fail with `Closed`.
#[test]
fn a_closed_store_reopens_in_the_same_process_while_its_producers_and_consumers_are_alive() {
    use kafkalite::{
        Consumer, ConsumerConfig, OffsetReset, Producer, ProducerConfig, ProducerRecord,
    };
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    s.create_topic("t", 2, TopicConfig::default()).unwrap();
    let producer = Producer::new(&s, ProducerConfig::default()).unwrap();
    for i in 0..10 {
        producer
            .send(ProducerRecord::new("t", format!("v{i}")).partition(i % 2))
            .unwrap();
    }
    producer.flush().unwrap();
    let mut config = ConsumerConfig::with_group("g");
    config.auto_offset_reset = OffsetReset::Earliest;
    let mut consumer = Consumer::new(&s, config).unwrap();
    consumer.subscribe(&["t"]).unwrap();
    assert!(!consumer
        .poll(std::time::Duration::from_secs(5))
        .unwrap()
        .is_empty());
    let log = s.partition("t", 0).unwrap();
    s.close().unwrap();
    let s2 = Store::open(d.path(), StoreOptions::default()).unwrap();
    assert!(matches!(
        producer.send(ProducerRecord::new("t", "late").partition(0)),
        Err(Error::Closed)
    ));
    assert!(matches!(
        consumer.poll(std::time::Duration::from_millis(10)),
        Err(Error::Closed)
    ));
    assert!(matches!(
        log.append_records(
            &[Record::new("late")],
            kafkalite::Compression::None,
            Durability::Written
        ),
        Err(Error::Closed)
    ));
    let total: i64 = s2
        .describe_topic("t")
        .unwrap()
        .partitions
        .iter()
        .map(|p| p.log_end_offset)
        .sum();
    assert_eq!(total, 10);
    s2.append("t", 0, &[Record::new("new")], Durability::Written)
        .unwrap();
    drop((producer, consumer, log));
    s2.close().unwrap();
}

/// Found while fixing finding 14: with `auto.create.topics.enable`,
/// growing or altering an unknown topic auto-created it under the metadata
/// lock it already held, and hung.
#[test]
fn growing_or_altering_an_unknown_topic_with_auto_create_is_an_error_not_a_hang() {
    let d = tempfile::tempdir().unwrap();
    let mut o = StoreOptions::default();
    o.auto_create_topics = true;
    let s = Store::open(d.path(), o).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let s2 = s.clone();
    std::thread::spawn(move || {
        let grow = s2.add_partitions("nope", 3);
        let alter = s2.alter_topic_config("nope2", TopicConfig::default());
        tx.send((grow, alter)).unwrap();
    });
    let (grow, alter) = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("add_partitions/alter_topic_config hung");
    assert!(matches!(grow, Err(Error::UnknownTopic { .. })), "{grow:?}");
    assert!(
        matches!(alter, Err(Error::UnknownTopic { .. })),
        "{alter:?}"
    );
    assert!(s.list_topics().is_empty());
}

/// Issue 17, finding 16: partition directories a crash left behind in
/// `create_topic` or `add_partitions` (not in `topics.meta`) stayed forever;
/// open now removes them, and only them.
#[test]
fn open_removes_partition_directories_that_a_crash_left_outside_the_metadata() {
    let d = tempfile::tempdir().unwrap();
    let s = open(d.path());
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    s.append("t", 0, &[Record::new("keep")], Durability::Written)
        .unwrap();
    s.close().unwrap();
    drop(s);
    for stray in ["ghost-0", "ghost-1", "t-1", "t-7"] {
        let dir = d.path().join(stray);
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("00000000000000000000.log"), b"").unwrap();
    }
    // Not partition directories: left alone.
    for other in ["notes", "a b-0", "t-x"] {
        std::fs::create_dir(d.path().join(other)).unwrap();
    }
    let s = open(d.path());
    let mut left: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| d.path().join(n).is_dir())
        .collect();
    left.sort();
    assert_eq!(
        left,
        vec!["__consumer_offsets-0", "a b-0", "notes", "t-0", "t-x"]
    );
    assert_eq!(
        s.describe_topic("t").unwrap().partitions[0].log_end_offset,
        1
    );
}
