//! `perf produce`: records sent through the producer, with throughput and
//! latency percentiles as kafka-producer-perf-test.sh prints them.

use super::baseline::{add_baseline, write_baseline};
use super::clock::Clock;
use super::window::{report_intervals, Shared, ThreadStats, Windows};
use super::{percentiles, rate_report, MB};
use crate::client::producer_config;
use crate::sample::{flow_payload, FlowRecords};
use crate::util::{print_json, with_store_options, CliError, CliResult, Progress};
use crate::ProducerArgs;
use bytes::Bytes;
use clap::Args;
use kafkalite::{Producer, ProducerRecord, StoreOptions, TopicConfig};
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `perf produce`'s arguments.
#[derive(Args, Debug)]
#[command(group = clap::ArgGroup::new("payload").required(true))]
pub struct ProduceArgs {
    /// The topic (created when missing).
    #[arg(long)]
    topic: String,
    /// Partitions of the topic when it is created.
    #[arg(long, default_value_t = 1)]
    partitions: u32,
    /// Number of records to send.
    #[arg(long)]
    records: u64,
    /// Size of each record: network-flow lines cut to this many bytes.
    #[arg(long, value_name = "BYTES", group = "payload")]
    record_size: Option<usize>,
    /// Payloads, one per line, used in turn.
    #[arg(long, value_name = "FILE", group = "payload")]
    payload_file: Option<PathBuf>,
    /// Producer settings.
    #[command(flatten)]
    producer: ProducerArgs,
    /// Sending threads, sharing one producer; each claims the next 1,024
    /// records to send until all are claimed.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Give the records keys, `key-0` … `key-{N-1}` in turn, which the
    /// default partitioner hashes (murmur2) as Kafka's does. 0: keyless
    /// (the sticky partitioner spreads them).
    #[arg(long, value_name = "N", default_value_t = 0)]
    keys: usize,
    /// Afterwards, write the same payload bytes with plain `write()` calls
    /// (64 KiB at a time, no fsync) into a new file in the store's directory,
    /// and print that rate and kafkalite's ratio to it.
    #[arg(long)]
    baseline: bool,
    /// Output format (JSON: one object).
    #[command(flatten)]
    out: crate::args::OutputArgs,
    /// Print a line every this many milliseconds while sending: records/s,
    /// MB/s, average and max latency over the interval, as
    /// kafka-producer-perf-test.sh does every 5 s (to stderr with JSON
    /// output, so stdout stays one JSON object). 0 turns them off.
    #[arg(long, value_name = "MS", default_value_t = 5000)]
    reporting_interval: u64,
    /// The store's `writeback_bytes` (write-behind: start the disk writes of
    /// each partition's appends every this many bytes; 0 off). Default: the
    /// library's, 1 MiB.
    #[arg(long, value_name = "BYTES")]
    writeback_bytes: Option<u64>,
}

fn payloads(a: &ProduceArgs) -> CliResult<Vec<Bytes>> {
    if let Some(f) = &a.payload_file {
        let text = std::fs::read(f)
            .map_err(|e| CliError::msg(format!("cannot read {}: {e}", f.display())))?;
        let v: Vec<Bytes> = text
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .filter(|l| !l.is_empty())
            .map(Bytes::copy_from_slice)
            .collect();
        if v.is_empty() {
            return Err(CliError::msg(format!("{}: no payloads", f.display())));
        }
        return Ok(v);
    }
    let size = a.record_size.unwrap_or(300);
    // A pool generated before timing (as Kafka's tool does), large enough
    // that compression sees realistic, varied data.
    let mut flows = FlowRecords::new(42);
    let n = a.records.clamp(1, 10_000) as usize;
    Ok((0..n)
        .map(|_| Bytes::from(flow_payload(&mut flows, size)))
        .collect())
}

