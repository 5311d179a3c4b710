//! What `Consumer::poll` returns (`ConsumerRecords`): borrowed and owned
//! records agree with the log field for field, for every codec; the
//! partition accessors; and a poll that meets an error after taking records
//! returns those records and reports the error on the next poll.

use kafkalite::{
    Compression, Consumer, ConsumerConfig, ConsumerRecord, Durability, Error, Header, OffsetReset,
    Record, Store, StoreOptions, TopicConfig, TopicPartition,
};
use std::time::Duration;

const SHORT: Duration = Duration::from_millis(200);

/// Records with every shape of field: keys and null keys, null values,
/// empty values, headers with null values.
fn records(p: u32) -> Vec<Record> {
    (0..40)
        .map(|i| {
            let mut r = match i % 5 {
                0 => Record::default(),
                1 => Record::new(Vec::new()),
                _ => Record::new(format!("p{p} value {i} {}", "x".repeat(i * 7))),
            };
            if i % 3 != 0 {
                r = r.key(format!("key-{i}"));
            }
            if i % 4 == 1 {
                r = r.header("h1", format!("v{i}"));
                r.headers.push(Header {
                    key: "null-valued".into(),
                    value: None,
                });
            }
            r.timestamp(1_700_000_000_000 + i as i64)
        })
        .collect()
}

fn consumer(s: &Store, max_poll_records: usize) -> Consumer {
    let mut c = ConsumerConfig::default();
    c.max_poll_records = max_poll_records;
    Consumer::new(s, c).unwrap()
}

#[test]
fn borrowed_and_owned_records_agree_with_the_log_for_every_codec() {
    for compression in [
        Compression::None,
        Compression::Lz4,
        Compression::Gzip,
        Compression::Snappy,
        Compression::Zstd,
    ] {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path(), StoreOptions::default()).unwrap();
        let mut t = TopicConfig::default();
        t.compression = compression;
        s.create_topic("t", 2, t).unwrap();
        for p in 0..2 {
            // Three batches a partition, so polls start and end mid-batch.
            let recs = records(p);
            for chunk in recs.chunks(15) {
                s.append("t", p, chunk, Durability::Written).unwrap();
            }
        }
        let parts = [TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
        // 7 a poll: runs cut inside batches and across partitions.
        let mut c = consumer(&s, 7);
        c.assign(&parts).unwrap();
        c.seek_to_beginning(&parts).unwrap();
        let mut seen: Vec<ConsumerRecord> = Vec::new();
        loop {
            let polled = c.poll(SHORT).unwrap();
            if polled.is_empty() {
                break;
            }
            assert!(polled.len() <= 7);
            let owned: Vec<ConsumerRecord> = polled.clone().into_iter().collect();
            assert_eq!(owned.len(), polled.len());
            for (i, (view, own)) in polled.iter().zip(&owned).enumerate() {
                assert_eq!(view.to_consumer_record(), *own, "{compression:?}");
                assert_eq!(
                    (view.topic, view.partition, view.offset, view.timestamp),
                    (&*own.topic, own.partition, own.offset, own.timestamp)
                );
                assert_eq!(view.key, own.key.as_deref());
                assert_eq!(view.value, own.value.as_deref());
                let headers: Vec<(&str, Option<&[u8]>)> = view.headers().collect();
                let want: Vec<(&str, Option<&[u8]>)> = own
                    .headers
                    .iter()
                    .map(|h| (h.key.as_str(), h.value.as_deref()))
                    .collect();
                assert_eq!(headers, want);
                assert_eq!(view.header_count(), own.headers.len());
                let got = polled.get(i).unwrap();
                assert_eq!((got.partition, got.offset), (own.partition, own.offset));
            }
            assert!(polled.get(polled.len()).is_none());
            // The partition accessors partition the same records.
            let mut by_part = 0;
            for tp in polled.partitions() {
                let offsets: Vec<i64> = polled.records(&tp).map(|r| r.offset).collect();
                assert!(offsets.windows(2).all(|w| w[0] < w[1]), "{offsets:?}");
                by_part += offsets.len();
            }
            assert_eq!(by_part, polled.len());
            seen.extend(owned);
        }
        for p in 0..2 {
            let from_poll: Vec<ConsumerRecord> =
                seen.iter().filter(|r| r.partition == p).cloned().collect();
            let log = s.partition("t", p).unwrap();
            let read = log.read(0, usize::MAX).unwrap();
            let from_log: Vec<_> = read.records().map(|r| r.unwrap()).collect();
            assert_eq!(from_poll.len(), 40, "{compression:?}");
            for (a, b) in from_poll.iter().zip(&from_log) {
                assert_eq!(
                    (a.offset, a.timestamp, &a.key, &a.value, &a.headers),
                    (b.offset, b.timestamp, &b.key, &b.value, &b.headers),
                    "{compression:?}"
                );
            }
        }
    }
}

