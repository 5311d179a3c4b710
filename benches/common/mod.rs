//! Shared by the log benches: records built from the seed's network-flow
//! log lines (`src/sample.rs`, ~300 bytes each) or cut to a fixed size,
//! and a small deterministic RNG.

#[path = "../../src/sample.rs"]
mod sample;

use kafkalite::Record;

/// A small, fast, deterministic generator (SplitMix64).
#[allow(dead_code, reason = "shared by several benches, each using part of it")]
pub struct Rng(u64);

#[allow(dead_code, reason = "shared by several benches, each using part of it")]
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// `n` records of the seed's network-flow lines (`src/sample.rs`, about
/// 300 bytes each), timestamps increasing.
pub fn flow_records(n: usize) -> Vec<Record> {
    let mut flows = sample::FlowRecords::new(42);
    (0..n as u64)
        .map(|i| Record::new(flows.next_line()).timestamp(1_700_000_000_000 + i as i64))
        .collect()
}

/// `n` records of exactly `size` bytes (flow lines cut or padded to size),
/// timestamps increasing.
#[allow(dead_code, reason = "shared by several benches, each using part of it")]
pub fn sized_records(n: usize, size: usize) -> Vec<Record> {
    let mut flows = sample::FlowRecords::new(42);
    (0..n as u64)
        .map(|i| {
            Record::new(sample::flow_payload(&mut flows, size))
                .timestamp(1_700_000_000_000 + i as i64)
        })
        .collect()
}

/// Total value bytes of `records`.
pub fn value_bytes(records: &[Record]) -> u64 {
    records
        .iter()
        .map(|r| r.value.as_ref().map_or(0, |v| v.len() as u64))
        .sum()
}
