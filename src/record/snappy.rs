//! Snappy batches (codec 2), as Kafka's `SnappyCompression` reads and writes
//! them through xerial's `SnappyInputStream` / `SnappyOutputStream`.
//!
//! The xerial framing (big-endian):
//!
//! ```text
//! header  82 'S' 'N' 'A' 'P' 'P' 'Y' 00 | version i32 (1) | compatible version i32 (1)
//! chunk   length i32 | one raw snappy block of that many bytes
//! ...     more chunks; a repeated header between chunks (concatenated streams)
//! ```
//!
//! Written: the header, then one chunk for each 32 KiB of input (xerial's
//! default block size). Read: as `SnappyInputStream` does, a stream that
//! does not start with the magic is one plain snappy block; a header whose
//! compatible version is below 1 is refused; chunks are read to the end of
//! the input, each block's declared length checked against the output limit
//! before it is decoded.

use super::codec::{invalid, too_large};
use super::error::Result;

const NAME: &str = "snappy";
const MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
const HEADER_SIZE: usize = 16;
const VERSION: i32 = 1;
const MIN_COMPATIBLE_VERSION: i32 = 1;
const BLOCK_SIZE: usize = 32 * 1024;

fn be_i32(b: &[u8], at: usize) -> Option<i32> {
    let bytes: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    Some(i32::from_be_bytes(bytes))
}

/// Decodes one raw snappy block onto the end of `out`, refusing output over
/// `limit` bytes in all.
fn block(input: &[u8], out: &mut Vec<u8>, limit: usize) -> Result<()> {
    let len = snap::raw::decompress_len(input).map_err(|e| invalid(NAME, e))?;
    if len > limit - out.len() {
        return Err(too_large(NAME));
    }
    let start = out.len();
    out.resize(start + len, 0);
    let dst = out.get_mut(start..).unwrap_or_default();
    let n = snap::raw::Decoder::new()
        .decompress(input, dst)
        .map_err(|e| invalid(NAME, e))?;
    out.truncate(start + n);
    Ok(())
}

/// Checks the xerial header at the start of `input`.
fn header(input: &[u8]) -> Result<()> {
    match be_i32(input, MAGIC.len() + 4) {
        Some(compatible) if compatible >= MIN_COMPATIBLE_VERSION => Ok(()),
        _ => Err(invalid(NAME, "incompatible xerial snappy stream version")),
    }
}

/// Decodes a xerial-framed (or plain) snappy stream, refusing output over
/// `limit` bytes.
pub(super) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    if input.is_empty() {
        // SnappyInputStream reads an empty stream as no bytes.
        return Ok(out);
    }
    if input.len() < HEADER_SIZE || !input.starts_with(&MAGIC) {
        block(input, &mut out, limit)?;
        return Ok(out);
    }
    header(input)?;
    let mut pos = HEADER_SIZE;
    while pos < input.len() {
        let rest = input.get(pos..).unwrap_or_default();
        if rest.starts_with(&MAGIC) {
            header(rest)?;
            pos += HEADER_SIZE;
            continue;
        }
        let len = be_i32(rest, 0).ok_or_else(|| invalid(NAME, "truncated chunk length"))?;
        let len = usize::try_from(len).map_err(|_| invalid(NAME, "negative chunk length"))?;
        let chunk = rest
            .get(4..4 + len)
            .ok_or_else(|| invalid(NAME, "chunk longer than the stream"))?;
        block(chunk, &mut out, limit)?;
        pos += 4 + len;
    }
    Ok(out)
}

/// Appends `raw` to `out` in xerial's framing, one chunk a 32 KiB block.
pub(super) fn compress_into(raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_be_bytes());
    out.extend_from_slice(&MIN_COMPATIBLE_VERSION.to_be_bytes());
    let mut encoder = snap::raw::Encoder::new();
    for chunk in raw.chunks(BLOCK_SIZE) {
        let len_at = out.len();
        out.extend_from_slice(&[0; 4]);
        let data_at = out.len();
        out.resize(data_at + snap::raw::max_compress_len(chunk.len()), 0);
        let dst = out.get_mut(data_at..).unwrap_or_default();
        let n = encoder.compress(chunk, dst).map_err(|e| invalid(NAME, e))?;
        out.truncate(data_at + n);
        // A chunk is at most max_compress_len(32 KiB) bytes: it fits an i32.
        let len = i32::try_from(n).map_err(|_| invalid(NAME, "chunk too large"))?;
        if let Some(slot) = out.get_mut(len_at..data_at) {
            slot.copy_from_slice(&len.to_be_bytes());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::DecodeError;

    const LIMIT: usize = 1 << 20;

    fn framed(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        compress_into(raw, &mut out).unwrap();
        out
    }

    fn invalid(r: Result<Vec<u8>>) -> bool {
        matches!(
            r,
            Err(DecodeError::InvalidCompressed {
                codec: "snappy",
                ..
            })
        )
    }

    #[test]
    fn xerial_streams_round_trip_in_32_kib_chunks() {
        let raw: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let f = framed(&raw);
        assert_eq!(&f[..16], b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01");
        // Four chunks: 32 KiB, 32 KiB, 32 KiB and the rest.
        let mut chunks = 0;
        let mut pos = 16;
        while pos < f.len() {
            let len = i32::from_be_bytes(f[pos..pos + 4].try_into().unwrap()) as usize;
            pos += 4 + len;
            chunks += 1;
        }
        assert_eq!((chunks, pos), (4, f.len()));
        assert_eq!(decompress(&f, LIMIT).unwrap(), raw);
        assert_eq!(decompress(&framed(b""), LIMIT).unwrap(), b"");
        assert_eq!(decompress(b"", LIMIT).unwrap(), b"");
    }

    #[test]
    fn a_plain_snappy_block_and_concatenated_streams_are_read_as_xerial_reads_them() {
        let block = snap::raw::Encoder::new()
            .compress_vec(b"plain block")
            .unwrap();
        assert_eq!(decompress(&block, LIMIT).unwrap(), b"plain block");
        let mut two = framed(b"first ");
        two.extend_from_slice(&framed(b"second"));
        assert_eq!(decompress(&two, LIMIT).unwrap(), b"first second");
    }

    #[test]
    fn malformed_xerial_streams_are_invalid() {
        let good = framed(b"some bytes to compress, some bytes to compress");
        // Compatible version 0.
        let mut v0 = good.clone();
        v0[12..16].copy_from_slice(&0i32.to_be_bytes());
        assert!(invalid(decompress(&v0, LIMIT)));
        // A negative chunk length.
        let mut neg = good.clone();
        neg[16..20].copy_from_slice(&(-1i32).to_be_bytes());
        assert!(invalid(decompress(&neg, LIMIT)));
        // A chunk longer than the stream, and a cut length field.
        assert!(invalid(decompress(&good[..good.len() - 1], LIMIT)));
        assert!(invalid(decompress(&good[..18], LIMIT)));
        // A block whose declared length passes the limit is refused before
        // it is decoded.
        assert!(matches!(
            decompress(&good, 10),
            Err(DecodeError::DecompressedTooLarge {
                codec: "snappy",
                ..
            })
        ));
    }
}
