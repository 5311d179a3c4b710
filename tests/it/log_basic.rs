//! The partition log: appends, reads, rolls, reopen and recovery.

use bytes::Bytes;
use kafkalite::{
    BatchBuilder, Compression, DecodeError, Durability, Error, LogConfig, PartitionLog, ReadMode,
    Record,
};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub fn small_config() -> LogConfig {
    let mut c = LogConfig::default();
    c.settings.segment_bytes = 4096;
    c.settings.segment_index_bytes = 1024;
    c.settings.index_interval_bytes = 512;
    c
}

pub fn rec(i: u64) -> Record {
    Record::new(format!("value-{i}-{}", "x".repeat((i % 50) as usize)))
        .key(format!("key-{i}"))
        .timestamp(1_700_000_000_000 + i as i64)
}

pub fn read_all(log: &PartitionLog, from: i64) -> Vec<(i64, Option<Bytes>)> {
    let mut out = Vec::new();
    let mut at = from;
    loop {
        let r = log.read(at, 1000).unwrap();
        if r.is_empty() {
            break;
        }
        for rec in r.records() {
            let rec = rec.unwrap();
            out.push((rec.offset, rec.value));
        }
        at = r.next_offset();
    }
    out
}

fn value(i: u64) -> Option<Bytes> {
    rec(i).value
}

fn append_n(log: &PartitionLog, from: u64, n: u64, per_batch: u64, compression: Compression) {
    let mut i = from;
    while i < from + n {
        let batch: Vec<Record> = (i..(i + per_batch).min(from + n)).map(rec).collect();
        let info = log
            .append_records(&batch, compression, Durability::Written)
            .unwrap();
        assert_eq!(info.base_offset, i as i64);
        assert_eq!(info.last_offset, (i + batch.len() as u64 - 1) as i64);
        i += batch.len() as u64;
    }
}

fn expected(range: std::ops::Range<u64>) -> Vec<(i64, Option<Bytes>)> {
    range.map(|i| (i as i64, value(i))).collect()
}

#[test]
fn appended_records_read_back_in_order_with_assigned_offsets() {
    for mode in [ReadMode::Mmap, ReadMode::Pread] {
        for compression in Compression::ALL {
            let d = tempfile::tempdir().unwrap();
            let mut c = small_config();
            c.read_mode = mode;
            let log = PartitionLog::open(d.path().join("t-0"), c).unwrap();
            append_n(&log, 0, 500, 7, compression);
            assert_eq!(log.log_end_offset(), 500);
            assert_eq!(log.high_watermark(), 500);
            assert!(log.segment_count() > 3, "small segments roll");
            assert_eq!(read_all(&log, 0), expected(0..500));
            // Reading from the middle of a batch starts at that record.
            assert_eq!(read_all(&log, 123), expected(123..500));
        }
    }
}

/// `pread` reads reuse a thread's buffers once nothing holds a read's
/// bytes (the unit tests of `read_buffer` check the reuse): a walk that drops
/// each read before the next reads every record right, and bytes still
/// held are never overwritten.
#[test]
fn pread_reads_never_overwrite_bytes_still_held() {
    let d = tempfile::tempdir().unwrap();
    let mut c = small_config();
    c.read_mode = ReadMode::Pread;
    c.settings.segment_bytes = 1 << 20;
    let log = PartitionLog::open(d.path().join("t-0"), c).unwrap();
    append_n(&log, 0, 2000, 20, Compression::None);
    // Held for the whole walk below, then checked.
    let first = log.read(0, 3000).unwrap();
    let mut at = 0;
    let mut n = 0u64;
    while at < 2000 {
        let r = log.read(at, 3000).unwrap();
        for rec in r.records() {
            let rec = rec.unwrap();
            assert_eq!(rec.offset, n as i64);
            assert_eq!(rec.value, value(n));
            n += 1;
        }
        at = r.next_offset();
    }
    assert_eq!(n, 2000);
    let held: Vec<_> = first
        .records()
        .map(|r| r.map(|r| (r.offset, r.value)))
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(!held.is_empty());
    assert_eq!(held, expected(0..held.len() as u64));
}

#[test]
fn segments_are_named_by_twenty_digit_base_offsets() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let log = PartitionLog::open(&dir, small_config()).unwrap();
    append_n(&log, 0, 300, 10, Compression::None);
    for base in log.segment_base_offsets() {
        for ext in ["log", "index", "timeindex"] {
            assert!(
                dir.join(format!("{base:020}.{ext}")).exists(),
                "{base} {ext}"
            );
        }
    }
    assert_eq!(log.segment_base_offsets()[0], 0);
}

