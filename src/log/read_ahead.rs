//! Read-ahead: the batches after a sequential read, CRC-checked on a core
//! no other thread wants, so the reader finds them verified (a batch is
//! checked once per process: `segment::verified`) and in the caches.
//!
//! A read of mapped segment bytes that starts where the log's previous
//! read ended (a consumer's next fetch, a `read` loop) hands the
//! [`AHEAD_BYTES`] after it to one thread per process, at background
//! priority (Linux `SCHED_IDLE`): it reads them as `read` does, checks
//! every batch not yet verified, and drops the result. The reader then
//! skips the CRC, which is the first touch of a batch's bytes and so waits
//! for memory. With no core to spare, the hints wait and go stale: at most
//! [`WAITING`] wait, the oldest dropped first, and the reader checks what
//! it reaches first itself, as without read-ahead. It never changes what a
//! read returns: a batch that fails its check is not marked, and the read
//! that reaches it reports it.
//!
//! `ReadMode::Pread` reads get none (a copy ahead would cost a core's
//! memory bandwidth to save the reader little), nor does a read-ahead pass
//! a segment's end (the next segment's first read checks its own).

use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};

/// How far past a sequential read its segment's batches are checked:
/// within the caches of the two cores (an L2 of 2 MiB each here, an L3
/// shared), and four of a consumer's default 1 MiB fetches.
pub(crate) const AHEAD_BYTES: usize = 4 << 20;

/// Read-aheads waiting at most; a newer one drops the oldest.
const WAITING: usize = 4;

type Job = Box<dyn FnOnce() + Send>;

/// Where a log's last read ended, to tell a sequential read, and how far
/// its read-aheads have checked.
pub(crate) struct Sequential {
    next: AtomicI64,
    /// The offset after the last batch a read-ahead checked: the next one
    /// starts there (so no batch is walked twice, and a log read again
    /// whole, all of it verified, costs its read-aheads nothing).
    checked_to: Arc<AtomicI64>,
}

impl Default for Sequential {
    fn default() -> Self {
        Sequential {
            next: AtomicI64::new(-1),
            checked_to: Arc::new(AtomicI64::new(-1)),
        }
    }
}

impl Sequential {
    /// Notes a read of `[offset, next)`; whether it began where the one
    /// before it ended.
    pub(crate) fn follows(&self, offset: i64, next: i64) -> bool {
        self.next.swap(next, Ordering::Relaxed) == offset
    }

    /// Whether read-ahead has checked three times the span of the read of
    /// `[offset, next)` past it already (so a log read again whole, all of
    /// it checked, hands its read-ahead thread nothing, not even a wake-up).
    pub(crate) fn checked_well_ahead(&self, offset: i64, next: i64) -> bool {
        let span = next.saturating_sub(offset);
        self.checked_to.load(Ordering::Relaxed) >= next.saturating_add(span.saturating_mul(3))
    }

    /// Where read-ahead has checked to, shared with the read-aheads that
    /// move it on.
    pub(crate) fn checked_to(&self) -> Arc<AtomicI64> {
        Arc::clone(&self.checked_to)
    }
}

struct Queue {
    jobs: Mutex<Waiting>,
    wake: Condvar,
}

#[derive(Default)]
struct Waiting {
    jobs: VecDeque<Job>,
    /// The thread waits for a job (and is to be woken for one).
    idle: bool,
}

impl Queue {
    /// Queues `job`, returning the one it pushed out (to drop outside the
    /// lock).
    fn push(&self, job: Job) -> Option<Job> {
        let mut st = self.jobs.lock();
        st.jobs.push_back(job);
        let dropped = (st.jobs.len() > WAITING)
            .then(|| st.jobs.pop_front())
            .flatten();
        let wake = std::mem::take(&mut st.idle);
        drop(st);
        if wake {
            self.wake.notify_one();
        }
        dropped
    }

    fn next(&self) -> Job {
        let mut st = self.jobs.lock();
        loop {
            if let Some(job) = st.jobs.pop_front() {
                return job;
            }
            st.idle = true;
            self.wake.wait(&mut st);
        }
    }
}

static THREAD: LazyLock<Option<Arc<Queue>>> = LazyLock::new(|| {
    let queue = Arc::new(Queue {
        jobs: Mutex::new(Waiting::default()),
        wake: Condvar::new(),
    });
    let theirs = Arc::clone(&queue);
    std::thread::Builder::new()
        .name("kafkalite-readahead".into())
        .spawn(move || {
            crate::io::run_at_background_priority();
            loop {
                let job = theirs.next();
                // A read-ahead that fails (or panics) is one the reader
                // does itself.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        })
        .ok()
        .map(|_| queue)
});

/// Hands `job`, a read-ahead, to the read-ahead thread (dropped if there
/// is none).
pub(crate) fn submit(job: Job) {
    if let Some(q) = THREAD.as_ref() {
        drop(q.push(job));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_read_is_sequential_when_it_starts_where_the_last_one_ended() {
        let s = Sequential::default();
        assert!(!s.follows(0, 100), "the first read follows none");
        assert!(s.follows(100, 250));
        assert!(!s.follows(90, 100), "a read elsewhere");
        assert!(s.follows(100, 120));
    }

    #[test]
    fn a_read_checked_three_spans_ahead_needs_no_read_ahead() {
        let s = Sequential::default();
        assert!(!s.checked_well_ahead(0, 100));
        s.checked_to().store(399, Ordering::Relaxed);
        assert!(!s.checked_well_ahead(0, 100));
        s.checked_to().fetch_max(400, Ordering::Relaxed);
        assert!(s.checked_well_ahead(0, 100));
        assert!(!s.checked_well_ahead(100, 200));
    }

    #[test]
    fn at_most_four_wait_and_a_newer_one_pushes_out_the_oldest() {
        let q = Queue {
            jobs: Mutex::new(Waiting::default()),
            wake: Condvar::new(),
        };
        let ran = Arc::new(Mutex::new(Vec::new()));
        let job = |n: u32| -> Job {
            let ran = Arc::clone(&ran);
            Box::new(move || ran.lock().push(n))
        };
        let mut dropped = 0;
        for n in 1..=6 {
            if let Some(j) = q.push(job(n)) {
                drop(j);
                dropped += 1;
            }
        }
        assert_eq!(dropped, 2);
        for _ in 0..WAITING {
            q.next()();
        }
        assert_eq!(*ran.lock(), [3, 4, 5, 6]);
    }

    #[test]
    fn the_thread_runs_what_is_submitted() {
        // Other tests' read-aheads may push one out: hand one over every
        // 10 ms until one has run.
        let ran = Arc::new(AtomicUsize::new(0));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while ran.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
            let r = Arc::clone(&ran);
            submit(Box::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
            }));
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(ran.load(Ordering::SeqCst) > 0);
    }
}
