//! The LZ4 compressor's tests: its blocks keep the format's rules and
//! decode to their input (by our decoder and `lz4_flex`'s), its frames fit
//! `frame_bound`, and our decoder agrees with `lz4_flex` on whole, cut and
//! damaged blocks.
use super::tests::{decompress, random_bytes, xorshift};
use super::*;

/// Inputs that reach every branch of the compressor: too short to match,
/// incompressible, one long run, long literal runs between matches, matches
/// and literals past the 15 of a token (and past 255 + 15), matches at the
/// end's limits.
fn compressor_inputs() -> Vec<Vec<u8>> {
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = |n: usize| random_bytes(&mut rng, n);
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
            let r = xorshift(&mut rng);
            let at = (r % bad.len() as u64) as usize;
            bad[at] = (r >> 32) as u8;
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
        let random = random_bytes(&mut rng, len);
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