#[test]
fn reads_outside_the_log_are_out_of_range() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small_config()).unwrap();
    append_n(&log, 0, 10, 10, Compression::None);
    assert!(log.read(10, 100).unwrap().is_empty());
    assert!(matches!(
        log.read(11, 100),
        Err(Error::OffsetOutOfRange {
            requested: 11,
            start: 0,
            end: 10
        })
    ));
    assert!(matches!(
        log.read(-1, 100),
        Err(Error::OffsetOutOfRange { .. })
    ));
}

fn all_sizes(log: &PartitionLog) -> Vec<usize> {
    let r = log.read(0, usize::MAX).unwrap();
    r.batches().iter().map(|b| b.size()).collect()
}

#[test]
fn max_bytes_limits_a_read_but_one_batch_always_comes_back() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), LogConfig::default()).unwrap();
    append_n(&log, 0, 100, 10, Compression::None);
    let one = log.read(0, 1).unwrap();
    assert_eq!(one.batches().len(), 1);
    let three: usize = all_sizes(&log)[..3].iter().sum();
    let some = log.read(0, three).unwrap();
    assert_eq!(some.batches().len(), 3);
    let some = log.read(0, three - 1).unwrap();
    assert_eq!(some.batches().len(), 2);
    let some = log.read(0, three + 1).unwrap();
    assert_eq!(some.batches().len(), 3);
    let all = log.read(0, usize::MAX).unwrap();
    assert_eq!(all.batches().len(), 10);
}

#[test]
fn a_batch_over_max_message_bytes_is_refused_and_changes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let mut c = small_config();
    c.settings.max_message_bytes = 200;
    let log = PartitionLog::open(d.path().join("t-0"), c).unwrap();
    let big = Record::new(vec![7u8; 500]);
    assert!(matches!(
        log.append_records(&[big], Compression::None, Durability::Written),
        Err(Error::RecordTooLarge { max: 200, .. })
    ));
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size(), 0);
}

#[test]
fn raw_batches_with_bad_crc_are_refused_and_change_nothing() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small_config()).unwrap();
    let mut b = BatchBuilder::new(Compression::None);
    b.push(&rec(1));
    let mut bytes = b.build().to_vec();
    let n = bytes.len();
    bytes[n - 1] ^= 0xff;
    assert!(matches!(
        log.append(&mut bytes, Durability::Written),
        Err(Error::Decode(DecodeError::ChecksumMismatch { .. }))
    ));
    assert!(matches!(
        log.append(&mut [], Durability::Written),
        Err(Error::InvalidBatch { .. })
    ));
    assert!(matches!(
        log.append(&mut bytes[..30], Durability::Written),
        Err(Error::Decode(DecodeError::Truncated { .. }))
    ));
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size(), 0);
}

#[test]
fn several_batches_in_one_append_get_consecutive_offsets() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), LogConfig::default()).unwrap();
    let mut buf = Vec::new();
    for (start, codec) in [
        (0u64, Compression::None),
        (3, Compression::Lz4),
        (5, Compression::None),
    ] {
        let mut b = BatchBuilder::new(codec).base_offset(999);
        for i in start..start + 2 + (start % 2) {
            b.push(&rec(i));
        }
        buf.extend_from_slice(&b.build());
    }
    let info = log.append(&mut buf, Durability::Written).unwrap();
    assert_eq!(
        (info.base_offset, info.last_offset, info.batches),
        (0, 7, 3)
    );
    let got: Vec<i64> = read_all(&log, 0).into_iter().map(|(o, _)| o).collect();
    assert_eq!(got, (0..8).collect::<Vec<_>>());
}

#[test]
fn data_survives_a_clean_close_and_reopen() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    {
        let log = PartitionLog::open(&dir, small_config()).unwrap();
        append_n(&log, 0, 400, 9, Compression::Lz4);
        log.close().unwrap();
        assert!(dir.join(".kafka_cleanshutdown").exists());
        assert!(matches!(
            log.append_records(&[rec(0)], Compression::None, Durability::Written),
            Err(Error::Closed)
        ));
    }
    let log = PartitionLog::open(&dir, small_config()).unwrap();
    assert!(!dir.join(".kafka_cleanshutdown").exists());
    assert_eq!(log.log_end_offset(), 400);
    append_n(&log, 400, 100, 9, Compression::None);
    assert_eq!(read_all(&log, 0), expected(0..500));
}

