//! Kafka `.properties` files: the seed's broker, producer and consumer
//! configurations load as written, field by field, with the network-only
//! keys reported as ignored; unknown keys and bad values are errors.

use kafkalite::{
    CleanupPolicy, Compression, Consumer, ConsumerConfig, Durability, Error, IgnoredKey,
    OffsetReset, Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig,
};
use std::time::Duration;

const SEED_BROKER: &str = include_str!("../data/seed-broker.properties");
const SEED_PRODUCER: &str = include_str!("../data/seed-producer.properties");
const SEED_CONSUMER: &str = include_str!("../data/seed-consumer.properties");

fn keys(ignored: &[IgnoredKey]) -> Vec<&str> {
    ignored.iter().map(|i| i.key.as_str()).collect()
}

#[test]
fn the_seed_data_files_are_the_seed_text() {
    // Spot checks that the copies kept the seed's quirks.
    assert!(SEED_BROKER.contains("auto.create.topics.enable = false\n"));
    assert!(SEED_PRODUCER.contains("#batch.size=32768\n"));
    assert!(SEED_PRODUCER.contains("#buffer.memory=134217728\n"));
    assert!(SEED_CONSUMER
        .contains("value.deserializer= org.apache.kafka.common.serialization.StringDeserializer"));
}

#[test]
fn seed_broker_config() {
    let (o, ignored) = StoreOptions::from_properties(SEED_BROKER).unwrap();
    // log.retention.hours=24
    assert_eq!(
        o.default_topic.retention,
        Some(Duration::from_secs(24 * 3600))
    );
    // log.segment.bytes=1073741824
    assert_eq!(o.default_topic.log.segment_bytes, 1 << 30);
    // log.retention.check.interval.ms=300000
    assert_eq!(o.retention_check_interval, Duration::from_millis(300_000));
    // num.partitions=1
    assert_eq!(o.default_partitions, 1);
    // auto.create.topics.enable = false
    assert!(!o.auto_create_topics);
    // Everything else keeps its default.
    let defaults = StoreOptions::default();
    assert_eq!(o.flush_check_interval, defaults.flush_check_interval);
    assert_eq!(o.default_topic.retention_bytes, None);
    assert_eq!(o.default_topic.cleanup_policy, CleanupPolicy::Delete);
    assert_eq!(
        o.default_topic.log.segment_index_bytes,
        defaults.default_topic.log.segment_index_bytes
    );

    assert_eq!(
        keys(&ignored),
        [
            "broker.id",
            "listeners",
            "num.network.threads",
            "num.io.threads",
            "socket.send.buffer.bytes",
            "socket.receive.buffer.bytes",
            "socket.request.max.bytes",
            "log.dirs",
            "num.recovery.threads.per.data.dir",
            "offsets.topic.replication.factor",
            "transaction.state.log.replication.factor",
            "transaction.state.log.min.isr",
            "zookeeper.connect",
            "zookeeper.connection.timeout.ms",
            "group.initial.rebalance.delay.ms",
            "delete.topic.enable",
        ]
    );
    assert_eq!(ignored[0].value, "107");
    assert_eq!(ignored[1].value, "PLAINTEXT://172.16.2.107:9092");
    assert!(ignored.iter().all(|i| !i.reason.is_empty()));
}

#[test]
fn seed_producer_config() {
    let (c, ignored) = ProducerConfig::from_properties(SEED_PRODUCER).unwrap();
    assert_eq!(c.durability, Durability::None); // acks=0
    assert_eq!(c.batch_size, 16384); // the commented-out 32768 stays a comment
    assert_eq!(c.linger, Duration::from_millis(500));
    assert_eq!(c.buffer_memory, 268_435_456); // not the commented-out 134217728
    assert_eq!(c.compression, Compression::Lz4);
    let defaults = ProducerConfig::default();
    assert_eq!(c.max_block, defaults.max_block);
    assert!(!c.partitioner_ignore_keys);
    assert!(c.partitioner.is_none());

    assert_eq!(
        keys(&ignored),
        [
            "bootstrap.servers",
            "retries",
            "key.serializer",
            "value.serializer"
        ]
    );
    assert_eq!(ignored[0].value, "172.16.2.107:9092");
    assert_eq!(ignored[1].value, "3");
}

