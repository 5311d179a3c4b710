//! The LZ4 frame codec's tests: limits, checksums, block layouts, what is
//! refused, and decoding from a mapped block (the compressor's own, and the
//! decoder against `lz4_flex`, are in `compress_tests.rs`).
use super::frame::header_checksum;
use super::xxhash::xxh32;
use super::*;

/// One step of the tests' xorshift generator: the new state.
pub(super) fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// `n` bytes from the generator (the low byte of each step).
pub(super) fn random_bytes(state: &mut u64, n: usize) -> Vec<u8> {
    (0..n).map(|_| xorshift(state) as u8).collect()
}

/// Decodes with the limit every batch gets.
pub(super) fn decompress(input: &[u8]) -> Result<Vec<u8>> {
    super::decompress(input, crate::record::MAX_DECOMPRESSED_SIZE)
}

#[test]
fn a_frame_expanding_past_the_limit_is_refused() {
    let mut f = Vec::new();
    compress_into(&vec![7u8; 300_000], &mut f);
    assert!(matches!(
        super::decompress(&f, 200_000),
        Err(DecodeError::DecompressedTooLarge { codec: "lz4", .. })
    ));
    assert_eq!(super::decompress(&f, 300_000).unwrap().len(), 300_000);
}

#[test]
fn xxh32_matches_reference_values() {
    // Reference values from the xxHash specification's test suite.
    assert_eq!(xxh32(b"", 0), 0x02CC_5D05);
    assert_eq!(xxh32(b"a", 0), 0x550D_7456);
    assert_eq!(xxh32(b"abc", 0), 0x32D1_53FF);
    assert_eq!(
        xxh32(b"Nobody inspects the spammish repetition", 0),
        0xE229_3B2F
    );
}

#[test]
fn header_checksum_for_kafka_descriptor_is_0x82() {
    // Kafka's Java client writes 04 22 4D 18 60 40 82.
    assert_eq!(header_checksum(&[0x60, 0x40]), 0x82);
}

#[test]
fn round_trips_across_block_boundaries() {
    for len in [
        0usize,
        1,
        100,
        BLOCK_SIZE - 1,
        BLOCK_SIZE,
        BLOCK_SIZE + 1,
        3 * BLOCK_SIZE + 7,
    ] {
        let input: Vec<u8> = (0..len)
            .map(|i| (i % 251) as u8 ^ (i / 1000) as u8)
            .collect();
        let mut frame = Vec::new();
        compress_into(&input, &mut frame);
        assert_eq!(&frame[..7], &[0x04, 0x22, 0x4D, 0x18, 0x60, 0x40, 0x82]);
        assert_eq!(decompress(&frame).unwrap(), input, "len {len}");
    }
}

#[test]
fn decoding_from_a_mapped_block_gives_the_data_from_its_start() {
    let input: Vec<u8> = (0..300_000u32)
        .map(|i| ((i % 251) ^ (i / 7)) as u8)
        .collect();
    let mut frame = Vec::new();
    compress_into(&input, &mut frame);
    // One buffer for every decode, as a thread's scratch is: it starts
    // full of other bytes, and each decode leaves its own behind.
    let mut out = vec![0xAA; 400_000];
    let (n, blocks) = decompress_mapped(&frame, usize::MAX, &mut out).unwrap();
    assert_eq!(out[..n], input);
    assert_eq!(blocks.len(), 5);
    assert_eq!(blocks[0].frame_pos, 7);
    for b in blocks.iter().rev() {
        let from = decompress_from(
            &frame,
            b.frame_pos as usize,
            usize::MAX,
            |_| Some(usize::MAX),
            &mut out,
        );
        let (n, early) = from.unwrap();
        assert!(!early);
        assert_eq!(out[..n], input[b.out_start as usize..]);
    }
    // Stopping after the first block read: asked for no more than it.
    let b = blocks[2];
    let block_len = (blocks[3].out_start - b.out_start) as usize;
    let mut asked = 0;
    let (n, early) = decompress_from(
        &frame,
        b.frame_pos as usize,
        usize::MAX,
        |got| {
            asked += 1;
            (got.len() < block_len).then_some(block_len)
        },
        &mut out,
    )
    .unwrap();
    assert!(early);
    assert_eq!(
        out[..n],
        input[b.out_start as usize..b.out_start as usize + BLOCK_SIZE]
    );
    // Before any block, then once the block was whole.
    assert_eq!(asked, 2);
    // A position outside the frame's blocks is refused, not read.
    let all = |_: &[u8]| Some(usize::MAX);
    assert!(decompress_from(&frame, 3, usize::MAX, all, &mut out).is_err());
    assert!(decompress_from(&frame, frame.len() + 1, usize::MAX, all, &mut out).is_err());
}

