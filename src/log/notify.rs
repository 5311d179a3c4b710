//! Wake-ups for readers waiting on new data: a sequence number under a mutex
//! and a condition variable. Waiters remember the sequence they saw, so a
//! notification between their check and their wait is never lost.

use parking_lot::{Condvar, Mutex};
use std::time::Instant;

/// Tells waiting readers that something changed.
#[derive(Debug, Default)]
pub struct Notifier {
    seq: Mutex<u64>,
    cv: Condvar,
}

impl Notifier {
    /// A new notifier.
    pub fn new() -> Self {
        Notifier::default()
    }

    /// The current sequence number; pass it to [`wait_past`](Self::wait_past).
    pub fn seq(&self) -> u64 {
        *self.seq.lock()
    }

    /// Wakes every waiter.
    pub fn notify(&self) {
        *self.seq.lock() += 1;
        self.cv.notify_all();
    }

    /// Blocks until a notification after `seen`, or `deadline`; returns
    /// whether one came.
    pub fn wait_past(&self, seen: u64, deadline: Instant) -> bool {
        let mut seq = self.seq.lock();
        while *seq == seen {
            if self.cv.wait_until(&mut seq, deadline).timed_out() {
                return *seq != seen;
            }
        }
        true
    }
}
