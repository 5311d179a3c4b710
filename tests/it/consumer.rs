//! Consumers, groups, rebalances and committed offsets.

use kafkalite::{
    Consumer, ConsumerConfig, Durability, Error, OffsetAndMetadata, OffsetReset, Producer,
    ProducerConfig, ProducerRecord, RebalanceListener, Record, ResetTo, RoundRobinAssignor, Store,
    StoreOptions, TopicConfig, TopicPartition,
};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn store(topic: &str, partitions: u32) -> (tempfile::TempDir, Store) {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic(topic, partitions, TopicConfig::default())
        .unwrap();
    (d, s)
}

fn fill(s: &Store, topic: &str, partition: u32, n: usize) {
    let recs: Vec<Record> = (0..n)
        .map(|i| Record::new(format!("{partition}:{i}")))
        .collect();
    s.append(topic, partition, &recs, Durability::Written)
        .unwrap();
}

fn config(group: &str) -> ConsumerConfig {
    let mut c = ConsumerConfig::with_group(group);
    c.auto_offset_reset = OffsetReset::Earliest;
    c.enable_auto_commit = false;
    c
}

fn tp(t: &str, p: u32) -> TopicPartition {
    TopicPartition::new(t, p)
}

const SHORT: Duration = Duration::from_millis(200);

fn drain(c: &mut Consumer, want: usize) -> Vec<(u32, i64)> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while out.len() < want && Instant::now() < deadline {
        for r in c.poll(SHORT).unwrap() {
            out.push((r.partition, r.offset));
        }
    }
    out
}

#[test]
fn auto_offset_reset_earliest_latest_and_none() {
    let (_d, s) = store("t", 1);
    fill(&s, "t", 0, 10);
    let mut c = Consumer::new(&s, config("e")).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert_eq!(drain(&mut c, 10).len(), 10);

    let mut cfg = config("l");
    cfg.auto_offset_reset = OffsetReset::Latest;
    let mut c = Consumer::new(&s, cfg).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert!(c.poll(SHORT).unwrap().is_empty());
    fill(&s, "t", 0, 3);
    assert_eq!(drain(&mut c, 3), vec![(0, 10), (0, 11), (0, 12)]);

    let mut cfg = config("n");
    cfg.auto_offset_reset = OffsetReset::None;
    let mut c = Consumer::new(&s, cfg).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert!(matches!(
        c.poll(SHORT),
        Err(Error::NoOffsetForPartition { partition: 0, .. })
    ));
}

#[test]
fn a_committed_offset_out_of_range_is_reset_by_policy() {
    let (_d, s) = store("t", 1);
    fill(&s, "t", 0, 10);
    // A committed offset that fell out of range: records below the log
    // start were deleted after the commit (commit_offsets itself refuses
    // offsets outside 0..=log end).
    let mut admin = Consumer::new(&s, config("g")).unwrap();
    admin.assign(&[tp("t", 0)]).unwrap();
    admin
        .commit_offsets(&[(tp("t", 0), OffsetAndMetadata::new(2))])
        .unwrap();
    admin.close().unwrap();
    s.delete_records("t", 0, 5).unwrap();

    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert_eq!(drain(&mut c, 5).first(), Some(&(0, 5)));
    c.close().unwrap();

    let mut cfg = config("g");
    cfg.auto_offset_reset = OffsetReset::None;
    let mut c = Consumer::new(&s, cfg).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert!(matches!(
        c.poll(SHORT),
        Err(Error::OffsetOutOfRange { requested: 2, .. })
    ));
}

#[test]
fn records_come_in_offset_order_per_partition_and_max_poll_records_holds() {
    let (_d, s) = store("t", 3);
    for p in 0..3 {
        fill(&s, "t", p, 700);
    }
    let mut cfg = config("g");
    cfg.max_poll_records = 100;
    let mut c = Consumer::new(&s, cfg).unwrap();
    c.subscribe(&["t"]).unwrap();
    let mut last: HashMap<u32, i64> = HashMap::new();
    let mut n = 0;
    let deadline = Instant::now() + Duration::from_secs(10);
    while n < 2100 && Instant::now() < deadline {
        let recs = c.poll(SHORT).unwrap();
        assert!(recs.len() <= 100);
        for r in recs {
            let prev = last.insert(r.partition, r.offset);
            assert_eq!(prev.map_or(0, |p| p + 1), r.offset);
            assert_eq!(
                r.value.as_deref(),
                Some(format!("{}:{}", r.partition, r.offset).as_bytes())
            );
            n += 1;
        }
    }
    assert_eq!(n, 2100);
}