/// The payloads moved into one buffer that lives as long as the process,
/// each a static `Bytes` of it. Every sending thread reads the same pool,
/// as every thread of Kafka's tool sends from one payload array: cloning a
/// static `Bytes` counts no references (a shared refcounted pool would have
/// every sender write the same cache lines; a copy per thread put 3 MB a
/// thread through the caches, and with 4 threads the copy of each payload
/// into its batch took 14–19 % of the run's samples, against 4.5 % with 2).
fn shared_pool(payloads: Vec<Bytes>) -> Vec<Bytes> {
    let all: &'static [u8] = Vec::leak(payloads.iter().flat_map(|b| b.iter().copied()).collect());
    let mut at = 0;
    payloads
        .iter()
        .map(|b| {
            let (start, end) = (at, at + b.len());
            at = end;
            Bytes::from_static(all.get(start..end).unwrap_or_default())
        })
        .collect()
}

/// How many records a sending thread claims at a time: about half a
/// millisecond of one thread's sending, a claim's atomic add among 1,024
/// sends.
const CLAIM: u64 = 1024;

/// At most this many latencies are kept for the percentiles, 4 bytes each
/// (Kafka's tool keeps 500,000): a longer run keeps every `stride`-th
/// record's, as a slot per record would take 4 GB for a billion records.
/// The average and the maximum count every record.
const LATENCY_SAMPLES: u64 = 1 << 20;

/// Which records keep their latency (see [`LATENCY_SAMPLES`]): record `i`
/// when `i` is a multiple of the stride, in slot `i / stride`; counted on
/// rather than divided.
struct Samples {
    stride: u64,
    /// The slot of the next record that keeps its latency.
    slot: u64,
    /// Records before it.
    gap: u64,
}

impl Samples {
    /// From record `first` on.
    fn starting_at(first: u64, stride: u64) -> Samples {
        let slot = first.div_ceil(stride);
        Samples {
            stride,
            slot,
            gap: slot * stride - first,
        }
    }

    /// The next record's slot, `usize::MAX` (no slot) if it keeps none.
    fn next_slot(&mut self) -> usize {
        if self.gap == 0 {
            self.gap = self.stride - 1;
            self.slot += 1;
            (self.slot - 1) as usize
        } else {
            self.gap -= 1;
            usize::MAX
        }
    }
}

