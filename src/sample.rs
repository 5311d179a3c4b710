//! Sample workload data: network-flow log lines shaped like the ones in the
//! field report kafkalite grew from (about 300 bytes each, tab-separated
//! addresses, ports, times, counters and a TLS server name).
//!
//! Deterministic for a given seed, so benchmarks and examples measure the
//! same bytes on every run. Each line is tagged with its sequence number, as
//! the report's producer tagged its messages "so they don't all look alike".
//!
//! Not part of the library's API: benches, examples, the CLI's perf tools
//! and the lib's unit tests include this file with
//! `#[path = "…/src/sample.rs"] mod sample;`.
#![allow(
    dead_code,
    reason = "included by several crates (benches, examples, the CLI), each using part of it"
)]

const HOSTS: &[&str] = &[
    ".array709-prod.do.dsp.mp.microsoft.com",
    "api.weather.example.net",
    "static.cdn.example.org",
    "edge-17.video.example.com",
    "telemetry.eu-west-1.example.io",
    "mail.example.co.uk",
    "updates.example-os.org",
    "push.notify.example.app",
];

/// An endless, deterministic generator of network-flow records.
#[derive(Clone, Debug)]
pub struct FlowRecords {
    state: u64,
    seq: u64,
}

impl FlowRecords {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        FlowRecords {
            state: seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1,
            seq: 0,
        }
    }

    fn next_u64(&mut self) -> u64 {
        let mut x = self.state;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn ip(&mut self) -> String {
        let r = self.next_u64();
        format!(
            "{}.{}.{}.{}",
            1 + (r & 0xdf) % 223,
            (r >> 8) & 0xff,
            (r >> 16) & 0xff,
            1 + ((r >> 24) & 0xff) % 254
        )
    }

    /// The next record's text.
    pub fn next_line(&mut self) -> String {
        self.seq += 1;
        let seq = self.seq;
        let (src, dst, probe) = (self.ip(), self.ip(), self.ip());
        let r = self.next_u64();
        let sport = 1024 + r % 60000;
        let dport = [443u64, 80, 53, 8080, 993][(r >> 20) as usize % 5];
        let secs = (r >> 32) % 60;
        let mins = (r >> 40) % 60;
        let host = HOSTS[(r >> 48) as usize % HOSTS.len()];
        let r2 = self.next_u64();
        let mac = |x: u64| {
            format!(
                "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
                x & 0xff,
                (x >> 8) & 0xff,
                (x >> 16) & 0xff,
                (x >> 24) & 0xff,
                (x >> 32) & 0xff,
                (x >> 40) & 0xff
            )
        };
        format!(
            "{seq} 0 dat\t2019-03-11 22:{mins:02}:{secs:02}\t2019-03-11 22:{mins:02}:{secs:02}\t{probe}\t1\t4\t{}  L:0,P:2\t{dst}\t{dport}\t{src}\t{sport}\tF<-C  unknown type: 259 2 L:1,P:2\t{dst}\t{dport}\t{src}\t{sport}\tF->C  unknown type: 259 2 mac: {}<-{} unknown type: 259 2 6\t{}\t{}\t{}\t2019-03-11 22:{mins:02}:{secs:02} 2019-03-11 22:{mins:02}:{secs:02}  sni {} {host}",
            r2 % 4000,
            mac(r2),
            mac(r2.rotate_left(17)),
            r2 % 2000,
            (r2 >> 11) % 64,
            (r2 >> 17) % 10000,
            host.len(),
        )
    }
}

impl Iterator for FlowRecords {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        Some(self.next_line())
    }
}

/// Records of exactly `size` bytes: flow lines cut or padded to size.
pub fn flow_payload(flows: &mut FlowRecords, size: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(size);
    while v.len() < size {
        v.extend_from_slice(flows.next_line().as_bytes());
        v.push(b'\n');
    }
    v.truncate(size);
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_seed_gives_the_same_flow_lines_of_about_300_bytes() {
        let mut flows = super::FlowRecords::new(7);
        let line = flows.next_line();
        assert!(line.len() > 250 && line.len() < 400);
        assert_eq!(line, super::FlowRecords::new(7).next_line());
    }
}
