//! Unit tests of the client batch and the transactional read.

use super::source::{next_batch, Part};
use super::wire::{client_batch, record_offsets};
use super::*;
use crate::offset_map::PartMap;
use bytes::BytesMut;
use kafkalite::RecordBatch;
use kafkalite::{BatchBuilder, Compression, Record};

#[test]
fn a_client_batch_keeps_records_and_drops_producer_state() {
    let mut b = BatchBuilder::new(Compression::Lz4);
    for i in 0..5u8 {
        b.push(
            &Record::new(vec![i, i])
                .key(vec![i])
                .timestamp(1000 + i64::from(i))
                .header("h", vec![i]),
        );
    }
    let mut raw = BytesMut::from(b.build().as_ref());
    raw[0..8].copy_from_slice(&42i64.to_be_bytes());
    let stored = RecordBatch::decode(&raw.freeze()).unwrap();
    let sent = client_batch(&stored);
    let back = RecordBatch::decode(&sent).unwrap();
    let h = back.header();
    assert_eq!(
        (
            h.base_offset,
            h.producer_id,
            h.producer_epoch,
            h.base_sequence
        ),
        (0, -1, -1, -1)
    );
    assert_eq!(h.partition_leader_epoch, -1);
    assert_eq!(h.compression().unwrap(), Compression::Lz4);
    assert_eq!((h.base_timestamp, h.max_timestamp), (1000, 1004));
    let a: Vec<_> = stored
        .to_records()
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp, r.headers))
        .collect();
    let z: Vec<_> = back
        .to_records()
        .unwrap()
        .into_iter()
        .map(|r| (r.key, r.value, r.timestamp, r.headers))
        .collect();
    assert_eq!(a, z);
    assert_eq!(
        record_offsets(&stored).unwrap(),
        (42..47).collect::<Vec<_>>()
    );
}

/// Kafka's transactional vector (tests/data/transactional): a migration
/// sends exactly the committed data records, never a marker or an
/// aborted record, each batch without its transactional bit.
#[test]
fn only_committed_data_is_sent_from_a_transactional_log() {
    let vector = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/transactional");
    let e: serde_json::Value =
        serde_json::from_slice(&std::fs::read(vector.join("expected.json")).unwrap()).unwrap();
    let aborted: Vec<i64> = e["aborted_offsets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let want: Vec<i64> = e["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| !r["control"].as_bool().unwrap())
        .map(|r| r["offset"].as_i64().unwrap())
        .filter(|o| !aborted.contains(o))
        .collect();
    assert!(!aborted.is_empty() && !want.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path(), kafkalite::StoreOptions::default()).unwrap();
    store
        .create_topic("t", 1, kafkalite::TopicConfig::default())
        .unwrap();
    let log = store.partition("t", 0).unwrap();
    let mut seg = std::fs::read(vector.join("00000000000000000000.log")).unwrap();
    log.append(&mut seg, kafkalite::Durability::Written)
        .unwrap();
    let part = Part {
        topic: "t".into(),
        partition: 0,
        end: log.last_stable_offset().unwrap(),
        log,
    };
    let mut m = PartMap::default();
    let mut sent: Vec<i64> = Vec::new();
    loop {
        let (batch, at) = next_batch(&part, m.src_next).unwrap();
        m.src_next = at;
        let Some(b) = batch else { break };
        let out = RecordBatch::decode(&client_batch(&b)).unwrap();
        assert!(!out.header().is_transactional() && !out.header().is_control());
        let offsets = record_offsets(&b).unwrap();
        sent.extend(&offsets);
        let base = m.tgt_next;
        m.record(&offsets, base);
    }
    assert_eq!(sent, want);
    assert_eq!(m.src_next, part.end);
    assert_eq!(m.records(), want.len() as i64);
    store.close().unwrap();
}
