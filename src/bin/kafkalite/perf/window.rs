//! Produce's progress: bytes and latencies gathered per reporting window,
//! printed every interval.

use super::MB;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) struct Shared {
    pub(super) latency_us: Vec<AtomicU32>,
    pub(super) done: Arc<AtomicU64>,
    pub(super) error: Mutex<Option<String>>,
    /// The current reporting interval's records, bytes, latency sum and max.
    pub(super) window: Window,
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

    /// The interval's line, and a fresh interval.
    fn take(&self, seconds: f64) -> String {
        let n = self.records.swap(0, Ordering::Relaxed);
        let bytes = self.bytes.swap(0, Ordering::Relaxed);
        let sum = self.latency_sum_us.swap(0, Ordering::Relaxed);
        let max = self.latency_max_us.swap(0, Ordering::Relaxed);
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
        let line = shared.window.take(elapsed.as_secs_f64());
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
}