#[test]
fn an_error_after_records_were_taken_returns_them_and_comes_first_next_poll() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    s.create_topic("t", 2, TopicConfig::default()).unwrap();
    for p in 0..2 {
        s.append("t", p, &records(p), Durability::Written).unwrap();
    }
    let mut config = ConsumerConfig::default();
    config.auto_offset_reset = OffsetReset::None;
    let mut c = Consumer::new(&s, config).unwrap();
    let parts = [TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
    c.assign(&parts).unwrap();
    // Partition 1 has no position and no reset: polling it is an error.
    c.seek(&parts[0], 0).unwrap();
    let (mut offsets, mut errors, mut last_was_error) = (Vec::new(), 0, false);
    for _ in 0..20 {
        match c.poll(SHORT) {
            Ok(polled) => {
                assert!(polled.iter().all(|r| r.partition == 0));
                offsets.extend(polled.iter().map(|r| r.offset));
                last_was_error = false;
            }
            Err(Error::NoOffsetForPartition { partition: 1, .. }) => {
                // Never twice in a row while partition 0 has records: the
                // rotation moves on.
                assert!(!last_was_error || offsets.len() == 40, "{offsets:?}");
                errors += 1;
                last_was_error = true;
            }
            Err(e) => panic!("{e}"),
        }
    }
    // Every record of partition 0 exactly once, in order: none were lost
    // to the other partition's error.
    assert_eq!(offsets, (0..40).collect::<Vec<i64>>());
    assert!(errors >= 2, "{errors}");
    c.seek(&parts[1], 38).unwrap();
    let rest: Vec<i64> = c.poll(SHORT).unwrap().iter().map(|r| r.offset).collect();
    assert_eq!(rest, [38, 39]);
}

#[test]
fn a_damaged_batch_after_good_ones_is_reported_after_them() {
    let d = tempfile::tempdir().unwrap();
    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut t = TopicConfig::default();
    t.log.segment_bytes = 4096;
    s.create_topic("t", 1, t).unwrap();
    let batch = |i: usize| -> Vec<Record> {
        (0..5)
            .map(|k| Record::new(format!("batch {i} record {k} {:.<60}", "")))
            .collect()
    };
    for i in 0..40 {
        s.append("t", 0, &batch(i), Durability::Fsync).unwrap();
    }
    s.close().unwrap();
    drop(s);
    // Flip a byte of the third batch's records in the first (sealed)
    // segment: its CRC no longer matches.
    let seg = d.path().join("t-0").join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&seg).unwrap();
    let mut at = 0usize;
    for _ in 0..2 {
        let len = i32::from_be_bytes(bytes[at + 8..at + 12].try_into().unwrap());
        at += 12 + len as usize;
    }
    let target = at + 61 + 10;
    bytes[target] ^= 0x55;
    std::fs::write(&seg, &bytes).unwrap();

    let s = Store::open(d.path(), StoreOptions::default()).unwrap();
    let mut c = consumer(&s, 500);
    let tp = TopicPartition::new("t", 0);
    c.assign(std::slice::from_ref(&tp)).unwrap();
    c.seek(&tp, 0).unwrap();
    let first: Vec<i64> = c.poll(SHORT).unwrap().iter().map(|r| r.offset).collect();
    assert_eq!(first, (0..10).collect::<Vec<i64>>());
    let e = c.poll(SHORT).unwrap_err();
    assert!(
        matches!(e, Error::Corrupt { .. } | Error::Decode(_)),
        "{e:?}"
    );
    assert_eq!(c.position(&tp).unwrap(), 10);
    // Past the damage, reading goes on.
    c.seek(&tp, 15).unwrap();
    let next = c.poll(SHORT).unwrap();
    assert_eq!(next.iter().next().map(|r| r.offset), Some(15));
}
