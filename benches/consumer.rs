//! Consumer throughput: `Consumer::poll` over pre-filled topics of ~300-byte
//! network-flow records (the field report's consumer test, embedded), and
//! `commit_sync` latency.
//!
//! Four topics are filled once with [`RECORDS`] records each through a
//! producer (16 KiB batches, the report's setting): 1 and 50 partitions,
//! compression none and lz4. Then:
//!
//! * `1c/<n>p/<codec>`: one consumer, manually assigned every partition;
//!   each iteration seeks to the beginning and polls until it has all
//!   records back (asserted).
//! * `group4/50p/<codec>`: a consumer group of 4 members on 4 threads over
//!   the 50-partition topic; each iteration every member seeks its assigned
//!   partitions to the beginning and polls until the group as a whole has
//!   consumed every record (asserted).
//! * `commit_sync/<n>p`: one `commit_sync` (an fsynced write to the offsets
//!   log) of a consumer's positions on 1 or 50 partitions.
//! * `raw/1p/none`, the baseline for `1c/1p/none`: the same partition's
//!   `.log` files read with plain `std::fs` calls into a reused buffer, each
//!   batch's CRC-32C checked and its records counted (asserted).
//!
//! The `consumer_bytes` group reports MB/s (value bytes), the
//! `consumer_records` group the same runs as records/s.
//!
//! ```text
//! cargo bench --bench consumer -- --warm-up-time 1 --measurement-time 3
//! ```

#[path = "../src/sample.rs"]
mod sample;

use bytes::Bytes;
use criterion::{Criterion, SamplingMode, Throughput};
use kafkalite::{
    Compression, Consumer, ConsumerConfig, ConsumerRecords, Producer, ProducerConfig,
    ProducerRecord, Store, StoreOptions, TopicConfig, TopicPartition,
};
use sample::FlowRecords;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Records in each pre-filled topic.
const RECORDS: u64 = 200_000;
/// Members of the consumer group.
const MEMBERS: usize = 4;

fn value_bytes(records: &ConsumerRecords) -> u64 {
    records
        .iter()
        .map(|r| r.value.map_or(0, |v| v.len() as u64))
        .sum()
}

/// Fills `topic` with `RECORDS` flow records; returns their value bytes.
fn fill(store: &Store, topic: &str, partitions: u32, compression: Compression) -> u64 {
    store
        .create_topic(topic, partitions, TopicConfig::default())
        .expect("create topic");
    let mut config = ProducerConfig::default();
    config.compression = compression;
    let producer = Producer::new(store, config).expect("producer");
    let mut flows = FlowRecords::new(1);
    let mut bytes = 0;
    for _ in 0..RECORDS {
        let value = Bytes::from(flows.next_line());
        bytes += value.len() as u64;
        let _ = producer
            .send(ProducerRecord::new(topic, value))
            .expect("send");
    }
    producer.flush().expect("flush");
    bytes
}

fn partitions(topic: &str, count: u32) -> Vec<TopicPartition> {
    (0..count).map(|p| TopicPartition::new(topic, p)).collect()
}

fn consumer_config(group: Option<&str>) -> ConsumerConfig {
    let mut config = match group {
        Some(g) => ConsumerConfig::with_group(g),
        None => ConsumerConfig::default(),
    };
    config.enable_auto_commit = false;
    config.max_poll_interval = Duration::from_secs(3600);
    config
}

/// One consumer reading a whole topic from the beginning.
struct Single {
    consumer: Consumer,
    parts: Vec<TopicPartition>,
    bytes: u64,
}

impl Single {
    fn new(store: &Store, topic: &str, count: u32, bytes: u64) -> Self {
        let mut consumer = Consumer::new(store, consumer_config(None)).expect("consumer");
        let parts = partitions(topic, count);
        consumer.assign(&parts).expect("assign");
        Single {
            consumer,
            parts,
            bytes,
        }
    }