#[test]
fn incompressible_data_is_stored() {
    let input = random_bytes(&mut 0x1234_5678, 5000);
    let mut frame = Vec::new();
    compress_into(&input, &mut frame);
    let word = u32::from_le_bytes(frame[7..11].try_into().unwrap());
    assert_ne!(word & STORED_BIT, 0);
    assert_eq!(decompress(&frame).unwrap(), input);
}

fn frame_with(
    flg: u8,
    bd: u8,
    content_size: Option<u64>,
    blocks: &[(&[u8], bool)],
    block_sum: bool,
    content_sum: bool,
) -> Vec<u8> {
    let mut f = MAGIC.to_le_bytes().to_vec();
    let mut desc = vec![flg, bd];
    if let Some(cs) = content_size {
        desc.extend_from_slice(&cs.to_le_bytes());
    }
    f.extend_from_slice(&desc);
    f.push(header_checksum(&desc));
    for (data, stored) in blocks {
        let word = data.len() as u32 | if *stored { STORED_BIT } else { 0 };
        f.extend_from_slice(&word.to_le_bytes());
        f.extend_from_slice(data);
        if block_sum {
            f.extend_from_slice(&xxh32(data, 0).to_le_bytes());
        }
    }
    f.extend_from_slice(&0u32.to_le_bytes());
    if content_sum {
        f.extend_from_slice(&xxh32(b"whatever", 0).to_le_bytes());
    }
    f
}

#[test]
fn accepts_content_size_block_and_content_checksums() {
    let f = frame_with(
        0x60 | 0x08 | 0x10 | 0x04,
        0x40,
        Some(5),
        &[(b"hello", true)],
        true,
        true,
    );
    assert_eq!(decompress(&f).unwrap(), b"hello");
}

#[test]
fn rejects_bad_block_checksum() {
    let mut f = frame_with(0x70, 0x40, None, &[(b"hello", true)], true, false);
    let n = f.len();
    f[n - 5] ^= 1; // inside the block checksum
    assert!(matches!(
        decompress(&f),
        Err(DecodeError::InvalidLz4 {
            reason: "block checksum mismatch"
        })
    ));
}

#[test]
fn rejects_dependent_blocks() {
    let f = frame_with(0x40, 0x40, None, &[(b"hello", true)], false, false);
    assert!(matches!(
        decompress(&f),
        Err(DecodeError::InvalidLz4 {
            reason: "dependent block stream is unsupported"
        })
    ));
}

#[test]
fn rejects_bad_header_checksum_and_block_size() {
    let mut f = frame_with(0x60, 0x40, None, &[(b"hello", true)], false, false);
    f[6] ^= 0xff;
    assert!(matches!(
        decompress(&f),
        Err(DecodeError::InvalidLz4 {
            reason: "header checksum mismatch"
        })
    ));
    let f = frame_with(0x60, 0x30, None, &[], false, false);
    assert!(matches!(
        decompress(&f),
        Err(DecodeError::InvalidLz4 {
            reason: "unsupported block size"
        })
    ));
    let f = frame_with(0x61, 0x40, None, &[], false, false);
    assert!(matches!(
        decompress(&f),
        Err(DecodeError::InvalidLz4 { .. })
    ));
}

