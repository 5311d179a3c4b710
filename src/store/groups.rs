//! Consumer-group administration and metrics of a store: list, describe
//! (with lag), reset and delete committed offsets.

use super::Store;
use crate::error::{Error, Result};
use crate::group::{GroupMembers, OffsetAndMetadata, TopicPartition};
use crate::log::Durability;
use crate::metrics::{GroupLag, PartitionMetrics, StoreMetrics};

/// Where [`Store::reset_group_offsets`] moves a group's offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResetTo {
    /// The log start offset (`--to-earliest`).
    Earliest,
    /// The end of the log (`--to-latest`).
    Latest,
    /// A given offset (`--to-offset`), clamped to the readable range.
    Offset(i64),
    /// The first record at or after this timestamp, in ms (`--to-datetime`).
    Timestamp(i64),
}

/// One partition of [`GroupDescription`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupPartitionOffset {
    /// The partition.
    pub partition: TopicPartition,
    /// The committed offset, if any.
    pub committed: Option<i64>,
    /// The partition's high watermark, if the topic still exists.
    pub log_end: Option<i64>,
    /// `log_end − committed`.
    pub lag: Option<i64>,
}

/// A consumer group, as [`Store::describe_group`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupDescription {
    /// The group id.
    pub group: String,
    /// The current generation.
    pub generation: i32,
    /// Whether a rebalance is in progress.
    pub rebalancing: bool,
    /// Active members and their partitions.
    pub members: Vec<(String, Vec<TopicPartition>)>,
    /// Committed offsets and lag per partition.
    pub offsets: Vec<GroupPartitionOffset>,
}

impl Store {
    /// A snapshot of every partition's offsets, size, segment count and
    /// append/fsync latency, and every group's committed offsets and lag.
    pub fn metrics(&self) -> StoreMetrics {
        let mut m = StoreMetrics::default();
        for (name, t) in self.inner.topics.read().iter() {
            for (p, log) in t.partitions.read().iter().enumerate() {
                m.partitions.push(PartitionMetrics {
                    partition: TopicPartition::new(name.as_str(), p as u32),
                    log_start_offset: log.log_start_offset(),
                    log_end_offset: log.log_end_offset(),
                    high_watermark: log.high_watermark(),
                    size: log.size(),
                    segments: log.segment_count(),
                    append_latency: log.append_latency(),
                    fsync_latency: log.fsync_latency(),
                });
            }
        }
        for group in self.inner.offsets.groups() {
            for (tp, o) in self.inner.offsets.group_offsets(&group) {
                let Ok(log) = self.partition(&tp.topic, tp.partition) else {
                    continue;
                };
                m.groups.push(GroupLag {
                    group: group.clone(),
                    lag: (log.high_watermark() - o.offset).max(0),
                    committed: o.offset,
                    partition: tp,
                });
            }
        }
        m
    }

    /// Consumer groups with committed offsets or active members, sorted.
    pub fn list_groups(&self) -> Vec<String> {
        let mut g = self.inner.offsets.groups();
        g.extend(self.inner.groups.active_groups());
        g.sort_unstable();
        g.dedup();
        g
    }

    /// A group's members, generation, and per partition its committed
    /// offset, log end and lag (what `kafka-consumer-groups.sh --describe`
    /// shows).
    ///
    /// # Errors
    /// [`Error::Closed`].
    pub fn describe_group(&self, group: &str) -> Result<GroupDescription> {
        self.check_open()?;
        let members = self
            .inner
            .groups
            .existing(group)
            .map(|g| g.describe())
            .unwrap_or(GroupMembers {
                generation: 0,
                rebalancing: false,
                members: Vec::new(),
            });
        let mut tps: std::collections::BTreeSet<TopicPartition> = self
            .inner
            .offsets
            .group_offsets(group)
            .into_keys()
            .collect();
        for (_, parts) in &members.members {
            tps.extend(parts.iter().cloned());
        }
        let offsets = tps
            .into_iter()
            .map(|tp| {
                let committed = self.inner.offsets.get(group, &tp).map(|o| o.offset);
                let log_end = self
                    .partition(&tp.topic, tp.partition)
                    .map(|l| l.high_watermark())
                    .ok();
                let lag = match (committed, log_end) {
                    (Some(c), Some(e)) => Some((e - c).max(0)),
                    _ => None,
                };
                GroupPartitionOffset {
                    partition: tp,
                    committed,
                    log_end,
                    lag,
                }
            })
            .collect();
        Ok(GroupDescription {
            group: group.to_owned(),
            generation: members.generation,
            rebalancing: members.rebalancing,
            members: members.members,
            offsets,
        })
    }

    /// The committed offset of `group` for one partition.
    pub fn committed_offset(
        &self,
        group: &str,
        topic: &str,
        partition: u32,
    ) -> Option<OffsetAndMetadata> {
        self.inner
            .offsets
            .get(group, &TopicPartition::new(topic, partition))
    }

    /// Moves a group's committed offsets on every partition of `topic`
    /// (`kafka-consumer-groups.sh --reset-offsets`). Offsets are clamped to
    /// the readable range. Returns the new offsets.
    ///
    /// # Errors
    /// [`Error::GroupNotEmpty`] while the group has active members (as in
    /// Kafka), [`Error::InvalidGroupId`], [`Error::UnknownTopic`], I/O errors.
    pub fn reset_group_offsets(
        &self,
        group: &str,
        topic: &str,
        to: ResetTo,
    ) -> Result<Vec<(TopicPartition, i64)>> {
        self.check_writable()?;
        crate::group::validate_group_id(group)?;
        self.check_group_idle(group)?;
        let t = self.topic(topic)?;
        let mut offsets = Vec::new();
        for p in 0..t.partition_count() {
            let log = t.partition(p)?;
            let (start, end) = (log.log_start_offset(), log.high_watermark());
            let offset = match to {
                ResetTo::Earliest => start,
                ResetTo::Latest => end,
                ResetTo::Offset(o) => o.clamp(start, end),
                ResetTo::Timestamp(ts) => log.offset_for_timestamp(ts)?.map_or(end, |(o, _)| o),
            };
            offsets.push((TopicPartition::new(topic, p), offset));
        }
        let commits: Vec<_> = offsets
            .iter()
            .map(|(tp, o)| (tp.clone(), OffsetAndMetadata::new(*o)))
            .collect();
        self.inner
            .offsets
            .commit(group, &commits, Durability::Fsync)?;
        Ok(offsets)
    }

    /// Deletes a group's committed offsets. Returns how many were deleted.
    ///
    /// # Errors
    /// [`Error::GroupNotEmpty`] while the group has active members;
    /// [`Error::InvalidGroupId`].
    pub fn delete_group(&self, group: &str) -> Result<usize> {
        self.check_writable()?;
        crate::group::validate_group_id(group)?;
        self.check_group_idle(group)?;
        self.inner.offsets.delete(group, None)
    }

    fn check_group_idle(&self, group: &str) -> Result<()> {
        if self
            .inner
            .groups
            .existing(group)
            .is_some_and(|g| g.is_active())
        {
            return Err(Error::GroupNotEmpty {
                group: group.to_owned(),
            });
        }
        Ok(())
    }
}
