//! Read-only access to a store another handle or process is writing.

use kafkalite::{
    Consumer, ConsumerConfig, Durability, Error, OffsetReset, Record, Store, StoreOptions,
    TopicConfig, TopicPartition,
};
use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

fn small_topic() -> TopicConfig {
    let mut c = TopicConfig::default();
    c.log.segment_bytes = 4096;
    c.log.segment_index_bytes = 4096;
    c.log.index_interval_bytes = 512;
    c
}

fn values(store: &Store, topic: &str, from: i64) -> Vec<(i64, String)> {
    values_until(store, topic, from, i64::MAX)
}

/// As `values`, but stops once offsets reach `end`.
fn values_until(store: &Store, topic: &str, from: i64, end: i64) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut at = from;
    loop {
        let r = store.fetch(topic, 0, at, 1 << 20).unwrap();
        if r.is_empty() || at >= end {
            return out;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            out.push((
                rec.offset,
                String::from_utf8(rec.value.unwrap().to_vec()).unwrap(),
            ));
        }
        at = r.next_offset();
    }
}

#[test]
fn a_read_only_handle_tails_a_store_that_is_being_written() {
    let d = tempfile::tempdir().unwrap();
    let w = Store::open(d.path(), StoreOptions::default()).unwrap();
    w.create_topic("t", 1, small_topic()).unwrap();
    let append = |from: usize, n: usize| {
        for i in from..from + n {
            w.append(
                "t",
                0,
                &[Record::new(format!("v{i:>30}"))],
                Durability::Written,
            )
            .unwrap();
        }
    };
    append(0, 50);
    // No lock conflict with the writer.
    let r = Store::open_read_only(d.path(), StoreOptions::default()).unwrap();
    assert!(r.is_read_only());
    assert_eq!(values(&r, "t", 0).len(), 50);
    // New records and new segments show up on the next read.
    append(50, 200);
    let got = values(&r, "t", 0);
    assert_eq!(got.len(), 250);
    assert!(got
        .iter()
        .enumerate()
        .all(|(i, (o, v))| *o == i as i64 && *v == format!("v{i:>30}")));
    assert!(r.describe_topic("t").unwrap().partitions[0].segments > 3);
    // Retention in the writer: the reader follows the log start.
    w.delete_records("t", 0, 120).unwrap();
    assert_eq!(values(&r, "t", 120).first().map(|v| v.0), Some(120));
    assert!(matches!(
        r.fetch("t", 0, 10, 100),
        Err(Error::OffsetOutOfRange { .. })
    ));
    // Nothing that writes works.
    assert!(matches!(
        r.append("t", 0, &[Record::new("x")], Durability::Written),
        Err(Error::ReadOnly)
    ));
    assert!(matches!(
        r.create_topic("u", 1, TopicConfig::default()),
        Err(Error::ReadOnly)
    ));
    assert!(matches!(r.delete_topic("t"), Err(Error::ReadOnly)));
    assert!(matches!(r.apply_retention(None), Err(Error::ReadOnly)));
    assert!(matches!(r.flush(), Err(Error::ReadOnly)));
    r.close().unwrap();
    w.close().unwrap();
}

#[test]
fn a_read_only_consumer_sees_commits_and_cannot_make_them() {
    let d = tempfile::tempdir().unwrap();
    let w = Store::open(d.path(), StoreOptions::default()).unwrap();
    w.create_topic("t", 1, TopicConfig::default()).unwrap();
    w.append(
        "t",
        0,
        &[Record::new("a"), Record::new("b")],
        Durability::Written,
    )
    .unwrap();
    w.reset_group_offsets("g", "t", kafkalite::ResetTo::Offset(1))
        .unwrap();
    let r = Store::open_read_only(d.path(), StoreOptions::default()).unwrap();
    assert_eq!(r.committed_offset("g", "t", 0).unwrap().offset, 1);
    w.reset_group_offsets("g", "t", kafkalite::ResetTo::Offset(2))
        .unwrap();
    assert_eq!(r.committed_offset("g", "t", 0).unwrap().offset, 2);
    let mut cfg = ConsumerConfig::with_group("reader");
    cfg.auto_offset_reset = OffsetReset::Earliest;
    cfg.enable_auto_commit = false;
    let mut c = Consumer::new(&r, cfg).unwrap();
    c.assign(&[TopicPartition::new("t", 0)]).unwrap();
    let recs = c.poll(Duration::from_secs(2)).unwrap();
    assert_eq!(recs.len(), 2);
    assert!(matches!(c.commit_sync(), Err(Error::ReadOnly)));
}