#[test]
fn poll_blocks_until_a_producer_appends() {
    let (_d, s) = store("t", 2);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert!(c.poll(SHORT).unwrap().is_empty());
    let s2 = s.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let p = Producer::new(&s2, ProducerConfig::default()).unwrap();
        p.send_and_wait(ProducerRecord::new("t", "wake").partition(1))
            .unwrap();
    });
    let start = Instant::now();
    let recs = c.poll(Duration::from_secs(20)).unwrap();
    assert_eq!(recs.len(), 1);
    assert!(start.elapsed() < Duration::from_secs(10));
    t.join().unwrap();
}

struct Log(Arc<Mutex<Vec<String>>>);

impl RebalanceListener for Log {
    fn on_partitions_revoked(&mut self, _: &mut Consumer, parts: &[TopicPartition]) {
        self.0
            .lock()
            .unwrap()
            .push(format!("revoked {}", parts.len()));
    }
    fn on_partitions_assigned(&mut self, c: &mut Consumer, parts: &[TopicPartition]) {
        let names: Vec<String> = parts.iter().map(ToString::to_string).collect();
        self.0.lock().unwrap().push(format!(
            "assigned {} gen {}",
            names.join(","),
            c.generation().unwrap()
        ));
    }
}

#[test]
fn joining_and_leaving_members_rebalance_with_callbacks_and_new_generations() {
    let (_d, s) = store("t", 4);
    let events = Arc::new(Mutex::new(Vec::new()));
    let mut a = Consumer::new(&s, config("g")).unwrap();
    a.subscribe_with_listener(&["t"], Log(Arc::clone(&events)))
        .unwrap();
    a.poll(SHORT).unwrap();
    assert_eq!(a.assignment().len(), 4);
    assert_eq!(a.generation(), Some(1));

    // B joins: A must revoke and rejoin at its next poll before B gets anything.
    let mut b = Consumer::new(&s, config("g")).unwrap();
    b.subscribe(&["t"]).unwrap();
    let s2 = s.clone();
    let h = std::thread::spawn(move || {
        let _ = &s2;
        let deadline = Instant::now() + Duration::from_secs(10);
        while b.assignment().is_empty() && Instant::now() < deadline {
            b.poll(Duration::from_millis(50)).unwrap();
        }
        b
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.generation() == Some(1) && Instant::now() < deadline {
        a.poll(Duration::from_millis(50)).unwrap();
    }
    let mut b = h.join().unwrap();
    assert_eq!(a.generation(), Some(2));
    assert_eq!(b.generation(), Some(2));
    // Range: members in join order; the first gets partitions 0-1.
    assert_eq!(a.assignment(), &[tp("t", 0), tp("t", 1)]);
    assert_eq!(b.assignment(), &[tp("t", 2), tp("t", 3)]);
    assert_eq!(
        *events.lock().unwrap(),
        vec![
            "assigned t-0,t-1,t-2,t-3 gen 1".to_owned(),
            "revoked 4".to_owned(),
            "assigned t-0,t-1 gen 2".to_owned()
        ]
    );
    // B leaves: A gets everything under generation 3.
    b.close().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while a.generation() == Some(2) && Instant::now() < deadline {
        a.poll(Duration::from_millis(50)).unwrap();
    }
    assert_eq!(a.generation(), Some(3));
    assert_eq!(a.assignment().len(), 4);
}

fn poll_until_stable(consumers: &mut [Consumer], generation: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while consumers.iter().any(|c| c.generation() != Some(generation)) {
        assert!(
            Instant::now() < deadline,
            "no stable generation {generation}"
        );
        // Every member must poll for a rebalance to complete; threads would
        // do this concurrently, one thread takes turns with short polls.
        for c in consumers.iter_mut() {
            c.poll(Duration::from_millis(5)).unwrap();
        }
    }
}

#[test]
fn extra_members_beyond_the_partition_count_stay_idle() {
    let (_d, s) = store("t", 2);
    let mut cs: Vec<Consumer> = (0..3)
        .map(|_| {
            let mut c = Consumer::new(&s, config("g")).unwrap();
            c.subscribe(&["t"]).unwrap();
            c
        })
        .collect();
    poll_until_stable(&mut cs, 1);
    let sizes: Vec<usize> = cs.iter().map(|c| c.assignment().len()).collect();
    assert_eq!(sizes, vec![1, 1, 0]);
}

#[test]
fn the_roundrobin_assignor_can_be_chosen() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t0", 3, TopicConfig::default()).unwrap();
    s.create_topic("t1", 3, TopicConfig::default()).unwrap();
    let mut cs: Vec<Consumer> = (0..2)
        .map(|_| {
            let mut cfg = config("g");
            cfg.assignor = Arc::new(RoundRobinAssignor);
            let mut c = Consumer::new(&s, cfg).unwrap();
            c.subscribe(&["t0", "t1"]).unwrap();
            c
        })
        .collect();
    poll_until_stable(&mut cs, 1);
    let show = |c: &Consumer| {
        c.assignment()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(show(&cs[0]), ["t0-0", "t0-2", "t1-1"]);
    assert_eq!(show(&cs[1]), ["t0-1", "t1-0", "t1-2"]);
}

#[test]
fn a_commit_from_a_stale_generation_is_refused() {
    let (_d, s) = store("t", 2);
    fill(&s, "t", 0, 5);
    let mut cfg = config("g");
    cfg.max_poll_interval = Duration::from_millis(300);
    let mut slow = Consumer::new(&s, cfg).unwrap();
    slow.subscribe(&["t"]).unwrap();
    assert_eq!(drain(&mut slow, 5).len(), 5);
    assert_eq!(slow.generation(), Some(1));
    // Another member joins; the slow one stops polling past
    // max.poll.interval.ms, is removed, and the group moves on without it.
    let mut fast = Consumer::new(&s, config("g")).unwrap();
    fast.subscribe(&["t"]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while fast.assignment().len() < 2 {
        assert!(Instant::now() < deadline);
        fast.poll(Duration::from_millis(50)).unwrap();
    }
    assert!(matches!(
        slow.commit_sync(),
        Err(Error::IllegalGeneration { generation: 1, .. })
    ));
    assert_eq!(s.committed_offset("g", "t", 0), None);
}

#[test]
fn different_groups_keep_independent_offsets() {
    let (_d, s) = store("t", 1);
    fill(&s, "t", 0, 10);
    for (group, n) in [("a", 3), ("b", 7)] {
        let mut cfg = config(group);
        cfg.max_poll_records = n;
        let mut c = Consumer::new(&s, cfg).unwrap();
        c.subscribe(&["t"]).unwrap();
        assert_eq!(drain(&mut c, n).len(), n);
        c.commit_sync().unwrap();
    }
    assert_eq!(s.committed_offset("a", "t", 0).unwrap().offset, 3);
    assert_eq!(s.committed_offset("b", "t", 0).unwrap().offset, 7);
    assert_eq!(s.list_groups(), vec!["a", "b"]);
}

#[test]
fn commits_survive_a_crash_and_consumers_resume_there() {
    let d = tempfile::tempdir().unwrap();
    let copy = tempfile::tempdir().unwrap();
    {
        let s = Store::open(d.path(), StoreOptions::default()).unwrap();
        s.create_topic("t", 1, TopicConfig::default()).unwrap();
        fill(&s, "t", 0, 20);
        let mut cfg = config("g");
        cfg.max_poll_records = 8;
        let mut c = Consumer::new(&s, cfg).unwrap();
        c.subscribe(&["t"]).unwrap();
        assert_eq!(drain(&mut c, 8).len(), 8);
        c.commit_sync().unwrap();
        // A crash: the files as they are now, with no clean shutdown.
        for e in walk(d.path()) {
            let to = copy.path().join(e.strip_prefix(d.path()).unwrap());
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&e, &to).unwrap();
        }
    }
    let s = Store::open(copy.path(), StoreOptions::default()).unwrap();
    assert_eq!(s.committed_offset("g", "t", 0).unwrap().offset, 8);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert_eq!(drain(&mut c, 12).first(), Some(&(0, 8)));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn auto_commit_commits_on_close_and_commit_async_reports_at_next_poll() {
    let (_d, s) = store("t", 1);
    fill(&s, "t", 0, 10);
    let mut cfg = config("g");
    cfg.enable_auto_commit = true;
    let mut c = Consumer::new(&s, cfg).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert_eq!(drain(&mut c, 10).len(), 10);
    c.close().unwrap();
    assert_eq!(s.committed_offset("g", "t", 0).unwrap().offset, 10);

    let mut c = Consumer::new(&s, config("h")).unwrap();
    c.subscribe(&["t"]).unwrap();
    drain(&mut c, 10);
    let done = Arc::new(Mutex::new(None));
    let d2 = Arc::clone(&done);
    c.commit_async(move |r| *d2.lock().unwrap() = Some(r.is_ok()));
    assert_eq!(*done.lock().unwrap(), None);
    c.poll(Duration::ZERO).unwrap();
    assert_eq!(*done.lock().unwrap(), Some(true));
    assert_eq!(s.committed_offset("h", "t", 0).unwrap().offset, 10);
}

#[test]
fn seek_position_pause_and_resume() {
    let (_d, s) = store("t", 2);
    fill(&s, "t", 0, 10);
    fill(&s, "t", 1, 10);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.assign(&[tp("t", 0), tp("t", 1)]).unwrap();
    c.seek(&tp("t", 0), 7).unwrap();
    assert_eq!(c.position(&tp("t", 0)).unwrap(), 7);
    c.pause(&[tp("t", 1)]);
    let got = drain(&mut c, 3);
    assert_eq!(got, vec![(0, 7), (0, 8), (0, 9)]);
    assert!(c.poll(SHORT).unwrap().is_empty());
    c.resume(&[tp("t", 1)]);
    assert_eq!(drain(&mut c, 10).len(), 10);
    c.seek_to_beginning(&[tp("t", 0)]).unwrap();
    assert_eq!(c.position(&tp("t", 0)).unwrap(), 0);
    c.seek_to_end(&[tp("t", 0)]).unwrap();
    assert_eq!(c.position(&tp("t", 0)).unwrap(), 10);
    assert!(matches!(
        c.seek(&tp("t", 5), 0),
        Err(Error::NotAssigned { .. })
    ));
    assert_eq!(c.lag().get(&tp("t", 0)), Some(&0));
}

#[test]
fn group_offsets_can_be_listed_reset_and_deleted_when_the_group_is_idle() {
    let (_d, s) = store("t", 2);
    fill(&s, "t", 0, 10);
    fill(&s, "t", 1, 4);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    drain(&mut c, 14);
    c.commit_sync().unwrap();
    assert!(matches!(
        s.reset_group_offsets("g", "t", ResetTo::Earliest),
        Err(Error::GroupNotEmpty { .. })
    ));
    c.close().unwrap();
    let d = s.describe_group("g").unwrap();
    let lags: Vec<Option<i64>> = d.offsets.iter().map(|o| o.lag).collect();
    assert_eq!(lags, vec![Some(0), Some(0)]);
    s.reset_group_offsets("g", "t", ResetTo::Offset(3)).unwrap();
    let d = s.describe_group("g").unwrap();
    let got: Vec<(Option<i64>, Option<i64>)> =
        d.offsets.iter().map(|o| (o.committed, o.lag)).collect();
    assert_eq!(got, vec![(Some(3), Some(7)), (Some(3), Some(1))]);
    s.reset_group_offsets("g", "t", ResetTo::Latest).unwrap();
    assert_eq!(s.committed_offset("g", "t", 0).unwrap().offset, 10);
    assert_eq!(s.delete_group("g").unwrap(), 2);
    assert!(s.list_groups().is_empty());
}

/// 4 consumers in one group over 8 partitions while producers write;
/// members join and leave mid-way; each commits after processing. Without a
/// crash every record is processed exactly once.
#[test]
fn a_group_under_churn_processes_every_record_exactly_once() {
    let (_d, s) = store("t", 8);
    let total: u64 = 20_000;
    let processed = Arc::new(Mutex::new(Vec::<u64>::new()));
    let producing_done = Arc::new(std::sync::atomic::AtomicBool::new(false));

    let producer = {
        let s = s.clone();
        let done = Arc::clone(&producing_done);
        std::thread::spawn(move || {
            let p = Producer::new(&s, ProducerConfig::default()).unwrap();
            for i in 0..total {
                p.send(
                    ProducerRecord::new("t", i.to_be_bytes().to_vec()).key(format!("k{}", i % 97)),
                )
                .unwrap();
                if i % 2000 == 0 {
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            p.flush().unwrap();
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        })
    };

    let worker = |s: Store, processed: Arc<Mutex<Vec<u64>>>, stop_after: Option<Duration>| {
        std::thread::spawn(move || {
            let mut c = Consumer::new(&s, config("workers")).unwrap();
            c.subscribe(&["t"]).unwrap();
            let start = Instant::now();
            let mut idle = 0;
            loop {
                let recs = c.poll(Duration::from_millis(50)).unwrap();
                if recs.is_empty() {
                    idle += 1;
                } else {
                    idle = 0;
                }
                {
                    let mut p = processed.lock().unwrap();
                    for r in &recs {
                        p.push(u64::from_be_bytes(r.value.unwrap().try_into().unwrap()));
                    }
                }
                if !recs.is_empty() {
                    c.commit_sync().unwrap();
                }
                if stop_after.is_some_and(|d| start.elapsed() > d) {
                    break;
                }
                if stop_after.is_none() && idle > 40 {
                    break;
                }
            }
            c.close().unwrap();
        })
    };

    let mut workers = Vec::new();
    for _ in 0..3 {
        workers.push(worker(s.clone(), Arc::clone(&processed), None));
    }
    // One member leaves mid-way, one joins late.
    workers.push(worker(
        s.clone(),
        Arc::clone(&processed),
        Some(Duration::from_millis(300)),
    ));
    std::thread::sleep(Duration::from_millis(200));
    workers.push(worker(s.clone(), Arc::clone(&processed), None));

    producer.join().unwrap();
    for w in workers {
        w.join().unwrap();
    }
    let seen = processed.lock().unwrap().clone();
    let unique: HashSet<u64> = seen.iter().copied().collect();
    assert_eq!(unique.len() as u64, total, "every record processed");
    assert_eq!(seen.len() as u64, total, "none processed twice");
    let committed: BTreeMap<u32, i64> = (0..8)
        .map(|p| {
            (
                p,
                s.committed_offset("workers", "t", p)
                    .map_or(0, |o| o.offset),
            )
        })
        .collect();
    let ends: BTreeMap<u32, i64> = (0..8)
        .map(|p| (p, s.partition("t", p).unwrap().log_end_offset()))
        .collect();
    assert_eq!(committed, ends);
}

#[test]
fn poll_never_waits_while_records_are_readable_over_a_backlog_of_many_fetches() {
    // 40,000 records of ~300 bytes: about 12 MB, a dozen fetches of
    // max.partition.fetch.bytes (1 MiB) with the default config.
    let (_d, s) = store("t", 1);
    for b in 0..40 {
        let recs: Vec<Record> = (0..1000)
            .map(|i| Record::new(format!("{b}:{i}:{}", "x".repeat(290))))
            .collect();
        s.append("t", 0, &recs, Durability::Written).unwrap();
    }
    let mut c = Consumer::new(&s, ConsumerConfig::default()).unwrap();
    c.assign(&[tp("t", 0)]).unwrap();
    c.seek(&tp("t", 0), 0).unwrap();
    let mut next = 0i64;
    let mut polls = 0;
    while next < 40_000 {
        // A zero timeout: any pass that returns nothing while records are
        // readable shows here as an empty poll, whatever the machine's speed.
        let t = Instant::now();
        let got = c.poll(Duration::ZERO).unwrap();
        assert!(
            !got.is_empty(),
            "poll {polls} at offset {next} returned nothing ({:?})",
            t.elapsed()
        );
        for r in &got {
            assert_eq!(r.offset, next);
            next += 1;
        }
        polls += 1;
    }
    assert_eq!(polls, 80, "500 records a poll");
    assert!(c.poll(Duration::ZERO).unwrap().is_empty());
}

/// Issue 17, finding 9: a re-created topic kept the old topic's committed
/// offsets (the group skipped the first records of the new one), and a
/// producer made before the delete could never send to the new topic.
#[test]
fn a_deleted_topics_offsets_are_dropped_and_an_old_producer_sends_to_the_recreated_topic() {
    let (d, s) = store("t", 1);
    fill(&s, "t", 0, 20);
    let producer = Producer::new(&s, ProducerConfig::default()).unwrap();
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.assign(&[tp("t", 0)]).unwrap();
    c.commit_offsets(&[(tp("t", 0), OffsetAndMetadata::new(10))])
        .unwrap();
    drop(c);
    s.delete_topic("t").unwrap();
    assert_eq!(s.committed_offset("g", "t", 0), None);
    assert!(s.describe_group("g").unwrap().offsets.is_empty());
    s.create_topic("t", 1, TopicConfig::default()).unwrap();
    let sent = producer
        .send(ProducerRecord::new("t", "new 0").partition(0))
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(sent.offset, 0);
    fill(&s, "t", 0, 4);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["t"]).unwrap();
    assert_eq!(drain(&mut c, 5).first(), Some(&(0, 0)));
    drop((c, producer));
    s.close().unwrap();
    drop(s);
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    assert_eq!(s.committed_offset("g", "t", 0), None);
}

/// Issue 17, finding 12: a member subscribed to `[a, b]` got
/// `UnknownTopic b` from every poll after `b` was deleted and never again
/// records of `a`; after `add_partitions` it kept only the old partitions.
/// The group now rebalances on both, as Kafka's does.
#[test]
fn a_group_rebalances_when_a_subscribed_topic_is_deleted_or_grows() {
    let (_d, s) = store("a", 1);
    s.create_topic("b", 1, TopicConfig::default()).unwrap();
    fill(&s, "a", 0, 5);
    fill(&s, "b", 0, 5);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.subscribe(&["a", "b"]).unwrap();
    assert_eq!(drain(&mut c, 10).len(), 10);
    c.commit_sync().unwrap();
    s.delete_topic("b").unwrap();
    fill(&s, "a", 0, 5);
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    while got.len() < 5 && Instant::now() < deadline {
        for r in c.poll(SHORT).unwrap() {
            got.push((r.topic.to_string(), r.partition, r.offset));
        }
    }
    assert_eq!(
        got,
        (5..10).map(|o| ("a".to_owned(), 0, o)).collect::<Vec<_>>()
    );
    assert_eq!(c.assignment(), &[tp("a", 0)]);
    c.commit_sync().unwrap();
    s.add_partitions("a", 3).unwrap();
    fill(&s, "a", 1, 3);
    fill(&s, "a", 2, 3);
    let mut parts: Vec<u32> = drain(&mut c, 6).into_iter().map(|(p, _)| p).collect();
    parts.sort_unstable();
    assert_eq!(parts, vec![1, 1, 1, 2, 2, 2]);
    let mut assigned = c.assignment().to_vec();
    assigned.sort();
    assert_eq!(assigned, vec![tp("a", 0), tp("a", 1), tp("a", 2)]);
}

/// Issue 17 ("smaller"): `commit_offsets` accepted −7, `i64::MAX` and
/// unknown topics; Kafka refuses unknown partitions, and out-of-range
/// offsets are a typed error. Nothing is committed then.
#[test]
fn commit_offsets_refuses_negative_or_beyond_the_end_offsets_and_unknown_partitions() {
    let (_d, s) = store("t", 1);
    fill(&s, "t", 0, 10);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.assign(&[tp("t", 0)]).unwrap();
    for bad in [-7, -1, 11, i64::MAX] {
        match c.commit_offsets(&[(tp("t", 0), OffsetAndMetadata::new(bad))]) {
            Err(Error::OffsetOutOfRange {
                requested,
                start: 0,
                end: 10,
            }) => assert_eq!(requested, bad),
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert!(matches!(
        c.commit_offsets(&[(tp("nosuch", 0), OffsetAndMetadata::new(0))]),
        Err(Error::UnknownTopic { .. })
    ));
    assert!(matches!(
        c.commit_offsets(&[(tp("t", 3), OffsetAndMetadata::new(0))]),
        Err(Error::UnknownPartition { .. })
    ));
    // One bad entry refuses the whole commit.
    assert!(c
        .commit_offsets(&[
            (tp("t", 0), OffsetAndMetadata::new(5)),
            (tp("t", 0), OffsetAndMetadata::new(-7)),
        ])
        .is_err());
    assert_eq!(s.committed_offset("g", "t", 0), None);
    assert!(s.list_groups().is_empty());
    // The whole range 0..=log end is fine.
    for good in [0, 10] {
        c.commit_offsets(&[(tp("t", 0), OffsetAndMetadata::new(good))])
            .unwrap();
    }
    assert_eq!(s.committed_offset("g", "t", 0).unwrap().offset, 10);
}

/// Kafka's `seek` refuses a negative offset.
#[test]
fn seeking_to_a_negative_offset_is_an_error_and_keeps_the_position() {
    let (_d, s) = store("t", 1);
    fill(&s, "t", 0, 10);
    let mut c = Consumer::new(&s, config("g")).unwrap();
    c.assign(&[tp("t", 0)]).unwrap();
    c.seek(&tp("t", 0), 4).unwrap();
    assert!(matches!(
        c.seek(&tp("t", 0), -5),
        Err(Error::OffsetOutOfRange { requested: -5, .. })
    ));
    assert_eq!(drain(&mut c, 1).first(), Some(&(0, 4)));
}
