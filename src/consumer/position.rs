//! Positions: seeking, pausing and resuming partitions, and lag.

use super::Consumer;
use crate::error::{Error, Result};
use crate::group::TopicPartition;
use std::collections::BTreeMap;

impl Consumer {
    fn check_assigned(&self, tp: &TopicPartition) -> Result<()> {
        if self.assignment.contains(tp) {
            Ok(())
        } else {
            Err(Error::NotAssigned {
                topic: tp.topic.to_string(),
                partition: tp.partition,
            })
        }
    }

    /// The next offset `poll` returns for an assigned partition (applying
    /// `auto.offset.reset` if there is none yet).
    ///
    /// # Errors
    /// [`Error::NotAssigned`], [`Error::NoOffsetForPartition`].
    pub fn position(&mut self, tp: &TopicPartition) -> Result<i64> {
        self.check_assigned(tp)?;
        self.resolve_position(tp)
    }

    /// Sets the next offset `poll` returns for an assigned partition. An
    /// offset out of range is handled by `auto.offset.reset` at the next poll.
    ///
    /// # Errors
    /// [`Error::NotAssigned`]; [`Error::OffsetOutOfRange`] for a negative
    /// offset (as Kafka's `seek`), the position then unchanged.
    pub fn seek(&mut self, tp: &TopicPartition, offset: i64) -> Result<()> {
        self.check_assigned(tp)?;
        if offset < 0 {
            // Kafka: "seek offset must not be a negative number".
            let log = self.store.partition(&tp.topic, tp.partition)?;
            return Err(Error::OffsetOutOfRange {
                requested: offset,
                start: log.log_start_offset(),
                end: log.high_watermark(),
            });
        }
        self.buffered.remove(tp);
        self.positions.insert(tp.clone(), Some(offset));
        Ok(())
    }

    /// Seeks to the log start of each partition.
    ///
    /// # Errors
    /// [`Error::NotAssigned`].
    pub fn seek_to_beginning(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        for tp in partitions {
            let start = self
                .store
                .partition(&tp.topic, tp.partition)?
                .log_start_offset();
            self.seek(tp, start)?;
        }
        Ok(())
    }

    /// Seeks to the end (the high watermark) of each partition.
    ///
    /// # Errors
    /// [`Error::NotAssigned`].
    pub fn seek_to_end(&mut self, partitions: &[TopicPartition]) -> Result<()> {
        for tp in partitions {
            let end = self
                .store
                .partition(&tp.topic, tp.partition)?
                .high_watermark();
            self.seek(tp, end)?;
        }
        Ok(())
    }

    /// Seeks each partition to the earliest record with a timestamp ≥ `ts`
    /// (Kafka's `offsetsForTimes` + `seek`); to the end when there is none.
    ///
    /// # Errors
    /// [`Error::NotAssigned`], [`Error::Corrupt`].
    pub fn seek_to_timestamp(&mut self, partitions: &[TopicPartition], ts: i64) -> Result<()> {
        for tp in partitions {
            let log = self.store.partition(&tp.topic, tp.partition)?;
            let offset = log
                .offset_for_timestamp(ts)?
                .map_or(log.high_watermark(), |(o, _)| o);
            self.seek(tp, offset)?;
        }
        Ok(())
    }

    /// Stops returning records from these partitions until resumed.
    pub fn pause(&mut self, partitions: &[TopicPartition]) {
        self.paused.extend(partitions.iter().cloned());
    }

    /// Resumes paused partitions.
    pub fn resume(&mut self, partitions: &[TopicPartition]) {
        for tp in partitions {
            self.paused.remove(tp);
        }
    }

    /// The paused partitions.
    pub fn paused(&self) -> Vec<TopicPartition> {
        self.paused.iter().cloned().collect()
    }

    /// Lag per assigned partition: high watermark − position.
    pub fn lag(&self) -> BTreeMap<TopicPartition, i64> {
        self.assignment
            .iter()
            .filter_map(|tp| {
                let log = self.store.partition(&tp.topic, tp.partition).ok()?;
                let pos = self.positions.get(tp).copied().flatten()?;
                Some((tp.clone(), (log.high_watermark() - pos).max(0)))
            })
            .collect()
    }
}
