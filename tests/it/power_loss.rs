//! Simulated power loss at every fsync boundary of a scripted workload
//! (appends, rolls, retention deletions, compaction, offset commits): at
//! each completed fsync the store directory is copied as it is (the state a
//! power loss at that instant would leave, every acknowledged write being
//! synced), and each copy must open and hold everything acknowledged before
//! it, as a prefix of what was appended, with nothing corrupt.

use kafkalite::failpoints::{after_fsync, clear};
use kafkalite::{CleanupPolicy, Durability, Record, ResetTo, Store, StoreOptions, TopicConfig};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Default)]
struct Acked {
    /// Records of `q` acknowledged (offset i holds "q-i").
    q: i64,
    /// Per key of `kv`, the index of the last acknowledged value.
    kv: HashMap<String, i64>,
    /// The last acknowledged commit of group `g` on `q-0`.
    commit: Option<i64>,
}

fn copy_store(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == ".lock" {
            continue;
        }
        let p = e.path();
        if p.is_dir() {
            copy_store(&p, &to.join(&name));
        } else if let Err(err) = std::fs::copy(&p, to.join(&name)) {
            // A file renamed or removed between listing and copying is the
            // same as one a power loss never saw created.
            assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{}", p.display());
        }
    }
}

fn check_image(image: &Path, acked: &Acked) {
    let s = Store::open(image, StoreOptions::default())
        .unwrap_or_else(|e| panic!("{}: image does not open: {e}", image.display()));
    // q: contiguous offsets, each holding the record appended there, and
    // everything acknowledged at or above the log start.
    let log = s.partition("q", 0).unwrap();
    let start = log.log_start_offset();
    let mut at = start;
    loop {
        let r = s.fetch("q", 0, at, 1 << 20).unwrap();
        if r.is_empty() {
            break;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            assert_eq!(rec.offset, at, "{}: gap in q", image.display());
            assert_eq!(rec.value.as_deref(), Some(format!("q-{at}").as_bytes()));
            at += 1;
        }
    }
    assert!(
        at >= acked.q,
        "{}: q ends at {at}, {} were acknowledged",
        image.display(),
        acked.q
    );
    // kv: every key holds its last acknowledged value or a later one.
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
    if let Some(c) = acked.commit {
        let got = s.committed_offset("g", "q", 0).map(|o| o.offset);
        assert!(
            got.is_some_and(|g| g >= c),
            "{}: commit {got:?} < acknowledged {c}",
            image.display()
        );
    }
    s.close().unwrap();
}

#[test]
fn a_power_loss_at_any_fsync_keeps_everything_acknowledged() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("store");
    let images = root.path().join("images");
    let acked = Arc::new(Mutex::new(Acked::default()));
    let taken: Arc<Mutex<Vec<(PathBuf, Acked)>>> = Arc::default();
    let s = Store::open(&dir, StoreOptions::default()).unwrap();
    let mut q = TopicConfig::default();
    q.segment_bytes = 1024;
    q.segment_index_bytes = 1024;
    q.retention_bytes = Some(4096);
    s.create_topic("q", 1, q).unwrap();
    let mut kv = TopicConfig::default();
    kv.segment_bytes = 1024;
    kv.segment_index_bytes = 1024;
    kv.cleanup_policy = CleanupPolicy::Compact;
    s.create_topic("kv", 1, kv).unwrap();
    {
        let (dir, images, acked, taken) = (
            dir.clone(),
            images.clone(),
            Arc::clone(&acked),
            Arc::clone(&taken),
        );
        after_fsync(&dir.clone(), move |_| {
            let mut t = taken.lock();
            let image = images.join(t.len().to_string());
            copy_store(&dir, &image);
            t.push((image, acked.lock().clone()));
        });
    }
    for i in 0..120i64 {
        s.append("q", 0, &[Record::new(format!("q-{i}"))], Durability::Fsync)
            .unwrap();
        acked.lock().q = i + 1;
        if i % 3 == 0 {
            let key = format!("k{}", i % 7);
            s.append(
                "kv",
                0,
                &[Record::new(format!("kv-{i}")).key(key.clone())],
                Durability::Fsync,
            )
            .unwrap();
            acked.lock().kv.insert(key, i);
        }
        if i % 10 == 9 {
            s.reset_group_offsets("g", "q", ResetTo::Offset(i)).unwrap();
            acked.lock().commit = Some(i);
        }
        if i % 25 == 24 {
            s.apply_retention(None).unwrap();
        }
    }
    clear(&dir);
    s.close().unwrap();
    let taken = taken.lock().clone();
    assert!(taken.len() > 200, "only {} fsync boundaries", taken.len());
    for (image, state) in &taken {
        check_image(image, state);
    }
    println!("power loss simulated at {} fsync boundaries", taken.len());
}