#[test]
#[cfg_attr(miri, ignore = "a wall-clock bound; Miri runs far slower")]
fn many_tiny_blocks_in_a_4_mib_frame_decode_cheaply() {
    // 20,000 one-literal compressed blocks under BD 0x70 (4 MiB blocks):
    // sizing the output by the block maximum per block would zero
    // 80 GiB here; decoding must cost in proportion to the input.
    let block: &[u8] = &[0x10, b'x']; // token: 1 literal, no match
    let blocks = vec![(block, false); 20_000];
    let f = frame_with(0x60, 0x70, None, &blocks, false, false);
    let start = std::time::Instant::now();
    assert_eq!(decompress(&f).unwrap(), vec![b'x'; 20_000]);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

#[test]
fn rejects_oversized_block_and_truncation() {
    let big = vec![7u8; BLOCK_SIZE + 1];
    let f = frame_with(0x60, 0x40, None, &[(&big, true)], false, false);
    assert!(matches!(
        decompress(&f),
        Err(DecodeError::InvalidLz4 { .. })
    ));
    let f = frame_with(0x60, 0x40, None, &[(b"hello", true)], false, false);
    for cut in 0..f.len() {
        assert!(decompress(&f[..cut]).is_err(), "cut {cut}");
    }
    let mut g = f.clone();
    g.push(0);
    assert!(matches!(
        decompress(&g),
        Err(DecodeError::InvalidLz4 {
            reason: "trailing bytes after the frame"
        })
    ));
}

/// Text-like records (short literals and matches, long runs), as batches
/// of small records compress: `n` of them.
fn flow_lines(n: u32) -> Vec<u8> {
    let mut data = Vec::new();
    for i in 0..n {
        let line = format!(
            "{i:05} 10.0.{}.{} -> 192.168.1.{} tcp {} ",
            i % 7,
            i % 251,
            i % 13,
            "x".repeat((i % 40) as usize)
        );
        data.extend_from_slice(line.as_bytes());
    }
    data
}

#[test]
fn a_block_decode_paused_anywhere_resumes_to_the_same_bytes() {
    use super::decompress::{decompress_block, decompress_block_until, Resume, Step};
    let mut data = flow_lines(700);
    data.extend(std::iter::repeat_n(b'z', 3000));
    data.truncate(64 << 10);
    let block = lz4_flex::block::compress(&data);
    let mut whole = vec![0u8; data.len()];
    assert_eq!(decompress_block(&block, &mut whole), Ok(data.len()));
    assert_eq!(whole, data);
    // Pausing at each stop in turn, resumed from where the last paused.
    for step in [1usize, 7, 97, 4096, 70_000] {
        let mut out = vec![0xAAu8; data.len() + 64];
        let (mut at, mut pauses) = (Resume::default(), 0);
        let n = loop {
            let stop = at.op + step;
            match decompress_block_until(&block, &mut out, at, stop).unwrap() {
                Step::Done(n) => break n,
                Step::Paused(p) => {
                    assert!(p.op >= stop.min(data.len()), "{step}: {p:?}");
                    assert!(p.ip > at.ip && p.ip < block.len(), "{step}: {p:?}");
                    // What is final by a pause is the data's prefix.
                    assert_eq!(out[..p.op], data[..p.op], "{step}");
                    (at, pauses) = (p, pauses + 1);
                }
            }
        };
        assert_eq!(n, data.len(), "{step}");
        assert_eq!(out[..n], data, "{step}");
        if step < 4096 {
            assert!(pauses > 300, "{step}: {pauses} pauses");
        }
    }
    // Asking for no more than is decoded still moves on a sequence.
    let mut out = vec![0u8; data.len()];
    let mut at = Resume::default();
    let mut last = 0;
    while let Step::Paused(p) = decompress_block_until(&block, &mut out, at, 0).unwrap() {
        assert!(p.ip > at.ip);
        (at, last) = (p, p.op);
    }
    assert!(last > data.len() / 2, "{last}");
    // Malformed input: an error, not a panic, wherever it pauses.
    for n in 0..block.len().min(300) {
        let mut out = vec![0u8; data.len()];
        let mut at = Resume::default();
        while let Ok(Step::Paused(p)) = decompress_block_until(&block[..n], &mut out, at, 0) {
            at = p;
        }
    }
}

#[test]
fn a_point_read_decode_stops_where_it_is_asked_to_across_blocks() {
    let data = flow_lines(4000);
    assert!(data.len() > 2 * BLOCK_SIZE, "{}", data.len());
    let mut frame = Vec::new();
    compress_into(&data, &mut frame);
    let mut out = vec![0x55u8; 1 << 10];
    for want in [
        0usize,
        1,
        100,
        4096,
        BLOCK_SIZE - 1,
        BLOCK_SIZE,
        BLOCK_SIZE + 10,
        150_000,
    ] {
        let mut calls = Vec::new();
        let (n, early) = decompress_until(
            &frame,
            usize::MAX,
            |got| {
                calls.push(got.len());
                (got.len() < want).then_some(want)
            },
            &mut out,
        )
        .unwrap();
        assert!(early);
        assert!(n >= want, "{want}: {n}");
        assert_eq!(out[..n], data[..n], "{want}");
        // Asked first with nothing; then at the first sequence or block end
        // past what it asked for, within a sequence's length of it.
        assert_eq!(calls[0], 0);
        assert!(calls.len() <= 2 + want / BLOCK_SIZE, "{want}: {calls:?}");
        if want > 0 {
            assert!(n < want + 300 || n % BLOCK_SIZE == 0, "{want}: {n}");
        }
    }
    // Asking for the rest reads the whole frame.
    let (n, early) = decompress_until(&frame, usize::MAX, |_| Some(usize::MAX), &mut out).unwrap();
    assert!(!early);
    assert_eq!(out[..n], data);
    // The limit holds for a paused decode too.
    let small = decompress_until(&frame, 1000, |_| Some(5000), &mut out);
    assert!(small.is_err());
}

#[test]
fn a_frame_decoded_but_its_last_block_then_on_from_there_gives_the_whole() {
    let data = flow_lines(4000);
    let mut frame = Vec::new();
    compress_into(&data, &mut frame);
    let mut whole = Vec::new();
    let (n, all) = decompress_mapped(&frame, usize::MAX, &mut whole).unwrap();
    assert_eq!(whole[..n], data);
    assert!(all.len() >= 3, "{} blocks", all.len());
    let mut out = vec![0x33u8; 100];
    let (kept, starts) = decompress_mapped_but_last(&frame, usize::MAX, &mut out).unwrap();
    // Every block's start, the last's too; its bytes not decoded.
    assert_eq!(starts, all);
    let last = *starts.last().unwrap();
    assert_eq!(kept, last.out_start as usize);
    assert_eq!(out[..kept], data[..kept]);
    // On from the last block, asked for a few bytes of it, then for all.
    let mut asked = Vec::new();
    let (n, early) = decompress_on(
        &frame,
        last.frame_pos as usize,
        kept,
        usize::MAX,
        |got| {
            asked.push(got.len());
            (got.len() < kept + 10).then_some(kept + 10)
        },
        &mut out,
    )
    .unwrap();
    assert!(early);
    assert_eq!(asked[0], kept, "first asked with the kept bytes");
    assert!(n >= kept + 10 && n < data.len(), "{n}");
    assert_eq!(out[..n], data[..n]);
    let all_of_it = |_: &[u8]| Some(usize::MAX);
    let on = decompress_on(
        &frame,
        last.frame_pos as usize,
        kept,
        usize::MAX,
        all_of_it,
        &mut out,
    );
    assert_eq!(on.unwrap(), (data.len(), false));
    assert!(out[..data.len()] == data[..]);
    // Kept bytes past the limit, or past what `out` holds, are refused.
    let mut short = vec![0u8; 10];
    assert!(decompress_on(
        &frame,
        last.frame_pos as usize,
        11,
        usize::MAX,
        all_of_it,
        &mut short
    )
    .is_err());
    assert!(decompress_on(
        &frame,
        last.frame_pos as usize,
        kept,
        kept - 1,
        all_of_it,
        &mut out
    )
    .is_err());
    // A frame of one block leaves that block: nothing decoded.
    let mut one = Vec::new();
    compress_into(&data[..1000], &mut one);
    let (kept, starts) = decompress_mapped_but_last(&one, usize::MAX, &mut out).unwrap();
    assert_eq!((kept, starts.len()), (0, 1));
}
