//! The raw lock under a partition's state (`PartitionQueue::state`),
//! whose unlock is a plain store.
//!
//! `parking_lot`'s unlock is a `lock cmpxchg` (it must see, in the same
//! word, whether a waiter parked). On x86 a locked instruction waits for
//! every store before it to reach the cache. A send's last stores under
//! the lock are its record's bytes and its callback's entry, and when
//! another core wrote the batch's last line before them (keyed records
//! from two threads), each waits for that line to come over: the unlock
//! then stood still for the transfer (`perf annotate` in the
//! twenty-fourth session: 15 % of `enqueue`'s samples with two keyed
//! threads). A plain release store lets the sender go on while its stores
//! drain.
//!
//! The price is the wake-up of a parked waiter. The unlock's store and its
//! look at [`RawStateLock::sleepers`] after it may be reordered (a release
//! store followed by a load of another atomic orders nothing between
//! them, in Rust's memory model as on x86, where a load may pass an
//! earlier store), so a waiter that parks in that instant may be missed: a
//! parked waiter therefore looks at the lock again every [`PARK_FOR`],
//! woken or not. Waiters park only when the senders outnumber the cores or
//! after spinning longer than the lock is held (`lock.rs`), so a missed
//! wake-up is rare, and costs about `PARK_FOR` (with the timer's slack and
//! the scheduler's delay) each time it happens.
//!
//! No barging waiter starves a parked one: a waiter parked longer than
//! [`FAIR_AFTER`] is handed the lock by the next unlock that wakes one,
//! as `parking_lot` hands it over about every half millisecond.

#![allow(unsafe_code)]

use parking_lot::lock_api::{self, GuardSend, RawMutex};
use parking_lot::{Condvar, Mutex};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// The longest a parked waiter sleeps before it looks at the lock again.
pub(super) const PARK_FOR: Duration = Duration::from_micros(200);

/// A waiter parked this long is handed the lock (see the module docs).
pub(super) const FAIR_AFTER: Duration = Duration::from_millis(1);

/// Times a waiter gives its core away (`sched_yield`), after three short
/// spins, before it parks: on a core shared with the holder, that lets the
/// holder run and let go. With four keyed senders on two cores, four yields
/// and no spin parked often enough to cost 14 % of the rate against
/// `parking_lot`'s lock (which spins three times and yields seven); with
/// sixteen and the spins, four keyed senders ran 1.049 × `parking_lot`'s
/// (`docs/performance.md`).
const YIELDS: u32 = 16;

/// See the module docs.
pub(crate) struct RawStateLock {
    locked: AtomicBool,
    /// Waiters parked, or about to park, on `wake`.
    sleepers: AtomicU32,
    /// Held by a waiter from its last try of the lock until it sleeps on
    /// `wake`, and by an unlock that wakes one: no wake-up it sees the
    /// need for is lost.
    sleep: Mutex<Parked>,
    wake: Condvar,
    /// [`PARK_FOR`] (longer in a test that must see a wake-up).
    park_for: Duration,
}

/// What the waiters parked on a [`RawStateLock`] share (under its
/// `sleep`).
struct Parked {
    /// Waiters parked longer than [`FAIR_AFTER`].
    starving: u32,
    /// The lock was taken by an unlock for one of the starving waiters,
    /// which now holds it.
    handed: bool,
    /// Times a waiter went to sleep on `wake`, and times an unlock handed
    /// the lock over (for tests).
    #[cfg(test)]
    sleeps: u64,
    #[cfg(test)]
    handoffs: u64,
}

/// A value under a [`RawStateLock`].
pub(crate) type StateLock<T> = lock_api::Mutex<RawStateLock, T>;

/// A [`StateLock`]'s guard.
pub(crate) type StateGuard<'a, T> = lock_api::MutexGuard<'a, RawStateLock, T>;

