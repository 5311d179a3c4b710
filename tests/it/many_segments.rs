//! Bounded file handles: a log of thousands of segments opens and reads
//! under a descriptor limit far below three per segment (sealed segments
//! open on first use, and only a bounded number stay open).

use kafkalite::{Compression, Durability, LogConfig, PartitionLog, ReadMode, Record};
use std::path::Path;

/// Segments in the log: 3,000 in CI; `KAFKALITE_MANY_SEGMENTS=10000` for
/// the figure.
fn segments() -> usize {
    std::env::var("KAFKALITE_MANY_SEGMENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}
const CHILD_ENV: &str = "KAFKALITE_MANY_SEGMENTS_CHILD";
/// Descriptors the child may hold: 3,000 segments need 9,000 if opened eagerly.
const FD_LIMIT: u64 = 256;

fn config(mode: ReadMode) -> LogConfig {
    let mut c = LogConfig::default();
    // A record or two per segment.
    c.segment_bytes = 200;
    c.segment_index_bytes = 1024;
    c.index_interval_bytes = 1;
    c.read_mode = mode;
    c
}

fn value(i: i64) -> String {
    format!("record {i:08} {}", "x".repeat(i as usize % 40))
}

fn fill(dir: &Path) {
    let log = PartitionLog::open(dir, config(ReadMode::Mmap)).unwrap();
    let target = segments();
    let mut i = 0i64;
    while log.segment_count() < target {
        let r = Record::new(value(i)).timestamp(1_000_000 + i);
        log.append_records(&[r], Compression::None, Durability::Written)
            .unwrap();
        i += 1;
    }
    log.close().unwrap();
}

/// Opens the log, checks every record sequentially, a spread of point reads
/// and timestamp lookups, then closes it.
fn open_and_read(dir: &Path, mode: ReadMode) {
    let log = PartitionLog::open(dir, config(mode)).unwrap();
    assert_eq!(log.segment_count(), segments());
    let end = log.log_end_offset();
    assert!(end >= segments() as i64 - 1);
    let mut at = 0;
    while at < end {
        let r = log.read(at, 1 << 16).unwrap();
        for rec in r.records() {
            let rec = rec.unwrap();
            assert_eq!(rec.offset, at);
            assert_eq!(rec.value.as_deref(), Some(value(at).as_bytes()));
            at += 1;
        }
    }
    assert_eq!(at, end);
    for o in (0..end).rev().step_by(7) {
        let r = log.read(o, 1).unwrap();
        assert_eq!(r.records().next().unwrap().unwrap().offset, o);
    }
    for o in (0..end).step_by(97) {
        assert_eq!(
            log.offset_for_timestamp(1_000_000 + o).unwrap(),
            Some((o, 1_000_000 + o))
        );
    }
    log.close().unwrap();
}

#[test]
#[allow(unsafe_code)]
fn thousands_of_segments_open_and_read_under_a_low_descriptor_limit() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        // In the child: the limit applies to this whole process.
        let lim = libc::rlimit {
            rlim_cur: FD_LIMIT as libc::rlim_t,
            rlim_max: FD_LIMIT as libc::rlim_t,
        };
        // SAFETY: setrlimit only reads the struct passed by pointer, during
        // the call; it touches no other memory of this process.
        let rc = unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) };
        assert_eq!(rc, 0, "setrlimit: {}", std::io::Error::last_os_error());
        let dir = Path::new(&dir);
        open_and_read(dir, ReadMode::Mmap);
        open_and_read(dir, ReadMode::Pread);
        // Unclean: dropped without close, so the next open recovers.
        let log = PartitionLog::open(dir, config(ReadMode::Mmap)).unwrap();
        drop(log);
        open_and_read(dir, ReadMode::Mmap);
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("many-0");
    fill(&dir);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "many_segments::thousands_of_segments_open_and_read_under_a_low_descriptor_limit",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "child failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 passed"),
        "the child ran the test: {stdout}"
    );
}

/// Issue 17, finding 15: each active segment reserved 20 MiB of real disk
/// (`.index` and `.timeindex` preallocated to `segment.index.bytes`, 10 MiB
/// each). Kafka creates them sparse; here disk is reserved in small steps
/// ahead of use: at most 64 KiB per active segment beyond its data.
#[test]
fn an_open_store_reserves_at_most_64_kib_of_index_space_per_active_segment() {
    use std::os::unix::fs::MetadataExt;
    let d = tempfile::tempdir().unwrap();
    let store = kafkalite::Store::open(d.path(), kafkalite::StoreOptions::default()).unwrap();
    store
        .create_topic("t", 20, kafkalite::TopicConfig::default())
        .unwrap();
    for p in 0..20 {
        for i in 0..5 {
            store
                .append(
                    "t",
                    p,
                    &[kafkalite::Record::new(format!(
                        "record {i} {}",
                        "x".repeat(3000)
                    ))],
                    kafkalite::Durability::Written,
                )
                .unwrap();
        }
    }
    for p in 0..20 {
        let dir = d.path().join(format!("t-{p}"));
        let mut reserved = 0;
        for ext in ["index", "timeindex"] {
            let m = std::fs::metadata(dir.join(format!("{:020}.{ext}", 0))).unwrap();
            reserved += (m.blocks() * 512).max(m.len());
        }
        assert!(reserved <= 64 << 10, "t-{p}: {reserved} bytes of index");
    }
    // The indexes still work: a lookup in the middle finds its record.
    let read = store.fetch("t", 3, 3, 1).unwrap();
    assert_eq!(read.records().next().unwrap().unwrap().offset, 3);
    store.close().unwrap();
}
