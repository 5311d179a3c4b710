//! Corruption sweep: every file of a small store (sealed and active
//! segments, `.index`, `.timeindex`, `partition.checkpoint`, `topics.meta`,
//! the offset store's log) is damaged in turn (flipped bytes at sampled
//! positions, zeroed ranges, truncation at and around every batch boundary,
//! deletion) in a copy of a cleanly closed store and of a crash image, and
//! the store reopened. Each reopen must recover or fail with
//! `Error::Corrupt` naming the damaged file, never panic, never return a
//! record that differs from what was written at its offset, and never lose a
//! record of a segment that was not damaged.

use kafkalite::{
    Consumer, ConsumerConfig, Durability, Error, OffsetAndMetadata, Record, Store, StoreOptions,
    TopicConfig, TopicPartition,
};
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

const TOPIC: &str = "t";
const GROUP: &str = "g";
/// Batch header layout: base offset, length, magic, crc, last offset delta,
/// records count: positions worth flipping in every batch.
const HEADER_POSITIONS: [u64; 8] = [0, 7, 8, 11, 16, 17, 23, 60];
/// Batch header fields: base offset (8) + length (4).
const LOG_OVERHEAD: u64 = 12;

fn value(offset: i64) -> String {
    format!("record {offset:06} {:.<40}", "")
}

fn topic_config() -> TopicConfig {
    let mut c = TopicConfig::default();
    c.log.segment_bytes = 1024;
    c.log.segment_index_bytes = 96;
    c.log.index_interval_bytes = 100;
    c.retention = None;
    c
}

/// Appends `batches` batches of 1–3 records from the log end.
fn append(store: &Store, batches: usize, durability: Durability) {
    for i in 0..batches {
        let start = store.partition(TOPIC, 0).unwrap().log_end_offset();
        let records: Vec<Record> = (0..1 + (i as i64 % 3))
            .map(|k| Record::new(value(start + k)).timestamp(1_700_000_000_000 + start + k))
            .collect();
        store.append(TOPIC, 0, &records, durability).unwrap();
    }
}

fn commit(store: &Store, offset: i64, sync: bool) {
    let mut c = ConsumerConfig::with_group(GROUP);
    c.enable_auto_commit = false;
    let mut consumer = Consumer::new(store, c).unwrap();
    let tp = TopicPartition::new(TOPIC, 0);
    if sync {
        consumer
            .commit_offsets(&[(tp, OffsetAndMetadata::new(offset))])
            .unwrap();
    } else {
        consumer.assign(std::slice::from_ref(&tp)).unwrap();
        consumer.seek(&tp, offset).unwrap();
        consumer.commit_async(|r| r.unwrap());
    }
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A store image to damage, and what it must hold.
struct Image {
    name: &'static str,
    dir: PathBuf,
    /// Records 0..end were written.
    end: i64,
    /// Records below this were fsynced (acknowledged durably).
    synced_end: i64,
    /// Committed offsets a recovered store may report: the last durable one
    /// first.
    commits: Vec<i64>,
    /// Segment base offsets of the topic partition.
    bases: Vec<i64>,
}

/// Builds a cleanly closed store and a crash image (a copy taken while the
/// store is open, after unsynced appends and an unsynced commit).
fn build_images(root: &Path) -> [Image; 2] {
    let live = root.join("live");
    let store = Store::open(&live, StoreOptions::default()).unwrap();
    store.create_topic(TOPIC, 1, topic_config()).unwrap();
    append(&store, 24, Durability::Fsync);
    commit(&store, 10, true);
    append(&store, 6, Durability::Fsync);
    commit(&store, 20, true);
    let synced_end = store.partition(TOPIC, 0).unwrap().log_end_offset();
    store.close().unwrap();
    drop(store);
    let clean_dir = root.join("clean");
    copy_dir(&live, &clean_dir);
    let clean_bases = store_bases(&clean_dir);

    let store = Store::open(&live, StoreOptions::default()).unwrap();
    append(&store, 4, Durability::Written);
    commit(&store, 30, false);
    let end = store.partition(TOPIC, 0).unwrap().log_end_offset();
    let crash_dir = root.join("crash");
    copy_dir(&live, &crash_dir);
    drop(store);
    let crash_bases = store_bases(&crash_dir);
    assert!(clean_bases.len() >= 4, "{clean_bases:?}");
    [
        Image {
            name: "clean",
            dir: clean_dir,
            end: synced_end,
            synced_end,
            commits: vec![20],
            bases: clean_bases,
        },
        Image {
            name: "crash",
            dir: crash_dir,
            end,
            synced_end,
            commits: vec![20, 30],
            bases: crash_bases,
        },
    ]
}

fn store_bases(dir: &Path) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(dir.join(format!("{TOPIC}-0")))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".log")?.parse().ok()
        })
        .collect();
    bases.sort_unstable();
    bases
}

