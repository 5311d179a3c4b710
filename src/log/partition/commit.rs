//! Durability: group commit, the poison latch, and the background flushes
//! of rolled segments.
//!
//! Group commit: an `Fsync` append writes under the writer lock, then waits
//! in [`PartitionLog::sync_to`]; the first waiter becomes the leader, waits
//! briefly for appends still being written, and runs one fdatasync for all
//! of them outside the writer lock, while appenders keep writing.
//!
//! The poison latch: one place sets it ([`PartitionLog::poison`]), after a
//! failed fsync or a step that may have left the log unsafe to extend, and
//! every write, sync and close checks it ([`PartitionLog::check_poisoned`]).
//! It never resets: a failed fsync is never retried (the page cache may
//! have dropped the dirty pages), and only a reopen, which recovers from
//! what is on disk, clears it.

use super::flusher::FlushTicket;
use super::PartitionLog;
use crate::error::{Error, Result};
use crate::log::config::Durability;
use crate::log::Notifier;
use parking_lot::MutexGuard;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many background flushes of rolled segments may be outstanding before
/// a roll waits for the oldest (the disk falling behind slows appends down
/// rather than letting unsynced segments pile up).
const MAX_PENDING_FLUSHES: usize = 4;

/// How long a group-commit leader waits for `Fsync` appends still being
/// encoded or written before it fsyncs (about one fsync on this class of
/// disk: waiting longer than an fsync takes cannot pay off).
const GATHER_WAIT: Duration = Duration::from_micros(300);

/// Counts one `Fsync` append in [`Durable::appending`] until dropped (once
/// its batch is written, before it waits for the fsync).
pub(crate) struct FsyncAppend<'a>(&'a PartitionLog);

impl Drop for FsyncAppend<'_> {
    fn drop(&mut self) {
        let mut d = self.0.durable.lock();
        d.appending = d.appending.saturating_sub(1);
        if d.appending == 0 && d.gathering {
            self.0.gather_cv.notify_one();
        }
    }
}

/// Durability bookkeeping shared by appenders and the group-commit leader.
#[derive(Debug)]
pub(super) struct Durable {
    /// Everything below this offset is on disk.
    pub(super) synced: i64,
    /// End (exclusive) of the latest `Fsync` append.
    pub(super) fsync_wanted: i64,
    /// A leader is running fsync now.
    syncing: bool,
    /// That leader took background flushes of rolled segments and is
    /// waiting for them (it no longer needs the writer lock).
    holding_flushes: bool,
    /// `Fsync` appends between the start of their encoding and the end of
    /// their write: a leader about to fsync waits briefly for them, so that
    /// one fsync covers them too (see [`FsyncAppend`]).
    pub(super) appending: usize,
    /// `Fsync` appends written since the last leader took its snapshot.
    fsync_written: usize,
    /// How many `Fsync` appends the last fsync covered: a leader waits
    /// (briefly) until as many are written, or none is left in flight.
    last_round: usize,
    /// A leader is waiting for appends to gather.
    pub(super) gathering: bool,
    /// Number of fsyncs run (for tests and metrics).
    pub(super) fsyncs: u64,
    /// When the oldest unsynced append happened (for `flush.ms`).
    unsynced_since: Option<Instant>,
}

impl Durable {
    pub(super) fn new(log_end: i64) -> Durable {
        Durable {
            synced: log_end,
            fsync_wanted: log_end,
            syncing: false,
            holding_flushes: false,
            appending: 0,
            fsync_written: 0,
            last_round: 0,
            gathering: false,
            fsyncs: 0,
            unsynced_since: None,
        }
    }
}

