//! A handle to one sent record's outcome: poll it, wait for it, or wait
//! with a timeout.

use super::{accumulator, BatchCompletion, RecordMetadata};
use crate::error::{Error, Result};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A handle to one sent record's outcome.
pub struct SendHandle {
    pub(super) inner: HandleInner,
}

pub(super) enum HandleInner {
    Pending {
        completion: Arc<BatchCompletion>,
        topic: Arc<str>,
        partition: u32,
        index: u32,
        timestamp: i64,
    },
    Done(RecordMetadata),
}

impl std::fmt::Debug for SendHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendHandle")
            .field("done", &self.is_done())
            .finish()
    }
}

impl SendHandle {
    /// Whether the outcome is known.
    pub fn is_done(&self) -> bool {
        match &self.inner {
            HandleInner::Pending { completion, .. } => completion.is_done(),
            HandleInner::Done(_) => true,
        }
    }

    /// Blocks until the record reached the producer's durability level.
    ///
    /// # Errors
    /// [`Error::SendFailed`] with the append's error.
    pub fn wait(self) -> Result<RecordMetadata> {
        self.wait_until(None).unwrap_or(Err(Error::Closed))
    }

    /// As [`wait`](Self::wait), giving up after `timeout` (`None` then).
    pub fn wait_timeout(self, timeout: Duration) -> Option<Result<RecordMetadata>> {
        self.wait_until(Some(crate::deadline_after(timeout)))
    }

    fn wait_until(self, deadline: Option<Instant>) -> Option<Result<RecordMetadata>> {
        match self.inner {
            HandleInner::Done(m) => Some(Ok(m)),
            HandleInner::Pending {
                completion,
                topic,
                partition,
                index,
                timestamp,
            } => completion
                .wait(deadline)
                .map(|r| accumulator::metadata(&topic, partition, &r, index, timestamp)),
        }
    }
}
