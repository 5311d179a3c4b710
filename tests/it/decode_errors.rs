//! Every decode error, reached on purpose: each test damages a valid batch
//! (re-stamping the CRC-32C so decoding gets past the checksum to the check
//! under test) and asserts the exact error.

// LZ4 frame fields are little-endian by the frame specification.
#![allow(clippy::little_endian_bytes)]

use bytes::Bytes;
use kafkalite::{BatchBuilder, Compression, DecodeError, LogRecord, Record, RecordBatch};

fn records() -> Vec<Record> {
    vec![
        Record::new("value-0")
            .key("key-0")
            .timestamp(1_700_000_000_000),
        Record::new("value-1")
            .timestamp(1_700_000_000_005)
            .header("h", "v"),
        Record::new("value-2")
            .key("key-2")
            .timestamp(1_699_999_999_990),
    ]
}

fn built(compression: Compression) -> Vec<u8> {
    let mut b = BatchBuilder::new(compression);
    for r in records() {
        b.push(&r);
    }
    b.base_offset(100).build().to_vec()
}

/// Stores a fresh CRC-32C over `[21, end)` at `[17, 21)`, big-endian.
pub(crate) fn restamp(batch: &mut [u8]) {
    let crc = crc32c::crc32c(&batch[21..]);
    batch[17..21].copy_from_slice(&crc.to_be_bytes());
}

