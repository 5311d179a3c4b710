//! Produce's progress: bytes and latencies gathered per reporting window,
//! printed every interval.

use super::clock::Clock;
use super::MB;
use parking_lot::Mutex;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) struct Shared {
    /// One per sending thread: its records' latencies and first error.
    pub(super) threads: Vec<&'static ThreadStats>,
    /// What the records' callbacks count, on the threads that run them.
    pub(super) windows: &'static Windows,
    /// Records done, for the progress line, in steps of [`DONE_STEP`].
    pub(super) done: Arc<AtomicU64>,
    pub(super) error: Mutex<Option<String>>,
}

/// How many records a callback thread counts before adding them to
/// `Shared::done`.
pub(super) const DONE_STEP: u64 = 1024;

/// One sending thread's first error, with where its records' latencies
/// go. Apart, so that threads sending at once do not share written cache
/// lines.
#[repr(align(128))]
pub(super) struct ThreadStats {
    /// The latencies kept for the percentiles (every record's, or every
    /// `stride`-th of a long run), by the record's index in the run divided
    /// by the stride (shared by the threads: each claims runs of indexes).
    pub(super) latency_us: &'static [AtomicU32],
    pub(super) error: Mutex<Option<String>>,
    /// Where its records' callbacks count.
    pub(super) windows: &'static Windows,
    /// What its sends and their callbacks read the time from.
    pub(super) clock: Clock,
}

impl ThreadStats {
    pub(super) fn new(
        latency_us: &'static [AtomicU32],
        windows: &'static Windows,
        clock: Clock,
    ) -> ThreadStats {
        ThreadStats {
            latency_us,
            error: Mutex::new(None),
            windows,
            clock,
        }
    }
}

/// The completion counters of every thread that has run a record's
/// callback, and what the last interval's line had counted.
///
/// Each thread counts into its own [`Window`], which only it writes: plain
/// loads and stores, where counters shared by the threads that run a
/// sender's callbacks took five locked read-modify-writes a record (`perf
/// annotate`: most of the callback's time, 8 % of a one-thread run).
pub(super) struct Windows {
    all: Mutex<Vec<Arc<Window>>>,
    /// The reporting interval now counted, `Window::max`'s high half.
    interval: AtomicU64,
    /// Records, bytes and latency sum over all windows at the last line.
    reported: Mutex<[u64; 3]>,
    done: Arc<AtomicU64>,
}

/// One thread's counts: records, bytes and latency sum since the start,
/// and the largest latency of the run and of the interval it last counted
/// in.
#[repr(align(128))]
#[derive(Default)]
struct Window {
    records: AtomicU64,
    bytes: AtomicU64,
    latency_sum_us: AtomicU64,
    /// The interval (high 32 bits) and its largest latency in µs (low).
    max: AtomicU64,
    /// The largest latency of the run, µs.
    run_max: AtomicU64,
}

impl Windows {
    /// For one run, counting done records into `done` too; alive for the
    /// process, as each record's callback refers to it.
    pub(super) fn leak(done: &Arc<AtomicU64>) -> &'static Windows {
        Box::leak(Box::new(Windows {
            all: Mutex::new(Vec::new()),
            interval: AtomicU64::new(0),
            reported: Mutex::new([0; 3]),
            done: Arc::clone(done),
        }))
    }

    /// Counts a record completed on this thread: its `bytes` and latency.
    pub(super) fn add(&'static self, bytes: u64, us: u64) {
        thread_local! {
            /// This thread's window, with the `Windows` it belongs to.
            static MINE: RefCell<Option<(usize, Arc<Window>)>> = const { RefCell::new(None) };
        }
        let me = self as *const Windows as usize;
        MINE.with(|mine| {
            let mut mine = mine.borrow_mut();
            let window = match &*mine {
                Some((of, w)) if *of == me => w,
                _ => {
                    let w = Arc::new(Window::default());
                    self.all.lock().push(Arc::clone(&w));
                    &mine.insert((me, w)).1
                }
            };
            let interval = self.interval.load(Ordering::Relaxed);
            window.add(bytes, us, interval, &self.done);
        });
    }

    /// The average and the largest latency of every record counted, in ms.
    pub(super) fn run_latency(&self) -> (f64, f64) {
        let (mut n, mut sum, mut max) = (0, 0, 0);
        for w in self.all.lock().iter() {
            n += w.records.load(Ordering::Relaxed);
            sum += w.latency_sum_us.load(Ordering::Relaxed);
            max = max.max(w.run_max.load(Ordering::Relaxed));
        }
        let avg = if n == 0 { 0.0 } else { sum as f64 / n as f64 };
        (avg / 1000.0, max as f64 / 1000.0)
    }

    /// The line for the interval that ends now, `seconds` long.
    fn take_line(&self, seconds: f64) -> String {
        // Counts from here on fall in the next interval. A maximum counted
        // by a callback that read the interval just before this fell in
        // neither (the counts themselves are totals, and every one counts).
        let ended = self.interval.fetch_add(1, Ordering::Relaxed);
        let mut totals = [0u64; 3];
        let mut max = 0u64;
        for w in self.all.lock().iter() {
            totals[0] += w.records.load(Ordering::Relaxed);
            totals[1] += w.bytes.load(Ordering::Relaxed);
            totals[2] += w.latency_sum_us.load(Ordering::Relaxed);
            let m = w.max.load(Ordering::Relaxed);
            if m >> 32 == ended & 0xffff_ffff {
                max = max.max(m & 0xffff_ffff);
            }
        }
        let [n, bytes, sum] = {
            let mut reported = self.reported.lock();
            let delta = [0, 1, 2].map(|i| totals[i].saturating_sub(reported[i]));
            *reported = totals;
            delta
        };
        let avg = if n == 0 {
            0.0
        } else {
            sum as f64 / n as f64 / 1000.0
        };
        format!(
            "{n} records sent, {:.1} records/sec ({:.2} MB/sec), {avg:.1} ms avg latency, {:.1} ms max latency.",
            n as f64 / seconds,
            bytes as f64 / MB / seconds,
            max as f64 / 1000.0
        )
    }
}