#[test]
fn a_reader_process_sees_every_acknowledged_record_of_a_writer_process_in_order() {
    const N: usize = 3000;
    if let Ok(dir) = std::env::var("KAFKALITE_WRITER_CHILD") {
        let s = Store::open(&dir, StoreOptions::default()).unwrap();
        s.create_topic("t", 1, small_topic()).unwrap();
        for i in 0..N {
            let info = s
                .append(
                    "t",
                    0,
                    &[Record::new(format!("rec-{i}"))],
                    Durability::Written,
                )
                .unwrap();
            println!("ack {}", info.base_offset);
            if i % 500 == 0 {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        s.close().unwrap();
        std::process::exit(0);
    }
    let d = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "read_only::a_reader_process_sees_every_acknowledged_record_of_a_writer_process_in_order",
            "--nocapture",
        ])
        .env("KAFKALITE_WRITER_CHILD", d.path())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let acks = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| l.strip_prefix("ack ").map(|o| o.parse::<i64>().unwrap()))
            .collect::<Vec<_>>()
    });
    // Wait for the writer to create the topic, then tail it from another
    // process's point of view: a read-only store.
    let deadline = Instant::now() + Duration::from_secs(60);
    let reader = loop {
        assert!(Instant::now() < deadline, "writer never created the topic");
        if let Ok(s) = Store::open_read_only(d.path(), StoreOptions::default()) {
            if s.list_topics() == ["t"] {
                break s;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let mut cfg = ConsumerConfig::default();
    cfg.auto_offset_reset = OffsetReset::Earliest;
    let mut c = Consumer::new(&reader, cfg).unwrap();
    c.assign(&[TopicPartition::new("t", 0)]).unwrap();
    let mut seen = Vec::new();
    while seen.len() < N {
        assert!(
            Instant::now() < deadline,
            "reader saw only {} records",
            seen.len()
        );
        for r in c.poll(Duration::from_millis(100)).unwrap() {
            assert_eq!(r.offset, seen.len() as i64, "in order, no gaps");
            assert_eq!(
                r.value.as_deref(),
                Some(format!("rec-{}", r.offset).as_bytes())
            );
            seen.push(r.offset);
        }
    }
    assert!(child.wait().unwrap().success());
    let acked = acks.join().unwrap();
    assert_eq!(acked.len(), N);
    assert!(acked.iter().all(|o| seen.contains(o)));
}

/// Hides one `.log` from the first listing of a partition directory, as a
/// listing racing the writer's roll may: ext4 lists in hash order, so a
/// segment created during the listing can be missed while one created
/// after it is shown.
#[derive(Default)]
struct HidesASegmentOnce(std::sync::Mutex<Option<std::path::PathBuf>>);

impl crate::os_probe::Probe for HidesASegmentOnce {
    fn listed(
        &self,
        _dir: &std::path::Path,
        mut entries: Vec<std::path::PathBuf>,
    ) -> Vec<std::path::PathBuf> {
        let mut hidden = self.0.lock().unwrap();
        let mut logs: Vec<_> = entries
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .cloned()
            .collect();
        // Zero-padded names: sorted as text is sorted by base offset.
        logs.sort();
        if hidden.is_none() && logs.len() >= 3 {
            let second_highest = logs[logs.len() - 2].clone();
            entries.retain(|p| *p != second_highest);
            *hidden = Some(second_highest);
        }
        entries
    }
}

/// Found by `read_only_opens_racing_the_writers_rolls_and_trims_never_crash`
/// under load: a read-only handle opened while the writer rolled was
/// missing the segment created during its directory listing, and read the
/// records before and after it with that segment's seven records skipped.
#[test]
fn a_listing_that_misses_a_segment_made_during_it_skips_no_records() {
    let d = tempfile::tempdir().unwrap();
    let w = Store::open(d.path(), StoreOptions::default()).unwrap();
    w.create_topic("t", 1, small_topic()).unwrap();
    let n = 300;
    for i in 0..n {
        w.append(
            "t",
            0,
            &[Record::new(format!("v{i:>60}"))],
            Durability::Written,
        )
        .unwrap();
    }
    let probe = std::sync::Arc::new(crate::os_probe::Probed(HidesASegmentOnce::default()));
    let mut o = StoreOptions::default();
    o.file_system = kafkalite::io::FsHandle::new(probe.clone());
    let r = Store::open_read_only(d.path(), o).unwrap();
    assert!(probe.0 .0.lock().unwrap().is_some(), "no listing was cut");
    let got = values(&r, "t", 0);
    let offsets: Vec<i64> = got.iter().map(|(o, _)| *o).collect();
    assert_eq!(offsets, (0..n).collect::<Vec<i64>>());
    for (o, v) in &got {
        assert_eq!(*v, format!("v{o:>60}"));
    }
}

#[test]
fn read_only_opens_racing_the_writers_rolls_and_trims_never_crash() {
    let d = tempfile::tempdir().unwrap();
    let w = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut c = small_topic();
    c.log.segment_bytes = 1024;
    // Large preallocated indexes, trimmed at every roll: the window in which
    // a reader mapping them would fault.
    c.log.segment_index_bytes = 1 << 20;
    w.create_topic("t", 1, c).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (w, stop) = (w.clone(), std::sync::Arc::clone(&stop));
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                w.append(
                    "t",
                    0,
                    &[Record::new(format!("v{i:>60}"))],
                    Durability::Written,
                )
                .unwrap();
                i += 1;
            }
            i
        })
    };
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut opens = 0;
    while Instant::now() < deadline {
        let r = Store::open_read_only(d.path(), StoreOptions::default()).unwrap();
        // Up to where the log ended when this handle opened: reading "until
        // empty" races the writer, and a writer faster than the reader (each
        // fetch here sees one 1 KiB segment) would keep it reading forever.
        let end = r.partition("t", 0).unwrap().high_watermark();
        let got = values_until(&r, "t", 0, end);
        let bad = got.iter().enumerate().find(|(i, (o, _))| *o != *i as i64);
        assert!(
            bad.is_none(),
            "first out of place: {bad:?} of {} (end {end})",
            got.len()
        );
        assert!(
            got.len() as i64 >= end,
            "{} of {end} records read",
            got.len()
        );
        opens += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    let written = writer.join().unwrap();
    assert!(
        opens > 5 && written > 100,
        "{opens} opens, {written} records"
    );
}

