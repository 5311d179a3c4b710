//! Zstandard batches (codec 4), as Kafka's `ZstdCompression` reads and
//! writes them (zstd-jni's streams over the reference C library, which the
//! `zstd` crate also binds).
//!
//! Read: one or more zstd frames back to back (skippable frames allowed),
//! with the library's default window limit (128 MiB, as zstd-jni); anything
//! else after a frame is an error. Written: one frame at the configured
//! level.

use super::codec::{invalid, too_large};
use crate::error::Result;
use std::io::Read;

const NAME: &str = "zstd";

/// Decodes the zstd frames in `input`, refusing output over `limit` bytes.
pub(super) fn decompress(input: &[u8], limit: usize) -> Result<Vec<u8>> {
    let mut decoder =
        zstd::stream::read::Decoder::with_buffer(input).map_err(|e| invalid(NAME, e))?;
    let mut out = Vec::with_capacity(input.len().saturating_mul(4).min(limit));
    (&mut decoder)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| invalid(NAME, e))?;
    if out.len() > limit {
        return Err(too_large(NAME));
    }
    Ok(out)
}

/// Appends `raw` as one zstd frame at `level` to `out`.
pub(super) fn compress_into(raw: &[u8], level: i32, out: &mut Vec<u8>) -> Result<()> {
    let frame = zstd::bulk::compress(raw, level).map_err(|e| invalid(NAME, e))?;
    out.extend_from_slice(&frame);
    Ok(())
}
