//! gzip batches (codec 1), as Kafka's `GzipCompression` reads and writes
//! them through Java's `GZIPInputStream` / `GZIPOutputStream`.
//!
//! Read: one or more concatenated gzip members (RFC 1952), each member's
//! CRC-32 and length checked. Like `GZIPInputStream`, bytes after a member
//! that do not begin another member (magic `1f 8b`) end the stream and are
//! ignored. Written: one member at the configured level.

use super::codec::{invalid, too_large};
use super::error::Result;

use flate2::bufread::GzDecoder;
use flate2::write::GzEncoder;
use std::io::{Read, Write};

const NAME: &str = "gzip";
const MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Decodes the gzip stream `input`, refusing output over `limit` bytes.
pub(super) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len().saturating_mul(4).min(limit));
    let mut rest = input;
    loop {
        let mut member = GzDecoder::new(rest);
        let budget = (limit - out.len()) as u64 + 1;
        (&mut member)
            .take(budget)
            .read_to_end(&mut out)
            .map_err(|e| invalid(NAME, e))?;
        if out.len() > limit {
            return Err(too_large(NAME));
        }
        rest = member.into_inner();
        if !rest.starts_with(&MAGIC) {
            return Ok(out);
        }
    }
}

/// Appends `raw` as one gzip member at `level` (1–9) to `out`.
pub(super) fn compress_into(raw: &[u8], level: i32, out: &mut Vec<u8>) -> Result<()> {
    let level = flate2::Compression::new(level.clamp(1, 9).unsigned_abs());
    let mut e = GzEncoder::new(out, level);
    e.write_all(raw).map_err(|e| invalid(NAME, e))?;
    e.finish().map_err(|e| invalid(NAME, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::DecodeError;

    fn member(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        compress_into(raw, 6, &mut out).unwrap();
        out
    }

    #[test]
    fn concatenated_members_are_one_stream_and_other_trailing_bytes_end_it() {
        let mut two = member(b"first ");
        two.extend_from_slice(&member(b"second"));
        assert_eq!(decompress(&two, 1 << 20).unwrap(), b"first second");
        // GZIPInputStream stops at bytes that do not start a member.
        let mut junk = member(b"only");
        junk.extend_from_slice(b"\x00\x01junk");
        assert_eq!(decompress(&junk, 1 << 20).unwrap(), b"only");
    }

    #[test]
    fn damaged_members_are_invalid_and_big_ones_refused() {
        let good = member(&[b'z'; 10_000]);
        let mut crc = good.clone();
        let n = crc.len();
        crc[n - 8] ^= 1; // the member's CRC-32
        assert!(matches!(
            decompress(&crc, 1 << 20),
            Err(DecodeError::InvalidCompressed { codec: "gzip", .. })
        ));
        assert!(matches!(
            decompress(&good[..good.len() - 3], 1 << 20),
            Err(DecodeError::InvalidCompressed { codec: "gzip", .. })
        ));
        assert!(matches!(
            decompress(&good, 9_999),
            Err(DecodeError::DecompressedTooLarge { codec: "gzip", .. })
        ));
        assert_eq!(decompress(&good, 10_000).unwrap().len(), 10_000);
    }
}
