//! Disk reserved past a segment's end: appends into a segment of 1 MiB or
//! more ask for it ahead of themselves (as much again as the segment
//! holds, up to 4 MiB), sealing
//! and reopening give it back, the file's size is always what was written,
//! and a refused reservation changes nothing.

use crate::os_probe::{Probe, Probed};
use kafkalite::io::{FileSystem, FsHandle, OpenMode, OsFileSystem};
use kafkalite::{Durability, Record, Store, StoreOptions, TopicConfig};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const SEGMENT_BYTES: u32 = 3 << 20;

/// Remembers every reservation asked for, and refuses them all if `refuse`.
#[derive(Default)]
struct Reserves {
    asked: Mutex<Vec<(PathBuf, u64, u64)>>,
    refuse: bool,
}

impl Probe for Reserves {
    fn reserve(&self, p: &Path, offset: u64, len: u64) -> std::io::Result<()> {
        self.asked.lock().unwrap().push((p.to_owned(), offset, len));
        if self.refuse {
            return Err(std::io::Error::from_raw_os_error(libc_enospc()));
        }
        Ok(())
    }
}

/// ENOSPC's number on Linux (the tests' platform for real reservations).
fn libc_enospc() -> i32 {
    28
}

fn store(dir: &Path, probe: &Arc<Probed<Reserves>>) -> Store {
    store_with(dir, probe, SEGMENT_BYTES)
}

fn store_with(dir: &Path, probe: &Arc<Probed<Reserves>>, segment_bytes: u32) -> Store {
    let mut o = StoreOptions::default();
    o.file_system = FsHandle::new(probe.clone());
    let s = Store::open(dir, o).unwrap();
    if !s.list_topics().contains(&"t".to_string()) {
        let mut t = TopicConfig::default();
        t.log.segment_bytes = segment_bytes;
        s.create_topic("t", 1, t).unwrap();
    }
    s
}

/// Appends `batches` batches of 1,000 records of ~300 bytes from record
/// `first` on.
fn append(s: &Store, first: usize, batches: usize) {
    append_with(s, first, batches, Durability::Written);
}

fn append_with(s: &Store, first: usize, batches: usize, durability: Durability) {
    for b in 0..batches {
        let recs: Vec<Record> = (0..1000)
            .map(|i| Record::new(format!("{}:{}", first + b * 1000 + i, "x".repeat(290))))
            .collect();
        s.append("t", 0, &recs, durability).unwrap();
    }
}

/// A new store with `segment_bytes` segments and `batches` appended (and
/// checked read back): its directory, the store, and the reservations it
/// asked for.
fn written(
    segment_bytes: u32,
    batches: usize,
) -> (tempfile::TempDir, Store, Vec<(PathBuf, u64, u64)>) {
    let d = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probed(Reserves::default()));
    let s = store_with(d.path(), &probe, segment_bytes);
    append(&s, 0, batches);
    check_all(&s, batches * 1000);
    let asked = probe.0.asked.lock().unwrap().clone();
    (d, s, asked)
}

/// Every record reads back, in order, as `append` wrote it.
fn check_all(s: &Store, n: usize) {
    let log = s.partition("t", 0).unwrap();
    let all = crate::log_basic::read_all(&log, 0);
    assert_eq!(all.len(), n);
    for (i, (o, v)) in all.iter().enumerate() {
        assert_eq!(*o, i as i64);
        assert!(v
            .as_deref()
            .unwrap()
            .starts_with(format!("{i}:").as_bytes()));
    }
}

/// The `.log` files, oldest first, with their sizes and the disk they hold.
fn logs(dir: &Path) -> Vec<(PathBuf, u64, u64)> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("t-0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            let m = std::fs::metadata(&p).unwrap();
            (p, m.len(), m.blocks() * 512)
        })
        .collect();
    v.sort();
    v
}

/// Whether this directory's filesystem reserves disk past a file's end.
fn reserves_here(dir: &Path) -> bool {
    let p = dir.join("probe");
    let f = OsFileSystem.open(&p, OpenMode::Create).unwrap();
    let ok = OsFileSystem.reserve_past_end(&f, &p, 0, 1 << 20).is_ok()
        && std::fs::metadata(&p).unwrap().blocks() * 512 >= 1 << 20;
    drop(f);
    std::fs::remove_file(&p).unwrap();
    ok
}

/// Disk held by a file of `len` bytes with nothing reserved past its end:
/// its blocks, and at most one more (a filesystem's own rounding).
fn unreserved(len: u64) -> u64 {
    len.div_ceil(4096) * 4096 + 4096
}