/// Start positions of the batches in a `.log`, and its length.
fn batch_starts(log: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    while pos + LOG_OVERHEAD as usize <= log.len() {
        out.push(pos as u64);
        let len = i32::from_be_bytes(log[pos + 8..pos + 12].try_into().unwrap());
        pos += LOG_OVERHEAD as usize + len as usize;
    }
    out
}

#[derive(Clone, Debug)]
enum Damage {
    Flip(u64),
    Zero(u64, u64),
    Truncate(u64),
    Delete,
}

fn damages(path: &Path, rng: &mut u64) -> Vec<Damage> {
    let bytes = std::fs::read(path).unwrap();
    let len = bytes.len() as u64;
    let mut out = vec![Damage::Delete];
    if len == 0 {
        return out;
    }
    let mut flips = BTreeSet::new();
    let mut cuts = BTreeSet::from([0, len / 2, len - 1]);
    if path.extension().is_some_and(|e| e == "log") {
        let starts = batch_starts(&bytes);
        for (i, &s) in starts.iter().enumerate() {
            // Every header field of the first and last batch, the base
            // offset and crc of the others.
            let fields: &[u64] = if i == 0 || i + 1 == starts.len() {
                &HEADER_POSITIONS
            } else {
                &[7, 17]
            };
            flips.extend(fields.iter().map(|f| s + f).filter(|&p| p < len));
            cuts.extend([s.saturating_sub(1), s, s + 1]);
        }
        cuts.extend([len - 1, len]);
    }
    for _ in 0..6 {
        *rng ^= *rng << 13;
        *rng ^= *rng >> 7;
        *rng ^= *rng << 17;
        flips.insert(*rng % len);
    }
    flips.insert(len - 1);
    out.extend(flips.into_iter().map(Damage::Flip));
    out.extend(cuts.into_iter().filter(|&c| c < len).map(Damage::Truncate));
    out.push(Damage::Zero(0, len.min(64)));
    out.push(Damage::Zero(len / 2, (len / 2 + 32).min(len)));
    out.push(Damage::Zero(len.saturating_sub(16), len));
    out
}

fn apply(path: &Path, damage: &Damage) {
    match *damage {
        Damage::Delete => std::fs::remove_file(path).unwrap(),
        Damage::Truncate(n) => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(n)
            .unwrap(),
        Damage::Flip(p) => {
            let mut b = std::fs::read(path).unwrap();
            b[p as usize] ^= 0xff;
            std::fs::write(path, b).unwrap();
        }
        Damage::Zero(from, to) => {
            let mut b = std::fs::read(path).unwrap();
            b[from as usize..to as usize].fill(0);
            std::fs::write(path, b).unwrap();
        }
    }
}

/// What kind of file is damaged, which decides what may be lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    /// A topic segment's `.log`, by its index in the segment list.
    Log(usize),
    /// A topic segment's index or time index: always rebuilt.
    Index,
    /// `partition.checkpoint`: never trusted when damaged.
    Checkpoint,
    /// `topics.meta`.
    Meta,
    /// A file of `__consumer_offsets-0`.
    Offsets,
}