/// Runs `perf produce`.
pub fn produce(dir: &Path, a: &ProduceArgs) -> CliResult<()> {
    if a.threads == 0 || a.records == 0 {
        return Err(CliError::msg("--threads and --records must be positive"));
    }
    if a.record_size == Some(0) {
        return Err(CliError::msg("--record-size must be positive"));
    }
    let pool = shared_pool(payloads(a)?);
    let mut options = StoreOptions::default();
    if let Some(n) = a.writeback_bytes {
        options.writeback_bytes = n;
    }
    with_store_options(dir, options, |store| {
        if !store.list_topics().contains(&a.topic) {
            store.create_topic(&a.topic, a.partitions, TopicConfig::default())?;
        }
        let mut producer = Producer::new(store, producer_config(&a.producer)?)?;
        let done = Arc::new(AtomicU64::new(0));
        let windows = Windows::leak(&done);
        let clock = Clock::new();
        // For the life of the process (as the payload pool): each record's
        // callback then holds plain references, where an `Arc` counted two
        // atomic operations a record.
        let stride = a.records.div_ceil(LATENCY_SAMPLES);
        let latency_us: &'static [AtomicU32] = Vec::leak(
            (0..a.records.div_ceil(stride))
                .map(|_| AtomicU32::new(0))
                .collect(),
        );
        let shared = Arc::new(Shared {
            threads: (0..a.threads)
                .map(|_| &*Box::leak(Box::new(ThreadStats::new(latency_us, windows, clock))))
                .collect(),
            windows,
            done,
            error: Mutex::new(None),
        });
        // The next record no thread has claimed yet.
        let unclaimed = AtomicU64::new(0);
        // Interval lines replace the progress line.
        let progress = (a.reporting_interval == 0)
            .then(|| Progress::start("perf produce", Arc::clone(&shared.done)));
        let bytes = AtomicU64::new(0);
        let start = Instant::now();
        let stop_reporting = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let reporter = (a.reporting_interval > 0).then(|| {
                let (shared, stop) = (&shared, &stop_reporting);
                let every = Duration::from_millis(a.reporting_interval);
                s.spawn(move || report_intervals(shared, every, stop, a.out.json()))
            });
            let senders: Vec<_> = (0..a.threads)
                .map(|t| {
                    let (producer, shared, pool, bytes) = (&producer, &shared, &pool, &bytes);
                    let unclaimed = &unclaimed;
                    let mine = &shared.threads[t];
                    s.spawn(move || {
                        // One shared topic name a thread, cloned into each
                        // record (as a Java sender shares its topic String),
                        // with allocations around it so that no other
                        // thread's name shares its cache line: two 17-byte
                        // names allocated one after the other do, and every
                        // record's reference count then bounced between the
                        // cores (`perf annotate`: 3 % of a two-thread run on
                        // that one decrement).
                        let apart = [vec![0u8; 128], vec![0u8; 128]];
                        let topic: Arc<str> = Arc::from(a.topic.as_str());
                        let apart_after = vec![0u8; 128];
                        // Static, as the payloads are: a clone counts no
                        // references.
                        let keys = shared_pool(
                            (0..a.keys)
                                .map(|k| Bytes::from(format!("key-{k}")))
                                .collect(),
                        );
                        let mut sent_bytes = 0u64;
                        // Records are claimed CLAIM at a time, so the threads
                        // send until the last record is claimed and finish
                        // within a run of each other: with a fixed share
                        // each, a thread the scheduler had run less than the
                        // others was still sending, alone on one core, for
                        // the last 56 ms of a 530 ms run of four threads.
                        'claims: loop {
                            let from = unclaimed.fetch_add(CLAIM, Ordering::Relaxed);
                            if from >= a.records {
                                break;
                            }
                            let to = (from + CLAIM).min(a.records);
                            // Record i takes payload i mod the pool's size and
                            // key i mod the keys' count, counted on rather
                            // than divided.
                            let mut payload = (from % pool.len() as u64) as usize;
                            let mut key = match keys.len() as u64 {
                                0 => 0,
                                n => (from % n) as usize,
                            };
                            let mut samples = Samples::starting_at(from, stride);
                            for _ in from..to {
                                let value = pool[payload].clone();
                                payload += 1;
                                if payload == pool.len() {
                                    payload = 0;
                                }
                                let value_len = value.len();
                                sent_bytes += value_len as u64;
                                // One clock reading a record gives both its
                                // timestamp and the start of its latency, as
                                // Kafka's tool reads the wall clock at the
                                // send and in the callback (`clock.rs`: the
                                // time-stamp counter where it can).
                                let sent_us = mine.clock.now_us();
                                let record_key = keys.get(key).cloned();
                                if record_key.is_some() {
                                    key += 1;
                                    if key == keys.len() {
                                        key = 0;
                                    }
                                }
                                // Built in place: the builder's chain moved
                                // the whole record through the stack once a
                                // call (`perf annotate`: about a quarter of
                                // this loop's samples with keys).
                                let record = ProducerRecord {
                                    topic: Arc::clone(&topic),
                                    partition: None,
                                    timestamp: Some((sent_us / 1000) as i64),
                                    key: record_key,
                                    value: Some(value),
                                    headers: Vec::new(),
                                };
                                let st: &'static ThreadStats = mine;
                                let sample = samples.next_slot();
                                // Four words, which the producer keeps in the
                                // callback itself (a fifth would be boxed).
                                let len = value_len as u64;
                                let r = producer.send_with_callback(record, move |r| {
                                    // A clock set back meanwhile counts as 0.
                                    let us = st
                                        .clock
                                        .now_us()
                                        .saturating_sub(sent_us)
                                        .min(u64::from(u32::MAX));
                                    if let Some(slot) = st.latency_us.get(sample) {
                                        slot.store(us as u32, Ordering::Relaxed);
                                    }
                                    st.windows.add(len, us);
                                    if let Err(e) = r {
                                        st.error.lock().get_or_insert(CliError::from(e).0);
                                    }
                                });
                                if let Err(e) = r {
                                    shared.error.lock().get_or_insert(CliError::from(e).0);
                                    break 'claims;
                                }
                            }
                        }
                        bytes.fetch_add(sent_bytes, Ordering::Relaxed);
                        drop((apart, apart_after));
                    })
                })
                .collect();
            for t in senders {
                if let Err(panic) = t.join() {
                    std::panic::resume_unwind(panic);
                }
            }
            // The last, partial interval is covered by the summary.
            stop_reporting.store(true, Ordering::Release);
            if let Some(r) = reporter {
                let _ = r.join();
            }
        });
        let flushed = producer.flush();
        let seconds = start.elapsed().as_secs_f64();
        drop(progress);
        producer.close()?;
        flushed?;
        let thread_error = shared.threads.iter().find_map(|t| t.error.lock().take());
        if let Some(e) = shared.error.lock().take().or(thread_error) {
            return Err(CliError::msg(e));
        }
        let mut lat: Vec<u32> = latency_us
            .iter()
            .map(|v| v.load(Ordering::Relaxed))
            .collect();
        let [_, p50, p99, p999, _] = percentiles(&mut lat);
        let (avg, max) = shared.windows.run_latency();
        let records = a.records;
        let bytes = bytes.load(Ordering::Relaxed) as f64;
        let (rps, mbps) = (records as f64 / seconds, bytes / MB / seconds);
        let baseline = if a.baseline {
            Some(write_baseline(dir, &pool, records)?)
        } else {
            None
        };
        if a.out.json() {
            let mut j = rate_report(
                records,
                bytes,
                seconds,
                "latency",
                [avg, p50, p99, p999, max],
            );
            add_baseline(&mut j, baseline, mbps);
            if let Some(map) = j.as_object_mut() {
                // What the store ran with (`--writeback-bytes`, or its default).
                map.insert(
                    "writeback_bytes".into(),
                    store.options().writeback_bytes.into(),
                );
            }
            print_json(&j)?;
        } else {
            println!(
                "{records} records sent in {seconds:.2} s, {rps:.1} records/sec ({mbps:.2} MB/sec), {avg:.2} ms avg latency, {max:.2} ms max latency, {p50:.2} ms 50th, {p99:.2} ms 99th, {p999:.2} ms 99.9th."
            );
            if let Some(b) = baseline {
                println!(
                    "baseline: plain write() of the same bytes, 64 KiB at a time: {:.2} MB/sec; kafkalite / baseline = {}",
                    b.mb_per_sec,
                    b.ratio_text(mbps)
                );
            }
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stride_th_record_keeps_its_latency_in_slot_index_over_stride() {
        for stride in [1, 2, 3, 7, 1024] {
            for first in [0, 1, 5, 1023, 1024, 1025, 7 * 1024] {
                let mut samples = Samples::starting_at(first, stride);
                for i in first..first + 3000 {
                    let want = if i % stride == 0 {
                        (i / stride) as usize
                    } else {
                        usize::MAX
                    };
                    assert_eq!(samples.next_slot(), want, "record {i}, stride {stride}");
                }
            }
        }
        // The slots a run's stride gives fill the array exactly.
        for records in [
            1,
            1000,
            LATENCY_SAMPLES,
            LATENCY_SAMPLES + 1,
            3 * LATENCY_SAMPLES + 5,
        ] {
            let stride = records.div_ceil(LATENCY_SAMPLES);
            let slots = records.div_ceil(stride);
            assert!(slots <= LATENCY_SAMPLES);
            assert_eq!((records - 1) / stride, slots - 1, "{records} records");
        }
    }
}