#[test]
fn appends_reserve_disk_ahead_of_themselves_and_sealing_gives_it_back() {
    let d = tempfile::tempdir().unwrap();
    let real = reserves_here(d.path());
    let probe = Arc::new(Probed(Reserves::default()));
    let s = store(d.path(), &probe);
    // About 7.2 MB: two segments sealed at 3 MiB, a third active.
    append(&s, 0, 24);
    check_all(&s, 24_000);
    let asked = probe.0.asked.lock().unwrap().clone();
    let files = logs(d.path());
    assert_eq!(files.len(), 3, "{files:?}");
    for (log, len, _) in &files {
        // Each segment's reservations start in its first MiB (at the append
        // that passed it) and follow one another, each ends on a MiB, the
        // last at most 4 MiB (and a MiB's rounding) past what was written,
        // and they cover it.
        let mine: Vec<_> = asked.iter().filter(|(p, _, _)| p == log).collect();
        assert!(!mine.is_empty(), "{log:?}");
        let mut end = 0;
        for (_, offset, n) in &mine {
            assert!(*offset >= end && *offset < end + (1 << 20), "{mine:?}");
            end = offset + n;
            assert_eq!(end % (1 << 20), 0, "{mine:?}");
        }
        assert!(end >= *len, "{mine:?} for {len}");
        assert!(end <= len + (4 << 20) + (1 << 20), "{mine:?} for {len}");
    }
    if real {
        // Sealed: given back. Active: its disk runs ahead of its size.
        for (log, len, held) in &files[..2] {
            assert!(*held <= unreserved(*len), "{log:?}: {held} for {len}");
        }
        let (log, len, held) = &files[2];
        assert!(*held > len + (512 << 10), "{log:?}: {held} for {len}");
    } else {
        eprintln!("skipped the disk checks: this filesystem reserves nothing past a file's end");
    }
    s.close().unwrap();
    for (log, len, held) in logs(d.path()) {
        assert!(
            held <= unreserved(len),
            "{log:?} after close: {held} for {len}"
        );
    }
    // The files hold exactly what was written: reopened, all reads back.
    let s = store(d.path(), &probe);
    check_all(&s, 24_000);
    append(&s, 24_000, 2);
    check_all(&s, 26_000);
    s.close().unwrap();
}

#[test]
fn reopening_gives_back_what_a_crash_left_reserved() {
    let d = tempfile::tempdir().unwrap();
    if !reserves_here(d.path()) {
        eprintln!("skipped: this filesystem reserves nothing past a file's end");
        return;
    }
    let probe = Arc::new(Probed(Reserves::default()));
    let s = store(d.path(), &probe);
    append(&s, 0, 4);
    s.close().unwrap();
    // What a crash leaves: the active segment's file with disk reserved
    // past its end.
    let (log, len, _) = logs(d.path()).pop().unwrap();
    let f = OsFileSystem.open(&log, OpenMode::ReadWrite).unwrap();
    OsFileSystem
        .reserve_past_end(&f, &log, len, 8 << 20)
        .unwrap();
    drop(f);
    let held = std::fs::metadata(&log).unwrap().blocks() * 512;
    assert!(held > len + (4 << 20), "{held} for {len}");
    let s = store(d.path(), &probe);
    let held = std::fs::metadata(&log).unwrap().blocks() * 512;
    assert!(held <= unreserved(len), "reopened: {held} for {len}");
    assert_eq!(std::fs::metadata(&log).unwrap().len(), len);
    check_all(&s, 4000);
    s.close().unwrap();
}

#[test]
fn a_refused_reservation_changes_nothing_and_is_not_asked_again() {
    let d = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probed(Reserves {
        refuse: true,
        ..Reserves::default()
    }));
    let s = store(d.path(), &probe);
    append(&s, 0, 24);
    check_all(&s, 24_000);
    let asked = probe.0.asked.lock().unwrap().clone();
    let files = logs(d.path());
    assert_eq!(files.len(), 3);
    // Once per segment: at the append that takes it past 1 MiB.
    assert_eq!(asked.len(), 3, "{asked:?}");
    for ((p, offset, _), (log, _, held)) in asked.iter().zip(&files) {
        assert_eq!(p, log);
        assert!(
            *offset < 1 << 20 && *offset > (1 << 20) - 400_000,
            "{asked:?}"
        );
        let len = std::fs::metadata(log).unwrap().len();
        assert!(*held <= unreserved(len));
    }
    s.close().unwrap();
    let s = store(d.path(), &probe);
    check_all(&s, 24_000);
    s.close().unwrap();
}