#[derive(Default)]
struct Counts {
    files: usize,
    trials: usize,
    recovered: usize,
    refused: usize,
}

/// Reopens the damaged copy and checks the outcome. Returns whether the
/// store opened.
fn check(
    image: &Image,
    dir: &Path,
    file: &Path,
    target: Target,
    deleted: bool,
) -> Result<bool, String> {
    let store = match Store::open(dir, StoreOptions::default()) {
        Ok(s) => s,
        Err(Error::Corrupt { path, position, .. }) => {
            // A deleted file cannot be read: its neighbour reports the loss.
            let names_it = path == file || (deleted && path.parent() == file.parent());
            if !names_it {
                return Err(format!("Corrupt names {} at {position}", path.display()));
            }
            return match target {
                Target::Index | Target::Checkpoint => {
                    Err("a damaged index or checkpoint must be recovered, not refused".into())
                }
                _ => Ok(false),
            };
        }
        Err(e) => return Err(format!("open failed with a non-Corrupt error: {e:?}")),
    };
    let log = store
        .partition(TOPIC, 0)
        .map_err(|e| format!("topic partition missing after open: {e}"))?;
    // Which offsets must still be readable.
    let seg_end = |i: usize| image.bases.get(i + 1).copied().unwrap_or(image.end);
    let mut required = BTreeSet::new();
    for (i, &base) in image.bases.iter().enumerate() {
        let damaged = target == Target::Log(i);
        let is_active = i + 1 == image.bases.len();
        for o in base..seg_end(i) {
            let lost_ok = damaged && (!is_active || o >= image.synced_end);
            if !lost_ok && o < image.synced_end.max(if damaged { 0 } else { image.end }) {
                required.insert(o);
            }
        }
    }
    let mut found = BTreeSet::new();
    let mut reported = BTreeSet::new();
    let mut at = log.log_start_offset();
    loop {
        match log.read(at, 1 << 20) {
            Ok(r) if r.is_empty() => break,
            Ok(r) => {
                for rec in r.records() {
                    let rec = match rec {
                        Ok(rec) => rec,
                        Err(e) => return Err(format!("record at {at} fails to decode: {e}")),
                    };
                    let want = value(rec.offset);
                    if rec.offset >= image.end || rec.value.as_deref() != Some(want.as_bytes()) {
                        return Err(format!("wrong record at offset {}", rec.offset));
                    }
                    if !found.insert(rec.offset) {
                        return Err(format!("offset {} returned twice", rec.offset));
                    }
                }
                at = r.next_offset();
            }
            Err(Error::Corrupt { path, .. }) if path == file => {
                // Reported, not lost: skip the damaged segment.
                let next = image.bases.iter().copied().find(|&b| b > at);
                reported.extend(at..next.unwrap_or(image.end));
                match next {
                    Some(b) => at = b,
                    None => break,
                }
            }
            Err(e) => return Err(format!("read at {at}: {e:?}")),
        }
    }
    let missing: Vec<i64> = required
        .difference(&found)
        .filter(|o| !reported.contains(*o))
        .copied()
        .collect();
    if !missing.is_empty() {
        return Err(format!("records lost: {missing:?}"));
    }
    let committed = store.committed_offset(GROUP, TOPIC, 0).map(|o| o.offset);
    let ok = match target {
        Target::Offsets => committed.is_none_or(|c| image.commits.contains(&c) || c == 10),
        _ => committed.is_some_and(|c| image.commits.contains(&c)),
    };
    if !ok {
        return Err(format!("committed offset {committed:?}"));
    }
    store.close().map_err(|e| format!("close: {e}"))?;
    Ok(true)
}

