//! Shared by the log benches: a deterministic generator of ~300-byte records
//! shaped like the seed's network-flow log lines (tab-separated timestamps,
//! IPs, ports, protocol, counters, hostname, URL).

use kafkalite::Record;

/// A small, fast, deterministic generator (SplitMix64).
pub struct Rng(u64);

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

const HOSTS: [&str; 6] = [
    "edge-gw-01.dc1.example.net",
    "core-sw-17.dc1.example.net",
    "fw-cluster-a.dc2.example.net",
    "lb-frontend-03.dc2.example.net",
    "nat-egress-09.dc3.example.net",
    "vpn-concentrator-2.dc3.example.net",
];
const PATHS: [&str; 5] = [
    "/api/v2/orders/search?status=open&limit=50",
    "/static/js/vendor.bundle.min.js",
    "/login?redirect=%2Fdashboard%2Foverview",
    "/metrics/ingest/batch?tenant=acme-corp",
    "/images/catalog/thumbnails/sku-000000000.webp",
];

/// One flow line of roughly 300 bytes.
pub fn flow_line(rng: &mut Rng, i: u64) -> String {
    let ts = 1_700_000_000_000u64 + i * 3;
    let ip = |r: &mut Rng| {
        format!(
            "{}.{}.{}.{}",
            10 + r.below(200),
            r.below(256),
            r.below(256),
            1 + r.below(254)
        )
    };
    let (src, dst) = (ip(rng), ip(rng));
    let host = HOSTS[rng.below(HOSTS.len() as u64) as usize];
    let path = PATHS[rng.below(PATHS.len() as u64) as usize];
    format!(
        "{ts}\t{}\t{src}\t{}\t{dst}\t{}\t{}\t{}\t{}\t{}\t{host}\t{path}\tMozilla/5.0 (X11; Linux x86_64) flow-agent/{}.{}\tsession={:016x}",
        ts + rng.below(5000),
        1024 + rng.below(64_000),
        [22, 53, 80, 443, 8080, 9092][rng.below(6) as usize],
        ["TCP", "UDP", "ICMP"][rng.below(3) as usize],
        rng.below(1_500_000),
        1 + rng.below(2000),
        ["ACCEPT", "REJECT", "DROP"][rng.below(3) as usize],
        rng.below(10),
        rng.below(100),
        rng.next_u64(),
    )
}

/// `n` flow records, timestamps increasing.
pub fn flow_records(n: usize) -> Vec<Record> {
    let mut rng = Rng::new(42);
    (0..n as u64)
        .map(|i| Record::new(flow_line(&mut rng, i)).timestamp(1_700_000_000_000 + i as i64))
        .collect()
}

/// Total value bytes of `records`.
pub fn value_bytes(records: &[Record]) -> u64 {
    records
        .iter()
        .map(|r| r.value.as_ref().map_or(0, |v| v.len() as u64))
        .sum()
}