fn set_i32(batch: &mut [u8], at: usize, v: i32) {
    batch[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

fn set_attributes(batch: &mut [u8], attributes: i16) {
    batch[21..23].copy_from_slice(&attributes.to_be_bytes());
}

/// A batch header (from an empty built batch) followed by `body` as the
/// records section, with the length, count and CRC fixed up.
fn raw_batch(body: &[u8], count: i32, attributes: i16) -> Vec<u8> {
    let mut b = BatchBuilder::new(Compression::None)
        .base_offset(5)
        .build()
        .to_vec();
    b.extend_from_slice(body);
    let len = (b.len() - 12) as i32;
    set_i32(&mut b, 8, len);
    set_i32(&mut b, 57, count);
    set_attributes(&mut b, attributes);
    restamp(&mut b);
    b
}

fn varlong(v: i64) -> Vec<u8> {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    let mut out = Vec::new();
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
    out
}

/// One record: length prefix plus `fields` (everything after the length).
fn record_with(fields: &[u8]) -> Vec<u8> {
    let mut r = varlong(fields.len() as i64);
    r.extend_from_slice(fields);
    r
}

/// Attributes, timestamp delta 0, offset delta 0.
const PREFIX: [u8; 3] = [0, 0, 0];

fn fields(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

fn decode(batch: Vec<u8>) -> Result<RecordBatch, DecodeError> {
    RecordBatch::decode(&Bytes::from(batch))
}

fn decode_records(batch: Vec<u8>) -> Result<Vec<LogRecord>, DecodeError> {
    decode(batch)?.to_records()
}

#[test]
fn the_helpers_build_batches_that_decode() {
    // Guards the other tests: undamaged inputs decode cleanly.
    assert_eq!(decode_records(built(Compression::None)).unwrap().len(), 3);
    assert_eq!(decode_records(built(Compression::Lz4)).unwrap().len(), 3);
    let one = record_with(&fields(&[
        &PREFIX,
        &varlong(1),
        b"k",
        &varlong(-1),
        &varlong(0),
    ]));
    let got = decode_records(raw_batch(&one, 1, 0)).unwrap();
    assert_eq!(got[0].offset, 5);
    assert_eq!(got[0].key.as_deref(), Some(&b"k"[..]));
    assert_eq!(got[0].value, None);
}

#[test]
fn a_flipped_byte_in_the_records_is_a_checksum_mismatch() {
    for compression in Compression::ALL {
        let good = built(compression);
        let stored = u32::from_be_bytes(good[17..21].try_into().unwrap());
        for at in [21, 40, 61, good.len() / 2, good.len() - 1] {
            let mut bad = good.clone();
            bad[at] ^= 0x01;
            let computed = crc32c::crc32c(&bad[21..]);
            match decode(bad) {
                Err(DecodeError::ChecksumMismatch { expected, actual }) => {
                    assert_eq!(expected, stored);
                    assert_eq!(actual, computed);
                }
                other => panic!("byte {at}: {other:?}"),
            }
        }
    }
}

#[test]
fn the_partition_leader_epoch_is_outside_the_checksum() {
    let mut b = built(Compression::None);
    set_i32(&mut b, 12, 77);
    let batch = decode(b).unwrap();
    assert_eq!(batch.header().partition_leader_epoch, 77);
}

#[test]
fn a_magic_other_than_2_is_bad_magic() {
    for magic in [0i8, 1, 3, -1, i8::MAX] {
        let mut b = built(Compression::None);
        b[16] = magic as u8;
        assert!(
            matches!(decode(b), Err(DecodeError::BadMagic { found }) if found == magic),
            "magic {magic}"
        );
    }
}

#[test]
fn a_batch_truncated_at_any_length_is_truncated() {
    for compression in Compression::ALL {
        let full = built(compression);
        for len in 0..full.len() {
            match decode(full[..len].to_vec()) {
                Err(DecodeError::Truncated {
                    needed, available, ..
                }) => {
                    assert_eq!(available, len);
                    assert!(needed > len, "len {len}: needed {needed}");
                }
                other => panic!("{compression:?} cut at {len}: {other:?}"),
            }
        }
        assert!(decode(full).is_ok());
    }
}

#[test]
fn a_batch_length_below_the_header_size_is_out_of_bounds() {
    for length in [48, 0, -1, i32::MIN] {
        let mut b = built(Compression::None);
        set_i32(&mut b, 8, length);
        match decode(b) {
            Err(DecodeError::LengthOutOfBounds {
                what: "batch",
                length: l,
                min: 49,
                ..
            }) => assert_eq!(l, i64::from(length)),
            other => panic!("length {length}: {other:?}"),
        }
    }
}

#[test]
fn a_batch_length_beyond_the_buffer_is_truncated() {
    let good = built(Compression::None);
    for extra in [1, 1000, i32::MAX - good.len() as i32] {
        let mut b = good.clone();
        let length = (good.len() - 12) as i32 + extra;
        set_i32(&mut b, 8, length);
        match decode(b) {
            Err(DecodeError::Truncated {
                what: "batch",
                needed,
                available,
            }) => {
                assert_eq!(needed, length as usize + 12);
                assert_eq!(available, good.len());
            }
            other => panic!("length {length}: {other:?}"),
        }
    }
}

#[test]
fn codecs_kafka_does_not_define_are_unsupported() {
    for codec in [5u8, 6, 7] {
        let mut b = built(Compression::None);
        set_attributes(&mut b, i16::from(codec));
        restamp(&mut b);
        // The batch itself is valid; only its records cannot be read.
        let batch = decode(b).unwrap();
        match batch.to_records() {
            Err(DecodeError::UnsupportedCompression { codec: c, name }) => {
                assert_eq!((c, name), (codec, "unknown"));
            }
            other => panic!("codec {codec}: {other:?}"),
        }
        assert!(matches!(
            batch.header().compression(),
            Err(DecodeError::UnsupportedCompression { .. })
        ));
    }
}

#[test]
fn uncompressed_records_labelled_gzip_snappy_or_zstd_are_invalid_compressed_data() {
    for (codec, name) in [(1u8, "gzip"), (2, "snappy"), (4, "zstd")] {
        let mut b = built(Compression::None);
        set_attributes(&mut b, i16::from(codec));
        restamp(&mut b);
        let batch = decode(b).unwrap();
        assert_eq!(
            batch.header().compression().unwrap(),
            Compression::from_codec(codec).unwrap()
        );
        match batch.to_records() {
            Err(DecodeError::InvalidCompressed { codec: c, .. }) => assert_eq!(c, name),
            other => panic!("codec {codec}: {other:?}"),
        }
    }
}

/// The records section of a batch built with `compression`.
fn compressed_body(compression: Compression, records: &[Record]) -> Vec<u8> {
    let mut b = BatchBuilder::new(compression);
    for r in records {
        b.push(r);
    }
    b.build()[61..].to_vec()
}

#[test]
fn every_cut_and_flipped_byte_of_a_compressed_stream_is_a_typed_error_or_the_same_records() {
    let want: Vec<Record> = (0..40)
        .map(|i| Record::new(format!("value {i} value {i} value")).key(format!("k{i}")))
        .collect();
    for compression in [Compression::Gzip, Compression::Snappy, Compression::Zstd] {
        let body = compressed_body(compression, &want);
        let attributes = i16::from(compression.codec());
        let good = decode_records(raw_batch(&body, 40, attributes)).unwrap();
        assert_eq!(good.len(), 40);
        for cut in 0..body.len() {
            // A cut stream never decodes to the full batch.
            let r = decode_records(raw_batch(&body[..cut], 40, attributes));
            assert!(r.is_err(), "{compression:?} cut at {cut} decoded");
        }
        for at in 0..body.len() {
            let mut bad = body.clone();
            bad[at] ^= 0x5a;
            // Damage is either refused with an error or (where the codec has
            // no checksum over that byte) decodes to records, never a panic.
            if let Ok(got) = decode_records(raw_batch(&bad, 40, attributes)) {
                assert_eq!(got.len(), 40, "{compression:?} flip at {at}");
            }
        }
    }
}

#[test]
fn a_batch_that_decompresses_past_the_limit_is_refused_for_every_codec() {
    // 300 MiB of zeros compresses to a few hundred KiB with every codec
    // except snappy, whose blocks announce their length; each must be
    // refused once the output passes 256 MiB, not allocated.
    let zeros = vec![0u8; kafkalite::record::MAX_DECOMPRESSED_SIZE + (1 << 20)];
    let record = Record::new(Bytes::from(zeros));
    for compression in [
        Compression::Gzip,
        Compression::Snappy,
        Compression::Lz4,
        Compression::Zstd,
    ] {
        let mut b = BatchBuilder::new(compression);
        b.push(&record);
        let batch = RecordBatch::decode(&b.build()).unwrap();
        match batch.to_records() {
            Err(DecodeError::DecompressedTooLarge { codec, limit }) => {
                assert_eq!(codec, compression.name());
                assert_eq!(limit, kafkalite::record::MAX_DECOMPRESSED_SIZE);
            }
            other => panic!("{compression:?}: {:?}", other.map(|r| r.len())),
        }
    }
}

#[test]
fn a_count_above_the_records_present_is_a_count_mismatch() {
    for compression in Compression::ALL {
        for count in [4, 5, i32::MAX] {
            let mut b = built(compression);
            set_i32(&mut b, 57, count);
            restamp(&mut b);
            match decode_records(b) {
                Err(DecodeError::RecordCountMismatch { expected, actual }) => {
                    assert_eq!((expected, actual), (count, 3));
                }
                other => panic!("{compression:?} count {count}: {other:?}"),
            }
        }
    }
}

#[test]
fn a_count_below_the_records_present_leaves_trailing_bytes() {
    let full = built(Compression::None);
    let batch = decode(full.clone()).unwrap();
    let third_record_len = {
        // Size of the last record: the records section minus the first two.
        let mut two = BatchBuilder::new(Compression::None);
        for r in &records()[..2] {
            two.push(r);
        }
        full.len() - two.build().len()
    };
    assert_eq!(batch.records_count(), 3);
    for (count, bytes) in [(2, third_record_len), (0, full.len() - 61)] {
        let mut b = full.clone();
        set_i32(&mut b, 57, count);
        restamp(&mut b);
        match decode_records(b) {
            Err(DecodeError::TrailingBytes {
                what: "batch records",
                bytes: n,
            }) => assert_eq!(n, bytes, "count {count}"),
            other => panic!("count {count}: {other:?}"),
        }
    }
}

#[test]
fn a_negative_record_count_is_refused_with_the_count() {
    for count in [-1, i32::MIN] {
        let mut b = built(Compression::None);
        set_i32(&mut b, 57, count);
        restamp(&mut b);
        match decode_records(b) {
            Err(DecodeError::NegativeRecordCount { count: value }) => {
                assert_eq!(i64::from(value), i64::from(count))
            }
            other => panic!("count {count}: {other:?}"),
        }
    }
}

#[test]
fn an_overlong_varint_in_a_record_is_a_varint_overflow() {
    // Record length: six continuation-style bytes cannot be an i32 varint.
    let body = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0, 1, 1, 0];
    assert!(matches!(
        decode_records(raw_batch(&body, 1, 0)),
        Err(DecodeError::VarintOverflow {
            what: "record length"
        })
    ));
    // Timestamp delta: eleven bytes is beyond any varlong.
    let rec = record_with(&fields(&[&[0], &[0xff; 10], &[0x01], &[0, 1, 1, 0]]));
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::VarintOverflow {
            what: "record timestamp delta"
        })
    ));
    // Offset delta: five bytes whose value does not fit an i32.
    let rec = record_with(&fields(&[
        &[0, 0],
        &[0x80, 0x80, 0x80, 0x80, 0x10],
        &[1, 1, 0],
    ]));
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::VarintOverflow {
            what: "record offset delta"
        })
    ));
    // Key length, six bytes.
    let rec = record_with(&fields(&[&PREFIX, &[0x80; 5], &[0x01], &[1, 0]]));
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::VarintOverflow { what: "record key" })
    ));
}

