//! The write-behind threads: two per process, started on first use, that
//! start the disk writes appends hand them (`Segment::write_behind`), so
//! the appending thread does not map and submit pages itself.
//!
//! Starting a disk write costs CPU: the kernel walks, maps and submits the
//! pages, and on a virtual machine the device's emulation holds the core
//! for the time of the request. So the hints go first to a thread at
//! background priority (Linux `SCHED_IDLE`), which runs on a core nothing
//! else wants: while every core is busy sending, the hints wait instead of
//! slowing the senders, and the disk catches up once a core is free. What
//! waits is bounded by [`WriteBehind::budget`] (half the kernel's own
//! threshold for background writeback, see [`lag_budget`]): past it, the
//! second thread, at normal priority, takes the oldest hints until half
//! the budget waits. A burst that fits the budget leaves its disk writes
//! for the free core; a sustained load on busy cores writes back as it
//! goes, never further behind than the budget, and no sender waits for
//! the disk's queue (the threads do).
//!
//! Hints past twice the budget (the disk does not keep up) are dropped,
//! oldest first, as are all of them if no thread could be started: the
//! kernel writes those pages back itself. What is durable when never
//! depends on a hint: its errors reach the next fdatasync.

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::{Arc, LazyLock};

type Job = Box<dyn FnOnce() + Send>;

/// Hints waiting at most, whatever their bytes: each holds its segment's
/// files open until it runs.
const MAX_WAITING: usize = 4096;

/// The budget's bounds: at least this many bytes may wait for a free core…
const BUDGET_MIN: u64 = 16 << 20;
/// …and at most this many (what a `flush` after a burst may have to write).
const BUDGET_MAX: u64 = 1 << 30;
/// The budget where the kernel's thresholds cannot be read.
const BUDGET_UNKNOWN: u64 = 256 << 20;

/// The queue of hints between the appending threads and the write-behind
/// threads.
pub(super) struct WriteBehind {
    state: Mutex<Waiting>,
    /// The background thread waits here…
    wake_background: Condvar,
    /// …and the catch-up thread here.
    wake_catch_up: Condvar,
    /// Bytes of hints that may wait for a free core.
    budget: u64,
}

#[derive(Default)]
struct Waiting {
    /// Oldest first, each with the bytes it covers.
    hints: VecDeque<(Job, u64)>,
    /// The sum of the bytes of `hints`.
    bytes: u64,
    /// The background thread waits for a hint (and is to be woken for one).
    background_waits: bool,
    /// The catch-up thread waits for the budget to be passed.
    catch_up_waits: bool,
    /// The catch-up thread takes hints (from when more than the budget
    /// waited until half of it does).
    catching_up: bool,
}

impl WriteBehind {
    pub(super) fn new(budget: u64) -> WriteBehind {
        WriteBehind {
            state: Mutex::new(Waiting::default()),
            wake_background: Condvar::new(),
            wake_catch_up: Condvar::new(),
            budget,
        }
    }

    /// Queues `job` (a hint covering `bytes`), waking the thread that is
    /// to take it. Returns the oldest hints dropped past twice the budget
    /// (or the count), for the caller to drop outside the lock.
    fn queue(&self, bytes: u64, job: Job) -> Vec<Job> {
        let mut st = self.state.lock();
        st.hints.push_back((job, bytes));
        st.bytes += bytes;
        let mut dropped = Vec::new();
        while st.bytes > self.budget.saturating_mul(2) || st.hints.len() > MAX_WAITING {
            let Some((job, n)) = st.hints.pop_front() else {
                break;
            };
            st.bytes -= n;
            dropped.push(job);
        }
        // Each woken once, however many hints arrive before it runs.
        let background = std::mem::take(&mut st.background_waits);
        let catch_up = st.catch_up_waits && st.bytes > self.budget;
        if catch_up {
            st.catch_up_waits = false;
        }
        drop(st);
        if background {
            self.wake_background.notify_one();
        }
        if catch_up {
            self.wake_catch_up.notify_one();
        }
        dropped
    }

    /// The oldest waiting hint, waiting for one if there is none (the
    /// background thread's side).
    fn next_background(&self) -> Job {
        let mut st = self.state.lock();
        loop {
            if let Some(job) = take(&mut st) {
                return job;
            }
            st.background_waits = true;
            self.wake_background.wait(&mut st);
        }
    }

    /// The oldest waiting hint once the budget is passed, until half of
    /// it waits (the catch-up thread's side).
    fn next_catch_up(&self) -> Job {
        let mut st = self.state.lock();
        loop {
            if let Some(job) = self.take_catching_up(&mut st) {
                return job;
            }
            st.catch_up_waits = true;
            self.wake_catch_up.wait(&mut st);
        }
    }

