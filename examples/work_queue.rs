//! A durable work queue on a consumer group.
//!
//! Two producer threads enqueue jobs with [`Durability::Fsync`] (a job is
//! acknowledged only once it is on disk) into a 6-partition topic, keyed by
//! job id. A group of 3 worker threads polls, processes each job (a short
//! sleep stands in for the work) and commits after processing, so a job is
//! never committed before it is done (at-least-once). When a third of the
//! jobs are done, `worker-2` stops: it commits and leaves the group, and its
//! partitions move to the other two workers; a [`RebalanceListener`] prints
//! every revoke and assignment. At the end the example checks that every
//! job was processed, counts duplicates, and shows the group's committed
//! offsets (lag 0 on every partition).
//!
//! ```text
//! cargo run --release --example work_queue          # 3000 jobs
//! cargo run --release --example work_queue -- 20000
//! ```

use kafkalite::{
    Consumer, ConsumerConfig, Durability, OffsetReset, Producer, ProducerConfig, ProducerRecord,
    RebalanceListener, Store, StoreOptions, TopicConfig, TopicPartition,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOPIC: &str = "jobs";
const GROUP: &str = "workers";
const PARTITIONS: u32 = 6;
const WORKERS: usize = 3;
/// The worker that is stopped mid-way.
const STOPPED_WORKER: usize = 2;
/// Simulated processing time per job.
const WORK: Duration = Duration::from_micros(300);

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What every worker shares: how often each job was processed.
struct Ledger {
    processed: Mutex<HashMap<u64, u32>>,
    unique: AtomicU64,
    jobs: u64,
    start: Instant,
}

impl Ledger {
    fn record(&self, job: u64) {
        let mut m = self.processed.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(job).or_insert(0);
        *n += 1;
        if *n == 1 {
            self.unique.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn all_done(&self) -> bool {
        self.unique.load(Ordering::Acquire) >= self.jobs
    }

    fn ms(&self) -> u128 {
        self.start.elapsed().as_millis()
    }
}

fn names(parts: &[TopicPartition]) -> String {
    let v: Vec<String> = parts.iter().map(|tp| tp.partition.to_string()).collect();
    format!("[{}]", v.join(","))
}

/// Prints rebalances, and commits before partitions are taken away.
struct PrintRebalance {
    name: String,
    ledger: Arc<Ledger>,
    quiet: Arc<AtomicBool>,
}

impl RebalanceListener for PrintRebalance {
    fn on_partitions_revoked(&mut self, consumer: &mut Consumer, partitions: &[TopicPartition]) {
        // Every processed batch is committed already (commit after
        // processing); committing again here is the belt to those braces.
        // A member that owned nothing (it just joined) has nothing to commit.
        if !partitions.is_empty() {
            if let Err(e) = consumer.commit_sync() {
                println!(
                    "{:>6} ms  {}: commit on revoke failed: {e}",
                    self.ledger.ms(),
                    self.name
                );
            }
        }
        if !self.quiet.load(Ordering::Acquire) && !partitions.is_empty() {
            println!(
                "{:>6} ms  {}: revoked   {TOPIC} partitions {}",
                self.ledger.ms(),
                self.name,
                names(partitions)
            );
        }
    }

    fn on_partitions_assigned(&mut self, consumer: &mut Consumer, partitions: &[TopicPartition]) {
        if !self.quiet.load(Ordering::Acquire) {
            println!(
                "{:>6} ms  {}: assigned  {TOPIC} partitions {} (generation {})",
                self.ledger.ms(),
                self.name,
                names(partitions),
                consumer.generation().unwrap_or(-1)
            );
        }
    }
}

fn job_id(key: Option<&[u8]>) -> Result<u64, Error> {
    let key = std::str::from_utf8(key.ok_or("job without key")?)?;
    Ok(key.strip_prefix("job-").ok_or("bad job key")?.parse()?)
}

/// One worker: poll, process, commit; returns how many jobs it processed.
fn worker(
    store: Store,
    index: usize,
    ledger: Arc<Ledger>,
    quiet: Arc<AtomicBool>,
) -> Result<u64, Error> {
    let name = format!("worker-{index}");
    let mut config = ConsumerConfig::with_group(GROUP);
    config.client_id = name.clone();
    config.enable_auto_commit = false;
    config.auto_offset_reset = OffsetReset::Earliest;
    config.max_poll_records = 50;
    let mut consumer = Consumer::new(&store, config)?;
    let listener = PrintRebalance {
        name: name.clone(),
        ledger: Arc::clone(&ledger),
        quiet: Arc::clone(&quiet),
    };
    consumer.subscribe_with_listener(&[TOPIC], listener)?;
    let mut done = 0u64;
    while !ledger.all_done() {
        let records = consumer.poll(Duration::from_millis(50))?;
        for r in &records {
            std::thread::sleep(WORK);
            ledger.record(job_id(r.key)?);
            done += 1;
        }
        if !records.is_empty() {
            // Commit after processing: a crash before this line means the
            // batch is processed again, never lost.
            if let Err(e) = consumer.commit_sync() {
                println!("{:>6} ms  {name}: commit failed: {e}", ledger.ms());
            }
        }
        if index == STOPPED_WORKER && ledger.unique.load(Ordering::Acquire) >= ledger.jobs / 3 {
            println!(
                "{:>6} ms  {name}: stopping after {done} jobs (leaves the group)",
                ledger.ms()
            );
            break;
        }
    }
    if index != STOPPED_WORKER {
        // Finished: no more rebalance printing for the final departures.
        quiet.store(true, Ordering::Release);
    }
    consumer.close()?;
    Ok(done)
}

fn main() -> Result<(), Error> {
    let jobs: u64 = std::env::args().nth(1).map_or(Ok(3000), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let store = Store::open(dir.path(), StoreOptions::default())?;
    store.create_topic(TOPIC, PARTITIONS, TopicConfig::default())?;
    let ledger = Arc::new(Ledger {
        processed: Mutex::new(HashMap::new()),
        unique: AtomicU64::new(0),
        jobs,
        start: Instant::now(),
    });
    let quiet = Arc::new(AtomicBool::new(false));
    println!("{jobs} jobs, {PARTITIONS} partitions, {WORKERS} workers in group '{GROUP}'");

    let mut pconfig = ProducerConfig::default();
    pconfig.durability = Durability::Fsync;
    let producer = Producer::new(&store, pconfig)?;

    let (produced, per_worker) = std::thread::scope(|s| -> Result<_, Error> {
        let workers: Vec<_> = (0..WORKERS)
            .map(|i| {
                let (store, ledger, quiet) = (store.clone(), ledger.clone(), quiet.clone());
                s.spawn(move || worker(store, i, ledger, quiet))
            })
            .collect();
        // Two producers, each enqueueing its half in bursts of 100 jobs.
        let producers: Vec<_> = (0..2u64)
            .map(|p| {
                let producer = &producer;
                s.spawn(move || -> Result<u64, Error> {
                    let mut acked = 0;
                    let mine: Vec<u64> = (p..jobs).step_by(2).collect();
                    for burst in mine.chunks(100) {
                        let handles = burst
                            .iter()
                            .map(|id| {
                                producer.send(
                                    ProducerRecord::new(TOPIC, format!("job {id}: resize image"))
                                        .key(format!("job-{id}")),
                                )
                            })
                            .collect::<Result<Vec<_>, _>>()?;
                        for h in handles {
                            h.wait()?; // on disk (fsynced) when this returns
                            acked += 1;
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Ok(acked)
                })
            })
            .collect();
        let mut produced = 0;
        for p in producers {
            produced += p.join().map_err(|_| "producer panicked")??;
        }
        println!(
            "{:>6} ms  producers: {produced} jobs enqueued and fsynced",
            ledger.ms()
        );
        let mut per_worker = Vec::new();
        for w in workers {
            per_worker.push(w.join().map_err(|_| "worker panicked")??);
        }
        Ok((produced, per_worker))
    })?;

    let processed = ledger.processed.lock().unwrap_or_else(|e| e.into_inner());
    let missing = (0..jobs).filter(|j| !processed.contains_key(j)).count();
    let duplicates: u64 = processed.values().map(|&n| u64::from(n) - 1).sum();
    let total: u64 = per_worker.iter().sum();
    println!("{:>6} ms  done", ledger.ms());
    for (i, n) in per_worker.iter().enumerate() {
        println!("  worker-{i}: {n} jobs");
    }
    println!(
        "enqueued {produced}, processed {total} ({} distinct), missing {missing}, duplicates {duplicates}",
        processed.len()
    );
    let group = store.describe_group(GROUP)?;
    let lag: i64 = group.offsets.iter().filter_map(|o| o.lag).sum();
    let committed: i64 = group.offsets.iter().filter_map(|o| o.committed).sum();
    println!(
        "group '{GROUP}': committed offsets sum to {committed} over {} partitions, total lag {lag}",
        group.offsets.len()
    );
    if missing == 0 && produced == jobs && lag == 0 {
        println!("every job was processed");
    } else {
        return Err("some jobs were not processed".into());
    }
    drop(processed);
    drop(producer);
    store.close()?;
    Ok(())
}
