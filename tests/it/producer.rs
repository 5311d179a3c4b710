//! The producer: batching, durability, many threads (partitioning:
//! `partitioner.rs`).

use kafkalite::{
    Compression, Durability, Error, Producer, ProducerConfig, ProducerRecord, Store, StoreOptions,
    TopicConfig,
};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub(crate) fn store_with(topic: &str, partitions: u32) -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic(topic, partitions, TopicConfig::default())
        .unwrap();
    (d, s)
}

fn all_values(store: &Store, topic: &str, partition: u32) -> Vec<(i64, Vec<u8>)> {
    let log = store.partition(topic, partition).unwrap();
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let r = log.read(at, 1 << 20).unwrap();
        if r.is_empty() {
            return out;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            out.push((rec.offset, rec.value.unwrap().to_vec()));
        }
        at = r.next_offset();
    }
}

#[test]
fn bad_sends_get_typed_errors_and_queue_nothing() {
    let (_d, s) = store_with("t", 2);
    let p = Producer::new(&s, ProducerConfig::default()).unwrap();
    assert!(matches!(
        p.send(ProducerRecord::new("nope", "v")),
        Err(Error::UnknownTopic { .. })
    ));
    assert!(matches!(
        p.send(ProducerRecord::new("t", "v").partition(2)),
        Err(Error::UnknownPartition { .. })
    ));
    assert!(matches!(
        p.send(ProducerRecord::new("t", vec![0u8; 2 << 20])),
        Err(Error::RecordTooLarge { .. })
    ));
    p.flush().unwrap();
    for part in 0..2 {
        assert_eq!(s.partition("t", part).unwrap().log_end_offset(), 0);
    }
}

#[test]
fn records_batch_up_to_batch_size_and_linger_flushes_the_rest() {
    let (_d, s) = store_with("t", 1);
    let mut c = ProducerConfig::default();
    c.batch_size = 4096;
    c.linger = Duration::from_millis(20);
    let p = Producer::new(&s, c).unwrap();
    let handles: Vec<_> = (0..100)
        .map(|i| {
            p.send(ProducerRecord::new("t", format!("{i:0>100}")).partition(0))
                .unwrap()
        })
        .collect();
    let metas: Vec<_> = handles.into_iter().map(|h| h.wait().unwrap()).collect();
    assert_eq!(
        metas.iter().map(|m| m.offset).collect::<Vec<_>>(),
        (0..100).collect::<Vec<_>>()
    );
    let read = s.fetch("t", 0, 0, usize::MAX).unwrap();
    let batches = read.batches();
    assert!(
        batches.len() >= 3 && batches.len() <= 6,
        "{} batches",
        batches.len()
    );
    for b in &batches[..batches.len() - 1] {
        assert!(b.size() <= 4096 + 61);
    }
}

/// Partition 0 of topic `t` holds values `0…0`, `0…1`, … (200 digits) up
/// to `n - 1`, in order at offsets 0 to `n - 1`.
fn assert_numbered_values(s: &Store, n: usize) {
    let values = all_values(s, "t", 0);
    assert_eq!(values.len(), n);
    for (i, (offset, v)) in values.iter().enumerate() {
        assert_eq!(
            (*offset, v.as_slice()),
            (i as i64, format!("{i:0>200}").as_bytes())
        );
    }
}

/// Counts the writes to `.log` files and the buffers of the vectored ones.
#[derive(Default)]
struct LogWrites {
    writes: AtomicUsize,
    vectored: AtomicUsize,
    most_parts: AtomicUsize,
}

impl crate::os_probe::Probe for LogWrites {
    fn write(&self, p: &Path) {
        if p.extension().is_some_and(|e| e == "log") {
            self.writes.fetch_add(1, Ordering::Relaxed);
        }
    }
    fn write_parts(&self, p: &Path, parts: usize) {
        if p.extension().is_some_and(|e| e == "log") {
            self.vectored.fetch_add(1, Ordering::Relaxed);
            self.most_parts.fetch_max(parts, Ordering::Relaxed);
        }
    }
}

