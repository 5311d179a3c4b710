//! The write-behind thread: one per process, started on first use, that
//! starts the disk writes appends hand it (`Segment::write_behind`), so
//! the appending thread does not map and submit pages itself. A queue of
//! at most [`QUEUE`] requests; when it is full, or no thread could be
//! started, a request is dropped: it is a hint, and the kernel writes the
//! pages back later anyway (what is durable when never depends on it).

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::LazyLock;

/// Requests waiting at most: each holds its segment's files open until it
/// runs.
const QUEUE: usize = 64;

type Job = Box<dyn FnOnce() + Send>;

static THREAD: LazyLock<Option<SyncSender<Job>>> = LazyLock::new(|| {
    let (tx, rx) = sync_channel::<Job>(QUEUE);
    std::thread::Builder::new()
        .name("kafkalite-writeback".into())
        .spawn(move || {
            for job in rx {
                // A panic in one hint must not end the thread for the rest.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
        })
        .ok()
        .map(|_| tx)
});

/// Queues `job` for the write-behind thread; drops it when the queue is
/// full or there is no thread.
pub(super) fn submit(job: Job) {
    let Some(tx) = THREAD.as_ref() else { return };
    // Full or disconnected: the hint is dropped.
    let _ = tx.try_send(job);
}
