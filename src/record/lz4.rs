//! LZ4 frames as Kafka writes and reads them inside a record batch
//! (`Lz4BlockOutputStream` / `Lz4BlockInputStream`).
//!
//! Written: magic `0x184D2204`, FLG `0x60` (version 01, independent blocks,
//! no checksums, no content size), BD `0x40` (64 KiB blocks), the
//! spec-correct header checksum, blocks as u32-LE size (high bit = stored
//! uncompressed) + data, and the end mark `0`. No content checksum.
//!
//! Read: what Kafka accepts. Dependent (linked) blocks, reserved bits, a
//! dictionary id and block sizes other than 4–7 are refused; a content size is
//! skipped; block checksums are verified when flagged; a content checksum is
//! read but, like Kafka, not verified (the batch CRC already covers it).
//!
//! LZ4 fields are little-endian by the frame specification.
#![allow(
    clippy::little_endian_bytes,
    reason = "the LZ4 frame format is little-endian"
)]

use super::error::{DecodeError, Result};

const MAGIC: u32 = 0x184D_2204;
const FLG_WRITE: u8 = 0x60;
const BD_64K: u8 = 0x40;
const BLOCK_SIZE: usize = 64 * 1024;
const STORED_BIT: u32 = 0x8000_0000;

/// Appends `input` as one Kafka-style LZ4 frame to `out`.
pub(crate) fn compress_into(input: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.push(FLG_WRITE);
    out.push(BD_64K);
    out.push(header_checksum(&[FLG_WRITE, BD_64K]));
    for chunk in input.chunks(BLOCK_SIZE) {
        let size_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let bound = lz4_flex::block::get_maximum_output_size(chunk.len());
        let data_at = out.len();
        out.resize(data_at + bound, 0);
        let compressed = out
            .get_mut(data_at..)
            .and_then(|dst| lz4_flex::block::compress_into(chunk, dst).ok());
        let header = match compressed {
            Some(n) if n < chunk.len() => {
                out.truncate(data_at + n);
                n as u32
            }
            _ => {
                out.truncate(data_at);
                out.extend_from_slice(chunk);
                chunk.len() as u32 | STORED_BIT
            }
        };
        if let Some(slot) = out.get_mut(size_at..size_at + 4) {
            slot.copy_from_slice(&header.to_le_bytes());
        }
    }
    out.extend_from_slice(&0u32.to_le_bytes());
}

/// Decodes one LZ4 frame, returning the uncompressed bytes, at most `limit`
/// of them. Bytes after the end mark are refused: a batch holds exactly one
/// frame.
pub(crate) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>> {
    decompress_until(input, limit, |_| false).map(|(out, _)| out)
}

/// As [`decompress`], but stops after a block once `enough` says the bytes
/// so far suffice (then returns them and `true`, without reading or
/// checking the rest of the frame); `false` when the whole frame was read.
pub(crate) fn decompress_until(
    input: &[u8],
    limit: usize,
    enough: impl FnMut(&[u8]) -> bool,
) -> Result<(Vec<u8>, bool)> {
    let frame = Frame::parse(input)?;
    frame.blocks(input, frame.blocks_start, limit, enough, |_, _| {})
}

/// Where one block of a frame starts: its size word's position in the
/// frame, and the position of its first byte in the uncompressed data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockStart {
    pub(crate) frame_pos: u32,
    pub(crate) out_start: u32,
}

/// Decodes a whole frame as [`decompress`] does, also returning where each
/// of its blocks starts (for [`decompress_from`] later).
pub(crate) fn decompress_mapped(input: &[u8], limit: usize) -> Result<(Vec<u8>, Vec<BlockStart>)> {
    let frame = Frame::parse(input)?;
    let mut starts = Vec::new();
    let mut fits = true;
    let (out, _) = frame.blocks(
        input,
        frame.blocks_start,
        limit,
        |_| false,
        |frame_pos, out_start| match (u32::try_from(frame_pos), u32::try_from(out_start)) {
            (Ok(frame_pos), Ok(out_start)) => starts.push(BlockStart {
                frame_pos,
                out_start,
            }),
            _ => fits = false,
        },
    )?;
    if !fits {
        starts.clear();
    }
    Ok((out, starts))
}

