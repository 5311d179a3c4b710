//! Batches that come due: the linger thread, which appends them while the
//! senders are idle, and the scan it shares with sending threads, which
//! append what is due themselves when they notice it (the bytes were built
//! on their core; a write from another core copies them across).
//!
//! `Inner::next_due` holds the earliest deadline of any batch waiting
//! (open, or sealed and waiting to be written with others: the accumulator's
//! module docs), in nanoseconds from the producer's start: a send that opens
//! a batch lowers it, a scan sets it afresh. A send that opens a batch
//! compares the time with it, so senders notice due batches without reading
//! the clock per record.
//!
//! `Inner::linger_plan` is when the linger thread means to wake, [`AWAKE`]
//! while it scans or reads `next_due` (it reads it under the scan lock, so
//! never half-way through another thread's scan). It is woken only when a
//! batch comes due before that: by the send that opens one, or by a
//! sender's scan that found one, and for a wake that brings nothing due
//! it reads `next_due` again rather than scanning. A send that opens a
//! batch while it reads sees `AWAKE` and wakes it to read again.

use super::accumulator::COALESCE_WAIT;
use super::Inner;
use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::{Duration, Instant};

/// `next_due` when no batch waits; `linger_plan` when the thread sleeps
/// with nothing due.
pub(super) const NOTHING_DUE: u64 = u64::MAX;
/// `linger_plan` while the linger thread scans.
pub(super) const AWAKE: u64 = 0;
/// While a send opened or sealed a batch this recently, the linger thread
/// acts this much after a batch comes due (the senders notice it first).
const LEAVE_TO_SENDERS: Duration = Duration::from_millis(1);

impl Inner {
    /// Nanoseconds from the producer's start to `t` (0 before it).
    pub(super) fn since_start(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.started).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Seals the batches whose linger passed and appends every partition's
    /// sealed batches that are ready (`flush_sealed`: all of them), then sets
    /// `next_due` from what still waits. One scan at a time: `block` waits
    /// for another thread's scan, otherwise this returns and leaves it to
    /// that one. A sender's scan that finds a batch due before the linger
    /// thread means to wake wakes it. `lag`: only what was due that long
    /// ago (the linger thread leaves the rest to active senders).
    pub(super) fn append_due(&self, flush_sealed: bool, block: bool, lag: Duration) {
        let _scan = if block {
            self.scan.lock()
        } else {
            match self.scan.try_lock() {
                Some(g) => g,
                None => return,
            }
        };
        // Reset first: a batch opened from here on lowers it again, and
        // every batch opened before is seen by the scan below.
        self.next_due.store(NOTHING_DUE, Ordering::SeqCst);
        let linger = self.config.linger;
        let now = Instant::now();
        let now = now.checked_sub(lag).unwrap_or(now);
        let mut earliest = NOTHING_DUE;
        for q in self.all_queues() {
            let (ready, mut due) = q.seal_due(now, linger, false, flush_sealed);
            if ready {
                self.release(q.drain(self.config.durability, false));
                // Sealed batches still due have a drainer on another thread
                // (it writes them before it lets go): only the open batch
                // is left to wait for.
                due = q.next_deadline(linger, now);
            }
            if let Some(d) = due {
                let d = self.since_start(d);
                self.next_due.fetch_min(d, Ordering::SeqCst);
                earliest = earliest.min(d);
            }
        }
        let plan = self.linger_plan.load(Ordering::SeqCst);
        if !block && plan != AWAKE && earliest < plan {
            self.kick_linger(false);
        }
    }

