//! `perf produce` and `perf consume`: kafka-producer-perf-test.sh and
//! kafka-consumer-perf-test.sh over a local store.

use crate::client::producer_config;
use crate::util::{json_f64, print_json, with_store, CliError, CliResult, Progress};
use crate::ProducerArgs;
use bytes::Bytes;
use clap::Args;
use kafkalite::record::{BatchHeader, HEADER_SIZE};
use kafkalite::sample::{flow_payload, FlowRecords};
use kafkalite::{
    Consumer, ConsumerConfig, OffsetReset, Producer, ProducerRecord, Store, TopicConfig,
    TopicPartition,
};
use parking_lot::Mutex;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const MB: f64 = 1024.0 * 1024.0;

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
    /// Sending threads, sharing one producer.
    #[arg(long, default_value_t = 1)]
    threads: usize,
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
}

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

struct Shared {
    latency_us: Vec<AtomicU32>,
    done: Arc<AtomicU64>,
    error: Mutex<Option<String>>,
    /// The current reporting interval's records, bytes, latency sum and max.
    window: Window,
}

#[derive(Default)]
struct Window {
    records: AtomicU64,
    bytes: AtomicU64,
    latency_sum_us: AtomicU64,
    latency_max_us: AtomicU64,
}

impl Window {
    fn add(&self, bytes: u64, us: u64) {
        self.records.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(us, Ordering::Relaxed);
        self.latency_max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// The interval's line, and a fresh interval.
    fn take(&self, seconds: f64) -> String {
        let n = self.records.swap(0, Ordering::Relaxed);
        let bytes = self.bytes.swap(0, Ordering::Relaxed);
        let sum = self.latency_sum_us.swap(0, Ordering::Relaxed);
        let max = self.latency_max_us.swap(0, Ordering::Relaxed);
        let avg = if n == 0 {
            0.0
        } else {
            sum as f64 / n as f64 / 1000.0
        };
        format!(
            "{n} records sent, {:.1} records/sec ({:.2} MB/sec), {avg:.1} ms avg latency, {:.1} ms max latency.",
            n as f64 / seconds,
            bytes as f64 / MB / seconds,
            max as f64 / 1000.0
        )
    }
}

/// Prints the window's line every `every` until `stop`; the lines go to
/// stderr when stdout holds JSON.
fn report_intervals(
    shared: &Shared,
    every: Duration,
    stop: &std::sync::atomic::AtomicBool,
    to_stderr: bool,
) {
    let mut last = Instant::now();
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(10).min(every));
        let elapsed = last.elapsed();
        if elapsed < every {
            continue;
        }
        last = Instant::now();
        let line = shared.window.take(elapsed.as_secs_f64());
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

/// Latency percentiles in ms, from microsecond samples (sorted in place).
fn percentiles(samples: &mut [u32]) -> [f64; 5] {
    if samples.is_empty() {
        return [0.0; 5];
    }
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
        f64::from(samples[i]) / 1000.0
    };
    let avg = samples.iter().map(|&v| f64::from(v)).sum::<f64>() / samples.len() as f64 / 1000.0;
    [avg, at(0.5), at(0.99), at(0.999), at(1.0)]
}

