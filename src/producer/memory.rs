//! `buffer.memory`: the bytes of records waiting to be appended, reserved
//! by a send and given back when its batch is appended or fails.

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

    pub(super) fn reserve(&self, bytes: usize) -> Result<()> {
        if self.try_reserve(bytes) {
            return Ok(());
        }
        // Batches sealed and waiting to be written with others hold
        // memory this send waits for: write them now.
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
            // Never below zero: a release matches bytes reserved before.
            let _ = self
                .memory
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                    Some(u.saturating_sub(bytes))
                });
            if self.memory_waiters.load(Ordering::SeqCst) > 0 {
                // Taking the lock orders this wake after a waiter's check.
                drop(self.memory_lock.lock());
                self.memory_freed.notify_all();
            }
            // Async sends waiting for space (see future.rs): registered
            // under this lock before their second try, so none is missed.
            crate::asynk::wakers::wake_all(self.space.lock().take());
        }
    }
}
