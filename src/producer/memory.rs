//! `buffer.memory`: the bytes of records waiting to be appended, reserved
//! by a send and given back when its batch is appended or fails.
//!
//! A send takes its record's bytes from its partition's credit, under the
//! partition's lock it takes anyway; a partition short of credit reserves
//! up to `batch.size` at once ([`CREDIT_SHARE`] caps it), as Kafka's
//! producer takes a batch's buffer from its pool when the batch is made.
//! The shared count is then changed once a batch, not once a record: with
//! several sending threads, its cache line no longer moves between their
//! cores at every send. Unused credit is given back before any send waits
//! for memory, or fails for want of it, so it never makes one wait.

/// A partition's credit is at most this share of `buffer.memory` (so a small
/// buffer is reserved record by record, as before).
pub(super) const CREDIT_SHARE: usize = 64;

use super::future::Reserve;
use super::Inner;
use crate::error::{Error, Result};
use std::sync::atomic::Ordering;

impl Inner {
    /// Takes `bytes` of buffer memory if they fit (a record larger than the
    /// whole buffer fits an empty one).
    pub(super) fn try_reserve(&self, bytes: usize) -> bool {
        let limit = self.config.buffer_memory;
        // SeqCst with the release's update and the waiter count: a waiter
        // that counted itself and then saw the buffer full cannot miss a
        // release that saw no waiter.
        let mut used = self.memory.load(Ordering::SeqCst);
        loop {
            if used > 0 && used.saturating_add(bytes) > limit {
                return false;
            }
            match self.memory.compare_exchange_weak(
                used,
                used + bytes,
                Ordering::SeqCst,
                Ordering::SeqCst,
            ) {
                Ok(_) => return true,
                Err(now) => used = now,
            }
        }
    }

    /// Credit for a partition whose credit does not cover a record of
    /// `size` bytes: `batch_limit` bytes (at most [`CREDIT_SHARE`]'s share
    /// of `buffer.memory`) if they fit, else the record's own, reserved as
    /// `reserve` says. Returns the bytes reserved.
    pub(super) fn reserve_credit(
        &self,
        size: usize,
        batch_limit: usize,
        reserve: Reserve,
    ) -> Result<usize> {
        let chunk = batch_limit.min(self.config.buffer_memory / CREDIT_SHARE);
        if chunk > size && reserve != Reserve::Held && self.try_reserve(chunk) {
            return Ok(chunk);
        }
        // An async send prepaid its record and never gets here; were it to,
        // it would not block, and nothing is counted that was not reserved.
        let reserve = match reserve {
            Reserve::Held => Reserve::Now,
            r => r,
        };
        self.reserve_as(size, reserve)?;
        Ok(size)
    }

    /// Gives back every partition's unused credit; whether there was any.
    pub(super) fn reclaim_credit(&self) -> bool {
        let credit = self.take_all_credit();
        self.release(credit);
        credit > 0
    }

    /// Takes every partition's unused credit off the count, waking no one;
    /// the bytes taken off.
    fn take_all_credit(&self) -> usize {
        let credit: usize = self.all_queues().iter().map(|q| q.take_credit()).sum();
        self.uncount(credit);
        credit
    }

