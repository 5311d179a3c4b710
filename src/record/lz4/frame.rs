//! An LZ4 frame's header and its blocks: parsing the header (what Kafka
//! accepts), and the one loop that decodes blocks from any block boundary.
#![allow(
    clippy::little_endian_bytes,
    reason = "the LZ4 frame format is little-endian"
)]

use super::decompress::Step;
use super::xxhash::xxh32;
use super::{MAGIC, STORED_BIT};
use crate::record::error::{DecodeError, Result};

/// The most bytes one byte of an LZ4 block decodes to: a match length's
/// continuation byte adds 255, and every other sequence byte less.
const MAX_EXPANSION: usize = 255;

/// How [`Frame::blocks`] decodes blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Decode {
    /// Each block whole (a whole frame).
    Whole,
    /// Each block only as far as the caller's `wants` asks, pausing there to
    /// ask again (a point read needs a block's prefix, mostly).
    Paused,
    /// As `Whole`, but stopping before the frame's last block (the one the
    /// end mark follows), once `at_block` was told where it starts.
    WholeButLast,
}

/// An LZ4 frame's header, as far as reading its blocks needs it.
pub(super) struct Frame {
    block_max: usize,
    has_block_checksum: bool,
    has_content_checksum: bool,
    /// Where the first block's size word is.
    pub(super) blocks_start: usize,
}

impl Frame {
    pub(super) fn parse(input: &[u8]) -> Result<Frame> {
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

    /// Decodes the blocks from the size word at `from` to the end mark, or
    /// until `wants` says the bytes decoded so far are enough (`None`),
    /// telling `at_block` where each block starts. `wants` is asked first
    /// before any block, then after each block, and with [`Decode::Paused`]
    /// also whenever the decode passes the length it last asked for
    /// (`Some(n)`: at least `n` bytes), at the first sequence's match that
    /// passes it (a block whose last literals pass it is decoded whole).
    /// Decodes into `out`, whose bytes on
    /// entry are scratch (a buffer kept from an earlier decode is reused
    /// without being zeroed again): returns how many bytes at its start were
    /// decoded, and whether `wants` (or [`Decode::WholeButLast`]) stopped
    /// it. `out` may hold more bytes than that, which mean nothing. The
    /// bytes decode after the first `keep` of `out`, which are kept (the
    /// frame's earlier blocks decoded, or nothing).
    #[expect(
        clippy::too_many_arguments,
        reason = "the one block loop, each argument one of its callers' choices"
    )]
    pub(super) fn blocks(
        &self,
        input: &[u8],
        from: usize,
        keep: usize,
        limit: usize,
        mut wants: impl FnMut(&[u8]) -> Option<usize>,
        mut at_block: impl FnMut(usize, usize),
        decode: Decode,
        out: &mut Vec<u8>,
    ) -> Result<(usize, bool)> {
        let bad = |reason| DecodeError::InvalidLz4 { reason };
        let mut r = Cursor {
            buf: input,
            pos: from,
        };
        // Bytes decoded so far: `out` may run past them, zeroed (room
        // sized for a block once), holding a block's overshoot or what an
        // earlier decode left, which the next block overwrites before it
        // reads it.
        let mut len = keep;
        let Some(mut want) = wants(out.get(..keep).ok_or(bad("kept output"))?) else {
            return Ok((keep, true));
        };
        let mut first_block = true;
        loop {
            let block_at = r.pos;
            let size_word = r.u32_le()?;
            if size_word == 0 {
                break;
            }
            at_block(block_at, len);
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
            if decode == Decode::WholeButLast && input.get(r.pos..r.pos + 4) == Some(&[0; 4]) {
                return Ok((len, true));
            }
            let at = len;
            if stored {
                if size > limit - at {
                    return Err(crate::record::codec::too_large("lz4"));
                }
                out.truncate(at);
                out.extend_from_slice(data);
                len = out.len();
            } else {
                // Every block decompresses straight into `out`, never
                // through a buffer copied out after: that copy (glibc's
                // `rep movsb`) was two thirds of reading an lz4 log of 1
                // KiB records on an AMD EPYC (`perf record`). The room is
                // what the block can decode to at most, and `out` is only
                // zeroed where it grows, so a frame of many small blocks
                // zeroes no more than its output and 255 times one block's
                // input.
                let room = self.block_max.min(size.saturating_mul(MAX_EXPANSION));
                if out.len() < at + room {
                    out.resize(at + room, 0);
                }
                let corrupt = |_| bad("corrupt compressed block");
                let n = if decode != Decode::Paused {
                    let dst = out.get_mut(at..at + room).ok_or(bad("block output"))?;
                    super::decompress::decompress_block(data, dst).map_err(corrupt)?
                } else {
                    // Paused wherever `wants` asks, the block's bytes so far
                    // final, and resumed from there if it asks for more.
                    let mut resume = super::decompress::Resume::default();
                    loop {
                        let dst = out.get_mut(at..at + room).ok_or(bad("block output"))?;
                        let stop = want.saturating_sub(at);
                        match super::decompress::decompress_block_until(data, dst, resume, stop)
                            .map_err(corrupt)?
                        {
                            Step::Done(n) => break n,
                            Step::Paused(p) => {
                                if p.op > limit - at {
                                    return Err(crate::record::codec::too_large("lz4"));
                                }
                                let decoded = out.get(..at + p.op).ok_or(bad("block output"))?;
                                match wants(decoded) {
                                    None => return Ok((at + p.op, true)),
                                    Some(n) => want = n,
                                }
                                resume = p;
                            }
                        }
                    }
                };
                if n > limit - at {
                    return Err(crate::record::codec::too_large("lz4"));
                }
                len = at + n;
            }
            match wants(out.get(..len).ok_or(bad("block output"))?) {
                None => return Ok((len, true)),
                Some(n) => want = n,
            }
            if first_block && !stored && decode != Decode::Paused {
                // A whole frame: the rest likely decodes at this block's
                // ratio, so room for it now (and a block's), and `out` is
                // not copied as it grows (never past `limit`). A point
                // read needs a block or two: it reserves nothing.
                let rest = input.len().saturating_sub(r.pos);
                let estimate = len.saturating_mul(rest) / size.max(1);
                let wanted = estimate.saturating_add(self.block_max);
                out.reserve(wanted.min(limit.saturating_sub(out.len())));
            }
            first_block = false;
        }
        if self.has_content_checksum {
            // Read, not verified: Kafka does the same, and the batch CRC
            // covers it.
            r.u32_le()?;
        }
        if r.pos != input.len() {
            return Err(bad("trailing bytes after the frame"));
        }
        Ok((len, false))
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
pub(super) fn header_checksum(descriptor: &[u8]) -> u8 {
    (xxh32(descriptor, 0) >> 8) as u8
}
