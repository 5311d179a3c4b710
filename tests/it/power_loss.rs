//! Simulated power loss (feature `failpoints`): a scripted workload
//! (appends with `Fsync` across segment rolls, retention deletions,
//! compaction, offset commits) runs on the simulated file system `SimFs`,
//! which keeps what was written apart from what was synced. Crash images are
//! then built for every fsync boundary: what was synced, plus an arbitrary
//! prefix of the unsynced writes (sometimes with the next write torn). Each
//! image must open and hold everything acknowledged before the crash, with
//! nothing corrupt.
//!
//! The same workload, run with call number `n` failing, drives the fault
//! sweep in `faults.rs`.

use kafkalite::io::{CrashPoint, SimFs};
use kafkalite::{
    CleanupPolicy, Durability, Error, Record, ResetTo, Store, StoreOptions, TopicConfig,
};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// What the workload had acknowledged at some moment.
#[derive(Clone, Default, Debug)]
pub(crate) struct Acked {
    /// Offsets of `q` whose append was acknowledged, with the loop index
    /// the record holds ("q-<i>").
    pub(crate) q: BTreeMap<i64, i64>,
    /// Per key of `kv`, the loop index of the last acknowledged value.
    pub(crate) kv: HashMap<String, i64>,
    /// The last acknowledged commit of group `g` on `q-0` (as committed:
    /// resets clamp to the readable range).
    pub(crate) commit: Option<i64>,
}

/// Options for a store on `sim` whose background thread stays out of the
/// way (so runs are repeatable).
pub(crate) fn options(sim: Option<&Arc<SimFs>>) -> StoreOptions {
    let mut o = StoreOptions::default();
    if let Some(sim) = sim {
        o.file_system = Arc::clone(sim).into();
    }
    o.flush_check_interval = Duration::from_secs(3600);
    o.retention_check_interval = Duration::from_secs(3600);
    o
}

/// Runs the workload against the store in `dir`, calling `on_ack` with the
/// acknowledged state after each acknowledged operation. Failed operations
/// are skipped (their error must be a typed one, which the caller checks
/// through `errors`). Returns the errors seen.
pub(crate) fn workload(
    dir: &Path,
    opts: StoreOptions,
    mut on_ack: impl FnMut(&Acked),
) -> Vec<Error> {
    let mut errors = Vec::new();
    let s = match Store::open(dir, opts) {
        Ok(s) => s,
        Err(e) => return vec![e],
    };
    let mut acked = Acked::default();
    let mut q = TopicConfig::default();
    q.log.segment_bytes = 1024;
    q.log.segment_index_bytes = 1024;
    q.retention_bytes = Some(4096);
    let mut kv = TopicConfig::default();
    kv.log.segment_bytes = 1024;
    kv.log.segment_index_bytes = 1024;
    kv.cleanup_policy = CleanupPolicy::Compact;
    for (name, config) in [("q", q), ("kv", kv)] {
        if let Err(e) = s.create_topic(name, 1, config) {
            errors.push(e);
            return errors;
        }
    }
    // Current timestamps: retention deletes by size (4 KiB), not by age.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    for i in 0..120i64 {
        let r = Record::new(format!("q-{i}")).timestamp(now + i);
        match s.append("q", 0, &[r], Durability::Fsync) {
            Ok(info) => {
                acked.q.insert(info.base_offset, i);
                on_ack(&acked);
            }
            Err(e) => errors.push(e),
        }
        if i % 3 == 0 {
            let key = format!("k{}", i % 7);
            let r = Record::new(format!("kv-{i}"))
                .key(key.clone())
                .timestamp(now + i);
            match s.append("kv", 0, &[r], Durability::Fsync) {
                Ok(_) => {
                    acked.kv.insert(key, i);
                    on_ack(&acked);
                }
                Err(e) => errors.push(e),
            }
        }
        if i % 10 == 9 {
            match s.reset_group_offsets("g", "q", ResetTo::Offset(i)) {
                Ok(offsets) => {
                    // Clamped to the readable range.
                    acked.commit = offsets.first().map(|(_, o)| *o);
                    on_ack(&acked);
                }
                Err(e) => errors.push(e),
            }
        }
        if i % 25 == 24 {
            if let Err(e) = s.apply_retention(None) {
                errors.push(e);
            }
        }
    }
    if let Err(e) = s.close() {
        errors.push(e);
    }
    errors
}

