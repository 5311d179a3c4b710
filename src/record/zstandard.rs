//! Zstandard batches (codec 4), as Kafka's `ZstdCompression` reads and
//! writes them (zstd-jni's streams over the reference C library, which the
//! `zstd` crate also binds).
//!
//! Read: one or more zstd frames back to back (skippable frames allowed),
//! with the library's default window limit (128 MiB, as zstd-jni); anything
//! else after a frame is an error. Written: one frame at the configured
//! level.

use super::codec::{invalid, too_large};
use super::error::Result;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::DecodeError;

    fn frame(raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        compress_into(raw, 3, &mut out).unwrap();
        out
    }

    #[test]
    fn concatenated_and_skippable_frames_are_read_and_garbage_after_a_frame_is_not() {
        let mut two = frame(b"first ");
        // A skippable frame: magic 0x184D2A50, then a 4-byte length.
        two.extend_from_slice(&[0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9]);
        two.extend_from_slice(&frame(b"second"));
        assert_eq!(decompress(&two, 1 << 20).unwrap(), b"first second");
        let mut junk = frame(b"only");
        junk.extend_from_slice(b"junk");
        assert!(matches!(
            decompress(&junk, 1 << 20),
            Err(DecodeError::InvalidCompressed { codec: "zstd", .. })
        ));
    }

    #[test]
    fn cut_frames_are_invalid_and_big_ones_refused() {
        let good = frame(&[7u8; 50_000]);
        for cut in [1, 5, good.len() / 2, good.len() - 1] {
            assert!(
                matches!(
                    decompress(&good[..cut], 1 << 20),
                    Err(DecodeError::InvalidCompressed { codec: "zstd", .. })
                ),
                "cut at {cut}"
            );
        }
        assert!(matches!(
            decompress(&good, 49_999),
            Err(DecodeError::DecompressedTooLarge { codec: "zstd", .. })
        ));
        assert_eq!(decompress(&good, 50_000).unwrap().len(), 50_000);
    }
}
