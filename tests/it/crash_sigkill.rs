//! Process-level crash test: a child process appends with `Durability::Fsync`
//! (through `Store::append` and a `Producer`), rolls small segments, applies
//! size retention, compacts a compacted topic and commits group offsets,
//! reporting every acknowledgement on a pipe as soon as it returns. The
//! parent kills it with SIGKILL at random moments, checks the recovered store
//! against what was acknowledged, and starts the next child on the same
//! directory, so recovery runs on recovered data again and again.
//!
//! A SIGKILL keeps the page cache, so fsync is not what is tested here (that
//! is the power-loss simulation's job); the directory lives on tmpfs when
//! `/dev/shm` exists to keep the run short.
//!
//! Environment: `KAFKALITE_CRASH_ITERATIONS` (kill points, default 200),
//! `KAFKALITE_CRASH_SEED` (replay a run; the seed is printed).

use kafkalite::{
    CleanupPolicy, Consumer, ConsumerConfig, Durability, Error, PartitionLog, Producer,
    ProducerConfig, ProducerRecord, Record, Store, StoreOptions, TopicConfig, TopicPartition,
};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const CHILD_DIR: &str = "KAFKALITE_CRASH_CHILD_DIR";
const CHILD_GEN: &str = "KAFKALITE_CRASH_CHILD_GEN";
const CHILD_SEED: &str = "KAFKALITE_CRASH_CHILD_SEED";
const TEST_NAME: &str =
    "crash_sigkill::acknowledged_records_and_commits_survive_sigkill_at_random_points";

/// Size-retained topic: two partitions.
const RETAINED: &str = "r";
/// Compacted topic: one partition, 16 keys.
const COMPACTED: &str = "c";
const GROUP: &str = "g";
const RETENTION_BYTES: u64 = 4096;
const KEYS: u64 = 16;

/// SplitMix64: small, seedable, good enough to pick kill points.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn topic_configs() -> [(&'static str, u32, TopicConfig); 2] {
    let mut r = TopicConfig::default();
    r.log.segment_bytes = 1024;
    r.log.segment_index_bytes = 96;
    r.log.index_interval_bytes = 100;
    r.retention_bytes = Some(RETENTION_BYTES);
    r.retention = None;
    r.cleanup_policy = CleanupPolicy::Delete;
    let mut c = TopicConfig::default();
    c.log.segment_bytes = 1024;
    c.log.index_interval_bytes = 100;
    c.cleanup_policy = CleanupPolicy::Compact;
    c.min_dirty_percent = 0;
    [(RETAINED, 2, r), (COMPACTED, 1, c)]
}

/// A record's identity: the child generation that wrote it and its sequence
/// number within that generation and partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Id {
    gen: u64,
    seq: u64,
}

fn check_word(topic: &str, partition: u32, id: Id) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in format!("{topic}/{partition}/{}/{}", id.gen, id.seq).bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn encode_value(topic: &str, partition: u32, id: Id) -> String {
    let v = format!(
        "{topic}|{partition}|{}|{}|{:016x}|",
        id.gen,
        id.seq,
        check_word(topic, partition, id)
    );
    format!("{v:.<72}")
}

fn key_for(id: Id) -> String {
    format!("k{}", (id.gen * 7 + id.seq) % KEYS)
}

/// Decodes a value written by a child, checking every part of it.
fn decode_value(topic: &str, partition: u32, value: &[u8]) -> Result<Id, String> {
    let s = std::str::from_utf8(value).map_err(|_| "value is not utf-8".to_owned())?;
    let parts: Vec<&str> = s.split('|').collect();
    let bad = || format!("malformed value {s:?}");
    let [t, p, gen, seq, _, _] = parts.as_slice() else {
        return Err(bad());
    };
    if *t != topic || *p != partition.to_string() {
        return Err(format!("value {s:?} belongs to another partition"));
    }
    let id = Id {
        gen: gen.parse().map_err(|_| bad())?,
        seq: seq.parse().map_err(|_| bad())?,
    };
    if encode_value(topic, partition, id) != s {
        return Err(format!("value {s:?} fails its check word"));
    }
    Ok(id)
}

fn report(line: &str) {
    let mut out = std::io::stdout().lock();
    out.write_all(format!("@ {line}\n").as_bytes()).unwrap();
    out.flush().unwrap();
}

