//! Injected I/O failures (feature `failpoints`, through the simulated file
//! system `SimFs`): whatever fails, the log stays consistent; a failed fsync
//! poisons it until reopen and is never retried; a failed write changes
//! nothing visible.

use kafkalite::io::{Fault, Op, SimFs};
use kafkalite::{
    Compression, Durability, Error, LogConfig, PartitionLog, Producer, ProducerConfig,
    ProducerRecord, Record, Store, StoreOptions, TopicConfig,
};
use std::path::Path;
use std::sync::Arc;

/// A log config whose file operations go through `sim`.
fn on(sim: &Arc<SimFs>) -> LogConfig {
    let mut c = LogConfig::default();
    c.file_system = Arc::clone(sim).into();
    c
}

/// A log `t-0` in a fresh directory, on a simulated file system over it,
/// with `tweak` applied to its config.
fn sim_log(
    tweak: impl FnOnce(&mut LogConfig),
) -> (
    tempfile::TempDir,
    std::path::PathBuf,
    Arc<SimFs>,
    PartitionLog,
) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sim = SimFs::new(d.path()).unwrap();
    let mut config = on(&sim);
    tweak(&mut config);
    let log = PartitionLog::open(&dir, config).unwrap();
    (d, dir, sim, log)
}

/// A store in `dir` whose every file operation goes through a fresh SimFs.
fn sim_store(dir: &Path) -> (Arc<SimFs>, Store) {
    let sim = SimFs::new(dir).unwrap();
    let mut o = StoreOptions::default();
    o.file_system = Arc::clone(&sim).into();
    (sim, Store::open(dir, o).unwrap())
}

fn rec(i: u32) -> Record {
    Record::new(format!("value-{i:>20}"))
}

fn values(log: &PartitionLog) -> Vec<(i64, String)> {
    crate::log_basic::read_all(log, log.log_start_offset())
        .into_iter()
        .map(|(o, v)| (o, String::from_utf8(v.unwrap().to_vec()).unwrap()))
        .collect()
}

fn expected(n: u32) -> Vec<(i64, String)> {
    (0..n)
        .map(|i| (i64::from(i), format!("value-{i:>20}")))
        .collect()
}

fn append(log: &PartitionLog, i: u32, d: Durability) -> kafkalite::Result<kafkalite::AppendInfo> {
    log.append_records(&[rec(i)], Compression::None, d)
}

fn log_size(dir: &Path) -> u64 {
    std::fs::metadata(dir.join(format!("{:020}.log", 0)))
        .unwrap()
        .len()
}

#[test]
fn a_failed_fsync_poisons_the_log_until_reopen_and_is_not_retried() {
    let (_d, dir, sim, log) = sim_log(|_| {});
    for i in 0..3 {
        append(&log, i, Durability::Fsync).unwrap();
    }
    let fsyncs = log.fsync_count();
    sim.inject(Fault::error(Op::SyncData, &dir, libc::EIO));
    assert!(matches!(
        append(&log, 3, Durability::Fsync),
        Err(Error::Io { op: "fsync", .. })
    ));
    // The unsynced record is not visible to readers (high watermark held).
    assert_eq!(log.high_watermark(), 3);
    assert_eq!(values(&log), expected(3));
    // Poisoned: later appends and flushes refuse, without another fsync.
    assert!(matches!(
        append(&log, 4, Durability::Written),
        Err(Error::Poisoned { .. })
    ));
    assert!(matches!(log.flush(), Err(Error::Poisoned { .. })));
    assert_eq!(log.fsync_count(), fsyncs + 1);
    drop(log);
    // Reopening recovers; everything acknowledged is there.
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    let got = values(&log);
    assert_eq!(&got[..3], &expected(3)[..]);
    append(&log, 9, Durability::Fsync).unwrap();
}

#[test]
fn a_failed_write_changes_nothing_visible_and_the_log_keeps_working() {
    for short in [false, true] {
        let (_d, dir, sim, log) = sim_log(|_| {});
        for i in 0..5 {
            append(&log, i, Durability::Written).unwrap();
        }
        let size = log_size(&dir);
        sim.inject(if short {
            Fault::short_write(".log", libc::EIO)
        } else {
            Fault::error(Op::Write, ".log", libc::EIO)
        });
        assert!(matches!(
            append(&log, 5, Durability::Written),
            Err(Error::Io { op: "write", .. })
        ));
        assert_eq!(log.log_end_offset(), 5);
        assert_eq!(log.high_watermark(), 5);
        assert_eq!(
            log_size(&dir),
            size,
            "short {short}: the partial write is cut back"
        );
        assert_eq!(values(&log), expected(5));
        // Not poisoned: the file was cut back to a batch boundary.
        append(&log, 5, Durability::Written).unwrap();
        assert_eq!(values(&log), expected(6));
        drop(log);
        let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
        assert_eq!(values(&log), expected(6));
    }
}

