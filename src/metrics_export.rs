//! The metrics snapshot through the `metrics` crate facade (feature
//! `metrics`), so any recorder of that ecosystem (Prometheus, StatsD,
//! OpenTelemetry exporters) picks it up.
//!
//! [`StoreMetrics::publish`] sets every value once, into the recorder
//! installed at that moment; [`MetricsPublisher`] does it from a background
//! thread every interval. Names follow Prometheus conventions (the unit in
//! the name, `_total` for counters):
//!
//! | metric | kind | labels |
//! |---|---|---|
//! | `kafkalite_partition_log_start_offset`, `_log_end_offset`, `_high_watermark` | gauge | `topic`, `partition` |
//! | `kafkalite_partition_size_bytes`, `kafkalite_partition_segments` | gauge | `topic`, `partition` |
//! | `kafkalite_partition_appends_total`, `kafkalite_partition_fsyncs_total` | counter | `topic`, `partition` |
//! | `kafkalite_partition_append_latency_seconds`, `kafkalite_partition_fsync_latency_seconds` | gauge | `topic`, `partition`, `quantile` (`0.5`, `0.99`, `0.999`, `1`) |
//! | `kafkalite_partition_append_latency_mean_seconds`, `kafkalite_partition_fsync_latency_mean_seconds` | gauge | `topic`, `partition` |
//! | `kafkalite_group_committed_offset`, `kafkalite_group_lag` | gauge | `group`, `topic`, `partition` |
//!
//! Latencies are published as quantile gauges (a Prometheus summary), not
//! as `metrics` histograms: the store keeps power-of-two bucket counts and
//! no samples, and replaying every sample into a histogram at each publish
//! would cost as much as the operations did. The counters are absolute
//! (`Counter::absolute`): the store's own counts since it was opened.

use crate::error::{Error, Result};
use crate::metrics::{LatencySnapshot, StoreMetrics};
use crate::store::Store;
use metrics::{counter, describe_counter, describe_gauge, gauge, Unit};
use parking_lot::{Condvar, Mutex};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Describes every metric (units and help) to the installed recorder.
/// [`MetricsPublisher::start`] calls it; call it yourself once when you
/// publish by hand and the exporter shows descriptions.
pub fn describe_metrics() {
    for (name, help) in [
        (
            "kafkalite_partition_log_start_offset",
            "first readable offset",
        ),
        (
            "kafkalite_partition_log_end_offset",
            "next offset to be written",
        ),
        (
            "kafkalite_partition_high_watermark",
            "readers see offsets below this",
        ),
        ("kafkalite_partition_segments", "number of segments"),
        (
            "kafkalite_group_committed_offset",
            "the group's committed offset",
        ),
        (
            "kafkalite_group_lag",
            "high watermark minus the committed offset",
        ),
    ] {
        describe_gauge!(name, Unit::Count, help);
    }
    describe_gauge!(
        "kafkalite_partition_size_bytes",
        Unit::Bytes,
        "bytes of all segments"
    );
    describe_counter!(
        "kafkalite_partition_appends_total",
        Unit::Count,
        "appends to the partition log since the store opened"
    );
    describe_counter!(
        "kafkalite_partition_fsyncs_total",
        Unit::Count,
        "fsyncs of the partition log (a group commit counts once)"
    );
    for (name, help) in [
        (
            "kafkalite_partition_append_latency_seconds",
            "append latency quantiles (bucket upper bounds)",
        ),
        (
            "kafkalite_partition_fsync_latency_seconds",
            "fsync latency quantiles (bucket upper bounds)",
        ),
        (
            "kafkalite_partition_append_latency_mean_seconds",
            "mean append latency",
        ),
        (
            "kafkalite_partition_fsync_latency_mean_seconds",
            "mean fsync latency",
        ),
    ] {
        describe_gauge!(name, Unit::Seconds, help);
    }
}

fn latency(quantiles: &'static str, mean: &'static str, l: &LatencySnapshot, topic: &str, p: &str) {
    for (q, v) in [
        ("0.5", l.p50),
        ("0.99", l.p99),
        ("0.999", l.p999),
        ("1", l.max),
    ] {
        gauge!(quantiles, "topic" => topic.to_owned(), "partition" => p.to_owned(), "quantile" => q)
            .set(v.as_secs_f64());
    }
    gauge!(mean, "topic" => topic.to_owned(), "partition" => p.to_owned())
        .set(l.mean.as_secs_f64());
}

