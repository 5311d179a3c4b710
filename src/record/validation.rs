//! Append validation: an uncompressed batch's records checked in place,
//! building none of them, by a fast record walk that the decoder's own
//! walk backs (it names the error when the fast walk refuses).

use super::error::DecodeError;
use super::header::{BatchHeader, HEADER_SIZE};
use super::parse::{parse_record, short_length, short_varint, word_at};
use super::varint::{varint_raw_at, zigzag_at};
use crate::error::Error;

/// Checks an uncompressed batch's records in place, building none of them:
/// exactly the header's count of well-formed records fill the batch, with
/// offset deltas 0, 1, 2, … (what a log append requires). The same errors
/// as decoding them one by one.
pub(crate) fn check_uncompressed_records(batch: &[u8], h: &BatchHeader) -> crate::Result<()> {
    if h.records_count < 0 {
        return Err(DecodeError::NegativeRecordCount {
            count: h.records_count,
        }
        .into());
    }
    let data = batch.get(HEADER_SIZE..).ok_or(DecodeError::Truncated {
        what: "batch header",
        needed: HEADER_SIZE,
        available: batch.len(),
    })?;
    if records_well_formed(data, h.records_count) {
        return Ok(());
    }
    // Something is wrong: find it, with the decoder's error.
    walk_records(data, h.records_count)
}

/// Walks `count` records with the decoder, building none: the first error.
pub(super) fn walk_records(data: &[u8], count: i32) -> crate::Result<()> {
    let mut pos = 0;
    for i in 0..count {
        if pos >= data.len() {
            return Err(DecodeError::RecordCountMismatch {
                expected: count,
                actual: i,
            }
            .into());
        }
        let p = parse_record(data, pos, |_, _| {})?;
        if p.offset_delta != i {
            return Err(Error::InvalidBatch {
                reason: "record offset deltas must run 0, 1, 2, ...",
            });
        }
        pos = p.end;
    }
    if pos < data.len() {
        return Err(DecodeError::TrailingBytes {
            what: "batch records",
            bytes: data.len() - pos,
        }
        .into());
    }
    Ok(())
}

/// The fast, error-free form of [`check_uncompressed_records`]'s walk: true
/// when exactly `count` well-formed records with offset deltas 0, 1, 2, …
/// fill `data`. It accepts nothing the decoder refuses (a unit test and the
/// `decode_batch` fuzz target hold the two to the same verdict); on false
/// the caller re-walks with the decoder to name the error.
pub(super) fn records_well_formed(data: &[u8], count: i32) -> bool {
    walk_fast(data, count).is_some()
}

/// [`records_well_formed`] with `?`: record after record, each taken by
/// [`short_record`] when it has the common short form and by
/// [`any_record`] otherwise (or when `short_record` cannot tell).
fn walk_fast(data: &[u8], count: i32) -> Option<()> {
    let mut at = 0usize;
    let mut last = LastLength::default();
    for n in 0..count {
        let n = n.unsigned_abs();
        at = match short_record(data, at, n, &mut last) {
            Some(end) => end,
            None => any_record(data, at, n)?,
        };
    }
    (at == data.len()).then_some(())
}

/// The last short record's length varint, as the 16 bits that hold it (a
/// two-byte varint, or a one-byte one and the byte after it), with what
/// they decode to.
/// Records of one size repeat these bits, and reusing the decoded span
/// then keeps the next record's start off the wait for this record's
/// bytes: the only check left is a branch the CPU predicts.
struct LastLength {
    /// The 16 bits; `u64::MAX` (no 16-bit value) before the first record.
    bits: u64,
    /// Bytes of the varint (1 or 2).
    varint: usize,
    /// Bytes of the record with its length varint.
    span: usize,
}

impl Default for LastLength {
    fn default() -> Self {
        LastLength {
            bits: u64::MAX,
            varint: 0,
            span: 0,
        }
    }
}

