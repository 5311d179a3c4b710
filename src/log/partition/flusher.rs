//! Background flushing of rolled segments: one worker thread per log at
//! most, started when a roll hands it a job and gone once the queue is
//! empty, so an idle log holds no thread. Jobs run in roll order, each
//! reporting through its [`FlushTicket`]. Outstanding jobs are bounded by
//! the log (a roll waits for the oldest beyond `MAX_PENDING_FLUSHES`).

use crate::error::{Error, Result};
use parking_lot::{Condvar, Mutex};
use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

type Job = Box<dyn FnOnce() -> Result<()> + Send>;

/// The outcome of one flush job, once it has run.
#[derive(Default)]
struct Outcome {
    result: Mutex<Option<Result<()>>>,
    done: Condvar,
}

/// A handle on one queued flush job.
pub(super) struct FlushTicket(Arc<Outcome>);

impl FlushTicket {
    /// Whether the job has run.
    pub(super) fn is_finished(&self) -> bool {
        self.0.result.lock().is_some()
    }

    /// Waits for the job and returns its result.
    pub(super) fn wait(self) -> Result<()> {
        let mut r = self.0.result.lock();
        loop {
            if let Some(result) = r.take() {
                return result;
            }
            self.0.done.wait(&mut r);
        }
    }
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<(Job, Arc<Outcome>)>,
    /// A worker thread is running (and will look at `jobs` again).
    running: bool,
}

/// A log's flush worker.
pub(super) struct Flusher {
    queue: Arc<Mutex<Queue>>,
    /// For the thread's name and the error of a job that panicked.
    dir: PathBuf,
}

impl Flusher {
    pub(super) fn new(dir: PathBuf) -> Flusher {
        Flusher {
            queue: Arc::default(),
            dir,
        }
    }

    /// Queues `job`, starting the worker if none runs. When no thread can
    /// be started the job runs here, before this returns.
    pub(super) fn submit(&self, job: impl FnOnce() -> Result<()> + Send + 'static) -> FlushTicket {
        let outcome = Arc::new(Outcome::default());
        let mut q = self.queue.lock();
        q.jobs.push_back((Box::new(job), Arc::clone(&outcome)));
        if !q.running {
            q.running = true;
            let queue = Arc::clone(&self.queue);
            let dir = self.dir.clone();
            let spawned = std::thread::Builder::new()
                .name("kafkalite-flush".into())
                .spawn(move || work(&queue, &dir));
            if spawned.is_err() {
                drop(q);
                work(&self.queue, &self.dir);
            }
        }
        FlushTicket(outcome)
    }
}

/// Runs queued jobs until none is left.
fn work(queue: &Mutex<Queue>, dir: &std::path::Path) {
    loop {
        let Some((job, outcome)) = ({
            let mut q = queue.lock();
            let next = q.jobs.pop_front();
            if next.is_none() {
                q.running = false;
            }
            next
        }) else {
            return;
        };
        let result =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or_else(|_| {
                let panicked = std::io::Error::other("segment flush panicked");
                Err(Error::io("fsync", dir, panicked))
            });
        *outcome.result.lock() = Some(result);
        outcome.done.notify_all();
    }
}
