//! The decode-batch fuzz harness, shared by `fuzz/fuzz_targets/decode_batch.rs`
//! and the corpus replay test below so both run exactly the same code.
//!
//! Test code, not API: compiled only for the crate's own tests and under
//! `--cfg fuzzing` (which cargo-fuzz passes), never in users' builds.

use super::header::{
    be, ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE, LOG_OVERHEAD, RECORDS_COUNT_OFFSET,
};
use super::RecordBatch;
use bytes::Bytes;

/// Offset of the magic byte in a batch header.
const MAGIC_OFFSET: usize = 16;

/// Treats `data` as one record batch and decodes all of its records.
///
/// When `data` holds at least a batch header (61 bytes), the magic byte is
/// set to 2 and the CRC-32C is recomputed over `[21, end of batch)` (the end
/// clamped to the input), so mutated inputs reach the record decoder instead
/// of stopping at the checksum.
///
/// Returns the number of records decoded when the whole batch decoded
/// cleanly, `None` when decoding reported an error. It must never panic; it
/// panics only if a decoded batch breaks an invariant (a clean decode whose
/// record count differs from the header's).
#[doc(hidden)]
pub fn fuzz_decode_batch(data: &[u8]) -> Option<usize> {
    let mut buf = data.to_vec();
    if buf.len() >= HEADER_SIZE {
        if let Some(magic) = buf.get_mut(MAGIC_OFFSET) {
            *magic = 2;
        }
        let end = (i64::from(i32::from_be_bytes(be(&buf, 8))) + LOG_OVERHEAD as i64)
            .clamp(ATTRIBUTES_OFFSET as i64, buf.len() as i64) as usize;
        let crc = super::header::crc32c(buf.get(ATTRIBUTES_OFFSET..end).unwrap_or_default());
        if let Some(dst) = buf.get_mut(CRC_OFFSET..ATTRIBUTES_OFFSET) {
            dst.copy_from_slice(&crc.to_be_bytes());
        }
    }
    // The append path's fast record check and the decoder's walk agree,
    // and so do the short-form and the full record parse.
    if let Some(records) = buf.get(HEADER_SIZE..) {
        assert!(
            super::parse::short_parse_agrees(records),
            "short-form and full record parse disagree"
        );
        let count = i32::from_be_bytes(be(&buf, RECORDS_COUNT_OFFSET));
        assert_eq!(
            super::validation::records_well_formed(records, count),
            super::validation::walk_records(records, count).is_ok(),
            "fast record check and decoder disagree"
        );
    }
    let bytes = Bytes::from(buf);
    let batch = RecordBatch::decode(&bytes).ok()?;
    let header = batch.header();
    let _ = (
        header.compression(),
        header.timestamp_type(),
        header.is_transactional(),
        header.is_control(),
        header.next_offset(),
    );
    // The lazy iterator and the collecting decoder must agree.
    let mut lazy = 0usize;
    let mut lazy_ok = true;
    for record in batch.records().ok()? {
        match record {
            Ok(_) => lazy += 1,
            Err(_) => {
                lazy_ok = false;
                break;
            }
        }
    }
    // The borrowed views and the owned records agree, record by record.
    let mut owned = batch.records().ok()?;
    let mut views = batch.records().ok()?;
    loop {
        match (owned.next(), views.next_view()) {
            (None, None) => break,
            (Some(Ok(o)), Some(Ok(v))) => assert_eq!(o, v.to_log_record(), "view differs"),
            (Some(Err(_)), Some(Err(_))) => break,
            (o, v) => panic!("record and view disagree: {o:?} / {v:?}"),
        }
    }
    let records = batch.to_records();
    assert_eq!(lazy_ok, records.is_ok(), "iterator and to_records disagree");
    let records = records.ok()?;
    assert_eq!(records.len(), lazy);
    // A point read finds what the full decode holds at that offset (in a
    // batch whose offsets increase within the header's range, as every
    // appended batch's do; record_at trusts the header's range).
    let increasing = records.windows(2).all(|w| w[0].offset < w[1].offset)
        && records
            .iter()
            .all(|r| r.offset >= header.base_offset && r.offset <= header.last_offset());
    for r in records.iter().step_by(7).chain(records.last()) {
        let got = batch.record_at(r.offset);
        // Whatever the batch, a record found is the one asked for.
        if let Ok(Some(g)) = &got {
            assert_eq!(g.offset, r.offset, "record_at returned another offset");
        }
        if increasing {
            assert_eq!(
                got.ok().flatten().as_ref(),
                Some(r),
                "record_at at {}",
                r.offset
            );
        }
        // The first point read (which builds an lz4 batch's block map from
        // its own decode) finds the same, and so do reads through that map.
        let Ok((first, map)) = batch.record_at_building(r.offset) else {
            assert!(!increasing, "record_at_building failed at {}", r.offset);
            continue;
        };
        if let Some(g) = &first {
            assert_eq!(g.offset, r.offset, "record_at_building: another offset");
        }
        let mapped = map.map(|m| batch.clone().with_positions(std::sync::Arc::new(m)));
        let through_map = mapped.map(|b| b.record_at(r.offset).ok().flatten());
        if increasing {
            assert_eq!(
                first.as_ref(),
                Some(r),
                "record_at_building at {}",
                r.offset
            );
            if let Some(g) = through_map {
                assert_eq!(g.as_ref(), Some(r), "through the map at {}", r.offset);
            }
        }
    }
    assert_eq!(
        i64::try_from(records.len()).ok(),
        Some(i64::from(batch.records_count())),
        "clean decode with a record count different from the header's"
    );
    Some(records.len())
}