/// Record `n` at `at`, when it has the form nearly every record has (every
/// varint of one or two bytes, no headers, at least 8 bytes of `data` from
/// each word read): where it ends if it is well formed. `None` decides
/// nothing: [`any_record`] then walks it. It reads words from `data` past
/// fields' ends, but it accepts a record only when the positions it reached
/// (which only grow) end exactly at the record's end, so every byte it
/// consumed lies inside the record, as the decoder requires. `last` holds
/// the previous short record's length, decoded.
#[inline(always)]
fn short_record(data: &[u8], at: usize, n: u32, last: &mut LastLength) -> Option<usize> {
    // The length: a non-negative (even raw) varint of one or two bytes, a
    // function of the word's low 16 bits alone.
    let w = word_at(data, at)?;
    if w & 0xffff != last.bits {
        let (len, l) = short_length(w)?;
        *last = LastLength {
            bits: w & 0xffff,
            varint: l,
            span: l + len as usize,
        };
    }
    let (l, end) = (last.varint, at + last.span);
    // After the attributes byte: timestamp delta, offset delta, key length
    // (at most 6 of the word's 8 bytes).
    let mut i = at + l + 1;
    let w = word_at(data, i)?;
    let (_, ts) = short_varint(w)?;
    let w = w >> (8 * ts);
    let (delta, od) = short_varint(w)?;
    if delta != u64::from(n) << 1 {
        return None;
    }
    let (key, kl) = short_varint(w >> (8 * od))?;
    i += ts + od + kl;
    // Raw 1 is a null field; any other odd raw value is negative.
    match key {
        1 => {}
        k if k & 1 == 0 => i += (k >> 1) as usize,
        _ => return None,
    }
    let (value, vl) = short_varint(word_at(data, i)?)?;
    i += vl;
    match value {
        1 => {}
        v if v & 1 == 0 => i += (v >> 1) as usize,
        _ => return None,
    }
    // No headers: a count of 0, the record's last byte.
    (*data.get(i)? == 0 && i + 1 == end).then_some(end)
}

