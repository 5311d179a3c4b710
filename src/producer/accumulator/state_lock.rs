//! The raw lock under a partition's state (`PartitionQueue::state`),
//! whose unlock is a plain store.
//!
//! `parking_lot`'s unlock is a `lock cmpxchg` (it must see, in the same
//! word, whether a waiter parked). On x86 a locked instruction waits for
//! every store before it to reach the cache. A send's last stores under
//! the lock are its record's bytes and its callback's entry, and when
//! another core wrote the batch's last line before them (keyed records
//! from two threads), each waits for that line to come over: the unlock
//! then stood still for the transfer (`perf annotate`: 15 % of `enqueue`'s
//! samples with two keyed threads). A plain release store lets the sender
//! go on while its stores drain.
//!
//! The price is the wake-up of a parked waiter. The unlock's store and
//! its look at [`RawStateLock::sleepers`] after it may be reordered (x86
//! lets a load pass an earlier store), so a waiter that parks in that
//! instant may be missed: a parked waiter therefore looks at the lock
//! again every [`PARK_FOR`], woken or not. Waiters park only when the
//! senders outnumber the cores or after a spin longer than the lock is
//! held (`lock.rs`), so a missed wake-up is rare and costs at most that.

#![allow(unsafe_code)]

use parking_lot::lock_api::{self, GuardSend, RawMutex};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

/// The longest a parked waiter sleeps before it looks at the lock again.
pub(super) const PARK_FOR: Duration = Duration::from_micros(200);

/// Times a waiter gives its core away (`sched_yield`), after three short
/// spins, before it parks: on a core shared with the holder, that lets the
/// holder run and let go. With four keyed senders on two cores, four yields
/// and no spin parked often enough to cost 14 % of the rate against
/// `parking_lot`'s lock (which spins three times and yields seven);
/// sixteen and the spins gained 7 % on it (`docs/performance.md`).
const YIELDS: u32 = 16;

/// See the module docs.
pub(crate) struct RawStateLock {
    locked: AtomicBool,
    /// Waiters parked, or about to park, on `wake`.
    sleepers: AtomicU32,
    /// Held by a waiter from its last try of the lock until it sleeps on
    /// `wake`, and by an unlock that wakes one: no wake-up it sees the
    /// need for is lost.
    sleep: Mutex<()>,
    wake: Condvar,
}

/// A value under a [`RawStateLock`].
pub(crate) type StateLock<T> = lock_api::Mutex<RawStateLock, T>;

/// A [`StateLock`]'s guard.
pub(crate) type StateGuard<'a, T> = lock_api::MutexGuard<'a, RawStateLock, T>;

// SAFETY: `lock` and `try_lock` return only once they have turned
// `locked` from false to true with one compare-exchange, which one thread
// at a time can do until `unlock` (called, as the trait requires, only by
// the holder) stores false; the exchange's acquire pairs with that
// store's release, so the next holder sees all the last one wrote.
unsafe impl lock_api::RawMutex for RawStateLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawStateLock = RawStateLock {
        locked: AtomicBool::new(false),
        sleepers: AtomicU32::new(0),
        sleep: parking_lot::const_mutex(()),
        wake: Condvar::new(),
    };

    type GuardMarker = GuardSend;

    #[inline(always)]
    fn lock(&self) {
        if !self.try_lock() {
            self.lock_slow();
        }
    }

    #[inline(always)]
    fn try_lock(&self) -> bool {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[inline(always)]
    unsafe fn unlock(&self) {
        self.locked.store(false, Ordering::Release);
        if self.sleepers.load(Ordering::Relaxed) != 0 {
            self.wake_one();
        }
    }

    #[inline(always)]
    fn is_locked(&self) -> bool {
        self.locked.load(Ordering::Relaxed)
    }
}

