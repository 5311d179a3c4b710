//! The producer for async code: a [`SendHandle`] is a future
//! ([`IntoFuture`]), [`Producer::send_async`] waits for buffer space without
//! blocking the thread, and [`Producer::try_send`] fails at once when the
//! buffer is full.
//!
//! Buffer space: a waiting send registers its waker in `Inner::space`,
//! which sets `Inner::space_waiting`, and then tries to reserve again; the
//! producer's `release` frees memory and then, if that flag is set, wakes
//! every registered waker. Both the flag's store and load and the memory
//! count's change and read are `SeqCst`, so a release the second attempt
//! does not see sees the flag (`memory.rs`).

use super::accumulator::Callback;
use super::{HandleInner, Inner, Producer, ProducerRecord, RecordMetadata, SendHandle};
use crate::asynk::timer::{self, TimerKey};
use crate::asynk::wakers::WakerKey;
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

/// How a send gets its buffer space.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Reserve {
    /// Block up to `max.block.ms` (`send`).
    Block,
    /// Fail at once with `BufferExhausted` (`try_send`).
    Now,
    /// The caller reserved it already (`send_async`); on an error the
    /// caller releases it.
    Held,
}

impl Reserve {
    /// Whether a batch this send fills is left to the linger thread to
    /// append (async sends: the append's write and fsync stay off the
    /// executor's thread; with `linger.ms` 0 there is no such thread).
    pub(super) fn offloads_appends(self) -> bool {
        self == Reserve::Held
    }
}

impl Inner {
    fn exhausted(&self, waited_ms: u64) -> Error {
        Error::BufferExhausted {
            waited_ms,
            buffer_memory: self.config.buffer_memory,
        }
    }

    /// Takes buffer space for a send, as `reserve` says.
    pub(super) fn reserve_as(&self, bytes: usize, reserve: Reserve) -> Result<()> {
        match reserve {
            Reserve::Block => self.reserve(bytes),
            Reserve::Now if self.try_reserve(bytes) => Ok(()),
            // Credit the partitions hold unused, given back, may be room.
            Reserve::Now if self.reclaim_credit() && self.try_reserve(bytes) => Ok(()),
            Reserve::Now => {
                // Sealed batches waiting to be written with others hold
                // memory: have them written, so a retry finds room.
                self.kick_linger(true);
                Err(self.exhausted(0))
            }
            Reserve::Held => Ok(()),
        }
    }
}

impl Producer {
    /// As [`send`](Self::send), but fails at once with
    /// [`Error::BufferExhausted`] (`waited_ms` 0) instead of blocking when
    /// `buffer.memory` is used up.
    ///
    /// # Errors
    /// As [`send`](Self::send); nothing is queued then.
    pub fn try_send(&self, record: ProducerRecord) -> Result<SendHandle> {
        self.inner.send_with(record, Reserve::Now)
    }

    /// As [`send`](Self::send), for async code: the future waits for buffer
    /// space without blocking the thread (up to `max.block.ms`, then
    /// [`Error::BufferExhausted`]) and completes with the record's handle
    /// once it is queued. Await the handle for the record's metadata:
    ///
    /// ```
    /// # use kafkalite::*;
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     let mut f = std::pin::pin!(f);
    /// #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// #     loop {
    /// #         if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) { return v; }
    /// #         std::thread::sleep(std::time::Duration::from_millis(1));
    /// #     }
    /// # }
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path(), StoreOptions::default())?;
    /// store.create_topic("clicks", 1, TopicConfig::default())?;
    /// let producer = Producer::new(&store, ProducerConfig::default())?;
    /// let meta = block_on(async {
    ///     let handle = producer.send_async(ProducerRecord::new("clicks", "page=/")).await?;
    ///     handle.await
    /// })?;
    /// assert_eq!(meta.offset, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A batch the record fills is appended (and fsynced, under
    /// [`Durability::Fsync`](crate::Durability::Fsync)) by the producer's
    /// linger thread, not on the caller's thread, unless `linger.ms` is 0.
    ///
    /// Cancellation: a future dropped before it completed queued nothing
    /// (the record is dropped with it).
    ///
    /// # Errors
    /// As [`send`](Self::send).
    pub fn send_async(&self, record: ProducerRecord) -> SendAsync<'_> {
        SendAsync {
            size: record.encoded_size(),
            record: Some(record),
            producer: self,
            waiting_since: None,
            space_key: None,
            timer_key: None,
        }
    }
}

/// The future of [`Producer::send_async`].
#[must_use = "futures do nothing unless polled"]
pub struct SendAsync<'a> {
    producer: &'a Producer,
    record: Option<ProducerRecord>,
    size: usize,
    /// When the send first had to wait; `max.block.ms` counts from there
    /// (most sends never wait, and never read the clock).
    waiting_since: Option<Instant>,
    space_key: Option<WakerKey>,
    timer_key: Option<TimerKey>,
}

