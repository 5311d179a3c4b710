//! A batch's completion: the outcome every handle and callback of its
//! records waits on, and the metadata each record gets from it.

use crate::error::{Error, Result};
use crate::producer::RecordMetadata;
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Room for this many callbacks is taken at a batch's first.
pub(super) const CALLBACKS_FIRST: usize = 64;

pub(crate) use super::callback::Callback;

/// A callback waiting for its record's batch: the record's index in the
/// batch and its timestamp, for its metadata.
pub(crate) type Pending = (u32, i64, Callback);

/// Adds a callback waiting for record `index` (with its timestamp) to
/// `list`, taking room for [`CALLBACKS_FIRST`] at its first.
///
/// Written into the list field by field. Pushed as a tuple, it was built on
/// the stack first (the two numbers with an 8- and a 4-byte store) and
/// copied with 16-byte loads, and a load cannot take its bytes from two
/// queued stores: it waited until every earlier store had reached the
/// cache, the record's bytes among them, and with keyed records from two
/// threads those wait for the batch's last line to come from the other
/// core (`perf annotate`: 28 % of `enqueue`'s samples, two keyed
/// threads). Written in place, nothing waits for them.
#[inline(always)]
#[allow(unsafe_code)]
pub(super) fn push_pending(list: &mut Vec<Pending>, index: u32, timestamp: i64, cb: Callback) {
    if list.len() == list.capacity() {
        // A batch holds tens of records: grow in few steps.
        list.reserve(if list.capacity() == 0 {
            CALLBACKS_FIRST
        } else {
            1
        });
    }
    let len = list.len();
    debug_assert!(len < list.capacity());
    // SAFETY: `len < capacity` (made so above), so the slot at `len` lies
    // in the list's allocation and holds no value; each field of the
    // tuple is written there before the length takes the slot in, and a
    // write cannot panic between them.
    unsafe {
        let slot = list.as_mut_ptr().add(len);
        std::ptr::addr_of_mut!((*slot).2).write(cb);
        std::ptr::addr_of_mut!((*slot).1).write(timestamp);
        std::ptr::addr_of_mut!((*slot).0).write(index);
        list.set_len(len + 1);
    }
}

/// The outcome of one batch, shared by the handles of its records.
pub(crate) struct BatchCompletion {
    state: Mutex<CompletionState>,
    done: Condvar,
}

struct CompletionState {
    result: Option<std::result::Result<i64, Arc<Error>>>,
    callbacks: Vec<Pending>,
    /// For a failed batch: set once its error is handed to the application.
    seen: Option<Arc<AtomicBool>>,
}

impl BatchCompletion {
    pub(super) fn new() -> Arc<Self> {
        Arc::new(BatchCompletion {
            state: Mutex::new(CompletionState {
                result: None,
                callbacks: Vec::new(),
                seen: None,
            }),
            done: Condvar::new(),
        })
    }

