//! Metrics: lock-free latency histograms and the snapshot types
//! [`Store::metrics`](crate::Store::metrics) returns.

use crate::group::TopicPartition;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const BUCKETS: usize = 48;

/// A latency histogram with power-of-two nanosecond buckets: recording is
/// one atomic add, so it sits on hot paths.
#[derive(Debug)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; BUCKETS],
    sum_ns: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub(crate) fn record(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let i = (64 - ns.leading_zeros() as usize).min(BUCKETS - 1);
        if let Some(b) = self.buckets.get(i) {
            b.fetch_add(1, Ordering::Relaxed);
        }
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> LatencySnapshot {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let count: u64 = counts.iter().sum();
        // The upper bound of the bucket holding the q-quantile.
        let quantile = |q: f64| -> Duration {
            if count == 0 {
                return Duration::ZERO;
            }
            let rank = ((count as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    return Duration::from_nanos(if i >= 64 { u64::MAX } else { 1u64 << i });
                }
            }
            Duration::from_nanos(u64::MAX)
        };
        LatencySnapshot {
            count,
            mean: Duration::from_nanos(
                self.sum_ns
                    .load(Ordering::Relaxed)
                    .checked_div(count)
                    .unwrap_or(0),
            ),
            p50: quantile(0.5),
            p99: quantile(0.99),
            p999: quantile(0.999),
            max: quantile(1.0),
        }
    }
}

/// Latency percentiles. Values are upper bounds of power-of-two buckets
/// (at most 2× the true value).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct LatencySnapshot {
    /// Number of operations recorded.
    pub count: u64,
    /// Mean latency (exact).
    #[cfg_attr(
        feature = "serde",
        serde(rename = "mean_ns", with = "crate::serde_impls::duration_ns")
    )]
    pub mean: Duration,
    /// Median.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "p50_ns", with = "crate::serde_impls::duration_ns")
    )]
    pub p50: Duration,
    /// 99th percentile.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "p99_ns", with = "crate::serde_impls::duration_ns")
    )]
    pub p99: Duration,
    /// 99.9th percentile.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "p999_ns", with = "crate::serde_impls::duration_ns")
    )]
    pub p999: Duration,
    /// Largest.
    #[cfg_attr(
        feature = "serde",
        serde(rename = "max_ns", with = "crate::serde_impls::duration_ns")
    )]
    pub max: Duration,
}

/// One partition's state and counters.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PartitionMetrics {
    /// The partition.
    pub partition: TopicPartition,
    /// First readable offset.
    pub log_start_offset: i64,
    /// Next offset to be written.
    pub log_end_offset: i64,
    /// Readers see offsets below this.
    pub high_watermark: i64,
    /// Bytes of all segments.
    pub size: u64,
    /// Number of segments.
    pub segments: usize,
    /// Append latency (write and indexing; not the fsync wait).
    pub append_latency: LatencySnapshot,
    /// fsync latency (each group commit counts once).
    pub fsync_latency: LatencySnapshot,
}

/// One partition of a group's lag.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct GroupLag {
    /// The group.
    pub group: String,
    /// The partition.
    pub partition: TopicPartition,
    /// The committed offset.
    pub committed: i64,
    /// High watermark − committed.
    pub lag: i64,
}

/// A snapshot of a store's metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct StoreMetrics {
    /// Every partition of every topic.
    pub partitions: Vec<PartitionMetrics>,
    /// Every committed partition of every group.
    pub groups: Vec<GroupLag>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_bound_the_recorded_latencies() {
        let h = Histogram::default();
        for us in 1..=1000u64 {
            h.record(Duration::from_micros(us));
        }
        let s = h.snapshot();
        assert_eq!(s.count, 1000);
        // True p50 is 500 µs; the bucket bound is within 2× above it.
        assert!(s.p50 >= Duration::from_micros(500) && s.p50 <= Duration::from_micros(1000));
        assert!(s.p99 >= Duration::from_micros(990));
        assert!(s.max >= Duration::from_micros(1000) && s.max <= Duration::from_micros(2000));
        assert_eq!(s.mean, Duration::from_nanos(500_500));
        assert_eq!(Histogram::default().snapshot().count, 0);
    }
}
