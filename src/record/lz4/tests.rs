//! The LZ4 frame codec's tests: limits, checksums, block layouts, what is
//! refused, and decoding from a mapped block.
use super::frame::header_checksum;
use super::xxhash::xxh32;
use super::*;

/// Decodes with the limit every batch gets.
fn decompress(input: &[u8]) -> Result<Vec<u8>> {
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
    let (out, blocks) = decompress_mapped(&frame, usize::MAX).unwrap();
    assert_eq!(out, input);
    assert_eq!(blocks.len(), 5);
    assert_eq!(blocks[0].frame_pos, 7);
    for b in &blocks {
        let from = decompress_from(&frame, b.frame_pos as usize, usize::MAX, None, |_| false);
        let (rest, early) = from.unwrap();
        assert!(!early);
        assert_eq!(rest, input[b.out_start as usize..]);
    }
    // Stopping after the first block read.
    let b = blocks[2];
    let (part, early) =
        decompress_from(&frame, b.frame_pos as usize, usize::MAX, None, |_| true).unwrap();
    assert!(early);
    assert_eq!(
        part,
        input[b.out_start as usize..b.out_start as usize + BLOCK_SIZE]
    );
    // A position outside the frame's blocks is refused, not read.
    assert!(decompress_from(&frame, 3, usize::MAX, None, |_| false).is_err());
    assert!(decompress_from(&frame, frame.len() + 1, usize::MAX, None, |_| false).is_err());
}

