//! The LZ4 block compressor: LZ4's block format (the specification's
//! sequences of literals and a match), found as LZ4's fast mode finds them:
//! one hashed probe a position, greedy, the search stepping faster through
//! input that does not match, and a match tried right after each match.
//!
//! What differs from `lz4_flex` (which compressed before): the hash covers
//! 7 bytes, not 4 or 5, and the table has 16,384 entries (positions in a
//! block of at most 64 KiB fit a `u16`: 32 KiB, reused for every block of a
//! frame). On the peer bench's records it writes 4–12 % less than
//! `lz4_flex` did, and is faster, as it writes fewer sequences
//! (`docs/performance.md`, "lz4 compression").
#![expect(
    clippy::indexing_slicing,
    reason = "the hot loop indexes by positions it keeps in range: reads of 8 bytes at or below \
              len - 12, writes within max_compressed(len); a slip would panic, never write outside"
)]

/// A match is at least this long.
const MIN_MATCH: usize = 4;
/// The last match of a block starts at least this many bytes before its
/// end (the block format's rule).
const MF_LIMIT: usize = 12;
/// The last this-many bytes of a block are literals (the format's rule).
const LAST_LITERALS: usize = 5;
/// log2 of the table's entries.
const HASH_LOG: u32 = 14;
/// How many bytes a position's hash covers. A match still needs only
/// [`MIN_MATCH`], but the table then mostly offers candidates that go on
/// for 7 bytes, so fewer, longer matches are taken.
const HASH_BYTES: u32 = 7;
/// The search step grows by one byte every 2^this probes without a match.
const SKIP_TRIGGER: u32 = 6;

/// The largest block [`compress_block`] takes.
pub(super) const MAX_BLOCK: usize = 1 << 16;

/// The match finder's table: per hash of [`HASH_BYTES`] bytes, the last
/// position (in the block) where they were seen.
pub(super) struct Table(Box<[u16; 1 << HASH_LOG]>);

impl Table {
    pub(super) fn new() -> Table {
        Table(Box::new([0; 1 << HASH_LOG]))
    }
}

/// The most bytes [`compress_block`] writes for `len` bytes of input.
pub(super) fn max_compressed(len: usize) -> usize {
    len + len / 255 + 16
}

fn read32(s: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&s[at..at + 4]);
    u32::from_le_bytes(w)
}

fn read64(s: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&s[at..at + 8]);
    u64::from_le_bytes(w)
}

/// The table slot for the [`HASH_BYTES`] bytes at `at` (a multiplicative
/// hash: the product's top bits).
fn hash(input: &[u8], at: usize) -> usize {
    const PRIME_7_BYTES: u64 = 58_295_818_150_454_627;
    ((read64(input, at) << (64 - 8 * HASH_BYTES)).wrapping_mul(PRIME_7_BYTES) >> (64 - HASH_LOG))
        as usize
}

/// How many bytes from `a` equal those from `b` (`b < a`), not reading at
/// or past `end`.
fn common(input: &[u8], a: usize, b: usize, end: usize) -> usize {
    let mut n = 0;
    while a + n + 8 <= end {
        let x = read64(input, a + n) ^ read64(input, b + n);
        if x != 0 {
            return n + (x.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    while a + n < end && input[a + n] == input[b + n] {
        n += 1;
    }
    n
}

/// Writes a length's continuation bytes (255 each, then the rest).
fn put_length(dst: &mut [u8], mut op: usize, mut n: usize) -> usize {
    while n >= 255 {
        dst[op] = 255;
        op += 1;
        n -= 255;
    }
    dst[op] = n as u8;
    op + 1
}

/// Writes the literals `input[from..to]` after their token's length
/// fields, returning the token's literal nibble and the position after.
fn put_literals(
    dst: &mut [u8],
    mut op: usize,
    input: &[u8],
    from: usize,
    to: usize,
) -> (u8, usize) {
    let n = to - from;
    let nibble = if n >= 15 {
        op = put_length(dst, op, n - 15);
        15
    } else {
        n as u8
    };
    if n <= 16 && from + 16 <= input.len() && op + 16 <= dst.len() {
        // A fixed 16-byte copy (the bytes past `n` are overwritten next).
        dst[op..op + 16].copy_from_slice(&input[from..from + 16]);
    } else {
        dst[op..op + n].copy_from_slice(&input[from..to]);
    }
    (nibble, op + n)
}

/// One sequence: the literals `input[anchor..ip]`, then a match of `len`
/// bytes `offset` back.
fn put_sequence(
    dst: &mut [u8],
    op: usize,
    input: &[u8],
    (anchor, ip): (usize, usize),
    offset: usize,
    len: usize,
) -> usize {
    let token_at = op;
    let (literals, mut op) = put_literals(dst, op + 1, input, anchor, ip);
    dst[op..op + 2].copy_from_slice(&(offset as u16).to_le_bytes());
    op += 2;
    let m = len - MIN_MATCH;
    let nibble = if m >= 15 {
        op = put_length(dst, op, m - 15);
        15
    } else {
        m as u8
    };
    dst[token_at] = literals << 4 | nibble;
    op
}

/// Compresses `input` (at most [`MAX_BLOCK`] bytes) as one LZ4 block into
/// `dst` (at least [`max_compressed`] of its length), returning the
/// block's length.
pub(super) fn compress_block(input: &[u8], table: &mut Table, dst: &mut [u8]) -> usize {
    debug_assert!(input.len() <= MAX_BLOCK && dst.len() >= max_compressed(input.len()));
    let len = input.len();
    let (mut op, mut anchor) = (0usize, 0usize);
    if len > MF_LIMIT {
        let table = &mut *table.0;
        // Every entry starts at position 0, a real position: a probe checks
        // the bytes, so a stale entry only costs the check.
        table.fill(0);
        // Positions are below 2^16, so every offset fits the format's two
        // bytes.
        let last_start = len - MF_LIMIT;
        let match_end = len - LAST_LITERALS;
        let mut ip = 1usize;
        'search: loop {
            let (mut step, mut probes) = (1usize, 1u32 << SKIP_TRIGGER);
            let mut at = loop {
                if ip > last_start {
                    break 'search;
                }
                let sequence = read32(input, ip);
                let h = hash(input, ip);
                let candidate = usize::from(table[h]);
                table[h] = ip as u16;
                if read32(input, candidate) == sequence {
                    break candidate;
                }
                ip += step;
                probes += 1;
                step = (probes >> SKIP_TRIGGER) as usize;
            };
            while ip > anchor && at > 0 && input[ip - 1] == input[at - 1] {
                ip -= 1;
                at -= 1;
            }
            loop {
                let length = MIN_MATCH + common(input, ip + MIN_MATCH, at + MIN_MATCH, match_end);
                op = put_sequence(dst, op, input, (anchor, ip), ip - at, length);
                ip += length;
                anchor = ip;
                if ip > last_start {
                    break 'search;
                }
                table[hash(input, ip - 2)] = (ip - 2) as u16;
                // A match right after the last one needs no literals.
                let sequence = read32(input, ip);
                let h = hash(input, ip);
                let candidate = usize::from(table[h]);
                table[h] = ip as u16;
                if read32(input, candidate) != sequence {
                    ip += 1;
                    continue 'search;
                }
                at = candidate;
            }
        }
    }
    let token_at = op;
    let (literals, end) = put_literals(dst, op + 1, input, anchor, len);
    dst[token_at] = literals << 4;
    end
}
