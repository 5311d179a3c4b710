//! API properties: thread-safety of handles, metrics, background work.

use kafkalite::{
    Consumer, Durability, Error, LogRead, PartitionLog, Producer, Record, RecordBatch, SendHandle,
    Store, StoreMetrics, StoreOptions, TopicConfig,
};
use std::time::{Duration, Instant};

fn send_sync<T: Send + Sync>() {}
fn send<T: Send>() {}

#[test]
fn handles_are_send_and_sync_where_shared_across_threads() {
    // Shared among threads.
    send_sync::<Store>();
    send_sync::<Producer>();
    send_sync::<PartitionLog>();
    send_sync::<LogRead>();
    send_sync::<RecordBatch>();
    send_sync::<StoreMetrics>();
    send_sync::<Error>();
    // Owned by one thread at a time (as Kafka's KafkaConsumer), movable.
    send::<Consumer>();
    send::<SendHandle>();
}

#[test]
fn metrics_report_offsets_sizes_latencies_and_group_lag() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 2, TopicConfig::default()).unwrap();
    for _ in 0..5 {
        s.append(
            "t",
            1,
            &[Record::new("x"), Record::new("y")],
            Durability::Fsync,
        )
        .unwrap();
    }
    s.reset_group_offsets("g", "t", kafkalite::ResetTo::Offset(4))
        .unwrap();
    let m = s.metrics();
    assert_eq!(m.partitions.len(), 2);
    let p1 = m
        .partitions
        .iter()
        .find(|p| p.partition.partition == 1)
        .unwrap();
    assert_eq!(
        (p1.log_start_offset, p1.log_end_offset, p1.high_watermark),
        (0, 10, 10)
    );
    assert!(p1.size > 0);
    assert_eq!(p1.segments, 1);
    assert_eq!(p1.append_latency.count, 5);
    assert!(p1.fsync_latency.count >= 1 && p1.fsync_latency.count <= 5);
    assert!(p1.append_latency.max >= p1.append_latency.p50);
    let p0 = m
        .partitions
        .iter()
        .find(|p| p.partition.partition == 0)
        .unwrap();
    assert_eq!(p0.append_latency.count, 0);
    let lag: Vec<(u32, i64, i64)> = m
        .groups
        .iter()
        .filter(|g| g.group == "g")
        .map(|g| (g.partition.partition, g.committed, g.lag))
        .collect();
    assert!(lag.contains(&(1, 4, 6)), "{lag:?}");
    assert!(lag.contains(&(0, 0, 0)), "{lag:?}");
}

#[test]
fn the_background_thread_applies_retention_on_its_interval() {
    let d = tempfile::tempdir().unwrap();
    let mut o = StoreOptions::default();
    o.retention_check_interval = Duration::from_millis(50);
    o.flush_check_interval = Duration::from_millis(10);
    let s = Store::open(d.path(), o).unwrap();
    let mut c = TopicConfig::default();
    c.log.segment_bytes = 1024;
    c.retention = Some(Duration::from_secs(3600));
    s.create_topic("old", 1, c).unwrap();
    // Records from 2001: far older than an hour.
    for i in 0..100i64 {
        s.append(
            "old",
            0,
            &[Record::new(format!("{i:>40}")).timestamp(1_000_000_000_000 + i)],
            Durability::Written,
        )
        .unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let p = &s.describe_topic("old").unwrap().partitions[0];
        if p.log_start_offset == 100 {
            assert_eq!(p.segments, 1);
            break;
        }
        assert!(Instant::now() < deadline, "retention never ran: {p:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_background_thread_honours_flush_ms() {
    let d = tempfile::tempdir().unwrap();
    let mut o = StoreOptions::default();
    o.flush_check_interval = Duration::from_millis(10);
    let s = Store::open(d.path(), o).unwrap();
    let mut c = TopicConfig::default();
    c.log.flush_max_age = Some(Duration::from_millis(30));
    s.create_topic("t", 1, c).unwrap();
    s.append("t", 0, &[Record::new("x")], Durability::Written)
        .unwrap();
    let log = s.partition("t", 0).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while log.fsync_count() == 0 {
        assert!(Instant::now() < deadline, "flush.ms never fsynced");
        std::thread::sleep(Duration::from_millis(10));
    }
}