/// Record `n` at `at`, any form: where it ends if it is well formed.
fn any_record(data: &[u8], at: usize, n: u32) -> Option<usize> {
    // A non-negative length; `None` for null when `nullable`.
    #[inline(always)]
    fn length(z: u64, nullable: bool) -> Option<Option<usize>> {
        match z {
            1 if nullable => Some(None),
            z if z & 1 == 0 => usize::try_from(z >> 1).ok().map(Some),
            _ => None,
        }
    }
    // Skips a length-prefixed field, returning its bytes' range.
    #[inline(always)]
    fn skip(record: &[u8], i: &mut usize, nullable: bool) -> Option<std::ops::Range<usize>> {
        let start = *i;
        match length(varint_raw_at(record, i)?, nullable)? {
            None => Some(start..start),
            Some(n) => {
                let end = i.checked_add(n).filter(|&end| end <= record.len())?;
                let field = *i..end;
                *i = end;
                Some(field)
            }
        }
    }
    let rest = data.get(at..)?;
    let mut i = 0;
    let len = length(varint_raw_at(rest, &mut i)?, false)??;
    let end = i.checked_add(len)?;
    let record = rest.get(i..end)?;
    // Attributes, then the timestamp delta.
    let mut i = 1;
    if record.is_empty() {
        return None;
    }
    zigzag_at(record, &mut i, 10)?;
    // The offset delta must be `n` (zigzag: twice `n`).
    if varint_raw_at(record, &mut i)? != u64::from(n) << 1 {
        return None;
    }
    skip(record, &mut i, true)?;
    skip(record, &mut i, true)?;
    let headers = length(varint_raw_at(record, &mut i)?, false)??;
    // Each header takes at least two bytes.
    if headers > (record.len() - i) / 2 {
        return None;
    }
    for _ in 0..headers {
        let key = skip(record, &mut i, false)?;
        std::str::from_utf8(record.get(key)?).ok()?;
        skip(record, &mut i, true)?;
    }
    (i == record.len()).then_some(at + end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BatchBuilder, Compression};
    use bytes::Bytes;

    /// Checks that the fast record walk and the decoder's agree on `batch`
    /// (which both accept) and on every mutation of it: one byte changed
    /// (`per_byte` times), one cut, one inserted, and a wrong record count.
    /// Most mutations must be refused, or this checks little.
    ///
    /// Returns how many of `batch`'s records the short form took, and how
    /// many of those reused the record before's decoded length.
    fn walks_agree_on_mutations(batch: &[u8], count: i32, per_byte: usize) -> (i32, i32) {
        let data = &batch[HEADER_SIZE..];
        assert!(records_well_formed(data, count));
        let (mut at, mut short, mut reused, mut last) = (0, 0, 0, LastLength::default());
        for n in 0..count.unsigned_abs() {
            let before = last.bits;
            at = match short_record(data, at, n, &mut last) {
                Some(end) => {
                    short += 1;
                    reused += i32::from(word_at(data, at).map(|w| w & 0xffff) == Some(before));
                    end
                }
                None => any_record(data, at, n).unwrap(),
            };
        }
        let agree = |d: &[u8], count: i32| {
            let fast = records_well_formed(d, count);
            let slow = walk_records(d, count);
            assert_eq!(fast, slow.is_ok(), "count {count}, decoder said {slow:?}");
            fast
        };
        let mut refused = 0;
        for c in [0, 1, count - 1, count + 1] {
            refused += usize::from(!agree(data, c));
        }
        let mut rng = 0x2545_f491_4f6c_dd1du64;
        for at in 0..data.len() {
            for _ in 0..per_byte {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let mut d = data.to_vec();
                d[at] = rng as u8;
                refused += usize::from(!agree(&d, count));
            }
            refused += usize::from(!agree(&data[..at], count));
            let mut d = data.to_vec();
            d.insert(at, rng as u8 & 0x7f);
            refused += usize::from(!agree(&d, count));
        }
        assert!(refused > data.len() * 2, "only {refused} refused");
        (short, reused)
    }

    /// The fast record walk and the decoder's agree on every mutation of
    /// batches with keys, null keys, headers and many records.
    #[test]
    fn fast_record_check_agrees_with_the_decoder() {
        let mut b = BatchBuilder::new(Compression::None);
        for i in 0..40u32 {
            let mut r = crate::Record::new(vec![b'v'; (i * 7 % 200) as usize]);
            if i % 3 != 0 {
                r = r.key(vec![b'k'; (i % 5) as usize]);
            }
            if i % 4 == 1 {
                r = r.header("h\u{e9}", vec![1u8; 3]);
                r.headers.push(crate::record::Header {
                    key: "n".into(),
                    value: None,
                });
            }
            b.push(&r);
        }
        let (short, _) = walks_agree_on_mutations(&b.build(), 40, 4);
        assert!(short > 0 && short < 40, "{short} of 40 in short form");
    }

    /// The same, on records that take the short form's every branch and
    /// leave it: one-, two- and three-byte lengths (the last record's
    /// 8-byte word runs past the batch), timestamp and offset deltas of one,
    /// two and three bytes, keys with two-byte lengths, empty and null
    /// values, headers, and records that change form one after another.
    #[test]
    fn fast_record_check_agrees_with_the_decoder_across_forms() {
        let mut b = BatchBuilder::new(Compression::None);
        let long = vec![b'x'; 9_000];
        let key = [b'k'; 70];
        let mut n = 0;
        for i in 0..200usize {
            let ts = 1_700_000_000_000 + [0, 5, 100, 70_000][i % 4];
            let value: Option<&[u8]> = match i % 5 {
                0 => None,
                1 => Some(&[]),
                2 => Some(&long[..40]),
                3 => Some(&long[..(i * 13) % 300]),
                _ => Some(&long[..if i == 104 { 9_000 } else { 7 }]),
            };
            let k = (i % 7 == 0).then_some(&key[..]);
            let headers = if i % 11 == 3 {
                vec![crate::record::Header {
                    key: "h".into(),
                    value: Some(Bytes::from_static(b"v")),
                }]
            } else {
                vec![]
            };
            b.push_parts(ts, k, value, &headers);
            n += 1;
        }
        // A run of one size (two-byte lengths), as fixed-size records come.
        for _ in 0..30 {
            b.push_parts(1_700_000_000_000, None, Some(&long[..100]), &[]);
            n += 1;
        }
        // A last record too short for an 8-byte word.
        b.push_parts(1_700_000_000_000, None, Some(b"z"), &[]);
        n += 1;
        let (short, reused) = walks_agree_on_mutations(&b.build(), n, 1);
        assert!(short > 0 && short < n, "{short} of {n} in short form");
        assert!(reused >= 29, "{reused} reused a decoded length");
    }
}
