//! The process-wide cache of [`RecordPositions`]: where every few records
//! of an uncompressed batch start (about 2 KiB of records apart, at most 16
//! records), or where each block of an lz4 batch's frame starts, kept for
//! batches that point reads landed inside, so the next point read into the
//! same batch walks at most that far, or decompresses from the block
//! holding its record.
//!
//! Bounded: at most [`BUDGET`] bytes of positions in all (about 900 bytes
//! for a batch of a thousand 376-byte records, about 2 KiB for one of a
//! thousand 1 KiB records, about 200 for an lz4 batch of six blocks, so
//! some 4,000 of the first), over
//! [`SHARDS`] independently locked shards; a full shard drops arbitrary
//! entries to make room. Keyed by a segment's process-unique id and the
//! batch's base offset: a segment rewritten by compaction gets a new id, so
//! its old entries are never used again and age out.

use crate::record::{Compression, RecordBatch, RecordPositions};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};

/// Bytes of positions the cache holds at most, over all shards.
pub(crate) const BUDGET: usize = 4 << 20;
const SHARDS: usize = 16;

type Key = (u64, i64);

#[derive(Default)]
struct Shard {
    map: HashMap<Key, Arc<RecordPositions>>,
    bytes: usize,
}

/// A cache of record positions holding at most `budget` bytes.
struct PositionsCache {
    shards: Vec<Mutex<Shard>>,
    budget: usize,
}

static CACHE: LazyLock<PositionsCache> = LazyLock::new(|| PositionsCache::new(BUDGET));

static NEXT_SEGMENT_ID: AtomicU64 = AtomicU64::new(1);

/// A process-unique id for a new segment object.
pub(crate) fn new_segment_id() -> u64 {
    NEXT_SEGMENT_ID.fetch_add(1, Ordering::Relaxed)
}

/// `batch` (of segment `segment`) with its record positions attached, from
/// the cache or built now; `batch` unchanged when positions do not apply.
/// An lz4 batch's block map is only looked up: the point read that finds
/// none builds it from its own decode and [`insert`]s it.
pub(crate) fn attach(segment: u64, batch: RecordBatch) -> RecordBatch {
    CACHE.attach(segment, batch)
}

/// Keeps `positions`, built for the batch based at `base_offset` of segment
/// `segment`, for later point reads.
pub(crate) fn insert(segment: u64, base_offset: i64, positions: RecordPositions) {
    CACHE.insert((segment, base_offset), Arc::new(positions));
}

