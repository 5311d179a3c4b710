//! Each sending thread's cache of the topics it sent to lately, with
//! their partition queues (`send.rs` sends through it), and the producers
//! it counts among the senders of while it holds their queues.

use super::accumulator::CountedSender;
use super::partitioner::{thread_shard, Sticky};
use super::{Inner, PartitionQueue};
use crate::topic::Topic;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// How many topics a thread keeps cached (the latest ones it sent to).
const CACHED_TOPICS: usize = 4;

/// A topic a thread sent to lately, with its partition queues: a send that
/// finds them here takes no lock and touches no reference count another
/// sending thread also touches (the store's topic map, its `Topic`, the
/// producer's queue map). Sending threads on different partitions then
/// share no written cache line until the buffer-memory count. A thread
/// holds at most [`CACHED_TOPICS`] of these (their queues' buffers and logs
/// with them) until it sends again.
pub(super) struct LastTopic {
    pub(super) producer: u64,
    pub(super) version: u64,
    pub(super) topic: Arc<Topic>,
    pub(super) queues: Vec<Arc<PartitionQueue>>,
    /// This thread's sticky choice for the topic's keyless records, with
    /// the built-in partitioner (chosen on first use).
    pub(super) sticky: Option<Sticky>,
}

thread_local! {
    pub(super) static LAST_TOPICS: RefCell<Vec<LastTopic>> = const { RefCell::new(Vec::new()) };
    /// The producers whose queues this thread's cached topics hold, each
    /// counting the thread once among its senders (`accumulator::Senders`)
    /// while it does, and until the thread ends.
    static COUNTED: RefCell<Vec<(u64, CountedSender)>> = const { RefCell::new(Vec::new()) };
}

impl Inner {
    /// Caches `topic`'s queues for this thread's next sends (dropping the
    /// thread's oldest cached topic beyond [`CACHED_TOPICS`]).
    /// `first_sticky`: the keyless choice this send made, and the bytes it
    /// sent there, which the thread's own sticky choice continues (the
    /// batch begun there is filled before it moves on).
    pub(super) fn remember(&self, topic: &str, first_sticky: Option<(u32, usize)>) {
        let version = self.queues_version.load(Ordering::Acquire);
        let Some(queues) = self.queues.read().get(topic).cloned() else {
            return;
        };
        let Ok(t) = self.store.topic(topic) else {
            return;
        };
        LAST_TOPICS.with(|last| {
            let Ok(mut last) = last.try_borrow_mut() else {
                return;
            };
            // The replaced entry's sticky choice carries over, so a change
            // of the producer's queues does not move keyless records on.
            let count = t.partition_count();
            let sticky = last
                .iter()
                .find(|c| c.producer == self.id && c.topic.name == topic)
                .and_then(|c| c.sticky.clone())
                .or_else(|| {
                    first_sticky.map(|(p, bytes)| {
                        Sticky::new(topic, thread_shard() as u64, count).starting_at(p, bytes)
                    })
                });
            // This topic's old entry goes, and so does any whose logs are
            // closed (a deleted topic, a closed store), so a thread holds no
            // closed producer's queues once it sends again.
            last.retain(|c| {
                let replaced = c.producer == self.id && c.topic.name == topic;
                let closed = c.queues.first().is_some_and(|q| q.is_stale());
                !replaced && !closed
            });
            if last.len() >= CACHED_TOPICS {
                last.remove(0);
            }
            last.push(LastTopic {
                producer: self.id,
                version,
                topic: t,
                queues,
                sticky,
            });
            COUNTED.with(|counted| {
                if let Ok(mut counted) = counted.try_borrow_mut() {
                    counted.retain(|(id, _)| last.iter().any(|c| c.producer == *id));
                    if !counted.iter().any(|(id, _)| *id == self.id) {
                        counted.push((self.id, self.senders.count_in()));
                    }
                }
            });
        });
    }
}