/// A partition's full batches wait (a millisecond at most) for more, and
/// go out together in one vectored write: fewer writes than batches, each
/// batch still its own (no larger than `batch.size`), every record in
/// order at consecutive offsets.
#[test]
fn full_batches_of_a_partition_are_written_together_in_order() {
    let d = tempfile::tempdir().unwrap();
    let fs = Arc::new(crate::os_probe::Probed(LogWrites::default()));
    let mut opts = StoreOptions::default();
    opts.file_system = kafkalite::io::FsHandle::new(fs.clone());
    let s = Store::open(d.path(), opts).unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = ProducerConfig::default();
    c.batch_size = 1024;
    c.linger = Duration::from_secs(3600);
    let p = Producer::new(&s, c).unwrap();
    let n = 3000;
    let handles: Vec<_> = (0..n)
        .map(|i| {
            p.send(ProducerRecord::new("t", format!("{i:0>200}")).partition(0))
                .unwrap()
        })
        .collect();
    // Everything but the open batch is written without a flush: by the
    // sender once 64 KiB are sealed, or a millisecond after sealing (a
    // linger of an hour does not hold full batches back).
    let last_full = handles.len() - 10;
    for (i, h) in handles.into_iter().enumerate().take(last_full) {
        let m = h.wait_timeout(Duration::from_secs(30));
        assert_eq!(m.expect("a full batch waited").unwrap().offset, i as i64);
    }
    p.flush().unwrap();
    let read = s.fetch("t", 0, 0, usize::MAX).unwrap();
    let batches = read.batches();
    assert!(batches.len() > 100, "{} batches", batches.len());
    for b in batches {
        assert!(b.size() <= 1024 + 61, "{}", b.size());
    }
    let writes = fs.0.writes.load(Ordering::Relaxed);
    assert!(
        writes < batches.len(),
        "{writes} writes for {} batches",
        batches.len()
    );
    assert!(fs.0.vectored.load(Ordering::Relaxed) > 0);
    assert!(fs.0.most_parts.load(Ordering::Relaxed) > 1);
    assert_numbered_values(&s, n);
}

/// Full batches waiting to be written with others hold buffer memory: a
/// send that finds the buffer full neither waits for `linger.ms` (an hour)
/// nor fails, and nothing is lost or reordered; nor does a `try_send` that
/// retries (an async send: `async_api.rs`). (A blocking send writes the
/// waiting batches itself, a `try_send` has the linger thread write them;
/// without that they go out a millisecond after sealing anyway, so only
/// the outcome is checked here.)
#[test]
fn sends_on_a_buffer_held_by_full_batches_neither_wait_for_linger_nor_fail() {
    let (_d, s) = store_with("t", 1);
    let mut c = ProducerConfig::default();
    c.batch_size = 1024;
    c.buffer_memory = 4096;
    c.linger = Duration::from_secs(3600);
    c.max_block = Duration::from_secs(30);
    let p = Producer::new(&s, c).unwrap();
    let rec = |i: usize| ProducerRecord::new("t", format!("{i:0>200}")).partition(0);
    let start = std::time::Instant::now();
    for i in 0..400 {
        p.send(rec(i)).unwrap();
    }
    let mut i = 400;
    while i < 800 {
        match p.try_send(rec(i)) {
            Ok(_) => i += 1,
            Err(Error::BufferExhausted { waited_ms: 0, .. }) => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => panic!("{e}"),
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "try_send never found room"
        );
    }
    p.flush().unwrap();
    assert!(start.elapsed() < Duration::from_secs(60));
    assert_numbered_values(&s, 800);
}

#[test]
fn lz4_producer_batches_are_compressed_and_read_back() {
    let (_d, s) = store_with("t", 1);
    let mut c = ProducerConfig::default();
    c.compression = Compression::Lz4;
    let p = Producer::new(&s, c).unwrap();
    for i in 0..1000 {
        p.send(
            ProducerRecord::new("t", format!("repetitive value number {i} repetitive"))
                .partition(0),
        )
        .unwrap();
    }
    p.flush().unwrap();
    let read = s.fetch("t", 0, 0, usize::MAX).unwrap();
    assert!(read
        .batches()
        .iter()
        .all(|b| b.header().compression().unwrap() == Compression::Lz4));
    let values = all_values(&s, "t", 0);
    assert_eq!(values.len(), 1000);
    assert_eq!(values[999].1, b"repetitive value number 999 repetitive");
}

