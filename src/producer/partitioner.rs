//! Choosing a partition, as Kafka's `BuiltInPartitioner` does.
//!
//! An explicit partition wins; a keyed record goes to
//! `(murmur2(key) & 0x7fffffff) % partitions`, so a key lands where Kafka
//! would put it; a keyless record goes to the topic's sticky partition
//! (KIP-794). With the producer's built-in partitioner, that choice moves
//! on where the partition's batch ends, as Kafka's does when a new batch
//! would be made (the record that does not fit goes to the next
//! partition), or after twice `batch.size` bytes if batches are not
//! filling; a `DefaultPartitioner` called directly moves after
//! `batch.size` bytes.

use parking_lot::Mutex;
use std::collections::HashMap;

/// Kafka's murmur2 (`Utils.murmur2`): seed `0x9747b28c`, 4-byte
/// little-endian blocks.
pub fn murmur2(data: &[u8]) -> i32 {
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let mut h: u32 = 0x9747_b28c ^ data.len() as u32;
    let (blocks, tail) = data.as_chunks::<4>();
    for b in blocks {
        let mut k = u32::from(b[0])
            | (u32::from(b[1]) << 8)
            | (u32::from(b[2]) << 16)
            | (u32::from(b[3]) << 24);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    if let Some(&b) = tail.get(2) {
        h ^= u32::from(b) << 16;
    }
    if let Some(&b) = tail.get(1) {
        h ^= u32::from(b) << 8;
    }
    if let Some(&b) = tail.first() {
        h ^= u32::from(b);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition Kafka's default partitioner gives `key`.
pub fn partition_for_key(key: &[u8], partitions: u32) -> u32 {
    ((murmur2(key) as u32) & 0x7fff_ffff) % partitions.max(1)
}

/// Chooses the partition of records sent without an explicit one.
pub trait Partitioner: Send + Sync {
    /// The partition (below `partitions`) for a record with this key and
    /// value on `topic`. `record_size` is the record's encoded size, for
    /// partitioners that balance by bytes.
    fn partition(
        &self,
        topic: &str,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        record_size: usize,
        partitions: u32,
    ) -> u32;
}

/// Kafka's default: murmur2 for keyed records, uniform sticky for keyless.
///
/// Keyless records stick to a partition until a batch's worth of bytes went
/// to it (KIP-794), per sending thread: threads are spread over 16
/// independently locked sticky states (the 1st and 17th thread to send
/// share one), so threads sending at once fill different partitions'
/// batches instead of contending for one partition's lock, as they would
/// behind a single shared choice.
#[derive(Debug)]
pub struct DefaultPartitioner {
    batch_size: usize,
    ignore_keys: bool,
    sticky: Box<[Mutex<HashMap<String, Sticky>>]>,
}

/// How many partitions, from the one drawn on, a sticky switch looks at
/// for one to prefer (`Sticky::switch_choosing`).
pub(crate) const PREFER_TRIES: u64 = 16;

/// How many independent sticky states a [`DefaultPartitioner`] keeps.
const STICKY_SHARDS: usize = 16;

/// This thread's sticky state, among a partitioner's shards.
pub(crate) fn thread_shard() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % STICKY_SHARDS;
    }
    SHARD.with(|s| *s)
}

/// One sticky choice (KIP-794): the partition keyless records go to, the
/// bytes sent to it so far, and the generator that picks the next one.
#[derive(Debug, Clone)]
pub(crate) struct Sticky {
    partition: u32,
    bytes: usize,
    rng: u64,
}

impl Sticky {
    /// A new choice for `topic`, seeded from the clock and `salt` (so
    /// threads starting together pick different partitions).
    pub(crate) fn new(topic: &str, salt: u64, partitions: u32) -> Sticky {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9e37_79b9, |d| d.as_nanos() as u64)
            | 1;
        let mut rng =
            seed ^ (topic.len() as u64).rotate_left(32) ^ salt.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let partition = (next_random(&mut rng) % u64::from(partitions.max(1))) as u32;
        Sticky {
            partition,
            bytes: 0,
            rng: rng | 1,
        }
    }

    /// The partition of a keyless record of `record_size` bytes: the
    /// current one, or a new random one (never the same, given a choice)
    /// once `batch_size` bytes went to it or it is no longer below
    /// `partitions`.
    pub(crate) fn next(&mut self, batch_size: usize, record_size: usize, partitions: u32) -> u32 {
        if self.bytes >= batch_size || self.partition >= partitions {
            self.switch(partitions);
        }
        self.bytes += record_size;
        self.partition
    }

    /// The same generator, at `partition` with `bytes` sent to it.
    pub(crate) fn starting_at(mut self, partition: u32, bytes: usize) -> Sticky {
        self.partition = partition;
        self.bytes = bytes;
        self
    }

    /// As [`switch`](Self::switch), then on to the partition `choose`
    /// picks among the candidates: the next [`PREFER_TRIES`] partitions
    /// from the one drawn, in that order, other than the one left (given a
    /// choice). `choose` returns the chosen one's place among them, or
    /// `None` to keep the one drawn.
    pub(crate) fn switch_choosing(
        &mut self,
        partitions: u32,
        choose: impl FnOnce(&[u32]) -> Option<usize>,
    ) {
        let left = self.partition;
        self.switch(partitions);
        let drawn = u64::from(self.partition);
        let n = u64::from(partitions.max(1));
        let mut candidates = [0u32; PREFER_TRIES as usize];
        let mut len = 0;
        let window = (0..n.min(PREFER_TRIES))
            .map(|k| ((drawn + k) % n) as u32)
            .filter(|&p| p != left || n == 1);
        for (slot, p) in candidates.iter_mut().zip(window) {
            *slot = p;
            len += 1;
        }
        let candidates = candidates.get(..len).unwrap_or_default();
        if let Some(&p) = choose(candidates).and_then(|i| candidates.get(i)) {
            self.partition = p;
        }
    }

    /// Moves on to a new random partition (never the same, given a
    /// choice), with no bytes sent to it yet.
    pub(crate) fn switch(&mut self, partitions: u32) {
        let n = u64::from(partitions.max(1));
        let mut p = (next_random(&mut self.rng) % n) as u32;
        if p == self.partition && n > 1 {
            p = (p + 1) % partitions;
        }
        self.partition = p;
        self.bytes = 0;
    }
}