/// Issue 17, finding 13: after the writer compacted, every read on a
/// read-only handle failed with `Corrupt { …, "sealed segment size changed
/// while open" }`, and a fresh read-only handle answered `OffsetOutOfRange`
/// where the writer returned records. A tailer follows compaction as it
/// follows appends: every read-only handle reads what the writer reads.
#[test]
fn a_read_only_handle_follows_the_writers_compaction() {
    let d = tempfile::tempdir().unwrap();
    let w = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut config = small_topic();
    config.cleanup_policy = kafkalite::CleanupPolicy::Compact;
    config.min_dirty_percent = 0;
    w.create_topic("t", 1, config).unwrap();
    // Keys 0..10 over and over: early segments are all superseded.
    for i in 0..400 {
        w.append(
            "t",
            0,
            &[Record::new(format!("v{i:>40}")).key(format!("k{}", i % 10))],
            Durability::Written,
        )
        .unwrap();
    }
    w.flush().unwrap();
    let old = Store::open_read_only(d.path(), StoreOptions::default()).unwrap();
    // The old handle has looked at the segments before the compaction.
    assert_eq!(values(&old, "t", 0).len(), 400);
    let report = w.apply_retention(Some("t")).unwrap();
    assert!(
        report
            .partitions
            .iter()
            .any(|p| p.compaction.segments_cleaned > 0),
        "{report:?}"
    );
    let want = values(&w, "t", 0);
    assert!(want.len() < 400, "compaction removed records");
    assert_eq!(values(&old, "t", 0), want, "the old read-only handle");
    let fresh = Store::open_read_only(d.path(), StoreOptions::default()).unwrap();
    assert_eq!(values(&fresh, "t", 0), want, "a fresh read-only handle");
    let wl = w.partition("t", 0).unwrap();
    for r in [&old, &fresh] {
        let l = r.partition("t", 0).unwrap();
        assert_eq!(
            (l.log_start_offset(), l.log_end_offset()),
            (wl.log_start_offset(), wl.log_end_offset())
        );
    }
}