/// The child: opens the store and works until it is killed.
fn child(dir: &Path, gen: u64, seed: u64) {
    let mut rng = Rng(seed);
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    for (name, partitions, config) in topic_configs() {
        match store.create_topic(name, partitions, config) {
            Ok(()) | Err(Error::TopicExists { .. }) => {}
            Err(e) => panic!("create_topic {name}: {e}"),
        }
    }
    let mut producer_config = ProducerConfig::default();
    producer_config.durability = Durability::Fsync;
    let producer = Producer::new(&store, producer_config).unwrap();
    let mut consumer_config = ConsumerConfig::with_group(GROUP);
    consumer_config.enable_auto_commit = false;
    let mut consumer = Consumer::new(&store, consumer_config).unwrap();
    let tps = [
        TopicPartition::new(RETAINED, 0),
        TopicPartition::new(RETAINED, 1),
        TopicPartition::new(COMPACTED, 0),
    ];
    consumer.assign(&tps).unwrap();
    let mut seqs: HashMap<(&str, u32), u64> = HashMap::new();
    let mut next_id = |topic: &'static str, partition: u32| {
        let s = seqs.entry((topic, partition)).or_insert(0);
        *s += 1;
        Id { gen, seq: *s - 1 }
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let (topic, partition) = match rng.below(3) {
            0 => (RETAINED, 0),
            1 => (RETAINED, 1),
            _ => (COMPACTED, 0),
        };
        let keyed = topic == COMPACTED;
        match rng.below(100) {
            0..=59 => {
                let n = 1 + rng.below(4);
                let ids: Vec<Id> = (0..n).map(|_| next_id(topic, partition)).collect();
                let records: Vec<Record> = ids
                    .iter()
                    .map(|&id| {
                        let r = Record::new(encode_value(topic, partition, id))
                            .timestamp(kafkalite_now_ms());
                        if keyed {
                            r.key(key_for(id))
                        } else {
                            r
                        }
                    })
                    .collect();
                let info = store
                    .append(topic, partition, &records, Durability::Fsync)
                    .unwrap();
                for (i, id) in ids.iter().enumerate() {
                    let offset = info.base_offset + i as i64;
                    report(&format!(
                        "A {topic} {partition} {offset} {} {}",
                        id.gen, id.seq
                    ));
                }
            }
            60..=79 => {
                let id = next_id(topic, partition);
                let mut r = ProducerRecord::new(topic, encode_value(topic, partition, id))
                    .partition(partition);
                if keyed {
                    r = r.key(key_for(id));
                }
                let meta = producer.send_and_wait(r).unwrap();
                report(&format!(
                    "A {topic} {partition} {} {} {}",
                    meta.offset, id.gen, id.seq
                ));
            }
            80..=89 => {
                store
                    .apply_retention_at(None, kafkalite_now_ms(), true)
                    .unwrap();
            }
            _ => {
                let tp = TopicPartition::new(topic, partition);
                let end = store.partition(topic, partition).unwrap().high_watermark();
                consumer.seek(&tp, end).unwrap();
                consumer.commit_sync().unwrap();
                report(&format!("C {topic} {partition} {end}"));
            }
        }
    }
    panic!("the parent never killed this child");
}

fn kafkalite_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// What the parent knows must be in the store.
#[derive(Default)]
struct Expected {
    /// Per partition: offset → id of every record acknowledged, or seen in a
    /// recovered store (recovery makes it durable).
    records: BTreeMap<(String, u32), BTreeMap<i64, Id>>,
    /// Per partition: the largest acknowledged committed offset.
    commits: BTreeMap<(String, u32), i64>,
}

impl Expected {
    fn apply(&mut self, line: &str) {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["A", topic, p, offset, gen, seq] => {
                let id = Id {
                    gen: gen.parse().unwrap(),
                    seq: seq.parse().unwrap(),
                };
                let prev = self
                    .records
                    .entry(((*topic).to_owned(), p.parse().unwrap()))
                    .or_default()
                    .insert(offset.parse().unwrap(), id);
                assert!(
                    prev.is_none_or(|prev| prev == id),
                    "offset acknowledged twice: {line} (was {prev:?})"
                );
            }
            ["C", topic, p, offset] => {
                let c = self
                    .commits
                    .entry(((*topic).to_owned(), p.parse().unwrap()))
                    .or_insert(i64::MIN);
                *c = (*c).max(offset.parse().unwrap());
            }
            _ => panic!("unexpected report {line:?}"),
        }
    }
}

#[derive(Default)]
struct Totals {
    kill_points: u64,
    acknowledged: u64,
    records_checked: u64,
    commits_checked: u64,
    in_place_recoveries: u64,
}

