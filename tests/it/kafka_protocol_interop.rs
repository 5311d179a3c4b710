//! Cross-checks with an independent implementation, the `kafka-protocol`
//! crate: batches it encodes decode exactly in kafkalite, and batches
//! kafkalite encodes decode exactly with its `RecordBatchDecoder`. Its LZ4
//! codec is the C `lz4` library (frames with block and content checksums),
//! ours our own compressor and `lz4_flex`'s decoder, so this also checks the
//! C library decodes the blocks we write and the two framings interoperate;
//! gzip, snappy (xerial framing) and zstd are crossed the same way.

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression as KpCompression, Record as KpRecord, RecordBatchDecoder, RecordBatchEncoder,
    RecordEncodeOptions, TimestampType as KpTimestampType,
};
use kafkalite::{BatchBuilder, Compression, Header, LogRecord, Record, RecordBatch};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

/// Every codec, with kafka-protocol's name for it (its gzip is flate2, its
/// snappy xerial-framed snap, its zstd the C library).
const CODECS: [(Compression, KpCompression); 5] = [
    (Compression::None, KpCompression::None),
    (Compression::Gzip, KpCompression::Gzip),
    (Compression::Snappy, KpCompression::Snappy),
    (Compression::Lz4, KpCompression::Lz4),
    (Compression::Zstd, KpCompression::Zstd),
];

/// Producer fields shared by every record of a batch.
#[derive(Clone, Copy, Debug)]
struct Producer {
    leader_epoch: i32,
    id: i64,
    epoch: i16,
    base_sequence: i32,
}

const NO_PRODUCER: Producer = Producer {
    leader_epoch: -1,
    id: -1,
    epoch: -1,
    base_sequence: -1,
};

fn kp_headers(headers: &[Header]) -> IndexMap<StrBytes, Option<Bytes>> {
    headers
        .iter()
        .map(|h| (StrBytes::from_string(h.key.clone()), h.value.clone()))
        .collect()
}

fn from_kp_headers(headers: &IndexMap<StrBytes, Option<Bytes>>) -> Vec<Header> {
    headers
        .iter()
        .map(|(k, v)| Header {
            key: k.as_str().to_owned(),
            value: v.clone(),
        })
        .collect()
}

/// kafka-protocol's view of `records` at offsets base, base+1, ...
///
/// Its encoder starts a new batch whenever `offset - sequence` changes, so
/// sequences run base_sequence, base_sequence+1, ... even without a producer
/// id (then from −1), which keeps everything in one batch.
fn to_kp(records: &[Record], base: i64, p: Producer) -> Vec<KpRecord> {
    records
        .iter()
        .zip(0i32..)
        .map(|(r, i)| KpRecord {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: p.leader_epoch,
            producer_id: p.id,
            producer_epoch: p.epoch,
            timestamp_type: KpTimestampType::Creation,
            offset: base + i64::from(i),
            sequence: p.base_sequence.wrapping_add(i),
            timestamp: r.timestamp,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: kp_headers(&r.headers),
        })
        .collect()
}

fn kp_encode(records: &[Record], base: i64, p: Producer, c: KpCompression) -> Bytes {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &to_kp(records, base, p),
        &RecordEncodeOptions {
            version: 2,
            compression: c,
        },
    )
    .expect("kafka-protocol encodes");
    buf.freeze()
}

fn ours_encode(records: &[Record], base: i64, p: Producer, c: Compression) -> Bytes {
    let mut b = BatchBuilder::new(c);
    for r in records {
        b.push(r);
    }
    b.base_offset(base)
        .partition_leader_epoch(p.leader_epoch)
        .producer(p.id, p.epoch, p.base_sequence)
        .build()
}

fn expected(records: &[Record], base: i64) -> Vec<LogRecord> {
    records
        .iter()
        .zip(0i64..)
        .map(|(r, i)| LogRecord {
            offset: base + i,
            timestamp: r.timestamp,
            key: r.key.clone(),
            value: r.value.clone(),
            headers: r.headers.clone(),
        })
        .collect()
}

