//! Append throughput of the partition log beside raw-I/O baselines from the
//! same run.
//!
//! Records are the seed's network-flow lines (`src/sample.rs`, ~300
//! bytes), or lines cut to exactly 100 bytes or 1 KiB (`append_sizes_*`).
//!
//! Groups (each twice: `*_records` reports records/s, `*_bytes` value MB/s):
//! - `append_*`: one iteration appends 1,000 records (`Written`) to one
//!   partition, in batches of 1, 100 or 1,000, uncompressed or lz4. Baselines:
//!   `raw_write_all_new_file` writes the same encoded batches with
//!   `write_all` into a new file; `raw_encode_write_new_file` encodes the
//!   records with `BatchBuilder` in every iteration and writes them (the
//!   floor for appending `Record`s); `raw_lz4_write_new_file` compresses the
//!   same batches' record bytes with `lz4_flex` (64 KiB blocks, as the
//!   crate's LZ4 frames) into a reused buffer and writes the result.
//! - `append_parallel_*`: lz4 batches of 1,000 to 4 partitions; one
//!   iteration is one batch per partition, from 1 thread or from 2 threads
//!   (each owning 2 partitions).
//! - `append_fsync_*`: `Fsync` batches of 100 from 1, 4 or 8 threads sharing
//!   one partition (group commit); one iteration is one batch per thread.
//!   Baselines `raw_write_fdatasync/{1,4,8}_batches`: that many encoded
//!   batches written with `write_all`, then one `sync_data`, per iteration,
//!   from one thread: the same bytes per fsync without encoding, locks or
//!   waiting, so `8_batches / 1_batches` bounds what group commit can gain.
//! - `append_sizes_*`: 100-byte and 1 KiB records, batches of 1,000,
//!   uncompressed, beside a raw `write_all` of the same encoded batches:
//!   appended as those very bytes (`prebuilt_batch_1000`) and as `Record`s.
//!
//! `written/none/prebuilt_batch_1000` appends the very bytes
//! `raw_write_all_new_file` writes, encoded once outside the timing, with
//! `PartitionLog::append` (CRC and records checked, offsets assigned,
//! indexed), with 1 GiB and with 64 MiB segments.
//!
//! Each sample starts from an empty log (or file) in a fresh directory,
//! created outside the timing. Logs use Kafka's default 1 GiB segments
//! unless a name says otherwise. In the single-partition rows a log (or raw
//! file) takes at most 1 GiB: before an iteration would pass that, the
//! timing pauses while a new empty one replaces it, so these rows compare
//! appends into one segment with writes into one new file. (A criterion
//! sample can append several GiB; before, rows reached a roll and its 1 GiB
//! background fsync in some samples and not others, and the raw baseline
//! never paid for one.) The `64MiB_segments` row keeps one log per sample
//! and times its rolls, background flushes included.
//!
//! ```text
//! cargo bench --bench append -- --warm-up-time 1 --measurement-time 2
//! ```

#![allow(
    missing_docs,
    clippy::unwrap_used,
    reason = "a bench binary: criterion_group! generates undocumented fns, and a failed setup should panic"
)]

mod common;

use common::{flow_records, sized_records, value_bytes};
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion, Throughput};
use kafkalite::{BatchBuilder, Compression, Durability, LogConfig, PartitionLog, Record};
use std::io::Write;
use std::time::{Duration, Instant};

const UNIT: usize = 1000;

/// Kafka's default segment size (`segment.bytes`, 1 GiB).
const SEGMENT: u64 = 1 << 30;

type Group<'a> = BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Kafka's defaults (1 GiB segments); `segment_bytes` overrides the size.
fn config_with(segment_bytes: u32) -> LogConfig {
    let mut c = LogConfig::default();
    c.settings.segment_bytes = segment_bytes;
    c
}

fn config() -> LogConfig {
    let c = LogConfig::default();
    assert_eq!(
        u64::from(c.settings.segment_bytes),
        SEGMENT,
        "Kafka's default segment.bytes"
    );
    c
}

fn fresh_log() -> (tempfile::TempDir, PartitionLog) {
    fresh_log_with(config())
}

fn fresh_log_with(config: LogConfig) -> (tempfile::TempDir, PartitionLog) {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("flows-0"), config).unwrap();
    (d, log)
}