impl RawStateLock {
    #[cold]
    #[inline(never)]
    fn lock_slow(&self) {
        for spins in [8, 16, 32] {
            for _ in 0..spins {
                std::hint::spin_loop();
            }
            if !self.is_locked() && self.try_lock() {
                return;
            }
        }
        for _ in 0..YIELDS {
            std::thread::yield_now();
            if !self.is_locked() && self.try_lock() {
                return;
            }
        }
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut sleep = self.sleep.lock();
        while !self.try_lock() {
            self.wake.wait_for(&mut sleep, PARK_FOR);
        }
        drop(sleep);
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
    }

    #[cold]
    #[inline(never)]
    fn wake_one(&self) {
        let _sleep = self.sleep.lock();
        self.wake.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::{RawMutex, RawStateLock, StateLock, PARK_FOR};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    /// Threads adding to one count under the lock, some parking for it
    /// (more threads than cores, each holding it across a yield), lose no
    /// update, and none waits long for a lock let go.
    #[test]
    fn threads_parked_for_the_lock_get_it_and_lose_no_update() {
        let threads = 2 * std::thread::available_parallelism().map_or(2, |n| n.get()) + 2;
        let count = StateLock::new(0u64);
        let longest = StateLock::new(Duration::ZERO);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..2_000 {
                        let asked = Instant::now();
                        let mut c = count.lock();
                        let waited = asked.elapsed();
                        *c += 1;
                        std::thread::yield_now();
                        drop(c);
                        let mut l = longest.lock();
                        *l = (*l).max(waited);
                    }
                });
            }
        });
        assert_eq!(*count.lock(), threads as u64 * 2_000);
        // A waiter is woken, or looks again every `PARK_FOR`: no wait
        // comes near a second even on a loaded machine.
        assert!(
            *longest.lock() < Duration::from_secs(1),
            "{:?}",
            *longest.lock()
        );
        assert!(PARK_FOR < Duration::from_millis(1));
    }

    /// Waits until a thread is parked on `raw`.
    fn until_parked(raw: &RawStateLock) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while raw.sleepers.load(Ordering::SeqCst) == 0 {
            assert!(Instant::now() < deadline, "the waiter never parked");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A thread parked for the lock is woken when it is let go, and sees
    /// what the holder wrote.
    #[test]
    fn a_parked_waiter_is_woken_with_the_holders_writes() {
        let raw = <RawStateLock as RawMutex>::INIT;
        let value = AtomicU32::new(0);
        raw.lock();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                raw.lock();
                let v = value.load(Ordering::Relaxed);
                // SAFETY: this thread holds the lock.
                unsafe { raw.unlock() };
                v
            });
            until_parked(&raw);
            value.store(7, Ordering::Relaxed);
            // SAFETY: this thread holds the lock.
            unsafe { raw.unlock() };
            assert_eq!(waiter.join().unwrap(), 7);
        });
        assert!(!raw.is_locked());
        assert_eq!(raw.sleepers.load(Ordering::SeqCst), 0);
    }

    /// A parked waiter whose wake-up is missed (the lock let go with no
    /// look at the sleepers, as when the unlock's look passed its store)
    /// still gets the lock, within a few times [`PARK_FOR`].
    #[test]
    fn a_parked_waiter_whose_wake_up_is_missed_looks_again() {
        let raw = <RawStateLock as RawMutex>::INIT;
        let got = std::sync::atomic::AtomicBool::new(false);
        raw.lock();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                raw.lock();
                got.store(true, Ordering::SeqCst);
                // SAFETY: this thread holds the lock.
                unsafe { raw.unlock() };
            });
            until_parked(&raw);
            // Let go without waking it.
            raw.locked.store(false, Ordering::Release);
            let deadline = Instant::now() + PARK_FOR * 500;
            while !got.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(50));
            }
            let looked_again = got.load(Ordering::SeqCst);
            // Wake it regardless, so that a failure ends the test.
            raw.wake_one();
            waiter.join().unwrap();
            assert!(
                looked_again,
                "still parked {:?} after the lock was let go",
                PARK_FOR * 500
            );
        });
    }
}