    /// Called by a send that opened a batch (at `opened`) or sealed a full
    /// one (at `sealed`): lowers `next_due` to their deadlines, and appends
    /// what is due (on this thread, unless `offload`: an async send leaves
    /// it to the linger thread), or wakes the linger thread when one of
    /// these deadlines comes before its plan.
    pub(super) fn batches_due(
        &self,
        opened: Option<Instant>,
        sealed: Option<Instant>,
        offload: bool,
    ) {
        let linger = self.config.linger;
        let Some(now) = opened.or(sealed) else {
            return;
        };
        if linger.is_zero() {
            // Every batch is appended at once; there is no linger thread.
            return;
        }
        let open_due = opened.and_then(|t| t.checked_add(linger));
        let sealed_due = sealed.map(|t| t + linger.min(COALESCE_WAIT));
        let deadline = match (open_due, sealed_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
        .map_or(NOTHING_DUE, |d| self.since_start(d));
        let now = self.since_start(now);
        self.last_send.store(now, Ordering::Relaxed);
        let prev = self.next_due.fetch_min(deadline, Ordering::SeqCst);
        let due = prev <= now;
        if due && !offload {
            self.append_due(false, false, Duration::ZERO);
        }
        let plan = self.linger_plan.load(Ordering::SeqCst);
        if plan == AWAKE || deadline < plan || (due && offload) {
            self.kick_linger(false);
        }
    }

    /// Wakes the linger thread to scan now; `flush_sealed`: to append every
    /// sealed batch (a send waits for buffer memory).
    pub(super) fn kick_linger(&self, flush_sealed: bool) {
        let mut st = self.linger_state.lock();
        st.kicked = true;
        st.flush_sealed |= flush_sealed;
        drop(st);
        self.linger_wake.notify_one();
    }

    /// Appends every partition's sealed batches now, on this thread (a send
    /// about to wait for buffer memory: they hold what it waits for).
    pub(super) fn append_sealed(&self) {
        let now = Instant::now();
        for q in self.all_queues() {
            if q.seal_due(now, self.config.linger, false, true).0 {
                self.release(q.drain(self.config.durability, false));
            }
        }
    }
}

/// Appends batches whose linger time passed (and sealed batches it is asked
/// to flush). Sleeps until the next batch is due, or until a send wakes it.
pub(super) fn linger_loop(weak: Weak<Inner>) {
    let (mut scan, mut flush_sealed) = (true, false);
    loop {
        let Some(inner) = weak.upgrade() else { return };
        inner.linger_plan.store(AWAKE, Ordering::SeqCst);
        // While senders open and seal batches they append what comes due
        // themselves, on the cores that built it: the thread then acts a
        // little later, on what they left.
        let since_send = inner
            .since_start(Instant::now())
            .saturating_sub(inner.last_send.load(Ordering::Relaxed));
        let lag = if since_send < LEAVE_TO_SENDERS.as_nanos() as u64 {
            LEAVE_TO_SENDERS
        } else {
            Duration::ZERO
        };
        if scan {
            inner.append_due(flush_sealed, true, lag);
        }
        let due = {
            let _scan = inner.scan.lock();
            inner.next_due.load(Ordering::SeqCst)
        };
        // The plan is the deadline (a send wakes the thread only for an
        // earlier one); the thread wakes `lag` after it.
        inner
            .linger_plan
            .store(due.max(AWAKE + 1), Ordering::SeqCst);
        let due = due.saturating_add(lag.as_nanos() as u64);
        let mut st = inner.linger_state.lock();
        if st.stop {
            return;
        }
        flush_sealed = std::mem::take(&mut st.flush_sealed);
        let kicked = std::mem::take(&mut st.kicked);
        // Nothing due (or a deadline past what an instant holds): a second,
        // then look again.
        let wait = (due != NOTHING_DUE)
            .then(|| inner.started.checked_add(Duration::from_nanos(due)))
            .flatten()
            .map_or(Duration::from_secs(1), |at| {
                at.saturating_duration_since(Instant::now())
            });
        if flush_sealed || wait.is_zero() {
            scan = true;
            continue;
        }
        if kicked {
            // A batch opened while `next_due` was read: read it again.
            scan = false;
            continue;
        }
        let timed_out = inner.linger_wake.wait_for(&mut st, wait).timed_out();
        if st.stop {
            return;
        }
        // Woken by a send: `next_due` says whether anything is due.
        scan = timed_out || st.flush_sealed;
        st.kicked = false;
    }
}
