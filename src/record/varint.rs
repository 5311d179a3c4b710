//! Zigzag varints as Kafka's `ByteUtils` writes them: `(v << 1) ^ (v >> 31)`
//! (or `>> 63` for longs), then unsigned LEB128, at most 5 (10) bytes.

use super::error::{DecodeError, Result};
use bytes::BufMut;

/// `v` zigzag-encoded (Kafka's `ByteUtils`), before its LEB128 bytes.
#[inline(always)]
pub(crate) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Bytes a zigzag varint of `v` takes.
#[inline]
pub(crate) fn varint_len(v: i32) -> usize {
    varlong_len(i64::from(v))
}

/// Bytes a zigzag varlong of `v` takes.
#[inline]
pub(crate) fn varlong_len(v: i64) -> usize {
    let z = zigzag(v);
    // ceil(bits / 7), with 0 taking one byte: (9 · bits + 64) / 64 equals
    // it for every width from 1 to 64 bits, with a shift for the division.
    let bits = 64 - (z | 1).leading_zeros() as usize;
    (bits * 9 + 64) >> 6
}

/// Writes `v` as a zigzag varint.
#[inline]
pub(crate) fn put_varint(buf: &mut impl BufMut, v: i32) {
    put_varlong(buf, i64::from(v));
}

/// Writes `v` as a zigzag varlong. A value that fits an i32 encodes exactly
/// as its varint does, so one writer serves both.
#[inline]
pub(crate) fn put_varlong(buf: &mut impl BufMut, v: i64) {
    let mut z = zigzag(v);
    while z >= 0x80 {
        buf.put_u8((z as u8) | 0x80);
        z >>= 7;
    }
    buf.put_u8(z as u8);
}

/// The value a raw (zigzag-encoded) varint `z` stands for.
#[inline(always)]
pub(crate) fn unzig(z: u64) -> i64 {
    (z >> 1) as i64 ^ -((z & 1) as i64)
}

/// The varint of at most `max_bytes` bytes at `*pos` as its raw (still
/// zigzag-encoded) value, moving `*pos` past it; `None` when it is truncated
/// or longer. One- and two-byte forms first: record lengths, value lengths
/// and timestamp deltas of typical records.
#[inline(always)]
fn raw_at(data: &[u8], pos: &mut usize, max_bytes: usize) -> Option<u64> {
    let first = *data.get(*pos)?;
    if first < 0x80 {
        *pos += 1;
        return Some(u64::from(first));
    }
    let second = *data.get(*pos + 1)?;
    if second < 0x80 {
        *pos += 2;
        return Some(u64::from(first & 0x7f) | u64::from(second) << 7);
    }
    let mut z = u64::from(first & 0x7f) | u64::from(second & 0x7f) << 7;
    for i in 2..max_bytes {
        let b = *data.get(*pos + i)?;
        z |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *pos += i + 1;
            return Some(z);
        }
    }
    None
}

/// Decodes the zigzag varlong of at most `max_bytes` bytes at `*pos`,
/// moving `*pos` past it; `None` when it is truncated or too long. The
/// error-free fast path of [`Reader`] for hot loops that only check.
#[inline(always)]
pub(crate) fn zigzag_at(data: &[u8], pos: &mut usize, max_bytes: usize) -> Option<i64> {
    raw_at(data, pos, max_bytes).map(unzig)
}

/// A varint at `*pos` as its raw (still zigzag-encoded) value, moving
/// `*pos` past it: at most 5 bytes, and a value that decodes within i32
/// (raw value below 2^32); `None` otherwise or when truncated. The raw
/// value `z` stands for [`unzig`]`(z)`.
#[inline(always)]
pub(crate) fn varint_raw_at(data: &[u8], pos: &mut usize) -> Option<u64> {
    raw_at(data, pos, 5).filter(|&z| z <= u64::from(u32::MAX))
}