impl std::fmt::Debug for SendAsync<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendAsync")
            .field("size", &self.size)
            .field("queued", &self.record.is_none())
            .finish()
    }
}

impl SendAsync<'_> {
    fn clear(&mut self) {
        if let Some(k) = self.space_key.take() {
            self.producer.inner.space.lock().remove(k);
        }
        if let Some(k) = self.timer_key.take() {
            timer::cancel(k);
        }
    }
}

impl Future for SendAsync<'_> {
    type Output = Result<SendHandle>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let inner = &this.producer.inner;
        if this.record.is_none() || inner.closed.load(Ordering::Acquire) {
            this.clear();
            return Poll::Ready(Err(Error::Closed));
        }
        let mut registered = false;
        loop {
            if inner.try_reserve(this.size) {
                this.clear();
                let Some(record) = this.record.take() else {
                    inner.release(this.size);
                    return Poll::Ready(Err(Error::Closed));
                };
                let sent = inner.send_with(record, Reserve::Held);
                if sent.is_err() {
                    inner.release(this.size);
                }
                return Poll::Ready(sent);
            }
            if registered {
                break;
            }
            // Credit the partitions hold unused may be room: the try
            // after registering sees it given back.
            inner.reclaim_credit();
            inner.register_for_space(&mut this.space_key, cx.waker());
            registered = true;
        }
        if this.waiting_since.is_none() {
            // Sealed batches waiting to be written with others hold memory
            // this send waits for: the linger thread writes them now.
            inner.kick_linger(true);
        }
        let now = Instant::now();
        let since = *this.waiting_since.get_or_insert(now);
        // A max.block.ms too large for an Instant never runs out.
        if let Some(deadline) = since.checked_add(inner.config.max_block) {
            if now >= deadline {
                this.clear();
                let waited = inner.config.max_block.as_millis() as u64;
                return Poll::Ready(Err(inner.exhausted(waited)));
            }
            timer::register(deadline, &mut this.timer_key, cx.waker());
        }
        Poll::Pending
    }
}

impl Drop for SendAsync<'_> {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A sent record's outcome as a future: `handle.await` (see
/// [`SendHandle::into_future`]).
#[must_use = "futures do nothing unless polled"]
pub struct SendFuture {
    state: FutureState,
}

enum FutureState {
    Done(Option<RecordMetadata>),
    Pending(Arc<Mutex<Slot>>),
}

#[derive(Default)]
struct Slot {
    result: Option<Result<RecordMetadata>>,
    waker: Option<Waker>,
}

impl std::fmt::Debug for SendFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let done = match &self.state {
            FutureState::Done(_) => true,
            FutureState::Pending(slot) => slot.lock().result.is_some(),
        };
        f.debug_struct("SendFuture").field("done", &done).finish()
    }
}

impl IntoFuture for SendHandle {
    type Output = Result<RecordMetadata>;
    type IntoFuture = SendFuture;

    /// The handle as a future: completes when the record reached the
    /// producer's durability level, as [`wait`](SendHandle::wait) returns,
    /// without blocking a thread (the thread that completes the batch
    /// wakes the task). As with `wait` and Kafka's `future.get()`, the
    /// record's batch is appended once it fills or lingers `linger.ms`:
    /// awaiting each handle right after its send makes every record wait
    /// for the linger. Dropping it changes nothing about the send.
    fn into_future(self) -> SendFuture {
        let state = match self.inner {
            HandleInner::Done(m) => FutureState::Done(Some(m)),
            HandleInner::Pending {
                completion,
                topic,
                partition,
                index,
                timestamp,
            } => {
                let slot = Arc::new(Mutex::new(Slot::default()));
                let theirs = Arc::clone(&slot);
                completion.on_complete(
                    &topic,
                    partition,
                    index,
                    timestamp,
                    Callback::new(move |result| {
                        let mut s = theirs.lock();
                        s.result = Some(result);
                        let waker = s.waker.take();
                        drop(s);
                        if let Some(w) = waker {
                            w.wake();
                        }
                    }),
                );
                FutureState::Pending(slot)
            }
        };
        SendFuture { state }
    }
}

impl Future for SendFuture {
    type Output = Result<RecordMetadata>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match &mut self.get_mut().state {
            FutureState::Done(m) => Poll::Ready(m.take().ok_or(Error::Closed)),
            FutureState::Pending(slot) => {
                let mut s = slot.lock();
                match s.result.take() {
                    Some(r) => Poll::Ready(r),
                    None => {
                        match &mut s.waker {
                            Some(w) if w.will_wake(cx.waker()) => {}
                            w => *w = Some(cx.waker().clone()),
                        }
                        Poll::Pending
                    }
                }
            }
        }
    }
}
