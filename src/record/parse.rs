//! One record's wire form (Kafka's `DefaultRecord`) parsed in place: the
//! full parse, which names every error, and the short-form parse from
//! 8-byte words that nearly every record takes. Both return spans (start
//! and length, [`Span`]) of the records' bytes and build nothing.

use super::error::{DecodeError, Result};
use super::varint::{unzig, Reader};
use super::view::Span;

/// One record's fields, parsed in place: spans of the records data.
pub(super) struct Parsed {
    pub(super) ts_delta: i64,
    pub(super) offset_delta: i32,
    pub(super) key: Span,
    pub(super) value: Span,
    /// The headers' bytes (after the count) and how many there are.
    pub(super) headers: Span,
    pub(super) header_count: i32,
    /// Where the next record starts.
    pub(super) end: usize,
}

/// Parses the record at `pos` of `data` (a batch's records, decompressed),
/// handing each header to `header` (its key checked to be UTF-8) and
/// building nothing else.
pub(super) fn parse_record(
    data: &[u8],
    pos: usize,
    mut header: impl FnMut(&str, Option<std::ops::Range<usize>>),
) -> Result<Parsed> {
    let mut r = Reader::new(data.get(pos..).ok_or(DecodeError::Truncated {
        what: "record",
        needed: pos,
        available: data.len(),
    })?);
    let len = r.varint("record length")?;
    if len < 0 || len as usize > r.remaining() {
        return Err(DecodeError::LengthOutOfBounds {
            what: "record",
            length: len.into(),
            min: 0,
            max: r.remaining() as i64,
        });
    }
    let start = pos + r.position();
    let end = start + len as usize;
    // In bounds: `len` is at most the bytes after the length varint.
    let body = data.get(start..end).ok_or(DecodeError::Truncated {
        what: "record",
        needed: end,
        available: data.len(),
    })?;
    let mut r = Reader::new(body);
    let _attributes = r.u8("record attributes")?;
    let ts_delta = r.varlong("record timestamp delta")?;
    let offset_delta = r.varint("record offset delta")?;
    let field = |r: &mut Reader<'_>, what| -> Result<Option<std::ops::Range<usize>>> {
        let n = r.varint(what)?;
        if n < -1 || n as i64 > r.remaining() as i64 {
            return Err(DecodeError::LengthOutOfBounds {
                what,
                length: n.into(),
                min: -1,
                max: r.remaining() as i64,
            });
        }
        if n == -1 {
            return Ok(None);
        }
        let range = r.take(n as usize, what)?;
        Ok(Some(start + range.start..start + range.end))
    };
    let key = field(&mut r, "record key")?;
    let value = field(&mut r, "record value")?;
    let n_headers = r.varint("header count")?;
    // Each header takes at least two bytes.
    if n_headers < 0 || n_headers as usize > r.remaining() / 2 {
        return Err(DecodeError::LengthOutOfBounds {
            what: "header count",
            length: n_headers.into(),
            min: 0,
            max: (r.remaining() / 2) as i64,
        });
    }
    let headers_start = start + r.position();
    for _ in 0..n_headers {
        let Some(k) = field(&mut r, "header key")? else {
            return Err(DecodeError::NullHeaderKey);
        };
        let key = data.get(k.clone()).ok_or(DecodeError::Truncated {
            what: "header key",
            needed: k.end,
            available: data.len(),
        })?;
        let k = std::str::from_utf8(key).map_err(|_| DecodeError::InvalidHeaderKey)?;
        let v = field(&mut r, "header value")?;
        header(k, v);
    }
    if r.remaining() != 0 {
        return Err(DecodeError::LengthOutOfBounds {
            what: "record",
            length: len.into(),
            min: r.position() as i64,
            max: r.position() as i64,
        });
    }
    Ok(Parsed {
        ts_delta,
        offset_delta,
        key: Span::of(key),
        value: Span::of(value),
        headers: Span::of(Some(headers_start..end)),
        header_count: n_headers,
        end,
    })
}

/// The 8 bytes at `at` as a little-endian word; `None` when fewer remain.
/// Little-endian on purpose: the word's low byte is the byte at `at`, so a
/// varint's bytes read from the low bits up, in the order they come.
#[expect(
    clippy::little_endian_bytes,
    reason = "the word's low byte must be the byte at `at`"
)]
#[inline(always)]
pub(super) fn word_at(data: &[u8], at: usize) -> Option<u64> {
    let bytes: [u8; 8] = data.get(at..)?.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(bytes))
}

