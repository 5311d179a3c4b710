//! A partition's state lock, and the count of a producer's sending
//! threads that decides whether a thread spins for it.

use super::state_lock::StateGuard;
use super::{PartitionQueue, QueueState};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a sender spins for a partition's lock before it waits
/// (`PartitionQueue::lock_state`): longer than the lock is held, a page
/// fault in the copy of a record included, and short against the slice of
/// a thread the holder's core may run instead of it.
pub(super) const SPIN_FOR: Duration = Duration::from_micros(20);

/// Spins between two readings of the clock while waiting for a lock.
const SPINS_BETWEEN_CLOCK_READS: u32 = 32;

/// The threads sending through one producer (those whose cache of topics
/// holds its queues, each counted once: `cache.rs`), against the cores that
/// can run them at once: whether a thread that finds a partition locked
/// spins for it (`PartitionQueue::lock_state`). A thread that sent once
/// stays counted until it ends or its cache drops the producer's queues.
#[derive(Debug)]
pub(crate) struct Senders {
    pub(super) count: AtomicUsize,
    pub(super) cores: usize,
}

impl Senders {
    pub(crate) fn new() -> Arc<Senders> {
        Arc::new(Senders {
            count: AtomicUsize::new(0),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        })
    }

    /// Counts the calling thread among the senders until the guard is
    /// dropped.
    pub(crate) fn count_in(self: &Arc<Self>) -> CountedSender {
        self.count.fetch_add(1, Ordering::Relaxed);
        CountedSender(Arc::clone(self))
    }

    /// Whether the senders can all run at once, each on a core of its own
    /// (on one core, spinning never lets the holder go on). As many
    /// senders as cores fit, though the linger and write-behind threads
    /// may then take a holder's core: measured, the spin still pays there
    /// (two keyed senders on two cores, `docs/performance.md`).
    pub(super) fn fit_the_cores(&self) -> bool {
        self.cores > 1 && self.count.load(Ordering::Relaxed) <= self.cores
    }
}

/// A thread counted among a producer's [`Senders`].
pub(crate) struct CountedSender(Arc<Senders>);

impl Drop for CountedSender {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PartitionQueue {
    /// The partition's state, locked.
    ///
    /// A thread that finds it locked (a sender, or the linger thread) while
    /// the producer's senders fit the cores spins for it, reading the lock
    /// rather than writing it, for up to [`SPIN_FOR`], before it waits
    /// (`state_lock.rs`). That wait spins briefly, then calls `sched_yield`
    /// a few times before it parks, which hands the core to
    /// whatever else can run there, often until the next tick: the
    /// write-behind thread, at background priority, most often (`perf
    /// record -e sched:sched_switch`). With keyed records two senders meet
    /// at every partition's lock, and that hand-off was their longest wait.
    /// With more senders than cores the holder may be waiting for this very
    /// core, and the yield is what lets it run.
    #[inline(always)]
    pub(super) fn lock_state(&self) -> StateGuard<'_, QueueState> {
        match self.state.try_lock() {
            Some(guard) => guard,
            None => self.lock_state_contended(),
        }
    }

    #[cold]
    #[inline(never)]
    fn lock_state_contended(&self) -> StateGuard<'_, QueueState> {
        if !self.senders.fit_the_cores() {
            return self.state.lock();
        }
        let start = Instant::now();
        loop {
            for _ in 0..SPINS_BETWEEN_CLOCK_READS {
                std::hint::spin_loop();
                if !self.state.is_locked() {
                    if let Some(guard) = self.state.try_lock() {
                        #[cfg(test)]
                        self.spun.fetch_add(1, Ordering::Relaxed);
                        return guard;
                    }
                }
            }
            if start.elapsed() >= SPIN_FOR {
                return self.state.lock();
            }
        }
    }
}
