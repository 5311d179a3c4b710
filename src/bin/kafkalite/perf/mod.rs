//! `perf produce`, `perf consume` and `perf append`: kafka-producer-perf-test.sh
//! and kafka-consumer-perf-test.sh over a local store, and the append path
//! against plain `write()`.
//!
//! Files: `produce.rs`, `window.rs` (produce's per-interval reports),
//! `consume.rs`, `baseline.rs` (the `--baseline` runs through `std::fs`),
//! `append.rs`.

pub mod append;
mod baseline;
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
