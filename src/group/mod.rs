//! Consumer groups: the in-process coordinator, partition assignors and the
//! durable offset store.

mod assignor;
mod coordinator;
mod names;
mod offsets;

pub use assignor::{Assignor, RangeAssignor, RoundRobinAssignor};
pub use coordinator::GroupMembers;
pub(crate) use coordinator::{Group, GroupCoordinator, MemberView};
pub(crate) use names::validate_offset_metadata;
pub use names::{validate_group_id, OFFSET_METADATA_MAX_BYTES};
pub use offsets::OffsetAndMetadata;
pub(crate) use offsets::{now_ms, OffsetStore, OFFSETS_DIR};

use std::fmt;
use std::sync::Arc;

/// A topic and one of its partitions.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct TopicPartition {
    /// The topic.
    pub topic: Arc<str>,
    /// The partition.
    pub partition: u32,
}

impl TopicPartition {
    /// A topic-partition.
    pub fn new(topic: impl Into<Arc<str>>, partition: u32) -> Self {
        TopicPartition {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}
