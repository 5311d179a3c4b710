//! Value parsers and range checks of the settings' text form, shared by
//! every config's key mapping (and by the validation of values built in
//! code, which must read back unchanged from their text). Keys are
//! `&'static str` so errors can name them.

use crate::error::{Error, Result};
use crate::record::Compression;
use std::time::Duration;

// Kafka's value ranges are the log layer's (its settings are checked
// there, below this module).
pub(crate) use crate::log::limits::{check_millis, INT_MAX, LONG_MAX, OUTSIDE_LONG};

pub(crate) fn invalid(key: &'static str, reason: &'static str) -> Error {
    Error::InvalidConfig { key, reason }
}

/// A non-negative integer.
pub(crate) fn parse_u64(key: &'static str, v: &str) -> Result<u64> {
    v.trim()
        .parse()
        .map_err(|_| invalid(key, "expected a non-negative integer"))
}

/// A Kafka `LONG` setting: non-negative, at most `i64::MAX`.
pub(crate) fn parse_long(key: &'static str, v: &str) -> Result<u64> {
    let n = parse_u64(key, v)?;
    if n > LONG_MAX {
        return Err(invalid(key, OUTSIDE_LONG));
    }
    Ok(n)
}

/// A Kafka `INT` setting: non-negative, at most `i32::MAX`.
pub(crate) fn parse_int(key: &'static str, v: &str) -> Result<u32> {
    v.trim()
        .parse()
        .ok()
        .filter(|&n| n <= INT_MAX)
        .ok_or_else(|| invalid(key, "expected a non-negative 32-bit integer"))
}

/// Kafka's −1 means "none"; other values must be non-negative `LONG`s.
pub(crate) fn parse_optional_long(key: &'static str, v: &str) -> Result<Option<u64>> {
    if v.trim() == "-1" {
        Ok(None)
    } else {
        parse_long(key, v).map(Some)
    }
}

/// A count or size held in memory.
pub(crate) fn parse_usize(key: &'static str, v: &str) -> Result<usize> {
    v.trim()
        .parse()
        .map_err(|_| invalid(key, "expected a non-negative integer"))
}

pub(crate) fn parse_positive_usize(key: &'static str, v: &str) -> Result<usize> {
    match parse_usize(key, v)? {
        0 => Err(invalid(key, "must be positive")),
        n => Ok(n),
    }
}

/// A time in milliseconds (a `LONG`).
pub(crate) fn parse_ms(key: &'static str, v: &str) -> Result<Duration> {
    parse_long(key, v).map(Duration::from_millis)
}

/// A time in milliseconds that must not be zero.
pub(crate) fn parse_positive_ms(key: &'static str, v: &str) -> Result<Duration> {
    let d = parse_ms(key, v)?;
    if d.is_zero() {
        return Err(invalid(key, "must be positive"));
    }
    Ok(d)
}

/// A retention-style time in `unit_ms` milliseconds: −1 (any negative, as
/// Kafka's broker settings) is unlimited.
pub(crate) fn parse_retention(
    key: &'static str,
    v: &str,
    unit_ms: u64,
) -> Result<Option<Duration>> {
    let n: i64 = v
        .trim()
        .parse()
        .map_err(|_| invalid(key, "expected an integer (-1 for unlimited)"))?;
    if n < 0 {
        return Ok(None);
    }
    (n as u64)
        .checked_mul(unit_ms)
        .map(|ms| Some(Duration::from_millis(ms)))
        .ok_or_else(|| invalid(key, "too large"))
}

pub(crate) fn parse_bool(key: &'static str, v: &str) -> Result<bool> {
    // Kafka's ConfigDef compares case-insensitively.
    let v = v.trim();
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(invalid(key, "expected true or false"))
    }
}

/// `compression.type` for producers and brokers.
pub(crate) fn parse_compression(key: &'static str, v: &str) -> Result<Compression> {
    let c = match v.trim() {
        "uncompressed" => Compression::None,
        name => name
            .parse::<Compression>()
            .map_err(|_| invalid(key, "expected none, gzip, snappy, lz4 or zstd"))?,
    };
    crate::record::check_compression(c, None).map_err(|_| {
        invalid(
            key,
            "this codec was left out of the build (kafkalite's gzip, snappy or zstd feature)",
        )
    })?;
    Ok(c)
}

/// `compression.gzip.level`, `compression.zstd.level` or
/// `compression.lz4.level`: an integer, checked against the codec's range
/// once `compression.type` is known.
pub(crate) fn parse_level(key: &'static str, v: &str) -> Result<i32> {
    v.trim()
        .parse::<i32>()
        .map_err(|_| invalid(key, "expected an integer"))
}