#[test]
fn every_damaged_file_is_recovered_or_reported_never_misread() {
    let shm = Path::new("/dev/shm");
    let root = if shm.is_dir() {
        tempfile::tempdir_in(shm).unwrap()
    } else {
        tempfile::tempdir().unwrap()
    };
    let images = build_images(root.path());
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let started = std::time::Instant::now();
    for image in &images {
        let part = image.dir.join(format!("{TOPIC}-0"));
        let seg = |i: usize, ext: &str| part.join(format!("{:020}{ext}", image.bases[i]));
        let last = image.bases.len() - 1;
        let mut targets = vec![
            (seg(0, ".log"), Target::Log(0)),
            (seg(last / 2, ".log"), Target::Log(last / 2)),
            (seg(last - 1, ".log"), Target::Log(last - 1)),
            (seg(last, ".log"), Target::Log(last)),
            (seg(1, ".index"), Target::Index),
            (seg(1, ".timeindex"), Target::Index),
            (seg(last, ".index"), Target::Index),
            (seg(last, ".timeindex"), Target::Index),
            (part.join("partition.checkpoint"), Target::Checkpoint),
            (image.dir.join("topics.meta"), Target::Meta),
        ];
        let offsets = image.dir.join("__consumer_offsets-0");
        targets.push((offsets.join(format!("{:020}.log", 0)), Target::Offsets));
        targets.push((offsets.join("partition.checkpoint"), Target::Offsets));
        for (file, target) in targets {
            counts.files += 1;
            for damage in damages(&file, &mut rng) {
                counts.trials += 1;
                let trial = root.path().join("trial");
                copy_dir(&image.dir, &trial);
                let damaged = trial.join(file.strip_prefix(&image.dir).unwrap());
                apply(&damaged, &damage);
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    check(
                        image,
                        &trial,
                        &damaged,
                        target,
                        matches!(damage, Damage::Delete),
                    )
                }));
                let what = format!(
                    "{} image, {} ({target:?}), {damage:?}",
                    image.name,
                    file.strip_prefix(&image.dir).unwrap().display()
                );
                match outcome {
                    Ok(Ok(true)) => counts.recovered += 1,
                    Ok(Ok(false)) => counts.refused += 1,
                    Ok(Err(e)) => failures.push(format!("{what}: {e}")),
                    Err(_) => failures.push(format!("{what}: panicked")),
                }
                std::fs::remove_dir_all(&trial).unwrap();
            }
        }
    }
    println!(
        "corruption_sweep: {} files damaged in {} ways ({} recovered, {} refused with \
         Error::Corrupt), {:.1?}",
        counts.files,
        counts.trials,
        counts.recovered,
        counts.refused,
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn small_log(dir: &Path) -> kafkalite::PartitionLog {
    let mut c = kafkalite::LogConfig::default();
    c.settings.segment_bytes = 1024;
    c.settings.index_interval_bytes = 100;
    kafkalite::PartitionLog::open(dir, c).unwrap()
}

/// A log of `n` one-record batches, record i holding `value(i)`.
fn fill(log: &kafkalite::PartitionLog, n: i64) {
    for i in 0..n {
        log.append_records(
            &[Record::new(value(i))],
            kafkalite::Compression::None,
            Durability::Fsync,
        )
        .unwrap();
    }
}

fn segment_log(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

fn flip_base_offset_low_byte(path: &Path, batch: usize) {
    let mut b = std::fs::read(path).unwrap();
    let at = batch_starts(&b)[batch] as usize + 7;
    b[at] ^= 0x40;
    std::fs::write(path, b).unwrap();
}

#[test]
fn a_clean_active_segment_cut_inside_its_last_batch_is_reported_not_a_panic() {
    let d = tempfile::tempdir().unwrap();
    let log = small_log(d.path());
    fill(&log, 5);
    log.close().unwrap();
    drop(log);
    let p = segment_log(d.path(), 0);
    let len = std::fs::metadata(&p).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let mut c = kafkalite::LogConfig::default();
    c.settings.segment_bytes = 1024;
    c.settings.index_interval_bytes = 100;
    match kafkalite::PartitionLog::open(d.path(), c) {
        Err(Error::Corrupt { path, .. }) => assert_eq!(path, p),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_damaged_base_offset_in_the_last_batch_never_moves_the_log_end() {
    for clean in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let log = small_log(d.path());
        fill(&log, 5);
        if clean {
            log.close().unwrap();
        }
        drop(log);
        let p = segment_log(d.path(), 0);
        flip_base_offset_low_byte(&p, 4);
        match kafkalite::PartitionLog::open(d.path(), kafkalite::LogConfig::default()) {
            Err(Error::Corrupt { path, .. }) => assert!(clean && path == p),
            // After a crash the batch lies past the recovery point (the
            // checkpoint lags the fsyncs): cut as a torn tail, not followed.
            Ok(log) => assert!(
                !clean && log.log_end_offset() == 4,
                "clean {clean}: {log:?}"
            ),
            Err(e) => panic!("clean {clean}: {e:?}"),
        }
    }
}

#[test]
fn a_damaged_base_offset_is_reported_at_read_never_skipped_or_misnumbered() {
    for batch in [0, 2] {
        let d = tempfile::tempdir().unwrap();
        let log = small_log(d.path());
        fill(&log, 30);
        assert!(log.segment_count() > 2);
        log.close().unwrap();
        drop(log);
        let p = segment_log(d.path(), 0);
        flip_base_offset_low_byte(&p, batch);
        let log = small_log(d.path());
        let mut at = 0;
        loop {
            match log.read(at, 1 << 20) {
                Ok(r) if r.is_empty() => panic!("batch {batch}: reads ended at {at}"),
                Ok(r) => {
                    for rec in r.records() {
                        let rec = rec.unwrap();
                        assert_eq!(rec.value.as_deref(), Some(value(rec.offset).as_bytes()));
                        assert_eq!(rec.offset, at, "batch {batch}: offset skipped");
                        at += 1;
                    }
                }
                Err(Error::Corrupt { path, .. }) => {
                    assert_eq!(path, p);
                    break;
                }
                Err(e) => panic!("batch {batch}: {e:?}"),
            }
        }
    }
}

#[test]
fn a_log_cut_at_a_batch_boundary_below_the_recovery_point_is_reported() {
    for clean in [true, false] {
        let d = tempfile::tempdir().unwrap();
        let log = small_log(d.path());
        fill(&log, 5);
        if clean {
            log.close().unwrap();
        } else {
            log.checkpoint().unwrap();
        }
        drop(log);
        let p = segment_log(d.path(), 0);
        let cut = batch_starts(&std::fs::read(&p).unwrap())[3];
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(cut)
            .unwrap();
        match kafkalite::PartitionLog::open(d.path(), kafkalite::LogConfig::default()) {
            Err(Error::Corrupt { path, .. }) => assert_eq!(path, p, "clean {clean}"),
            Ok(log) => panic!(
                "clean {clean}: opened with log end {}",
                log.log_end_offset()
            ),
            Err(e) => panic!("clean {clean}: {e:?}"),
        }
    }
}

#[test]
fn a_missing_topic_metadata_file_with_partition_data_is_reported() {
    let d = tempfile::tempdir().unwrap();
    {
        let s = Store::open(d.path(), StoreOptions::default()).unwrap();
        s.create_topic(TOPIC, 1, TopicConfig::default()).unwrap();
        s.append(TOPIC, 0, &[Record::new("x")], Durability::Fsync)
            .unwrap();
        s.close().unwrap();
    }
    let meta = d.path().join("topics.meta");
    std::fs::remove_file(&meta).unwrap();
    match Store::open(d.path(), StoreOptions::default()) {
        Err(Error::Corrupt { path, .. }) => assert_eq!(path, meta),
        other => panic!("{other:?}"),
    }
}