/// Every record of a partition, in offset order; every read must succeed.
fn read_all(log: &PartitionLog, topic: &str, partition: u32) -> Vec<(i64, Option<String>, Id)> {
    let mut out = Vec::new();
    let mut at = log.log_start_offset();
    loop {
        let r = log
            .read(at, 1 << 16)
            .unwrap_or_else(|e| panic!("{topic}-{partition}: read at {at}: {e}"));
        if r.is_empty() {
            break;
        }
        for rec in r.records() {
            let rec = rec.unwrap_or_else(|e| panic!("{topic}-{partition}: decode at {at}: {e}"));
            let value = rec
                .value
                .as_deref()
                .expect("the child writes no tombstones");
            let id = decode_value(topic, partition, value)
                .unwrap_or_else(|e| panic!("{topic}-{partition} offset {}: {e}", rec.offset));
            let key = rec
                .key
                .as_deref()
                .map(|k| String::from_utf8(k.to_vec()).unwrap());
            out.push((rec.offset, key, id));
        }
        at = r.next_offset();
    }
    assert_eq!(
        at,
        log.log_end_offset(),
        "{topic}-{partition}: reads stop before the log end"
    );
    out
}

/// Bytes of the `.log` files at or after the log start.
fn retained_bytes(dir: &Path, log_start: i64) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let name = e.file_name().into_string().unwrap();
            let base: i64 = name.strip_suffix(".log")?.parse().ok()?;
            (base >= log_start).then(|| e.metadata().unwrap().len())
        })
        .sum()
}

/// Opens the store in `dir` (running recovery), checks it against
/// `expected`, adds what it found to `expected`, and closes it.
fn verify(dir: &Path, expected: &mut Expected, totals: &mut Totals) {
    let store = Store::open(dir, StoreOptions::default()).unwrap();
    let topics = store.list_topics();
    for (name, partitions, _) in topic_configs() {
        if !topics.iter().any(|t| t == name) {
            // Killed before the topic was created: nothing can be acknowledged.
            for p in 0..partitions {
                assert!(
                    expected
                        .records
                        .get(&(name.to_owned(), p))
                        .is_none_or(BTreeMap::is_empty),
                    "topic {name} is gone but had acknowledged records"
                );
            }
            continue;
        }
        for p in 0..partitions {
            let log = store.partition(name, p).unwrap();
            let start = log.log_start_offset();
            let found = read_all(&log, name, p);
            let acked = expected.records.entry((name.to_owned(), p)).or_default();
            if let Some((&last, _)) = acked.last_key_value() {
                assert!(
                    log.log_end_offset() > last,
                    "{name}-{p}: log end {} but offset {last} was acknowledged",
                    log.log_end_offset()
                );
            }
            // Ids only grow with offsets: no duplicates, no reordering.
            for w in found.windows(2) {
                assert!(
                    w[0].0 < w[1].0 && w[0].2 < w[1].2,
                    "{name}-{p}: out of order: {:?} then {:?}",
                    w[0],
                    w[1]
                );
            }
            let at: BTreeMap<i64, (Option<String>, Id)> = found
                .iter()
                .map(|(o, k, id)| (*o, (k.clone(), *id)))
                .collect();
            if name == RETAINED {
                // Offsets contiguous from the log start, and each child's
                // records a prefix of what it appended.
                let offsets: Vec<i64> = found.iter().map(|r| r.0).collect();
                let want: Vec<i64> = (start..log.log_end_offset()).collect();
                assert_eq!(offsets, want, "{name}-{p}: offsets not contiguous");
                for w in found.windows(2) {
                    if w[0].2.gen == w[1].2.gen {
                        assert_eq!(
                            w[0].2.seq + 1,
                            w[1].2.seq,
                            "{name}-{p}: a record is missing inside child {}'s appends",
                            w[0].2.gen
                        );
                    }
                }
                if start > 0 {
                    // Size retention keeps at least retention.bytes.
                    let kept = retained_bytes(log.dir(), start);
                    assert!(
                        kept >= RETENTION_BYTES,
                        "{name}-{p}: log start {start} leaves only {kept} bytes: {:?}",
                        std::fs::read_dir(log.dir())
                            .unwrap()
                            .map(|e| {
                                let e = e.unwrap();
                                (e.file_name(), e.metadata().unwrap().len())
                            })
                            .collect::<Vec<_>>()
                    );
                }
                for (&offset, &id) in acked.range(start..) {
                    totals.records_checked += 1;
                    assert_eq!(
                        at.get(&offset).map(|r| r.1),
                        Some(id),
                        "{name}-{p}: acknowledged offset {offset} lost or changed"
                    );
                }
            } else {
                for (_, key, id) in &found {
                    assert_eq!(key.as_deref(), Some(key_for(*id).as_str()));
                }
                // Compaction may drop a record only for a later one with
                // the same key.
                let latest: HashMap<&str, i64> = found
                    .iter()
                    .map(|(o, k, _)| (k.as_deref().unwrap_or(""), *o))
                    .collect();
                for (&offset, &id) in acked.iter() {
                    totals.records_checked += 1;
                    match at.get(&offset) {
                        Some((_, got)) => {
                            assert_eq!(*got, id, "{name}-{p}: offset {offset} changed")
                        }
                        None => assert!(
                            latest
                                .get(key_for(id).as_str())
                                .is_some_and(|&l| l > offset),
                            "{name}-{p}: acknowledged offset {offset} lost without a newer \
                             record for key {}",
                            key_for(id)
                        ),
                    }
                }
            }
            // What recovery found is durable now: later recoveries keep it.
            for (o, _, id) in &found {
                acked.insert(*o, *id);
            }
            if name == RETAINED {
                acked.retain(|&o, _| o >= start);
            }
        }
    }
    for ((topic, p), &offset) in &expected.commits {
        totals.commits_checked += 1;
        let got = store.committed_offset(GROUP, topic, *p).map(|o| o.offset);
        assert!(
            got.is_some_and(|g| g >= offset),
            "{topic}-{p}: committed offset {got:?}, acknowledged {offset}"
        );
    }
    store.close().unwrap();
}

