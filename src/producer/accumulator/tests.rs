//! The accumulator's own bounds.

use super::spare::SPARE_BUFFERS;
use super::SPARE_CALLBACK_LISTS;
use crate::{
    Compression, Producer, ProducerConfig, ProducerRecord, Store, StoreOptions, TopicConfig,
};

/// The emptied callback lists a partition keeps are reused and never
/// more than [`SPARE_CALLBACK_LISTS`], however many batches went out.
#[test]
fn spare_callback_lists_stay_bounded() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let c = ProducerConfig {
        batch_size: 1024,
        ..ProducerConfig::default()
    };
    let p = Producer::new(&s, c).unwrap();
    let queue = || {
        p.inner
            .queues
            .read()
            .get("t")
            .and_then(|v| v.first().cloned())
    };
    let mut most = 0;
    for round in 0..20 {
        for i in 0..200 {
            let r = ProducerRecord::new("t", format!("{round}-{i:0>200}")).partition(0);
            p.send_with_callback(r, |m| assert!(m.is_ok())).unwrap();
        }
        p.flush().unwrap();
        let q = queue().unwrap();
        let spares = q.lock_state().spare_callbacks.len();
        most = most.max(spares);
    }
    assert!(most > 0, "no list was kept for reuse");
    assert!(most <= SPARE_CALLBACK_LISTS, "{most} lists kept");
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), 4000);
}

/// Emptied batch buffers are reused, never more than [`SPARE_BUFFERS`] a
/// partition (twice that compressed) nor, all partitions together, more
/// than a quarter of `buffer.memory`; none grown by an oversized record is
/// kept; every record comes back as sent, through buffers reused for
/// records and for compressed batches alike; and closing the producer
/// frees them all.
#[test]
fn spare_batch_buffers_stay_bounded_and_batches_built_in_them_read_back() {
    for compression in [Compression::None, Compression::Lz4] {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path(), StoreOptions::default()).unwrap();
        s.create_topic("t", 6, TopicConfig::default()).unwrap();
        let c = ProducerConfig {
            batch_size: 1024,
            // A budget of 8 KiB: fewer buffers than 6 partitions could keep.
            buffer_memory: 32 << 10,
            compression,
            ..ProducerConfig::default()
        };
        let budget = c.buffer_memory / 4;
        let most = SPARE_BUFFERS
            * if compression == Compression::None {
                1
            } else {
                2
            };
        let mut p = Producer::new(&s, c).unwrap();
        let mut reused = 0;
        let mut sent = vec![Vec::new(); 6];
        for round in 0..30u32 {
            for i in 0..120u32 {
                let part = (i + round) % 6;
                // Every 50th record is larger than a batch: its buffer grows.
                let len = if i % 50 == 49 { 5000 } else { 150 };
                let value = format!("{round}-{i}-{}", "x".repeat(len));
                sent[part as usize].push(value.clone());
                let r = ProducerRecord::new("t", value).partition(part);
                p.send_with_callback(r, |m| assert!(m.is_ok())).unwrap();
            }
            p.flush().unwrap();
            // The linger thread drains (and keeps buffers) only while it
            // holds this: with it held, the queues and the budget agree.
            let _scan = p.inner.scan.lock();
            let queues = p.inner.queues.read().get("t").cloned().unwrap();
            let mut kept = 0;
            for q in &queues {
                let st = q.lock_state();
                let n = st.spare_buffers.len();
                assert!(n <= most, "{n} buffers kept by one partition");
                let room = st.spare_buffers.room();
                assert!(room.iter().all(|&r| r <= 2 * (61 + 1024)), "{room:?}");
                kept += room.iter().sum::<usize>();
            }
            assert!(kept <= budget, "{kept} bytes kept in all");
            assert_eq!(kept + p.inner.spare_budget.left(), budget);
            reused = reused.max(kept);
        }
        assert!(reused > 0, "{compression:?}: no buffer was kept for reuse");
        for (part, values) in sent.iter().enumerate() {
            let log = s.partition("t", part as u32).unwrap();
            let read = log.read(0, usize::MAX).unwrap();
            let got: Vec<String> = read
                .records()
                .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
                .collect();
            assert_eq!(&got, values, "{compression:?}, partition {part}");
        }
        let queues = p.inner.queues.read().get("t").cloned().unwrap();
        p.close().unwrap();
        assert!(queues
            .iter()
            .all(|q| q.lock_state().spare_buffers.len() == 0));
        assert_eq!(
            p.inner.spare_budget.left(),
            budget,
            "closed: every spare freed"
        );
    }
}