    /// The catch-up thread's next hint, if it is to take one now.
    fn take_catching_up(&self, st: &mut Waiting) -> Option<Job> {
        if st.bytes > self.budget {
            st.catching_up = true;
        } else if st.bytes <= self.budget / 2 {
            st.catching_up = false;
        }
        if st.catching_up {
            take(st)
        } else {
            None
        }
    }
}

/// The oldest waiting hint, if any.
fn take(st: &mut Waiting) -> Option<Job> {
    let (job, n) = st.hints.pop_front()?;
    st.bytes -= n;
    Some(job)
}

/// Runs a hint, which must not end the thread it runs on by a panic.
fn run(job: Job) {
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
}

static THREADS: LazyLock<Option<Arc<WriteBehind>>> = LazyLock::new(|| {
    let wb = Arc::new(WriteBehind::new(lag_budget()));
    let spawn = |name: &str, work: fn(&WriteBehind)| {
        let theirs = Arc::clone(&wb);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || work(&theirs))
            .is_ok()
    };
    let background = spawn("kafkalite-writeback", |wb| {
        crate::io::run_at_background_priority();
        loop {
            run(wb.next_background());
        }
    });
    // Without the catch-up thread, the hints past twice the budget are
    // dropped (and the background thread takes the rest in time).
    let _ = spawn("kafkalite-wb-catchup", |wb| loop {
        run(wb.next_catch_up());
    });
    background.then_some(wb)
});

/// Hands `job`, a hint that covers `bytes`, to the write-behind threads.
pub(super) fn submit(bytes: u64, job: Job) {
    let Some(wb) = THREADS.as_ref() else { return };
    drop(wb.queue(bytes, job));
}

/// The bytes of hints that may wait for a free core: half the dirty bytes at
/// which the kernel starts writing back by itself (`vm.dirty_background_bytes`,
/// or `vm.dirty_background_ratio` percent of the available memory), so what
/// waits for this thread never makes the kernel start (or throttle writers);
/// within [`BUDGET_MIN`] and [`BUDGET_MAX`]. In a container whose memory is
/// limited, the kernel's threshold for it is lower than this reads
/// (`MemAvailable` is the machine's): hints may then wait past it, and the
/// kernel writes those pages back itself, as it does without write-behind.
fn lag_budget() -> u64 {
    let read = |p: &str| std::fs::read_to_string(p).ok();
    let num = |s: Option<String>| s.and_then(|s| s.trim().parse::<u64>().ok());
    let available = read("/proc/meminfo").and_then(|m| mem_available(&m));
    budget_from(
        num(read("/proc/sys/vm/dirty_background_bytes")),
        num(read("/proc/sys/vm/dirty_background_ratio")),
        available,
    )
}

/// The bytes `/proc/meminfo` (its text `meminfo`) gives as available.
fn mem_available(meminfo: &str) -> Option<u64> {
    meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb.saturating_mul(1024))
}