#[test]
fn callbacks_receive_each_records_metadata() {
    let (_d, s) = store_with("t", 1);
    let p = Producer::new(&s, ProducerConfig::default()).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..10 {
        let tx = tx.clone();
        p.send_with_callback(
            ProducerRecord::new("t", "v").partition(0).timestamp(i),
            move |r| {
                tx.send(r.map(|m| (m.offset, m.timestamp))).unwrap();
            },
        )
        .unwrap();
    }
    p.flush().unwrap();
    let mut got: Vec<(i64, i64)> = rx.try_iter().map(|r| r.unwrap()).collect();
    got.sort_unstable();
    assert_eq!(got, (0..10).map(|i| (i, i)).collect::<Vec<_>>());
}

/// A callback that sends runs inside the send whose append completed its
/// batch (with `linger.ms` 0, on the sending thread), while that send holds
/// the thread's cached topic: its sends take the uncached path, and every
/// record arrives once.
#[test]
fn callbacks_that_send_from_inside_a_send_lose_and_duplicate_nothing() {
    let (_d, s) = store_with("t", 4);
    let mut c = ProducerConfig::default();
    c.linger = Duration::ZERO;
    let p = Arc::new(Producer::new(&s, c).unwrap());
    let sender = std::thread::current().id();
    // Set around each send: a callback that sees it ran inside a send.
    let in_send = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let nested = Arc::new(AtomicUsize::new(0));
    let children_done = Arc::new(AtomicUsize::new(0));
    let n = 300u32;
    for i in 0..n {
        let (p2, nested, children_done) = (
            Arc::clone(&p),
            Arc::clone(&nested),
            Arc::clone(&children_done),
        );
        let in_send_now = Arc::clone(&in_send);
        // Keyless, keyed and explicit-partition parents, so the children's
        // sends meet every way a partition is chosen.
        let mut parent = ProducerRecord::new("t", format!("parent-{i}"));
        match i % 3 {
            0 => {}
            1 => parent = parent.key(format!("k{i}")),
            _ => parent = parent.partition(i % 4),
        }
        in_send.store(true, Ordering::Relaxed);
        p.send_with_callback(parent, move |r| {
            r.unwrap();
            if std::thread::current().id() == sender && in_send_now.load(Ordering::Relaxed) {
                nested.fetch_add(1, Ordering::Relaxed);
            }
            let done = Arc::clone(&children_done);
            p2.send_with_callback(ProducerRecord::new("t", format!("child-{i}")), move |r| {
                r.unwrap();
                done.fetch_add(1, Ordering::Relaxed);
            })
            .unwrap();
        })
        .unwrap();
        in_send.store(false, Ordering::Relaxed);
    }
    p.flush().unwrap();
    // A child sent by the last parents' callbacks during the flush.
    p.flush().unwrap();
    assert!(
        nested.load(Ordering::Relaxed) > 0,
        "no callback ran inside a send on the sending thread"
    );
    assert_eq!(children_done.load(Ordering::Relaxed), n as usize);
    let mut values: Vec<Vec<u8>> = (0..4)
        .flat_map(|part| all_values(&s, "t", part))
        .map(|(_, v)| v)
        .collect();
    values.sort();
    let mut want: Vec<Vec<u8>> = (0..n)
        .flat_map(|i| [format!("parent-{i}"), format!("child-{i}")])
        .map(String::into_bytes)
        .collect();
    want.sort();
    assert_eq!(values, want);
}

#[test]
fn durability_none_completes_at_once_with_offset_minus_one() {
    let (_d, s) = store_with("t", 1);
    let mut c = ProducerConfig::default();
    c.durability = Durability::None;
    c.linger = Duration::from_secs(3600);
    let p = Producer::new(&s, c).unwrap();
    let h = p.send(ProducerRecord::new("t", "v").partition(0)).unwrap();
    assert!(h.is_done());
    assert_eq!(h.wait().unwrap().offset, -1);
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), 0);
    p.flush().unwrap();
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), 1);
}

#[test]
fn fsync_durability_acknowledges_only_what_is_on_disk() {
    let (_d, s) = store_with("t", 1);
    let mut c = ProducerConfig::default();
    c.durability = Durability::Fsync;
    c.linger = Duration::ZERO;
    let p = Producer::new(&s, c).unwrap();
    let log = s.partition("t", 0).unwrap();
    let before = log.fsync_count();
    let m = p
        .send_and_wait(ProducerRecord::new("t", "v").partition(0))
        .unwrap();
    assert!(log.fsync_count() > before);
    assert!(log.high_watermark() > m.offset);
}

