//! Replays the fuzz corpus and the fuzzer's regressions through the same
//! harness the `decode_batch` fuzz target runs, on stable, without libFuzzer.

use kafkalite::record::fuzz_decode_batch;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
    crate::decode_errors::restamp(&mut data);
    let batch = kafkalite::RecordBatch::decode(&bytes::Bytes::from(data)).unwrap();
    assert_eq!(
        batch.header().compression().unwrap(),
        kafkalite::Compression::Lz4
    );
    // Decompression succeeds; the 2,000 'x' bytes are then not a valid record.
    let mut records = batch.records().unwrap();
    assert!(records.next().unwrap().is_err());
}

#[test]
fn the_harness_restamps_magic_and_crc() {
    // A batch with a wrong magic and a zeroed CRC still decodes through the
    // harness: it fixes both so fuzz inputs reach the record decoder.
    let mut b = kafkalite::BatchBuilder::new(kafkalite::Compression::None);
    b.push(&kafkalite::Record::new("v"));
    b.push(&kafkalite::Record::new("w"));
    let mut bytes = b.build().to_vec();
    bytes[16] = 7;
    bytes[17..21].copy_from_slice(&[0; 4]);
    assert_eq!(fuzz_decode_batch(&bytes), Some(2));
    // Shorter than a header: nothing is fixed, the decode fails cleanly.
    assert_eq!(fuzz_decode_batch(&bytes[..60]), None);
}