#[test]
fn seed_consumer_config() {
    let (c, ignored) = ConsumerConfig::from_properties(SEED_CONSUMER).unwrap();
    assert_eq!(c.group_id.as_deref(), Some("test"));
    assert!(!c.enable_auto_commit);
    let defaults = ConsumerConfig::default();
    assert_eq!(c.auto_offset_reset, OffsetReset::Latest);
    assert_eq!(c.client_id, defaults.client_id);
    assert_eq!(c.max_poll_records, defaults.max_poll_records);
    assert_eq!(c.assignor.name(), "range");

    assert_eq!(
        keys(&ignored),
        [
            "bootstrap.servers",
            "key.deserializer",
            "value.deserializer"
        ]
    );
    // The space after `value.deserializer=` is not part of the value.
    assert_eq!(
        ignored[2].value,
        "org.apache.kafka.common.serialization.StringDeserializer"
    );
}

#[test]
fn the_seed_configs_run_a_store_end_to_end() {
    let (options, _) = StoreOptions::from_properties(SEED_BROKER).unwrap();
    let (producer_config, _) = ProducerConfig::from_properties(SEED_PRODUCER).unwrap();
    let consumer_text = format!("{SEED_CONSUMER}\nauto.offset.reset=earliest\n");
    let (consumer_config, _) = ConsumerConfig::from_properties(&consumer_text).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), options.clone()).unwrap();
    store
        .create_topic("flows", 2, options.default_topic.clone())
        .unwrap();
    let producer = Producer::new(&store, producer_config).unwrap();
    for i in 0..100 {
        // acks=0: the handle completes before the append.
        let meta = producer
            .send(ProducerRecord::new("flows", format!("flow-{i}")).key(format!("k{i}")))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(meta.offset, -1);
    }
    producer.flush().unwrap();

    let mut consumer = Consumer::new(&store, consumer_config).unwrap();
    consumer.subscribe(&["flows"]).unwrap();
    let mut seen = 0;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while seen < 100 && std::time::Instant::now() < deadline {
        seen += consumer.poll(Duration::from_millis(200)).unwrap().len();
    }
    assert_eq!(seen, 100);
    consumer.commit_sync().unwrap();
    assert_eq!(store.list_groups(), ["test"]);
}

#[test]
fn topic_properties() {
    let text = "\
# a topic created with kafka-topics.sh --config
retention.ms=3600000
retention.bytes = 1048576
cleanup.policy: compact,delete
segment.bytes 536870912
min.insync.replicas=2
";
    let (c, ignored) = TopicConfig::from_properties(text).unwrap();
    assert_eq!(c.retention, Some(Duration::from_secs(3600)));
    assert_eq!(c.retention_bytes, Some(1 << 20));
    assert_eq!(c.cleanup_policy, CleanupPolicy::CompactDelete);
    assert_eq!(c.log.segment_bytes, 512 << 20);
    assert_eq!(keys(&ignored), ["min.insync.replicas"]);
}

