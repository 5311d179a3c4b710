//! The one place that maps a batch's codec to its implementation: picks the
//! module (each behind its cargo feature), bounds what one batch may
//! decompress to, and gives every codec's bad input a typed error.
//!
//! Decompressing is bounded by [`MAX_DECOMPRESSED_SIZE`] for every codec,
//! checked as the output grows (never by trusting a length field), so a
//! small batch that would expand to gigabytes (a decompression bomb) is
//! refused with [`DecodeError::DecompressedTooLarge`] after at most that much
//! memory.

use super::error::{DecodeError, Result};
use super::{lz4, Compression};
use crate::error::Error;
use std::ops::RangeInclusive;

/// The most bytes one batch's records may decompress to: 256 MiB. Kafka's
/// default `max.message.bytes` is 1 MiB of compressed batch; this allows a
/// ratio of 256 there, and a batch over it is refused as
/// [`DecodeError::DecompressedTooLarge`] rather than allocated.
pub const MAX_DECOMPRESSED_SIZE: usize = 256 << 20;

/// `compression.gzip.level`: Kafka accepts 1 to 9 (and −1, zlib's default).
pub(super) const GZIP_LEVELS: RangeInclusive<i32> = 1..=9;
/// Kafka's default −1 is `Deflater.DEFAULT_COMPRESSION`, which zlib takes as 6.
pub(super) const GZIP_DEFAULT_LEVEL: i32 = 6;
/// `compression.zstd.level`: Kafka accepts zstd's minimum (−131072) to 22.
pub(super) const ZSTD_LEVELS: RangeInclusive<i32> = -131_072..=22;
/// Kafka's default `compression.zstd.level`.
pub(super) const ZSTD_DEFAULT_LEVEL: i32 = 3;

/// The cargo feature that builds `c`, when it has one.
fn feature(c: Compression) -> Option<&'static str> {
    match c {
        Compression::Gzip => Some("gzip"),
        Compression::Snappy => Some("snappy"),
        Compression::Zstd => Some("zstd"),
        Compression::None | Compression::Lz4 => None,
    }
}

/// Whether this build can read and write batches with codec `c`.
pub fn is_built(c: Compression) -> bool {
    match c {
        Compression::None | Compression::Lz4 => true,
        Compression::Gzip => cfg!(feature = "gzip"),
        Compression::Snappy => cfg!(feature = "snappy"),
        Compression::Zstd => cfg!(feature = "zstd"),
    }
}

/// Checks that `c` is built and `level` (if any) is in its range, naming the
/// setting Kafka would name.
///
/// # Errors
/// [`Error::InvalidConfig`] for `compression.type` when `c` is not built,
/// for `compression.gzip.level` / `compression.zstd.level` when the level is
/// outside the codec's range.
pub(crate) fn check_compression(c: Compression, level: Option<i32>) -> crate::Result<()> {
    if !is_built(c) {
        return Err(Error::InvalidConfig {
            key: "compression.type",
            reason: "this codec's cargo feature is not built",
        });
    }
    match (level, c.levels()) {
        (Some(l), Some((range, _))) if !range.contains(&l) => Err(Error::InvalidConfig {
            key: level_key(c),
            reason: if c == Compression::Gzip {
                "expected 1 to 9, or -1 for the default"
            } else {
                "expected -131072 to 22"
            },
        }),
        _ => Ok(()),
    }
}

/// Kafka's key for `c`'s level.
pub(crate) fn level_key(c: Compression) -> &'static str {
    match c {
        Compression::Zstd => "compression.zstd.level",
        Compression::Lz4 => "compression.lz4.level",
        _ => "compression.gzip.level",
    }
}

fn not_built(c: Compression) -> DecodeError {
    DecodeError::CodecNotBuilt {
        codec: c.codec(),
        name: c.name(),
        feature: feature(c).unwrap_or_default(),
    }
}

/// An error for bad compressed input of codec `name`.
#[cfg_attr(
    not(any(feature = "gzip", feature = "snappy", feature = "zstd")),
    expect(dead_code, reason = "every codec that reports through it is disabled")
)]
pub(super) fn invalid(name: &'static str, reason: impl std::fmt::Display) -> DecodeError {
    DecodeError::InvalidCompressed {
        codec: name,
        reason: reason.to_string(),
    }
}

/// The error for output that passed [`MAX_DECOMPRESSED_SIZE`].
pub(super) fn too_large(name: &'static str) -> DecodeError {
    DecodeError::DecompressedTooLarge {
        codec: name,
        limit: MAX_DECOMPRESSED_SIZE,
    }
}

/// Decompresses a batch's record bytes (everything after the header).
/// `Compression::None` is not compressed and is refused here by the caller.
pub(super) fn decompress(c: Compression, body: &[u8]) -> Result<Vec<u8>> {
    let limit = MAX_DECOMPRESSED_SIZE;
    match c {
        Compression::None => Ok(body.to_vec()),
        Compression::Lz4 => lz4::decompress(body, limit),
        #[cfg(feature = "gzip")]
        Compression::Gzip => super::gzip::decompress(body, limit),
        #[cfg(feature = "snappy")]
        Compression::Snappy => super::snappy::decompress(body, limit),
        #[cfg(feature = "zstd")]
        Compression::Zstd => super::zstandard::decompress(body, limit),
        #[allow(unreachable_patterns, reason = "reached when a codec feature is off")]
        other => Err(not_built(other)),
    }
}

/// The level used for `c`: `level` clamped to the codec's range, or Kafka's
/// default for the codec.
#[cfg_attr(
    not(any(feature = "gzip", feature = "zstd")),
    expect(dead_code, reason = "no codec with levels is built")
)]
pub(super) fn level_for(c: Compression, level: Option<i32>) -> i32 {
    match c.levels() {
        Some((range, default)) => level.map_or(default, |l| l.clamp(*range.start(), *range.end())),
        None => 0,
    }
}

/// Appends `raw` compressed with `c` to `out`.
///
/// # Errors
/// [`DecodeError::CodecNotBuilt`] when the codec's feature is off; the codec's
/// own failure (none is known for in-memory output) otherwise.
pub(super) fn compress_into(
    c: Compression,
    level: Option<i32>,
    raw: &[u8],
    out: &mut Vec<u8>,
) -> Result<()> {
    let _ = level;
    match c {
        Compression::None => {
            out.extend_from_slice(raw);
            Ok(())
        }
        Compression::Lz4 => {
            lz4::compress_into(raw, out);
            Ok(())
        }
        #[cfg(feature = "gzip")]
        Compression::Gzip => super::gzip::compress_into(raw, level_for(c, level), out),
        #[cfg(feature = "snappy")]
        Compression::Snappy => super::snappy::compress_into(raw, out),
        #[cfg(feature = "zstd")]
        Compression::Zstd => super::zstandard::compress_into(raw, level_for(c, level), out),
        #[allow(unreachable_patterns, reason = "reached when a codec feature is off")]
        other => Err(not_built(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_codec_left_out_of_the_build_is_named_with_its_feature() {
        for c in [Compression::Gzip, Compression::Snappy, Compression::Zstd] {
            match decompress(c, b"not compressed") {
                Err(DecodeError::InvalidCompressed { codec, .. }) => {
                    assert!(is_built(c));
                    assert_eq!(codec, c.name());
                }
                Err(DecodeError::CodecNotBuilt { name, feature, .. }) => {
                    assert!(!is_built(c));
                    assert_eq!((name, feature), (c.name(), c.name()));
                    assert!(check_compression(c, None).is_err());
                }
                other => panic!("{c:?}: {other:?}"),
            }
        }
    }
}