    fn run(&mut self) -> Duration {
        let start = Instant::now();
        self.consumer.seek_to_beginning(&self.parts).expect("seek");
        let (mut records, mut bytes) = (0u64, 0u64);
        while records < RECORDS {
            let batch = self
                .consumer
                .poll(Duration::from_millis(100))
                .expect("poll");
            assert!(!batch.is_empty(), "poll came back empty at {records}");
            records += batch.len() as u64;
            bytes += value_bytes(&batch);
        }
        let elapsed = start.elapsed();
        assert_eq!((records, bytes), (RECORDS, self.bytes));
        elapsed
    }
}

/// The raw baseline: reads the `.log` files of `dir` with `std::fs`, checks
/// every batch's CRC-32C, and returns the records counted.
fn raw_read_and_crc(dir: &std::path::Path, buf: &mut Vec<u8>) -> u64 {
    use std::io::Read;
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .expect("list partition")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    let mut records = 0u64;
    for log in logs {
        buf.clear();
        std::fs::File::open(&log)
            .and_then(|mut f| f.read_to_end(buf))
            .expect("read .log");
        let mut pos = 0usize;
        while pos + 61 <= buf.len() {
            let field = |at: usize, n: usize| &buf[pos + at..pos + at + n];
            let len = u32::from_be_bytes(field(8, 4).try_into().expect("4 bytes")) as usize;
            let crc = u32::from_be_bytes(field(17, 4).try_into().expect("4 bytes"));
            let delta = i32::from_be_bytes(field(23, 4).try_into().expect("4 bytes"));
            let end = pos + 12 + len;
            assert_eq!(
                crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &buf[pos + 21..end]) as u32,
                crc,
                "CRC at {pos}"
            );
            records += delta as u64 + 1;
            pos = end;
        }
    }
    records
}

/// A consumer group of `MEMBERS` threads, kept alive across iterations so
/// that only consumption is timed, not joining.
struct GroupPool {
    start: Arc<Barrier>,
    done: Arc<Barrier>,
    stop: Arc<AtomicBool>,
    records: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
    expected_bytes: u64,
    threads: Vec<JoinHandle<()>>,
}

impl GroupPool {
    fn new(store: &Store, topic: &str, group: &str, expected_bytes: u64) -> Self {
        let ready = Arc::new(Barrier::new(MEMBERS + 1));
        let start = Arc::new(Barrier::new(MEMBERS + 1));
        let done = Arc::new(Barrier::new(MEMBERS + 1));
        let stop = Arc::new(AtomicBool::new(false));
        let records = Arc::new(AtomicU64::new(0));
        let bytes = Arc::new(AtomicU64::new(0));
        let threads = (0..MEMBERS)
            .map(|_| {
                let (store, topic, group) = (store.clone(), topic.to_owned(), group.to_owned());
                let (ready, start, done) = (ready.clone(), start.clone(), done.clone());
                let (stop, records, bytes) = (stop.clone(), records.clone(), bytes.clone());
                std::thread::spawn(move || {
                    let mut c =
                        Consumer::new(&store, consumer_config(Some(&group))).expect("consumer");
                    c.subscribe(&[topic.as_str()]).expect("subscribe");
                    // Poll until the group is stable with every member in it.
                    loop {
                        let _ = c.poll(Duration::from_millis(10)).expect("poll");
                        let d = store.describe_group(&group).expect("describe group");
                        if d.members.len() == MEMBERS
                            && !d.rebalancing
                            && c.generation() == Some(d.generation)
                        {
                            break;
                        }
                    }
                    ready.wait();
                    loop {
                        start.wait();
                        if stop.load(Ordering::Acquire) {
                            break;
                        }
                        let parts = c.assignment().to_vec();
                        c.seek_to_beginning(&parts).expect("seek");
                        while records.load(Ordering::Acquire) < RECORDS {
                            let batch = c.poll(Duration::from_millis(1)).expect("poll");
                            bytes.fetch_add(value_bytes(&batch), Ordering::AcqRel);
                            records.fetch_add(batch.len() as u64, Ordering::AcqRel);
                        }
                        done.wait();
                    }
                    c.close().expect("close consumer");
                })
            })
            .collect();
        ready.wait();
        GroupPool {
            start,
            done,
            stop,
            records,
            bytes,
            expected_bytes,
            threads,
        }
    }