/// kafka-protocol bytes → kafkalite: exactly one batch holding exactly `records`.
fn check_kp_to_ours(records: &[Record], base: i64, p: Producer, c: (Compression, KpCompression)) {
    let bytes = kp_encode(records, base, p, c.1);
    let batches = RecordBatch::decode_all(&bytes).expect("kafkalite decodes kafka-protocol bytes");
    assert_eq!(batches.len(), 1, "kafka-protocol split the batch");
    let batch = &batches[0];
    let h = batch.header();
    assert_eq!(h.compression().expect("codec"), c.0);
    assert_eq!(h.base_offset, base);
    assert_eq!(h.partition_leader_epoch, p.leader_epoch);
    assert_eq!(h.producer_id, p.id);
    assert_eq!(h.producer_epoch, p.epoch);
    assert_eq!(h.base_sequence, p.base_sequence);
    assert_eq!(h.records_count as usize, records.len());
    assert_eq!(
        h.max_timestamp,
        records.iter().map(|r| r.timestamp).max().expect("records")
    );
    assert_eq!(
        batch.to_records().expect("records decode"),
        expected(records, base)
    );
}

/// kafkalite bytes → kafka-protocol: the same records, offsets and producer fields.
fn check_ours_to_kp(records: &[Record], base: i64, p: Producer, c: (Compression, KpCompression)) {
    let mut bytes = ours_encode(records, base, p, c.0);
    let sets = RecordBatchDecoder::decode_all(&mut bytes).expect("kafka-protocol decodes ours");
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].version, 2);
    assert_eq!(sets[0].compression, c.1);
    let got = &sets[0].records;
    assert_eq!(got.len(), records.len());
    for ((g, want), i) in got.iter().zip(records).zip(0i32..) {
        assert_eq!(g.offset, base + i64::from(i));
        assert_eq!(g.timestamp, want.timestamp, "timestamp at {i}");
        assert_eq!(g.key, want.key, "key at {i}");
        assert_eq!(g.value, want.value, "value at {i}");
        assert_eq!(from_kp_headers(&g.headers), want.headers, "headers at {i}");
        assert_eq!(g.partition_leader_epoch, p.leader_epoch);
        assert_eq!(g.producer_id, p.id);
        assert_eq!(g.producer_epoch, p.epoch);
        assert_eq!(g.sequence, p.base_sequence.wrapping_add(i));
        assert_eq!(g.timestamp_type, KpTimestampType::Creation);
        assert!(!g.transactional && !g.control);
    }
}

/// Null keys, null values, empty keys and values, headers with null, empty
/// and non-ASCII parts, and timestamps out of order.
fn sample_records() -> Vec<Record> {
    let t = 1_700_000_000_000;
    vec![
        Record::new("first").key("k1").timestamp(t),
        Record {
            timestamp: t - 5_000, // negative delta from the first record
            key: None,
            value: Some(Bytes::from_static(b"null key")),
            headers: vec![Header::new("trace-id", "abc123")],
        },
        Record {
            timestamp: t + 7,
            key: Some(Bytes::from_static(b"tombstone")),
            value: None,
            headers: vec![
                Header {
                    key: "null-value".into(),
                    value: None,
                },
                Header::new("empty", Bytes::new()),
                Header::new("ключ-🦀", vec![0u8, 255, 1]),
            ],
        },
        Record {
            timestamp: t - 1,
            key: Some(Bytes::new()),
            value: Some(Bytes::new()),
            headers: vec![],
        },
        Record {
            timestamp: t + 86_400_000,
            key: None,
            value: None,
            headers: vec![Header::new("", "empty key")],
        },
    ]
}

/// Enough compressible data for several 64 KiB LZ4 blocks.
fn large_records() -> Vec<Record> {
    (0..3_000u32)
        .map(|i| {
            Record::new(format!(
                "{i}\t10.1.{}.{}\t{}\t443\tTCP\t{}\thost-{}.example.net",
                i % 13,
                i % 251,
                40_000 + i % 2_000,
                i * 37,
                i % 5
            ))
            .key(format!("flow-{}", i % 97))
            .timestamp(1_700_000_000_000 + i64::from(i % 50) * 3 - 60)
        })
        .collect()
}

