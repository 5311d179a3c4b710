//! A real full disk: a small tmpfs (issue 17, finding 8). Needs permission
//! to mount (root); elsewhere the test prints why it skipped.

use kafkalite::{
    Error, Producer, ProducerConfig, ProducerRecord, SendHandle, Store, StoreOptions, TopicConfig,
};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted at a fresh directory; unmounted on drop, also when the
/// test fails.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount -o size=`) under `parent`, or
    /// says why it could not.
    fn mount(parent: &Path, size: &str) -> Result<Tmpfs, String> {
        let dir = parent.join("tmpfs");
        std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .output()
            .map_err(|e| format!("cannot run mount: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_owned());
        }
        Ok(Tmpfs { dir })
    }

    /// As [`Tmpfs::mount`]; when mounting is refused, says so and that the
    /// test is skipped.
    fn mount_or_skip(parent: &Path, size: &str) -> Option<Tmpfs> {
        Tmpfs::mount(parent, size)
            .map_err(|why| {
                eprintln!(
                    "skipped: cannot mount a tmpfs ({why}); run as root to test a real full disk"
                );
            })
            .ok()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            // Something still holds a file there: detach it now.
            let _ = Command::new("umount").arg("-l").arg(&self.dir).status();
        }
    }
}

/// Record `i`: every fourth is large, the others small, so when a large
/// batch no longer fits, a small one behind it still would.
fn value(i: usize) -> String {
    let len = if i.is_multiple_of(4) { 60_000 } else { 200 };
    format!("flow {i:>10} {}", "x".repeat(len))
}