    /// Takes `bytes` off the count (never below zero: they match bytes
    /// reserved before).
    fn uncount(&self, bytes: usize) {
        let _ = self
            .memory
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                Some(u.saturating_sub(bytes))
            });
    }

    pub(super) fn reserve(&self, bytes: usize) -> Result<()> {
        if self.try_reserve(bytes) {
            return Ok(());
        }
        // Credit the partitions hold unused, and batches sealed and waiting
        // to be written with others, hold memory this send waits for: give
        // it back, write them.
        self.reclaim_credit();
        if self.try_reserve(bytes) {
            return Ok(());
        }
        self.append_sealed();
        if self.try_reserve(bytes) {
            return Ok(());
        }
        let deadline = crate::deadline_after(self.config.max_block);
        let mut guard = self.memory_lock.lock();
        // Counted before the check under the lock: a release that saw no
        // waiter happened before it, so the check sees its bytes freed.
        self.memory_waiters.fetch_add(1, Ordering::SeqCst);
        let result = loop {
            if self.try_reserve(bytes) {
                break Ok(());
            }
            // Other senders may have taken what was freed as credit since
            // this one last looked: it is given back (this thread holds the
            // lock `release` takes to wake waiters, so they are woken here).
            if self.take_all_credit() > 0 {
                self.memory_freed.notify_all();
                self.wake_space_waiters();
                if self.try_reserve(bytes) {
                    break Ok(());
                }
            }
            if self
                .memory_freed
                .wait_until(&mut guard, deadline)
                .timed_out()
            {
                break if self.try_reserve(bytes) {
                    Ok(())
                } else {
                    Err(Error::BufferExhausted {
                        waited_ms: self.config.max_block.as_millis() as u64,
                        buffer_memory: self.config.buffer_memory,
                    })
                };
            }
        };
        self.memory_waiters.fetch_sub(1, Ordering::SeqCst);
        result
    }

    pub(super) fn release(&self, bytes: usize) {
        if bytes > 0 {
            self.uncount(bytes);
            if self.memory_waiters.load(Ordering::SeqCst) > 0 {
                // Taking the lock orders this wake after a waiter's check.
                drop(self.memory_lock.lock());
                self.memory_freed.notify_all();
            }
            // Async sends waiting for space (future.rs), told by a flag
            // rather than by taking their lock, whose line would otherwise
            // move between the sending threads' cores at every drain.
            // SeqCst, as for `memory_waiters`: an async send sets the flag
            // before its second try, and this looks after giving the bytes
            // back; either that try sees them, or this sees the flag.
            if self.space_waiting.load(Ordering::SeqCst) {
                self.wake_space_waiters();
            }
        }
    }

    /// Registers an async send's waker for buffer space; its next try to
    /// reserve comes after (see `release`).
    pub(super) fn register_for_space(
        &self,
        key: &mut Option<crate::asynk::wakers::WakerKey>,
        waker: &std::task::Waker,
    ) {
        let mut space = self.space.lock();
        space.register(key, waker);
        self.space_waiting.store(true, Ordering::SeqCst);
    }

    /// Wakes every async send waiting for buffer space.
    fn wake_space_waiters(&self) {
        let woken = {
            let mut space = self.space.lock();
            self.space_waiting.store(false, Ordering::SeqCst);
            space.take()
        };
        crate::asynk::wakers::wake_all(woken);
    }
}

#[cfg(test)]
mod tests {
    use crate::asynk::wakers::Count;
    use crate::{Producer, ProducerConfig, Store, StoreOptions};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::task::Waker;

    fn producer() -> (tempfile::TempDir, Store, Producer) {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path(), StoreOptions::default()).unwrap();
        let p = Producer::new(&s, ProducerConfig::default()).unwrap();
        (d, s, p)
    }

    /// A registered waker raises the flag and is woken by the next release,
    /// which lowers it; a release with the flag down takes no waker.
    #[test]
    fn a_release_wakes_a_registered_async_send_and_lowers_the_flag() {
        let (_d, _s, p) = producer();
        let inner = &p.inner;
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut key = None;
        inner.register_for_space(&mut key, &waker);
        assert!(inner.space_waiting.load(Ordering::SeqCst));
        assert!(inner.try_reserve(100));
        inner.release(100);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(!inner.space_waiting.load(Ordering::SeqCst));
        assert!(inner.space.lock().is_empty());
        // Nothing registered now: nothing to wake.
        assert!(inner.try_reserve(100));
        inner.release(100);
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
    }

    /// A send that takes its waker out (dropped, or served) may leave the
    /// flag up: the next release finds the set empty, wakes no one and
    /// lowers it.
    #[test]
    fn a_waker_taken_out_leaves_the_flag_for_the_next_release_to_lower() {
        let (_d, _s, p) = producer();
        let inner = &p.inner;
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let mut key = None;
        inner.register_for_space(&mut key, &Waker::from(Arc::clone(&count)));
        inner.space.lock().remove(key.take().unwrap());
        assert!(inner.space_waiting.load(Ordering::SeqCst));
        assert!(inner.try_reserve(100));
        inner.release(100);
        assert_eq!(count.0.load(Ordering::SeqCst), 0);
        assert!(!inner.space_waiting.load(Ordering::SeqCst));
    }
}
