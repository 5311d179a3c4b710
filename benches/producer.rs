//! Producer throughput: `Producer::send` + `flush` of ~300-byte network-flow
//! records (the field report's producer test, embedded).
//!
//! Payloads are generated once as `bytes::Bytes`, so the timed loop measures
//! the producer (partitioning, batching, compression, appends), not string
//! formatting. Each iteration creates a fresh 8-partition topic in one
//! long-lived store (outside the timing), sends [`RECORDS`] keyless records
//! from 1 or 4 threads sharing one producer, flushes, and deletes the topic
//! again (outside the timing). Cases: `batch.size` 16 KiB and 1 MiB,
//! compression none and lz4. One more case, `.../long_lived_topic`, sends
//! the first case's records into one topic that lives across iterations.
//!
//! The `producer_bytes` group reports MB/s (payload bytes), the
//! `producer_records` group the same runs as records/s. `raw_write` is the
//! baseline from the same run: the same payload bytes written with plain
//! `write()` calls (64 KiB at a time) into a new file.
//!
//! ```text
//! cargo bench --bench producer -- --warm-up-time 1 --measurement-time 3
//! ```

#[path = "../src/sample.rs"]
mod sample;

use bytes::Bytes;
use criterion::{BenchmarkId, Criterion, SamplingMode, Throughput};
use kafkalite::{
    Compression, Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig,
};
use sample::FlowRecords;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Records sent per iteration.
const RECORDS: usize = 50_000;
/// Partitions of each iteration's topic.
const PARTITIONS: u32 = 8;

struct Case {
    threads: usize,
    batch_size: usize,
    compression: Compression,
}

impl Case {
    fn id(&self) -> String {
        format!(
            "{}t/batch_{}/{}",
            self.threads,
            if self.batch_size >= 1 << 20 {
                format!("{}MiB", self.batch_size >> 20)
            } else {
                format!("{}KiB", self.batch_size >> 10)
            },
            self.compression.name()
        )
    }
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for threads in [1, 4] {
        for batch_size in [16 << 10, 1 << 20] {
            for compression in [Compression::None, Compression::Lz4] {
                v.push(Case {
                    threads,
                    batch_size,
                    compression,
                });
            }
        }
    }
    v
}

fn end_offsets(store: &Store, topic: &str) -> i64 {
    store
        .describe_topic(topic)
        .expect("describe")
        .partitions
        .iter()
        .map(|p| p.log_end_offset)
        .sum()
}

/// `RECORDS` sends split over `threads` threads sharing one producer, then
/// `flush`. Only send + flush are timed.
fn send_all(store: &Store, case: &Case, payloads: &[Bytes], topic: &str) -> Duration {
    let before = end_offsets(store, topic);
    let mut config = ProducerConfig::default();
    config.batch_size = case.batch_size;
    config.compression = case.compression;
    let producer = Producer::new(store, config).expect("producer");
    let per_thread = RECORDS / case.threads;

    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..case.threads {
            let producer = &producer;
            s.spawn(move || {
                let topic: std::sync::Arc<str> = topic.into();
                for i in 0..per_thread {
                    let value = payloads[(t * per_thread + i) % payloads.len()].clone();
                    // The handle is dropped: flush() waits for every record.
                    let _ = producer
                        .send(ProducerRecord::new(std::sync::Arc::clone(&topic), value))
                        .expect("send");
                }
            });
        }
    });
    producer.flush().expect("flush");
    let elapsed = start.elapsed();

    drop(producer);
    let written = end_offsets(store, topic) - before;
    assert_eq!(
        written,
        (per_thread * case.threads) as i64,
        "records written"
    );
    elapsed
}

/// One iteration into a fresh topic, created and deleted outside the timing.
fn run_once(store: &Store, case: &Case, payloads: &[Bytes], topic_seq: &AtomicU64) -> Duration {
    let topic = format!("bench-{}", topic_seq.fetch_add(1, Ordering::Relaxed));
    store
        .create_topic(&topic, PARTITIONS, TopicConfig::default())
        .expect("create topic");
    let elapsed = send_all(store, case, payloads, &topic);
    store.delete_topic(&topic).expect("delete topic");
    elapsed
}

fn bench(c: &mut Criterion) {
    let mut flows = FlowRecords::new(1);
    let payloads: Vec<Bytes> = (0..RECORDS)
        .map(|_| Bytes::from(flows.next_line()))
        .collect();
    let payload_bytes: u64 = payloads.iter().map(|b| b.len() as u64).sum();
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("store"), StoreOptions::default()).expect("open");
    let topic_seq = AtomicU64::new(0);

    for (group_name, throughput) in [
        ("producer_bytes", Throughput::Bytes(payload_bytes)),
        ("producer_records", Throughput::Elements(RECORDS as u64)),
    ] {
        let mut group = c.benchmark_group(group_name);
        group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .throughput(throughput);
        for case in cases() {
            group.bench_function(BenchmarkId::from_parameter(case.id()), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| run_once(&store, &case, &payloads, &topic_seq))
                        .sum()
                })
            });
        }
        if group_name == "producer_bytes" {
            // The same first case into one long-lived topic: iterations
            // append to existing segments, so the new-file costs (index
            // files, first page faults) of a fresh topic are not repeated.
            let case = &cases()[0];
            let topic = "long-lived";
            store
                .create_topic(topic, PARTITIONS, TopicConfig::default())
                .expect("create topic");
            group.bench_function(format!("{}/long_lived_topic", case.id()), |b| {
                b.iter_custom(|iters| {
                    (0..iters)
                        .map(|_| send_all(&store, case, &payloads, topic))
                        .sum()
                })
            });
            store.delete_topic(topic).expect("delete topic");
            // Raw-I/O baseline: the same bytes, plain write() into a new file.
            let mut buf = Vec::with_capacity(payload_bytes as usize);
            for p in &payloads {
                buf.extend_from_slice(p);
            }
            group.bench_function("raw_write", |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for i in 0..iters {
                        let path = dir.path().join(format!("raw-{i}"));
                        let start = Instant::now();
                        let mut f = std::fs::File::create(&path).expect("create");
                        for chunk in buf.chunks(64 << 10) {
                            f.write_all(chunk).expect("write");
                        }
                        drop(f);
                        total += start.elapsed();
                        std::fs::remove_file(&path).expect("remove");
                    }
                    total
                })
            });
        }
        group.finish();
    }
    store.close().expect("close");
}

fn main() {
    // criterion_main! without criterion_group!, whose generated function
    // has no doc comment (the crate denies missing docs).
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