#[test]
fn data_survives_a_drop_without_close() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    {
        let log = PartitionLog::open(&dir, small_config()).unwrap();
        append_n(&log, 0, 400, 9, Compression::None);
    }
    let log = PartitionLog::open(&dir, small_config()).unwrap();
    assert_eq!(log.log_end_offset(), 400);
    append_n(&log, 400, 50, 9, Compression::None);
    assert_eq!(read_all(&log, 0), expected(0..450));
}

#[test]
fn a_second_open_of_the_same_directory_is_locked() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let _log = PartitionLog::open(&dir, small_config()).unwrap();
    assert!(matches!(
        PartitionLog::open(&dir, small_config()),
        Err(Error::Locked { .. })
    ));
}

fn last_log_file(dir: &Path) -> std::path::PathBuf {
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    logs.pop().unwrap()
}

#[test]
fn a_torn_tail_is_cut_back_to_the_last_whole_batch() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    let sizes;
    {
        let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
        append_n(&log, 0, 100, 10, Compression::None);
        sizes = log
            .read(0, usize::MAX)
            .unwrap()
            .batches()
            .iter()
            .map(|b| b.size())
            .collect::<Vec<_>>();
    }
    let f = last_log_file(&dir);
    let full: usize = sizes.iter().sum();
    let last = *sizes.last().unwrap();
    for cut in [
        full - 1,
        full - last + 1,
        full - last + 61,
        full - last + 12,
    ] {
        let file = std::fs::OpenOptions::new().write(true).open(&f).unwrap();
        file.set_len(cut as u64).unwrap();
        drop(file);
        let log = PartitionLog::open(&dir, LogConfig::default()).unwrap();
        assert_eq!(log.log_end_offset(), 90, "cut at {cut}");
        assert_eq!(std::fs::metadata(&f).unwrap().len() as usize, full - last);
        assert_eq!(read_all(&log, 0), expected(0..90));
        append_n(&log, 90, 10, 10, Compression::None);
        drop(log);
    }
}

#[test]
fn a_flipped_byte_in_a_sealed_segment_is_reported_as_corrupt_with_its_file() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    {
        let log = PartitionLog::open(&dir, small_config()).unwrap();
        append_n(&log, 0, 300, 10, Compression::None);
        assert!(log.segment_count() >= 3);
        // Rolled segments are flushed in the background; this makes them
        // durable and moves the recovery point past them.
        log.flush().unwrap();
        log.checkpoint().unwrap();
    }
    let first = dir.join(format!("{:020}.log", 0));
    let mut bytes = std::fs::read(&first).unwrap();
    bytes[100] ^= 0x40;
    std::fs::write(&first, &bytes).unwrap();
    // The sealed segment below the recovery point is not rescanned at open,
    // so the damage is found when it is read, never silently skipped.
    let opened = PartitionLog::open(&dir, small_config());
    match opened {
        Err(Error::Corrupt { path, .. }) => assert_eq!(path, first),
        Ok(log) => match log.read(0, 100_000) {
            Err(Error::Corrupt { path, position, .. }) => {
                assert_eq!(path, first);
                assert_eq!(position, 0);
            }
            other => panic!("expected corrupt, got {other:?}"),
        },
        Err(e) => panic!("unexpected {e}"),
    }
}

#[test]
fn fsync_appends_from_many_threads_share_fsyncs() {
    let d = tempfile::tempdir().unwrap();
    let log = Arc::new(PartitionLog::open(d.path().join("t-0"), LogConfig::default()).unwrap());
    let threads = 8;
    let per_thread = 50;
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    let info = log
                        .append_records(&[rec(t * 1000 + i)], Compression::None, Durability::Fsync)
                        .unwrap();
                    // Acknowledged means durable means visible.
                    assert!(log.high_watermark() > info.last_offset);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    let appends = threads * per_thread;
    assert_eq!(log.log_end_offset(), appends as i64);
    assert!(log.fsync_count() <= appends, "{} fsyncs", log.fsync_count());
    assert!(log.fsync_count() >= 1);
}

#[test]
fn fsync_durability_holds_back_the_high_watermark_until_synced() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), LogConfig::default()).unwrap();
    log.append_records(&[rec(0)], Compression::None, Durability::Fsync)
        .unwrap();
    assert_eq!(log.high_watermark(), 1);
    assert_eq!(log.fsync_count(), 1);
    log.append_records(&[rec(1)], Compression::None, Durability::Written)
        .unwrap();
    assert_eq!(log.high_watermark(), 2);
    assert_eq!(log.fsync_count(), 1);
}

