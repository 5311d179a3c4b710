//! Failed writes without an I/O seam: a child process lowers its file-size
//! limit (`RLIMIT_FSIZE`, with `SIGXFSZ` ignored) so a write past the limit
//! fails with `EFBIG`, the way a full disk fails one with `ENOSPC`. Rules:
//! - the failing append returns a typed error and changes nothing visible
//!   (log end, high watermark, reads, the `.log` is cut back to its last
//!   whole batch);
//! - the log is not poisoned, and appends work again once the limit is
//!   raised;
//! - producer sends in a failed batch get `SendFailed`;
//! - after a reopen, everything acknowledged is there and nothing else.
//!
//! Each test runs its body in a child process (the limit is process-wide):
//! the test re-executes this binary with `--exact <test>` and an
//! environment variable naming it.

use kafkalite::{
    Compression, Durability, Error, LogConfig, PartitionLog, Producer, ProducerConfig,
    ProducerRecord, Record, Store, StoreOptions, TopicConfig,
};
use std::path::{Path, PathBuf};
use std::time::Duration;

const CHILD: &str = "KAFKALITE_WRITE_FAILURE_CHILD";

/// Runs `body` in a child process that runs only the test `name`; in that
/// child, runs it here.
fn in_child(name: &str, body: fn()) {
    let full = format!("write_failures::{name}");
    if std::env::var(CHILD).as_deref() == Ok(full.as_str()) {
        ignore_sigxfsz();
        body();
        return;
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", &full, "--nocapture", "--test-threads=1"])
        .env(CHILD, &full)
        .status()
        .unwrap();
    assert!(status.success(), "child for {name} failed: {status}");
}

/// Lets no file of this process grow past `bytes` (the soft limit; the hard
/// limit stays, so it can be raised again).
#[allow(unsafe_code)]
fn limit_file_size(bytes: u64) {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable `rlimit` for the call's duration.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_FSIZE, &mut lim) };
    assert_eq!(rc, 0, "getrlimit: {}", std::io::Error::last_os_error());
    lim.rlim_cur = bytes.min(lim.rlim_max);
    // SAFETY: `lim` is a valid `rlimit`; the soft limit stays at or below
    // the hard one.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_FSIZE, &lim) };
    assert_eq!(rc, 0, "setrlimit: {}", std::io::Error::last_os_error());
}

/// Raises the file-size limit back to the hard limit.
fn unlimit_file_size() {
    limit_file_size(u64::MAX);
}

/// Without this, a write past the limit kills the process with `SIGXFSZ`
/// instead of failing with `EFBIG`.
#[allow(unsafe_code)]
fn ignore_sigxfsz() {
    // SAFETY: installs the `SIG_IGN` disposition, no handler code runs; this
    // child process runs one test, so no other thread relies on `SIGXFSZ`.
    let prev = unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
    assert_ne!(prev, libc::SIG_ERR);
}

fn config() -> LogConfig {
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 8192;
    c.settings.segment_index_bytes = 1024;
    c.settings.index_interval_bytes = 256;
    c
}

fn record(i: usize, len: usize) -> Record {
    Record::new(vec![b'a' + (i % 26) as u8; len])
        .key(format!("k{i}"))
        .timestamp(1_000 + i as i64)
}

fn log_file(dir: &Path, base: i64) -> PathBuf {
    dir.join(format!("{base:020}.log"))
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

/// Every record of the log, as (offset, value length, first byte).
fn contents(log: &PartitionLog) -> Vec<(i64, usize, u8)> {
    crate::log_basic::read_all(log, log.log_start_offset())
        .into_iter()
        .map(|(o, v)| {
            let v = v.unwrap();
            (o, v.len(), v[0])
        })
        .collect()
}

fn expect_write_error(r: kafkalite::Result<kafkalite::AppendInfo>) {
    match r {
        Err(Error::Io { source, .. }) => {
            assert_eq!(source.raw_os_error(), Some(libc::EFBIG), "{source}");
        }
        Err(Error::DiskFull { .. }) => {}
        other => panic!("expected a write error, got {other:?}"),
    }
}

/// Appends `n` records of `len` bytes starting at record number `from`,
/// pushing them onto `model`.
fn append(
    log: &PartitionLog,
    model: &mut Vec<(i64, usize, u8)>,
    from: usize,
    n: usize,
    len: usize,
    durability: Durability,
) -> kafkalite::Result<kafkalite::AppendInfo> {
    let records: Vec<Record> = (from..from + n).map(|i| record(i, len)).collect();
    let info = log.append_records(&records, Compression::None, durability)?;
    for (k, i) in (from..from + n).enumerate() {
        model.push((info.base_offset + k as i64, len, b'a' + (i % 26) as u8));
    }
    Ok(info)
}

fn a_failed_append_changes_nothing_and_appends_resume_body() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let log = PartitionLog::open(&dir, config()).unwrap();
    let mut model = Vec::new();
    append(&log, &mut model, 0, 10, 100, Durability::Written).unwrap();
    append(&log, &mut model, 10, 5, 50, Durability::Fsync).unwrap();
    let path = log_file(&dir, 0);
    // The durable append wrote zeros ahead of itself: the file's batches
    // end at the log's size.
    let size = log.size();
    assert_eq!(crate::zeros_ahead::data_len(&path), size);
    let end = log.log_end_offset();

    // Room for one small batch, not for a big one.
    limit_file_size(size + 200);
    for durability in [Durability::Written, Durability::Fsync, Durability::None] {
        expect_write_error(append(&log, &mut Vec::new(), 15, 4, 300, durability));
        assert_eq!(log.log_end_offset(), end, "log end moved");
        assert_eq!(log.high_watermark(), end, "high watermark moved");
        assert_eq!(file_len(&path), size, "file not cut back");
        assert_eq!(log.size(), size);
        assert_eq!(contents(&log), model);
    }
    // Not poisoned: a batch that fits is appended right after.
    let small = append(&log, &mut model, 15, 1, 20, Durability::Fsync).unwrap();
    assert_eq!(small.base_offset, end);
    let size = log.size();
    expect_write_error(append(&log, &mut Vec::new(), 16, 3, 300, Durability::Fsync));
    assert_eq!(file_len(&path), size);
    assert_eq!(contents(&log), model);

    unlimit_file_size();
    let again = append(&log, &mut model, 16, 3, 300, Durability::Fsync).unwrap();
    assert_eq!(again.base_offset, end + 1);
    append(&log, &mut model, 19, 2, 10, Durability::Written).unwrap();
    assert_eq!(contents(&log), model);
    log.flush().unwrap();

    // A crash (drop without close), then a clean close: all there.
    drop(log);
    let log = PartitionLog::open(&dir, config()).unwrap();
    assert_eq!(contents(&log), model);
    log.close().unwrap();
    drop(log);
    let log = PartitionLog::open(&dir, config()).unwrap();
    assert_eq!(contents(&log), model);
    assert_eq!(log.log_end_offset(), model.len() as i64);
}

#[test]
fn a_failed_append_changes_nothing_and_appends_resume() {
    in_child(
        "a_failed_append_changes_nothing_and_appends_resume",
        a_failed_append_changes_nothing_and_appends_resume_body,
    );
}

fn a_roll_that_cannot_create_the_next_segment_changes_nothing_body() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("t-0");
    let mut config = config();
    config.settings.segment_index_bytes = 64 << 10;
    let log = PartitionLog::open(&dir, config.clone()).unwrap();
    let mut model = Vec::new();
    // Just under segment.bytes (8192): the next big batch rolls.
    let mut i = 0;
    while log.size() < 7000 {
        append(&log, &mut model, i, 1, 500, Durability::Written).unwrap();
        i += 1;
    }
    let end = log.log_end_offset();
    let size = log.size();
    // The active .log may still grow, but the next segment's index files
    // cannot be preallocated (64 KiB).
    limit_file_size(size + 1000 + 512);
    let before = log.segment_base_offsets();
    expect_write_error(append(
        &log,
        &mut Vec::new(),
        i,
        3,
        500,
        Durability::Written,
    ));
    assert_eq!(log.log_end_offset(), end);
    assert_eq!(log.high_watermark(), end);
    assert_eq!(
        log.segment_base_offsets(),
        before,
        "a half-made roll is visible"
    );
    assert_eq!(contents(&log), model);
    // The roll sealed the segment before it failed: a small batch must
    // roll too, and fails the same way.
    expect_write_error(append(
        &log,
        &mut Vec::new(),
        i,
        1,
        100,
        Durability::Written,
    ));
    assert_eq!(log.segment_base_offsets(), before);
    assert_eq!(contents(&log), model);
    expect_write_error(append(&log, &mut Vec::new(), i, 3, 500, Durability::Fsync));
    assert_eq!(contents(&log), model);

    unlimit_file_size();
    let rolled = append(&log, &mut model, i, 3, 500, Durability::Fsync).unwrap();
    i += 3;
    assert_eq!(
        log.segment_count(),
        2,
        "the roll happens once there is room"
    );
    assert_eq!(
        *log.segment_base_offsets().last().unwrap(),
        rolled.base_offset
    );
    append(&log, &mut model, i, 2, 100, Durability::Written).unwrap();
    assert_eq!(contents(&log), model);
    // Point reads through the sealed segment's index.
    for &(o, len, b) in &model {
        let r = log.read(o, 1).unwrap();
        let rec = r.records().next().unwrap().unwrap();
        assert_eq!((rec.offset, rec.value.as_ref().unwrap().len()), (o, len));
        assert_eq!(rec.value.unwrap()[0], b);
    }

    drop(log);
    let log = PartitionLog::open(&dir, config.clone()).unwrap();
    assert_eq!(contents(&log), model);
    log.close().unwrap();
    drop(log);
    let log = PartitionLog::open(&dir, config.clone()).unwrap();
    assert_eq!(contents(&log), model);
}

