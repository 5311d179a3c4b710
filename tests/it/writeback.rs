//! Write-behind (`writeback_bytes`): buffered appends hand each whole step
//! of a segment's bytes to the disk once as they cross it (on the
//! write-behind threads, the first at background priority); off at 0; and
//! the hint leaves what is read and what is durable unchanged.

use kafkalite::io::{FileSystem, FsHandle, OpenMode, OsFileSystem};
use kafkalite::{Durability, Record, Store, StoreOptions, TopicConfig};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A writeback range started: the file, offset and length.
type Started = (PathBuf, u64, u64);

/// Remembers every writeback range started.
#[derive(Default)]
struct Writebacks(Mutex<Vec<Started>>);

impl crate::os_probe::Probe for Writebacks {
    fn writeback(&self, p: &Path, offset: u64, len: u64) {
        self.0.lock().unwrap().push((p.to_owned(), offset, len));
    }
}

/// Appends 3,000 records of ~300 bytes in batches of 100 (about 0.9 MB)
/// through a store whose logs start writeback every `step` bytes; returns
/// the ranges started and the `.log` files' sizes.
fn appended(step: u64, segment_bytes: u32) -> (Vec<Started>, Vec<(PathBuf, u64)>) {
    let d = tempfile::tempdir().unwrap();
    let fs = Arc::new(crate::os_probe::Probed(Writebacks::default()));
    let mut o = StoreOptions::default();
    o.file_system = FsHandle::new(fs.clone());
    o.writeback_bytes = step;
    let s = Store::open(d.path(), o).unwrap();
    let mut t = TopicConfig::default();
    t.log.segment_bytes = segment_bytes;
    s.create_topic("t", 1, t).unwrap();
    for b in 0..30 {
        let recs: Vec<Record> = (0..100)
            .map(|i| Record::new(format!("{b}:{i}:{}", "x".repeat(290))))
            .collect();
        s.append("t", 0, &recs, Durability::Written).unwrap();
    }
    let log = s.partition("t", 0).unwrap();
    let all: Vec<(i64, String)> = crate::log_basic::read_all(&log, 0)
        .into_iter()
        .map(|(o, v)| (o, String::from_utf8(v.unwrap().to_vec()).unwrap()))
        .collect();
    drop(log);
    assert_eq!(all.len(), 3000, "every record reads back");
    assert!(all
        .iter()
        .enumerate()
        .all(|(i, (o, v))| *o == i as i64 && v.starts_with(&format!("{}:{}:", i / 100, i % 100))));
    s.close().unwrap();
    let mut logs: Vec<(PathBuf, u64)> = std::fs::read_dir(d.path().join("t-0"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .map(|p| {
            let n = std::fs::metadata(&p).unwrap().len();
            (p, n)
        })
        .collect();
    logs.sort();
    // The hints run on the write-behind threads: wait for them to arrive
    // (all of them), at most 30 s (the first thread runs only where a core
    // is free, and the other tests keep both busy); when off, give any
    // stray hint 200 ms to show up, so that "none" is seen, not merely not
    // yet arrived.
    let want: u64 = logs.iter().map(|(_, n)| n / step.max(1) * step).sum();
    if step == 0 {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let calls = fs.0 .0.lock().unwrap().clone();
        let covered: u64 = calls.iter().map(|(_, _, len)| len).sum();
        if covered >= want || std::time::Instant::now() > deadline {
            return (calls, logs);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn each_whole_step_of_a_segment_is_handed_to_the_disk_once() {
    let step = 64 << 10;
    let (mut calls, logs) = appended(step, 1 << 30);
    // Two threads take the hints (the second only while many wait): the
    // order they start in is theirs.
    calls.sort_by_key(|c| c.1);
    assert_eq!(logs.len(), 1);
    let (log, size) = &logs[0];
    assert!(
        calls.iter().all(|(p, _, _)| p == log),
        "only the .log: {calls:?}"
    );
    // Contiguous from 0, whole aligned steps, each byte once, up to the last
    // step boundary the appends crossed.
    let mut next = 0;
    for (_, offset, len) in &calls {
        assert_eq!(*offset, next, "{calls:?}");
        assert!(*len > 0 && len % step == 0, "{calls:?}");
        next = offset + len;
    }
    assert_eq!(next, size / step * step, "{calls:?} for a {size}-byte log");
    assert!(calls.len() >= 10, "{} calls", calls.len());
}

#[test]
fn rolled_segments_start_their_own_steps_and_zero_turns_it_off() {
    let step = 32 << 10;
    let (calls, logs) = appended(step, 200 << 10);
    assert!(logs.len() >= 4, "{logs:?}");
    for (log, size) in &logs {
        let mine: Vec<_> = calls.iter().filter(|(p, _, _)| p == log).collect();
        let covered: u64 = mine.iter().map(|(_, _, len)| len).sum();
        assert_eq!(covered, size / step * step, "{log:?}: {mine:?}");
    }
    let (calls, logs) = appended(0, 200 << 10);
    assert!(logs.len() >= 4);
    assert!(calls.is_empty(), "{calls:?}");
}

#[test]
fn the_os_starts_writeback_of_a_file_without_changing_it() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("f");
    let f = OsFileSystem.open(&p, OpenMode::Create).unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    OsFileSystem.write_at(&f, &p, &data, 0).unwrap();
    OsFileSystem.start_writeback(&f, &p, 0, 256 << 10).unwrap();
    OsFileSystem.sync_data(&f, &p).unwrap();
    assert_eq!(std::fs::read(&p).unwrap(), data);
}

/// The first write-behind thread runs at background priority (Linux
/// `SCHED_IDLE`, policy 5 in `/proc`), so its disk writes use a core no
/// sender wants; the second, which takes over past the budget, does not.
#[cfg(target_os = "linux")]
#[test]
fn the_write_behind_threads_run_at_background_and_normal_priority() {
    // Appending through write-behind starts the threads.
    let _ = appended(32 << 10, 1 << 30);
    let policies: Vec<(String, u32)> = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| {
            let t = t.unwrap().path();
            let comm = std::fs::read_to_string(t.join("comm")).ok()?;
            let stat = std::fs::read_to_string(t.join("stat")).ok()?;
            // Fields after the parenthesised name; policy is field 41.
            let rest = stat.rsplit_once(") ")?.1;
            let policy = rest.split_whitespace().nth(41 - 3)?.parse().ok()?;
            Some((comm.trim().to_owned(), policy))
        })
        .filter(|(comm, _)| comm.starts_with("kafkalite-w"))
        .collect();
    // `comm` holds a thread name's first 15 bytes.
    let thread = |name: &str, policy| (name[..15].to_owned(), policy);
    assert!(
        policies.contains(&thread("kafkalite-writeback", 5)),
        "{policies:?}"
    );
    assert!(
        policies.contains(&thread("kafkalite-wb-catchup", 0)),
        "{policies:?}"
    );
}
