//! The verified-batch set: positions of the batches of an open segment
//! whose CRC this process checked, so a batch is checked once while the
//! process holds the segment open, however many reads land in it (Kafka's
//! consumer checks each fetched batch once; a point read must not re-check
//! a whole batch for one record). Bytes below a segment's published size
//! never change, so a verified batch stays valid as long as the segment's
//! files are open; the set lives with them and goes with an eviction.
//!
//! Bounded: every set's table counts against one process-wide [`BUDGET`]
//! (about 9 bytes a batch: a 1 GiB segment of 64 KiB batches holds some
//! 16,000, ~150 KiB). A set that would grow past the budget starts over
//! empty instead, so its batches are checked again as they are read: the
//! cost of a store holding more batches open than the budget covers, never
//! unbounded memory. (A fixed table of 4,096 slots per segment, before this,
//! made point reads over 7,500 batches re-check a third of them.)

use crate::record::{DecodeError, RecordBatch};
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Bytes all verified sets of the process hold at most.
pub(crate) const BUDGET: usize = 64 << 20;

/// Heap bytes a set's table takes per slot: the position and the table's
/// control byte.
const SLOT_BYTES: usize = std::mem::size_of::<u64>() + 1;

/// How many bytes the sets charged to it hold, and how many they may.
pub(crate) struct Budget {
    held: AtomicUsize,
    limit: usize,
}

static PROCESS: Budget = Budget::new(BUDGET);

impl Budget {
    pub(crate) const fn new(limit: usize) -> Budget {
        Budget {
            held: AtomicUsize::new(0),
            limit,
        }
    }

    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

/// Batch positions are distinct offsets into one file: a multiply and a
/// fold spread them well enough, at a fraction of SipHash's cost.
#[derive(Default)]
struct PositionHasher(u64);

impl Hasher for PositionHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let h = (self.0 ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.0 = h ^ (h >> 29);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Positions = HashSet<u64, BuildHasherDefault<PositionHasher>>;

/// One segment's verified batch positions.
pub(super) struct Verified {
    set: RwLock<Positions>,
    budget: &'static Budget,
}

impl Default for Verified {
    fn default() -> Self {
        Verified::with_budget(&PROCESS)
    }
}

impl Verified {
    pub(crate) fn with_budget(budget: &'static Budget) -> Verified {
        Verified {
            set: RwLock::new(Positions::default()),
            budget,
        }
    }

    fn contains(&self, position: u64) -> bool {
        self.set.read().contains(&position)
    }

    fn insert(&self, position: u64) {
        let mut set = self.set.write();
        let before = table_bytes(&set);
        let others = self
            .budget
            .held
            .load(Ordering::Relaxed)
            .saturating_sub(before);
        set.insert(position);
        if others + table_bytes(&set) > self.budget.limit {
            // Grown past the budget: start this set over (its batches are
            // checked again as they are read), keeping the newest position
            // if even that fits.
            *set = Positions::default();
            set.insert(position);
            if others + table_bytes(&set) > self.budget.limit {
                *set = Positions::default();
            }
        }
        let after = table_bytes(&set);
        self.budget.held.fetch_add(after, Ordering::Relaxed);
        self.budget.held.fetch_sub(before, Ordering::Relaxed);
    }

    /// How many batches are marked verified.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.set.read().len()
    }

    /// Heap bytes this set holds.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        table_bytes(&self.set.read())
    }
}

/// The heap bytes of `set`'s table, as the hash table lays it out: a slot
/// and a control byte per bucket (buckets are 8/7 of the capacity), and a
/// group of control bytes more.
fn table_bytes(set: &Positions) -> usize {
    match set.capacity() {
        0 => 0,
        c => (c * 8 / 7 + 1) * SLOT_BYTES + 16,
    }
}

impl Drop for Verified {
    fn drop(&mut self) {
        let bytes = table_bytes(self.set.get_mut());
        self.budget.held.fetch_sub(bytes, Ordering::Relaxed);
    }
}

/// Decodes the batch in `buf` found at `position` of the segment whose set
/// is `verified`, checking its CRC unless the same position was verified
/// before.
pub(super) fn batch_at(
    verified: &Verified,
    buf: Bytes,
    position: u64,
) -> Result<RecordBatch, DecodeError> {
    if verified.contains(position) {
        return RecordBatch::verified(buf);
    }
    let batch = RecordBatch::decode(&buf)?;
    verified.insert(position);
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verified_position_is_remembered_within_the_budget() {
        static BIG: Budget = Budget::new(1 << 20);
        let v = Verified::with_budget(&BIG);
        // 20,000 batches of ~100 KB: far more than a fixed table held.
        for i in 0..20_000u64 {
            v.insert(i * 100_003);
        }
        assert!((0..20_000u64).all(|i| v.contains(i * 100_003)));
        assert!(!v.contains(7));
        assert_eq!(BIG.held(), v.bytes());
        drop(v);
        assert_eq!(BIG.held(), 0);
    }

    #[test]
    fn sets_hold_no_more_than_their_budget_together() {
        static SMALL: Budget = Budget::new(64 << 10);
        let sets: Vec<Verified> = (0..4).map(|_| Verified::with_budget(&SMALL)).collect();
        for i in 0..50_000u64 {
            let set = &sets[(i % 4) as usize];
            set.insert(i * 997);
            assert!(set.contains(i * 997), "the newest position is kept");
            assert!(SMALL.held() <= 64 << 10, "{} held", SMALL.held());
        }
        let total: usize = sets.iter().map(Verified::bytes).sum();
        assert_eq!(SMALL.held(), total);
        drop(sets);
        assert_eq!(SMALL.held(), 0);
    }
}