/// As [`decompress_until`], but starting at the block whose size word is at
/// `frame_pos` (a [`BlockStart`] of the same frame): the frame's blocks are
/// independent, so the bytes returned are the uncompressed data from that
/// block's `out_start` on.
pub(crate) fn decompress_from(
    input: &[u8],
    frame_pos: usize,
    limit: usize,
    enough: impl FnMut(&[u8]) -> bool,
) -> Result<(Vec<u8>, bool)> {
    let frame = Frame::parse(input)?;
    if frame_pos < frame.blocks_start || frame_pos > input.len() {
        return Err(DecodeError::InvalidLz4 {
            reason: "block position outside the frame",
        });
    }
    frame.blocks(input, frame_pos, limit, enough, |_, _| {})
}

/// An LZ4 frame's header, as far as reading its blocks needs it.
struct Frame {
    block_max: usize,
    has_block_checksum: bool,
    has_content_checksum: bool,
    /// Where the first block's size word is.
    blocks_start: usize,
}

impl Frame {
    fn parse(input: &[u8]) -> Result<Frame> {
        let bad = |reason| DecodeError::InvalidLz4 { reason };
        let mut r = Cursor { buf: input, pos: 0 };
        if r.u32_le()? != MAGIC {
            return Err(bad("bad magic"));
        }
        let flg = r.u8()?;
        let bd = r.u8()?;
        if flg >> 6 != 0b01 {
            return Err(bad("unsupported frame version"));
        }
        if flg & 0x20 == 0 {
            return Err(bad("dependent block stream is unsupported"));
        }
        if flg & 0x02 != 0 {
            return Err(bad("reserved flag bit set"));
        }
        if flg & 0x01 != 0 {
            return Err(bad("dictionary id is unsupported"));
        }
        if bd & 0x8f != 0 {
            return Err(bad("reserved block descriptor bits set"));
        }
        let block_max = match (bd >> 4) & 0x07 {
            4 => 64 << 10,
            5 => 256 << 10,
            6 => 1 << 20,
            7 => 4 << 20,
            _ => return Err(bad("unsupported block size")),
        };
        let has_content_size = flg & 0x08 != 0;
        let header_end = if has_content_size { 14 } else { 6 };
        let described = input
            .get(4..header_end)
            .ok_or_else(|| DecodeError::Truncated {
                what: "lz4 frame header",
                needed: header_end + 1,
                available: input.len(),
            })?;
        if has_content_size {
            r.take(8)?;
        }
        if r.u8()? != header_checksum(described) {
            return Err(bad("header checksum mismatch"));
        }
        Ok(Frame {
            block_max,
            has_block_checksum: flg & 0x10 != 0,
            has_content_checksum: flg & 0x04 != 0,
            blocks_start: r.pos,
        })
    }

    /// Decodes the blocks from the size word at `from` to the end mark (or
    /// until `enough`), telling `at_block` where each block starts.
    fn blocks(
        &self,
        input: &[u8],
        from: usize,
        limit: usize,
        mut enough: impl FnMut(&[u8]) -> bool,
        mut at_block: impl FnMut(usize, usize),
    ) -> Result<(Vec<u8>, bool)> {
        let bad = |reason| DecodeError::InvalidLz4 { reason };
        let mut r = Cursor {
            buf: input,
            pos: from,
        };
        let mut out = Vec::new();
        // Blocks decompress into this, sized once to the frame's block size,
        // then get copied out: sizing `out` by `block_max` per block would
        // zero up to 4 MiB for every block however small, so a frame of many
        // tiny blocks would cost gigabytes of memset.
        let mut scratch = Vec::new();
        loop {
            let block_at = r.pos;
            let size_word = r.u32_le()?;
            if size_word == 0 {
                break;
            }
            at_block(block_at, out.len());
            let stored = size_word & STORED_BIT != 0;
            let size = (size_word & !STORED_BIT) as usize;
            if size > self.block_max {
                return Err(bad("block larger than the frame's block size"));
            }
            let data = r.take(size)?;
            if self.has_block_checksum {
                let sum = r.u32_le()?;
                if sum != xxh32(data, 0) {
                    return Err(bad("block checksum mismatch"));
                }
            }
            let block = if stored {
                data
            } else {
                scratch.resize(self.block_max, 0);
                let n = lz4_flex::block::decompress_into(data, &mut scratch)
                    .map_err(|_| bad("corrupt compressed block"))?;
                scratch.get(..n).ok_or(bad("block output"))?
            };
            if block.len() > limit - out.len() {
                return Err(super::codec::too_large("lz4"));
            }
            out.extend_from_slice(block);
            if enough(&out) {
                return Ok((out, true));
            }
        }
        if self.has_content_checksum {
            // Read, not verified: Kafka does the same, and the batch CRC
            // covers it.
            r.u32_le()?;
        }
        if r.pos != input.len() {
            return Err(bad("trailing bytes after the frame"));
        }
        Ok((out, false))
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .buf
            .get(self.pos..self.pos.saturating_add(n))
            .ok_or_else(|| DecodeError::Truncated {
                what: "lz4 frame",
                needed: n,
                available: self.buf.len() - self.pos,
            })?;
        self.pos += n;
        Ok(s)
    }
    /// The next `N` bytes.
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let available = self.buf.len().saturating_sub(self.pos);
        self.take(N)?
            .try_into()
            .map_err(|_| DecodeError::Truncated {
                what: "lz4 frame",
                needed: N,
                available,
            })
    }
    fn u8(&mut self) -> Result<u8> {
        let [b] = self.array::<1>()?;
        Ok(b)
    }
    fn u32_le(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array::<4>()?))
    }
}