/// A cursor over a byte slice for decoding; every read is bounds-checked.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8> {
        // No `ok_or`: building (and dropping) an `Error` on every successful
        // byte showed up as ~9% of point-read time.
        let Some(&b) = self.buf.get(self.pos) else {
            return Err(DecodeError::Truncated {
                what,
                needed: 1,
                available: 0,
            });
        };
        self.pos += 1;
        Ok(b)
    }

    /// Takes `n` bytes, returning their range in the underlying buffer.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<std::ops::Range<usize>> {
        if n > self.remaining() {
            return Err(DecodeError::Truncated {
                what,
                needed: n,
                available: self.remaining(),
            });
        }
        let start = self.pos;
        self.pos += n;
        Ok(start..self.pos)
    }

    /// Reads a zigzag varlong of at most `max_bytes` bytes.
    fn zigzag(&mut self, max_bytes: u32, what: &'static str) -> Result<i64> {
        let mut z: u64 = 0;
        for i in 0..max_bytes {
            let b = self.u8(what)?;
            z |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok((z >> 1) as i64 ^ -((z & 1) as i64));
            }
        }
        Err(DecodeError::VarintOverflow { what })
    }

    /// Reads a zigzag varint (at most 5 bytes, value within i32).
    pub(crate) fn varint(&mut self, what: &'static str) -> Result<i32> {
        let v = self.zigzag(5, what)?;
        i32::try_from(v).map_err(|_| DecodeError::VarintOverflow { what })
    }

    /// Reads a zigzag varlong (at most 10 bytes).
    pub(crate) fn varlong(&mut self, what: &'static str) -> Result<i64> {
        self.zigzag(10, what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: i64) -> Vec<u8> {
        let mut b = Vec::new();
        put_varlong(&mut b, v);
        b
    }

    #[test]
    fn zigzag_matches_kafka_examples() {
        // ByteUtils: 0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3, 63 -> 0x7e, 64 -> 0x80 0x01
        assert_eq!(enc(0), [0]);
        assert_eq!(enc(-1), [1]);
        assert_eq!(enc(1), [2]);
        assert_eq!(enc(-2), [3]);
        assert_eq!(enc(63), [0x7e]);
        assert_eq!(enc(64), [0x80, 0x01]);
        assert_eq!(enc(i64::from(i32::MAX)), [0xfe, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(enc(i64::from(i32::MIN)), [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(enc(i64::MIN).len(), 10);
    }

    #[test]
    fn lengths_match_encodings() {
        for v in [
            0i64,
            1,
            -1,
            63,
            64,
            -64,
            -65,
            8191,
            8192,
            i64::MAX,
            i64::MIN,
        ] {
            assert_eq!(varlong_len(v), enc(v).len(), "{v}");
        }
    }

    #[test]
    fn six_byte_varint_is_overflow() {
        let bytes = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01];
        assert!(matches!(
            Reader::new(&bytes).varint("x"),
            Err(DecodeError::VarintOverflow { what: "x" })
        ));
    }

    #[test]
    fn five_byte_varint_beyond_i32_is_overflow() {
        // zigzag value 2^32 does not fit an i32.
        let bytes = [0x80, 0x80, 0x80, 0x80, 0x10];
        assert!(matches!(
            Reader::new(&bytes).varint("x"),
            Err(DecodeError::VarintOverflow { .. })
        ));
    }

    #[test]
    fn eleven_byte_varlong_is_overflow() {
        let bytes = [0xffu8; 11];
        assert!(matches!(
            Reader::new(&bytes).varlong("x"),
            Err(DecodeError::VarintOverflow { .. })
        ));
    }

    #[test]
    fn unterminated_varint_is_truncated() {
        let bytes = [0x80, 0x80];
        assert!(matches!(
            Reader::new(&bytes).varint("x"),
            Err(DecodeError::Truncated { .. })
        ));
    }

    proptest::proptest! {
        // Under Miri: no failure-persistence file (isolation forbids
        // `getcwd`), and fewer cases.
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: if cfg!(miri) { 32 } else { 256 },
            failure_persistence: if cfg!(miri) {
                None
            } else {
                proptest::prelude::ProptestConfig::default().failure_persistence
            },
            ..proptest::prelude::ProptestConfig::default()
        })]

        #[test]
        fn varlong_round_trips(v: i64) {
            let b = enc(v);
            proptest::prop_assert_eq!(Reader::new(&b).varlong("v")?, v);
        }

        /// The fast decoders give the `Reader`'s verdict and value on any
        /// bytes: valid, truncated, overlong or out of i32 range.
        #[test]
        fn fast_decoders_agree_with_the_reader(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
            high in 0usize..12,
        ) {
            // Mostly continuation bytes, so long and overlong forms occur.
            let bytes: Vec<u8> = bytes
                .iter()
                .enumerate()
                .map(|(i, b)| if i < high { b | 0x80 } else { *b })
                .collect();
            let mut pos = 0;
            let fast = zigzag_at(&bytes, &mut pos, 10);
            let mut r = Reader::new(&bytes);
            proptest::prop_assert_eq!(fast, r.varlong("v").ok());
            if fast.is_some() {
                proptest::prop_assert_eq!(pos, r.position());
            }
            let mut pos = 0;
            let fast = varint_raw_at(&bytes, &mut pos).map(unzig);
            let mut r = Reader::new(&bytes);
            proptest::prop_assert_eq!(fast, r.varint("v").ok().map(i64::from));
            if fast.is_some() {
                proptest::prop_assert_eq!(pos, r.position());
            }
        }

        #[test]
        fn varint_round_trips(v: i32) {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            proptest::prop_assert_eq!(b.len(), varint_len(v));
            proptest::prop_assert_eq!(Reader::new(&b).varint("v")?, v);
        }
    }
}
