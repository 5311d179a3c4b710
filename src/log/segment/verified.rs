//! The verified-batch cache: positions of the batches of an open segment
//! whose CRC this process checked, so repeated reads (point reads above
//! all) do not re-check a batch. Bytes below a segment's published size
//! never change, so a verified batch stays valid as long as the segment's
//! files are open; the cache lives with them and goes with an eviction.
//!
//! Bounded: [`SETS`] sets of two slots (32 KiB per open segment that served
//! reads), two-way so that a thousand batches (a 64 MiB segment of ~64 KiB
//! batches) rarely evict each other: a direct-mapped cache of 1,024 slots
//! made a point read re-check a batch CRC (a scan of the whole batch) on a
//! good share of reads.

use super::Files;
use crate::record::{DecodeError, RecordBatch};
use bytes::Bytes;
use std::sync::atomic::{AtomicU64, Ordering};

const SETS: usize = 2048;
const SLOTS: usize = 2 * SETS;

/// The set of two slots for `position`, and whether to replace the second
/// when neither holds it.
fn set_for(f: &Files, position: u64) -> Option<(&AtomicU64, &AtomicU64, bool)> {
    let slots = f
        .verified
        .get_or_init(|| (0..SLOTS).map(|_| AtomicU64::new(0)).collect());
    // Fibonacci hashing spreads batch positions over the sets; the next bit
    // of the hash picks the way to replace.
    let h = position.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let bits = SETS.trailing_zeros();
    let set = (h >> (64 - bits)) as usize % SETS;
    Some((
        slots.get(2 * set)?,
        slots.get(2 * set + 1)?,
        (h >> (63 - bits)) & 1 == 1,
    ))
}

/// Decodes the batch in `buf` found at `position`, checking its CRC unless
/// the same position was verified before.
pub(super) fn batch_at(f: &Files, buf: Bytes, position: u64) -> Result<RecordBatch, DecodeError> {
    // 0 marks an empty slot: keys are positions + 1.
    let key = position + 1;
    let set = set_for(f, position);
    if set.is_some_and(|(a, b, _)| {
        a.load(Ordering::Relaxed) == key || b.load(Ordering::Relaxed) == key
    }) {
        return RecordBatch::verified(buf);
    }
    let batch = RecordBatch::decode(&buf)?;
    if let Some((a, b, second)) = set {
        let slot = match (a.load(Ordering::Relaxed), b.load(Ordering::Relaxed)) {
            (0, _) => a,
            (_, 0) => b,
            _ if second => b,
            _ => a,
        };
        slot.store(key, Ordering::Relaxed);
    }
    Ok(batch)
}