    fn run(&self) -> Duration {
        self.records.store(0, Ordering::Release);
        self.bytes.store(0, Ordering::Release);
        let t = Instant::now();
        self.start.wait();
        self.done.wait();
        let elapsed = t.elapsed();
        assert_eq!(
            (
                self.records.load(Ordering::Acquire),
                self.bytes.load(Ordering::Acquire)
            ),
            (RECORDS, self.expected_bytes)
        );
        elapsed
    }

    fn shutdown(self) {
        self.stop.store(true, Ordering::Release);
        self.start.wait();
        for t in self.threads {
            t.join().expect("member thread");
        }
    }
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path(), StoreOptions::default()).expect("open");

    let mut singles = Vec::new();
    let mut pools = Vec::new();
    for compression in [Compression::None, Compression::Lz4] {
        for count in [1u32, 50] {
            let topic = format!("flows-{count}p-{}", compression.name());
            let t = Instant::now();
            let bytes = fill(&store, &topic, count, compression);
            eprintln!(
                "filled {topic}: {RECORDS} records, {:.1} MB of values, {:.1} MB on disk, in {:.2} s",
                bytes as f64 / 1e6,
                store
                    .describe_topic(&topic)
                    .expect("describe")
                    .partitions
                    .iter()
                    .map(|p| p.size)
                    .sum::<u64>() as f64
                    / 1e6,
                t.elapsed().as_secs_f64()
            );
            singles.push((
                format!("1c/{count}p/{}", compression.name()),
                Single::new(&store, &topic, count, bytes),
                bytes,
            ));
            if count == 50 {
                let group = format!("group-{}", compression.name());
                pools.push((
                    format!("group{MEMBERS}/{count}p/{}", compression.name()),
                    GroupPool::new(&store, &topic, &group, bytes),
                    bytes,
                ));
            }
        }
    }

    for (group_name, bytes_mode) in [("consumer_bytes", true), ("consumer_records", false)] {
        let mut group = c.benchmark_group(group_name);
        group.sample_size(10).sampling_mode(SamplingMode::Flat);
        let throughput = |bytes: u64| {
            if bytes_mode {
                Throughput::Bytes(bytes)
            } else {
                Throughput::Elements(RECORDS)
            }
        };
        for (id, single, bytes) in &mut singles {
            group.throughput(throughput(*bytes));
            group.bench_function(id.as_str(), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| single.run()).sum())
            });
        }
        if let Some((_, _, bytes)) = singles.first() {
            let part = dir.path().join("flows-1p-none-0");
            let mut buf = Vec::new();
            group.throughput(throughput(*bytes));
            group.bench_function("raw/1p/none", |b| {
                b.iter(|| assert_eq!(raw_read_and_crc(&part, &mut buf), RECORDS))
            });
        }
        for (id, pool, bytes) in &pools {
            group.throughput(throughput(*bytes));
            group.bench_function(id.as_str(), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| pool.run()).sum())
            });
        }
        group.finish();
    }
    for (_, pool, _) in pools {
        pool.shutdown();
    }
    drop(singles);

    let mut group = c.benchmark_group("commit_sync");
    group.sample_size(10);
    for count in [1u32, 50] {
        let topic = format!("flows-{count}p-none");
        let mut consumer =
            Consumer::new(&store, consumer_config(Some("committer"))).expect("consumer");
        let parts = partitions(&topic, count);
        consumer.assign(&parts).expect("assign");
        consumer.seek_to_beginning(&parts).expect("seek");
        let polled = consumer.poll(Duration::from_millis(100)).expect("poll");
        assert!(!polled.is_empty());
        group.bench_function(format!("{count}p"), |b| {
            b.iter(|| consumer.commit_sync().expect("commit_sync"))
        });
        let committed = consumer.committed(&parts[0]).expect("committed");
        assert!(committed.is_some(), "commit_sync stored an offset");
    }
    group.finish();
    store.close().expect("close");
}

fn main() {
    // criterion_main! without criterion_group!, whose generated function
    // has no doc comment (the crate denies missing docs).
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