/// Opens the store in `image` with the operating system's file system and
/// checks it holds everything in `acked`, with nothing corrupt.
pub(crate) fn check_image(image: &Path, acked: &Acked) {
    let s = Store::open(image, options(None))
        .unwrap_or_else(|e| panic!("{}: image does not open: {e}", image.display()));
    // A crash before a topic's creation was synced: nothing of it can have
    // been acknowledged.
    // The checks of a topic that is missing are skipped; those of the other
    // still run.
    let topics = s.list_topics();
    for (name, nothing_acked) in [("q", acked.q.is_empty()), ("kv", acked.kv.is_empty())] {
        if !topics.iter().any(|t| t == name) {
            assert!(nothing_acked, "{}: topic {name} lost", image.display());
            assert!(acked.commit.is_none(), "{}: commit lost", image.display());
        }
    }
    if topics.iter().any(|t| t == "q") {
        check_q(&s, image, acked);
    }
    if topics.iter().any(|t| t == "kv") {
        check_kv(&s, image, acked);
    }
    s.close().unwrap();
}

/// q: contiguous offsets from the log start, each record well formed; every
/// acknowledged offset at or above the log start holds its record; the
/// group's commit is not behind the acknowledged one.
fn check_q(s: &Store, image: &Path, acked: &Acked) {
    let log = s.partition("q", 0).unwrap();
    let start = log.log_start_offset();
    let mut at = start;
    let mut found = BTreeMap::new();
    loop {
        let r = s
            .fetch("q", 0, at, 1 << 20)
            .unwrap_or_else(|e| panic!("{}: fetch q at {at}: {e}", image.display()));
        if r.is_empty() {
            break;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            assert_eq!(rec.offset, at, "{}: gap in q", image.display());
            let v = std::str::from_utf8(rec.value.as_deref().unwrap()).unwrap();
            let i: i64 = v.strip_prefix("q-").unwrap().parse().unwrap();
            found.insert(at, i);
            at += 1;
        }
    }
    // Retention keeps at least retention.bytes (4 KiB: ~50 of these
    // records): the log start never passes the last 40 acknowledged.
    if let Some(recent) = acked.q.keys().rev().nth(39) {
        assert!(
            start <= *recent,
            "{}: log start {start} past acknowledged offset {recent}",
            image.display()
        );
    }
    for (offset, i) in acked.q.range(start..) {
        assert_eq!(
            found.get(offset),
            Some(i),
            "{}: acknowledged q-{i} at offset {offset} (log start {start}, end {at})",
            image.display()
        );
    }
    if let Some(c) = acked.commit {
        let got = s.committed_offset("g", "q", 0).map(|o| o.offset);
        assert!(
            got.is_some_and(|g| g >= c),
            "{}: commit {got:?} < acknowledged {c}",
            image.display()
        );
    }
}

/// kv: every key holds its last acknowledged value or a later one.
fn check_kv(s: &Store, image: &Path, acked: &Acked) {
    let mut latest: HashMap<String, i64> = HashMap::new();
    let kv = s.partition("kv", 0).unwrap();
    let mut at = kv.log_start_offset();
    loop {
        let r = s.fetch("kv", 0, at, 1 << 20).unwrap();
        if r.is_empty() {
            break;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            let key = String::from_utf8(rec.key.unwrap().to_vec()).unwrap();
            let v: i64 = std::str::from_utf8(&rec.value.unwrap()[3..])
                .unwrap()
                .parse()
                .unwrap();
            latest.insert(key, v);
        }
        at = r.next_offset();
    }
    for (k, v) in &acked.kv {
        let got = latest.get(k).copied();
        assert!(
            got.is_some_and(|g| g >= *v),
            "{}: key {k} holds {got:?}, {v} was acknowledged",
            image.display()
        );
    }
}

/// A small deterministic generator (xorshift), so a failing image can be
/// rebuilt from the test's output.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if n == 0 {
            0
        } else {
            (self.0 % n as u64) as usize
        }
    }
}