impl Window {
    /// Counts one record; only this window's thread calls it, so each
    /// counter is read and then written, without a locked instruction.
    fn add(&self, bytes: u64, us: u64, interval: u64, done: &AtomicU64) {
        let bump = |c: &AtomicU64, by: u64| {
            let v = c.load(Ordering::Relaxed).wrapping_add(by);
            c.store(v, Ordering::Relaxed);
            v
        };
        let n = bump(&self.records, 1);
        bump(&self.bytes, bytes);
        bump(&self.latency_sum_us, us);
        let us = us.min(u64::from(u32::MAX));
        if us > self.run_max.load(Ordering::Relaxed) {
            self.run_max.store(us, Ordering::Relaxed);
        }
        let interval = interval & 0xffff_ffff;
        let m = self.max.load(Ordering::Relaxed);
        if m >> 32 != interval || us > m & 0xffff_ffff {
            self.max.store(interval << 32 | us, Ordering::Relaxed);
        }
        if n % DONE_STEP == 0 {
            done.fetch_add(DONE_STEP, Ordering::Relaxed);
        }
    }
}

/// Prints the window's line every `every` until `stop`; the lines go to
/// stderr when stdout holds JSON.
pub(super) fn report_intervals(
    shared: &Shared,
    every: Duration,
    stop: &std::sync::atomic::AtomicBool,
    to_stderr: bool,
) {
    let mut last = Instant::now();
    while !stop.load(Ordering::Acquire) {
        std::thread::sleep(Duration::from_millis(10).min(every));
        let elapsed = last.elapsed();
        if elapsed < every {
            continue;
        }
        last = Instant::now();
        let line = shared.windows.take_line(elapsed.as_secs_f64());
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_line_counts_the_records_since_the_last_and_their_max() {
        let done = Arc::new(AtomicU64::new(0));
        let w = Windows::leak(&done);
        for us in [100, 300, 200] {
            w.add(1_000_000, us);
        }
        // Another thread's records count in the same interval.
        std::thread::scope(|s| {
            s.spawn(|| w.add(1_000_000, 900));
        });
        let line = w.take_line(1.0);
        assert!(
            line.starts_with("4 records sent, 4.0 records/sec (3.81 MB/sec), 0.4 ms avg latency, 0.9 ms max latency."),
            "{line}"
        );
        w.add(2_097_152, 50);
        let line = w.take_line(2.0);
        assert!(
            line.starts_with("1 records sent, 0.5 records/sec (1.00 MB/sec), 0.1 ms avg latency, 0.1 ms max latency."),
            "{line}"
        );
        let line = w.take_line(1.0);
        assert!(line.starts_with("0 records sent, 0.0 records/sec (0.00 MB/sec), 0.0 ms avg latency, 0.0 ms max latency."), "{line}");
        assert_eq!(done.load(Ordering::Relaxed), 0);
        for _ in 0..DONE_STEP {
            w.add(1, 1);
        }
        assert_eq!(done.load(Ordering::Relaxed), DONE_STEP);
    }
}