#[test]
fn a_record_length_beyond_the_records_section_is_out_of_bounds() {
    let good = fields(&[&PREFIX, &varlong(-1), &varlong(-1), &varlong(0)]);
    for claimed in [good.len() as i64 + 1, 1_000_000, i64::from(i32::MAX)] {
        let mut rec = varlong(claimed);
        rec.extend_from_slice(&good);
        match decode_records(raw_batch(&rec, 1, 0)) {
            Err(DecodeError::LengthOutOfBounds {
                what: "record",
                length,
                min: 0,
                max,
            }) => {
                assert_eq!(length, claimed);
                assert_eq!(max, good.len() as i64);
            }
            other => panic!("claimed {claimed}: {other:?}"),
        }
    }
}

#[test]
fn a_negative_record_length_is_out_of_bounds() {
    let mut rec = varlong(-2);
    rec.extend_from_slice(&fields(&[&PREFIX, &varlong(-1), &varlong(-1), &varlong(0)]));
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::LengthOutOfBounds {
            what: "record",
            length: -2,
            ..
        })
    ));
}

#[test]
fn a_record_length_shorter_than_its_fields_is_truncated() {
    // The record says 4 bytes, but its value (3 bytes) runs past them.
    let f = fields(&[&PREFIX, &varlong(-1), &varlong(3), b"abc", &varlong(0)]);
    let mut rec = varlong(4);
    rec.extend_from_slice(&f);
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::Truncated { .. })
    ));
}