// SAFETY: a thread holds the lock from the moment `locked` is turned from
// false to true by one compare-exchange (in `try_lock`, or in `wake_one`
// for a starving waiter, which takes the lock over under `sleep` and only
// then returns from `lock`) until `unlock` (called, as the trait requires,
// only by the holder) stores false: one thread at a time. The exchange's
// acquire pairs with that store's release (a handed-over lock's holder
// also synchronizes through `sleep`), so the next holder sees all the
// last one wrote.
unsafe impl lock_api::RawMutex for RawStateLock {
    #[allow(clippy::declare_interior_mutable_const)]
    const INIT: RawStateLock = RawStateLock::new(PARK_FOR);

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
    const fn new(park_for: Duration) -> RawStateLock {
        RawStateLock {
            locked: AtomicBool::new(false),
            sleepers: AtomicU32::new(0),
            sleep: parking_lot::const_mutex(Parked {
                starving: 0,
                handed: false,
                #[cfg(test)]
                sleeps: 0,
                #[cfg(test)]
                handoffs: 0,
            }),
            wake: Condvar::new(),
            park_for,
        }
    }

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
        let since = Instant::now();
        let mut starving = false;
        let mut parked = self.sleep.lock();
        loop {
            if starving && parked.handed {
                parked.handed = false;
                break;
            }
            if self.try_lock() {
                break;
            }
            if !starving && since.elapsed() >= FAIR_AFTER {
                starving = true;
                parked.starving += 1;
            }
            #[cfg(test)]
            {
                parked.sleeps += 1;
            }
            self.wake.wait_for(&mut parked, self.park_for);
        }
        if starving {
            parked.starving -= 1;
        }
        drop(parked);
        self.sleepers.fetch_sub(1, Ordering::Relaxed);
    }

    /// Wakes a parked waiter, or, if one has starved, takes the lock for
    /// it (unless another thread took it first) and wakes them all for it
    /// to find.
    #[cold]
    #[inline(never)]
    fn wake_one(&self) {
        let mut parked = self.sleep.lock();
        if parked.starving > 0 && !parked.handed && self.try_lock() {
            parked.handed = true;
            #[cfg(test)]
            {
                parked.handoffs += 1;
            }
            self.wake.notify_all();
        } else {
            self.wake.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{RawMutex, RawStateLock, StateLock, FAIR_AFTER, PARK_FOR};
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::time::{Duration, Instant};

    /// Threads adding to one count under the lock, more of them than cores,
    /// each holding it across a yield, lose no update, and none waits
    /// anywhere near ten seconds for it.
    #[test]
    fn threads_contending_for_the_lock_lose_no_update() {
        let threads = 2 * std::thread::available_parallelism().map_or(2, |n| n.get()) + 2;
        let count = StateLock::new(0u64);
        let longest = StateLock::new(Duration::ZERO);
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| {
                    for _ in 0..300 {
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
        assert_eq!(*count.lock(), threads as u64 * 300);
        assert!(
            *longest.lock() < Duration::from_secs(10),
            "{:?}",
            *longest.lock()
        );
    }

    /// A lock with waiters' timeout `park_for`, held by the caller.
    fn held(park_for: Duration) -> RawStateLock {
        let raw = RawStateLock::new(park_for);
        raw.lock();
        raw
    }

    /// Waits until a waiter has gone to sleep on `raw.wake` `n` times in
    /// all. It counts a sleep while it holds `raw.sleep`, which it lets go
    /// only in its wait: once the count is seen under that lock, the
    /// waiter is waiting.
    fn until_asleep(raw: &RawStateLock, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while raw.sleep.lock().sleeps < n {
            assert!(Instant::now() < deadline, "the waiter never went to sleep");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Spawns a thread that takes the lock, sets `got`, reads `value` and
    /// lets go; once it sleeps, runs `meanwhile` (given `got`), and
    /// returns what the thread read if it got the lock within `within`.
    /// Otherwise it lets the thread out (so that a failure ends the test)
    /// and returns `None`.
    fn waiter_gets_it(
        raw: &RawStateLock,
        meanwhile: impl FnOnce(&AtomicBool),
        within: Duration,
        value: &AtomicU32,
    ) -> Option<u32> {
        let got = AtomicBool::new(false);
        std::thread::scope(|s| {
            let waiter = s.spawn(|| {
                raw.lock();
                got.store(true, Ordering::SeqCst);
                let v = value.load(Ordering::Relaxed);
                // SAFETY: this thread holds the lock.
                unsafe { raw.unlock() };
                v
            });
            until_asleep(raw, 1);
            meanwhile(&got);
            let deadline = Instant::now() + within;
            while !got.load(Ordering::SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_micros(50));
            }
            let in_time = got.load(Ordering::SeqCst);
            if !in_time {
                raw.locked.store(false, Ordering::Release);
                raw.wake.notify_all();
            }
            let v = waiter.join().unwrap();
            in_time.then_some(v)
        })
    }

    /// A waiter asleep for the lock is woken when it is let go (its own
    /// timeout an hour, so only the wake-up can get it out), and sees
    /// what the holder wrote.
    #[test]
    fn a_sleeping_waiter_is_woken_with_the_holders_writes() {
        let (raw, value) = (held(Duration::from_secs(3600)), AtomicU32::new(0));
        let let_go = |_: &AtomicBool| {
            value.store(7, Ordering::Relaxed);
            // SAFETY: this thread holds the lock.
            unsafe { raw.unlock() };
        };
        let seen = waiter_gets_it(&raw, let_go, Duration::from_secs(10), &value);
        assert_eq!(seen, Some(7), "not woken, or without the holder's write");
        assert!(!raw.is_locked());
        assert_eq!(raw.sleepers.load(Ordering::SeqCst), 0);
    }

    /// A sleeping waiter whose wake-up is missed (the lock let go with no
    /// look at the sleepers, as when the unlock's look passed its store)
    /// still gets the lock: it looks again every [`PARK_FOR`].
    #[test]
    fn a_sleeping_waiter_whose_wake_up_is_missed_looks_again() {
        let (raw, value) = (held(PARK_FOR), AtomicU32::new(0));
        let let_go_unwoken = |_: &AtomicBool| raw.locked.store(false, Ordering::Release);
        let seen = waiter_gets_it(&raw, let_go_unwoken, PARK_FOR * 5_000, &value);
        assert!(
            seen.is_some(),
            "still asleep {:?} after the lock was let go",
            PARK_FOR * 5_000
        );
    }

    /// A waiter asleep longer than [`FAIR_AFTER`] is handed the lock by the
    /// next unlock: the unlock takes it for the waiter, so a thread that
    /// takes the lock straight back (as a sender does) cannot get it first.
    #[test]
    fn a_starving_waiter_is_handed_the_lock() {
        // Its own timeout an hour: it wakes only when told to.
        let (raw, value) = (held(Duration::from_secs(3600)), AtomicU32::new(0));
        let let_go_when_starving = |got: &AtomicBool| {
            // Woken past `FAIR_AFTER` while the lock is still held, it
            // counts itself starving and sleeps again.
            std::thread::sleep(FAIR_AFTER * 2);
            raw.wake.notify_all();
            until_asleep(&raw, 2);
            assert_eq!(raw.sleep.lock().starving, 1);
            value.store(9, Ordering::Relaxed);
            // SAFETY: this thread holds the lock.
            unsafe { raw.unlock() };
            // Nothing else could take the lock meanwhile (the waiter sleeps
            // until told), so the unlock took it for the waiter.
            assert_eq!(raw.sleep.lock().handoffs, 1, "not handed over");
            // Taken back at once: it was handed over, so this fails (unless
            // the waiter has been and gone already).
            if raw.try_lock() {
                // SAFETY: this thread took the lock just now.
                unsafe { raw.unlock() };
                assert!(got.load(Ordering::SeqCst), "the lock was not handed over");
            }
        };
        let seen = waiter_gets_it(&raw, let_go_when_starving, Duration::from_secs(10), &value);
        assert_eq!(seen, Some(9));
        let parked = raw.sleep.lock();
        assert_eq!((parked.starving, parked.handed), (0, false));
    }
}
