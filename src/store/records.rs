//! The low-level data path of a store: appends and reads of one partition
//! by topic name, and flushing every partition.

use super::Store;
#[cfg(doc)]
use crate::error::Error;
use crate::error::Result;
use crate::log::{AppendInfo, Durability, LogRead, PartitionLog};
use crate::record::Record;
use std::sync::Arc;

impl Store {
    /// The log of one partition, for direct access.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`].
    pub fn partition(&self, topic: &str, partition: u32) -> Result<Arc<PartitionLog>> {
        self.topic(topic)?.partition(partition)
    }

    /// Appends `records` as one batch (compressed with the topic's
    /// `compression.type`) to an explicit partition.
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`], and
    /// [`PartitionLog::append`]'s errors.
    pub fn append(
        &self,
        topic: &str,
        partition: u32,
        records: &[Record],
        durability: Durability,
    ) -> Result<AppendInfo> {
        let t = self.topic(topic)?;
        let compression = t.config.read().compression;
        t.partition(partition)?
            .append_records(records, compression, durability)
    }

    /// Reads whole batches of one partition from `offset` (the low-level
    /// API: the caller keeps its own offsets).
    ///
    /// # Errors
    /// [`Error::UnknownTopic`], [`Error::UnknownPartition`],
    /// [`Error::OffsetOutOfRange`], [`Error::Corrupt`].
    pub fn fetch(
        &self,
        topic: &str,
        partition: u32,
        offset: i64,
        max_bytes: usize,
    ) -> Result<LogRead> {
        self.partition(topic, partition)?.read(offset, max_bytes)
    }

    /// fsyncs every partition.
    ///
    /// # Errors
    /// The first fsync error (that partition is then poisoned).
    pub fn flush(&self) -> Result<()> {
        for log in self.all_logs() {
            log.flush()?;
        }
        Ok(())
    }
}
