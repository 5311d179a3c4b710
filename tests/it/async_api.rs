//! The async API on tokio's current-thread runtime: `Consumer::poll_async`,
//! `Producer::send_async` / `try_send`, `SendHandle` as a future, and the
//! record stream. A blocking wait anywhere would stall the one thread, so
//! the runtime runs on its own thread under a watchdog that fails loudly.

use kafkalite::{
    Consumer, ConsumerConfig, ConsumerRecords, Durability, Error, OffsetReset, Producer,
    ProducerConfig, ProducerRecord, Record, Store, StoreOptions, TopicConfig, TopicPartition,
};
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

fn store(topic: &str, partitions: u32) -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic(topic, partitions, TopicConfig::default())
        .unwrap();
    (d, s)
}

fn config(group: &str) -> ConsumerConfig {
    let mut c = ConsumerConfig::with_group(group);
    c.auto_offset_reset = OffsetReset::Earliest;
    c.enable_auto_commit = false;
    c
}

/// Runs `f` on a current-thread runtime on its own thread; panics if it
/// has not finished within `limit` (a blocked thread cannot even run the
/// runtime's own timers, so the watchdog is outside it).
fn on_one_thread<F, Fut>(limit: Duration, f: F) -> Fut::Output
where
    F: FnOnce() -> Fut + Send + 'static,
    Fut: Future,
    Fut::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let _ = tx.send(rt.block_on(f()));
    });
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("the current-thread runtime did not finish in {limit:?}: a blocking wait?")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("the runtime's thread panicked (its message is above)")
        }
    }
}

/// Polls a future once with a waker that does nothing.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    std::pin::Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

#[test]
fn a_producer_task_and_a_consumer_task_on_one_thread_exchange_100_000_records() {
    const N: usize = 100_000;
    let (_d, s) = store("t", 4);
    let (sent, got) = on_one_thread(Duration::from_secs(120), move || async move {
        let mut pc = ProducerConfig::default();
        // A small buffer: the producer task must wait for space, which the
        // linger thread frees, many times over.
        pc.buffer_memory = 64 << 10;
        pc.batch_size = 8 << 10;
        let producer = Producer::new(&s, pc).unwrap();
        let mut consumer = Consumer::new(&s, config("g")).unwrap();
        consumer.subscribe(&["t"]).unwrap();
        let local = tokio::task::LocalSet::new();
        let produce = local.spawn_local(async move {
            let mut last = None;
            for i in 0..N {
                let rec = ProducerRecord::new("t", format!("{i:06}")).key(format!("k{}", i % 97));
                let handle = producer.send_async(rec).await.unwrap();
                if i % 1000 == 999 {
                    last = Some(handle.await.unwrap());
                }
            }
            producer.flush().unwrap();
            last
        });
        let consume = local.spawn_local(async move {
            let mut got: BTreeMap<u32, Vec<(i64, String)>> = BTreeMap::new();
            let mut n = 0;
            while n < N {
                for r in consumer.poll_async(Duration::from_secs(10)).await.unwrap() {
                    let v = String::from_utf8(r.value.unwrap().to_vec()).unwrap();
                    got.entry(r.partition).or_default().push((r.offset, v));
                    n += 1;
                }
            }
            got
        });
        local
            .run_until(async move { (produce.await.unwrap(), consume.await.unwrap()) })
            .await
    });
    let last = sent.expect("handles were awaited");
    assert_eq!(last.topic.as_ref(), "t");
    let mut values = BTreeSet::new();
    for (p, recs) in &got {
        // Offsets per partition run 0, 1, 2, ... with nothing skipped.
        for (i, (offset, _)) in recs.iter().enumerate() {
            assert_eq!(*offset, i as i64, "partition {p}");
        }
        values.extend(recs.iter().map(|(_, v)| v.clone()));
    }
    assert_eq!(values.len(), N, "every record exactly once");
    assert_eq!(got.values().map(Vec::len).sum::<usize>(), N);
}

