//! Property tests: any records pushed through `BatchBuilder` decode back to
//! exactly themselves, with offsets base+i, compressed or not; uncompressed
//! batches decode without copying keys, values or header values.

use bytes::Bytes;
use kafkalite::{BatchBuilder, Compression, Header, LogRecord, Record, RecordBatch};
use proptest::collection::vec;
use proptest::prelude::*;

fn opt_bytes() -> impl Strategy<Value = Option<Bytes>> {
    prop_oneof![
        1 => Just(None),
        1 => Just(Some(Bytes::new())),
        6 => vec(any::<u8>(), 0..200).prop_map(|v| Some(Bytes::from(v))),
    ]
}

fn header() -> impl Strategy<Value = Header> {
    (any::<String>(), opt_bytes()).prop_map(|(key, value)| Header { key, value })
}

fn timestamp() -> impl Strategy<Value = i64> {
    prop_oneof![
        // Realistic times, out of order within a batch (negative deltas).
        6 => 1_600_000_000_000i64..1_800_000_000_000,
        1 => Just(i64::MIN),
        1 => Just(i64::MAX),
        1 => Just(-1i64),
        1 => any::<i64>(),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (timestamp(), opt_bytes(), opt_bytes(), vec(header(), 0..4)).prop_map(
        |(timestamp, key, value, headers)| Record {
            timestamp,
            key,
            value,
            headers,
        },
    )
}

fn compression() -> impl Strategy<Value = Compression> {
    proptest::sample::select(Compression::ALL.to_vec())
}

fn base_offset() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        0i64..1_000_000,
        (i64::MAX - 1_000_000)..(i64::MAX - 1_000),
    ]
}

#[derive(Debug, Clone)]
struct Producer {
    id: i64,
    epoch: i16,
    sequence: i32,
}

fn producer() -> impl Strategy<Value = Producer> {
    prop_oneof![
        Just(Producer {
            id: -1,
            epoch: -1,
            sequence: -1
        }),
        (0i64..=i64::MAX, 0i16..=i16::MAX, 0i32..=i32::MAX).prop_map(|(id, epoch, sequence)| {
            Producer {
                id,
                epoch,
                sequence,
            }
        }),
    ]
}

