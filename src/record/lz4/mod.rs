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
//!
//! Files: this one (writing, and the ways to read), `frame.rs` (the frame
//! header and the block loop), `xxhash.rs` (the frame's checksum).
#![allow(
    clippy::little_endian_bytes,
    reason = "the LZ4 frame format is little-endian"
)]

use super::error::{DecodeError, Result};
use frame::{header_checksum, Frame};

mod frame;
#[cfg(test)]
mod tests;
mod xxhash;

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
    let frame = Frame::parse(input)?;
    let whole = frame.blocks(input, frame.blocks_start, limit, |_| false, |_, _| {}, None);
    whole.map(|(out, _)| out)
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
    frame.blocks(
        input,
        frame.blocks_start,
        limit,
        enough,
        |_, _| {},
        Some(None),
    )
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
        None,
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
///
/// `want`: how many bytes of that block the caller likely needs; the block
/// is then decoded only that far first (see [`prefix_cut`]), and whole only
/// if `enough` still asks for more.
pub(crate) fn decompress_from(
    input: &[u8],
    frame_pos: usize,
    limit: usize,
    want: Option<usize>,
    enough: impl FnMut(&[u8]) -> bool,
) -> Result<(Vec<u8>, bool)> {
    let frame = Frame::parse(input)?;
    if frame_pos < frame.blocks_start || frame_pos > input.len() {
        return Err(DecodeError::InvalidLz4 {
            reason: "block position outside the frame",
        });
    }
    frame.blocks(input, frame_pos, limit, enough, |_, _| {}, Some(want))
}

/// Where to cut the compressed lz4 block `block` so that decoding the cut
/// input gives at least its first `want` bytes: right after the literals of
/// a sequence, which a decoder takes as the end of a block (a block's last
/// sequence is literals alone), so the cut input decodes to exactly the
/// block's prefix up to there. `None` when the whole block is needed, or
/// the scan meets something malformed (the full decode then names it).
pub(crate) fn prefix_cut(block: &[u8], want: usize) -> Option<usize> {
    // A length nibble of 15 continues in bytes, each added, until one
    // below 255.
    let extra = |ip: &mut usize| -> Option<usize> {
        let mut n = 0usize;
        loop {
            let b = *block.get(*ip)?;
            *ip += 1;
            n += usize::from(b);
            if b != 255 {
                return Some(n);
            }
        }
    };
    let (mut ip, mut out) = (0usize, 0usize);
    loop {
        let token = *block.get(ip)?;
        ip += 1;
        let mut literals = usize::from(token >> 4);
        if literals == 15 {
            literals += extra(&mut ip)?;
        }
        ip = ip.checked_add(literals)?;
        out += literals;
        if ip >= block.len() {
            return None;
        }
        if out >= want {
            return Some(ip);
        }
        // The match: a 2-byte offset, then its length (at least 4).
        ip += 2;
        let mut length = usize::from(token & 0x0f) + 4;
        if length == 19 {
            length += extra(&mut ip)?;
        }
        out += length;
    }
}