fn throughput(g: &mut Group<'_>, records: &[Record], by_bytes: bool) {
    g.throughput(if by_bytes {
        Throughput::Bytes(value_bytes(records))
    } else {
        Throughput::Elements(records.len() as u64)
    });
}

fn group<'a>(c: &'a mut Criterion, name: &str, by_bytes: bool) -> Group<'a> {
    let kind = if by_bytes { "bytes" } else { "records" };
    let mut g = c.benchmark_group(format!("{name}_{kind}"));
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g
}

/// Runs `iters` iterations of `step`, each writing `unit` bytes into the
/// state `open` makes (a new file or an empty log in a fresh directory),
/// and returns the time they took. Each state takes at most `limit` bytes:
/// before the iteration that would pass it, the timing pauses while a new
/// state replaces the full one (so a log with `limit`-byte segments never
/// rolls, and a raw file grows no larger than a segment).
fn timed_within<S>(
    iters: u64,
    unit: u64,
    limit: u64,
    mut open: impl FnMut() -> S,
    mut step: impl FnMut(&S),
) -> Duration {
    let mut state = open();
    let mut filled = 0u64;
    let mut total = Duration::ZERO;
    let mut start = Instant::now();
    for _ in 0..iters {
        if filled > 0 && filled + unit > limit {
            total += start.elapsed();
            state = open();
            filled = 0;
            start = Instant::now();
        }
        step(&state);
        filled += unit;
    }
    total + start.elapsed()
}

/// Bytes of `records` encoded uncompressed in batches of `per_batch`.
fn encoded_len(records: &[Record], per_batch: usize) -> u64 {
    total_len(&encode_in(records, per_batch))
}

/// Total length of `batches`.
fn total_len(batches: &[bytes::Bytes]) -> u64 {
    batches.iter().map(|b| b.len() as u64).sum()
}

/// A new, empty file in a fresh directory.
fn new_file() -> (tempfile::TempDir, std::fs::File) {
    let d = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(d.path().join("raw.log")).unwrap();
    (d, f)
}

/// The records encoded as uncompressed batches of 1,000.
fn encode(records: &[Record]) -> Vec<bytes::Bytes> {
    encode_in(records, 1000)
}

/// The records encoded as uncompressed batches of `per_batch`.
fn encode_in(records: &[Record], per_batch: usize) -> Vec<bytes::Bytes> {
    records
        .chunks(per_batch)
        .map(|chunk| {
            let mut b = BatchBuilder::new(Compression::None);
            for r in chunk {
                b.push(r);
            }
            b.build()
        })
        .collect()
}

/// Raw baseline: `encoded` written with `write_all` into a new file (see
/// [`timed_within`]), every iteration appending.
fn raw_write(g: &mut Group<'_>, name: &str, encoded: &[bytes::Bytes]) {
    let unit = total_len(encoded);
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            timed_within(iters, unit, SEGMENT, new_file, |(_, file)| {
                let mut f = file;
                for batch in encoded {
                    f.write_all(batch).unwrap();
                }
            })
        })
    });
}

/// Raw lz4 baseline: each batch's record bytes (after the 61-byte header)
/// compressed in 64 KiB blocks with `lz4_flex` into a reused buffer, which
/// is then written with `write_all` (a new file, see [`timed_within`]).
fn raw_lz4_write(g: &mut Group<'_>, encoded: &[bytes::Bytes]) {
    const HEADER: usize = 61;
    const BLOCK: usize = 64 << 10;
    let unit = total_len(encoded);
    g.bench_function("raw_lz4_write_new_file", |b| {
        b.iter_custom(|iters| {
            let out = std::cell::RefCell::new(vec![0u8; 2 << 20]);
            timed_within(iters, unit, SEGMENT, new_file, |(_, file)| {
                let mut f = file;
                let mut out = out.borrow_mut();
                for batch in encoded {
                    let mut len = 0;
                    for chunk in batch[HEADER..].chunks(BLOCK) {
                        len += lz4_flex::block::compress_into(chunk, &mut out[len..]).unwrap();
                    }
                    f.write_all(&out[..len]).unwrap();
                }
            })
        })
    });
}