#[test]
fn a_record_length_longer_than_its_fields_is_out_of_bounds() {
    // Fields end one byte before the record's declared end.
    let mut f = fields(&[&PREFIX, &varlong(-1), &varlong(-1), &varlong(0)]);
    let used = f.len() as i64;
    f.push(0xAA);
    match decode_records(raw_batch(&record_with(&f), 1, 0)) {
        Err(DecodeError::LengthOutOfBounds {
            what: "record",
            length,
            min,
            max,
        }) => {
            assert_eq!(length, used + 1);
            assert_eq!((min, max), (used, used));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_key_or_value_length_below_minus_one_is_out_of_bounds() {
    for n in [-2, -100, i64::from(i32::MIN)] {
        let rec = record_with(&fields(&[&PREFIX, &varlong(n), &varlong(-1), &varlong(0)]));
        match decode_records(raw_batch(&rec, 1, 0)) {
            Err(DecodeError::LengthOutOfBounds {
                what: "record key",
                length,
                min: -1,
                ..
            }) => assert_eq!(length, n),
            other => panic!("key length {n}: {other:?}"),
        }
        let rec = record_with(&fields(&[&PREFIX, &varlong(-1), &varlong(n), &varlong(0)]));
        assert!(
            matches!(
                decode_records(raw_batch(&rec, 1, 0)),
                Err(DecodeError::LengthOutOfBounds {
                    what: "record value",
                    min: -1,
                    ..
                })
            ),
            "value length {n}"
        );
    }
}

#[test]
fn a_key_length_beyond_the_record_is_out_of_bounds() {
    let rec = record_with(&fields(&[
        &PREFIX,
        &varlong(50),
        b"short",
        &varlong(-1),
        &varlong(0),
    ]));
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::LengthOutOfBounds {
            what: "record key",
            length: 50,
            ..
        })
    ));
}

#[test]
fn a_header_count_larger_than_the_record_can_hold_is_out_of_bounds() {
    // One real header (4 bytes) but a count of 3: the record can hold at most 2.
    for count in [3, 1_000, i64::from(i32::MAX)] {
        let h = fields(&[&varlong(1), b"k", &varlong(1), b"v"]);
        let rec = record_with(&fields(&[
            &PREFIX,
            &varlong(-1),
            &varlong(-1),
            &varlong(count),
            &h,
        ]));
        match decode_records(raw_batch(&rec, 1, 0)) {
            Err(DecodeError::LengthOutOfBounds {
                what: "header count",
                length,
                min: 0,
                max: 2,
            }) => assert_eq!(length, count),
            other => panic!("count {count}: {other:?}"),
        }
    }
}

