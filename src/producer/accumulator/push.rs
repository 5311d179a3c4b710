//! Adding a record to a partition's open batch (see the module docs of
//! `accumulator`): opening batches in spare buffers, sealing full ones,
//! and declining a record that would overflow the sticky partition's batch.

use super::{
    push_pending, thread_token, BatchCompletion, Callback, OpenBatch, PartitionQueue, Pending,
    SpareBuffers, WRITE_BYTES,
};
use crate::producer::ProducerRecord;
use crate::record::BatchBuilder;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

/// What `push` tells the caller to do next.
pub(crate) struct Pushed {
    /// The batch's completion, for a send without a callback (its handle).
    pub(crate) completion: Option<Arc<BatchCompletion>>,
    pub(crate) index: u32,
    /// Sealed batches are ready to append: drain now.
    pub(crate) drain: bool,
    /// When the batch this record started was opened (its linger clock
    /// started then); `None` if it joined an open batch.
    pub(crate) started: Option<Instant>,
    /// When this push sealed a full batch (it is to be written
    /// [`COALESCE_WAIT`](super::COALESCE_WAIT) later at the latest); `None`
    /// if it sealed none.
    pub(crate) sealed: Option<Instant>,
    /// This record filled its batch, which is sealed: the partition has no
    /// open batch left.
    pub(crate) filled: bool,
}

/// Why `push` handed a record back, unpushed.
pub(crate) enum Refused {
    /// It does not fit the sticky partition's open batch, which `push`
    /// sealed.
    Full(Full),
    /// The partition's credit of `buffer.memory` (with what the caller
    /// prepaid) does not cover it: the caller reserves more and pushes
    /// again. Nothing was changed.
    Unpaid(Option<Callback>),
}

/// What `push` hands back when it declined a record that does not fit the
/// partition's open batch, which it sealed (see `push`).
pub(crate) struct Full {
    pub(crate) callback: Option<Callback>,
    /// When the full batch was sealed.
    pub(crate) sealed: Instant,
    /// Sealed batches are ready to append: drain now.
    pub(crate) drain: bool,
}

impl PartitionQueue {
    /// Adds one record to the open batch, sealing the batch first if the
    /// record would overflow it. `linger_zero` makes the batch ready at once;
    /// otherwise sealed batches are ready once they hold [`WRITE_BYTES`]
    /// (and, later, once one has waited `coalesce`: `seal_due`).
    ///
    /// With `decline_if_full`, a record that would overflow the open batch
    /// seals it and is handed back, unpushed, with its callback: the sticky
    /// partitioner moves on at the end of a batch (as Kafka's does when a
    /// new batch would be made), so the sender leaves no batch of a few
    /// records behind for the next thread to come to the partition to join.
    ///
    /// The record's `size` bytes of `buffer.memory` come out of the
    /// partition's credit, to which `prepaid` (bytes the caller reserved)
    /// is added when the record is pushed; a record they do not cover is
    /// handed back ([`Refused::Unpaid`]) before anything changes.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub(crate) fn push(
        &self,
        record: &ProducerRecord,
        timestamp: i64,
        size: usize,
        prepaid: usize,
        linger_zero: bool,
        callback: Option<Callback>,
        decline_if_full: bool,
    ) -> Result<Pushed, Refused> {
        let mut guard = self.lock_state();
        // The state itself, so the new batch below can borrow its spares
        // while `open` is borrowed.
        let st = &mut *guard;
        let Some(credit) = (st.credit + prepaid).checked_sub(size) else {
            return Err(Refused::Unpaid(callback));
        };
        st.start_again_if_seen();
        let mut sealed_at = None;
        if let Some(open) = &st.open {
            let overflows =
                !open.builder.is_empty() && open.builder.size() + size > self.batch_limit;
            if open.epoch != st.epoch || overflows {
                let now = Instant::now();
                self.seal(st, now + self.coalesce);
                sealed_at = Some(now);
                if overflows && decline_if_full {
                    return Err(Refused::Full(Full {
                        callback,
                        sealed: now,
                        drain: linger_zero || st.sealed_bytes >= WRITE_BYTES,
                    }));
                }
            }
        }
        let started = st
            .open
            .is_none()
            .then(|| sealed_at.unwrap_or_else(Instant::now));
        st.credit = credit;
        let epoch = st.epoch;
        let (spare_buffers, spare_callbacks) = (&mut st.spare_buffers, &mut st.spare_callbacks);
        let open = st.open.get_or_insert_with(|| {
            let created = started.unwrap_or_else(Instant::now);
            self.open_batch(spare_buffers, spare_callbacks, created, epoch)
        });
        let index = open.builder.len() as u32;
        open.builder.push_parts(
            timestamp,
            record.key.as_deref(),
            record.value.as_deref(),
            &record.headers,
        );
        open.reserved += size;
        let completion = match callback {
            Some(cb) => {
                push_pending(&mut open.callbacks, index, timestamp, cb);
                None
            }
            None => Some(Arc::clone(&open.completion)),
        };
        let filled = open.builder.size() >= self.batch_limit;
        if filled {
            let now = started.unwrap_or_else(Instant::now);
            self.seal(st, now + self.coalesce);
            sealed_at = Some(now);
        }
        Ok(Pushed {
            completion,
            index,
            drain: linger_zero || st.sealed_bytes >= WRITE_BYTES,
            started,
            sealed: sealed_at,
            filled,
        })
    }

    /// A new open batch, in a spare buffer if the partition kept one.
    #[inline(never)]
    fn open_batch(
        &self,
        spare_buffers: &mut SpareBuffers,
        spare_callbacks: &mut Vec<Vec<Pending>>,
        created: Instant,
        epoch: u64,
    ) -> OpenBatch {
        let me = thread_token();
        if self.opened_by.load(Ordering::Relaxed) != me {
            self.opened_by.store(me, Ordering::Relaxed);
        }
        self.filling.store(me, Ordering::Relaxed);
        let buf = spare_buffers.take(crate::record::HEADER_SIZE + self.batch_limit);
        let builder = BatchBuilder::with_buffer(self.compression, buf, self.batch_limit);
        OpenBatch {
            opener: me,
            builder: match self.level {
                Some(level) => builder.compression_level(level),
                None => builder,
            },
            completion: BatchCompletion::new(),
            callbacks: spare_callbacks.pop().unwrap_or_default(),
            created,
            reserved: 0,
            epoch,
        }
    }
}
