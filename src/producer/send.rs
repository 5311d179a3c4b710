//! The send path: finding (or creating) a partition's queue, reserving
//! memory, adding the record to the open batch; and flushing every queue.

use super::accumulator::{thread_token, Callback, Refused};
use super::balance::choose;
use super::cache::LAST_TOPICS;
use super::partitioner::{partition_for_key, thread_shard, Sticky};
use super::{
    future, now_ms, BatchCompletion, HandleInner, Inner, PartitionQueue, ProducerRecord,
    RecordMetadata, SendHandle,
};
use crate::error::{Error, Result};
use crate::log::Durability;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

static NEXT_PRODUCER_ID: AtomicU64 = AtomicU64::new(1);

pub(super) fn new_producer_id() -> u64 {
    NEXT_PRODUCER_ID.fetch_add(1, Ordering::Relaxed)
}

/// A queued record.
pub(super) struct Enqueued {
    /// The record's topic (moved out of it).
    topic: Arc<str>,
    queued: Queued,
}

/// Where a record was queued.
struct Queued {
    partition: u32,
    index: u32,
    timestamp: i64,
    /// Its batch's completion, for a send without a callback.
    completion: Option<Arc<BatchCompletion>>,
}

/// Where a send's keyless record goes next when its sticky partition's
/// batch is full: the thread's sticky choice and the topic's queues, as
/// the thread's cached topic holds them.
struct StickyQueues<'a> {
    sticky: &'a mut Sticky,
    queues: &'a [Arc<PartitionQueue>],
    count: u32,
}

impl<'a> StickyQueues<'a> {
    /// Moves the sticky choice on (the partition's batch is full),
    /// counting `size` bytes sent to the new one, and returns the new
    /// partition and its queue (`None` if the topic's logs were closed).
    fn switch(&mut self, size: usize) -> Option<(u32, &'a Arc<PartitionQueue>)> {
        let me = thread_token();
        let queues = self.queues;
        self.sticky
            .switch_choosing(self.count, |candidates| choose(queues, candidates, me));
        let partition = self.sticky.next(usize::MAX, size, self.count);
        let q = queues.get(partition as usize)?;
        (partition < self.count && !q.is_stale()).then_some((partition, q))
    }
}

/// What a send through the thread's cached topic did.
enum Fast {
    /// The record was queued, or refused.
    Sent(Result<Queued>),
    /// The topic is not cached as it is now: the slow path sends the record
    /// (to the partition chosen, if one was), with the callback handed back.
    Missed(Option<u32>, Option<Callback>),
}

impl Inner {
    /// Queues the record through the thread's cached topic, choosing the
    /// partition (once) if the record has none. The queues are used while
    /// borrowed from the cache: no reference count is touched for them.
    /// A send from a callback that this one runs (appending a batch) finds
    /// the cache borrowed and takes the slow path.
    fn send_cached(
        &self,
        record: &ProducerRecord,
        size: usize,
        callback: Option<Callback>,
        reserve: future::Reserve,
    ) -> Fast {
        LAST_TOPICS.with(|last| {
            // A send from inside a callback run by a send: the slow path.
            let Ok(mut last) = last.try_borrow_mut() else {
                return Fast::Missed(None, callback);
            };
            let Some(c) = last
                .iter_mut()
                .find(|c| c.producer == self.id && *c.topic.name == *record.topic)
            else {
                return Fast::Missed(None, callback);
            };
            if c.version != self.queues_version.load(Ordering::Acquire) {
                return Fast::Missed(None, callback);
            }
            let count = c.topic.partition_count();
            if count == 0 {
                // Deleted: the slow path reports it.
                return Fast::Missed(None, callback);
            }
            let (partition, sticky) = match (record.partition, self.builtin, record.key.as_deref())
            {
                (Some(p), _, _) => (p, false),
                // The built-in partitioner's sticky choice for a keyless
                // record, made as it makes it, without its lock and map.
                // It moves on where the partition's batch ends (`push`),
                // or, as Kafka's does when batches are not filling (they
                // are sealed by `linger.ms`), after twice `batch.size`.
                (None, Some((batch_size, ignore_keys)), key) if ignore_keys || key.is_none() => {
                    let sticky = c.sticky.get_or_insert_with(|| {
                        Sticky::new(&c.topic.name, thread_shard() as u64, count)
                    });
                    (sticky.next(batch_size.saturating_mul(2), size, count), true)
                }
                // A keyed record with the built-in partitioner: Kafka's
                // murmur2 choice, without the call through the trait.
                (None, Some(_), Some(key)) => (partition_for_key(key, count), false),
                (None, _, _) => (
                    self.partitioner.partition(
                        &record.topic,
                        record.key.as_deref(),
                        record.value.as_deref(),
                        size,
                        count,
                    ),
                    false,
                ),
            };
            let queues = &c.queues;
            let queue = match queues.get(partition as usize) {
                Some(q) if partition < count && !q.is_stale() => q,
                _ => return Fast::Missed(Some(partition), callback),
            };
            let sticky = match &mut c.sticky {
                Some(s) if sticky => Some(StickyQueues {
                    sticky: s,
                    queues,
                    count,
                }),
                _ => None,
            };
            Fast::Sent(self.push_record(record, size, partition, queue, sticky, callback, reserve))
        })
    }