/// A second reference: the records encoded with `BatchBuilder` in every
/// iteration (one batch of 1,000, its buffer sized up front, as
/// `append_records` sizes it from the records; here from a 400-byte
/// estimate), then written with `write_all` (a new file, see
/// [`timed_within`]). The gap between this and `raw_write_all_new_file` is
/// the cost of encoding (copy + CRC-32C).
fn raw_encode_write(g: &mut Group<'_>, records: &[Record]) {
    let unit = encoded_len(records, 1000);
    g.bench_function("raw_encode_write_new_file", |b| {
        b.iter_custom(|iters| {
            timed_within(iters, unit, SEGMENT, new_file, |(_, file)| {
                let mut f = file;
                for chunk in records.chunks(1000) {
                    let mut b = BatchBuilder::with_capacity(Compression::None, 400 * chunk.len());
                    for r in chunk {
                        b.push(r);
                    }
                    f.write_all(&b.build()).unwrap();
                }
            })
        })
    });
}

fn written(c: &mut Criterion, by_bytes: bool) {
    let records = flow_records(UNIT);
    let encoded = encode(&records);
    let mut g = group(c, "append", by_bytes);
    throughput(&mut g, &records, by_bytes);
    raw_write(&mut g, "raw_write_all_new_file", &encoded);
    raw_encode_write(&mut g, &records);
    raw_lz4_write(&mut g, &encoded);
    // The same bytes as `raw_write_all_new_file`: batches encoded once,
    // outside the timing, appended with `PartitionLog::append` (which checks
    // each batch's CRC and records, assigns offsets, writes and indexes).
    let prebuilt: Vec<Vec<u8>> = encoded.iter().map(|b| b.to_vec()).collect();
    let prebuilt = std::cell::RefCell::new(prebuilt);
    let unit = total_len(&encoded);
    // Within Kafka's 1 GiB segments (as the raw rows, never rolling), and
    // with 64 MiB segments in one log per sample, which rolls (and flushes
    // the rolled segment in the background) every ~200,000 records.
    for (name, segment_bytes, limit) in [
        ("written/none/prebuilt_batch_1000", SEGMENT as u32, SEGMENT),
        (
            "written/none/prebuilt_batch_1000/64MiB_segments",
            64 << 20,
            u64::MAX,
        ),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let open = || fresh_log_with(config_with(segment_bytes));
                timed_within(iters, unit, limit, open, |(_, log)| {
                    for batch in prebuilt.borrow_mut().iter_mut() {
                        log.append(batch, Durability::Written).unwrap();
                    }
                })
            })
        });
    }
    for compression in [Compression::None, Compression::Lz4] {
        for per_batch in [1usize, 100, 1000] {
            let name = format!("written/{}/batch_{per_batch}", compression.name());
            // Uncompressed size: lz4 logs are swapped earlier than needed.
            let unit = encoded_len(&records, per_batch);
            g.bench_function(name, |b| {
                b.iter_custom(|iters| {
                    timed_within(iters, unit, SEGMENT, fresh_log, |(_, log)| {
                        for chunk in records.chunks(per_batch) {
                            log.append_records(chunk, compression, Durability::Written)
                                .unwrap();
                        }
                    })
                })
            });
        }
    }
    g.finish();
}