#[test]
fn a_roll_that_cannot_create_the_next_segment_changes_nothing() {
    in_child(
        "a_roll_that_cannot_create_the_next_segment_changes_nothing",
        a_roll_that_cannot_create_the_next_segment_changes_nothing_body,
    );
}

fn producer_sends_in_a_failed_batch_get_send_failed_body() {
    failed_batch_sends_get_send_failed(16 * 1024);
}

/// With batches of 1 KiB, the flush writes several with one vectored
/// write, which the file-size limit cuts short part-way.
fn producer_sends_in_a_failed_vectored_write_get_send_failed_body() {
    failed_batch_sends_get_send_failed(1024);
}

fn failed_batch_sends_get_send_failed(batch_size: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let mut tc = TopicConfig::default();
    tc.log.segment_index_bytes = 4096;
    let values = |from: usize, n: usize, len: usize| -> Vec<Vec<u8>> {
        (from..from + n)
            .map(|i| vec![b'a' + (i % 26) as u8; len])
            .collect()
    };
    let mut acked: Vec<Vec<u8>> = Vec::new();
    {
        let store = Store::open(tmp.path(), StoreOptions::default()).unwrap();
        store.create_topic("t", 1, tc).unwrap();
        let mut pc = ProducerConfig::default();
        pc.linger = Duration::from_secs(60);
        pc.durability = Durability::Fsync;
        pc.batch_size = batch_size;
        let producer = Producer::new(&store, pc).unwrap();
        let send_all = |vals: &[Vec<u8>]| {
            let handles: Vec<_> = vals
                .iter()
                .map(|v| {
                    producer
                        .send(ProducerRecord::new("t", v.clone()).partition(0))
                        .unwrap()
                })
                .collect();
            let flushed = producer.flush();
            (handles, flushed)
        };
        let (hs, flushed) = send_all(&values(0, 40, 200));
        flushed.unwrap();
        for h in hs {
            h.wait().unwrap();
        }
        acked.extend(values(0, 40, 200));
        let log = store.partition("t", 0).unwrap();
        let path = log_file(log.dir(), 0);
        let size = log.size();
        assert_eq!(crate::zeros_ahead::data_len(&path), size);
        let end = log.log_end_offset();

        // Room for part of one batch: whichever write comes first fails
        // part-way, however the batches are grouped into writes.
        limit_file_size(size + 1000.min(batch_size as u64 / 2));
        let (hs, flushed) = send_all(&values(40, 20, 200));
        assert!(
            matches!(flushed, Err(Error::SendFailed { .. })),
            "{flushed:?}"
        );
        for h in hs {
            match h.wait() {
                Err(Error::SendFailed { source }) => {
                    assert!(
                        matches!(&*source, Error::Io { .. } | Error::DiskFull { .. }),
                        "{source}"
                    );
                }
                other => panic!("expected SendFailed, got {other:?}"),
            }
        }
        assert_eq!(log.log_end_offset(), end);
        assert_eq!(log.high_watermark(), end);
        assert_eq!(file_len(&path), size);

        unlimit_file_size();
        let (hs, flushed) = send_all(&values(60, 20, 200));
        flushed.unwrap();
        for (k, h) in hs.into_iter().enumerate() {
            assert_eq!(h.wait().unwrap().offset, end + k as i64);
        }
        acked.extend(values(60, 20, 200));
        drop(producer);
        // No close: the reopen recovers.
    }
    let store = Store::open(tmp.path(), StoreOptions::default()).unwrap();
    let log = store.partition("t", 0).unwrap();
    let mut got = Vec::new();
    let mut at = 0;
    loop {
        let r = log.read(at, 1 << 20).unwrap();
        if r.is_empty() {
            break;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            assert_eq!(rec.offset, got.len() as i64);
            got.push(rec.value.unwrap().to_vec());
        }
        at = r.next_offset();
    }
    assert_eq!(got, acked);
    store.close().unwrap();
}

#[test]
fn producer_sends_in_a_failed_batch_get_send_failed() {
    in_child(
        "producer_sends_in_a_failed_batch_get_send_failed",
        producer_sends_in_a_failed_batch_get_send_failed_body,
    );
}

#[test]
fn producer_sends_in_a_failed_vectored_write_get_send_failed() {
    in_child(
        "producer_sends_in_a_failed_vectored_write_get_send_failed",
        producer_sends_in_a_failed_vectored_write_get_send_failed_body,
    );
}
