//! Unit tests of the offset records and the offset store.

use super::record::{decode_key, decode_value, encode_key, encode_value};
use super::*;
use crate::config::StoreOptions;
use crate::log::Durability;

#[test]
fn key_and_value_use_kafkas_layout() {
    let k = encode_key("g", &TopicPartition::new("t", 5)).unwrap();
    assert_eq!(&k[..], &[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 5]);
    let v = encode_value(&OffsetAndMetadata {
        offset: 42,
        metadata: "m".into(),
        commit_timestamp: 7,
    })
    .unwrap();
    assert_eq!(
        &v[..],
        &[
            0, 3, 0, 0, 0, 0, 0, 0, 0, 42, 0xff, 0xff, 0xff, 0xff, 0, 1, b'm', 0, 0, 0, 0, 0, 0, 0,
            7
        ]
    );
    assert_eq!(
        decode_key(k).unwrap(),
        Some(("g".to_owned(), TopicPartition::new("t", 5)))
    );
    assert_eq!(decode_value(v).unwrap().offset, 42);
}

#[test]
fn truncated_records_are_errors_not_panics() {
    let k = encode_key("group", &TopicPartition::new("topic", 1)).unwrap();
    for n in 0..k.len() {
        assert!(decode_key(k.slice(..n)).is_err(), "{n}");
    }
    let v = encode_value(&OffsetAndMetadata::new(9)).unwrap();
    for n in 0..v.len() {
        assert!(decode_value(v.slice(..n)).is_err(), "{n}");
    }
}

/// Issue 17, finding 10: two committers of one group and partition; the
/// cache must hold what a reopen replays (the last commit in the log).
#[test]
fn concurrent_commits_to_one_partition_leave_the_offset_a_reopen_reads() {
    let tp = TopicPartition::new("t", 0);
    let mut mismatches = Vec::new();
    for round in 0..20 {
        let d = tempfile::tempdir().unwrap();
        let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
        std::thread::scope(|scope| {
            for t in 0..2i64 {
                let (s, tp) = (&s, &tp);
                scope.spawn(move || {
                    for i in 0..300 {
                        s.commit(
                            "g",
                            &[(tp.clone(), OffsetAndMetadata::new(2 * i + t))],
                            // Both committers wake from one shared fsync:
                            // the race for the cache is at its widest.
                            Durability::Fsync,
                        )
                        .unwrap();
                    }
                });
            }
        });
        let in_memory = s.get("g", &tp).unwrap().offset;
        s.log().close().unwrap();
        drop(s);
        let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
        let reopened = s.get("g", &tp).unwrap().offset;
        if in_memory != reopened {
            mismatches.push((round, in_memory, reopened));
        }
    }
    assert!(
        mismatches.is_empty(),
        "(round, cache, reopen): {mismatches:?}"
    );
}

#[test]
fn commits_and_deletes_survive_reopen() {
    let d = tempfile::tempdir().unwrap();
    let tp = |p| TopicPartition::new("t", p);
    {
        let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
        s.commit(
            "g1",
            &[
                (tp(0), OffsetAndMetadata::new(10)),
                (tp(1), OffsetAndMetadata::new(20)),
            ],
            Durability::Fsync,
        )
        .unwrap();
        s.commit(
            "g1",
            &[(tp(0), OffsetAndMetadata::new(11))],
            Durability::Fsync,
        )
        .unwrap();
        s.commit(
            "g2",
            &[(tp(0), OffsetAndMetadata::new(99))],
            Durability::Fsync,
        )
        .unwrap();
        assert_eq!(s.delete("g2", None).unwrap(), 1);
    }
    let s = OffsetStore::open(d.path(), &StoreOptions::default(), false).unwrap();
    assert_eq!(s.get("g1", &tp(0)).unwrap().offset, 11);
    assert_eq!(s.get("g1", &tp(1)).unwrap().offset, 20);
    assert_eq!(s.get("g2", &tp(0)), None);
    assert_eq!(s.groups(), vec!["g1".to_owned()]);
}
