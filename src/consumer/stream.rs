//! `Consumer::stream`: the records as a `futures_core::Stream` (feature
//! `stream`).

use super::async_poll::{rewind, Waiter};
use super::{Consumer, ConsumerRecord, ConsumerRecords, ConsumerRecordsIntoIter};
use crate::error::{Error, Result};
use std::pin::Pin;
use std::task::{Context, Poll};

/// The stream of [`Consumer::stream`]: every record, one at a time, waiting
/// asynchronously for more; it ends when the consumer is closed.
///
/// Dropping it loses nothing: records taken from the consumer but not yet
/// handed out are sought back to, so the next poll returns them.
#[must_use = "streams do nothing unless polled"]
pub struct RecordStream<'a> {
    consumer: &'a mut Consumer,
    waiter: Waiter,
    pending: ConsumerRecordsIntoIter,
    done: bool,
}

impl std::fmt::Debug for RecordStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordStream")
            .field("pending", &self.pending.len())
            .field("done", &self.done)
            .finish()
    }
}

impl Consumer {
    /// The records as a [`futures_core::Stream`] of `Result<ConsumerRecord>`
    /// (feature `stream`). Each wait is a [`poll_async`](Self::poll_async)
    /// without a timeout; errors are yielded as items and the stream goes
    /// on, except [`Error::Closed`], which ends it.
    pub fn stream(&mut self) -> RecordStream<'_> {
        let waiter = Waiter::new(&self.store);
        RecordStream {
            consumer: self,
            waiter,
            pending: ConsumerRecords::default().into_iter(),
            done: false,
        }
    }
}

impl futures_core::Stream for RecordStream<'_> {
    type Item = Result<ConsumerRecord>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(r) = this.pending.next() {
            return Poll::Ready(Some(Ok(r)));
        }
        if this.done {
            return Poll::Ready(None);
        }
        match this.waiter.poll_records(this.consumer, cx, None) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(records)) => {
                this.pending = records.into_iter();
                match this.pending.next() {
                    Some(r) => Poll::Ready(Some(Ok(r))),
                    // Without a deadline a pass completes with records only;
                    // should one not, look again rather than end.
                    None => {
                        cx.waker().wake_by_ref();
                        Poll::Pending
                    }
                }
            }
            Poll::Ready(Err(Error::Closed)) => {
                this.done = true;
                Poll::Ready(None)
            }
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
        }
    }
}

impl futures_core::stream::FusedStream for RecordStream<'_> {
    fn is_terminated(&self) -> bool {
        self.done && self.pending.len() == 0
    }
}

impl Drop for RecordStream<'_> {
    fn drop(&mut self) {
        rewind(self.consumer, &self.pending);
    }
}