#[test]
fn a_full_buffer_blocks_for_max_block_then_fails() {
    let (_d, s) = store_with("t", 1);
    let mut c = ProducerConfig::default();
    c.buffer_memory = 1000;
    c.max_block = Duration::from_millis(50);
    c.linger = Duration::from_secs(3600);
    c.batch_size = 1 << 20;
    let p = Producer::new(&s, c).unwrap();
    let mut sent = 0;
    let err = loop {
        match p.send(ProducerRecord::new("t", vec![1u8; 100]).partition(0)) {
            Ok(_) => sent += 1,
            Err(e) => break e,
        }
        assert!(sent < 100, "buffer never filled");
    };
    assert!(matches!(
        err,
        Error::BufferExhausted {
            buffer_memory: 1000,
            ..
        }
    ));
    // Flushing frees the buffer; sending works again.
    p.flush().unwrap();
    p.send_and_wait(ProducerRecord::new("t", vec![1u8; 100]).partition(0))
        .unwrap();
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), sent + 1);
}

/// 4 threads × 100k sends through one producer: every record present exactly
/// once, and each thread's records in order within each partition.
#[test]
fn many_threads_share_one_producer_without_loss_duplication_or_reordering() {
    let (_d, s) = store_with("t", 3);
    let mut c = ProducerConfig::default();
    c.linger = Duration::from_millis(1);
    let p = Arc::new(Producer::new(&s, c).unwrap());
    let threads = 4u64;
    let per_thread = 100_000u64;
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let v = (t << 32 | i).to_be_bytes().to_vec();
                    p.send(ProducerRecord::new("t", v).key(format!("k{}", i % 17)))
                        .unwrap();
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    p.flush().unwrap();
    let mut seen = HashMap::new();
    let mut total = 0;
    for part in 0..3 {
        let mut last_per_thread: HashMap<u64, u64> = HashMap::new();
        for (_, v) in all_values(&s, "t", part) {
            let x = u64::from_be_bytes(v.try_into().unwrap());
            let (t, i) = (x >> 32, x & 0xffff_ffff);
            if let Some(prev) = last_per_thread.insert(t, i) {
                assert!(
                    i > prev,
                    "thread {t} reordered in partition {part}: {prev} then {i}"
                );
            }
            assert!(seen.insert(x, part).is_none(), "duplicate {t}/{i}");
            total += 1;
        }
    }
    assert_eq!(total, threads * per_thread);
}

#[test]
fn threads_waiting_on_a_small_buffer_are_woken_as_batches_drain_and_lose_nothing() {
    // A buffer of ~10 records shared by 4 threads sending 2,000 records
    // each: most sends must wait for space, and every one must get it.
    let (_d, s) = store_with("t", 4);
    let mut c = ProducerConfig::default();
    c.buffer_memory = 4096;
    c.batch_size = 1024;
    c.linger = Duration::from_millis(1);
    c.max_block = Duration::from_secs(30);
    let p = Arc::new(Producer::new(&s, c).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                let mut handles = Vec::new();
                for i in 0..2000 {
                    let v = format!("{t}:{i}:{}", "x".repeat(300));
                    handles.push(p.send(ProducerRecord::new("t", v)).unwrap());
                }
                let mut n = 0;
                for h in handles {
                    h.wait().unwrap();
                    n += 1;
                }
                n
            })
        })
        .collect();
    let sent: usize = threads.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(sent, 8000);
    p.flush().unwrap();
    let total: i64 = (0..4)
        .map(|q| s.partition("t", q).unwrap().log_end_offset())
        .sum();
    assert_eq!(total, 8000);
    // Each thread's records arrive in its send order within each partition.
    for q in 0..4 {
        let mut last = [-1i64; 4];
        for (_, v) in all_values(&s, "t", q) {
            let text = String::from_utf8(v).unwrap();
            let mut parts = text.split(':');
            let t: usize = parts.next().unwrap().parse().unwrap();
            let i: i64 = parts.next().unwrap().parse().unwrap();
            assert!(i > last[t], "thread {t}: {i} after {}", last[t]);
            last[t] = i;
        }
    }
}