#[test]
fn a_full_disk_is_reported_as_such_and_appends_work_once_space_is_back() {
    let (_d, _, sim, log) = sim_log(|_| {});
    append(&log, 0, Durability::Written).unwrap();
    sim.inject(Fault::short_write(".log", libc::ENOSPC).times(3));
    for _ in 0..3 {
        assert!(matches!(
            append(&log, 1, Durability::Written),
            Err(Error::DiskFull { .. })
        ));
    }
    assert_eq!(values(&log), expected(1));
    append(&log, 1, Durability::Fsync).unwrap();
    assert_eq!(values(&log), expected(2));
}

#[test]
fn a_write_whose_cut_back_also_fails_poisons_the_log() {
    let (_d, dir, sim, log) = sim_log(|_| {});
    append(&log, 0, Durability::Written).unwrap();
    sim.inject(Fault::short_write(".log", libc::EIO));
    sim.inject(Fault::error(Op::SetLen, ".log", libc::EIO));
    assert!(matches!(
        append(&log, 1, Durability::Written),
        Err(Error::Io { .. })
    ));
    // A torn half-batch may sit past the end: no append may follow it.
    assert!(matches!(
        append(&log, 2, Durability::Written),
        Err(Error::Poisoned { .. })
    ));
    assert_eq!(values(&log), expected(1));
    drop(log);
    // Recovery cuts the torn tail.
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(values(&log), expected(1));
    append(&log, 1, Durability::Written).unwrap();
    assert_eq!(values(&log), expected(2));
}

#[test]
fn a_producer_reports_a_failed_fsync_on_every_record_of_the_batch() {
    let d = tempfile::tempdir().unwrap();
    let (sim, s) = sim_store(d.path());
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = ProducerConfig::default();
    c.durability = Durability::Fsync;
    c.linger = std::time::Duration::from_secs(3600);
    let p = Producer::new(&s, c).unwrap();
    sim.inject(Fault::error(Op::SyncData, d.path().join("t-0"), libc::EIO));
    let handles: Vec<_> = (0..10)
        .map(|i| {
            p.send(ProducerRecord::new("t", format!("{i}")).partition(0))
                .unwrap()
        })
        .collect();
    assert!(p.flush().is_err());
    for h in handles {
        assert!(matches!(h.wait(), Err(Error::SendFailed { .. })));
    }
    assert_eq!(s.partition("t", 0).unwrap().high_watermark(), 0);
}