#[test]
fn flush_messages_fsyncs_after_that_many_records() {
    let d = tempfile::tempdir().unwrap();
    let mut c = LogConfig::default();
    c.settings.flush_messages = Some(10);
    let log = PartitionLog::open(d.path().join("t-0"), c).unwrap();
    append_n(&log, 0, 9, 1, Compression::None);
    assert_eq!(log.fsync_count(), 0);
    append_n(&log, 9, 1, 1, Compression::None);
    assert_eq!(log.fsync_count(), 1);
}

#[test]
fn flush_ms_fsyncs_data_older_than_the_limit() {
    let d = tempfile::tempdir().unwrap();
    let mut c = LogConfig::default();
    c.settings.flush_max_age = Some(Duration::from_millis(50));
    let log = PartitionLog::open(d.path().join("t-0"), c).unwrap();
    let now = std::time::Instant::now();
    assert!(!log.flush_if_due(now).unwrap());
    append_n(&log, 0, 5, 1, Compression::None);
    assert!(!log.flush_if_due(std::time::Instant::now()).unwrap());
    assert!(log
        .flush_if_due(std::time::Instant::now() + Duration::from_millis(60))
        .unwrap());
    assert_eq!(log.fsync_count(), 1);
    assert!(!log
        .flush_if_due(std::time::Instant::now() + Duration::from_secs(1))
        .unwrap());
}

#[test]
fn a_waiting_reader_wakes_when_data_arrives() {
    let d = tempfile::tempdir().unwrap();
    let log = Arc::new(PartitionLog::open(d.path().join("t-0"), LogConfig::default()).unwrap());
    assert!(!log.wait_for(0, Duration::from_millis(10)));
    let l2 = Arc::clone(&log);
    let h = std::thread::spawn(move || l2.wait_for(0, Duration::from_secs(30)));
    std::thread::sleep(Duration::from_millis(20));
    log.append_records(&[rec(0)], Compression::None, Durability::Written)
        .unwrap();
    assert!(h.join().unwrap());
}

#[test]
fn offset_for_timestamp_matches_a_linear_scan() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small_config()).unwrap();
    // Out-of-order and equal timestamps across batches and segments.
    let ts = |i: u64| 1000 + ((i * 7919) % 113) as i64 + (i / 20) as i64 * 3;
    let records: Vec<Record> = (0..400).map(|i| rec(i).timestamp(ts(i))).collect();
    for chunk in records.chunks(6) {
        log.append_records(chunk, Compression::Lz4, Durability::Written)
            .unwrap();
    }
    for target in [0, 999, 1000, 1001, 1050, 1100, 1112, 1200, 1300, 5000] {
        let want = (0..400u64)
            .find(|&i| ts(i) >= target)
            .map(|i| (i as i64, ts(i)));
        assert_eq!(
            log.offset_for_timestamp(target).unwrap(),
            want,
            "target {target}"
        );
    }
}

#[test]
fn indexes_rebuilt_by_recovery_match_kafkas_for_the_vector_segment() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/multi-batch");
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("t-0");
    std::fs::create_dir_all(&dir).unwrap();
    let name = "00000000000000001000";
    std::fs::copy(
        src.join(format!("{name}.log")),
        dir.join(format!("{name}.log")),
    )
    .unwrap();
    let mut c = LogConfig::default();
    c.settings.index_interval_bytes = 300;
    let log = PartitionLog::open(&dir, c.clone()).unwrap();
    assert_eq!(log.log_start_offset(), 1000);
    assert_eq!(log.log_end_offset(), 1080);
    assert_eq!(read_all(&log, 1000).len(), 80);
    log.close().unwrap();
    let want_index = std::fs::read(src.join(format!("{name}.index"))).unwrap();
    let got_index = std::fs::read(dir.join(format!("{name}.index"))).unwrap();
    assert_eq!(got_index, want_index);
    let want_time = std::fs::read(src.join(format!("{name}.timeindex"))).unwrap();
    let got_time = std::fs::read(dir.join(format!("{name}.timeindex"))).unwrap();
    assert_eq!(got_time, want_time);
}

