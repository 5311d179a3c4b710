//! Wake-ups for readers waiting on new data: a sequence number under a mutex
//! and a condition variable. Waiters remember the sequence they saw, so a
//! notification between their check and their wait is never lost.
//!
//! Async waiters register a [`Waker`] under the same mutex, passing the
//! sequence they saw: registration refuses when the sequence moved already,
//! and `notify` takes the wakers in the same critical section in which it
//! moves the sequence, so a waker is either refused or woken.

use crate::asynk::wakers::{self, WakerKey, WakerSet};
use parking_lot::{Condvar, Mutex};
use std::task::Waker;
use std::time::Instant;

#[derive(Debug, Default)]
struct State {
    seq: u64,
    wakers: WakerSet,
}

/// Tells waiting readers that something changed.
#[derive(Debug, Default)]
pub struct Notifier {
    state: Mutex<State>,
    cv: Condvar,
}

impl Notifier {
    /// A new notifier.
    pub fn new() -> Self {
        Notifier::default()
    }

    /// The current sequence number; pass it to [`wait_past`](Self::wait_past).
    pub fn seq(&self) -> u64 {
        self.state.lock().seq
    }

    /// Wakes every waiter.
    pub fn notify(&self) {
        let mut st = self.state.lock();
        st.seq += 1;
        let woken = if st.wakers.is_empty() {
            Vec::new()
        } else {
            st.wakers.take()
        };
        drop(st);
        self.cv.notify_all();
        wakers::wake_all(woken);
    }

    /// Blocks until a notification after `seen`, or `deadline`; returns
    /// whether one came.
    pub fn wait_past(&self, seen: u64, deadline: Instant) -> bool {
        let mut st = self.state.lock();
        while st.seq == seen {
            if self.cv.wait_until(&mut st, deadline).timed_out() {
                return st.seq != seen;
            }
        }
        true
    }

    /// Blocks until a notification after `seen`, however long that takes.
    pub(crate) fn wait(&self, seen: u64) {
        let mut st = self.state.lock();
        while st.seq == seen {
            self.cv.wait(&mut st);
        }
    }

    /// Registers `waker` for the next notification after `seen` (under
    /// `key`, see [`WakerSet::register`]); returns false, registering
    /// nothing, when one came already.
    pub(crate) fn register_past(
        &self,
        seen: u64,
        key: &mut Option<WakerKey>,
        waker: &Waker,
    ) -> bool {
        let mut st = self.state.lock();
        if st.seq != seen {
            return false;
        }
        st.wakers.register(key, waker);
        true
    }

    /// Takes out a registration (a dropped future).
    pub(crate) fn deregister(&self, key: WakerKey) {
        self.state.lock().wakers.remove(key);
    }
}