/// The `lz4_round_trip` fuzz target: decodes `data` as one LZ4 block with
/// this crate's decoder and `lz4_flex`'s, which must agree; compresses
/// `data`, and the input [`expand`] makes of it (runs of repeats, which raw
/// fuzz input seldom holds), as lz4 frames, each of which must decode to
/// its input with every compressed block keeping the LZ4 block format's
/// rules. Panics otherwise.
/// Returns the two frames' lengths.
#[doc(hidden)]
pub fn fuzz_lz4_round_trip(data: &[u8]) -> (usize, usize) {
    let one = |input: &[u8]| -> usize {
        let mut frame = Vec::new();
        super::lz4::compress_into(input, &mut frame);
        let back = super::lz4::decompress(&frame, input.len().max(1));
        assert_eq!(
            back.as_deref().ok(),
            Some(input),
            "lz4 round trip of {} bytes",
            input.len()
        );
        if let Err(e) = super::lz4::frame_block_rules(&frame) {
            panic!("lz4 frame of {} bytes: {e}", input.len());
        }
        frame.len()
    };
    // The input itself as a block: both decoders give the same verdict.
    for room in [data.len() * 4, 1 << 16] {
        if let Some(e) = super::lz4::decoders_differ(data, room) {
            panic!("{e}");
        }
    }
    (one(data), one(&expand(data)))
}

/// Reads `data` as steps: a byte below 0x80 takes that many + 1 following
/// bytes as literals; one above copies (its low 7 bits × 8 + 4) bytes from
/// (the next byte × 4 + 1) bytes back, byte by byte (so a short distance
/// repeats a run). At most 256 KiB come out.
fn expand(data: &[u8]) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    let mut i = 0;
    while i < data.len() && out.len() < 256 << 10 {
        let step = usize::from(data[i]);
        i += 1;
        if step < 0x80 {
            let end = (i + step + 1).min(data.len());
            out.extend_from_slice(&data[i..end]);
            i = end;
        } else {
            let back = usize::from(data.get(i).copied().unwrap_or(0)) * 4 + 1;
            i += 1;
            let from = out.len().saturating_sub(back);
            for k in 0..(step & 0x7f) * 8 + 4 {
                if let Some(&b) = out.get(from + k) {
                    out.push(b);
                }
            }
        }
    }
    out
}

/// Replays the fuzz corpus and the fuzzer's regressions through the harness
/// the `decode_batch` fuzz target runs, on stable, without libFuzzer.
#[cfg(test)]
mod tests {
    use super::*;
    use std::path::{Path, PathBuf};
    use std::time::{Duration, Instant};

    /// Stores a fresh CRC-32C (an independent implementation's) over
    /// `[21, end)` at `[17, 21)`.
    fn restamp(batch: &mut [u8]) {
        let crc = crc32c::crc32c(&batch[ATTRIBUTES_OFFSET..]);
        batch[CRC_OFFSET..ATTRIBUTES_OFFSET].copy_from_slice(&crc.to_be_bytes());
    }