/// The queue of partition 0 of a new one-partition topic `t`, made as a
/// producer with `c` makes it, with no producer (no linger thread) around.
fn lone_queue(c: &ProducerConfig) -> (tempfile::TempDir, Store, super::PartitionQueue) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let budget = super::SpareBudget::for_buffer_memory(c.buffer_memory);
    let q = super::PartitionQueue::new(
        "t",
        0,
        s.partition("t", 0).unwrap(),
        c,
        &budget,
        &super::Senders::new(),
    );
    (d, s, q)
}

/// A drain of four compressed batches keeps all eight buffers they used;
/// the next four batches open in the four records' buffers among them (a
/// take is best fit), leaving the four a little larger ones lz4 compressed
/// into for compressing into again; and the next drain keeps all eight
/// again.
#[test]
fn compressed_batches_reuse_both_their_buffers() {
    use crate::Durability;
    let (_d, s, q) = lone_queue(&ProducerConfig {
        batch_size: 4096,
        compression: Compression::Lz4,
        ..ProducerConfig::default()
    });
    let records_room = 61 + 4096;
    // Each record fills its batch (4,050 bytes and a few more in a batch
    // of 61 + 4,096), which is sealed at once, within the room the batch
    // was opened with.
    let record = ProducerRecord::new("t", "kafkalite ".repeat(405));
    let size = record.encoded_size();
    let push = || assert!(q.push(&record, 0, size, size, false, None, false).is_ok());
    let spares = || q.lock_state().spare_buffers.room();
    for _ in 0..4 {
        push();
    }
    q.drain(Durability::Written, false);
    assert_eq!(spares().len(), 8, "{:?}", spares());
    for _ in 0..4 {
        push();
    }
    // lz4 compresses into all the room its blocks could take: a little more
    // than the records' buffer.
    let left = spares();
    assert_eq!(left.len(), 4, "{left:?}");
    assert!(left.iter().all(|&r| r > records_room), "{left:?}");
    q.drain(Durability::Written, false);
    assert_eq!(spares().len(), 8, "{:?}", spares());
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), 8);
}

/// `sealed_by` names the thread whose sealed batches wait, turns mixed
/// when another thread's join them, and clears when they are written.
#[test]
fn sealed_batches_tell_whose_they_are_until_written() {
    use super::thread_token;
    use crate::Durability;
    let (_d, s, q) = lone_queue(&ProducerConfig {
        // Every record fills its batch, which is sealed at once.
        batch_size: 200,
        ..ProducerConfig::default()
    });
    let record = ProducerRecord::new("t", vec![1u8; 300]);
    let size = record.encoded_size();
    let push = || {
        let pushed = q.push(&record, 0, size, size, false, None, false);
        assert!(pushed.is_ok_and(|p| p.filled && p.sealed.is_some()));
        thread_token()
    };
    let me = thread_token();
    assert!(!q.holds_others_batches(me), "nothing waits yet");
    push();
    assert!(
        !q.holds_others_batches(me),
        "only this thread's batch waits"
    );
    let other = std::thread::scope(|sc| sc.spawn(push).join().unwrap());
    assert_ne!(other, me);
    assert!(
        q.holds_others_batches(me) && q.holds_others_batches(other),
        "mixed"
    );
    q.drain(Durability::Written, false);
    assert!(!q.holds_others_batches(me) && !q.holds_others_batches(other));
    std::thread::scope(|sc| sc.spawn(push).join().unwrap());
    assert!(q.holds_others_batches(me), "the other thread's batch waits");
    q.drain(Durability::Written, false);
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), 3);
}

