//! The LZ4 block decoder (the block format of the LZ4 specification).
//!
//! Most sequences of a block are short: under 15 literals and a match of at
//! most 18 bytes at least 8 back. Away from the ends of the input and the
//! output, such a sequence is copied in fixed-size pieces (16 bytes of
//! literals, 3 × 8 of match), writing past its end into output that the next
//! sequence overwrites, as the reference implementation does; anything else
//! takes the exact path. A point read can pause the decode after any whole
//! sequence and resume it later ([`decompress_block_until`]): it decodes a
//! block only as far as its record.

/// Why a block does not decode: what a caller reports as a corrupt block.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Malformed;

/// A length's continuation bytes, added to `n` (15): each byte adds, 255
/// continues.
fn extra(src: &[u8], ip: &mut usize, mut n: usize) -> Result<usize, Malformed> {
    loop {
        let b = *src.get(*ip).ok_or(Malformed)?;
        *ip += 1;
        n += usize::from(b);
        if b != 255 {
            return Ok(n);
        }
    }
}

/// Decodes the LZ4 block `src` into the start of `dst`, returning the
/// decoded length; [`Malformed`] when it does not decode or does not fit.
/// Bytes of `dst` past the returned length may have been written.
pub(super) fn decompress_block(src: &[u8], dst: &mut [u8]) -> Result<usize, Malformed> {
    match decode::<false>(src, dst, Resume::default(), usize::MAX)? {
        Step::Done(n) => Ok(n),
        // Never: only a pausing decode pauses.
        Step::Paused(_) => Err(Malformed),
    }
}

/// Where a paused block decode stands: after a whole sequence, with `ip`
/// bytes of the block read and `op` bytes of its output final.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Resume {
    pub(super) ip: usize,
    pub(super) op: usize,
}

/// How far a pausing decode got.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// The whole block, this many bytes.
    Done(usize),
    /// Paused: at least `stop` bytes are final, and the decode resumes
    /// from here.
    Paused(Resume),
}

/// As [`decompress_block`], but from `from` (the start, or where an earlier
/// call over the same `src` and `dst` paused), pausing after the first
/// whole sequence (one at least) that leaves `stop` or more bytes final.
/// `dst`'s first `from.op` bytes must be what that call left.
pub(super) fn decompress_block_until(
    src: &[u8],
    dst: &mut [u8],
    from: Resume,
    stop: usize,
) -> Result<Step, Malformed> {
    decode::<true>(src, dst, from, stop)
}

/// The one decode loop; without `PAUSE`, `stop` is never looked at.
#[inline(always)]
fn decode<const PAUSE: bool>(
    src: &[u8],
    dst: &mut [u8],
    from: Resume,
    stop: usize,
) -> Result<Step, Malformed> {
    let Resume { mut ip, mut op } = from;
    loop {
        let token = *src.get(ip).ok_or(Malformed)?;
        ip += 1;
        let literals = usize::from(token >> 4);
        if literals < 15 && ip + 16 <= src.len() && op + 16 <= dst.len() {
            // A fixed 16-byte copy (both ranges were just checked; bytes past
            // the literals are overwritten next).
            let (s, d) = (src.get(ip..ip + 16), dst.get_mut(op..op + 16));
            if let (Some(s), Some(d)) = (s, d) {
                d.copy_from_slice(s);
            }
            ip += literals;
            op += literals;
        } else {
            let n = if literals == 15 {
                extra(src, &mut ip, 15)?
            } else {
                literals
            };
            let s = src
                .get(ip..ip.checked_add(n).ok_or(Malformed)?)
                .ok_or(Malformed)?;
            dst.get_mut(op..op + n).ok_or(Malformed)?.copy_from_slice(s);
            ip += n;
            op += n;
            if ip == src.len() {
                return Ok(Step::Done(op));
            }
        }
        let offset = match src.get(ip..ip + 2) {
            Some(&[lo, hi]) => usize::from(lo) | usize::from(hi) << 8,
            _ => return Err(Malformed),
        };
        ip += 2;
        if offset == 0 || offset > op {
            return Err(Malformed);
        }
        let from = op - offset;
        let short = usize::from(token & 15);
        if short < 15 && offset >= 8 && op + 24 <= dst.len() {
            // Three 8-byte pieces: each reads bytes at least 8 before the
            // ones it writes, all of them final by then.
            dst.copy_within(from..from + 8, op);
            dst.copy_within(from + 8..from + 16, op + 8);
            dst.copy_within(from + 16..from + 24, op + 16);
            op += short + 4;
            // Checked after a sequence's match, so a caller asking for no
            // more than it has still moves on.
            if PAUSE && op >= stop {
                return Ok(Step::Paused(Resume { ip, op }));
            }
            continue;
        }
        let length = if short == 15 {
            extra(src, &mut ip, 15)?
        } else {
            short
        } + 4;
        let end = op.checked_add(length).ok_or(Malformed)?;
        if end > dst.len() {
            return Err(Malformed);
        }
        if offset >= length {
            dst.copy_within(from..from + length, op);
        } else {
            // The match overlaps what it writes: a repeat of its last
            // `offset` bytes, copied in pieces that each read only bytes
            // already written.
            let mut at = op;
            while at < end {
                let n = (end - at).min(at - from);
                dst.copy_within(from..from + n, at);
                at += n;
            }
        }
        op = end;
        if PAUSE && op >= stop {
            return Ok(Step::Paused(Resume { ip, op }));
        }
    }
}