impl DefaultPartitioner {
    /// A partitioner that moves keyless records on after `batch_size` bytes;
    /// with `ignore_keys` (`partitioner.ignore.keys`) keys are not hashed.
    pub fn new(batch_size: usize, ignore_keys: bool) -> Self {
        DefaultPartitioner {
            batch_size: batch_size.max(1),
            ignore_keys,
            sticky: (0..STICKY_SHARDS)
                .map(|_| Mutex::new(HashMap::new()))
                .collect(),
        }
    }
}

fn next_random(state: &mut u64) -> u64 {
    // xorshift64*: a fast, well-spread generator; no cryptographic need here.
    let mut x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    x.wrapping_mul(0x2545_f491_4f6c_dd1d)
}

impl Partitioner for DefaultPartitioner {
    fn partition(
        &self,
        topic: &str,
        key: Option<&[u8]>,
        _value: Option<&[u8]>,
        record_size: usize,
        partitions: u32,
    ) -> u32 {
        if let (Some(key), false) = (key, self.ignore_keys) {
            return partition_for_key(key, partitions);
        }
        let shard = thread_shard();
        let Some(mut map) = self.sticky.get(shard).map(|m| m.lock()) else {
            return 0;
        };
        let s = match map.get_mut(topic) {
            Some(s) => s,
            None => map
                .entry(topic.to_owned())
                .or_insert_with(|| Sticky::new(topic, shard as u64, partitions)),
        };
        s.next(self.batch_size, record_size, partitions)
    }
}