    fn queues_changed(&self) {
        self.queues_version.fetch_add(1, Ordering::AcqRel);
    }

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
        self.queues_changed();
        let v = map.entry(topic.to_owned()).or_default();
        for p in v.len() as u32..count {
            // A name per partition (see `PartitionQueue::new`).
            v.push(Arc::new(PartitionQueue::new(
                topic,
                p,
                t.partition(p)?,
                &self.config,
                &self.spare_budget,
                &self.senders,
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
            self.queues_changed();
            match map.get(topic) {
                Some(v) if v.iter().any(|q| q.is_stale()) => map.remove(topic),
                _ => None,
            }
        };
        for q in old.into_iter().flatten() {
            q.seal_and_pending();
            self.release(q.drain(self.config.durability, false));
            self.release(q.take_credit());
            q.drop_spares();
        }
    }

    /// Sends a record and returns its handle.
    pub(super) fn send_with(
        &self,
        record: ProducerRecord,
        reserve: future::Reserve,
    ) -> Result<SendHandle> {
        let Enqueued { topic, queued } = self.enqueue(record, None, reserve)?;
        let inner = match queued.completion {
            Some(completion) if self.config.durability != Durability::None => {
                HandleInner::Pending {
                    completion,
                    topic,
                    partition: queued.partition,
                    index: queued.index,
                    timestamp: queued.timestamp,
                }
            }
            _ => HandleInner::Done(RecordMetadata {
                topic,
                partition: queued.partition,
                offset: -1,
                timestamp: queued.timestamp,
            }),
        };
        Ok(SendHandle { inner })
    }

    /// Queues a record; `callback` runs with its outcome when its batch
    /// completes (no handle is made for such a send).
    pub(super) fn enqueue(
        &self,
        record: ProducerRecord,
        callback: Option<Callback>,
        reserve: future::Reserve,
    ) -> Result<Enqueued> {
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::Closed);
        }
        let size = record.encoded_size();
        let queued = match self.send_cached(&record, size, callback, reserve) {
            Fast::Sent(queued) => queued?,
            Fast::Missed(chosen, callback) => {
                self.send_uncached(&record, size, chosen, callback, reserve)?
            }
        };
        Ok(Enqueued {
            topic: record.topic,
            queued,
        })
    }