const IDEMPOTENT: Producer = Producer {
    leader_epoch: 17,
    id: 4_242_424_242,
    epoch: 3,
    base_sequence: 1_000,
};

#[test]
fn kafka_protocol_batches_decode_exactly_in_kafkalite() {
    for c in CODECS {
        for (base, p) in [(0, NO_PRODUCER), (1_234_567_890_123, IDEMPOTENT)] {
            check_kp_to_ours(&sample_records(), base, p, c);
        }
        check_kp_to_ours(&large_records(), 77, NO_PRODUCER, c);
    }
}

#[test]
fn kafkalite_batches_decode_exactly_in_kafka_protocol() {
    for c in CODECS {
        for (base, p) in [(0, NO_PRODUCER), (1_234_567_890_123, IDEMPOTENT)] {
            check_ours_to_kp(&sample_records(), base, p, c);
        }
        check_ours_to_kp(&large_records(), 77, NO_PRODUCER, c);
    }
}

#[test]
fn kafka_protocol_lz4_frames_carry_checksums_we_verify() {
    let bytes = kp_encode(&sample_records(), 0, NO_PRODUCER, KpCompression::Lz4);
    // The C library writes FLG with block independence, block checksums and
    // a content checksum: 0x60 | 0x10 | 0x04. We must read (and, for blocks,
    // verify) them.
    assert_eq!(&bytes[61..65], &[0x04, 0x22, 0x4D, 0x18]);
    assert_eq!(bytes[65] & 0x20, 0x20, "independent blocks");
    assert_eq!(bytes[65] & 0x14, 0x14, "block and content checksums");
    let batch = RecordBatch::decode(&bytes).expect("decode");
    assert_eq!(
        batch.to_records().expect("records"),
        expected(&sample_records(), 0)
    );
}

#[test]
fn uncompressed_batches_are_byte_identical_when_the_first_record_is_the_oldest() {
    // kafka-protocol uses the smallest timestamp as the base timestamp, Kafka
    // (and kafkalite) the first record's; they agree when the first is the
    // smallest, and then the encodings must match byte for byte.
    let mut records = sample_records();
    records.sort_by_key(|r| r.timestamp);
    for (base, p) in [(0, NO_PRODUCER), (99, IDEMPOTENT)] {
        let theirs = kp_encode(&records, base, p, KpCompression::None);
        let ours = ours_encode(&records, base, p, Compression::None);
        assert_eq!(ours, theirs);
    }
}

fn arb_bytes() -> impl Strategy<Value = Option<Bytes>> {
    prop_oneof![
        1 => Just(None),
        4 => vec(any::<u8>(), 0..64).prop_map(|v| Some(Bytes::from(v))),
    ]
}

fn arb_record() -> impl Strategy<Value = Record> {
    (
        1_000_000_000_000i64..2_000_000_000_000,
        arb_bytes(),
        arb_bytes(),
        // Header keys must be unique: kafka-protocol keeps headers in a map.
        btree_map(any::<String>(), arb_bytes(), 0..4),
    )
        .prop_map(|(timestamp, key, value, headers)| Record {
            timestamp,
            key,
            value,
            headers: headers
                .into_iter()
                .map(|(key, value)| Header { key, value })
                .collect(),
        })
}

fn arb_producer() -> impl Strategy<Value = Producer> {
    prop_oneof![
        Just(NO_PRODUCER),
        (0i32..1000, 0i64..i64::MAX, 0i16..i16::MAX, 0i32..1_000_000).prop_map(
            |(leader_epoch, id, epoch, base_sequence)| Producer {
                leader_epoch,
                id,
                epoch,
                base_sequence,
            }
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn arbitrary_batches_cross_decode(
        records in vec(arb_record(), 1..20),
        base in 0i64..1_000_000_000_000,
        p in arb_producer(),
        codec in 0usize..CODECS.len(),
    ) {
        let c = CODECS[codec];
        check_kp_to_ours(&records, base, p, c);
        check_ours_to_kp(&records, base, p, c);
    }
}