/// The varint at the start of the little-endian word `w` when it takes one
/// or two bytes: its raw (zigzag-encoded) value and its length.
#[inline(always)]
pub(super) fn short_varint(w: u64) -> Option<(u64, usize)> {
    if w & 0x80 == 0 {
        Some((w & 0x7f, 1))
    } else if w & 0x8000 == 0 {
        // The second byte's 7 bits land at bits 7..14.
        Some(((w & 0x7f) | ((w >> 1) & 0x3f80), 2))
    } else {
        None
    }
}

/// A record length at the start of the little-endian word `w` when it is a
/// non-negative (even raw) varint of one or two bytes: the length and the
/// varint's size (a function of the word's low 16 bits alone).
#[inline(always)]
pub(super) fn short_length(w: u64) -> Option<(u64, usize)> {
    if w & 0x81 == 0 {
        Some(((w >> 1) & 0x3f, 1))
    } else if w & 0x8081 == 0x80 {
        Some((((w >> 1) & 0x3f) | ((w >> 2) & 0x1fc0), 2))
    } else {
        None
    }
}

/// The record at `at` parsed from 8-byte words, when it has the short form
/// [`short_record`](super::validation) reads (every varint of one or two bytes, no headers):
/// the fields [`parse_record`] would return. `None` decides nothing (the
/// caller then parses it with `parse_record`, which names any error); a
/// record is accepted only when the positions reached end exactly at its
/// end, so every byte read lies inside it.
#[inline(always)]
pub(super) fn short_parsed(data: &[u8], at: usize) -> Option<Parsed> {
    let (len, l) = short_length(word_at(data, at)?)?;
    let end = at + l + len as usize;
    let mut i = at + l + 1;
    let w = word_at(data, i)?;
    let (ts, tl) = short_varint(w)?;
    let w = w >> (8 * tl);
    let (delta, dl) = short_varint(w)?;
    let (key, kl) = short_varint(w >> (8 * dl))?;
    i += tl + dl + kl;
    // A null field (raw -1, zigzagged 1) or one of `raw / 2` bytes at `i`.
    let field = |raw: u64, i: &mut usize| -> Option<Span> {
        match raw {
            1 => Some(Span::NONE),
            r if r & 1 == 0 => {
                let start = *i;
                *i += (r >> 1) as usize;
                // Fits: records bytes are fewer than 2^31 (`Span`).
                Some(Span {
                    start: start as u32,
                    len: (r >> 1) as u32,
                })
            }
            _ => None,
        }
    };
    let key = field(key, &mut i)?;
    let (value, vl) = short_varint(word_at(data, i)?)?;
    i += vl;
    let value = field(value, &mut i)?;
    // No headers: a count of 0, the record's last byte.
    if *data.get(i)? != 0 || i + 1 != end {
        return None;
    }
    Some(Parsed {
        ts_delta: unzig(ts),
        offset_delta: i32::try_from(unzig(delta)).ok()?,
        key,
        value,
        headers: Span {
            start: end as u32,
            len: 0,
        },
        header_count: 0,
        end,
    })
}

#[cfg(any(test, fuzzing))]
/// For the fuzz harness: at every record start the full parse reaches in
/// `data`, the short-form parse, where it accepts the record, gives exactly
/// what the full parse gives.
pub(super) fn short_parse_agrees(data: &[u8]) -> bool {
    let mut at = 0;
    while let Ok(full) = parse_record(data, at, |_, _| {}) {
        if let Some(short) = short_parsed(data, at) {
            let same = (
                short.ts_delta,
                short.offset_delta,
                &short.key,
                &short.value,
                &short.headers,
                short.end,
            ) == (
                full.ts_delta,
                full.offset_delta,
                &full.key,
                &full.value,
                &full.headers,
                full.end,
            ) && full.header_count == 0;
            if !same {
                return false;
            }
        }
        if full.end <= at {
            break;
        }
        at = full.end;
    }
    // And where the full parse fails, the short one accepts nothing.
    short_parsed(data, at).is_none() || parse_record(data, at, |_, _| {}).is_ok()
}
