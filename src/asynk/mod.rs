//! The pieces the async API is built from, with no runtime behind them:
//! sets of [`Waker`](std::task::Waker)s that the store's notifiers wake,
//! and one small timer thread for timeouts.
//!
//! The async types themselves sit beside their synchronous twins:
//! `consumer/async_poll.rs` (`Consumer::poll_async`), `consumer/stream.rs`
//! (`Consumer::stream`, feature `stream`) and `producer/future.rs`
//! (`SendHandle: IntoFuture`, `Producer::send_async`, `Producer::try_send`).
//!
//! # Why a timer thread
//!
//! A future that must complete "when records arrive or the timeout passes"
//! needs something to wake it when nothing arrives. Without a runtime there
//! is no runtime timer to borrow, so [`timer`] keeps one process-wide
//! thread (`kafkalite-timer`) with a deadline-ordered map of wakers. It is
//! started by the first timeout that needs it and exits after a second with
//! no timeout pending, so an idle process has no such thread, and no store
//! has to own or stop it.

pub(crate) mod timer;
pub(crate) mod wakers;