impl PositionsCache {
    fn new(budget: usize) -> Self {
        PositionsCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            budget,
        }
    }

    fn shard(&self, key: Key) -> Option<&Mutex<Shard>> {
        let h = (key.0 ^ (key.1 as u64).rotate_left(17)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        self.shards.get((h >> 60) as usize % SHARDS)
    }

    fn attach(&self, segment: u64, batch: RecordBatch) -> RecordBatch {
        if !batch.wants_positions() {
            return batch;
        }
        let key = (segment, batch.base_offset());
        let Some(shard) = self.shard(key) else {
            return batch;
        };
        if let Some(p) = shard.lock().map.get(&key) {
            let p = Arc::clone(p);
            return batch.with_positions(p);
        }
        if matches!(batch.header().compression(), Ok(Compression::Lz4)) {
            return batch;
        }
        // Built outside the lock: a walk over the whole batch.
        let Some(p) = batch.build_positions().map(Arc::new) else {
            return batch;
        };
        self.insert(key, Arc::clone(&p));
        batch.with_positions(p)
    }

    /// Holds `p` for the batch `key`, making room; not when it alone is over
    /// a shard's share (then it is used for one read only, evicting
    /// nothing).
    fn insert(&self, key: Key, p: Arc<RecordPositions>) {
        let cost = p.heap_bytes();
        let limit = self.budget / SHARDS;
        let Some(shard) = self.shard(key).filter(|_| cost <= limit) else {
            return;
        };
        let mut s = shard.lock();
        while s.bytes + cost > limit {
            let Some(victim) = s.map.keys().next().copied() else {
                break;
            };
            if let Some(old) = s.map.remove(&victim) {
                s.bytes -= old.heap_bytes();
            }
        }
        if let Some(old) = s.map.insert(key, p) {
            s.bytes -= old.heap_bytes();
        }
        s.bytes += cost;
    }

    /// Bytes held now, over all shards.
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{BatchBuilder, Compression};

    fn batch(base: i64, n: usize) -> RecordBatch {
        let mut b = BatchBuilder::new(Compression::None).base_offset(base);
        for i in 0..n {
            b.push_parts(0, None, Some(format!("{base}:{i}").as_bytes()), &[]);
        }
        RecordBatch::decode(&b.build()).unwrap()
    }

    #[test]
    fn the_cache_stays_within_its_budget_and_point_reads_stay_exact() {
        // Over 3x the budget's worth of batches, from many segments.
        let template = batch(0, 1000);
        let one = template.build_positions().unwrap().heap_bytes();
        // A cache of 64 KiB behaves as the process-wide one of 4 MiB does.
        let cache = PositionsCache::new(64 << 10);
        let batches = 3 * cache.budget / one;
        let segment = new_segment_id();
        let at = |base: i64| {
            let mut bytes = template.as_bytes().to_vec();
            crate::record::set_base_offset(&mut bytes, base);
            RecordBatch::decode(&bytes::Bytes::from(bytes)).unwrap()
        };
        for i in 0..batches as i64 {
            let b = cache.attach(segment + (i as u64 % 7), at(i * 1000));
            assert!(b.positions.is_some());
            assert!(
                cache.held_bytes() <= cache.budget,
                "{} held",
                cache.held_bytes()
            );
        }
        // Cached or rebuilt, positions always lead to the right record.
        for i in [0i64, 1, batches as i64 / 2, batches as i64 - 1] {
            let b = cache.attach(segment + (i as u64 % 7), at(i * 1000));
            for target in [1, 15, 16, 17, 500, 998, 999] {
                let mut rs = b.records().unwrap();
                rs.skip_to(i * 1000 + target);
                let r = rs.next().unwrap().unwrap();
                assert_eq!(r.offset, i * 1000 + target);
                assert_eq!(r.value.unwrap(), format!("0:{target}"));
            }
        }
        // Small batches, and lz4 batches of one block, get none; an lz4
        // batch of several blocks gets its block map.
        assert!(cache.held_bytes() > cache.budget / 2, "the cache was used");
        assert!(cache.attach(segment, batch(0, 16)).positions.is_none());
        let lz4 = |n: usize, size: usize| {
            let mut b = BatchBuilder::new(Compression::Lz4);
            for i in 0..n {
                let value: Vec<u8> = (0..size)
                    .map(|j| (i * 13 + j * 7) as u8 ^ (j / 3) as u8)
                    .collect();
                b.push_parts(0, None, Some(&value), &[]);
            }
            RecordBatch::decode(&b.build()).unwrap()
        };
        let other = new_segment_id();
        assert!(cache.attach(other, lz4(100, 8)).positions.is_none());
        // An lz4 block map is built by the point read that misses it, and
        // found by the next.
        let (segment, batch) = (new_segment_id(), lz4(100, 2_000));
        assert!(cache.attach(segment, batch.clone()).positions.is_none());
        let (record, map) = batch.record_at_building(57).unwrap();
        assert_eq!(record.unwrap().offset, 57);
        assert!(matches!(map, Some(RecordPositions::Lz4(_))));
        cache.insert((segment, 0), Arc::new(map.unwrap()));
        let mapped = cache.attach(segment, batch.clone());
        assert!(matches!(
            mapped.positions.as_deref(),
            Some(RecordPositions::Lz4(_))
        ));
        let (record, map) = mapped.record_at_building(58).unwrap();
        assert_eq!(record, batch.record_at(58).unwrap());
        assert!(map.is_none(), "built once");
    }
}