#[test]
fn client_settings_map_to_their_fields() {
    let (p, _) = ProducerConfig::from_properties(
        "acks=all\nmax.block.ms=250\npartitioner.ignore.keys=TRUE\ncompression.type=none\n",
    )
    .unwrap();
    assert_eq!(p.durability, Durability::Fsync);
    assert_eq!(p.max_block, Duration::from_millis(250));
    assert!(p.partitioner_ignore_keys);
    assert_eq!(p.compression, Compression::None);
    let (p, _) = ProducerConfig::from_properties("acks=-1").unwrap();
    assert_eq!(p.durability, Durability::Fsync);
    let (p, _) = ProducerConfig::from_properties("acks=1").unwrap();
    assert_eq!(p.durability, Durability::Written);

    let (c, _) = ConsumerConfig::from_properties(
        "group.id=billing\nclient.id=worker-1\nauto.commit.interval.ms=100\n\
         auto.offset.reset=none\nmax.poll.records=10\nfetch.max.bytes=65536\n\
         max.partition.fetch.bytes=4096\nmax.poll.interval.ms=1000\n\
         partition.assignment.strategy=org.apache.kafka.clients.consumer.RoundRobinAssignor, \
         org.apache.kafka.clients.consumer.CooperativeStickyAssignor\n",
    )
    .unwrap();
    assert_eq!(c.group_id.as_deref(), Some("billing"));
    assert_eq!(c.client_id, "worker-1");
    assert!(c.enable_auto_commit);
    assert_eq!(c.auto_commit_interval, Duration::from_millis(100));
    assert_eq!(c.auto_offset_reset, OffsetReset::None);
    assert_eq!(c.max_poll_records, 10);
    assert_eq!(c.fetch_max_bytes, 65536);
    assert_eq!(c.max_partition_fetch_bytes, 4096);
    assert_eq!(c.max_poll_interval, Duration::from_secs(1));
    assert_eq!(c.assignor.name(), "roundrobin");
    let (c, _) = ConsumerConfig::from_properties("partition.assignment.strategy=range").unwrap();
    assert_eq!(c.assignor.name(), "range");

    let (o, _) = StoreOptions::from_properties(
        "log.flush.interval.messages=10000\nlog.flush.interval.ms=1000\n\
         log.retention.bytes=1073741824\nlog.roll.hours=1\nauto.create.topics.enable=true\n\
         num.partitions=8\ncompression.type=lz4\n",
    )
    .unwrap();
    assert_eq!(o.default_topic.log.flush_messages, Some(10_000));
    assert_eq!(
        o.default_topic.log.flush_max_age,
        Some(Duration::from_secs(1))
    );
    assert_eq!(o.default_topic.retention_bytes, Some(1 << 30));
    assert_eq!(
        o.default_topic.log.segment_max_age,
        Duration::from_secs(3600)
    );
    assert_eq!(o.default_topic.compression, Compression::Lz4);
    assert!(o.auto_create_topics);
    assert_eq!(o.default_partitions, 8);
}

fn invalid_key<T: std::fmt::Debug>(r: kafkalite::Result<T>) -> &'static str {
    match r {
        Err(Error::InvalidConfig { key, .. }) => key,
        other => panic!("expected InvalidConfig, got {other:?}"),
    }
}

fn unknown_key<T: std::fmt::Debug>(r: kafkalite::Result<T>) -> String {
    match r {
        Err(Error::UnknownConfig { key }) => key,
        other => panic!("expected UnknownConfig, got {other:?}"),
    }
}

#[test]
fn unknown_keys_are_errors_naming_the_key() {
    // A typo in the seed's own file.
    let typo = SEED_PRODUCER.replace("linger.ms=500", "linger.msec=500");
    assert_eq!(
        unknown_key(ProducerConfig::from_properties(&typo)),
        "linger.msec"
    );
    // A consumer key in a producer file, and the other way round.
    assert_eq!(
        unknown_key(ProducerConfig::from_properties("group.id=test")),
        "group.id"
    );
    assert_eq!(
        unknown_key(ConsumerConfig::from_properties("linger.ms=5")),
        "linger.ms"
    );
    // A broker key in a topic file (topic names drop the `log.` prefix).
    assert_eq!(
        unknown_key(TopicConfig::from_properties("log.retention.hours=1")),
        "log.retention.hours"
    );
    assert_eq!(
        unknown_key(StoreOptions::from_properties("log.retention.days=1")),
        "log.retention.days"
    );
}