#[test]
fn incompressible_data_is_stored() {
    let mut x: u64 = 0x1234_5678;
    let input: Vec<u8> = (0..5000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
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

#[test]
fn a_block_cut_where_prefix_cut_says_decodes_to_the_blocks_prefix() {
    // Text-like records (short literals and matches, long runs), as
    // batches of small records compress.
    let mut data = Vec::new();
    for i in 0..700u32 {
        let line = format!(
            "{i:05} 10.0.{}.{} -> 192.168.1.{} tcp {} ",
            i % 7,
            i % 251,
            i % 13,
            "x".repeat((i % 40) as usize)
        );
        data.extend_from_slice(line.as_bytes());
    }
    data.extend(std::iter::repeat_n(b'z', 3000));
    data.truncate(64 << 10);
    let block = lz4_flex::block::compress(&data);
    let mut out = vec![0u8; data.len()];
    let mut cuts = 0;
    for want in (0..data.len() + 100).step_by(97) {
        match prefix_cut(&block, want) {
            Some(cut) => {
                assert!(cut < block.len(), "{want}");
                let n = lz4_flex::block::decompress_into(&block[..cut], &mut out).unwrap();
                assert!(n >= want, "{want}: {n}");
                assert_eq!(out[..n], data[..n], "{want}");
                cuts += 1;
            }
            // Only where the last sequence is the one that reaches `want`.
            None => assert!(want > data.len() / 2, "{want}"),
        }
    }
    assert!(cuts > 300, "{cuts}");
    // Malformed input: no cut rather than a panic.
    for n in 0..block.len().min(200) {
        let _ = prefix_cut(&block[..n], 1 << 20);
    }
    assert_eq!(prefix_cut(&[0xf0], 1), None);
    assert_eq!(prefix_cut(&[0xf0, 0xff], 1), None);
}

#[test]
fn each_block_cut_decodes_at_least_its_step_of_the_block() {
    let mut data = Vec::new();
    for i in 0..2000u32 {
        data.extend_from_slice(
            format!("{i:06} flow 10.1.{}.{} bytes {} ", i % 9, i % 200, i * 37).as_bytes(),
        );
    }
    let mut frame = Vec::new();
    compress_into(&data, &mut frame);
    let (out, blocks) = decompress_mapped(&frame, usize::MAX).unwrap();
    assert_eq!(out, data);
    assert!(blocks.len() >= 2);
    let mut decoded = vec![0u8; 64 << 10];
    let mut seen = 0;
    for b in &blocks {
        let cuts = block_cuts(&frame, *b);
        let at = b.frame_pos as usize;
        let size =
            (u32::from_le_bytes(frame[at..at + 4].try_into().unwrap()) & !STORED_BIT) as usize;
        let block = &frame[at + 4..at + 4 + size];
        let start = b.out_start as usize;
        for (k, &cut) in cuts.iter().enumerate() {
            if cut == 0 {
                continue;
            }
            let n = lz4_flex::block::decompress_into(&block[..cut as usize], &mut decoded).unwrap();
            assert!(n >= (k + 1) * CUT_STEP, "cut {k}: {n}");
            assert_eq!(decoded[..n], data[start..start + n]);
            seen += 1;
        }
    }
    assert!(seen >= 15, "{seen}");
    // A position that is not a block's size word gives no cuts, not a panic.
    assert_eq!(
        block_cuts(
            &frame,
            BlockStart {
                frame_pos: u32::MAX,
                out_start: 0
            }
        ),
        [0; CUTS]
    );
}

/// Inputs that reach every branch of the compressor: too short to match,
/// incompressible, one long run, long literal runs between matches, matches
/// and literals past the 15 of a token (and past 255 + 15), matches at the
/// end's limits.
fn compressor_inputs() -> Vec<Vec<u8>> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect()
    };
    let mut inputs: Vec<Vec<u8>> = (0..=40).map(|n| vec![b'a'; n]).collect();
    inputs.extend((0..=40).map(&mut random));
    inputs.push(random(BLOCK_SIZE));
    inputs.push(vec![0; BLOCK_SIZE]);
    inputs.push(vec![0; BLOCK_SIZE - 1]);
    let text: Vec<u8> = (0..3000)
        .flat_map(|i| {
            format!(
                "{{\"seq\":{i},\"host\":\"web-{}\",\"verdict\":\"allow\"}}\n",
                i % 7
            )
            .into_bytes()
        })
        .take(BLOCK_SIZE)
        .collect();
    inputs.push(text);
    let mut mixed = Vec::new();
    for n in [1, 14, 15, 16, 254, 255, 269, 270, 271, 600] {
        mixed.extend(random(n));
        mixed.extend(vec![b'z'; n + 4]);
    }
    inputs.push(mixed);
    // A repeat that ends exactly where the last match may start or end.
    for tail in 0..14 {
        let mut v = b"0123456789abcdef".repeat(4);
        v.extend(random(tail));
        inputs.push(v);
    }
    inputs
}

#[test]
fn compressed_blocks_keep_the_formats_rules_and_decode_to_their_input() {
    let mut table = compress::Table::new();
    for input in compressor_inputs() {
        let mut dst = vec![0u8; compress::max_compressed(input.len())];
        let n = compress::compress_block(&input, &mut table, &mut dst);
        let block = &dst[..n];
        // An independent decoder, and the format's rules for a block's end.
        let decoded = lz4_flex::block::decompress(block, input.len()).unwrap();
        assert_eq!(decoded, input, "len {}", input.len());
        assert_eq!(block_rules(block), Ok(input.len()), "len {}", input.len());
    }
}