#[test]
fn raw_batches_with_malformed_records_under_a_valid_crc_are_refused_and_change_nothing() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small_config()).unwrap();
    let two = |codec| {
        let mut b = BatchBuilder::new(codec);
        b.push(&kafkalite::Record::new("a").timestamp(1000));
        b.push(
            &kafkalite::Record::new("b")
                .timestamp(1000)
                .header("hk", "hv"),
        );
        b.build().to_vec()
    };
    // The header's last offset delta (bytes 23..27) and record count
    // (57..61) must agree (checked first); here both claim one record more,
    // or one fewer, than the batch holds.
    let (delta_at, count_at) = (23, 57);
    for codec in Compression::ALL {
        let mut bytes = two(codec);
        bytes[delta_at + 3] = 2;
        bytes[count_at + 3] = 3;
        crate::decode_errors::restamp(&mut bytes);
        let r = log.append(&mut bytes, Durability::Written);
        assert!(
            matches!(
                r,
                Err(Error::Decode(DecodeError::RecordCountMismatch {
                    expected: 3,
                    actual: 2
                }))
            ),
            "{codec:?}: {r:?}"
        );
        // One fewer: the second is left over.
        let mut bytes = two(codec);
        bytes[delta_at + 3] = 0;
        bytes[count_at + 3] = 1;
        crate::decode_errors::restamp(&mut bytes);
        let r = log.append(&mut bytes, Durability::Written);
        assert!(
            matches!(r, Err(Error::Decode(DecodeError::TrailingBytes { .. }))),
            "{codec:?}: {r:?}"
        );
    }
    // The second record's offset delta says 2: offsets must run 0, 1, 2.
    let mut bytes = two(Compression::None);
    let second = 61 + 1 + usize::from(bytes[61] / 2);
    assert_eq!(bytes[second + 3], 2, "zigzag offset delta 1");
    bytes[second + 3] = 4;
    crate::decode_errors::restamp(&mut bytes);
    let r = log.append(&mut bytes, Durability::Written);
    assert!(matches!(r, Err(Error::InvalidBatch { .. })), "{r:?}");
    // A header key that is not UTF-8.
    let mut bytes = two(Compression::None);
    let at = bytes.windows(2).position(|w| w == b"hk").unwrap();
    bytes[at] = 0xff;
    crate::decode_errors::restamp(&mut bytes);
    let r = log.append(&mut bytes, Durability::Written);
    assert!(
        matches!(r, Err(Error::Decode(DecodeError::InvalidHeaderKey))),
        "{r:?}"
    );
    assert_eq!(log.log_end_offset(), 0);
    assert_eq!(log.size(), 0);
    // And the well-formed batches go in.
    for codec in Compression::ALL {
        log.append(&mut two(codec), Durability::Written).unwrap();
    }
    assert_eq!(log.log_end_offset(), 2 * Compression::ALL.len() as i64);
}

#[test]
fn append_batch_writes_a_built_batch_and_refuses_an_empty_one() {
    let d = tempfile::tempdir().unwrap();
    let log = PartitionLog::open(d.path().join("t-0"), small_config()).unwrap();
    assert!(matches!(
        log.append_batch(BatchBuilder::new(Compression::None), Durability::Written),
        Err(Error::InvalidBatch { .. })
    ));
    assert_eq!(log.log_end_offset(), 0);
    for (round, codec) in Compression::ALL.into_iter().enumerate() {
        let mut b = BatchBuilder::new(codec).base_offset(999);
        for i in 0..10u64 {
            let v = value(round as u64 * 10 + i);
            b.push_parts(1_000 + i as i64, None, v.as_deref(), &[]);
        }
        let info = log.append_batch(b, Durability::Fsync).unwrap();
        assert_eq!(
            info.base_offset,
            round as i64 * 10,
            "the log assigns offsets"
        );
    }
    let n = Compression::ALL.len() as u64 * 10;
    assert_eq!(read_all(&log, 0), expected(0..n));
}

#[test]
fn read_record_returns_exactly_the_record_at_every_offset_for_every_codec() {
    for codec in Compression::ALL {
        let d = tempfile::tempdir().unwrap();
        let log = PartitionLog::open(d.path().join("t-0"), small_config()).unwrap();
        // Batches of 60 records of varied sizes: lz4 frames of several
        // blocks are entered part-way.
        append_n(&log, 0, 300, 60, codec);
        for offset in 0..300i64 {
            let got = log.read_record(offset).unwrap().unwrap();
            let want = log
                .read(offset, 1)
                .unwrap()
                .records()
                .next()
                .unwrap()
                .unwrap();
            assert_eq!(got, want, "{codec:?} at {offset}");
            assert_eq!(got.offset, offset);
        }
        assert_eq!(log.read_record(300).unwrap(), None, "at the high watermark");
        assert!(matches!(
            log.read_record(301),
            Err(Error::OffsetOutOfRange { .. })
        ));
    }
}

