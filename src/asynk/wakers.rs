//! A set of wakers with stable keys, so a future that is polled again
//! replaces its waker instead of adding one, and a future that is dropped
//! takes its waker out (no set grows with cancelled futures).
//!
//! The set has no lock of its own: it lives under the lock of the state it
//! watches, which is what makes a wake-up impossible to lose (see
//! `log/notify.rs`). The producer's buffer memory keeps its count outside
//! that lock and pairs the set with a `SeqCst` flag instead
//! (`producer/memory.rs`).

use std::collections::BTreeMap;
use std::task::Waker;

/// Identifies one registration in a [`WakerSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WakerKey(u64);

/// Wakers waiting for one event.
#[derive(Debug, Default)]
pub(crate) struct WakerSet {
    entries: BTreeMap<u64, Waker>,
    next: u64,
}

impl WakerSet {
    /// Registers `waker` under `key`, replacing the waker already there;
    /// a key the set no longer holds (woken, removed) gets a new entry.
    pub(crate) fn register(&mut self, key: &mut Option<WakerKey>, waker: &Waker) {
        if let Some(w) = key.and_then(|WakerKey(k)| self.entries.get_mut(&k)) {
            if !w.will_wake(waker) {
                w.clone_from(waker);
            }
            return;
        }
        let id = self.next;
        self.next += 1;
        self.entries.insert(id, waker.clone());
        *key = Some(WakerKey(id));
    }

    /// Takes out the entry of `key`, if the set still holds it.
    pub(crate) fn remove(&mut self, key: WakerKey) {
        self.entries.remove(&key.0);
    }

    /// Whether no waker is registered.
    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Takes every waker out, to be woken once the lock is released.
    pub(crate) fn take(&mut self) -> Vec<Waker> {
        std::mem::take(&mut self.entries).into_values().collect()
    }
}

/// Wakes each waker (call with no lock held: a waker may run code).
pub(crate) fn wake_all(wakers: Vec<Waker>) {
    for w in wakers {
        w.wake();
    }
}

/// A waker's target that counts its wake-ups (for tests).
#[cfg(test)]
pub(crate) struct Count(pub(crate) std::sync::atomic::AtomicUsize);

#[cfg(test)]
impl std::task::Wake for Count {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn registering_again_under_a_key_replaces_the_waker() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut set = WakerSet::default();
        let mut key = None;
        set.register(&mut key, &waker);
        set.register(&mut key, &waker);
        wake_all(set.take());
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        assert!(set.is_empty());
    }

    #[test]
    fn a_removed_key_is_not_woken_and_a_stale_key_registers_anew() {
        let count = Arc::new(Count(AtomicUsize::new(0)));
        let waker = Waker::from(Arc::clone(&count));
        let mut set = WakerSet::default();
        let (mut a, mut b) = (None, None);
        set.register(&mut a, &waker);
        set.register(&mut b, &waker);
        if let Some(a) = a {
            set.remove(a);
        }
        wake_all(set.take());
        assert_eq!(count.0.load(Ordering::SeqCst), 1);
        // `b` was woken and taken out: registering again adds an entry.
        set.register(&mut b, &waker);
        assert!(!set.is_empty());
    }
}
