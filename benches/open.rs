//! Open time of a partition log: a clean open of 1,000 segments, and crash
//! recovery (an unclean open that scans the active segment batch by batch,
//! CRC and offsets, rebuilding its indexes), reported in MB/s scanned.
//!
//! ```text
//! cargo bench --bench open -- --warm-up-time 1 --measurement-time 3
//! ```

#![allow(
    missing_docs,
    clippy::unwrap_used,
    reason = "a bench binary: criterion_group! generates undocumented fns, and a failed setup should panic"
)]

#[allow(dead_code, reason = "shared by several benches, each using part of it")]
mod common;

use common::flow_records;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafkalite::{Compression, Durability, LogConfig, PartitionLog};
use std::path::Path;
use std::time::{Duration, Instant};

const SEGMENTS: usize = 1000;

/// A closed log of `SEGMENTS` segments of ~100 flow records each.
fn many_segments(dir: &Path) -> LogConfig {
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 32 * 1024;
    c.settings.segment_index_bytes = 4096;
    let log = PartitionLog::open(dir, c.clone()).unwrap();
    let records = flow_records(100_000);
    for chunk in records.chunks(10).cycle() {
        log.append_records(chunk, Compression::None, Durability::Written)
            .unwrap();
        if log.segment_count() >= SEGMENTS {
            break;
        }
    }
    log.close().unwrap();
    c
}

fn clean_open(c: &mut Criterion) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("many-0");
    let config = many_segments(&dir);
    let mut g = c.benchmark_group("open");
    g.sample_size(10);
    g.bench_function(format!("clean/{SEGMENTS}_segments"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let log = PartitionLog::open(&dir, config.clone()).unwrap();
                total += started.elapsed();
                assert_eq!(log.segment_count(), SEGMENTS);
                log.close().unwrap();
            }
            total
        })
    });
    g.finish();
}

/// Crash recovery: one active segment of ~128 MB, reopened without a clean
/// shutdown each iteration (the whole segment is scanned).
fn recovery(c: &mut Criterion) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("crashed-0");
    let config = LogConfig::default();
    let log = PartitionLog::open(&dir, config.clone()).unwrap();
    let records = flow_records(100_000);
    while log.size() < 128 << 20 {
        for chunk in records.chunks(1000) {
            log.append_records(chunk, Compression::None, Durability::Written)
                .unwrap();
        }
    }
    log.flush().unwrap();
    let bytes = log.size();
    drop(log); // no close: the next open recovers
               // Warm the page cache.
    let _ = std::fs::read(dir.join(format!("{:020}.log", 0))).unwrap();
    let mut g = c.benchmark_group("open");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("recovery_scan/128MB", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let started = Instant::now();
                let log = PartitionLog::open(&dir, config.clone()).unwrap();
                total += started.elapsed();
                assert_eq!(log.size(), bytes);
                drop(log); // a crash again
            }
            total
        })
    });
    g.finish();
}

criterion_group!(open, clean_open, recovery);
criterion_main!(open);