/// [`lag_budget`] from what it reads (`None`: not readable).
fn budget_from(background_bytes: Option<u64>, ratio: Option<u64>, available: Option<u64>) -> u64 {
    let threshold = match (background_bytes, ratio, available) {
        (Some(b), _, _) if b > 0 => b,
        (_, Some(r), Some(a)) => a / 100 * r.min(100),
        _ => return BUDGET_UNKNOWN,
    };
    (threshold / 2).clamp(BUDGET_MIN, BUDGET_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex as StdMutex;
    use std::thread::ThreadId;

    const MIB: u64 = 1 << 20;

    type Ran = Arc<StdMutex<Vec<(u32, ThreadId)>>>;

    fn hint(ran: &Ran, n: u32) -> Job {
        let ran = Arc::clone(ran);
        Box::new(move || ran.lock().unwrap().push((n, std::thread::current().id())))
    }

    fn order(ran: &Ran) -> Vec<u32> {
        ran.lock().unwrap().iter().map(|r| r.0).collect()
    }

    #[test]
    fn the_background_thread_takes_every_hint_in_order() {
        let wb = Arc::new(WriteBehind::new(1 << 30));
        let ran: Ran = Arc::default();
        for n in 1..=3 {
            assert!(wb.queue(4096, hint(&ran, n)).is_empty());
        }
        let theirs = Arc::clone(&wb);
        let worker = std::thread::spawn(move || {
            for _ in 0..4 {
                run(theirs.next_background());
            }
            std::thread::current().id()
        });
        // The fourth arrives while the thread may already wait: it is woken.
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(wb.queue(4096, hint(&ran, 4)).is_empty());
        let id = worker.join().unwrap();
        assert_eq!(order(&ran), [1, 2, 3, 4]);
        assert!(ran.lock().unwrap().iter().all(|r| r.1 == id));
        assert_eq!(wb.state.lock().bytes, 0);
    }

    #[test]
    fn the_catch_up_thread_takes_the_oldest_from_past_the_budget_to_half_of_it() {
        let wb = WriteBehind::new(4 * MIB);
        let ran: Ran = Arc::default();
        let catch_up = |wb: &WriteBehind| {
            let mut st = wb.state.lock();
            std::iter::from_fn(|| wb.take_catching_up(&mut st)).for_each(run);
        };
        for n in 1..=4 {
            assert!(wb.queue(MIB, hint(&ran, n)).is_empty());
        }
        // Within the budget: nothing for the catch-up thread.
        catch_up(&wb);
        assert!(order(&ran).is_empty());
        assert!(wb.queue(MIB, hint(&ran, 5)).is_empty());
        // Past it (5 MiB wait): the oldest, until half the budget waits.
        catch_up(&wb);
        assert_eq!(order(&ran), [1, 2, 3]);
        assert_eq!(wb.state.lock().bytes, 2 * MIB);
        assert!(!wb.state.lock().catching_up);
    }

    #[test]
    fn the_catch_up_thread_is_woken_only_past_the_budget() {
        let wb = Arc::new(WriteBehind::new(2 * MIB));
        let ran: Ran = Arc::default();
        let theirs = Arc::clone(&wb);
        let worker = std::thread::spawn(move || run(theirs.next_catch_up()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        for n in 1..=2 {
            assert!(wb.queue(MIB, hint(&ran, n)).is_empty());
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(order(&ran).is_empty(), "within the budget: it waits");
        assert!(wb.queue(MIB, hint(&ran, 3)).is_empty());
        worker.join().unwrap();
        assert_eq!(order(&ran), [1]);
    }

    #[test]
    fn past_twice_the_budget_or_the_count_the_oldest_hints_are_dropped() {
        let wb = WriteBehind::new(2 * MIB);
        let ran: Ran = Arc::default();
        let dropped: usize = (1..=6).map(|n| wb.queue(MIB, hint(&ran, n)).len()).sum();
        assert_eq!(dropped, 2);
        let mut st = wb.state.lock();
        assert_eq!(st.bytes, 4 * MIB);
        std::iter::from_fn(|| take(&mut st)).for_each(run);
        drop(st);
        assert_eq!(order(&ran), [3, 4, 5, 6]);
        let wb = WriteBehind::new(u64::MAX);
        let dropped: usize = (0..MAX_WAITING as u32 + 10)
            .map(|n| wb.queue(0, hint(&ran, n)).len())
            .sum();
        assert_eq!(dropped, 10);
    }

    #[test]
    fn the_budget_is_half_the_kernels_background_threshold_within_bounds() {
        const GIB: u64 = 1 << 30;
        // dirty_background_bytes, when set, rules.
        assert_eq!(
            budget_from(Some(400 * MIB), Some(10), Some(64 * GIB)),
            200 * MIB
        );
        // Otherwise the ratio of the available memory: 10 % of 4 GiB.
        assert_eq!(
            budget_from(Some(0), Some(10), Some(4 * GIB)),
            4 * GIB / 100 * 10 / 2
        );
        // Within the bounds.
        assert_eq!(budget_from(Some(0), Some(10), Some(64 * GIB)), BUDGET_MAX);
        assert_eq!(budget_from(Some(0), Some(1), Some(GIB)), BUDGET_MIN);
        assert_eq!(budget_from(None, None, None), BUDGET_UNKNOWN);
        assert_eq!(budget_from(Some(0), Some(10), None), BUDGET_UNKNOWN);
        // What this machine gives is within the bounds; on Linux the
        // available memory is read from the kernel's own text.
        assert!((BUDGET_MIN..=BUDGET_MAX).contains(&lag_budget()));
        if cfg!(target_os = "linux") {
            let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
            assert!(mem_available(&meminfo).is_some_and(|b| b > 0), "{meminfo}");
        }
    }

    #[test]
    fn the_available_memory_is_read_from_meminfo_in_kib() {
        let meminfo = "MemTotal:       24567000 kB\nMemFree:        18000000 kB\nMemAvailable:   22000000 kB\n";
        assert_eq!(mem_available(meminfo), Some(22_000_000 * 1024));
        assert_eq!(mem_available("MemTotal: 1 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots\n"), None);
    }
}