#[test]
fn bad_values_are_errors_naming_the_key() {
    let bad_acks = SEED_PRODUCER.replace("acks=0", "acks=2");
    assert_eq!(
        invalid_key(ProducerConfig::from_properties(&bad_acks)),
        "acks"
    );
    let text = SEED_PRODUCER.replace("compression.type=lz4", "compression.type=brotli");
    assert_eq!(
        invalid_key(ProducerConfig::from_properties(&text)),
        "compression.type"
    );
    for (text, key) in [
        (
            "compression.type=gzip\ncompression.gzip.level=10",
            "compression.gzip.level",
        ),
        ("compression.gzip.level=0", "compression.gzip.level"),
        (
            "compression.type=zstd\ncompression.zstd.level=23",
            "compression.zstd.level",
        ),
        ("compression.zstd.level=fast", "compression.zstd.level"),
        ("compression.lz4.level=18", "compression.lz4.level"),
    ] {
        assert_eq!(
            invalid_key(ProducerConfig::from_properties(text)),
            key,
            "{text}"
        );
    }
    assert_eq!(
        invalid_key(ProducerConfig::from_properties("compression.type=brotli")),
        "compression.type"
    );
    assert_eq!(
        invalid_key(ProducerConfig::from_properties("batch.size=16KB")),
        "batch.size"
    );
    assert_eq!(
        invalid_key(ProducerConfig::from_properties("buffer.memory=0")),
        "buffer.memory"
    );
    assert_eq!(
        invalid_key(ProducerConfig::from_properties("transactional.id=tx-1")),
        "transactional.id"
    );
    assert_eq!(
        invalid_key(ProducerConfig::from_properties(
            "partitioner.class=com.example.MyPartitioner"
        )),
        "partitioner.class"
    );

    let no_bool = SEED_CONSUMER.replace("enable.auto.commit=false", "enable.auto.commit=no");
    assert_eq!(
        invalid_key(ConsumerConfig::from_properties(&no_bool)),
        "enable.auto.commit"
    );
    assert_eq!(
        invalid_key(ConsumerConfig::from_properties(
            "auto.offset.reset=smallest"
        )),
        "auto.offset.reset"
    );
    assert_eq!(
        invalid_key(ConsumerConfig::from_properties("max.poll.records=0")),
        "max.poll.records"
    );
    assert_eq!(
        invalid_key(ConsumerConfig::from_properties(
            "partition.assignment.strategy=cooperative-sticky"
        )),
        "partition.assignment.strategy"
    );
    assert_eq!(
        invalid_key(ConsumerConfig::from_properties(
            "partition.assignment.strategy=com.example.Mine"
        )),
        "partition.assignment.strategy"
    );

    let bad_hours = SEED_BROKER.replace("log.retention.hours=24", "log.retention.hours=1d");
    assert_eq!(
        invalid_key(StoreOptions::from_properties(&bad_hours)),
        "log.retention.hours"
    );
    // A broker key's value check names the broker key, not the topic key.
    assert_eq!(
        invalid_key(StoreOptions::from_properties("log.segment.bytes=big")),
        "log.segment.bytes"
    );
    assert_eq!(
        invalid_key(StoreOptions::from_properties(
            "log.segment.bytes=3000000000"
        )),
        "log.segment.bytes"
    );
    assert_eq!(
        invalid_key(StoreOptions::from_properties("num.partitions=0")),
        "num.partitions"
    );
    assert_eq!(
        invalid_key(TopicConfig::from_properties("cleanup.policy=shred")),
        "cleanup.policy"
    );
}

#[test]
fn malformed_text_is_a_syntax_error_with_its_line() {
    let text = "acks=0\nlinger.ms=\\u00G0\n";
    assert!(matches!(
        ProducerConfig::from_properties(text),
        Err(Error::PropertiesSyntax { line: 2, .. })
    ));
}

#[test]
fn every_kafka_codec_and_its_level_is_accepted() {
    for codec in [
        Compression::None,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let (c, _) =
            ProducerConfig::from_properties(&format!("compression.type={}", codec.name())).unwrap();
        assert_eq!(c.compression, codec);
        assert_eq!(c.compression_level, None);
    }
    let (c, _) = ProducerConfig::from_properties(
        "compression.zstd.level=-5\ncompression.type=zstd\ncompression.gzip.level=2",
    )
    .unwrap();
    assert_eq!(
        (c.compression, c.compression_level),
        (Compression::Zstd, Some(-5))
    );
    let (c, _) =
        ProducerConfig::from_properties("compression.type=gzip\ncompression.gzip.level=-1")
            .unwrap();
    assert_eq!(
        (c.compression, c.compression_level),
        (Compression::Gzip, None)
    );
    let (c, ignored) =
        ProducerConfig::from_properties("compression.type=lz4\ncompression.lz4.level=9").unwrap();
    assert_eq!(c.compression, Compression::Lz4);
    assert_eq!(ignored.len(), 1);
    let (c, _) = ConsumerConfig::from_properties("isolation.level=read_committed").unwrap();
    assert_eq!(c.isolation_level, kafkalite::IsolationLevel::ReadCommitted);
    assert_eq!(
        invalid_key(ConsumerConfig::from_properties(
            "isolation.level=serializable"
        )),
        "isolation.level"
    );
    let mut t = TopicConfig::default();
    t.set("compression.type", "zstd").unwrap();
    assert_eq!(t.compression, Compression::Zstd);
}
