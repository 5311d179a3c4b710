//! The producer's partitioning: explicit partitions, keys where Kafka puts
//! them, a custom partitioner, and the built-in sticky choice for keyless
//! records.

use crate::producer::store_with;
use kafkalite::{partition_for_key, Partitioner, Producer, ProducerConfig, ProducerRecord};
use std::sync::Arc;

#[test]
fn an_explicit_partition_wins_and_keys_land_where_kafka_puts_them() {
    let (_d, s) = store_with("t", 7);
    let p = Producer::new(&s, ProducerConfig::default()).unwrap();
    let m = p
        .send_and_wait(ProducerRecord::new("t", "v").key("foobar").partition(3))
        .unwrap();
    assert_eq!(m.partition, 3);
    for key in ["foobar", "21", "abc", "user-1", "user-2"] {
        let m = p
            .send_and_wait(ProducerRecord::new("t", "v").key(key))
            .unwrap();
        assert_eq!(m.partition, partition_for_key(key.as_bytes(), 7), "{key}");
    }
    assert_eq!(partition_for_key(b"foobar", 7), (1_357_151_166 % 7) as u32);
}

#[test]
fn a_custom_partitioner_is_used() {
    struct Last;
    impl Partitioner for Last {
        fn partition(&self, _: &str, _: Option<&[u8]>, _: Option<&[u8]>, _: usize, n: u32) -> u32 {
            n - 1
        }
    }
    let (_d, s) = store_with("t", 5);
    let mut c = ProducerConfig::default();
    c.partitioner = Some(Arc::new(Last));
    let p = Producer::new(&s, c).unwrap();
    let m = p
        .send_and_wait(ProducerRecord::new("t", "v").key("k"))
        .unwrap();
    assert_eq!(m.partition, 4);
}

#[test]
fn keyless_records_spread_over_partitions_in_sticky_runs() {
    let (_d, s) = store_with("t", 4);
    let mut c = ProducerConfig::default();
    c.batch_size = 1024;
    let p = Producer::new(&s, c).unwrap();
    for _ in 0..4000 {
        p.send(ProducerRecord::new("t", vec![7u8; 100])).unwrap();
    }
    p.flush().unwrap();
    let counts: Vec<i64> = (0..4)
        .map(|i| s.partition("t", i).unwrap().log_end_offset())
        .collect();
    assert_eq!(counts.iter().sum::<i64>(), 4000);
    for c in &counts {
        assert!(*c > 500, "{counts:?}");
    }
}

/// The built-in partitioner's keyless choice (each sending thread's own,
/// kept with its cached topic): runs of about `batch.size` bytes to one
/// partition, then a different one; with `partitioner.ignore.keys`, keyed
/// records alike.
#[test]
fn keyless_runs_last_about_a_batch_and_move_to_another_partition() {
    for ignore_keys in [false, true] {
        let (_d, s) = store_with("t", 4);
        let mut c = ProducerConfig::default();
        c.batch_size = 1024;
        // Only full batches seal (a linger-sealed one would lengthen a run).
        c.linger = std::time::Duration::from_secs(60);
        c.partitioner_ignore_keys = ignore_keys;
        let p = Producer::new(&s, c).unwrap();
        let seen = Arc::new(std::sync::Mutex::new(vec![u32::MAX; 4000]));
        for i in 0..4000usize {
            let seen = Arc::clone(&seen);
            let mut r = ProducerRecord::new("t", vec![7u8; 100]);
            if ignore_keys {
                r = r.key(format!("k{i}"));
            }
            p.send_with_callback(r, move |m| {
                seen.lock().unwrap()[i] = m.unwrap().partition;
            })
            .unwrap();
        }
        p.flush().unwrap();
        let seen = seen.lock().unwrap();
        assert!(seen.iter().all(|&p| p < 4), "a record not completed");
        let mut runs = vec![1usize];
        for w in seen.windows(2) {
            if w[0] == w[1] {
                *runs.last_mut().unwrap() += 1;
            } else {
                runs.push(1);
            }
        }
        // 100-byte values, about 110 bytes a record as encoded and a little
        // more as the producer counts them: runs of 8 to 10 fill 1,024
        // bytes. The first run (the slow path's own choice) and the last
        // may be shorter.
        let (_, rest) = runs.split_first().unwrap();
        let (_, middle) = rest.split_last().unwrap();
        let n = middle[0];
        assert!(
            (8..=10).contains(&n) && middle.iter().all(|&m| m == n),
            "ignore_keys {ignore_keys}: runs {runs:?}"
        );
        assert!(runs.len() > 300, "{} runs", runs.len());
    }
}