#[test]
fn a_power_loss_at_any_fsync_keeps_everything_acknowledged() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("store");
    let sim = SimFs::new(&dir).unwrap();
    // (journal position when acknowledged, what was acknowledged then)
    let mut history: Vec<(usize, Acked)> = Vec::new();
    let errors = workload(&dir, options(Some(&sim)), |a| {
        history.push((sim.position(), a.clone()));
    });
    assert!(errors.is_empty(), "{errors:?}");
    let points = sim.sync_points();
    assert!(points.len() > 200, "only {} fsync boundaries", points.len());
    let acked_at = |at: usize| {
        history
            .iter()
            .take_while(|(p, _)| *p <= at)
            .last()
            .map(|(_, a)| a.clone())
            .unwrap_or_default()
    };
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut images = 0;
    let mut kept_unsynced = 0;
    for &at in &points {
        let unsynced = sim.unsynced_at(at);
        // Only what was synced; then a random prefix of what was not, the
        // next write torn at a random byte.
        let keep = rng.below(unsynced + 1);
        for (kept, torn) in [(0, 0), (keep, rng.below(64))] {
            let image = root.path().join(format!("image-{images}"));
            let point = CrashPoint {
                at,
                unsynced_kept: kept,
                torn_bytes: torn,
            };
            sim.crash_image(point, &image).unwrap();
            check_image(&image, &acked_at(at));
            std::fs::remove_dir_all(&image).unwrap();
            images += 1;
            kept_unsynced += kept;
        }
    }
    // Strictly between two syncs: a prefix of the unsynced writes of an
    // append in flight, which nothing acknowledged yet.
    let end = sim.position();
    for _ in 0..100 {
        let at = 1 + rng.below(end);
        let image = root.path().join(format!("image-{images}"));
        let point = CrashPoint {
            at,
            unsynced_kept: rng.below(sim.unsynced_at(at) + 1),
            torn_bytes: rng.below(200),
        };
        sim.crash_image(point, &image).unwrap();
        check_image(&image, &acked_at(at));
        std::fs::remove_dir_all(&image).unwrap();
        images += 1;
    }
    println!(
        "power loss: {} fsync boundaries, {images} crash images, {kept_unsynced} unsynced changes kept in all",
        points.len()
    );
}

#[test]
fn a_crash_image_keeps_synced_bytes_and_drops_unsynced_ones() {
    // The simulation itself: a synced write survives, an unsynced one only
    // when kept, a file whose directory entry was never synced is gone.
    use kafkalite::io::{FileSystem, OpenMode};
    let root = tempfile::tempdir().unwrap();
    let sim = SimFs::new(root.path()).unwrap();
    let a = root.path().join("a");
    let f = sim.open(&a, OpenMode::CreateNew).unwrap();
    sim.write_at(&f, &a, b"synced", 0).unwrap();
    sim.sync_data(&f, &a).unwrap();
    sim.sync_dir(root.path()).unwrap();
    sim.write_at(&f, &a, b"-later", 6).unwrap();
    let b = root.path().join("b");
    let g = sim.open(&b, OpenMode::CreateNew).unwrap();
    sim.write_at(&g, &b, b"never", 0).unwrap();
    sim.sync_data(&g, &b).unwrap();
    let at = sim.position();
    let image = |kept, torn| {
        let d = tempfile::tempdir().unwrap();
        let point = CrashPoint {
            at,
            unsynced_kept: kept,
            torn_bytes: torn,
        };
        sim.crash_image(point, d.path()).unwrap();
        d
    };
    let d = image(0, 0);
    assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"synced");
    assert!(!d.path().join("b").exists(), "b's entry was never synced");
    let d = image(0, 3);
    assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"synced-la");
    let d = image(1, 0);
    assert_eq!(std::fs::read(d.path().join("a")).unwrap(), b"synced-later");
    // The unsynced changes: a's write, b's creation; b's write was synced
    // but its name only lands with the creation kept.
    assert_eq!(sim.unsynced_at(at), 2);
    let d = image(2, 0);
    assert_eq!(std::fs::read(d.path().join("b")).unwrap(), b"never");
}