/// A spare is handed out only with the room asked for: a compressed
/// batch's smaller buffer is kept for compressing into, not grown into a
/// batch's records buffer (growing reallocates, which reuse is to save).
#[test]
fn a_spare_buffer_is_taken_only_with_the_room_asked_for() {
    use super::spare::{SpareBudget, SpareBuffers};
    let budget = SpareBudget::for_buffer_memory(1 << 20);
    let mut spares = SpareBuffers::new(std::sync::Arc::clone(&budget), 1024, false);
    spares.keep(Vec::with_capacity(100));
    spares.keep(Vec::with_capacity(2000));
    assert_eq!(
        budget.left(),
        (1 << 18) - spares.room().iter().sum::<usize>()
    );
    assert!(spares.take(1000).capacity() >= 2000);
    assert_eq!(spares.take(1000).capacity(), 0, "none that large is left");
    assert_eq!(spares.len(), 1);
    assert!(spares.take(50).capacity() >= 100);
    assert_eq!(spares.len(), 0);
    assert_eq!(budget.left(), 1 << 18, "every byte taken is given back");
}

/// `buffer.memory` is taken a batch's worth at a time (as Kafka's producer
/// takes a batch's buffer from its pool), not a record at a time: the
/// shared count moves once for a partition's first 50 records. It counts
/// exactly what the partitions' credit and their unwritten batches hold,
/// and all of it is given back by the time the producer closes.
#[test]
fn buffer_memory_is_taken_a_batch_at_a_time_and_all_given_back() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 4, TopicConfig::default()).unwrap();
    let c = ProducerConfig {
        linger: std::time::Duration::from_secs(3600),
        ..ProducerConfig::default()
    };
    let chunk = c
        .batch_size
        .min(c.buffer_memory / crate::producer::memory::CREDIT_SHARE);
    assert_eq!(chunk, c.batch_size);
    let mut p = Producer::new(&s, c).unwrap();
    let used = |p: &Producer| p.inner.memory.load(std::sync::atomic::Ordering::SeqCst);
    let credit = |p: &Producer| -> usize {
        p.inner
            .all_queues()
            .iter()
            .map(|q| q.lock_state().credit)
            .sum()
    };
    let record = |part: u32| ProducerRecord::new("t", vec![7u8; 100]).partition(part);
    let size = record(0).encoded_size();
    for _ in 0..50 {
        p.send(record(0)).unwrap();
    }
    assert_eq!(used(&p), chunk);
    assert_eq!(credit(&p), chunk - 50 * size);
    for part in 1..4 {
        p.send(record(part)).unwrap();
    }
    assert_eq!(used(&p), 4 * chunk);
    assert_eq!(credit(&p), 4 * chunk - 53 * size);
    // Written, the batches give their records' bytes back; the credit stays.
    p.flush().unwrap();
    assert_eq!(used(&p), credit(&p));
    assert_eq!(used(&p), 4 * chunk - 53 * size);
    p.close().unwrap();
    assert_eq!((used(&p), credit(&p)), (0, 0));
    let total: i64 = (0..4)
        .map(|q| s.partition("t", q).unwrap().log_end_offset())
        .sum();
    assert_eq!(total, 53);
}

