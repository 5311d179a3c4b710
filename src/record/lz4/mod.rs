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
use frame::{header_checksum, Decode, Frame};

mod compress;
#[cfg(test)]
mod compress_tests;
mod decompress;
mod frame;
#[cfg(test)]
mod tests;
mod xxhash;

const MAGIC: u32 = 0x184D_2204;
const FLG_WRITE: u8 = 0x60;
const BD_64K: u8 = 0x40;
const BLOCK_SIZE: usize = compress::MAX_BLOCK;
const STORED_BIT: u32 = 0x8000_0000;

/// The most bytes of decode scratch a thread keeps between decodes that do
/// not hand their output on (point reads, block maps): two of Kafka's
/// 64 KiB blocks with their room. A larger buffer is freed after its use.
pub(crate) const SCRATCH_KEEP: usize = 256 << 10;

thread_local! {
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Runs `f` with this thread's decode scratch: bytes a decode into it
/// (`decompress_from`, `decompress_until`, `decompress_mapped_but_last`,
/// `decompress_on`) reuses
/// without allocating or zeroing them again. Point reads into 64 KiB
/// blocks each zeroed a fresh 64 KiB buffer before (a quarter of their
/// instructions, `callgrind`). At most [`SCRATCH_KEEP`] bytes are kept; a
/// nested call, or one while the thread exits, gets a fresh buffer.
pub(crate) fn with_scratch<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut buf = SCRATCH.try_with(std::cell::Cell::take).unwrap_or_default();
    let r = f(&mut buf);
    if buf.capacity() <= SCRATCH_KEEP {
        // While the thread exits the buffer is dropped instead.
        SCRATCH.try_with(move |s| s.set(buf)).ok();
    }
    r
}

/// The capacity of this thread's decode scratch (for tests of its bound).
#[cfg(test)]
pub(crate) fn scratch_capacity() -> usize {
    SCRATCH.with(|s| {
        let buf = s.take();
        let capacity = buf.capacity();
        s.set(buf);
        capacity
    })
}

/// The most bytes [`compress_into`] appends for `len` bytes of input (its
/// frame header, every block at its largest, the end mark): the room it
/// works in, so an output buffer with that much never grows.
pub(crate) fn frame_bound(len: usize) -> usize {
    let blocks = len.div_ceil(BLOCK_SIZE).max(1);
    7 + blocks * 4 + len + (len / 255 + 16) * blocks + 4
}

/// Appends `input` as one Kafka-style LZ4 frame to `out`.
pub(crate) fn compress_into(input: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&MAGIC.to_le_bytes());
    out.push(FLG_WRITE);
    out.push(BD_64K);
    out.push(header_checksum(&[FLG_WRITE, BD_64K]));
    // One table a thread, reused by every frame it compresses: a producer's
    // batches are mostly 16 KiB, and a table allocated and zeroed for each
    // would double the zeroing each block already does.
    thread_local! {
        static TABLE: std::cell::RefCell<compress::Table> =
            std::cell::RefCell::new(compress::Table::new());
    }
    TABLE.with(|t| match t.try_borrow_mut() {
        Ok(mut table) => compress_blocks(input, &mut table, out),
        Err(_) => compress_blocks(input, &mut compress::Table::new(), out),
    });
    out.extend_from_slice(&0u32.to_le_bytes());
}