impl DefaultPartitioner {
    /// `batch.size`: the bytes keyless records send to one partition before
    /// moving on.
    pub(crate) fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Whether keys are ignored (`partitioner.ignore.keys`).
    pub(crate) fn ignores_keys(&self) -> bool {
        self.ignore_keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn murmur2_matches_kafkas_utils_test_vectors() {
        let cases: [(&[u8], i32); 7] = [
            (b"21", -973_932_308),
            (b"foobar", -790_332_482),
            (b"a-little-bit-long-string", -985_981_536),
            (b"a-little-bit-longer-string", -1_486_304_829),
            (
                b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8",
                -58_897_971,
            ),
            (b"abc", 479_470_107),
            (b"", 275_646_681),
        ];
        for (key, want) in cases {
            assert_eq!(murmur2(key), want, "{}", String::from_utf8_lossy(key));
        }
    }

    #[test]
    fn keyed_records_use_the_positive_hash_modulo_partitions() {
        // -790332482 & 0x7fffffff = 1357151166; 1357151166 % 50 = 16.
        assert_eq!(partition_for_key(b"foobar", 50), 16);
        let p = DefaultPartitioner::new(16384, false);
        for _ in 0..10 {
            assert_eq!(p.partition("t", Some(b"foobar"), None, 10, 50), 16);
        }
    }

    #[test]
    fn ignore_keys_makes_keyed_records_sticky() {
        let p = DefaultPartitioner::new(1 << 30, true);
        let first = p.partition("t", Some(b"a"), None, 10, 50);
        for k in [&b"b"[..], b"c", b"foobar"] {
            assert_eq!(p.partition("t", Some(k), None, 10, 50), first);
        }
    }

    #[test]
    fn keyless_records_stick_for_a_batch_then_spread_over_all_partitions() {
        let p = DefaultPartitioner::new(1000, false);
        let mut counts = [0u32; 8];
        let mut runs = Vec::new();
        let mut last = None;
        for _ in 0..80_000 {
            let part = p.partition("t", None, None, 100, 8);
            counts[part as usize] += 1;
            if last != Some(part) {
                runs.push(0);
                last = Some(part);
            }
            *runs.last_mut().unwrap() += 1;
        }
        // Each switch happens after exactly batch_size bytes = 10 records.
        assert!(runs.iter().all(|&r| r % 10 == 0), "{runs:?}");
        // Roughly uniform: every partition within ±30% of the mean.
        for c in counts {
            assert!((7_000..=13_000).contains(&c), "{counts:?}");
        }
    }

    /// A switch takes the first partition the caller prefers from the one
    /// drawn on (never the one left, given a choice), looks no further
    /// than `PREFER_TRIES` partitions, and keeps the one drawn when none
    /// is preferred; over many switches that prefer all partitions but one
    /// at a time, every partition keeps its share.
    /// The first candidate `prefer` takes.
    fn switch_preferring(s: &mut Sticky, partitions: u32, prefer: impl Fn(u32) -> bool) {
        s.switch_choosing(partitions, |c| c.iter().position(|&p| prefer(p)));
    }

    #[test]
    fn a_switch_moves_to_a_preferred_partition_near_the_one_drawn() {
        let mut s = Sticky::new("t", 1, 8);
        for _ in 0..200 {
            let left = s.partition;
            switch_preferring(&mut s, 8, |p| p == 5 || p == left);
            let want = if left == 5 { s.partition } else { 5 };
            assert_eq!(s.partition, want);
            assert_ne!(s.partition, left);
        }
        // None preferred: a random partition other than the one left.
        let mut seen = [0u32; 8];
        for _ in 0..800 {
            let left = s.partition;
            switch_preferring(&mut s, 8, |_| false);
            assert_ne!(s.partition, left);
            seen[s.partition as usize] += 1;
        }
        assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
        // One partition: it stays.
        let mut one = Sticky::new("t", 1, 1);
        switch_preferring(&mut one, 1, |_| true);
        assert_eq!(one.partition, 0);
        // Only a partition far from every draw is preferred: looked for in
        // at most PREFER_TRIES partitions, so mostly not found.
        let mut wide = Sticky::new("t", 1, 1000);
        let mut found = 0;
        for _ in 0..1000 {
            switch_preferring(&mut wide, 1000, |p| p == 999);
            found += u32::from(wide.partition == 999);
        }
        assert!(found < 100, "found {found} times in 1000");
        // Spread: each partition shunned in turn still gets its share.
        let mut counts = [0u32; 8];
        for i in 0..8000u32 {
            let shunned = i % 8;
            switch_preferring(&mut s, 8, |p| p != shunned);
            counts[s.partition as usize] += 1;
        }
        assert!(
            counts.iter().all(|&c| (700..=1300).contains(&c)),
            "{counts:?}"
        );
    }
}

#[cfg(test)]
mod thread_tests {
    use super::*;

    #[test]
    fn each_thread_keeps_its_own_sticky_partition_and_moves_on_after_a_batch() {
        let p = std::sync::Arc::new(DefaultPartitioner::new(1000, false));
        let per_thread: Vec<(usize, Vec<u32>)> = (0..4)
            .map(|_| {
                let p = std::sync::Arc::clone(&p);
                std::thread::spawn(move || {
                    let picks = (0..300)
                        .map(|_| p.partition("t", None, None, 10, 64))
                        .collect();
                    (thread_shard(), picks)
                })
            })
            .map(|h| h.join().unwrap())
            .collect();
        let shards: std::collections::HashSet<usize> = per_thread.iter().map(|(s, _)| *s).collect();
        // Threads take consecutive states from a process-wide counter; other
        // tests' threads may take some in between, so only most are distinct.
        assert!(
            shards.len() >= 2,
            "threads share one sticky state: {shards:?}"
        );
        for (_, picks) in &per_thread {
            // 1000 bytes a batch at 10 bytes a record: 100 records a partition,
            // and each move goes to another partition.
            for chunk in picks.chunks(100) {
                assert!(chunk.iter().all(|&x| x == chunk[0]), "{chunk:?}");
            }
            assert_ne!(picks[99], picks[100]);
            assert_ne!(picks[199], picks[200]);
        }
    }
}