/// Runs the power-loss workload with call number `n` of the simulated file
/// system failing, then reopens the store with the real one.
/// Tries every `every`th call (`KAFKALITE_SWEEP_EVERY` overrides it; 1
/// tries them all) and prints what it did.
fn sweep(every: u64, errno: i32, short: bool) {
    use crate::power_loss::{check_image, options, workload, Acked};
    use kafkalite::io::CrashPoint;
    use kafkalite::Record;
    let every = std::env::var("KAFKALITE_SWEEP_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(every);
    // Calls the workload makes without faults.
    let calls = {
        let d = tempfile::tempdir().unwrap();
        let sim = SimFs::new(d.path()).unwrap();
        let errors = workload(d.path(), options(Some(&sim)), |_| {});
        assert!(errors.is_empty(), "{errors:?}");
        sim.calls()
    };
    let mut failed_runs = 0;
    let mut fired = 0;
    let mut n = 0;
    while n < calls {
        let d = tempfile::tempdir().unwrap();
        let sim = SimFs::new(d.path()).unwrap();
        sim.inject(Fault::nth_call(n, errno, short));
        let mut acked = Acked::default();
        let errors = workload(d.path(), options(Some(&sim)), |a| acked = a.clone());
        for e in &errors {
            // Typed: an I/O error naming the call, the disk-full report, or
            // the poisoned state a failed fsync or cut-back leaves.
            assert!(
                matches!(
                    e,
                    Error::Io { .. } | Error::DiskFull { .. } | Error::Poisoned { .. }
                ),
                "call {n}: unexpected error {e:?}"
            );
        }
        failed_runs += u64::from(!errors.is_empty());
        fired += sim.fired();
        // A power loss right after the run keeps everything acknowledged
        // (only synced bytes survive, and none a failed fsync covered).
        let image = tempfile::tempdir().unwrap();
        let at = sim.position();
        let point = CrashPoint {
            at,
            unsynced_kept: 0,
            torn_bytes: 0,
        };
        sim.crash_image(point, image.path()).unwrap();
        check_image(image.path(), &acked);
        // So does reopening what the process left (a process crash).
        check_image(d.path(), &acked);
        // And the store works again: the fault is gone (space is back).
        let s = Store::open(d.path(), options(None)).unwrap();
        if s.list_topics().contains(&"q".to_owned()) {
            s.append("q", 0, &[Record::new("q-1000")], Durability::Fsync)
                .unwrap_or_else(|e| panic!("call {n}: append after reopen: {e}"));
        }
        s.close().unwrap();
        n += every;
    }
    assert!(failed_runs > 0, "no run saw its fault");
    println!(
        "errno {errno} (short writes: {short}): {calls} calls, every {every}th failed, \
         {fired} faults fired, {failed_runs} runs saw an error"
    );
}

#[test]
fn failing_any_file_system_call_with_eio_loses_nothing_acknowledged() {
    sweep(7, libc::EIO, false);
}

#[test]
fn a_short_write_or_full_disk_at_any_call_loses_nothing_acknowledged() {
    sweep(11, libc::ENOSPC, true);
}

#[test]
fn a_failed_read_is_an_io_error_not_corruption_and_the_next_read_works() {
    let (_d, _, sim, log) = sim_log(|c| c.read_mode = kafkalite::ReadMode::Pread);
    for i in 0..5 {
        append(&log, i, Durability::Written).unwrap();
    }
    sim.inject(Fault::error(Op::Read, ".log", libc::EIO));
    assert!(matches!(
        log.read(0, usize::MAX),
        Err(Error::Io {
            op: "read segment",
            ..
        })
    ));
    assert_eq!(values(&log), expected(5));
    append(&log, 5, Durability::Fsync).unwrap();
    assert_eq!(values(&log), expected(6));
}

#[test]
fn a_full_disk_while_rolling_a_segment_is_reported_and_the_roll_retried() {
    // The new segment's index cannot be preallocated: the append fails as
    // DiskFull, nothing is visible, and once space is back the roll and the
    // append go through.
    let (_d, dir, sim, log) = sim_log(|c| c.settings.segment_bytes = 256);
    let mut n = 0;
    while log.segment_count() == 1 {
        append(&log, n, Durability::Written).unwrap();
        n += 1;
    }
    let segments = log.segment_count();
    // Fill the active segment so the next append rolls.
    sim.inject(Fault::error(Op::Allocate, ".index", libc::ENOSPC).times(2));
    let mut failed = 0;
    loop {
        match append(&log, n, Durability::Written) {
            Ok(_) if log.segment_count() > segments => break,
            Ok(_) => n += 1,
            Err(Error::DiskFull { .. }) => failed += 1,
            Err(e) => panic!("unexpected {e:?}"),
        }
        // A guard against looping forever: the roll must work once
        // space is back.
        assert!(failed <= 2, "the roll must work once space is back");
    }
    assert_eq!(failed, 2, "both failed preallocations are reported");
    n += 1;
    assert_eq!(values(&log), expected(n));
    drop(log);
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(values(&log), expected(n));
}

#[test]
fn a_roll_whose_fsync_fails_poisons_the_log_so_no_later_fsync_acknowledges() {
    // The seal's fdatasync of the full segment fails: fsyncing again later
    // could report success for pages the kernel dropped, so flushes and
    // Fsync appends must fail until reopen.
    let (_d, dir, sim, log) = sim_log(|c| c.settings.segment_bytes = 256);
    sim.inject(Fault::error(Op::SyncData, ".log", libc::EIO));
    let mut n = 0;
    let err = loop {
        match append(&log, n, Durability::Written) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
        assert!(n < 100, "no roll happened");
    };
    assert!(matches!(err, Error::Io { op: "fsync", .. }), "{err:?}");
    assert_eq!(sim.fired(), 1);
    assert!(matches!(log.flush(), Err(Error::Poisoned { .. })));
    assert!(matches!(
        append(&log, n, Durability::Fsync),
        Err(Error::Poisoned { .. })
    ));
    assert_eq!(log.fsync_count(), 0, "no fsync after the failed one");
    drop(log);
    let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
    assert_eq!(values(&log), expected(n));
}

/// Issue 17, finding 8: after a failed append, the batches of that partition
/// sent before the application was handed the error fail with it (none lands
/// after the gap); once it was handed out, later sends are appended again,
/// in order, right after the acknowledged prefix.
#[test]
fn a_failed_append_fails_the_batches_behind_it_until_the_application_sees_the_error() {
    let d = tempfile::tempdir().unwrap();
    let (sim, s) = sim_store(d.path());
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = ProducerConfig::default();
    // Every record fills its own batch, appended within a millisecond.
    c.batch_size = 1;
    c.linger = std::time::Duration::from_secs(3600);
    let p = Producer::new(&s, c).unwrap();
    let send = |i: u32| {
        p.send(ProducerRecord::new("t", format!("value-{i:>20}")).partition(0))
            .unwrap()
    };
    for i in 0..5 {
        assert_eq!(send(i).wait().unwrap().offset, i64::from(i));
    }
    sim.inject(Fault::error(Op::Write, d.path().join("t-0"), libc::ENOSPC));
    let failed = send(5);
    // Its full batch is written within a millisecond (`is_done` hands no
    // error to the application).
    let start = std::time::Instant::now();
    while !failed.is_done() {
        assert!(start.elapsed() < std::time::Duration::from_secs(30));
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    // Space is back, but the application has not seen the failure yet:
    // these were queued behind it and must not land after the gap.
    sim.clear_faults();
    let behind: Vec<_> = (6..9).map(send).collect();
    let log = s.partition("t", 0).unwrap();
    assert_eq!(log.log_end_offset(), 5);
    match failed.wait() {
        Err(Error::SendFailed { source }) => {
            assert!(matches!(*source, Error::DiskFull { .. }), "{source:?}")
        }
        other => panic!("{other:?}"),
    }
    for h in behind {
        match h.wait() {
            Err(Error::SendFailed { source }) => {
                assert!(matches!(*source, Error::DiskFull { .. }), "{source:?}")
            }
            other => panic!("{other:?}"),
        }
    }
    // The failure was handed out: later sends start again, in order.
    for i in 9..12 {
        assert_eq!(send(i).wait().unwrap().offset, i64::from(i) - 4);
    }
    let want: Vec<(i64, String)> = (0..5)
        .chain(9..12)
        .enumerate()
        .map(|(o, i)| (o as i64, format!("value-{i:>20}")))
        .collect();
    assert_eq!(values(&log), want);
    p.flush().unwrap();
}

/// As above, with the failure handed out through a callback.
#[test]
fn a_failure_handed_to_a_callback_lets_later_sends_append_again() {
    let d = tempfile::tempdir().unwrap();
    let (sim, s) = sim_store(d.path());
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = ProducerConfig::default();
    c.batch_size = 1;
    c.linger = std::time::Duration::from_secs(3600);
    let p = Producer::new(&s, c).unwrap();
    let rec = |i: u32| ProducerRecord::new("t", format!("value-{i:>20}")).partition(0);
    p.send(rec(0)).unwrap().wait().unwrap();
    sim.inject(Fault::error(Op::Write, d.path().join("t-0"), libc::ENOSPC));
    let (tx, rx) = std::sync::mpsc::channel();
    p.send_with_callback(rec(1), move |r| tx.send(r.is_err()).unwrap())
        .unwrap();
    assert!(rx.recv().unwrap(), "the callback gets the failure");
    sim.clear_faults();
    assert_eq!(p.send(rec(2)).unwrap().wait().unwrap().offset, 1);
    let log = s.partition("t", 0).unwrap();
    assert_eq!(
        values(&log),
        vec![
            (0, format!("value-{:>20}", 0)),
            (1, format!("value-{:>20}", 2))
        ]
    );
}

fn partition_dirs(root: &Path, topic: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&format!("{topic}-")))
        .collect();
    v.sort();
    v
}