#[test]
fn on_a_full_tmpfs_the_log_stays_a_prefix_of_the_sends_and_takes_records_again_once_space_is_freed()
{
    let parent = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount_or_skip(parent.path(), "16m") else {
        return;
    };
    // Ballast, removed later to free space.
    let ballast = fs.dir.join("ballast");
    std::fs::write(&ballast, vec![7u8; 4 << 20]).unwrap();
    let root = fs.dir.join("store");
    let store = Store::open(&root, StoreOptions::default()).unwrap();
    let mut config = TopicConfig::default();
    config.log.segment_index_bytes = 64 << 10;
    store.create_topic("flows", 1, config).unwrap();
    // One record per batch, appended by `send` itself.
    let mut pc = ProducerConfig::default();
    pc.batch_size = 1;
    let producer = Producer::new(&store, pc).unwrap();
    // About 30 MB: far more than fits.
    let sent = 2_000;
    let handles: Vec<SendHandle> = (0..sent)
        .map(|i| {
            producer
                .send(ProducerRecord::new("flows", value(i)).partition(0))
                .unwrap()
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(SendHandle::wait).collect();
    let acked = results.iter().take_while(|r| r.is_ok()).count();
    assert!(acked > 0 && acked < sent, "acked {acked} of {sent}");
    for (i, r) in results.iter().enumerate() {
        match r {
            Ok(m) => {
                assert!(i < acked, "record {i} acknowledged after a failed one");
                assert_eq!(m.offset, i as i64);
            }
            Err(Error::SendFailed { source }) => assert!(
                matches!(**source, Error::DiskFull { .. }),
                "record {i}: {source:?}"
            ),
            Err(e) => panic!("record {i}: {e:?}"),
        }
    }
    let log = store.partition("flows", 0).unwrap();
    assert_eq!(log.log_end_offset(), acked as i64);
    let read_all = |log: &kafkalite::PartitionLog| {
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            let r = log.read(at, 1 << 20).unwrap();
            if r.is_empty() {
                return out;
            }
            for rec in r.records() {
                let rec = rec.unwrap();
                out.push((rec.offset, rec.value.unwrap()));
            }
            at = r.next_offset();
        }
    };
    let got = read_all(&log);
    assert_eq!(got.len(), acked);
    for (i, (offset, v)) in got.iter().enumerate() {
        assert_eq!(*offset, i as i64);
        assert_eq!(&v[..], value(i).as_bytes(), "offset {i}");
    }
    // Free space: the store takes records again, right after the prefix.
    std::fs::remove_file(&ballast).unwrap();
    for i in 0..100 {
        let m = producer
            .send(ProducerRecord::new("flows", value(sent + i)).partition(0))
            .unwrap()
            .wait()
            .unwrap();
        assert_eq!(m.offset, (acked + i) as i64);
    }
    drop((producer, log));
    store.close().unwrap();
    drop(store);
    let store = Store::open(&root, StoreOptions::default()).unwrap();
    let log = store.partition("flows", 0).unwrap();
    let got = read_all(&log);
    drop(log);
    assert_eq!(got.len(), acked + 100);
    for (i, (_, v)) in got.iter().enumerate() {
        let want = if i < acked {
            value(i)
        } else {
            value(sent + i - acked)
        };
        assert_eq!(&v[..], want.as_bytes(), "offset {i}");
    }
    store.close().unwrap();
}

/// Issue 17, finding 15: index files were preallocated to
/// `segment.index.bytes` (10 MiB each), so a small volume could not even
/// open a one-partition store, and a full disk could only surface through
/// the map. Now an 8 MiB tmpfs holds a store with default settings, and
/// filling it ends in `DiskFull` from an append, losing nothing
/// acknowledged.
#[test]
fn a_small_tmpfs_holds_a_default_store_and_filling_it_is_a_disk_full_error() {
    let parent = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount_or_skip(parent.path(), "8m") else {
        return;
    };
    let root = fs.dir.join("store");
    let store = Store::open(&root, StoreOptions::default()).unwrap();
    store.create_topic("t", 2, TopicConfig::default()).unwrap();
    let mut acked = [0i64; 2];
    let err = loop {
        let p = (acked[0] + acked[1]) as u32 % 2;
        match store.append(
            "t",
            p,
            &[kafkalite::Record::new(value(1))],
            kafkalite::Durability::Written,
        ) {
            Ok(info) => {
                assert_eq!(info.base_offset, acked[p as usize]);
                acked[p as usize] += 1;
            }
            Err(e) => break e,
        }
        assert!(acked[0] < 1_000_000, "never filled");
    };
    assert!(matches!(err, Error::DiskFull { .. }), "{err:?}");
    assert!(acked[0] > 1000, "{acked:?}");
    // Closing on a full disk may fail (checkpoints); nothing acknowledged
    // is lost either way.
    let _ = store.close();
    drop(store);
    let store = Store::open_read_only(&root, StoreOptions::default()).unwrap();
    for (p, &n) in acked.iter().enumerate() {
        let log = store.partition("t", p as u32).unwrap();
        assert!(
            log.log_end_offset() >= n,
            "partition {p}: {} < {n}",
            log.log_end_offset()
        );
    }
}

/// Durable appends write zeros ahead of themselves; on a full disk those
/// zeros do not fit, and an append whose own bytes fit still succeeds.
#[test]
fn on_a_full_tmpfs_a_durable_append_that_fits_succeeds_though_its_zeros_ahead_do_not() {
    let parent = tempfile::tempdir().unwrap();
    let Some(fs) = Tmpfs::mount_or_skip(parent.path(), "8m") else {
        return;
    };
    let root = fs.dir.join("store");
    let store = Store::open(&root, StoreOptions::default()).unwrap();
    let mut config = TopicConfig::default();
    config.log.segment_index_bytes = 64 << 10;
    store.create_topic("t", 1, config).unwrap();
    // ~11 KB batches of 100 records.
    let batch = |b: usize| -> Vec<kafkalite::Record> {
        (0..100)
            .map(|i| kafkalite::Record::new(format!("{:>8} {}", b * 100 + i, "y".repeat(90))))
            .collect()
    };
    let append = |b: usize| store.append("t", 0, &batch(b), kafkalite::Durability::Fsync);
    for b in 0..20 {
        append(b).unwrap();
    }
    let log_file = root
        .join("t-0")
        .join(kafkalite::files::file_name(0, ".log"));
    let (data, file) = (
        crate::zeros_ahead::data_len(&log_file),
        std::fs::metadata(&log_file).unwrap().len(),
    );
    assert!(file > data + 100_000, "no zeros ahead: {file} for {data}");
    // Fill the disk, then free 128 KiB: room for five more batches (and
    // index entries), not for the zeros the first append past the current
    // ones would write.
    let ballast = fs.dir.join("ballast");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&ballast).unwrap();
        let chunk = vec![1u8; 64 << 10];
        while f.write_all(&chunk).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(128 << 10)).unwrap();
        f.sync_all().unwrap();
    }
    let zeroed_batches = ((file - data) / 11_000) as usize;
    let mut b = 20;
    // Into the zeros already written, then five past them.
    while b < 20 + zeroed_batches + 5 {
        append(b).unwrap_or_else(|e| panic!("batch {b}: {e}"));
        b += 1;
    }
    assert_eq!(
        std::fs::metadata(&log_file).unwrap().len(),
        crate::zeros_ahead::data_len(&log_file),
        "zeros left past the end once they no longer fit"
    );
    let log = store.partition("t", 0).unwrap();
    let all = crate::log_basic::read_all(&log, 0);
    assert_eq!(all.len(), b * 100);
    for (i, (o, v)) in all.iter().enumerate() {
        assert_eq!(*o, i as i64);
        assert!(v
            .as_deref()
            .unwrap()
            .starts_with(format!("{i:>8} ").as_bytes()));
    }
    drop(log);
    std::fs::remove_file(&ballast).unwrap();
    store.close().unwrap();
    drop(store);
    let store = Store::open(&root, StoreOptions::default()).unwrap();
    let log = store.partition("t", 0).unwrap();
    assert_eq!(crate::log_basic::read_all(&log, 0).len(), b * 100);
}
