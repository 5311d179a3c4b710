//! `perf consume`: consumer threads reading a topic, with throughput as
//! kafka-consumer-perf-test.sh prints it.

use super::baseline::{add_baseline, read_baseline};
use super::{percentiles, rate_report, MB};
use crate::util::{print_json, with_store, CliError, CliResult, Progress};
use clap::Args;
use kafkalite::{Consumer, ConsumerConfig, OffsetReset, Store, TopicPartition};
use parking_lot::Mutex;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// `perf consume`'s arguments.
#[derive(Args, Debug)]
pub struct ConsumeArgs {
    /// The topic.
    #[arg(long)]
    topic: String,
    /// Consume as this group (from its committed offsets, else the beginning).
    #[arg(long)]
    group: Option<String>,
    /// Consuming threads, each with its own consumer.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Stop after this many records (default: everything readable at the start).
    #[arg(long)]
    records: Option<u64>,
    /// Give up when no record arrives for this long.
    #[arg(long, value_name = "MS", default_value_t = 2000)]
    timeout_ms: u64,
    /// Afterwards, read the topic's `.log` files with plain `std::fs` calls
    /// and check every batch's CRC-32C, and print that rate and kafkalite's
    /// ratio to it.
    #[arg(long)]
    baseline: bool,
    /// Output format (JSON: one object).
    #[command(flatten)]
    out: crate::args::OutputArgs,
}

/// Records readable now from where the consumers will start.
fn records_available(store: &Store, topic: &str, group: Option<&str>) -> CliResult<u64> {
    let mut total = 0u64;
    for p in 0..store.partition_count(topic)? {
        let log = store.partition(topic, p)?;
        let start = group
            .and_then(|g| store.committed_offset(g, topic, p))
            .map_or(log.log_start_offset(), |o| o.offset)
            .clamp(log.log_start_offset(), log.high_watermark());
        total += (log.high_watermark() - start).max(0) as u64;
    }
    Ok(total)
}

struct Consumed {
    records: AtomicU64,
    bytes: AtomicU64,
    polls: AtomicU64,
    /// Microseconds from the start to the last record received.
    last_us: AtomicU64,
    poll_us: Mutex<Vec<u32>>,
    error: Mutex<Option<String>>,
}

fn consume_thread(
    store: &Store,
    a: &ConsumeArgs,
    parts: Vec<u32>,
    target: u64,
    c: &Consumed,
    start: Instant,
) -> kafkalite::Result<()> {
    let mut config = match &a.group {
        Some(g) => ConsumerConfig::with_group(g.as_str()),
        None => ConsumerConfig::default(),
    };
    config.auto_offset_reset = OffsetReset::Earliest;
    config.max_poll_records = 2000;
    let mut consumer = Consumer::new(store, config)?;
    if a.group.is_some() {
        consumer.subscribe(&[a.topic.as_str()])?;
    } else {
        let tps: Vec<TopicPartition> = parts
            .iter()
            .map(|&p| TopicPartition::new(a.topic.as_str(), p))
            .collect();
        consumer.assign(&tps)?;
        consumer.seek_to_beginning(&tps)?;
    }
    let timeout = Duration::from_millis(a.timeout_ms);
    let mut last = Instant::now();
    let mut poll_us = Vec::new();
    while c.records.load(Ordering::Relaxed) < target && last.elapsed() < timeout {
        let t = Instant::now();
        let records = consumer.poll(Duration::from_millis(100))?;
        if records.is_empty() {
            continue;
        }
        poll_us.push(t.elapsed().as_micros().min(u128::from(u32::MAX)) as u32);
        last = Instant::now();
        let bytes: usize = records
            .iter()
            .map(|r| r.key.map_or(0, <[u8]>::len) + r.value.map_or(0, <[u8]>::len))
            .sum();
        c.records.fetch_add(records.len() as u64, Ordering::Relaxed);
        c.bytes.fetch_add(bytes as u64, Ordering::Relaxed);
        c.polls.fetch_add(1, Ordering::Relaxed);
        c.last_us
            .fetch_max(start.elapsed().as_micros() as u64, Ordering::Relaxed);
    }
    c.poll_us.lock().extend(poll_us);
    consumer.close()
}

