//! Segments written by an independent Kafka client (kafka-python) decode to
//! exactly the records recorded beside them.

use base64::Engine;
use bytes::Bytes;
use kafkalite::{Compression, RecordBatch};
use serde_json::Value;
use std::path::Path;

fn b64(v: &Value) -> Option<Bytes> {
    v.as_str().map(|s| {
        Bytes::from(
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .expect("base64 in expected.json"),
        )
    })
}

fn vector_dir(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn expected_of(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(vector_dir(name).join("expected.json")).unwrap()).unwrap()
}

fn check_vector(name: &str) {
    let dir = vector_dir(name);
    let expected = expected_of(name);
    let log =
        Bytes::from(std::fs::read(dir.join(expected["segment_file"].as_str().unwrap())).unwrap());
    assert_eq!(log.len() as u64, expected["bytes"].as_u64().unwrap());
    let batches = RecordBatch::decode_all(&log).unwrap();
    let want_batches = expected["batches"].as_array().unwrap();
    assert_eq!(batches.len(), want_batches.len());
    let mut position = 0;
    for (b, w) in batches.iter().zip(want_batches) {
        assert_eq!(position as u64, w["position"].as_u64().unwrap());
        assert_eq!(b.size() as u64, w["size"].as_u64().unwrap());
        assert_eq!(b.base_offset(), w["base_offset"].as_i64().unwrap());
        assert_eq!(b.last_offset(), w["last_offset"].as_i64().unwrap());
        assert_eq!(i64::from(b.records_count()), w["count"].as_i64().unwrap());
        assert_eq!(b.max_timestamp(), w["max_timestamp"].as_i64().unwrap());
        let codec = b.header().compression().unwrap();
        let want_codec: Compression = w["compression"].as_str().unwrap().parse().unwrap();
        assert_eq!(codec, want_codec);
        if let Some(t) = w["is_transactional"].as_bool() {
            let h = b.header();
            assert_eq!(h.is_transactional(), t);
            assert_eq!(h.is_control(), w["is_control"].as_bool().unwrap());
            assert_eq!(h.producer_id, w["producer_id"].as_i64().unwrap());
            assert_eq!(
                i64::from(h.producer_epoch),
                w["producer_epoch"].as_i64().unwrap()
            );
            assert_eq!(
                i64::from(h.base_sequence),
                w["base_sequence"].as_i64().unwrap()
            );
        }
        position += b.size();
    }
    let records: Vec<_> = batches
        .iter()
        .flat_map(|b| b.to_records().unwrap())
        .collect();
    let want = expected["records"].as_array().unwrap();
    assert_eq!(records.len(), want.len());
    for (r, w) in records.iter().zip(want) {
        assert_eq!(r.offset, w["offset"].as_i64().unwrap());
        assert_eq!(r.timestamp, w["timestamp"].as_i64().unwrap());
        assert_eq!(r.key, b64(&w["key"]), "key at offset {}", r.offset);
        assert_eq!(r.value, b64(&w["value"]), "value at offset {}", r.offset);
        let headers: Vec<(String, Option<Bytes>)> = w["headers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| (h[0].as_str().unwrap().to_owned(), b64(&h[1])))
            .collect();
        let got: Vec<(String, Option<Bytes>)> = r
            .headers
            .iter()
            .map(|h| (h.key.clone(), h.value.clone()))
            .collect();
        assert_eq!(got, headers);
    }
}

#[test]
fn uncompressed_basic_decodes_exactly() {
    check_vector("uncompressed-basic");
}

#[test]
fn lz4_basic_decodes_exactly() {
    check_vector("lz4-basic");
}

#[test]
fn multi_batch_decodes_exactly() {
    check_vector("multi-batch");
}

#[test]
fn gzip_basic_decodes_exactly() {
    check_vector("gzip-basic");
}

#[test]
fn snappy_basic_in_xerial_framing_decodes_exactly() {
    check_vector("snappy-basic");
}

#[test]
fn zstd_basic_decodes_exactly() {
    check_vector("zstd-basic");
}

#[test]
fn a_segment_mixing_all_five_codecs_decodes_exactly() {
    check_vector("mixed-codecs");
    let expected = expected_of("mixed-codecs");
    let codecs: std::collections::BTreeSet<&str> = expected["batches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["compression"].as_str().unwrap())
        .collect();
    assert_eq!(codecs.len(), 5, "{codecs:?}");
}

#[test]
fn a_transactional_segment_decodes_exactly_with_its_markers_parsed() {
    check_vector("transactional");
    let expected = expected_of("transactional");
    let log = Bytes::from(
        std::fs::read(vector_dir("transactional").join("00000000000000000000.log")).unwrap(),
    );
    let batches = RecordBatch::decode_all(&log).unwrap();
    let markers: Vec<_> = batches
        .iter()
        .filter_map(|b| b.control_record().unwrap())
        .collect();
    let want = expected["markers"].as_array().unwrap();
    assert_eq!(markers.len(), want.len());
    for (m, w) in markers.iter().zip(want) {
        assert_eq!(m.offset, w["offset"].as_i64().unwrap());
        assert_eq!(m.kind.name(), w["type"].as_str().unwrap());
        assert_eq!(
            m.coordinator_epoch.map(i64::from),
            w["coordinator_epoch"].as_i64()
        );
    }
    // Data batches have no control record.
    assert!(batches[0].control_record().unwrap().is_none());
}