/// Issue 17, finding 16: a `create_topic` or `add_partitions` that fails
/// part-way (EMFILE under a low `ulimit -n`) left the partition directories
/// it had made.
#[test]
fn a_failed_create_topic_or_add_partitions_leaves_no_partition_directory_behind() {
    let d = tempfile::tempdir().unwrap();
    let (sim, s) = sim_store(d.path());
    sim.inject(Fault::error(Op::CreateDir, "big-3", libc::EMFILE));
    assert!(s.create_topic("big", 6, TopicConfig::default()).is_err());
    assert_eq!(partition_dirs(d.path(), "big"), Vec::<String>::new());
    assert!(s.list_topics().is_empty());
    s.create_topic("big", 2, TopicConfig::default()).unwrap();
    sim.inject(Fault::error(Op::CreateDir, "big-4", libc::EMFILE));
    assert!(s.add_partitions("big", 6).is_err());
    assert_eq!(partition_dirs(d.path(), "big"), vec!["big-0", "big-1"]);
    assert_eq!(s.partition_count("big").unwrap(), 2);
    // The metadata write failing is cleaned up too.
    sim.inject(Fault::error(Op::Rename, "topics.meta", libc::ENOSPC));
    assert!(s.add_partitions("big", 4).is_err());
    assert_eq!(partition_dirs(d.path(), "big"), vec!["big-0", "big-1"]);
    sim.clear_faults();
    s.add_partitions("big", 4).unwrap();
    assert_eq!(partition_dirs(d.path(), "big").len(), 4);
}