    fn files(dir: &str) -> Vec<PathBuf> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        out.sort();
        out
    }

    #[test]
    fn every_corpus_input_decodes_or_fails_without_panicking() {
        let corpus = files("fuzz/corpus/decode_batch");
        assert!(corpus.len() >= 10, "corpus has only {} files", corpus.len());
        for path in &corpus {
            let data = std::fs::read(path).unwrap();
            let result = std::panic::catch_unwind(|| fuzz_decode_batch(&data));
            assert!(result.is_ok(), "{} panicked", path.display());
        }
    }

    #[test]
    fn every_lz4_corpus_input_round_trips() {
        let corpus = files("fuzz/corpus/lz4_round_trip");
        assert!(corpus.len() >= 4, "corpus has only {} files", corpus.len());
        for path in &corpus {
            let data = std::fs::read(path).unwrap();
            let (raw, expanded) = fuzz_lz4_round_trip(&data);
            // Every frame holds at least its header and end mark.
            assert!(raw >= 11 && expanded >= 11, "{}", path.display());
        }
    }

    #[test]
    fn hand_made_seeds_are_valid_batches() {
        // The named seeds (vector segments and generated batches) must get all
        // the way through the decoder, or the fuzzer starts from nothing.
        let seeds: Vec<PathBuf> = files("fuzz/corpus/decode_batch")
            .into_iter()
            .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("log" | "bin")))
            .collect();
        assert!(seeds.len() >= 10, "only {} named seeds", seeds.len());
        for path in &seeds {
            let data = std::fs::read(path).unwrap();
            let n = fuzz_decode_batch(&data);
            assert!(n.is_some(), "{} does not decode", path.display());
        }
    }

    #[test]
    fn every_regression_input_returns_promptly_without_panicking() {
        let mut n = 0;
        for path in files("fuzz/regressions/decode_batch") {
            if path.file_name().and_then(|n| n.to_str()) == Some("README.md") {
                continue;
            }
            let data = std::fs::read(&path).unwrap();
            let start = Instant::now();
            let result = std::panic::catch_unwind(|| fuzz_decode_batch(&data));
            assert!(result.is_ok(), "{} panicked", path.display());
            // Generous: these take milliseconds; the bugs they caught took minutes.
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{} took {:?}",
                path.display(),
                start.elapsed()
            );
            n += 1;
        }
        assert!(n >= 1, "no regression inputs found");
    }

    #[test]
    fn the_many_tiny_lz4_blocks_regression_reaches_the_lz4_decoder() {
        // Guards the regression input itself: its frame (FLG 0x60, BD 0x70, 2,000
        // one-literal blocks) must be valid, so replaying it really exercises
        // per-block decompression rather than failing early.
        let mut data = std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fuzz/regressions/decode_batch/lz4-many-tiny-blocks-4mib-frame.bin"),
        )
        .unwrap();
        restamp(&mut data);
        let batch = RecordBatch::decode(&Bytes::from(data)).unwrap();
        assert_eq!(
            batch.header().compression().unwrap(),
            crate::record::Compression::Lz4
        );
        // Decompression succeeds; the 2,000 'x' bytes are then not a valid record.
        let mut records = batch.records().unwrap();
        assert!(records.next().unwrap().is_err());
    }

    #[test]
    fn the_harness_restamps_magic_and_crc() {
        // A batch with a wrong magic and a zeroed CRC still decodes through the
        // harness: it fixes both so fuzz inputs reach the record decoder.
        let mut b = crate::record::BatchBuilder::new(crate::record::Compression::None);
        b.push(&crate::record::Record::new("v"));
        b.push(&crate::record::Record::new("w"));
        let mut bytes = b.build().to_vec();
        bytes[16] = 7;
        bytes[17..21].copy_from_slice(&[0; 4]);
        assert_eq!(fuzz_decode_batch(&bytes), Some(2));
        // Shorter than a header: nothing is fixed, the decode fails cleanly.
        assert_eq!(fuzz_decode_batch(&bytes[..60]), None);
    }
}