/// Runs `perf produce`.
pub fn produce(dir: &Path, a: &ProduceArgs) -> CliResult<()> {
    if a.threads == 0 || a.records == 0 {
        return Err(CliError::msg("--threads and --records must be positive"));
    }
    if a.record_size == Some(0) {
        return Err(CliError::msg("--record-size must be positive"));
    }
    let pool = payloads(a)?;
    with_store(dir, true, |store| {
        if !store.list_topics().contains(&a.topic) {
            store.create_topic(&a.topic, a.partitions, TopicConfig::default())?;
        }
        let mut producer = Producer::new(store, producer_config(&a.producer)?)?;
        let shared = Arc::new(Shared {
            latency_us: (0..a.records).map(|_| AtomicU32::new(0)).collect(),
            done: Arc::new(AtomicU64::new(0)),
            error: Mutex::new(None),
            window: Window::default(),
        });
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
                    s.spawn(move || {
                        let mut sent_bytes = 0u64;
                        let mut i = t as u64;
                        while i < a.records {
                            let value = pool[(i % pool.len() as u64) as usize].clone();
                            let value_len = value.len();
                            sent_bytes += value_len as u64;
                            let record = ProducerRecord::new(a.topic.as_str(), value);
                            let sh = Arc::clone(shared);
                            let sent_at = Instant::now();
                            let idx = i as usize;
                            let len = value_len as u64;
                            let r = producer.send_with_callback(record, move |r| {
                                let us = sent_at.elapsed().as_micros().min(u128::from(u32::MAX));
                                sh.latency_us[idx].store(us as u32, Ordering::Relaxed);
                                sh.done.fetch_add(1, Ordering::Relaxed);
                                sh.window.add(len, us as u64);
                                if let Err(e) = r {
                                    sh.error.lock().get_or_insert(CliError::from(e).0);
                                }
                            });
                            if let Err(e) = r {
                                shared.error.lock().get_or_insert(CliError::from(e).0);
                                break;
                            }
                            i += a.threads as u64;
                        }
                        bytes.fetch_add(sent_bytes, Ordering::Relaxed);
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
        if let Some(e) = shared.error.lock().take() {
            return Err(CliError::msg(e));
        }
        let mut lat: Vec<u32> = shared
            .latency_us
            .iter()
            .map(|v| v.load(Ordering::Relaxed))
            .collect();
        let [avg, p50, p99, p999, max] = percentiles(&mut lat);
        let records = a.records;
        let bytes = bytes.load(Ordering::Relaxed) as f64;
        let (rps, mbps) = (records as f64 / seconds, bytes / MB / seconds);
        let baseline = if a.baseline {
            Some(write_baseline(dir, &pool, records)?)
        } else {
            None
        };
        if a.out.json() {
            let mut j = json!({
                "records": records,
                "bytes": bytes as u64,
                "seconds": json_f64(seconds),
                "records_per_sec": json_f64(rps),
                "mb_per_sec": json_f64(mbps),
                "latency_ms_avg": json_f64(avg),
                "latency_ms_p50": json_f64(p50),
                "latency_ms_p99": json_f64(p99),
                "latency_ms_p999": json_f64(p999),
                "latency_ms_max": json_f64(max),
            });
            add_baseline(&mut j, baseline, mbps);
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

/// What a `--baseline` run measured.
#[derive(Clone, Copy)]
struct Baseline {
    /// Records the baseline wrote or found (and CRC-checked).
    records: u64,
    records_per_sec: f64,
    mb_per_sec: f64,
}

impl Baseline {
    /// kafkalite's MB/sec over the baseline's; none when the baseline moved
    /// no bytes (nothing was consumed, so there is nothing to compare).
    fn ratio(&self, mbps: f64) -> Option<f64> {
        (self.mb_per_sec > 0.0).then(|| mbps / self.mb_per_sec)
    }

    /// The ratio as text.
    fn ratio_text(&self, mbps: f64) -> String {
        self.ratio(mbps).map_or_else(
            || "n/a (nothing consumed)".to_owned(),
            |r| format!("{r:.3}"),
        )
    }
}

/// Adds the JSON fields of a `--baseline` run (none without one) to `j`;
/// the ratio is of MB/sec (of the same bytes per record).
fn add_baseline(j: &mut serde_json::Value, b: Option<Baseline>, mbps: f64) {
    let (Some(b), Some(map)) = (b, j.as_object_mut()) else {
        return;
    };
    map.insert("baseline_records".into(), b.records.into());
    map.insert(
        "baseline_records_per_sec".into(),
        json_f64(b.records_per_sec),
    );
    map.insert("baseline_mb_per_sec".into(), json_f64(b.mb_per_sec));
    let ratio = b.ratio(mbps).map_or(serde_json::Value::Null, json_f64);
    map.insert("ratio".into(), ratio);
}

/// `perf produce --baseline`: the payloads the run sent, in the same order,
/// written with plain `write()` calls 64 KiB at a time into a new file in
/// `dir` (removed afterwards).
fn write_baseline(dir: &Path, pool: &[Bytes], records: u64) -> CliResult<Baseline> {
    use std::io::Write;
    let path = dir.join(format!(".perf-baseline-{}", std::process::id()));
    let run = || -> std::io::Result<Baseline> {
        let mut f = std::fs::File::create(&path)?;
        let mut buf: Vec<u8> = Vec::with_capacity(64 << 10);
        let mut bytes = 0u64;
        let start = Instant::now();
        for i in 0..records {
            let v = &pool[(i % pool.len() as u64) as usize];
            if buf.len() + v.len() > buf.capacity() {
                f.write_all(&buf)?;
                buf.clear();
            }
            buf.extend_from_slice(v);
            bytes += v.len() as u64;
        }
        f.write_all(&buf)?;
        let seconds = start.elapsed().as_secs_f64().max(1e-9);
        Ok(Baseline {
            records,
            records_per_sec: records as f64 / seconds,
            mb_per_sec: bytes as f64 / MB / seconds,
        })
    };
    let result = run();
    let removed = std::fs::remove_file(&path);
    let b = result.map_err(|e| CliError::msg(format!("baseline write {}: {e}", path.display())))?;
    match removed {
        Ok(()) => Ok(b),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(b),
        Err(e) => Err(CliError::msg(format!(
            "cannot remove {}: {e}",
            path.display()
        ))),
    }
}

/// `perf consume --baseline`: every `.log` file of the topic's partitions
/// read with `std::fs` into one reused buffer, each batch's CRC-32C checked
/// and its records counted (all the files hold: also records below the log
/// start and control records, which consumers never see). MB/sec counts
/// `bytes_per_record` (key and value bytes, as the run consumed them) per
/// record.
fn read_baseline(store: &Store, topic: &str, bytes_per_record: f64) -> CliResult<Baseline> {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut records = 0u64;
    let start = Instant::now();
    for p in 0..store.partition_count(topic)? {
        let dir = store.partition(topic, p)?.dir().to_path_buf();
        let logs = crate::segment::log_files(&dir)
            .map_err(|e| CliError::msg(format!("cannot list {}: {e}", dir.display())))?;
        for (_, log) in logs {
            buf.clear();
            std::fs::File::open(&log)
                .and_then(|mut f| f.read_to_end(&mut buf))
                .map_err(|e| CliError::msg(format!("cannot read {}: {e}", log.display())))?;
            records += count_checked(&buf).map_err(|at| {
                CliError::msg(format!("{}: bad batch at byte {at}", log.display()))
            })?;
        }
    }
    let seconds = start.elapsed().as_secs_f64().max(1e-9);
    Ok(Baseline {
        records,
        records_per_sec: records as f64 / seconds,
        mb_per_sec: records as f64 * bytes_per_record / MB / seconds,
    })
}

/// Walks the batches in `log`, checking each one's CRC-32C; the records
/// they hold, or the position of the first bad batch.
fn count_checked(log: &[u8]) -> Result<u64, usize> {
    // The CRC covers the batch from its attributes (byte 21) on.
    const CRC_FROM: usize = 21;
    let mut records = 0u64;
    let mut pos = 0usize;
    while let Some(rest) = log.get(pos..).filter(|r| !r.is_empty()) {
        let h = BatchHeader::parse(rest).map_err(|_| pos)?;
        let batch = rest
            .get(..h.size())
            .filter(|b| b.len() >= HEADER_SIZE)
            .ok_or(pos)?;
        let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32Iscsi, &batch[CRC_FROM..]);
        if crc as u32 != h.crc {
            return Err(pos);
        }
        records += u64::try_from(h.records_count).map_err(|_| pos)?;
        pos += h.size();
    }
    Ok(records)
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
            .map(|r| r.key.as_ref().map_or(0, Bytes::len) + r.value.as_ref().map_or(0, Bytes::len))
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
            let mut j = json!({
                "records": records,
                "bytes": bytes as u64,
                "seconds": json_f64(seconds),
                "records_per_sec": json_f64(rps),
                "mb_per_sec": json_f64(mbps),
                "polls": polls,
                "poll_ms_avg": json_f64(avg),
                "poll_ms_p50": json_f64(p50),
                "poll_ms_p99": json_f64(p99),
                "poll_ms_p999": json_f64(p999),
                "poll_ms_max": json_f64(max),
            });
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
