//! Retention and compaction over a store's topics, as the background
//! thread runs them, and `delete_records`.

use super::Store;
use crate::config::TopicConfig;
use crate::error::Result;
use crate::group::TopicPartition;
use crate::log::{
    CompactionOutcome, CompactionPolicy, PartitionLog, RetentionOutcome, RetentionPolicy,
};
use crate::topic::Topic;
use std::sync::Arc;

/// What [`Store::apply_retention`] removed, per partition that changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetentionReport {
    /// Partitions where retention deleted or compaction cleaned something.
    pub partitions: Vec<PartitionCleaning>,
}

impl RetentionReport {
    /// Segments deleted by retention, over all partitions.
    pub fn segments_deleted(&self) -> usize {
        self.partitions
            .iter()
            .map(|p| p.retention.segments_deleted)
            .sum()
    }

    /// Bytes deleted by retention and freed by compaction.
    pub fn bytes_freed(&self) -> u64 {
        self.partitions
            .iter()
            .map(|p| {
                p.retention.bytes_deleted
                    + p.compaction
                        .bytes_before
                        .saturating_sub(p.compaction.bytes_after)
            })
            .sum()
    }
}

/// One partition of a [`RetentionReport`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PartitionCleaning {
    /// The partition.
    pub partition: TopicPartition,
    /// What retention deleted.
    pub retention: RetentionOutcome,
    /// What compaction removed.
    pub compaction: CompactionOutcome,
}

impl Store {
    /// Applies retention and compaction to every topic (or one) now, as the
    /// background thread does every `retention_check_interval`. Compaction
    /// here ignores `min.cleanable.dirty.ratio` (the background thread
    /// honours it).
    ///
    /// # Errors
    /// [`Error::UnknownTopic`](crate::Error::UnknownTopic); the first I/O error (the other partitions
    /// are still processed).
    pub fn apply_retention(&self, topic: Option<&str>) -> Result<RetentionReport> {
        self.apply_retention_at(topic, crate::group::now_ms(), true)
    }

    /// [`apply_retention`](Self::apply_retention) with an explicit clock
    /// (milliseconds since the epoch) for ages, and whether compaction is
    /// forced or waits for the dirty ratio.
    ///
    /// # Errors
    /// As [`apply_retention`](Self::apply_retention).
    pub fn apply_retention_at(
        &self,
        topic: Option<&str>,
        now_ms: i64,
        force_compaction: bool,
    ) -> Result<RetentionReport> {
        self.check_writable()?;
        let topics: Vec<Arc<Topic>> = match topic {
            Some(t) => vec![self.topic(t)?],
            None => self.inner.topics.read().values().cloned().collect(),
        };
        let mut report = RetentionReport::default();
        let mut first_err = None;
        for t in topics {
            let config = t.config.read().clone();
            for (p, log) in t.partitions.read().clone().into_iter().enumerate() {
                let tp = TopicPartition::new(t.name.as_str(), p as u32);
                match self.clean_partition(&config, &tp, &log, now_ms, force_compaction) {
                    Ok(Some(r)) => report.partitions.push(r),
                    Ok(None) => {}
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
        }
        // The offset store is compacted like `__consumer_offsets`.
        let offsets_policy = CompactionPolicy::default();
        if let Err(e) = self
            .inner
            .offsets
            .log()
            .compact(&offsets_policy, now_ms, force_compaction)
        {
            first_err.get_or_insert(e);
        }
        first_err.map_or(Ok(report), Err)
    }

    fn clean_partition(
        &self,
        config: &TopicConfig,
        tp: &TopicPartition,
        log: &PartitionLog,
        now_ms: i64,
        force_compaction: bool,
    ) -> Result<Option<PartitionCleaning>> {
        let mut retention = RetentionOutcome::default();
        if config.cleanup_policy.deletes() {
            let floor = if config.retain_for_groups.is_empty() {
                None
            } else {
                let committed = config.retain_for_groups.iter().map(|g| {
                    self.inner
                        .offsets
                        .get(g, tp)
                        .map_or(log.log_start_offset(), |o| o.offset)
                });
                committed.min()
            };
            let policy = RetentionPolicy {
                retention: config.retention,
                retention_bytes: config.retention_bytes,
                time_retention_floor: floor,
            };
            retention = log.apply_retention(&policy, now_ms)?;
        }
        let mut compaction = CompactionOutcome::default();
        if config.cleanup_policy.compacts() {
            let policy = CompactionPolicy {
                delete_retention: config.delete_retention,
                min_dirty_percent: config.min_dirty_percent,
            };
            compaction = log.compact(&policy, now_ms, force_compaction)?;
        }
        if retention.segments_deleted == 0 && compaction.segments_cleaned == 0 {
            return Ok(None);
        }
        Ok(Some(PartitionCleaning {
            partition: tp.clone(),
            retention,
            compaction,
        }))
    }

    /// Raises a partition's log start offset (Kafka's `DeleteRecords`):
    /// records below `before` become unreadable at once and whole segments
    /// below it are deleted. Returns the new log start offset.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`](crate::Error::UnknownTopic), [`Error::UnknownPartition`](crate::Error::UnknownPartition),
    /// [`Error::OffsetOutOfRange`](crate::Error::OffsetOutOfRange) above the high watermark.
    pub fn delete_records(&self, topic: &str, partition: u32, before: i64) -> Result<i64> {
        self.partition(topic, partition)?.delete_records(before)
    }
}
