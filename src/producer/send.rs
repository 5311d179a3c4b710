//! The send path: finding (or creating) a partition's queue, reserving
//! memory, adding the record to the open batch; and flushing every queue.

use super::{
    future, now_ms, HandleInner, Inner, PartitionQueue, ProducerRecord, RecordMetadata, SendHandle,
};
use crate::error::{Error, Result};
use crate::log::Durability;
use std::sync::atomic::Ordering;
use std::sync::Arc;

impl Inner {
    pub(super) fn queue_if_exists(
        &self,
        topic: &str,
        partition: u32,
    ) -> Option<Arc<PartitionQueue>> {
        self.queues
            .read()
            .get(topic)
            .and_then(|v| v.get(partition as usize))
            .cloned()
    }

    fn queue(&self, topic: &str, partition: u32) -> Result<Arc<PartitionQueue>> {
        if let Some(q) = self.queue_if_exists(topic, partition) {
            if !q.is_stale() {
                return Ok(q);
            }
            self.forget_deleted_topic(topic);
        }
        let t = self.store.topic(topic)?;
        let count = t.partition_count();
        let mut map = self.queues.write();
        let name: Arc<str> = Arc::from(topic);
        let v = map.entry(topic.to_owned()).or_default();
        for p in v.len() as u32..count {
            v.push(Arc::new(PartitionQueue::new(
                Arc::clone(&name),
                p,
                t.partition(p)?,
                self.config.compression,
                self.config.compression_level,
                self.config.batch_size,
            )));
        }
        v.get(partition as usize)
            .cloned()
            .ok_or_else(|| Error::UnknownPartition {
                topic: topic.to_owned(),
                partition,
                partitions: count,
            })
    }

    /// Drops the queues of a topic whose logs were closed (the topic was
    /// deleted, and perhaps created again): what they still hold fails with
    /// [`Error::Closed`], and the next send looks the topic up afresh.
    fn forget_deleted_topic(&self, topic: &str) {
        let old = {
            let mut map = self.queues.write();
            match map.get(topic) {
                Some(v) if v.iter().any(|q| q.is_stale()) => map.remove(topic),
                _ => None,
            }
        };
        for q in old.into_iter().flatten() {
            q.seal_and_pending();
            self.release(q.drain(self.config.durability, false));
        }
    }

    pub(super) fn send_with(
        &self,
        record: ProducerRecord,
        callback: Option<Box<dyn FnOnce(Result<RecordMetadata>) + Send>>,
        reserve: future::Reserve,
    ) -> Result<SendHandle> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let size = record.encoded_size();
        let partition = match record.partition {
            Some(p) => p,
            None => {
                let count = self.store.partition_count(&record.topic)?;
                self.partitioner.partition(
                    &record.topic,
                    record.key.as_deref(),
                    record.value.as_deref(),
                    size,
                    count,
                )
            }
        };
        let queue = self.queue(&record.topic, partition)?;
        let max = queue.max_batch_bytes();
        if size + crate::record::HEADER_SIZE > max {
            return Err(Error::RecordTooLarge {
                size: size + crate::record::HEADER_SIZE,
                max,
            });
        }
        self.reserve_as(size, reserve)?;
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let linger_zero = self.config.linger.is_zero();
        let pushed = queue.push(
            timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
            size,
            linger_zero,
        );
        if let Some(cb) = callback {
            pushed
                .completion
                .on_complete(&queue.topic, partition, pushed.index, timestamp, cb);
        }
        if pushed.drain && reserve.offloads_appends() && !linger_zero {
            // An async send never appends (nor fsyncs) on the executor's
            // thread: the linger thread appends the full batch now.
            self.linger_state.lock().kicked = true;
            self.linger_wake.notify_one();
        } else if pushed.drain {
            self.release(queue.drain(self.config.durability, linger_zero));
        } else if pushed.started_batch {
            self.linger_state.lock().kicked = true;
            self.linger_wake.notify_one();
        }
        let inner = if self.config.durability == Durability::None {
            HandleInner::Done(RecordMetadata {
                topic: Arc::clone(&queue.topic),
                partition,
                offset: -1,
                timestamp,
            })
        } else {
            HandleInner::Pending {
                completion: pushed.completion,
                topic: Arc::clone(&queue.topic),
                partition,
                index: pushed.index,
                timestamp,
            }
        };
        Ok(SendHandle { inner })
    }

    pub(super) fn all_queues(&self) -> Vec<Arc<PartitionQueue>> {
        self.queues.read().values().flatten().cloned().collect()
    }

    pub(super) fn flush(&self) -> Result<()> {
        let mut pending = Vec::new();
        for q in self.all_queues() {
            let p = q.seal_and_pending();
            self.release(q.drain(self.config.durability, false));
            pending.extend(p);
        }
        let mut first_err = None;
        for c in pending {
            if let Some(Err(e)) = c.wait(None) {
                first_err.get_or_insert(Error::SendFailed { source: e });
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}