/// A thread counts among a producer's senders while its cache holds the
/// producer's queues, once however often it sends and to however many
/// topics, and no longer once it has ended.
#[test]
fn a_sending_thread_counts_once_while_it_caches_the_producers_queues() {
    use std::sync::atomic::Ordering;
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    for t in ["t", "u"] {
        s.create_topic(t, 2, TopicConfig::default()).unwrap();
    }
    let p = Producer::new(&s, ProducerConfig::default()).unwrap();
    let count = || p.inner.senders.count.load(Ordering::Relaxed);
    assert_eq!(count(), 0);
    let started = std::sync::Barrier::new(2);
    std::thread::scope(|sc| {
        let senders: Vec<_> = (0..2)
            .map(|_| {
                sc.spawn(|| {
                    for i in 0..3u8 {
                        for t in ["t", "u"] {
                            p.send(ProducerRecord::new(t, vec![i; 10])).unwrap();
                        }
                    }
                    // Both have sent: two threads, two topics each.
                    started.wait();
                    assert_eq!(count(), 2);
                    started.wait();
                })
            })
            .collect();
        // An explicit join waits for the thread's thread-local values to
        // be dropped; the scope's own wait does not.
        for t in senders {
            t.join().unwrap();
        }
    });
    assert_eq!(count(), 0);
    p.flush().unwrap();
}

/// A thread that finds a partition locked gets it once it is let go, with
/// what the holder wrote: by spinning when it is let go within the spin
/// (only while the producer's senders fit the cores), and after it
/// otherwise.
#[test]
fn a_locked_partition_is_had_once_let_go_with_or_without_a_spin() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let (_d, _s, q) = lone_queue(&ProducerConfig::default());
    let cores = q.senders.cores;
    for fit in [true, false] {
        let counted: Vec<_> = if fit {
            Vec::new()
        } else {
            (0..=cores).map(|_| q.senders.count_in()).collect()
        };
        assert_eq!(q.senders.fit_the_cores(), fit && cores > 1);
        // Held far longer than the spin lasts.
        let mut held = q.lock_state();
        std::thread::scope(|sc| {
            let waiter = sc.spawn(|| q.lock_state().credit);
            std::thread::sleep(super::lock::SPIN_FOR * 50);
            held.credit = 77;
            drop(held);
            assert_eq!(waiter.join().unwrap(), 77);
        });
        q.lock_state().credit = 0;
        // Let go a moment after the waiter came to it: won by spinning,
        // if it may spin, in at least one of many tries (the scheduler may
        // stop the waiter past the spin in any one).
        let spun_before = q.spun.load(Ordering::Relaxed);
        for _ in 0..200 {
            let held = q.lock_state();
            let coming = AtomicBool::new(false);
            std::thread::scope(|sc| {
                let waiter = sc.spawn(|| {
                    coming.store(true, Ordering::Release);
                    q.lock_state().credit
                });
                while !coming.load(Ordering::Acquire) {
                    std::hint::spin_loop();
                }
                let until = std::time::Instant::now() + std::time::Duration::from_micros(2);
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
                drop(held);
                assert_eq!(waiter.join().unwrap(), 0);
            });
            if q.spun.load(Ordering::Relaxed) > spun_before {
                break;
            }
        }
        let spun = q.spun.load(Ordering::Relaxed) > spun_before;
        assert_eq!(spun, fit && cores > 1, "won by spinning");
        drop(counted);
    }
}

/// A send reads the partition's fields (its log, to see it open; its batch
/// limit) before and while it takes the partition's lock, which every send
/// writes: no cache line holds both (`own_lines.rs`).
#[test]
fn the_partition_lock_shares_no_line_with_the_fields_a_send_reads() {
    let (_d, _s, q) = lone_queue(&ProducerConfig::default());
    let lines = |at: usize, len: usize| (at / 128, (at + len - 1) / 128);
    let lock = lines(
        &q.state as *const _ as usize,
        std::mem::size_of_val(&q.state),
    );
    let fields = [
        lines(&q.log as *const _ as usize, std::mem::size_of_val(&q.log)),
        lines(
            &q.topic as *const _ as usize,
            std::mem::size_of_val(&q.topic),
        ),
        lines(
            &q.batch_limit as *const _ as usize,
            std::mem::size_of_val(&q.batch_limit),
        ),
        lines(
            &q.senders as *const _ as usize,
            std::mem::size_of_val(&q.senders),
        ),
    ];
    for (first, last) in fields {
        assert!(
            last < lock.0 || first > lock.1,
            "{first}..={last} in {lock:?}"
        );
    }
    assert!(!q.is_stale());
}
