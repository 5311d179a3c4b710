//! `Consumer::iter`: the blocking `poll` loop as an iterator.

use super::async_poll::rewind;
use super::{Consumer, ConsumerRecord, ConsumerRecords, ConsumerRecordsIntoIter};
use crate::error::Result;
use std::time::Duration;

/// The iterator of [`Consumer::iter`]: one record at a time, until a poll
/// finds nothing within the timeout.
pub struct RecordIter<'a> {
    consumer: &'a mut Consumer,
    timeout: Duration,
    pending: ConsumerRecordsIntoIter,
    done: bool,
}

impl std::fmt::Debug for RecordIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordIter")
            .field("timeout", &self.timeout)
            .field("pending", &self.pending.len())
            .field("done", &self.done)
            .finish()
    }
}

impl Consumer {
    /// The records as a blocking iterator: each `next` hands out a record
    /// of the last [`poll`](Self::poll) or polls again, waiting up to
    /// `timeout`; the iterator ends when a poll returns nothing in that
    /// time, and after yielding an error.
    ///
    /// Dropping the iterator mid-batch seeks back to the records it took
    /// but did not hand out, so the next poll returns them.
    ///
    /// ```
    /// use kafkalite::*;
    /// use std::time::Duration;
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path(), StoreOptions::default())?;
    /// store.create_topic("jobs", 1, TopicConfig::default())?;
    /// store.append("jobs", 0, &[Record::new("a"), Record::new("b")], Durability::Written)?;
    /// let mut config = ConsumerConfig::with_group("workers");
    /// config.auto_offset_reset = OffsetReset::Earliest;
    /// let mut consumer = Consumer::new(&store, config)?;
    /// consumer.subscribe(&["jobs"])?;
    /// let mut values = Vec::new();
    /// for record in consumer.iter(Duration::from_millis(200)) {
    ///     values.push(record?.value);
    /// }
    /// assert_eq!(values.len(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn iter(&mut self, timeout: Duration) -> RecordIter<'_> {
        RecordIter {
            consumer: self,
            timeout,
            pending: ConsumerRecords::default().into_iter(),
            done: false,
        }
    }
}

impl Iterator for RecordIter<'_> {
    type Item = Result<ConsumerRecord>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(r) = self.pending.next() {
            return Some(Ok(r));
        }
        if self.done {
            return None;
        }
        match self.consumer.poll(self.timeout) {
            Ok(records) => {
                self.pending = records.into_iter();
                let next = self.pending.next();
                self.done = next.is_none();
                next.map(Ok)
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl std::iter::FusedIterator for RecordIter<'_> {}

impl Drop for RecordIter<'_> {
    fn drop(&mut self) {
        rewind(self.consumer, &self.pending);
    }
}
