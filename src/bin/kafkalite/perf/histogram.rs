//! Produce's latencies, counted in buckets by the thread that completes
//! each record: a bounded size whatever the run's length, and no cache line
//! written by two threads.
//!
//! Latencies under [`EXACT_US`] µs have a bucket each; above, each power of
//! two is cut into [`SUB`] buckets, so a percentile there is within 1/64
//! (1.6 %) of the exact value. A percentile is reported as the largest
//! latency its bucket holds (as HdrHistogram's "highest equivalent
//! value"), never more than the largest latency seen; the average and the
//! maximum are exact. Kafka's own tool samples latencies for its
//! percentiles in the same spirit.

use std::sync::atomic::{AtomicU64, Ordering};

/// Latencies below this many µs are counted exactly.
const EXACT_US: u64 = 2048;
/// `log2(EXACT_US)`.
const EXACT_BITS: u32 = 11;
/// Buckets per power of two above [`EXACT_US`].
const SUB: u64 = 64;
/// `log2(SUB)`.
const SUB_BITS: u32 = 6;
/// Every bucket: the exact ones, then [`SUB`] for each power of two from
/// 2^11 to 2^63 µs.
pub(super) const BUCKETS: usize = EXACT_US as usize + (64 - EXACT_BITS as usize) * SUB as usize;

/// The bucket that counts a latency of `us`.
fn bucket(us: u64) -> usize {
    if us < EXACT_US {
        return us as usize;
    }
    let power = 63 - us.leading_zeros();
    let sub = (us >> (power - SUB_BITS)) & (SUB - 1);
    EXACT_US as usize + (power - EXACT_BITS) as usize * SUB as usize + sub as usize
}

/// The largest latency bucket `i` counts.
fn highest_in(i: usize) -> u64 {
    let i = i as u64;
    if i < EXACT_US {
        return i;
    }
    let power = u64::from(EXACT_BITS) + (i - EXACT_US) / SUB;
    let sub = (i - EXACT_US) % SUB;
    let width = 1u64 << (power - u64::from(SUB_BITS));
    // Without overflow: the top bucket ends at u64::MAX.
    ((1u64 << power) - 1) + (sub + 1) * width
}

/// One thread's latency counts. Only that thread writes them (plain loads
/// and stores); others read them once it is done.
pub(super) struct Histogram {
    counts: Box<[AtomicU64]>,
}

impl Histogram {
    pub(super) fn new() -> Histogram {
        Histogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }

    /// Counts one latency. Only the histogram's own thread calls it.
    pub(super) fn record(&self, us: u64) {
        let c = &self.counts[bucket(us)];
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Adds these counts into `into` (of [`BUCKETS`]).
    pub(super) fn add_to(&self, into: &mut [u64]) {
        for (sum, c) in into.iter_mut().zip(self.counts.iter()) {
            *sum += c.load(Ordering::Relaxed);
        }
    }
}

/// The average, 50th, 99th and 99.9th percentiles and the maximum, in ms,
/// of the latencies counted in `counts`, whose exact sum and maximum (µs)
/// are given: as `percentiles` reports samples.
pub(super) fn summary(counts: &[u64], sum_us: u64, max_us: u64) -> [f64; 5] {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return [0.0; 5];
    }
    let at = |q: f64| {
        // The rank of the percentile, 1-based, as `percentiles` takes it.
        let rank = ((n as f64 * q).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        for (i, &c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return highest_in(i).min(max_us) as f64 / 1000.0;
            }
        }
        max_us as f64 / 1000.0
    };
    [
        sum_us as f64 / n as f64 / 1000.0,
        at(0.5),
        at(0.99),
        at(0.999),
        max_us as f64 / 1000.0,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_latency_falls_in_the_bucket_that_ends_at_or_above_it() {
        let mut last = 0;
        for i in 0..BUCKETS {
            let top = highest_in(i);
            assert!(i == 0 || top > last, "bucket {i} ends at {top}");
            assert_eq!(bucket(top), i, "bucket {i} ends at {top}");
            if i > 0 {
                assert_eq!(bucket(last + 1), i, "bucket {i} starts after {last}");
            }
            last = top;
        }
        assert_eq!(last, u64::MAX);
        for us in [
            0,
            1,
            2047,
            2048,
            2049,
            4095,
            4096,
            1_000_000,
            u64::from(u32::MAX),
        ] {
            let top = highest_in(bucket(us));
            assert!(top >= us && top - us <= us / SUB, "{us}: {top}");
        }
    }

    #[test]
    fn percentiles_match_the_sorted_samples_within_a_bucket() {
        // Latencies from 1 µs to 40 ms, in a scrambled order.
        let samples: Vec<u64> = (0..100_000u64)
            .map(|i| 1 + (i * 7919 % 100_000) * (i % 400))
            .collect();
        let h = Histogram::new();
        for &us in &samples {
            h.record(us);
        }
        let mut counts = vec![0; BUCKETS];
        h.add_to(&mut counts);
        let sum: u64 = samples.iter().sum();
        let max = *samples.iter().max().unwrap();
        let got = summary(&counts, sum, max);
        let mut sorted: Vec<u32> = samples.iter().map(|&v| v as u32).collect();
        let exact = super::super::percentiles(&mut sorted);
        assert_eq!(got[0], exact[0]);
        assert_eq!(got[4], exact[4]);
        for k in 1..4 {
            assert!(
                got[k] >= exact[k] && got[k] <= exact[k] * (1.0 + 1.0 / SUB as f64),
                "percentile {k}: {} against {}",
                got[k],
                exact[k]
            );
        }
        // Under 2,048 µs the counts are exact.
        let small = Histogram::new();
        for us in [5, 1, 3, 2000, 7] {
            small.record(us);
        }
        let mut counts = vec![0; BUCKETS];
        small.add_to(&mut counts);
        assert_eq!(
            summary(&counts, 2016, 2000),
            super::super::percentiles(&mut [5, 1, 3, 2000, 7])
        );
        assert_eq!(summary(&vec![0; BUCKETS], 0, 0), [0.0; 5]);
    }
}