fn build(
    records: &[Record],
    compression: Compression,
    base: i64,
    leader_epoch: i32,
    p: &Producer,
) -> Bytes {
    let mut b = BatchBuilder::new(compression);
    for r in records {
        b.push(r);
    }
    b.base_offset(base)
        .partition_leader_epoch(leader_epoch)
        .producer(p.id, p.epoch, p.sequence)
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

fn inside(outer: &Bytes, inner: &Bytes) -> bool {
    let start = outer.as_ptr() as usize;
    let p = inner.as_ptr() as usize;
    p >= start && p + inner.len() <= start + outer.len()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn built_batches_decode_to_the_same_records(
        records in vec(record(), 1..40),
        compression in compression(),
        base in base_offset(),
        leader_epoch in any::<i32>(),
        p in producer(),
    ) {
        let bytes = build(&records, compression, base, leader_epoch, &p);
        let batch = RecordBatch::decode(&bytes)?;
        let h = batch.header();
        prop_assert_eq!(batch.size(), bytes.len());
        prop_assert_eq!(h.base_offset, base);
        prop_assert_eq!(h.partition_leader_epoch, leader_epoch);
        prop_assert_eq!(h.compression()?, compression);
        prop_assert_eq!(h.producer_id, p.id);
        prop_assert_eq!(h.producer_epoch, p.epoch);
        prop_assert_eq!(h.base_sequence, p.sequence);
        prop_assert_eq!(h.records_count as usize, records.len());
        prop_assert_eq!(batch.last_offset(), base + records.len() as i64 - 1);
        prop_assert_eq!(h.base_timestamp, records[0].timestamp);
        // Like Kafka's MemoryRecordsBuilder, the max starts at NO_TIMESTAMP (-1).
        let max_ts = records.iter().map(|r| r.timestamp).fold(-1, i64::max);
        prop_assert_eq!(batch.max_timestamp(), max_ts);
        prop_assert_eq!(batch.to_records()?, expected(&records, base));
        // The lazy iterator yields the same records.
        let lazy: Vec<LogRecord> = batch.records()?.collect::<Result<_, _>>()?;
        prop_assert_eq!(lazy, expected(&records, base));
        // So do the borrowed views.
        let mut views = Vec::new();
        let mut rs = batch.records()?;
        while let Some(v) = rs.next_view() {
            views.push(v?.to_log_record());
        }
        prop_assert_eq!(views, expected(&records, base));
    }

    #[test]
    fn uncompressed_records_point_into_the_batch_buffer(
        records in vec(record(), 1..20),
        base in base_offset(),
    ) {
        let bytes = build(&records, Compression::None, base, -1, &Producer { id: -1, epoch: -1, sequence: -1 });
        let decoded = RecordBatch::decode(&bytes)?.to_records()?;
        prop_assert_eq!(&decoded, &expected(&records, base));
        let mut checked = 0;
        for r in &decoded {
            let parts = r
                .key
                .iter()
                .chain(r.value.iter())
                .chain(r.headers.iter().filter_map(|h| h.value.as_ref()));
            // An empty slice need not point anywhere in particular.
            for part in parts.filter(|b| !b.is_empty()) {
                prop_assert!(inside(&bytes, part), "{:?} was copied out of the batch", part);
                checked += 1;
            }
        }
        let non_empty = records
            .iter()
            .flat_map(|r| {
                r.key
                    .iter()
                    .chain(r.value.iter())
                    .chain(r.headers.iter().filter_map(|h| h.value.as_ref()))
            })
            .filter(|b| !b.is_empty())
            .count();
        prop_assert_eq!(checked, non_empty);
    }

    #[test]
    fn several_batches_back_to_back_decode_in_order(
        batches in vec((vec(record(), 1..8), compression()), 1..6),
        base in 0i64..1_000_000,
    ) {
        let mut log = Vec::new();
        let mut next = base;
        let mut want = Vec::new();
        for (records, compression) in &batches {
            let none = Producer { id: -1, epoch: -1, sequence: -1 };
            log.extend_from_slice(&build(records, *compression, next, 0, &none));
            want.extend(expected(records, next));
            next += records.len() as i64;
        }
        let log = Bytes::from(log);
        let decoded = RecordBatch::decode_all(&log)?;
        prop_assert_eq!(decoded.len(), batches.len());
        let got: Vec<LogRecord> = decoded
            .iter()
            .map(|b| b.to_records())
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn empty_batch_round_trips_with_no_records() {
    let bytes = BatchBuilder::new(Compression::None).base_offset(7).build();
    let batch = RecordBatch::decode(&bytes).expect("decode");
    assert_eq!(bytes.len(), 61);
    assert_eq!(batch.records_count(), 0);
    assert_eq!(batch.max_timestamp(), -1);
    assert!(batch.to_records().expect("records").is_empty());
}

#[test]
fn lz4_batch_of_compressible_records_is_smaller_than_uncompressed() {
    let records: Vec<Record> = (0..200)
        .map(|i| {
            Record::new(format!(
                "10.0.0.{}\t443\tGET /index.html\thost-{}",
                i % 8,
                i % 3
            ))
        })
        .collect();
    let plain = build(
        &records,
        Compression::None,
        0,
        -1,
        &Producer {
            id: -1,
            epoch: -1,
            sequence: -1,
        },
    );
    let lz4 = build(
        &records,
        Compression::Lz4,
        0,
        -1,
        &Producer {
            id: -1,
            epoch: -1,
            sequence: -1,
        },
    );
    assert!(
        lz4.len() * 2 < plain.len(),
        "{} vs {}",
        lz4.len(),
        plain.len()
    );
    let a = RecordBatch::decode(&plain)
        .expect("plain")
        .to_records()
        .expect("plain records");
    let b = RecordBatch::decode(&lz4)
        .expect("lz4")
        .to_records()
        .expect("lz4 records");
    assert_eq!(a, b);
}

/// A record pushed: timestamp, key, value, header count.
type Pushed = (i64, Option<Vec<u8>>, Option<Vec<u8>>, usize);

/// Every combination of null and present key, value and headers, with
/// timestamp deltas of one to ten varint bytes.
fn push_all(b: &mut BatchBuilder) -> Vec<Pushed> {
    let mut pushed = Vec::new();
    let base = 1_700_000_000_000i64;
    let deltas = [
        0i64,
        1,
        -1,
        63,
        64,
        8_191,
        1 << 20,
        1 << 40,
        i64::MAX - base,
    ];
    for (i, &d) in deltas.iter().enumerate() {
        for shape in 0..8 {
            let key = (shape & 1 != 0).then(|| vec![b'k'; i * 37]);
            let value = (shape & 2 != 0).then(|| vec![b'v'; i * 300 + shape]);
            let headers = if shape & 4 != 0 {
                vec![Header::new("h", Bytes::from_static(b"x"))]
            } else {
                Vec::new()
            };
            let ts = base.wrapping_add(d);
            b.push_parts(ts, key.as_deref(), value.as_deref(), &headers);
            pushed.push((ts, key, value, headers.len()));
        }
    }
    pushed
}

#[test]
fn fields_copied_whole_or_exactly_encode_the_same_records() {
    // A builder that starts with no room (its records take the exact
    // copy whenever the buffer must grow) and one with ample room (every
    // record takes the constant-size copy cut back).
    let mut tight = BatchBuilder::new(Compression::None);
    let mut roomy = BatchBuilder::with_capacity(Compression::None, 1 << 20);
    let want = push_all(&mut tight);
    assert_eq!(push_all(&mut roomy), want);
    let (tight, roomy) = (tight.build(), roomy.build());
    assert_eq!(tight, roomy, "the two paths wrote different bytes");
    let records = RecordBatch::decode(&tight)
        .expect("decode")
        .to_records()
        .expect("records");
    assert_eq!(records.len(), want.len());
    for (r, (ts, key, value, headers)) in records.iter().zip(&want) {
        assert_eq!(r.timestamp, *ts);
        assert_eq!(r.key.as_deref(), key.as_deref());
        assert_eq!(r.value.as_deref(), value.as_deref());
        assert_eq!(r.headers.len(), *headers);
    }
}

/// Keys of every length from none to past what the builder encodes in
/// one copy with the record's other fields (33 bytes), with and without a
/// value, read back whole, and a builder with no room writes the same
/// bytes as one with ample room.
#[test]
fn keys_of_every_length_around_the_one_copy_read_back() {
    // The batch's first timestamp (and every third) is near i64::MAX: the
    // other records' timestamp deltas take the varint's ten bytes.
    let stamp = |n: usize| {
        1_000
            + if n.is_multiple_of(3) {
                i64::MAX - 2_000
            } else {
                n as i64
            }
    };
    let push = |b: &mut BatchBuilder| {
        for n in 0..=70usize {
            let key = vec![n as u8; n];
            let value = n.is_multiple_of(2).then(|| vec![b'v'; 3 * n + 1]);
            b.push_parts(stamp(n), Some(&key), value.as_deref(), &[]);
        }
    };
    let mut tight = BatchBuilder::new(Compression::None);
    let mut roomy = BatchBuilder::with_capacity(Compression::None, 1 << 20);
    push(&mut tight);
    push(&mut roomy);
    let (tight, roomy) = (tight.build(), roomy.build());
    assert_eq!(tight, roomy, "the two builders wrote different bytes");
    let records = RecordBatch::decode(&tight)
        .expect("decode")
        .to_records()
        .expect("records");
    assert_eq!(records.len(), 71);
    for (n, r) in records.iter().enumerate() {
        assert_eq!(r.timestamp, stamp(n));
        assert_eq!(r.key.as_deref(), Some(&vec![n as u8; n][..]));
        let value = n.is_multiple_of(2).then(|| vec![b'v'; 3 * n + 1]);
        assert_eq!(r.value.as_deref(), value.as_deref());
    }
}
