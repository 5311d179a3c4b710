//! `Consumer::poll_async`: `poll` as a future that never blocks the
//! executor's thread on a wait.
//!
//! Each time the future is polled it runs one non-waiting pass of the
//! consumer (`poll(Duration::ZERO)`: the group protocol, auto-commit, a
//! fetch). With nothing to return it registers its waker with the store's
//! notifier, which appends, high-watermark moves and group changes wake,
//! and with the timer thread (see `crate::asynk`) for the sooner of its
//! deadline and the next group tick (every 100 ms, as the blocking `poll`
//! wakes to keep liveness checks and rebalances going).
//!
//! Cancellation: records are only taken from the consumer in the pass that
//! returns them (`Poll::Ready`), so dropping a pending future loses no
//! record and moves no position; its registrations are taken out on drop.

use super::{Consumer, ConsumerRecords, ConsumerRecordsIntoIter};
use crate::asynk::timer::{self, TimerKey};
use crate::asynk::wakers::WakerKey;
use crate::error::Result;
use crate::store::Store;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How often a waiting consumer runs a pass with no notification, so group
/// liveness checks and rebalances progress (as the blocking `poll`).
const GROUP_TICK: Duration = Duration::from_millis(100);

/// A waiting consumer's registrations with the store's notifier and the
/// timer; shared by [`PollFuture`] and the record stream.
pub(super) struct Waiter {
    store: Store,
    notify_key: Option<WakerKey>,
    timer_key: Option<TimerKey>,
}

impl Waiter {
    pub(super) fn new(store: &Store) -> Self {
        Waiter {
            store: store.clone(),
            notify_key: None,
            timer_key: None,
        }
    }

    /// One pass of `consumer`: records, or (at `deadline`) an empty batch,
    /// or `Pending` with the waker registered.
    pub(super) fn poll_records(
        &mut self,
        consumer: &mut Consumer,
        cx: &mut Context<'_>,
        deadline: Option<Instant>,
    ) -> Poll<Result<ConsumerRecords>> {
        // A notification during a pass means another look; a second one in
        // a row (appends to partitions this consumer does not read, say)
        // yields to the executor instead of spinning on its thread.
        for attempt in 0..2 {
            let seen = self.store.notifier().seq();
            let records = match consumer.poll(Duration::ZERO) {
                Ok(r) => r,
                Err(e) => {
                    self.clear();
                    return Poll::Ready(Err(e));
                }
            };
            let now = Instant::now();
            if !records.is_empty() || deadline.is_some_and(|d| now >= d) {
                self.clear();
                return Poll::Ready(Ok(records));
            }
            if !self
                .store
                .notifier()
                .register_past(seen, &mut self.notify_key, cx.waker())
            {
                if attempt == 0 {
                    continue;
                }
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            // Keep a tick that has not fired yet, so polls caused by other
            // wake-ups don't push it back.
            let tick = match self.timer_key {
                Some(k) if k.deadline() > now => k.deadline(),
                _ => now + GROUP_TICK,
            };
            let wake_at = deadline.map_or(tick, |d| d.min(tick));
            timer::register(wake_at, &mut self.timer_key, cx.waker());
            return Poll::Pending;
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }

    fn clear(&mut self) {
        if let Some(k) = self.notify_key.take() {
            self.store.notifier().deregister(k);
        }
        if let Some(k) = self.timer_key.take() {
            timer::cancel(k);
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        self.clear();
    }
}

/// The future of [`Consumer::poll_async`]: records (at most
/// `max.poll.records`), or none when the timeout passed first.
///
/// Dropping it before it completes loses nothing and moves no position.
#[must_use = "futures do nothing unless polled"]
pub struct PollFuture<'a> {
    consumer: &'a mut Consumer,
    deadline: Option<Instant>,
    waiter: Waiter,
}

impl std::fmt::Debug for PollFuture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PollFuture")
            .field("deadline", &self.deadline)
            .finish()
    }
}

impl Future for PollFuture<'_> {
    type Output = Result<ConsumerRecords>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.waiter.poll_records(this.consumer, cx, this.deadline)
    }
}

impl Consumer {
    /// [`poll`](Self::poll) as a future, for async code: completes with
    /// records once some are readable, or with none once
    /// `timeout` passed, without blocking the executor's thread on a wait.
    /// Works on any executor (no runtime is needed: wake-ups come from the
    /// store's notifier and a small timer thread).
    ///
    /// The timeout counts from this call. Each pass may still do blocking
    /// file I/O: reading records (page faults on the memory map), and the
    /// fsync of a commit (auto-commit, or the commit of a rebalance).
    ///
    /// Cancellation-safe: dropping the future before it completes loses no
    /// record and moves no position.
    ///
    /// ```
    /// # use kafkalite::*;
    /// # use std::time::Duration;
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let mut f = std::pin::pin!(f);
    /// #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// #     loop {
    /// #         if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; }
    /// #         std::thread::sleep(Duration::from_millis(1));
    /// #     }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path(), StoreOptions::default())?;
    /// store.create_topic("jobs", 1, TopicConfig::default())?;
    /// store.append("jobs", 0, &[Record::new("job-1")], Durability::Written)?;
    /// let mut consumer = Consumer::new(&store, ConsumerConfig::default())?;
    /// consumer.assign(&[TopicPartition::new("jobs", 0)])?;
    /// consumer.seek(&TopicPartition::new("jobs", 0), 0)?;
    /// // Inside an async fn: `consumer.poll_async(timeout).await?`
    /// let records = block_on(consumer.poll_async(Duration::from_secs(1)))?;
    /// assert_eq!(records.iter().next().and_then(|r| r.value), Some(&b"job-1"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    /// As [`poll`](Self::poll).
    pub fn poll_async(&mut self, timeout: Duration) -> PollFuture<'_> {
        let waiter = Waiter::new(&self.store);
        PollFuture {
            deadline: Instant::now().checked_add(timeout),
            consumer: self,
            waiter,
        }
    }
}

/// Records taken from the consumer but not handed out (an iterator or a
/// stream dropped mid-batch): seeks each partition back to its first
/// such record, so the next poll returns them again.
pub(super) fn rewind(consumer: &mut Consumer, leftovers: &ConsumerRecordsIntoIter) {
    for (tp, offset) in leftovers.rest_starts() {
        // The records came from the last poll, so their partitions are
        // still assigned; a consumer closed since has nothing to rewind.
        let _ = consumer.seek(&tp, offset);
    }
}