    /// Records the batch's outcome, wakes its waiters, and runs `first`
    /// (the callbacks given with its records' sends, in send order; it is
    /// left empty, its room kept for another batch), then those
    /// registered on it since.
    pub(super) fn complete(
        &self,
        topic: &Arc<str>,
        partition: u32,
        result: std::result::Result<i64, Arc<Error>>,
        seen: Option<&Arc<AtomicBool>>,
        first: &mut Vec<Pending>,
    ) {
        let later = {
            let mut s = self.state.lock();
            s.result = Some(result.clone());
            s.seen = seen.cloned();
            std::mem::take(&mut s.callbacks)
        };
        self.done.notify_all();
        if !first.is_empty() || !later.is_empty() {
            mark_seen(&result, seen);
        }
        for (index, ts, cb) in first.drain(..).chain(later) {
            cb.call(metadata(topic, partition, &result, index, ts));
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.state.lock().result.is_some()
    }

    /// Waits for the batch's outcome; `None` on timeout.
    pub(crate) fn wait(
        &self,
        deadline: Option<Instant>,
    ) -> Option<std::result::Result<i64, Arc<Error>>> {
        let mut s = self.state.lock();
        loop {
            if let Some(r) = &s.result {
                mark_seen(r, s.seen.as_ref());
                return Some(r.clone());
            }
            match deadline {
                Some(d) => {
                    if self.done.wait_until(&mut s, d).timed_out() {
                        if let Some(r) = &s.result {
                            mark_seen(r, s.seen.as_ref());
                        }
                        return s.result.clone();
                    }
                }
                None => self.done.wait(&mut s),
            }
        }
    }

    /// Runs `cb` when the batch completes (at once if it has).
    pub(crate) fn on_complete(
        &self,
        topic: &Arc<str>,
        partition: u32,
        index: u32,
        ts: i64,
        cb: Callback,
    ) {
        let mut s = self.state.lock();
        match &s.result {
            Some(r) => {
                let r = r.clone();
                mark_seen(&r, s.seen.as_ref());
                drop(s);
                cb.call(metadata(topic, partition, &r, index, ts));
            }
            None => {
                push_pending(&mut s.callbacks, index, ts, cb);
            }
        }
    }
}

/// Records that a failure is being handed to the application: the
/// partition's next batches may be appended again.
fn mark_seen(result: &std::result::Result<i64, Arc<Error>>, seen: Option<&Arc<AtomicBool>>) {
    if result.is_err() {
        if let Some(seen) = seen {
            seen.store(true, Ordering::Release);
        }
    }
}

pub(crate) fn metadata(
    topic: &Arc<str>,
    partition: u32,
    result: &std::result::Result<i64, Arc<Error>>,
    index: u32,
    timestamp: i64,
) -> Result<RecordMetadata> {
    match result {
        Ok(base) => Ok(RecordMetadata {
            topic: Arc::clone(topic),
            partition,
            offset: base + i64::from(index),
            timestamp,
        }),
        Err(e) => Err(Error::SendFailed {
            source: Arc::clone(e),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::{push_pending, Callback, Pending, CALLBACKS_FIRST};
    use crate::error::Result;
    use crate::producer::RecordMetadata;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    /// Entries pushed past the first room keep their order, index and
    /// timestamp, and each callback runs once and frees what it holds.
    #[test]
    fn callbacks_pushed_in_place_keep_their_order_and_run_once() {
        let ran = Arc::new(AtomicU64::new(0));
        let holders = Arc::new(());
        let total = 3 * CALLBACKS_FIRST + 5;
        let mut list: Vec<Pending> = Vec::new();
        for i in 0..total as u32 {
            let (ran, held) = (Arc::clone(&ran), Arc::clone(&holders));
            push_pending(
                &mut list,
                i,
                1_000 + i64::from(i),
                Callback::new(move |m: Result<RecordMetadata>| {
                    let _held = held;
                    ran.fetch_add(m.unwrap().offset as u64 + 1, Ordering::SeqCst);
                }),
            );
        }
        assert_eq!(list.len(), total);
        assert_eq!(Arc::strong_count(&holders), total + 1);
        let topic: Arc<str> = Arc::from("t");
        for (n, (index, ts, cb)) in list.drain(..).enumerate() {
            assert_eq!((index as usize, ts), (n, 1_000 + n as i64));
            cb.call(Ok(RecordMetadata {
                topic: Arc::clone(&topic),
                partition: 0,
                offset: i64::from(index),
                timestamp: ts,
            }));
        }
        // Offsets 0..total, each counted plus one.
        let want = (total * (total + 1) / 2) as u64;
        assert_eq!(ran.load(Ordering::SeqCst), want);
        assert_eq!(Arc::strong_count(&holders), 1);
        // Entries never run are dropped with the list, freeing theirs.
        for i in 0..3 {
            let held = Arc::clone(&holders);
            push_pending(&mut list, i, 0, Callback::new(move |_| drop(held)));
        }
        assert_eq!(Arc::strong_count(&holders), 4);
        drop(list);
        assert_eq!(Arc::strong_count(&holders), 1);
    }
}