use crate::corruption_sweep::copy_dir;

fn spawn_child(dir: &Path, gen: u64, seed: u64) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR, dir)
        .env(CHILD_GEN, gen.to_string())
        .env(CHILD_SEED, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut r = BufReader::new(stdout);
        let mut line = String::new();
        // A line cut by the kill has no newline: its ack is not counted.
        while r.read_line(&mut line).unwrap_or(0) > 0 {
            if let Some(l) = line.strip_prefix("@ ").and_then(|l| l.strip_suffix('\n')) {
                if tx.send(l.to_owned()).is_err() {
                    return;
                }
            }
            line.clear();
        }
    });
    (child, rx)
}

fn scratch_root() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

#[test]
fn acknowledged_records_and_commits_survive_sigkill_at_random_points() {
    if let Ok(dir) = std::env::var(CHILD_DIR) {
        let gen = std::env::var(CHILD_GEN).unwrap().parse().unwrap();
        let seed = std::env::var(CHILD_SEED).unwrap().parse().unwrap();
        child(Path::new(&dir), gen, seed);
        return;
    }
    let iterations: u64 = std::env::var("KAFKALITE_CRASH_ITERATIONS")
        .ok()
        .map_or(200, |v| v.parse().unwrap());
    let seed: u64 = std::env::var("KAFKALITE_CRASH_SEED")
        .ok()
        .map_or_else(|| kafkalite_now_ms() as u64, |v| v.parse().unwrap());
    // Shown with the test's output when it fails.
    println!("crash_sigkill: seed {seed} (replay with KAFKALITE_CRASH_SEED={seed})");
    let mut rng = Rng(seed);
    let root = scratch_root();
    let dir = root.path().join("store");
    let mut expected = Expected::default();
    let mut totals = Totals::default();
    let started = Instant::now();
    for gen in 0..iterations {
        let (mut child, rx) = spawn_child(&dir, gen, rng.next());
        // Kill after a random number of acknowledgements, or at a random
        // moment that may fall in the child's start-up and recovery.
        let (lines_wanted, deadline) = if rng.below(5) == 0 {
            (
                u64::MAX,
                Instant::now() + Duration::from_micros(rng.below(30_000)),
            )
        } else {
            (1 + rng.below(40), Instant::now() + Duration::from_secs(30))
        };
        let mut lines = 0;
        while lines < lines_wanted {
            let wait = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(wait) {
                Ok(l) => {
                    expected.apply(&l);
                    totals.acknowledged += u64::from(l.starts_with('A'));
                    lines += 1;
                }
                Err(mpsc::RecvTimeoutError::Timeout) => break,
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("seed {seed}: child {gen} exited on its own ({status}):\n{err}");
        }
        child.kill().unwrap();
        child.wait().unwrap();
        totals.kill_points += 1;
        // Acknowledgements still in the pipe count too.
        for l in rx {
            expected.apply(&l);
            totals.acknowledged += u64::from(l.starts_with('A'));
        }
        if rng.below(5) == 0 {
            // Recover in place: the next child starts from a clean shutdown.
            totals.in_place_recoveries += 1;
            verify(&dir, &mut expected, &mut totals);
        } else if dir.exists() {
            // Recover a copy: the next child recovers the crash itself.
            let copy = root.path().join("verify");
            copy_dir(&dir, &copy);
            verify(&copy, &mut expected, &mut totals);
            std::fs::remove_dir_all(&copy).unwrap();
        }
    }
    verify(&dir, &mut expected, &mut totals);
    println!(
        "crash_sigkill: {} kill points, {} acknowledged records, {} record checks, \
         {} commit checks, {} in-place recoveries, {:.1?}",
        totals.kill_points,
        totals.acknowledged,
        totals.records_checked,
        totals.commits_checked,
        totals.in_place_recoveries,
        started.elapsed()
    );
    assert_eq!(totals.kill_points, iterations);
    assert!(totals.acknowledged > iterations, "too few acknowledgements");
}