#[test]
fn concurrent_group_commits_across_rolls_survive_a_power_loss_at_any_fsync() {
    // Four threads append with `Fsync` at once, sharing fsyncs (group
    // commit) while segments roll: an acknowledgement must never come from
    // a sync that did not cover the record.
    use kafkalite::{Compression, LogConfig, PartitionLog};
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("log");
    let sim = SimFs::new(&dir).unwrap();
    let mut config = LogConfig::default();
    config.settings.segment_bytes = 1024;
    // Small preallocated indexes keep every crash image small.
    config.settings.segment_index_bytes = 1024;
    config.file_system = Arc::clone(&sim).into();
    let log = Arc::new(PartitionLog::open(&dir, config).unwrap());
    // (journal position after the acknowledgement, offset, value)
    let acks = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (log, acks, sim) = (Arc::clone(&log), Arc::clone(&acks), Arc::clone(&sim));
            std::thread::spawn(move || {
                for i in 0..60 {
                    let value = format!("t{t}-{i}");
                    let r = [Record::new(value.clone())];
                    let info = log
                        .append_records(&r, Compression::None, Durability::Fsync)
                        .unwrap();
                    acks.lock().push((sim.position(), info.base_offset, value));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert!(log.segment_count() > 3, "the workload must roll segments");
    let acks = acks.lock().clone();
    let points = sim.sync_points();
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (n, &at) in points.iter().enumerate() {
        let image = root.path().join(format!("image-{n}"));
        let point = CrashPoint {
            at,
            unsynced_kept: rng.below(sim.unsynced_at(at) + 1),
            torn_bytes: rng.below(64),
        };
        sim.crash_image(point, &image).unwrap();
        let log = PartitionLog::open(&image, LogConfig::default())
            .unwrap_or_else(|e| panic!("image {n} does not open: {e}"));
        let start = log.log_start_offset();
        let mut found = HashMap::new();
        for (i, (offset, value)) in crate::log_basic::read_all(&log, start)
            .into_iter()
            .enumerate()
        {
            assert_eq!(offset, start + i as i64, "image {n}: gap");
            found.insert(offset, value.unwrap());
        }
        for (p, o, v) in acks.iter().filter(|(p, _, _)| *p <= at) {
            assert_eq!(
                found.get(o).map(|b| &b[..]),
                Some(v.as_bytes()),
                "image {n}: offset {o} acknowledged at position {p} <= {at}"
            );
        }
        drop(log);
        std::fs::remove_dir_all(&image).unwrap();
    }
    println!(
        "group commit power loss: {} fsync boundaries, {} acknowledged appends",
        points.len(),
        acks.len()
    );
}

#[test]
fn a_crash_image_keeps_namespace_changes_only_once_their_directory_is_synced() {
    use kafkalite::io::{FileSystem, OpenMode};
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    let sim = SimFs::new(r).unwrap();
    let synced_only = |sim: &SimFs| {
        let d = tempfile::tempdir().unwrap();
        let point = CrashPoint {
            at: sim.position(),
            unsynced_kept: 0,
            torn_bytes: 0,
        };
        sim.crash_image(point, d.path()).unwrap();
        d
    };
    // A file in a new directory: gone until both directories are synced.
    sim.create_dir_all(&r.join("d")).unwrap();
    let x = r.join("d/x");
    let f = sim.open(&x, OpenMode::CreateNew).unwrap();
    sim.write_at(&f, &x, b"xx", 0).unwrap();
    sim.sync_data(&f, &x).unwrap();
    sim.sync_dir(&r.join("d")).unwrap();
    assert!(!synced_only(&sim).path().join("d").exists());
    sim.sync_dir(r).unwrap();
    assert_eq!(
        std::fs::read(synced_only(&sim).path().join("d/x")).unwrap(),
        b"xx"
    );
    // A rename lands with its directory's sync; so does a removal.
    let y = r.join("d/y");
    sim.rename(&x, &y).unwrap();
    let img = synced_only(&sim);
    assert!(img.path().join("d/x").exists() && !img.path().join("d/y").exists());
    sim.sync_dir(&r.join("d")).unwrap();
    let img = synced_only(&sim);
    assert!(!img.path().join("d/x").exists() && img.path().join("d/y").exists());
    sim.remove_file(&y).unwrap();
    assert!(synced_only(&sim).path().join("d/y").exists());
    sim.sync_dir(&r.join("d")).unwrap();
    assert!(!synced_only(&sim).path().join("d/y").exists());
    // sync_all records the whole content, set_len included; a failed sync
    // loses what it should have covered, even after a later sync succeeds.
    let z = r.join("z");
    let g = sim.open(&z, OpenMode::CreateNew).unwrap();
    sim.sync_dir(r).unwrap();
    sim.write_at(&g, &z, b"0123456789", 0).unwrap();
    sim.set_len(&g, &z, 4).unwrap();
    sim.sync_all(&g, &z).unwrap();
    assert_eq!(
        std::fs::read(synced_only(&sim).path().join("z")).unwrap(),
        b"0123"
    );
    sim.write_at(&g, &z, b"lost", 4).unwrap();
    sim.inject(kafkalite::io::Fault::error(
        kafkalite::io::Op::SyncData,
        "z",
        libc::EIO,
    ));
    assert!(sim.sync_data(&g, &z).is_err());
    sim.write_at(&g, &z, b"kept", 8).unwrap();
    sim.sync_data(&g, &z).unwrap();
    let img = synced_only(&sim);
    assert_eq!(
        std::fs::read(img.path().join("z")).unwrap(),
        b"0123\0\0\0\0kept"
    );
    // The whole tree removed: gone once the parent is synced.
    sim.remove_dir_all(&r.join("d")).unwrap();
    sim.sync_dir(r).unwrap();
    assert!(!synced_only(&sim).path().join("d").exists());
}