#[test]
fn a_negative_header_count_is_out_of_bounds() {
    let rec = record_with(&fields(&[
        &PREFIX,
        &varlong(-1),
        &varlong(-1),
        &varlong(-1),
    ]));
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::LengthOutOfBounds {
            what: "header count",
            length: -1,
            ..
        })
    ));
}

#[test]
fn a_header_key_that_is_not_utf8_is_an_invalid_header_key() {
    for key in [
        &[0xff][..],
        &[0xc3, 0x28],
        &[b'a', 0xe2, 0x82],
        &[0xed, 0xa0, 0x80],
    ] {
        let h = fields(&[&varlong(key.len() as i64), key, &varlong(-1)]);
        let rec = record_with(&fields(&[
            &PREFIX,
            &varlong(-1),
            &varlong(-1),
            &varlong(1),
            &h,
        ]));
        assert!(
            matches!(
                decode_records(raw_batch(&rec, 1, 0)),
                Err(DecodeError::InvalidHeaderKey)
            ),
            "key {key:?}"
        );
    }
}

#[test]
fn a_null_header_key_is_refused() {
    let h = fields(&[&varlong(-1), &varlong(1), b"v"]);
    let rec = record_with(&fields(&[
        &PREFIX,
        &varlong(-1),
        &varlong(-1),
        &varlong(1),
        &h,
    ]));
    assert!(matches!(
        decode_records(raw_batch(&rec, 1, 0)),
        Err(DecodeError::NullHeaderKey)
    ));
}

/// An lz4 batch whose records section is replaced by `frame`.
fn lz4_batch_with_frame(frame: &[u8]) -> Vec<u8> {
    raw_batch(frame, 20, 3)
}

fn lz4_frame() -> Vec<u8> {
    // Long, repetitive records so the frame's block is compressed, not stored.
    let mut b = BatchBuilder::new(Compression::Lz4);
    for i in 0..20 {
        b.push(&Record::new(format!(
            "repeated value repeated value {}",
            i % 2
        )));
    }
    let batch = b.build();
    let frame = batch[61..].to_vec();
    let word = u32::from_le_bytes(frame[7..11].try_into().unwrap());
    assert_eq!(word & 0x8000_0000, 0, "block should be compressed");
    frame
}

fn invalid_lz4(frame: &[u8]) -> &'static str {
    match decode_records(lz4_batch_with_frame(frame)) {
        Err(DecodeError::InvalidLz4 { reason }) => reason,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_corrupt_lz4_frame_is_invalid_lz4() {
    let good = lz4_frame();
    assert_eq!(
        decode_records(lz4_batch_with_frame(&good)).unwrap().len(),
        20
    );

    let mut f = good.clone();
    f[0] ^= 0xff;
    assert_eq!(invalid_lz4(&f), "bad magic");

    let mut f = good.clone();
    f[4] = 0x40; // linked blocks
    assert_eq!(invalid_lz4(&f), "dependent block stream is unsupported");

    let mut f = good.clone();
    f[6] ^= 0xff;
    assert_eq!(invalid_lz4(&f), "header checksum mismatch");

    let mut f = good.clone();
    f[5] = 0x30; // 64 KiB is the smallest block size Kafka reads
    assert_eq!(invalid_lz4(&f), "unsupported block size");

    // Compressed block data overwritten with garbage.
    let mut f = good.clone();
    let size = u32::from_le_bytes(f[7..11].try_into().unwrap()) as usize;
    for b in &mut f[11..11 + size] {
        *b = 0xff;
    }
    assert_eq!(invalid_lz4(&f), "corrupt compressed block");

    let mut f = good.clone();
    f.push(0);
    assert_eq!(invalid_lz4(&f), "trailing bytes after the frame");
}

#[test]
fn an_lz4_frame_cut_short_is_truncated() {
    let good = lz4_frame();
    for len in 0..good.len() {
        let got = decode_records(lz4_batch_with_frame(&good[..len]));
        assert!(
            matches!(
                got,
                Err(DecodeError::Truncated { .. } | DecodeError::InvalidLz4 { .. })
            ),
            "cut at {len}: {got:?}"
        );
    }
}