impl PartitionLog {
    /// [`Error::Poisoned`] once the latch is set.
    pub(super) fn check_poisoned(&self) -> Result<()> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::Poisoned {
                path: self.dir.clone(),
            });
        }
        Ok(())
    }

    /// Sets the poison latch (the only place that does): appends, syncs and
    /// close fail until the log is reopened, and every thread waiting on
    /// the group commit is woken to fail too. Must not be called with the
    /// `Durable` mutex held.
    pub(super) fn poison(&self) {
        let d = self.durable.lock();
        self.poison_locked(d);
    }

    /// [`poison`](Self::poison) with the `Durable` mutex held: the latch is
    /// set under the mutex every waiter checks it under, so a waiter either
    /// sees it or is waiting when the wake-ups come, and no thread can start
    /// another fsync in between (a failed fsync is never retried).
    fn poison_locked(&self, d: MutexGuard<'_, Durable>) {
        self.poisoned.store(true, Ordering::Release);
        drop(d);
        crate::warn_event!("log {} poisoned until reopened", self.dir.display());
        self.round_end.notify();
        self.gather_cv.notify_all();
    }

    /// Counts an `Fsync` append for group commit until the guard drops.
    pub(crate) fn fsync_append(&self, durability: Durability) -> Option<FsyncAppend<'_>> {
        (durability == Durability::Fsync).then(|| {
            self.durable.lock().appending += 1;
            FsyncAppend(self)
        })
    }

    /// Records a written append in the durability bookkeeping and publishes
    /// what readers may see; returns whether `flush.messages` asks for a
    /// sync now.
    pub(super) fn note_written(&self, next: i64, durability: Durability) -> bool {
        let mut d = self.durable.lock();
        if durability == Durability::Fsync {
            d.fsync_wanted = next;
            d.fsync_written += 1;
            if d.gathering && d.fsync_written >= d.last_round {
                self.gather_cv.notify_one();
            }
        }
        d.unsynced_since.get_or_insert_with(Instant::now);
        self.publish_high_watermark(&d);
        // flush.messages: offsets are messages, so the unsynced count is the
        // distance from the synced point.
        self.config
            .settings
            .flush_messages
            .is_some_and(|n| (next - d.synced) as u64 >= n)
    }

    /// Moves the synced point to `to` (a flush of everything below it
    /// succeeded); returns the new synced point when it moved.
    pub(super) fn note_synced(&self, to: i64) -> Option<i64> {
        let mut d = self.durable.lock();
        let before = d.synced;
        d.synced = d.synced.max(to);
        self.publish_high_watermark(&d);
        (d.synced > before).then_some(d.synced)
    }

    /// The synced point: every record below it is on disk.
    pub(super) fn synced(&self) -> i64 {
        self.durable.lock().synced
    }

    /// Number of fsyncs the group commit has run since open.
    pub fn fsync_count(&self) -> u64 {
        self.durable.lock().fsyncs
    }

    /// Releases `d` until the group commit's current round ends (or the log
    /// is poisoned), then takes it back.
    fn wait_round_end<'a>(&'a self, d: MutexGuard<'a, Durable>) -> MutexGuard<'a, Durable> {
        let seen = self.round_end.seq();
        drop(d);
        self.round_end.wait(seen);
        self.durable.lock()
    }

    /// Queues the job that makes a rolled segment durable; `end` is the
    /// offset below which it covers the log.
    pub(super) fn queue_flush(&self, end: i64, job: impl FnOnce() -> Result<()> + Send + 'static) {
        let ticket = self.flusher.submit(job);
        self.pending_flush.lock().push_back((end, ticket));
    }

    /// With the writer lock held: takes in the background flushes of rolled
    /// segments that have finished, oldest first (all of them when `all`;
    /// the oldest ones, waiting, while more than [`MAX_PENDING_FLUSHES`] are
    /// outstanding). Returns how far the log is then known to be durable:
    /// to the end of the last segment joined, or to `active_base` once none
    /// is pending; `None` when nothing new is known (or a group-commit
    /// leader holds older flushes).
    pub(super) fn settle_rolled(&self, all: bool, active_base: i64) -> Result<Option<i64>> {
        let mut pending = self.pending_flush.lock();
        let mut joined = None;
        while let Some((_, ticket)) = pending.front() {
            if !(all || ticket.is_finished() || pending.len() > MAX_PENDING_FLUSHES) {
                break;
            }
            let Some((end, ticket)) = pending.pop_front() else {
                break;
            };
            self.join_flush(ticket)?;
            joined = Some(end);
        }
        let d = self.durable.lock();
        if d.holding_flushes || self.poisoned.load(Ordering::Acquire) {
            return Ok(None);
        }
        Ok(if pending.is_empty() {
            Some(active_base)
        } else {
            joined
        })
    }

    /// Makes every sealed segment durable (waiting for the background
    /// flushes of rolled ones) and writes a checkpoint whose recovery point
    /// covers them all. Compaction calls this before rewriting them.
    pub(crate) fn sync_sealed(&self) -> Result<()> {
        let settled = {
            let _w = self.writer.lock();
            let base = self.active().base_offset();
            let settled = self.settle_rolled(true, base)?;
            if let Some(to) = settled {
                self.note_synced(to);
            }
            settled.is_some()
        };
        if !settled {
            // A group-commit leader holds older flushes: sync everything.
            self.flush()?;
        }
        self.checkpoint()
    }

    /// Waits for every background flush of a rolled segment (for the fuzz
    /// harness, which attributes a flush's injected failure to the operation
    /// that armed it).
    #[cfg(any(test, fuzzing))]
    pub(crate) fn wait_for_rolled_flushes(&self) -> Result<()> {
        let _w = self.writer.lock();
        let base = self.active().base_offset();
        self.settle_rolled(true, base).map(|_| ())
    }

    /// Waits for a background flush of a rolled segment. A failure poisons
    /// the log: a failed fsync is never retried.
    fn join_flush(&self, ticket: FlushTicket) -> Result<()> {
        let result = ticket.wait();
        if result.is_err() {
            self.poison();
        }
        result
    }

    /// Waits for the group-commit leader holding rolled flushes, if any
    /// (for close).
    pub(super) fn wait_for_leader_flushes(&self) -> Result<()> {
        let mut d = self.durable.lock();
        while d.holding_flushes {
            d = self.wait_round_end(d);
        }
        drop(d);
        self.check_poisoned()
    }

    pub(super) fn publish_high_watermark(&self, d: &Durable) {
        let end = self.log_end.load(Ordering::Acquire);
        let hw = if d.fsync_wanted > d.synced {
            d.synced
        } else {
            end
        };
        let prev = self.high_watermark.fetch_max(hw, Ordering::AcqRel);
        if hw > prev {
            self.notify_readers();
        }
    }

    pub(super) fn notify_readers(&self) {
        self.data.notify();
        if let Some(l) = self.listener.get() {
            l.notify();
        }
    }

    /// Also notify `listener` whenever new data becomes readable (one
    /// listener per log; later calls are ignored).
    pub(crate) fn set_listener(&self, listener: Arc<Notifier>) {
        let _ = self.listener.set(listener);
    }

    /// Blocks until every record below `target` is on disk, sharing one
    /// fsync among all threads waiting at the same time (group commit).
    pub(crate) fn sync_to(&self, target: i64) -> Result<()> {
        self.check_writable()?;
        let mut d = self.durable.lock();
        loop {
            self.check_poisoned()?;
            if d.synced >= target {
                return Ok(());
            }
            if !d.syncing {
                break;
            }
            d = self.wait_round_end(d);
        }
        d.syncing = true;
        // Group commit: appends still being encoded or written want this
        // fsync too, and so, most likely, do as many appenders as the last
        // fsync covered. Give them a moment (at most about one fsync), so
        // that one fsync covers them all.
        let poisoned = || self.poisoned.load(Ordering::Acquire);
        let gather =
            |d: &Durable| !poisoned() && (d.appending > 0 || d.fsync_written < d.last_round);
        if gather(&d) {
            d.gathering = true;
            let deadline = Instant::now() + GATHER_WAIT;
            while gather(&d) && !self.gather_cv.wait_until(&mut d, deadline).timed_out() {}
            d.gathering = false;
        }
        drop(d);
        // Everything written so far is covered by this fsync and the
        // background flushes of rolled segments still pending (every earlier
        // one was joined, and a failure poisoned the log).
        let (segment, end, rolled) = {
            let _w = self.writer.lock();
            (self.active(), self.log_end.load(Ordering::Acquire), {
                let taken = std::mem::take(&mut *self.pending_flush.lock());
                let mut d = self.durable.lock();
                d.holding_flushes = !taken.is_empty();
                d.last_round = std::mem::take(&mut d.fsync_written);
                taken
            })
        };
        let fsync_started = Instant::now();
        let result = rolled
            .into_iter()
            .try_for_each(|(_, ticket)| self.join_flush(ticket))
            .and_then(|()| segment.sync());
        self.fsync_latency.record(fsync_started.elapsed());
        let mut d = self.durable.lock();
        d.syncing = false;
        d.holding_flushes = false;
        d.fsyncs += 1;
        let out = match result {
            // Poisoned meanwhile (say, a rolled segment's flush failed while
            // this leader gathered): what this fsync covers may not all be
            // durable. Acknowledge nothing.
            Ok(()) if poisoned() => Err(Error::Poisoned {
                path: self.dir.clone(),
            }),
            Ok(()) => {
                d.synced = d.synced.max(end);
                if d.synced >= self.log_end_offset() {
                    d.unsynced_since = None;
                }
                self.publish_high_watermark(&d);
                Ok(())
            }
            Err(e) => {
                // Never retry a failed fsync: the page cache may have dropped
                // the dirty pages (fsyncgate). Poison until reopen.
                crate::warn_event!("fsync of {} failed: {e}", self.dir.display());
                self.poison_locked(d);
                return Err(e);
            }
        };
        drop(d);
        self.round_end.notify();
        out
    }

    /// fsyncs everything appended so far.
    ///
    /// # Errors
    /// [`Error::Poisoned`] or the fsync's error (which poisons the log).
    pub fn flush(&self) -> Result<()> {
        self.sync_to(self.log_end_offset())
    }

    /// Runs the `flush.ms` policy: fsyncs if unsynced data is older than it.
    /// Returns whether it flushed. The store's background thread calls this.
    ///
    /// # Errors
    /// As [`PartitionLog::flush`].
    pub fn flush_if_due(&self, now: Instant) -> Result<bool> {
        let Some(limit) = self.config.settings.flush_max_age else {
            return Ok(false);
        };
        let due = self
            .durable
            .lock()
            .unsynced_since
            .is_some_and(|t| now.saturating_duration_since(t) >= limit);
        if due {
            self.flush()?;
        }
        Ok(due)
    }
}
