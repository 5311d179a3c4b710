//! Commits: the consumed positions written to the group's offsets, sync,
//! async (callbacks run on the next call) and automatic.

use super::Consumer;
use crate::error::{Error, Result};
use crate::group::{OffsetAndMetadata, TopicPartition};
use crate::log::Durability;
use std::time::Instant;

impl Consumer {
    pub(super) fn maybe_auto_commit(&mut self) {
        if !self.config.enable_auto_commit
            || self.config.group_id.is_none()
            || self.last_auto_commit.elapsed() < self.config.auto_commit_interval
        {
            return;
        }
        // Failures are retried at the next interval, as Kafka does.
        let _ = self.commit(self.consumed_offsets(), Durability::Written);
    }

    /// Positions of the assigned partitions (the next offsets to read);
    /// partitions of deleted topics have none to commit.
    pub(super) fn consumed_offsets(&self) -> Vec<(TopicPartition, OffsetAndMetadata)> {
        self.assignment
            .iter()
            .filter(|tp| self.partition_exists(tp))
            .filter_map(|tp| {
                self.positions
                    .get(tp)
                    .copied()
                    .flatten()
                    .map(|p| (tp.clone(), OffsetAndMetadata::new(p)))
            })
            .collect()
    }

    pub(super) fn commit(
        &mut self,
        offsets: Vec<(TopicPartition, OffsetAndMetadata)>,
        durability: Durability,
    ) -> Result<()> {
        let group = self.group_id()?.to_owned();
        if offsets.is_empty() {
            // Nothing to commit (as Kafka): not an error, whatever the
            // generation, e.g. in the revoke callback of a member that
            // owned nothing.
            return Ok(());
        }
        match &self.membership {
            Some(m) => m.group.check_commit(Some(&m.member_id), m.generation)?,
            None => {
                if let Some(g) = self.store.groups().existing(&group) {
                    g.check_commit(None, -1)?;
                }
            }
        }
        self.store.offsets().commit(&group, &offsets, durability)?;
        self.last_auto_commit = Instant::now();
        Ok(())
    }

    /// Commits the positions of all assigned partitions; durable (fsynced)
    /// when it returns.
    ///
    /// # Errors
    /// [`Error::IllegalGeneration`] when a rebalance moved the partitions
    /// away; [`Error::InvalidConfig`] without a `group.id`; I/O errors.
    pub fn commit_sync(&mut self) -> Result<()> {
        self.check_open()?;
        self.run_async_callbacks();
        self.commit(self.consumed_offsets(), Durability::Fsync)
    }

    /// Commits explicit offsets (the next offset to read per partition), for
    /// processing that finishes out of order. Durable when it returns.
    ///
    /// # Errors
    /// As [`commit_sync`](Self::commit_sync); [`Error::UnknownTopic`] /
    /// [`Error::UnknownPartition`] for a partition that does not exist (as
    /// Kafka); [`Error::OffsetOutOfRange`] for an offset below 0 or beyond
    /// the partition's log end. Nothing is committed then.
    pub fn commit_offsets(
        &mut self,
        offsets: &[(TopicPartition, OffsetAndMetadata)],
    ) -> Result<()> {
        self.check_open()?;
        for (tp, o) in offsets {
            // Looked up without auto-creation: a commit creates nothing.
            if self.store.existing_partition_count(&tp.topic).is_none() {
                return Err(Error::UnknownTopic {
                    topic: tp.topic.to_string(),
                });
            }
            let log = self.store.partition(&tp.topic, tp.partition)?;
            let (start, end) = (log.log_start_offset(), log.log_end_offset());
            if o.offset < 0 || o.offset > end {
                return Err(Error::OffsetOutOfRange {
                    requested: o.offset,
                    start,
                    end,
                });
            }
        }
        self.commit(offsets.to_vec(), Durability::Fsync)
    }

    /// Commits the positions without waiting for the fsync; `callback` runs
    /// with the outcome at the next `poll`, `commit_sync` or `close` (as in
    /// Kafka, on the consumer's thread).
    pub fn commit_async(&mut self, callback: impl FnOnce(Result<()>) + Send + 'static) {
        let r = self
            .check_open()
            .and_then(|()| self.commit(self.consumed_offsets(), Durability::Written));
        self.async_results.push((Box::new(callback), r));
    }

    pub(super) fn run_async_callbacks(&mut self) {
        for (cb, r) in self.async_results.drain(..) {
            cb(r);
        }
    }

    /// The committed offset of a partition for this consumer's group.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] without a `group.id`.
    pub fn committed(&self, tp: &TopicPartition) -> Result<Option<OffsetAndMetadata>> {
        Ok(self.store.offsets().get(self.group_id()?, tp))
    }
}
