//! The offset store: committed offsets per (group, topic, partition), kept
//! in an internal partition log in Kafka's `__consumer_offsets` record
//! format, so a commit is one small append and a restart replays the log.
//!
//! Files: `record.rs` (the key and value encoding), `store.rs` (the store
//! over the internal log and its in-memory cache).

mod record;
mod store;
#[cfg(test)]
mod tests;

pub(crate) use store::OffsetStore;

use super::TopicPartition;
use std::collections::BTreeMap;

/// The directory of the internal log, Kafka's name with one partition.
pub(crate) const OFFSETS_DIR: &str = "__consumer_offsets-0";

/// A committed offset: the next offset the group will read.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct OffsetAndMetadata {
    /// The next offset to read (last processed + 1).
    pub offset: i64,
    /// Free-form metadata given with the commit.
    pub metadata: String,
    /// When the commit happened (ms since the epoch).
    pub commit_timestamp: i64,
}

impl OffsetAndMetadata {
    /// An offset with no metadata, stamped now.
    pub fn new(offset: i64) -> Self {
        OffsetAndMetadata {
            offset,
            metadata: String::new(),
            commit_timestamp: now_ms(),
        }
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

type GroupOffsets = BTreeMap<TopicPartition, OffsetAndMetadata>;
