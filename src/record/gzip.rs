//! gzip batches (codec 1), as Kafka's `GzipCompression` reads and writes
//! them through Java's `GZIPInputStream` / `GZIPOutputStream`.
//!
//! Read: one or more concatenated gzip members (RFC 1952), each member's
//! CRC-32 and length checked. Like `GZIPInputStream`, bytes after a member
//! that do not begin another member (magic `1f 8b`) end the stream and are
//! ignored. Written: one member at the configured level.

use super::codec::{invalid, too_large};
use crate::error::Result;
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
