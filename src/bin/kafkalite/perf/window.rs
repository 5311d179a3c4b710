//! Produce's progress: bytes and latencies gathered per reporting window,
//! printed every interval.

use super::MB;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) struct Shared {
    /// One per sending thread: what its records' callbacks record. Apart,
    /// so that threads sending at once do not share written cache lines
    /// (one set of counters for all made two threads no faster than one).
    pub(super) threads: Vec<&'static ThreadStats>,
    /// Records done, for the progress line: each thread adds its count in
    /// steps of [`DONE_STEP`] (and the rest at the end).
    pub(super) done: Arc<AtomicU64>,
    pub(super) error: Mutex<Option<String>>,
}

/// How many records a thread counts before adding them to `Shared::done`.
pub(super) const DONE_STEP: u64 = 1024;

/// One sending thread's records: their latencies (by the thread's own
/// index), its current reporting interval, and how many are done.
#[repr(align(128))]
pub(super) struct ThreadStats {
    pub(super) latency_us: Vec<AtomicU32>,
    pub(super) window: Window,
    pub(super) done: AtomicU64,
    /// `Shared::done`, held here so a callback needs only this thread's
    /// stats (cloning one `Arc` for all threads per record would share its
    /// count's line again).
    pub(super) all_done: Arc<AtomicU64>,
    /// The first error a record of this thread got.
    pub(super) error: Mutex<Option<String>>,
}

impl ThreadStats {
    pub(super) fn new(records: u64, all_done: &Arc<AtomicU64>) -> ThreadStats {
        ThreadStats {
            latency_us: (0..records).map(|_| AtomicU32::new(0)).collect(),
            window: Window::default(),
            done: AtomicU64::new(0),
            all_done: Arc::clone(all_done),
            error: Mutex::new(None),
        }
    }
}

#[derive(Default)]
pub(super) struct Window {
    records: AtomicU64,
    bytes: AtomicU64,
    latency_sum_us: AtomicU64,
    latency_max_us: AtomicU64,
}

impl Window {
    pub(super) fn add(&self, bytes: u64, us: u64) {
        self.records.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.latency_sum_us.fetch_add(us, Ordering::Relaxed);
        self.latency_max_us.fetch_max(us, Ordering::Relaxed);
    }

    /// The interval's records, bytes, latency sum and max, starting a
    /// fresh interval.
    fn take(&self) -> [u64; 4] {
        [
            self.records.swap(0, Ordering::Relaxed),
            self.bytes.swap(0, Ordering::Relaxed),
            self.latency_sum_us.swap(0, Ordering::Relaxed),
            self.latency_max_us.swap(0, Ordering::Relaxed),
        ]
    }
}

/// The interval's line over all threads' windows, and fresh intervals.
fn take_all(shared: &Shared, seconds: f64) -> String {
    let [mut n, mut bytes, mut sum, mut max] = [0u64; 4];
    for t in &shared.threads {
        let [tn, tb, ts, tm] = t.window.take();
        (n, bytes, sum, max) = (n + tn, bytes + tb, sum + ts, max.max(tm));
    }
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
        let line = take_all(shared, elapsed.as_secs_f64());
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}