/// The blocks of [`compress_into`]'s frame, each compressed or stored.
fn compress_blocks(input: &[u8], table: &mut compress::Table, out: &mut Vec<u8>) {
    for chunk in input.chunks(BLOCK_SIZE) {
        let size_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let data_at = out.len();
        out.resize(data_at + compress::max_compressed(chunk.len()), 0);
        let compressed = out
            .get_mut(data_at..)
            .map(|dst| compress::compress_block(chunk, table, dst));
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
}

/// Decodes one LZ4 frame, returning the uncompressed bytes, at most `limit`
/// of them. Bytes after the end mark are refused: a batch holds exactly one
/// frame.
pub(crate) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>> {
    let frame = Frame::parse(input)?;
    let mut out = Vec::new();
    let whole = frame.blocks(
        input,
        frame.blocks_start,
        0,
        limit,
        |_| Some(usize::MAX),
        |_, _| {},
        Decode::Whole,
        &mut out,
    );
    whole.map(|(n, _)| {
        out.truncate(n);
        out
    })
}

/// As [`decompress`], but into `out` (scratch on entry; see
/// [`Frame::blocks`]), returning how many of its first bytes were decoded;
/// and only as far as `wants` asks: given the bytes decoded so far (none at
/// first), it says how many it needs (`Some`), or that they are enough
/// (`None`: then `true`, without reading or checking the rest of the
/// frame); `false` when the whole frame was read. The decode pauses to ask
/// again once it has what was asked for (within a sequence's match of it),
/// and after each block (see [`Frame::blocks`]).
pub(crate) fn decompress_until(
    input: &[u8],
    limit: usize,
    wants: impl FnMut(&[u8]) -> Option<usize>,
    out: &mut Vec<u8>,
) -> Result<(usize, bool)> {
    let frame = Frame::parse(input)?;
    frame.blocks(
        input,
        frame.blocks_start,
        0,
        limit,
        wants,
        |_, _| {},
        Decode::Paused,
        out,
    )
}

/// Where one block of a frame starts: its size word's position in the
/// frame, and the position of its first byte in the uncompressed data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BlockStart {
    pub(crate) frame_pos: u32,
    pub(crate) out_start: u32,
}