/// Found looking for findings like issue 17's 6 (durations that wrap): a
/// timeout, `max.block.ms` or `linger.ms` of `Duration::MAX` panicked
/// computing `Instant::now() + d` (in the caller, or in the linger thread).
/// A huge duration means "wait as long as it takes".
#[test]
fn huge_timeouts_and_linger_mean_forever_and_never_panic() {
    use kafkalite::{Consumer, ConsumerConfig, OffsetReset, TopicPartition};
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut c = ProducerConfig::default();
    c.max_block = Duration::MAX;
    c.linger = Duration::MAX;
    let p = Producer::new(&s, c).unwrap();
    let h = p.send(ProducerRecord::new("t", "v").partition(0)).unwrap();
    // The linger thread looks at the open batch in the meantime.
    std::thread::sleep(Duration::from_millis(50));
    p.flush().unwrap();
    assert_eq!(h.wait_timeout(Duration::MAX).unwrap().unwrap().offset, 0);
    let log = s.partition("t", 0).unwrap();
    assert!(log.wait_for(0, Duration::MAX));
    let mut cc = ConsumerConfig::with_group("g");
    cc.auto_offset_reset = OffsetReset::Earliest;
    let mut consumer = Consumer::new(&s, cc).unwrap();
    consumer.assign(&[TopicPartition::new("t", 0)]).unwrap();
    assert_eq!(consumer.poll(Duration::MAX).unwrap().len(), 1);
    // The linger thread is still alive: a second record is appended by
    // flush and the producer closes cleanly.
    p.send(ProducerRecord::new("t", "w").partition(0)).unwrap();
    p.flush().unwrap();
    assert_eq!(log.log_end_offset(), 2);
}

/// A thread's sends go through its cache of the topics it sent to lately:
/// partitions added later are used, a topic deleted and created again gets
/// its records in the new logs, and two producers (and more topics than
/// the cache holds) on one thread never mix their queues.
#[test]
fn a_threads_cached_topics_follow_new_partitions_recreated_topics_and_other_producers() {
    let (_d, s) = store_with("t", 1);
    let mut pc = ProducerConfig::default();
    pc.linger = Duration::ZERO;
    let mut p = Producer::new(&s, pc.clone()).unwrap();
    let send = |p: &Producer, topic: &str, v: String| {
        p.send(ProducerRecord::new(topic, v))
            .unwrap()
            .wait()
            .unwrap()
    };
    for i in 0..5 {
        assert_eq!(send(&p, "t", format!("a{i}")).partition, 0);
    }
    // New partitions: keyed records reach them without a new producer.
    s.add_partitions("t", 4).unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for i in 0..200 {
        let r = ProducerRecord::new("t", format!("k{i}")).key(format!("key-{i}"));
        seen.insert(p.send(r).unwrap().wait().unwrap().partition);
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    // Deleted and created again: the next sends land in the new topic.
    s.delete_topic("t").unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut last = None;
    for i in 0..3 {
        match p.send(ProducerRecord::new("t", format!("b{i}"))) {
            Ok(h) => last = h.wait().ok(),
            Err(e) => panic!("send after re-creation: {e}"),
        }
    }
    assert!(last.is_some());
    let values: Vec<Vec<u8>> = all_values(&s, "t", 0).into_iter().map(|(_, v)| v).collect();
    assert!(
        values.ends_with(&[b"b1".to_vec(), b"b2".to_vec()]),
        "{values:?}"
    );
    assert!(
        !values.iter().any(|v| v.starts_with(b"a")),
        "old records are gone"
    );
    // More topics than the cache holds, and a second producer, alternating.
    let mut q = Producer::new(&s, pc).unwrap();
    for n in 0..6 {
        s.create_topic(&format!("x{n}"), 2, TopicConfig::default())
            .unwrap();
    }
    for round in 0..3 {
        for n in 0..6 {
            let topic = format!("x{n}");
            let by = if n % 2 == 0 { &p } else { &q };
            let r = ProducerRecord::new(topic.as_str(), format!("{topic}:{round}")).partition(1);
            by.send(r).unwrap().wait().unwrap();
        }
    }
    for n in 0..6 {
        let topic = format!("x{n}");
        let got: Vec<Vec<u8>> = all_values(&s, &topic, 1)
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        let want: Vec<Vec<u8>> = (0..3)
            .map(|r| format!("{topic}:{r}").into_bytes())
            .collect();
        assert_eq!(got, want, "{topic}");
        assert!(all_values(&s, &topic, 0).is_empty());
    }
    p.close().unwrap();
    q.close().unwrap();
}
