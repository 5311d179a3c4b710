//! The store's background thread.

use super::{Inner, Store};
use parking_lot::{Condvar, Mutex};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

/// How often partition checkpoints are written (Kafka's
/// `log.flush.offset.checkpoint.interval.ms` default).
const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(60);

/// Stops the background thread; kept outside `Inner` so the thread can wait
/// on it without keeping the store alive.
#[derive(Default)]
pub(super) struct Shutdown {
    pub(super) stop: Mutex<bool>,
    pub(super) wake: Condvar,
}

/// The store's background thread: `flush.ms` checks and periodic
/// checkpoints. Holds the store only while working, so dropping the last
/// `Store` handle shuts the store down.
pub(super) fn background(weak: Weak<Inner>, shutdown: &Shutdown, interval: Duration) {
    let mut last_checkpoint = Instant::now();
    let mut last_retention = Instant::now();
    loop {
        {
            let mut stop = shutdown.stop.lock();
            if !*stop {
                shutdown.wake.wait_for(&mut stop, interval);
            }
            if *stop {
                return;
            }
        }
        let Some(inner) = weak.upgrade() else { return };
        let now = Instant::now();
        let logs = inner.all_logs();
        let checkpoint = now.duration_since(last_checkpoint) >= CHECKPOINT_INTERVAL;
        if checkpoint {
            last_checkpoint = now;
        }
        if now.duration_since(last_retention) >= inner.options.retention_check_interval {
            last_retention = now;
            // Errors surface to the next caller of the affected log.
            let store = Store {
                inner: Arc::clone(&inner),
            };
            let _ = store.apply_retention_at(None, crate::group::now_ms(), false);
        }
        drop(inner);
        for log in logs {
            // Errors poison the log, which reports them to its next caller.
            let _ = log.flush_if_due(now);
            if checkpoint {
                let _ = log.checkpoint();
            }
        }
    }
}
