//! Append throughput of the partition log for ~300-byte flow records, beside
//! a raw-I/O baseline (`write_all` of the same encoded batches to a new
//! file) from the same run.
//!
//! One iteration appends 1000 records (Written) or one batch of 100 per
//! thread (Fsync). Each sample starts from an empty log in a fresh directory.

#![allow(missing_docs, clippy::unwrap_used)]

mod common;

use common::{flow_records, value_bytes};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use kafkalite::{BatchBuilder, Compression, Durability, LogConfig, PartitionLog, Record};
use std::io::Write;
use std::time::{Duration, Instant};

const UNIT: usize = 1000;

fn config() -> LogConfig {
    let mut c = LogConfig::default();
    c.segment_bytes = 64 << 20;
    c
}

fn fresh_log() -> (tempfile::TempDir, PartitionLog) {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("flows-0"), config()).unwrap();
    (d, log)
}

fn throughput(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    records: &[Record],
    by_bytes: bool,
) {
    g.throughput(if by_bytes {
        Throughput::Bytes(value_bytes(records))
    } else {
        Throughput::Elements(records.len() as u64)
    });
}

fn written(c: &mut Criterion, by_bytes: bool) {
    let records = flow_records(UNIT);
    let mut g = c.benchmark_group(if by_bytes {
        "append_bytes"
    } else {
        "append_records"
    });
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    throughput(&mut g, &records, by_bytes);

    // Raw baseline: the same bytes, encoded once, written to a new file.
    let mut encoded = Vec::new();
    for chunk in records.chunks(1000) {
        let mut b = BatchBuilder::new(Compression::None);
        for r in chunk {
            b.push(r);
        }
        encoded.push(b.build());
    }
    g.bench_function("raw_write_all_new_file", |b| {
        b.iter_custom(|iters| {
            let d = tempfile::tempdir().unwrap();
            let mut f = std::fs::File::create(d.path().join("raw.log")).unwrap();
            let start = Instant::now();
            for _ in 0..iters {
                for batch in &encoded {
                    f.write_all(batch).unwrap();
                }
            }
            start.elapsed()
        })
    });

    for compression in [Compression::None, Compression::Lz4] {
        for per_batch in [1usize, 100, 1000] {
            let name = format!("written/{}/batch_{per_batch}", compression.name());
            g.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    let (_d, log) = fresh_log();
                    let start = Instant::now();
                    for _ in 0..iters {
                        for chunk in records.chunks(per_batch) {
                            log.append_records(chunk, compression, Durability::Written)
                                .unwrap();
                        }
                    }
                    start.elapsed()
                })
            });
        }
    }
    g.finish();
}

fn fsync(c: &mut Criterion, by_bytes: bool) {
    let records = flow_records(100);
    let mut g = c.benchmark_group(if by_bytes {
        "append_fsync_bytes"
    } else {
        "append_fsync_records"
    });
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    throughput(&mut g, &records, by_bytes);
    g.bench_function("fsync/none/batch_100/1_thread", |b| {
        b.iter_custom(|iters| {
            let (_d, log) = fresh_log();
            let start = Instant::now();
            for _ in 0..iters {
                log.append_records(&records, Compression::None, Durability::Fsync)
                    .unwrap();
            }
            start.elapsed()
        })
    });
    // Four appenders share fsyncs (group commit): one iteration is one batch
    // of 100 from each of the 4 threads.
    let four: Vec<Record> = (0..4).flat_map(|_| records.iter().cloned()).collect();
    throughput(&mut g, &four, by_bytes);
    g.bench_function("fsync/none/batch_100/4_threads", |b| {
        b.iter_custom(|iters| {
            let (_d, log) = fresh_log();
            let start = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..4 {
                    s.spawn(|| {
                        for _ in 0..iters {
                            log.append_records(&records, Compression::None, Durability::Fsync)
                                .unwrap();
                        }
                    });
                }
            });
            let elapsed = start.elapsed();
            eprintln!(
                "  4 threads: {} appends, {} fsyncs",
                4 * iters,
                log.fsync_count()
            );
            elapsed
        })
    });
    g.finish();
}

fn benches(c: &mut Criterion) {
    written(c, true);
    written(c, false);
    fsync(c, true);
    fsync(c, false);
}

criterion_group!(append, benches);
criterion_main!(append);