/// Runs `perf consume`.
pub fn consume(dir: &Path, a: &ConsumeArgs) -> CliResult<()> {
    if a.threads == 0 {
        return Err(CliError::msg("--threads must be positive"));
    }
    with_store(dir, false, |store| {
        let partitions = store.partition_count(&a.topic)?;
        let available = records_available(store, &a.topic, a.group.as_deref())?;
        let target = a.records.map_or(available, |n| n.min(available));
        // Without a group, partitions are dealt out to the threads.
        let threads = if a.group.is_some() {
            a.threads
        } else {
            a.threads.min(partitions as usize)
        };
        let c = Consumed {
            records: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            polls: AtomicU64::new(0),
            last_us: AtomicU64::new(0),
            poll_us: Mutex::new(Vec::new()),
            error: Mutex::new(None),
        };
        let done = Arc::new(AtomicU64::new(0));
        let start = Instant::now();
        std::thread::scope(|s| {
            for t in 0..threads {
                let parts: Vec<u32> = (0..partitions)
                    .filter(|p| *p as usize % threads == t)
                    .collect();
                let c = &c;
                s.spawn(move || {
                    if let Err(e) = consume_thread(store, a, parts, target, c, start) {
                        c.error.lock().get_or_insert(CliError::from(e).0);
                    }
                });
            }
            // Progress from the shared counter.
            let _progress = Progress::start("perf consume", Arc::clone(&done));
            while c.records.load(Ordering::Relaxed) < target && c.error.lock().is_none() {
                done.store(c.records.load(Ordering::Relaxed), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
                if start.elapsed() > Duration::from_secs(3600 * 24) {
                    break;
                }
                if stalled_or_done(&c, target, start, a.timeout_ms) {
                    break;
                }
            }
        });
        if let Some(e) = c.error.lock().take() {
            return Err(CliError::msg(e));
        }
        let records = c.records.load(Ordering::Relaxed);
        let bytes = c.bytes.load(Ordering::Relaxed) as f64;
        let seconds = (c.last_us.load(Ordering::Relaxed) as f64 / 1e6).max(1e-6);
        let (rps, mbps) = (records as f64 / seconds, bytes / MB / seconds);
        let [avg, p50, p99, p999, max] = percentiles(&mut c.poll_us.lock());
        let polls = c.polls.load(Ordering::Relaxed);
        let baseline = if a.baseline {
            Some(read_baseline(
                store,
                &a.topic,
                bytes / records.max(1) as f64,
            )?)
        } else {
            None
        };
        if a.out.json() {
            let mut j = rate_report(records, bytes, seconds, "poll", [avg, p50, p99, p999, max]);
            if let Some(map) = j.as_object_mut() {
                map.insert("polls".into(), polls.into());
            }
            add_baseline(&mut j, baseline, mbps);
            print_json(&j)?;
        } else {
            println!(
                "{records} records ({:.2} MB) consumed in {seconds:.2} s, {rps:.1} records/sec ({mbps:.2} MB/sec), {polls} polls, poll latency {avg:.2} ms avg, {p50:.2} ms 50th, {p99:.2} ms 99th, {p999:.2} ms 99.9th, {max:.2} ms max.",
                bytes / MB
            );
            if let Some(b) = baseline {
                println!(
                    "baseline: the topic's .log files read with std::fs, every batch's CRC-32C checked: {:.1} records/sec ({:.2} MB/sec of those bytes); kafkalite / baseline = {}",
                    b.records_per_sec,
                    b.mb_per_sec,
                    b.ratio_text(mbps)
                );
            }
        }
        if records < target {
            return Err(CliError::msg(format!(
                "only {records} of {target} records arrived within --timeout-ms"
            )));
        }
        Ok(())
    })
}

/// Whether the consumers stopped receiving for longer than the timeout
/// (they then return by themselves).
fn stalled_or_done(c: &Consumed, target: u64, start: Instant, timeout_ms: u64) -> bool {
    let last = Duration::from_micros(c.last_us.load(Ordering::Relaxed));
    c.records.load(Ordering::Relaxed) >= target
        || start.elapsed().saturating_sub(last) > Duration::from_millis(timeout_ms + 500)
}
