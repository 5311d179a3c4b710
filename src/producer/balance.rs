//! Where a thread's keyless records go at a sticky switch (see
//! [`choose`]): partitions the thread filled last, while they stay within
//! [`BALANCE_BATCHES`] of even.

use super::partitioner::PREFER_TRIES;
use super::PartitionQueue;
use std::sync::Arc;

/// How many batches' bytes more than the least among a switch's
/// candidates a partition may have had sealed and still be preferred:
/// keyless records stay spread within that many batches of even (512 KiB
/// with the default `batch.size`).
const BALANCE_BATCHES: u64 = 32;

/// How many batches' bytes behind the most among a switch's candidates a
/// partition's count is kept at most (`PartitionQueue::catch_up_to`): a
/// partition added to the topic takes that much more than its share, then
/// its share.
const CATCH_UP_BATCHES: u64 = 256;

/// Where a thread's keyless records go at a sticky switch: the place among
/// `candidates` (the partitions the switch looks at, from a random one on)
/// of the first that ranks highest (`None` only without candidates).
///
/// First of all, a partition within [`BALANCE_BATCHES`] of the
/// least-filled candidate; among those, and among the others, first one
/// whose open batch, if any, is not another thread's (one another thread
/// is filling ranks lower, but is still taken over a free one outside the
/// balance; see
/// `PartitionQueue::filled_by_another`: both would fill it, in turn, from
/// two cores), then one where no other thread's sealed batches wait (see
/// `PartitionQueue::holds_others_batches`); and among those within the
/// balance, free, with none waiting, one whose latest batch this thread
/// opened. So two threads sending at once
/// settle on partitions of their own, whose batch buffers, callback lists
/// and locks stay in their own core's cache (a batch of a partition both
/// threads fill in turn is written, checksummed and completed on the other
/// core half the time), and the balance moves partitions from a thread
/// that sends more to one that sends less, so the partitions' shares stay
/// even whatever each thread sends.
pub(super) fn choose(queues: &[Arc<PartitionQueue>], candidates: &[u32], me: u64) -> Option<usize> {
    const N: usize = PREFER_TRIES as usize;
    let mut seen: [Option<(&PartitionQueue, u64)>; N] = [None; N];
    let (mut least, mut most, mut batch) = (u64::MAX, 0, 1);
    for (slot, &p) in seen.iter_mut().zip(candidates) {
        // A queue list shorter than the count: the caller finds it stale.
        let q = queues.get(p as usize)?;
        let total = q.sealed_total();
        (least, most) = (least.min(total), most.max(total));
        batch = q.batch_limit() as u64;
        *slot = Some((q, total));
    }
    let floor = most.saturating_sub(CATCH_UP_BATCHES * batch);
    if least < floor {
        for (q, total) in seen.iter_mut().flatten() {
            if *total < floor {
                q.catch_up_to(floor);
                *total = floor;
            }
        }
        least = floor;
    }
    let even = least.saturating_add(BALANCE_BATCHES * batch);
    let mut best: Option<(usize, u8)> = None;
    for (i, &(q, total)) in seen.iter().flatten().enumerate() {
        let within = total <= even;
        let free = !q.filled_by_another(me);
        let alone = !q.holds_others_batches(me);
        let rank = 1
            + 8 * u8::from(within)
            + 4 * u8::from(free)
            + 2 * u8::from(alone)
            + u8::from(within && free && alone && q.last_opened_by(me));
        if best.is_none_or(|(_, r)| rank > r) {
            best = Some((i, rank));
            if rank == 16 {
                break;
            }
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::producer::accumulator::{thread_token, Senders, SpareBudget};
    use crate::producer::ProducerRecord;
    use crate::{ProducerConfig, Store, StoreOptions, TopicConfig};

    /// A store (kept in the returned directory's life) with a topic of
    /// `partitions` partitions, and a queue for each, batches of
    /// `batch_size` bytes.
    fn queues(
        partitions: u32,
        batch_size: usize,
    ) -> (tempfile::TempDir, Store, Vec<Arc<PartitionQueue>>) {
        let d = tempfile::tempdir().unwrap();
        let s = Store::open(d.path(), StoreOptions::default()).unwrap();
        s.create_topic("t", partitions, TopicConfig::default())
            .unwrap();
        let c = ProducerConfig {
            batch_size,
            ..ProducerConfig::default()
        };
        let budget = SpareBudget::for_buffer_memory(c.buffer_memory);
        let senders = Senders::new();
        let qs = (0..partitions)
            .map(|p| {
                Arc::new(PartitionQueue::new(
                    "t",
                    p,
                    s.partition("t", p).unwrap(),
                    &c,
                    &budget,
                    &senders,
                ))
            })
            .collect();
        (d, s, qs)
    }

    /// The ranks of a sticky switch: within the balance first, then where
    /// no other thread's batches wait, then this thread's own; one far
    /// behind is raised to within `CATCH_UP_BATCHES`.
    #[test]
    fn a_switch_prefers_its_own_partitions_while_they_are_even() {
        // Every record fills its batch, which is sealed at once.
        let (_d, _s, qs) = queues(4, 200);
        let record = ProducerRecord::new("t", vec![1u8; 300]);
        let size = record.encoded_size();
        let push = |q: &PartitionQueue| {
            assert!(q.push(&record, 0, size, size, false, None, false).is_ok());
        };
        let me = thread_token();
        let batch = 200;
        // Nothing sent yet: every partition is this thread's and even.
        assert_eq!(choose(&qs, &[2, 3, 1], me), Some(0));
        // Partition 2's latest batch is another thread's, and waits.
        std::thread::scope(|sc| sc.spawn(|| push(&qs[2])).join().unwrap());
        assert_eq!(choose(&qs, &[2, 3], me), Some(1));
        assert_eq!(choose(&qs, &[2], me), Some(0), "the only candidate");
        // Partition 3 far ahead: the balance ranks above a waiting batch.
        qs[3].catch_up_to((BALANCE_BATCHES + 3) * batch);
        assert_eq!(choose(&qs, &[3, 2], me), Some(1));
        // Written, partition 2 (the other thread's) ranks above 3.
        qs[2].drain(crate::Durability::Written, false);
        assert_eq!(choose(&qs, &[3, 2], me), Some(1));
        // Both within the balance: this thread's own ranks first.
        qs[2].catch_up_to(qs[3].sealed_total());
        assert_eq!(choose(&qs, &[2, 3], me), Some(1));
        // Far behind the most: raised to within CATCH_UP_BATCHES of it.
        let most = 1000 * batch;
        qs[0].catch_up_to(most);
        assert_eq!(choose(&qs, &[0, 1], me), Some(1));
        assert_eq!(qs[1].sealed_total(), most - CATCH_UP_BATCHES * batch);
        // A batch this thread seals counts its bytes.
        let before = qs[1].sealed_total();
        push(&qs[1]);
        assert!(qs[1].sealed_total() > before);
        // A queue list shorter than the candidates: none chosen.
        assert_eq!(choose(&qs[..1], &[0, 1], me), None);
    }

    /// A partition whose open batch another thread is filling ranks below
    /// one where another thread's sealed batches wait, and above it again
    /// once that batch is sealed and written.
    #[test]
    fn a_switch_passes_over_a_partition_another_thread_is_filling() {
        let (_d, _s, qs) = queues(2, 1000);
        let push = |q: &PartitionQueue, bytes: usize| {
            let record = ProducerRecord::new("t", vec![1u8; bytes]);
            let size = record.encoded_size();
            assert!(q.push(&record, 0, size, size, false, None, false).is_ok());
        };
        let me = thread_token();
        // Another thread leaves a batch open on partition 0 and fills (and
        // so seals) one on partition 1, which waits to be written.
        std::thread::scope(|sc| {
            sc.spawn(|| {
                push(&qs[0], 10);
                push(&qs[1], 2000);
            })
            .join()
            .unwrap()
        });
        assert!(qs[0].filled_by_another(me) && !qs[1].filled_by_another(me));
        assert!(qs[1].holds_others_batches(me) && !qs[0].holds_others_batches(me));
        assert_eq!(choose(&qs, &[0, 1], me), Some(1));
        // Partition 0's batch sealed and written: it is free again, and
        // ranks above partition 1, where the other thread's batch waits.
        qs[0].seal_and_pending();
        qs[0].drain(crate::Durability::Written, false);
        assert!(!qs[0].filled_by_another(me) && !qs[0].holds_others_batches(me));
        assert_eq!(choose(&qs, &[1, 0], me), Some(1));
        // This thread's own open batch does not count against it.
        push(&qs[0], 10);
        assert!(!qs[0].filled_by_another(me));
        assert_eq!(choose(&qs, &[1, 0], me), Some(1));
    }
}