fn parallel(c: &mut Criterion, by_bytes: bool) {
    const PARTITIONS: usize = 4;
    let records = flow_records(UNIT);
    let all: Vec<Record> = (0..PARTITIONS)
        .flat_map(|_| records.iter().cloned())
        .collect();
    let mut g = group(c, "append_parallel", by_bytes);
    throughput(&mut g, &all, by_bytes);
    for threads in [1usize, 2] {
        let name = format!("written/lz4/batch_1000/{PARTITIONS}_partitions/{threads}_threads");
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let d = tempfile::tempdir().unwrap();
                let logs: Vec<PartitionLog> = (0..PARTITIONS)
                    .map(|p| PartitionLog::open(d.path().join(format!("flows-{p}")), config()))
                    .collect::<Result<_, _>>()
                    .unwrap();
                let start = Instant::now();
                std::thread::scope(|s| {
                    for mine in logs.chunks(PARTITIONS / threads) {
                        let records = &records;
                        s.spawn(move || {
                            for _ in 0..iters {
                                for log in mine {
                                    log.append_records(
                                        records,
                                        Compression::Lz4,
                                        Durability::Written,
                                    )
                                    .unwrap();
                                }
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
    }
    g.finish();
}

fn fsync(c: &mut Criterion, by_bytes: bool) {
    let records = flow_records(100);
    let batch = encode(&records).concat();
    let mut g = group(c, "append_fsync", by_bytes);
    for threads in [1usize, 4, 8] {
        // Every thread appends one batch of 100 per iteration; acknowledged
        // appends are on disk (group commit shares the fsyncs).
        let all: Vec<Record> = (0..threads).flat_map(|_| records.iter().cloned()).collect();
        throughput(&mut g, &all, by_bytes);
        // Raw baseline: the same bytes per fsync from one thread, encoded
        // once outside the timing: `threads` batches written with
        // `write_all`, then one `sync_data` (fdatasync) per iteration. The
        // ceiling for group commit on this disk: no encoding, no locks, no
        // waiting for other threads.
        g.bench_function(format!("raw_write_fdatasync/{threads}_batches"), |b| {
            b.iter_custom(|iters| {
                let (_d, file) = new_file();
                let mut f = &file;
                let start = Instant::now();
                for _ in 0..iters {
                    for _ in 0..threads {
                        f.write_all(&batch).unwrap();
                    }
                    file.sync_data().unwrap();
                }
                start.elapsed()
            })
        });
        // Raw, concurrent: `threads` threads each writing a batch at its own
        // offset (`write_all_at`) and calling `sync_data` themselves, as
        // often as the kafkalite row appends: what the kernel alone makes
        // of concurrent fdatasyncs on one file.
        g.bench_function(format!("raw_concurrent_fdatasync/{threads}_threads"), |b| {
            b.iter_custom(|iters| {
                let (_d, file) = new_file();
                let next = std::sync::atomic::AtomicU64::new(0);
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            use std::os::unix::fs::FileExt;
                            for _ in 0..iters {
                                let at = next.fetch_add(
                                    batch.len() as u64,
                                    std::sync::atomic::Ordering::Relaxed,
                                );
                                file.write_all_at(&batch, at).unwrap();
                                file.sync_data().unwrap();
                            }
                        });
                    }
                });
                start.elapsed()
            })
        });
        g.bench_function(format!("fsync/none/batch_100/{threads}_threads"), |b| {
            b.iter_custom(|iters| {
                let (_d, log) = fresh_log();
                let start = Instant::now();
                std::thread::scope(|s| {
                    for _ in 0..threads {
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
                    "  {threads} threads: {} appends, {} fsyncs",
                    threads as u64 * iters,
                    log.fsync_count()
                );
                elapsed
            })
        });
    }
    g.finish();
}

fn sizes(c: &mut Criterion, by_bytes: bool) {
    let mut g = group(c, "append_sizes", by_bytes);
    for size in [100usize, 1024] {
        let records = sized_records(UNIT, size);
        let encoded = encode(&records);
        throughput(&mut g, &records, by_bytes);
        raw_write(&mut g, &format!("{size}B/raw_write_all_new_file"), &encoded);
        let unit = total_len(&encoded);
        // The very bytes the raw row writes, appended with `append`.
        let prebuilt = std::cell::RefCell::new(encoded.concat());
        g.bench_function(format!("{size}B/written/none/prebuilt_batch_1000"), |b| {
            b.iter_custom(|iters| {
                timed_within(iters, unit, SEGMENT, fresh_log, |(_, log)| {
                    log.append(&mut prebuilt.borrow_mut(), Durability::Written)
                        .unwrap();
                })
            })
        });
        g.bench_function(format!("{size}B/written/none/batch_1000"), |b| {
            b.iter_custom(|iters| {
                timed_within(iters, unit, SEGMENT, fresh_log, |(_, log)| {
                    log.append_records(&records, Compression::None, Durability::Written)
                        .unwrap();
                })
            })
        });
    }
    g.finish();
}

fn benches(c: &mut Criterion) {
    for by_bytes in [true, false] {
        written(c, by_bytes);
        parallel(c, by_bytes);
        fsync(c, by_bytes);
        sizes(c, by_bytes);
    }
}

criterion_group!(append, benches);
criterion_main!(append);