/// Decodes a whole frame as [`decompress`] does, but into `out` as
/// [`decompress_until`] does, returning the decoded length and where each
/// of the frame's blocks starts (for [`decompress_from`] later): for tests,
/// the whole-frame reference to [`decompress_mapped_but_last`].
#[cfg(test)]
pub(crate) fn decompress_mapped(
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(usize, Vec<BlockStart>)> {
    mapped(input, limit, Decode::Whole, out)
}

/// As [`decompress_mapped`], but leaving the frame's last block (the one
/// the end mark follows) undecoded: the bytes decoded are the blocks'
/// before it, and the last of the starts is that block's, its `out_start`
/// the length decoded. [`decompress_on`] decodes it later.
pub(crate) fn decompress_mapped_but_last(
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
) -> Result<(usize, Vec<BlockStart>)> {
    mapped(input, limit, Decode::WholeButLast, out)
}

fn mapped(
    input: &[u8],
    limit: usize,
    decode: Decode,
    out: &mut Vec<u8>,
) -> Result<(usize, Vec<BlockStart>)> {
    let frame = Frame::parse(input)?;
    let mut starts = Vec::new();
    let mut fits = true;
    let (n, _) = frame.blocks(
        input,
        frame.blocks_start,
        0,
        limit,
        |_| Some(usize::MAX),
        |frame_pos, out_start| match (u32::try_from(frame_pos), u32::try_from(out_start)) {
            (Ok(frame_pos), Ok(out_start)) => starts.push(BlockStart {
                frame_pos,
                out_start,
            }),
            _ => fits = false,
        },
        decode,
        out,
    )?;
    if !fits {
        starts.clear();
    }
    Ok((n, starts))
}

/// As [`decompress_until`], but starting at the block whose size word is at
/// `frame_pos` (a [`BlockStart`] of the same frame): the frame's blocks are
/// independent, so the bytes decoded are the uncompressed data from that
/// block's `out_start` on.
pub(crate) fn decompress_from(
    input: &[u8],
    frame_pos: usize,
    limit: usize,
    wants: impl FnMut(&[u8]) -> Option<usize>,
    out: &mut Vec<u8>,
) -> Result<(usize, bool)> {
    decompress_on(input, frame_pos, 0, limit, wants, out)
}

/// As [`decompress_from`], but after the first `keep` bytes of `out`, which
/// are kept (the frame's blocks before that one, as
/// [`decompress_mapped_but_last`] left them): the bytes decoded, and those
/// `wants` is given, are the frame's from its start.
pub(crate) fn decompress_on(
    input: &[u8],
    frame_pos: usize,
    keep: usize,
    limit: usize,
    wants: impl FnMut(&[u8]) -> Option<usize>,
    out: &mut Vec<u8>,
) -> Result<(usize, bool)> {
    let frame = Frame::parse(input)?;
    if frame_pos < frame.blocks_start || frame_pos > input.len() {
        return Err(DecodeError::InvalidLz4 {
            reason: "block position outside the frame",
        });
    }
    if keep > limit || keep > out.len() {
        return Err(DecodeError::InvalidLz4 {
            reason: "kept output past the limit",
        });
    }
    frame.blocks(
        input,
        frame_pos,
        keep,
        limit,
        wants,
        |_, _| {},
        Decode::Paused,
        out,
    )
}

/// For tests and fuzzing: checks the LZ4 block `block` keeps the block
/// format's rules, which a strict decoder (Kafka's Java one among them) may
/// enforce though `lz4_flex` does not: every match reaches back inside the
/// block; the last sequence is literals alone, at least 5 of them (all of a
/// block under 13 bytes); no match starts within 12 bytes of the end.
/// Returns the block's decoded length, or what is wrong.
#[cfg(any(test, fuzzing))]
pub(crate) fn block_rules(block: &[u8]) -> std::result::Result<usize, String> {
    let byte = |ip: &mut usize| -> std::result::Result<usize, String> {
        let b = block.get(*ip).ok_or("the block ends inside a sequence")?;
        *ip += 1;
        Ok(usize::from(*b))
    };
    let length = |ip: &mut usize, n: usize| -> std::result::Result<usize, String> {
        let mut n = n;
        if n == 15 {
            loop {
                let b = byte(ip)?;
                n += b;
                if b != 255 {
                    break;
                }
            }
        }
        Ok(n)
    };
    let (mut ip, mut out) = (0usize, 0usize);
    let mut match_starts = Vec::new();
    loop {
        let token = byte(&mut ip)?;
        let literals = length(&mut ip, token >> 4)?;
        ip += literals;
        out += literals;
        if ip == block.len() {
            if literals < out.min(5) {
                return Err(format!("{literals} literals end a block of {out} bytes"));
            }
            if let Some(at) = match_starts.iter().find(|&&at| at + 12 > out) {
                return Err(format!("a match at {at} in a block of {out} bytes"));
            }
            return Ok(out);
        }
        let offset = byte(&mut ip)? | byte(&mut ip)? << 8;
        if offset == 0 || offset > out {
            return Err(format!("offset {offset} at {out}"));
        }
        match_starts.push(out);
        out += length(&mut ip, token & 15)? + 4;
    }
}

/// For tests and fuzzing: [`block_rules`] for every compressed block of the
/// frame `frame` (as [`compress_into`] writes it: a 7-byte header, then
/// blocks up to the end mark).
#[cfg(any(test, fuzzing))]
pub(crate) fn frame_block_rules(frame: &[u8]) -> std::result::Result<(), String> {
    let mut at = 7;
    loop {
        let word = frame
            .get(at..at + 4)
            .and_then(|w| w.try_into().ok())
            .map(u32::from_le_bytes)
            .ok_or(format!("no block size at {at}"))?;
        if word == 0 {
            return Ok(());
        }
        let len = (word & !STORED_BIT) as usize;
        let block = frame
            .get(at + 4..at + 4 + len)
            .ok_or(format!("the block at {at} passes the frame's end"))?;
        if word & STORED_BIT == 0 {
            block_rules(block).map_err(|e| format!("the block at {at}: {e}"))?;
        }
        at += 4 + len;
    }
}

/// For tests and fuzzing: decodes `block` as one LZ4 block into `room`
/// bytes with this crate's decoder and with `lz4_flex`'s, and says how they
/// differ (`None`: the same bytes, or both refused it).
#[cfg(any(test, fuzzing))]
pub(crate) fn decoders_differ(block: &[u8], room: usize) -> Option<String> {
    let (mut ours, mut theirs) = (vec![0u8; room], vec![0u8; room]);
    let a = decompress::decompress_block(block, &mut ours);
    let b = lz4_flex::block::decompress_into(block, &mut theirs);
    match (a, b) {
        (Ok(n), Ok(m)) if ours.get(..n) == theirs.get(..m) => None,
        (Err(_), Err(_)) => None,
        (a, b) => Some(format!(
            "ours {a:?}, lz4_flex {b:?}, a block of {} bytes",
            block.len()
        )),
    }
}