    /// Queues the record without the thread's cached topic (which is then
    /// cached for its next sends), in partition `chosen` if one was.
    fn send_uncached(
        &self,
        record: &ProducerRecord,
        size: usize,
        chosen: Option<u32>,
        callback: Option<Callback>,
        reserve: future::Reserve,
    ) -> Result<Queued> {
        let mut first_sticky = None;
        let partition = match (chosen, record.partition) {
            (Some(p), _) | (_, Some(p)) => p,
            (None, None) => {
                let count = self.store.partition_count(&record.topic)?;
                let p = self.partitioner.partition(
                    &record.topic,
                    record.key.as_deref(),
                    record.value.as_deref(),
                    size,
                    count,
                );
                let keyless = matches!(self.builtin,
                    Some((_, ignore_keys)) if ignore_keys || record.key.is_none());
                first_sticky = keyless.then_some((p, size));
                p
            }
        };
        let queue = self.queue(&record.topic, partition)?;
        self.remember(&record.topic, first_sticky);
        self.push_record(record, size, partition, &queue, None, callback, reserve)
    }

    /// Adds the record to `queue`'s open batch, its memory taken from the
    /// partition's credit (reserved as `reserve` says when short); with
    /// `sticky`, a record that would overflow the batch goes to the
    /// next sticky partition, which also moves on when the record fills
    /// its batch.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn push_record<'a>(
        &self,
        record: &ProducerRecord,
        size: usize,
        mut partition: u32,
        mut queue: &'a Arc<PartitionQueue>,
        mut sticky: Option<StickyQueues<'a>>,
        callback: Option<Callback>,
        reserve: future::Reserve,
    ) -> Result<Queued> {
        let max = queue.max_batch_bytes();
        if size + crate::record::HEADER_SIZE > max {
            return Err(Error::RecordTooLarge {
                size: size + crate::record::HEADER_SIZE,
                max,
            });
        }
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let linger_zero = self.config.linger.is_zero();
        let offload = reserve.offloads_appends() && !linger_zero;
        // An async send reserved its record's bytes before it came here.
        let mut prepaid = if reserve == future::Reserve::Held {
            size
        } else {
            0
        };
        let mut callback = callback;
        let mut decline_if_full = sticky.is_some();
        let pushed = loop {
            match queue.push(
                record,
                timestamp,
                size,
                prepaid,
                linger_zero,
                callback,
                decline_if_full,
            ) {
                Ok(pushed) => break pushed,
                Err(Refused::Unpaid(cb)) => {
                    callback = cb;
                    prepaid += self.reserve_credit(size, queue.batch_limit(), reserve)?;
                }
                Err(Refused::Full(full)) => {
                    // The sticky partition's batch is full and sealed: the
                    // record goes to the next sticky partition, and is not
                    // declined there.
                    self.after_push(
                        queue,
                        full.drain,
                        None,
                        Some(full.sealed),
                        offload,
                        linger_zero,
                    );
                    if let Some((p, q)) = sticky.as_mut().and_then(|s| s.switch(size)) {
                        (partition, queue) = (p, q);
                    }
                    callback = full.callback;
                    decline_if_full = false;
                }
            }
        };
        if pushed.filled {
            // The record filled its batch: the next one starts a batch on
            // the next sticky partition.
            if let Some(s) = sticky.as_mut() {
                s.switch(0);
            }
        }
        self.after_push(
            queue,
            pushed.drain,
            pushed.started,
            pushed.sealed,
            offload,
            linger_zero,
        );
        Ok(Queued {
            partition,
            index: pushed.index,
            timestamp,
            completion: pushed.completion,
        })
    }

    /// What follows a push to `queue`: appending its sealed batches if they
    /// are ready (`drain`), and noting the batch it opened or sealed.
    #[inline(always)]
    fn after_push(
        &self,
        queue: &PartitionQueue,
        drain: bool,
        started: Option<std::time::Instant>,
        sealed: Option<std::time::Instant>,
        offload: bool,
        linger_zero: bool,
    ) {
        if drain && offload {
            // An async send never appends (nor fsyncs) on the executor's
            // thread: the linger thread appends the full batches now.
            self.kick_linger(false);
        } else if drain {
            self.release(queue.drain(self.config.durability, linger_zero));
        }
        if started.is_some() || sealed.is_some() {
            self.batches_due(started, sealed, offload);
        }
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