#[test]
fn segments_below_a_mib_reserve_nothing() {
    let d = tempfile::tempdir().unwrap();
    let probe = Arc::new(Probed(Reserves::default()));
    let s = store(d.path(), &probe);
    s.create_topic("many", 50, TopicConfig::default()).unwrap();
    for p in 0..50 {
        let recs: Vec<Record> = (0..3000)
            .map(|i| Record::new(format!("{p}:{i}:{}", "y".repeat(290))))
            .collect();
        s.append("many", p, &recs, Durability::Written).unwrap();
    }
    // ~0.9 MB a partition: nothing asked, nothing held past any end.
    assert_eq!(probe.0.asked.lock().unwrap().len(), 0);
    for p in 0..50 {
        let log = d
            .path()
            .join(format!("many-{p}"))
            .join(format!("{:020}.log", 0));
        let m = std::fs::metadata(&log).unwrap();
        assert!(m.blocks() * 512 <= unreserved(m.len()), "{log:?}");
    }
    // Nothing reserved, nothing truncated: sealing and reopening leave the
    // files' modification time (which time retention reads for segments
    // without timestamps) as it was.
    let log = d.path().join("many-0").join(format!("{:020}.log", 0));
    let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(old)
        .unwrap();
    s.close().unwrap();
    assert_eq!(std::fs::metadata(&log).unwrap().modified().unwrap(), old);
    let s = store(d.path(), &probe);
    assert_eq!(std::fs::metadata(&log).unwrap().modified().unwrap(), old);
    s.close().unwrap();
}

#[test]
fn durable_appends_reserve_nothing_and_give_back_what_was_reserved() {
    let d = tempfile::tempdir().unwrap();
    let real = reserves_here(d.path());
    let probe = Arc::new(Probed(Reserves::default()));
    let s = store(d.path(), &probe);
    // Fsynced appends only: nothing asked.
    append_with(&s, 0, 5, Durability::Fsync);
    assert_eq!(probe.0.asked.lock().unwrap().len(), 0);
    s.close().unwrap();
    // Buffered appends past a MiB reserve; the first durable one gives it
    // back, and the segment asks for no more.
    let d = tempfile::tempdir().unwrap();
    let s = store(d.path(), &probe);
    append(&s, 0, 5);
    let asked = probe.0.asked.lock().unwrap().len();
    assert!(asked > 0);
    let (log, len, held) = logs(d.path()).pop().unwrap();
    if real {
        assert!(held > len + (512 << 10), "{log:?}: {held} for {len}");
    }
    append_with(&s, 5000, 1, Durability::Fsync);
    let (log, len, held) = logs(d.path()).pop().unwrap();
    assert!(held <= unreserved(len), "{log:?}: {held} for {len}");
    append(&s, 6000, 2);
    assert_eq!(probe.0.asked.lock().unwrap().len(), asked);
    check_all(&s, 8000);
    s.close().unwrap();
}

#[test]
fn reservations_follow_one_another_up_to_4_mib_ahead_and_stop_at_segment_bytes() {
    const MIB: u64 = 1 << 20;
    // About 13.5 MB into one 16 MiB segment, batches of about 306 KB.
    let (d, s, asked) = written(16 << 20, 44);
    let (log, len, _) = logs(d.path()).pop().unwrap();
    assert!(asked.iter().all(|(p, _, _)| *p == log));
    // Asked as the segment passed 1 MiB and then each reservation's end:
    // up to 3, 7, 12 MiB, then 16 MiB (where 17 would be past
    // segment.bytes).
    let ends: Vec<u64> = asked.iter().map(|(_, o, n)| o + n).collect();
    assert_eq!(ends, [3 * MIB, 7 * MIB, 12 * MIB, 16 * MIB], "{asked:?}");
    for w in asked.windows(2) {
        assert_eq!(
            w[1].1,
            w[0].1 + w[0].2,
            "each starts where the last ended: {asked:?}"
        );
    }
    // A reservation asked once the segment holds 4 MiB or more runs about
    // 4 MiB past the append that asked (which ends within a batch of the
    // last reservation's end).
    assert!(ends[2] - asked[2].1 >= 4 * MIB && ends[2] - asked[2].1 <= 5 * MIB + 400_000);
    assert!(len > 12 * MIB);
    s.close().unwrap();
    // Segments of 1.5 MiB: never past segment.bytes.
    let (_d, s, asked) = written(3 << 19, 12);
    assert!(!asked.is_empty());
    for (p, o, n) in &asked {
        assert!(o + n <= 3 << 19, "{p:?}: {o} + {n}");
    }
    s.close().unwrap();
}