type Seen = Arc<Mutex<Vec<(u32, i64)>>>;
type Owned = Arc<Mutex<BTreeMap<&'static str, Vec<TopicPartition>>>>;

/// A group member that polls until `stop`, recording what it read and
/// its assignment after each poll.
async fn member(name: &'static str, s: Store, seen: Seen, stop: Arc<AtomicBool>, owned: Owned) {
    let mut c = config("workers");
    c.enable_auto_commit = true; // revoking members commit
    c.max_poll_records = 7;
    c.client_id = name.into();
    let mut consumer = Consumer::new(&s, c).unwrap();
    consumer.subscribe(&["t"]).unwrap();
    while !stop.load(Ordering::SeqCst) {
        let recs = consumer
            .poll_async(Duration::from_millis(50))
            .await
            .unwrap();
        seen.lock()
            .unwrap()
            .extend(recs.iter().map(|r| (r.partition, r.offset)));
        owned
            .lock()
            .unwrap()
            .insert(name, consumer.assignment().to_vec());
        // Let the other members run between batches.
        tokio::task::yield_now().await;
    }
    consumer.close().unwrap();
}

#[test]
fn async_group_members_on_one_thread_rebalance_and_share_the_partitions() {
    const PER: usize = 200;
    let (_d, s) = store("t", 6);
    for p in 0..6 {
        let recs: Vec<Record> = (0..PER).map(|i| Record::new(format!("{p}:{i}"))).collect();
        s.append("t", p, &recs, Durability::Written).unwrap();
    }
    let (seen, assignments, generation) =
        on_one_thread(Duration::from_secs(60), move || async move {
            let seen: Seen = Arc::default();
            let stop = Arc::new(AtomicBool::new(false));
            let owned: Owned = Arc::default();
            let local = tokio::task::LocalSet::new();
            let spawn = |name| {
                local.spawn_local(member(
                    name,
                    s.clone(),
                    seen.clone(),
                    stop.clone(),
                    owned.clone(),
                ))
            };
            let first = [spawn("a"), spawn("b"), spawn("c")];
            let late = local
                .run_until(async {
                    loop {
                        if seen.lock().unwrap().len() >= 6 * PER / 3 {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(2)).await;
                    }
                })
                .await;
            let () = late;
            // A fourth member joins half-way: another rebalance.
            let fourth = spawn("d");
            let (snapshot, generation) = local
                .run_until(async {
                    loop {
                        let n = seen.lock().unwrap().len();
                        let g = s.describe_group("workers").unwrap();
                        let all_polled = owned.lock().unwrap().len() == 4;
                        if n >= 6 * PER && !g.rebalancing && g.members.len() == 4 && all_polled {
                            // One more round so every member saw the final
                            // generation.
                            tokio::time::sleep(Duration::from_millis(120)).await;
                            let g = s.describe_group("workers").unwrap();
                            return (owned.lock().unwrap().clone(), g.generation);
                        }
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
                .await;
            stop.store(true, Ordering::SeqCst);
            local
                .run_until(async {
                    for h in first {
                        h.await.unwrap();
                    }
                    fourth.await.unwrap();
                })
                .await;
            let seen = seen.lock().unwrap().clone();
            (seen, snapshot, generation)
        });
    // Every record once: revoking members committed their positions, and
    // the next owner went on from there.
    let unique: BTreeSet<(u32, i64)> = seen.iter().copied().collect();
    assert_eq!(unique.len(), 6 * PER);
    assert_eq!(seen.len(), 6 * PER, "no record twice");
    // Two rebalances at least (three members, then four) and a final
    // assignment that splits the six partitions among the four members.
    assert!(generation >= 2, "generation {generation}");
    let mut owned = BTreeSet::new();
    for parts in assignments.values() {
        for tp in parts {
            assert!(owned.insert(tp.clone()), "{tp:?} has two owners");
        }
    }
    assert_eq!(owned.len(), 6);
    assert_eq!(assignments.len(), 4);
    assert!(assignments.values().all(|p| !p.is_empty() && p.len() <= 2));
}

#[test]
fn a_dropped_pending_poll_loses_nothing_and_moves_no_position() {
    let (_d, s) = store("t", 1);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    let tp = TopicPartition::new("t", 0);
    c.assign(std::slice::from_ref(&tp)).unwrap();
    {
        let mut fut = c.poll_async(Duration::from_secs(30));
        assert!(poll_once(&mut fut).is_pending());
        // Records arrive while the poll is pending; it is dropped before
        // it is polled again.
        s.append(
            "t",
            0,
            &[Record::new("a"), Record::new("b")],
            Durability::Written,
        )
        .unwrap();
    }
    assert_eq!(c.position(&tp).unwrap(), 0);
    let got = c.poll(Duration::from_secs(1)).unwrap();
    let offsets: Vec<i64> = got.iter().map(|r| r.offset).collect();
    assert_eq!(offsets, vec![0, 1]);
}

#[test]
fn polls_cancelled_by_timeouts_over_and_over_lose_no_record() {
    const N: i64 = 3000;
    let (_d, s) = store("t", 1);
    let writer = {
        let s = s.clone();
        std::thread::spawn(move || {
            for i in 0..N / 10 {
                let recs: Vec<Record> = (0..10)
                    .map(|j| Record::new(format!("{}", i * 10 + j)))
                    .collect();
                s.append("t", 0, &recs, Durability::Written).unwrap();
                if i % 20 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        })
    };
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.assign(&[TopicPartition::new("t", 0)]).unwrap();
    let (offsets, cancelled) = on_one_thread(Duration::from_secs(60), move || async move {
        let mut offsets = Vec::new();
        let mut cancelled = 0;
        while (offsets.len() as i64) < N {
            let poll = c.poll_async(Duration::from_secs(10));
            match tokio::time::timeout(Duration::from_micros(300), poll).await {
                Ok(recs) => offsets.extend(recs.unwrap().iter().map(|r| r.offset)),
                Err(_) => cancelled += 1,
            }
        }
        (offsets, cancelled)
    });
    writer.join().unwrap();
    assert_eq!(offsets, (0..N).collect::<Vec<_>>());
    assert!(
        cancelled > 0,
        "no poll was ever cancelled: the test tested nothing"
    );
}

#[test]
fn a_waiting_poll_lets_other_tasks_run_and_ends_empty_at_its_timeout() {
    let (_d, s) = store("t", 1);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    let (records, elapsed, ticks) = on_one_thread(Duration::from_secs(20), move || async move {
        let ticks = Arc::new(AtomicUsize::new(0));
        let ticker = {
            let ticks = ticks.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    ticks.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        let start = Instant::now();
        let records = c.poll_async(Duration::from_millis(300)).await.unwrap();
        let elapsed = start.elapsed();
        ticker.abort();
        (records, elapsed, ticks.load(Ordering::SeqCst))
    });
    assert!(records.is_empty());
    assert!(elapsed >= Duration::from_millis(300), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    // A poll that blocked the thread would let the ticker tick not at all.
    assert!(
        ticks >= 20,
        "the ticker ticked {ticks} times in {elapsed:?}"
    );
}

/// Remembers the names of the threads that wrote to `.log` segment files.
#[derive(Default)]
struct LogWriters(Mutex<BTreeSet<String>>);

impl crate::os_probe::Probe for LogWriters {
    fn write(&self, p: &Path) {
        if p.extension().is_some_and(|e| e == "log") {
            let name = std::thread::current().name().unwrap_or("?").to_owned();
            self.0.lock().unwrap().insert(name);
        }
    }
}

#[test]
fn async_sends_leave_appends_and_fsyncs_to_the_linger_thread_blocking_sends_do_them_inline() {
    let d = tempfile::tempdir().unwrap();
    let fs = Arc::new(crate::os_probe::Probed(LogWriters::default()));
    let mut opts = StoreOptions::default();
    opts.file_system = kafkalite::io::FsHandle::new(fs.clone());
    let s = Store::open(d.path(), opts).unwrap();
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let mut pc = ProducerConfig::default();
    pc.durability = Durability::Fsync;
    pc.batch_size = 1024; // every few records fill a batch
    pc.linger = Duration::from_secs(3600); // only full batches are appended
    let p = Arc::new(Producer::new(&s, pc).unwrap());
    let one = |i: usize| ProducerRecord::new("t", vec![b'x'; 300]).key(format!("{i}"));
    let p2 = p.clone();
    let rt_thread = std::thread::Builder::new().name("async-executor".into());
    let sent = rt_thread
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .unwrap();
            rt.block_on(async move {
                let mut last = None;
                for i in 0..40 {
                    last = Some(p2.send_async(one(i)).await.unwrap());
                }
                // A full batch's handle completes once the linger thread
                // appended and fsynced it.
                last.unwrap();
            });
        })
        .unwrap();
    sent.join().unwrap();
    p.flush().unwrap();
    let writers = fs.0 .0.lock().unwrap().clone();
    assert!(!writers.is_empty());
    assert!(
        !writers.contains("async-executor"),
        "appended on the executor: {writers:?}"
    );
    // The control: blocking sends that fill 64 KiB of batches append them
    // on their thread.
    let p3 = p.clone();
    std::thread::Builder::new()
        .name("blocking-sender".into())
        .spawn(move || {
            for i in 0..400 {
                p3.send(one(i)).unwrap();
            }
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(fs.0 .0.lock().unwrap().contains("blocking-sender"));
}

fn tight_producer(s: &Store, max_block: Duration) -> Producer {
    let mut pc = ProducerConfig::default();
    pc.buffer_memory = 2000;
    pc.batch_size = 1 << 20;
    pc.linger = Duration::from_secs(3600); // nothing drains by itself
    pc.max_block = max_block;
    Producer::new(s, pc).unwrap()
}

/// A record of the size `fill_buffer` fills the buffer with.
fn hundred(tag: u8) -> ProducerRecord {
    ProducerRecord::new("t", vec![tag; 100]).partition(0)
}

fn fill_buffer(p: &Producer) -> usize {
    let mut n = 0;
    loop {
        match p.try_send(hundred(7)) {
            Ok(_) => n += 1,
            Err(Error::BufferExhausted {
                waited_ms,
                buffer_memory,
            }) => {
                assert_eq!((waited_ms, buffer_memory), (0, 2000));
                return n;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[test]
fn try_send_fails_at_once_with_buffer_exhausted_and_succeeds_once_flushed() {
    let (_d, s) = store("t", 1);
    let p = tight_producer(&s, Duration::from_secs(60));
    let start = Instant::now();
    let n = fill_buffer(&p);
    assert!(start.elapsed() < Duration::from_secs(5), "try_send waited");
    assert!(n >= 10, "{n}");
    p.flush().unwrap();
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), n as i64);
    assert!(p.try_send(hundred(8)).is_ok());
}

#[test]
fn send_async_waits_for_space_and_completes_when_a_flush_frees_it() {
    let (_d, s) = store("t", 1);
    let p = Arc::new(tight_producer(&s, Duration::from_secs(60)));
    let n = fill_buffer(&p);
    let p2 = p.clone();
    let (meta, polls_pending) = on_one_thread(Duration::from_secs(30), move || async move {
        let flusher = std::thread::spawn({
            let p = p2.clone();
            move || {
                std::thread::sleep(Duration::from_millis(100));
                p.flush().unwrap();
            }
        });
        let mut fut = p2.send_async(hundred(8));
        let pending = poll_once(&mut fut).is_pending();
        let handle = fut.await.unwrap();
        p2.flush().unwrap();
        flusher.join().unwrap();
        (handle.await.unwrap(), pending)
    });
    assert!(polls_pending, "the buffer was full: the send had to wait");
    assert_eq!(meta.offset, n as i64);
}

/// Full batches waiting to be written with others hold buffer memory: an
/// async send that finds the buffer full has the linger thread write them
/// (a linger of an hour never comes due here).
#[test]
fn send_async_on_a_buffer_held_by_full_batches_has_them_written() {
    let (_d, s) = store("t", 1);
    let mut pc = ProducerConfig::default();
    pc.buffer_memory = 4096;
    pc.batch_size = 1024;
    pc.linger = Duration::from_secs(3600);
    pc.max_block = Duration::from_secs(600);
    let p = Arc::new(Producer::new(&s, pc).unwrap());
    let p2 = p.clone();
    let offsets = on_one_thread(Duration::from_secs(60), move || async move {
        let mut handles = Vec::new();
        for i in 0..400u32 {
            let rec = ProducerRecord::new("t", format!("{i:0>200}")).partition(0);
            handles.push(p2.send_async(rec).await.unwrap());
        }
        // All but the last few are in full batches, written without a flush.
        let mut offsets = Vec::new();
        for h in handles.into_iter().take(390) {
            offsets.push(h.await.unwrap().offset);
        }
        offsets
    });
    assert_eq!(offsets, (0..390).collect::<Vec<i64>>());
    p.flush().unwrap();
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), 400);
}

#[test]
fn send_async_fails_with_buffer_exhausted_after_max_block() {
    let (_d, s) = store("t", 1);
    let p = tight_producer(&s, Duration::from_millis(150));
    fill_buffer(&p);
    let start = Instant::now();
    let r = on_one_thread(Duration::from_secs(30), move || async move {
        p.send_async(hundred(8)).await.map(|_| ())
    });
    assert!(
        matches!(r, Err(Error::BufferExhausted { waited_ms: 150, .. })),
        "{r:?}"
    );
    assert!(start.elapsed() >= Duration::from_millis(150));
}

#[test]
fn a_dropped_pending_send_async_queues_nothing() {
    let (_d, s) = store("t", 1);
    let p = tight_producer(&s, Duration::from_secs(60));
    let n = fill_buffer(&p);
    {
        let mut fut = p.send_async(hundred(8));
        assert!(poll_once(&mut fut).is_pending());
    }
    p.flush().unwrap();
    assert_eq!(s.partition("t", 0).unwrap().log_end_offset(), n as i64);
}

#[test]
fn an_awaited_send_handle_gives_the_offset_and_none_durability_gives_minus_one() {
    let (_d, s) = store("t", 1);
    let p = Producer::new(&s, ProducerConfig::default()).unwrap();
    let mut none = ProducerConfig::default();
    none.durability = Durability::None;
    let p0 = Producer::new(&s, none).unwrap();
    let (a, b, c) = on_one_thread(Duration::from_secs(30), move || async move {
        let a = p
            .send(ProducerRecord::new("t", "a").partition(0))
            .unwrap()
            .await;
        let b = p
            .send_async(ProducerRecord::new("t", "b").partition(0))
            .await
            .unwrap()
            .await;
        let c = p0
            .send(ProducerRecord::new("t", "c").partition(0))
            .unwrap()
            .await;
        (a.unwrap(), b.unwrap(), c.unwrap())
    });
    assert_eq!((a.offset, b.offset, c.offset), (0, 1, -1));
}

fn values(recs: &ConsumerRecords) -> Vec<String> {
    recs.iter()
        .map(|r| String::from_utf8(r.value.unwrap().to_vec()).unwrap())
        .collect()
}

#[test]
fn the_blocking_iterator_reads_everything_then_ends_at_the_timeout() {
    let (_d, s) = store("t", 2);
    for p in 0..2 {
        let recs: Vec<Record> = (0..50).map(|i| Record::new(format!("{p}:{i}"))).collect();
        s.append("t", p, &recs, Durability::Written).unwrap();
    }
    let mut cfg = config("g");
    cfg.max_poll_records = 9;
    let mut c = Consumer::new(&s, cfg).unwrap();
    c.subscribe(&["t"]).unwrap();
    let start = Instant::now();
    let mut n = 0;
    for r in c.iter(Duration::from_millis(200)) {
        r.unwrap();
        n += 1;
    }
    assert_eq!(n, 100);
    assert!(start.elapsed() >= Duration::from_millis(200));
}

#[test]
fn an_iterator_dropped_mid_batch_leaves_the_rest_for_the_next_poll() {
    let (_d, s) = store("t", 1);
    let recs: Vec<Record> = (0..10).map(|i| Record::new(format!("{i}"))).collect();
    s.append("t", 0, &recs, Durability::Written).unwrap();
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    let first: Vec<String> = c
        .iter(Duration::from_secs(1))
        .take(3)
        .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
        .collect();
    assert_eq!(first, ["0", "1", "2"]);
    let rest = c.poll(Duration::from_secs(1)).unwrap();
    assert_eq!(values(&rest), ["3", "4", "5", "6", "7", "8", "9"]);
}

#[cfg(feature = "stream")]
#[test]
fn the_record_stream_yields_every_record_and_a_dropped_stream_loses_none() {
    use futures_core::Stream;
    let (_d, s) = store("t", 1);
    let mut cfg = config("g");
    cfg.max_poll_records = 10;
    let mut c = Consumer::new(&s, cfg).unwrap();
    c.subscribe(&["t"]).unwrap();
    let s2 = s.clone();
    let (first, c) = on_one_thread(Duration::from_secs(30), move || async move {
        let writer = tokio::spawn(async move {
            for i in 0..30 {
                s2.append("t", 0, &[Record::new(format!("{i}"))], Durability::Written)
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        let mut got = Vec::new();
        {
            let mut stream = std::pin::pin!(c.stream());
            while got.len() < 25 {
                let next = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await;
                got.push(next.unwrap().unwrap().offset);
            }
        }
        writer.await.unwrap();
        (got, c)
    });
    assert_eq!(first, (0..25).collect::<Vec<i64>>());
    let mut c = c;
    let rest: Vec<i64> = c
        .poll(Duration::from_secs(1))
        .unwrap()
        .iter()
        .map(|r| r.offset)
        .collect();
    // The stream may have taken records past the 25th from the consumer;
    // dropping it handed them back.
    assert_eq!(rest, (25..30).collect::<Vec<i64>>());
}

#[cfg(feature = "stream")]
#[test]
fn the_record_stream_ends_when_the_consumer_is_closed() {
    use futures_core::Stream;
    let (_d, s) = store("t", 1);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    c.close().unwrap();
    let mut stream = std::pin::pin!(c.stream());
    let next = stream
        .as_mut()
        .poll_next(&mut Context::from_waker(Waker::noop()));
    assert!(matches!(next, Poll::Ready(None)));
}

/// A producer whose 64 partitions each took a batch's worth (1 KiB) of its
/// 64 KiB `buffer.memory` for one 100-byte record: the whole buffer is
/// taken, almost all of it unused, and a linger of an hour writes nothing.
fn producer_with_every_partition_holding_credit(s: &Store) -> Producer {
    let mut pc = ProducerConfig::default();
    pc.batch_size = 1024;
    pc.buffer_memory = 64 << 10;
    pc.linger = Duration::from_secs(3600);
    pc.max_block = Duration::from_millis(300);
    let p = Producer::new(s, pc).unwrap();
    for part in 0..64 {
        p.send(ProducerRecord::new("t", vec![1u8; 100]).partition(part))
            .unwrap();
    }
    p
}

/// A record too large for any partition's credit, to a partition that
/// holds some.
fn two_thousand() -> ProducerRecord {
    ProducerRecord::new("t", vec![2u8; 2000]).partition(5)
}

/// Memory a partition took for its next records and has not used is given
/// back before a send would wait for memory, or fail for want of it: a
/// blocking send, a `try_send` and an async send all go at once (without
/// it the first waits `max.block.ms` and fails, the others fail), and
/// nothing is lost or reordered.
#[test]
fn memory_partitions_took_and_left_unused_never_makes_a_send_wait_or_fail() {
    for how in ["send", "try_send", "send_async"] {
        let (_d, s) = store("t", 64);
        let p = Arc::new(producer_with_every_partition_holding_credit(&s));
        let start = Instant::now();
        let handle = match how {
            "send" => p.send(two_thousand()),
            "try_send" => p.try_send(two_thousand()),
            _ => {
                let p = Arc::clone(&p);
                on_one_thread(Duration::from_secs(30), move || async move {
                    p.send_async(two_thousand()).await
                })
            }
        }
        .unwrap_or_else(|e| panic!("{how}: {e}"));
        assert!(
            start.elapsed() < Duration::from_millis(300),
            "{how} waited {:?}",
            start.elapsed()
        );
        p.flush().unwrap();
        assert_eq!(handle.wait().unwrap().offset, 1, "{how}");
        for part in 0..64 {
            let log = s.partition("t", part).unwrap();
            let want = if part == 5 { 2 } else { 1 };
            assert_eq!(log.log_end_offset(), want, "{how}: partition {part}");
        }
        let r = s.partition("t", 5).unwrap().read(0, 1 << 20).unwrap();
        let values: Vec<_> = r.records().map(|r| r.unwrap().value.unwrap()).collect();
        assert_eq!(values, [vec![1u8; 100], vec![2u8; 2000]], "{how}");
    }
}

/// Four threads sending 300-byte records round the 64 partitions of a
/// 64 KiB buffer, in which each partition takes 1 KiB at a time: sends wait
/// for memory while other partitions take what is freed as credit, and
/// every send gets its room (the credit is given back to a waiting send),
/// nothing lost or reordered.
#[test]
fn senders_waiting_while_partitions_take_credit_all_get_room() {
    let (_d, s) = store("t", 64);
    let mut pc = ProducerConfig::default();
    pc.batch_size = 1024;
    pc.buffer_memory = 64 << 10;
    pc.linger = Duration::from_millis(1);
    pc.max_block = Duration::from_secs(30);
    let p = Arc::new(Producer::new(&s, pc).unwrap());
    let senders: Vec<_> = (0..4u32)
        .map(|t| {
            let p = Arc::clone(&p);
            std::thread::spawn(move || {
                for i in 0..3000u32 {
                    let v = format!("{t}:{i:08}:{}", "x".repeat(280));
                    p.send(ProducerRecord::new("t", v).partition((t * 7 + i) % 64))
                        .unwrap();
                }
            })
        })
        .collect();
    for h in senders {
        h.join().unwrap();
    }
    p.flush().unwrap();
    let mut total = 0;
    for part in 0..64 {
        let log = s.partition("t", part).unwrap();
        let r = log.read(0, 64 << 20).unwrap();
        let mut last: BTreeMap<u32, u32> = BTreeMap::new();
        for rec in r.records() {
            let v = String::from_utf8(rec.unwrap().value.unwrap().to_vec()).unwrap();
            let mut f = v.split(':');
            let t: u32 = f.next().unwrap().parse().unwrap();
            let i: u32 = f.next().unwrap().parse().unwrap();
            assert_eq!((t * 7 + i) % 64, part);
            if let Some(prev) = last.insert(t, i) {
                assert!(i > prev, "thread {t} reordered in partition {part}");
            }
            total += 1;
        }
    }
    assert_eq!(total, 4 * 3000);
}
