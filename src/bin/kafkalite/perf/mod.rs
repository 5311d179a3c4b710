//! `perf produce`, `perf consume` and `perf append`: kafka-producer-perf-test.sh
//! and kafka-consumer-perf-test.sh over a local store, and the append path
//! against plain `write()`.
//!
//! Files: `produce.rs`, `window.rs` (produce's per-interval reports),
//! `consume.rs`, `baseline.rs` (the `--baseline` runs through `std::fs`),
//! `append.rs`.

pub mod append;
mod baseline;
mod clock;
mod consume;
mod produce;
mod window;

pub use consume::{consume, ConsumeArgs};
pub use produce::{produce, ProduceArgs};

const MB: f64 = 1024.0 * 1024.0;

/// Latency percentiles in ms, from microsecond samples (sorted in place).
fn percentiles(samples: &mut [u32]) -> [f64; 5] {
    if samples.is_empty() {
        return [0.0; 5];
    }
    samples.sort_unstable();
    let at = |q: f64| {
        let i = ((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1;
        f64::from(samples[i]) / 1000.0
    };
    let avg = samples.iter().map(|&v| f64::from(v)).sum::<f64>() / samples.len() as f64 / 1000.0;
    [avg, at(0.5), at(0.99), at(0.999), at(1.0)]
}

/// The JSON report both `perf produce` and `perf consume` print: totals,
/// rates, and the five percentiles of `percentiles` as `<what>_ms_avg`,
/// `_p50`, `_p99`, `_p999`, `_max`.
fn rate_report(
    records: u64,
    bytes: f64,
    seconds: f64,
    what: &str,
    ms: [f64; 5],
) -> serde_json::Value {
    use crate::util::json_f64;
    let mut j = serde_json::json!({
        "records": records,
        "bytes": bytes as u64,
        "seconds": json_f64(seconds),
        "records_per_sec": json_f64(records as f64 / seconds),
        "mb_per_sec": json_f64(bytes / MB / seconds),
    });
    if let Some(map) = j.as_object_mut() {
        for (name, v) in ["avg", "p50", "p99", "p999", "max"].into_iter().zip(ms) {
            map.insert(format!("{what}_ms_{name}"), json_f64(v));
        }
    }
    j
}