/// The frame header checksum: the second byte of xxh32 over the descriptor.
fn header_checksum(descriptor: &[u8]) -> u8 {
    (xxh32(descriptor, 0) >> 8) as u8
}

const P1: u32 = 0x9E37_79B1;
const P2: u32 = 0x85EB_CA77;
const P3: u32 = 0xC2B2_AE3D;
const P4: u32 = 0x27D4_EB2F;
const P5: u32 = 0x1656_67B1;

fn read_u32_le(b: &[u8]) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(b);
    u32::from_le_bytes(w)
}

fn round(acc: u32, lane: u32) -> u32 {
    acc.wrapping_add(lane.wrapping_mul(P2))
        .rotate_left(13)
        .wrapping_mul(P1)
}

/// xxHash32 (used by the LZ4 frame format for header and block checksums).
pub(crate) fn xxh32(input: &[u8], seed: u32) -> u32 {
    let mut stripes = input.chunks_exact(16);
    let mut h = if input.len() >= 16 {
        let mut v = [
            seed.wrapping_add(P1).wrapping_add(P2),
            seed.wrapping_add(P2),
            seed,
            seed.wrapping_sub(P1),
        ];
        for stripe in &mut stripes {
            for (lane, word) in v.iter_mut().zip(stripe.chunks_exact(4)) {
                *lane = round(*lane, read_u32_le(word));
            }
        }
        v[0].rotate_left(1)
            .wrapping_add(v[1].rotate_left(7))
            .wrapping_add(v[2].rotate_left(12))
            .wrapping_add(v[3].rotate_left(18))
    } else {
        seed.wrapping_add(P5)
    };
    h = h.wrapping_add(input.len() as u32);
    let tail = stripes.remainder();
    let mut words = tail.chunks_exact(4);
    for word in &mut words {
        h = h
            .wrapping_add(read_u32_le(word).wrapping_mul(P3))
            .rotate_left(17)
            .wrapping_mul(P4);
    }
    for &b in words.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(P5))
            .rotate_left(11)
            .wrapping_mul(P1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(P2);
    h ^= h >> 13;
    h = h.wrapping_mul(P3);
    h ^ (h >> 16)
}

#[cfg(test)]
mod tests {
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
            let from = decompress_from(&frame, b.frame_pos as usize, usize::MAX, |_| false);
            let (rest, early) = from.unwrap();
            assert!(!early);
            assert_eq!(rest, input[b.out_start as usize..]);
        }
        // Stopping after the first block read.
        let b = blocks[2];
        let (part, early) =
            decompress_from(&frame, b.frame_pos as usize, usize::MAX, |_| true).unwrap();
        assert!(early);
        assert_eq!(
            part,
            input[b.out_start as usize..b.out_start as usize + BLOCK_SIZE]
        );
        // A position outside the frame's blocks is refused, not read.
        assert!(decompress_from(&frame, 3, usize::MAX, |_| false).is_err());
        assert!(decompress_from(&frame, frame.len() + 1, usize::MAX, |_| false).is_err());
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
}
