//! Read throughput of the partition log: a sequential scan of a cached log
//! (read + iterate every record) beside a raw baseline (a read into a reused buffer of
//! the same segment + CRC-32C over it), and random point reads.

#![allow(
    missing_docs,
    clippy::unwrap_used,
    reason = "a bench binary: criterion_group! generates undocumented fns, and a failed setup should panic"
)]

mod common;

use common::{flow_records, value_bytes, Rng};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use kafkalite::{Compression, Durability, LogConfig, PartitionLog, ReadMode};
use std::path::PathBuf;
use std::time::Duration;

const RECORDS: usize = 100_000;
const PER_BATCH: usize = 100;

/// A closed log of flow records in batches of 100, all in one segment.
fn build(compression: Compression) -> (tempfile::TempDir, PathBuf, u64) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("flows-0");
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    let records = flow_records(RECORDS);
    for chunk in records.chunks(PER_BATCH) {
        log.append_records(chunk, compression, Durability::Written)
            .unwrap();
    }
    log.close().unwrap();
    (d, dir, value_bytes(&records))
}

fn open(dir: &PathBuf, mode: ReadMode) -> PartitionLog {
    let mut c = LogConfig::default();
    c.read_mode = mode;
    PartitionLog::open(dir, c).unwrap()
}

fn scan(log: &PartitionLog) -> u64 {
    let mut at = 0;
    let mut sum = 0u64;
    loop {
        let r = log.read(at, 1 << 20).unwrap();
        if r.is_empty() {
            return sum;
        }
        for rec in r.records() {
            sum += rec.unwrap().value.map_or(0, |v| v.len() as u64);
        }
        at = r.next_offset();
    }
}

fn sequential(c: &mut Criterion) {
    for (by_bytes, name) in [(true, "read_seq_bytes"), (false, "read_seq_records")] {
        let (_d, dir, values) = build(Compression::None);
        let segment = dir.join(format!("{:020}.log", 0));
        let mut g = c.benchmark_group(name);
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        g.throughput(if by_bytes {
            Throughput::Bytes(values)
        } else {
            Throughput::Elements(RECORDS as u64)
        });
        // Into one buffer reused across iterations, as the log reuses its
        // mapping: a fresh allocation would pay page faults every time.
        let mut data = Vec::new();
        g.bench_function("raw_fs_read_plus_crc32c", |b| {
            b.iter(|| {
                data.clear();
                std::fs::File::open(&segment)
                    .and_then(|mut f| std::io::Read::read_to_end(&mut f, &mut data))
                    .unwrap();
                crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &data) as u32
            })
        });
        for mode in [ReadMode::Mmap, ReadMode::Pread] {
            let log = open(&dir, mode);
            assert_eq!(scan(&log), values);
            g.bench_function(format!("none/{mode:?}"), |b| b.iter(|| scan(&log)));
        }
        let (_d2, dir2, values2) = build(Compression::Lz4);
        let log = open(&dir2, ReadMode::Mmap);
        assert_eq!(scan(&log), values2);
        g.bench_function("lz4/Mmap", |b| b.iter(|| scan(&log)));
        g.finish();
    }
}

fn point_reads(c: &mut Criterion) {
    let (_d, dir, _) = build(Compression::None);
    let mut g = c.benchmark_group("read_point");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(1000));
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        let log = open(&dir, mode);
        let mut rng = Rng::new(7);
        g.bench_function(format!("1000_random_reads/{mode:?}"), |b| {
            b.iter(|| {
                let mut sum = 0u64;
                for _ in 0..1000 {
                    let o = rng.below(RECORDS as u64) as i64;
                    let r = log.read(o, 1).unwrap();
                    let rec = r.records().next().unwrap().unwrap();
                    debug_assert_eq!(rec.offset, o);
                    sum += rec.value.map_or(0, |v| v.len() as u64);
                }
                sum
            })
        });
    }
    g.finish();
}

criterion_group!(read, sequential, point_reads);
criterion_main!(read);