#[test]
fn an_lz4_point_read_decompresses_only_up_to_its_record_and_agrees_with_the_full_read() {
    // One lz4 batch of 2,000 records of 1 KiB (2 MiB: 32 blocks of 64 KiB).
    let mut b = BatchBuilder::new(Compression::Lz4).base_offset(0);
    let values: Vec<Vec<u8>> = (0..2000u32)
        .map(|i| {
            (0..1024u32)
                .map(|j| ((i * 7 + j * 13) % 251) as u8)
                .collect()
        })
        .collect();
    for (i, v) in values.iter().enumerate() {
        b.push_parts(i as i64, None, Some(v), &[]);
    }
    let batch = kafkalite::RecordBatch::decode(&b.build()).unwrap();
    for offset in [0i64, 1, 63, 64, 65, 999, 1000, 1998, 1999] {
        let r = batch.record_at(offset).unwrap().unwrap();
        assert_eq!(r.offset, offset);
        assert_eq!(r.timestamp, offset);
        assert_eq!(r.value.as_deref(), Some(&values[offset as usize][..]));
    }
    assert_eq!(batch.record_at(2000).unwrap(), None);
    assert_eq!(batch.record_at(-1).unwrap(), None);
    // Without the frame's end mark (the length and CRC fixed up), the full
    // decode fails while an early record is still found: the point read
    // stops at the block that completes its record.
    let mut cut = batch.as_bytes()[..batch.size() - 4].to_vec();
    let len = (cut.len() - 12) as i32;
    cut[8..12].copy_from_slice(&len.to_be_bytes());
    crate::decode_errors::restamp(&mut cut);
    let cut = kafkalite::RecordBatch::decode(&bytes::Bytes::from(cut)).unwrap();
    assert!(cut.to_records().is_err());
    let r = cut.record_at(5).unwrap().unwrap();
    assert_eq!(r.value.as_deref(), Some(&values[5][..]));
    // Even the last record completes in the last block, before the end
    // mark would be read.
    let r = cut.record_at(1999).unwrap().unwrap();
    assert_eq!(r.value.as_deref(), Some(&values[1999][..]));
}

/// The offset index holds (a batch's last offset, its position). A lookup
/// of an offset past an entry reads the batch the next entry points at when
/// that batch holds the offset, and scans from the entry when it does not
/// (a sparse index, whose next entry lies batches ahead). Either way every
/// offset is found in its own batch, in every segment, with the index dense
/// or sparse, before and after a reopen, mapped or read with pread.
#[test]
fn reads_at_every_offset_land_in_the_batch_holding_it_whatever_the_index_density() {
    for interval in [1, 200, 1000, 1 << 20] {
        for mode in [ReadMode::Mmap, ReadMode::Pread] {
            let d = tempfile::tempdir().unwrap();
            let dir = d.path().join("t-0");
            let mut c = small_config();
            c.settings.segment_bytes = 8192;
            c.settings.index_interval_bytes = interval;
            c.read_mode = mode;
            let log = PartitionLog::open(&dir, c.clone()).unwrap();
            let mut i = 0u64;
            let mut sizes = (1..=7u64).cycle();
            while i < 400 {
                let n = sizes.next().unwrap().min(400 - i);
                append_n(&log, i, n, n, Compression::None);
                i += n;
            }
            assert!(log.segment_count() > 2, "several segments");
            let mut log = Some(log);
            for reopened in [false, true] {
                let log = match log.take() {
                    Some(open) => open,
                    None => PartitionLog::open(&dir, c.clone()).unwrap(),
                };
                for o in 0..400u64 {
                    let r = log.read(o as i64, 1).unwrap();
                    let first = r.records().next().unwrap().unwrap();
                    assert_eq!(
                        (first.offset, first.value),
                        (o as i64, value(o)),
                        "interval {interval}, {mode:?}, reopened {reopened}"
                    );
                    let all: Vec<i64> = log
                        .read(o as i64, 1 << 20)
                        .unwrap()
                        .records()
                        .map(|x| x.unwrap().offset)
                        .collect();
                    assert_eq!(all.first(), Some(&(o as i64)));
                }
                assert_eq!(read_all(&log, 0), expected(0..400));
                log.close().unwrap();
            }
        }
    }
}