#[test]
fn a_frame_of_text_is_smaller_than_lz4_flexs_and_every_block_matches() {
    let text: Vec<u8> = (0..40_000)
        .flat_map(|i| {
            format!(
                "ts={} src=10.0.{}.{} dst=172.16.{}.{} port={} verdict={}\n",
                1_700_000_000_000u64 + i * 7,
                i % 13,
                i % 251,
                i % 3,
                i % 17,
                [443, 53, 22, 5432][i as usize % 4],
                ["allow", "deny"][i as usize % 2]
            )
            .into_bytes()
        })
        .collect();
    let mut frame = Vec::new();
    compress_into(&text, &mut frame);
    assert_eq!(decompress(&frame).unwrap(), text);
    assert_eq!(frame_block_rules(&frame), Ok(()));
    let flex: usize = text
        .chunks(BLOCK_SIZE)
        .map(|c| lz4_flex::block::compress(c).len() + 4)
        .sum();
    assert!(
        frame.len() < flex,
        "ours {} against lz4_flex's {flex}",
        frame.len()
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    #[test]
    fn arbitrary_input_round_trips_through_both_decoders(
        parts in proptest::collection::vec(
            (proptest::collection::vec(0u8..4, 0..300), 0usize..2000, 1usize..300),
            0..40,
        )
    ) {
        // Pieces of a small alphabet, each followed by a copy of something
        // earlier: matches at every distance and length.
        let mut input: Vec<u8> = Vec::new();
        for (piece, back, len) in parts {
            input.extend(piece);
            let from = input.len().saturating_sub(back);
            for k in 0..len.min(input.len() - from) {
                input.push(input[from + k]);
            }
        }
        input.truncate(3 * BLOCK_SIZE);
        let mut frame = Vec::new();
        compress_into(&input, &mut frame);
        proptest::prop_assert_eq!(&decompress(&frame).unwrap(), &input);
        let mut table = compress::Table::new();
        for c in input.chunks(BLOCK_SIZE) {
            let mut dst = vec![0u8; compress::max_compressed(c.len())];
            let n = compress::compress_block(c, &mut table, &mut dst);
            proptest::prop_assert_eq!(&lz4_flex::block::decompress(&dst[..n], c.len()).unwrap(), c);
        }
    }
}

/// Blocks from both compressors (ours and `lz4_flex`'s, which choose
/// different sequences), their prefixes cut anywhere, and every block with
/// bytes changed: the decoder agrees with `lz4_flex`'s, byte for byte and
/// on what it refuses, and never panics.
#[test]
fn the_decoder_agrees_with_lz4_flex_on_whole_cut_and_damaged_blocks() {
    let mut table = compress::Table::new();
    let mut blocks = Vec::new();
    for input in compressor_inputs() {
        let mut dst = vec![0u8; compress::max_compressed(input.len())];
        let n = compress::compress_block(&input, &mut table, &mut dst);
        blocks.push((dst[..n].to_vec(), input.len()));
        blocks.push((lz4_flex::block::compress(&input), input.len()));
    }
    let check = |block: &[u8], room: usize| {
        if let Some(e) = decoders_differ(block, room) {
            panic!("{e}");
        }
    };
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for (block, len) in &blocks {
        // Exact room, slack, and too little.
        for room in [*len, len + 64, len.saturating_sub(1)] {
            check(block, room);
        }
        for cut in 0..block.len().min(300) {
            check(&block[..cut], *len + 32);
        }
        for _ in 0..200 {
            let mut bad = block.clone();
            if bad.is_empty() {
                break;
            }
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let at = (rng % bad.len() as u64) as usize;
            bad[at] = (rng >> 32) as u8;
            check(&bad, *len + 32);
        }
    }
}

/// A frame never needs more room than `frame_bound` says: an output buffer
/// with that much never grows, whether the input compresses or is stored
/// (random bytes), in one block or several.
#[test]
fn a_frame_fits_the_room_frame_bound_gives() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    for len in [0usize, 1, 15, 300, 4096, 16_384, 65_536, 65_537, 200_000] {
        let random: Vec<u8> = (0..len)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        let text: Vec<u8> = b"kafkalite ".iter().copied().cycle().take(len).collect();
        for input in [random, text] {
            let mut out = Vec::with_capacity(frame_bound(len));
            let room = out.capacity();
            compress_into(&input, &mut out);
            assert_eq!(out.capacity(), room, "len {len}: the output grew");
            assert!(out.len() <= frame_bound(len));
            assert_eq!(decompress(&out).unwrap(), input);
        }
    }
}