impl StoreMetrics {
    /// Publishes this snapshot through the `metrics` facade (feature
    /// `metrics`), into the recorder installed now; the names are in the
    /// table of the `metrics` feature's docs (README, "Observability").
    /// With no recorder installed it does nothing.
    ///
    /// ```
    /// # use kafkalite::*;
    /// let dir = tempfile::tempdir()?;
    /// let store = Store::open(dir.path(), StoreOptions::default())?;
    /// store.create_topic("events", 2, TopicConfig::default())?;
    /// // e.g. after installing metrics-exporter-prometheus's recorder:
    /// store.metrics().publish();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn publish(&self) {
        for m in &self.partitions {
            let topic = m.partition.topic.to_string();
            let p = m.partition.partition.to_string();
            let labels = [("topic", topic.clone()), ("partition", p.clone())];
            gauge!("kafkalite_partition_log_start_offset", &labels).set(m.log_start_offset as f64);
            gauge!("kafkalite_partition_log_end_offset", &labels).set(m.log_end_offset as f64);
            gauge!("kafkalite_partition_high_watermark", &labels).set(m.high_watermark as f64);
            gauge!("kafkalite_partition_size_bytes", &labels).set(m.size as f64);
            gauge!("kafkalite_partition_segments", &labels).set(m.segments as f64);
            counter!("kafkalite_partition_appends_total", &labels).absolute(m.append_latency.count);
            counter!("kafkalite_partition_fsyncs_total", &labels).absolute(m.fsync_latency.count);
            latency(
                "kafkalite_partition_append_latency_seconds",
                "kafkalite_partition_append_latency_mean_seconds",
                &m.append_latency,
                &topic,
                &p,
            );
            latency(
                "kafkalite_partition_fsync_latency_seconds",
                "kafkalite_partition_fsync_latency_mean_seconds",
                &m.fsync_latency,
                &topic,
                &p,
            );
        }
        for g in &self.groups {
            let labels = [
                ("group", g.group.clone()),
                ("topic", g.partition.topic.to_string()),
                ("partition", g.partition.partition.to_string()),
            ];
            gauge!("kafkalite_group_committed_offset", &labels).set(g.committed as f64);
            gauge!("kafkalite_group_lag", &labels).set(g.lag as f64);
        }
    }
}

#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

/// Publishes [`Store::metrics`] through the `metrics` facade every
/// interval, from a thread of its own (`kafkalite-metrics`), into the
/// global recorder (`metrics::set_global_recorder`). Stops on
/// [`stop`](Self::stop) or drop, after which nothing more is published.
///
/// It holds a handle of the store, as a producer does: the store shuts
/// down on its last handle's drop only once the publisher is gone too
/// (`Store::close` works regardless).
#[derive(Debug)]
pub struct MetricsPublisher {
    stop: Arc<Stop>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stop")
            .field("stopped", &*self.stopped.lock())
            .finish()
    }
}

impl MetricsPublisher {
    /// Describes the metrics, publishes once now, then every `interval`.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] for a zero interval; I/O when the thread
    /// cannot be spawned.
    pub fn start(store: &Store, interval: Duration) -> Result<MetricsPublisher> {
        if interval.is_zero() {
            return Err(Error::InvalidConfig {
                key: "metrics publish interval",
                reason: "must be positive",
            });
        }
        let stop = Arc::new(Stop::default());
        let theirs = Arc::clone(&stop);
        let store = store.clone();
        let path = store.path().to_owned();
        let thread = std::thread::Builder::new()
            .name("kafkalite-metrics".into())
            .spawn(move || {
                describe_metrics();
                let mut stopped = theirs.stopped.lock();
                while !*stopped {
                    store.metrics().publish();
                    theirs.wake.wait_for(&mut stopped, interval);
                }
            })
            .map_err(|e| Error::io("spawn metrics thread", &path, e))?;
        Ok(MetricsPublisher {
            stop,
            thread: Some(thread),
        })
    }

    /// Stops publishing and waits for the thread to finish.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        *self.stop.stopped.lock() = true;
        self.stop.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MetricsPublisher {
    fn drop(&mut self) {
        self.shutdown();
    }
}
