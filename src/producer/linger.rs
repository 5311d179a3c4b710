//! The linger thread: appends batches whose `linger.ms` passed, sleeping
//! until the next is due or a send starts one.

use super::Inner;
use std::sync::Weak;
use std::time::{Duration, Instant};

/// Appends batches whose linger time passed. Sleeps until the next batch
/// is due, or until a send starts a batch.
pub(super) fn linger_loop(weak: Weak<Inner>) {
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let linger = inner.config.linger;
        let now = Instant::now();
        let mut next_due: Option<Instant> = None;
        for q in inner.all_queues() {
            let (ready, due) = q.seal_due(now, linger, false);
            if ready {
                inner.release(q.drain(inner.config.durability, false));
            }
            if let Some(d) = due {
                next_due = Some(next_due.map_or(d, |n: Instant| n.min(d)));
            }
        }
        let mut st = inner.linger_state.lock();
        if st.stop {
            return;
        }
        if !std::mem::take(&mut st.kicked) {
            let wait = next_due.map_or(Duration::from_secs(1), |d| {
                d.saturating_duration_since(Instant::now())
            });
            if !wait.is_zero() {
                inner.linger_wake.wait_for(&mut st, wait);
            }
            st.kicked = false;
        }
        if st.stop {
            return;
        }
    }
}