/// The keyless choice moves on where a batch ends, as Kafka's does when a
/// new batch would be made (KIP-794): every run of records to one
/// partition starts a batch of its own. A sender never leaves a batch of a
/// few records open behind it, for the next thread that comes to the
/// partition to join (records of two threads in one batch are completed by
/// one of them, on its core).
#[test]
fn keyless_runs_start_a_batch_and_end_where_it_is_full() {
    let (_d, s) = store_with("t", 4);
    let mut c = ProducerConfig::default();
    c.batch_size = 1024;
    // Only full batches, and the flush at the end, seal a batch.
    c.linger = std::time::Duration::from_secs(60);
    let p = Producer::new(&s, c).unwrap();
    let n = 3000usize;
    let seen = Arc::new(std::sync::Mutex::new(vec![(u32::MAX, -1i64); n]));
    for i in 0..n {
        let seen = Arc::clone(&seen);
        // Sizes that do not divide the batch evenly.
        let r = ProducerRecord::new("t", vec![7u8; 90 + i % 23]);
        p.send_with_callback(r, move |m| {
            let m = m.unwrap();
            seen.lock().unwrap()[i] = (m.partition, m.offset);
        })
        .unwrap();
    }
    p.flush().unwrap();
    let seen = seen.lock().unwrap();
    let mut batch_starts = Vec::new();
    for part in 0..4 {
        let log = s.partition("t", part).unwrap();
        let read = log.read(0, usize::MAX).unwrap();
        let bases: std::collections::HashSet<i64> =
            read.batches().iter().map(|b| b.base_offset()).collect();
        // Every batch but a partition's last (sealed by the flush) is full:
        // the next record did not fit by the producer's bound on its size
        // (its value, at most 112 bytes, and 36 more).
        let sizes: Vec<usize> = read.batches().iter().map(|b| b.size()).collect();
        if let Some((_, full)) = sizes.split_last() {
            assert!(
                full.iter().all(|&b| b + 112 + 36 > 1024),
                "partition {part}: batch sizes {sizes:?}"
            );
        }
        batch_starts.push(bases);
    }
    let mut runs = 0;
    for (i, w) in seen.windows(2).enumerate() {
        let ((p0, _), (p1, o1)) = (w[0], w[1]);
        if p0 != p1 {
            runs += 1;
            assert!(
                batch_starts[p1 as usize].contains(&o1),
                "record {}: a run on partition {p1} starts at offset {o1}, inside a batch",
                i + 1
            );
        }
    }
    assert!(runs > 200, "{runs} runs");
}

/// Two threads sending keyless records at once, one three times as many
/// as the other: every partition still gets about an even share. (The
/// sticky choice prefers the partitions a thread filled last, but only
/// while they are within a few batches of the least filled: a thread that
/// sends more moves on to the other thread's.)
#[test]
fn keyless_shares_stay_even_when_threads_send_unequally() {
    let (_d, s) = store_with("t", 8);
    let mut c = ProducerConfig::default();
    c.batch_size = 1024;
    let p = Producer::new(&s, c).unwrap();
    std::thread::scope(|sc| {
        for n in [30_000, 10_000] {
            let p = &p;
            sc.spawn(move || {
                for _ in 0..n {
                    p.send(ProducerRecord::new("t", vec![7u8; 100])).unwrap();
                }
            });
        }
    });
    p.flush().unwrap();
    let counts: Vec<i64> = (0..8)
        .map(|i| s.partition("t", i).unwrap().log_end_offset())
        .collect();
    assert_eq!(counts.iter().sum::<i64>(), 40_000);
    for c in &counts {
        assert!((4_250..=5_750).contains(c), "{counts:?}");
    }
}
