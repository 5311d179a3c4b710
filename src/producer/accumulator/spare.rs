//! Emptied batch buffers a partition keeps for its next batches.
//!
//! A batch's buffer (16 KiB with the default `batch.size`) is allocated by
//! the thread that opens the batch and freed by whichever thread appends
//! it. Freed by another thread than its maker's, it takes the maker's malloc
//! arena lock, which two sending threads then contend for; and each
//! allocation that size makes glibc consolidate the small chunks freed
//! since (every record's callback box). Kept and reused under the queue
//! lock the send holds anyway, a buffer is neither allocated nor freed.
//!
//! A compressed batch takes two: its records' buffer, and the one it is
//! compressed into (for lz4 a little larger: all the room its compressor
//! works in). A drain hands back every buffer its batches used, and a take
//! is best fit with the room asked for, so each kind goes back to its use
//! and none grows.
//!
//! Bounded twice: at most [`SPARE_BUFFERS`] a partition (twice as many when
//! it compresses), and a producer's partitions together keep at most a
//! quarter of its `buffer.memory` (a [`SpareBudget`] they share). A buffer
//! grown past twice the batch limit (a record larger than `batch.size`
//! makes one) is not kept. The producer frees them all when it closes (a
//! sending thread's cache may hold its queues a while longer), and a
//! deleted topic's when it forgets the topic.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Emptied buffers a partition keeps, at most (twice as many when it
/// compresses): a write of [`WRITE_BYTES`](super::WRITE_BYTES) is four
/// batches of the default size.
pub(crate) const SPARE_BUFFERS: usize = 4;

/// The bytes of spare buffers a producer's partitions may still keep.
#[derive(Debug)]
pub(crate) struct SpareBudget(AtomicUsize);

impl SpareBudget {
    /// The budget of a producer with `buffer_memory`: a quarter of it.
    pub(crate) fn for_buffer_memory(buffer_memory: usize) -> Arc<Self> {
        Arc::new(SpareBudget(AtomicUsize::new(buffer_memory / 4)))
    }

    /// Takes `bytes` of the budget if they are left.
    fn take(&self, bytes: usize) -> bool {
        self.0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(bytes)
            })
            .is_ok()
    }

    fn give_back(&self, bytes: usize) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }

    /// The bytes still left.
    #[cfg(test)]
    pub(crate) fn left(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// One partition's spare buffers.
pub(crate) struct SpareBuffers {
    list: Vec<Vec<u8>>,
    budget: Arc<SpareBudget>,
    /// Buffers with more room than this are dropped, not kept.
    max_capacity: usize,
    /// How many are kept at most.
    max_kept: usize,
}

impl SpareBuffers {
    /// For a partition whose batches hold `batch_limit` bytes, and are
    /// compressed if `compressed`.
    pub(crate) fn new(budget: Arc<SpareBudget>, batch_limit: usize, compressed: bool) -> Self {
        SpareBuffers {
            list: Vec::new(),
            budget,
            max_capacity: 2 * (crate::record::HEADER_SIZE + batch_limit),
            max_kept: SPARE_BUFFERS * if compressed { 2 } else { 1 },
        }
    }

    /// A spare buffer with room for at least `room` bytes, or an empty one
    /// (allocated when first used). Compressed batches leave smaller
    /// buffers than a batch's records need: those are kept for compressing
    /// into, not grown (a grown buffer is allocated anew and the old one
    /// freed, which is what reuse saves).
    pub(crate) fn take(&mut self, room: usize) -> Vec<u8> {
        let best = self
            .list
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= room)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i);
        match best {
            Some(i) => {
                let buf = self.list.swap_remove(i);
                self.budget.give_back(buf.capacity());
                buf
            }
            None => Vec::new(),
        }
    }

    /// Keeps `buf` for a later batch if the bounds allow, else drops it.
    pub(crate) fn keep(&mut self, buf: Vec<u8>) {
        let room = buf.capacity();
        if room > 0
            && room <= self.max_capacity
            && self.list.len() < self.max_kept
            && self.budget.take(room)
        {
            self.list.push(buf);
        }
    }

    /// Frees every kept buffer.
    pub(crate) fn clear(&mut self) {
        let kept: usize = self.list.iter().map(Vec::capacity).sum();
        self.budget.give_back(kept);
        self.list = Vec::new();
    }

    /// How many are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.list.len()
    }

    /// The room of each kept buffer.
    #[cfg(test)]
    pub(crate) fn room(&self) -> Vec<usize> {
        self.list.iter().map(Vec::capacity).collect()
    }
}

impl Drop for SpareBuffers {
    fn drop(&mut self) {
        self.clear();
    }
}
