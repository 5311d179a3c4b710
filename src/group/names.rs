//! Consumer group ids and offset metadata: what may reach the offset store.
//!
//! Kafka accepts any string as a group id; the offset record holds it with
//! a 16-bit length, so longer ids would be cut. kafkalite also refuses
//! control characters, so a group id can be shown and listed safely, and
//! checks every id read back from the offset log the same way.

use crate::error::{Error, Result};

/// Kafka's `offset.metadata.max.bytes` default: the largest metadata string
/// a commit may carry.
pub const OFFSET_METADATA_MAX_BYTES: usize = 4096;

/// The longest group id the offset record's `int16` length can hold.
pub(crate) const GROUP_ID_MAX_BYTES: usize = i16::MAX as usize;

fn refuse(group: &str, reason: &'static str) -> Error {
    Error::InvalidGroupId {
        group: group.chars().take(64).collect(),
        reason,
    }
}

/// Checks a consumer group id: not empty, at most 32,767 bytes, no control
/// characters.
///
/// # Errors
/// [`Error::InvalidGroupId`] saying what is wrong.
pub fn validate_group_id(group: &str) -> Result<()> {
    if group.is_empty() {
        return Err(refuse(group, "empty"));
    }
    if group.len() > GROUP_ID_MAX_BYTES {
        return Err(refuse(group, "longer than 32767 bytes"));
    }
    if group.chars().any(char::is_control) {
        return Err(refuse(group, "control characters are not allowed"));
    }
    Ok(())
}

/// Checks a commit's metadata against `offset.metadata.max.bytes`.
///
/// # Errors
/// [`Error::OffsetMetadataTooLarge`].
pub(crate) fn validate_offset_metadata(metadata: &str) -> Result<()> {
    if metadata.len() > OFFSET_METADATA_MAX_BYTES {
        return Err(Error::OffsetMetadataTooLarge {
            size: metadata.len(),
            max: OFFSET_METADATA_MAX_BYTES,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn group_ids_are_checked_like_kafkas_with_no_control_characters() {
        for ok in [
            "g",
            "billing",
            "a,b",
            "with space",
            "naïve",
            &"x".repeat(32767),
        ] {
            validate_group_id(ok).unwrap();
        }
        for bad in ["", "a\nb", "\0", "tab\t", &"x".repeat(32768)] {
            assert!(
                matches!(validate_group_id(bad), Err(Error::InvalidGroupId { .. })),
                "{bad:?}"
            );
        }
    }
}
