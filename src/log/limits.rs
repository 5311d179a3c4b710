//! Kafka's value ranges for settings (`LONG`, `INT`, whole milliseconds):
//! what a setting's text form can hold, so it reads back unchanged. The log
//! checks its own settings with these; the `.properties` parsers above it
//! use them too.

use crate::error::{Error, Result};
use std::time::Duration;

/// The largest value of Kafka's `LONG` settings.
pub(crate) const LONG_MAX: u64 = i64::MAX as u64;
/// The largest value of Kafka's `INT` settings.
pub(crate) const INT_MAX: u32 = i32::MAX as u32;
pub(crate) const OUTSIDE_LONG: &str = "outside Kafka's LONG range (0 to 9223372036854775807)";

/// Checks a duration setting is a whole number of milliseconds within
/// Kafka's `LONG` range: what its text form (`key=<ms>`) can hold, so it
/// reads back unchanged.
pub(crate) fn check_millis(key: &'static str, d: Duration) -> Result<()> {
    if !d.subsec_nanos().is_multiple_of(1_000_000) {
        return Err(Error::InvalidConfig {
            key,
            reason: "must be a whole number of milliseconds",
        });
    }
    if d.as_millis() > u128::from(LONG_MAX) {
        return Err(Error::InvalidConfig {
            key,
            reason: OUTSIDE_LONG,
        });
    }
    Ok(())
}
